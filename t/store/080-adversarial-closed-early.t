# A request nginx ends while its store operation is in flight.  An
# anonymous GET with "Transfer-Encoding: chunked": the router discards its
# body (pending), submits the read of the owner's block list (made old by
# a block write) and the store owner, stopped (SIGSTOP), does not answer.
# Then a malformed chunk, or silence past lingering_timeout: nginx
# terminates the request and frees its pool, in which the operation (its
# timer, its node in the worker's tree of operations sent) and a waiter
# for the block list being read live.  Then the owner answers, or the
# store timeout comes: nothing of the ended request may be touched (ASan
# reports a heap-use-after-free before the fix, which the harness turns
# into a failure), the late reply is dropped, the other requests are
# answered.  Every case runs on the worker that is not the owner (the
# connections are picked by the X-Pid header); a thread of the owner
# that has the operation (the request kept until it answers) cannot be
# stopped from here and is not tested.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text
                  wait_for);
use Tent::Client;
use IO::Socket::IP;
use Socket qw(IPPROTO_TCP TCP_NODELAY);
use Time::HiRes qw(sleep);

add_block_preprocessor(sub {
    my $block = shift;
    $block->set_value(http_config => <<'CONF') unless defined $block->http_config;
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_timeout 2s;
    tent_outbound_allow 127.0.0.0/8;
CONF
    $block->set_value(config => <<'CONF') unless defined $block->config;
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    lingering_timeout 1s;
    add_header X-Pid $pid always;
    location = /tent/oauth/authorize { tent_owner "the owner"; }
CONF
});

master_on();
workers(2);
no_shuffle();
log_level('debug');
run_tests();

start_last_nginx();

my $PORT = $ENV{TEST_NGINX_SERVER_PORT} || 1984;
my $owner;
END { kill 'CONT', $owner if $owner; stop_last_nginx() }

my $c = Tent::Client->new;
my (undef, $cred) = $c->authorized_app('read_blocks,write_blocks');
($owner) = error_log_text() =~ /.*\] (\d+)#\d+: tent store: opened/s;
ok($owner, "the store owner: $owner");

# a keep-alive connection, and the pid of the worker that answered on it
sub connection {
    my $s = IO::Socket::IP->new(PeerAddr => '127.0.0.1', PeerPort => $PORT)
        or die "connect: $!";
    setsockopt($s, IPPROTO_TCP, TCP_NODELAY, 1);
    print {$s} "GET /tent/profile HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    my ($hdr, $body) = read_reply($s);
    my ($pid) = ($hdr // '') =~ /X-Pid: (\d+)/i;
    return ($s, $pid);
}

sub read_reply {
    my $s = shift;
    my $buf = '';
    while ($buf !~ /\r\n\r\n/) {
        sysread($s, $buf, 65536, length $buf) or return;
    }
    my ($hdr, $body) = split /\r\n\r\n/, $buf, 2;
    my ($len) = $hdr =~ /Content-Length: (\d+)/i;
    while (length($body) < ($len // 0)) {
        sysread($s, $body, 65536, length $body) or last;
    }
    return ($hdr, $body);
}

# n keep-alive connections on the worker that does not own the store
sub not_owner {
    my $n = shift;
    my @mine;
    for (1 .. 60) {
        my ($s, $pid) = connection();
        if ($pid && $pid != $owner) { push @mine, $s } else { close $s }
        last if @mine >= $n;
    }
    return @mine;
}

# a block written: the next read of the list is a store read
my $blocked = 0;
sub list_made_old {
    $blocked++;
    my $res = $c->request(POST => '/blocks', cred => $cred,
                          body => { entity => "http://b$blocked.example.test" });
    return $res->{status} == 200 || $res->{status} == 201;
}

my $CHUNKED = "GET /tent/posts HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              . "Transfer-Encoding: chunked\r\n\r\n";

sub crashed { error_log_text() =~ /exited on signal/ }

sub still_answers {
    my $res = $c->request(GET => '/posts');
    return $res->{status} == 200;
}

# 1: the reader ended by a malformed chunk, the owner answers after
{
    my ($B) = not_owner(1);
    ok($B, 'a connection on the worker that is not the owner');
    ok(list_made_old(), 'a block written');
    my $mark = length error_log_text();

    kill 'STOP', $owner;
    print {$B} $CHUNKED;
    sleep 0.3;
    print {$B} "zz\r\n";
    ok(wait_for(sub { substr(error_log_text(), $mark)
                      =~ /tent store: \w+ cancelled, its caller is gone/ }, 5),
       'the ended request took its read out of the store');
    kill 'CONT', $owner;

    ok(wait_for(sub { still_answers() }, 5), 'the owner answers again');
    ok(!crashed(), 'no worker crashed');
}

# 2: a waiter for the list being read ended; the reader is answered
{
    my ($A, $B) = not_owner(2);
    ok($A && $B, 'two connections on the worker that is not the owner');
    ok(list_made_old(), 'a block written');
    my $mark = length error_log_text();

    kill 'STOP', $owner;
    print {$A} "GET /tent/posts HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    sleep 0.3;
    print {$B} $CHUNKED;
    ok(wait_for(sub { substr(error_log_text(), $mark)
                      =~ /waiting for the list of .* being read/ }, 5),
       'the second request waits for the first one\'s read');
    print {$B} "zz\r\n";
    ok(wait_for(sub { substr(error_log_text(), $mark)
                      =~ /a waiter ended before the list came/ }, 5),
       'the ended waiter left the queue');
    kill 'CONT', $owner;

    my ($hdr) = read_reply($A);
    like($hdr // '', qr{^HTTP/1\.1 200 }, 'the reader is answered 200');
    ok(!crashed(), 'no worker crashed');
}

# 3: silence past lingering_timeout (1s) ends the reader
{
    my ($B) = not_owner(1);
    ok(list_made_old(), 'a block written');
    my $mark = length error_log_text();

    kill 'STOP', $owner;
    print {$B} $CHUNKED;
    ok(wait_for(sub { substr(error_log_text(), $mark)
                      =~ /tent store: \w+ cancelled, its caller is gone/ }, 5),
       'the request ended by the timeout took its read out of the store');
    kill 'CONT', $owner;

    ok(wait_for(sub { still_answers() }, 5), 'the owner answers again');
    ok(!crashed(), 'no worker crashed');
}

# 4: the reader ended, then the store timeout (2s) before the answer
{
    my ($A, $B) = not_owner(2);
    ok(list_made_old(), 'a block written');
    my $mark = length error_log_text();

    kill 'STOP', $owner;
    print {$B} $CHUNKED;
    sleep 0.3;
    print {$B} "zz\r\n";
    ok(wait_for(sub { substr(error_log_text(), $mark)
                      =~ /tent store: \w+ cancelled, its caller is gone/ }, 5),
       'the ended request took its read out of the store');

    # another read on that worker, answered 503 at the store timeout
    print {$A} "GET /tent/posts HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    my ($hdr) = read_reply($A);
    like($hdr // '', qr{^HTTP/1\.1 503 }, 'a later read: 503 at the timeout');
    kill 'CONT', $owner;

    ok(wait_for(sub { still_answers() }, 5), 'the owner answers again');
    ok(!crashed(), 'no worker crashed');
}

# 5: many requests ended at once, the owner running (bounded: 200)
{
    ok(list_made_old(), 'a block written');
    for my $i (1 .. 200) {
        my $s = IO::Socket::IP->new(PeerAddr => '127.0.0.1',
                                    PeerPort => $PORT) or next;
        setsockopt($s, IPPROTO_TCP, TCP_NODELAY, 1);
        syswrite($s, $CHUNKED);
        sleep(0.0002 * ($i % 5));
        syswrite($s, "zz\r\n");
        list_made_old() if $i % 50 == 0;
    }
    ok(wait_for(sub { still_answers() }, 5), 'the server answers');
    ok(!crashed(), 'no worker crashed');
}

__DATA__

=== TEST 1: the server
--- request
GET /tent/profile
--- error_code: 200
