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
        src/portability/*|src/delivery/*|src/activitypub/*) echo 4 ;;
        *) echo 9 ;;
    esac
}

# a header's layer, by its name (9: no such header)
declare -A hlayer
for h in src/*/ngx_http_tent_*.h; do
    hlayer[${h##*/}]=$(layer "$h")
done

for d in src/*/; do
    [ "$(layer "$d")" != 9 ] || finding "$d is no folder of docs/architecture.md"
done
[ -z "$(ls src/*.[ch] 2>/dev/null)" ] || finding "a file outside the folders:" \
    src/*.[ch]

for f in src/*/ngx_http_tent_*.[ch]; do
    l=$(layer "$f")

    for h in $(sed -n 's/^#include "\(ngx_http_tent_[a-z_]*\.h\)".*/\1/p' "$f")
    do
        hl=${hlayer[$h]:-9}

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

# Calls: a symbol (function or data) defined in layer N is referenced
# only from layers >= N.  Read from the objects of the last build
# (build/addon/<folder>/<name>.o, nm: T/D/B/R defined, U undefined), so
# only when no source is newer than the module built from them; a
# callback handed over at run time (a store or fetch handler) names no
# symbol there and so is no finding.  BUILD: the build directory.
#
# Left as they are, by symbol, each with its reason:
#   ngx_http_tent_module  the module object (module.c): nginx's handle
#       for our confs and request ctx (ngx_http_get_module_*_conf,
#       ngx_http_get_module_ctx), data every layer passes to nginx and
#       never calls; its definition names the module's directives and
#       hooks, so it cannot live below them
calls_allowed="ngx_http_tent_module"

calls() {
    local build=${BUILD:-build} so newer

    so=$build/ngx_http_tent_module.so

    if [ ! -f "$so" ]; then
        echo "layers: calls not checked: no $so (make build)" >&2
        return
    fi

    newer=$(find src config -type f -newer "$so" -print -quit)
    if [ -n "$newer" ]; then
        echo "layers: calls not checked: $newer is newer than $so" \
             "(make build)" >&2
        return
    fi

    # every folder's layer, then nm's lines: "folder/name.o:[addr] T sym"
    {
        for d in src/*/; do
            d=${d%/}
            echo "layer ${d#src/} $(layer "$d/")"
        done

        for o in "$build"/addon/*/ngx_http_tent_*.o; do
            f=${o#"$build"/addon/}
            # an object whose source is gone (moved, removed) is stale
            [ -f "src/${f%.o}.c" ] && echo "object $f"
        done
    } | awk -v build="$build" -v allowed="$calls_allowed" '
        $1 == "layer" { layer[$2] = $3; next }
        $1 == "object" { objs = objs " " build "/addon/" $2; next }
        END {
            n = split(allowed, a, " ")
            for (i = 1; i <= n; i++) allow[a[i]] = 1

            cmd = "nm -A " objs
            while ((cmd | getline line) > 0) {
                split(line, p, ":")
                f = substr(p[1], length(build "/addon/") + 1)
                sub(/\.o$/, ".c", f)
                m = split(line, w, " ")
                t = w[m - 1]; sym = w[m]
                if (t ~ /^[TDBRC]$/) def[sym] = f
                else if (t == "U") use[f, sym] = 1
            }
            close(cmd)

            for (k in use) {
                split(k, u, SUBSEP)
                f = u[1]; sym = u[2]
                if (!(sym in def) || (sym in allow)) continue
                d = def[sym]
                fl = f; sub(/\/.*/, "", fl)
                dl = d; sub(/\/.*/, "", dl)
                if (layer[dl] > layer[fl]) {
                    printf "src/%s (layer %d) uses %s of src/%s" \
                           " (layer %d)\n", f, layer[fl], sym, d, layer[dl]
                }
            }
        }' | sort
}

while read -r c; do
    finding "$c"
done < <(calls)

[ $status = 0 ] && echo "layers: clean"
exit $status
