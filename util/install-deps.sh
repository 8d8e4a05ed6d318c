#!/bin/sh
# Installs the Debian packages the module needs to build, run and be tested.
# Idempotent: packages already present are skipped, apt is not touched then.
set -e

BUILD_PKGS="nginx nginx-dev libjansson-dev libleveldb-dev libc-ares-dev
libssl-dev libpcre2-dev zlib1g-dev gcc make"
TEST_PKGS="libtest-base-perl libtext-diff-perl liblist-moreutils-perl
libhttp-tiny-perl libjson-pp-perl libdigest-hmac-perl libtest-longstring-perl
libio-socket-ip-perl libio-socket-ssl-perl perl curl valgrind cppcheck clang libclang-rt-14-dev
iproute2 openssl ca-certificates chromium python3-jsonschema
libcrypt-openssl-rsa-perl"

case "$1" in
    --test) PKGS="$BUILD_PKGS $TEST_PKGS" ;;
    --bench) PKGS="$BUILD_PKGS $TEST_PKGS wrk apache2-utils" ;;
    --deb) PKGS="$BUILD_PKGS debhelper dpkg-dev debootstrap curl" ;;
    *) PKGS="$BUILD_PKGS" ;;
esac

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null \
         | grep -q 'install ok installed'; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    echo "install-deps: $(echo $PKGS | wc -w) Debian packages present"
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing packages:$missing (run as root)" >&2
    exit 1
fi

echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "install-deps: installed$missing"
