#!/bin/bash
# bench/profile.sh: the module against plain nginx answering the same bytes.
#
# Starts, in one run, two nginx instances on 127.0.0.1:
#   module    ngx_http_tent_module, an entity, a store in a temp dir;
#   baseline  plain nginx whose locations `return 200` exactly the bytes
#             and headers the module sends (fetched from it first).
# Then measures, module and baseline alternately, ROUNDS times each, and
# keeps the best figure of each:
#   GET  /tent/profile   wrk -t2 -c64 -d${DURATION}s
#   HEAD /               ab -i -k -c64 -n HEAD_REQUESTS (at most DURATION s)
#   GET  /               wrk -t2 -c64 -d${DURATION}s
# The last line is the profile figure:
#   profile: module M req/s, baseline B req/s, ratio R (target >= 0.9)
#
# Environment (defaults):
#   WORKERS=1          worker_processes of both (2 also runs the store
#                      socket: worker 1 reaches worker 0 for /profile)
#   DURATION=5         seconds of each wrk run, bound of each ab run
#   ROUNDS=2           module/baseline alternations
#   HEAD_REQUESTS=300000  requests of each ab run
#   CONNECTIONS=64     concurrent connections (wrk and ab)
#   WARMUP=1           seconds of wrk warm-up per URL and server
#   ENTITY_PAGE=on     `location = / { tent_entity_page; }` in the module's
#                      config; off: / falls through the index module
#   OPEN_FILE_CACHE=on with ENTITY_PAGE=off, nginx's open_file_cache
#   KEEP=1             keep the temp dir (configs, logs)
set -e

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

WORKERS=${WORKERS:-1}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-2}
HEAD_REQUESTS=${HEAD_REQUESTS:-300000}
CONNECTIONS=${CONNECTIONS:-64}
WARMUP=${WARMUP:-1}
TARGET=0.9

bench_init
bench_ensure_module

mport=$(bench_free_port 18081)
bport=$(bench_free_port $((mport + 1)))
murl=http://127.0.0.1:$mport
burl=http://127.0.0.1:$bport

# --- the module ----------------------------------------------------------
# GET/HEAD / is the entity's page.  By default the module's config says so
# the way the baseline says `return 200`, in `location = /`:
# `tent_entity_page;` makes the page that location's content handler.
# ENTITY_PAGE=off leaves the location out: / then falls through to the
# page after the index module has looked for index.html (two stat()s per
# request); nginx's open_file_cache keeps their answers, as
# docs/directives.md recommends (OPEN_FILE_CACHE=off measures without).
ENTITY_PAGE=${ENTITY_PAGE:-on}
ofc=""
if [ "${OPEN_FILE_CACHE:-on}" = on ]; then
    ofc="open_file_cache max=1000 inactive=120s; open_file_cache_valid 60s;
         open_file_cache_errors on;"
fi
page=""
if [ "$ENTITY_PAGE" = on ]; then
    page="location = / { tent_entity_page; }"
    ofc=""
fi
mprefix=$(bench_prefix module)
bench_write_conf "$mprefix" "$mport" "$WORKERS" \
    "load_module $BENCH_MODULE;" \
"        root           $mprefix/html;
        $ofc
        $page
        tent_entity    $murl;
        tent_api_root  /tent;" \
"    tent_store  $mprefix/store;"
bench_nginx_start "$mprefix" "$murl/tent/profile"

# What the module answers, byte for byte (headers without Date).
curl -fsS -D "$BENCH_TMP/m-profile.h" -o "$BENCH_TMP/m-profile.b" \
    "$murl/tent/profile"
curl -fsS -D "$BENCH_TMP/m-root.h" -o "$BENCH_TMP/m-root.b" "$murl/"

header() {      # header FILE NAME: the value of header NAME in FILE
    tr -d '\r' < "$1" | sed -n "s/^$2: //Ip" | head -1
}

body=$(cat "$BENCH_TMP/m-profile.b")
link=$(header "$BENCH_TMP/m-profile.h" Link)
ptype=$(header "$BENCH_TMP/m-profile.h" Content-Type)
rtype=$(header "$BENCH_TMP/m-root.h" Content-Type)
if [ -z "$body" ] || [ -z "$link" ]; then
    bench_die "the module gave no profile"
fi

# The body goes into a single-quoted nginx string; `return` would expand
# "$", so refuse rather than serve different bytes.
case "$body$link" in
    *\'*|*\\*|*\$*) bench_die "profile has ' \\ or \$: cannot quote it" ;;
esac
[ "$(cat "$BENCH_TMP/m-root.b")" = "Tent!" ] \
    || bench_die "the entity root is not \"Tent!\\n\""

# --- the baseline: plain nginx, same bytes -------------------------------
bprefix=$(bench_prefix baseline)
bench_write_conf "$bprefix" "$bport" "$WORKERS" "" \
"        location = /tent/profile {
            default_type  $ptype;
            add_header    Link '$link';
            add_header    X-Content-Type-Options nosniff;
            return        200 '$body';
        }

        location = / {
            default_type  $rtype;
            add_header    X-Content-Type-Options nosniff;
            add_header    Link '$link';
            return        200 \"Tent!\\n\";
        }"
bench_nginx_start "$bprefix" "$burl/tent/profile"

# Check that both answer the same bytes (all headers but Date).
same() {        # same PATH [curl args]: compares module and baseline
    local path=$1; shift
    diff <(curl -fsS -D - -o - "$@" "$murl$path" | tr -d '\r' | grep -v '^Date:') \
         <(curl -fsS -D - -o - "$@" "$burl$path" | tr -d '\r' | grep -v '^Date:') \
         >&2 || bench_die "baseline differs from the module on $path"
}
same /tent/profile
same /
same / -I

echo "module   $murl ($WORKERS worker(s)), store $mprefix/store"
echo "baseline $burl ($WORKERS worker(s)), same bytes: checked"
echo "profile body ${#body} bytes; wrk -t2 -c$CONNECTIONS -d${DURATION}s," \
     "ab -k -c$CONNECTIONS -n$HEAD_REQUESTS; best of $ROUNDS rounds"
echo "load average before: $(bench_load) ($(nproc) cores)"

# --- warm-up --------------------------------------------------------------
for u in "$murl" "$burl"; do
    bench_wrk "$u/tent/profile" 2 "$CONNECTIONS" "$WARMUP" > /dev/null
    bench_wrk "$u/" 2 "$CONNECTIONS" "$WARMUP" > /dev/null
done

# --- measure: module, baseline, module, baseline... -----------------------
m_prof=0 b_prof=0 m_head=0 b_head=0 m_get=0 b_get=0
r=1
while [ $r -le "$ROUNDS" ]; do
    x=$(bench_wrk "$murl/tent/profile" 2 "$CONNECTIONS" "$DURATION")
    y=$(bench_wrk "$burl/tent/profile" 2 "$CONNECTIONS" "$DURATION")
    echo "round $r  GET /tent/profile  module $x  baseline $y"
    m_prof=$(bench_max "$m_prof" "$x") b_prof=$(bench_max "$b_prof" "$y")

    x=$(bench_ab "$murl/" "$CONNECTIONS" "$HEAD_REQUESTS" "$DURATION" -i)
    y=$(bench_ab "$burl/" "$CONNECTIONS" "$HEAD_REQUESTS" "$DURATION" -i)
    echo "round $r  HEAD /             module $x  baseline $y"
    m_head=$(bench_max "$m_head" "$x") b_head=$(bench_max "$b_head" "$y")

    x=$(bench_wrk "$murl/" 2 "$CONNECTIONS" "$DURATION")
    y=$(bench_wrk "$burl/" 2 "$CONNECTIONS" "$DURATION")
    echo "round $r  GET /              module $x  baseline $y"
    m_get=$(bench_max "$m_get" "$x") b_get=$(bench_max "$b_get" "$y")

    r=$((r + 1))
done

# Both must still be healthy (a crash would make the figures meaningless).
same /tent/profile

echo "load average after: $(bench_load) (some of it is this benchmark)"
echo
printf '%-28s %12s %12s %7s\n' "best req/s (workers=$WORKERS)" module baseline ratio
printf '%-28s %12s %12s %7s\n' "GET /tent/profile (wrk)" "$m_prof" "$b_prof" \
    "$(bench_ratio "$m_prof" "$b_prof")"
printf '%-28s %12s %12s %7s\n' "HEAD / (ab -i -k)" "$m_head" "$b_head" \
    "$(bench_ratio "$m_head" "$b_head")"
printf '%-28s %12s %12s %7s\n' "GET / (wrk)" "$m_get" "$b_get" \
    "$(bench_ratio "$m_get" "$b_get")"
echo
echo "head /: module $m_head req/s, baseline $b_head req/s," \
     "ratio $(bench_ratio "$m_head" "$b_head") (target >= $TARGET)"
echo "get /: module $m_get req/s, baseline $b_get req/s," \
     "ratio $(bench_ratio "$m_get" "$b_get") (target >= $TARGET)"
echo "profile: module $m_prof req/s, baseline $b_prof req/s," \
     "ratio $(bench_ratio "$m_prof" "$b_prof") (target >= $TARGET)"
