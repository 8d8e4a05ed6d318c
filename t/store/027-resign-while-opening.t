# nginx reloads while the store owner is still waiting to open the
# database (another process holds LevelDB's lock): the operations the
# other worker sent it wait with it.  When it resigns, each goes back to
# its worker as "retry" and from there to the new owner, which answers
# once the lock is gone.  The bug this catches: the old owner relayed
# them to the new owner itself, and the answer came back under the id of
# its own connection: one the worker did not know (it waited for its
# store timeout and answered 503; CI: t/store/020-posts-reload.t under
# ASan, a POST without an answer for 5 s), or one of another of its
# operations, which got an answer not its own (each client here asks for
# its own entity's profile, so that would show).

use Test::Nginx::Socket 'no_plan';
use File::Temp qw(tempdir);
use Tent::Util qw(http_request parallel_clients reload_nginx wait_for_log
                  error_log_text error_log_since store_lock free_port
                  start_last_nginx stop_last_nginx);
use Time::HiRes qw(sleep);

our $LOCK;

BEGIN {
    # the store outside the server root, locked before nginx starts
    my $dir = tempdir('tent-t027-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    $ENV{TEST_NGINX_LOCKED} = "$dir/locked";
    $LOCK = store_lock("$dir/locked");

    # a reuseport listener spreads the connections over both workers
    $ENV{TEST_NGINX_SPREAD_PORT} = free_port();
}

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $port = $ENV{TEST_NGINX_SPREAD_PORT};
# 16 connections: all 16 reach worker 0 once in 65,536 runs
my $CLIENTS = 16;

# what the first run logged (it resigned while opening too, at its stop)
# is not this one's
my $from = length error_log_text();
sub wait_log { wait_for_log($_[0], 10, $from) }

ok(wait_log(qr/tent store: opening "[^"]*locked\/db" failed/),
   'the owner cannot open the locked database');

# the clients wait for their answers in a process of their own
pipe(my $r, my $w) or die "pipe: $!";
my $kid = fork // die "fork: $!";
if ($kid == 0) {
    close $r;
    my @lines = parallel_clients($CLIENTS, 1, sub {
        my ($i, $iter) = @_;
        return () if $iter;         # one request each
        # each its own entity: an answer given to another request shows
        my $host = "c$i.example";
        my $res = http_request(port => $port, path => '/tent/profile',
                               headers => { Host => $host }, timeout => 30);
        my ($entity) = ($res->{body} // '') =~ /"entity":"([^"]+)"/;
        return (($res->{status} // 0) . ' '
                . ($res->{headers}{'x-pid'} // '-') . ' '
                . (($entity // '') eq "https://$host" ? 'own'
                   : ($res->{error} // $res->{body} // '')));
    });
    print {$w} "$_\n" for @lines;
    close $w;
    POSIX::_exit(0);
}
close $w;

# both workers' operations wait for the database: the other worker's
# reach the owner over its socket (a debug line: nginx is Debian's,
# built --with-debug)
ok(wait_log(qr/received from a worker /),
   'a worker sent the owner an operation that waits for the database');
sleep 0.3;

reload_nginx();
ok(wait_log(qr/shutting down, handing "[^"]*locked\/db" over/),
   'the owner resigned before it opened the database');
close $LOCK;

my @lines;
while (my $l = <$r>) { chomp $l; push @lines, $l }
close $r;
waitpid($kid, 0);

is(scalar @lines, $CLIENTS, "$CLIENTS answers");
my @bad = grep { !/^200 \d+ own$/ } @lines;
is(scalar @bad, 0, 'every request answered 200, its own entity, once the '
                   . 'lock is gone')
    or diag(join "\n", @bad);

my $log = error_log_since($from);
like($log, qr/a worker's operation is sent back to retry/,
     "the waiting operations of the other worker went back to it");
like($log, qr/opened "[^"]*locked\/db"/, 'the new owner opened it');
ok($log !~ /no answer within the store timeout/,
   'no operation waited for its timeout');
ok($log !~ /\[(?:alert|crit|emerg)\]/, 'no alert in the error log');

__DATA__

=== TEST 1: a store another process holds; two workers
--- http_config
    tent_store $TEST_NGINX_LOCKED;
    tent_store_timeout 20s;
    server {
        listen 127.0.0.1:$TEST_NGINX_SPREAD_PORT reuseport;
        tent_entity https://$host;
        tent_provisioning off;
        add_header X-Pid $pid always;
    }
--- config
    location = /up { return 200 "up\n"; }
--- request
GET /up
--- error_code: 200
