# Configuration checks: what "nginx -t" refuses, and what it accepts.

use Test::Nginx::Socket 'no_plan';

no_shuffle();
run_tests();

__DATA__

=== TEST 1: a valid configuration loads and serves
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_api_root /tent;
--- request
GET /tent/profile
--- error_code: 200
--- no_error_log
[error]
[alert]



=== TEST 2: the entity must be an absolute http(s) URL
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity ftp://example.org;
--- must_die
--- error_log
"tent_entity" must be an absolute http:// or https:// URL



=== TEST 3: a relative entity is refused
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity example.org/alice;
--- must_die
--- error_log
"tent_entity" must be an absolute http:// or https:// URL



=== TEST 3b: with variables, the scheme is still checked
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity ftp://$host;
--- must_die
--- error_log
"tent_entity" must start with http:// or https://



=== TEST 4: an entity with a query or fragment is refused
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://example.org/?x=1;
--- must_die
--- error_log
"tent_entity" must be an absolute http:// or https:// URL



=== TEST 5: an entity that could break the Link header is refused
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity "https://example.org/a>b";
--- must_die
--- error_log
"tent_entity" must be an absolute http:// or https:// URL



=== TEST 6: the API root must start with a slash
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_api_root tent;
--- must_die
--- error_log
"tent_api_root" must be a path starting with "/", not "tent"



=== TEST 7: tent_entity without tent_store
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_entity" needs "tent_store" in the http block



=== TEST 8: an unknown thread pool
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_thread_pool nosuchpool;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
unknown thread pool "nosuchpool"



=== TEST 9: a declared thread pool is accepted
--- main_config
    thread_pool tentpool threads=2;
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_thread_pool tentpool;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/profile
--- error_code: 200
--- response_body_like: "entity":"http://localhost:\d+"



=== TEST 10: tent_store is an http-level directive
--- config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- must_die
--- error_log
"tent_store" directive is not allowed here



=== TEST 11: tent_servers takes absolute URLs only
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_servers /tent;
--- must_die
--- error_log
"tent_servers" takes absolute http:// or https:// URLs



=== TEST 12: a socket path longer than a UNIX socket allows
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_socket /tmp/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
is longer than a UNIX socket allows



=== TEST 13: the profile link form takes off, absolute or relative
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_profile_link sideways;
--- must_die
--- error_log
invalid value "sideways"



=== TEST 14: duplicate tent_entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_entity" directive is duplicate



=== TEST 15: tent_entity_page takes no argument
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    location = / { tent_entity_page on; }
--- must_die
--- error_log
invalid number of arguments in "tent_entity_page" directive



=== TEST 16: tent_entity_page beside another content handler
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    location = / {
        proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/x;
        tent_entity_page;
    }
--- must_die
--- error_log
"tent_entity_page" directive conflicts with another handler



=== TEST 17: tent_entity_page is only for a location
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_entity_page;
--- must_die
--- error_log
"tent_entity_page" directive is not allowed here



=== TEST 18: tent_delivery_dead_letter_time is a time of 1s or more
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_delivery_dead_letter_time 0;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_delivery_dead_letter_time" must be at least 1s



=== TEST 19: tent_delivery_dead_letter_time takes nginx's time syntax
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_delivery_dead_letter_time 30d;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/profile
--- error_code: 200



=== TEST 20: tent_status takes no argument
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    location = /status { tent_status on; }
--- must_die
--- error_log
invalid number of arguments in "tent_status" directive



=== TEST 21: tent_status is only for a location
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_status;
--- must_die
--- error_log
"tent_status" directive is not allowed here



=== TEST 22: tent_status is not for http either
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_status;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_status" directive is not allowed here



=== TEST 23: tent_status twice in a location
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    location = /status { tent_status; tent_status; }
--- must_die
--- error_log
"tent_status" directive is duplicate



=== TEST 24: tent_status beside another content handler
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    location = /status {
        proxy_pass http://127.0.0.1:$TEST_NGINX_SERVER_PORT/x;
        tent_status;
    }
--- must_die
--- error_log
"tent_status" directive conflicts with another handler



=== TEST 25: tent_status in a location loads and answers
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    location = /status { tent_status; }
--- request
GET /status
--- error_code: 200
--- response_body_like: ^\{"deliveries":\{"queued":\d+,
--- no_error_log
[error]
[alert]



=== TEST 26: tent_delivery_host_concurrency above tent_delivery_concurrency
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_delivery_concurrency 8;
    tent_delivery_host_concurrency 9;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_delivery_host_concurrency" must be between 1 and "tent_delivery_concurrency" (8)



=== TEST 27: tent_delivery_host_concurrency of 0
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_delivery_host_concurrency 0;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_delivery_host_concurrency" must be between 1 and "tent_delivery_concurrency" (16)



=== TEST 28: tent_delivery_breaker needs a number of failures
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_delivery_breaker 0 10s;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_delivery_breaker" directive has an invalid number of failures



=== TEST 29: tent_delivery_breaker needs a pause
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_delivery_breaker 5 soon;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_delivery_breaker" directive has an invalid pause



=== TEST 30: tent_delivery_breaker alone is off or nothing
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_delivery_breaker 5;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_delivery_breaker" directive takes "off" or a number of failures and a pause



=== TEST 31: tent_delivery_breaker once
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_delivery_breaker off;
    tent_delivery_breaker 5 10s;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_delivery_breaker" directive is duplicate



=== TEST 32: the per-host directives load
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_delivery_concurrency 8;
    tent_delivery_host_concurrency 8;
    tent_delivery_breaker 3 1m;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/profile
--- error_code: 200



=== TEST 33: tent_delivery_breaker off loads
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_delivery_host_concurrency 1;
    tent_delivery_breaker off;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/profile
--- error_code: 200



=== TEST ka1: the keep-alive directives load
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_keepalive 4;
    tent_outbound_keepalive_total 16;
    tent_outbound_keepalive_timeout 5s;
    tent_outbound_keepalive_requests 100;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/profile
--- error_code: 200



=== TEST ka2: tent_outbound_keepalive 0 turns keep-alive off
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_keepalive 0;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/profile
--- error_code: 200



=== TEST ka3: tent_outbound_keepalive takes a number
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_keepalive many;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_outbound_keepalive" directive invalid number



=== TEST ka4: tent_outbound_keepalive_total takes a number
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_keepalive_total -1;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_outbound_keepalive_total" directive invalid number



=== TEST ka5: tent_outbound_keepalive_timeout takes a time
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_keepalive_timeout forever;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_outbound_keepalive_timeout" directive invalid value



=== TEST ka6: tent_outbound_keepalive_timeout of 0
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_keepalive_timeout 0;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_outbound_keepalive_timeout" and "tent_outbound_keepalive_requests" must be more than 0



=== TEST ka7: tent_outbound_keepalive_requests of 0
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_keepalive_requests 0;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_outbound_keepalive_timeout" and "tent_outbound_keepalive_requests" must be more than 0



=== TEST ka8: the keep-alive bounds are the worker's: http only
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_outbound_keepalive 2;
--- must_die
--- error_log
"tent_outbound_keepalive" directive is not allowed here



=== TEST mv1: tent_moved_redirect_time takes nginx's time syntax, per server
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_moved_redirect_time 7d;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/profile
--- error_code: 200



=== TEST mv2: tent_moved_redirect_time must be a time
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_moved_redirect_time soon;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_moved_redirect_time" directive invalid value



=== TEST prio1: tent_store_background_threads takes 1 to 64
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_background_threads 1;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/profile
--- error_code: 200
--- no_error_log
[emerg]



=== TEST prio2: tent_store_background_threads of 0
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_background_threads 0;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
value must be between 1 and 64



=== TEST prio3: tent_store_background_threads above 64
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_background_threads 65;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
value must be between 1 and 64



=== TEST prio4: tent_store_background_threads not a number
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_background_threads two;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_store_background_threads" directive invalid number



=== TEST prio5: tent_store_background_threads: http only
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_store_background_threads 2;
--- must_die
--- error_log
"tent_store_background_threads" directive is not allowed here



=== TEST prov1: tent_provisioning needs an entity with variables
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_provisioning on;
--- must_die
--- error_log
"tent_provisioning" needs a "tent_entity" with variables



=== TEST prov2: tent_provisioning takes on or off
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://$host:$TEST_NGINX_SERVER_PORT;
    tent_provisioning maybe;
--- must_die
--- error_log
invalid value "maybe" in "tent_provisioning" directive



=== TEST prov3: with tent_provisioning, a name never created is a JSON 404
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://$host:$TEST_NGINX_SERVER_PORT;
    tent_provisioning on;
--- request
GET /tent/profile
--- error_code: 404
--- response_body_like: ^\{"error":\s*"No such entity on this server"\}
--- raw_response_headers_unlike: Link:
--- no_error_log
[alert]



=== TEST adm1: tent_admin_token_file must exist
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    location /tent-admin {
        tent_admin;
        tent_admin_token_file /nonexistent/tent-admin.token;
    }
--- must_die
--- error_log
"/nonexistent/tent-admin.token" failed



=== TEST adm2: the token is at least 16 characters
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- user_files
>>> short.token
abc
--- config
    location /tent-admin {
        tent_admin;
        tent_admin_token_file $TEST_NGINX_HTML_DIR/short.token;
    }
--- must_die
--- error_log
must be one line of 16 to 256 visible characters



=== TEST adm3: tent_admin shares its location with no other handler
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    location /tent-admin {
        proxy_pass http://127.0.0.1:1;
        tent_admin;
    }
--- must_die
--- error_log
conflicts with another handler of the location



=== TEST adm4: tent_admin without the token: 401 in JSON
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- user_files
>>> op.token
0123456789abcdef0123456789abcdef
--- config
    location /tent-admin {
        tent_admin;
        tent_admin_token_file $TEST_NGINX_HTML_DIR/op.token;
    }
--- request
GET /tent-admin
--- more_headers
Authorization: Bearer 0123456789abcdef0123456789abcdeX
--- error_code: 401
--- response_body_like: "error"



=== TEST quota1: tent_quota_posts is a number
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://$host:$TEST_NGINX_SERVER_PORT;
    tent_provisioning on;
    tent_quota_posts many;
--- must_die
--- error_log
"tent_quota_posts" directive invalid number



=== TEST prov4: tent_provisioning is a server's, not the http block's
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_provisioning on;
--- config
    tent_entity http://$host:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_provisioning" directive is not allowed here



=== TEST quota2: tent_quota_attachment_bytes is a size
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://$host:$TEST_NGINX_SERVER_PORT;
    tent_provisioning on;
    tent_quota_attachment_bytes lots;
--- must_die
--- error_log
"tent_quota_attachment_bytes" directive invalid value
