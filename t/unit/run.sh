#!/bin/sh
# Standalone unit checks: build each t/unit/*_test.c against the nginx
# headers and jansson, run it.  NGINX_SRC: the nginx source tree.
cd "$(dirname "$0")/../.." || exit 1
src=${NGINX_SRC:-/usr/share/nginx/src}
out=${TMPDIR:-/tmp}/tent-unit.$$
status=0

for t in t/unit/*_test.c; do
    cc -std=gnu99 -W -Wall -Wno-unused-parameter -Wno-unused-function \
        -Werror -g -O1 -fsanitize=address,undefined \
        -I "$src/src/core" -I "$src/src/event" -I "$src/src/event/modules" \
        -I "$src/src/os/unix" -I build -I "$src/src/http" \
        -I "$src/src/http/modules" -I "$src/src/http/v2" \
        $(for d in src/*/; do printf -- "-I %s " "$d"; done) \
        -o "$out" "$t" -ljansson -lcrypto || { status=1; continue; }

    "$out" || status=1
    rm -f "$out"
done

exit $status
