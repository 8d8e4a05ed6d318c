# Delivery with no one to deliver to: an entity without followers (the
# common case of a new server) makes posts; each leaves an outbox row in
# its own batch, and the engine clears them in bulk after one look at the
# followers and followings tables, without a task per post.  Checked in
# the LevelDB itself once nginx is stopped: no outbox row and no job is
# left.  A follower that comes afterwards gets what is posted after it,
# and none of the earlier posts.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text);
use Tent::Client;
use Tent::Receiver;
use JSON::PP;
*uri_escape = \&Tent::Client::uri_escape;
use Time::HiRes qw(sleep time);

workers(2);
no_shuffle();
run_tests();

my $stopped;
END { stop_last_nginx() unless $stopped }

my $c = Tent::Client->new;
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $ENTITY = 'http://127.0.0.1:' . ($ENV{TEST_NGINX_SERVER_PORT} || 1984);
my $N = 300;     # more than one pass of the engine (256 rows)

start_last_nginx();

my ($app, $owner) = $c->authorized_app('write_posts,read_posts,write_profile',
                                       post_types => 'all',
                                       info_types => 'all');

sub post { $c->post_ok($owner, Tent::Client::status_body($_[0])) }

my @early = map { post("nobody reads $_") } 1 .. $N;
is(scalar @early, $N, "$N posts with no follower are acknowledged");

# a profile change: a profile post, for followers and followings (none)
my $res = $c->request(PUT => '/profile/'
                             . uri_escape('https://example.org/types/info/x/v0.1.0'),
                      cred => $owner,
                      body => { x => 1,
                                permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'and a profile change');

# ---- the store: what the queue holds (nginx stopped: LevelDB is one process)

my $root = Tent::Util::servroot();

sub queue_rows {
    my %n = (o => 0, j => 0, x => 0);
    for (Tent::Util::ldb_rows("$root/tent_temp/db")) {
        chomp;
        my ($k) = split /\t/;
        $k = pack 'H*', $k;
        $n{$1}++ if $k =~ /^\Q$ENTITY\E\0([ojx])/;
    }
    return \%n;
}

{

    # the engine looks every 100 ms; give it a few seconds, more if slow
    my $rows;
    for my $wait (2, 5, 10) {
        sleep $wait;
        stop_last_nginx();
        $rows = queue_rows();
        last if $rows->{o} == 0;
        start_last_nginx();
    }
    is($rows->{o}, 0, 'every outbox row was cleared')
        or diag("$rows->{o} outbox rows left");
    is($rows->{j}, 0, 'no job was made');
    is($rows->{x}, 0, 'no dead letter either');
    start_last_nginx();
}

# ---- a follower, afterwards: the next post reaches it, the early ones not

my $rx = Tent::Receiver->start;
$res = $c->request(POST => '/followers',
                   body => { entity => $rx->url, types => ['all'],
                             notification_path => 'notifications/n' });
is($res->{status}, 200, 'a follower comes') or diag $res->{body};

my $late = post('for the follower');

sub pushed_ids {
    return map { (eval { decode_json($_->{body}) } || {})->{id} // '' }
           grep { $_->{method} eq 'POST' && $_->{path} =~ m{/notifications/n$} }
           $rx->requests;
}

my %got;
my $end = time + 15;
while (time < $end) {
    %got = map { $_ => 1 } pushed_ids();
    last if $got{ $late->{id} };
    sleep 0.1;
}
ok($got{ $late->{id} }, 'the post made after the follow is delivered');
sleep 1;
%got = map { $_ => 1 } pushed_ids();
is(scalar(grep { $got{ $_->{id} } } @early), 0,
   'none of the posts made before any follower');

unlike(error_log_text(), qr/\[alert\]|exited on signal|outbox could not/,
       'no alert, no crash, no failed clear');

$rx->stop;

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 100ms;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/posts/count
--- error_code: 200
--- response_body: 0
