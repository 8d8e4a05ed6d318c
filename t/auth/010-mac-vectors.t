# Every HTTP MAC test vector of the spec (section 13), verified by the
# server itself: credentials with the vectors' keys are imported through
# the API (write_secrets), then each vector's request is sent exactly as
# recorded, Authorization header included.  The key id is not part of the
# MAC, so each vector gets an id of its own (nonces are remembered per id).

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(http_request start_last_nginx stop_last_nginx);
use Tent::Client;

no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $c = Tent::Client->new(root => '');

# [method, request-uri, host, port, ts, nonce, key, algorithm, mac, source]
my @vectors = (
 ['POST', '/resource/1?b=1&a=2', 'example.com', 80, 1336363200, 'dj83hs9s',
  '489dks293j39', 'hmac-sha-1', 'SIBz/j9mI1Ba2Y+10wdwbQGv2Yk=', '13.1 tentd'],
 ['GET', '/resource/1?b=1&a=2', 'example.com', 80, 1336363200, 'dj83hs9s',
  '489dks293j39', 'hmac-sha-1', '6T3zZzy2Emppni6bzL7kdRxUWL4=', '13.2 client GET'],
 ['POST', '/resource/1?b=1&a=2', 'example.com', 80, 1336363200, 'dj83hs9s',
  '489dks293j39', 'hmac-sha-256',
  'Xt51rtHY5F+jxKXMCoiKgXa3geofWW/7RANCXB1yu08=', '13.2 client sha-256'],
 ['GET', '/posts?b=1&a=2', 'example.com', 80, 1336363200, 'dj83hs9s',
  'c81c01908a35c460a07a98ab7167a2e8', 'hmac-sha-256',
  'iqYTKvVQGIwVYwrf0A9hEiKLdbQcwEvk802ZitOY+2w=', '13.3 tentd integration'],
);

my $app_key = '2bbdc4c74b42c9e934cdab5b68d82825';
my $user_key = 'feb5bb691c6469f3d1f6e7a3be001651';
my $follower_key = '484b9d41598fc54e4280c909920c3230';
my $basic = '/profile/https%3A%2F%2Ftent.io%2Ftypes%2Finfo%2Fbasic%2Fv0.1.0';

for my $v (
 ['POST', '/apps/sNk1G29CkJpgsMR1HU8cjg/authorizations', 1356283728, '4ae016',
  $app_key, 'VmV4ZDLTttqhvpJ25k3nQYN2l9UgkwZDTk7WLFM007E=', 'app_auth'],
 ['GET', '/apps/sNk1G29CkJpgsMR1HU8cjg', 1356283728, 'd00fbc', $app_key,
  'YbXaoyt2oKsQuPOAN+5tZdJXF6H5aDfRsdcu1Q6eID0=', 'get_app'],
 ['POST', '/posts', 1356283728, '8236e5', $user_key,
  'uWVjn3qFR/l2TFGKPyRrOHsz/+dUIeCBEoVVr/VXNRo=', 'create_post'],
 ['POST', '/posts', 1356283728, 'e25dd0', $user_key,
  '6fQrsDLrpE66DxVRZEd5K9RbYuYBOwP0mB8Yo9ZgOgc=', 'create_post_with_attachments'],
 ['GET', '/posts?limit=4', 1356283729, '9a3dc0', $user_key,
  'pcpPqFvSjwpWZSCBN8IcRo3wJ0EWuETXodNAuc2rVpw=', 'get_posts'],
 ['PUT', $basic, 1356283728, 'f9020b', $user_key,
  'pJJS5ZexsCGXfxdShpk71AiehKqvEON89+g5rgSIiFs=', 'update_profile'],
 ['GET', "$basic?version=1", 1356283728, 'aaea0f', $user_key,
  'vL6r8F+aLtpVNyGwWtRBUx1YvIrvbIfDyWgw52j0SV8=', 'get_profile_type'],
 ['POST', '/followings', 1356283729, '4dd0b0', $user_key,
  'taHR0e3oKNxbSZZWk+VrYz6KFEddgf9lm9dmSDgvXPY=', 'create_following'],
 ['GET', '/followings/https%3A%2F%2Fexample.org', 1356283729, 'c0faea',
  $user_key, '9DSseahvz9FRFb7DE+LqrfY5lmcuKqxZ2GE4IzJK3Q8=',
  'get_following_entity_redirect'],
 ['GET', '/followers/HlgDJvM4m17DTMdFk15UKg', 1356283729, '66f2d9',
  $follower_key, 'K7n+KdBHSyVa4wd8+JzsEVN34ZxCAY/wX3hF5INSDVU=', 'get_follower'],
 ['PUT', '/followers/HlgDJvM4m17DTMdFk15UKg', 1356283729, '15a997',
  $follower_key, 'VCm2ynrtyejwS78krz77YjcJwAt5TbtC6BaCEgP+f5M=', 'update_follower'],
 ['GET', '/posts', 1356283729, 'f17a78', $follower_key,
  'L2MoYVP9GMXNBCngzNS1OEKgC1/Q0ky11fFgVek56sE=', 'follower_get_posts'],
 ['DELETE', '/posts/mjyMQY9icvXdFuMnauyoUw?version=1', 1356283729, 'bd0417',
  $user_key, 'zaMdYssWvVSnzh1mcgBBZTauI6/vZUyQ66SbT3c4f2I=', 'delete_post_version'],
 ['POST', '/groups', 1356283728, 'e23129', $user_key,
  'Pstgg+ytcbXnZH17jJeitHyILVNP5zEzaBTTxz5r+/Q=', 'create_group'],
 ['DELETE', '/followers/HlgDJvM4m17DTMdFk15UKg', 1356283729, 'de6761',
  $follower_key, 'X8AKIcIs5divnveBiQDO90swtRkD55uAX99RPT8lew0=', 'delete_follower'],
 ['GET', '/posts', 1350831026, 'a1fd89', '0b45297e3044a41a2b052f6b622d5bd1',
  'HoRA74fp7p6bSaT5sMBTw8WrRAh6xMcoXof7sBG5YQA=', '0.1 docs get_posts'],
) {
    my ($m, $uri, $ts, $nonce, $key, $mac, $name) = @$v;
    push @vectors, [$m, $uri, 'example.com', 443, $ts, $nonce, $key,
                    'hmac-sha-256', $mac, "13.4 docs $name"];
}

# an importer: an authorization with write_apps and write_secrets
my ($admin, $auth) = $c->authorized_app('read_apps,write_apps,write_secrets');

# the docs' app keeps its own id, so that get_app finds it
my $res = $c->request(POST => '/apps', cred => $auth, body => {
    name => 'docs app', redirect_uris => ['https://app.example/cb'],
    id => 'sNk1G29CkJpgsMR1HU8cjg', mac_key_id => 'a:CcremNIvMXJorFRFXKaiTQ',
    mac_key => $app_key, mac_algorithm => 'hmac-sha-256' });
is($res->{status}, 200, 'import the docs app with its id and key');

my $n = 0;
for my $v (@vectors) {
    my ($m, $uri, $host, $port, $ts, $nonce, $key, $alg, $mac, $name) = @$v;
    my $id = sprintf 'a:vector%02d', ++$n;
    $id = 'a:CcremNIvMXJorFRFXKaiTQ' if $key eq $app_key && $uri =~ m{^/apps/};

    unless ($id =~ /^a:Ccrem/) {
        $res = $c->request(POST => '/apps', cred => $auth, body => {
            name => $name, redirect_uris => ['https://app.example/cb'],
            mac_key_id => $id, mac_key => $key, mac_algorithm => $alg });
        is($res->{status}, 200, "$name: import the key") or next;
    }

    my $hosthdr = $port == 80 ? $host : "$host:$port";
    my $hdr = qq{MAC id="$id", ts="$ts", nonce="$nonce", mac="$mac"};

    # one letter off: must be refused, so the next check means something
    (my $bad = $mac) =~ s/^(.)/$1 eq 'A' ? 'B' : 'A'/e;
    $res = http_request(method => $m, path => $uri, headers => {
        Host => $hosthdr, Authorization =>
            qq{MAC id="$id", ts="$ts", nonce="x$nonce", mac="$bad"} });
    is("$res->{status} " . ($res->{body} =~ /"error":"([^"]+)"/)[0],
       '403 Invalid MAC Signature', "$name: a wrong MAC is refused");

    $res = http_request(method => $m, path => $uri,
                        headers => { Host => $hosthdr, Authorization => $hdr });
    # authenticated: whatever the route then says, it is not about the MAC
    unlike("$res->{status} $res->{body}", qr/^401 |MAC/,
           "$name: $m $uri verifies (got $res->{status})");
}

$res = http_request(method => 'GET', path => '/apps/sNk1G29CkJpgsMR1HU8cjg',
                    headers => { Host => 'example.com:443', Authorization =>
    'MAC id="a:CcremNIvMXJorFRFXKaiTQ", ts="1356283728", nonce="d00fbc", '
    . 'mac="YbXaoyt2oKsQuPOAN+5tZdJXF6H5aDfRsdcu1Q6eID0="' });
is("$res->{status} " . ($res->{body} =~ /"error":"([^"]+)"/)[0],
   '401 MAC nonce already used', 'get_app replayed: refused');

__DATA__

=== TEST 1: a server with the API at its root and no timestamp window
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://example.com;
    tent_api_root /;
    tent_mac_skew off;
    location = /oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /profile
--- error_code: 200
