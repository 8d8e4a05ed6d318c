#!/bin/sh
# Style checks for src/ (nginx style) and cppcheck.  Exit 1 on any finding.
cd "$(dirname "$0")/.." || exit 1
status=0

report() {
    if [ -n "$2" ]; then
        echo "lint: $1:"
        echo "$2" | head -20
        status=1
    fi
}

report "lines over 80 columns" "$(grep -nE '.{81}' src/*/*.[ch])"
report "tabs" "$(grep -nP '\t' src/*/*.[ch])"
report "trailing white space" "$(grep -nE ' +$' src/*/*.[ch])"
report "C++ comments" "$(grep -nE '^\s*//|[;{}]\s*//' src/*/*.[ch])"
report "missing ngx_http_tent_ prefix on non-static functions" \
    "$(grep -nE '^[a-z_]+\(' src/*/*.c | grep -v ':ngx_http_tent_')"

if command -v cppcheck >/dev/null 2>&1; then
    out=$(cppcheck -q --error-exitcode=1 --enable=warning,portability \
          --inline-suppr --suppress=missingIncludeSystem \
          $(for d in src/*/; do printf -- "-I %s " "$d"; done) -I /usr/share/nginx/src/src/core \
          -I /usr/share/nginx/src/src/event \
          -I /usr/share/nginx/src/src/event/modules \
          -I /usr/share/nginx/src/src/os/unix \
          -I /usr/share/nginx/src/src/http \
          -I /usr/share/nginx/src/src/http/modules \
          -I build -D NGX_HAVE_THREADS=1 --std=c99 src/*/*.c 2>&1) || {
        report "cppcheck" "$out"
    }
else
    echo "lint: cppcheck not installed, skipped"
fi

# the web page's own files stay under 150 KB before compression (issue
# 30, docs/web.md): no build step, nothing bundled
www_bytes=$(cat www/index.html www/web/* | wc -c)
[ "$www_bytes" -le 153600 ] || {
    report "www/ over its 150 KB budget" "$www_bytes bytes"
}

# the layers and boundaries of docs/architecture.md
util/layers.sh >/dev/null || {
    report "layers (util/layers.sh)" "$(util/layers.sh)"
}

[ $status = 0 ] && echo "lint: clean"
exit $status
