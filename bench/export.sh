#!/bin/bash
# bench/export.sh: GET /tent/export?posts=1 of an entity of N posts, with
# the worker's memory sampled, against plain nginx serving a file of the
# same size (docs/bench.md, docs/export.md "Memory and time").
#
# Starts the module (one worker by default: the store's thread and the
# export in the same process, so its RSS is all of it; fresh store; an
# owner app with every scope, util/demo-owner.pl) and fills the entity
# through the API as bench/posts-read.sh does: N signed public status
# posts made beforehand (bench/posts-sign.pl), sent by wrk -t2 -c64 with
# bench/posts-write.lua, until the store has them all.  Then it exports
# the entity once with curl (signed by bin/tent-curl), the worker's
# VmRSS and RssAnon read from /proc every SAMPLE seconds while it runs,
# and checks the document is whole ("complete": true, the posts
# counted).  The baseline: plain nginx, the same worker count, serving
# that document as a static file to the same curl, sampled the same way.
# The last lines:
#   export: N posts, B bytes in T s: P posts/s, M MB/s
#   export: worker VmRSS before A kB, max B kB, after C kB (RssAnon ...)
#   baseline: the same B bytes as a static file in T s, M MB/s
#   baseline: worker VmRSS before A kB, max B kB, after C kB (RssAnon ...)
#   export: time module/baseline R; VmRSS growth during the export
#     G kB (RssAnon H kB) vs baseline I kB
#
# Environment (defaults):
#   N=100000  FILL_SECONDS=300  WORKERS=1  SAMPLE=0.02
#   KEEP=1 (keep the temp dir)
set -e

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=bench/posts-lib.sh
. "$(dirname "$0")/posts-lib.sh"

N=${N:-100000}
FILL_SECONDS=${FILL_SECONDS:-300}
WORKERS=${WORKERS:-1}
SAMPLE=${SAMPLE:-0.02}

bench_init
bench_ensure_module
command -v perl >/dev/null || bench_die "perl is not installed"

trap 'posts_fill_stop; bench_cleanup' EXIT

mport=$(bench_free_port "${PORT:-18081}")
bport=$(bench_free_port $((mport + 1)))
murl=http://127.0.0.1:$mport
burl=http://127.0.0.1:$bport

mprefix=$(bench_prefix module)
posts_module_start "$mprefix" "$mport" "$WORKERS"
echo "module   $murl ($WORKERS worker(s)), store $mprefix/store"
echo "load average before: $(bench_load) ($(nproc) cores)"

# --- fill (posts_fill, bench/posts-lib.sh) ---------------------------------
posts_fill "$mprefix" "$mport" "$N"
sleep 2             # the fill's connections gone, the store settled

# --- sampling -----------------------------------------------------------

# sample_start PREFIX OUT: "VmRSS RssAnon" (kB, summed over the workers)
# every SAMPLE s into OUT, in the background, until sample_stop
sampler=
sample_once() {
    local w v a tv=0 ta=0
    for w in $(bench_workers "$1"); do
        read -r v a < <(awk '/^VmRSS:/ { v = $2 } /^RssAnon:/ { a = $2 }
                             END { print v + 0, a + 0 }' \
                        "/proc/$w/status" 2>/dev/null) || continue
        tv=$((tv + v)) ta=$((ta + a))
    done
    echo "$tv $ta"
}
sample_start() {
    local prefix=$1 out=$2
    : > "$out"
    # one perl process: no fork a sample, so a sample every SAMPLE s
    # even on a loaded machine
    # shellcheck disable=SC2046 # one argument a worker pid
    perl -MTime::HiRes=sleep -e '
        my ($every, @pids) = @ARGV;
        $| = 1;
        while (1) {
            my ($tv, $ta) = (0, 0);
            for my $p (@pids) {
                open my $fh, "<", "/proc/$p/status" or next;
                while (<$fh>) {
                    $tv += $1 if /^VmRSS:\s+(\d+)/;
                    $ta += $1 if /^RssAnon:\s+(\d+)/;
                }
            }
            print "$tv $ta\n";
            sleep $every;
        }' "$SAMPLE" $(bench_workers "$prefix") >> "$out" &
    sampler=$!
    # the first sample taken before what is measured begins
    local i=0
    while [ ! -s "$out" ] && [ $i -lt 200 ]; do sleep 0.01; i=$((i + 1)); done
}
sample_stop() {
    if [ -n "$sampler" ]; then
        kill "$sampler" 2>/dev/null || true
        wait "$sampler" 2>/dev/null || true
    fi
    sampler=
}
trap 'sample_stop; posts_fill_stop; bench_cleanup' EXIT
sample_max() {      # column 1 VmRSS, 2 RssAnon
    awk -v c="$2" '$c > m { m = $c } END { print m + 0 }' "$1"
}

# fetch PREFIX LABEL URL OUT [tent-curl args]: curl it with the workers
# sampled; sets before_v before_a max_v max_a after_v after_a secs bytes
fetch() {
    local prefix=$1 label=$2 url=$3 out=$4 w
    shift 4
    read -r before_v before_a < <(sample_once "$prefix")
    sample_start "$prefix" "$BENCH_TMP/$label.rss"
    if [ $# -gt 0 ]; then
        w=$("$BENCH_TOP/bin/tent-curl" "$@" "$url" -- -sS -o "$out" \
            -w '%{http_code} %{size_download} %{time_total}') \
            || bench_die "$label: curl failed"
    else
        w=$(curl -sS -o "$out" \
            -w '%{http_code} %{size_download} %{time_total}' "$url") \
            || bench_die "$label: curl failed"
    fi
    sample_stop
    sleep 0.5
    read -r after_v after_a < <(sample_once "$prefix")
    read -r code bytes secs <<< "$w"
    [ "$code" = 200 ] || bench_die "$label: $url answered $code"
    echo "$before_v $before_a" >> "$BENCH_TMP/$label.rss"
    echo "$after_v $after_a" >> "$BENCH_TMP/$label.rss"
    max_v=$(sample_max "$BENCH_TMP/$label.rss" 1)
    max_a=$(sample_max "$BENCH_TMP/$label.rss" 2)
    samples=$(( $(wc -l < "$BENCH_TMP/$label.rss") - 2 ))
}

# --- the export ---------------------------------------------------------------

echo "load average before the export: $(bench_load)"
fetch "$mprefix" export "$murl/tent/export?posts=1" "$BENCH_TMP/export.json" \
    --cred "$mprefix/owner.json"
m_secs=$secs m_bytes=$bytes
m_bv=$before_v m_ba=$before_a m_mv=$max_v m_ma=$max_a m_av=$after_v m_aa=$after_a
m_samples=$samples
# whole: ends with its last field; the posts counted by the "versions":[
# each opens (no JSON string holds it unescaped).  Not JSON::PP: decoding
# 43 MB in pure Perl takes minutes on a loaded machine.
tail -c 32 "$BENCH_TMP/export.json" | grep -q '"complete":true}$' \
    || bench_die "the export is not a whole document (no \"complete\":true at its end)"
got=$(grep -o '"versions":\[' "$BENCH_TMP/export.json" | wc -l)
[ "$got" -ge "$posts_filled" ] || bench_die "the export has $got posts, not $posts_filled"
awk -v n="$got" -v b="$m_bytes" -v t="$m_secs" 'BEGIN {
    printf "export: %d posts, %d bytes in %.2f s: %.0f posts/s, %.1f MB/s\n",
           n, b, t, n / t, b / t / 1e6 }'
echo "export: worker VmRSS before $m_bv kB, max $m_mv kB, after $m_av kB" \
     "(RssAnon $m_ba / $m_ma / $m_aa kB; $m_samples samples)"

# --- the baseline -------------------------------------------------------

bprefix=$(bench_prefix baseline)
mv "$BENCH_TMP/export.json" "$bprefix/html/export.json"
chmod 0644 "$bprefix/html/export.json"
bench_write_conf "$bprefix" "$bport" "$WORKERS" "" \
"        root  $bprefix/html;
        location = /export.json {
            default_type  application/vnd.tent.export.v0+json;
        }"
bench_nginx_start "$bprefix" "$burl/export.json"
sleep 1
fetch "$bprefix" baseline "$burl/export.json" /dev/null
awk -v b="$bytes" -v t="$secs" 'BEGIN {
    printf "baseline: the same %d bytes as a static file in %.2f s, %.1f MB/s\n",
           b, t, b / t / 1e6 }'
echo "baseline: worker VmRSS before $before_v kB, max $max_v kB, after" \
     "$after_v kB (RssAnon $before_a / $max_a / $after_a kB; $samples samples)"
echo "load average after: $(bench_load)"
awk -v mt="$m_secs" -v bt="$secs" -v mg=$((m_mv - m_bv)) \
    -v bg=$((max_v - before_v)) -v ma=$((m_ma - m_ba)) 'BEGIN {
    printf "export: time module/baseline %.2f; VmRSS growth during the" \
           " export %d kB (RssAnon %d kB) vs baseline %d kB\n",
           mt / bt, mg, ma, bg }'
