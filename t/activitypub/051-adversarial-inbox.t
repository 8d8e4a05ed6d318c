# ActivityPub delivery, adversarial (issue #29, docs/activitypub.md#
# delivery).  Once the inbox exists, a follower's inbox URL is whatever
# a remote actor says: the transport must treat it as the SSRF guard
# treats any URL.  Followers whose inbox is at a refused address
# (169.254.169.254, 10.x, ::ffff:10.x, 0.0.0.0) or not an http(s) URL get
# a dead letter at once (403 or never sent), retried never, while a
# follower at an allowed address gets every post.  A private post naming
# two actors reaches each with itself alone in "to": no recipient learns
# of the other.  Inside a network namespace with loopback only
# (Tent::Netns): a broken guard cannot reach anything.

use Tent::Netns qw(reexec_in_netns);
BEGIN { reexec_in_netns() }

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text);
use Tent::Client;
use Tent::Receiver;
use Tent::APFollower;
use JSON::PP;
use Time::HiRes qw(sleep time);

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $ENTITY = 'http://127.0.0.1:' . ($ENV{TEST_NGINX_SERVER_PORT} || 1984);
my $API = "$ENTITY/tent";
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $c = Tent::Client->new;
my (undef, $owner) = $c->authorized_app(
    'write_posts,read_posts,read_followers,read_followings',
    post_types => 'all');

my $res = $c->request(GET => '//',
                      headers => { Accept => 'application/activity+json' });
is($res->{status}, 200, 'the actor, its key made') or diag $res->{body};

my $rx = Tent::Receiver->start(
    rules => [{ method => 'POST', path => '/inbox$',
                action => { status => 202, body => '' } }]);
my $GOOD = $rx->url . '/users/good';
my $EVE = $rx->url . '/users/eve';

my %bad = (
    'http://169.254.169.254/users/meta' => 'http://169.254.169.254/inbox',
    'http://10.1.2.3/users/ten' => 'http://10.1.2.3/inbox',
    'http://[::ffff:10.1.2.3]/users/mapped' =>
        'http://[::ffff:10.1.2.3]/inbox',
    'http://0.0.0.0/users/zero' => 'http://0.0.0.0:' . $rx->port . '/inbox',
    'http://127.0.0.1/users/file' => 'file:///etc/passwd',
    'http://127.0.0.1/users/gopher' => 'gopher://127.0.0.1:70/inbox',
);

Tent::APFollower::install($ENTITY, [$GOOD, "$GOOD/inbox"],
    [$EVE, "$EVE/inbox"], map { [$_, $bad{$_}] } sort keys %bad);

sub deliveries { $c->deliveries($owner, $_[0]) }

my $p = $c->post_ok($owner, { type => $STATUS, content => { text => 'hi' },
                              permissions => { public => JSON::PP::true } });

# every recipient settled for good
my $d;
my $end = time + 30;
while (time < $end) {
    $d = deliveries($p->{id});
    last if keys %$d == 2 + keys %bad
            && !grep { $_->{state} =~ /^(pending|retrying)$/ } values %$d;
    sleep 0.2;
}

is($d->{$GOOD}{state}, 'delivered', 'an allowed inbox: delivered');
for my $actor (sort keys %bad) {
    is($d->{$actor}{state}, 'failed',
       "inbox $bad{$actor}: a dead letter at once");
    is($d->{$actor}{attempts}, 1, "... after one attempt, never retried");
}
is($d->{'http://169.254.169.254/users/meta'}{last_status}, 403,
   'the guard\'s refusal: 403');
is($d->{'http://10.1.2.3/users/ten'}{last_status}, 403, '10.x: 403');

is(scalar $rx->requests(method => 'POST', path => qr{^/inbox$}), 0,
   '0.0.0.0 did not reach the receiver on its port');
like(error_log_text(), qr/inbox http:\/\/169\.254\.169\.254\/inbox: .*not retried/,
     'the refusal logged');

# a private post naming two actors: each sees itself alone
my $p2 = $c->post_ok($owner, {
    type => $STATUS, content => { text => 'for two' },
    permissions => { public => JSON::PP::false,
                     entities => { $GOOD => JSON::PP::true,
                                   $EVE => JSON::PP::true } } });
my $id = "$API/posts/$p2->{id}#create-1";
my %got;
$end = time + 20;
while (time < $end && keys %got < 2) {
    for ($rx->requests(method => 'POST', path => qr{/inbox$})) {
        my $a = eval { decode_json($_->{body}) } or next;
        $got{$_->{path}} = $_ if ($a->{id} // '') eq $id;
    }
    sleep 0.1;
}
for my $who ([good => $GOOD, $EVE], [eve => $EVE, $GOOD]) {
    my ($name, $me, $other) = @$who;
    my $r = $got{"/users/$name/inbox"};
    ok($r, "$name got the private post");
    my $a = eval { decode_json($r->{body}) } || {};
    is_deeply($a->{to}, [$me], "$name: to itself alone");
    unlike($r->{body} // '', qr/\Q$other\E/, "$name: the other not named");
}

$rx->stop;

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
    tent_activitypub on;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
    location = / {
        tent_entity_page;
    }
--- request
GET /tent/posts
--- error_code: 200
--- response_body: []
