# The database opens with writes waiting for it, an operator's registry
# write among them: the registry fence lets the registry write run alone
# and parks the others behind it.  The open's drain of the waiting queue
# took each operation once; it used to loop while the queue was not
# empty, and a parked write went back to the queue's tail, so worker 0
# took it again and again, at 100% CPU, and every store operation of the
# server waited for its timeout (found reading the code, issue 16's fence
# and the reload's open).  Here the database is held by a lock (as by the
# old owner at a reload) while the writes arrive.

use Test::Nginx::Socket 'no_plan';
use File::Temp qw(tempdir);
use JSON::PP;
use Tent::Util qw(http_request parallel_clients wait_for_log error_log_text
                  error_log_since store_lock free_port start_last_nginx
                  stop_last_nginx);
use Tent::Hosting qw(operator_token);

our ($LOCK, $TOKEN);

BEGIN {
    my $dir = tempdir('tent-t028-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    $ENV{TEST_NGINX_LOCKED} = "$dir/locked";
    $LOCK = store_lock("$dir/locked");
    $ENV{TEST_NGINX_TOKEN_FILE} = "$dir/token";
    $TOKEN = operator_token("$dir/token");

    # the provisioned entities' server
    $ENV{TEST_NGINX_HOSTED_PORT} = free_port();
}

master_on();
workers(1);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

# what the first run logged is not this one's
my $from = length error_log_text();
sub log_now { error_log_since($from) }
sub wait_log { wait_for_log($_[0], 10, $from) }

ok(wait_log(qr/tent store: opening "[^"]*locked\/db" failed/),
   'the owner cannot open the locked database');

my $port = $ENV{TEST_NGINX_HOSTED_PORT};
# three operators' creates: registry writes, each a compare-and-set
# with no read before it
my @req = map { my $n = $_; sub {
    http_request(method => 'POST', path => '/tent-admin',
                 headers => { Host => 'localhost',
                              Authorization => "Bearer $TOKEN" },
                 body => encode_json({ action => 'create',
                                       entity => "http://new$n.test:$port" }),
                 timeout => 40);
} } 1 .. 3;

pipe(my $r, my $w) or die "pipe: $!";
my $kid = fork // die "fork: $!";
if ($kid == 0) {
    close $r;
    my @lines = parallel_clients(scalar @req, 1, sub {
        my ($i, $iter) = @_;
        return () if $iter;
        my $res = $req[$i - 1]->();
        return "$i " . ($res->{status} // 0) . ' '
               . ($res->{error} // $res->{body} // '');
    });
    print {$w} "$_\n" for @lines;
    close $w;
    POSIX::_exit(0);
}
close $w;

# their writes wait for the database (a debug line: Debian's nginx is
# built --with-debug)
my $waiting = 0;
for (1 .. 200) {
    my @n = log_now() =~ /sent \(here\) cas sync "\\x00R/g;
    $waiting = @n;
    last if $waiting >= scalar @req;
    Time::HiRes::sleep(0.1);
}
is($waiting, scalar @req, 'every write waits for the database');

close $LOCK;

my @lines;
while (my $l = <$r>) { chomp $l; push @lines, $l }
close $r;
waitpid($kid, 0);

my %st = map { (split / /)[0, 1] } @lines;
is(scalar(grep { ($st{$_} // 0) == 201 } 1 .. 3), 3,
   "the operators' creates are answered 201")
    or diag(join "\n", @lines);
my $list = http_request(path => '/tent-admin',
                        headers => { Host => 'localhost',
                                     Authorization => "Bearer $TOKEN" });
is(scalar(() = $list->{body} =~ m{"http://new\d\.test:\d+"}g), 3,
   'the registry has the three entities') or diag($list->{body});

my $log = log_now();
like($log, qr/opened "[^"]*locked\/db"/, 'the owner opened the database');
like($log, qr/tent store fence: a registry write runs/,
     'the registry write ran alone');
ok($log !~ /no answer within the store timeout/,
   'no operation waited for its timeout');
ok($log !~ /\[(?:alert|crit|emerg)\]/, 'no alert in the error log');

# and the server still answers: worker 0 is not stuck
my $res = http_request(path => '/tent/profile',
                         headers => { Host => 'localhost' }, timeout => 10);
is($res->{status}, 200, 'the server answers after the drain');

__DATA__

=== TEST 1: a store another process holds, the registry fence on
--- http_config
    tent_store $TEST_NGINX_LOCKED;
    tent_store_timeout 30s;
    server {
        listen 127.0.0.1:$TEST_NGINX_HOSTED_PORT;
        server_name *.test;
        tent_entity http://$host:$TEST_NGINX_HOSTED_PORT;
        tent_provisioning on;
    }
--- config
    tent_entity https://alice.example;
    location /tent-admin {
        tent_admin;
        tent_admin_token_file $TEST_NGINX_TOKEN_FILE;
        allow 127.0.0.1;
        deny all;
    }
    location = /up { return 200 "up\n"; }
--- request
GET /up
--- error_code: 200
