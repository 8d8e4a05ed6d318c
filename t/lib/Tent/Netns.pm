package Tent::Netns;

# For suites that check that an address is refused (SSRF guards): run the
# whole suite inside a network namespace that has only loopback, so a
# broken guard can never send a packet off the machine.  Call it first
# thing, before anything starts a process or prints TAP:
#
#   use Tent::Netns qw(reexec_in_netns);
#   BEGIN { reexec_in_netns() }
#   use Test::Nginx::Socket 'no_plan';
#
# Outside the namespace it re-executes the same perl, with the same @INC
# and arguments, under util/netns-run.sh, and that run's exit status is
# the suite's (exec: same pid, same signals).  When no namespace can be
# made the suite is skipped: "1..0 # SKIP cannot create network namespace".

use strict;
use warnings;

use Exporter 'import';
use File::Basename qw(dirname);
use File::Spec;
use File::Temp ();
use POSIX ();

our @EXPORT_OK = qw(reexec_in_netns in_netns netns_wrapper);

sub in_netns { $ENV{TENT_IN_NETNS} ? 1 : 0 }

# util/netns-run.sh of this checkout (t/lib/Tent/ -> util/)
sub netns_wrapper {
    my $here = dirname(File::Spec->rel2abs(__FILE__));
    return File::Spec->catfile($here, '..', '..', '..', 'util',
                               'netns-run.sh');
}

sub _skip {
    my ($why) = @_;
    $why =~ s/\s+/ /g;
    $why =~ s/^ | $//g;
    $| = 1;
    print "1..0 # SKIP cannot create network namespace: $why\n";
    POSIX::_exit(0);    # no END blocks: nothing ran
}

# reexec_in_netns(hosts => [NAMES]): NAMES resolve to 127.0.0.1 inside
# (an /etc/hosts of the suite's own, bind-mounted in a mount namespace)
sub reexec_in_netns {
    my (%a) = @_;

    if ($ENV{TENT_IN_NETNS}) {
        # mounted by now: the file itself is no longer needed, if it is
        # the one made below (never a path the environment names)
        my $f = $ENV{TENT_NETNS_HOSTS} // '';
        unlink $f if $f =~ m{\A/tmp/tent-netns-hosts-\w{8}\z}
                     && ($ENV{TENT_NETNS_HOSTS_MADE} // '') eq $f;
        return 1;
    }

    if ($a{hosts}) {
        # O_EXCL, of a random name: run as root, a symlink planted in /tmp
        # must not be written through; readable by nginx's workers
        my ($fh, $f) = eval {
            File::Temp::tempfile('tent-netns-hosts-XXXXXXXX', DIR => '/tmp',
                                 UNLINK => 0);
        };
        _skip("a temp file in /tmp: $@") unless $fh;
        chmod 0644, $f or _skip("chmod $f: $!");
        print {$fh} "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n";
        print {$fh} "127.0.0.1\t$_\n" for @{ $a{hosts} };
        close $fh or _skip("$f: $!");
        $ENV{TENT_NETNS_HOSTS} = $f;
        $ENV{TENT_NETNS_HOSTS_MADE} = $f;
    }

    my $wrapper = netns_wrapper();
    _skip("$wrapper is missing") unless -x $wrapper;

    # try first, so that a failure is a skip and not the suite's failure
    (my $q = $wrapper) =~ s/'/'\\''/g;
    my $out = `'$q' true 2>&1`;
    _skip($out || "exit status " . ($? >> 8)) if $?;

    my @inc = map { "-I$_" } grep { !ref } @INC;
    $ENV{TENT_IN_NETNS} = 1;
    { no warnings 'exec'; exec $wrapper, $^X, @inc, $0, @ARGV; }
    delete $ENV{TENT_IN_NETNS};
    _skip("exec $wrapper: $!");
}

1;
