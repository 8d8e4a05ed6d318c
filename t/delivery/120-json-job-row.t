# A job row as the version before wrote it (JSON) still delivers: a store
# written before the upgrade to binary job rows loses no delivery.  The
# job of a post to a follower that answers 503 waits for its retry; with
# nginx stopped, its row is written again as JSON under the same key; once
# the follower takes posts, the job is read, sent and removed.  And a
# delivery's status row of the version before (JSON) is still shown by
# GET /posts/:id/deliveries, beside the binary ones.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx);
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
my (undef, $owner) = $c->authorized_app(
    'write_posts,read_posts,read_followers,read_followings',
    post_types => 'all');

# a follower whose server is down for now: every notification retried
my $rx = Tent::Receiver->start(
    rules => [{ method => 'POST', path => '/notifications/',
                action => { status => 503, body => 'later' } }]);
my $res = $c->request(POST => '/followers',
                      body => { entity => $rx->url, types => ['all'],
                                notification_path => 'notifications/n' });
is($res->{status}, 200, 'a follower, down for now') or diag $res->{body};

$res = $c->request(POST => '/posts', cred => $owner, body => {
    type => 'https://tent.io/types/post/status/v0.1.0',
    content => { text => 'kept as JSON' },
    permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a post');
my $pid = eval { decode_json($res->{body})->{id} } // '';

my $end = time + 15;
sleep 0.1 while time < $end
    && $rx->requests(method => 'POST', path => qr{/notifications/n$}) < 1;
ok(scalar $rx->requests(method => 'POST', path => qr{/notifications/n$}),
   'the post was offered, and put back for later');

my $root = Tent::Util::servroot();
my $db = "$root/tent_temp/db";

sub job_rows {
    my @jobs;
    for (Tent::Util::ldb_rows($db)) {
        chomp;
        my ($k, $v) = split /\t/;
        my $key = pack('H*', $k);
        push @jobs, [$key, pack('H*', $v // '')]
            if $key =~ /^\Q$ENTITY\E\0j/;
    }
    return @jobs;
}

stop_last_nginx();

my @jobs = job_rows();
is(scalar @jobs, 1, 'one job row waits');
my ($key, $value) = @{ $jobs[0] || ['', ''] };
isnt(substr($value, 0, 1), '{', 'written binary by this version');

# "<entity> 0 j <due ms, 8 bytes><follower id> <post id> <version>"
my ($fid, $jpid, $version) =
    substr($key, length($ENTITY) + 2 + 8) =~ /^(\S+) (\S+) (\d+)$/;
is($jpid, $pid, 'the job is the post\'s');

my $json = encode_json({ follower => $fid, id => $jpid,
                         version => $version + 0, attempt => 1,
                         first => time - 5 });
my $put = Tent::Util::ldb_tool('ldb-put');
is(system($put, $db, unpack('H*', $key), unpack('H*', $json)), 0,
   'the row written again as the version before wrote it');

$rx->clear;
$rx->rules([]);
start_last_nginx();

$end = time + 20;
sleep 0.2 while time < $end
    && $rx->requests(method => 'POST', path => qr{/notifications/n$}) < 1;
my @got = $rx->requests(method => 'POST', path => qr{/notifications/n$});
ok(scalar @got, 'the JSON job was sent after the restart');
like($got[0] ? $got[0]{body} : '', qr/\Q$pid\E/, 'with its post');

sleep 1;
stop_last_nginx();
is(scalar job_rows(), 0, 'and settled: no job row left');

# a status row of the version before, beside the follower's (binary)
my ($skey, $svalue);
for (Tent::Util::ldb_rows($db)) {
    chomp;
    my ($k, $v) = split /\t/;
    my $key = pack('H*', $k);
    ($skey, $svalue) = ($key, pack('H*', $v // ''))
        if $key =~ /^\Q$ENTITY\E\0D\Q$pid\E\0/;
}
ok(defined $skey && substr($svalue, 0, 1) ne '{',
   'the follower\'s status row is binary');
my $old = substr($skey // '', 0, length($ENTITY) + 2 + length($pid) + 1 + 4)
          . 'Fdeadbeef';
my $oldjson = encode_json({ entity => 'https://old.example', state => 'failed',
                            attempts => 3, last_status => 410,
                            last_error => undef, last_attempt_at => 1,
                            next_attempt_at => undef });
is(system($put, $db, unpack('H*', $old), unpack('H*', $oldjson)), 0,
   'a JSON status row written as the version before wrote it');
start_last_nginx();

$res = $c->request(GET => "/posts/$pid/deliveries", cred => $owner);
is($res->{status}, 200, 'the deliveries of the post') or diag $res->{body};
my %by = map { $_->{id} => $_ } @{ $res->{json}{deliveries} || [] };
is($by{Fdeadbeef}{state}, 'failed', 'the JSON row shown as it was');
is($by{Fdeadbeef}{attempts}, 3, 'with its attempts');
is($by{$fid}{state}, 'delivered', 'the binary row: delivered');
is($by{$fid}{entity}, $rx->url, 'to the follower');
is($by{$fid}{last_status}, 200, 'with the status it answered');
is($res->{json}{counts}{failed}, 1, 'both counted: one failed');
is($res->{json}{counts}{delivered}, 1, 'one delivered');

$rx->stop;

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 200ms;
    tent_delivery_retry 1s 2s;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/posts
--- error_code: 200
--- response_body: []
