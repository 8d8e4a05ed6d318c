# A process that holds the store's database (LevelDB's lock) and listens
# on its socket path, but accepts nothing now: its queue of connections
# is full, so a probe connection gets EAGAIN and no peer to ask for its
# pid.  The new owner must leave that socket alone, as it does for
# another nginx's owner it can name (t/tools/100), until it opens the
# database itself.  The bug this catches: EAGAIN was taken for "nobody
# listens", and the owner unlinked the path and bound its own socket,
# cutting the holder's workers off their store.

use Test::Nginx::Socket 'no_plan';
use File::Temp qw(tempdir);
use IO::Socket::UNIX;
use Socket qw(AF_UNIX SOCK_STREAM
              pack_sockaddr_un);
use Fcntl qw(F_GETFL F_SETFL O_NONBLOCK);
use Tent::Util qw(store_lock socket_peer_pid wait_for_log error_log_text
                  start_last_nginx stop_last_nginx);

our ($LOCK, $LISTENER, @QUEUED);
my $PATH;

BEGIN {
    # the store outside the server root, locked and listened on before
    # nginx starts
    my $dir = tempdir('tent-t029-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    $ENV{TEST_NGINX_LOCKED} = "$dir/locked";
    $LOCK = store_lock("$dir/locked");
    $PATH = "$dir/locked/store.sock";
    $LISTENER = IO::Socket::UNIX->new(Type => SOCK_STREAM, Local => $PATH,
                                      Listen => 0)
        or die "listen on $PATH: $!";
    chmod 0777, $PATH;

    # fill its queue: connections it never accepts (bounded)
    # (IO::Socket takes EAGAIN for a connect in progress: raw calls)
    for (1 .. 64) {
        socket(my $c, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
        fcntl($c, F_SETFL, fcntl($c, F_GETFL, 0) | O_NONBLOCK) or die;
        last unless connect($c, pack_sockaddr_un($PATH));
        push @QUEUED, $c;
    }
    die "the queue never filled: $!" unless $!{EAGAIN};
}

master_on();
workers(1);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

ok(scalar @QUEUED, scalar(@QUEUED) . ' connections fill the queue');

ok(wait_for_log(qr/tent store: opening "[^"]*locked\/db" failed/, 10),
   'the owner cannot open the locked database');

my $said = qq{tent store: another process listens on "$PATH" and }
           . 'accepts nothing now (its queue is full): the socket is left '
           . 'to it until we open the store';
ok(wait_for_log(qr/\[error\] .*\Q$said\E/, 10),
   'the owner leaves the socket to the process that listens, and says so')
    or diag error_log_text();

$LISTENER->accept or die "accept: $!";   # room for one more
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
