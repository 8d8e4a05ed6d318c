# Self-test: Tent::Peer, a second nginx with the module beside the
# harness's.  Start one, talk to it (plain location, discovery, profile,
# an owner app), reload it with a new conf, stop it.

use strict;
use warnings;

use Test::More;
use Tent::Peer;
use Tent::Util qw(http_request);

my $peer = Tent::Peer->start(
    server_config => <<'CONF',
        tent_entity $URL;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
        location = /plain { return 200 "peer $PORT"; }
CONF
);
my $port = $peer->port;
ok($port, "peer on port $port");
is($peer->url, "http://127.0.0.1:$port", 'url');
like($peer->servroot, qr/-peer\d+$/, 'own server root ' . $peer->servroot);
isnt($port, $ENV{TEST_NGINX_PORT} // 0, 'not the harness port');
like($peer->conf, qr/worker_processes  2;/, 'two workers by default');

my $r = http_request(port => $port, path => '/plain');
is("$r->{status} $r->{body}", "200 peer $port", '$PORT substituted');
is($r->{headers}{link},
   qq{<http://127.0.0.1:$port/tent/profile>; rel="https://tent.io/rels/profile"},
   'the module runs: discovery Link with $URL as the entity');

my $c = $peer->client;
$r = $c->request(GET => '/profile');
is($r->{status}, 200, 'profile');
is($r->{json}{'https://tent.io/types/info/core/v0.1.0'}{entity},
   $peer->url, 'the entity is the peer url');

my ($app, $cred) = $peer->authorized_app('read_posts,write_posts',
                                         post_types => 'all');
like($cred->{access_token} // '', qr/^u:/, 'an owner app on the peer');
$r = $c->request(POST => '/posts', cred => $cred, body => {
    type => 'https://tent.io/types/post/status/v0.1.0',
    content => { text => 'from the peer' },
    permissions => { public => JSON::PP::true } });
is($r->{status}, 200, 'the app posts on the peer');

like($peer->error_log_text, qr/start worker process/, 'error_log_text');
my $master = $peer->master_pid;
ok($master, "master $master");

ok($peer->reload(server_config => <<'CONF'), 'reload with a new conf');
        tent_entity $URL;
        location = /plain { return 200 "reloaded"; }
CONF
$r = http_request(port => $port, path => '/plain');
is("$r->{status} $r->{body}", '200 reloaded', 'the new conf answers');
is($peer->master_pid, $master, 'same master after the reload');
$r = $c->request(GET => '/posts');
is(scalar @{ $r->{json} || [] }, 1, 'the store survived the reload');

ok(!$peer->reload(server_config => 'no_such_directive;'),
   'reload with a broken conf returns false');
$r = http_request(port => $port, path => '/plain');
is("$r->{status} $r->{body}", '200 reloaded', 'the old conf still answers');

my $peer2 = Tent::Peer->start(worker_processes => 1,
                              server_config => 'location / { return 200 "two"; }');
isnt($peer2->port, $port, 'a second peer on another port');
isnt($peer2->servroot, $peer->servroot, 'and another root');
$r = http_request(port => $peer2->port, path => '/');
is("$r->{status} $r->{body}", '200 two', 'the second peer answers');

ok(!eval { Tent::Peer->start(port => $port) }, 'a busy port: start dies');
like($@, qr/Address already in use/, 'and says why');

$peer->stop;
ok(!kill(0, $master), 'stop: the master is gone');
$r = http_request(port => $port, path => '/plain', timeout => 2);
is($r->{status}, 0, 'stop: nothing listens');

# $peer2 is stopped at exit
done_testing();
