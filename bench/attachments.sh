#!/bin/bash
# bench/attachments.sh: GET /tent/posts/:id/attachments/:name of a public
# photo (SIZE bytes, 1 MB) against plain nginx serving the same file.
#
# Starts the module (fresh store, an owner app made by
# util/demo-owner.pl), posts one public photo post with a SIZE-byte
# photo.jpg (bench/attachments-post.pl), fetches the attachment once,
# checks it is the bytes posted, and starts the baseline with the file:
#
#   location = /tent/posts/ID/attachments/photo.jpg {
#       default_type  image/jpeg;   alias .../photo.jpg;
#       add_header    Content-Security-Policy ...;  # the module's headers
#       add_header    Cache-Control ...;
#   }
#
# Both with sendfile on and tcp_nopush on, the same worker count.  The
# module reads and checks the post on every request (through the store
# socket unless the worker is the store's owner), then sends the file
# with sendfile; the baseline only sends it.  wrk -t2 -cCONNECTIONS,
# module then baseline, ROUNDS times, DURATION seconds each, best kept.
# The last line:
#   attachments: module A req/s, baseline B req/s, ratio R (target >= 0.8), SIZE bytes
#
# Environment (defaults):
#   SIZE=1048576  WORKERS=1  DURATION=5  ROUNDS=3  CONNECTIONS=16
#   WARMUP=1  KEEP=0
set -e

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=bench/posts-lib.sh
. "$(dirname "$0")/posts-lib.sh"

SIZE=${SIZE:-1048576}
WORKERS=${WORKERS:-1}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-16}
WARMUP=${WARMUP:-1}
TARGET=0.8
SENDFILE="    sendfile    on;
    tcp_nopush  on;"

bench_init
bench_ensure_module
command -v perl >/dev/null || bench_die "perl is not installed"

mport=$(bench_free_port 18081)
bport=$(bench_free_port $((mport + 1)))
murl=http://127.0.0.1:$mport
burl=http://127.0.0.1:$bport

mprefix=$(bench_prefix module)
MODULE_HTTP_CONF="tent_max_attachment_size $((SIZE + 1024));
    client_max_body_size $((SIZE + 65536));
$SENDFILE"
posts_module_start "$mprefix" "$mport" "$WORKERS"
echo "module   $murl ($WORKERS worker(s)), store $mprefix/store"
echo "load average before: $(bench_load) ($(nproc) cores)"

# --- the photo ----------------------------------------------------------------
head -c "$SIZE" /dev/urandom > "$BENCH_TMP/photo.jpg"
id=$(perl "$BENCH_HERE/attachments-post.pl" "$mprefix/owner.json" "$mport" \
     "$BENCH_TMP/photo.jpg" photo.jpg image/jpeg) \
    || bench_die "could not post the photo; see $mprefix/logs/error.log"
path=/tent/posts/$id/attachments/photo.jpg

curl -fsS -D "$BENCH_TMP/m.h" -o "$BENCH_TMP/m.b" "$murl$path" \
    || bench_die "GET $path failed"
cmp -s "$BENCH_TMP/photo.jpg" "$BENCH_TMP/m.b" \
    || bench_die "the module's attachment is not the bytes posted"
header() { tr -d '\r' < "$BENCH_TMP/m.h" | sed -n "s/^$1: //Ip" | head -1; }
csp=$(header Content-Security-Policy)
cc=$(header Cache-Control)
echo "photo    $path: $SIZE bytes, ETag $(header ETag), Cache-Control $cc"

# --- the baseline -------------------------------------------------------------
bprefix=$(bench_prefix baseline)
cp "$BENCH_TMP/photo.jpg" "$bprefix/html/photo.jpg"
chmod 0644 "$bprefix/html/photo.jpg"
bench_write_conf "$bprefix" "$bport" "$WORKERS" "" \
"        location = $path {
            default_type  image/jpeg;
            alias         $bprefix/html/photo.jpg;
            add_header    Content-Security-Policy \"$csp\";
            add_header    X-Content-Type-Options nosniff;
            add_header    Cache-Control \"$cc\";
        }" "$SENDFILE"
bench_nginx_start "$bprefix" "$burl$path"
curl -fsS -o "$BENCH_TMP/b.b" "$burl$path"
cmp -s "$BENCH_TMP/m.b" "$BENCH_TMP/b.b" \
    || bench_die "the baseline's body differs from the module's"

echo "baseline $burl ($WORKERS worker(s)): the same file, static"
echo "wrk -t2 -c$CONNECTIONS -d${DURATION}s, best of $ROUNDS rounds;" \
     "load average $(bench_load)"

# --- measure ------------------------------------------------------------------
for u in "$murl" "$burl"; do
    bench_wrk "$u$path" 2 "$CONNECTIONS" "$WARMUP" > /dev/null
done
m=0 b=0
r=1
while [ "$r" -le "$ROUNDS" ]; do
    x=$(bench_wrk "$murl$path" 2 "$CONNECTIONS" "$DURATION")
    mb=$(awk '/^Transfer\/sec:/ { print $2 }' "$BENCH_TMP/last-wrk.txt")
    y=$(bench_wrk "$burl$path" 2 "$CONNECTIONS" "$DURATION")
    bb=$(awk '/^Transfer\/sec:/ { print $2 }' "$BENCH_TMP/last-wrk.txt")
    echo "round $r  GET $path  module $x ($mb/s)  baseline $y ($bb/s)"
    m=$(bench_max "$m" "$x") b=$(bench_max "$b" "$y")
    r=$((r + 1))
done

echo "load average after: $(bench_load) (some of it is this benchmark)"
echo
echo "attachments: module $m req/s, baseline $b req/s," \
     "ratio $(bench_ratio "$m" "$b") (target >= $TARGET), $SIZE bytes"
