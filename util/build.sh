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

# configure only when the addon file or the flags changed
stamp="$build/.configured"
want="$(cat "$top/config" "$src/conf_flags"; echo "$extra")"
if [ ! -f "$build/Makefile" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]
then
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

make -s -f "$build_cf/Makefile" -C "$src" modules
echo "built $build/ngx_http_tent_module.so"
