# Self-test: master process + 2 workers, explicit plan, HUP-friendly, and
# the project extensions (nginx_start/nginx_reload/http_req) after run_tests.
use Test::Nginx::Socket;

repeat_each(2);
no_shuffle();
workers(2);
master_on();

plan tests => repeat_each() * (blocks() * 3) + 6;

run_tests();

# --- project extensions: nginx is stopped by run_tests; restart with the
# last block's conf, reload it and hammer it a bit.
ok(nginx_start(), 'nginx_start with the last conf');
my $pid = nginx_master_pid();
ok($pid, "master pid $pid");
my ($st, $h, $body) = http_req('GET', '/w', { 'X-Test' => 'yes' });
is("$st $body", '200 worker x-test=yes', 'http_req before reload');
ok(nginx_reload(), 'nginx_reload');
($st, $h, $body) = http_req('POST', '/w', {}, "  body kept verbatim  ");
is($h->{'content-type'}, 'text/plain', 'http_req headers after reload');
is(nginx_master_pid(), $pid, 'same master after HUP');
nginx_stop();

__DATA__

=== TEST 1: master + workers serve requests
--- config
    location = /w { return 200 "worker x-test=$http_x_test"; }
--- request
GET /w
--- more_headers
X-Test: 1
--- response_body: worker x-test=1
--- no_error_log
[error]



=== TEST 2: worker processes started (error log)
--- config
    location = /w { return 200 "worker x-test=$http_x_test"; }
--- request
GET /w
--- response_body: worker x-test=
--- no_error_log
[emerg]



=== TEST 3: config change restarts / reloads; error_log regexps
--- config
    location = /w { return 200 "worker x-test=$http_x_test"; }
    location = /v2 { return 404; }
--- request
GET /v2/missing
--- error_code: 404
--- response_body_like: 404 Not Found
--- error_log eval
qr/\[error\] \d+#\d+: \*\d+ open\(\) ".*?missing" failed/
