# Our Update(Person)'s bound (issue #29, docs/activitypub.md "Update(Person)
# on a profile change"): one profile PUT queues at most 256 activities,
# one per distinct inbox, in its one write.  310 ActivityPub followers
# written into the stopped nginx's store (Tent::APFollower): 10 sharing
# one shared inbox (one inbox among the 256), then 300 with inboxes of
# their own.  The PUT answers 200; exactly 256 inboxes get the Update,
# the shared one once and the first 255 others; the rest none, and the
# error log says how many were told; once they are sent no activity,
# job or outbox row is left.  A bio of 30,000 bytes: the write's 4 MB
# bound sends to fewer inboxes, and the log says how many.

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
my $BASIC = 'https://tent.io/types/info/basic/v0.1.0';
my $WHO = qr/Update\(Person\) of "\Q$ENTITY\E": /;      # its log lines
my $c = Tent::Client->new;
my (undef, $writer) = $c->authorized_app('write_profile',
                                         info_types => $BASIC);

my $res = $c->request(GET => '//',
                      headers => { Accept => 'application/activity+json' });
is($res->{status}, 200, 'the actor, its key made') or diag $res->{body};

my $rx = Tent::Receiver->start(
    rules => [{ method => 'POST', path => '^/(shared|u\d+/inbox)$',
                action => { status => 202, body => '' } }]);
my $RX = $rx->url;

my $db = Tent::Util::servroot() . '/tent_temp/db';
stop_last_nginx();
Tent::APFollower::put($db, $ENTITY, actor => "$RX/s$_",
                      inbox => "$RX/s$_/inbox", shared_inbox => "$RX/shared")
    for 1 .. 10;
Tent::APFollower::put($db, $ENTITY, actor => "$RX/u$_",
                      inbox => "$RX/u$_/inbox")
    for 1 .. 300;
start_last_nginx();

my $from = length Tent::Util::error_log_text();
$res = $c->request(PUT => '/profile/' . Tent::Client::uri_escape($BASIC),
                   cred => $writer,
                   body => { name => 'Many',
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a PUT of the basic section, 310 followers')
    or diag $res->{body};

sub posts { $rx->requests(method => 'POST') }

my $end = time + 90;
sleep 0.2 while time < $end && posts() < 256;
my %by = map { $_->{path} => 1 } posts();
is(scalar(posts()), 256, '256 requests') or diag scalar(posts());
ok($by{'/shared'}, 'one at the shared inbox');
is(scalar(grep { m{^/shared$} } map { $_->{path} } posts()), 1,
   '... once, for its 10 followers');
is(scalar(grep { m{^/s\d+/inbox$} } keys %by), 0,
   'none at their own inboxes');
my @own = sort { $a <=> $b } map { m{^/u(\d+)/inbox$} ? $1 : () } keys %by;
is_deeply(\@own, [1 .. 255], 'the first 255 others\' inboxes');
my ($one) = posts();
my $a = eval { decode_json($one->{body} // '') } || {};
is($a->{type}, 'Update', 'an Update');
is($a->{object}{name}, 'Many', '... of the actor with the new name');
like(Tent::Util::error_log_since($from),
     qr/${WHO}256 inboxes after \d+ followers, the ones past them not told/,
     'the error log says where it stopped');

# all sent: nothing left behind, nothing more to come
$end = time + 30;
my @left;
while (1) {
    stop_last_nginx();
    @left = grep { /^\Q$ENTITY\E\0[wjo]/ }
            map { chomp; pack('H*', (split /\t/)[0]) }
            Tent::Util::ldb_rows($db);
    start_last_nginx();
    last if !@left || time > $end;
    sleep 1;
}
is(scalar @left, 0, 'no activity, job or outbox row left');
is(scalar(posts()), 256, 'and no request more');

# ---- a long bio: the write's bytes bounded, fewer inboxes

$rx->clear;
$from = length Tent::Util::error_log_text();
$res = $c->request(PUT => '/profile/' . Tent::Client::uri_escape($BASIC),
                   cred => $writer,
                   body => { name => 'Long', bio => 'x' x 30000,
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a PUT with a bio of 30,000 bytes')
    or diag $res->{body};
my ($n) = Tent::Util::error_log_since($from)
          =~ /${WHO}\d+ bytes, sent to (\d+) of 256 inboxes \(bound 4194304/;
ok($n && $n > 100 && $n < 256, 'the log: sent to fewer inboxes')
    or diag $n;
$end = time + 90;
sleep 0.2 while time < $end && posts() < ($n || 256);
is(scalar(posts()), $n, '... that many requests');
($one) = posts();
$a = eval { decode_json($one->{body} // '') } || {};
is(length($a->{object}{summary} // ''), 30000, '... with the whole bio');
cmp_ok($n * length($one->{body} // ''), '<=', 4 * 1024 * 1024,
       '... at most 4 MB in all');

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
