# ActivityPub delivery with tent_activitypub off (docs/activitypub.md#
# delivery): followers that came through the inbox while it was on keep
# their records, but with no actor and no key served no inbox could
# verify a request: a post is sent to none of them, and its delivery
# status says "ActivityPub is off" (no dead letter, no retry), while a
# Tent follower still gets it.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx);
use Tent::Client;
use Tent::Receiver;
use Tent::APFollower;
use JSON::PP;
use Time::HiRes qw(sleep time);

master_on();
workers(1);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $ENTITY = 'http://127.0.0.1:' . ($ENV{TEST_NGINX_SERVER_PORT} || 1984);
my $c = Tent::Client->new;
my (undef, $owner) = $c->authorized_app(
    'write_posts,read_posts,read_followers,read_followings',
    post_types => 'all');

my $rx = Tent::Receiver->start(
    rules => [{ method => 'POST', path => '/inbox$',
                action => { status => 202, body => '' } }]);
my $BOB = $rx->url . '/users/bob';
my $tent = Tent::Receiver->start;
my $res = $c->request(POST => "/followers",
                   body => { entity => $tent->url, types => ['all'],
                             notification_path => 'notifications/n' });
is($res->{status}, 200, 'a Tent follower') or diag $res->{body};

Tent::APFollower::install($ENTITY, [$BOB, "$BOB/inbox"]);

my $p = $c->post_ok($owner, {
    type => 'https://tent.io/types/post/status/v0.1.0',
    content => { text => 'not for the fediverse now' },
    permissions => { public => JSON::PP::true } });

my (%d, $end);
$end = time + 20;
while (time < $end) {
    %d = %{ $c->deliveries($owner, $p->{id}) };
    last if ($d{$BOB}{state} // '') eq 'delivered'
            && ($d{$tent->url}{state} // '') eq 'delivered';
    sleep 0.2;
}
is($d{$BOB}{state}, 'delivered', 'the actor\'s job settled');
is($d{$BOB}{last_error}, 'ActivityPub is off', 'saying why nothing went');
is($d{$BOB}{attempts}, 1, 'no retry');
is($d{$tent->url}{state}, 'delivered', 'the Tent follower got it');
is(scalar $rx->requests(method => 'POST'), 0, 'no request to the inbox');

$rx->stop;
$tent->stop;

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
