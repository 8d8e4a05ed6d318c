# Dead letters (deliveries refused or given up) are kept for the operator
# for tent_delivery_dead_letter_time, then removed by the delivery engine:
# a follower that refuses everything cannot grow the store for ever.
# Checked in the LevelDB itself, with nginx stopped.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text);
use Tent::Client;
use Tent::Receiver;
use JSON::PP;
use Time::HiRes qw(sleep time);

master_on();
workers(1);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $ENTITY = 'http://127.0.0.1:' . ($ENV{TEST_NGINX_SERVER_PORT} || 1984);
my $c = Tent::Client->new;
my (undef, $owner) = $c->authorized_app('write_posts', post_types => 'all');

# a follower whose server refuses every notification: 404, not retried
my $rx = Tent::Receiver->start(
    rules => [{ method => 'POST', path => '/notifications/',
                action => { status => 404, body => 'gone' } }]);
my $res = $c->request(POST => '/followers',
                      body => { entity => $rx->url, types => ['all'],
                                notification_path => 'notifications/n' });
is($res->{status}, 200, 'a follower that refuses everything')
    or diag $res->{body};

for my $i (1 .. 3) {
    $res = $c->request(POST => '/posts', cred => $owner, body => {
        type => 'https://tent.io/types/post/status/v0.1.0',
        content => { text => "refused $i" },
        permissions => { public => JSON::PP::true } });
    is($res->{status}, 200, "post $i");
}

# the three (its own follow made a follower post, private: not sent)
my $end = time + 15;
sleep 0.1 while time < $end
    && $rx->requests(method => 'POST', path => qr{/notifications/n$}) < 3;
is(scalar $rx->requests(method => 'POST', path => qr{/notifications/n$}), 3,
   'each post was offered once, and refused');
sleep 0.5;
is(scalar $rx->requests(method => 'POST', path => qr{/notifications/n$}), 3,
   'and not again (a refusal is final; a settled job is not sent twice)');

my $root = Tent::Util::servroot();

sub dead_letters {
    my $n = 0;
    for (Tent::Util::ldb_rows("$root/tent_temp/db")) {
        my ($k) = split /\t/;
        $n++ if pack('H*', $k) =~ /^\Q$ENTITY\E\0x/;
    }
    return $n;
}

{

    stop_last_nginx();
    is(dead_letters(), 3, 'three dead letters are kept at first');
    start_last_nginx();

    # kept 4 s, looked at every 4 s: gone within some 9 s, more if slow
    my $left;
    for my $wait (9, 10) {
        sleep $wait;
        stop_last_nginx();
        $left = dead_letters();
        start_last_nginx();
        last if $left == 0;
    }
    is($left, 0, 'and removed once tent_delivery_dead_letter_time passed');
    like(error_log_text(), qr/tent delivery: \d+ dead letters expired/,
         'which the error log says at info');
}

$rx->stop;

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 200ms;
    tent_delivery_dead_letter_time 4s;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/posts
--- error_code: 200
--- response_body: []
