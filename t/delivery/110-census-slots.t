# The census of apps (docs/federation.md, "The census of apps") has a
# slot a KB of tent_mac_nonce_cache, a power of two from 256 to 16,384:
# with 256 slots for every zone, a fan-out to a thousand entities of one
# nginx had their censuses take each other's slots, and every copy had
# an outbox row again (docs/bench.md).  Each block starts nginx with a
# zone size and reads the slots from the notice the zone's start logs;
# the nonces still have the rest (at least 16, or nginx does not start).

use Test::Nginx::Socket 'no_plan';

master_on();
workers(1);
log_level('notice');
no_shuffle();
run_tests();

__DATA__

=== TEST 1: the smallest zone: 256 slots, as before
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_mac_nonce_cache 32k;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/profile
--- error_code: 200
--- error_log eval
qr/tent_mac_nonce_cache of 32k holds [1-9]\d* nonces, \d+ each for app and for follower keys, [^,]+, \d+ entity slots and 256 census slots/



=== TEST 2: the default 4m: 4,096 slots (128 KB of it)
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/profile
--- error_code: 200
--- error_log eval
qr/tent_mac_nonce_cache of 4096k holds [1-9]\d* nonces, \d+ each for app and for follower keys, [^,]+, \d+ entity slots and 4096 census slots/



=== TEST 3: 3m: the power of two below its KB, 2,048
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_mac_nonce_cache 3m;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/profile
--- error_code: 200
--- error_log eval
qr/tent_mac_nonce_cache of 3072k holds [1-9]\d* nonces, \d+ each for app and for follower keys, [^,]+, \d+ entity slots and 2048 census slots/



=== TEST 4: 64m: 16,384 at most
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_mac_nonce_cache 64m;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/profile
--- error_code: 200
--- error_log eval
qr/tent_mac_nonce_cache of 65536k holds [1-9]\d* nonces, \d+ each for app and for follower keys, [^,]+, \d+ entity slots and 16384 census slots/
