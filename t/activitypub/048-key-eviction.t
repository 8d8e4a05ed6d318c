# Junk signatures must not evict a kept key (docs/activitypub.md "Key
# rotation"): a signature that fails against a key kept a minute fetches
# the actor again, but the kept key stays until that fetch gives another
# key or finds the actor gone (404, 410).  Anyone can sign junk with a
# real actor's keyId: when the fetch then fails (the actor's server
# answering 503, or its host refused for the minute after 8 failed key
# fetches), the real actor's next activity is still taken with the kept
# key, with no fetch.  The suite waits a minute for the keys to be old
# enough to be fetched again (no timing is asserted).

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

my %key = map { $_ => Tent::HTTPSig::new_key() } qw(bob carol dave);
my $junk = Tent::HTTPSig::new_key();

# each actor served, or answering a status instead
sub serve {
    my (%status) = @_;
    $rx->rules([ map {
        my $name = $_;
        my $id = "$R/users/$name";
        { method => 'GET', path => "^/users/$name\$",
          action => $status{$name}
              ? { status => $status{$name}, body => 'no' }
              : { status => 200, headers => { 'Content-Type' => $AS },
                  body => { id => $id, type => 'Person',
                            inbox => "$id/inbox",
                            publicKey => { id => "$id#main-key",
                                           owner => $id,
                                           publicKeyPem =>
                                               $key{$name}{public} } } } }
    } sort keys %key ]);
}

serve();

my $peer = Tent::Peer->start(worker_processes => 1, server_config => <<'CONF');
        tent_entity $URL;
        tent_activitypub on;
        tent_ap_name alice;
        tent_outbound_allow 127.0.0.0/8;
CONF
my $P = $peer->port;
my $INBOX = '/tent/activitypub/alice/inbox';

# an activity of $name's, signed with $k under $key_id
my $n = 0;
sub post_as {
    my ($name, $k, $key_id) = @_;
    my $id = "$R/users/$name";
    $n++;
    my $body = $JSON->encode({ id => "$id#like/$n", type => 'Like',
                               actor => $id,
                               object => 'http://example.org/p' });
    my %h = Tent::HTTPSig::sign(key => $k->{private},
                                key_id => $key_id || "$id#main-key",
                                target => $INBOX, host => "127.0.0.1:$P",
                                body => $body);
    return http_request(port => $P, method => 'POST', path => $INBOX,
                        headers => { %h, 'Content-Type' => $AS },
                        body => $body, timeout => 15)->{status};
}

sub real { post_as($_[0], $key{ $_[0] }) }
sub junk { post_as($_[0], $junk) }
sub fetches {
    scalar $rx->requests(method => 'GET', path => qr{^/users/$_[0]$})
}

for my $name (qw(bob carol dave)) {
    is(real($name), 202, "$name signed: 202");
    is(fetches($name), 1, "... $name fetched once");
}

is(junk('bob'), 401, 'a junk signature naming bob\'s fresh key: 401');
is(fetches('bob'), 1, '... no fetch (the key is under a minute old)');

sleep 61;

# carol's server fails now: the junk signature's fetch fails
serve(carol => 503);
is(junk('carol'), 401, 'junk naming carol\'s kept key, her server 503: 401');
is(fetches('carol'), 2, '... carol fetched again, once');
is(junk('carol'), 401, 'junk again: 401');
is(fetches('carol'), 2, '... no fetch: at most one a minute for the key');
is(real('carol'), 202, 'carol\'s own activity: 202, her key still kept');
is(fetches('carol'), 2, '... no fetch');

# dave is gone (410): his kept key goes with him
serve(carol => 503, dave => 410);
is(junk('dave'), 401, 'junk naming dave\'s kept key, his actor 410: 401');
is(fetches('dave'), 2, '... dave fetched again, once');
is(real('dave'), 401, 'dave\'s key signed after: 401, the key dropped');
is(fetches('dave'), 2, '... no fetch: the keyId failed lately');

# made-up keyIds on the same host: its key fetches refused for the minute
for my $i (1 .. 8) {
    post_as("nobody$i", $junk);
}
is(junk('bob'), 401, 'junk naming bob\'s kept key, his host refused: 401');
is(fetches('bob'), 1, '... no fetch (the host is refused)');
is(real('bob'), 202, 'bob\'s own activity: 202, his key still kept');
is(fetches('bob'), 1, '... no fetch');

done_testing();
