# Mentions from entities we have no relationship with (spec 9.3): an
# unsigned POST /posts of another entity's public post that mentions us.
# The pushed body is never trusted: the claimed entity is discovered and
# the post read again from its own server (GET {server}/posts/<id>); that
# copy is what we keep, as a post received from a following.  Receivers
# on loopback play the mentioning entities.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text);
use Tent::Client;
use Tent::Receiver;
use IO::Socket::IP;
use JSON::PP;
*uri_escape = \&Tent::Client::uri_escape;

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $A_URL = "http://127.0.0.1:" . ($ENV{TEST_NGINX_SERVER_PORT} || 1984);
my $c = Tent::Client->new;
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $CORE = 'https://tent.io/types/info/core/v0.1.0';
my $TENT_CT = 'application/vnd.tent.v0+json';
my $UNAUTHORIZED = '{"error":"Unauthorized"}';

my (undef, $read) = $c->authorized_app('read_posts', post_types => 'all');

# a post of entity $e as its server would have it
sub a_post {
    my ($e, $id, %o) = @_;
    return { id => $id, entity => $e, type => $STATUS,
             content => { text => $o{text} // "hello from $e" },
             published_at => 1700000000, licenses => [],
             permissions => { public => $o{public} // JSON::PP::true },
             mentions => $o{mentions} // [{ entity => $A_URL }],
             version => $o{version} // 1 };
}

# GET /tent/posts/<id> on the receiver answers $post (a hash: JSON)
sub serve {
    my ($rx, $id, $post, %o) = @_;
    $rx->rules([{ method => 'GET', path => "^/tent/posts/\Q$id\E\$",
                  action => { status => $o{status} || 200,
                              headers => { 'Content-Type' => $TENT_CT },
                              body => $post } },
                @{ $o{rules} || [] }]);
}

sub push_post {
    my ($body, %o) = @_;
    return $c->request(POST => '/posts', body => $body, %o);
}

# our copy, as an app with read_posts reads it
sub copy {
    my ($e, $id) = @_;
    return $c->request(GET => '/posts/' . uri_escape($e) . "/$id",
                       cred => $read);
}

# the ids of the posts of $e in the app's feed
sub listed {
    my ($e, %o) = @_;
    my $res = $c->request(GET => '/posts?entity=' . uri_escape($e),
                          $o{anonymous} ? () : (cred => $read));
    return map { $_->{id} } @{ $res->{json} || [] };
}

# --- a mention verified at its server ----------------------------------

my $rx = Tent::Receiver->start;
my $C = $rx->url;

serve($rx, 'm1', a_post($C, 'm1', text => 'hello @A'));
my $res = push_post(a_post($C, 'm1', text => 'hello @A'));
is($res->{status}, 200, 'an unsigned mention verified at its server: 200')
    or diag $res->{body};
is($res->{body}, '{}', 'answered {}');

my @got = $rx->requests(method => 'GET', path => qr{^/tent/posts/});
is(scalar @got, 1, 'the post was read once at its server');
is($got[0]{path}, '/tent/posts/m1', 'at {server}/posts/<id>');
ok(!exists $got[0]{headers}{authorization}, 'unsigned');
like($got[0]{headers}{accept} // '', qr/^\Q$TENT_CT\E/, 'Accept: the Tent type');
ok(scalar $rx->requests(path => qr{^/tent/profile$}),
   'the entity was discovered');

$res = copy($C, 'm1');
is($res->{status}, 200, 'an app with read_posts reads the copy')
    or diag $res->{body};
is($res->{json}{content}{text}, 'hello @A', 'the post');
is($res->{json}{entity}, $C, 'of the mentioning entity');
ok($res->{json}{received_at}, 'with our received_at');
is_deeply([listed($C)], ['m1'], 'in the feed of the app');

$res = $c->request(GET => '/posts/' . uri_escape($C) . '/m1');
is($res->{status}, 404, 'not to anonymous readers');
is_deeply([listed($C, anonymous => 1)], [],
          'not in the anonymous feed');

# --- the pushed body lies: the server's copy is kept -----------------

serve($rx, 'm2', a_post($C, 'm2', text => 'what C really said'));
$res = push_post(a_post($C, 'm2', text => 'words put in C\'s mouth'));
is($res->{status}, 200, 'a pushed body that differs: 200')
    or diag $res->{body};
is(copy($C, 'm2')->{json}{content}{text}, 'what C really said',
   'the content stored is the one its server serves');

# --- the server does not confirm it: 403, nothing stored --------------

my @unverified = (
    ['its server answers 404', 'u1', { error => 'Not Found' }, 404],
    ['the served post is private', 'u2',
     a_post($C, 'u2', public => JSON::PP::false)],
    ['the served post mentions someone else', 'u3',
     a_post($C, 'u3', mentions => [{ entity => 'http://other.example' }])],
    ['the served post has another id', 'u4', a_post($C, 'other')],
    ['the served post is of another entity', 'u5',
     a_post('http://other.example', 'u5')],
    ['its server answers no JSON', 'u6', 'not json'],
);

for my $u (@unverified) {
    my ($what, $id, $served, $status) = @$u;
    serve($rx, $id, $served, status => $status);
    $res = push_post(a_post($C, $id));
    is($res->{status}, 403, "$what: 403");
    like($res->{json}{error} // '',
         qr/could not be verified at its entity's server/,
         "$what: the error says so") or diag $res->{body};
    is(copy($C, $id)->{status}, 404, "$what: nothing stored");
}
is_deeply([sort(listed($C))], ['m1', 'm2'], 'only verified posts are listed');

# --- not a mention at all: 403 as before, and no request anywhere ------

my $quiet = Tent::Receiver->start;
my $Q = $quiet->url;
serve($quiet, 'q1', a_post($Q, 'q1'));

my @refused = (
    ['a post that does not mention us',
     a_post($Q, 'q1', mentions => [{ entity => 'http://other.example' }])],
    ['a post without mentions', { %{ a_post($Q, 'q1') }, mentions => [] }],
    ['a private post', a_post($Q, 'q1', public => JSON::PP::false)],
    ['a post without permissions',
     do { my $p = a_post($Q, 'q1'); delete $p->{permissions}; $p }],
    ['a post claiming our own entity', a_post($A_URL, 'q1')],
    ['a post claiming our entity with a slash', a_post("$A_URL/", 'q1')],
    ['a post without an id',
     do { my $p = a_post($Q, 'q1'); delete $p->{id}; $p }],
    ['a post with an id that is no token', a_post($Q, '../q1')],
    ['a post with an entity that is no URL', a_post('ftp://x.example', 'q1')],
    ['a post without an entity',
     do { my $p = a_post($Q, 'q1'); delete $p->{entity}; $p }],
    ['invalid JSON', '{"entity":'],
    ['a JSON array', '[1]'],
);

for my $r (@refused) {
    my ($what, $body) = @$r;
    $res = push_post($body);
    is($res->{status}, 403, "$what: 403");
    is($res->{body}, $UNAUTHORIZED, "$what: the answer of before");
}

$res = push_post(a_post($Q, 'q1'),
                 headers => { 'Content-Type' => 'multipart/form-data; '
                                                . 'boundary=x' });
is($res->{status}, 403, 'a multipart post: 403');
is($res->{body}, $UNAUTHORIZED, 'a multipart post: the answer of before');

$res = push_post(a_post($Q, 'q1'),
                 headers => { 'Content-Type' => 'application/json' });
is($res->{body}, $UNAUTHORIZED, 'another content type: the answer of before');

$res = push_post(a_post($Q, 'q1'),
                 headers => { Authorization => 'Basic eDp5' });
is($res->{body}, $UNAUTHORIZED,
   'with an Authorization header that is no MAC: the answer of before');

is($quiet->connections, 0, 'the claimed entity saw no request at all');
is(copy($Q, 'q1')->{status}, 404, 'nothing stored');

# --- the same mention twice: one copy --------------------------------

serve($rx, 'm1', a_post($C, 'm1', text => 'hello @A'));
$res = push_post(a_post($C, 'm1', text => 'hello @A'));
is($res->{status}, 200, 'the same mention again: 200');
is($res->{body}, '{}', 'answered {}');
is(scalar(grep { $_ eq 'm1' } listed($C)), 1, 'stored once');

# --- a newer version replaces, an older one does not ------------------

serve($rx, 'm1', a_post($C, 'm1', text => 'hello @A, edited',
                        version => 2));
$res = push_post(a_post($C, 'm1', version => 2));
is($res->{status}, 200, 'version 2 pushed: 200') or diag $res->{body};
$res = copy($C, 'm1');
is($res->{json}{content}{text}, 'hello @A, edited', 'version 2 replaces it');
is($res->{json}{version}, 2, 'as version 2');
is(scalar(grep { $_ eq 'm1' } listed($C)), 1, 'still one copy');

serve($rx, 'm1', a_post($C, 'm1', text => 'hello @A', version => 1));
$res = push_post(a_post($C, 'm1', version => 1));
is($res->{status}, 200, 'an older version pushed: acknowledged');
is(copy($C, 'm1')->{json}{content}{text}, 'hello @A, edited',
   'and ignored');

# a pushed body that claims a newer version changes nothing by itself
serve($rx, 'm1', a_post($C, 'm1', text => 'hello @A, edited',
                        version => 2));
$res = push_post(a_post($C, 'm1', text => 'forged', version => 9));
is($res->{status}, 200, 'a pushed version the server does not have: 200');
$res = copy($C, 'm1');
is($res->{json}{version}, 2, 'the version is the server\'s');
is($res->{json}{content}{text}, 'hello @A, edited',
   'the content is the server\'s');

# --- a profile that names another entity: 403 ------------------------

my $liar = Tent::Receiver->start(entity => 'http://someone-else.example');
my $L = $liar->url;
serve($liar, 'l1', a_post($L, 'l1'));
$res = push_post(a_post($L, 'l1'));
is($res->{status}, 403, 'the profile names another entity: 403');
like($res->{json}{error} // '', qr/Entity mismatch/, 'the error says so');
is(scalar $liar->requests(path => qr{^/tent/posts/}), 0,
   'the post is not asked for');
is(copy($L, 'l1')->{status}, 404, 'nothing stored');

# --- discovery fails: its status and message ---------------------------

my $gone = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                               Listen => 1) or die "listen: $@";
my $dead = 'http://127.0.0.1:' . $gone->sockport;
close $gone;
$res = push_post(a_post($dead, 'd1'));
is($res->{status}, 503, 'an entity that cannot be reached: 503');
like($res->{json}{error} // '', qr/^Discovery of /, 'discovery\'s error');

# --- a server that cannot be reached: the next one --------------------

my $two = Tent::Receiver->start;
my $T = $two->url;
serve($two, 't1', a_post($T, 't1', text => 'second server'), rules => [
    { method => 'GET', path => '^/tent/profile$',
      action => { status => 200, headers => { 'Content-Type' => $TENT_CT },
                  body => { $CORE => { entity => $T, licenses => [],
                                       servers => ["$dead/tent",
                                                   "$T/tent"] } } } }]);
$res = push_post(a_post($T, 't1'));
is($res->{status}, 200, 'the first server refuses the connection, the '
                        . 'second verifies') or diag $res->{body};
is(copy($T, 't1')->{json}{content}{text}, 'second server', 'stored');

# --- a server that hangs, or answers too much --------------------------

$rx->rules([{ method => 'GET', path => '^/tent/posts/h1$',
              action => 'hang' }]);
$res = push_post(a_post($C, 'h1'));
is($res->{status}, 504, 'a server that hangs: 504 after the outbound '
                        . 'timeout');
like($res->{json}{error} // '', qr/timed out/, 'the error says so');
is(copy($C, 'h1')->{status}, 404, 'nothing stored');

$rx->rules([{ method => 'GET', path => '^/tent/posts/b1$',
              action => 'big' }]);
$res = push_post(a_post($C, 'b1'));
is($res->{status}, 502, 'a post of 10 MB: 502');
like($res->{json}{error} // '', qr/too large/, 'the error says so');
is(copy($C, 'b1')->{status}, 404, 'nothing stored');

$_->stop for $rx, $quiet, $liar, $two;

unlike(error_log_text(), qr/\[alert\]|\[emerg\]|exited on signal/,
       'no alert, no crash in the error log');

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/posts
--- error_code: 200
