# Issue #26: the nonce cache has a share per entity.  Two tenants of one
# nginx (tent_entity http://$host) and one attacker, a 64k zone: tenant
# A's owner, signing as fast as it can, fills its own share and is then
# refused (503, Retry-After); tenant B's owner and B's follower are
# still served, and so is a third tenant's owner.  An attacker's app key
# (anyone gets one from POST /apps) at B fills a quarter of B's share
# and no more: B's owner goes on.  A replay is still a replay.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx);
use Tent::Client;
use Tent::MAC qw(random_nonce);
use Tent::Peer;
use Tent::Receiver;
use JSON::PP;

master_on();
workers(1);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

sub code {
    my ($r) = @_;
    my $e = ref $r->{json} eq 'HASH' ? $r->{json}{error} : undef;
    return ($r->{status} // '') . ' ' . ($e // '');
}

sub cred_of {
    my ($j) = @_;
    return { map { $_ => $j->{$_} } qw(mac_key_id mac_key mac_algorithm) };
}

my $peer = Tent::Peer->start(
    http_config => 'tent_store $SERVROOT/tent_temp;'
                   . ' tent_outbound_allow 127.0.0.0/8;'
                   . ' tent_mac_nonce_cache 64k;',
    server_config => <<'CONF',
        tent_entity http://$host;
        # the open mode: each Host an entity, one owner page for all
        tent_provisioning off;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF
    worker_processes => 2);

my $rx = Tent::Receiver->start;

sub tenant {
    my ($host) = @_;
    my $c = $peer->client(host => $host);
    my ($app, $owner) = $c->authorized_app('read_posts,write_posts',
                                           post_types => 'all');
    ok($owner && $owner->{access_token}, "$host: an owner app");
    return { c => $c, owner => $owner, host => $host };
}

my ($A, $B, $C) = map { tenant($_) } qw(alice.test bob.test carol.test);

my $res = $B->{c}->request(POST => '/followers', body => {
    entity => $rx->url, types => ['all'], licenses => [],
    notification_path => 'notifications/x',
    permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a remote follows B') or diag $res->{body};
my $bfollower = cred_of($res->{json} || {});

# A's owner request, captured on the wire
my ($cap_ts, $cap_nonce) = (time, random_nonce(8));
my $captured = sub {
    $A->{c}->request(GET => '/profile', cred => $A->{owner},
                     ts => $cap_ts, nonce => $cap_nonce);
};
is($captured->()->{status}, 200, 'A: the owner (captured)');

# ---- A's own owner, as fast as it can: its share fills, no more

my ($full, $n) = (undef, 0);
for (1 .. 3000) {
    $res = $A->{c}->request(GET => '/profile', cred => $A->{owner});
    if ($res->{status} != 200) { $full = $res; last }
    $n++;
}
ok($full, "A's owner fills its share (after $n requests)");
is(code($full // {}), '503 MAC nonce cache is full: try again later',
   "A's owner: then 503");
my $retry = ($full // {})->{headers}{'retry-after'} // '';
ok($retry =~ /^[1-9][0-9]*$/ && $retry <= 600,
   "A: Retry-After ($retry) within the nonce lifetime");
is(code($captured->()), '401 MAC nonce already used',
   'A: the captured request replayed: still refused');

my $ok = 0;
for (1 .. 20) {
    $ok++ if $B->{c}->request(GET => '/profile',
                              cred => $B->{owner})->{status} == 200;
}
is($ok, 20, "B's owner meanwhile: 20 of 20 served");
$ok = 0;
for (1 .. 10) {
    $ok++ if $B->{c}->request(GET => '/posts',
                              cred => $bfollower)->{status} == 200;
}
is($ok, 10, "B's follower meanwhile: 10 of 10 served");
$ok = 0;
for (1 .. 10) {
    $ok++ if $C->{c}->request(GET => '/profile',
                              cred => $C->{owner})->{status} == 200;
}
is($ok, 10, "a third tenant's owner meanwhile: 10 of 10 served");
is($A->{c}->request(GET => '/profile', cred => $A->{owner})->{status}, 503,
   "and A's owner is still refused");

# ---- the attacker: an app key at B, anyone's for a POST /apps

my $flood = $B->{c}->register_app(name => 'Flood');
ok($flood && $flood->{mac_key_id}, 'the attacker registers an app at B');
($full, $n) = (undef, 0);
for (1 .. 3000) {
    $res = $B->{c}->request(GET => "/apps/$flood->{id}", cred => $flood);
    if ($res->{status} != 200) { $full = $res; last }
    $n++;
}
is(code($full // {}), '503 MAC nonce cache is full: try again later',
   "the attacker's app key at B: 503 after $n requests");
like(($full // {})->{headers}{'retry-after'} // '', qr/^[1-9][0-9]*$/,
     'with Retry-After');
$ok = 0;
for (1 .. 20) {
    $ok++ if $B->{c}->request(GET => '/profile',
                              cred => $B->{owner})->{status} == 200;
}
is($ok, 20, "B's owner after the attacker: 20 of 20 served");
$ok = 0;
for (1 .. 10) {
    $ok++ if $B->{c}->request(GET => '/posts',
                              cred => $bfollower)->{status} == 200;
}
is($ok, 10, "B's follower after the attacker: 10 of 10 served");

my $log = $peer->error_log_text;
my $start = 'tent_mac_nonce_cache of 64k holds \d+ nonces, \d+ each for app '
          . 'and for follower keys, \d+ for one entity '
          . '\(tent_mac_nonce_share 25%\)';
like($log, qr/$start/, 'the error log says the share at start');
like($log, qr/the MAC nonce cache is full for owner keys of "http:..alice/,
     "A's full share: logged");
like($log, qr/the MAC nonce cache is full for app keys of "http:..bob/,
     "the attacker's: logged");

__DATA__

=== TEST 1: a share of 0 is refused
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_mac_nonce_share 0;
--- config
    tent_entity http://localhost.test;
--- must_die
--- error_log
"tent_mac_nonce_share" must be between 1 and 100 (percent)



=== TEST 2: more than all of it is refused
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_mac_nonce_share 101;
--- config
    tent_entity http://localhost.test;
--- must_die
--- error_log
"tent_mac_nonce_share" must be between 1 and 100 (percent)



=== TEST 3: one fixed entity: all of the zone by default
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost.test;
--- request
GET /tent/profile
--- error_code: 200
--- error_log eval
qr/\d+ for one entity \(tent_mac_nonce_share 100%\)/



=== TEST 4: two fixed entities share it: a quarter each by default
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    server {
        listen 127.0.0.1:$TEST_NGINX_SERVER_PORT;
        server_name other.test;
        tent_entity http://other.test;
    }
--- config
    tent_entity http://localhost.test;
--- request
GET /tent/profile
--- error_code: 200
--- error_log eval
qr/\d+ for one entity \(tent_mac_nonce_share 25%\)/



=== TEST 5: tent_mac_nonce_share 25 written
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_mac_nonce_share 25;
--- config
    tent_entity http://localhost.test;
--- request
GET /tent/profile
--- error_code: 200
