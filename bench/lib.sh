# shellcheck shell=bash
# Shared helpers for the benchmarks in bench/.  Source it from bash:
#
#     . "$(dirname "$0")/lib.sh"
#
# It gives:
#   bench_init                    temp dir under /tmp, EXIT trap, checks tools
#   bench_ensure_module           runs util/build.sh when the .so is missing
#   bench_free_port [FROM]        a free TCP port on 127.0.0.1
#   bench_prefix NAME             an nginx prefix (conf/ logs/ tmp/) in the
#                                 temp dir
#   bench_write_conf PREFIX PORT WORKERS MAIN SERVER [HTTP]
#                                 writes PREFIX/conf/nginx.conf
#   bench_nginx_start PREFIX URL  starts nginx, waits until URL answers
#   bench_nginx_stop PREFIX       QUIT, waits; TERM then KILL if it hangs
#   bench_workers PREFIX          pids of the master's worker children
#   bench_rss PREFIX              VmRSS (kB) of every worker, summed
#   bench_rss_each PREFIX         "pid VmRSS RssAnon" (kB) per worker
#   bench_wrk URL THREADS CONNS SECONDS   Requests/sec by wrk (GET)
#   bench_ab URL CONC N SECONDS [-i]      Requests per second by ab -k
#   bench_load                    the 1-minute load average
#   bench_ratio A B               A/B with two decimals
#   bench_max A B                 the larger of two numbers
#
# Everything listens on 127.0.0.1 only; every load run is bounded in time
# (the tool's own limit, and `timeout` around it); every nginx started
# here is stopped on exit, by the pid it wrote, never by name.

BENCH_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_NGINX=${NGINX:-/usr/sbin/nginx}

# nginx reads $NGINX itself (sockets inherited on a binary upgrade)
unset NGINX
BENCH_MODULE=${MODULE:-$BENCH_TOP/build/ngx_http_tent_module.so}
# load_module resolves a relative path against nginx's prefix (a temp dir)
case "$BENCH_MODULE" in /*) ;; *) BENCH_MODULE=$PWD/$BENCH_MODULE ;; esac
BENCH_TMP=
BENCH_STARTED=         # prefixes of the nginx instances started here

bench_log() {
    echo "$*" >&2
}

bench_die() {
    echo "bench: $*" >&2
    exit 1
}

# Stops every nginx started by bench_nginx_start and removes the temp dir.
# Set KEEP=1 to keep the temp dir (logs, configs) for a look afterwards.
bench_cleanup() {
    local p
    for p in $BENCH_STARTED; do
        bench_nginx_stop "$p"
    done
    BENCH_STARTED=
    if [ -n "$BENCH_TMP" ] && [ -d "$BENCH_TMP" ]; then
        if [ "${KEEP:-0}" = 1 ]; then
            bench_log "bench: kept $BENCH_TMP"
        else
            rm -rf "$BENCH_TMP"
        fi
    fi
}

bench_init() {
    local t
    for t in wrk ab curl "$BENCH_NGINX"; do
        command -v "$t" >/dev/null 2>&1 \
            || bench_die "$t is not installed (apt-get install wrk" \
                         "apache2-utils curl nginx)"
    done
    BENCH_TMP=$(mktemp -d /tmp/tent-bench.XXXXXX) || bench_die "mktemp failed"
    # nginx workers run as "nobody" when nginx starts as root: they must
    # be able to walk into the prefix (the store dir below it is created
    # and chowned by the master).
    chmod 0755 "$BENCH_TMP"
    trap bench_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

bench_ensure_module() {
    if [ ! -f "$BENCH_MODULE" ]; then
        [ -z "${MODULE:-}" ] || bench_die "MODULE=$MODULE does not exist"
        bench_log "bench: $BENCH_MODULE is missing, building it"
        "$BENCH_TOP/util/build.sh" >&2 || bench_die "build failed"
    fi
}

# Is something listening on 127.0.0.1:PORT?
bench_port_busy() {
    if command -v ss >/dev/null 2>&1; then
        ss -Htln "sport = :$1" 2>/dev/null | grep -q .
    else
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
    fi
}

# bench_free_port [FROM]: the first free port from FROM (default 18081),
# skipping ports already handed out in this run.
BENCH_PORTS_USED=
bench_free_port() {
    local p=${1:-18081} end
    end=$((p + 200))
    while [ "$p" -lt "$end" ]; do
        case " $BENCH_PORTS_USED " in
            *" $p "*) ;;
            *)
                if ! bench_port_busy "$p"; then
                    BENCH_PORTS_USED="$BENCH_PORTS_USED $p"
                    echo "$p"
                    return 0
                fi
                ;;
        esac
        p=$((p + 1))
    done
    bench_die "no free port in ${1:-18081}..$end"
}

bench_prefix() {
    local d=$BENCH_TMP/$1
    mkdir -p "$d/conf" "$d/logs" "$d/tmp" "$d/html"
    chmod 0755 "$d"
    echo "$d"
}

# bench_write_conf PREFIX PORT WORKERS MAIN SERVER [HTTP]
#   MAIN    lines for the main context (e.g. load_module), may be empty
#   SERVER  lines inside server { } after listen/server_name
#   HTTP    lines inside http { } before the server, may be empty
# The rest is the same for the module and the baseline, so that they
# differ only in what they are asked to compare: no access log (both),
# keepalive without a request limit so that 1M requests on few
# connections are not cut short.
bench_write_conf() {
    local prefix=$1 port=$2 workers=$3 main=$4 server=$5 http=${6:-}
    cat > "$prefix/conf/nginx.conf" <<CONF
$main
worker_processes  $workers;
pid               $prefix/logs/nginx.pid;
error_log         $prefix/logs/error.log ${BENCH_LOG_LEVEL:-warn};

events {
    worker_connections  4096;
}

http {
    access_log             off;
    keepalive_requests     100000000;
    keepalive_timeout      60s;
    client_body_temp_path  $prefix/tmp/body;
    proxy_temp_path        $prefix/tmp/proxy;
    fastcgi_temp_path      $prefix/tmp/fastcgi;
    uwsgi_temp_path        $prefix/tmp/uwsgi;
    scgi_temp_path         $prefix/tmp/scgi;
$http
    server {
        listen       127.0.0.1:$port;
        server_name  localhost;
$server
    }
}
CONF
}

# bench_follower_locations PREFIX CORE: the locations of a plain nginx
# that plays Tent entities /f<i> (bench/delivery.sh, bench/fanout.sh):
# the profile Link, the profile CORE (an nginx string: $1 is f<i>), the
# challenge echoed and 200 to notifications, which PREFIX/logs/notes.log
# counts in the "notes" log_format the caller defines.
bench_follower_locations() {
    local prefix=$1 core=$2
    cat <<CONF
        location = /ok {
            return 200 'ok';
        }

        location ~ ^/(f[0-9]+)\$ {
            add_header  Link '</\$1/tent/profile>; rel="https://tent.io/rels/profile"';
            return      200 'follower';
        }

        location ~ ^/(f[0-9]+)/tent/profile\$ {
            default_type  application/vnd.tent.v0+json;
            return        200 '$core';
        }

        location ~ ^/f[0-9]+/tent/notifications/ {
            access_log    $prefix/logs/notes.log notes;
            default_type  text/plain;
            if (\$request_method = GET) {
                return 200 \$arg_challenge;
            }
            return 200 '';
        }
CONF
}

bench_pid() {
    cat "$1/logs/nginx.pid" 2>/dev/null
}

# bench_nginx_start PREFIX URL: checks the config, starts nginx, then waits
# (at most 10 s) until URL answers 200 and every worker is up.
bench_nginx_start() {
    local prefix=$1 url=$2 conf=$1/conf/nginx.conf i=0 want
    "$BENCH_NGINX" -p "$prefix/" -c "$conf" -t -q \
        || bench_die "nginx -t failed for $conf"
    "$BENCH_NGINX" -p "$prefix/" -c "$conf" \
        || bench_die "nginx did not start; see $prefix/logs/error.log"
    BENCH_STARTED="$BENCH_STARTED $prefix"
    want=$(sed -n 's/^worker_processes *\([0-9]*\);/\1/p' "$conf")
    until curl -fsS -o /dev/null --max-time 1 "$url" 2>/dev/null \
          && [ "$(bench_workers "$prefix" | wc -l)" -ge "${want:-1}" ]
    do
        i=$((i + 1))
        if [ $i -gt 100 ]; then
            tail -5 "$prefix/logs/error.log" >&2
            bench_die "nginx in $prefix did not answer $url in 10 s"
        fi
        sleep 0.1
    done
}

# bench_nginx_stop PREFIX: graceful stop of the nginx whose pid file is in
# PREFIX; waits up to 10 s, then TERM, then KILL (that pid only).
bench_nginx_stop() {
    local prefix=$1 pid i=0
    pid=$(bench_pid "$prefix")
    [ -n "$pid" ] || return 0
    if kill -QUIT "$pid" 2>/dev/null; then
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
            sleep 0.1
            i=$((i + 1))
        done
        if kill -0 "$pid" 2>/dev/null; then
            bench_log "bench: nginx $pid ignored QUIT, sending TERM"
            kill -TERM "$pid" 2>/dev/null
            sleep 1
            kill -KILL "$pid" 2>/dev/null
        fi
    fi
    rm -f "$prefix/logs/nginx.pid"
    BENCH_STARTED=$(echo "$BENCH_STARTED" | tr ' ' '\n' \
                    | grep -vxF "$prefix" | tr '\n' ' ')
}

# bench_workers PREFIX: the pids of the worker processes (children of the
# master whose pid is in PREFIX/logs/nginx.pid), one a line.
bench_workers() {
    local master
    master=$(bench_pid "$1")
    [ -n "$master" ] || return 0
    ps -o pid= --ppid "$master" 2>/dev/null | tr -d ' '
}

# bench_rss_each PREFIX: "pid VmRSS RssAnon RssFile RssShmem" (kB) for
# each worker.  VmRSS is their sum: RssFile is mostly LevelDB's table
# files, which it mmaps (page cache, shared, dropped under memory
# pressure), RssShmem the pages of the shared zones this worker touched.
bench_rss_each() {
    local w
    for w in $(bench_workers "$1"); do
        awk '/^(VmRSS|RssAnon|RssFile|RssShmem):/ { v[$1] = $2 }
             END { printf "%s %d %d %d %d\n", w, v["VmRSS:"], v["RssAnon:"],
                          v["RssFile:"], v["RssShmem:"] }' \
            w="$w" "/proc/$w/status" 2>/dev/null || echo "$w 0 0 0 0"
    done
}

# bench_rss PREFIX: the VmRSS of all workers, summed, in kB.
bench_rss() {
    bench_rss_each "$1" | awk '{ s += $2 } END { print s + 0 }'
}

# bench_wrk URL THREADS CONNS SECONDS: runs wrk (GET) for SECONDS and
# prints its Requests/sec (0 when wrk failed or saw errors).  wrk's full
# output goes to $BENCH_TMP/last-wrk.txt.
bench_wrk() {
    local url=$1 t=$2 c=$3 d=$4 out=$BENCH_TMP/last-wrk.txt
    timeout $((d + 30)) wrk -t"$t" -c"$c" -d"${d}s" --timeout 5s "$url" \
        > "$out" 2>&1
    if grep -q 'Non-2xx\|Socket errors' "$out"; then
        bench_log "bench: wrk saw errors on $url:"
        grep 'Non-2xx\|Socket errors' "$out" >&2
        echo 0
        return
    fi
    awk '/^Requests\/sec:/ { printf "%.0f\n", $2; f = 1 }
         END { if (!f) print 0 }' "$out"
}

# bench_ab URL CONC N SECONDS [-i]: ab with keep-alive, N requests at most,
# SECONDS at most (ab's -t, which must come before -n); -i sends HEAD.
# Prints Requests per second (0 on failure or on failed requests).  ab's
# full output goes to $BENCH_TMP/last-ab.txt.
bench_ab() {
    local url=$1 c=$2 n=$3 d=$4 head=${5:-} out=$BENCH_TMP/last-ab.txt
    # shellcheck disable=SC2086
    timeout $((d + 30)) ab -q -k $head -c "$c" -t "$d" -n "$n" "$url" \
        > "$out" 2>&1
    if ! grep -q '^Failed requests: *0$' "$out" \
       || grep -q '^Non-2xx responses' "$out"; then
        bench_log "bench: ab saw failures on $url:"
        grep -E 'Failed requests|Non-2xx|apr_' "$out" >&2
        echo 0
        return
    fi
    awk '/^Requests per second:/ { printf "%.0f\n", $4; f = 1 }
         END { if (!f) print 0 }' "$out"
}

# bench_ab_count: "Complete requests" of the last bench_ab run.
bench_ab_count() {
    awk '/^Complete requests:/ { print $3 }' "$BENCH_TMP/last-ab.txt"
}

# bench_load: the 1-minute load average.  Other work on the machine (a test
# suite, a build) skews the figures: the scripts print it so that a reader
# can tell a quiet run from a disturbed one.
bench_load() {
    cut -d' ' -f1 /proc/loadavg
}

bench_ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f\n", a / b;
                                     else print "n/a" }'
}

bench_max() {
    awk -v a="$1" -v b="$2" 'BEGIN { print (a > b) ? a : b }'
}
