# The actor's key against an anonymous client that breaks its requests
# (docs/activitypub.md, "The key's life"): a GET of the actor with a
# chunked body, then a malformed chunk while the key is being made, so
# that no request is left to write it.  The key is written all the same,
# and the next requests read it: one key made, however many requests
# are broken (they made one each, none kept, before).  And the entity
# URL says "Vary: Accept" also when its page is a static index.html that
# nginx's index module moves the request to (the page had none before).

use strict;
use warnings;

use Test::More;
use JSON::PP;
use IO::Socket::IP;
use Time::HiRes qw(sleep);
use Tent::Peer;
use Tent::Util qw(http_request wait_for);

my $AS = 'application/activity+json';

# one worker: each worker makes the key once at most (they share it
# through the store, the first write wins)
my $peer = Tent::Peer->start(worker_processes => 1,
                             server_config => <<'CONF');
        tent_entity $URL;
        tent_activitypub on;
        tent_ap_name bob;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF
my $P = $peer->port;

sub made {
    my @m = $peer->error_log_text =~ /tent ap: making the key of/g;
    return scalar @m;
}

# a broken request: its body's chunk malformed while the key is made
# (the wait below is for the write's answer, "kept: written", not its
# submission, "written with no request left": a request between the two
# finds no key row yet and makes one of its own, which the
# compare-and-set then drops; seen once on a loaded machine)
sub broken {
    my $s = IO::Socket::IP->new(PeerAddr => '127.0.0.1', PeerPort => $P)
        or die "connect: $!";
    print {$s} "GET / HTTP/1.1\r\nHost: 127.0.0.1:$P\r\nAccept: $AS\r\n"
               . "Transfer-Encoding: chunked\r\n\r\n";
    sleep 0.05;
    print {$s} "zz\r\n";
    sleep 0.05;
    close $s;
}

broken() for 1 .. 5;

ok(wait_for(sub { $peer->error_log_text
                  =~ /tent ap: the key of "[^"]+" (kept: written|written)(?! with)/ },
            15),
   'the key is written though its requests broke')
    or diag $peer->error_log_text;

broken() for 1 .. 3;

my $res = http_request(port => $P, path => '/', headers => { Accept => $AS });
is($res->{status}, 200, 'the actor answers') or diag $res->{body};
my $pem = eval { decode_json($res->{body})->{publicKey}{publicKeyPem} } // '';
like($pem, qr/BEGIN PUBLIC KEY/, '... with a key');
is(made(), 1, 'one key made for 8 broken requests and one whole');

$peer->restart;
$res = http_request(port => $P, path => '/', headers => { Accept => $AS });
is(eval { decode_json($res->{body})->{publicKey}{publicKeyPem} } // '', $pem,
   'the same key after a restart: it was stored');

my @bad = grep { /\[(alert|emerg|crit)\]|header already sent/ }
          split /^/, $peer->error_log_text;
ok(!@bad, 'no alert in the error log') or diag join '', @bad;
$peer->stop;

# ---- the page a static index.html: Vary: Accept on it too

my $st = Tent::Peer->start(server_config => <<'CONF');
        tent_entity $URL;
        tent_activitypub on;
        tent_ap_name carol;
        location / {
            root html;
            index index.html;
        }
CONF
{
    mkdir $st->servroot . '/html';
    open my $fh, '>', $st->servroot . '/html/index.html' or die $!;
    print {$fh} "<p>hi</p>\n";
    close $fh;
}
$res = http_request(port => $st->port, path => '/',
                    headers => { Accept => 'text/html' });
is($res->{status}, 200, 'the static page: 200') or diag $res->{body};
is($res->{body}, "<p>hi</p>\n", '... the index.html');
is($res->{headers}{vary}, 'Accept', '... Vary: Accept');
$res = http_request(port => $st->port, path => '/',
                    headers => { Accept => $AS });
is(eval { decode_json($res->{body})->{type} } // '', 'Person',
   'the actor there');
is($res->{headers}{vary}, 'Accept', '... Vary: Accept, once');
$res = http_request(port => $st->port, path => '/index.html');
ok(!defined $res->{headers}{vary}, 'another file of the folder: no Vary');
$st->stop;

done_testing();
