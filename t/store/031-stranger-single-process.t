# "master_process off": the one process is the store's owner, and the
# only process of its nginx.  Another process holds the database
# (LevelDB's lock) and listens on the socket path, as another nginx's
# owner does for its workers (t/tools/100): this nginx must leave that
# socket alone until it opens the database itself.  The bugs this
# catches: without a master the owner asked nobody who listens and
# bound the path over it; and who was "ours" was read from the parent's
# pid, so a second such nginx started from the same shell would have
# been taken for ours.

use Test::Nginx::Socket 'no_plan';
use File::Temp qw(tempdir);
use IO::Socket::UNIX;
use Socket qw(SOCK_STREAM);
use Tent::Util qw(store_lock socket_peer_pid wait_for_log error_log_text
                  start_last_nginx stop_last_nginx);

our ($LOCK, $LISTENER);
my $PATH;

BEGIN {
    # the store outside the server root, locked and listened on before
    # nginx starts
    my $dir = tempdir('tent-t031-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    $ENV{TEST_NGINX_LOCKED} = "$dir/locked";
    $LOCK = store_lock("$dir/locked");
    $PATH = "$dir/locked/store.sock";
    $LISTENER = IO::Socket::UNIX->new(Type => SOCK_STREAM, Local => $PATH,
                                      Listen => 16)
        or die "listen on $PATH: $!";
    chmod 0777, $PATH;
}

master_off();
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

ok(wait_for_log(qr/tent store: opening "[^"]*locked\/db" failed/, 10),
   'the owner cannot open the locked database');

my $said = qq{tent store: another nginx (pid $$) listens on "$PATH": }
           . 'the socket is left to it until we open the store';
ok(wait_for_log(qr/\[error\] .*\Q$said\E/, 10),
   'the owner leaves the socket to the process that listens, and says so')
    or diag error_log_text();

is(socket_peer_pid($PATH), $$, 'who listens on the path: still the holder');

__DATA__

=== TEST 1: nginx serves what needs no store while the holder has it
--- http_config
    tent_store $TEST_NGINX_LOCKED;
    tent_store_timeout 1s;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /up { return 200 "up\n"; }
--- request
GET /up
--- response_body
up
