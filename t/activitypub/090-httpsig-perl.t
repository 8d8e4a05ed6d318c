# Tent::HTTPSig (t/lib/Tent/HTTPSig.pm), the tests' signer and verifier
# for the ActivityPub suites, against draft-cavage-http-signatures-12's
# own vectors (Appendix C: its RSA key, the request of C, the expected
# signatures of C.1, C.2 and C.3, rsa-sha256 being deterministic), then
# round trips (a new key each, Digest, Date window, tampering refused)
# and an RFC 9421 rsa-v1_5-sha256 signature checked by its base and its
# key.  No nginx.

use strict;
use warnings;

use Test::More;
use Tent::HTTPSig qw(new_key sign sign_rfc9421 verify parse_signature
                     signing_string digest http_date parse_http_date);

# draft-cavage-12 Appendix C
my $PRIV = <<'PEM';
-----BEGIN RSA PRIVATE KEY-----
MIICXgIBAAKBgQDCFENGw33yGihy92pDjZQhl0C36rPJj+CvfSC8+q28hxA161QF
NUd13wuCTUcq0Qd2qsBe/2hFyc2DCJJg0h1L78+6Z4UMR7EOcpfdUE9Hf3m/hs+F
UR45uBJeDK1HSFHD8bHKD6kv8FPGfJTotc+2xjJwoYi+1hqp1fIekaxsyQIDAQAB
AoGBAJR8ZkCUvx5kzv+utdl7T5MnordT1TvoXXJGXK7ZZ+UuvMNUCdN2QPc4sBiA
QWvLw1cSKt5DsKZ8UETpYPy8pPYnnDEz2dDYiaew9+xEpubyeW2oH4Zx71wqBtOK
kqwrXa/pzdpiucRRjk6vE6YY7EBBs/g7uanVpGibOVAEsqH1AkEA7DkjVH28WDUg
f1nqvfn2Kj6CT7nIcE3jGJsZZ7zlZmBmHFDONMLUrXR/Zm3pR5m0tCmBqa5RK95u
412jt1dPIwJBANJT3v8pnkth48bQo/fKel6uEYyboRtA5/uHuHkZ6FQF7OUkGogc
mSJluOdc5t6hI1VsLn0QZEjQZMEOWr+wKSMCQQCC4kXJEsHAve77oP6HtG/IiEn7
kpyUXRNvFsDE0czpJJBvL/aRFUJxuRK91jhjC68sA7NsKMGg5OXb5I5Jj36xAkEA
gIT7aFOYBFwGgQAQkWNKLvySgKbAZRTeLBacpHMuQdl1DfdntvAyqpAZ0lY0RKmW
G6aFKaqQfOXKCyWoUiVknQJAXrlgySFci/2ueKlIE1QqIiLSZ8V8OlpFLRnb1pzI
7U1yQXnTAEFYM560yJlzUpOb1V4cScGd365tiSMvxLOvTA==
-----END RSA PRIVATE KEY-----
PEM
my $PUB = <<'PEM';
-----BEGIN PUBLIC KEY-----
MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQDCFENGw33yGihy92pDjZQhl0C3
6rPJj+CvfSC8+q28hxA161QFNUd13wuCTUcq0Qd2qsBe/2hFyc2DCJJg0h1L78+6
Z4UMR7EOcpfdUE9Hf3m/hs+FUR45uBJeDK1HSFHD8bHKD6kv8FPGfJTotc+2xjJw
oYi+1hqp1fIekaxsyQIDAQAB
-----END PUBLIC KEY-----
PEM

my $C1 = 'SjWJWbWN7i0wzBvtPl8rbASWz5xQW6mcJmn+ibttBqtifLN7Sazz6m79cNfwwb8DM'
       . 'J5cou1s7uEGKKCs+FLEEaDV5lp7q25WqS+lavg7T8hc0GppauB6hbgEKTwblDHYGE'
       . 'tbGmtdHgVCk9SuS13F0hZ8FD0k/5OxEPXe5WozsbM=';
my $C2 = 'qdx+H7PHHDZgy4y/Ahn9Tny9V3GP6YgBPyUXMmoxWtLbHpUnXS2mg2+SbrQDMCJyp'
       . 'xBLSPQR2aAjn7ndmw2iicw3HMbe8VfEdKFYRqzic+efkb3nndiv/x1xSHDJWeSWkx'
       . '3ButlYSuBskLu6kd9Fswtemr3lgdDEmn04swr2Os0=';
my $C3 = 'vSdrb+dS3EceC9bcwHSo4MlyKS59iFIrhgYkz8+oVLEEzmYZZvRs8rgOp+63LEM3v'
       . '+MFHB32NfpB2bEKBIvB1q52LaEUHFv120V01IL+TAD48XaERZFukWgHoBTLMhYS2Gb5'
       . '1gWxpeIq8knRmPnYePbF5MOkR0Zkly4zKH7s1dE=';

my $BODY = '{"hello": "world"}';
my $DATE = 'Sun, 05 Jan 2014 21:31:40 GMT';
my $T = 1388957500;    # that date
my %C = (Host => 'example.com', Date => $DATE,
         'Content-Type' => 'application/json',
         Digest => 'SHA-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=',
         'Content-Length' => 18);
my $TARGET = '/foo?param=value&pet=dog';
my @ALL = ('(request-target)', qw(host date content-type digest
                                  content-length));

is(parse_http_date($DATE), $T, 'the appendix date in seconds');
is(http_date($T), $DATE, 'and back');
is(digest($BODY), $C{Digest}, "the appendix body's Digest");
is(digest($BODY, 1), 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:',
   'its RFC 9530 Content-Digest');

is(scalar signing_string('POST', $TARGET, \%C,
                         ['(request-target)', 'host', 'date']),
   "(request-target): post /foo?param=value&pet=dog\nhost: example.com\n"
   . "date: $DATE", 'C.2 signing string');

for my $v (['C.1 default (date only)', ['date'], $C1],
           ['C.2 basic', ['(request-target)', 'host', 'date'], $C2],
           ['C.3 all headers', \@ALL, $C3])
{
    my ($name, $covered, $want) = @$v;
    my %h = sign(key => $PRIV, key_id => 'Test', method => 'POST',
                 target => $TARGET, headers => {%C}, body => $BODY,
                 covered => $covered);
    my $sig = parse_signature($h{Signature});
    is($sig->{signature}, $want, "$name: the appendix signature");
    is($sig->{keyId}, 'Test', "$name: keyId");
    is_deeply($sig->{headers}, $covered, "$name: headers");
    my ($ok, $why) = verify(method => 'POST', target => $TARGET,
                            headers => \%h, body => $BODY,
                            public_key => $PUB, now => $T);
    ok($ok, "$name: verifies") or diag $why;
}

# the appendix's own header values, as printed, parse and verify
for my $hv (qq{keyId="Test",algorithm="rsa-sha256",signature="$C1"},
            qq{Signature keyId="Test",algorithm="rsa-sha256",}
            . qq{ headers="(request-target) host date", signature="$C2"},
            qq{keyId="Test",algorithm="rsa-sha256",headers="(request-target)}
            . qq{ host date content-type digest content-length",}
            . qq{signature="$C3"})
{
    my ($ok, $why) = verify(method => 'POST', target => $TARGET,
        headers => { %C, Signature => $hv }, body => $BODY,
        public_key => $PUB, now => $T);
    ok($ok, 'appendix header verifies: ' . substr($hv, 0, 50))
        or diag $why;
}

# refusals with the appendix key
{
    my %h = (%C, Signature => qq{keyId="Test",algorithm="rsa-sha256",}
                              . qq{headers="(request-target) host date",}
                              . qq{signature="$C2"});
    my @v = (method => 'POST', target => $TARGET, public_key => $PUB,
             now => $T, body => $BODY);
    my ($ok, $why) = verify(@v, headers => { %h, Host => 'example.org' });
    ok(!$ok && $why eq 'bad signature', 'another host: refused');
    ($ok, $why) = verify(@v, headers => \%h, target => '/foo');
    ok(!$ok && $why eq 'bad signature', 'another target: refused');
    ($ok, $why) = verify(@v, headers => \%h, method => 'GET');
    ok(!$ok, 'another method: refused');
    ($ok, $why) = verify(@v, headers => \%h, body => '{"hello":"World"}');
    is($why, 'digest mismatch', 'another body: the Digest refuses it');
    ($ok, $why) = verify(@v, headers => \%h, now => $T + 13 * 3600);
    is($why, 'date too old', '13 hours later: too old');
    ($ok, $why) = verify(@v, headers => \%h, now => $T - 3600);
    is($why, 'date in the future', 'an hour ahead: refused');
    ($ok, $why) = verify(@v, headers => \%h, require => ['digest']);
    is($why, 'digest not signed', 'digest required but not covered');
    ($ok, $why) = verify(@v, headers => { %h, Signature =>
        qq{keyId="Test",algorithm="rsa-sha1",signature="$C1"} });
    is($why, 'algorithm rsa-sha1', 'rsa-sha1: refused');
    ($ok, $why) = verify(@v, headers => { %h, Signature => 'keyId=Test' });
    like($why, qr/^signature: syntax/, 'unquoted: a syntax error');
    ($ok, $why) = verify(@v, headers => { %C });
    like($why, qr/no signature/, 'no Signature header');
}

# round trips with new keys, as the peers sign
my $k1 = new_key();
my $k2 = new_key();
like($k1->{private}, qr/BEGIN RSA PRIVATE KEY/, 'new_key: a private PEM');
like($k1->{public}, qr/BEGIN PUBLIC KEY/, 'and an SPKI public PEM');
isnt($k1->{public}, $k2->{public}, 'a new key pair per call');
is(Tent::HTTPSig::public_of($k1->{private}), $k1->{public},
   'public_of gives the same public PEM');

my $body = '{"type":"Follow"}';
my %s = sign(key => $k1->{private}, key_id => 'http://127.0.0.1:1/a#main-key',
             method => 'POST', target => '/inbox', host => '127.0.0.1:1',
             body => $body);
like($s{Signature}, qr/headers="\(request-target\) host date digest"/,
     'a POST covers (request-target) host date digest');
is($s{Digest}, digest($body), 'and has the Digest of its body');
my @v = (method => 'POST', target => '/inbox', headers => \%s, body => $body);
ok((verify(@v, public_key => $k1->{public}))[0], 'verifies with its key');
ok(!(verify(@v, public_key => $k2->{public}))[0], 'not with another key');
ok(!(verify(@v, public_key => 'not a key'))[0], 'nor with garbage');

my %bad = sign(key => $k1->{private}, key_id => 'k', target => '/inbox',
               host => 'h', body => $body, bad_signature => 1);
is((verify(method => 'POST', target => '/inbox', headers => \%bad,
           body => $body, public_key => $k1->{public}))[1],
   'bad signature', 'bad_signature: refused');
my %wd = sign(key => $k1->{private}, key_id => 'k', target => '/inbox',
              host => 'h', body => $body,
              headers => { Digest => digest('other') });
is((verify(method => 'POST', target => '/inbox', headers => \%wd,
           body => $body, public_key => $k1->{public}))[1],
   'digest mismatch', 'a given wrong Digest is kept, and refused');
my %old = sign(key => $k1->{private}, key_id => 'k', target => '/inbox',
               host => 'h', body => $body, date => time - 86400);
is((verify(method => 'POST', target => '/inbox', headers => \%old,
           body => $body, public_key => $k1->{public}))[1],
   'date too old', 'a day-old Date: refused');
my %get = sign(key => $k1->{private}, key_id => 'k', method => 'GET',
               target => '/actor', host => 'h');
like($get{Signature}, qr/headers="\(request-target\) host date"/,
     'a GET covers (request-target) host date');
ok(!exists $get{Digest}, 'and has no Digest');
ok((verify(method => 'GET', target => '/actor', headers => \%get,
           public_key => $k1->{public}))[0], 'and verifies');

# RFC 9421, rsa-v1_5-sha256
my $base = sign_rfc9421(base => 1, key_id => 'test-key', method => 'POST',
    target => '/foo?param=Value&Pet=dog', host => 'example.com',
    scheme => 'https', body => $BODY, created => 1618884473,
    headers => { Date => 'Tue, 20 Apr 2021 02:07:55 GMT' });
is($base, qq{"\@method": POST\n}
          . qq{"\@target-uri": https://example.com/foo?param=Value&Pet=dog\n}
          . qq{"content-digest": sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:\n}
          . qq{"\@signature-params": ("\@method" "\@target-uri" "content-digest")}
          . qq{;created=1618884473;keyid="test-key";alg="rsa-v1_5-sha256"},
   'RFC 9421 signature base');
my %r = sign_rfc9421(key => $k1->{private}, key_id => 'kid', method => 'POST',
                     target => '/inbox', host => '127.0.0.1:1', body => $body,
                     created => 1700000000);
is($r{'Signature-Input'}, 'sig1=("@method" "@target-uri" "content-digest")'
   . ';created=1700000000;keyid="kid";alg="rsa-v1_5-sha256"',
   'Signature-Input');
my ($b64) = $r{Signature} =~ /^sig1=:([A-Za-z0-9+\/=]+):$/;
ok($b64, 'Signature: sig1=:...:');
my $rbase = sign_rfc9421(base => 1, key_id => 'kid', method => 'POST',
    target => '/inbox', host => '127.0.0.1:1', body => $body,
    created => 1700000000);
ok(Tent::HTTPSig::verify_text($k1->{public}, $rbase, $b64),
   'it is the PKCS#1 v1.5 SHA-256 signature of that base');
ok(!Tent::HTTPSig::verify_text($k2->{public}, $rbase, $b64),
   'not by another key');

# and verified as Mastodon verifies inbound RFC 9421
{
    my @v = (method => 'POST', target => '/inbox', headers => \%r,
             body => $body, now => 1700000000);
    my ($ok, $kid) = Tent::HTTPSig::verify_rfc9421(
        @v, public_key => $k1->{public}, require => ['content-digest']);
    ok($ok, 'verify_rfc9421: verifies') or diag $kid;
    is($kid, 'kid', 'and gives the keyid');
    my ($no, $why) = Tent::HTTPSig::verify_rfc9421(
        @v, public_key => $k2->{public});
    is($why, 'bad signature', 'another key: refused');
    ($no, $why) = Tent::HTTPSig::verify_rfc9421(
        @v, public_key => $k1->{public}, body => 'other');
    is($why, 'digest mismatch', 'another body: refused by Content-Digest');
    ($no, $why) = Tent::HTTPSig::verify_rfc9421(
        @v, public_key => $k1->{public}, target => '/inbox2');
    is($why, 'bad signature', 'another target: refused');
    ($no, $why) = Tent::HTTPSig::verify_rfc9421(
        @v, public_key => $k1->{public}, now => 1700000000 + 86400);
    is($why, 'created too old', 'a day later: too old');
    ($no, $why) = Tent::HTTPSig::verify_rfc9421(
        @v, public_key => $k1->{public}, require => ['@authority']);
    is($why, '@authority not signed', 'a required component not covered');
    my %b = sign_rfc9421(key => $k1->{private}, key_id => 'kid',
                         target => '/inbox', host => 'h', body => $body,
                         created => 1700000000, bad_signature => 1);
    ($no, $why) = Tent::HTTPSig::verify_rfc9421(
        @v, headers => \%b, public_key => $k1->{public});
    is($why, 'bad signature', 'bad_signature: refused');
}

done_testing;
