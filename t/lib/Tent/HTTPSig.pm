package Tent::HTTPSig;

# HTTP Signatures for the ActivityPub suites, on the test side: what a
# Mastodon or snac peer sends and checks.  draft-cavage-http-signatures-12
# ("Signature: keyId=...,algorithm="rsa-sha256",headers="(request-target)
# host date digest",signature=...") with a "Digest: SHA-256=" of the body
# and an HTTP Date; and RFC 9421 (Signature-Input / Signature,
# rsa-v1_5-sha256, Content-Digest of RFC 9530) for tests of inbound 9421.
# Crypt::OpenSSL::RSA (libcrypt-openssl-rsa-perl) and Digest::SHA.
#
#   my $k = Tent::HTTPSig::new_key();      # { private => PEM, public => PEM }
#   my %h = Tent::HTTPSig::sign(
#       key => $k->{private}, key_id => "$actor#main-key",
#       method => 'POST', target => '/inbox', host => '127.0.0.1:8080',
#       body => $json);                    # Host, Date, Digest, Signature
#   my ($ok, $why) = Tent::HTTPSig::verify(
#       method => 'POST', target => '/inbox', headers => \%h,
#       body => $json, public_key => $k->{public});
#
# See docs/testing.md.

use strict;
use warnings;

use Crypt::OpenSSL::RSA;
use Digest::SHA qw(sha256 sha512);
use Exporter qw(import);
use MIME::Base64 qw(encode_base64 decode_base64);

our @EXPORT_OK = qw(new_key sign sign_rfc9421 verify verify_rfc9421
                    rfc9421_base parse_signature
                    signing_string digest http_date parse_http_date);

our $KEY_BITS = 2048;
# Mastodon's window: 12 hours in the past, a few minutes ahead
our $PAST = 12 * 3600;
our $FUTURE = 300;

my @DAY = qw(Sun Mon Tue Wed Thu Fri Sat);
my @MON = qw(Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec);

# a new RSA key pair each call: { private => PKCS#1 PEM, public => SPKI PEM }
sub new_key {
    my ($bits) = @_;
    my $rsa = Crypt::OpenSSL::RSA->generate_key($bits || $KEY_BITS);
    return { private => $rsa->get_private_key_string,
             public => $rsa->get_public_key_x509_string };
}

# the public half of a private PEM, as SPKI PEM (publicKeyPem)
sub public_of {
    my ($private) = @_;
    return Crypt::OpenSSL::RSA->new_private_key($private)
        ->get_public_key_x509_string;
}

# IMF-fixdate, whatever the locale
sub http_date {
    my ($t) = @_;
    my @g = gmtime(defined $t ? $t : time);
    return sprintf '%s, %02d %s %04d %02d:%02d:%02d GMT', $DAY[$g[6]], $g[3],
        $MON[$g[4]], $g[5] + 1900, $g[2], $g[1], $g[0];
}

# IMF-fixdate to seconds, undef when it is none
sub parse_http_date {
    my ($s) = @_;
    return undef unless defined $s;
    my ($d, $mon, $y, $H, $M, $S) =
        $s =~ /^\w{3}, (\d{2}) (\w{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/
        or return undef;
    my ($m) = grep { $MON[$_] eq $mon } 0 .. 11;
    return undef unless defined $m;
    require Time::Local;
    return eval { Time::Local::timegm($S, $M, $H, $d, $m, $y) };
}

# "SHA-256=<base64>" (cavage Digest); rfc9530 => 1: "sha-256=:<base64>:"
sub digest {
    my ($body, $rfc9530) = @_;
    my $b64 = encode_base64(sha256($body // ''), '');
    return $rfc9530 ? "sha-256=:$b64:" : "SHA-256=$b64";
}

sub _rsa_private {
    my ($pem, $hash) = @_;
    my $rsa = Crypt::OpenSSL::RSA->new_private_key($pem);
    $hash eq 'sha512' ? $rsa->use_sha512_hash : $rsa->use_sha256_hash;
    return $rsa;
}

sub _rsa_public {
    my ($pem) = @_;
    my $rsa = eval { Crypt::OpenSSL::RSA->new_public_key($pem) };
    $rsa->use_sha256_hash if $rsa;
    return $rsa;
}

sub _lc_headers {
    my ($h) = @_;
    my %l;
    for my $k (keys %{ $h || {} }) {
        my $v = $h->{$k};
        $v = join ', ', @$v if ref $v eq 'ARRAY';
        $l{lc $k} = exists $l{lc $k} ? "$l{lc $k}, $v" : $v;
    }
    return \%l;
}

# the cavage signing string of a request: method, target (path and query
# as sent), headers ({name => value}, any case), the covered names in
# order; (created) and (expires) from %p.  undef and the reason when a
# covered header is missing.
sub signing_string {
    my ($method, $target, $headers, $names, %p) = @_;
    my $h = _lc_headers($headers);
    my @lines;
    for my $n (@$names) {
        my $name = lc $n;
        if ($name eq '(request-target)') {
            push @lines, "(request-target): " . lc($method) . " $target";
        } elsif ($name eq '(created)' || $name eq '(expires)') {
            my $v = $p{ substr($name, 1, -1) };
            return (undef, "no $name") unless defined $v;
            push @lines, "$name: $v";
        } else {
            return (undef, "no $name header") unless defined $h->{$name};
            # obs-fold and the surrounding blanks out
            (my $v = $h->{$name}) =~ s/\s*\r?\n\s*/ /g;
            $v =~ s/^\s+|\s+$//g;
            push @lines, "$name: $v";
        }
    }
    return join "\n", @lines;
}

# sign(key => PEM, key_id => ID, method, target, host, body, headers =>
#      {...}, date => epoch | 'string', covered => [names],
#      algorithm => 'rsa-sha256' | 'hs2019'):
# the headers to send, as a list of name => value: Host, Date, Digest
# (when there is a body, or "digest" is covered) and Signature.  A header
# given in "headers" is kept as given (a wrong Digest stays wrong); the
# test of others' refusals: bad_signature => 1 flips a bit of the
# signature once made; sign_as => {method, target, host, body}: signs
# those instead of what is sent.
sub sign {
    my (%a) = @_;
    my $method = uc($a{method} || 'POST');
    my $target = $a{target} // '/';
    my %h = %{ $a{headers} || {} };
    my $lc = _lc_headers(\%h);

    $h{Host} = $a{host} if defined $a{host} && !defined $lc->{host};
    unless (defined $lc->{date}) {
        $h{Date} = defined $a{date} && $a{date} !~ /^\d+(?:\.\d*)?$/
            ? $a{date} : http_date($a{date});
    }
    my @covered = $a{covered} ? @{ $a{covered} }
        : defined $a{body} || $method eq 'POST'
        ? ('(request-target)', 'host', 'date', 'digest')
        : ('(request-target)', 'host', 'date');
    if (!defined $lc->{digest} && grep { lc $_ eq 'digest' } @covered) {
        $h{Digest} = digest($a{body});
    }

    my %s = %{ $a{sign_as} || {} };
    my %sh = %h;
    $sh{Host} = $s{host} if defined $s{host};
    $sh{Digest} = digest($s{body}) if defined $s{body};
    my $created = $a{created} // time;
    my ($text, $why) = signing_string(
        $s{method} || $method, $s{target} // $target, \%sh, \@covered,
        created => $created, expires => $a{expires});
    die "Tent::HTTPSig::sign: $why\n" unless defined $text;

    my $sig = _rsa_private($a{key}, 'sha256')->sign($text);
    substr($sig, 10, 1) = chr(ord(substr($sig, 10, 1)) ^ 1)
        if $a{bad_signature};

    my $alg = $a{algorithm} || 'rsa-sha256';
    my @p = ('keyId="' . $a{key_id} . '"', qq{algorithm="$alg"});
    push @p, "created=$created"
        if grep { lc $_ eq '(created)' } @covered;
    push @p, "expires=$a{expires}"
        if grep { lc $_ eq '(expires)' } @covered;
    push @p, 'headers="' . join(' ', map { lc } @covered) . '"';
    push @p, 'signature="' . encode_base64($sig, '') . '"';
    $h{Signature} = join ',', @p;
    return %h;
}

# a cavage Signature (or Authorization: Signature ...) value:
# { keyId, algorithm, headers => [names], signature (base64), created,
#   expires }; undef and the reason when it does not parse
sub parse_signature {
    my ($v) = @_;
    return (undef, 'no signature') unless defined $v && length $v;
    $v =~ s/^\s*Signature\s+//i;
    my %p;
    while (length $v) {
        $v =~ s/^[\s,]+//;
        last unless length $v;
        my ($k, $val);
        if ($v =~ s/^([A-Za-z]+)\s*=\s*"([^"]*)"//) {
            ($k, $val) = ($1, $2);
        } elsif ($v =~ s/^([A-Za-z]+)\s*=\s*(\d+(?:\.\d+)?)//) {
            ($k, $val) = ($1, $2);
        } else {
            return (undef, "syntax at '" . substr($v, 0, 20) . "'");
        }
        return (undef, "duplicate $k") if exists $p{$k};
        $p{$k} = $val;
    }
    return (undef, 'no keyId') unless defined $p{keyId};
    return (undef, 'no signature=') unless defined $p{signature};
    $p{headers} = [ split ' ', lc($p{headers} // 'date') ];
    return \%p;
}

# verify(method, target, headers => {...}, body, public_key => PEM,
#        now => epoch, past => s, future => s,
#        require => [names that must be covered])
# (1) when the cavage Signature verifies with the key; (0, why) if not.
# The Digest, when there is one or it is covered, must be the body's;
# the Date, when there is one, within [now - past, now + future].
sub verify {
    my (%a) = @_;
    my $h = _lc_headers($a{headers});
    my ($sig, $why) = parse_signature($h->{signature}
        // ($h->{authorization} && $h->{authorization} =~ /^Signature /i
            ? $h->{authorization} : undef));
    return (0, "signature: $why") unless $sig;
    my $alg = lc($sig->{algorithm} // 'hs2019');
    return (0, "algorithm $alg") unless $alg eq 'rsa-sha256'
                                        || $alg eq 'hs2019';
    for my $r (@{ $a{require} || [] }) {
        return (0, "$r not signed") unless grep { $_ eq lc $r }
                                           @{ $sig->{headers} };
    }
    if (defined $h->{digest} || grep { $_ eq 'digest' } @{ $sig->{headers} }) {
        return (0, 'no digest') unless defined $h->{digest};
        my ($sha) = grep { /^SHA-256=/i } split /\s*,\s*/, $h->{digest};
        return (0, 'digest algorithm') unless defined $sha;
        my $want = digest($a{body});
        return (0, 'digest mismatch')
            unless substr($sha, 8) eq substr($want, 8);
    }
    my $now = $a{now} // time;
    if (defined $h->{date}) {
        my $t = parse_http_date($h->{date});
        return (0, 'date syntax') unless defined $t;
        return (0, 'date too old') if $t < $now - ($a{past} // $PAST);
        return (0, 'date in the future') if $t > $now + ($a{future} // $FUTURE);
    } elsif (!defined $sig->{created}) {
        return (0, 'no date');
    }
    my ($text, $miss) = signing_string($a{method}, $a{target}, $h,
        $sig->{headers}, created => $sig->{created},
        expires => $sig->{expires});
    return (0, $miss) unless defined $text;
    my $rsa = _rsa_public($a{public_key});
    return (0, 'bad public key') unless $rsa;
    my $bytes = decode_base64($sig->{signature});
    return (0, 'bad signature') unless length $bytes
        && eval { $rsa->verify($text, $bytes) };
    return (1);
}

# sign_rfc9421(key, key_id, method, target, host, scheme => 'http',
#              body, headers => {...}, label => 'sig1', created => epoch,
#              components => ['@method', '@target-uri', 'content-digest'])
# RFC 9421, alg rsa-v1_5-sha256: the headers to send (Host, Date,
# Content-Digest when covered, Signature-Input, Signature); with
# base => 1 in scalar context: the signature base only.
sub sign_rfc9421 {
    my (%a) = @_;
    my $method = uc($a{method} || 'POST');
    my $target = $a{target} // '/';
    my $scheme = $a{scheme} || 'http';
    my %h = %{ $a{headers} || {} };
    my $lc = _lc_headers(\%h);
    $h{Host} = $a{host} if defined $a{host} && !defined $lc->{host};
    $h{Date} = http_date() unless defined $lc->{date};
    my @comp = @{ $a{components}
                  || [ '@method', '@target-uri', 'content-digest' ] };
    $h{'Content-Digest'} = digest($a{body}, 1)
        if !defined $lc->{'content-digest'}
           && grep { $_ eq 'content-digest' } @comp;
    my $params = '(' . join(' ', map { qq{"$_"} } @comp) . ')';
    $params .= ';created=' . ($a{created} // time)
        unless exists $a{created} && !defined $a{created};
    $params .= ";expires=$a{expires}" if defined $a{expires};
    $params .= qq{;nonce="$a{nonce}"} if defined $a{nonce};
    $params .= qq{;keyid="$a{key_id}"};
    $params .= qq{;alg="rsa-v1_5-sha256"} unless $a{no_alg};
    $params .= qq{;tag="$a{tag}"} if defined $a{tag};
    my ($base, $why) = rfc9421_base($method, $target, $scheme, \%h, \@comp,
                                    $params);
    die "Tent::HTTPSig::sign_rfc9421: $why\n" unless defined $base;
    return $base if $a{base};

    my $sig = _rsa_private($a{key}, 'sha256')->sign($base);
    substr($sig, 10, 1) = chr(ord(substr($sig, 10, 1)) ^ 1)
        if $a{bad_signature};
    my $label = $a{label} || 'sig1';
    $h{'Signature-Input'} = "$label=$params";
    $h{Signature} = "$label=:" . encode_base64($sig, '') . ':';
    return %h;
}

# the RFC 9421 signature base of a request: its components' lines and
# the "@signature-params" line (params as Signature-Input has them);
# undef and the reason when a component is missing or unknown
sub rfc9421_base {
    my ($method, $target, $scheme, $headers, $comp, $params) = @_;
    my $lc = _lc_headers($headers);
    my $authority = lc($lc->{host} // '');
    my ($path, $query) = split /\?/, $target, 2;
    my @lines;
    for my $c (@$comp) {
        my $v;
        if ($c eq '@method') { $v = uc $method }
        elsif ($c eq '@target-uri') { $v = "$scheme://$authority$target" }
        elsif ($c eq '@authority') { $v = $authority }
        elsif ($c eq '@scheme') { $v = $scheme }
        elsif ($c eq '@request-target') { $v = $target }
        elsif ($c eq '@path') { $v = $path }
        elsif ($c eq '@query') { $v = '?' . ($query // '') }
        elsif ($c =~ /^@/) { return (undef, "component $c") }
        else {
            $v = $lc->{$c};
            return (undef, "no $c header") unless defined $v;
            $v =~ s/^\s+|\s+$//g;
        }
        push @lines, qq{"$c": $v};
    }
    push @lines, qq{"\@signature-params": $params};
    return join "\n", @lines;
}

# verify_rfc9421(method, target, scheme => 'http', headers => {...},
#                body, public_key => PEM, now, past, future,
#                require => [components]):
# an RFC 9421 rsa-v1_5-sha256 (or unnamed alg) signature, the first of
# Signature-Input's labels; (1, keyid) or (0, why).  A covered
# Content-Digest must be the body's; "created" within the window.
sub verify_rfc9421 {
    my (%a) = @_;
    my $h = _lc_headers($a{headers});
    my $in = $h->{'signature-input'};
    return (0, 'no signature-input') unless defined $in;
    my ($label, $params) = $in =~ /^\s*([a-z*][a-z0-9_.*-]*)=(\(.*)$/
        or return (0, 'signature-input syntax');
    $params =~ s/\s*,\s*[a-z*][a-z0-9_.*-]*=\(.*$//;    # the first only
    my ($list) = $params =~ /^\(([^)]*)\)/
        or return (0, 'signature-input syntax');
    my @comp = map { /^"([^"]+)"$/ ? $1 : return (0, "component $_") }
               split ' ', $list;
    my %p;
    for my $kv (split /;/, substr($params, length($list) + 2)) {
        next unless length $kv;
        my ($k, $v) = $kv =~ /^([a-z]+)=("([^"]*)"|\d+)$/
            or return (0, "parameter $kv");
        $p{$k} = defined $3 ? $3 : $v;
    }
    return (0, "alg $p{alg}")
        if defined $p{alg} && $p{alg} ne 'rsa-v1_5-sha256';
    return (0, 'no keyid') unless defined $p{keyid};
    my ($b64) = ($h->{signature} // '') =~ /(?:^|,)\s*\Q$label\E=:([A-Za-z0-9+\/=]+):/
        or return (0, 'no signature for ' . $label);
    for my $r (@{ $a{require} || [] }) {
        return (0, "$r not signed") unless grep { $_ eq $r } @comp;
    }
    if (grep { $_ eq 'content-digest' } @comp) {
        my ($sha) = ($h->{'content-digest'} // '') =~ /sha-256=:([^:]*):/;
        return (0, 'digest mismatch')
            unless defined $sha && "sha-256=:$sha:" eq digest($a{body}, 1);
    }
    my $now = $a{now} // time;
    return (0, 'no created') unless defined $p{created};
    return (0, 'created too old')
        if $p{created} < $now - ($a{past} // $PAST);
    return (0, 'created in the future')
        if $p{created} > $now + ($a{future} // $FUTURE);
    return (0, 'expired') if defined $p{expires} && $p{expires} < $now;
    my ($base, $why) = rfc9421_base($a{method}, $a{target},
                                    $a{scheme} || 'http', $h, \@comp,
                                    $params);
    return (0, $why) unless defined $base;
    return (0, 'bad signature')
        unless verify_text($a{public_key}, $base, $b64);
    return (1, $p{keyid});
}

# whether "text" was signed with PKCS#1 v1.5 SHA-256 (sha512 => 1:
# SHA-512) by the key of public PEM; the signature in base64
sub verify_text {
    my ($pem, $text, $b64) = @_;
    my $rsa = _rsa_public($pem) or return 0;
    return eval { $rsa->verify($text, decode_base64($b64)) } ? 1 : 0;
}

# the base64 PKCS#1 v1.5 SHA-256 signature of "text" by a private PEM
sub sign_text {
    my ($pem, $text) = @_;
    return encode_base64(_rsa_private($pem, 'sha256')->sign($text), '');
}

1;
