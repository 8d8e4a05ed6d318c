# Tent::Netns reexec_in_netns(hosts => [...]) writes the suite's own
# /etc/hosts and util/netns-run.sh bind-mounts it. Run as root, so: the
# file is made with O_EXCL (a symlink planted at a guessable name in /tmp
# must not make it write through to the link's target), and inside the
# namespace only a file it made is unlinked (never a TENT_NETNS_HOSTS
# that came from the environment).

use strict;
use warnings;
use Test::More;
use File::Temp qw(tempdir);
use FindBin;
use lib "$FindBin::Bin/../lib";
use Tent::Netns qw(netns_wrapper);

my $dir = tempdir(CLEANUP => 1);
chmod 0755, $dir;

my $w = netns_wrapper();
(my $q = $w) =~ s/'/'\\''/g;
`TENT_NETNS_HOSTS=/etc/hosts '$q' true 2>&1`;
plan skip_all => 'no network and mount namespace' if $?;

# a planted symlink at the name the old code used: /tmp/tent-netns-hosts-PID
{
    my $victim = "$dir/victim";
    open my $v, '>', $victim or die; print {$v} "precious\n"; close $v;
    my $inner = "$dir/inner.pl";
    open my $s, '>', $inner or die;
    print {$s} 'open my $h, "<", "/etc/hosts" or die; '
             . 'print "INNER: $_" while <$h>; '
             . 'print "FILE: $ENV{TENT_NETNS_HOSTS}\\n";' . "\n";
    close $s;

    pipe my $rd, my $wr or die;
    my $pid = fork // die;
    if ($pid == 0) {
        close $rd;
        open STDOUT, '>&', $wr or die;
        open STDERR, '>&', $wr or die;
        symlink $victim, "/tmp/tent-netns-hosts-$$";
        delete @ENV{qw(TENT_IN_NETNS TENT_NETNS_HOSTS)};
        $0 = $inner;
        @ARGV = ();
        Tent::Netns::reexec_in_netns(hosts => ['tent-selftest.test']);
        POSIX::_exit(99);
    }
    close $wr;
    my $out = do { local $/; <$rd> };
    waitpid $pid, 0;
    unlink "/tmp/tent-netns-hosts-$pid";
    unlink $1 if $out =~ m{^FILE: (/tmp/tent-netns-hosts-\w+)$}m;

    open $v, '<', $victim or die;
    is scalar(<$v>), "precious\n", 'the symlink target is not written';
    like $out, qr/^INNER: 127\.0\.0\.1\s+tent-selftest\.test$/m,
        'the names resolve inside' or diag $out;
}

# inside, a TENT_NETNS_HOSTS from the environment is not unlinked
{
    my $victim = "$dir/hosts-of-the-user";
    open my $v, '>', $victim or die; print {$v} "x\n"; close $v;
    local $ENV{TENT_IN_NETNS} = 1;
    local $ENV{TENT_NETNS_HOSTS} = $victim;
    Tent::Netns::reexec_in_netns();
    ok -e $victim, 'a TENT_NETNS_HOSTS not of its own making is kept';
}

done_testing();
