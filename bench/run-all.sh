#!/bin/bash
# bench/run-all.sh: every benchmark in bench/, then their result lines.
# `make bench` runs this.  Each script's full output is shown as it runs;
# the summary at the end repeats the result lines (the ones with a ratio
# against the target, and the rss line).  Nothing here asserts on timing:
# the exit status is non-zero only when a benchmark could not run.
#
# Environment: PROFILE_WORKERS="1 2" (profile.sh once per worker count),
# and whatever the scripts take (DURATION, ROUNDS, REQUESTS, MAX_SECONDS,
# RATE_CAP, FILL, and fanout.sh's SMALL, BIG, LOCAL...).

here=$(cd "$(dirname "$0")" && pwd)
PROFILE_WORKERS=${PROFILE_WORKERS:-1 2}

out=$(mktemp /tmp/tent-bench-all.XXXXXX) || exit 1
trap 'rm -f "$out" "$out.cur"' EXIT
status=0

run() {         # run LABEL CMD...: runs CMD, keeps its result lines
    local label=$1 rc
    shift
    echo "=== $label"
    "$@" 2>&1 | tee "$out.cur"
    rc=${PIPESTATUS[0]}
    if [ "$rc" != 0 ]; then
        echo "$label: FAILED (exit $rc)" >> "$out"
        status=1
    else
        grep -E 'ratio .*\(target|^rss:|^posts-write: .*errors|^fill:'\
'|^fanout: (rss|same-node)' "$out.cur" \
            | sed "s|^|$label  |" >> "$out"
    fi
    rm -f "$out.cur"
    echo
}

for w in $PROFILE_WORKERS; do
    run "[profile workers=$w]" env WORKERS="$w" "$here/profile.sh"
done
run "[rss workers=${RSS_WORKERS:-2}]" env WORKERS="${RSS_WORKERS:-2}" "$here/rss.sh"
run "[posts-write]" "$here/posts-write.sh"
run "[posts-read]" "$here/posts-read.sh"
run "[delivery]" "$here/delivery.sh"
run "[attachments]" "$here/attachments.sh"
run "[fanout]" "$here/fanout.sh"
run "[ap-inbox]" "$here/ap-inbox.sh"

echo "=== summary (best of rounds; figures vary from run to run, see" \
     "docs/bench.md; wrk/ab share the $(nproc) cores with nginx)"
cat "$out"
exit $status
