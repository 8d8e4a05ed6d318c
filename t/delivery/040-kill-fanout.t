# A kill -9 of worker 0 (the store owner, which runs the delivery engine)
# in the middle of a 2,000-recipient fan-out over keep-alive connections
# loses nothing (issue 13, part 1).  A second nginx plays 2,000 Tent
# entities (http://127.0.0.1:P/f<i>) that follow the entity for real and
# logs every notification with its connection and the connection's
# request number; one public post goes to all of them, worker 0 is
# killed while it goes, the master starts a new one, and every follower
# must get the post at least once (the queue is at-least-once).

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text
                  master_pid wait_for follower_host follow_many);
use Tent::Client;
use Tent::Peer;
use JSON::PP;
use Time::HiRes qw(sleep time);

master_on();
workers(2);
no_shuffle();
run_tests();

# under valgrind 2,000 follows take too long: the blocks above still run
if ($ENV{TEST_NGINX_USE_VALGRIND}) {
    pass('the fan-out part is skipped under valgrind');
    exit 0;
}

start_last_nginx();
END { stop_last_nginx() }

my $N = 2000;
my $c = Tent::Client->new;
my ($app, $owner) = $c->authorized_app(
    'write_posts,read_followers,write_followers', post_types => 'all');

my ($many, $U, $notes) = follower_host();

my ($bad) = follow_many($c, $U, [map { "f$_" } 1 .. $N]);
is($bad, 0, "$N entities follow");

# worker 0: the worker that holds the store's LevelDB lock
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

sub posts_by_entity {
    my %got;
    open my $fh, '<', $notes or return \%got;
    while (<$fh>) {
        $got{$1}++ if m{ POST /(f\d+)/tent/notifications/n 200$};
    }
    return \%got;
}

my $w0 = worker0();
ok($w0, "worker 0 found ($w0)");

my $res = $c->request(POST => '/posts', cred => $owner,
                      body => { type => 'https://tent.io/types/post/status/v0.1.0',
                                content => { text => 'to all 2000' },
                                permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a public post to 2,000 followers');

# kill it once some have been delivered, long before all
my $at_kill = 0;
my $end = time + 60;
while (time < $end) {
    $at_kill = scalar keys %{ posts_by_entity() };
    last if $at_kill >= 100;
    sleep 0.01;
}
kill 'KILL', $w0;
ok($at_kill >= 100 && $at_kill < $N,
   "worker 0 killed in the middle of the fan-out ($at_kill of $N delivered)");
ok(wait_for(sub { my $w = worker0(); $w && $w != $w0 }, 20),
   'the master started a new worker 0');

my $got = {};
wait_for(sub { $got = posts_by_entity(); keys %$got >= $N }, 120);
is(scalar(grep { $got->{"f$_"} } 1 .. $N), $N,
   "every one of the $N followers got the post");

# over kept connections: most requests were not their connection's first
open my $fh, '<', $notes or die "$notes: $!";
my ($posts, $kept, %conns) = (0, 0);
while (<$fh>) {
    my ($conn, $nreq, $method) = split ' ';
    next unless $method eq 'POST';
    $posts++;
    $kept++ if $nreq > 1;
    $conns{$conn}++;
}
ok($kept >= $posts * 0.9,
   "the notifications went over kept connections ($kept of $posts on "
   . scalar(keys %conns) . ' connections)');

my @alerts = grep { /\[alert\]/ && !/exited on signal 9/ }
             split /\n/, error_log_text();
is(scalar @alerts, 0, 'no alert but the killed worker\'s')
    or diag join "\n", @alerts[0 .. ($#alerts > 5 ? 5 : $#alerts)];
unlike(error_log_text(), qr/exited on signal (?!9)/, 'no crash');
$many->stop;

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_delivery_interval 100ms;
    tent_delivery_retry 1s 2s;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize { tent_owner "the owner"; }
--- request
GET /tent/posts
--- error_code: 200
--- response_body: []
