# ActivityPub's directives (docs/directives.md): what "nginx -t" refuses,
# and the module off by default: no WebFinger, the entity URL unchanged.

use Test::Nginx::Socket 'no_plan';

no_shuffle();
run_tests();

__DATA__

=== TEST 1: tent_activitypub without tent_entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_activitypub on;
--- must_die
--- error_log
"tent_activitypub" and "tent_ap_name" need a "tent_entity" in the server



=== TEST 2: a name an account cannot have
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_activitypub on;
    tent_ap_name "al ice";
--- must_die
--- error_log
"tent_ap_name" must be 1 to 64 letters



=== TEST 3: a name over 64 bytes
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_ap_name aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa;
--- must_die
--- error_log
"tent_ap_name" must be 1 to 64 letters



=== TEST 4: tent_ap_name on a provisioning server
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://$host:$TEST_NGINX_SERVER_PORT;
    tent_activitypub on;
    tent_ap_name alice;
--- must_die
--- error_log
"tent_ap_name" names one entity



=== TEST 5: a variable tent_entity in the open mode
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://$host:$TEST_NGINX_SERVER_PORT;
    tent_provisioning off;
    tent_activitypub on;
--- must_die
--- error_log
"tent_activitypub" with a variable "tent_entity" needs "tent_provisioning on"



=== TEST 6: not a flag
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_activitypub yes;
--- must_die
--- error_log
invalid value "yes" in "tent_activitypub" directive



=== TEST 7: off by default: no WebFinger (nginx's own 404)
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- request
GET /.well-known/webfinger?resource=acct:localhost@localhost
--- error_code: 404
--- response_body_like: <html>



=== TEST 8: off by default: the entity URL asked for as ActivityStreams is the page
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    location = / { tent_entity_page; }
--- more_headers
Accept: application/activity+json
--- request
GET /
--- error_code: 200
--- response_headers
!Vary
Content-Type: text/plain
--- response_body
Tent!



=== TEST 9: off by default: no actor routes under the API root
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/activitypub/localhost/outbox
--- error_code: 404
--- response_body_like: "error"



=== TEST 10: off by default: no key route
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- request
POST /tent/activitypub/key
--- error_code: 404
--- response_body_like: "error"



=== TEST 11: on, named: it loads
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_activitypub on;
    tent_ap_name alice;
--- request
GET /.well-known/webfinger?resource=acct:alice@localhost
--- error_code: 200
--- response_headers
Content-Type: application/jrd+json
--- response_body_like: "subject":\s*"acct:alice@localhost:\d+"
