#!/bin/bash
# Prints the directory of nginx's own sources for the fuzz targets, which
# compile some of nginx's .c files (fuzz/build.sh): the pristine upstream
# tarball, nginx_<upstream>.orig.tar.gz, of Debian's source package of the
# exact nginx version installed here, unpacked into build/nginx-src/ once
# and reused.  The project keeps no copy of nginx's code; nginx-dev ships
# headers only.
#   fuzz/nginx-src.sh              fetches on first use, then prints the dir
# apt fetches it from Debian's mirror, with a source list, lists and cache
# directories of its own under build/nginx-src/apt (the machine's apt
# configuration and state are not touched) and checks it against the
# Sources index signed with Debian's archive key; the SHA-256 is checked
# once more here.  Needs network access to deb.debian.org the first time.
#   NGINX_SRC_DIR=DIR   use an unpacked nginx source tree of the same
#                       upstream version instead (offline)
#   NGINX_SRC_MIRROR, NGINX_SRC_SECURITY_MIRROR   other Debian mirrors
set -e

top=$(cd "$(dirname "$0")/.." && pwd)
cache=$top/build/nginx-src

fail() {
    echo "nginx-src: $*" >&2
    exit 1
}

version=$(dpkg-query -W -f='${Version}' nginx 2>/dev/null) \
    || fail "Debian's nginx package is not installed: util/install-deps.sh"
upstream=${version#*:}
upstream=${upstream%-*}

# nginx.h of a tree holds its version: what we compile must be nginx's
# release the installed package is built from (and .c files, not only
# the headers nginx-dev ships)
check() {
    [ -f "$1/src/http/ngx_http_parse.c" ] \
    && grep -q "^#define NGINX_VERSION  *\"$upstream\"" "$1/src/core/nginx.h" \
        2>/dev/null
}

if [ -n "$NGINX_SRC_DIR" ]; then
    check "$NGINX_SRC_DIR" \
        || fail "NGINX_SRC_DIR=$NGINX_SRC_DIR is not nginx $upstream's sources"
    echo "$NGINX_SRC_DIR"
    exit 0
fi

dir=$cache/nginx-$upstream

if [ -f "$dir/.fetched" ] && check "$dir"; then
    echo "$dir"
    exit 0
fi

mkdir -p "$cache"

# one fetch at a time; whoever waited finds it done
exec 9> "$cache/.lock"
flock 9

if [ -f "$dir/.fetched" ] && check "$dir"; then
    echo "$dir"
    exit 0
fi

codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
[ -n "$codename" ] || fail "no VERSION_CODENAME in /etc/os-release"

keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -f "$keyring" ] || fail "$keyring is missing: install debian-archive-keyring"

mirror=${NGINX_SRC_MIRROR:-http://deb.debian.org/debian}
security=${NGINX_SRC_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

echo "nginx-src: fetching nginx $upstream's sources (Debian source package" \
     "nginx=$version) into $cache" >&2

apt=$cache/apt
rm -rf "$apt"
mkdir -p "$apt/sources.list.d" "$apt/lists/partial" \
         "$apt/cache/archives/partial" "$apt/download"
: > "$apt/sources.list"

# the suites and mirrors of the machine's own list, as deb-src
cat > "$apt/sources.list.d/debian.sources" <<EOF
Types: deb-src
URIs: $mirror
Suites: $codename $codename-updates
Components: main
Signed-By: $keyring

Types: deb-src
URIs: $security
Suites: $codename-security
Components: main
Signed-By: $keyring
EOF

opts=(-q -o "Dir::Etc::SourceList=$apt/sources.list"
      -o "Dir::Etc::SourceParts=$apt/sources.list.d"
      -o "Dir::State::Lists=$apt/lists"
      -o "Dir::Cache=$apt/cache"
      -o "Acquire::Retries=3")
if [ -n "$NGINX_SRC_MIRROR$NGINX_SRC_SECURITY_MIRROR" ]; then
    # snapshot.debian.org: signed, but its Release files have expired
    opts+=(-o "Acquire::Check-Valid-Until=false")
fi
if [ "$(id -u)" = 0 ]; then
    # apt's download user could not write into the build tree
    opts+=(-o "APT::Sandbox::User=root")
fi

failed() {
    tail -5 "$apt/log" >&2
    fail "$@"
}

offline() {
    failed "could not download nginx $upstream's sources from the Debian" \
         "mirror ($mirror, $security).  The fuzz targets compile nginx's" \
         "own .c files, which nginx-dev does not ship.  Run make fuzz" \
         "(or fuzz/nginx-src.sh) again with network access to the mirror," \
         "or set NGINX_SRC_DIR to an unpacked nginx-$upstream source tree."
}

apt-get "${opts[@]}" --error-on=any update > "$apt/log" 2>&1 || offline

# the orig tarball is the upstream release, the same for every Debian
# revision of it: when the mirror no longer lists the installed revision
# (a newer security update replaced it), another of the same upstream
# version gives the same tarball
versions=$(apt-cache "${opts[@]}" showsrc nginx 2>> "$apt/log" \
           | awk '$1 == "Version:" {print $2}')
src_version=$version
if ! echo "$versions" | grep -qxF "$version"; then
    src_version=$(echo "$versions" | while read -r v; do
                      u=${v#*:}
                      [ "${u%-*}" = "$upstream" ] && echo "$v"
                  done | head -1)
    [ -n "$src_version" ] \
        || failed "the Debian mirror ($mirror, $security) has no source" \
                  "package of nginx $upstream (installed: $version); set" \
                  "NGINX_SRC_MIRROR and NGINX_SRC_SECURITY_MIRROR to" \
                  "snapshot.debian.org archives of when it was current," \
                  "or NGINX_SRC_DIR to an unpacked nginx-$upstream tree"
    echo "nginx-src: the mirror has no nginx=$version any more; its" \
         "upstream tarball comes with nginx=$src_version" >&2
fi

# the orig tarball only (--tar-only): its URI, size and SHA-256 as the
# signed Sources index gives them, then apt downloads and checks it
uri=$(cd "$apt/download" \
      && apt-get "${opts[@]}" source --print-uris --tar-only \
             "nginx=$src_version" 2>> "$apt/log" \
      | grep "/nginx_$upstream\\.orig\\.tar\\.gz'") || offline
tarball=$(echo "$uri" | awk '{print $2}')
sha256=$(echo "$uri" | awk '{print $4}')
case "$sha256" in
    SHA256:*) sha256=${sha256#SHA256:} ;;
    *) fail "no SHA-256 for $tarball in the Sources index: $uri" ;;
esac

(cd "$apt/download" \
 && apt-get "${opts[@]}" source --download-only --tar-only \
        "nginx=$src_version") >> "$apt/log" 2>&1 || offline

echo "$sha256  $apt/download/$tarball" | sha256sum -c --quiet - >&2 \
    || fail "$tarball does not match the SHA-256 of the Sources index"

tmp=$(mktemp -d "$cache/unpack.XXXXXX")
tar -xzf "$apt/download/$tarball" -C "$tmp" --no-same-owner
check "$tmp/nginx-$upstream" \
    || fail "$tarball does not hold nginx-$upstream/src/core/nginx.h"

rm -rf "$dir"
mv "$tmp/nginx-$upstream" "$dir"
rmdir "$tmp"
mv "$apt/download/$tarball" "$cache/"
echo "nginx=$src_version $tarball sha256:$sha256" > "$dir/.fetched"

# the lists (some 20 MB) are not needed any more
rm -rf "$apt"

echo "$dir"
