# Security issue #11, the adversarial review of authentication.
#
# 1. Cross-entity authentication: entities sharing one nginx and one
#    store (two server blocks with their own tent_entity; one block with
#    "tent_entity http://$host" and two names) must never accept each
#    other's keys.  Every key kind of entity A (a: app, u: owner, s: key
#    A gave a follower, the key a followed remote gave A) is tried on
#    routes of entity B after it was used at A in both workers, so a
#    worker's credential cache holds it.  A followed remote picks its own
#    key id: equal to another entity's key id it resolves only at its
#    entity; equal to one of ours it is refused; a key we create (an
#    import) never overwrites a remote's row; the principal's kind comes
#    from the stored record, never from the id's prefix.
# 2. The nonce cache: flooded with an app key (anyone gets one from
#    POST /apps), it refuses app keys with 503 and Retry-After instead of
#    forgetting nonces; a captured owner request replayed after the flood
#    is still refused, the owner with a fresh nonce still served;
#    followers have a budget of their own; over-long nonces are refused.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text);
use Tent::Client;
use Tent::MAC qw(random_nonce);
use Tent::Peer;
use Tent::Receiver;
use JSON::PP;
use IO::Socket::IP;

BEGIN {
    # a free port for the reuseport servers that spread over both workers
    my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                Listen => 1) or die "no free port: $!";
    $ENV{TEST_NGINX_SPREAD_PORT} = $s->sockport;
    close $s;
}

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $SPREAD = $ENV{TEST_NGINX_SPREAD_PORT};
my $OWNER_SCOPES = 'read_apps,write_apps,read_posts,write_posts,'
    . 'read_followers,write_followers,read_followings,write_followings,'
    . 'read_secrets,write_secrets';

sub client_for { Tent::Client->new(port => $SPREAD, host => $_[0]) }

sub rand_hex { random_nonce($_[0] || 8) }

sub cred_of {
    my ($j) = @_;
    return { map { $_ => $j->{$_} } qw(mac_key_id mac_key mac_algorithm) };
}

sub code {
    my ($r) = @_;
    my $e = ref $r->{json} eq 'HASH' ? $r->{json}{error} : undef;
    return ($r->{status} // '') . ' ' . ($e // '');
}

# send() until both workers answered (X-Pid) and at least $min times:
# the list of answers
sub both_workers {
    my ($send, $min) = @_;
    my (%pids, @res);
    for (1 .. 60) {
        my $r = $send->();
        push @res, $r;
        $pids{ $r->{headers}{'x-pid'} // '?' }++;
        last if keys %pids >= 2 && @res >= ($min || 2);
    }
    return @res;
}

sub all_are {
    my ($want, $name, @res) = @_;
    my %pids = map { ($_->{headers}{'x-pid'} // '?') => 1 } @res;
    my @bad = grep { code($_) !~ $want } @res;
    ok(!@bad && keys %pids >= 2,
       "$name (" . scalar(@res) . ' tries, ' . scalar(keys %pids)
       . ' workers)')
        or diag(join "\n", map { code($_) . " pid "
                                 . ($_->{headers}{'x-pid'} // '?') } @bad);
}

# the remote that entities follow, and that follows them
my $rx = Tent::Receiver->start;

# ---- the entities: owner (u:), its app (a:), a follower's s:, a following

sub follow_remote {
    my ($c, $owner, $rxx, $key_id, $key) = @_;
    $rxx->rules([{ method => 'POST', path => '^/tent/followers$',
                   times => 1,
                   action => { status => 200, body => {
                       id => rand_hex(8), entity => "http://$c->{host}",
                       mac_key_id => $key_id, mac_key => $key,
                       mac_algorithm => 'hmac-sha-256' } } }]);
    return $c->request(POST => '/followings', cred => $owner,
                       body => { entity => $rxx->url });
}

sub entity {
    my ($host) = @_;
    my $c = client_for($host);
    my ($app, $owner) = $c->authorized_app($OWNER_SCOPES,
                                           post_types => 'all');
    my $res = $c->request(POST => '/followers', body => {
        entity => $rx->url, types => ['all'], licenses => [],
        notification_path => 'notifications/x',
        permissions => { public => JSON::PP::true } });
    is($res->{status}, 200, "$host: the remote follows it")
        or diag $res->{body};
    my $follower = cred_of($res->{json});
    my $following = { mac_key_id => 's:' . rand_hex(10),
                      mac_key => rand_hex(16),
                      mac_algorithm => 'hmac-sha-256' };
    $res = follow_remote($c, $owner, $rx, $following->{mac_key_id},
                         $following->{mac_key});
    is($res->{status}, 200, "$host: it follows the remote")
        or diag $res->{body};
    return { host => $host, c => $c, app => $app,
             keys => { 'a: app key' => cred_of($app),
                       'u: owner key' => $owner,
                       's: key of its follower' => $follower,
                       'key of its following' => $following } };
}

my %E = map { $_ => entity("$_.test") } qw(alice bob carol dave);

# ---- 1. each key of A on routes of B, A's key warm in both workers

my $post = { type => $STATUS, content => { text => 'not yours' },
             permissions => { public => JSON::PP::true } };

for my $pair (['alice', 'bob', 'server blocks'],
              ['bob', 'alice', 'server blocks'],
              ['carol', 'dave', '$host'],
              ['dave', 'carol', '$host'])
{
    my ($A, $B, $how) = @$pair;
    my ($ca, $cb) = ($E{$A}{c}, $E{$B}{c});
    for my $kind (sort keys %{ $E{$A}{keys} }) {
        my $k = $E{$A}{keys}{$kind};
        my $W = "[$how] $A\'s $kind";
        all_are(qr/^200 /, "$W works at $A",
                both_workers(sub { $ca->request(GET => '/profile',
                                                cred => $k) }, 4));
        for my $route (['GET', '/apps'], ['POST', '/posts', $post],
                       ['GET', "/apps/$E{$A}{app}{id}"],
                       ['GET', '/followers'], ['GET', '/profile'],
                       ['GET', '/posts'])
        {
            my ($m, $path, $body) = @$route;
            all_are(qr/^401 Invalid MAC Key ID$/,
                    "$W refused at $B: $m $path",
                    both_workers(sub {
                        $cb->request($m => $path, cred => $k,
                                     $body ? (body => $body) : ())
                    }, 2));
        }
    }
    my $r = $cb->request(GET => '/posts?limit=200',
                         cred => $E{$B}{keys}{'u: owner key'});
    is(scalar(grep { ($_->{content}{text} // '') eq 'not yours' }
              @{ $r->{json} || [] }), 0, "[$how] no post made at $B");
}

# ---- 2. a remote that picks another entity's key id

my ($alice, $bob) = @E{qw(alice bob)};
my $bob_owner = $bob->{keys}{'u: owner key'};
my $alice_owner = $alice->{keys}{'u: owner key'};
my $rx2 = Tent::Receiver->start;
my $evil = { mac_key_id => $bob_owner->{access_token},
             mac_key => 'the-attackers-key', mac_algorithm => 'hmac-sha-256' };

my $res = follow_remote($alice->{c}, $alice_owner, $rx2,
                        $evil->{mac_key_id}, $evil->{mac_key});
is($res->{status}, 200, "alice follows a remote that picked bob's owner "
   . 'key id: ids of other entities are not looked at (no oracle)')
    or diag $res->{body};

all_are(qr/^200 /, "the remote's key works at alice (its entity)",
        both_workers(sub { $alice->{c}->request(GET => '/profile',
                                                cred => $evil) }, 4));
all_are(qr/^403 Unauthorized$/, "its u:-looking id is still a following at "
        . 'alice: the kind comes from the record (GET /apps 403)',
        both_workers(sub { $alice->{c}->request(GET => '/apps',
                                                cred => $evil) }));
for my $route (['GET', '/apps'], ['POST', '/posts', $post],
               ['GET', '/profile'])
{
    my ($m, $path, $body) = @$route;
    all_are(qr/^403 Invalid MAC Signature$/,
            "the remote's key under bob's key id at bob: $m $path refused",
            both_workers(sub {
                $bob->{c}->request($m => $path, cred => $evil,
                                   $body ? (body => $body) : ())
            }, 2));
}
all_are(qr/^200 /, "bob's owner key still works at bob",
        both_workers(sub { $bob->{c}->request(GET => '/apps',
                                              cred => $bob_owner) }, 4));

# the nonce cache is per entity too: the same (id, ts, nonce) at alice
# does not use up bob's owner's request
{
    my ($ts, $nonce) = (time, rand_hex(8));
    $res = $alice->{c}->request(GET => '/profile', cred => $evil, ts => $ts,
                                nonce => $nonce);
    is($res->{status}, 200, 'the remote signs (id, ts, nonce) at alice');
    $res = $bob->{c}->request(GET => '/apps', cred => $bob_owner, ts => $ts,
                              nonce => $nonce);
    is(code($res), '200 ', "bob's owner with the same id, ts and nonce at "
       . 'bob: not a replay');
    $res = $bob->{c}->request(GET => '/apps', cred => $bob_owner, ts => $ts,
                              nonce => $nonce);
    is(code($res), '401 MAC nonce already used', 'its replay at bob is');
}

# ---- 3. a remote that picks one of our own key ids

my $rx3 = Tent::Receiver->start;
for my $kind ('u: owner key', 'a: app key', 's: key of its follower',
              'key of its following')
{
    my $k = $alice->{keys}{$kind};
    my $id = $k->{mac_key_id} // $k->{access_token};
    $res = follow_remote($alice->{c}, $alice_owner, $rx3, $id,
                         'the-attackers-key');
    is(code($res), "502 The remote's credential id is already in use here",
       "a remote that picks alice's $kind id: refused")
        or diag $res->{body};
    all_are(qr/^200 /, "alice's $kind still works",
            both_workers(sub { $alice->{c}->request(GET => '/profile',
                                                    cred => $k) }));
    all_are(qr/^403 Invalid MAC Signature$/,
            "the remote's key under that id: refused",
            both_workers(sub { $alice->{c}->request(GET => '/profile',
                cred => { %$k, mac_key => 'the-attackers-key' }) }));
}

# ---- 4. keys we create never overwrite a row of ours or of a remote

my $following = $alice->{keys}{'key of its following'};
for my $victim (['the key of a following', $following],
                ['the owner key', $alice_owner],
                ['an app key', $alice->{keys}{'a: app key'}])
{
    my ($what, $k) = @$victim;
    my $id = $k->{mac_key_id} // $k->{access_token};
    $res = $alice->{c}->request(POST => '/apps', cred => $alice_owner, body => {
        name => 'Importer', url => 'https://imp.example',
        redirect_uris => ['https://imp.example/cb'],
        scopes => { read_posts => 'x' },
        mac_key_id => $id, mac_key => 'imported-key-1234',
        mac_algorithm => 'hmac-sha-256' });
    is(code($res), '409 The MAC key id is already in use',
       "an app imported with $what\'s id: 409") or diag $res->{body};
    $res = $alice->{c}->request(POST => "/apps/$alice->{app}{id}/authorizations",
        cred => $alice_owner, body => {
            scopes => ['read_posts'], mac_key_id => $id,
            mac_key => 'imported-key-1234',
            mac_algorithm => 'hmac-sha-256' });
    is(code($res), '409 The MAC key id is already in use',
       "an authorization imported with $what\'s id: 409")
        or diag $res->{body};
    all_are(qr/^200 /, "$what still works",
            both_workers(sub { $alice->{c}->request(GET => '/profile',
                                                    cred => $k) }));
}

# an id of another entity may be imported: it resolves at alice only
my $bob_app = $bob->{keys}{'a: app key'};
$res = $alice->{c}->request(POST => '/apps', cred => $alice_owner, body => {
    name => 'Importer', url => 'https://imp.example',
    redirect_uris => ['https://imp.example/cb'],
    scopes => { read_posts => 'x' },
    mac_key_id => $bob_app->{mac_key_id}, mac_key => 'imported-key-1234',
    mac_algorithm => 'hmac-sha-256' });
is($res->{status}, 200, "alice imports an app key with bob's app key id")
    or diag $res->{body};
my $imported = cred_of($res->{json} || {});
my $imported_id = $res->{json}{id} // 'none';
all_are(qr/^200 /, 'it works at alice',
        both_workers(sub { $alice->{c}->request(GET => "/apps/$imported_id",
                                                cred => $imported) }, 4));
all_are(qr/^403 Invalid MAC Signature$/, 'not at bob',
        both_workers(sub { $bob->{c}->request(GET => "/apps/$bob->{app}{id}",
                                              cred => $imported) }));
all_are(qr/^200 /, "and bob's app key still works at bob",
        both_workers(sub { $bob->{c}->request(GET => "/apps/$bob->{app}{id}",
                                              cred => $bob_app) }));

# ---- 5. the nonce cache flooded with app keys (a second nginx, 32k zone)
# one entity, which may hold all of it (the kinds' budgets, not the
# entities' shares: those are t/auth/050)

my $peer = Tent::Peer->start(
    http_config => 'tent_store $SERVROOT/tent_temp;'
                   . ' tent_outbound_allow 127.0.0.0/8;'
                   . ' tent_mac_nonce_cache 32k; tent_mac_nonce_share 100;',
    worker_processes => 2);
my $pc = $peer->client;
my ($papp, $powner) = $peer->authorized_app(
    'read_posts,write_posts,write_followings', post_types => 'all');
my $prx = Tent::Receiver->start;
$res = $pc->request(POST => '/followers', body => {
    entity => $prx->url, types => ['all'], licenses => [],
    notification_path => 'notifications/x',
    permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'flood: a remote follows the peer');
my $pfollower = cred_of($res->{json});

# the owner's request, captured on the wire
my ($cap_ts, $cap_nonce) = (time, rand_hex(3));
my $captured = sub {
    $pc->request(POST => '/posts', cred => $powner, ts => $cap_ts,
                 nonce => $cap_nonce,
                 body => { type => $STATUS, content => { text => 'once' },
                           permissions => { public => JSON::PP::true } });
};
is($captured->()->{status}, 200, 'flood: the owner posts (captured)');

$res = $pc->request(GET => "/apps/$papp->{id}", cred => $papp,
                    nonce => 'n' x 256);
is(code($res), '401 MAC nonce too long', 'a nonce of 256 bytes: 401');
is($res->{headers}{'www-authenticate'}, 'MAC', 'with WWW-Authenticate');
$res = $pc->request(GET => "/apps/$papp->{id}", cred => $papp,
                    nonce => 'n' x 65);
is(code($res), '401 MAC nonce too long', 'a nonce of 65 bytes: 401');
$res = $pc->request(GET => "/apps/$papp->{id}", cred => $papp,
                    nonce => 'n' x 64);
is($res->{status}, 200, 'a nonce of 64 bytes: 200');
$res = $pc->request(GET => "/apps/$papp->{id}", cred => $papp,
                    nonce => rand_hex(3));
is($res->{status}, 200, "tent-client-ruby's 6 hex characters: 200");

# anyone's app key, many signed requests with long nonces
my $flood_app = $pc->register_app(name => 'Flood');
my $full;
for (1 .. 3000) {
    $res = $pc->request(GET => "/apps/$flood_app->{id}", cred => $flood_app,
                        nonce => rand_hex(32));
    next if $res->{status} == 200;
    $full = $res;
    last;
}
ok($full, 'flood: the app keys\' share fills up');
is(code($full // {}), '503 MAC nonce cache is full: try again later',
   'flood: then app keys get 503');
my $retry = ($full // {})->{headers}{'retry-after'} // '';
like($retry, qr/^[1-9][0-9]*$/, 'flood: with Retry-After');
ok($retry =~ /^\d+$/ && $retry <= 600,
   "flood: Retry-After ($retry) within the nonce lifetime");

$res = $captured->();
is(code($res), '401 MAC nonce already used',
   'flood: the captured owner request replayed: refused');
$res = $pc->request(GET => '/posts', cred => $powner);
is(scalar(grep { ($_->{content}{text} // '') eq 'once' }
          @{ $res->{json} || [] }), 1, 'flood: one post');

$res = $pc->request(POST => '/posts', cred => $powner,
                    body => { type => $STATUS, content => { text => 'fresh' },
                              permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'flood: the owner with a fresh nonce: served');
$res = $pc->request(GET => "/apps/$papp->{id}", cred => $papp);
is($res->{status}, 503, 'flood: another app key: 503 too');
$res = $pc->request(GET => '/posts', cred => $pfollower);
is($res->{status}, 200, 'flood: a follower\'s key: served');
$res = $pc->request(GET => '/profile');
is($res->{status}, 200, 'flood: anonymous: served');
$res = $pc->register_app(name => 'After');
ok($res->{mac_key_id}, 'flood: POST /apps still registers');

# followers have a share of their own: flooding it leaves the owner alone
for (1 .. 3000) {
    $res = $pc->request(GET => '/posts', cred => $pfollower,
                        nonce => rand_hex(8));
    last if $res->{status} != 200;
}
is(code($res), '503 MAC nonce cache is full: try again later',
   'follower flood: then 503');
for (1 .. 20) {
    $res = $pc->request(GET => '/posts', cred => $powner);
    last if $res->{status} != 200;
}
is($res->{status}, 200, 'follower flood: the owner is still served');

# a server we follow is another party too: a share of its own
my $frx = Tent::Receiver->start;
$res = $pc->request(POST => '/followings', cred => $powner,
                    body => { entity => $frx->url });
is($res->{status}, 200, 'following flood: the peer follows a remote')
    or diag $res->{body};
my ($fgiven) = $frx->followers;
my $pfollowing = cred_of($fgiven || {});
for (1 .. 3000) {
    $res = $pc->request(GET => '/posts', cred => $pfollowing,
                        nonce => rand_hex(8));
    last if $res->{status} != 200;
}
is(code($res), '503 MAC nonce cache is full: try again later',
   'following flood: then 503');
for (1 .. 20) {
    $res = $pc->request(GET => '/posts', cred => $powner);
    last if $res->{status} != 200;
}
is($res->{status}, 200, 'following flood: the owner is still served');

# and when the owner's keys fill the rest: 503 for them too, and the
# captured request is still a replay
for (1 .. 1000) {
    $res = $pc->request(GET => '/profile', cred => $powner);
    last if $res->{status} != 200;
}
is(code($res), '503 MAC nonce cache is full: try again later',
   'the whole cache full: the owner gets 503');
like($res->{headers}{'retry-after'} // '', qr/^[1-9][0-9]*$/,
     'with Retry-After');
is(code($captured->()), '401 MAC nonce already used',
   'the whole cache full: the captured request is still refused');

my $log = $peer->error_log_text;
like($log, qr/tent_mac_nonce_cache of 32k holds (\d+) nonces/,
     'the error log says how many nonces the zone holds');
like($log, qr/the MAC nonce cache is full for app keys/, 'flood: logged');
like($log, qr/the MAC nonce cache is full for follower keys/,
     'follower flood: logged');
like($log, qr/the MAC nonce cache is full for following keys/,
     'following flood: logged');

__DATA__

=== TEST 1: four entities in one nginx and one store
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    server {
        listen 127.0.0.1:$TEST_NGINX_SPREAD_PORT reuseport;
        server_name alice.test;
        tent_entity http://alice.test;
        add_header X-Pid $pid always;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_SPREAD_PORT;
        server_name bob.test;
        tent_entity http://bob.test;
        add_header X-Pid $pid always;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
    }
    server {
        listen 127.0.0.1:$TEST_NGINX_SPREAD_PORT;
        server_name carol.test dave.test;
        tent_entity http://$host;
        tent_provisioning off;
        add_header X-Pid $pid always;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
    }
--- config
    tent_entity http://localhost.test;
--- request
GET /tent/profile
--- error_code: 200
