# Outbound TLS (docs/outbound.md): a second entity of the same nginx is
# served over https on 127.0.0.1 with a certificate for "localhost" from
# a CA made here.  POST /tent/followers naming it makes the module
# discover it over TLS.  With that CA trusted (tent_outbound_trusted_
# certificate) discovery goes through (and the follow then fails only at
# its challenge, a 403); with the system's CAs, or under a name the
# certificate does not carry, it stops at TLS (503).

use Test::Nginx::Socket 'no_plan';
use File::Temp qw(tempdir);

BEGIN {
    my $dir = tempdir(CLEANUP => 1);
    my $q = '2>/dev/null';
    open(my $ext, '>', "$dir/ext") or die "$dir/ext: $!\n";
    print $ext "subjectAltName=DNS:localhost\n";
    close $ext;
    system("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca"
           . " -keyout $dir/ca.key -out $dir/ca.pem $q") == 0
        and system("openssl req -newkey rsa:2048 -nodes -subj /CN=localhost"
                   . " -keyout $dir/tls.key -out $dir/tls.csr $q") == 0
        and system("openssl x509 -req -in $dir/tls.csr -CA $dir/ca.pem"
                   . " -CAkey $dir/ca.key -CAcreateserial -days 2"
                   . " -extfile $dir/ext -out $dir/tls.pem $q") == 0
        or die "openssl could not make the test certificates\n";
    $ENV{TEST_NGINX_TLS} = $dir;
}

no_shuffle();
run_tests();

__DATA__

=== TEST 1: the CA trusted: discovery over TLS goes through to the challenge
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8 ::1;
    tent_outbound_trusted_certificate $TEST_NGINX_TLS/ca.pem;
    server {
        listen 127.0.0.1:$TEST_NGINX_RAND_PORT_1 ssl;
        server_name localhost;
        ssl_certificate $TEST_NGINX_TLS/tls.pem;
        ssl_certificate_key $TEST_NGINX_TLS/tls.key;
        tent_entity https://localhost:$TEST_NGINX_RAND_PORT_1;
    }
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
POST /tent/followers
{"entity":"https://localhost:$TEST_NGINX_RAND_PORT_1","notification_path":"notifications/00000000000000000000000000000000"}
--- more_headers
Content-Type: application/vnd.tent.v0+json
--- error_code: 403
--- response_body_like: challenge GET https://localhost:\d+/tent/notifications/0+\?challenge=[0-9a-f]{64} was not answered \(status 404\)



=== TEST 2: the system's CAs: the certificate is not trusted
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8 ::1;
    server {
        listen 127.0.0.1:$TEST_NGINX_RAND_PORT_1 ssl;
        server_name localhost;
        ssl_certificate $TEST_NGINX_TLS/tls.pem;
        ssl_certificate_key $TEST_NGINX_TLS/tls.key;
        tent_entity https://localhost:$TEST_NGINX_RAND_PORT_1;
    }
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
POST /tent/followers
{"entity":"https://localhost:$TEST_NGINX_RAND_PORT_1","notification_path":"notifications/x"}
--- more_headers
Content-Type: application/vnd.tent.v0+json
--- error_code: 503
--- response_body_like: TLS handshake or certificate check failed
--- error_log
certificate of "localhost" not verified



=== TEST 3: the CA trusted, but a name the certificate does not carry
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8 ::1;
    tent_outbound_trusted_certificate $TEST_NGINX_TLS/ca.pem;
    server {
        listen 127.0.0.1:$TEST_NGINX_RAND_PORT_1 ssl;
        server_name localhost;
        ssl_certificate $TEST_NGINX_TLS/tls.pem;
        ssl_certificate_key $TEST_NGINX_TLS/tls.key;
        tent_entity https://localhost:$TEST_NGINX_RAND_PORT_1;
    }
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
POST /tent/followers
{"entity":"https://127.0.0.1:$TEST_NGINX_RAND_PORT_1","notification_path":"notifications/x"}
--- more_headers
Content-Type: application/vnd.tent.v0+json
--- error_code: 503
--- response_body_like: TLS handshake or certificate check failed
--- error_log
certificate does not match "127.0.0.1"



=== TEST 4: verification off: the untrusted certificate is taken
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8 ::1;
    tent_outbound_verify off;
    server {
        listen 127.0.0.1:$TEST_NGINX_RAND_PORT_1 ssl;
        server_name localhost;
        ssl_certificate $TEST_NGINX_TLS/tls.pem;
        ssl_certificate_key $TEST_NGINX_TLS/tls.key;
        tent_entity https://localhost:$TEST_NGINX_RAND_PORT_1;
    }
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
POST /tent/followers
{"entity":"https://localhost:$TEST_NGINX_RAND_PORT_1","notification_path":"notifications/00000000000000000000000000000000"}
--- more_headers
Content-Type: application/vnd.tent.v0+json
--- error_code: 403
--- response_body_like: was not answered \(status 404\)



=== TEST 5: the next connection to the same server resumes its TLS session
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8 ::1;
    # a new connection each: no keep-alive
    tent_outbound_keepalive 0;
    tent_outbound_trusted_certificate $TEST_NGINX_TLS/ca.pem;
    # the TLS server says of each request whether its session was resumed,
    # in the error log, where --- error_log reads
    log_format tent_resume 'tls-resume: $request_method $uri '
                           '$ssl_session_reused';
    server {
        listen 127.0.0.1:$TEST_NGINX_RAND_PORT_1 ssl;
        server_name localhost;
        ssl_certificate $TEST_NGINX_TLS/tls.pem;
        ssl_certificate_key $TEST_NGINX_TLS/tls.key;
        access_log $TEST_NGINX_SERVER_ROOT/logs/error.log tent_resume;
        tent_entity https://localhost:$TEST_NGINX_RAND_PORT_1;
    }
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
POST /tent/followers
{"entity":"https://localhost:$TEST_NGINX_RAND_PORT_1","notification_path":"notifications/00000000000000000000000000000000"}
--- more_headers
Content-Type: application/vnd.tent.v0+json
--- error_code: 403
--- response_body_like: was not answered \(status 404\)
--- error_log
tls-resume: HEAD / .
tls-resume: GET /tent/profile r
tls-resume: GET /tent/notifications/00000000000000000000000000000000 r



=== TEST 5b: with keep-alive, the three requests share one TLS connection
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8 ::1;
    tent_outbound_trusted_certificate $TEST_NGINX_TLS/ca.pem;
    # the TLS server says of each request its number on the connection
    log_format tent_resume 'tls-kept: $request_method $uri '
                           '$connection_requests';
    server {
        listen 127.0.0.1:$TEST_NGINX_RAND_PORT_1 ssl;
        server_name localhost;
        ssl_certificate $TEST_NGINX_TLS/tls.pem;
        ssl_certificate_key $TEST_NGINX_TLS/tls.key;
        access_log $TEST_NGINX_SERVER_ROOT/logs/error.log tent_resume;
        tent_entity https://localhost:$TEST_NGINX_RAND_PORT_1;
    }
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
POST /tent/followers
{"entity":"https://localhost:$TEST_NGINX_RAND_PORT_1","notification_path":"notifications/00000000000000000000000000000000"}
--- more_headers
Content-Type: application/vnd.tent.v0+json
--- error_code: 403
--- response_body_like: was not answered \(status 404\)
--- error_log
tls-kept: HEAD / 1
tls-kept: GET /tent/profile 2
tls-kept: GET /tent/notifications/00000000000000000000000000000000 3



=== TEST 5c: tent_outbound_keepalive_requests 2: the third request on a new connection
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8 ::1;
    tent_outbound_keepalive_requests 2;
    tent_outbound_trusted_certificate $TEST_NGINX_TLS/ca.pem;
    # the TLS server says of each request its number on the connection
    log_format tent_resume 'tls-kept: $request_method $uri '
                           '$connection_requests';
    server {
        listen 127.0.0.1:$TEST_NGINX_RAND_PORT_1 ssl;
        server_name localhost;
        ssl_certificate $TEST_NGINX_TLS/tls.pem;
        ssl_certificate_key $TEST_NGINX_TLS/tls.key;
        access_log $TEST_NGINX_SERVER_ROOT/logs/error.log tent_resume;
        tent_entity https://localhost:$TEST_NGINX_RAND_PORT_1;
    }
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
POST /tent/followers
{"entity":"https://localhost:$TEST_NGINX_RAND_PORT_1","notification_path":"notifications/00000000000000000000000000000000"}
--- more_headers
Content-Type: application/vnd.tent.v0+json
--- error_code: 403
--- response_body_like: was not answered \(status 404\)
--- error_log
tls-kept: HEAD / 1
tls-kept: GET /tent/profile 2
tls-kept: GET /tent/notifications/00000000000000000000000000000000 1
