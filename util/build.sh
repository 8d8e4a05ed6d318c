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
            --add-dynamic-module="$top" --builddir="$build"
    ) > "$build/configure.log" 2>&1 || {
        tail -20 "$build/configure.log" >&2
        exit 1
    }
    printf '%s' "$want" > "$stamp"
fi

make -s -f "$build/Makefile" -C "$src" modules
echo "built $build/ngx_http_tent_module.so"
