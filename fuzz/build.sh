#!/bin/bash
# Builds the fuzz targets (libFuzzer + ASan + UBSan) into fuzz/bin/.
#   fuzz/build.sh [TARGET...]      all targets by default
# CC (default clang) must have libFuzzer: clang 14 with libclang-rt-14-dev.
# Needs build/ngx_auto_config.h (util/build.sh makes it) and nginx-dev.
set -e

top=$(cd "$(dirname "$0")/.." && pwd)
fuzz=$top/fuzz
src=/usr/share/nginx/src/src
cc=${CC:-clang}

if [ ! -f "$top/build/ngx_auto_config.h" ]; then
    "$top/util/build.sh" "$top/build" >&2
fi

incs="-I $src/core -I $src/event -I $src/event/modules -I $src/os/unix
      -I $top/src -I $top/build -I $src/http -I $src/http/modules
      -I $src/http/v2"

cflags="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
        -fno-sanitize-recover=undefined -W -Wall -Wno-unused-parameter
        -Wno-unused-function -Werror ${FUZZ_CFLAGS:-}"

libs="-ljansson -lleveldb -lssl -lcrypto -lcares -lpthread"

targets=${*:-$(cd "$fuzz" && ls fuzz_*.c | sed 's/\.c$//')}

mkdir -p "$fuzz/bin"

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

    # rebuilt when the target, the stubs or any module source is newer
    if [ -f "$out" ] && [ -z "$(find "$fuzz/$t.c" "$stubs" "$fuzz/fuzz.h" \
                                  "$fuzz/nginx-copy.c" \
                                  "$top/src" -newer "$out" -print -quit)" ]
    then
        continue
    fi

    echo "fuzz: building $t" >&2
    $cc $cflags $incs -c "$fuzz/$t.c" -o "$out.o"

    # what the target refers to and neither it nor stubs.o defines
    unreached=$(nm -u "$out.o" | awk '$2 ~ /^ngx_/ {print $2}' \
                | sort -u | comm -23 - <(nm --defined-only "$stubs" \
                                         | awk '{print $3}' | sort -u))
    "$fuzz/gen-unreached.py" "$src" "$top/src/ngx_http_tent_module.h" \
        $unreached > "$out.unreached.c"
    $cc $cflags $incs -Wno-missing-prototypes -c "$out.unreached.c" \
        -o "$out.unreached.o"

    $cc $cflags "$out.o" "$out.unreached.o" "$stubs" $libs -o "$out"
done
