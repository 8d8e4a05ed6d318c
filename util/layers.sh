#!/bin/bash
# The layers of src/ (docs/architecture.md, "Layers"): which headers each
# file may include, where LevelDB, key bytes and nginx's peer connections
# may appear, how long a file may grow.  util/lint.sh runs it; exit 1 on
# any finding.  The compiler keeps the rest: store_private.h is an #error
# outside the store files, LevelDB's and the fetch's internals are
# declared only where they are used.
cd "$(dirname "$0")/.." || exit 1
status=0

finding() {
    echo "layers: $*"
    status=1
}

# a file's layer, by its folder: 0 base, 1 keys, 2 store, 3 outbound,
# 4 subsystems (domain and routes), 5 the module and its router
layer() {
    case "$1" in
        src/base/*) echo 0 ;;
        src/keys/*) echo 1 ;;
        src/store/*) echo 2 ;;
        src/outbound/*) echo 3 ;;
        src/module/*) echo 5 ;;
        src/auth/*|src/posts/*|src/relations/*|src/entity/*|src/hosting/*|\
        src/portability/*|src/delivery/*) echo 4 ;;
        *) echo 9 ;;
    esac
}

# a header's file, by its name
header() {
    ls src/*/"$1" 2>/dev/null | head -1
}

for d in src/*/; do
    [ "$(layer "$d")" != 9 ] || finding "$d is no folder of docs/architecture.md"
done
[ -z "$(ls src/*.[ch] 2>/dev/null)" ] || finding "a file outside the folders:" \
    src/*.[ch]

for f in src/*/ngx_http_tent_*.[ch]; do
    l=$(layer "$f")

    for h in $(sed -n 's/^#include "\(ngx_http_tent_[a-z_]*\.h\)".*/\1/p' "$f")
    do
        hl=$(layer "$(header "$h")")

        if [ "$hl" -gt "$l" ]; then
            finding "$f (layer $l) includes $h (layer $hl)"
        fi

        # the resolver and the guard are the fetch's; the module's
        # directives configure them
        case "$h" in
            ngx_http_tent_resolver.h|ngx_http_tent_guard.h)
                case "$f" in
                    src/outbound/ngx_http_tent_fetch*|\
                    src/outbound/ngx_http_tent_resolver.c|\
                    src/outbound/ngx_http_tent_guard.c|\
                    src/module/ngx_http_tent_module.c|\
                    src/module/ngx_http_tent_module_conf.c|\
                    src/module/ngx_http_tent_conf.c) ;;
                    *) finding "$f includes $h (the fetch's only)" ;;
                esac ;;
        esac
    done
done

# one file calls LevelDB
ldb=$(grep -l 'leveldb_[a-z]' src/*/*.[ch] | sort)
if [ "$(echo "$ldb" | wc -l)" -ne 1 ]; then
    finding "leveldb_* in more than one file:" $ldb
fi

# one subsystem connects to other servers
peer=$(grep -l 'ngx_event_connect_peer\|ngx_peer_connection_t' src/*/*.[ch] \
       | grep -v 'src/outbound/ngx_http_tent_fetch')
[ -z "$peer" ] || finding "peer connections outside the fetch files:" $peer

# the table bytes are the keys file's
tables=$(grep -n "NGX_HTTP_TENT_TABLE_[A-Z_]* *'" src/*/*.[ch])
[ -z "$tables" ] || finding "a table byte outside keys.c: $tables"

# files of one concern
for f in src/*/*.c; do
    n=$(wc -l < "$f")
    [ "$n" -le 1200 ] || finding "$f has $n lines (at most 1,200)"
done

for f in src/*/*.h; do
    n=$(wc -l < "$f")
    [ "$n" -le 400 ] || finding "$f has $n lines (at most 400)"
done

[ $status = 0 ] && echo "layers: clean"
exit $status
