# Per-host fairness and the breaker (issue 13, part 2): followers on
# four hosts.  Host A refuses connections (its receiver stopped): after
# tent_delivery_breaker's failures it is paused, logged once at warn, and
# only probed, so it is sent to far less often than a retry schedule
# alone would, while B gets every post at once; tent_status counts the
# breaker open.  Then A comes up on the same port: the probe closes the
# breaker, logged once, and A gets every post (none lost).  Host S
# hangs: it never has more than tent_delivery_host_concurrency requests
# open while the other hosts get every post, E's behind more of S's jobs
# than a scan's room.  A follower P whose three servers are on one host
# that resets them counts one failure an attempt, not three.  The
# attempts to A are the
# engine's "job sent" debug lines (a refused connection reaches no
# receiver to count it).

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text
                  wait_for_log wait_for);
use Tent::Client;
use Tent::Receiver;
use JSON::PP;
use Time::HiRes qw(sleep time);

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $c = Tent::Client->new;
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $ESSAY = 'https://tent.io/types/post/essay/v0.1.0';
my $CAP = 2;        # tent_delivery_host_concurrency below

my ($wapp, $owner) = $c->authorized_app(
    'write_posts,read_posts,read_followers,write_followers',
    post_types => 'all');

sub follow {
    my ($rx, @types) = @_;
    my $res = $c->request(POST => '/followers',
                          body => { entity => $rx->url,
                                    types => @types ? \@types : ['all'],
                                    notification_path => 'notifications/n' });
    die "follow: $res->{status} $res->{body}" unless $res->{status} == 200;
    return $res->{json};
}

sub post {
    my ($text, $type) = @_;
    my $body = Tent::Client::status_body($text);
    $body->{type} = $type if $type;
    $body->{content}{body} = $text;
    return $c->post_ok($owner, $body)->{id};
}

sub got {
    my ($rx) = @_;
    my %ids;
    for my $r ($rx->requests(method => 'POST', path => qr{/notifications/n$})) {
        my $id = eval { decode_json($r->{body})->{id} } // next;
        $ids{$id}++;
    }
    return \%ids;
}

# waits until the receiver has every one of the posts
sub wait_all {
    my ($rx, $ids, $secs) = @_;
    my $end = time + ($secs || 20);
    while (time < $end) {
        my $g = got($rx);
        return 1 unless grep { !$g->{$_} } @$ids;
        sleep 0.1;
    }
    return 0;
}

sub status { Tent::Util::tent_status($c) }

my $A = Tent::Receiver->start;
my $B = Tent::Receiver->start;
my $S = Tent::Receiver->start;
my $E = Tent::Receiver->start;
follow($_) for $A, $B, $S;
follow($E, $ESSAY);

my $pa = $A->port;
my $host_a = "http://127.0.0.1:$pa";
my $sent_a = qr{tent delivery: job sent: post "[^"]+" to \Q$host_a\E/};

# ---- A refuses connections

$A->stop;

is(status()->{deliveries}{breakers_open}, 0, 'no breaker open at first');

my @first = map { post("while A is down $_") } 1 .. 6;

ok(wait_all($B, \@first), 'B gets every post while A refuses connections');
ok(wait_for_log(qr/\[warn\].*tent delivery: host \Q$host_a\E paused for 1s after 3 failures/, 20),
   'A is paused after 3 failures, logged at warn');
ok(wait_for(sub { status()->{deliveries}{breakers_open} == 1 }),
   'tent_status counts one breaker open');
like($c->request(GET => '//status?format=prometheus')->{body},
     qr/^# TYPE tent_deliveries_breakers_open gauge\ntent_deliveries_breakers_open 1$/m,
     'a gauge in the Prometheus format too');

# some 5 s of retries: a retry every 0.25-2 s per job would be some 25
# attempts for 6 jobs; paused and probed (1s, 2s, 4s), a handful
sleep 5;
my $log = error_log_text();
my $attempts = () = $log =~ /$sent_a/g;
ok($attempts >= 3, "A was tried ($attempts attempts)");
ok($attempts <= 12, "but paused: $attempts attempts, not one per retry");
my $opened = () = $log =~ /host \Q$host_a\E paused for/g;
is($opened, 1, 'the pause is logged once');
ok($log =~ /host \Q$host_a\E: probe failed, paused for 2s/,
   'a failed probe pauses it for twice as long');
like($log, qr/tent delivery: post "[^"]+": host paused: the job waits until \d+, no attempt/,
     'its jobs are put back without an attempt');
is(scalar keys %{ got($B) }, scalar @first, 'B got each post')
    or diag(join " ", keys %{ got($B) });

# ---- A comes up: the probe closes the breaker, nothing is lost

my $A2 = Tent::Receiver->start(port => $pa);
ok(wait_all($A2, \@first, 30), 'A gets every post once it is up');
ok(wait_for_log(qr/\[warn\].*tent delivery: host \Q$host_a\E: probe succeeded, resumed/),
   'the probe closes the breaker, logged at warn');
ok(wait_for(sub { status()->{deliveries}{breakers_open} == 0 }),
   'tent_status: no breaker open again');
$log = error_log_text();
is(scalar(() = $log =~ /host \Q$host_a\E: probe succeeded/g), 1,
   'the resumption is logged once');

# ---- S hangs: at most the host's cap in flight

$S->clear;
$S->rules([{ method => 'POST', path => 'notifications', action => 'hang' }]);

# S's jobs come first in the queue, more of them than the scan's room:
# the scan looks past those that wait, to the essay for E
my @second = map { post("while S hangs $_") } 1 .. 8;
my $essay = post('for E', $ESSAY);

ok(wait_all($E, [$essay]), 'E gets its post behind the jobs S holds up');
ok(wait_all($B, [@second, $essay]), 'B gets every post while S hangs');
ok(wait_all($A2, [@second, $essay]), 'and so does A');
$S->wait_requests(count => $CAP, timeout => 10, method => 'POST',
                  path => qr{/notifications/n$});
sleep 1;
my @open = $S->requests(method => 'POST', path => qr{/notifications/n$});
ok(@open >= 1, 'S is sent to');
ok(@open <= $CAP, 'but never has more than its cap in flight: '
                  . scalar(@open) . " of $CAP");
like(error_log_text(), qr/host http:\/\/127\.0\.0\.1:\d+ full \(2 in flight\): left for a later pass/,
     'the other jobs to S wait for a later pass');

# ---- one follower cannot open the breaker of a host others share

# P lists three servers on one host, each a path that resets the
# connection (a failure of the fetch, so the next server is tried): one
# post's attempt fails three times on that host, but counts once; the
# host is paused only after three attempts (3 failures), as for a host
# that is down, not at P's first
my $tmp = Tent::Receiver->start;
my $ph = $tmp->port;
$tmp->stop;
my $hurl = "http://127.0.0.1:$ph";
my $P = Tent::Receiver->start(port => $ph, profile => {
    'https://tent.io/types/info/core/v0.1.0' => {
    entity => $hurl, licenses => [],
    servers => [ map { "$hurl/x$_" } 1 .. 3 ] } });
$P->rules([{ method => 'GET', path => 'notifications',
             action => 'echo_challenge' },
           { method => 'POST', path => 'notifications',
             action => 'reset' }]);
follow($P);
my $pp = post('to P');
ok(wait_for_log(qr/tent delivery: host \Q$hurl\E paused for/, 30),
   'the host of P\'s servers is paused in the end');
my ($before) = error_log_text() =~ /\A(.*?)tent delivery: host \Q$hurl\E paused for/s;
like($before, qr/post "\Q$pp\E": attempt 2, to server/,
     'only after three attempts of the post, not its first one');
my $sent_p = () = $before =~ m{job sent: post "\Q$pp\E" to \Q$hurl\E/x}g;
ok($sent_p >= 7, "each attempt tried P's three servers ($sent_p requests)");

unlike(error_log_text(), qr/\[alert\]|exited on signal/, 'no alert, no crash');

$_->stop for $A2, $B, $S, $E, $P;

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 20s;
    tent_delivery_interval 200ms;
    tent_delivery_retry 500ms 4s;
    tent_delivery_attempts 100;
    tent_delivery_concurrency 4;
    tent_delivery_host_concurrency 2;
    tent_delivery_breaker 3 1s;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize { tent_owner "the owner"; }
    location = /status { tent_status; }
--- request
GET /tent/posts
--- error_code: 200
--- response_body: []
