# Issue #27, item 3: a worker keeps the owners' block lists in 64 slots
# chosen by the crc32 of the owner's entity URL (src/relations/ngx_http_tent_blocks.c).
# Two entities of the host whose URLs take the same slot share it: each
# one's lookup must find its own list, never the other's (the slot's
# owner is compared in full), and a block of one must not refuse anyone
# at the other.  One worker, so that both use the one slot; the debug
# log's "tent blocks: N of ... read" lines show that they do (each one's
# list read again after the other's took the slot).  Three fixed
# entities, a server block each by name; a receiver on loopback plays X.
# And a burst of one owner's requests on a list just made old makes one
# store read, the others waiting for it (one read in flight per owner
# and worker), each answered with the new list.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text);
use Tent::Client;
use Tent::Receiver;
use Tent::MAC qw(signed_headers random_nonce);
use Compress::Zlib qw(crc32);
use IO::Socket::IP;
use JSON::PP;

# ngx_crc32_short() is zlib's crc32
sub slot { crc32("http://$_[0]") % 64 }

# blk-0.test, the first blk-N.test in its slot, one in another slot
my ($h1, $h2, $h3);
BEGIN {
    $h1 = 'blk-0.test';
    ($h2) = grep { slot($_) == slot($h1) } map { "blk-$_.test" } 1 .. 10000;
    ($h3) = grep { slot($_) != slot($h1) } map { "blk-$_.test" } 1 .. 100;
    @ENV{qw(TEST_NGINX_H1 TEST_NGINX_H2 TEST_NGINX_H3)} = ($h1, $h2, $h3);
}

workers(1);
# multi_accept: a burst held back (the worker stopped) is accepted, and
# its requests read, in one turn of the event loop
worker_connections("64;\n    multi_accept on");
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

ok($h2, "$h1 and $h2 take the same slot (" . slot($h1) . ')');

my %c = map { $_ => Tent::Client->new(host => $_) } $h1, $h2, $h3;
my %owner;
for my $h ($h1, $h2, $h3) {
    (undef, $owner{$h}) = $c{$h}->authorized_app(
        'read_blocks,write_blocks,read_followers,write_followers');
}

my $x = Tent::Receiver->start(port => 0);
my $X = $x->entity;

sub blocks_of {
    my ($h) = @_;
    my $res = $c{$h}->request(GET => '/blocks', cred => $owner{$h});
    return [map { $_->{entity} } @{ $res->{json} || [] }]
        if $res->{status} == 200;
    return "status $res->{status}";
}

sub follows {
    my ($h) = @_;
    return $c{$h}->request(POST => '/followers',
                           body => { entity => $X, types => ['all'],
                                     notification_path => 'notifications/n'
                           });
}

my $res = $c{$h1}->request(POST => '/blocks', cred => $owner{$h1},
                           body => { entity => $X });
ok($res->{status} == 200 || $res->{status} == 201, "$h1 blocks X")
    or diag $res->{body};

# alternately: each lookup finds the slot taken by the other's list
for my $n (1 .. 3) {
    is_deeply(blocks_of($h1), [$X], "($n) ${h1}'s blocks: X");
    is_deeply(blocks_of($h2), [], "($n) ${h2}'s blocks: none, not ${h1}'s");
    is_deeply(blocks_of($h3), [], "($n) ${h3}'s (another slot): none");
    is(follows($h1)->{status}, 403, "($n) X follows $h1: 403");
}

$res = follows($h2);
is($res->{status}, 200, "X follows $h2: not refused by ${h1}'s block")
    or diag $res->{body};
is(follows($h1)->{status}, 403, "and $h1 still refuses it");

# a burst on a list just made old (a block): one read, the others wait
# for it, and each gets the new list.  The worker is stopped while the
# burst is sent, so that every request is in before the read answers
my $x2 = Tent::Receiver->start(port => 0);
$res = $c{$h1}->request(POST => '/blocks', cred => $owner{$h1},
                        body => { entity => $x2->entity });
ok($res->{status} == 200 || $res->{status} == 201, "$h1 blocks X2")
    or diag $res->{body};
my $PORT = $ENV{TEST_NGINX_SERVER_PORT} || 1984;
# no master process: nginx is its one worker
my ($worker) = do {
    open my $pf, '<', Tent::Util::servroot() . '/logs/nginx.pid' or die;
    <$pf> =~ /(\d+)/;
};
ok($worker, "the worker: $worker");
my $mark = length error_log_text();
kill 'STOP', $worker;
my @burst;
for (1 .. 20) {
    my $s = IO::Socket::IP->new(PeerAddr => '127.0.0.1', PeerPort => $PORT)
        or last;
    my %h = signed_headers(cred => $owner{$h1}, method => 'GET',
                           uri => '/tent/blocks', host => $h1, port => 80,
                           nonce => random_nonce(8));
    print {$s} "GET /tent/blocks HTTP/1.0\r\nHost: $h1\r\n",
               (map { "$_: $h{$_}\r\n" } sort keys %h), "\r\n";
    push @burst, $s;
}
kill 'CONT', $worker;
is(scalar @burst, 20, 'a burst of 20 GET /blocks sent');
my $same = 0;
for my $s (@burst) {
    local $/;
    my $reply = <$s> // '';
    my ($body) = $reply =~ /\r\n\r\n(.*)\z/s;
    my $list = eval { decode_json($body // '') } || [];
    $same++ if $reply =~ m{^HTTP/1\.\d 200 }
               && join(' ', sort map { $_->{entity} } @$list)
                  eq join(' ', sort $X, $x2->entity);
}
is($same, 20, 'each one: 200, the new list');
my $burst = substr(error_log_text(), $mark);
my $reads = () = $burst =~ /tent blocks: 2 of "\Qhttp:\/\/$h1\E" read/g;
my $waits = () = $burst =~ /tent blocks: waiting for the list of (?x)
                             "\Qhttp:\/\/$h1\E" \s being \s read/g;
is($reads, 1, 'one store read for them all');
is($waits, 19, 'the others waited for it');

my $log = error_log_text();
my $read1 = () = $log =~ /tent blocks: 1 of "\Qhttp:\/\/$h1\E" read/g;
my $read2 = () = $log =~ /tent blocks: 0 of "\Qhttp:\/\/$h2\E" read/g;
cmp_ok($read1, '>=', 3, "${h1}'s list read again as ${h2}'s took the slot");
cmp_ok($read2, '>=', 3, "and ${h2}'s as ${h1}'s did");
unlike($log, qr/\[(?:alert|crit|emerg)\]/, 'no alert in the error log');

$_->stop for $x, $x2;

__DATA__

=== TEST 1: the server
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;

    server {
        listen 127.0.0.1:$TEST_NGINX_SERVER_PORT;
        server_name $TEST_NGINX_H1;
        tent_entity http://$TEST_NGINX_H1;
        location = /tent/oauth/authorize { tent_owner "one"; }
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_SERVER_PORT;
        server_name $TEST_NGINX_H2;
        tent_entity http://$TEST_NGINX_H2;
        location = /tent/oauth/authorize { tent_owner "two"; }
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_SERVER_PORT;
        server_name $TEST_NGINX_H3;
        tent_entity http://$TEST_NGINX_H3;
        location = /tent/oauth/authorize { tent_owner "three"; }
    }
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/posts
--- error_code: 200
--- response_body: []
