package Tent::MAC;

# HTTP MAC request signing (draft-ietf-oauth-v2-http-mac-01 style) as used
# by Tent 0.2 apps.  Core modules only; see the POD at the end.

use strict;
use warnings;

use Exporter 'import';
use Carp qw(croak);
use Digest::SHA qw(hmac_sha1 hmac_sha256);
use MIME::Base64 qw(encode_base64);

our @EXPORT_OK = qw(mac_string mac_sign mac_header signed_headers
                    random_nonce);
our %EXPORT_TAGS = (all => \@EXPORT_OK);

my %DIGEST = (
    'hmac-sha-256' => \&hmac_sha256,
    'hmac-sha-1'   => \&hmac_sha1,
);

sub _need {
    my ($a, @keys) = @_;
    for my $k (@keys) {
        croak "Tent::MAC: missing '$k'" unless defined $a->{$k};
    }
}

sub mac_string {
    my %a = @_;
    _need(\%a, qw(ts nonce method uri host port));
    my $ext = defined $a{ext} ? $a{ext} : '';
    return join '', map { "$_\n" }
        $a{ts}, $a{nonce}, $a{method}, $a{uri}, $a{host}, $a{port}, $ext;
}

sub mac_sign {
    my %a = @_;
    _need(\%a, qw(key));
    my $alg = defined $a{algorithm} ? lc $a{algorithm} : 'hmac-sha-256';
    my $fn = $DIGEST{$alg} or croak "Tent::MAC: unsupported algorithm '$alg'";
    return encode_base64($fn->(mac_string(%a), $a{key}), '');
}

sub random_nonce {
    my $bytes = shift || 3;
    my $raw = '';
    if (open my $fh, '<:raw', '/dev/urandom') {
        read $fh, $raw, $bytes;
        close $fh;
    }
    $raw = join '', map { chr int rand 256 } 1 .. $bytes
        if length $raw != $bytes;
    return unpack 'H*', $raw;
}

sub mac_header {
    my %a = @_;
    _need(\%a, qw(id));
    $a{ts}    = time()         unless defined $a{ts};
    $a{nonce} = random_nonce() unless defined $a{nonce};
    for my $k (qw(id ts nonce)) {
        croak "Tent::MAC: '$k' must not contain '\"', '\\\\' or newlines"
            if $a{$k} =~ /["\\\r\n]/;
    }
    my $mac = mac_sign(%a);
    return qq{MAC id="$a{id}", ts="$a{ts}", nonce="$a{nonce}", mac="$mac"};
}

sub signed_headers {
    my %a = @_;
    my $cred = $a{cred} or croak "Tent::MAC: missing 'cred'";
    my $id = defined $cred->{mac_key_id} ? $cred->{mac_key_id}
                                         : $cred->{access_token};
    croak "Tent::MAC: cred has neither mac_key_id nor access_token"
        unless defined $id;
    croak "Tent::MAC: cred has no mac_key" unless defined $cred->{mac_key};
    return (
        Authorization => mac_header(
            id        => $id,
            key       => $cred->{mac_key},
            algorithm => $cred->{mac_algorithm},
            method    => defined $a{method} ? $a{method} : 'GET',
            uri       => $a{uri},
            host      => defined $a{host} ? $a{host} : 'localhost',
            port      => defined $a{port} ? $a{port} : 80,
            ts        => $a{ts},
            nonce     => $a{nonce},
        ),
    );
}

1;

__END__

=head1 NAME

Tent::MAC - sign Tent 0.2 requests with HTTP MAC (draft-ietf-oauth-v2-http-mac-01)

=head1 SYNOPSIS

    use Tent::MAC qw(mac_string mac_sign mac_header signed_headers);

    my $mac = mac_sign(key => '489dks293j39', algorithm => 'hmac-sha-1',
                       ts => 1336363200, nonce => 'dj83hs9s',
                       method => 'POST', uri => '/resource/1?b=1&a=2',
                       host => 'example.com', port => 80);
    # SIBz/j9mI1Ba2Y+10wdwbQGv2Yk=

    my %h = signed_headers(
        cred   => { mac_key_id => $id, mac_key => $key,
                    mac_algorithm => 'hmac-sha-256' },
        method => 'GET', uri => '/tent/posts?limit=4',
        host   => 'localhost', port => $port);
    # (Authorization => 'MAC id="...", ts="...", nonce="...", mac="..."')

=head1 DESCRIPTION

The normalized request string is seven fields, each followed by C<"\n">:

    ts \n nonce \n METHOD \n request-uri \n host \n port \n ext \n

C<request-uri> is the path plus C<?query> exactly as sent; C<host> is the
host without port, case kept; C<port> is the explicit port or the scheme's
default (80/443); C<ext> is empty for clients, so the string ends in
C<"port\n\n">.  The body is not signed.

The mac is C<Base64(HMAC(digest, mac_key, normalized_string))> with the key
used as-is (not hex-decoded) and padded Base64 without newlines.

=head1 FUNCTIONS

=over 4

=item mac_string(ts =E<gt> .., nonce =E<gt> .., method =E<gt> .., uri =E<gt> .., host =E<gt> .., port =E<gt> .., [ext =E<gt> ''])

Returns the normalized string.  The method is used exactly as given.

=item mac_sign(%args)

As C<mac_string> plus C<key> and C<algorithm> (C<hmac-sha-256>, the
default, or C<hmac-sha-1>).  Returns the Base64 mac.  Croaks on an
unknown algorithm.

=item mac_header(%args)

As C<mac_sign> plus C<id>.  C<ts> defaults to C<time()>, C<nonce> to six
random hex characters read from F</dev/urandom>.  Returns the whole
C<Authorization> header value:
C<MAC id="..", ts="..", nonce="..", mac="..">.

=item signed_headers(cred =E<gt> {mac_key_id, mac_key, mac_algorithm}, method, uri, host, port, [ts, nonce])

Returns a hash C<< (Authorization => mac_header(...)) >> ready to merge
into the headers of a test request.  C<cred> may be an app registration
(C<mac_key_id>) or an authorization (C<access_token>) response as
decoded JSON.  C<method> defaults to C<GET>, C<host> to C<localhost>,
C<port> to 80.

=item random_nonce([bytes])

Hex string of C<bytes> (default 3) random bytes.

=back

=head1 SEE ALSO

F<bin/tent-curl>, F<docs/tent-curl.md>.

=cut
