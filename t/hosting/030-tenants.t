# Tenants of one nginx (issue 16; docs/admin.md): two provisioning
# servers (*.a.test, *.b.test) on one store.  An entity is reachable on
# its own name only; the operator cannot create a name no provisioning
# server serves; both servers' entities deliver.  The delivery engine's
# list follows the registry: a disabled entity's jobs are not attempted
# (its follower gets nothing) until it is enabled again, and the list
# grows past its first chunks as entities are created.  A flood of
# made-up host names is answered 404 and keeps the worker's cache of
# names not found bounded, without pushing the entities out of it.

use strict;
use warnings;

use Test::More;
use IO::Socket::IP;
use JSON::PP;
use List::Util qw(max);
use Tent::Peer;
use Tent::Client;
use Tent::Receiver;
use Tent::Util qw(http_request wait_for);
use Tent::Hosting qw(provisioning_host operator_request delete_all client_of);

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $BASE = $ENV{TEST_NGINX_PORT} || 21300;
my $P = $BASE + 3;
my $root = Tent::Util::own_root('/tmp/sr-tenants');
my ($host, $token, $tokfile) = provisioning_host(
    port => $P, root => $root, names => ['*.a.test', '*.b.test'],
    http => <<'CONF');
    tent_delivery_interval 200ms;
    tent_delivery_retry 1s 2s;
    keepalive_requests 100000;
CONF

sub admin {
    operator_request(port => $P, token => $token, body => $_[0]);
}


sub post { $_[0]->post($_[1], Tent::Client::status_body($_[2])) }

# ---- two provisioning servers: each entity on its own name only, and
# no entity of a name no provisioning server serves

my $res = admin({ action => 'create', entity => "http://x.a.test:$P" });
is($res->{status}, 201, 'x.a.test created') or diag $res->{body};
is(client_of('x.a.test', $P)->request(GET => '/profile')->{status}, 200,
   'x.a.test is served on its name');
$res = client_of('x.b.test', $P)->request(GET => '/profile');
is($res->{status}, 404, 'x.b.test, the other server\'s name: not created')
    or diag $res->{body};
$res = admin({ action => 'create', entity => "http://x.b.test:$P" });
is($res->{status}, 201, 'x.b.test created') or diag $res->{body};
is(client_of('x.b.test', $P)->request(GET => '/profile')->{status}, 200,
   'x.b.test is served on its name');

for my $name ('evil.c.test', 'a.test', 'x.a.test.evil', 'localhost') {
    $res = admin({ action => 'create', entity => "http://$name:$P" });
    is($res->{status}, 400, "no provisioning server serves $name: 400")
        or diag $res->{body};
    like($res->{json}{error} // '', qr/No provisioning server/,
         "$name: the error says why");
}
is_deeply([sort map { $_->{entity} } @{ admin()->{json} || [] }],
          ["http://x.a.test:$P", "http://x.b.test:$P"],
          'the registry holds the two entities only');

# ---- a follower (a scripted remote) of an entity of each server

my $rx = Tent::Receiver->start;

sub follow {
    my ($name) = @_;
    my $c = client_of($name, $P);
    my $r = $c->request(POST => '/followers',
                        body => { entity => $rx->url, types => ['all'],
                                  notification_path => "notifications/$name" });
    is($r->{status}, 200, "the remote follows $name") or diag $r->{body};
}

sub got {
    my ($name) = @_;
    return $rx->requests(method => 'POST',
                         path => qr{/notifications/\Q$name\E$});
}

sub owner {
    my ($name) = @_;
    my $c = client_of($name, $P);
    my (undef, $cred) = $c->authorized_app('write_posts,read_posts',
                                           post_types => 'all');
    return ($c, $cred);
}

for my $name ('gail.a.test', 'hank.b.test') {
    $res = admin({ action => 'create', entity => "http://$name:$P" });
    is($res->{status}, 201, "$name created") or diag $res->{body};
    follow($name);
}
my ($gail, $go) = owner('gail.a.test');
my ($hank, $ho) = owner('hank.b.test');

# the remote fails its first notifications (503): each job waits for a
# retry, due within 1 s

$rx->rules([{ method => 'POST', path => '/notifications/',
              action => { status => 503, body => 'later' } }]);
$res = post($gail, $go, 'from gail');
is($res->{status}, 200, 'gail posts') or diag $res->{body};
my $gpid = $res->{json}{id} // '';
$res = post($hank, $ho, 'from hank');
is($res->{status}, 200, 'hank posts') or diag $res->{body};
my $hpid = $res->{json}{id} // '';
ok(wait_for(sub { got('gail.a.test') >= 1 && got('hank.b.test') >= 1 }, 20),
   'both posts were offered once, and failed (503)');

# gail disabled: her job is not attempted, hank's goes

$res = admin({ action => 'disable', entity => "http://gail.a.test:$P" });
is($res->{status}, 200, 'gail disabled') or diag $res->{body};
my $gail_tries = () = got('gail.a.test');
$rx->rules([]);
sub again {    # the post offered again, after the failed try
    my ($name, $pid, $after) = @_;
    my @r = got($name);
    return grep { ($_->{body} // '') =~ /\Q$pid\E/ } @r[$after .. $#r];
}
ok(wait_for(sub { again('hank.b.test', $hpid, 1) }, 20),
   "hank's post retried and delivered (server *.b.test)");

# hank's retry came; gail's, due at the same time, would have too
ok(!wait_for(sub { got('gail.a.test') > $gail_tries }, 4),
   'no delivery attempted for the disabled entity\'s job')
    or diag scalar(got('gail.a.test')) . " requests for gail";

$res = admin({ action => 'enable', entity => "http://gail.a.test:$P" });
is($res->{status}, 200, 'gail enabled') or diag $res->{body};
ok(wait_for(sub { again('gail.a.test', $gpid, $gail_tries) }, 20),
   "enabled: gail's post delivered (server *.a.test)");
like($host->error_log_text,
     qr/entity "http:\/\/gail\.a\.test:$P" not active in the registry/,
     'the engine said gail left its work');

# ---- many entities: the list grows chunk by chunk (32 a chunk)

my $N = 150;
my $created = 0;
for my $i (1 .. $N) {
    $created++ if admin({ action => 'create',
                          entity => "http://n$i.b.test:$P" })->{status}
                  == 201;
}
is($created, $N, "$N more entities created");
my $total = $N + 4;
my @read;
ok(wait_for(sub {
       @read = $host->error_log_text
               =~ /the registry read: (\d+) active, (\d+) entities in (\d+) chunks/g;
       @read && $read[-3] == $total }, 20),
   "the engine's list: all $total registry entities active")
    or diag "last read: @read[-3 .. -1]";
cmp_ok($read[-1] // 0, '>=', 5, "in chunks allocated as they came")
    if @read;
follow("n$N.b.test");
my ($last, $lo) = owner("n$N.b.test");
$res = post($last, $lo, 'from the last one');
is($res->{status}, 200, "n$N posts") or diag $res->{body};
my $lpid = $res->{json}{id} // '';
ok(wait_for(sub {
       grep { ($_->{body} // '') =~ /\Q$lpid\E/ } got("n$N.b.test") }, 20),
   "the last entity created (beyond the first chunks) delivers");

# ---- a flood of made-up host names on one connection (one worker):
# each 404, the cache of names not found stays bounded (1024 a half,
# two halves), and the entities stay cached

sub keepalive_get {
    my ($sock, $hostname) = @_;
    print {$sock} "GET /tent/profile HTTP/1.1\r\nHost: $hostname:$P\r\n\r\n";
    my $head = '';
    while ($head !~ /\r\n\r\n/) {
        my $n = sysread($sock, my $buf, 1);
        return 0 unless $n;
        $head .= $buf;
    }
    my ($len) = $head =~ /Content-Length:\s*(\d+)/i;
    my $body = '';
    while (length $body < ($len // 0)) {
        my $n = sysread($sock, my $buf, $len - length $body);
        last unless $n;
        $body .= $buf;
    }
    return ($head =~ m{^HTTP/1\.\d (\d+)})[0] // 0;
}

local $SIG{PIPE} = 'IGNORE';
my $sock = IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $P)
    or die "connect: $!";
is(keepalive_get($sock, 'x.a.test'), 200, 'x.a.test before the flood');
my $offset = -s $host->error_log_file;
my $FLOOD = 3000;
my $notfound = 0;
for my $i (1 .. $FLOOD) {
    $notfound++ if keepalive_get($sock, "m$i-" . int(rand 1e9) . '.a.test')
                   == 404;
}
is($notfound, $FLOOD, "$FLOOD made-up host names: 404 each");
# a name longer than any DNS name: answered, not cached (2048 of them
# would hold the worker's memory by the Host header's size)
my $long = ('l' x 60 . '.') x 20 . 'a.test';
is(keepalive_get($sock, $long), 404, 'a made-up name of 1,226 bytes: 404');
is(keepalive_get($sock, 'x.a.test'), 200, 'x.a.test after the flood');
close $sock;

my $log = $host->error_log_text($offset);
my @sizes = $log =~ /as \d+ \(names not found: (\d+) and (\d+) older\)/g;
my $most = 0;
for (my $i = 0; $i < @sizes; $i += 2) {
    $most = max($most, $sizes[$i] + $sizes[$i + 1]);
}
ok(@sizes >= 2 * $FLOOD, 'every name not found was cached')
    or diag scalar(@sizes) / 2 . ' cached';
cmp_ok($most, '<=', 2048, 'the cache of names not found: at most 2048')
    or diag "at most $most";
like($log, qr/the cache of names not found is full \(1024\)/,
     'its older half dropped when full');
like($log, qr/a name not found of \d{4} bytes: not cached/,
     'the long name is not cached');
unlike($log, qr/cached "http:\/\/(?:l{60}\.){20}/,
       'no cache entry holds it');
like($log, qr/"http:\/\/x\.a\.test:$P" is \d+ \(cached\)/,
     'the entity is still cached after the flood');
unlike($log, qr/reading "http:\/\/x\.a\.test:$P"/,
       'and cost no store read');

unlike($host->error_log_text, qr/\[alert\]|exited on signal|runtime error/,
       'no alert, no crash');

$rx->stop;
$host->stop;
unlink $tokfile;

done_testing();
