#!/bin/sh
# prove, with the diagnostics of failing tests printed again at its end:
#   util/prove.sh [prove options] [tests...]
# CI keeps only the tail of a long run, where prove's summary names the
# failed tests but not why; the "#" lines (Test::More's failure messages
# and the suites' diag()) are what tells why.
log=$(mktemp /tmp/tent-prove.XXXXXX)
trap 'rm -f "$log"' EXIT
# the exit status of prove, not of tee, through a file (POSIX sh has no
# pipefail)
rcf=$log.rc
{ prove "$@" 2>&1; echo $? > "$rcf"; } | tee "$log"
rc=$(cat "$rcf")
rm -f "$rcf"
if [ "$rc" != 0 ]; then
    echo "--- prove failed ($rc): the diagnostics printed above, again ---"
    grep -E '^[[:space:]]*#|^not ok|^Dubious|^Bailout' "$log" | tail -n 150
fi
exit "$rc"
