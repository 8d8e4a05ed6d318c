# tent_store_write_buffer (docs/store.md, "LevelDB's memtable"): the
# bytes LevelDB holds in a memtable before it writes them to a table
# file.  Live: at 64k, 150 posts of 2 kB (about 700 kB of rows: the
# post, its version, its index rows) leave table files (.ldb) in the
# database's directory, written when a memtable filled; at the default
# (16m) they would all still be in the memtable and its log.  The
# directive takes 64k to 1024m (LevelDB's own range), in http.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx wait_for);
use Tent::Client;

master_on();
workers(1);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $db = "$ENV{TEST_NGINX_SERVER_ROOT}/tent_temp/db";
my $c = Tent::Client->new;
my (undef, $cred) = $c->authorized_app('write_posts', post_types => 'all');

sub tables {
    opendir(my $dh, $db) or return 0;
    return scalar grep { /\.ldb$/ } readdir $dh;
}

is(tables(), 0, 'no table file before the posts');

for my $i (1 .. 150) {
    my $res = $c->request(POST => '/posts', cred => $cred,
                          body => { type => 'https://example.com/types/'
                                            . 'bulk/v0.1.0',
                                    content => { text => "$i " x 500 } });
    die "post: $res->{status} $res->{body}" unless $res->{status} == 200;
}

# the memtable is written to a table by LevelDB's own thread
ok(wait_for(sub { tables() >= 1 }, 20),
   'the memtables of 64k were written to table files (' . tables() . ')');

__DATA__

=== TEST 1: 32k is below LevelDB's range
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_write_buffer 32k;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
value must be between 65536 and 1073741824



=== TEST 2: 2048m is above it
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_write_buffer 2048m;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
value must be between 65536 and 1073741824



=== TEST 3: not a size
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_write_buffer lots;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_store_write_buffer" directive invalid value



=== TEST 4: http only
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    tent_store_write_buffer 16m;
--- must_die
--- error_log
"tent_store_write_buffer" directive is not allowed here



=== TEST 5: the last block again, for the live check: 64k
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_write_buffer 64k;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/profile
--- error_code: 200
