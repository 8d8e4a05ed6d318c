# Self-test: Tent::Receiver, the scripted remote entity of the federation
# suites.  Every action, rules changed while it runs, the request log, and
# that a hanging connection does not hold up the next one.  No nginx.

use strict;
use warnings;

use Test::More;
use IO::Select;
use IO::Socket::IP;
use JSON::PP;
use Tent::Receiver;
use Tent::Util qw(http_request);
use Test::Nginx::Util qw(http_exchange parse_http_response);

my $JSON = JSON::PP->new->utf8->canonical;
my $rx = Tent::Receiver->start;
my $port = $rx->port;
my $url = $rx->url;

ok($port > 0, "listening on port $port");
is($url, "http://127.0.0.1:$port", 'url');
is($rx->entity, $url, 'the entity is its url by default');

sub req { http_request(port => $port, timeout => 10, @_) }

sub raw {
    my ($bytes, %o) = @_;
    my $x = http_exchange(port => $port, chunks => [$bytes],
                          timeout => $o{timeout} || 10);
    my ($res) = parse_http_response($x->{raw}, $o{method} || 'GET');
    return ($res, $x);
}

# ---- the default entity

my $link = qq{<$url/tent/profile>; rel="https://tent.io/rels/profile"};
my $r = req(method => 'HEAD', path => '/');
is($r->{status}, 200, 'HEAD / 200');
is($r->{headers}{link}, $link, 'HEAD /: the discovery Link');
is($r->{body}, '', 'HEAD /: no body');

$r = req(path => '/');
is("$r->{status} $r->{body}", '200 Tent!', 'GET /');
is($r->{headers}{link}, $link, 'GET /: the discovery Link');

$r = req(path => '/tent/profile', headers => { Accept => 'application/vnd.tent.v0+json' });
is($r->{status}, 200, 'profile 200');
is($r->{headers}{'content-type'}, 'application/vnd.tent.v0+json',
   'profile content type');
is_deeply($JSON->decode($r->{body}),
          { 'https://tent.io/types/info/core/v0.1.0' => {
                entity => $url, licenses => [], servers => ["$url/tent"] } },
          'profile: core info with entity and servers');

$r = req(path => '/tent/notifications/abc123?x=1&challenge=c%2F0ffee');
is("$r->{status} $r->{body}", '200 c/0ffee', 'challenge echoed');
is($r->{headers}{'content-type'}, 'text/plain', 'challenge as text/plain');

my $follow = { entity => 'https://follower.example', types => ['all'],
               licenses => [], notification_path => 'notifications/f1',
               permissions => { public => JSON::PP::true } };
$r = req(method => 'POST', path => '/tent/followers',
         headers => { 'Content-Type' => 'application/vnd.tent.v0+json' },
         body => $JSON->encode($follow));
is($r->{status}, 200, 'POST /tent/followers 200');
my $f = eval { $JSON->decode($r->{body}) } || {};
like($f->{id} // '', qr/^\w+$/, 'follower id');
like($f->{mac_key_id} // '', qr/^s:\w+$/, 'mac_key_id s:...');
like($f->{mac_key} // '', qr/^[0-9a-f]{32}$/, 'mac_key hex');
is($f->{mac_algorithm}, 'hmac-sha-256', 'mac_algorithm');
is($f->{entity}, 'https://follower.example', 'entity from the request');
is($f->{notification_path}, 'notifications/f1', 'notification_path kept');
is_deeply([$rx->followers], [$f], 'followers(): the credentials handed out');

$r = req(method => 'POST', path => '/tent/notifications/f1', body => '{}');
is("$r->{status} $r->{body}", '200 {}', 'POST notification');
$r = req(method => 'POST', path => '/tent/posts', body => '{"a":1}');
is("$r->{status} $r->{body}", '200 {}', 'POST /tent/posts');
$r = req(method => 'DELETE', path => "/tent/followers/$f->{id}");
is($r->{status}, 200, 'DELETE follower');
$r = req(path => '/elsewhere');
is($r->{status}, 404, 'anything else: 404');
is($r->{headers}{connection}, 'close', 'Connection: close');

# ---- the log

my @all = $rx->requests;
is(scalar @all, 9, 'every request recorded');
is_deeply([map { "$_->{method} $_->{path}" } @all[0 .. 2]],
          ['HEAD /', 'GET /', 'GET /tent/profile'], 'in order');
is($all[2]{headers}{accept}, 'application/vnd.tent.v0+json',
   'header names lower-cased');
is($all[3]{query}, 'x=1&challenge=c%2F0ffee', 'query string');
my ($fr) = $rx->requests(method => 'post', path => qr{^/tent/followers$});
is_deeply($JSON->decode($fr->{body}), $follow, 'body recorded');
is($fr->{rule}, undef, 'no rule matched');

# a chunked request body, and a body with every byte value
my $bin = join '', map { chr } 0 .. 255;
my ($res) = raw("POST /tent/posts HTTP/1.1\r\nHost: x\r\n"
                . "Transfer-Encoding: chunked\r\n\r\n"
                . "5\r\nhello\r\n" . sprintf("%x", length $bin)
                . "\r\n$bin\r\n0\r\nX-Trailer: 1\r\n\r\n", method => 'POST');
is($res->{status}, 200, 'chunked request answered');
my ($last) = reverse $rx->requests;
is($last->{body}, "hello$bin", 'chunked body recorded dechunked, bytes kept');

ok($rx->connections >= 1, 'connections are counted');
$rx->clear;
is(scalar(my @none = $rx->requests), 0, 'clear');
is($rx->connections, 0, 'clear: no connections');
{
    # a connection that sends nothing is counted, not recorded
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $port)
        or die "connect: $!";
    my $end = time + 5;
    select(undef, undef, undef, 0.05) while $rx->connections == 0
                                            && time < $end;
    is($rx->connections, 1, 'a silent connection is counted');
    is(scalar(my @r = $rx->requests), 0, 'and not recorded as a request');
    close $s;
    $rx->clear;
}

# ---- rules

$rx->rules([
    { method => 'POST', path => qr{^/tent/followers$}, times => 1,
      action => { status => 503, headers => { 'Retry-After' => 1,
                                              'X-Rule' => 'first' },
                  body => { error => 'later' } } },
    { method => 'GET', path => '^/custom', action => {
          status => 201, headers => { 'Content-Type' => 'text/x-mine' },
          body => 'made' } },
    { path => '^/echo', action => 'echo_challenge' },
]);
$r = req(method => 'POST', path => '/tent/followers', body => '{}');
is("$r->{status} $r->{headers}{'x-rule'}", '503 first', 'canned response');
is($r->{body}, '{"error":"later"}', 'a body given as a ref is JSON');
$r = req(method => 'POST', path => '/tent/followers',
         body => '{"entity":"https://x.example"}');
is($r->{status}, 200, 'times => 1: the second request gets the default');
$r = req(path => '/custom/1');
is("$r->{status} $r->{headers}{'content-type'} $r->{body}",
   '201 text/x-mine made', 'status, headers and body');
$r = req(method => 'POST', path => '/custom/1');
is($r->{status}, 404, 'the method must match');
$r = req(path => '/echo?challenge=abc');
is("$r->{status} $r->{body}", '200 abc', 'echo_challenge');
is_deeply([map { $_->{rule} } $rx->requests], [0, undef, 1, undef, 2],
          'the rule that matched is recorded');

$rx->rules([{ path => '^/custom', action => { status => 418, body => 'tea' } }]);
$r = req(path => '/custom/1');
is("$r->{status} $r->{body}", '418 tea', 'rules changed at run time');
$r = req(method => 'HEAD', path => '/custom/1');
is("$r->{status} $r->{headers}{'content-length'} [$r->{body}]",
   '418 3 []', 'HEAD: the canned headers, no body');
$rx->rules([]);
$r = req(path => '/tent/profile');
is($r->{status}, 200, 'no rules: the default entity again');

# ---- hang: the connection stays open, and the next request is served

$rx->rules([{ path => '^/hang', action => 'hang' },
            { path => '^/reset', action => 'reset' },
            { path => '^/garbage', action => 'garbage' },
            { path => '^/big$', action => 'big' },
            { path => '^/bigc$', action => 'big_chunked' },
            { path => '^/slow', action => { do => 'slow', interval => 0.02,
                                            status => 200, body => 'ok' } },
            { path => '^/delay', action => { status => 200, body => 'late',
                                             delay => 0.2 } }]);
$rx->clear;

my $hang = IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $port,
                               Timeout => 5) or die "connect: $@";
print {$hang} "GET /hang HTTP/1.1\r\nHost: x\r\n\r\n";
ok(scalar $rx->wait_requests(path => qr{^/hang}), 'the hanging request is recorded');
$r = req(path => '/tent/profile', timeout => 5);
is($r->{status}, 200, 'a request while another connection hangs');
ok(!IO::Select->new($hang)->can_read(0.3),
   'the hanging connection got no answer and is still open');

# ---- reset

{
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $port,
                                Timeout => 5) or die "connect: $@";
    print {$s} "GET /reset HTTP/1.1\r\nHost: x\r\n\r\n";
    my $got = IO::Select->new($s)->can_read(5);
    my $n = sysread($s, my $buf, 100);
    my ($err, $reset) = ("$!", $!{ECONNRESET});
    ok($got && (!defined $n && $reset || defined $n && $n == 0),
       'reset: ECONNRESET or EOF, no bytes (' . ($n // "undef: $err") . ')');
    ok(!defined $n && $reset, 'reset: the peer sees a RST (ECONNRESET)');
}

# ---- garbage

($res, my $x) = raw("GET /garbage HTTP/1.1\r\nHost: x\r\n\r\n");
ok(length $x->{raw}, 'garbage: some bytes');
unlike($x->{raw}, qr{^HTTP/}, 'garbage: not an HTTP response');

# ---- big

($res) = raw("GET /big HTTP/1.1\r\nHost: x\r\n\r\n", timeout => 20);
is($res->{header}{'content-length'}, 10 * 1024 * 1024, 'big: Content-Length');
is(length $res->{body}, 10 * 1024 * 1024, 'big: 10 MB body');
($res) = raw("GET /bigc HTTP/1.1\r\nHost: x\r\n\r\n", timeout => 20);
is($res->{header}{'transfer-encoding'}, 'chunked', 'big chunked: chunked');
is(length $res->{body}, 10 * 1024 * 1024, 'big chunked: 10 MB');
is($res->{error}, undef, 'big chunked: well formed');

# ---- slow: a valid response, a byte at a time

{
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $port,
                                Timeout => 5) or die "connect: $@";
    print {$s} "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n";
    my ($data, $reads) = ('', 0);
    my $sel = IO::Select->new($s);
    while ($sel->can_read(10)) {
        my $n = sysread($s, $data, 100, length $data);
        last unless $n;
        $reads++;
    }
    my ($sr) = parse_http_response($data, 'GET');
    is("$sr->{status} $sr->{body}", '200 ok', 'slow: a valid response');
    ok($reads > 1, "slow: it came in pieces ($reads reads)");
}

$r = req(path => '/delay');
is("$r->{status} $r->{body}", '200 late', 'delay: answered');

# ---- a receiver with its own entity and profile, stopping

{
    my $rx2 = Tent::Receiver->start(entity => 'https://bob.example',
                                    profile => { 'x:y' => { z => 1 } });
    is($rx2->entity, 'https://bob.example', 'entity override');
    my $r2 = http_request(port => $rx2->port, path => '/tent/profile');
    is($r2->{body}, '{"x:y":{"z":1}}', 'profile override');
    my $pid = $rx2->pid;
    undef $rx2;
    ok(!kill(0, $pid), 'going out of scope stops it');
}

$rx->stop;
ok(IO::Select->new($hang)->can_read(5), 'stop ends the hanging connection');
my $n = sysread($hang, my $buf, 10);
ok(!$n, 'the hanging connection got no response bytes');
close $hang;
ok(!IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $port,
                        Timeout => 2), 'stopped: nothing listens');

# ---- keepalive: two requests on one connection, the second dropped
{
    my $ka = Tent::Receiver->start(keepalive => 1, rules => [
        { path => '^/drop', reused => 1, action => 'drop' } ]);
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                PeerPort => $ka->port, Timeout => 5)
        or die "connect: $!";
    print {$s} "GET /drop HTTP/1.1\r\nHost: x\r\n\r\n";
    my $buf = '';
    while ($buf !~ /\r\n\r\n/) {
        IO::Select->new($s)->can_read(5) or last;
        sysread($s, $buf, 4096, length $buf) or last;
    }
    like($buf, qr{^HTTP/1\.1 }, 'keepalive: the first request answered');
    unlike($buf, qr/Connection: close/i, 'without "Connection: close"');
    print {$s} "GET /drop HTTP/1.1\r\nHost: x\r\n\r\n";
    ok(IO::Select->new($s)->can_read(5), 'the second is read');
    my $n = sysread($s, my $more, 4096);
    ok(!$n, 'and dropped: the connection closed without an answer');
    my @r = $ka->requests(path => qr{^/drop$});
    is(join(',', map { "$_->{conn}.$_->{nreq}" } @r), '1.1,1.2',
       'both recorded on connection 1, as its requests 1 and 2');
    $ka->stop;
}

my $rx6 = eval { Tent::Receiver->start(host => '::1') };
SKIP: {
    skip "no IPv6 loopback: $@", 1 unless $rx6;
    like($rx6->url, qr{^http://\[::1\]:\d+$}, 'an IPv6 loopback receiver');
}
ok(!eval { Tent::Receiver->start(host => '0.0.0.0') },
   'only loopback addresses');

done_testing();
