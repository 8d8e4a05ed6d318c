#!/bin/bash
# Runs every fuzz target for SECONDS each (default 10), one after another.
#   fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]
#   FUZZ_RUNS=10000000 fuzz/run.sh 1800   (each target 10M executions,
#                                          30 min at most)
# Each target starts from a copy of fuzz/corpus/<target>/ in fuzz/out/,
# so the seed corpus stays as committed; crash inputs land in
# fuzz/out/<target>/crashes/, logs in fuzz/out/<target>.log.
# Exits non-zero when any target crashed (or did not run).
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
fuzz=$top/fuzz
secs=${1:-10}
shift 2>/dev/null || true

"$fuzz/build.sh" "$@" || exit 1

targets=${*:-$(cd "$fuzz" && ls fuzz_*.c | sed 's/\.c$//')}

# where fuzz_store makes its database directory (removed at exit): tmpfs
# when there is one, as synced writes are many
if [ -z "${TENT_FUZZ_TMPDIR:-}" ]; then
    if [ -w /dev/shm ]; then
        TENT_FUZZ_TMPDIR=/dev/shm
    else
        TENT_FUZZ_TMPDIR=$fuzz/out/tmp
        mkdir -p "$TENT_FUZZ_TMPDIR"
    fi
fi
export TENT_FUZZ_TMPDIR

ntargets=0
total=0
crashes=0

for t in $targets; do
    t=${t%.c}
    t=${t#fuzz/}
    work=$fuzz/out/$t
    log=$fuzz/out/$t.log

    # a crash counts in the run that finds it (its input stays until the
    # next run): stale ones from an older build are not this run's
    rm -rf "$work/corpus" "$work/crashes"
    mkdir -p "$work/corpus" "$work/crashes"
    cp -r "$fuzz/corpus/$t/." "$work/corpus/" 2>/dev/null

    # FUZZ_RUNS=N: stop after N executions (SECONDS still bounds the run)
    "$fuzz/bin/$t" -max_total_time="$secs" ${FUZZ_RUNS:+-runs=$FUZZ_RUNS} \
        -timeout=5 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$work/crashes/" \
        "$work/corpus" > "$log" 2>&1
    rc=$?

    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" \
            | tail -1)
    found=$(find "$work/crashes" -type f | wc -l)

    if [ "$rc" -ne 0 ] && [ "$found" -eq 0 ]; then
        # died without an artifact (build or harness trouble): a failure
        found=1
    fi

    printf 'fuzz: %-12s %10s execs  %s crash(es)%s\n' "$t" "${execs:-?}" \
           "$found" "$( [ "$found" -ne 0 ] && echo "  see $log")"

    ntargets=$((ntargets + 1))
    total=$((total + ${execs:-0}))
    crashes=$((crashes + found))
done

echo "fuzz: $ntargets targets, total executions $total, crashes $crashes"

[ "$crashes" -eq 0 ]
