# The debug log tells the story (error_log ... debug): one signed POST
# /posts as the owner, with one follower, is followed in the log from its
# route, its principal and its store operations to the delivery of the
# post to the follower (sent, answer, settled).  No key is ever logged.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text);
use Tent::Client;
use Tent::Receiver;
use JSON::PP;
use Time::HiRes qw(sleep time);

master_on();
workers(2);
no_shuffle();
log_level('debug');
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $c = Tent::Client->new;
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';

my ($wapp, $owner) = $c->authorized_app(
    'write_posts,read_posts,read_followers,write_followers',
    post_types => 'all');

my $rx = Tent::Receiver->start;
my $res = $c->request(POST => '/followers',
                      body => { entity => $rx->url, types => ['all'],
                                notification_path => 'notifications/n' });
is($res->{status}, 200, 'a receiver follows us');

# what the log says from here on
my $from = length error_log_text();

$res = $c->request(POST => '/posts', cred => $owner,
                   body => { type => $STATUS, content => { text => 'hi' },
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'the owner posts');
my $pid = $res->{json}{id} // '';

my $log = '';
my $end = time + 15;
while (time < $end) {
    $log = substr(error_log_text(), $from);
    last if $log =~ /tent delivery: settled: post "\Q$pid\E"/;
    sleep 0.1;
}

my @lines = split /\n/, $log;

# the first line at or after $i matching $re (and its connection, if any)
sub find_line {
    my ($i, $re) = @_;
    for (; $i < @lines; $i++) {
        return $i if $lines[$i] =~ $re;
    }
    return undef;
}

my $route = find_line(0, qr{tent route: POST "/posts" is route "/posts", }
                         . qr{entity "http://127\.0\.0\.1:\d+"});
ok(defined $route, 'the route: method, route, entity');
my ($conn) = defined $route ? $lines[$route] =~ /\*(\d+) tent route/ : ();
$conn //= 'none';
my $mine = qr/\*\Q$conn\E /;

my $auth = defined $route
    && find_line($route, qr/$mine.*tent auth: key id "\Q$owner->{access_token}\E"/
                         . qr/ of "http:[^"]+": (cache hit|store read)/);
ok($auth, 'the key id looked up: cache hit or store read');

my $principal = $auth
    && find_line($auth, qr/$mine.*tent auth: principal authorization, key id /
                        . qr/"\Q$owner->{access_token}\E", entity "http:/);
ok($principal, 'then the principal: kind, key id, entity');

my $sent = $principal
    && find_line($principal, qr/$mine.*tent store: sent \((here|to the owner)\)/
                             . qr/ (get|mget|cas|write).*, \d+ bytes$/);
ok($sent, 'a store operation sent for the request');
my ($op) = $sent ? $lines[$sent] =~ /tent store: sent[^"]*? (\w+(?: sync)?) "/
                 : ('none');

my $answered = $sent
    && find_line($sent, qr/$mine.*tent store: answered \Q$op\E .*, \d+ bytes: /
                        . qr/(ok|not found|conflict), \d+ ms$/);
ok($answered, 'and answered: status, elapsed ms');

# the other worker, when this one is not the owner
if ($sent && $lines[$sent] =~ /sent \(to the owner\)/) {
    my $rcv = find_line(0, qr/tent store owner: received from a worker /
                           . qr/\Q$op\E /);
    ok(defined $rcv, 'the owner received it');
    ok(defined $rcv && find_line($rcv, qr/tent store owner: executed for a /
                                       . qr/worker \Q$op\E .*: ok, \d+ ms$/),
       'and executed it');
} else {
    ok(1, 'run by the owner itself');
    ok(1, 'and answered there');
}

my $row = find_line($route // 0,
                    qr/tent delivery: outbox row: post "\Q$pid\E" of "http:/);
ok(defined $row, 'delivery: the outbox row of the post');

my $jobs = defined $row
    && find_line($row, qr/tent delivery: post "\Q$pid\E": 1 jobs made for followers/);
ok($jobs, 'expanded into one job');

my $due = $jobs
    && find_line($jobs, qr/tent delivery: job due: post "\Q$pid\E" .*attempt 0/);
ok($due, 'the job is due');

my $url = qr{http://127\.0\.0\.1:${\ $rx->port}/\S*notifications/n};
my $out = $due
    && find_line($due, qr/tent delivery: job sent: post "\Q$pid\E" to /
                       . qr/$url$/);
ok($out, 'the job is sent, to the follower\'s URL');

my $answer = $out
    && find_line($out, qr/tent delivery: answer from $url: [^,]+, /
                       . qr/status 200$/);
ok($answer, 'the follower\'s answer');

my $settled = $answer
    && find_line($answer, qr/tent delivery: settled: post "\Q$pid\E": /
                          . qr/delivered$/);
ok($settled, 'settled: delivered');

ok(index(error_log_text(), $owner->{mac_key}) < 0,
   'the key itself is never logged');

# for docs/architecture.md: the story, as the test saw it
if ($ENV{TENT_DEBUG_LOG_EXCERPT}) {
    for my $i (0 .. $#lines) {
        print STDERR "$lines[$i]\n" if $lines[$i] =~ /\btent (route|auth|store|delivery)/;
    }
}

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 200ms;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/posts
--- error_code: 200
--- response_body: []
