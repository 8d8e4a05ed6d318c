# What one unsigned request may make us send (security issue #11,
# findings 3 and 13).  A profile may list 2,000 servers (only its 64 KB
# bound them); the follow challenge, the check of an unsigned mention and
# every delivery tried each in turn, a silent server cost a whole
# tent_outbound_timeout with no overall deadline, and unsigned requests
# could take every outbound slot of the worker that delivers.  Now: at
# most tent_outbound_servers of a profile's servers are kept and tried,
# discovery tries as many profile links, an operation has one deadline
# (tent_outbound_deadline), and unsigned requests have their own share of
# the slots (tent_outbound_anonymous_requests), answered 503 once it is
# used.  Receivers on loopback play the entities and the third hosts
# whose connections are counted.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text);
use Tent::Client;
use Tent::Receiver;
use Tent::Peer;
use IO::Select;
use IO::Socket::IP;
use JSON::PP;
use Time::HiRes qw(sleep time);

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $A_URL = "http://127.0.0.1:" . ($ENV{TEST_NGINX_SERVER_PORT} || 1984);
my $c = Tent::Client->new;
my $CORE = 'https://tent.io/types/info/core/v0.1.0';
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $REL = 'https://tent.io/rels/profile';
my $TENT_CT = 'application/vnd.tent.v0+json';
my $MANY = 1500;
my $BUSY = 'Too many follow requests and mentions are being checked at '
         . 'other servers; try again later';

# an entity whose profile lists $n servers, all "$target/tent"
sub many_servers {
    my ($target, $n) = @_;
    my $rx = Tent::Receiver->start;
    my $e = $rx->url;
    $rx->rules([{ method => 'GET', path => '^/tent/profile$',
                  action => { status => 200,
                              headers => { 'Content-Type' => $TENT_CT },
                              body => { $CORE => {
                                  entity => $e, licenses => [],
                                  servers => [("$target/tent") x $n] } } } }]);
    return $rx;
}

sub follow_body {
    my ($e) = @_;
    return { entity => $e, notification_path => 'notifications/n' };
}

# a public post of $e that mentions $whom, as pushed unsigned
sub a_mention {
    my ($e, $id, $whom) = @_;
    return { id => $id, entity => $e, type => $STATUS,
             content => { text => 'hello' }, published_at => 1700000000,
             licenses => [], permissions => { public => JSON::PP::true },
             mentions => [{ entity => $whom }], version => 1 };
}

sub count_log {
    my ($text, $re) = @_;
    my $n = () = $text =~ /$re/g;
    return $n;
}

sub wait_until {
    my ($secs, $code) = @_;
    my $end = time + $secs;
    until ($code->()) {
        return 0 if time > $end;
        sleep 0.1;
    }
    return 1;
}

# --- finding 3: one unsigned request, 1,500 servers ---------------------

# a third host that resets every connection: each server "cannot be
# reached", so the next one was tried
my $sink = Tent::Receiver->start(rules => [{ action => 'reset' }]);
my $S = $sink->url;

my $e1 = many_servers($S, $MANY);
my $res = $c->request(POST => '/followers', body => follow_body($e1->url),
                      timeout => 60);
is($res->{status}, 403, "a follow whose profile lists $MANY servers that "
                        . 'reset: 403') or diag $res->{body};
like($res->{json}{error} // '', qr/challenge GET .* failed: could not connect/,
     'the challenge failed');
is($sink->connections, 3, 'one unsigned POST /followers: 3 connections to '
                          . "the third host, not $MANY");

$sink->clear;
my $e2 = many_servers($S, $MANY);
$res = $c->request(POST => '/posts', timeout => 60,
                   body => a_mention($e2->url, 'm1', $A_URL));
is($res->{status}, 503, 'an unsigned mention whose servers all reset: 503')
    or diag $res->{body};
like($res->{json}{error} // '',
     qr/^Verification of the mention: GET .*could not connect/,
     'the error names the check');
is($sink->connections, 3, 'one unsigned mention: 3 connections to the '
                          . "third host, not $MANY");

# discovery: a page with 8 profile links, all to the third host
$sink->clear;
my $links = Tent::Receiver->start;
$links->rules([{ method => 'HEAD', path => '^/$',
                 action => { status => 200, headers => {
                     Link => join(', ', map { "<$S/p$_>; rel=\"$REL\"" }
                                            1 .. 8) } } }]);
$res = $c->request(POST => '/followers', body => follow_body($links->url),
                   timeout => 60);
is($res->{status}, 503, 'a page with 8 profile links that reset: 503')
    or diag $res->{body};
like($res->{json}{error} // '', qr/^Discovery of /, 'discovery\'s error');
is($sink->connections, 3, 'discovery tried 3 profile links, not 8');

# --- silent servers: one deadline for the whole operation ----------------

# tent_outbound_timeout 2s, tent_outbound_deadline 3500ms: the first
# silent server costs its 2 s, the second what is left, and no third is
# asked (before, 1,500 times 2 s)
my $silent = Tent::Receiver->start(rules => [{ action => 'hang' }]);
my $e3 = many_servers($silent->url, $MANY);
$res = $c->request(POST => '/followers', body => follow_body($e3->url),
                   timeout => 60);
is($res->{status}, 403, 'a follow whose servers all hang: 403')
    or diag $res->{body};
like($res->{json}{error} // '',
     qr/challenge GET .* failed: the deadline of the whole operation passed/,
     'the deadline of the operation ended it');
my $n = $silent->connections;
ok($n >= 1 && $n <= 2, "the silent servers asked before the deadline: $n "
                       . '(at most 2, fewer than tent_outbound_servers)');

$silent->clear;
my $e4 = many_servers($silent->url, $MANY);
$res = $c->request(POST => '/posts', timeout => 60,
                   body => a_mention($e4->url, 'h1', $A_URL));
is($res->{status}, 504, 'a mention whose servers all hang: 504')
    or diag $res->{body};
like($res->{json}{error} // '', qr/deadline of the whole operation passed/,
     'the deadline of the operation ended it');
$n = $silent->connections;
ok($n >= 1 && $n <= 2, "the silent servers asked: $n (at most 2)");

# --- finding 13: a stored list of servers --------------------------------

# the first server answers the challenge and refuses every delivery
my $store_sink = Tent::Receiver->start(rules => [{ method => 'POST',
                                                   action => 'reset' }]);
my $fol = many_servers($store_sink->url, $MANY);
$res = $c->request(POST => '/followers', body => follow_body($fol->url));
is($res->{status}, 200, "a follower whose profile lists $MANY servers")
    or diag $res->{body};
my @challenges = $store_sink->requests(method => 'GET');
is(scalar @challenges, 1, 'its first server answered the challenge');

# follower posts are private (sent to no follower): a post of ours is
# what goes to it, one attempt (tent_delivery_attempts 1), 3 servers
my (undef, $owner) = $c->authorized_app('write_posts', post_types => 'all');
$store_sink->clear;
$res = $c->request(POST => '/posts', cred => $owner,
                   body => { type => $STATUS, content => { text => 'hi' },
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a post of ours') or diag $res->{body};
ok(wait_until(20, sub { count_log(error_log_text(), qr/giving up after/) >= 1
                      }), 'its delivery gave up');
is(scalar $store_sink->requests(method => 'POST'), 3,
   'a post to the follower: 3 attempts, not one per stored server');

$_->stop for $e1, $e2, $e3, $e4, $links, $fol, $silent, $store_sink, $sink;

unlike(error_log_text(), qr/\[alert\]|\[emerg\]|exited on signal/,
       'no alert, no crash in the error log');

# --- a second server: budgets, and rows stored before a smaller cap -------

my $HTTP = <<'CONF';
    tent_store $SERVROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 30s;
    tent_outbound_deadline 60s;
    tent_outbound_max_requests 8;
    tent_outbound_anonymous_requests 2;
    # both hanging follows name one host: its share is all of theirs here
    # (the share per host is t/outbound/060)
    tent_outbound_anonymous_host_requests 2;
    tent_delivery_concurrency 4;
    tent_delivery_interval 200ms;
    tent_delivery_retry 1s 2s;
    tent_delivery_attempts 1;
CONF

sub server_config {
    my ($servers) = @_;
    return <<"CONF";
        tent_entity \$URL;
        tent_outbound_servers $servers;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF
}

my $peer = Tent::Peer->start(http_config => $HTTP, worker_processes => 1,
                             server_config => server_config(32));
my $pc = $peer->client;
my (undef, $powner) = $peer->authorized_app('write_posts,write_followings',
                                            post_types => 'all');

# a follower stored with 32 servers (this server's cap then)
my $sink2 = Tent::Receiver->start(rules => [{ method => 'POST',
                                              action => 'reset' }]);
my $fol2 = many_servers($sink2->url, $MANY);
$res = $pc->request(POST => '/followers', body => follow_body($fol2->url));
is($res->{status}, 200, 'a follower stored with tent_outbound_servers 32')
    or diag $res->{body};
$res = $pc->request(POST => '/posts', cred => $powner,
                    body => { type => $STATUS, content => { text => 'zero' },
                              permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a post') or diag $res->{body};
ok(wait_until(20, sub { count_log($peer->error_log_text, qr/giving up after/)
                        >= 1 }), 'its delivery gave up');
# one offer (a row ended while a scan ran is not started again: no
# second offer), every stored server tried
is(scalar $sink2->requests(method => 'POST'), 32, 'after 32 attempts');
my $gave = count_log($peer->error_log_text, qr/giving up after/);

# the cap lowered: the row keeps 32, each delivery tries 2
ok($peer->reload(server_config => server_config(2)),
   'reloaded with tent_outbound_servers 2');
$sink2->clear;
$res = $pc->request(POST => '/posts', cred => $powner,
                    body => { type => $STATUS, content => { text => 'one' },
                              permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a post') or diag $res->{body};
ok(wait_until(20, sub { count_log($peer->error_log_text, qr/giving up after/)
                        > $gave }), 'its delivery gave up');
is(scalar $sink2->requests(method => 'POST'), 2,
   'a row stored with 32 servers: 2 tried (truncated on use)');

# --- unsigned requests that hang take their share, not the deliveries' --

my $follower = Tent::Receiver->start;
$res = $pc->request(POST => '/followers',
                    body => follow_body($follower->url));
is($res->{status}, 200, 'a follower that answers') or diag $res->{body};

# entities whose discovery never answers (tent_outbound_timeout 30s)
my $hang = Tent::Receiver->start(rules => [{ action => 'hang' }]);

# an unsigned POST /followers on a socket of its own, not waited for
sub send_follow {
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                PeerPort => $peer->port)
        or die "connect: $!";
    my $body = encode_json(follow_body($hang->url));
    print {$s} "POST /tent/followers HTTP/1.1\r\nHost: localhost\r\n"
             . "Content-Type: $TENT_CT\r\nContent-Length: "
             . length($body) . "\r\nConnection: close\r\n\r\n$body";
    return $s;
}

# what came back on each socket within $secs: '' where nothing did
sub answers {
    my ($secs, @socks) = @_;
    my %raw = map { ($_ => '') } @socks;
    my $sel = IO::Select->new(@socks);
    my $end = time + $secs;
    while ($sel->count && time < $end) {
        for my $s ($sel->can_read($end - time)) {
            my $n = sysread($s, $raw{$s}, 65536, length $raw{$s});
            $sel->remove($s) unless $n;
        }
    }
    return map { $raw{$_} } @socks;
}

my @held;
for my $i (1 .. 2) {
    push @held, send_follow();
    ok(wait_until(10, sub { $hang->connections >= $i }),
       "hanging follow $i reached the silent entity");
}

# the anonymous share (2) is used: more unsigned work is refused at once,
# not queued behind them nor given the slots of deliveries
my @more = map { send_follow() } 3 .. 12;
my $i = 3;
for my $raw (answers(5, @more)) {
    my ($head, $body) = split /\r\n\r\n/, $raw, 2;
    like($head // '', qr{^HTTP/1\.1 503 }, "unsigned follow $i while 2 hang: "
                                          . '503 at once');
    like($head // '', qr/\r\nRetry-After: \d+/i,
         "unsigned follow $i: with Retry-After");
    is(eval { decode_json($body)->{error} }, $BUSY,
       "unsigned follow $i: the error says so");
    $i++;
}
$res = $pc->request(POST => '/posts',
                    body => a_mention($hang->url, 'x1', $peer->url));
is($res->{status}, 503, 'an unsigned mention while 2 hang: 503');
is($res->{json}{error}, $BUSY, 'the error says so');
is($hang->connections, 2, 'the refused requests sent nothing');

# deliveries and signed requests still find slots
my $p = $pc->request(POST => '/posts', cred => $powner,
                     body => { type => $STATUS, content => { text => 'two' },
                               permissions => { public => JSON::PP::true } });
is($p->{status}, 200, 'a post while unsigned requests hang')
    or diag $p->{body};
ok(wait_until(15, sub {
       grep { (eval { decode_json($_->{body})->{id} } // '') eq
              ($p->{json}{id} // '-') }
            $follower->requests(method => 'POST',
                                path => qr{^/tent/notifications/n$}) }),
   'the follower got it while the unsigned requests hang');

my $followed = Tent::Receiver->start;
$res = $pc->request(POST => '/followings', cred => $powner,
                    body => { entity => $followed->url });
is($res->{status}, 200, 'a signed request that goes out: 200')
    or diag $res->{body};

ok(!IO::Select->new(@held)->can_read(0),
   'the hanging follows are still waiting');

# the silent entity goes: they end, with discovery's error (it closed)
$hang->stop;
for my $s (@held) {
    local $/;
    my $raw = eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm 20;
        my $r = <$s>;
        alarm 0;
        $r;
    } // '';
    like($raw, qr{^HTTP/1\.1 502 .*"error":"Discovery of }s,
         'a hanging follow ends with discovery\'s error');
}

$peer->stop;
$_->stop for $sink2, $fol2, $follower, $followed;

__DATA__

=== TEST 1: tent_outbound_servers is between 1 and 32
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_servers 0;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_outbound_servers" must be between 1 and 32



=== TEST 2: tent_outbound_servers: 33 is too many
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    tent_outbound_servers 33;
--- must_die
--- error_log
"tent_outbound_servers" must be between 1 and 32



=== TEST 3: tent_outbound_servers takes a number
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_servers many;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
invalid number



=== TEST 4: tent_outbound_deadline is more than 0
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_deadline 0;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_outbound_deadline" must be more than 0



=== TEST 5: tent_outbound_deadline takes a time
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    tent_outbound_deadline soon;
--- must_die
--- error_log
invalid value



=== TEST 6: the anonymous share leaves slots to the rest
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_max_requests 16;
    tent_outbound_anonymous_requests 16;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_outbound_anonymous_requests" must be less than "tent_outbound_max_requests" (16)



=== TEST 7: tent_outbound_anonymous_requests takes a number
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_anonymous_requests -1;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
invalid number



=== TEST 8: valid values load; 0 refuses every unsigned outbound request
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_servers 1;
    tent_outbound_deadline 1m;
    tent_outbound_anonymous_requests 0;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
POST /tent/followers
{"entity":"http://127.0.0.1:1","notification_path":"notifications/n"}
--- more_headers
Content-Type: application/vnd.tent.v0+json
--- error_code: 503
--- response_headers
Retry-After: 1
--- response_body chomp
{"error":"Too many follow requests and mentions are being checked at other servers; try again later"}



=== TEST 9: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 2s;
    tent_outbound_deadline 3500ms;
    tent_delivery_interval 200ms;
    tent_delivery_retry 1s 2s;
    tent_delivery_attempts 1;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/posts
--- error_code: 200
