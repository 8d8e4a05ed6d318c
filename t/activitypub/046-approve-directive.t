# tent_ap_follow_requests (docs/directives.md): what "nginx -t" refuses,
# and the follow requests' routes: none with the module off, an
# anonymous request refused with a JSON error (t/activitypub/045 has the
# flows).

use Test::Nginx::Socket 'no_plan';

no_shuffle();
run_tests();

__DATA__

=== TEST 1: none
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_activitypub on;
    tent_ap_follow_requests 0;
--- must_die
--- error_log
value must be between 1 and 1000



=== TEST 2: over 1000
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_activitypub on;
    tent_ap_follow_requests 1001;
--- must_die
--- error_log
value must be between 1 and 1000



=== TEST 3: not a number
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_activitypub on;
    tent_ap_follow_requests many;
--- must_die
--- error_log
"tent_ap_follow_requests" directive invalid number



=== TEST 4: in http, taken by the server; the requests anonymous: 403
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_ap_follow_requests 1000;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_activitypub on;
    tent_ap_name alice;
--- request
GET /tent/activitypub/alice/requests
--- error_code: 403
--- response_body_like: "error"



=== TEST 5: the module off: no requests' routes
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/activitypub/localhost/requests
--- error_code: 404
--- response_body_like: "error"



=== TEST 6: the module off: no answers
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- request
POST /tent/activitypub/localhost/requests/00000000000000000000000000000000/accept
--- error_code: 404
--- response_body_like: "error"
