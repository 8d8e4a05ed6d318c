package Tent::Util;

# Helpers for suites that need more than one request at a time: raw HTTP
# requests, parallel clients, the nginx master's pid, reloads.  They only
# need the port and server root that Test::Nginx exports, so they work
# with the real Test::Nginx::Socket as well as with t/lib's.

use strict;
use warnings;

use Exporter 'import';
use IO::Socket::IP;
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep time);

our @EXPORT_OK = qw(http_request parallel_clients master_pid reload_nginx
                    socket_peer_pid
                    error_log_text wait_for_log store_lock
                    start_last_nginx stop_last_nginx wait_for
                    follower_host_config follower_host follow_many
                    dechunk export_document ldb_tool ldb_rows
                    tent_status error_log_lines error_log_since
                    free_port notes_delivered no_crash);

sub port { $ENV{TEST_NGINX_SERVER_PORT} || $ENV{TEST_NGINX_PORT} || 1984 }

sub servroot { $ENV{TEST_NGINX_SERVER_ROOT} or die "no TEST_NGINX_SERVER_ROOT" }

# http_request(method => 'GET', path => '/', headers => {...}, body => '',
#              port => N, timeout => 5, local_addr => '127.0.0.2',
#              addr => '127.0.0.1' (the address connected to))
# returns { status => N, headers => { lc name => value }, body => '' },
# or { status => 0, error => '...' } when the connection failed.
sub http_request {
    my %a = @_;
    my $sock = IO::Socket::IP->new(
        PeerHost => $a{addr} || '127.0.0.1',
        PeerPort => $a{port} || port(),
        Timeout  => $a{timeout} || 5,
        ($a{local_addr} ? (LocalHost => $a{local_addr}) : ()),
    ) or return { status => 0, error => "connect: $!" };

    my $method = $a{method} || 'GET';
    my $body = defined $a{body} ? $a{body} : '';
    my %h = (Host => 'localhost', Connection => 'close',
             %{ $a{headers} || {} });
    $h{'Content-Length'} = length $body if length $body;

    my $req = "$method $a{path} HTTP/1.1\r\n"
            . join('', map { "$_: $h{$_}\r\n" } sort keys %h) . "\r\n" . $body;

    my $t = $a{timeout} || 5;
    my $raw = '';
    my $ok = eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm $t;
        print {$sock} $req;
        while (1) {
            my $n = sysread($sock, my $buf, 65536);
            last if !defined $n || $n == 0;
            $raw .= $buf;
        }
        alarm 0;
        1;
    };
    alarm 0;
    close $sock;

    return { status => 0, error => $@ || 'read failed' } unless $ok;

    my ($head, $content) = split /\r\n\r\n/, $raw, 2;
    return { status => 0, error => 'no response' } unless defined $head;

    my @lines = split /\r\n/, $head;
    my ($status) = (shift(@lines) // '') =~ m{^HTTP/1\.\d (\d+)};
    my %headers;
    for (@lines) {
        my ($k, $v) = /^([^:]+):\s*(.*)$/ or next;
        $k = lc $k;
        $headers{$k} = exists $headers{$k} ? "$headers{$k}, $v" : $v;
    }

    return { status => $status || 0, headers => \%headers,
             body => defined $content ? $content : '' };
}

# Run $n client processes; each calls $code->($i) until it returns false
# or $seconds pass, and reports the list of lines it returns through a
# pipe.  Returns all lines.  Bounded in time: children are killed after
# $seconds + 10.
sub parallel_clients {
    my ($n, $seconds, $code) = @_;
    my @kids;
    for my $i (1 .. $n) {
        pipe(my $r, my $w) or die "pipe: $!";
        my $pid = fork;
        die "fork: $!" unless defined $pid;
        if ($pid == 0) {
            close $r;
            my $end = time + $seconds;
            my $iter = 0;
            while (time < $end) {
                my @out = $code->($i, $iter++);
                last unless @out;
                print {$w} "$_\n" for @out;
            }
            close $w;
            POSIX::_exit(0);
        }
        close $w;
        push @kids, [$pid, $r];
    }

    my @lines;
    my $deadline = time + $seconds + 10;
    for my $k (@kids) {
        my ($pid, $r) = @$k;
        while (my $l = <$r>) { chomp $l; push @lines, $l }
        close $r;
        while (waitpid($pid, WNOHANG) == 0) {
            if (time > $deadline) { kill 'KILL', $pid; }
            sleep 0.05;
        }
    }
    return @lines;
}

# run_tests() stops nginx at its end (upstream does too).  Code after it
# starts the last block's nginx again from the conf left in the server
# root, without wiping anything, and stops it when done.
sub start_last_nginx {
    # t/lib's harness starts it as its blocks do (valgrind, ASan modes)
    if (defined &Test::Nginx::Util::nginx_start) {
        Test::Nginx::Util::nginx_start() or die "cannot start nginx again";
        return wait_port();
    }

    my $root = servroot();
    my $bin = $ENV{TEST_NGINX_BINARY} || 'nginx';
    system($bin, '-p', "$root/", '-c', "$root/conf/nginx.conf") == 0
        or die "cannot start nginx again: $?";
    return wait_port();
}

# export_document(cred => CRED, host => 'localhost', port => port(),
# query => ''): GET /tent/export?posts=1QUERY signed with the owner
# credential CRED, the body de-chunked and parsed; undef (and a diag of
# the answer) when it is not a complete document
sub export_document {
    my (%o) = @_;
    require JSON::PP;
    require Tent::MAC;
    my $host = $o{host} // 'localhost';
    my $path = '/tent/export?posts=1' . ($o{query} // '');
    my $r = http_request(port => $o{port} || port(), path => $path,
        timeout => 30, headers => {
            Host => $host,
            Tent::MAC::signed_headers(cred => $o{cred}, method => 'GET',
                                      uri => $path, host => $host, port => 80,
                                      nonce => Tent::MAC::random_nonce(8)) });
    my $body = $r->{body} // '';
    ($body) = dechunk($body)
        if ($r->{headers}{'transfer-encoding'} // '') =~ /chunked/
           && $body =~ /^[0-9a-fA-F]+\r\n/;
    my $json = eval { JSON::PP->new->utf8->decode($body) };
    Test::More->builder->diag("export of $host: $r->{status} "
                              . substr($body, 0, 300))
        unless $json && ref $json eq 'HASH' && $json->{complete};
    return $json;
}

# follower_host(): a Tent::Peer (one worker) playing many follower
# entities (follower_host_config), its notification POSTs logged with
# their connection and its request count (keep-alive is measured by them)
# and the status answered in logs/notes.log; returns the peer, its URL
# and that log's path
sub follower_host {
    require Tent::Peer;
    my $peer = Tent::Peer->start(
        worker_processes => 1,
        log_level => 'warn',
        http_config => <<'CONF',
    tent_store  $SERVROOT/tent_temp;
    log_format  notes  '$connection $connection_requests $request_method $uri $status';
    keepalive_timeout  75s;
    keepalive_requests 10000;
CONF
        server_config => follower_host_config(log => 'notes'));
    return ($peer, $peer->url, $peer->servroot . '/logs/notes.log');
}

# the notifications a follower_host() answered 200, from its notes log
sub notes_delivered {
    my ($notes) = @_;
    open my $fh, '<', $notes or return 0;
    return scalar grep { m{ POST /f\d+/tent/notifications/n 200$} } <$fh>;
}

# follower_host_config(names => 'f[0-9]+', log => 'combined', first => ''):
# the server block of a Tent::Peer that plays many follower entities,
# <url>/<name>: the entity page's Link, a core profile, the challenge
# echoed and 200 to every notification, logged in logs/notes.log with
# the log format named.  "first": locations put before these (regex
# locations match in order), to make some names answer otherwise.
sub follower_host_config {
    my (%o) = @_;
    my $names = $o{names} || 'f[0-9]+';
    my $log = $o{log} || 'combined';
    my $core = '{"https://tent.io/types/info/core/v0.1.0":{"entity":"$URL/$1",'
             . '"licenses":[],"servers":["$URL/$1/tent"]}}';
    return ($o{first} // '') . <<CONF;
        location ~ ^/($names)\$ {
            add_header  Link '</\$1/tent/profile>; rel="https://tent.io/rels/profile"';
            return      200 'follower';
        }

        location ~ ^/($names)/tent/profile\$ {
            default_type  application/vnd.tent.v0+json;
            return        200 '$core';
        }

        location ~ ^/$names/tent/notifications/ {
            access_log    \$SERVROOT/logs/notes.log $log;
            default_type  text/plain;
            if (\$request_method = GET) {
                return 200 \$arg_challenge;
            }
            return 200 '';
        }
CONF
}

# follow_many(CLIENT, URL, [NAMES], types => [...]): each <URL>/<name>
# follows CLIENT's entity (POST /followers, notification path
# notifications/n); returns how many were refused and the follower ids.
sub follow_many {
    my ($c, $url, $names, %o) = @_;
    my ($bad, @ids) = (0);
    for my $name (@$names) {
        my $res = $c->request(POST => '/followers',
                              body => { entity => "$url/$name",
                                        types => $o{types}
                                            || ['https://tent.io/types/post/status/v0.1.0'],
                                        notification_path => 'notifications/n' });
        $bad++ unless $res->{status} == 200;
        push @ids, $res->{json}{id};
    }
    return ($bad, @ids);
}

# dechunk(BODY): a chunked body's data, and whether its last chunk (0)
# came: (DATA, COMPLETE)
sub dechunk {
    my ($body) = @_;
    my ($out, $complete) = ('', 0);
    while ($body =~ s/^([0-9a-fA-F]+)\r\n//) {
        my $n = hex $1;
        if ($n == 0) { $complete = 1; last }
        $out .= substr($body, 0, $n, '');
        $body =~ s/^\r\n//;
    }
    return ($out, $complete);
}

# wait_for(CODE, SECS): calls CODE every 0.1 s until it returns true (1)
# or SECS (default 20) pass (0): a bounded wait for what another process
# does, never a timing assertion.
sub wait_for {
    my ($cond, $secs) = @_;
    my $end = time + ($secs || 20);
    while (time < $end) {
        return 1 if $cond->();
        sleep 0.1;
    }
    return 0;
}

sub wait_port {
    my $end = time + ($ENV{TEST_NGINX_USE_VALGRIND} ? 60 : 10);
    while (time < $end) {
        my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                    PeerPort => port(), Timeout => 1);
        if ($s) { close $s; return 1 }
        sleep 0.05;
    }
    die "nginx did not come up again";
}

sub stop_last_nginx {
    # called from END blocks: a child's exit status is not the test's
    local $?;

    if (defined &Test::Nginx::Util::nginx_stop) {
        Test::Nginx::Util::nginx_stop();

        # what valgrind or ASan found after run_tests fails a test too
        &Test::Nginx::Socket::report_sanitizers('after run_tests')
            if defined &Test::Nginx::Socket::report_sanitizers;
        return;
    }

    my $pid = master_pid() or return;
    kill 'QUIT', $pid or return;
    my $end = time + 10;
    while (time < $end && kill 0, $pid) { sleep 0.05 }
    kill 'KILL', $pid if kill 0, $pid;
}

sub master_pid {
    open my $fh, '<', servroot() . '/logs/nginx.pid' or return undef;
    my $pid = <$fh>;
    close $fh;
    chomp $pid if defined $pid;
    return $pid;
}

sub reload_nginx {
    my $pid = master_pid() or die "no nginx master";
    kill 'HUP', $pid or die "HUP $pid: $!";
}

sub error_log_text {
    open my $fh, '<', servroot() . '/logs/error.log' or return '';
    local $/;
    my $t = <$fh>;
    close $fh;
    return $t;
}

# no_crash(WHAT, also => qr//): one check that the error log holds no
# crash, alert or emerg (nor a line "also" matches); the first ten shown
# when it does
sub no_crash {
    my ($what, %o) = @_;
    my @bad = grep { /exited on signal|\[alert\]|\[emerg\]/
                     || ($o{also} && $_ =~ $o{also}) }
              split /\n/, error_log_text();
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    Test::More::is(scalar @bad, 0, "$what: no crash, no alert in error.log")
        or Test::More::diag(join "\n", @bad[0 .. ($#bad > 9 ? 9 : $#bad)]);
}

# the error log as a list of lines
sub error_log_lines { split /^/, error_log_text() }

# the tent_status location's JSON (at //status: the client's API root is
# /tent) through CLIENT, a Tent::Client; dies unless it answers 200
sub tent_status {
    my ($c) = @_;
    my $res = $c->request(GET => '//status');
    die "status: $res->{status} $res->{body}" unless $res->{status} == 200;
    require JSON::PP;
    return JSON::PP::decode_json($res->{body});
}

# the error log from byte FROM on: what a run logged, not the one before
# it in the same file (FROM: length(error_log_text()) taken at its start)
sub error_log_since {
    my ($from) = @_;
    return substr(error_log_text(), $from || 0);
}

# wait until the error log (from byte FROM on) matches $re, at most
# $seconds
sub wait_for_log {
    my ($re, $seconds, $from) = @_;
    my $end = time + ($seconds || 5);
    while (time < $end) {
        return 1 if error_log_since($from) =~ $re;
        sleep 0.1;
    }
    return 0;
}

# a TCP port on 127.0.0.1 that nothing listens on now (for a second
# server block or a peer; the kernel does not give it out again at once)
sub free_port {
    require IO::Socket::IP;
    my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                Listen => 1) or die "no free port: $!";
    my $port = $s->sockport;
    close $s;
    return $port;
}

# Take LevelDB's own lock on a store's db directory, as another process
# holding the database would (an fcntl write lock on db/LOCK).  Returns
# the handle: the lock lasts until it is closed.
# socket_peer_pid(PATH): the pid of the process listening on a Unix
# socket (SO_PEERCRED of a connection to it), 0 when none answers
sub socket_peer_pid {
    my ($path) = @_;
    require IO::Socket::UNIX;
    require Socket;
    my $s = IO::Socket::UNIX->new(Type => Socket::SOCK_STREAM(),
                                  Peer => $path) or return 0;
    my $cred = getsockopt($s, Socket::SOL_SOCKET(), Socket::SO_PEERCRED())
        or return 0;
    return (unpack 'l3', $cred)[0];
}

sub store_lock {
    my ($dir) = @_;
    require Fcntl;
    system('mkdir', '-p', "$dir/db") == 0 or die "mkdir $dir/db";
    open my $fh, '+>>', "$dir/db/LOCK" or die "open $dir/db/LOCK: $!";
    # struct flock on LP64 Linux: short type, short whence, off_t start,
    # off_t len, pid_t pid
    my $lock = pack('s s x4 q q i x4', Fcntl::F_WRLCK(), 0, 0, 0, 0);
    fcntl($fh, Fcntl::F_SETLK(), $lock) or die "fcntl lock: $!";
    return $fh;
}

# The root of a suite that does not load the harness (its files, its
# The "user" line of a configuration a suite writes itself, as the
# harness writes it: a root master's workers as root, so that they may
# reach a server root inside a checkout only root may enter (mktemp -d is
# 0700), which nginx -t checks (docs/operations.md)
sub user_line {
    my $user = $ENV{TEST_NGINX_WORKER_USER};
    return "user $user;" if $user;
    return $> == 0 ? 'user root;' : '';
}

# peers' roots beside it): TEST_NGINX_SERVROOT or DEFAULT, and its own
# when files run side by side (TEST_NGINX_RANDOMIZE), as the harness
# makes its own: two such suites must not share a token file or a peer.
sub own_root {
    my ($default) = @_;
    my $r = $ENV{TEST_NGINX_SERVROOT} || $default;
    $r =~ s{/+$}{};
    $r .= "-$$" if $ENV{TEST_NGINX_RANDOMIZE} && !$INC{'Test/Nginx/Util.pm'};
    require File::Basename;
    require File::Path;
    File::Path::make_path(File::Basename::dirname($r));
    return $r;
}

# A helper of t/helpers (ldb-dump, ldb-put: LevelDB read and written
# directly, with nginx stopped), built once a process into a directory
# of its own.  `make test` installs cc and libleveldb-dev: a helper that
# cannot be built is a failure, never a skipped assertion.
my (%ldb_tool, $ldb_dir);
sub ldb_tool {
    my ($name) = @_;
    return $ldb_tool{$name} if $ldb_tool{$name};
    require File::Temp;
    $ldb_dir //= File::Temp::tempdir('tent-ldb-XXXXXX', TMPDIR => 1,
                                     CLEANUP => 1);
    my $bin = "$ldb_dir/$name";
    system('cc', '-o', $bin, "t/helpers/$name.c", '-lleveldb') == 0
        or die "cannot build t/helpers/$name.c (cc, libleveldb-dev: "
               . "make test-deps)";
    return $ldb_tool{$name} = $bin;
}

# The rows of the LevelDB in DIR, by t/helpers/ldb-dump ("key-hex TAB
# value-hex" lines).  nginx was stopped, but a worker may still be on
# its way out and hold the database's lock (a slow exit under ASan):
# tried again while the lock is held, for 30 s.  Any other failure
# dies: an empty list must mean no rows, never a dump that failed.
sub ldb_rows {
    my ($dir) = @_;
    my $bin = ldb_tool('ldb-dump');
    my $until = time + 30;
    while (1) {
        my $out = `$bin $dir 2>&1`;
        return grep { /^[0-9a-f]*\t/ } split /^/, $out if $? == 0;
        # LevelDB's own words for the lock (not "block checksum mismatch")
        die "ldb-dump $dir: $out"
            unless $out =~ m{IO error: lock \S*/LOCK\b|already held by process}
                   && time < $until;
        sleep 0.2;
    }
}

1;
