# Apps, OAuth authorization by the owner, the code exchange, HTTP MAC with
# replay protection, scopes (spec sections 4, 5, 7.10).

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(http_request start_last_nginx stop_last_nginx);
use Tent::Client;
use Tent::MAC qw(mac_header);
use IO::Socket::IP;

BEGIN {
    my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                Listen => 1) or die "no free port: $!";
    $ENV{TEST_NGINX_SPREAD_PORT} = $s->sockport;
    close $s;
}

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $c = Tent::Client->new;
my $spread = Tent::Client->new(port => $ENV{TEST_NGINX_SPREAD_PORT});

# ---- registration

my $app = $c->register_app(name => 'FooApp');
like($app->{id}, qr/^[A-Za-z0-9_-]{22}$/, 'app id: 22 url-safe characters');
like($app->{mac_key_id}, qr/^a:[A-Za-z0-9_-]{22}$/, 'app key id: a: prefix');
like($app->{mac_key}, qr/^[0-9a-f]{32}$/, 'app key: 32 hex characters');
is($app->{mac_algorithm}, 'hmac-sha-256', 'app algorithm');
is_deeply($app->{authorizations}, [], 'no authorizations yet');

for my $bad (['{"description":"no name","redirect_uris":["https://a/cb"]}',
              422, 'Invalid Attributes', 'no name'],
             ['{"name":"x"}', 422, 'Invalid Attributes', 'no redirect_uris'],
             ['{"name":"x","redirect_uris":"https://a/cb"}', 422,
              'Invalid Attributes', 'redirect_uris not a list'],
             ['{"name":5,"redirect_uris":[]}', 422, 'Invalid Attributes',
              'name not a string'],
             ['{"name":"x",', 400, 'Invalid JSON body', 'broken JSON'],
             ['["name"]', 400, 'Invalid JSON body', 'not an object'],
             ['{"name":"a","name":"b","redirect_uris":[]}', 400,
              'Invalid JSON body', 'duplicate keys'],
             ['', 400, 'Request body required', 'no body'])
{
    my ($body, $status, $error, $what) = @$bad;
    my $res = $c->request(POST => '/apps', body => $body);
    is("$res->{status} " . ($res->{json}{error} // ''), "$status $error",
       "POST /apps refuses: $what");
}

# ---- the app's own record, signed with its a: key

my $res = $c->request(GET => "/apps/$app->{id}", cred => $app);
is($res->{status}, 200, 'GET /apps/:id signed by the app');
is($res->{json}{name}, 'FooApp', 'GET /apps/:id: the app');
ok(!exists $res->{json}{mac_key}, 'GET /apps/:id: no secrets');

$res = $c->request(GET => "/apps/$app->{id}");
is("$res->{status} $res->{json}{error}", '403 Unauthorized',
   'GET /apps/:id unsigned: 403 Unauthorized');

my $other = $c->register_app(name => 'Other');
$res = $c->request(GET => "/apps/$app->{id}", cred => $other);
is("$res->{status} $res->{json}{error}", '403 Unauthorized',
   "GET /apps/:id with another app's key: 403");

$res = $c->request(PUT => "/apps/$app->{id}", cred => $app,
                   body => { name => 'FooApp 2' });
is("$res->{status} $res->{json}{name}", '200 FooApp 2', 'PUT /apps/:id');

# ---- MAC failures

$res = $c->request(GET => "/apps/$app->{id}",
                   cred => { %$app, mac_key_id => 'a:nosuchkey' });
is($res->{status}, 401, 'unknown key id: 401');
is($res->{headers}{'www-authenticate'}, 'MAC', 'unknown key id: WWW-Authenticate');
is($res->{json}{error}, 'Invalid MAC Key ID', 'unknown key id: error');

$res = $c->request(GET => "/apps/$app->{id}",
                   cred => { %$app, mac_key => 'not-the-key' });
is("$res->{status} $res->{json}{error}", '403 Invalid MAC Signature',
   'wrong MAC: 403 Invalid MAC Signature');

$res = $c->request(GET => "/apps/$app->{id}", cred => $app, ts => time - 3600);
is("$res->{status} $res->{json}{error}", '401 MAC timestamp out of range',
   'stale timestamp: 401');
is($res->{headers}{'www-authenticate'}, 'MAC', 'stale: WWW-Authenticate');

$res = $c->request(GET => "/apps/$app->{id}", cred => $app, ts => time + 3600);
is("$res->{status} $res->{json}{error}", '401 MAC timestamp out of range',
   'future timestamp: 401');

# a replay is the same key, ts and nonce: pin ts, since a slow run (valgrind)
# may cross a second between the two requests
my $ts = time;
$res = $c->request(GET => "/apps/$app->{id}", cred => $app, nonce => 'n0nce1',
                   ts => $ts);
is($res->{status}, 200, 'a fresh nonce: 200');
$res = $c->request(GET => "/apps/$app->{id}", cred => $app, nonce => 'n0nce1',
                   ts => $ts);
is("$res->{status} $res->{json}{error}", '401 MAC nonce already used',
   'the same nonce again: 401');

$res = $c->request(GET => "/apps/$app->{id}",
                   headers => { Authorization => 'MAC id="a:x", ts="1"' });
is("$res->{status} $res->{json}{error}", '401 Invalid MAC header',
   'a MAC header without mac or nonce: 401');

$res = $c->request(GET => "/apps/$app->{id}",
                   headers => { Authorization => 'Basic dXNlcjpwYXNz' });
is("$res->{status} $res->{json}{error}", '403 Unauthorized',
   'another scheme is anonymous');

# a nonce replayed through the other worker: the cache is shared
{
    my $hdr = mac_header(id => $app->{mac_key_id}, key => $app->{mac_key},
                         algorithm => 'hmac-sha-256', method => 'GET',
                         uri => "/tent/apps/$app->{id}", host => 'localhost',
                         port => 80);
    my $first = $spread->request(GET => "/apps/$app->{id}",
                                 headers => { Authorization => $hdr });
    is($first->{status}, 200, 'replay across workers: first use 200');
    my $pid = $first->{headers}{'x-pid'};
    my ($other_pid, $again);
    for (1 .. 200) {
        $again = $spread->request(GET => "/apps/$app->{id}",
                                  headers => { Authorization => $hdr });
        if (($again->{headers}{'x-pid'} // $pid) ne $pid) {
            $other_pid = $again->{headers}{'x-pid'};
            last;
        }
    }
    ok($other_pid, "replay across workers: reached the other worker ($pid, "
                   . ($other_pid // 'none') . ')');
    is("$again->{status} " . ($again->{json}{error} // ''),
       '401 MAC nonce already used', 'replay across workers: refused');
}

# ---- the owner's authorize page

$res = $spread->request(GET => '/oauth/authorize?'
                               . $c->authorize_query($app));
is($res->{status}, 403, 'authorize without an identified owner: 403');
like($res->{json}{error}, qr/tent_owner/, 'the 403 says how to configure it');

my $evil = $c->register_app(name => '<script>alert(1)</script>',
                            url => '"><img src=x>');
$res = $c->request(GET => '/oauth/authorize?' . $c->authorize_query($evil,
                       scope => 'read_posts,write_posts',
                       post_types => 'https://tent.io/types/post/status/v0.1.0'));
is($res->{status}, 200, 'the authorize page');
like($res->{headers}{'content-type'}, qr{^text/html}, 'authorize page: HTML');
like($res->{body}, qr/&lt;script&gt;alert\(1\)&lt;\/script&gt;/,
     'authorize page: the app name, escaped');
unlike($res->{body}, qr/<script>|<img src=x>/, 'authorize page: no injected markup');
like($res->{body}, qr{<li>publish, [^<]* <code>write_posts</code></li>},
     'authorize page: the scopes, in words and by name');
like($res->{body},
     qr{<li>statuses <code>https://tent\.io/types/post/status/v0\.1\.0</code></li>},
     'authorize page: the post types');
like($res->{headers}{'content-security-policy'}, qr/frame-ancestors 'none'/,
     'authorize page: not to be framed');

$res = $c->request(GET => '/oauth/authorize?' . $c->authorize_query($app,
                       redirect_uri => 'https://evil.example/cb'));
is($res->{status}, 400, 'an unregistered redirect_uri: 400, no redirect');
ok(!$res->{headers}{location}, 'an unregistered redirect_uri: no Location');

$res = $c->authorize($app, tamper => { csrf => '123.abc' });
is($res->{status}, 403, 'a forged form token: 403');

$res = $c->authorize($app, scope => 'read_posts',
                     tamper => { scope => 'read_posts,write_apps' });
is($res->{status}, 403, 'a form with other scopes than shown: 403');

$res = $c->authorize($app, decision => 'deny', state => 'abc 123');
is($res->{status}, 302, 'deny: 302');
is($res->{headers}{location},
   'https://app.example/cb?error=access_denied&state=abc%20123',
   'deny: back to the app with error=access_denied and the state');

$res = $c->authorize($app, scope => 'read_apps,read_posts,nonsense');
is($res->{status}, 302, 'approve: 302');
like($res->{headers}{location}, qr{^https://app\.example/cb\?code=[0-9a-f]{32}&state=st4te$},
     'approve: back to the app with code and state');
my $code = Tent::Client::code_from($res);

# ---- the code exchange

$res = $c->exchange($other, $code);
is("$res->{status} $res->{json}{error}", '403 Unauthorized',
   "another app cannot exchange this app's code");

$res = $c->request(POST => "/apps/$app->{id}/authorizations",
                   body => { code => $code });
is($res->{status}, 403, 'an unsigned exchange: 403');

$res = $c->exchange($app, $code);
is($res->{status}, 200, 'exchange: 200');
my $auth = $res->{json};
like($auth->{access_token}, qr/^u:[A-Za-z0-9_-]{22}$/, 'exchange: u: access token');
like($auth->{mac_key}, qr/^[0-9a-f]{32}$/, 'exchange: mac key');
is($auth->{mac_algorithm}, 'hmac-sha-256', 'exchange: algorithm');
is($auth->{token_type}, 'mac', 'exchange: token type');
like($auth->{refresh_token}, qr/^[0-9a-f]{32}$/, 'exchange: a refresh token');

$res = $c->exchange($app, $code);
is($res->{status}, 403, 'the same code twice: 403');

$res = $c->exchange($app, $auth->{refresh_token});
is($res->{status}, 200, 'the refresh token works as a code');
is($res->{json}{access_token}, $auth->{access_token},
   'and gives the same credentials');

# ---- scopes

$res = $c->request(GET => '/apps', cred => $auth);
is($res->{status}, 200, 'GET /apps with read_apps');
ok(scalar(grep { $_->{id} eq $app->{id} } @{ $res->{json} }), 'GET /apps lists the app');
ok(!grep({ exists $_->{mac_key} } @{ $res->{json} }), 'GET /apps: no secrets');

$res = $c->request(GET => "/apps/$app->{id}", cred => $auth);
is($res->{status}, 200, 'GET /apps/:id with read_apps');
is_deeply($res->{json}{authorizations}[0]{scopes}, ['read_apps', 'read_posts'],
   'the authorization: asked scopes that exist');

$res = $c->request(PUT => "/apps/$app->{id}", cred => $auth, body => { name => 'x' });
is("$res->{status} $res->{json}{error}", '403 Unauthorized', 'PUT needs write_apps');

$res = $c->request(GET => '/apps');
is($res->{status}, 403, 'GET /apps anonymous: 403');

my ($admin, $admin_auth) = $c->authorized_app(
    'read_apps,write_apps,read_secrets,write_secrets');

$res = $c->request(GET => '/apps?secrets=true', cred => $admin_auth);
ok(scalar(grep { exists $_->{mac_key} } @{ $res->{json} }),
   'GET /apps?secrets=true with read_secrets shows keys');

my $auth_id = (grep { $_->{id} } @{ $c->request(GET => "/apps/$app->{id}",
    cred => $admin_auth)->{json}{authorizations} })[0]{id};

$res = $c->request(PUT => "/apps/$app->{id}/authorizations/$auth_id",
                   cred => $admin_auth, body => { scopes => ['read_posts'] });
is($res->{status}, 200, 'PUT an authorization with write_apps');
$res = $c->request(GET => '/apps', cred => $auth);
is($res->{status}, 403, 'its narrowed scopes apply at once');

$res = $c->request(DELETE => "/apps/$app->{id}/authorizations/$auth_id",
                   cred => $admin_auth);
is("$res->{status} $res->{body}", '200 ', 'DELETE an authorization: 200, empty');
$res = $c->request(GET => '/apps', cred => $auth);
is("$res->{status} $res->{json}{error}", '401 Invalid MAC Key ID',
   'a deleted authorization: its key is gone');

# an authorization that expires
{
    my $app2 = $c->register_app(name => 'Temp');
    my $code2 = Tent::Client::code_from($c->authorize($app2, scope => 'read_apps'));
    my $ex = $c->exchange($app2, $code2, tent_expires_at => time - 1);
    is($ex->{status}, 200, 'exchange with tent_expires_at');
    $res = $c->request(GET => '/apps', cred => $ex->{json});
    is("$res->{status} $res->{json}{error}", '401 Invalid MAC Key ID',
       'an expired authorization: 401');
}

# deleting an app removes its keys
$res = $c->request(DELETE => "/apps/$other->{id}", cred => $other);
is($res->{status}, 200, 'an app deletes itself');
$res = $c->request(GET => "/apps/$other->{id}", cred => $other);
is($res->{status}, 401, 'and its key is gone');
$res = $c->request(GET => "/apps/$other->{id}", cred => $admin_auth);
is($res->{status}, 404, 'and so is the app');

__DATA__

=== TEST 1: the server the tests above run against
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    server {
        listen 127.0.0.1:$TEST_NGINX_SPREAD_PORT reuseport;
        server_name localhost;
        tent_entity https://alice.example;
        add_header X-Pid $pid always;
    }
--- config
    tent_entity https://alice.example;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/profile
--- error_code: 200
