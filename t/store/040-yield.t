# The engine yields to requests (issue #13): while a request's operation
# is in flight in the store owner, the delivery engine's background
# operations wait (tent_store_background_threads is 2 here) though a
# thread of theirs is free, and start when the request's last operation
# has been answered (or 10 ms after the last one started).  While one
# post fans out to a few hundred followers, signed POSTs and reads go
# on; tent_status counts the background operations that waited while a
# request's ran (store_threads.yielded) and the debug log says so, with
# a background thread free at the time.  No timing is asserted: which
# operations waited depends on the machine; that some did, each with a
# request's in flight, is what is checked.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text wait_for
                  follower_host_config follow_many);
use Tent::Client;
use Tent::Peer;
use JSON::PP;
use Time::HiRes qw(sleep time);

master_on();
workers(1);
log_level('debug');
no_shuffle();
run_tests();

if ($ENV{TEST_NGINX_USE_VALGRIND}) {
    pass('the many-followers part is skipped under valgrind');
    exit 0;
}

start_last_nginx();
END { stop_last_nginx() }

my $N = 300;
my $c = Tent::Client->new;
my (undef, $owner) = $c->authorized_app('write_posts,read_posts',
                                       post_types => 'all');
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';

sub status {
    my $res = $c->request(GET => '//status');
    die "status: $res->{status} $res->{body}" unless $res->{status} == 200;
    return decode_json($res->{body})->{store_threads};
}

my $rx = Tent::Peer->start(worker_processes => 1,
                           http_config => <<HTTP,
    tent_store  \$SERVROOT/tent_temp;
    log_format  notes  '\$request_method \$uri \$status';
HTTP
                           server_config => follower_host_config(
                               log => 'notes'));
my $U = $rx->url;
my $notes = $rx->servroot . '/logs/notes.log';

sub delivered {
    open(my $fh, '<', $notes) or return 0;
    return scalar grep { m{^POST /f\d+/tent/notifications/n 200} } <$fh>;
}

my ($bad) = follow_many($c, $U, [map { "f$_" } 1 .. $N]);
is($bad, 0, "$N entities follow");

ok(wait_for(sub { status()->{waiting} == 0 }, 20),
   'no background operation waits once the follows are done');
my $s0 = status();

my $res = $c->request(POST => '/posts', cred => $owner,
                      body => { type => $STATUS,
                                content => { text => 'to all of you' },
                                permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a public post to every follower');

# while the fan-out runs: private posts (no recipient) and reads, each
# answered, one after the other
my ($answered, $sent, $during) = (0, 0, 0);
while ($sent < 40) {
    $during++ if delivered() < $N;
    $res = $c->request(POST => '/posts', cred => $owner,
                       body => { type => $STATUS,
                                 content => { text => "meanwhile $sent" },
                                 permissions => { public => JSON::PP::false } });
    $answered++ if $res->{status} == 200;
    diag("POST: $res->{status} $res->{body}") if $res->{status} != 200;
    $res = $c->request(GET => "/posts/$res->{json}{id}", cred => $owner)
        if $res->{json} && $res->{json}{id};
    $answered++ if $res->{status} == 200;
    diag("GET: $res->{status} $res->{body}") if $res->{status} != 200;
    $sent++;
}
is($answered, 80, 'every post and read answered while the fan-out ran');
ok($during > 0, "some of them before the fan-out ended ($during)");

ok(wait_for(sub { delivered() >= $N }, 90), "all $N followers got the post")
    or diag(delivered() . " of $N");

my $s1 = status();
ok(defined $s1->{yielded} && defined $s0->{yielded},
   'tent_status counts the background operations that yielded');
ok(($s1->{yielded} // 0) > ($s0->{yielded} // 0),
   "background operations waited while a request's ran ("
   . ($s0->{yielded} // 'none') . ' -> ' . ($s1->{yielded} // 'none') . ')');
ok(wait_for(sub { status()->{waiting} == 0 }, 10),
   'and none waits once the fan-out is done');

my $log = error_log_text();
my $yields = qr/tent store owner: a background operation yields to /;
my @y = $log =~ /$yields(\d+) of a request's, (\d+) running/g;
ok(@y > 0, 'the debug log says when a background operation yields (' . @y / 2
   . ')');
my $beside = 0;
for (my $i = 0; $i < @y; $i += 2) {
    $beside++ if $y[$i] < 1 || $y[$i + 1] > 1;
}
is($beside, 0, "each time with a request's in flight and a thread of the "
   . 'two free');
unlike($log, qr/\[alert\]|exited on signal|no answer within the store/,
       'no alert, no crash, no operation timed out');

$rx->stop;

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_background_threads 2;
    tent_outbound_allow 127.0.0.0/8;
    tent_delivery_interval 100ms;
    tent_delivery_concurrency 32;
    tent_delivery_host_concurrency 32;
    tent_delivery_breaker off;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
    location = /status {
        tent_status;
    }
--- request
GET /tent/followers/count
--- error_code: 200
--- response_body: 0
