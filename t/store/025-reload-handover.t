# Reads with two workers while nginx reloads again and again: no request
# fails.  At a reload the old owner hands the database over; an operation
# a worker sent it just before it closed must be answered "retry" (and go
# to the new owner), never lost with the connection: "lost the connection
# to the store owner" (503) is the bug this catches (CI: an export cut
# mid-stream by a reload, t/api/110-export.t).

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(parallel_clients reload_nginx error_log_text wait_for
                  start_last_nginx stop_last_nginx);
use Tent::Client;
use Time::HiRes qw(sleep time);

master_on();
workers(2);
no_shuffle();
log_level('info');
run_tests();

start_last_nginx();
END { stop_last_nginx() }

# under valgrind nginx is some 50 times slower: the storms time out
# rather than test anything; the blocks above still run
if ($ENV{TEST_NGINX_USE_VALGRIND}) {
    pass('the stress part is skipped under valgrind');
    exit 0;
}

my $c = Tent::Client->new;
my ($app, $auth) = $c->authorized_app('write_posts,read_posts',
                                      post_types => 'all');
my $TYPE = 'https://example.org/types/handover/v1.0.0';
for my $i (1 .. 5) {
    my $r = $c->request(POST => '/posts', cred => $auth,
                        body => { type => $TYPE, content => { i => $i } });
    die "post: $r->{status}" unless $r->{status} == 200;
}

# two processes keep both cores busy meanwhile (bounded, they stop by
# themselves): a busy machine is where an owner exits before it read what
# a worker sent it, as CI's did
my $RELOADS = 20;
my @burn;
for (1 .. 2) {
    my $b = fork // die "fork: $!";
    if ($b == 0) {
        my $stop = time + 0.3 * $RELOADS + 2;
        while (time < $stop) { for (1 .. 10000) { } }
        POSIX::_exit(0);
    }
    push @burn, $b;
}
my $pid = fork;
die "fork: $!" unless defined $pid;
if ($pid == 0) {
    for (1 .. $RELOADS) { sleep 0.3; reload_nginx(); }
    POSIX::_exit(0);
}

# each read a store scan of its own (a query no cache has seen)
my $end = time + 0.3 * $RELOADS + 1;
my @lines = parallel_clients(8, 0.3 * $RELOADS + 3, sub {
    my ($i, $iter) = @_;
    return () if time > $end;
    my $res = $c->request(GET => "/posts?limit=5&before_time="
                                 . (2000000000 + $i * 100000 + $iter),
                          cred => $auth);
    return ($res->{status} == 200 && @{ $res->{json} || [] } == 5
            ? 'ok' : "bad $res->{status} $res->{body}");
});
waitpid($_, 0) for $pid, @burn;

my @ok = grep { $_ eq 'ok' } @lines;
my @bad = grep { $_ ne 'ok' } @lines;
ok(@ok > 100, scalar(@ok) . " reads during $RELOADS reloads");
is(scalar @bad, 0, 'none failed') or diag join "\n", @bad[0 .. 4];

# the last old owner may still be handing over: its lines within 15 s
my ($log, $handed, @resigned, @closed, @left);
wait_for(sub {
    $log = error_log_text();
    $handed = () = $log =~ /tent store: shutting down, handing/g;

    # each old owner that had opened the database closed it itself, then
    # waited for its workers to go (it used to exit at once, dropping
    # what they had just sent); one that resigned while still opening
    # has nothing to close
    my %opened = map { $_ => 1 } $log =~ /\] (\d+)#\d+: tent store: opened/g;
    @resigned = grep { $opened{$_} }
                $log =~ /\] (\d+)#\d+: tent store: shutting down, handing/g;
    @closed = grep {
        $log =~ /\] $_#\d+: tent store: closed "[^"]+" for the next owner/
    } @resigned;
    @left = grep {
        $log =~ /\] $_#\d+: tent store: handed "[^"]+" over, every worker/
    } @resigned;
    return @closed == @resigned && @left == @resigned;
}, 15);
ok($handed >= $RELOADS / 2, "the database handed over $handed times");
ok(@resigned >= $RELOADS / 2, scalar(@resigned) . ' owners resigned');
is(scalar @closed, scalar @resigned,
   'every old owner closed the database for the next one before exiting');
is(scalar @left, scalar @resigned,
   'and stayed until every worker had gone to the new owner');
unlike($log, qr/still connected at the end of the handover/,
       'every worker left the old owner in time');
unlike($log, qr/\[(?:alert|crit|emerg)\]/, 'no alert in the error log');

__DATA__

=== TEST 1: two workers
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/profile
--- error_code: 200
