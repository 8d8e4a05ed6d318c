# The suites' reading of a stopped store (Tent::Util::ldb_rows, by
# t/helpers/ldb-dump) must never return part of the rows as if they were
# all: a "no row of X" check would then pass on a dump that failed.  A
# table file damaged after the store was written (a block of its rows
# overwritten) makes the dump fail, and ldb_rows dies, rather than list
# what came before the damage (or what the damaged block decodes to).

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx);
use Tent::Client;
use JSON::PP;

workers(1);
no_shuffle();
run_tests();

my $stopped;
END { stop_last_nginx() unless $stopped }

my $c = Tent::Client->new;
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';

start_last_nginx();

my (undef, $owner) = $c->authorized_app('write_posts,read_posts',
                                        post_types => 'all');

for my $i (1 .. 40) {
    my $res = $c->request(POST => '/posts', cred => $owner,
                          body => { type => $STATUS,
                                    content => { text => "row $i " x 20 },
                                    permissions => { public => JSON::PP::true } });
    die "post: $res->{status} $res->{body}" unless $res->{status} == 200;
}

stop_last_nginx();
$stopped = 1;

my $db = Tent::Util::servroot() . '/tent_temp/db';

# a first dump: the rows, and the log made a table file by its open
my @rows = Tent::Util::ldb_rows($db);
ok(@rows > 40, 'the undamaged store dumps its rows') or diag scalar @rows;
@rows = Tent::Util::ldb_rows($db);

# a worker on its way out still holds the store's lock: waited for
{
    use Fcntl qw(F_SETLK F_WRLCK);
    use POSIX ();
    pipe my $r, my $w or die "pipe: $!";
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        close $r;
        open my $fh, '+<', "$db/LOCK" or die "LOCK: $!";
        # struct flock: type, whence (SEEK_SET), start, len, pid: all 0
        # (the whole file), as LevelDB locks it
        my $lk = pack('s s', F_WRLCK, 0) . "\0" x 28;
        print {$w} fcntl($fh, F_SETLK, $lk) ? "held\n" : "lock: $!\n";
        close $w;
        sleep 1;
        POSIX::_exit(0);
    }
    close $w;
    is(scalar <$r>, "held\n", 'another process holds the store\'s lock');
    my @again = Tent::Util::ldb_rows($db);
    waitpid $pid, 0;
    is(scalar @again, scalar @rows,
       'a dump while the lock is held waits for it, then has every row');
}

opendir my $dh, $db or die "$db: $!";
my @tables = grep { /\.(ldb|sst)$/ } readdir $dh;
closedir $dh;
ok(@tables, 'the rows are in a table file') or diag "no table in $db";

# a block of rows overwritten near the start of each table (its first
# data block; the index and footer at its end are left alone)
for my $t (@tables) {
    open my $fh, '+<', "$db/$t" or die "$t: $!";
    binmode $fh;
    my $size = -s $fh;
    next if $size < 512;
    seek $fh, 64, 0;
    print {$fh} "\xff" x 128;
    close $fh or die "$t: $!";
}

my @after = eval { Tent::Util::ldb_rows($db) };
my $err = $@;
ok($err, 'the damaged store\'s dump fails: ldb_rows dies')
    or diag scalar(@after) . ' rows returned of ' . scalar(@rows);
like($err, qr/ldb-dump.*Corruption/s, 'naming the dump and the damage')
    if $err;

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/posts/count
--- error_code: 200
--- response_body: 0
