# Request operations before background ones (issue #13): the store
# owner runs at most tent_store_background_threads operations of the
# delivery engine at once (1 here) and posts a request's operations to
# the pool at once.  While one post fans out to a few hundred followers
# (the engine's loads, settles, status writes and scans queue for their
# one thread), signed POSTs and reads are answered, the owner counts the
# operations it ran by class in tent_status (store_threads: request,
# background, deferred: background ones that waited for their thread)
# and the debug log marks the engine's operations "background" and the
# request's not.  No timing is asserted: what is checked is which class
# each operation got and that the background ones queued.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text wait_for
                  follower_host notes_delivered follow_many);
use Tent::Client;
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

sub status { Tent::Util::tent_status($c)->{store_threads} }

my ($rx, $U, $notes) = follower_host();
sub delivered { notes_delivered($notes) }

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
ok($s1->{request} >= $s0->{request} + 80,
   "the requests' operations counted as such ($s0->{request} -> "
   . "$s1->{request})");
ok($s1->{background} > $s0->{background} + $N / 100,
   "the engine's as background ($s0->{background} -> $s1->{background})");
ok($s1->{deferred} > $s0->{deferred},
   "background operations waited for their one thread ($s0->{deferred} -> "
   . "$s1->{deferred})");
ok(wait_for(sub { status()->{waiting} == 0 }, 10),
   'and none waits once the fan-out is done');

my $log = error_log_text();

# "store: sent (here) <op> [sync] [background] ..." (workers(1): the
# owner's own operations); the post's compare-and-set is a request's
my @sent = $log =~ /store: sent \(here\) ([a-z]+(?: sync)?(?: background)?) /g;
my $bg = grep { /background$/ } @sent;
my $cas = grep { /^cas/ } @sent;
my $cas_bg = grep { /^cas.*background/ } @sent;
ok($bg > 0, "operations sent as background ($bg of " . @sent . ')');
ok($cas >= 41 && $cas_bg == 0,
   "the posts' compare-and-sets sent as a request's ($cas, $cas_bg "
   . 'background)');
like($log, qr/tent store owner: a background operation waits, 1 running, /,
     'a background operation waited while its one thread was taken');
unlike($log, qr/tent store owner: a background operation waits, [02-9]/,
       'never more than one background operation running');
unlike($log, qr/\[alert\]|exited on signal|no answer within the store/,
       'no alert, no crash, no operation timed out');

$rx->stop;

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_background_threads 1;
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
