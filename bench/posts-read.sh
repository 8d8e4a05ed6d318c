#!/bin/bash
# bench/posts-read.sh: GET /tent/posts?limit=50 on a store of FILL posts,
# against plain nginx serving the same bytes as a static file.
#
# Starts the module (fresh store, an owner app with every scope made by
# util/demo-owner.pl) and fills the store through the API: FILL signed,
# public status posts made beforehand by bench/posts-sign.pl and sent
# once each by wrk -t2 -c64 with bench/posts-write.lua, until all are
# sent and stored (at most FILL_SECONDS).  Then it fetches
# /tent/posts?limit=50 once (anonymous: the 50 newest public posts, about
# 16 kB), writes the bytes to a file, and starts the baseline:
#
#   location = /tent/posts {
#       default_type  application/vnd.tent.v0+json;
#       add_header    Link '...';           # both of the module's Links
#       alias         .../posts.json;
#       etag off;  max_ranges 0;  add_header Last-Modified "";
#   }
#
# and measures both with wrk -t2 -c64, module then baseline, ROUNDS times,
# DURATION seconds each, keeping the best.  The last line:
#   posts-read: module A req/s, baseline B req/s, ratio R (target >= 0.5) on N posts
#
# Environment (defaults):
#   FILL=100000  FILL_SECONDS=300  WORKERS=1  DURATION=5  ROUNDS=3
#   CONNECTIONS=64  WARMUP=1  KEEP=1
set -e

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=bench/posts-lib.sh
. "$(dirname "$0")/posts-lib.sh"

FILL=${FILL:-100000}
FILL_SECONDS=${FILL_SECONDS:-300}
WORKERS=${WORKERS:-1}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-64}
WARMUP=${WARMUP:-1}
TARGET=0.5

bench_init
bench_ensure_module
command -v perl >/dev/null || bench_die "perl is not installed"

trap 'posts_fill_stop; bench_cleanup' EXIT

mport=$(bench_free_port 18081)
bport=$(bench_free_port $((mport + 1)))
murl=http://127.0.0.1:$mport
burl=http://127.0.0.1:$bport

mprefix=$(bench_prefix module)
posts_module_start "$mprefix" "$mport" "$WORKERS"
echo "module   $murl ($WORKERS worker(s)), store $mprefix/store"
echo "load average before: $(bench_load) ($(nproc) cores)"

# --- fill ---------------------------------------------------------------------
posts_fill "$mprefix" "$mport" "$FILL"

# --- what the module answers ------------------------------------------------
curl -fsS -D "$BENCH_TMP/m.h" -o "$BENCH_TMP/m.b" "$murl/tent/posts?limit=50" \
    || bench_die "GET /tent/posts?limit=50 failed"
items=$(perl -MJSON::PP -e 'local $/; print scalar @{ decode_json(<STDIN>) }' \
        < "$BENCH_TMP/m.b")
[ "$items" = 50 ] || bench_die "the feed has $items posts, not 50"
ctype=$(tr -d '\r' < "$BENCH_TMP/m.h" | sed -n 's/^Content-Type: //Ip' | head -1)
links=$(tr -d '\r' < "$BENCH_TMP/m.h" | sed -n 's/^Link: //Ip')
case "$links" in
    *\'*|*\\*|*\$*) bench_die "a Link has ' \\ or \$: cannot quote it" ;;
esac

# --- the baseline -------------------------------------------------------------
bprefix=$(bench_prefix baseline)
cp "$BENCH_TMP/m.b" "$bprefix/html/posts.json"
chmod 0644 "$bprefix/html/posts.json"
addlinks=$(echo "$links" | while IFS= read -r l; do
    printf "            add_header    Link '%s';\n" "$l"
done)
bench_write_conf "$bprefix" "$bport" "$WORKERS" "" \
"        location = /tent/posts {
            default_type  $ctype;
$addlinks
            alias         $bprefix/html/posts.json;
            etag          off;
            max_ranges    0;
            add_header    Last-Modified \"\";
        }"
bench_nginx_start "$bprefix" "$burl/tent/posts?limit=50"

# same body; headers as far as a static file allows (shown when not equal)
curl -fsS -D "$BENCH_TMP/b.h" -o "$BENCH_TMP/b.b" "$burl/tent/posts?limit=50"
cmp -s "$BENCH_TMP/m.b" "$BENCH_TMP/b.b" \
    || bench_die "the baseline's body differs from the module's"
if ! diff <(tr -d '\r' < "$BENCH_TMP/m.h" | grep -v '^Date:') \
          <(tr -d '\r' < "$BENCH_TMP/b.h" | grep -v '^Date:') > "$BENCH_TMP/h.diff"
then
    echo "headers differ (module <, baseline >):"
    grep '^[<>]' "$BENCH_TMP/h.diff"
fi

echo "baseline $burl ($WORKERS worker(s)): the same $(wc -c < "$BENCH_TMP/m.b")" \
     "bytes as a static file"
echo "wrk -t2 -c$CONNECTIONS -d${DURATION}s, best of $ROUNDS rounds;" \
     "load average $(bench_load)"

# --- measure ------------------------------------------------------------------
for u in "$murl" "$burl"; do
    bench_wrk "$u/tent/posts?limit=50" 2 "$CONNECTIONS" "$WARMUP" > /dev/null
done
m=0 b=0
r=1
while [ "$r" -le "$ROUNDS" ]; do
    x=$(bench_wrk "$murl/tent/posts?limit=50" 2 "$CONNECTIONS" "$DURATION")
    y=$(bench_wrk "$burl/tent/posts?limit=50" 2 "$CONNECTIONS" "$DURATION")
    echo "round $r  GET /tent/posts?limit=50  module $x  baseline $y"
    m=$(bench_max "$m" "$x") b=$(bench_max "$b" "$y")
    r=$((r + 1))
done

# still the same answer?
curl -fsS -o "$BENCH_TMP/m2.b" "$murl/tent/posts?limit=50"
cmp -s "$BENCH_TMP/m.b" "$BENCH_TMP/m2.b" \
    || bench_die "the module's feed changed during the run"

echo "load average after: $(bench_load) (some of it is this benchmark)"
echo
echo "posts-read: module $m req/s, baseline $b req/s," \
     "ratio $(bench_ratio "$m" "$b") (target >= $TARGET) on $posts_filled posts"
