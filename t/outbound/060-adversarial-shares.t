# Issue #26: a worker's outbound slots have shares.  Tenants of one
# nginx (tent_entity http://$host), tent_outbound_max_requests 8: before,
# tenant A's proxied reads (GET /followings/:id/posts) hanging at a
# server of its own took every slot, and tenant B's POST /followings got
# 503 and B's post waited; unsigned follows naming one silent host took
# the whole anonymous share, and a real stranger's follow got 503.
# Now: one tenant holds tent_outbound_entity_requests (2), one remote
# host tent_outbound_host_requests (4), the unsigned requests naming one
# host tent_outbound_anonymous_host_requests (1 of 4); a full share is
# 503 + Retry-After at once, with an error that names it, and the rest
# still goes: B's follow, B's delivery, a stranger's follow.  What a
# tenant's followings make it send (profile refreshes hanging at the
# server it follows) is a second share, and leaves the owner's alone.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx wait_for);
use Tent::Client;
use Tent::MAC qw(signed_headers);
use Tent::Peer;
use Tent::Receiver;
use IO::Select;
use IO::Socket::IP;
use JSON::PP;
use Time::HiRes qw(time);

master_on();
workers(1);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $TENT_CT = 'application/vnd.tent.v0+json';
my $ENTITY_BUSY = 'too many outbound requests in flight for this entity '
                . '(tent_outbound_entity_requests)';
my $HOST_BUSY = 'too many outbound requests in flight to this host '
              . '(tent_outbound_host_requests)';
my $ANON_HOST_BUSY = 'Too many follow requests and mentions naming this '
                   . 'host are being checked; try again later';

# four tenants, each a server block with its tent_entity (the delivery
# engine pushes their posts)
my $blocks = join '', map { <<"CONF" } qw(alice bob carol dave);
    server {
        listen 127.0.0.1:\$PORT;
        server_name $_.test;
        tent_entity http://$_.test;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
    }
CONF

my $peer = Tent::Peer->start(
    http_config => <<'CONF' . $blocks,
    tent_store $SERVROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_max_requests 8;
    tent_outbound_anonymous_requests 4;
    tent_delivery_concurrency 2;
    tent_outbound_timeout 60s;
    tent_outbound_deadline 60s;
    tent_delivery_interval 200ms;
CONF
    worker_processes => 1);

sub tenant {
    my ($host) = @_;
    my $c = $peer->client(host => $host);
    my (undef, $owner) = $c->authorized_app(
        'read_posts,write_posts,read_followings,write_followings',
        post_types => 'all');
    return { c => $c, owner => $owner, host => $host };
}

my %T = map { ($_ => tenant("$_.test")) } qw(alice bob carol dave);
my $res;

# the server alice, carol and dave follow, that will hang their reads
my $ra = Tent::Receiver->start;
for my $t (qw(alice carol dave)) {
    my $res = $T{$t}{c}->request(POST => '/followings', cred => $T{$t}{owner},
                                 body => { entity => $ra->url });
    is($res->{status}, 200, "$t follows its remote") or diag $res->{body};
    $T{$t}{following} = $res->{json}{id} // 'none';
}

# a server carol follows, whose profile will hang its refreshes
my $rc = Tent::Receiver->start;
$res = $T{carol}{c}->request(POST => '/followings', cred => $T{carol}{owner},
                             body => { entity => $rc->url });
is($res->{status}, 200, 'carol follows another remote') or diag $res->{body};
my $rc_following = $res->{json}{id} // 'none';
my ($rc_given) = $rc->followers;
my $rc_cred = { map { $_ => ($rc_given || {})->{$_} }
                qw(mac_key_id mac_key mac_algorithm) };

# bob's follower, an ordinary server
my $rf = Tent::Receiver->start;
$res = $T{bob}{c}->request(POST => '/followers', body => {
    entity => $rf->url, notification_path => 'notifications/n' });
is($res->{status}, 200, 'a remote follows bob') or diag $res->{body};

$ra->rules([{ method => 'GET', path => '^/tent/posts', action => 'hang' }]);

# a request on a socket of its own, not waited for
sub send_raw {
    my ($t, $method, $path, $body, $signed) = @_;
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                PeerPort => $peer->port)
        or die "connect: $!";
    my %h = (Host => $t->{host});
    %h = (%h, signed_headers(cred => $t->{owner}, method => $method,
                             uri => $path, host => $t->{host}, port => 80))
        if $signed;
    my $raw = "$method $path HTTP/1.1\r\nConnection: close\r\n"
            . join('', map { "$_: $h{$_}\r\n" } sort keys %h);
    if (defined $body) {
        $body = encode_json($body);
        $raw .= "Content-Type: $TENT_CT\r\nContent-Length: "
              . length($body) . "\r\n";
    }
    print {$s} $raw . "\r\n" . ($body // '');
    return $s;
}

sub read_posts {
    my ($t) = @_;
    return send_raw($t, GET => "/tent/followings/$t->{following}/posts",
                    undef, 1);
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

sub hanging { scalar $ra->requests(method => 'GET', path => qr{^/tent/posts}) }

# ---- 1. alice's hanging reads: her share (2), not the worker's 8

my @alice = map { read_posts($T{alice}) } 1 .. 8;
ok(wait_for(sub { hanging() >= 2 }, 10), 'two of alice\'s reads hang');
my @first = answers(3, @alice);
my @held = map { $alice[$_] } grep { $first[$_] eq '' } 0 .. $#alice;
my @refused = grep { $_ ne '' } @first;
is(scalar @refused, 6, 'the 6 others are answered at once');
for my $raw (@refused) {
    my ($head, $body) = split /\r\n\r\n/, $raw, 2;
    like($head, qr{^HTTP/1\.1 503 }, 'alice: 503');
    like($head, qr/\r\nRetry-After: \d+/i, 'alice: with Retry-After');
    like(eval { decode_json($body)->{error} } // '', qr/\Q$ENTITY_BUSY\E/,
         'alice: the error names her share');
}
is(hanging(), 2, 'the refused reads sent nothing');

# bob's follow and bob's delivery still go
my $rb = Tent::Receiver->start;
$res = $T{bob}{c}->request(POST => '/followings', cred => $T{bob}{owner},
                           body => { entity => $rb->url });
is($res->{status}, 200, "bob's follow while alice's reads hang")
    or diag $res->{body};
my $p = $T{bob}{c}->request(POST => '/posts', cred => $T{bob}{owner},
                            body => { type => $STATUS,
                                      content => { text => 'hi' },
                                      permissions => {
                                          public => JSON::PP::true } });
is($p->{status}, 200, "bob posts") or diag $p->{body};
ok(wait_for(sub {
       grep { (eval { decode_json($_->{body})->{id} } // '') eq
              ($p->{json}{id} // '-') }
            $rf->requests(method => 'POST', path => qr{^/tent/notif}) }, 20),
   "bob's follower got the post while alice's reads hang");

# ---- 1b. what carol's followings make her send is a share of its own:
# profile notifications from the server she follows, whose refreshes
# hang there, leave her own reads their room

$rc->rules([{ method => 'GET', path => '^/tent/profile$',
              action => 'hang' }]);
my @notes = map {
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                PeerPort => $peer->port)
        or die "connect: $!";
    my $path = "/tent/notifications/$rc_following";
    my $body = encode_json({
        id => "p$_", entity => $rc->url,
        type => 'https://tent.io/types/post/profile/v0.1.0',
        content => { types => ['https://tent.io/types/info/core/v0.1.0'],
                     action => 'update' },
        published_at => 1700000000 + $_, licenses => [],
        permissions => { public => JSON::PP::true }, version => 1 });
    my %h = (Host => 'carol.test',
             signed_headers(cred => $rc_cred, method => 'POST', uri => $path,
                            host => 'carol.test', port => 80));
    print {$s} "POST $path HTTP/1.1\r\nConnection: close\r\n"
             . join('', map { "$_: $h{$_}\r\n" } sort keys %h)
             . "Content-Type: $TENT_CT\r\nContent-Length: "
             . length($body) . "\r\n\r\n$body";
    $s;
} 1 .. 4;
ok(wait_for(sub { $rc->requests(method => 'GET',
                                path => qr{^/tent/profile$}) >= 2 }, 10),
   'two profile refreshes of carol\'s hang');
my @nfirst = answers(3, @notes);
my @nheld = map { $notes[$_] } grep { $nfirst[$_] eq '' } 0 .. $#notes;
is(scalar @nheld, 2, 'the two other notifications are answered at once')
    or diag join "\n", map { substr($_, 0, 300) } @nfirst;
my @carol = (read_posts($T{carol}));
ok(wait_for(sub { hanging() >= 3 }, 10),
   'carol\'s own read still goes: it reached her remote');
$rc->stop;
my @nend = answers(20, @nheld);
is(scalar(grep { $_ eq '' } @nend), 0, 'the held notifications ended');

# ---- 2. one remote host: carol's two reads fill its share (4) with
# alice's, and dave's read at that host is refused; elsewhere he goes

push @carol, read_posts($T{carol});
ok(wait_for(sub { hanging() >= 4 }, 10), 'carol\'s two reads hang too');
my ($dave) = answers(5, read_posts($T{dave}));
my ($dhead, $dbody) = split /\r\n\r\n/, $dave, 2;
like($dhead // '', qr{^HTTP/1\.1 503 }, 'dave\'s read at the full host: 503');
like($dhead // '', qr/\r\nRetry-After: \d+/i, 'with Retry-After');
like(eval { decode_json($dbody)->{error} } // '', qr/\Q$HOST_BUSY\E/,
     'the error names the host\'s share');
is(hanging(), 4, 'and it sent nothing');
$res = $T{dave}{c}->request(POST => '/followings', cred => $T{dave}{owner},
                            body => { entity => $rb->url });
is($res->{status}, 200, 'dave follows another host meanwhile')
    or diag $res->{body};

# ---- 3. unsigned follows naming one silent host: its share (1 of 4)

my $silent = Tent::Receiver->start(rules => [{ action => 'hang' }]);
my @flood = map {
    send_raw($T{bob}, POST => '/tent/followers',
             { entity => $silent->url, notification_path => 'notifications/n' })
} 1 .. 6;
ok(wait_for(sub { $silent->connections >= 1 }, 10),
   'an unsigned follow naming the silent host reached it');
my @afirst = answers(3, @flood);
push @held, map { $flood[$_] } grep { $afirst[$_] eq '' } 0 .. $#flood;
my @anon = grep { $_ ne '' } @afirst;
is(scalar @anon, 5, 'the 5 others are answered at once');
for my $raw (@anon) {
    my ($head, $body) = split /\r\n\r\n/, $raw, 2;
    like($head, qr{^HTTP/1\.1 503 }, 'the flood: 503');
    like($head, qr/\r\nRetry-After: \d+/i, 'the flood: with Retry-After');
    is(eval { decode_json($body)->{error} }, $ANON_HOST_BUSY,
       'the flood: the error names the host\'s share');
}
$res = $T{bob}{c}->request(POST => '/posts', body => {
    id => 'm1', entity => $silent->url, type => $STATUS,
    content => { text => 'hello' }, published_at => 1700000000,
    licenses => [], permissions => { public => JSON::PP::true },
    mentions => [{ entity => 'http://bob.test' }], version => 1 });
is($res->{status}, 503, 'an unsigned mention by the silent host: 503');
is(($res->{json} || {})->{error}, $ANON_HOST_BUSY,
   'the mention: the error names the host\'s share');
is($silent->connections, 1, 'the refused follows and mention sent nothing');

my $stranger = Tent::Receiver->start;
$res = $T{bob}{c}->request(POST => '/followers', body => {
    entity => $stranger->url, notification_path => 'notifications/n' });
is($res->{status}, 200, 'a stranger at another host follows bob meanwhile')
    or diag $res->{body};
$res = $T{carol}{c}->request(POST => '/followers', body => {
    entity => $stranger->url, notification_path => 'notifications/n' });
is($res->{status}, 200, '... and carol') or diag $res->{body};

# the hanging ends: everything is answered, nothing is left held
$ra->stop;
$silent->stop;
is(scalar @held, 3, 'two of alice\'s reads and a follow were held');
my @ends = answers(20, @held, @carol);
is(scalar(grep { $_ eq '' } @ends), 0, 'every hanging request ended');
$res = $T{alice}{c}->request(GET => "/followings/$T{alice}{following}/posts",
                             cred => $T{alice}{owner});
unlike(($res->{json} || {})->{error} // '', qr/\Q$ENTITY_BUSY\E/,
       'alice\'s share is back once they end (' . $res->{status} . ')');

my $log = $peer->error_log_text;
like($log, qr/2[ ]outbound[ ]requests[ ]in[ ]flight[ ]for
              [ ]"http:..alice\.test",[ ]"tent_outbound_entity_requests"
              [ ]reached/x,
     'alice\'s full share: logged');
like($log, qr/4[ ]outbound[ ]requests[ ]in[ ]flight[ ]to
              [ ]http:..127\.0\.0\.1:\d+,[ ]"tent_outbound_host_requests"
              [ ]reached/x,
     'the host\'s: logged');
like($log, qr/1 unsigned requests naming http:..127\.0\.0\.1:\d+ in flight/,
     'the unsigned requests\': logged');

$peer->stop;
$_->stop for $rf, $rb, $stranger;

__DATA__

=== TEST 1: a tenant's share is at most the worker's slots
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_max_requests 16;
    tent_outbound_entity_requests 17;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_outbound_entity_requests" must be between 1 and "tent_outbound_max_requests" (16)



=== TEST 2: a host's share is at most the worker's slots
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_max_requests 16;
    tent_outbound_host_requests 0;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_outbound_host_requests" must be between 1 and "tent_outbound_max_requests" (16)



=== TEST 3: a named host's share of unsigned requests is within theirs
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_anonymous_requests 4;
    tent_outbound_anonymous_host_requests 5;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_outbound_anonymous_host_requests" must not be more than "tent_outbound_anonymous_requests" (4)



=== TEST 4: the shares load
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_max_requests 16;
    tent_outbound_entity_requests 16;
    tent_outbound_host_requests 8;
    tent_outbound_anonymous_host_requests 1;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/profile
--- error_code: 200
