# The store: LevelDB owned by worker 0, reached by the other workers over
# the store socket; survives restarts, reloads and a killed owner.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(http_request parallel_clients master_pid reload_nginx
                  error_log_text wait_for_log store_lock start_last_nginx
                  stop_last_nginx);
use File::Temp qw(tempdir);
use IO::Socket::IP;
use Time::HiRes qw(sleep time);

our ($LOCK, %SEEN);

BEGIN {
    # stores outside the server root, which the harness wipes on restart
    my $dir = tempdir('tent-t004-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    $ENV{TEST_NGINX_PERSIST} = "$dir/persist";
    $ENV{TEST_NGINX_LOCKED} = "$dir/locked";
    $LOCK = store_lock("$dir/locked");

    # a free port for the reuseport server of the stress tests
    my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                Listen => 1) or die "no free port: $!";
    $ENV{TEST_NGINX_STRESS_PORT} = $s->sockport;
    close $s;
}

master_on();
workers(2);
no_shuffle();
run_tests();

# ---- several workers, reloads, a killed owner: against the last block's
# nginx, which is still running (its own server on a reuseport listener
# spreads connections over both workers)

my $port = $ENV{TEST_NGINX_STRESS_PORT};

start_last_nginx();
END { stop_last_nginx() }

sub get_profile {
    my ($host) = @_;
    my $res = http_request(port => $port, path => '/tent/profile',
                           headers => { Host => $host });
    my ($entity) = $res->{body} =~ /"entity":"([^"]+)"/;
    my ($version) = $res->{body} =~ /"version":(\d+)/;
    return ($res, $entity // '', $version // 0);
}

# under valgrind nginx is some 50 times slower: the storms time out
# rather than test anything; the blocks above still run
if ($ENV{TEST_NGINX_USE_VALGRIND}) {
    pass('the stress part is skipped under valgrind');
    exit 0;
}

# 1. many connections over both workers, profiles created concurrently
{
    my @lines = parallel_clients(6, 2, sub {
        my ($i, $iter) = @_;
        my $host = sprintf 'spread%d.example', $iter % 7;
        my ($res, $entity, $version) = get_profile($host);
        return join ' ', $res->{status}, $res->{headers}{'x-pid'} // '-',
                         ($entity eq "https://$host" ? 'ok' : "bad:$entity"),
                         $version;
    });

    my %pids = map { (split / /)[1] => 1 } @lines;
    my @bad = grep { !/^200 \d+ ok 1$/ } @lines;

    ok(@lines > 100, "spread: " . scalar(@lines) . " requests made");
    is(scalar(@bad), 0, "spread: every answer is 200, its own entity, "
                        . "version 1 (created once)")
        or diag(join "\n", @bad[0 .. ($#bad > 9 ? 9 : $#bad)]);
    ok(keys(%pids) >= 2, "spread: both workers answered ("
                         . join(',', sort keys %pids) . ")");
}

# 2. a reload storm while clients create new profiles
{
    my $errors_before = () = error_log_text() =~ /\[(?:alert|crit|emerg)\]/g;

    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        for (1 .. 12) { sleep 0.3; reload_nginx(); }
        POSIX::_exit(0);
    }

    my @lines = parallel_clients(4, 5, sub {
        my ($i, $iter) = @_;
        my $host = "reload$i-$iter.example";
        my ($res, $entity, $version) = get_profile($host);
        my $s = $res->{status};
        if ($s == 503) {
            my $ok = ($res->{headers}{'retry-after'} // '') eq '1'
                     && $res->{body} =~ /^\{"error":"[^"]+"\}$/;
            return "503 $host " . ($ok ? 'ok' : 'bad');
        }
        return "$s $host " . ($entity eq "https://$host" && $version == 1
                              ? 'ok' : "bad:$entity:$version:"
                                       . ($res->{error} // ''));
    });
    waitpid($pid, 0);

    my @ok = grep { /^200 \S+ ok$/ } @lines;
    my @unavailable = grep { /^503 \S+ ok$/ } @lines;
    my @bad = grep { !/^(?:200|503) \S+ ok$/ } @lines;

    ok(@ok > 50, "reload storm: " . scalar(@ok) . " requests served, "
                 . scalar(@unavailable) . " documented 503s");
    is(scalar(@bad), 0, "reload storm: no failure but a JSON 503 "
                        . "with Retry-After")
        or diag(join "\n", @bad[0 .. ($#bad > 9 ? 9 : $#bad)]);

    # the database is owned again, and what was written is still there

    sleep 0.5;
    my $lost = 0;
    for my $l (@ok) {
        my (undef, $host) = split / /, $l;
        my ($res, $entity, $version) = get_profile($host);
        $lost++ unless $res->{status} == 200 && $version == 1;
    }
    is($lost, 0, "reload storm: every profile created during the storm "
                 . "reads back once, at version 1");

    my $errors_after = () = error_log_text() =~ /\[(?:alert|crit|emerg)\]/g;
    is($errors_after, $errors_before, "reload storm: no alert in the log");
}

# 3. the owner is killed: the master respawns worker 0, which reopens
{
    my @owners = error_log_text() =~ /(\d+)#\d+: tent store: opened/g;
    my $owner = $owners[-1];
    ok($owner && kill(0, $owner), "the current owner is pid $owner");

    kill 'KILL', $owner;

    my ($recovered, $codes) = (0, '');
    my $end = time + 8;
    while (time < $end) {
        my ($res) = get_profile('afterkill.example');
        $codes .= "$res->{status} ";
        if ($res->{status} == 200) { $recovered = 1; last }
        sleep 0.05;
    }
    ok($recovered, "owner killed: the store serves again ($codes)");

    my @now = error_log_text() =~ /(\d+)#\d+: tent store: opened/g;
    isnt($now[-1], $owner, "owner killed: a new worker owns the store");

    my ($res, $entity, $version) = get_profile('spread1.example');
    is("$res->{status} $version", "200 1",
       "owner killed: data written before is still there");
}

__DATA__

=== TEST 1: a store on disk: the core profile is answered from the configuration
--- http_config
    tent_store $TEST_NGINX_PERSIST;
--- config
    tent_entity https://alice.example;
    tent_servers https://one.example/tent;
--- request
GET /tent/profile
--- error_code: 200
--- response_body_like: "servers":\["https://one\.example/tent"\].*"version":1,



=== TEST 2: after a full restart with other servers: reads stored nothing, so the default is version 1 (issue #11 finding 9; persistence across restarts: the later tests and t/store/020-posts-reload.t)
--- http_config
    tent_store $TEST_NGINX_PERSIST;
--- config
    tent_entity https://alice.example;
    tent_servers https://two.example/tent;
--- request
GET /tent/profile
--- error_code: 200
--- response_body_like: "servers":\["https://two\.example/tent"\].*"version":1,



=== TEST 3: and after another restart, unchanged
--- http_config
    tent_store $TEST_NGINX_PERSIST;
    # another restart
--- config
    tent_entity https://alice.example;
    tent_servers https://two.example/tent;
--- request
GET /tent/profile
--- error_code: 200
--- response_body_like: "servers":\["https://two\.example/tent"\].*"version":1,
--- error_log
tent store: opened



=== TEST 4: a store that cannot be opened: 503, JSON, Retry-After
--- http_config
    tent_store $TEST_NGINX_LOCKED;
    tent_store_timeout 300ms;
--- config
    tent_entity https://alice.example;
--- request eval
["GET /tent/profile", "GET /tent/profile", "HEAD /tent/profile"]
--- error_code eval
[503, 503, 503]
--- response_headers eval
["Retry-After: 1", "Content-Type: application/vnd.tent.v0+json", "Retry-After: 1"]
--- response_body_like eval
[qr/^\{"error":"Service Unavailable"\}$/, qr/^\{"error":"Service Unavailable"\}$/, qr/^$/]
--- error_log
tent store: opening
Resource temporarily unavailable
--- no_error_log
[alert]



=== TEST 5: once the lock is gone the owner opens it by itself
--- init
close $main::LOCK;
Time::HiRes::sleep(1.5);
--- http_config
    tent_store $TEST_NGINX_LOCKED;
    tent_store_timeout 300ms;
--- config
    tent_entity https://alice.example;
--- request
GET /tent/profile
--- error_code: 200
--- response_body_like: "version":1,
--- error_log
tent store: opened



=== TEST 6: the nginx the stress tests above run against
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    server {
        listen 127.0.0.1:$TEST_NGINX_STRESS_PORT reuseport;
        tent_entity https://$host;
        tent_provisioning off;
        add_header X-Pid $pid always;
    }
--- config
    tent_entity https://alice.example;
--- request
GET /tent/profile
--- error_code: 200
