#!/bin/bash
# The Debian package, libnginx-mod-http-tent (docs/packaging.md).
#   util/deb.sh build   builds build-deb/libnginx-mod-http-tent_*.deb
#   util/deb.sh test    installs it with apt into a throwaway Debian 12
#                       root (debootstrap, nginx installed), then nginx -t,
#                       a request, remove and purge
# PORT (default 18380) is the chroot nginx's loopback port.
set -e

top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build-deb
port=${PORT:-18380}
suite=bookworm
mirror=${DEB_MIRROR:-http://deb.debian.org/debian}

# never one from the environment: cleanup removes it
root=

say() { echo "deb: $*" >&2; }
fail() { echo "deb: FAIL: $*" >&2; exit 1; }

build() {
    say "copy the tree to $out/src"
    rm -rf "$out/src"
    mkdir -p "$out/src"
    # the tree as it is, without what builds and tests leave
    tar -C "$top" --exclude=./build --exclude='./build-*' \
        --exclude='./t/servroot*' --exclude=./demo --exclude=./.git \
        --exclude='./fuzz/out' --exclude='./fuzz/bin' -cf - . \
        | tar -C "$out/src" -xf -
    rm -f "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes
    say "dpkg-buildpackage in $out/src (log: $out/build.log)"
    # the log whole, and util/build.sh's steps (configure, compile N of
    # M, link) and debhelper's on the terminal
    set +e
    (cd "$out/src" && dpkg-buildpackage -us -uc -b) 2>&1 \
        | tee "$out/build.log" \
        | grep --line-buffered -E \
            '^(build: |   dh_(install|installdocs|installman|shlibdeps|builddeb)( -a)?$|dpkg-deb: building)' \
        | sed -u 's/^ *//; s/^/deb: /' >&2
    rc=${PIPESTATUS[0]}
    set -e
    [ "$rc" = 0 ] || { tail -30 "$out/build.log" >&2; fail "dpkg-buildpackage"; }
    deb=$(ls "$out"/libnginx-mod-http-tent_*.deb)
    say "built $deb"
    dpkg-deb -I "$deb" | sed -n '/Depends/p'
}

# a Debian 12 root with nginx, made once and kept as a tarball
root_tar() {
    if [ ! -f "$out/root.tar" ]; then
        say "debootstrap $suite with nginx (a few minutes, once)"
        rm -rf "$out/root.new"
        debootstrap --variant=minbase --include=nginx-light \
            "$suite" "$out/root.new" "$mirror" > "$out/debootstrap.log" 2>&1 \
            || { tail -20 "$out/debootstrap.log" >&2; fail "debootstrap"; }
        tar -C "$out/root.new" -cf "$out/root.tar" .
        rm -rf "$out/root.new"
    fi
}

# The mount points under DIR still mounted (/proc/self/mountinfo, field 5;
# octal escapes as the kernel writes them, so a plain prefix test).
mounts_under() {
    awk -v d="$1/" 'index($5 "/", d) == 1 { print $5 }' /proc/self/mountinfo
}

# Removes the throwaway root, and only it: a path of mktemp's pattern, never
# while anything is mounted under it (the bind-mounted /dev is the host's:
# an rm -rf through it would delete the host's device nodes).
cleanup() {
    case "$root" in
        /tmp/tent-deb-root.??????) ;;
        *) return 0 ;;
    esac
    [ -d "$root" ] && [ ! -L "$root" ] || return 0
    chroot "$root" /usr/sbin/nginx -s stop 2>/dev/null || true
    for m in proc dev; do
        umount "$root/$m" 2>/dev/null \
            || { sleep 1; umount "$root/$m" 2>/dev/null; } || true
    done
    left=$(mounts_under "$root")
    if [ -n "$left" ]; then
        echo "deb: still mounted, $root left in place: $left" >&2
        return 0
    fi
    rm -rf --one-file-system "$root"
}

# Each file the package is to install, in the installed root: the web
# page (docs/web.md's path), README.md and every doc it links, each man
# page (formatted by man -l where the host has man-db), the example with
# the body size docs/web.md gives.
installed_files() {
    local doc=$root/usr/share/doc/libnginx-mod-http-tent f n
    n=0
    for f in $(cd "$top/www" && find . -type f | sort); do
        cmp -s "$top/www/$f" "$root/usr/share/libnginx-mod-http-tent/www/$f" \
            || fail "www/$f is not in /usr/share/libnginx-mod-http-tent/www"
        n=$((n + 1))
    done
    [ $n -ge 5 ] || fail "www/ has $n files"
    grep -q 'root *\(/usr/share/libnginx-mod-http-tent/www\);' \
        "$doc/docs/web.md" || fail "docs/web.md names another www path"

    [ -f "$doc/README.md" ] || fail "no README.md in $doc"
    for f in $(grep -o '](docs/[^)#]*' "$top/README.md" | cut -c3- | sort -u)
    do
        [ -f "$doc/$f" ] || fail "README.md links $f: not in $doc"
        n=$((n + 1))
    done
    [ -f "$doc/docs/web.png" ] || fail "no docs/web.png (docs/web.md shows it)"

    for f in man8/tent-admin.8 man8/tent-backup.8 man1/tent-curl.1 \
             man1/tent-move.1; do
        f=$root/usr/share/man/$f.gz
        [ -f "$f" ] || fail "no man page $f"
        zcat "$f" | grep -q '^\.TH ' || fail "$f is no man page"
        if command -v man > /dev/null; then
            MANWIDTH=80 man -l "$f" 2>&1 | grep -q '^SYNOPSIS' \
                || fail "man -l $f: no SYNOPSIS"
        fi
        n=$((n + 1))
    done

    f=$doc/examples/tent-site.conf
    grep -q '^ *client_max_body_size *11m;' "$f" \
        || fail "the example has not client_max_body_size 11m (docs/web.md)"
    grep -q '^ *tent_max_attachment_size *10m;' "$f" \
        || fail "the example has not tent_max_attachment_size 10m"
    grep -q '/usr/share/libnginx-mod-http-tent/www' "$f" \
        || fail "the example does not serve the packaged web page"
    say "installed: $n files checked (www/, README and its docs, man pages)"
}

test_deb() {
    deb=$(ls "$out"/libnginx-mod-http-tent_*.deb 2>/dev/null) \
        || fail "no package: run util/deb.sh build first"
    [ "$(id -u)" = 0 ] || fail "the test installs into a chroot: run as root"

    # what the package says of itself, before any install
    dpkg-deb -f "$deb" Depends | grep -q 'nginx-abi-' \
        || fail "no nginx-abi dependency"
    for lib in libjansson libleveldb libc-ares; do
        dpkg-deb -f "$deb" Depends | grep -q "$lib" \
            || fail "no $lib dependency from shlibs"
    done
    dpkg-deb -f "$deb" Depends | grep -q 'ca-certificates' \
        || fail "no ca-certificates dependency (outbound TLS needs it)"
    files=$(dpkg-deb -c "$deb")
    echo "$files" | grep -q './usr/lib/nginx/modules/ngx_http_tent_module.so' \
        || fail "the module is not under /usr/lib/nginx/modules"
    echo "$files" | grep -q \
        './usr/share/nginx/modules-available/mod-http-tent.conf' \
        || fail "no modules-available snippet"
    for tool in usr/sbin/tent-admin usr/sbin/tent-backup usr/bin/tent-move \
                usr/bin/tent-curl; do
        echo "$files" | grep -q "^-rwxr-xr-x .* \./$tool\$" \
            || fail "no executable $tool"
    done
    dpkg-deb -f "$deb" Depends | grep -q 'perl' \
        || fail "no perl dependency (the tools need HTTP::Tiny, JSON::PP)"
    say "control and contents as Debian's nginx modules"

    root_tar
    root=$(mktemp -d /tmp/tent-deb-root.XXXXXX) || fail "mktemp"
    trap cleanup EXIT
    trap 'exit 130' INT TERM HUP
    tar -C "$root" -xf "$out/root.tar"
    mount -t proc proc "$root/proc"
    mount --bind /dev "$root/dev"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    # no service starts inside the throwaway root
    printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
    chmod +x "$root/usr/sbin/policy-rc.d"
    cp "$deb" "$root/tmp/"

    say "apt install ./$(basename "$deb") in $root"
    chroot "$root" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq /tmp/$(basename "$deb")" \
        > "$out/apt.log" 2>&1 \
        || { tail -20 "$out/apt.log" >&2; fail "apt install"; }

    [ -L "$root/etc/nginx/modules-enabled/50-mod-http-tent.conf" ] \
        || fail "the module is not enabled in modules-enabled"
    grep -q 'load_module modules/ngx_http_tent_module.so;' \
        "$root/usr/share/nginx/modules-available/mod-http-tent.conf" \
        || fail "the snippet does not load the module"
    [ -f "$root/usr/share/doc/libnginx-mod-http-tent/examples/tent-site.conf" ] \
        || fail "no example server block"
    installed_files

    # the example, made to run on loopback without TLS
    mkdir -p "$root/var/lib/nginx/tent"
    chroot "$root" chown www-data: /var/lib/nginx/tent
    sed -e "s|listen       443 ssl;|listen       127.0.0.1:$port;|" \
        -e '/ssl_certificate/d' \
        -e "s|https://alice.example.org|http://127.0.0.1:$port|" \
        -e '/auth_basic/d' -e 's|tent_owner            $remote_user;|deny all;|' \
        "$root/usr/share/doc/libnginx-mod-http-tent/examples/tent-site.conf" \
        > "$root/etc/nginx/sites-enabled/tent-site.conf"
    rm -f "$root/etc/nginx/sites-enabled/default"

    chroot "$root" /usr/sbin/nginx -t 2> "$out/nginx-t.log" \
        || { cat "$out/nginx-t.log" >&2; fail "nginx -t"; }
    say "nginx -t: $(tail -1 "$out/nginx-t.log")"
    chroot "$root" /usr/sbin/nginx \
        || fail "nginx did not start in the root"

    i=0
    until body=$(curl -fsS "http://127.0.0.1:$port/tent/profile" 2>/dev/null)
    do
        i=$((i + 1))
        [ $i -gt 50 ] && fail "no answer on 127.0.0.1:$port"
        sleep 0.1
    done
    echo "$body" | grep -q "\"entity\":\"http://127.0.0.1:$port\"" \
        || fail "the profile does not name the entity: $body"
    curl -fsSI "http://127.0.0.1:$port/" | grep -qi '^link:.*tent.io/rels/profile' \
        || fail "no Tent Link header at the entity's root"
    # the example serves the packaged web page at / and its files
    curl -fsS "http://127.0.0.1:$port/" | cmp -s - "$top/www/index.html" \
        || fail "GET / is not the packaged web page (www/index.html)"
    curl -fsSI "http://127.0.0.1:$port/web/app.js" \
        | grep -qi '^content-type: text/javascript' \
        || fail "/web/app.js is not served as JavaScript"
    say "the packaged module answers: $body"

    # the packaged tools, run inside the root with its perl: --help from
    # their POD (Pod::Usage is in perl, not perl-base)
    for tool in tent-admin tent-backup tent-move tent-curl; do
        chroot "$root" "$tool" --help > "$out/help.log" 2>&1 \
            || { cat "$out/help.log" >&2; fail "$tool --help in the root"; }
        sed -n 2p "$out/help.log" | grep -q "^    $tool " \
            || { cat "$out/help.log" >&2; fail "$tool --help: no usage"; }
    done
    chroot "$root" tent-backup /var/lib/nginx/tent /tmp/tent-backup-test \
        > "$out/backup.log" 2>&1 \
        || { cat "$out/backup.log" >&2; fail "tent-backup of the live store"; }
    [ -f "$root/tmp/tent-backup-test/db/CURRENT" ] \
        || fail "the backup has no db/CURRENT"
    say "the tools answer --help; tent-backup copied the live store"

    chroot "$root" /usr/sbin/nginx -s quit
    sleep 0.5

    # removed: the snippet link goes aside and nginx still starts
    chroot "$root" sh -c "DEBIAN_FRONTEND=noninteractive \
        apt-get remove -y -qq libnginx-mod-http-tent" >> "$out/apt.log" 2>&1 \
        || fail "apt remove"
    [ ! -e "$root/etc/nginx/modules-enabled/50-mod-http-tent.conf" ] \
        || fail "the module is still enabled after remove"
    rm -f "$root/etc/nginx/sites-enabled/tent-site.conf"
    chroot "$root" /usr/sbin/nginx -t 2>/dev/null \
        || fail "nginx -t fails after the package is removed"
    chroot "$root" sh -c "DEBIAN_FRONTEND=noninteractive \
        apt-get purge -y -qq libnginx-mod-http-tent" >> "$out/apt.log" 2>&1 \
        || fail "apt purge"
    say "PASS: installed, nginx -t, a request, removed, purged"
}

# sourced (t/tools/050-deb-cleanup.t): the functions only
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0

case "$1" in
    build) build ;;
    test) test_deb ;;
    *) echo "usage: util/deb.sh build|test" >&2; exit 2 ;;
esac
