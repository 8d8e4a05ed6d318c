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
    rm -rf "$out/src"
    mkdir -p "$out/src"
    # the tree as it is, without what builds and tests leave
    tar -C "$top" --exclude=./build --exclude='./build-*' \
        --exclude='./t/servroot*' --exclude=./demo --exclude=./.git \
        --exclude='./fuzz/out' --exclude='./fuzz/bin' -cf - . \
        | tar -C "$out/src" -xf -
    rm -f "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes
    (cd "$out/src" && dpkg-buildpackage -us -uc -b) > "$out/build.log" 2>&1 \
        || { tail -30 "$out/build.log" >&2; fail "dpkg-buildpackage"; }
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
    for tool in usr/sbin/tent-backup usr/bin/tent-move usr/bin/tent-curl; do
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
    say "the packaged module answers: $body"

    # the packaged tools, run inside the root with its perl
    chroot "$root" tent-move --help 2>&1 | grep -q '^Usage: tent-move' \
        || fail "tent-move --help does not run in the root"
    chroot "$root" tent-curl --help 2>&1 | grep -qi 'usage' \
        || fail "tent-curl --help does not run in the root"
    chroot "$root" tent-backup /var/lib/nginx/tent /tmp/tent-backup-test \
        > "$out/backup.log" 2>&1 \
        || { cat "$out/backup.log" >&2; fail "tent-backup of the live store"; }
    [ -f "$root/tmp/tent-backup-test/db/CURRENT" ] \
        || fail "the backup has no db/CURRENT"
    say "tent-move, tent-curl run; tent-backup copied the live store"

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
