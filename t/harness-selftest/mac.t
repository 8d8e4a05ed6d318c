# HTTP MAC signing: t/lib/Tent/MAC.pm and bin/tent-curl against the spec's
# test vectors.  No nginx, no network (tent-curl runs with --print-header,
# --dry-run or a fake curl).
# Run: cd /work/main && prove -It/lib t/harness-selftest/mac.t

use strict;
use warnings;

use Test::More;
use File::Basename qw(dirname);
use File::Spec;
use File::Temp qw(tempdir);
use Cwd qw(abs_path);

use Tent::MAC qw(mac_string mac_sign mac_header signed_headers random_nonce);

my $root = abs_path(File::Spec->catdir(dirname(__FILE__), '..', '..'));
my $tc   = "$root/bin/tent-curl";

my $K1 = '489dks293j39';
my $K2 = 'c81c01908a35c460a07a98ab7167a2e8';
my $KA = '2bbdc4c74b42c9e934cdab5b68d82825';   # app
my $KU = 'feb5bb691c6469f3d1f6e7a3be001651';   # user
my $KF = '484b9d41598fc54e4280c909920c3230';   # follower

# [key, alg, ts, nonce, method, uri, host, port, mac]
my @V = (
    [$K1, 'hmac-sha-1',   1336363200, 'dj83hs9s', 'POST', '/resource/1?b=1&a=2', 'example.com', 80,
        'SIBz/j9mI1Ba2Y+10wdwbQGv2Yk='],
    [$K1, 'hmac-sha-1',   1336363200, 'dj83hs9s', 'GET', '/resource/1?b=1&a=2', 'example.com', 80,
        '6T3zZzy2Emppni6bzL7kdRxUWL4='],
    [$K1, 'hmac-sha-256', 1336363200, 'dj83hs9s', 'POST', '/resource/1?b=1&a=2', 'example.com', 80,
        'Xt51rtHY5F+jxKXMCoiKgXa3geofWW/7RANCXB1yu08='],
    [$K2, 'hmac-sha-256', 1336363200, 'dj83hs9s', 'GET', '/posts?b=1&a=2', 'example.com', 80,
        'iqYTKvVQGIwVYwrf0A9hEiKLdbQcwEvk802ZitOY+2w='],
    [$KA, 'hmac-sha-256', 1356283728, '4ae016', 'POST', '/apps/sNk1G29CkJpgsMR1HU8cjg/authorizations', 'example.com', 443,
        'VmV4ZDLTttqhvpJ25k3nQYN2l9UgkwZDTk7WLFM007E='],
    [$KA, 'hmac-sha-256', 1356283728, 'd00fbc', 'GET', '/apps/sNk1G29CkJpgsMR1HU8cjg', 'example.com', 443,
        'YbXaoyt2oKsQuPOAN+5tZdJXF6H5aDfRsdcu1Q6eID0='],
    [$KU, 'hmac-sha-256', 1356283728, '8236e5', 'POST', '/posts', 'example.com', 443,
        'uWVjn3qFR/l2TFGKPyRrOHsz/+dUIeCBEoVVr/VXNRo='],
    [$KU, 'hmac-sha-256', 1356283729, '9a3dc0', 'GET', '/posts?limit=4', 'example.com', 443,
        'pcpPqFvSjwpWZSCBN8IcRo3wJ0EWuETXodNAuc2rVpw='],
    [$KU, 'hmac-sha-256', 1356283728, 'f9020b', 'PUT', '/profile/https%3A%2F%2Ftent.io%2Ftypes%2Finfo%2Fbasic%2Fv0.1.0', 'example.com', 443,
        'pJJS5ZexsCGXfxdShpk71AiehKqvEON89+g5rgSIiFs='],
    [$KU, 'hmac-sha-256', 1356283729, 'bd0417', 'DELETE', '/posts/mjyMQY9icvXdFuMnauyoUw?version=1', 'example.com', 443,
        'zaMdYssWvVSnzh1mcgBBZTauI6/vZUyQ66SbT3c4f2I='],
    [$KF, 'hmac-sha-256', 1356283729, '66f2d9', 'GET', '/followers/HlgDJvM4m17DTMdFk15UKg', 'example.com', 443,
        'K7n+KdBHSyVa4wd8+JzsEVN34ZxCAY/wX3hF5INSDVU='],
    [$KF, 'hmac-sha-256', 1356283729, 'f17a78', 'GET', '/posts', 'example.com', 443,
        'L2MoYVP9GMXNBCngzNS1OEKgC1/Q0ky11fFgVek56sE='],
);

sub vargs {
    my $v = shift;
    my %a;
    @a{qw(key algorithm ts nonce method uri host port)} = @$v[0 .. 7];
    return %a;
}

sub url_of {
    my $v = shift;
    my ($host, $port, $uri) = @$v[6, 7, 5];
    return $port == 443 ? "https://$host$uri"
         : $port == 80  ? "http://$host$uri"
         :                "http://$host:$port$uri";
}

# run a command without a shell; returns (stdout, exit status)
sub run {
    my @cmd = @_;
    my $pid = open my $fh, '-|';
    die "fork: $!" unless defined $pid;
    if (!$pid) {
        open STDERR, '>', File::Spec->devnull;
        exec { $cmd[0] } @cmd or exit 127;
    }
    local $/;
    my $out = <$fh>;
    close $fh;
    return (defined $out ? $out : '', $? >> 8);
}

sub tc { run($^X, $tc, @_) }

# ------------------------------------------------------------ Tent::MAC

is mac_string(ts => 1336363200, nonce => 'dj83hs9s', method => 'POST',
              uri => '/resource/1?b=1&a=2', host => 'example.com', port => 80),
   "1336363200\ndj83hs9s\nPOST\n/resource/1?b=1&a=2\nexample.com\n80\n\n",
   'normalized string: 7 fields, empty ext';

for my $v (@V) {
    is mac_sign(vargs($v)), $v->[8], "mac_sign $v->[1] $v->[4] $v->[5] port $v->[7]";
}

is mac_sign(vargs($V[0]), algorithm => 'HMAC-SHA-1'), $V[0][8],
   'algorithm name is case-insensitive';
ok !eval { mac_sign(vargs($V[0]), algorithm => 'hmac-md5'); 1 },
   'unknown algorithm croaks';

{
    my $h = mac_header(vargs($V[3]), id => 'a:1');
    is $h, qq{MAC id="a:1", ts="1336363200", nonce="dj83hs9s", mac="$V[3][8]"},
       'mac_header with given ts/nonce';

    my %a = vargs($V[3]);
    delete @a{qw(ts nonce)};
    my $t0 = time;
    $h = mac_header(%a, id => 'x');
    my ($ts, $nonce, $mac) = $h =~ /\AMAC id="x", ts="(\d+)", nonce="([0-9a-f]{6})", mac="([A-Za-z0-9+\/]+=*)"\z/;
    ok defined $ts, 'mac_header defaults: ts digits, nonce 6 hex' or diag $h;
    ok $ts >= $t0 && $ts <= time + 1, 'default ts is now';
    is $mac, mac_sign(%a, ts => $ts, nonce => $nonce), 'default-ts/nonce header verifies';
    isnt random_nonce(), random_nonce(), 'nonces differ';
}

{
    my %h = signed_headers(
        cred => { mac_key_id => 'app1', mac_key => $KU, mac_algorithm => 'hmac-sha-256' },
        method => 'GET', uri => '/posts?limit=4', host => 'example.com', port => 443,
        ts => 1356283729, nonce => '9a3dc0');
    is_deeply \%h,
        { Authorization => qq{MAC id="app1", ts="1356283729", nonce="9a3dc0", mac="$V[7][8]"} },
        'signed_headers with mac_key_id';

    %h = signed_headers(
        cred => { access_token => 'tok', mac_key => $K1, mac_algorithm => 'hmac-sha-1' },
        method => 'POST', uri => '/resource/1?b=1&a=2', host => 'example.com', port => 80,
        ts => 1336363200, nonce => 'dj83hs9s');
    like $h{Authorization}, qr/\AMAC id="tok", .* mac="\Q$V[0][8]\E"\z/,
        'signed_headers with access_token';
}

# ------------------------------------------------------------ bin/tent-curl

ok -x $tc, 'bin/tent-curl is executable';
{
    open my $fh, '<', $tc or die;
    is scalar <$fh>, "#!/usr/bin/perl\n", 'shebang';
}

for my $v (@V) {
    my ($out, $rc) = tc('--print-header', '--id', 'X', '--key', $v->[0],
        '--alg', $v->[1], '--ts', $v->[2], '--nonce', $v->[3],
        '-X', $v->[4], url_of($v));
    is $out, qq{Authorization: MAC id="X", ts="$v->[2]", nonce="$v->[3]", mac="$v->[8]"\n},
       "tent-curl --print-header $v->[4] " . url_of($v);
    is $rc, 0, '... exit 0';
}

# explicit default ports and host case, fragment not signed
{
    my $v = $V[7];
    my ($out) = tc('--print-header', '--id', 'X', '--key', $v->[0], '--ts', $v->[2],
        '--nonce', $v->[3], 'https://example.com:443/posts?limit=4#frag');
    like $out, qr/mac="\Q$v->[8]\E"/, 'explicit :443 and #fragment';

    my $exp = mac_sign(vargs($v), host => 'Example.COM', port => 8443);
    ($out) = tc('--print-header', '--id', 'X', '--key', $v->[0], '--ts', $v->[2],
        '--nonce', $v->[3], 'https://Example.COM:8443/posts?limit=4');
    like $out, qr/mac="\Q$exp\E"/, 'explicit port and host case kept';

    $exp = mac_sign(vargs($v), uri => '/', method => 'GET', port => 80);
    ($out) = tc('--print-header', '--id', 'X', '--key', $v->[0], '--ts', $v->[2],
        '--nonce', $v->[3], 'http://example.com');
    like $out, qr/mac="\Q$exp\E"/, 'empty path signs as /';
}

# credentials from files and environment
my $dir = tempdir(CLEANUP => 1);
{
    my $v = $V[0];
    open my $fh, '>', "$dir/app.json" or die;
    print $fh qq({"id":"a","mac_key_id":"app-key-1","mac_key":"$K1","mac_algorithm":"hmac-sha-1"}\n);
    close $fh;
    open $fh, '>', "$dir/auth.json" or die;
    print $fh qq({"access_token":"tok-1","mac_key":"$K1","mac_algorithm":"hmac-sha-1","token_type":"mac"}\n);
    close $fh;

    my @sig = ('--ts', $v->[2], '--nonce', $v->[3], '-X', 'POST', url_of($v));
    my ($out) = tc('--print-header', '--cred', "$dir/app.json", @sig);
    is $out, qq{Authorization: MAC id="app-key-1", ts="$v->[2]", nonce="$v->[3]", mac="$v->[8]"\n},
       '--cred with app registration JSON';
    ($out) = tc('--print-header', '--cred', "$dir/auth.json", @sig);
    like $out, qr/\AAuthorization: MAC id="tok-1", .* mac="\Q$v->[8]\E"\n\z/,
       '--cred with authorization JSON';
    ($out) = tc('--print-header', '--cred', "$dir/auth.json", '--id', 'over', @sig);
    like $out, qr/id="over".* mac="\Q$v->[8]\E"/, '--id overrides --cred';

    local $ENV{TENT_MAC_ID}  = 'env-id';
    local $ENV{TENT_MAC_KEY} = $K1;
    local $ENV{TENT_MAC_ALG} = 'hmac-sha-1';
    ($out) = tc('--print-header', @sig);
    like $out, qr/id="env-id".* mac="\Q$v->[8]\E"/, 'credentials from TENT_MAC_*';

    delete local $ENV{TENT_MAC_ID};
    my $rc;
    ($out, $rc) = tc('--print-header', @sig);
    is $rc, 2, 'missing id: exit 2';
}

# method inference and the curl command line (--dry-run)
{
    my @c = ('--id', 'X', '--key', $KU, '--ts', 1356283728, '--nonce', '8236e5');
    my ($out) = tc('--dry-run', @c, '-d', '{"a":1}', 'https://example.com/posts', '--', '-sS');
    like $out, qr/mac="\Q$V[6][8]\E"/, '-d implies POST';
    like $out, qr/-H 'Accept: application\/vnd\.tent\.v0\+json'/, 'Accept added';
    like $out, qr/-H 'Content-Type: application\/vnd\.tent\.v0\+json'/, 'Content-Type added with body';
    unlike $out, qr/ -X /, 'no -X when curl infers POST';
    like $out, qr/--globoff --path-as-is/, 'URL passed to curl untouched';
    like $out, qr/ -sS https:\/\/example\.com\/posts\n\z/, 'curl args then URL';

    ($out) = tc('--dry-run', @c, '-H', 'Accept: */*', '-H', 'content-type: text/plain',
                '-d', 'x', 'https://example.com/posts');
    unlike $out, qr/vnd\.tent/, 'user Accept / Content-Type kept';

    ($out) = tc('--dry-run', @c, 'https://example.com/posts');
    unlike $out, qr/Content-Type/, 'no Content-Type without body';
    like $out, qr/\Acurl -sS --globoff /, 'curl quiet by default (-sS)';
    unlike $out, qr/ -v /, 'without its trace';
    ($out) = tc('--dry-run', '-v', @c, 'https://example.com/posts');
    like $out, qr/\Acurl -sS --globoff --path-as-is -v -H /,
        '-v: curl\'s trace of the exchange too';

    my $v = $V[9];
    @c = ('--id', 'X', '--key', $v->[0], '--ts', $v->[2], '--nonce', $v->[3]);
    ($out) = tc('--dry-run', @c, url_of($v), '--', '-XDELETE');
    like $out, qr/mac="\Q$v->[8]\E"/, '-X in curl args is signed';
    ($out) = tc('--dry-run', @c, '-X', 'DELETE', url_of($v));
    like $out, qr/-X DELETE .*mac="\Q$v->[8]\E"/, '-X DELETE passed to curl';

    my $rc;
    ($out, $rc) = tc('--dry-run', @c, url_of($v), '--', 'http://other.example/');
    is $rc, 2, 'extra URL in curl args refused';
    ($out, $rc) = tc('--dry-run', @c, url_of($v), '--', '-G', '-d', 'a=1');
    is $rc, 2, '-G with data refused';
}

# exec: curl's exit status passes through (fake curl, no network)
{
    my $fake = "$dir/fake-curl";
    open my $fh, '>', $fake or die;
    print $fh "#!/bin/sh\nfor a in \"\$@\"; do printf '%s\\n' \"\$a\"; done\nexit 3\n";
    close $fh;
    chmod 0755, $fake;
    my $v = $V[1];
    my ($out, $rc) = tc('--curl', $fake, '--id', 'X', '--key', $v->[0], '--alg', $v->[1],
        '--ts', $v->[2], '--nonce', $v->[3], url_of($v), '--', '-i');
    is $rc, 3, 'curl exit status passed through';
    like $out, qr/^Authorization: MAC id="X", ts="$v->[2]", nonce="$v->[3]", mac="\Q$v->[8]\E"$/m,
        'header handed to curl as one argument';
    like $out, qr/^-i\nhttp:\/\/example\.com\/resource\/1\?b=1&a=2\n\z/m, 'URL handed over unchanged';
}

{
    my ($out, $rc) = tc('--help');
    is $rc, 0, '--help exits 0';
    like $out, qr/\AUsage:\s+tent-curl \[options\] URL/,
        '--help prints the usage, from the POD';
    like $out, qr/^Options:.*^\s+-v, --verbose$/ms, 'and the options';
}

done_testing;
