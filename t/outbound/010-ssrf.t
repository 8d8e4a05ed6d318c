# The SSRF guard (src/outbound/ngx_http_tent_guard.c): entity URLs come from
# strangers, so POST /followers (anyone) and POST /followings (an app)
# must not make nginx connect to loopback, private, link-local or other
# special-purpose addresses, in any spelling, directly or through a
# redirect, unless "tent_outbound_allow" opens the range.  Proof that no
# connection was made: a receiver listening on the loopback port named
# accepted none.  The suite runs in a network namespace with only
# loopback (Tent::Netns), so a broken guard cannot reach beyond it.

use Tent::Netns qw(reexec_in_netns);
BEGIN { reexec_in_netns() }

use Test::Nginx::Socket 'no_plan';
use Tent::Peer;
use Tent::Receiver;
use Time::HiRes qw(sleep);

no_shuffle();
run_tests();

# ---- the flows, on a second nginx with two workers

my $rx4 = Tent::Receiver->start(host => '127.0.0.1');
my $P = $rx4->port;
my $rx6 = Tent::Receiver->start(host => '::1', port => $P);
# another loopback address, for "only 127.0.0.1/32 is allowed"
my $rx2 = Tent::Receiver->start(host => '127.0.0.2', port => $P);

sub server_config {
    my ($extra) = @_;
    return <<"CONF";
        tent_entity \$URL;
        tent_outbound_timeout 3s;
        $extra
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF
}

my $peer = Tent::Peer->start(server_config => server_config(''),
                             worker_processes => 2);
my $client = $peer->client;
my (undef, $cred) = $peer->authorized_app('write_followings,read_followings,'
                                          . 'read_followers');

sub follow_me {
    my ($entity) = @_;
    return $client->request(POST => '/followers', body => {
        entity => $entity, types => ['all'], licenses => [],
        notification_path => 'notifications/abc',
        permissions => { public => JSON::PP::true } });
}

sub follow_them {
    my ($entity) = @_;
    return $client->request(POST => '/followings', cred => $cred,
                            body => { entity => $entity });
}

sub connections { $rx4->connections + $rx6->connections + $rx2->connections }

sub settle {
    # a connection the kernel accepted is logged by the receiver within
    # its next loop turn; give it that before counting
    sleep 0.3;
}

my @refused = (
    "http://127.0.0.1:$P",
    "http://127.0.0.1:$P/some/path",
    "http://[::1]:$P",
    'http://10.0.0.1',
    'http://10.0.0.1:8080/tent',
    'http://169.254.169.254',
    'http://169.254.169.254/latest/meta-data/',
    'http://192.168.1.1',
    'http://172.16.0.1',
    'http://100.64.0.1',
    'http://[fe80::1]',
    'http://[fc00::1]',
    "http://[::ffff:127.0.0.1]:$P",
    "http://[::ffff:7f00:1]:$P",
    "http://[::ffff:169.254.169.254]",
    "http://[64:ff9b::7f00:1]:$P",
    "http://[64:ff9b::a9fe:a9fe]",
    "http://[2002:7f00:1::]:$P",
    "http://[::127.0.0.1]:$P",
    "http://[::]:$P",
    "http://0.0.0.0:$P",
    "http://localhost:$P",
    "http://LOCALHOST:$P",
    "https://127.0.0.1:$P",
);

# numeric spellings that are not a dotted quad: refused as URLs (400),
# before any lookup; never a connection
my @numeric = (
    "http://2130706433:$P",
    "http://0x7f000001:$P",
    "http://0177.0.0.1:$P",
    "http://127.1:$P",
    "http://017700000001:$P",
);

ok(-r '/etc/hosts' && `cat /etc/hosts` =~ /^127\.0\.0\.1\s.*\blocalhost\b/m,
   '/etc/hosts in the namespace maps localhost to 127.0.0.1');

for my $e (@refused) {
    for my $how (['POST /followers', \&follow_me],
                 ['POST /followings', \&follow_them])
    {
        my $res = $how->[1]->($e);
        is($res->{status}, 403, "$how->[0] $e: 403") or diag($res->{body});
        like($res->{json}{error} // '', qr/tent_outbound_allow/,
             "$how->[0] $e: the error names tent_outbound_allow");
        like($res->{headers}{'content-type'} // '', qr/json/,
             "$how->[0] $e: JSON");
    }
}

for my $e (@numeric) {
    for my $how (['POST /followers', \&follow_me],
                 ['POST /followings', \&follow_them])
    {
        # programs read these differently ("0177.0.0.1" is 177.0.0.1 to
        # c-ares, 127.0.0.1 to browsers): none is guessed
        my $res = $how->[1]->($e);
        is($res->{status}, 400, "$how->[0] $e: 400") or diag($res->{body});
        like($res->{json}{error} // '', qr/dotted quad/,
             "$how->[0] $e: the error says why") or diag($res->{body});
    }
}

settle();
is(connections(), 0, 'no connection reached any loopback receiver');
is(scalar(my @r = ($rx4->requests, $rx6->requests, $rx2->requests)), 0,
   'and no request');

my $log = $peer->error_log_text;
like($log, qr/outbound request to "169\.254\.169\.254" refused/,
     'the refusal is logged with the address');

# nothing was stored
my $res = $client->request(GET => '/followers/count', cred => $cred);
is($res->{body}, '0', 'no follower stored');
$res = $client->request(GET => '/followings', cred => $cred);
is_deeply($res->{json}, [], 'no following listed');

# ---- mentions: the delivery engine discovers a mentioned stranger with
# the same guard (spec 9.3): a public post naming every refused address

my (undef, $writer) = $peer->authorized_app('write_posts',
                                            post_types => 'all');
$res = $client->request(POST => '/posts', cred => $writer, body => {
    type => 'https://tent.io/types/post/status/v0.1.0',
    content => { text => 'hello, strangers' },
    permissions => { public => JSON::PP::true },
    mentions => [map { { entity => $_ } } @refused] });
is($res->{status}, 200, 'a public post mentions every refused address')
    or diag($res->{body});

my $mentions = sub {
    my @l = $peer->error_log_text
            =~ /tent delivery: a mention: Discovery of (\S+) failed: \S+: (.*)/g;
    return @l;
};
# spellings of one entity are one mention, by its canonical spelling
# (t/federation/060-adversarial-entities.t): the host's case, the IPv6
# address's form, a trailing slash
my %told = map { my $e = $_; $e =~ s{^(\w+://)([^/]+)}{$1\L$2\E};
                 $e =~ s/::ffff:7f00:1/::ffff:127.0.0.1/; $e =~ s{/$}{};
                 $e => 1 } @refused;
my $end = time + 20;
sleep 0.2 while time < $end && $mentions->() < 2 * keys %told;
my %why = $mentions->();
is(scalar keys %why, scalar keys %told, 'each mentioned entity was tried')
    or diag(join ', ', sort keys %why);
is_deeply([sort keys %why], [sort keys %told],
          'once, by its canonical spelling');
is(scalar(grep { !/refused|tent_outbound_allow/ } values %why), 0,
   'and each was refused by the guard') or diag(join "\n", values %why);
settle();
is(connections(), 0, 'no mention reached any loopback receiver');

# ---- with the loopback ranges allowed, the same targets are reached

ok($peer->reload(server_config => server_config(
       'tent_outbound_allow 127.0.0.0/8 ::1;')), 'reload with loopback allowed');

for my $t ([$rx4, "http://127.0.0.1:$P", 1],
           [$rx6, "http://[::1]:$P", 1],
           [$rx4, "http://[::ffff:127.0.0.1]:$P", 0],
           [$rx4, "http://localhost:$P", 0])
{
    my ($rx, $e, $own) = @$t;
    $rx->clear;
    $res = follow_me($e);
    # the receiver's entity is its 127.0.0.1/[::1] URL: another spelling
    # is found, and then refused as a mismatch
    is($res->{status}, $own ? 200 : 400, "allowed: POST /followers $e")
        or diag($res->{body});
    ok(scalar($rx->requests(method => 'HEAD', path => qr{^/$})),
       "allowed: discovery of $e reached the receiver");
    if ($own) {
        ok(scalar($rx->requests(method => 'GET',
                                path => qr{^/tent/notifications/abc$})),
           "allowed: $e was challenged");
    }
}

$rx4->clear;
$res = follow_them("http://127.0.0.1:$P");
is($res->{status}, 200, 'allowed: POST /followings 127.0.0.1')
    or diag($res->{body});
is(scalar($rx4->requests(method => 'POST', path => qr{^/tent/followers$})), 1,
   'allowed: the follow request reached the receiver');
my $unfollow = $client->request(DELETE => "/followings/$res->{json}{id}",
                                cred => $cred);
is($unfollow->{status}, 200, 'unfollowed again, for the redirect checks')
    or diag($unfollow->{body});

# still refused: what the allowed ranges do not cover
$rx4->clear; $rx6->clear; $rx2->clear;
for my $e ("http://0.0.0.0:$P", 'http://169.254.169.254', 'http://10.0.0.1',
           "http://[::]:$P")
{
    $res = follow_me($e);
    is($res->{status}, 403, "allowed loopback: $e still refused")
        or diag($res->{body});
}

# ---- redirects and links towards denied addresses

ok($peer->reload(server_config => server_config(
       'tent_outbound_allow 127.0.0.1/32;')), 'reload with 127.0.0.1/32');

$rx4->clear; $rx6->clear; $rx2->clear;

my @redirects = (
    ['http://169.254.169.254/', 'to the metadata address'],
    ["http://127.0.0.2:$P/", 'to a loopback address outside the /32'],
    ["http://[::1]:$P/", 'to ::1, not allowed'],
);

for my $r (@redirects) {
    my ($to, $what) = @$r;
    for my $m (qw(HEAD GET)) {
        $rx4->rules([{ method => $m, path => '^/$',
                       action => { status => 302,
                                   headers => { Location => $to } } },
                     # so that HEAD's failure falls through to GET
                     { method => ($m eq 'HEAD' ? 'GET' : 'HEAD'),
                       path => '^/$', action => { status => 404 } }]);
        for my $how (['POST /followers', \&follow_me],
                     ['POST /followings', \&follow_them])
        {
            $res = $how->[1]->("http://127.0.0.1:$P");
            is($res->{status}, 403, "$how->[0]: $m / redirected $what: 403")
                or diag($res->{body});
            like($res->{json}{error} // '', qr/tent_outbound_allow/,
                 "$how->[0]: $m / redirected $what: the guard refused");
        }
        ok(scalar($rx4->requests(method => $m, path => qr{^/$})),
           "$m / redirected $what: the allowed receiver was asked");
    }
}

# the profile Link pointing at a denied address
$rx4->rules([{ path => '^/$', action => { status => 200,
    headers => { Link => qq{<http://127.0.0.2:$P/tent/profile>; }
                         . qq{rel="https://tent.io/rels/profile"} } } }]);
$res = follow_me("http://127.0.0.1:$P");
is($res->{status}, 403, 'a profile link to a denied address: 403')
    or diag($res->{body});

# the profile's servers at a denied address: the challenge is refused
$rx4->rules([{ path => '^/tent/profile$', action => { status => 200,
    headers => { 'Content-Type' => 'application/vnd.tent.v0+json' },
    body => { 'https://tent.io/types/info/core/v0.1.0' => {
        entity => "http://127.0.0.1:$P", licenses => [],
        servers => ["http://127.0.0.2:$P/tent"] } } } }]);
$res = follow_me("http://127.0.0.1:$P");
is($res->{status}, 403, 'servers at a denied address: the challenge is refused')
    or diag($res->{body});
like($res->{json}{error} // '', qr/challenge.*tent_outbound_allow/,
     'the error names the challenge and the guard');

# a redirect within the allowed range is followed
$rx4->rules([{ method => 'HEAD', path => '^/$',
               action => { status => 302,
                           headers => { Location => '/elsewhere' } } },
             { method => 'HEAD', path => '^/elsewhere$',
               action => { status => 200, headers => { Link =>
                   qq{<http://127.0.0.1:$P/tent/profile>; }
                   . qq{rel="https://tent.io/rels/profile"} } } }]);
$res = follow_me("http://127.0.0.1:$P");
is($res->{status}, 200, 'a redirect inside the allowed range is followed')
    or diag($res->{body});
$rx4->rules([]);

# a Location's fragment is never sent, nor read as the host: the origin
# the outbound shares count (ngx_http_tent_fetch_share.c) is the one asked
for my $loc ('/elsewhere#frag', "http://127.0.0.1:$P/elsewhere#\@127.0.0.2:$P/") {
    $rx4->clear;
    $rx4->rules([{ method => 'HEAD', path => '^/$',
                   action => { status => 302,
                               headers => { Location => $loc } } },
                 { method => 'HEAD', path => '^/elsewhere$',
                   action => { status => 200, headers => { Link =>
                       qq{<http://127.0.0.1:$P/tent/profile#x>; }
                       . qq{rel="https://tent.io/rels/profile"} } } }]);
    $res = follow_me("http://127.0.0.1:$P");
    is($res->{status}, 200, "a redirect to $loc is followed")
        or diag($res->{body});
    is(scalar(grep { $_->{path} =~ /#/ } $rx4->requests), 0,
       '... no fragment sent (the Location\'s nor the profile link\'s)');
    ok(scalar($rx4->requests(method => 'GET', path => qr{^/tent/profile$})),
       '... the profile read at its path');
}
$rx4->rules([]);

settle();
is($rx2->connections + $rx6->connections, 0,
   'nothing connected to 127.0.0.2 or ::1');

$peer->stop;

__DATA__

=== TEST 1: tent_outbound_allow takes addresses and CIDR ranges
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8 ::1 10.1.2.3 fd00::/8;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_outbound_allow 192.168.0.0/16;
--- request
GET /tent/profile
--- error_code: 200



=== TEST 2: a word is not a range
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_outbound_allow bogus;
--- must_die
--- error_log
invalid address range "bogus" in "tent_outbound_allow", expected an address or CIDR



=== TEST 3: a prefix longer than the address is refused
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/33;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
invalid address range "127.0.0.0/33" in "tent_outbound_allow"



=== TEST 4: a range with host bits set warns
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.1/8;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/profile
--- error_code: 200



=== TEST 5: tent_outbound_allow needs an argument
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_outbound_allow;
--- must_die
--- error_log
invalid number of arguments in "tent_outbound_allow" directive



=== TEST 6: not in a location
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    location /x {
        tent_outbound_allow 127.0.0.1;
    }
--- must_die
--- error_log
"tent_outbound_allow" directive is not allowed here
