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
#       http-level directives (e.g. "tent_delivery off;")
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

        location = /tent/oauth/authorize {
            allow       127.0.0.1;
            deny        all;
            tent_owner  \"bench owner\";
        }" \
"    tent_store            $prefix/store;
    tent_mac_nonce_cache  $NONCE_CACHE;
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
