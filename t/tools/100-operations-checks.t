# nginx -t, and the start, refuse what cannot work, each with one emerg
# line: a store the workers' user (www-data, under a root master, as in
# production and t/tools/040) cannot enter, a store whose parent is
# missing (nothing made), a socket where that user cannot create it, a
# store that is a file, a store or db/ that is a symbolic link (to
# root's directory: never chowned through), tent_status or
# tent_entity_page where the API answers, tent_admin without its token or its store.  A good store is
# made, only its last component, www-data's, 0700.  A second nginx on a
# store in use: -t warns, the start says it at error, the owner says
# "is locked by another process (pid N)" at error (a minute apart) and
# tent_status shows it, until the first one lets go; -t on the running
# server's own configuration says nothing.  A db/LOCK that is a FIFO
# does not block -t: it is said at warn.  The first nginx keeps its store
# socket (a respawned worker of it still answers), and a master of pid 1
# (a container's) is its workers' own.

use strict;
use warnings;
use Test::More;
use File::Path qw(make_path);
use File::Spec;
use File::Temp ();
use FindBin;
use lib "$FindBin::Bin/../lib";
use Tent::Util qw(free_port wait_for);
use Time::HiRes qw(sleep time);
use POSIX ();

my $BIN = $ENV{TEST_NGINX_BINARY} || '/usr/sbin/nginx';
my ($so) = grep { /ngx_http_tent_module/ }
           split ' ', $ENV{TEST_NGINX_LOAD_MODULES} || '';
plan skip_all => 'TEST_NGINX_LOAD_MODULES names no tent module' unless $so;
plan skip_all => 'needs root (user www-data)' unless $> == 0;
plan skip_all => 'needs the user www-data' unless getpwnam('www-data');
$so = File::Spec->rel2abs($so);

# under /tmp, 0755: the workers run as www-data
my $sr = File::Temp::tempdir('/tmp/tent-checks-XXXXXX', CLEANUP => 1);
chmod 0755, $sr;
make_path("$sr/logs", "$sr/secret");
chmod 0700, "$sr/secret";                  # root's, closed to www-data

# under util/run-asan.sh: this suite's nginx report here (checked last)
$ENV{TENT_ASAN_LOG} = "$sr/logs/asan";

# a configuration: NAME.conf with the http block's BODY
sub conf {
    my ($name, $http, %o) = @_;
    my $pid = $o{pid} || "$sr/$name.pid";
    my $log = $o{log} || "$sr/logs/$name.log";
    $o{workers} ||= 1;
    open my $fh, '>', "$sr/$name.conf" or die;
    print {$fh} <<"CONF";
load_module $so;
user www-data;
worker_processes $o{workers};
pid $pid;
error_log $log notice;
events { worker_connections 64; }
http {
    access_log off;
$http
}
CONF
    close $fh;
    return "$sr/$name.conf";
}

# nginx -t, or the start, of a configuration: (exit status, output)
sub nginx {
    my ($conf, @opt) = @_;
    my $out = `$BIN @opt -p $sr/ -c $conf 2>&1`;
    return ($? >> 8, $out);
}

# the line nginx prints, with or without the log's time and pid
sub has_line {
    my ($out, $level, $line) = @_;
    return $out =~ /\[\Q$level\E\] (?:\d+#\d+: )?\Q$line\E\n/;
}

# stop the nginx of a pid file, and wait for it
sub stop {
    my ($file) = @_;
    open my $fh, '<', $file or return;
    my ($pid) = (<$fh> // '') =~ /(\d+)/;
    close $fh;
    return unless $pid;
    kill 'QUIT', $pid;
    my $end = time + 10;
    sleep 0.05 while kill(0, $pid) && time < $end;
}

my $PORT = free_port();
my $N = 0;

# one configuration that must fail "nginx -t" and the start with LINE
sub refused {
    my ($what, $http, $line, %o) = @_;
    my $conf = conf('bad' . ++$N, $http);
    my ($rc, $out) = nginx($conf, '-t');
    isnt($rc, 0, "$what: nginx -t fails");
    ok(has_line($out, 'emerg', $line), "$what: the line")
        or diag "expected: $line\ngot: $out";
    return if $o{test_only};
    ($rc, $out) = nginx($conf);
    isnt($rc, 0, "$what: the start fails") or stop("$sr/bad$N.pid");
    ok(has_line($out, 'emerg', $line), "$what: the same line at start")
        or diag $out;
    ok(!-e "$sr/bad$N.pid" || -z "$sr/bad$N.pid", "$what: nothing runs");
}

my $entity = "server { listen 127.0.0.1:$PORT; tent_entity http://a.example; }";

refused('a store under a directory www-data cannot enter',
        "tent_store $sr/secret/store;\n$entity",
        qq{tent_store "$sr/secret/store": user "www-data" cannot enter }
        . qq{"$sr/secret" (mode 0700, owner root, group root)});
ok(!-e "$sr/secret/store", 'that store was not made');

refused('a store whose parent is missing',
        "tent_store $sr/none/dir/store;\n$entity",
        qq{tent_store "$sr/none/dir/store": the directory "$sr/none/dir" }
        . 'does not exist (nginx creates only the last component)');
ok(!-e "$sr/none", 'no parent made');

refused('the store socket where www-data cannot create it',
        "tent_store $sr/store0;\ntent_store_socket $sr/secret/s.sock;\n"
        . $entity,
        qq{tent_store_socket "$sr/secret/s.sock": user "www-data" cannot }
        . qq{create files in "$sr/secret" (mode 0700, owner root, }
        . 'group root)');

open my $f, '>', "$sr/afile" or die;
close $f;
refused('a store that is a file', "tent_store $sr/afile;\n$entity",
        qq{tent_store "$sr/afile" is not a directory});

# the store is www-data's: they may swap store/db, or the store itself,
# for a link to root's directory; the root master must refuse it, not
# chown the link's target and what is in it to them
my ($wuid, $wgid) = (getpwnam('www-data'))[2, 3];
make_path("$sr/root/etc", "$sr/sl/store");
open $f, '>', "$sr/root/etc/passwd" or die;
close $f;
chown $wuid, $wgid, "$sr/sl/store";
symlink "$sr/root/etc", "$sr/sl/store/db" or die;
refused('store/db a link to root\'s directory',
        "tent_store $sr/sl/store;\n$entity",
        qq{tent_store "$sr/sl/store": "$sr/sl/store/db" is a symbolic link});
symlink "$sr/root/etc", "$sr/sl/link" or die;
refused('a store that is a link to root\'s directory',
        "tent_store $sr/sl/link;\n$entity",
        qq{tent_store "$sr/sl/link": "$sr/sl/link" is a symbolic link});
is((stat "$sr/root/etc")[4], 0, 'the link\'s target is still root\'s');
is((stat "$sr/root/etc/passwd")[4], 0, 'and the file in it');

# db/LOCK a FIFO (www-data's to make): the master's lock check must not
# block on it (a bound, not a timing: 124 is timeout's status)
make_path("$sr/fifo/store/db");
chown $wuid, $wgid, "$sr/fifo/store", "$sr/fifo/store/db";
chmod 0700, "$sr/fifo/store", "$sr/fifo/store/db";
system('mkfifo', "$sr/fifo/store/db/LOCK") == 0 or die;
chown $wuid, $wgid, "$sr/fifo/store/db/LOCK";
{
    my $conf = conf('fifo', "tent_store $sr/fifo/store;\n$entity");
    my $out = `timeout 20 $BIN -t -p $sr/ -c $conf 2>&1`;
    my $rc = $? >> 8;
    isnt($rc, 124, 'LOCK a FIFO: nginx -t does not block on it');
    is($rc, 0, 'and passes');
    ok(has_line($out, 'warn', qq{tent_store "$sr/fifo/store": }
                              . qq{"$sr/fifo/store/db/LOCK" is not a }
                              . 'regular file, its lock is not checked'),
       'and says LOCK is not a regular file') or diag $out;
}

# the line number of the directive in its file
sub line_of {
    my ($file, $re) = @_;
    open my $fh, '<', $file or die;
    while (<$fh>) { return $. if /$re/ }
    die "no $re in $file";
}

sub refused_at {
    my ($what, $http, $re, $line) = @_;
    my $conf = "$sr/bad" . ($N + 1) . '.conf';
    conf('bad' . ($N + 1), $http);
    my $at = line_of($conf, $re);
    $line =~ s/AT/$conf:$at/;
    refused($what, $http, $line);
}

refused_at('tent_status inside the API root',
           "tent_store $sr/store0;\nserver {\n    listen 127.0.0.1:$PORT;\n"
           . "    tent_entity http://a.example;\n"
           . "    location = /tent/status {\n        tent_status;\n    }\n}",
           qr/tent_status;/,
           '"tent_status" in AT: its location "/tent/status" is inside the '
           . 'API root "/tent" of its server\'s "tent_entity", where the '
           . 'API answers: move it out of "/tent"');

refused_at('tent_entity_page where the API is the whole server',
           "tent_store $sr/store0;\nserver {\n    listen 127.0.0.1:$PORT;\n"
           . "    tent_entity http://a.example;\n    tent_api_root /;\n"
           . "    location = / {\n        tent_entity_page;\n    }\n}",
           qr/tent_entity_page;/,
           '"tent_entity_page" in AT: its location "/" is inside the API '
           . 'root "/" of its server\'s "tent_entity", where the API '
           . 'answers: move it out of "/"');

refused_at('tent_admin without tent_admin_token_file',
           "tent_store $sr/store0;\nserver {\n    listen 127.0.0.1:$PORT;\n"
           . "    location /tent-admin {\n        tent_admin;\n    }\n}",
           qr/tent_admin;/,
           '"tent_admin" in AT has no "tent_admin_token_file": every '
           . 'request would be refused');

open $f, '>', "$sr/admin.token" or die;
print {$f} "0123456789abcdef0123456789abcdef\n";
close $f;
chmod 0600, "$sr/admin.token";
refused_at('tent_admin without tent_store',
           "server {\n    listen 127.0.0.1:$PORT;\n"
           . "    location /tent-admin {\n        tent_admin;\n"
           . "        tent_admin_token_file $sr/admin.token;\n    }\n}",
           qr/tent_admin;/,
           '"tent_admin" in AT needs "tent_store" in the http block');

# the good one: A, running; its store made for www-data
my ($PA, $PB, $SB) = (free_port(), free_port(), free_port());
my $status = sub {
    my ($port) = @_;
    return "server {\n    listen 127.0.0.1:$port;\n"
           . "    location = /tent_status { tent_status; }\n}";
};
my $good = "tent_store $sr/store;\n"
           . "server {\n    listen 127.0.0.1:PORT;\n"
           . "    tent_entity http://a.example;\n}\n";
# A: two workers, one listening socket each (a new connection may reach
# either), so that worker 1 is a client of worker 0's store socket
(my $ga = $good) =~ s/PORT/$PA reuseport/;
my $ca = conf('a', $ga . $status->(free_port()), workers => 2);
my ($rc, $out) = nginx($ca, '-t');
is($rc, 0, 'a good store: nginx -t passes') or diag $out;
ok(!-e "$sr/store", 'nginx -t made nothing');
($rc, $out) = nginx($ca);
is($rc, 0, 'and nginx starts') or diag $out;
END { local $?; stop($_) for "$sr/a.pid", "$sr/b.pid" }
my @st = stat("$sr/store");
is(join(',', $st[4] // '', sprintf('%o', ($st[2] // 0) & 07777)),
   getpwnam('www-data') . ',700', 'the store: www-data\'s, 0700');
is((stat("$sr/store/db"))[4], scalar getpwnam('www-data'),
   'its db/ too');

sub get {
    my ($port, $path) = @_;
    my $r = Tent::Util::http_request(method => 'GET', path => $path,
                                     port => $port, timeout => 10,
                                     headers => { Host => 'a.example' });
    return $r;
}

ok(wait_for(sub { get($PA, '/tent/profile')->{status} == 200 }),
   'A answers from its store');

# A's worker 0 holds the lock (/proc/locks: "pid maj:min:inode")
open my $pf, '<', "$sr/a.pid" or die;
my ($ma) = <$pf> =~ /(\d+)/;
close $pf;
my $ino = (stat "$sr/store/db/LOCK")[1];
my ($wa) = map { /^\d+: POSIX\s+ADVISORY\s+WRITE (\d+) \S+:$ino / ? $1 : () }
           do { open my $lf, '<', '/proc/locks' or die; <$lf> };
ok($wa, "A's worker 0: $wa");

($rc, $out) = nginx($ca, '-t');
is($rc, 0, 'nginx -t of the running server passes');
unlike($out, qr/locked/, 'and says nothing of its own lock');

# B: another nginx on the same store
(my $gb = $good) =~ s/PORT/$PB/;
my $cb = conf('b', $gb . $status->($SB));
my $locked = qq{tent store "$sr/store" is locked by another process }
             . "(pid $wa)";
($rc, $out) = nginx($cb, '-t');
is($rc, 0, 'B: nginx -t passes (the holder may be gone at start)');
ok(has_line($out, 'warn', "$locked: the store owner will wait for it, "
                          . 'and every request needing the store gets 503'),
   'and warns of the holder') or diag $out;

($rc, $out) = nginx($cb);
is($rc, 0, 'B starts');
ok(has_line($out, 'error', "$locked: the store owner will wait for it, "
                           . 'and every request needing the store gets 503'),
   'and says the holder at error') or diag $out;

sub blog {
    open my $fh, '<', "$sr/logs/b.log" or return '';
    local $/;
    return <$fh>;
}

ok(wait_for(sub { blog() =~ /\[error\] \d+#\d+: \Q$locked\E for \d+ s: /
              }, 30),
   'B\'s store owner says it at error') or diag blog();

sub status_of {
    my ($port) = @_;
    my $r = get($port, '/tent_status');
    return {} unless $r->{status} == 200;
    require JSON::PP;
    return JSON::PP::decode_json($r->{body});
}

is_deeply(status_of($SB)->{store_lock}, { locked => 1, pid => $wa },
          'B\'s tent_status: locked, by A\'s worker');
my $prom = get($SB, '/tent_status?format=prometheus')->{body} // '';
like($prom, qr/^tent_store_locked 1$/m, 'and in Prometheus');
like($prom, qr/^tent_store_lock_holder_pid $wa$/m, 'with the holder');
is(get($PB, '/tent/profile')->{status}, 503, 'B\'s API: 503 meanwhile');
ok(has_line(blog(), 'error',
            qq{tent store: another nginx (pid $wa) listens on }
            . qq{"$sr/store/store.sock": the socket is left to it until we }
            . 'open the store'),
   'B\'s owner leaves A\'s store socket alone, and says so') or diag blog();

# A's socket is still A's: its workers that connect now reach A's owner
# (B's owner once took the path over: A's new connections got B's 503)
is(Tent::Util::socket_peer_pid("$sr/store/store.sock"), $wa,
   'who listens on the store socket: A\'s worker 0');
my ($w1) = grep { $_ != $wa } `pgrep -P $ma` =~ /(\d+)/g;
ok($w1, "A's worker 1: $w1");
kill 'KILL', $w1;
ok(wait_for(sub { my @w = `pgrep -P $ma` =~ /(\d+)/g;
                  @w == 2 && !grep { $_ == $w1 } @w }, 15),
   'A\'s worker 1 respawned: it connects to the store socket anew');
my $a200 = 0;
for (1 .. 20) {
    last unless get($PA, '/tent/profile')->{status} == 200;
    $a200++;
}
is($a200, 20, 'A answers 200, from either worker, with B running');

# A goes: B opens the store
kill 'QUIT', $ma;
ok(wait_for(sub { !kill 0, $ma }, 15), 'A stopped');
ok(wait_for(sub { blog() =~ /tent store: opened "\Q$sr\E\/store\/db"/ },
            15), 'B opens the store');
ok(wait_for(sub { (status_of($SB)->{store_lock}{locked} // 1) == 0 }),
   'B\'s tent_status: no longer locked');
is(status_of($SB)->{store_lock}{pid}, 0, 'no holder');
ok(wait_for(sub { get($PB, '/tent/profile')->{status} == 200 }),
   'B answers from the store');
my $errors = () = blog() =~ /\Q$locked\E for/g;
is($errors, 1, 'one error line of the owner in that minute');

# a master that is pid 1 (a container's; here a PID namespace's): its
# workers' parent is pid 1 and still their master, so worker 1 uses
# worker 0's store socket (an orphan's parent is pid 1 too: that one is
# not ours, but a master's own workers come first)
SKIP: {
    skip 'no "unshare --pid" here', 2
        if system('unshare --pid --fork --mount-proc true 2>/dev/null');
    my $PP = free_port();
    my $cp = conf('p1', "tent_store $sr/store1;\nserver {\n"
                        . "    listen 127.0.0.1:$PP reuseport;\n"
                        . "    tent_entity http://a.example;\n}",
                  workers => 2);
    my $un = fork // die "fork: $!";
    if (!$un) {
        { exec 'unshare', '--pid', '--fork', '--mount-proc', $BIN,
             '-g', 'daemon off;', '-p', "$sr/", '-c', $cp };
        POSIX::_exit(127);
    }
    ok(wait_for(sub { get($PP, '/tent/profile')->{status} == 200 }),
       'a master of pid 1: it answers');
    my $ok = 0;
    for (1 .. 20) {
        last unless get($PP, '/tent/profile')->{status} == 200;
        $ok++;
    }
    is($ok, 20, 'and from either worker: 200');
    my ($m) = `pgrep -P $un` =~ /(\d+)/;
    kill 'QUIT', $m if $m;
    waitpid($un, 0);
}

# nothing for the sanitizers (util/run-asan.sh), in any of these nginx
stop("$sr/b.pid");
my @asan = glob("$sr/logs/asan*");
is_deeply(\@asan, [], 'no sanitizer report')
    or diag join '', map { open my $fh, '<', $_; <$fh> } @asan;
my $ub = join '', map { open my $fh, '<', $_; <$fh> } glob("$sr/logs/*.log");
unlike($ub, qr/runtime error:/, 'no UBSan report in the logs');

done_testing();
