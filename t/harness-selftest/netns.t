# Self-test: Tent::Netns.  The suite re-executes itself inside a network
# namespace with only loopback: an outside address is unreachable at once,
# while receivers and nginx on 127.0.0.1 and ::1 work as usual.

use strict;
use warnings;

use Tent::Netns qw(reexec_in_netns in_netns);
BEGIN { reexec_in_netns() }

use Test::More;
use Errno qw(ENETUNREACH);
use IO::Socket::IP;
use Socket qw(AF_INET AF_INET6 SOCK_STREAM inet_pton pack_sockaddr_in
              pack_sockaddr_in6);
use Tent::Receiver;
use Tent::Util qw(http_request);

ok(in_netns(), 'running inside the namespace (TENT_IN_NETNS)');

open my $dev, '<', '/proc/net/dev' or die "/proc/net/dev: $!";
my @ifs = map { /^\s*([^:\s]+):/ ? $1 : () } <$dev>;
my $isolated = is_deeply(\@ifs, ['lo'], 'loopback is the only interface');

# a raw connect, so that the errno is the kernel's own
sub connect_errno {
    my ($family, $addr) = @_;
    socket(my $s, $family, SOCK_STREAM, 0) or die "socket: $!";
    my $sa = $family == AF_INET
           ? pack_sockaddr_in(80, inet_pton(AF_INET, $addr))
           : pack_sockaddr_in6(80, inet_pton(AF_INET6, $addr));
    local $SIG{ALRM} = sub { die "connect to $addr did not fail at once\n" };
    alarm 5;
    my $ok = connect($s, $sa);
    my $errno = $! + 0;
    alarm 0;
    close $s;
    return $ok ? 0 : $errno;
}

SKIP: {
    # never try outside addresses from a namespace that has a way out
    skip 'not isolated: no outside address is tried', 3 unless $isolated;
    is(connect_errno(AF_INET, '10.0.0.1'), ENETUNREACH,
       '10.0.0.1:80: ENETUNREACH');
    is(connect_errno(AF_INET, '192.0.2.1'), ENETUNREACH,
       'another IPv4 address (TEST-NET-1): ENETUNREACH');
    is(connect_errno(AF_INET6, '2001:db8::1'), ENETUNREACH,
       'an IPv6 address: ENETUNREACH');
}

my $rx = Tent::Receiver->start;
my $r = http_request(port => $rx->port, path => '/tent/profile');
is($r->{status}, 200, 'a receiver on 127.0.0.1 answers');

my $rx6 = Tent::Receiver->start(host => '::1');
my $s = IO::Socket::IP->new(PeerHost => '::1', PeerPort => $rx6->port,
                            Timeout => 5);
ok($s, 'a receiver on ::1 accepts') or diag($@);
if ($s) {
    print {$s} "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    local $/;
    like(scalar(<$s>) // '', qr{^HTTP/1\.1 200 }, 'and answers');
}

SKIP: {
    skip 'no TEST_NGINX_LOAD_MODULES: no nginx in the namespace', 1
        unless $ENV{TEST_NGINX_LOAD_MODULES};
    require Tent::Peer;
    my $peer = Tent::Peer->start(worker_processes => 1);
    $r = http_request(port => $peer->port, path => '/tent/profile');
    is($r->{status}, 200, 'nginx with the module runs in the namespace');
}

done_testing();
