# Self-test of t/lib/Test/Nginx/Socket.pm against a stock nginx (no module).
# Run: TEST_NGINX_PORT=1990 TEST_NGINX_SERVROOT=/tmp/hselftest/servroot \
#      TEST_NGINX_BINARY=/usr/sbin/nginx prove -It/lib t/harness-selftest/
use Test::Nginx::Socket 'no_plan';

repeat_each(2);
no_long_string();
run_tests();

__DATA__

=== TEST 1: exact body, headers present/absent/like
--- config
    location = /hello {
        add_header X-Multi a;
        add_header X-Multi b;
        return 200 "hello";
    }
--- request
GET /hello
--- error_code: 200
--- response_headers
Content-Type: text/plain
Content-Length: 5
X-Multi: a, b
!X-Foo
--- response_headers_like
Server: ^nginx/[\d.]+$
--- response_body chomp
hello
--- no_error_log
[error]



=== TEST 2: 404 for a missing file logs open() failure
--- request
GET /nope.html
--- error_code: 404
--- response_body_like: 404 Not Found
--- error_log
open() "
nope.html" failed
--- no_error_log
[alert]



=== TEST 3: user_files served from html/ (subdirectory too)
--- user_files
>>> index.html
<h1>index</h1>
>>> sub/dir/a.txt
file a
--- request eval
["GET /", "GET /sub/dir/a.txt", "GET /sub/dir/missing"]
--- error_code eval
[200, 200, 404]
--- response_body_like eval
[qr{^<h1>index</h1>$}, qr/^file a\n\z/, "Not Found"]



=== TEST 4: pipelined requests on one connection
--- config
    location = /a { return 200 "A"; }
    location = /b { return 201 "BB"; }
--- pipelined_requests eval
["GET /a", "HEAD /b", "GET /b"]
--- error_code eval
[200, 201, 201]
--- response_body eval
["A", "", "BB"]



=== TEST 5: more_headers, request body and Content-Length, $TEST_NGINX vars
--- config
    location = /h {
        return 200 "foo=$http_x_foo len=$http_content_length host=$host port=$server_port";
    }
--- more_headers
X-Foo: bar baz
# a comment line
--- request
POST /h
hello world
--- response_body: foo=bar baz len=11 host=localhost port=$TEST_NGINX_SERVER_PORT



=== TEST 6: chunked response decoding (sub_filter drops Content-Length)
--- config
    location = /c {
        sub_filter_types *;
        sub_filter 'o' '0';
        sub_filter_once off;
        return 200 "foo boo";
    }
--- request
GET /c
--- response_headers
Transfer-Encoding: chunked
!Content-Length
--- response_body: f00 b00



=== TEST 7: random port + proxy_pass
--- http_config
    server {
        listen 127.0.0.1:$TEST_NGINX_RAND_PORT_1;
        location / { return 200 "backend $server_port"; }
    }
--- config
    location /r {
        proxy_pass http://127.0.0.1:$TEST_NGINX_RAND_PORT_1/;
    }
--- request
GET /r
--- response_body_like: ^backend \d+$



=== TEST 8: raw_request in chunks
--- config
    location = /raw { return 200 "raw ok"; }
--- raw_request eval
["GET /raw HTTP/1.0\r\n", "Host: localhost\r\n", "\r\n"]
--- response_body: raw ok



=== TEST 9: client timeout with abort is not a failure
--- raw_request eval
"GET / HTTP/1.1\r\nHost: localhost\r\n"
--- timeout: 300ms
--- abort
--- ignore_response
--- no_error_log
[alert]



=== TEST 10: must_die on an unknown directive
--- config
    location = /e { error_log_marker_dummy off; }
--- must_die
--- error_log
unknown directive "error_log_marker_dummy"



=== TEST 11: grep_error_log counts matches
--- request eval
["GET /missing1", "GET /missing2"]
--- error_code eval
[404, 404]
--- grep_error_log eval: qr/missing\d(?=" failed)/
--- grep_error_log_out
missing1
missing2



=== TEST 12: init code runs before the requests
--- init
    open my $fh, '>', "$ENV{TEST_NGINX_HTML_DIR}/init.txt" or die $!;
    print $fh "from init";
    close $fh;
--- request
GET /init.txt
--- response_body: from init



=== TEST 13: shutdown_error_log
--- config
    location = /s { return 204; }
--- request
GET /s
--- error_code: 204
--- response_body:
--- shutdown_error_log
shutting down
