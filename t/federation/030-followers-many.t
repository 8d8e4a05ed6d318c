# Many followers: more than one store batch of them.  A second nginx
# plays 600 Tent entities (http://127.0.0.1:P/f<i>: Link, profile, the
# challenge echoed, 200 to notifications, which it logs); each follows
# the entity for real.  Then the counts and the lists must cover them all
# across batches, hidden ones skipped, and one post must reach all 600.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text
                  follower_host_config follow_many);
use Tent::Client;
use Tent::Peer;
use JSON::PP;
use Time::HiRes qw(sleep time);

master_on();
workers(2);
no_shuffle();
run_tests();

# under valgrind 600 follows take minutes: the blocks above still run
if ($ENV{TEST_NGINX_USE_VALGRIND}) {
    pass('the many-followers part is skipped under valgrind');
    exit 0;
}

start_last_nginx();
END { stop_last_nginx() }

my $N = 600;
my $c = Tent::Client->new;
my ($app, $owner) = $c->authorized_app(
    'write_posts,read_followers,write_followers', post_types => 'all');

my $many = Tent::Peer->start(worker_processes => 1,
                             server_config => follower_host_config());
my $U = $many->url;

# statuses only: not the follower posts of each other's follows
my ($bad, @ids) = follow_many($c, $U, [map { "f$_" } 1 .. $N]);
is($bad, 0, "$N entities follow");

my $res = $c->request(GET => '/followers/count');
is($res->{body}, $N, "the count covers all $N (more than one batch)");
$res = $c->request(HEAD => '/followers');
is($res->{headers}{count}, $N, 'HEAD Count too');

sub walk {
    my ($first, @cr) = @_;
    my (@all, $url) = ();
    $url = $first;
    for (1 .. 50) {
        my $r = $c->request(GET => $url, @cr);
        push @all, map { $_->{id} } @{ $r->{json} || [] };
        my ($next) = ($r->{headers}{link} // '') =~ /<([^>]+)>; rel="next"/;
        last unless $next;
        ($url = $next) =~ s{^/tent}{};
    }
    return @all;
}

my @all = walk('/followers?limit=200');
my %seen;
is(scalar(grep { !$seen{$_}++ } @all), $N, 'the list walks over all of them');
is(scalar @all, $N, 'none twice');

# every other one made private: anonymous readers skip them across batches
my $hid = 0;
for my $k (grep { $_ % 2 } 0 .. $#ids) {
    my $r = $c->request(PUT => "/followers/$ids[$k]", cred => $owner,
                        body => { permissions => { public => JSON::PP::false } });
    $hid++ if $r->{status} == 200;
}
is($hid, $N / 2, 'half of them made private');
$res = $c->request(GET => '/followers/count');
is($res->{body}, $N / 2, 'anonymous count: the public half');
$res = $c->request(GET => '/followers/count', cred => $owner);
is($res->{body}, $N, 'with read_followers: all');
@all = walk('/followers?limit=200');
is(scalar @all, $N / 2, 'the anonymous list walks over the public half');
%seen = map { $_ => 1 } @all;
is(scalar(grep { $seen{ $ids[$_] } } grep { $_ % 2 } 0 .. $#ids), 0,
   'and never shows a private one');

# one post, every follower: the expansion reads followers in batches
my $notes = $many->servroot . '/logs/notes.log';
my $before = -e $notes ? `grep -c '"POST ' $notes` + 0 : 0;
$res = $c->request(POST => '/posts', cred => $owner,
                   body => { type => 'https://tent.io/types/post/status/v0.1.0',
                             content => { text => 'to all of you' },
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a public post');

my $got = 0;
my $end = time + 60;
while (time < $end) {
    $got = -e $notes ? `grep -c '"POST ' $notes` - $before : 0;
    last if $got >= $N;
    sleep 0.2;
}
ok($got >= $N, "the post reached the $N followers ($got notifications)");

unlike(error_log_text(), qr/\[alert\]|exited on signal/, 'no alert, no crash');
$many->stop;

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_delivery_interval 100ms;
    tent_delivery_concurrency 32;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/followers/count
--- error_code: 200
--- response_body: 0
