#!/bin/sh
# Runs CMD in a new network namespace that has only loopback (127.0.0.1,
# ::1), so a test of an address the module must refuse can never send a
# packet off the machine:
#   util/netns-run.sh CMD [ARGS...]
# As root: unshare --net; otherwise: unshare -rn (a user namespace too).
# With TENT_NETNS_HOSTS=FILE, a mount namespace too, in which FILE is
# bind-mounted on /etc/hosts: names of the suite's own that resolve to
# loopback for every program in it (c-ares reads /etc/hosts).
# Exit status: CMD's, or 125 when the namespace cannot be made (the reason
# is on stderr).
[ $# -gt 0 ] || { echo "usage: $0 CMD [ARGS...]" >&2; exit 2; }

if [ "$(id -u)" = 0 ]; then
    flags=--net
else
    flags=-rn
fi

command -v unshare >/dev/null 2>&1 || {
    echo "netns-run: unshare (util-linux) not found" >&2
    exit 125
}

if [ -n "$TENT_NETNS_HOSTS" ]; then
    [ -r "$TENT_NETNS_HOSTS" ] || {
        echo "netns-run: TENT_NETNS_HOSTS $TENT_NETNS_HOSTS is not readable" >&2
        exit 125
    }
    # private said, not left to unshare's default: the bind below must
    # never propagate to the host's /etc/hosts
    flags="$flags --mount --propagation private"
    TENT_NETNS_PARENT_MNT=$(readlink /proc/self/ns/mnt)
    export TENT_NETNS_PARENT_MNT
fi

# unshare exits 1 both for its own failure and a CMD's: try it first
unshare $flags true || {
    echo "netns-run: unshare $flags failed" >&2
    exit 125
}

# The new namespace's lo is down: bring it up (ip from iproute2, else an
# ioctl from Perl), check that lo is all there is (/proc/net/dev is the
# namespace's own), then exec CMD.
exec unshare $flags -- /bin/sh -c '
    if command -v ip >/dev/null 2>&1; then
        ip link set lo up || exit 125
    else
        perl -MSocket -e "
            socket(my \$s, AF_INET, SOCK_DGRAM, 0) or die qq(socket: \$!);
            my \$r = pack(q(a16 s x22), q(lo), 0);
            ioctl(\$s, 0x8913, \$r) or die qq(SIOCGIFFLAGS: \$!);
            my \$f = unpack(q(x16 s), \$r) | 1;
            ioctl(\$s, 0x8914, pack(q(a16 s x22), q(lo), \$f))
                or die qq(SIOCSIFFLAGS: \$!);" || exit 125
    fi
    if [ -n "$TENT_NETNS_HOSTS" ]; then
        # in a mount namespace of our own, or not at all
        mnt=$(readlink /proc/self/ns/mnt)
        if [ -z "$mnt" ] || [ "$mnt" = "$TENT_NETNS_PARENT_MNT" ]; then
            echo "netns-run: no mount namespace of its own" >&2
            exit 125
        fi
        mount --bind "$TENT_NETNS_HOSTS" /etc/hosts || exit 125
    fi
    others=$(sed -n "3,\$ s/^ *\([^:]*\):.*/\1/p" /proc/net/dev | grep -vx lo)
    if [ -n "$others" ]; then
        echo "netns-run: not only lo in the namespace:" $others >&2
        exit 125
    fi
    exec "$@"
' netns-run "$@"
