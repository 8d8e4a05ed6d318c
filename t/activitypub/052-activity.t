# Activities that are no post (issue #29, AP.md item 5):
# ngx_http_tent_delivery_activity() queues one ("w" row, a job of the
# "activity" kind and a wake-up outbox row, in the caller's write), the
# ActivityPub transport sends it signed, retries it, and removes its row
# once it settled.  Its caller here: an app removing an ActivityPub
# follower (DELETE /followers/:id: it was a 500 before, the record has
# no credential) tells it with a Reject of its Follow.  An inbox that
# answers 503 once gets it on the retry; one that answers 410 never
# again; no "w", "j" or "o" row is left behind.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx);
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
my $c = Tent::Client->new;
my (undef, $app) = $c->authorized_app('read_followers,write_followers');

my $res = $c->request(GET => '//',
                      headers => { Accept => 'application/activity+json' });
is($res->{status}, 200, 'the actor, its key made') or diag $res->{body};
my $pem = $res->{json}{publicKey}{publicKeyPem} // '';

my $rx = Tent::Receiver->start(
    rules => [{ method => 'POST', path => '^/users/bob/inbox$', times => 1,
                action => { status => 503, body => 'later' } },
              { method => 'POST', path => '^/users/bob/inbox$',
                action => { status => 202, body => '' } },
              { method => 'POST', path => '^/users/carol/inbox$',
                action => { status => 410, body => 'gone' } }]);
my $BOB = $rx->url . '/users/bob';
my $CAROL = $rx->url . '/users/carol';

my ($bob, $carol) = Tent::APFollower::install($ENTITY,
    [$BOB, "$BOB/inbox"], [$CAROL, "$CAROL/inbox"]);

for ([$bob, 'bob'], [$carol, 'carol']) {
    $res = $c->request(DELETE => "/followers/$_->[0]", cred => $app);
    is($res->{status}, 200, "$_->[1] removed by the app") or diag $res->{body};
}
$res = $c->request(GET => '/followers', cred => $app);
is_deeply($res->{json}, [], 'no follower left');

sub inbox { $rx->requests(method => 'POST', path => qr{^/users/$_[0]/inbox$}) }

my $end = time + 20;
sleep 0.1 while time < $end && (inbox('bob') < 2 || inbox('carol') < 1);
my @bob = inbox('bob');
is(scalar @bob, 2, 'bob\'s inbox: a 503, then the Reject again');
my $a = eval { decode_json($bob[-1]{body} // '') } || {};
is($a->{type}, 'Reject', 'a Reject');
is($a->{actor}, $ENTITY, 'by the entity');
like($a->{id} // '', qr/^\Q$ENTITY\E#reject-[0-9a-f]+$/, 'its id');
is_deeply($a->{object}, { id => "$BOB#follow-$bob", type => 'Follow',
                          actor => $BOB, object => $ENTITY },
          'of bob\'s Follow, embedded');
is($bob[0]{body}, $bob[-1]{body}, 'the retry sent the same activity');
my @bad = $bob[-1] ? Tent::APFollower::check($bob[-1], $pem,
                                             "$ENTITY#main-key")
                   : ('no request');
ok(!@bad, 'signed, its Digest and Date right') or diag join ', ', @bad;
is($bob[-1]{headers}{'content-type'}, 'application/activity+json',
   'application/activity+json');

sleep 2.5;    # two retry delays: a retried 410 would come again
is(scalar(inbox('carol')), 1, 'carol\'s 410: sent once, never again');
is(scalar(inbox('bob')), 2, 'bob\'s 202: not again');

stop_last_nginx();
my @left = grep { /^\Q$ENTITY\E\0[wjo]/ }
           map { chomp; pack('H*', (split /\t/)[0]) }
           Tent::Util::ldb_rows(Tent::Util::servroot() . "/tent_temp/db");
is_deeply(\@left, [], 'no activity, job or outbox row left');
start_last_nginx();

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
