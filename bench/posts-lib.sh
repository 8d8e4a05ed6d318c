# shellcheck shell=bash
# Helpers for the posts benchmarks (posts-write.sh, posts-read.sh), on top
# of lib.sh.  Source lib.sh first, then this:
#
#   posts_module_start PREFIX PORT WORKERS
#       writes the module's config (an entity http://127.0.0.1:PORT, API
#       root /tent, an owner page open to 127.0.0.1, tent_mac_skew 30m for
#       pre-signed requests, a nonce cache big enough for a run), starts
#       it, and makes an owner app with every scope the way any app gets
#       one (util/demo-owner.pl: register, approve, code exchange):
#       its credential is PREFIX/owner.json; MODULE_HTTP_CONF adds
#       http-level directives (e.g. "tent_delivery off;"),
#       MODULE_SERVER_CONF server-level ones (e.g. "tent_activitypub on;")
#   posts_count URL               anonymous GET URL/tent/posts/count
#   posts_sign CRED PORT N FILES OUT TAG
#                                 bench/posts-sign.pl: N signed POSTs
#   posts_wrk URL T C SECONDS PREFIX [cycle]
#                                 wrk with posts-write.lua; full output in
#                                 $BENCH_TMP/last-wrk.txt
#   posts_wrk_field NAME          from that output: rps, completed,
#                                 non2xx, sockerr, sent, exhausted

BENCH_HERE=$BENCH_TOP/bench
NONCE_CACHE=${NONCE_CACHE:-64m}

posts_module_start() {
    local prefix=$1 port=$2 workers=$3 url=http://127.0.0.1:$2
    bench_write_conf "$prefix" "$port" "$workers" \
        "load_module $BENCH_MODULE;" \
"        root           $prefix/html;
        tent_entity    $url;
        tent_api_root  /tent;
        tent_mac_skew  30m;
        ${MODULE_SERVER_CONF:-}

        location = /tent/oauth/authorize {
            allow       127.0.0.1;
            deny        all;
            tent_owner  \"bench owner\";
        }" \
"    tent_store            $prefix/store;
    tent_mac_nonce_cache  $NONCE_CACHE;
    tent_mac_nonce_share  100;
    ${MODULE_HTTP_CONF:-}"
    bench_nginx_start "$prefix" "$url/tent/profile"
    perl "$BENCH_TOP/util/demo-owner.pl" "$port" "$prefix" > /dev/null \
        || bench_die "could not make an owner app; see $prefix/logs/error.log"
    [ -s "$prefix/owner.json" ] || bench_die "no $prefix/owner.json"
}

posts_count() {
    local n
    n=$(curl -fsS --max-time 30 "$1/tent/posts/count") || n=
    case "$n" in
        ''|*[!0-9]*) bench_die "GET $1/tent/posts/count failed: '$n'" ;;
    esac
    echo "$n"
}

posts_sign() {
    perl "$BENCH_HERE/posts-sign.pl" "$@" || bench_die "posts-sign.pl failed"
}

posts_wrk() {
    local url=$1 t=$2 c=$3 d=$4 prefix=$5 mode=${6:-}
    # shellcheck disable=SC2086
    timeout $((d + 60)) wrk -t"$t" -c"$c" -d"${d}s" --timeout 10s \
        -s "$BENCH_HERE/posts-write.lua" "$url" -- "$prefix" $mode \
        > "$BENCH_TMP/last-wrk.txt" 2>&1
}

posts_wrk_field() {
    awk -v f="$1" '
        /^Requests\/sec:/           { rps = $2 }
        / requests in /             { done = $1 }
        /^  Non-2xx or 3xx/         { non = $NF }
        /^  Socket errors:/         { gsub(/,/, ""); sock = $4 + $6 + $8 + $10 }
        /^posts-write.lua: sent/    { gsub(/,/, ""); sent = $3; ex = $5 }
        END {
            if (f == "rps")       printf "%.0f\n", rps
            if (f == "completed") print done + 0
            if (f == "non2xx")    print non + 0
            if (f == "sockerr")   print sock + 0
            if (f == "sent")      print sent + 0
            if (f == "exhausted") print ex + 0
        }' "$BENCH_TMP/last-wrk.txt"
}

# posts_fill PREFIX PORT N: N signed posts through the API by wrk (2
# threads, 64 connections, at most FILL_SECONDS), then waits until the
# store has them all (at most 60 s, and no more than 5 s without a new
# post); prints the fill line and the store's size, and sets
# posts_filled to the number of posts the store gained.  The wrk runs in
# the background; posts_fill_stop (also in the caller's EXIT trap) stops
# it by its pid.
posts_fill_pid=
posts_fill_stop() {
    if [ -n "$posts_fill_pid" ]; then
        kill -INT "$posts_fill_pid" 2>/dev/null || true
        wait "$posts_fill_pid" 2>/dev/null || true
        posts_fill_pid=
    fi
}

posts_fill() {
    local prefix=$1 port=$2 want_n=$3 url=http://127.0.0.1:$2
    local count0 t0 t1 t2 start want n m i still

    count0=$(posts_count "$url")
    t0=$(date +%s.%N)
    posts_sign "$prefix/owner.json" "$port" "$want_n" 2 "$BENCH_TMP/fill" \
        "fill$$"
    t1=$(date +%s.%N)
    timeout $((FILL_SECONDS + 60)) wrk -t2 -c64 -d"${FILL_SECONDS}s" \
        --timeout 10s -s "$BENCH_HERE/posts-write.lua" "$url/tent/posts" \
        -- "$BENCH_TMP/fill" > "$BENCH_TMP/fill-wrk.txt" 2>&1 &
    posts_fill_pid=$!
    start=$(date +%s)
    while kill -0 "$posts_fill_pid" 2>/dev/null \
          && [ $(( $(date +%s) - start )) -lt "$FILL_SECONDS" ] \
          && ! { [ -e "$BENCH_TMP/fill.done.0" ] \
                 && [ -e "$BENCH_TMP/fill.done.1" ]; }
    do
        sleep 0.5
    done
    want=$((count0 + want_n))
    n=$(posts_count "$url")
    t2=$(date +%s.%N)
    i=0 still=0
    while [ "$n" -lt "$want" ] && [ $i -lt 120 ] && [ $still -lt 10 ]; do
        sleep 0.5
        m=$(posts_count "$url")
        if [ "$m" = "$n" ]; then
            still=$((still + 1))
        else
            still=0 t2=$(date +%s.%N)
        fi
        n=$m
        i=$((i + 1))
    done
    posts_fill_stop
    rm -f "$BENCH_TMP"/fill.*
    sed -n '/Non-2xx\|Socket errors/p' "$BENCH_TMP/fill-wrk.txt"
    posts_filled=$((n - count0))
    awk -v s="$t0" -v a="$t1" -v e="$t2" -v n="$posts_filled" -v f="$want_n" '
        BEGIN {
            printf "fill: %d of %d posts in %.1f s (signing %.1f s, " \
                   "posting %.1f s, %.0f posts/s)\n",
                   n, f, e - s, a - s, e - a, n / (e - a) }'
    [ "$posts_filled" -ge "$want_n" ] \
        || echo "fill: only $posts_filled of $want_n posts stored within" \
                "FILL_SECONDS=$FILL_SECONDS"
    du -sh "$prefix/store" | awk '{ print "store: " $1 }'
}
