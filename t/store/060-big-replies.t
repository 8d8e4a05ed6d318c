# Big answers from the store owner to another worker, many at once: an
# anonymous reader (or a tenant with big public posts) asks for pages of
# 200 posts of 60 KB, 12 MB each, from both workers together.  The
# socket between the workers carries each answer as one frame (at most
# 64 MB); what waits to be sent or parsed behind it may be more.  The
# bug this catches: the 64 MB bound held for all the bytes buffered, so
# the owner closed the connection of a worker whose answers piled up
# (or the worker its own, reading them), and every operation that worker
# had in flight, other tenants' writes among them, failed with a 503
# ("lost the connection to the store owner").

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(http_request parallel_clients error_log_text free_port
                  start_last_nginx stop_last_nginx);
use Tent::Client;

BEGIN { $ENV{TEST_NGINX_SPREAD_PORT} = free_port() }

master_on();
workers(2);
no_shuffle();
log_level('info');
run_tests();

start_last_nginx();
END { stop_last_nginx() }

if ($ENV{TEST_NGINX_USE_VALGRIND}) {
    pass('the load part is skipped under valgrind');
    exit 0;
}

my $c = Tent::Client->new;
my ($app, $auth) = $c->authorized_app('write_posts,read_posts',
                                      post_types => 'all');
my $TYPE = 'https://example.org/types/big/v1.0.0';
my $POSTS = 200;
for my $i (1 .. $POSTS) {
    # 60 KB that differ from post to post
    my $text = join '', map { chr(65 + ($i * 7 + $_) % 26) } 1 .. 61440;
    my $r = $c->request(POST => '/posts', cred => $auth,
                        body => { type => $TYPE,
                                  content => { blob => $text },
                                  permissions => { public => JSON::PP::true() } });
    die "post $i: $r->{status} $r->{body}" unless $r->{status} == 200;
}

my $port = $ENV{TEST_NGINX_SPREAD_PORT};
my @lines = parallel_clients(24, 200, sub {
    my ($i, $iter) = @_;
    return () if $iter >= 2;
    my $res = http_request(port => $port,
                           path => "/tent/posts?limit=$POSTS&post_types="
                                   . Tent::Client::uri_escape($TYPE),
                           headers => { Host => 'localhost' }, timeout => 90);
    my $n = () = ($res->{body} // '') =~ /"entity":"https:\/\/alice\.example"/g;
    return "$res->{status} " . ($res->{headers}{'x-pid'} // '-') . " $n";
});

my %pids = map { (split / /)[1] => 1 } @lines;
my @bad = grep { !/^200 \d+ (\d+)$/ || $1 < $POSTS } @lines;
is(scalar @lines, 48, "48 pages asked for");
is(scalar @bad, 0, "every page answered 200 with its $POSTS posts")
    or diag(join "\n", @bad[0 .. ($#bad > 9 ? 9 : $#bad)]);
ok(keys(%pids) >= 2, 'both workers answered (' . join(',', sort keys %pids)
                     . ')');

my $log = error_log_text();
ok($log !~ /lost the connection|bad frame|\[(?:alert|crit|emerg)\]/,
   'no connection between the workers lost, no alert')
    or diag(join "\n", grep { /lost the connection|bad frame|\[alert|\[crit/ }
                       split /\n/, $log);

__DATA__

=== TEST 1: two workers, a server on a reuseport listener
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    # the answers queue behind each other on two cores (ASan's too): the
    # failure looked for is a lost connection, not a deadline
    tent_store_timeout 40s;
    server {
        listen 127.0.0.1:$TEST_NGINX_SPREAD_PORT reuseport;
        tent_entity https://alice.example;
        add_header X-Pid $pid always;
    }
--- config
    tent_entity https://alice.example;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/profile
--- error_code: 200
