# util/deb.sh's cleanup runs as root after a chroot with the host's /dev
# bind-mounted in it: it must never remove anything outside its temp root.
# A /dev still mounted (umount failing: busy) leaves the root in place
# instead of an rm -rf through the bind mount; a root that is empty, "/",
# or of another name than mktemp's is never touched. Run in a mount
# namespace of its own (unshare -m as root, -rm otherwise).

use strict;
use warnings;
use Test::More;
use FindBin;
use Cwd qw(abs_path);

my $DEB = abs_path("$FindBin::Bin/../../util/deb.sh");
my $flags = $> == 0 ? '-m' : '-rm';

system("unshare $flags --propagation private true 2>/dev/null") == 0
    or plan skip_all => "no mount namespace (unshare $flags)";

sub run_bash {
    my ($script) = @_;
    my $out = `unshare $flags --propagation private bash -c '$script' 2>&1`;
    return ($? >> 8, $out);
}

# a /dev that stays mounted: the victim's file survives, the root stays
{
    my ($rc, $out) = run_bash(<<"SH");
set -e
. $DEB
victim=\$(mktemp -d /tmp/tent-deb-victim.XXXXXX)
echo precious > \$victim/node
root=\$(mktemp -d /tmp/tent-deb-root.XXXXXX)
mkdir \$root/dev \$root/proc
mount --bind \$victim \$root/dev
umount() { return 1; }
sleep() { :; }
cleanup
echo "victim: \$(cat \$victim/node 2>/dev/null || echo GONE)"
[ -d \$root ] && echo "root: kept"
command umount \$root/dev
rm -rf \$root \$victim
SH
    like $out, qr/^victim: precious$/m,
        'nothing removed through a /dev still mounted';
    like $out, qr/^root: kept$/m, 'the root is left in place';
    like $out, qr/still mounted, \/tmp\/tent-deb-root\.\S+ left in place/,
        'and said so';
}

# unmounted as it should be: the root is removed, the victim is not
{
    my ($rc, $out) = run_bash(<<"SH");
set -e
. $DEB
victim=\$(mktemp -d /tmp/tent-deb-victim.XXXXXX)
echo precious > \$victim/node
root=\$(mktemp -d /tmp/tent-deb-root.XXXXXX)
mkdir \$root/dev \$root/proc
mount --bind \$victim \$root/dev
cleanup
echo "victim: \$(cat \$victim/node 2>/dev/null || echo GONE)"
[ -e \$root ] || echo "root: removed"
rm -rf \$victim
SH
    like $out, qr/^victim: precious$/m, 'the bind-mounted directory intact';
    like $out, qr/^root: removed$/m, 'the temp root removed';
}

# roots cleanup must never take: rm and umount only recorded
for my $bad ('', '/', '/tmp', '/etc/..', '/tmp/other.abcdef',
             '/tmp/tent-deb-root.abcdef/../..')
{
    my ($rc, $out) = run_bash(<<"SH");
. $DEB
rm() { echo "RM \$*"; }
umount() { echo "UMOUNT \$*"; }
chroot() { echo "CHROOT \$*"; }
root="$bad"
cleanup
echo done
SH
    unlike $out, qr/^(RM|UMOUNT|CHROOT)/m, "root \"$bad\": nothing touched";
    like $out, qr/^done$/m, "root \"$bad\": cleanup returns";
}

done_testing();
