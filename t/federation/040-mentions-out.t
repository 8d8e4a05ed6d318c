# Mentions (spec 9.2 step 4, 9.3): a new post of ours that mentions a
# follower who did not get it as a subscriber, or an entity we follow,
# goes to that entity too, signed with the relationship's credential,
# when its permissions let that entity read it; a public one that
# mentions an entity with no relationship goes, unsigned, to the servers
# discovery finds for it.  Receivers on loopback play followers and
# strangers; a second nginx (Tent::Peer) is an entity we follow and that
# does not follow us, and must end up with the post.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx);
use Tent::Client;
use Tent::Peer;
use Tent::Receiver;
use JSON::PP;
use Time::HiRes qw(sleep time);
*uri_escape = \&Tent::Client::uri_escape;

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $A_URL = "http://127.0.0.1:" . ($ENV{TEST_NGINX_SERVER_PORT} || 1984);
my $c = Tent::Client->new;
my $T = 'https://tent.io/types/post/';
my $STATUS = "${T}status/v0.1.0";
my $ESSAY = "${T}essay/v0.1.0";

my ($app, $owner) = $c->authorized_app(
    'write_posts,read_posts,write_followings,read_followings',
    post_types => 'all');

sub follow {
    my ($rx, @types) = @_;
    my $res = $c->request(POST => '/followers',
                          body => { entity => $rx->url,
                                    types => [@types],
                                    notification_path => 'notifications/n' });
    die "follow: $res->{status} $res->{body}" unless $res->{status} == 200;
    return $res->{json};
}

sub post { $c->post_ok($owner, {@_}) }

# the notifications a receiver got of one post
sub got { $_[0]->posts_of($_[1], path => qr{/notifications/n$}) }
sub wait_got { $_[0]->wait_posts_of($_[1], path => qr{/notifications/n$}) }

my $essays = Tent::Receiver->start;    # subscribed to essays only
my $all = Tent::Receiver->start;       # subscribed to everything
my $stranger = Tent::Receiver->start;  # no relationship at all
follow($essays, $ESSAY);
follow($all, 'all');

# the stranger's server fails the first delivery: it is tried again
$stranger->rules([{ method => 'POST', path => '^/tent/posts$', times => 1,
                    action => { status => 503, body => 'busy' } }]);

sub posted {
    my ($rx, $id) = @_;
    return grep { (eval { decode_json($_->{body})->{id} } // '') eq $id }
           $rx->requests(method => 'POST', path => qr{^/tent/posts$});
}

# --- followers --------------------------------------------------------

my $pub = post(type => $STATUS, content => { text => 'hi @essays @all' },
               permissions => { public => JSON::PP::true },
               mentions => [{ entity => $essays->url },
                            { entity => $all->url },
                            { entity => $essays->url },
                            { entity => $stranger->url },
                            { entity => $A_URL }]);

my @n = wait_got($essays, $pub->{id});
is(scalar @n, 1, 'a follower subscribed to essays only gets a status '
               . 'that mentions it');
is(eval { decode_json($n[0]{body})->{entity} } // '', $A_URL,
   'the post itself, of our entity');
like($n[0]{headers}{authorization} // '', qr/^MAC id="s:/,
     "signed with the follower's credential");
is(scalar wait_got($all, $pub->{id}), 1,
   'a subscribed follower that is mentioned gets it once');

# a private post that does not name the mentioned follower: not for it
my $secret = post(type => $STATUS, content => { text => 'about @essays' },
                  permissions => { entities => { $all->url => JSON::PP::true } },
                  mentions => [{ entity => $essays->url }]);

# a private post that names it: for it
my $named = post(type => $STATUS, content => { text => 'to @essays' },
                 permissions => { entities => { $essays->url => JSON::PP::true } },
                 mentions => [{ entity => $essays->url }]);

is(scalar wait_got($essays, $named->{id}), 1,
   'a private post naming the mentioned follower reaches it');
is(scalar wait_got($all, $secret->{id}), 1,
   'the follower the private post names gets it');

# a new version mentions no one again (tentd: only at creation)
my $res = $c->request(PUT => "/posts/$pub->{id}", cred => $owner,
                      body => { type => $STATUS,
                                content => { text => 'edited @essays' },
                                permissions => { public => JSON::PP::true },
                                mentions => [{ entity => $essays->url }] });
is($res->{status}, 200, 'the mentioning post gets a new version');

my $end = time + 15;
sleep 0.1 while time < $end
    && !grep { (eval { decode_json($_->{body})->{version} } // 0) == 2 }
             got($all, $pub->{id});
is(scalar got($all, $pub->{id}), 2, 'the subscriber gets version 2');

# the mention jobs of a post are written with or before its subscribers'
# are sent; a last post makes sure the queue has moved past them
my $last = post(type => $STATUS, content => { text => 'last @essays' },
                permissions => { public => JSON::PP::true },
                mentions => [{ entity => $essays->url }]);
ok(scalar wait_got($essays, $last->{id}), 'a later mention arrives');
sleep 1;
is(scalar got($essays, $secret->{id}), 0,
   'a private post the mentioned follower may not read is not sent to it');
is(scalar got($essays, $pub->{id}), 1, 'version 2 is not sent for the mention');

# --- an entity with no relationship ---------------------------------------

$end = time + 20;
sleep 0.1 while time < $end && posted($stranger, $pub->{id}) < 2;
my @s = posted($stranger, $pub->{id});
is(scalar @s, 2, 'the public post goes to a mentioned stranger, again '
               . 'after a 503');
ok(!exists $s[-1]{headers}{authorization}, 'unsigned');
# a job reads the post when it runs: a retry may carry version 2
is(eval { decode_json($s[-1]{body})->{entity} } // '', $A_URL,
   'the post itself, of our entity');
ok(scalar $stranger->requests(path => qr{^/tent/profile$}),
   "after reading the stranger's profile");

my $hush = post(type => $STATUS, content => { text => 'psst @stranger' },
                permissions => { entities => { $all->url => JSON::PP::true } },
                mentions => [{ entity => $stranger->url }]);
my $loud = post(type => $STATUS, content => { text => 'hey @stranger' },
                permissions => { public => JSON::PP::true },
                mentions => [{ entity => $stranger->url }]);
$end = time + 15;
sleep 0.1 while time < $end && !posted($stranger, $loud->{id});
is(scalar posted($stranger, $loud->{id}), 1, 'a later public one arrives');
sleep 1;
is(scalar posted($stranger, $hush->{id}), 0,
   'a private post is never sent to an entity with no relationship');

# an entity whose server has no profile: a dead letter, nothing posted
my $nobody = Tent::Receiver->start(
    rules => [{ path => '^/', action => { status => 404, body => 'no' } }]);
my $lost = post(type => $STATUS, content => { text => 'hello @nobody' },
                permissions => { public => JSON::PP::true },
                mentions => [{ entity => $nobody->url }]);
$end = time + 15;
sleep 0.1 while time < $end
    && !$nobody->requests(method => 'GET');
ok(scalar $nobody->requests(method => 'GET'), 'discovery is tried');
sleep 1;
is(scalar $nobody->requests(method => 'POST'), 0,
   'but with no profile nothing is posted');

# --- an entity we follow, which does not follow us ----------------------

my $b_peer = Tent::Peer->start(
    http_config => 'tent_store $SERVROOT/tent_temp;'
                   . ' tent_outbound_allow 127.0.0.0/8;');
my $B_URL = $b_peer->url;
my $b = $b_peer->client;
my (undef, $b_read) = $b_peer->authorized_app('read_posts',
                                              post_types => 'all');

$res = $c->request(POST => '/followings', cred => $owner,
                   body => { entity => $B_URL });
is($res->{status}, 200, 'we follow B') or diag $res->{body};

my $reply = post(type => $STATUS, content => { text => 'hello @B' },
                 permissions => { public => JSON::PP::true },
                 mentions => [{ entity => $B_URL, post => 'abc' }]);
my $hidden = post(type => $STATUS, content => { text => 'not for @B' },
                  permissions => { public => JSON::PP::false },
                  mentions => [{ entity => $B_URL }]);

my $path = '/posts/' . uri_escape($A_URL) . "/$reply->{id}";
$end = time + 15;
do { $res = $b->request(GET => $path, cred => $b_read) }
    while $res->{status} != 200 && time < $end && sleep 0.1;
is($res->{status}, 200, 'B has the public post that mentions it')
    or diag $res->{body};
is($res->{json}{content}{text}, 'hello @B', 'as we wrote it');
is($res->{json}{mentions}[0]{entity}, $B_URL, 'with its mention');

# the private one: sent after the public one at the latest, or never
my $later = post(type => $STATUS, content => { text => 'again @B' },
                 permissions => { public => JSON::PP::true },
                 mentions => [{ entity => $B_URL }]);
$path = '/posts/' . uri_escape($A_URL) . "/$later->{id}";
$end = time + 15;
do { $res = $b->request(GET => $path, cred => $b_read) }
    while $res->{status} != 200 && time < $end && sleep 0.1;
is($res->{status}, 200, 'a later public mention arrives');
sleep 1;
$res = $b->request(GET => '/posts/' . uri_escape($A_URL) . "/$hidden->{id}",
                   cred => $b_read);
is($res->{status}, 404, 'a private post that does not name B is not sent');

# --- an entity with no relationship that is a Tent server too ----------
# It reads the post again at our server before it keeps it (050-mentions-in.t).

my $c_peer = Tent::Peer->start(
    http_config => 'tent_store $SERVROOT/tent_temp;'
                   . ' tent_outbound_allow 127.0.0.0/8;');
my (undef, $c_read) = $c_peer->authorized_app('read_posts',
                                              post_types => 'all');
my $to_c = post(type => $STATUS, content => { text => 'hello @C' },
                permissions => { public => JSON::PP::true },
                mentions => [{ entity => $c_peer->url }]);
$path = '/posts/' . uri_escape($A_URL) . "/$to_c->{id}";
$end = time + 15;
do { $res = $c_peer->client->request(GET => $path, cred => $c_read) }
    while $res->{status} != 200 && time < $end && sleep 0.1;
is($res->{status}, 200, 'a server we have no relationship with keeps the '
                        . 'public post that mentions it') or diag $res->{body};
is($res->{json}{content}{text}, 'hello @C', 'as our server serves it');
$res = $c_peer->client->request(GET => $path);
isnt($res->{status}, 200, 'which it does not show to anonymous readers');

$c_peer->stop;
$b_peer->stop;

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 200ms;
    tent_delivery_retry 1s 2s;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/posts
--- error_code: 200
--- response_body: []
