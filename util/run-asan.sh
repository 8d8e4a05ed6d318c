#!/bin/sh
# Runs the suites against a module built with AddressSanitizer:
#   util/run-asan.sh /abs/path/ngx_http_tent_module.so [tests...]
# Debian's nginx is not instrumented: libasan is preloaded into nginx only
# (through a wrapper given as TEST_NGINX_BINARY), not into perl.  Reports
# go to <servroot>/logs/asan.*, which the harness turns into failures;
# a second nginx (t/lib/Tent/Peer.pm) sets TENT_ASAN_LOG to its own logs.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
so=$1
shift
[ $# -gt 0 ] || set -- t/

libasan=$(gcc -print-file-name=libasan.so)
[ -f "$libasan" ] || { echo "run-asan: libasan not found" >&2; exit 1; }

servroot=${TEST_NGINX_SERVROOT:-$top/t/servroot}
wrapper=$(mktemp /tmp/nginx-asan.XXXXXX)
trap 'rm -f "$wrapper"' EXIT

# UBSan ignores a log_path next to ASan: its reports go to stderr, which
# nginx points at the error log, where the harness looks for them.
# Leak checking stays off: nginx frees its cycle at exit only partly, and
# modules are dlclose()d before LSan runs, so leak reports would be
# noise; "make test-valgrind" checks leaks with symbols.
cat > "$wrapper" <<WRAP
#!/bin/sh
export LD_PRELOAD="$libasan"
export ASAN_OPTIONS="log_path=\${TENT_ASAN_LOG:-\${TEST_NGINX_SERVROOT:-$servroot}/logs/asan}:\
detect_leaks=0:\
abort_on_error=0:detect_stack_use_after_return=0:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=0"
exec /usr/sbin/nginx "\$@"
WRAP
chmod +x "$wrapper"

cd "$top"
TEST_NGINX_BINARY=$wrapper TEST_NGINX_LOAD_MODULES=$so \
TEST_NGINX_SERVROOT=$servroot TEST_NGINX_SLEEP=${TEST_NGINX_SLEEP:-0.2} \
    util/prove.sh -j"${PROVE_JOBS:-1}" -It/lib -r "$@"
