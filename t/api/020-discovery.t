# Discovery (spec section 2): the profile Link header on every response of
# a server with tent_entity, the entity root, and the HTML <link> recipe.

use Test::Nginx::Socket 'no_plan';

no_shuffle();
run_tests();

__DATA__

=== TEST 1: HEAD of the entity root with nothing configured there
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_api_root /tent;
--- request
HEAD /
--- error_code: 200
--- response_headers_like
Link: ^<http://localhost:\d+/tent/profile>; rel="https://tent\.io/rels/profile"$
Content-Type: ^text/plain
--- response_body eval
""



=== TEST 2: GET of the entity root
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    tent_api_root /tent;
--- request
GET /
--- error_code: 200
--- response_headers_like
Link: ^<http://localhost:\d+/tent/profile>; rel="https://tent\.io/rels/profile"$
--- response_body
Tent!



=== TEST 3: the Link header on a module route
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    tent_api_root /tent;
--- request
GET /tent/profile
--- error_code: 200
--- response_headers
Link: <https://alice.example/tent/profile>; rel="https://tent.io/rels/profile"



=== TEST 4: the Link header on a static file
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    tent_api_root /tent;
--- user_files
>>> hello.txt
hello
--- request
GET /hello.txt
--- error_code: 200
--- response_headers
Link: <https://alice.example/tent/profile>; rel="https://tent.io/rels/profile"
--- response_body
hello



=== TEST 5: the Link header on a 404 outside the API
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    tent_api_root /tent;
--- request
GET /no/such/file
--- error_code: 404
--- response_headers
Link: <https://alice.example/tent/profile>; rel="https://tent.io/rels/profile"
--- response_body_like: <html>



=== TEST 6: the Link header on an index page served by nginx
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
--- user_files
>>> index.html
<html><head><title>Alice</title></head><body>hi</body></html>
--- request
GET /
--- error_code: 200
--- response_headers
Link: <https://alice.example/tent/profile>; rel="https://tent.io/rels/profile"
--- response_body_like: <title>Alice</title>



=== TEST 7: the relative form
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    tent_api_root /tent;
    tent_profile_link relative;
--- request
HEAD /
--- error_code: 200
--- response_headers
Link: </tent/profile>; rel="https://tent.io/rels/profile"



=== TEST 8: the Link header can be turned off for one location
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    location /private/ {
        tent_profile_link off;
        return 200 "private\n";
    }
--- request
GET /private/x
--- error_code: 200
--- response_headers
!Link



=== TEST 9: a server without tent_entity is left alone
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name other.example;
        location / { return 200 "other\n"; }
    }
--- config
    tent_entity https://alice.example;
--- request
GET /
--- more_headers
Host: other.example
--- error_code: 200
--- response_headers
!Link
--- response_body
other



=== TEST 10: the entity follows a variable: two hosts, two links
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://$host;
    tent_provisioning off;
--- request eval
["HEAD /", "HEAD /"]
--- more_headers eval
["Host: alice.example", "Host: bob.example"]
--- error_code eval
[200, 200]
--- response_headers eval
["Link: <https://alice.example/tent/profile>; rel=\"https://tent.io/rels/profile\"",
 "Link: <https://bob.example/tent/profile>; rel=\"https://tent.io/rels/profile\""]



=== TEST 11: the variables, for the HTML <link> recipe with sub_filter
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    location = /vars {
        return 200 "$tent_entity $tent_profile_url $tent_api_root\n";
    }
--- request
GET /vars
--- error_code: 200
--- response_body
https://alice.example https://alice.example/tent/profile /tent



=== TEST 12: the documented sub_filter recipe adds <link> to HTML pages
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    sub_filter '</head>'
        '<link href="$tent_profile_url" rel="https://tent.io/rels/profile" /></head>';
    sub_filter_once on;
--- user_files
>>> index.html
<html><head><title>Alice</title></head><body>hi</body></html>
--- request
GET /
--- error_code: 200
--- response_body_like: <link href="https://alice\.example/tent/profile" rel="https://tent\.io/rels/profile" /></head>



=== TEST 13: an entity with a path answers at its own root
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://example.org/~alice;
    tent_api_root /~alice/tent;
--- request
GET /~alice
--- error_code: 200
--- response_headers
Link: <https://example.org/~alice/tent/profile>; rel="https://tent.io/rels/profile"
--- response_body
Tent!



=== TEST 14: a Host that does not make a valid entity gets no Link
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://$http_x_entity;
    tent_provisioning off;
    location = /plain { return 200 "plain\n"; }
--- request
GET /plain
--- more_headers
X-Entity: evil.example>; rel="x", <https://x
--- error_code: 200
--- response_headers
!Link
--- error_log
tent_entity evaluated to an invalid URL



=== TEST 15: tent_entity_page answers the root without looking for an index file
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    location = / { tent_entity_page; }
--- user_files
>>> index.html
<html>home</html>
--- request
GET /
--- error_code: 200
--- response_headers_like
Link: ^<http://localhost:\d+/tent/profile>; rel="https://tent\.io/rels/profile"$
Content-Type: ^text/plain
--- response_body
Tent!



=== TEST 16: HEAD of the root through tent_entity_page: headers, no body
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    location = / { tent_entity_page; }
--- request
HEAD /
--- error_code: 200
--- response_headers
Content-Length: 6
--- response_headers_like
Link: ^<http://localhost:\d+/tent/profile>; rel=
--- response_body eval
""



=== TEST 17: other URIs of a tent_entity_page location go to the static module
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    location / { tent_entity_page; }
--- user_files
>>> about.txt
about alice
--- request
GET /about.txt
--- error_code: 200
--- response_headers_like
Link: ^<http://localhost:\d+/tent/profile>; rel=
--- response_body
about alice



=== TEST 18: a POST to the page is left to nginx (a directory: 403)
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    location = / { tent_entity_page; }
--- request
POST /
hello
--- error_code: 403



=== TEST 19: tent_entity_page in a server without tent_entity does nothing
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    location = / { tent_entity_page; }
--- user_files
>>> index.html
<html>home</html>
--- request
GET /
--- error_code: 200
--- response_headers
!Link
--- response_body
<html>home</html>



=== TEST 20: without tent_entity_page and without the root folder: nginx's 404, with the Link (docs/directives.md says so)
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    location = / { root $TEST_NGINX_SERVER_ROOT/no-such-folder; }
--- request
GET /
--- error_code: 404
--- response_headers_like
Link: ^<http://localhost:\d+/tent/profile>; rel="https://tent\.io/rels/profile"$
--- error_log eval
qr/no-such-folder\S*" is not found/



=== TEST 21: with tent_entity_page the page answers without the root folder
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost:$TEST_NGINX_SERVER_PORT;
    location = / {
        root  $TEST_NGINX_SERVER_ROOT/no-such-folder;
        tent_entity_page;
    }
--- request
GET /
--- error_code: 200
--- response_headers_like
Link: ^<http://localhost:\d+/tent/profile>; rel="https://tent\.io/rels/profile"$
--- response_body
Tent!
--- no_error_log
is not found
