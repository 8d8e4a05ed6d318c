#!/bin/bash
# Builds the fuzz targets (libFuzzer + ASan + UBSan) into fuzz/bin/.
#   fuzz/build.sh [TARGET...]      all targets by default
# CC (default clang) must have libFuzzer: clang 14 with libclang-rt-14-dev.
# Needs build/ngx_auto_config.h (util/build.sh makes it), nginx-dev, and
# nginx's own sources of the installed version, which fuzz/nginx-src.sh
# fetches from Debian's mirror into build/nginx-src/ on first use.
set -e

top=$(cd "$(dirname "$0")/.." && pwd)
fuzz=$top/fuzz
src=/usr/share/nginx/src/src
cc=${CC:-clang}

if [ ! -f "$top/build/ngx_auto_config.h" ]; then
    "$top/util/build.sh" "$top/build" >&2
fi

incs="-I $src/core -I $src/event -I $src/event/modules -I $src/os/unix
      $(for d in "$top"/src/*/; do printf -- "-I %s " "$d"; done)
      -I $top/build -I $src/http -I $src/http/modules
      -I $src/http/v2"

cflags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
        -fno-sanitize-recover=undefined -W -Wall -Wno-unused-parameter
        -Wno-unused-function -Werror ${FUZZ_CFLAGS:-}"

# nginx's own .c files the targets run (its string functions and
# formatting, arrays, address parsing and CIDR matching, HTTP parsers),
# compiled unchanged from its sources: nginx-dev ships headers only and
# the project keeps no copy of nginx's code
ngx_src=$("$fuzz/nginx-src.sh")
ngx_files="src/core/ngx_string.c src/core/ngx_array.c src/core/ngx_inet.c
           src/http/ngx_http_parse.c"

# nginx's own undefined behaviour, not the module's: ngx_cidr_match()
# shifts an unsigned char promoted to int into the sign bit: UBSan's
# shift check is off for ngx_inet.c (only), the file left as it is
ngx_file_cflags() {
    case "$1" in
        */ngx_inet.c) echo "-fno-sanitize=shift" ;;
    esac
}

libs="-ljansson -lleveldb -lssl -lcrypto -lcares -lpthread"

targets=${*:-$(cd "$fuzz" && ls fuzz_*.c | sed 's/\.c$//')}

mkdir -p "$fuzz/bin"

# nginx's files once, instrumented as the targets are, but their warnings
# are nginx's (no -Werror), in a directory of their version; rebuilt when
# this script (their flags) changed
ngx_version=$(sed -n 's/^#define NGINX_VERSION  *"\(.*\)"$/\1/p' \
              "$ngx_src/src/core/nginx.h")
ngx_bin=$fuzz/bin/nginx-$ngx_version
mkdir -p "$ngx_bin"
ngx_objs=
for f in $ngx_files; do
    o=$ngx_bin/$(basename "$f" .c).o
    ngx_objs="$ngx_objs $o"
    if [ ! -f "$o" ] || [ "$ngx_src/$f" -nt "$o" ] || [ "$0" -nt "$o" ]
    then
        $cc ${cflags/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,} \
            -Wno-error $(ngx_file_cflags "$f") $incs \
            -c "$ngx_src/$f" -o "$o"
    fi
done

# stubs.c once, without the fuzzer's main (-fsanitize=fuzzer-no-link)
stubs=$fuzz/bin/stubs.o
if [ ! -f "$stubs" ] || [ "$fuzz/stubs.c" -nt "$stubs" ] \
   || [ "$fuzz/fuzz.h" -nt "$stubs" ]
then
    $cc ${cflags/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,} $incs \
        -c "$fuzz/stubs.c" -o "$stubs"
fi

for t in $targets; do
    t=${t%.c}
    t=${t#fuzz/}
    out=$fuzz/bin/$t

    # rebuilt when the target, the stubs, nginx's files or any module
    # source is newer
    if [ -f "$out" ] && [ -z "$(find "$fuzz/$t.c" "$stubs" "$fuzz/fuzz.h" \
                                  $ngx_objs \
                                  "$top/src" -newer "$out" -print -quit)" ]
    then
        continue
    fi

    echo "fuzz: building $t" >&2
    $cc $cflags $incs -c "$fuzz/$t.c" -o "$out.o"

    # what the target, nginx's files or the stubs refer to and none of
    # them defines
    objs="$out.o $ngx_objs $stubs"
    unreached=$(nm -u $objs | awk '$2 ~ /^ngx_/ {print $2}' | sort -u \
                | comm -23 - <(nm -g --defined-only $objs \
                               | awk '{print $3}' | sort -u))
    "$fuzz/gen-unreached.py" "$src" "$top/src" $unreached \
        > "$out.unreached.c"
    $cc $cflags $incs -Wno-missing-prototypes -c "$out.unreached.c" \
        -o "$out.unreached.o"

    $cc $cflags "$out.o" "$out.unreached.o" "$stubs" $ngx_objs $libs \
        -o "$out"
done
