# A kill -9 of worker 0 (the store owner, which runs the fan-out) in the
# middle of public posts' fan-outs to ActivityPub followers on shared
# inboxes (issue #29 item 4, docs/activitypub.md#shared-inboxes): 210
# followers, on three shared inboxes in turn, so each post's fan-out is
# three steps (100, 100, 10) that each meet every inbox.  The inboxes
# answer 503 while the posts fan out (every job stays in the queue,
# retried), worker 0 is killed once the first steps are written and
# before every fan-out is done; the next store owner runs the cut
# fan-outs again from their first follower.  Then the inboxes answer
# 202: each post reaches each shared inbox exactly once (a second job
# made for an inbox would be a second 202), none is missed, and the
# status route lists one row per inbox, delivered.  Where the kill lands
# is timing: how many fan-outs it cut is a diag, not an assertion (one
# run under load cut none); 056 puts an outbox row back, which cuts a
# fan-out for sure.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text wait_for
                  master_pid);
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
my ($N, $K) = (210, 8);
my $c = Tent::Client->new;
my (undef, $owner) = $c->authorized_app(
    'write_posts,read_posts,read_followers,read_followings',
    post_types => 'all');

my $res = $c->request(GET => '//',
                      headers => { Accept => 'application/activity+json' });
is($res->{status}, 200, 'the actor (its key made)');

# rule 0 answers 503; once switched, rule 1 answers 202
my $rx = Tent::Receiver->start(
    rules => [{ method => 'POST', path => '^/',
                action => { status => 503, body => 'later' } }]);
my $PEER = $rx->url;
my @SHARED = map { "$PEER/s$_" } 1 .. 3;

my $db = Tent::Util::servroot() . '/tent_temp/db';
stop_last_nginx();
for my $i (1 .. $N) {
    Tent::APFollower::put($db, $ENTITY, actor => "$PEER/users/u$i",
                          inbox => "$PEER/users/u$i/inbox",
                          shared_inbox => $SHARED[$i % 3]);
}
start_last_nginx();

sub worker0 {
    my $m = master_pid() or return;
    for my $pid (map { s/\s+//gr } `ps -o pid= --ppid $m`) {
        next unless $pid =~ /^\d+$/;
        opendir my $d, "/proc/$pid/fd" or next;
        for (readdir $d) {
            my $t = readlink("/proc/$pid/fd/$_") // next;
            return $pid if $t =~ m{/tent_temp/.*LOCK$};
        }
    }
    return;
}

my $w0 = worker0();
ok($w0, 'worker 0 holds the store');

my @ids;
for (1 .. $K) {
    push @ids, $c->post_ok($owner, {
        type => $STATUS, content => { text => "post $_" },
        permissions => { public => JSON::PP::true } })->{id};
}

# killed once a step's jobs are written, before every fan-out is done
my $steps = qr/: \d+ shared inbox jobs made for \d+ followers/;
my $done = qr/: fan-out done, the outbox row goes/;
{
    # read as it grows (a debug log read whole each time is too slow)
    open my $fh, '<', Tent::Util::servroot() . '/logs/error.log' or die;
    my ($buf, $end) = ('', time + 20);
    while (time < $end) {
        my $n = sysread($fh, $buf, 1 << 20, length $buf);
        last if $buf =~ /$steps/;
        sleep 0.002 unless $n;
    }
    kill 'KILL', $w0;
}
my $at = length error_log_text();
my $before = substr(error_log_text(), 0, $at);
my $ndone = () = $before =~ /$done/g;
diag("worker 0 killed with $ndone of $K fan-outs done");
ok(wait_for(sub { my $w = worker0(); $w && $w != $w0 }, 20),
   'a new worker 0');

# the cut fan-outs run again to their end
ok(wait_for(sub {
       my $after = substr(error_log_text(), $at);
       my %d = map { $_ => 1 } $after =~ /post "([^"]+)"$done/g;
       my %b = map { $_ => 1 } $before =~ /post "([^"]+)"$done/g;
       !grep { !$d{$_} && !$b{$_} } @ids;
   }, 60), 'every fan-out done, the cut ones after the kill');
my $after = substr(error_log_text(), $at);
my @again = grep { my $id = $_;
                   $before =~ /post "\Q$id\E"$steps/
                   && $after =~ /post "\Q$id\E"$steps/ } @ids;
diag(scalar(@again) . ' fan-outs cut by the kill, run again');

# the inboxes take them now: one 202 per post and inbox
$rx->rules([{ method => 'GET', path => '^/never$',
              action => { status => 404, body => '' } },
            { method => 'POST', path => '^/',
              action => { status => 202, body => '' } }]);

sub deliveries {
    my ($pid) = @_;
    my $r = $c->request(GET => "/posts/$pid/deliveries", cred => $owner);
    return $r->{json}{deliveries} || [];
}

ok(wait_for(sub {
       !grep { my $d = deliveries($_);
               @$d != 3 || grep { $_->{state} ne 'delivered' } @$d } @ids;
   }, 90), 'every post delivered to its 3 shared inboxes');

my %n;
for ($rx->requests(method => 'POST')) {
    next unless defined $_->{rule} && $_->{rule} == 1;
    my $j = eval { decode_json($_->{body}) } || {};
    $n{ $j->{id} // '' }{ $_->{path} }++;
}
my $bad = 0;
for my $id (@ids) {
    my $got = $n{"$API/posts/$id#create-1"} || {};
    $bad++ unless join(',', map { "$_=" . ($got->{$_} // 0) } sort keys %$got)
                  eq '/s1=1,/s2=1,/s3=1';
}
is($bad, 0, "each of $K posts reached each shared inbox exactly once")
    or diag encode_json(\%n);
is(scalar(grep { m{^/users/} } map { keys %$_ } values %n), 0,
   'and no follower\'s own inbox');
my $shared = 0;
for my $id (@ids) {
    $shared += grep { $_->{shared_inbox} } @{ deliveries($id) };
}
is($shared, 3 * $K, 'the status route: one row per shared inbox');

$rx->stop;

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 200ms;
    tent_delivery_retry 1s 2s;
    tent_delivery_attempts 100;
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
