#!/bin/bash
# bench/fanout.sh: one entity's posts reaching many followers (issue #13),
# against how fast the receivers themselves take POSTs.
#
# Starts, on 127.0.0.1:
#   receivers  one plain nginx listening on HOSTS ports, each port a Tent
#              host serving many entities (http://127.0.0.1:R<h>/f<i>,
#              follower i on host i % HOSTS): the Link header, a profile,
#              the challenge echoed, 200 to every notification POST,
#              which its access log counts;
#   module     ngx_http_tent_module (WORKERS workers), followed for real
#              by SMALL, then BIG entities (POST /tent/followers each,
#              discovery and challenge; curl --parallel, 32 at a time).
# Then, in one run:
#   1. POST /posts latency with no follower (one signed client, private
#      posts: bench/fanout-post.pl);
#   2. SMALL followers: SMALL_POSTS public posts, the clock runs until the
#      receivers logged SMALL x SMALL_POSTS notifications; the latency
#      client runs meanwhile;
#   3. BIG followers (the SMALL ones and more): one public post, the same
#      clock, the latency client, and the VmRSS of every module worker
#      sampled every 0.2 s, then again 3 s after the last delivery;
#   4. same-node: LOCAL entities of one nginx (server blocks sharing its
#      tent_store, each on its own port) follow another of it (POST
#      /followings, over HTTP: bench/fanout-local.pl); LOCAL_POSTS public
#      posts reach them all with no HTTP request (their access log counts
#      the POSTs: none), counted by tent_status's deliveries.local;
#   5. the baseline: wrk POSTing the same size of body to one receiver
#      port for DURATION s, keep-alive.
# Result lines (bench/run-all.sh keeps those with "ratio ... (target"):
#   fanout: 1000 followers: module D deliveries/s, receiver B POST/s, ratio R (target ...)
#   fanout: 1000 followers: the module's workers, a delivery: C us of CPU, all threads (T us in /proc ticks); C' us without the latency client's posts (P us each alone) (target <= 40)
#   fanout: 100000 followers: ...
#   fanout: same-node: L entities, D deliveries/s (target 100000)
#   fanout: same-node: the worker, a delivery: B bytes written, C us of CPU ...; RssAnon max M kB
#   fanout: same-node: the store's own limit ... X deliveries/s, ratio R
#   fanout: same-node: LevelDB alone on the rows and reads ... I deliveries/s, C us of CPU a delivery, ratio R; without the status rows ...
#   fanout: same-node: against LevelDB writing one 64-byte row a recipient ... F rows/s, ratio R (target 0.5)
#   fanout: POST /posts p50/p99 ms: 0 followers a/b, 1000 c/d, 100000 e/f; p99 ratio X (target <= 2)
#   fanout: rss during the 100000 fan-out: max ... kB a worker (target <= 65536), before ..., after ... (target within 10%)
#   fanout: rss of the worker's own memory (RssAnon; ... RssFile, RssShmem at the peak): max ..., before ..., after ...
#
# Environment (defaults): SMALL=1000 SMALL_POSTS=20 BIG=100000 LOCAL=1000
#   LOCAL_POSTS=20
#   HOSTS=4 WORKERS=1 CONCURRENCY=64 (tent_delivery_concurrency)
#   BG_THREADS=2 (tent_store_background_threads)
#   THREAD_NICE=0 (tent_store_thread_nice)
#   WRITE_BUFFER= (tent_store_write_buffer; empty: the directive is not
#   written, the module's default holds)
#   SAME_NODE_ROWS= (tent_same_node_rows of the same-node nginx: copy or
#   index; empty: not written, the module's default holds)
#   PORT=18181 (the module's; the receivers' are the free ones after it;
#   the same-node nginx's the first free one from PORT + 100, its
#   entities the LOCAL ports after it)
#   TIMEOUT=300 (each phase at most) DURATION=5.  BIG_AGAIN=1: a second
#   post to the BIG followers, and the RSS after it.  BIG=0 or LOCAL=0 skips
#   that phase.  BIG_SETTLE=2: seconds between the BIG follows and the
#   post (their "follower" posts' outbox rows are still being worked
#   through: docs/bench.md); SMALL_SETTLE=1: the same before the SMALL
#   posts.  PACE_MS=0: the latency client's least time
#   between two posts (bench/fanout-post.pl).  Everything stops by
#   itself: every wait is bounded.
set -e

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

SMALL=${SMALL:-1000}
SMALL_POSTS=${SMALL_POSTS:-20}
BIG=${BIG:-100000}
BIG_SETTLE=${BIG_SETTLE:-2}
SMALL_SETTLE=${SMALL_SETTLE:-1}
LOCAL=${LOCAL:-1000}
LOCAL_POSTS=${LOCAL_POSTS:-20}
HOSTS=${HOSTS:-4}
WORKERS=${WORKERS:-1}
CONCURRENCY=${CONCURRENCY:-64}
BG_THREADS=${BG_THREADS:-2}
THREAD_NICE=${THREAD_NICE:-0}
WRITE_BUFFER=${WRITE_BUFFER:-}
wbuf_conf=
[ -z "$WRITE_BUFFER" ] \
    || wbuf_conf="tent_store_write_buffer           $WRITE_BUFFER;"
SAME_NODE_ROWS=${SAME_NODE_ROWS:-}
rows_conf=
[ -z "$SAME_NODE_ROWS" ] \
    || rows_conf="tent_same_node_rows               $SAME_NODE_ROWS;"
TIMEOUT=${TIMEOUT:-300}
DURATION=${DURATION:-5}

bench_init
bench_ensure_module
command -v perl >/dev/null || bench_die "perl is not installed"
command -v wrk >/dev/null || bench_die "wrk is not installed (make bench-deps)"
[ "$BIG" = 0 ] || [ "$BIG" -gt "$SMALL" ] || bench_die "BIG must be above SMALL"

mport=$(bench_free_port "${PORT:-18181}")
murl=http://127.0.0.1:$mport
rports=()
p=$((mport + 1))
for _ in $(seq 1 "$HOSTS"); do
    p=$(bench_free_port "$p")
    rports+=("$p")
    p=$((p + 1))
done

# --- the receivers: HOSTS ports of one plain nginx --------------------------
rprefix=$(bench_prefix receiver)
listen=
for p in "${rports[@]:1}"; do
    listen="$listen
        listen 127.0.0.1:$p;"
done
core='{"https://tent.io/types/info/core/v0.1.0":{"entity":"http://$host:$server_port/$1",'
core=$core'"licenses":[],"servers":["http://$host:$server_port/$1/tent"]}}'
bench_write_conf "$rprefix" "${rports[0]}" 1 "" \
"$listen
$(bench_follower_locations "$rprefix" "$core")" \
"    log_format  notes  '\$request_method \$connection';"
bench_nginx_start "$rprefix" "http://127.0.0.1:${rports[0]}/ok"

notes() {
    grep -c '^POST' "$rprefix/logs/notes.log" 2>/dev/null || true
}

# --- the module ---------------------------------------------------------------
mprefix=$(bench_prefix module)
bench_write_conf "$mprefix" "$mport" "$WORKERS" \
    "load_module $BENCH_MODULE;" \
"        tent_entity    $murl;
        tent_mac_skew  30m;

        location = /status {
            allow       127.0.0.1;
            deny        all;
            tent_status;
        }

        location = /tent/oauth/authorize {
            allow       127.0.0.1;
            deny        all;
            tent_owner  \"bench owner\";
        }" \
"    tent_store                        $mprefix/store;
    tent_outbound_allow               127.0.0.0/8 ::1;
    tent_outbound_max_requests        512;
    tent_outbound_anonymous_requests  128;
    tent_delivery_interval            50ms;
    tent_delivery_concurrency         $CONCURRENCY;
    tent_store_background_threads     $BG_THREADS;
    tent_store_thread_nice            $THREAD_NICE;
    $wbuf_conf
    # the latency client signs a POST every 1-2 ms for as long as a
    # fan-out lasts: the default 4m holds the owner's nonces of about 30
    # s of it (2 x tent_mac_skew), a 100,000-follower fan-out lasts more
    tent_mac_nonce_cache              64m;
    tent_mac_nonce_share              100;
"
bench_nginx_start "$mprefix" "$murl/tent/profile"

cred=$(perl "$BENCH_TOP/util/demo-owner.pl" "$mport" "$mprefix") \
    || bench_die "could not make an owner app on the module"

# follow FROM TO: entities f<FROM>..f<TO> follow the module, 32 at a
# time; the ones refused for a full budget (503) are sent again
follow() {
    local from=$1 to=$2 left s
    seq "$from" "$to" > "$BENCH_TMP/left"
    for _ in 1 2 3 4 5 6; do
        # 32 curl processes, each its share one after the other on one
        # keep-alive connection (curl --parallel fails transfers of a
        # config with "next" at random: "Failed initialization")
        rm -f "$BENCH_TMP"/share.* "$BENCH_TMP"/codes.*
        split -n r/32 "$BENCH_TMP/left" "$BENCH_TMP/share."
        for s in "$BENCH_TMP"/share.*; do
            awk -v m="$murl" -v hosts="${rports[*]}" '
                BEGIN { n = split(hosts, h, " ") }
                { i = $1; p = h[i % n + 1]
                  if (NR > 1) print "next"
                  printf "url = \"%s/tent/followers\"\n", m
                  printf "header = \"Content-Type: application/vnd.tent.v0+json\"\n"
                  printf "data = \"{\\\"entity\\\":\\\"http://127.0.0.1:%s/f%d\\\",", p, i
                  printf "\\\"types\\\":[\\\"all\\\"],\\\"notification_path\\\":\\\"notifications/n\\\"}\"\n"
                  printf "output = \"/dev/null\"\n"
                  printf "max-time = 30\n"
                  printf "write-out = \"%d %%{http_code}\\n\"\n", i }' \
                "$s" > "$s.cfg"
            curl -sS -K "$s.cfg" > "${s/share/codes}" 2>/dev/null &
        done
        wait
        cat "$BENCH_TMP"/codes.* > "$BENCH_TMP/codes"
        # the entities whose follow did not answer 200 go round again
        awk 'NR == FNR { if ($2 == 200) ok[$1] = 1; next }
             !($1 in ok)' "$BENCH_TMP/codes" "$BENCH_TMP/left" \
             > "$BENCH_TMP/left.next"
        mv "$BENCH_TMP/left.next" "$BENCH_TMP/left"
        left=$(wc -l < "$BENCH_TMP/left")
        [ "$left" = 0 ] && return 0
        bench_log "  $left follows refused (budget), again"
        sleep 1
    done
    bench_die "$left follows still refused after 6 rounds"
}

# post N: N public posts, signed, one after the other
post() {
    perl -I"$BENCH_TOP/t/lib" -MTent::Client -MJSON::PP -e '
        my ($port, $credfile, $n) = @ARGV;
        my $c = Tent::Client->new(port => $port, host => "127.0.0.1:$port");
        open my $fh, "<", $credfile or die "$credfile: $!\n";
        my $cred = decode_json(do { local $/; <$fh> });
        for my $i (1 .. $n) {
            my $r = $c->request(POST => "/posts", cred => $cred, body => {
                type => "https://tent.io/types/post/status/v0.1.0",
                content => { text => "fan-out bench $i" },
                permissions => { public => JSON::PP::true } });
            die "POST: $r->{status} $r->{body}\n" if $r->{status} != 200;
        }
    ' "$mport" "$cred" "$1" || bench_die "posting failed"
}

# wait_for COUNTER WANT: until COUNTER (a function) reaches WANT or
# TIMEOUT s pass; prints the count reached
wait_for() {
    local got deadline=$(( $(date +%s) + TIMEOUT ))
    while :; do
        got=$($1)
        [ "$got" -ge "$2" ] && break
        [ "$(date +%s)" -ge "$deadline" ] && break
        sleep 0.1
    done
    echo "$got"
}

# perf_start PREFIX NAME: with PERF=DIR, "perf record -g" the workers of
# the nginx under PREFIX into DIR/NAME.data until perf_stop (a profile of
# one phase; perf stops by itself after TIMEOUT s; PERF_FREQ=499 Hz,
# PERF_CALL_GRAPH=-g)
perf_start() {
    local pids
    perfpid=
    [ -n "${PERF:-}" ] || return 0
    mkdir -p "$PERF"
    pids=$(bench_workers "$1" | paste -sd, -)
    # PERF_CALL_GRAPH: perf's options, split ("--call-graph dwarf,16384")
    # shellcheck disable=SC2086
    perf record -q ${PERF_CALL_GRAPH:--g} -F "${PERF_FREQ:-499}" \
        -p "$pids" -o "$PERF/$2.data" -- sleep "$TIMEOUT" 2>/dev/null &
    perfpid=$!
    sleep 0.2
}

perf_stop() {
    [ -n "${perfpid:-}" ] || return 0
    kill -INT "$perfpid" 2>/dev/null || true
    wait "$perfpid" 2>/dev/null || true
    perfpid=
}

# mcpu: the CPU time (ns) of the module's workers together, every
# thread (their schedstat: the ticks of /proc/PID/stat are too coarse
# for the 200 posts of phase 1); mticks: the same in /proc/PID/stat's
# ticks, as the same-node line counts (a paired run read 22% more there)
mcpu() {
    local w
    for w in $(bench_workers "$mprefix"); do
        cat /proc/"$w"/task/*/schedstat 2>/dev/null
    done | awk '{ t += $1 } END { printf "%d\n", t }'
}

mticks() {
    local w
    for w in $(bench_workers "$mprefix"); do
        sed 's/.*) //' "/proc/$w/stat" 2>/dev/null
    done | awk '{ t += $12 + $13 } END { printf "%d\n", t }'
}

# fan FOLLOWERS POSTS: POSTS public posts to FOLLOWERS, timed, with the
# latency client meanwhile; sets rate, lat, cpu ("A B C": us of the
# module's CPU a delivery, its workers, every thread; A with the latency
# client's posts, B without them at phase 1's cost a post, C as A in
# /proc ticks)
fan() {
    local n=$1 posts=$2 before want got start end secs stop=$BENCH_TMP/stop
    local c0 c1 t0 t1
    before=$(notes)
    want=$((before + n * posts))
    rm -f "$stop"
    perf_start "$mprefix" "$n"
    c0=$(mcpu)
    t0=$(mticks)
    start=$(date +%s.%N)
    post "$posts"
    perl "$BENCH_TOP/bench/fanout-post.pl" "$mport" "$cred" "$stop" 100000 \
        > "$BENCH_TMP/lat" &
    latpid=$!
    got=$(wait_for notes "$want")
    end=$(date +%s.%N)
    c1=$(mcpu)
    t1=$(mticks)
    perf_stop
    touch "$stop"
    wait "$latpid" || bench_die "the latency client failed"
    lat=$(awk '{ printf "%s/%s", $4, $6 }' "$BENCH_TMP/lat")
    secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
    rate=$(awk -v n="$((got - before))" -v s="$secs" \
           'BEGIN { printf "%d", n / s }')
    # and without the latency client's posts, at phase 1's cost a post;
    # and in ticks
    cpu=$(awk -v c="$((c1 - c0))" -v n="$((got - before))" \
              -v p="$(awk '{ print $2 }' "$BENCH_TMP/lat")" -v a="$post_ns" \
              -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" \
              'BEGIN { if (!n) { print "0 0 0"; exit }
                       printf "%.1f %.1f %.1f", c / 1e3 / n,
                              (c - p * a) / 1e3 / n, t / hz * 1e6 / n }')
    bench_log "  $((got - before)) of $((n * posts)) deliveries in $secs s," \
              "$rate/s; POST /posts latency: $(cat "$BENCH_TMP/lat")"
    [ "$got" -ge "$want" ] \
        || echo "fanout: only $((got - before)) of $((n * posts)) arrived within $TIMEOUT s"
}

# --- 1. no follower -------------------------------------------------------------
bench_log "POST /posts latency with no follower"
c0=$(mcpu)
perl "$BENCH_TOP/bench/fanout-post.pl" "$mport" "$cred" /nonexistent 200 \
    > "$BENCH_TMP/lat0" || bench_die "the latency client failed"
c1=$(mcpu)
# the module's CPU a post of the latency client's (ns)
post_ns=$(awk -v c="$((c1 - c0))" '{ printf "%d", $2 ? c / $2 : 0 }' \
          "$BENCH_TMP/lat0")
lat0=$(awk '{ printf "%s/%s", $4, $6 }' "$BENCH_TMP/lat0")
p99_0=$(awk '{ print $6 }' "$BENCH_TMP/lat0")

# --- 2. SMALL followers ----------------------------------------------------------
bench_log "making $SMALL followers on $HOSTS hosts"
follow 1 "$SMALL"
sleep "$SMALL_SETTLE"
bench_log "$SMALL_POSTS posts to $SMALL followers"
fan "$SMALL" "$SMALL_POSTS"
rate_small=$rate
lat_small=$lat
cpu_small=$cpu

# --- 3. BIG followers ------------------------------------------------------------
if [ "$BIG" != 0 ]; then
    bench_log "making $((BIG - SMALL)) more followers"
    follow $((SMALL + 1)) "$BIG"
    # each follow wrote a "follower" post of ours, whose outbox row the
    # engine works through: BIG_SETTLE s for them before the post
    sleep "$BIG_SETTLE"
    rss_before=$(bench_rss_each "$mprefix" | awk '{ if ($2 > m) m = $2 } END { print m }')
    anon_before=$(bench_rss_each "$mprefix" | awk '{ if ($3 > m) m = $3 } END { print m }')
    ( while :; do bench_rss_each "$mprefix"; sleep 0.2; done ) \
        > "$BENCH_TMP/rss" &
    rsspid=$!
    bench_log "1 post to $BIG followers"
    fan "$BIG" 1
    kill "$rsspid" 2>/dev/null || true
    wait "$rsspid" 2>/dev/null || true
    rate_big=$rate
    lat_big=$lat
    cpu_big=$cpu
    p99_big=${lat#*/}
    rss_max=$(awk '{ if ($2 > m) m = $2 } END { print m }' "$BENCH_TMP/rss")
    anon_max=$(awk '{ if ($3 > m) m = $3 } END { print m }' "$BENCH_TMP/rss")
    # the file and shared-zone pages at the VmRSS peak
    rss_parts=$(awk '$2 > m { m = $2; f = $4; s = $5 }
                     END { print "RssFile " f ", RssShmem " s }' \
                "$BENCH_TMP/rss")
    sleep 3
    rss_after=$(bench_rss_each "$mprefix" | awk '{ if ($2 > m) m = $2 } END { print m }')
    anon_after=$(bench_rss_each "$mprefix" | awk '{ if ($3 > m) m = $3 } END { print m }')
    # BIG_AGAIN=1: a second post to them, whose "after" shows whether
    # the first left caches filled (bounded) or memory that grows
    if [ "${BIG_AGAIN:-0}" = 1 ]; then
        bench_log "1 more post to $BIG followers"
        fan "$BIG" 1
        sleep 3
        again=$(bench_rss_each "$mprefix" | awk '{ if ($2 > m) m = $2;
                    if ($3 > a) a = $3 } END { print m " kB, RssAnon " a }')
        rss_again="; after a second post VmRSS $again kB"
    fi
fi

# --- 4. same-node -----------------------------------------------------------------
if [ "$LOCAL" != 0 ]; then
    # its own nginx: LOCAL + 1 server blocks sharing one tent_store, each
    # entity on its own port (Tent::Client connects to 127.0.0.1)
    sport=$(bench_free_port $((${PORT:-18181} + 100)))
    lbase=$((sport + 1))
    ss -Htln | awk '{ print $4 }' | sed 's/.*://' | sort -u \
        | awk -v a="$lbase" -v b="$((lbase + LOCAL))" '$1 >= a && $1 < b' \
        | grep -q . && bench_die "ports $lbase..$((lbase + LOCAL - 1)) are not all free"
    surl=http://127.0.0.1:$sport
    sprefix=$(bench_prefix same-node)
    blocks=
    for i in $(seq 0 $((LOCAL - 1))); do
        blocks="$blocks
    server {
        listen         127.0.0.1:$((lbase + i));
        access_log     $sprefix/logs/local.log notes;
        tent_entity    http://127.0.0.1:$((lbase + i));
        tent_mac_skew  30m;
        location = /tent/oauth/authorize {
            allow       127.0.0.1;
            deny        all;
            tent_owner  \"bench owner\";
        }
    }"
    done
    bench_write_conf "$sprefix" "$sport" "$WORKERS" \
        "load_module $BENCH_MODULE;" \
"        tent_entity    $surl;
        tent_mac_skew  30m;

        location = /status {
            tent_status;
        }

        location = /tent/oauth/authorize {
            allow       127.0.0.1;
            deny        all;
            tent_owner  \"bench owner\";
        }" \
"    tent_store                        $sprefix/store;
    tent_outbound_allow               127.0.0.0/8 ::1;
    tent_outbound_max_requests        512;
    tent_delivery_interval            50ms;
    tent_delivery_concurrency         $CONCURRENCY;
    tent_store_background_threads     $BG_THREADS;
    tent_store_thread_nice            $THREAD_NICE;
    $wbuf_conf
    $rows_conf
    log_format  notes  '\$request_method \$uri';
$blocks"
    bench_nginx_start "$sprefix" "$surl/tent/profile"
    scred=$(perl "$BENCH_TOP/util/demo-owner.pl" "$sport" "$sprefix") \
        || bench_die "could not make an owner app on the same-node nginx"

    bench_log "same-node: $LOCAL entities of one nginx follow another"
    perl "$BENCH_TOP/bench/fanout-local.pl" "$surl" "$lbase" "$LOCAL" \
        || bench_die "the same-node follows failed"
    sleep 1

    local_count() {
        curl -fsS --max-time 5 "$surl/status" 2>/dev/null \
            | perl -MJSON::PP -e '
                my $s = eval { decode_json(join "", <STDIN>) } || {};
                print $s->{deliveries}{local} || 0, "\n"'
    }
    lbefore=$(local_count)
    notes_before=$(grep -c '^POST' "$sprefix/logs/local.log" || true)
    # the worker's bytes written (wchar: LevelDB's log and tables) and
    # CPU (all its threads: LevelDB's compaction thread too), and its
    # memory sampled every 0.2 s, over the phase
    lw=$(bench_workers "$sprefix" | head -n 1)
    lio() {
        awk '/^wchar:/ { print $2 }' "/proc/$lw/io" 2>/dev/null || echo 0
    }
    lcpu() {
        sed 's/.*) //' "/proc/$lw/stat" 2>/dev/null \
            | awk '{ print $12 + $13 }' || echo 0
    }
    lio_before=$(lio)
    lcpu_before=$(lcpu)
    ( while :; do bench_rss_each "$sprefix"; sleep 0.2; done ) \
        > "$BENCH_TMP/rss-local" &
    lrsspid=$!
    perf_start "$sprefix" local
    start=$(date +%s.%N)
    mport_save=$mport cred_save=$cred
    mport=$sport cred=$scred
    post "$LOCAL_POSTS"
    mport=$mport_save cred=$cred_save
    got=$(wait_for local_count $((lbefore + LOCAL * LOCAL_POSTS)))
    end=$(date +%s.%N)
    perf_stop
    kill "$lrsspid" 2>/dev/null || true
    wait "$lrsspid" 2>/dev/null || true
    lio_after=$(lio)
    lcpu_after=$(lcpu)
    ldone=$((got - lbefore))
    [ "$ldone" -gt 0 ] || ldone=1
    ltick=$(getconf CLK_TCK)
    lwork=$(awk -v w="$((lio_after - lio_before))" -v n="$ldone" \
                -v c="$((lcpu_after - lcpu_before))" -v t="$ltick" \
                'BEGIN { printf "%d bytes written, %.1f us of CPU", w / n,
                         c / t * 1e6 / n }')
    lanon=$(awk '{ if ($3 > m) m = $3 } END { print m + 0 }' \
            "$BENCH_TMP/rss-local")
    secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
    rate_local=$(awk -v n="$((got - lbefore))" -v s="$secs" \
                 'BEGIN { printf "%d", n / s }')
    http_local=$(( $(grep -c '^POST' "$sprefix/logs/local.log" || true) \
                   - notes_before ))
    bench_log "  $((got - lbefore)) of $((LOCAL * LOCAL_POSTS)) local deliveries in $secs s;" \
              "POSTs to the local entities meanwhile: $http_local"
fi

# --- 5. the baseline --------------------------------------------------------------
body=$(printf '{"id":"x","entity":"%s","type":"https://tent.io/types/post/status/v0.1.0","content":{"text":"fan-out bench 000"},"permissions":{"public":true},"published_at":1,"version":1}' "$murl")
cat > "$BENCH_TMP/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/vnd.tent.v0+json"
LUA
base=$(timeout $((DURATION + 10)) wrk -t1 -c"$CONCURRENCY" -d"${DURATION}s" \
           -s "$BENCH_TMP/post.lua" \
           "http://127.0.0.1:${rports[0]}/f1/tent/notifications/n" \
       | sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p')
base=${base%.*}

conns=$(awk '$1 == "POST" { c[$2] = 1 } END { print length(c) }' \
        "$rprefix/logs/notes.log")
echo "fanout: $SMALL followers: module $rate_small deliveries/s," \
     "receiver ${base:-?} POST/s, ratio $(bench_ratio "$rate_small" "${base:-0}")" \
     "(target 20000 deliveries/s; $HOSTS hosts, $SMALL_POSTS posts)"
read -r c_all c_net c_ticks <<< "$cpu_small"
echo "fanout: $SMALL followers: the module's workers, a delivery:" \
     "$c_all us of CPU, all threads ($c_ticks us in /proc ticks);" \
     "$c_net us without" \
     "the latency client's posts ($((post_ns / 1000)) us each alone)" \
     "(target <= 40)"
if [ "$BIG" != 0 ]; then
    echo "fanout: $BIG followers: module $rate_big deliveries/s," \
         "receiver ${base:-?} POST/s, ratio $(bench_ratio "$rate_big" "${base:-0}")" \
         "(target 20000 deliveries/s; $HOSTS hosts, 1 post)"
    read -r c_all c_net c_ticks <<< "$cpu_big"
    echo "fanout: $BIG followers: the module's workers, a delivery:" \
         "$c_all us of CPU, all threads ($c_ticks us in /proc ticks);" \
         "$c_net us without" \
         "the latency client's posts (target <= 40)"
fi
big_lat=
p99_top=${lat_small#*/}
[ "$BIG" = 0 ] || { big_lat=", $BIG $lat_big"; p99_top=$p99_big; }
echo "fanout: POST /posts p50/p99 ms: 0 followers $lat0, $SMALL $lat_small$big_lat;" \
     "p99 ratio" \
     "$(bench_ratio "$p99_top" "$p99_0") (target <= 2)"
if [ "$BIG" != 0 ]; then
    echo "fanout: rss during the $BIG fan-out: max $rss_max kB a worker" \
         "(target <= 65536), before $rss_before, after $rss_after" \
         "(target within 10%)"
    echo "fanout: rss of the worker's own memory (RssAnon; the rest is" \
         "LevelDB's mmapped tables and the shared zones: at the peak" \
         "$rss_parts kB): max $anon_max kB, before $anon_before," \
         "after $anon_after${rss_again:-}"
fi
if [ "$LOCAL" != 0 ]; then
    echo "fanout: same-node: $LOCAL entities, $rate_local deliveries/s," \
         "$http_local HTTP requests to them ($LOCAL_POSTS posts; target 100000" \
         "deliveries/s, 0 requests)"
    echo "fanout: same-node: the worker, a delivery: $lwork (all its" \
         "threads, the first post to the last delivery); RssAnon max" \
         "$lanon kB"
    # the physical limit: LevelDB alone doing each delivery's store work
    # (bench/store-limit.c), as many deliveries, on the same disk
    # and its floor: one 64-byte row a recipient, 256 a synced write
    limit=
    floor=
    if cc -O2 -o "$BENCH_TMP/store-limit" "$BENCH_TOP/bench/store-limit.c" \
          -lleveldb 2>/dev/null; then
        LDB_WRITE_BUFFER=${WRITE_BUFFER:-${LDB_WRITE_BUFFER:-}} \
            "$BENCH_TMP/store-limit" "$BENCH_TMP/store-limit.db" \
            "$((LOCAL * LOCAL_POSTS))" > "$BENCH_TMP/store-limit.out" || true
        limit=$(awk '$2 != "baseline:" && $2 != "index:" && $3 != "without" { print $7 }' \
                 "$BENCH_TMP/store-limit.out")
        ilimit=$(awk '$2 == "index:" { print $8 }' \
                 "$BENCH_TMP/store-limit.out")
        icpu=$(awk '$2 == "index:" { for (i = 1; i < NF; i++)
                     if ($(i + 1) == "us") print $i }' \
               "$BENCH_TMP/store-limit.out")
        ilimit4=$(awk '$2 == "index" && $3 == "without" { print $10 }' \
                  "$BENCH_TMP/store-limit.out")
        icpu4=$(awk '$2 == "index" && $3 == "without" { for (i = 1; i < NF; i++)
                      if ($(i + 1) == "us") print $i }' \
                "$BENCH_TMP/store-limit.out")
        floor=$(awk '$2 == "baseline:" { print $11 }' \
                "$BENCH_TMP/store-limit.out")
        rm -rf "$BENCH_TMP"/store-limit.db*
    fi
    echo "fanout: same-node: the store's own limit (LevelDB alone, the same" \
         "rows, bench/store-limit.c) ${limit:-?} deliveries/s, ratio" \
         "$(bench_ratio "$rate_local" "${limit:-0}")"
    echo "fanout: same-node: LevelDB alone on the rows and reads" \
         "tent_same_node_rows index makes a recipient with no job (the" \
         "l row, 3 feed rows, the status record and its end row; 3 gets)" \
         "${ilimit:-?} deliveries/s, ${icpu:-?} us of CPU a delivery," \
         "ratio $(bench_ratio "$rate_local" "${ilimit:-0}"); without the" \
         "status rows ${ilimit4:-?} deliveries/s, ${icpu4:-?} us"
    echo "fanout: same-node: against LevelDB writing one 64-byte row a" \
         "recipient (batches of 256, each synced) ${floor:-?} rows/s," \
         "ratio $(bench_ratio "$rate_local" "${floor:-0}") (target 0.5)"
fi
echo "fanout: the receivers saw $conns connections in all (load $(bench_load))"
