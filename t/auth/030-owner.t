# The owner's authorize page behind nginx's own access control: auth_basic
# with tent_owner $remote_user, and auth_request with auth_request_set.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx);
use Tent::Client;
use MIME::Base64;

no_shuffle();
run_tests();

# the whole flow through auth_basic, against the last block's nginx
start_last_nginx();
END { stop_last_nginx() }

my $c = Tent::Client->new;
my $app = $c->register_app(name => 'Flow');
my $owner = { Authorization => 'Basic ' . encode_base64('alice:s3cret', '') };
my $stranger = { Authorization => 'Basic ' . encode_base64('alice:guess', '') };

my $res = $c->authorize($app, headers => $stranger);
is($res->{status}, 401, 'a wrong password gets no page');

$res = $c->authorize($app, headers => $owner, scope => 'read_apps');
is($res->{status}, 302, 'the owner approves through auth_basic');
my $code = Tent::Client::code_from($res);
ok($code, 'and the app gets a code');

$res = $c->exchange($app, $code);
is($res->{status}, 200, 'which it exchanges');
is($c->request(GET => '/apps', cred => $res->{json})->{status}, 200,
   'and uses');

__DATA__

=== TEST 1: no owner configured: 403 that says how
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
--- request
GET /tent/oauth/authorize?client_id=x&redirect_uri=https://a/cb
--- error_code: 403
--- response_body_like: tent_owner



=== TEST 2: auth_basic with a wrong password: no page
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    location = /tent/oauth/authorize {
        auth_basic "Tent owner";
        auth_basic_user_file $TEST_NGINX_HTML_DIR/owner.htpasswd;
        tent_owner $remote_user;
    }
--- user_files
>>> owner.htpasswd
alice:{PLAIN}s3cret
--- request
GET /tent/oauth/authorize?client_id=x&redirect_uri=https://a/cb
--- more_headers
Authorization: Basic YWxpY2U6Z3Vlc3M=
--- error_code: 401
--- response_headers
WWW-Authenticate: Basic realm="Tent owner"
Content-Type: application/vnd.tent.v0+json
--- response_body chomp
{"error":"Unauthorized"}



=== TEST 3: auth_basic with the right password: the owner (unknown app)
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    location = /tent/oauth/authorize {
        auth_basic "Tent owner";
        auth_basic_user_file $TEST_NGINX_HTML_DIR/owner.htpasswd;
        tent_owner $remote_user;
    }
--- user_files
>>> owner.htpasswd
alice:{PLAIN}s3cret
--- request
GET /tent/oauth/authorize?client_id=nosuchapp&redirect_uri=https://a/cb
--- more_headers
Authorization: Basic YWxpY2U6czNjcmV0
--- error_code: 404
--- response_body chomp
{"error":"Unknown client_id"}



=== TEST 4: auth_request: the owner is what the check says
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    location = /tent/oauth/authorize {
        auth_request /sso;
        auth_request_set $owner $upstream_http_x_user;
        tent_owner $owner;
    }
    location = /sso {
        internal;
        proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/sso-backend;
        proxy_pass_request_body off;
        proxy_set_header Content-Length "";
    }
    location = /sso-backend {
        if ($http_x_sso_token != "good") {
            return 401;
        }
        add_header X-User alice;
        return 204;
    }
--- request eval
["GET /tent/oauth/authorize?client_id=nosuchapp&redirect_uri=https://a/cb",
 "GET /tent/oauth/authorize?client_id=nosuchapp&redirect_uri=https://a/cb"]
--- more_headers eval
["X-SSO-Token: bad", "X-SSO-Token: good"]
--- error_code eval
[401, 404]
--- response_body_like eval
[qr/"error":"Unauthorized"/, qr/"error":"Unknown client_id"/]



=== TEST 5: the flow's server: auth_basic in front of the page
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    location = /tent/oauth/authorize {
        auth_basic "Tent owner";
        auth_basic_user_file $TEST_NGINX_HTML_DIR/owner.htpasswd;
        tent_owner $remote_user;
    }
--- user_files
>>> owner.htpasswd
alice:{PLAIN}s3cret
--- request
GET /tent/profile
--- error_code: 200
