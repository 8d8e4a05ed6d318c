#!/bin/bash
# bench/posts-write.sh: POST /tent/posts throughput, signed and durable.
#
# Starts, on 127.0.0.1:
#   module    ngx_http_tent_module with a fresh store; an owner app with
#             every scope (util/demo-owner.pl) whose authorization signs
#             the posts;
#   baseline  plain nginx answering POST /tent/posts with `return 200` of
#             the bytes the module answers to one such POST (same
#             Content-Type and Link), not reading the store or syncing.
# Each request is a complete, HTTP MAC signed POST with a unique nonce,
# made beforehand by bench/posts-sign.pl (RATE_CAP x DURATION of them per
# run, so that wrk never runs out) and sent once by wrk with
# bench/posts-write.lua.  The module stores each one with a synced LevelDB
# write before it answers 200.  The baseline gets the same kind of
# requests (it ignores the signature).
#
# For -c1 (wrk -t1 -c1) and -c64 (wrk -t2 -c64), ROUNDS times, module then
# baseline, DURATION seconds each; the best of each is kept.  A module run
# with a non-2xx answer, a socket error, or that ran out of requests is
# reported as such and not counted.  At the end the store must hold as many
# posts as the module answered 200 (anonymous GET /tent/posts/count; the
# requests in flight when wrk stops are stored too, so the count may be
# above the 200s, never above the requests sent).  Last lines:
#   posts-write c1: module M req/s, baseline B req/s, ratio R (target: module >= 10000 req/s: ...)
#   posts-write c64: ...
#
# Environment (defaults):
#   WORKERS=1  DURATION=5  ROUNDS=2  WARMUP=1  RATE_CAP=25000
#   CONNECTIONS=64 (for the -c64 case, wrk threads 2)  KEEP=1
set -e

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=bench/posts-lib.sh
. "$(dirname "$0")/posts-lib.sh"

WORKERS=${WORKERS:-1}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-2}
WARMUP=${WARMUP:-1}
RATE_CAP=${RATE_CAP:-25000}
CONNECTIONS=${CONNECTIONS:-64}
TARGET=10000

bench_init
bench_ensure_module
command -v perl >/dev/null || bench_die "perl is not installed"

mport=$(bench_free_port 18081)
bport=$(bench_free_port $((mport + 1)))
murl=http://127.0.0.1:$mport
burl=http://127.0.0.1:$bport

mprefix=$(bench_prefix module)
posts_module_start "$mprefix" "$mport" "$WORKERS"
cred=$mprefix/owner.json

# --- one post, to see what the module answers ------------------------------
perl -I"$BENCH_TOP/t/lib" -MTent::Client -MJSON::PP -e '
    my ($port, $credfile, $out) = @ARGV;
    my $c = Tent::Client->new(port => $port, host => "127.0.0.1:$port");
    open my $fh, "<", $credfile or die "$credfile: $!\n";
    my $cred = decode_json(do { local $/; <$fh> });
    my $r = $c->request(POST => "/posts", cred => $cred, body =>
        qq({"type":"https://tent.io/types/post/status/v0.1.0",)
        . qq("content":{"text":"bench post 000000000"},)
        . qq("permissions":{"public":true}}));
    die "POST /tent/posts: $r->{status} $r->{body}\n" if $r->{status} != 200;
    open my $o, ">", "$out.b" or die; print {$o} $r->{body}; close $o;
    open $o, ">", "$out.h" or die;
    print {$o} "Content-Type: $r->{headers}{\"content-type\"}\n",
               "Link: $r->{headers}{link}\n";
    close $o;
' "$mport" "$cred" "$BENCH_TMP/post" \
    || bench_die "the module refused a signed POST /tent/posts"

header() {      # header FILE NAME: the value of header NAME in FILE
    tr -d '\r' < "$1" | sed -n "s/^$2: //Ip" | head -1
}
body=$(cat "$BENCH_TMP/post.b")
ctype=$(header "$BENCH_TMP/post.h" Content-Type)
link=$(header "$BENCH_TMP/post.h" Link)
case "$body$link" in
    *\'*|*\\*|*\$*) bench_die "the post has ' \\ or \$: cannot quote it" ;;
esac

# --- the baseline -----------------------------------------------------------
bprefix=$(bench_prefix baseline)
bench_write_conf "$bprefix" "$bport" "$WORKERS" "" \
"        location = /tent/posts {
            default_type  $ctype;
            add_header    Link '$link';
            return        200 '$body';
        }"
bench_nginx_start "$bprefix" "$burl/tent/posts"

echo "module   $murl ($WORKERS worker(s)), store $mprefix/store"
echo "baseline $burl ($WORKERS worker(s)): return 200 of the ${#body}-byte" \
     "post the module answered"
echo "requests: POST, MAC signed, 123-byte body, ${#body}-byte answer;" \
     "DURATION=${DURATION}s," \
     "best of $ROUNDS rounds, up to $((RATE_CAP * DURATION)) requests a run"
echo "load average before: $(bench_load) ($(nproc) cores)"

# What one synced append costs on the store's disk (O_DSYNC: a write and
# its fdatasync), 2000 times: one client waits for one per post, so this
# bounds its rate whatever the server does.
sync_us=$(dd if=/dev/zero of="$mprefix/store/sync-probe" bs=512 count=2000 \
              oflag=dsync 2>&1 \
          | awk '/copied/ { for (i = 1; i < NF; i++) if ($(i + 1) == "s,")
                                printf "%.0f", $i * 1e6 / 2000 }')
rm -f "$mprefix/store/sync-probe"
sync_cap=$(awk -v u="${sync_us:-0}" 'BEGIN { if (u > 0) printf "%.0f", 1e6 / u; else print "?" }')
echo "disk: a 512-byte append + sync takes ${sync_us:-?} us where the store" \
     "is: one client can make at most $sync_cap durable posts/s"

count0=$(posts_count "$murl")
runs=$BENCH_TMP/module-runs     # one line per module run: 200s sent
: > "$runs"

# module_run THREADS CONNS SECONDS: signs, runs, checks; prints the rate
# (0 when the run had errors or ran out); notes its 200s and requests sent
# in $runs (it runs in a subshell: $(module_run ...)).
module_run() {
    local t=$1 c=$2 d=$3 n rps got non sock sent ex run
    run=$(( $(wc -l < "$runs") + 1 ))
    n=$((RATE_CAP * d))
    rm -f "$BENCH_TMP"/req.*
    posts_sign "$cred" "$mport" "$n" "$t" "$BENCH_TMP/req" "r$run-$$"
    posts_wrk "$murl/tent/posts" "$t" "$c" "$d" "$BENCH_TMP/req" || true
    rm -f "$BENCH_TMP"/req.*
    rps=$(posts_wrk_field rps) got=$(posts_wrk_field completed)
    non=$(posts_wrk_field non2xx) sock=$(posts_wrk_field sockerr)
    sent=$(posts_wrk_field sent) ex=$(posts_wrk_field exhausted)
    echo "$((got - non)) $sent" >> "$runs"
    if [ "$non" != 0 ] || [ "$sock" != 0 ]; then
        bench_log "bench: module run with errors: $non non-2xx, $sock socket errors"
        grep -E 'Non-2xx|Socket errors' "$BENCH_TMP/last-wrk.txt" >&2
        tail -3 "$mprefix/logs/error.log" >&2
        echo 0
    elif [ "$ex" != 0 ]; then
        bench_log "bench: ran out of requests ($sent in ${d}s): raise RATE_CAP"
        echo 0
    else
        echo "$rps"
    fi
}

# baseline_run THREADS CONNS SECONDS: the same requests, cycled.
baseline_run() {
    local t=$1 c=$2 d=$3
    posts_sign "$cred" "$bport" 20000 "$t" "$BENCH_TMP/breq" "b$$"
    posts_wrk "$burl/tent/posts" "$t" "$c" "$d" "$BENCH_TMP/breq" cycle || true
    rm -f "$BENCH_TMP"/breq.*
    if [ "$(posts_wrk_field non2xx)" != 0 ] \
       || [ "$(posts_wrk_field sockerr)" != 0 ]; then
        bench_log "bench: baseline run with errors"
        echo 0
        return
    fi
    posts_wrk_field rps
}

# --- warm-up, then measure ----------------------------------------------------
module_run 2 "$CONNECTIONS" "$WARMUP" > /dev/null
baseline_run 2 "$CONNECTIONS" "$WARMUP" > /dev/null

m1=0 b1=0 m64=0 b64=0 errors=0
r=1
while [ "$r" -le "$ROUNDS" ]; do
    x=$(module_run 1 1 "$DURATION")
    y=$(baseline_run 1 1 "$DURATION")
    echo "round $r  -c1   module $x  baseline $y"
    [ "$x" != 0 ] || errors=$((errors + 1))
    m1=$(bench_max "$m1" "$x") b1=$(bench_max "$b1" "$y")

    x=$(module_run 2 "$CONNECTIONS" "$DURATION")
    y=$(baseline_run 2 "$CONNECTIONS" "$DURATION")
    echo "round $r  -c$CONNECTIONS  module $x  baseline $y"
    [ "$x" != 0 ] || errors=$((errors + 1))
    m64=$(bench_max "$m64" "$x") b64=$(bench_max "$b64" "$y")
    r=$((r + 1))
done

# --- every 200 is a stored post -----------------------------------------------
stored=$(( $(posts_count "$murl") - count0 ))
ok_total=$(awk '{ s += $1 } END { print s + 0 }' "$runs")
sent_total=$(awk '{ s += $2 } END { print s + 0 }' "$runs")
if [ "$stored" -ge "$ok_total" ] && [ "$stored" -le "$sent_total" ]; then
    check="ok"
else
    check="MISMATCH"
    errors=$((errors + 1))
fi
echo "stored posts: $stored; 200s counted by wrk: $ok_total;" \
     "requests sent: $sent_total ($check: 200s <= stored <= sent)"
echo "load average after: $(bench_load) (some of it is this benchmark)"

met() {
    awk -v a="$1" -v t="$TARGET" 'BEGIN { print (a >= t) ? "met" : "NOT met" }'
}
echo
[ "$errors" = 0 ] || echo "posts-write: $errors run(s) with errors (see above)"
echo "posts-write c1: module $m1 req/s, baseline $b1 req/s," \
     "ratio $(bench_ratio "$m1" "$b1") (target: module >= $TARGET req/s:" \
     "$(met "$m1"); this disk's sync allows at most $sync_cap/s)"
echo "posts-write c$CONNECTIONS: module $m64 req/s, baseline $b64 req/s," \
     "ratio $(bench_ratio "$m64" "$b64") (target: module >= $TARGET req/s:" \
     "$(met "$m64"))"
[ "$check" = ok ] || bench_die "stored posts do not match the 200s"
