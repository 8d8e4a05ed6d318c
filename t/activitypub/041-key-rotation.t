# The inbox's kept keys and key rotation (docs/activitypub.md "The key:
# fetched through the guard, kept by the worker"): a key kept is used
# without a fetch; an actor that rotated its key is refused while the
# kept key is under a minute old (junk signatures naming a real key cost
# no fetch), and once it is older the failing signature fetches the
# actor again, once, and verifies with the new key.  The suite waits a
# minute for that (no timing is asserted).

use strict;
use warnings;

use Test::More;
use JSON::PP;
use Tent::Peer;
use Tent::Receiver;
use Tent::HTTPSig;
use Tent::Util qw(http_request);

my $JSON = JSON::PP->new->canonical;
my $AS = 'application/activity+json';

my $rx = Tent::Receiver->start;
my $R = $rx->url;
my $ID = "$R/users/bob";

sub serve_key {
    my ($k) = @_;
    $rx->rules([
        { method => 'GET', path => '^/users/bob$',
          action => { status => 200, headers => { 'Content-Type' => $AS },
                      body => { id => $ID, type => 'Person',
                                inbox => "$ID/inbox",
                                publicKey => { id => "$ID#main-key",
                                               owner => $ID,
                                               publicKeyPem => $k->{public} }
                              } } },
    ]);
}

my $old = Tent::HTTPSig::new_key();
my $new = Tent::HTTPSig::new_key();
serve_key($old);

my $peer = Tent::Peer->start(worker_processes => 1, server_config => <<'CONF');
        tent_entity $URL;
        tent_activitypub on;
        tent_ap_name alice;
        tent_outbound_allow 127.0.0.0/8;
CONF
my $P = $peer->port;
my $INBOX = '/tent/activitypub/alice/inbox';

my $n = 0;
sub post_with {
    my ($k) = @_;
    $n++;
    my $body = $JSON->encode({ id => "$ID#like/$n", type => 'Like',
                               actor => $ID, object => 'http://example.org/p' });
    my %h = Tent::HTTPSig::sign(key => $k->{private}, key_id => "$ID#main-key",
                                target => $INBOX, host => "127.0.0.1:$P",
                                body => $body);
    return http_request(port => $P, method => 'POST', path => $INBOX,
                        headers => { %h, 'Content-Type' => $AS },
                        body => $body, timeout => 15);
}

sub fetches { scalar $rx->requests(method => 'GET', path => qr{^/users/bob$}) }

is(post_with($old)->{status}, 202, 'signed with the key: 202');
is(fetches(), 1, '... the actor fetched');
is(post_with($old)->{status}, 202, 'again: 202');
is(fetches(), 1, '... the key kept');

# the actor rotates its key
serve_key($new);
is(post_with($new)->{status}, 401,
   'the new key while the kept one is under a minute old: 401');
is(post_with($new)->{status}, 401, '... again');
is(fetches(), 1, '... no fetch for them');

sleep 61;

is(post_with($new)->{status}, 202,
   'the new key once the kept one is a minute old: 202, fetched again');
is(fetches(), 2, '... one fetch');
is(post_with($new)->{status}, 202, 'again: 202');
is(post_with($old)->{status}, 401, 'the old key now: 401');
is(fetches(), 2, '... no fetch: the new key is fresh');

done_testing();
