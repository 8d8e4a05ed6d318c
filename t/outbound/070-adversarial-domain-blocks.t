# Issue #27, item 3: the operator's blocked domains (docs/blocks.md).
#
# `tent-admin block DOMAIN` (the operator's {"action":"block"}) blocks a
# domain for the whole host, by labels: example.test blocks
# a.example.test and b.a.example.test, not badexample.test.  Every
# inbound route refuses an entity under it with a 403 JSON error before
# any work (a follow: no challenge; a mention: no read at its server; a
# notification or any request signed with the credential of a
# relationship with it), and nothing is sent to a host under it: no
# discovery, no delivery (a job to it is a dead letter, never retried),
# no proxied read, not even on a redirect's hop.  The operator's
# requests: the token needed, bad domains 400, an IDN in UTF-8 or an IP
# address 422 (and at tent-admin), twice 409, the list; a host matched
# as written, lower-cased, one trailing dot dropped.  Blocks an older
# version stored (a name in UTF-8, an IP address: rows written with
# t/helpers/ldb-put) are unblocked still.
# Host names resolve to 127.0.0.1 inside a network namespace with an
# /etc/hosts of the suite's own (Tent::Netns); without one, skipped.

my @NAMES;
BEGIN {
    @NAMES = qw(example.test a.example.test b.a.example.test
                badexample.test);
}
use Tent::Netns qw(reexec_in_netns);
BEGIN { reexec_in_netns(hosts => \@NAMES) }

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text
                  http_request free_port);
use Tent::Client;
use Tent::Receiver;
use Tent::Hosting qw(operator_token operator_request);
use JSON::PP;
use Time::HiRes qw(sleep time);

our $TOKFILE;
BEGIN {
    $TOKFILE = "/tmp/tent-domains-token-$$";
    $ENV{TEST_NGINX_TOKEN_FILE} = $TOKFILE;
}
my $TOKEN = operator_token($TOKFILE);
END { unlink $TOKFILE if $TOKFILE }

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $PORT = $ENV{TEST_NGINX_SERVER_PORT} || 1984;
my $A_URL = "http://127.0.0.1:$PORT";
my $c = Tent::Client->new;
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $CORE = 'https://tent.io/types/info/core/v0.1.0';
my $TENT_CT = 'application/vnd.tent.v0+json';

my (undef, $owner) = $c->authorized_app(
    'read_followers,write_followers,read_followings,write_followings,'
    . 'read_posts,write_posts', post_types => 'all');

sub op { operator_request(port => $PORT, token => $TOKEN, @_) }

sub domains {
    my $res = http_request(method => 'GET', path => '/tent-admin?domains',
                           port => $PORT,
                           headers => { Host => 'localhost',
                                        Authorization => "Bearer $TOKEN" });
    my $list = eval { decode_json($res->{body}) } || [];
    return [map { $_->{domain} } @$list];
}

sub cred_of {
    my ($json) = @_;
    return { map { $_ => $json->{$_} } qw(mac_key_id mac_key mac_algorithm) };
}

# an entity named NAME: its receiver on 127.0.0.1, its profile's servers
# under its name, so that every request to it goes to the name
sub named {
    my ($name) = @_;
    my $p = free_port();
    my $e = "http://$name:$p";
    return Tent::Receiver->start(
        port => $p, entity => $e,
        profile => { $CORE => { entity => $e, licenses => [],
                                servers => ["$e/tent"] } });
}

sub follows_us {
    my ($e) = @_;
    return $c->request(POST => '/followers',
                       body => { entity => $e, types => ['all'],
                                 notification_path => 'notifications/n' });
}

sub a_post {
    my ($e, $id, %o) = @_;
    return { id => $id, entity => $e, type => $STATUS,
             content => { text => "$id from $e" },
             published_at => int(time), licenses => [],
             permissions => { public => JSON::PP::true },
             mentions => $o{mentions} // [], version => 1 };
}

sub got { $_[0]->posts_of($_[1]) }
sub wait_got { $_[0]->wait_posts_of($_[1]) }

my $sub = named('a.example.test');       # blocked by the suffix
my $top = named('example.test');         # blocked, the domain itself
my $deep = named('b.a.example.test');    # blocked, two labels down
my $near = named('badexample.test');     # not blocked: another label

# before: the subdomain's entity follows us and we follow it
my $res = follows_us($sub->entity);
is($res->{status}, 200, 'a.example.test follows us') or diag $res->{body};
my $subf = cred_of($res->{json});
$res = follows_us($near->entity);
is($res->{status}, 200, 'badexample.test follows us') or diag $res->{body};
$res = $c->request(POST => '/followings', cred => $owner,
                   body => { entity => $sub->entity });
is($res->{status}, 200, 'we follow a.example.test') or diag $res->{body};
my $gid = $res->{json}{id};
my ($subcred) = map { cred_of($_) } $sub->followers;
$res = $c->request(POST => '/followings', cred => $owner,
                   body => { entity => $near->entity });
is($res->{status}, 200, 'we follow badexample.test') or diag $res->{body};
my $nid = $res->{json}{id};

# --- the operator's requests -------------------------------------------

$res = operator_request(port => $PORT, token => '',
                        body => { action => 'block',
                                  domain => 'example.test' });
is($res->{status}, 401, 'no token: 401');
$res = operator_request(port => $PORT, token => 'op-wrong',
                        body => { action => 'block',
                                  domain => 'example.test' });
is($res->{status}, 401, 'a wrong token: 401');

for my $bad ('', '.', 'a..b', '.example.test', 'http://example.test',
             'example.test/x', 'example.test:80', 'a b', 'x' x 64 . '.test',
             join('.', ('abcdefgh') x 30), "exa\x00mple", 'u@example.test',
             ['example.test'])
{
    $res = op(body => { action => 'block', domain => $bad });
    is($res->{status}, 400, 'a bad domain: 400') or diag explain $bad;
    like($res->{body}, qr/"error"/, 'a JSON error');
}
is_deeply(domains(), [], 'nothing blocked');

# an IDN in UTF-8 would be stored and never match (a URL's host is in
# its A-label form, and we have no IDNA library): 422, the A-label asked
# for; an IP address is no domain (an IPv4 host is never matched)
for my $idn ("b\x{fc}cher.test", "\x{4f8b}.test", "a.test.\x{e9}",
             "xn--bcher-kva.\x{fc}.test") {
    $res = op(body => { action => 'block', domain => $idn });
    is($res->{status}, 422, 'a domain not in ASCII: 422')
        or diag explain $res;
    like($res->{json}{error} // '', qr/A-label \(xn--\.\.\.\) form/,
         'the error asks for its A-label form');
}
for my $ip ('127.0.0.1', '10.0.0.1.', '1.2', '8') {
    $res = op(body => { action => 'block', domain => $ip });
    is($res->{status}, 422, "an IP address ($ip): 422") or diag $res->{body};
    like($res->{json}{error} // '', qr/IP address/, 'the error says so');
}
is_deeply(domains(), [], 'nothing blocked');

# its A-label form is blocked, and matches an entity of it (a trailing
# dot, a port: the host as written in the URL, lower-cased)
$res = op(body => { action => 'block', domain => 'XN--bcher-kva.test.' });
is($res->{status}, 201, 'xn--bcher-kva.test blocked') or diag $res->{body};
is($res->{json}{domain}, 'xn--bcher-kva.test', 'kept without the dot');
for my $e ('http://xn--bcher-kva.test', 'http://a.xn--bcher-kva.test.:80/',
           'https://A.XN--BCHER-KVA.TEST.') {
    $res = follows_us($e);
    is($res->{status}, 403, "$e follows: 403") or diag $res->{body};
}
$res = op(body => { action => 'unblock', domain => 'xn--bcher-kva.test' });
is($res->{status}, 200, 'and unblocked') or diag $res->{body};

$res = op(body => { action => 'block', domain => 'Example.TEST.' });
is($res->{status}, 201, 'example.test blocked (case, trailing dot)')
    or diag $res->{body};
is($res->{json}{domain}, 'example.test', 'kept as example.test');
$res = op(body => { action => 'block', domain => 'example.test' });
is($res->{status}, 409, 'blocked again: 409');
$res = op(body => { action => 'unblock', domain => 'never.test' });
is($res->{status}, 404, 'unblocking a domain not blocked: 404');
is_deeply(domains(), ['example.test'], 'the list');

# the same through bin/tent-admin: block, blocks, unblock
my @ADMIN = ($^X, "bin/tent-admin",
             '--url', "http://127.0.0.1:$PORT/tent-admin",
             '--host', 'localhost', '--token-file', $TOKFILE);
sub admin_tool {
    my $out = qx{@{[ join ' ', map { "'$_'" } @ADMIN, @_ ]} 2>&1};
    return ($? >> 8, $out);
}
my ($rc, $out) = admin_tool('block', 'other.test');
is($rc, 0, 'tent-admin block other.test') or diag $out;
($rc, $out) = admin_tool('block', "b\xc3\xbccher.test");
is($rc, 2, 'tent-admin block of a UTF-8 name: refused (usage)');
like($out, qr/is not ASCII: give an internationalized domain name in its/,
     'it says why');
like($out, qr/its A-label \(xn--\.\.\.\) form/, 'and asks for the A-label');
($rc, $out) = admin_tool('blocks');
is($rc, 0, 'tent-admin blocks') or diag $out;
is_deeply([map { decode_json($_)->{domain} } split /\n/, $out],
          ['example.test', 'other.test'], 'lists both, a line each');
($rc, $out) = admin_tool('unblock', 'other.test');
is($rc, 0, 'tent-admin unblock other.test') or diag $out;
($rc, $out) = admin_tool('unblock', 'other.test');
isnt($rc, 0, 'again: it fails') ;
like($out, qr/404/, 'and says why');
is_deeply(domains(), ['example.test'], 'the list again');

# --- inbound: every route, before any work, in both workers -------------

$_->clear for $sub, $top, $deep, $near;

for my $n (1, 2) {
    for my $rx ($sub, $top, $deep) {
        my $e = $rx->entity;
        $res = follows_us($e);
        is($res->{status}, 403, "($n) $e follows: 403");
        like($res->{json}{error} // '', qr/domain is blocked/,
             "($n) the error says so");

        $res = $c->request(POST => '/posts',
                           body => a_post($e, "m$n",
                                          mentions => [{ entity => $A_URL }]));
        is($res->{status}, 403, "($n) $e mentions us: 403");
    }

    $res = follows_us('HTTP://B.A.EXAMPLE.TEST.:' . $deep->port);
    is($res->{status}, 403, "($n) another spelling: 403");

    $res = $c->request(POST => "/notifications/$gid", cred => $subcred,
                       body => a_post($sub->entity, "n$n"));
    is($res->{status}, 403, "($n) a notification from a.example.test: 403");
    like($res->{json}{error} // '', qr/domain is blocked/,
         "($n) the error says so");
    is($c->request(GET => '/profile', cred => $subf)->{status}, 403,
       "($n) its follower credential: 403 on any route");

    # outbound, from a request
    $res = $c->request(POST => '/followings', cred => $owner,
                       body => { entity => $deep->entity });
    is($res->{status}, 403, "($n) following b.a.example.test: 403");
    $res = $c->request(POST => '/followings', cred => $owner,
                       body => { entity => 'http://B.a.example.test.:'
                                           . $deep->port });
    is($res->{status}, 403, "($n) and as B.a.example.test.: 403");
    $res = $c->request(GET => "/followings/$gid/posts", cred => $owner);
    is($res->{status}, 403, "($n) a proxied read of a.example.test: 403");
}
for my $rx ($sub, $top, $deep) {
    is(scalar $rx->requests, 0,
       $rx->entity . ': sent nothing (no challenge, discovery, read)');
}

# badexample.test is another domain: it follows, it is read
$res = $c->request(GET => "/followings/$nid/profile", cred => $owner);
is($res->{status}, 200, 'a proxied read of badexample.test: 200')
    or diag $res->{body};

# a redirect's hop to a blocked host is refused too: an entity of
# badexample.test whose discovery redirects to b.a.example.test
my $hop = named('badexample.test');
$hop->rules([map { { method => $_, path => '^/$',
                     action => { status => 302, headers => {
                         Location => $deep->entity . '/' } } } }
             qw(HEAD GET)]);
$res = follows_us($hop->entity);
is($res->{status}, 403, 'a discovery redirected to b.a.example.test: 403')
    or diag $res->{body};
like($res->{body}, qr/blocked by the operator/, 'the error says why');
ok(scalar $hop->requests, 'badexample.test was asked');
is(scalar $deep->requests, 0, 'b.a.example.test got nothing');

# --- outbound, the delivery: to badexample.test only ---------------------

$res = $c->request(POST => '/posts', cred => $owner,
                   body => { type => $STATUS, content => { text => 'hi' },
                             permissions => { public => JSON::PP::true },
                             mentions => [{ entity => $top->entity },
                                          { entity => $near->entity }] });
is($res->{status}, 200, 'a public post mentioning example.test')
    or diag $res->{body};
my $pid = $res->{json}{id};
ok(scalar wait_got($near, $pid), 'badexample.test got it');
$res = $c->request(POST => '/posts', cred => $owner,
                   body => { type => $STATUS, content => { text => 'mark' },
                             permissions => { public => JSON::PP::true } });
my $mark = $res->{json}{id};
ok(scalar wait_got($near, $mark), 'and the marker after it');
is(scalar $_->requests, 0, $_->entity . ': sent nothing, not discovered')
    for $sub, $top, $deep;

# --- unblocked: like any other again --------------------------------------

$res = op(body => { action => 'unblock', domain => 'EXAMPLE.test' });
is($res->{status}, 200, 'example.test unblocked') or diag $res->{body};
is_deeply(domains(), [], 'the list is empty');
$res = follows_us($top->entity);
is($res->{status}, 200, 'example.test follows us now') or diag $res->{body};

my $log = error_log_text();
my @b = $log =~ /\[notice\].*tent admin: domain "example\.test" blocked/g;
is(scalar @b, 1, 'the block logged once at notice');
my @u = $log =~ /\[notice\].*tent admin: domain "example\.test" unblocked/g;
is(scalar @u, 1, 'the unblock logged once at notice');

# --- blocks stored before the names were refused: unblocked still ------

# as an older version stored them: a name in UTF-8, an IP address
my $put = Tent::Util::ldb_tool('ldb-put');
stop_last_nginx();
for my $d ("b\xc3\xbccher.test", '192.0.2.7') {
    system($put, Tent::Util::servroot() . '/tent_temp/db',
           unpack('H*', "\0Y$d"),
           unpack('H*', qq({"domain":"$d","blocked":true,"created_at":1})))
        == 0 or die 'ldb-put failed';
}
start_last_nginx();
is_deeply(domains(), ['192.0.2.7', "b\x{fc}cher.test"],
          'two blocks of an older version listed');
$res = op(body => { action => 'unblock', domain => "B\x{fc}CHER.test." });
is($res->{status}, 200, 'the UTF-8 one unblocked (its spelling as stored)')
    or diag $res->{body};
($rc, $out) = admin_tool('unblock', '192.0.2.7');
is($rc, 0, 'tent-admin unblocks the IP address') or diag $out;
$res = op(body => { action => 'unblock', domain => '192.0.2.8' });
is($res->{status}, 404, 'an IP address not stored: 404');
is_deeply(domains(), [], 'the list is empty');
$res = op(body => { action => 'block', domain => '192.0.2.7' });
is($res->{status}, 422, 'and an IP address is not blocked again');

$_->stop for $sub, $top, $deep, $near, $hop;

__DATA__

=== TEST 1: the server
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_delivery_interval 200ms;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
    location /tent-admin {
        tent_admin;
        tent_admin_token_file $TEST_NGINX_TOKEN_FILE;
        allow 127.0.0.1;
        deny all;
    }
--- request
GET /tent/posts
--- error_code: 200
--- response_body: []
