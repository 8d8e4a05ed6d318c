#!/bin/bash
# bench/rss.sh: worker memory of the module at idle and after many requests.
#
# Starts the module (2 workers by default, so that both the store owner,
# worker 0, and a worker using the store socket are measured), records the
# workers' VmRSS at idle, sends a short warm-up, then REQUESTS requests of
# GET /tent/profile with `ab -k` in CHUNKS pieces, recording VmRSS after
# each piece.  A leak shows as growth that keeps rising from piece to
# piece; a one-off rise after the warm-up (buffers, thread stacks, LevelDB
# block cache) is not one.
# The whole load is bounded: at most REQUESTS requests and MAX_SECONDS.
# The last line:
#   rss: idle A kB, after N requests B kB, growth C kB
#
# Environment (defaults):
#   WORKERS=2  REQUESTS=1000000  MAX_SECONDS=300  CHUNKS=4
#   CONNECTIONS=64  WARMUP_REQUESTS=10000  KEEP=1 (keep the temp dir)
set -e

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

WORKERS=${WORKERS:-2}
REQUESTS=${REQUESTS:-1000000}
MAX_SECONDS=${MAX_SECONDS:-300}
CHUNKS=${CHUNKS:-4}
CONNECTIONS=${CONNECTIONS:-64}
WARMUP_REQUESTS=${WARMUP_REQUESTS:-10000}

bench_init
bench_ensure_module

port=$(bench_free_port 18083)
url=http://127.0.0.1:$port

prefix=$(bench_prefix module)
bench_write_conf "$prefix" "$port" "$WORKERS" \
    "load_module $BENCH_MODULE;" \
"        root           $prefix/html;
        tent_entity    $url;
        tent_api_root  /tent;" \
"    tent_store  $prefix/store;"
bench_nginx_start "$prefix" "$url/tent/profile"

# one line per sample: label, then "pid:kB" per worker, then the total
sample() {
    printf '%-26s' "$1"
    bench_rss_each "$prefix" | awk '{ printf " %s:%s", $1, $2 }'
    echo "  total $(bench_rss "$prefix") kB"
}

echo "module $url, $WORKERS workers; RSS as worker-pid:kB;" \
     "load average $(bench_load)"
sleep 1
idle=$(bench_rss "$prefix")
sample "idle"

bench_ab "$url/tent/profile" "$CONNECTIONS" "$WARMUP_REQUESTS" 30 > /dev/null
warm=$(bench_rss "$prefix")
sample "after $WARMUP_REQUESTS warm-up"

# the load, in CHUNKS pieces, within MAX_SECONDS in all
chunk=$(( (REQUESTS + CHUNKS - 1) / CHUNKS ))
done_n=0
start=$(date +%s)
while [ "$done_n" -lt "$REQUESTS" ]; do
    left=$((MAX_SECONDS - ($(date +%s) - start)))
    if [ "$left" -le 0 ]; then
        echo "stopped at MAX_SECONDS=$MAX_SECONDS"
        break
    fi
    n=$chunk
    [ $((done_n + n)) -le "$REQUESTS" ] || n=$((REQUESTS - done_n))
    rps=$(bench_ab "$url/tent/profile" "$CONNECTIONS" "$n" "$left")
    got=$(bench_ab_count)
    if [ "$rps" = 0 ] || [ -z "$got" ] || [ "$got" -le 0 ]; then
        bench_die "the load failed (see above)"
    fi
    done_n=$((done_n + got))
    sample "after $done_n ($rps req/s)"
done
elapsed=$(( $(date +%s) - start ))

# still healthy?
curl -fsS -o /dev/null "$url/tent/profile" \
    || bench_die "the module stopped answering"

after=$(bench_rss "$prefix")
echo "$done_n requests in ${elapsed}s; growth since warm-up" \
     "$((after - warm)) kB"
echo "rss: idle $idle kB, after $done_n requests $after kB," \
     "growth $((after - idle)) kB"
