#!/bin/bash
# Builds ngx_http_tent_module.so against Debian's packaged nginx (nginx-dev).
#   util/build.sh [BUILDDIR] [extra cc flags]
# BUILDDIR defaults to ./build; extra flags select e.g. an ASan build.
set -e

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
extra=${2:-}
src=/usr/share/nginx/src

case "$build" in /*) ;; *) build=$top/$build ;; esac

if [ ! -f "$src/conf_flags" ]; then
    echo "build: $src/conf_flags is missing: install nginx-dev" >&2
    exit 1
fi

mkdir -p "$build"

# nginx's configure turns every ".c" and ".S" in a source path into ".o"
# (auto/make: its seds are not anchored there), so a checkout or build
# directory with one in its path ("/tmp/tmp.SlPR...", ".../.cache/...")
# gets a Makefile that cannot build.  Such paths reach configure through
# symlinks named without a dot, kept (the Makefile refers to them) and
# made again before each build.
case "$top$build" in
*.[cS]*)
    link="${TMPDIR:-/tmp}"
    case "$link" in *.*) link=/tmp ;; esac
    link="$link/ngx-tent-build-$(printf '%s\n%s' "$top" "$build" \
                                 | md5sum | cut -c1-16)"
    mkdir -p "$link"
    ln -sfn "$top" "$link/top"
    ln -sfn "$build" "$link/build"
    top_cf=$link/top
    build_cf=$link/build
    ;;
*)
    top_cf=$top
    build_cf=$build
    ;;
esac

say() { echo "build: $*"; }

# configure only when the addon file or the flags changed
stamp="$build/.configured"
want="$(cat "$top/config" "$src/conf_flags"; echo "$extra")"
if [ ! -f "$build/Makefile" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]
then
    say "configure against nginx-dev's nginx ($src; log: $build/configure.log)"
    (
        cd "$src"
        . ./conf_flags
        ./configure \
            --with-cc-opt="-g -O2 -fstack-protector-strong -Wformat \
-Werror=format-security -fPIC -Wdate-time -D_FORTIFY_SOURCE=2 $extra" \
            --with-ld-opt="-Wl,-z,relro -Wl,-z,now -fPIC $extra" \
            "${NGX_CONF_FLAGS[@]}" \
            --add-dynamic-module="$top_cf" --builddir="$build_cf"
    ) > "$build/configure.log" 2>&1 || {
        tail -20 "$build/configure.log" >&2
        exit 1
    }
    printf '%s' "$want" > "$stamp"
fi

# Compile with a job per core, and say how far it is: "N of M", M the
# objects make would build now (make -n), N counted from the commands make
# echoes (one -o FILE.o each; -O keeps a job's echo and its compiler's
# words together), which are not shown themselves; the compiler's
# warnings and errors are.  On a terminal one line is rewritten; else a
# line at every tenth of the way, so a log stays short.
jobs=${BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}
cc=$(sed -n 's/^CC *=[[:space:]]*//p' "$build/Makefile")
total=$(make -n -f "$build_cf/Makefile" -C "$src" --no-print-directory \
            modules 2>/dev/null | grep -c '^[[:space:]]*-o [^ ]*\.o \\$') \
    || true
tty=0
[ -t 1 ] && tty=1
files=files
[ "$total" = 1 ] && files=file
if [ "$total" -gt 0 ]; then
    say "compile $total $files of the module, $jobs jobs (make -j$jobs)"
fi

set +e
make -j"$jobs" -O -f "$build_cf/Makefile" -C "$src" --no-print-directory \
    modules 2>&1 | awk -v total="$total" -v cc="${cc:-cc}" -v tty="$tty" '
    function done_cmd(   f, n) {
        if (cmd ~ /[ \t]-o [^ \t]*\.o[ \t]/) {
            n = ++compiled
            f = cmd; sub(/.* /, "", f); sub(/.*\//, "", f)
            if (tty) {
                printf "\rbuild: compile %d of %d: %-40s", n, total, f
                fflush()
            } else if (n == total || int(n * 10 / total) \
                       != int((n - 1) * 10 / total)) {
                printf "build: compile %d of %d\n", n, total
                fflush()
            }
        } else if (cmd ~ /[ \t]-o [^ \t]*\.so[ \t]/) {
            if (tty && compiled) printf "\n"
            f = cmd; sub(/.*[ \t]-o /, "", f); sub(/[ \t].*/, "", f)
            sub(/.*\//, "", f)
            printf "build: link %s\n", f
            fflush()
            linked = 1
        }
        cmd = ""
    }
    incmd {
        cmd = cmd " " $0
        if ($0 !~ /\\$/) { incmd = 0; done_cmd() }
        next
    }
    index($0, cc " ") == 1 {
        cmd = $0
        if ($0 ~ /\\$/) incmd = 1; else done_cmd()
        next
    }
    {
        if (tty && compiled && !linked && !nl) { printf "\n"; nl = 1 }
        print; fflush()
    }
    END { if (tty && compiled && !linked) printf "\n" }'
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" != 0 ]; then
    say "FAILED (make exited $rc)" >&2
    exit "$rc"
fi
say "built $build/ngx_http_tent_module.so"
