# Posts with two workers while nginx reloads again and again: every
# acknowledged post is stored, none twice.  Clients retry a 503 with the
# same Idempotency-Key, as a careful client would.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(parallel_clients reload_nginx error_log_text
                  start_last_nginx stop_last_nginx);
use Tent::Client;
use Time::HiRes qw(sleep);

master_on();
workers(2);
no_shuffle();
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
my $TYPE = 'https://example.org/types/reload/v1.0.0';

my $alerts = () = error_log_text() =~ /\[(?:alert|crit|emerg)\]/g;

my $pid = fork;
die "fork: $!" unless defined $pid;
if ($pid == 0) {
    for (1 .. 10) { sleep 0.3; reload_nginx(); }
    POSIX::_exit(0);
}

my @lines = parallel_clients(4, 4, sub {
    my ($i, $iter) = @_;
    my $mark = "c$i-$iter";
    for my $try (1 .. 20) {
        my $res = $c->request(POST => '/posts', cred => $auth,
                              headers => { 'Idempotency-Key' => $mark },
                              body => { type => $TYPE,
                                        content => { mark => $mark } });
        return "ok $mark $res->{json}{id}" if $res->{status} == 200;
        return "bad $mark $res->{status} " . ($res->{error} // $res->{body})
            unless $res->{status} == 503;
        sleep 0.1;
    }
    return "gave-up $mark";
});
waitpid($pid, 0);

my @ok = grep { /^ok / } @lines;
my @bad = grep { !/^ok / } @lines;
ok(@ok > 50, scalar(@ok) . ' posts acknowledged during 10 reloads');
is(scalar @bad, 0, 'no failure but a retried 503')
    or diag(join "\n", @bad[0 .. ($#bad > 5 ? 5 : $#bad)]);

sleep 0.5;

my (%stored, $next, $pages);
my $pt = 'post_types=' . Tent::Client::uri_escape($TYPE);
my $res = $c->request(GET => "/posts?limit=200&$pt", cred => $auth);
while (1) {
    $stored{ $_->{content}{mark} }++ for @{ $res->{json} || [] };
    ($next) = ($res->{headers}{link} // '') =~ /<([^>]+)>; rel="next"/;
    last unless $next && ++$pages < 100;
    $res = $c->request(GET => "//$next", cred => $auth);
}

my @lost = grep { my ($m) = (split / /)[1]; !$stored{$m} } @ok;
my @dup = grep { $stored{$_} > 1 } keys %stored;
is(scalar @lost, 0, 'no acknowledged post is lost');
is(scalar @dup, 0, 'no post is stored twice');
is(scalar keys %stored, scalar @ok, 'exactly the acknowledged posts are there');

my $alerts_after = () = error_log_text() =~ /\[(?:alert|crit|emerg)\]/g;
is($alerts_after, $alerts, 'no alert in the error log');

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
