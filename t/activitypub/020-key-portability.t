# The actor's key carried by export and import (docs/activitypub.md,
# "The key's life"): exported with read_secrets where tent_activitypub
# is on, imported with write_secrets: the new entity's actor shows the
# old one's public key.  Refused: a key that is not RSA 2048 to 4096, a
# public part of another key, a second key; the section not written,
# the report says why, and the entity makes its own key.

use strict;
use warnings;

use Test::More;
use File::Temp;
use JSON::PP;
use Tent::Peer;
use Tent::Client;
use Tent::Util qw(http_request);

my $AS = 'application/activity+json';
my $READ = 'read_secrets,read_profile,read_followers,read_followings,'
           . 'read_groups,read_posts';
my $WRITE = 'write_secrets,write_profile,write_followers,write_followings,'
            . 'write_groups,write_posts,import_posts';

my $CONF = <<'CONF';
        tent_entity $URL;
        tent_activitypub on;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF

sub key_of {
    my ($peer) = @_;
    my $r = http_request(port => $peer->port, path => '/',
                         headers => { Accept => $AS });
    my $j = eval { decode_json($r->{body}) } || {};
    return $j->{publicKey}{publicKeyPem};
}

my $a = Tent::Peer->start(server_config => $CONF);
my $pem = key_of($a);
like($pem // '', qr/BEGIN PUBLIC KEY/, "A's key, made on first use");

my ($ra, $reader) = $a->client->authorized_app($READ, info_types => 'all',
                                               post_types => 'all');
my $doc = Tent::Util::export_document(port => $a->port, cred => $reader);
ok($doc && $doc->{complete}, "A's export");
is($doc->{includes}{activitypub_keys}, JSON::PP::true,
   'includes.activitypub_keys');
is(scalar @{ $doc->{activitypub_keys} || [] }, 1, 'one key');
my $k = $doc->{activitypub_keys}[0] || {};
is($k->{public}, $pem, 'its public part: the actor\'s');
like($k->{private} // '', qr/^-----BEGIN PRIVATE KEY-----/,
     'its private part, PKCS#8 (the owner\'s secret, as credentials)');

# without tent_activitypub: no section, as before
my $off = Tent::Peer->start(server_config => <<'CONF');
        tent_entity $URL;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF
my ($ro, $oreader) = $off->client->authorized_app($READ, info_types => 'all',
                                                  post_types => 'all');
my $odoc = Tent::Util::export_document(port => $off->port, cred => $oreader);
ok($odoc && $odoc->{complete}, 'an export with the module off');
ok(!exists $odoc->{activitypub_keys}
   && !exists $odoc->{includes}{activitypub_keys},
   '... has no key section');
$off->stop;

# into B: B's actor shows A's key
sub import_into {
    my ($peer, $d) = @_;
    my ($w, $writer) = $peer->client->authorized_app($WRITE,
        info_types => 'all', post_types => 'all');
    return $peer->client->request(POST => '/import', cred => $writer,
                                  body => $d);
}

my $b = Tent::Peer->start(server_config => $CONF);
# the key A made two minutes ago, as far as B knows (so that B's owner
# may replace it below: a new key at most once a minute)
$k->{created_at} = time - 120;
my $res = import_into($b, $doc);
is($res->{status}, 200, 'A into B: 200') or diag $res->{body};
is($res->{json}{activitypub_keys}{taken}, 1, 'the key taken');
is(key_of($b), $pem, "B's actor: A's key");
$b->restart;
is(key_of($b), $pem, '... after a restart');

# a PEM private key made by openssl (the suite dies without one)
sub genkey {
    my $k = `openssl genpkey $_[0] 2>/dev/null`;
    die "openssl genpkey $_[0] failed" unless $k =~ /BEGIN PRIVATE KEY/;
    return $k;
}

# an RSA 2048 key encrypted with the empty password, its public part
sub encrypted_row {
    my $plain = genkey('-algorithm RSA -pkeyopt rsa_keygen_bits:2048');
    my $tmp = File::Temp->new;
    print {$tmp} $plain;
    close $tmp;
    my $enc = `openssl pkcs8 -topk8 -v2 aes-256-cbc -iter 1000 -passout pass: -in $tmp 2>/dev/null`;
    my $pub = `openssl pkey -pubout -in $tmp 2>/dev/null`;
    die 'openssl pkcs8 failed' unless $enc =~ /BEGIN ENCRYPTED PRIVATE KEY/
                                      && $pub =~ /BEGIN PUBLIC KEY/;
    return { public => $pub, private => $enc, created_at => 1 };
}

# the owner's new key: write_secrets only
my ($wo, $weak) = $b->client->authorized_app('write_profile',
                                             info_types => 'all');
$res = $b->client->request(POST => '/activitypub/key', body => '{}');
is($res->{status}, 403, 'a new key, anonymous: 403');
$res = $b->client->request(POST => '/activitypub/key', cred => $weak,
                           body => '{}');
is($res->{status}, 403, 'a new key without write_secrets: 403');
is(key_of($b), $pem, '... the key unchanged');
my ($ws, $secret) = $b->client->authorized_app('write_secrets',
                                               info_types => 'all');
$res = $b->client->request(POST => '/activitypub/key', cred => $secret,
                           body => '{}');
is($res->{status}, 200, 'a new key with write_secrets: 200')
    or diag $res->{body};
my $new = $res->{json}{public} // '';
like($new, qr/BEGIN PUBLIC KEY/, '... its public part');
isnt($new, $pem, '... another key');
unlike($res->{body}, qr/PRIVATE/, '... no private part');
is(key_of($b), $new, 'the actor shows it');
$b->restart;
is(key_of($b), $new, '... after a restart');

# a new key at most once a minute: the one just made is younger
$res = $b->client->request(POST => '/activitypub/key', cred => $secret,
                           body => '{}');
is($res->{status}, 429, 'a second new key at once: 429')
    or diag "$res->{status} $res->{body}";
like($res->{headers}{'retry-after'} // '', qr/^[1-6]?\d$/,
     '... Retry-After: the seconds left of the minute');
like($res->{body}, qr/"error"/, '... a JSON error');
is(key_of($b), $new, '... the key unchanged');
$res = $a->client->request(POST => '/activitypub/key', cred => $secret,
                           body => '{}');
is($res->{status}, 401, "B's credential on A: 401 (A knows no such key)")
    or diag "$res->{status} $res->{body}";
is(key_of($a), $pem, "A's key unchanged");

# refused keys: the section not written, the entity makes its own
my $other = $doc->{activitypub_keys}[0]{public};
my @bad = (
    [{ public => $pem, private => 'not a key', created_at => 1 },
     qr/PEM RSA key/, 'garbage'],
    [{ public => $pem, private => "-----BEGIN PRIVATE KEY-----\nAAAA\n"
                                  . "-----END PRIVATE KEY-----\n",
       created_at => 1 }, qr/PEM RSA key/, 'a broken PEM'],
    [{ public => $pem, private => genkey('-algorithm ed25519'),
       created_at => 1 }, qr/PEM RSA key/, 'an Ed25519 key'],
    [{ public => $pem, private => genkey('-algorithm RSA -pkeyopt rsa_keygen_bits:1024'),
       created_at => 1 }, qr/PEM RSA key/, 'RSA 1024'],
    [{ public => $pem, private => genkey('-algorithm RSA -pkeyopt rsa_keygen_bits:2048'),
       created_at => 1 }, qr/not the private key's public part/,
     'another key\'s public part'],
    [{ public => $pem, private => $k->{private}, created_at => 'x' },
     qr/created_at/, 'created_at not a time'],
    ['a string', qr/PEM strings/, 'not an object'],
    # encrypted (with the empty password): refused without a try, since
    # the document sets the PBKDF2 rounds (a worker held for minutes)
    [encrypted_row(), qr/PEM RSA key/, 'an encrypted PKCS#8 key'],
);
for my $t (@bad) {
    my ($row, $why, $what) = @$t;
    my $c = Tent::Peer->start(server_config => $CONF);
    my %d = %$doc;
    $d{activitypub_keys} = [$row];
    $res = import_into($c, \%d);
    is($res->{status}, 200, "$what: the import answers 200")
        or diag $res->{body};
    my $rep = $res->{json}{activitypub_keys} || {};
    is($rep->{taken}, 0, "$what: not taken");
    like(encode_json($res->{json}), $why, "$what: the report says why")
        or diag $res->{body};
    my $own = key_of($c);
    like($own // '', qr/BEGIN PUBLIC KEY/, "$what: the entity's own key");
    isnt($own, $pem, "$what: not A's");
    $c->stop;
}

# two keys: the second is refused
{
    my $c = Tent::Peer->start(server_config => $CONF);
    my %d = %$doc;
    $d{activitypub_keys} = [$k, $k];
    $res = import_into($c, \%d);
    is($res->{status}, 200, 'two keys: 200') or diag $res->{body};
    like(encode_json($res->{json}{activitypub_keys} // {}), qr/a second key/,
         'the second refused');
    $c->stop;
}

# what is kept is the key as OpenSSL writes it, not the bytes given (a
# traditional RSA PEM, text after it): the export shows PKCS#8 alone
{
    my $c = Tent::Peer->start(server_config => $CONF);
    my $tmp = File::Temp->new;
    print {$tmp} $k->{private};
    close $tmp;
    my $trad = `openssl pkey -traditional -in $tmp 2>/dev/null`;
    like($trad, qr/^-----BEGIN RSA PRIVATE KEY-----/, 'a traditional PEM');
    my %d = %$doc;
    $d{activitypub_keys} = [{ %$k, private => "$trad\ntext after it\n" }];
    $res = import_into($c, \%d);
    is($res->{json}{activitypub_keys}{taken}, 1, 'it is taken')
        or diag $res->{body};
    my ($rc, $cr) = $c->client->authorized_app($READ, info_types => 'all',
                                               post_types => 'all');
    my $cdoc = Tent::Util::export_document(port => $c->port, cred => $cr);
    is($cdoc->{activitypub_keys}[0]{private}, $k->{private},
       'exported as PKCS#8, nothing after it');
    $c->stop;
}

done_testing();
