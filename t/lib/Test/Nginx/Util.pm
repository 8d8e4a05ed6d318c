package Test::Nginx::Util;

# Process management, nginx.conf generation and a raw HTTP/1.x client for
# the Test::Nginx::Socket subset in this directory.  Written from scratch for
# this project; see the POD in Test/Nginx/Socket.pm for the user-facing docs.

use strict;
use warnings;

use Exporter 'import';
use Cwd ();
use File::Path qw(make_path remove_tree);
use File::Spec ();
use File::Basename qw(dirname);
use IO::Select ();
use IO::Socket::IP ();
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep time);

our @EXPORT = qw(
    repeat_each no_shuffle workers master_on master_off
    master_process_enabled log_level worker_connections env_to_nginx
    no_root_location server_port server_root html_dir check_accum_error_log

    nginx_start nginx_stop nginx_reload nginx_master_pid nginx_running
    nginx_error_log http_req
);

our @EXPORT_OK = qw(
    expand_env alloc_rand_port build_nginx_conf write_conf write_user_files
    wipe_servroot start_nginx stop_nginx reload_nginx error_log_size
    read_error_log
    read_file tail_file http_exchange build_http_request parse_http_response
    sanitizer_reports nginx_version use_hup use_valgrind default_timeout
    $RunningConf $ServRoot $LogDir $ErrLogFile $StderrFile $ConfFile
    $ServerPort $RepeatEach $NoShuffle
);

# ------------------------------------------------------------------------
# Settings (script-level setters below, env vars read once at load time)

our $RepeatEach        = 1;
our $NoShuffle         = $ENV{TEST_NGINX_NO_SHUFFLE} ? 1 : 0;
our $Workers           = 1;
our $MasterOn          = 0;
our $LogLevel          = $ENV{TEST_NGINX_LOG_LEVEL} || 'debug';
our $WorkerConnections = 64;
our @EnvToNginx;
our $NoRootLocation    = 0;

our $ServerPort = $ENV{TEST_NGINX_SERVER_PORT} || $ENV{TEST_NGINX_PORT} || 1984;
our $ServRoot   = File::Spec->rel2abs($ENV{TEST_NGINX_SERVROOT}
                                      || File::Spec->catdir('t', 'servroot'));
$ServRoot =~ s{/+$}{};

# TEST_NGINX_RANDOMIZE=1 (for prove -jN): each test file takes a free
# block of 16 ports (suites use PORT+1..PORT+15 for more servers) below the
# kernel's ephemeral range, where free ports of Tent::Peer and
# Tent::Receiver and outgoing connections come from, and its own server
# root "<servroot>-<pid>", so files run side by side
if ($ENV{TEST_NGINX_RANDOMIZE}) {
    $ServerPort = _free_block(16);
    $ServRoot  .= "-$$";
    $ENV{TEST_NGINX_PORT} = $ServerPort;
}
our $HtmlDir    = "$ServRoot/html";
our $ConfDir    = "$ServRoot/conf";
our $LogDir     = "$ServRoot/logs";
our $ConfFile   = "$ConfDir/nginx.conf";
our $ErrLogFile = "$LogDir/error.log";
our $PidFile    = "$LogDir/nginx.pid";
our $StderrFile = "$LogDir/stderr.log";

$ENV{TEST_NGINX_SERVER_PORT} = $ServerPort;
$ENV{TEST_NGINX_PORT}      //= $ServerPort;
$ENV{TEST_NGINX_SERVER_ROOT} = $ServRoot;
$ENV{TEST_NGINX_SERVROOT}    = $ServRoot;
$ENV{TEST_NGINX_HTML_DIR}    = $HtmlDir;

our $Binary = $ENV{TEST_NGINX_BINARY} || _which('nginx') || '/usr/sbin/nginx';

# suppressions for stock nginx's own exit-time leaks (next to this file)
our $CoreSupp = File::Spec->catfile(dirname(File::Spec->rel2abs(__FILE__)),
                                    'nginx-core.supp');

our @TempDirs = qw(client_body_temp fastcgi_temp proxy_temp scgi_temp
                   uwsgi_temp);

# Runtime state
our $RunningConf;      # conf text the running nginx was started with
our $ChildPid;         # nginx pid when we run it in the foreground (valgrind)
our $StartedByUs = 0;
my  $ParentPid = $$;
my  %SanitizerSeen;    # file => bytes already reported

sub _which {
    my ($prog) = @_;
    for my $dir (split /:/, $ENV{PATH} || '') {
        my $p = "$dir/$prog";
        return $p if -f $p && -x _;
    }
    return;
}

# ------------------------------------------------------------------------
# Script-level configuration functions (upstream-compatible)

sub repeat_each (;$) { $RepeatEach = shift if @_; return $RepeatEach }
sub no_shuffle ()    { $NoShuffle = 1 }
sub workers (;$)     { $Workers = shift if @_; return $Workers }
sub master_on ()     { $MasterOn = 1 }
sub master_off ()    { $MasterOn = 0 }
sub log_level (;$)   { $LogLevel = shift if @_; return $LogLevel }
sub no_root_location () { $NoRootLocation = 1 }
sub worker_connections (;$) {
    $WorkerConnections = shift if @_;
    return $WorkerConnections;
}
sub env_to_nginx (@) { push @EnvToNginx, @_ }
sub check_accum_error_log () { return }   # accepted for compatibility

sub master_process_enabled (;$) {
    $MasterOn = ($_[0] && $_[0] ne 'off') ? 1 : 0 if @_;
    return 1 if $MasterOn || use_hup();
    return (($ENV{TEST_NGINX_MASTER_PROCESS} // '') eq 'on') ? 1 : 0;
}

sub server_port () { $ServerPort }
sub server_root () { $ServRoot }
sub html_dir ()    { $HtmlDir }

sub use_hup ()      { $ENV{TEST_NGINX_USE_HUP} ? 1 : 0 }
sub use_valgrind () { $ENV{TEST_NGINX_USE_VALGRIND} ? 1 : 0 }

sub default_timeout () {
    return $ENV{TEST_NGINX_TIMEOUT} if $ENV{TEST_NGINX_TIMEOUT};
    return use_valgrind() ? 10 : 3;
}

my $NginxVersion;
sub nginx_version () {
    return $NginxVersion if defined $NginxVersion;
    (my $q = $Binary) =~ s/'/'\\''/g;
    my $out = `'$q' -V 2>&1`;
    $NginxVersion = ($out // '') =~ m{nginx/(\d+(?:\.\d+)*)} ? $1 : '0';
    return $NginxVersion;
}

# numeric form of a dotted version: 1.19.5 -> 1019005
sub version_num {
    my @p = (split(/\./, shift), 0, 0, 0);
    return $p[0] * 1_000_000 + $p[1] * 1000 + $p[2];
}

# ------------------------------------------------------------------------
# $TEST_NGINX_* expansion and random ports

# Expands $TEST_NGINX_FOO from %ENV in a string (or recursively in an array);
# regexps and other refs pass through untouched.  Dies on unset variables.
sub expand_env {
    my ($v, $what) = @_;
    return $v unless defined $v;
    return [ map { expand_env($_, $what) } @$v ] if ref $v eq 'ARRAY';
    return $v if ref $v;
    $v =~ s{\$(TEST_NGINX_[A-Za-z0-9_]+)}{
        defined $ENV{$1} ? $ENV{$1}
            : die "environment variable \$$1 used in $what is not set\n"
    }ge;
    return $v;
}

sub _free_block {
    my ($n) = @_;
    my $blocks = int((32000 - 10000) / $n);

    # from the process id: files run side by side start apart
    BLOCK: for my $i (0 .. $blocks - 1) {
        my $base = 10000 + $n * (($$ + $i) % $blocks);
        for my $port ($base .. $base + $n - 1) {
            my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1',
                                        LocalPort => $port, Listen => 1,
                                        ReuseAddr => 1) or next BLOCK;
            close $s;
        }
        return $base;
    }
    die "cannot find a free block of $n ports\n";
}

sub alloc_rand_port {
    my %avoid = map { $_ => 1 } $ServerPort, @_;
    for (1 .. 200) {
        my $port = 10000 + int rand 50000;
        next if $avoid{$port};
        my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1',
                                    LocalPort => $port, Listen => 1,
                                    ReuseAddr => 1) or next;
        close $s;
        return $port;
    }
    die "cannot find a free random port\n";
}

# ------------------------------------------------------------------------
# nginx.conf

# %s: main_config http_config config post_main_config server_name log_level
# (all already expanded).
sub build_nginx_conf {
    my (%s) = @_;
    my $master = master_process_enabled();
    my $daemon = use_valgrind() ? 'off' : 'on';
    my $level  = $s{log_level} || $LogLevel;
    my $conf   = $s{config} // '';
    my $out = '';

    $out .= "worker_processes  $Workers;\n";
    $out .= "daemon $daemon;\n";
    $out .= 'master_process ' . ($master ? 'on' : 'off') . ";\n";
    $out .= "error_log $ErrLogFile $level;\n";
    $out .= "pid       $PidFile;\n";
    $out .= "env MOCKEAGAIN_VERBOSE;\n";
    for my $var (qw(MOCKEAGAIN MOCKEAGAIN_WRITE_TIMEOUT_PATTERN LD_PRELOAD
                    LD_LIBRARY_PATH ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS))
    {
        $out .= "env $var;\n" if defined $ENV{$var};
    }
    $out .= "env $_;\n" for @EnvToNginx;

    if (my $user = $ENV{TEST_NGINX_WORKER_USER}) {
        $out .= "user $user;\n";
    } elsif ($> == 0 && $master) {
        $out .= "user root;\n";
    }

    for my $mod (split ' ', $ENV{TEST_NGINX_LOAD_MODULES} || '') {
        $out .= 'load_module ' . File::Spec->rel2abs($mod) . ";\n";
    }

    $out .= "\n" . ($s{main_config} // '') . "\n";
    $out .= "events {\n    worker_connections  $WorkerConnections;\n}\n\n";
    $out .= "http {\n";
    $out .= "    access_log $LogDir/access.log;\n";
    for my $t (@TempDirs) {
        (my $directive = $t) =~ s/_temp$/_temp_path/;
        $out .= "    $directive $ServRoot/$t;\n";
    }
    $out .= "    default_type text/plain;\n";
    $out .= "    keepalive_timeout  68000ms;\n\n";
    $out .= ($s{http_config} // '') . "\n\n";
    $out .= "    server {\n";
    $out .= "        listen          $ServerPort;\n";
    $out .= "        server_name     '" . ($s{server_name} || 'localhost')
            . "';\n";
    $out .= "        client_max_body_size 30M;\n\n";
    $out .= "$conf\n";
    unless ($NoRootLocation || $conf =~ m{location\s+/\s*\{}) {
        $out .= "\n        location / {\n"
              . "            root $HtmlDir;\n"
              . "            index index.html index.htm;\n"
              . "        }\n";
    }
    $out .= "    }\n}\n\n";
    $out .= ($s{post_main_config} // '') . "\n";
    return $out;
}

sub write_conf {
    my ($text) = @_;
    make_path($ConfDir);
    _write_file($ConfFile, $text);
}

# $files: either the "--- user_files" text (">>> name [mtime]" headers) or an
# array of [name, content, mtime?] entries.
sub write_user_files {
    my ($files) = @_;
    return unless defined $files;
    my @entries;
    if (ref $files eq 'ARRAY') {
        @entries = map { [@$_] } @$files;
    } else {
        my @parts = split /^>>>[ \t]+(\S+)(?:[ \t]+(\d+))?[ \t]*\r?\n/m,
                          $files;
        shift @parts;    # text before the first header
        while (@parts) {
            my ($name, $mtime, $body) = splice @parts, 0, 3;
            push @entries, [$name, $body // '', $mtime];
        }
    }
    for my $e (@entries) {
        my ($name, $body, $mtime) = @$e;
        die "bad user file name: $name\n" if $name =~ m{(^|/)\.\.(/|$)};
        my $path = "$HtmlDir/$name";
        make_path(dirname($path));
        _write_file($path, $body);
        utime($mtime, $mtime, $path) if defined $mtime;
    }
}

sub _write_file {
    my ($path, $data) = @_;
    open my $fh, '>', $path or die "cannot write $path: $!\n";
    binmode $fh;
    print {$fh} $data;
    close $fh or die "cannot write $path: $!\n";
}

sub read_file {
    my ($path, $offset) = @_;
    open my $fh, '<', $path or return '';
    binmode $fh;
    seek $fh, $offset, 0 if $offset;
    local $/;
    my $data = <$fh>;
    return $data // '';
}

sub tail_file {
    my ($path, $lines) = @_;
    my @l = split /\n/, read_file($path);
    splice @l, 0, @l - $lines if @l > $lines;
    return join "\n", @l;
}

# Removes conf/ html/ logs/ and every *_temp entry of the server root (other
# files are kept), then recreates the standard directories.
sub wipe_servroot {
    if (opendir my $dh, $ServRoot) {
        for my $e (readdir $dh) {
            next unless $e =~ /^(?:conf|html|logs)$/ || $e =~ /_temp$/;
            remove_tree("$ServRoot/$e");
        }
        closedir $dh;
    }
    make_path($ServRoot, $ConfDir, $HtmlDir, $LogDir,
              map { "$ServRoot/$_" } @TempDirs);
    %SanitizerSeen = ();
}

sub error_log_size () { -s $ErrLogFile || 0 }

sub read_error_log {
    my ($offset) = @_;
    return read_file($ErrLogFile, $offset || 0);
}

# ------------------------------------------------------------------------
# nginx processes

sub _alive {
    my ($pid) = @_;
    return 0 unless $pid;
    if ($ChildPid && $pid == $ChildPid) {
        my $r = waitpid($pid, WNOHANG);
        if ($r == $pid || $r == -1) {
            $ChildPid = undef;
            return 0;
        }
        return 1;
    }
    return 0 unless kill 0, $pid;
    # an unreaped zombie counts as dead
    if (open my $fh, '<', "/proc/$pid/stat") {
        my $stat = <$fh> // '';
        return 0 if $stat =~ /^\d+ \(.*\) Z /;
    }
    return 1;
}

sub nginx_master_pid () {
    return $ChildPid if $ChildPid && _alive($ChildPid);
    my $pid = read_file($PidFile);
    return ($pid =~ /^\s*(\d+)/ && _alive($1)) ? $1 : undef;
}

sub nginx_running () { nginx_master_pid() ? 1 : 0 }

sub _cmd {
    my @cmd = ($Binary, '-p', "$ServRoot/", '-c', $ConfFile);
    # send pre-config errors to our log instead of the packaged default path
    push @cmd, '-e', $ErrLogFile
        if version_num(nginx_version()) >= version_num('1.19.5');
    my $vg = $ENV{TEST_NGINX_USE_VALGRIND};
    if ($vg) {
        my @prefix;
        if ($vg eq '1') {
            @prefix = (qw(valgrind -q --num-callers=100 --tool=memcheck
                          --leak-check=full --keep-debuginfo=yes
                          --show-possibly-lost=no --error-exitcode=99),
                       "--log-file=$LogDir/valgrind.%p.log");
            push @prefix, "--suppressions=$CoreSupp" if -f $CoreSupp;
            push @prefix, "--suppressions=$ENV{TEST_NGINX_VALGRIND_SUPP}"
                if $ENV{TEST_NGINX_VALGRIND_SUPP};
        } else {
            @prefix = split ' ', $vg;
        }
        unshift @cmd, @prefix;
    }
    return @cmd;
}

sub _spawn {
    my @cmd = @_;
    make_path($LogDir);
    my $pid = fork;
    die "fork failed: $!\n" unless defined $pid;
    if ($pid == 0) {
        open STDIN,  '<',  '/dev/null';
        open STDOUT, '>>', $StderrFile;
        open STDERR, '>&', \*STDOUT;
        { no warnings 'exec'; exec { $cmd[0] } @cmd; }
        print STDERR "cannot exec $cmd[0]: $!\n";
        POSIX::_exit(127);
    }
    return $pid;
}

sub _listening {
    my $hex = sprintf ':%04X ', $ServerPort;
    my $seen_proc = 0;
    for my $f ('/proc/net/tcp', '/proc/net/tcp6') {
        open my $fh, '<', $f or next;
        $seen_proc = 1;
        while (my $l = <$fh>) {
            my (undef, $local, undef, $st) = split ' ', $l;
            return 1 if defined $st && $st eq '0A' && "$local " =~ /\Q$hex\E$/;
        }
    }
    return 0 if $seen_proc;
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                PeerPort => $ServerPort, Timeout => 0.5);
    return $s ? 1 : 0;
}

sub _exit_desc {
    my ($st) = @_;
    return 'killed by signal ' . ($st & 127) if $st & 127;
    return 'exit status ' . ($st >> 8);
}

# Starts nginx with the current conf file.  Returns (1) on success or
# (0, $message) when nginx exits or does not come up.
sub start_nginx {
    my @cmd = _cmd();
    my $extra = $ENV{TEST_NGINX_SLEEP} || 0;
    $StartedByUs = 1;

    if (use_valgrind()) {
        my $pid = _spawn(@cmd);
        $ChildPid = $pid;
        my $deadline = time + 30 + $extra;
        while (time < $deadline) {
            my $r = waitpid($pid, WNOHANG);
            if ($r == $pid) {
                my $st = $?;
                $ChildPid = undef;
                return (0, 'nginx exited during startup (' . _exit_desc($st)
                           . ')');
            }
            if (_listening()) {
                sleep($extra + 0.5);   # let workers finish starting
                return (1);
            }
            sleep 0.1;
        }
        return (0, "nginx did not start listening on port $ServerPort");
    }

    my $pid = _spawn(@cmd);
    my $deadline = time + 30;
    my $r;
    while (($r = waitpid($pid, WNOHANG)) == 0 && time < $deadline) {
        sleep 0.02;
    }
    if ($r == 0) {
        kill 'KILL', $pid;
        waitpid($pid, 0);
        return (0, 'nginx did not daemonize within 30s');
    }
    return (0, 'nginx failed to start (' . _exit_desc($?) . ')') if $?;

    $deadline = time + 5 + $extra;
    while (time < $deadline) {
        last if nginx_master_pid() && _listening();
        sleep 0.02;
    }
    return (0, 'nginx died right after starting') unless nginx_master_pid();
    return (0, "nginx is not listening on port $ServerPort")
        unless _listening();
    sleep $extra if $extra;
    return (1);
}

# Stops the running nginx (QUIT, then TERM after 5s, KILL after 10s).
sub stop_nginx {
    my $pid = nginx_master_pid();
    $RunningConf = undef;
    return 1 unless $pid;
    kill 'QUIT', $pid;
    my $start = time;
    my $sent_term = 0;
    while (_alive($pid)) {
        my $el = time - $start;
        if ($el > 10) {
            kill 'KILL', $pid;
            sleep 0.1;
            waitpid($pid, 0) if $ChildPid && $pid == $ChildPid;
            last;
        }
        if ($el > 5 && !$sent_term++) {
            kill 'TERM', $pid;
        }
        sleep 0.02;
    }
    $ChildPid = undef;
    # valgrind/ASan logs are only complete once every process has exited
    sleep 0.2 if use_valgrind() && $ENV{TEST_NGINX_USE_VALGRIND} eq '1';
    return 1;
}

# Sends HUP to the master and waits TEST_NGINX_HUP_SLEEP (default 0.3) s.
sub reload_nginx {
    my $pid = nginx_master_pid() or return 0;
    kill 'HUP', $pid;
    my $wait = $ENV{TEST_NGINX_HUP_SLEEP} // 0.3;
    $wait *= 5 if use_valgrind();
    sleep $wait;
    return 1;
}

# New error reports from valgrind (logs/valgrind.*.log) and ASan
# (logs/asan.*) since the last call: list of [file, text].
sub sanitizer_reports () {
    my @reports;
    for my $f (glob("$LogDir/valgrind.*.log"), glob("$LogDir/asan.*")) {
        my $size = -s $f || 0;
        my $seen = $SanitizerSeen{$f} || 0;
        next if $size <= $seen;
        my $text = read_file($f, $seen);
        $SanitizerSeen{$f} = $size;
        if ($f =~ /valgrind/) {
            # ignore valgrind's own warnings, keep real error reports
            my @lines = grep { /^==\d+==/ && !/^==\d+== +Warning: / }
                        split /\n/, $text;
            next unless grep { /^==\d+== +\S/ } @lines;
        }
        push @reports, [$f, $text];
    }
    # UBSan next to a preloaded ASan ignores its log_path and writes to
    # stderr, which nginx points at the error log: its "runtime error:"
    # lines, whatever else the logs hold
    for my $f ($ErrLogFile, $StderrFile) {
        my $size = -s $f || 0;
        my $seen = $SanitizerSeen{$f} || 0;
        $seen = 0 if $seen > $size;    # the log began again
        next if $size <= $seen;
        my $text = read_file($f, $seen);
        $SanitizerSeen{$f} = $size;
        my @ub = grep { /: runtime error: / } split /\n/, $text;
        push @reports, [$f, join("\n", @ub)] if @ub;
    }
    return @reports;
}

# ------------------------------------------------------------------------
# Raw HTTP client

# Builds the bytes of one request from the "--- request" format:
# "METHOD /uri [HTTP/1.x]\nbody...".  Returns ($bytes, $method).
sub build_http_request {
    my ($req, $more_headers, $conn) = @_;
    $req =~ s/\A\s+//;
    my ($first, $body) = split /\r?\n/, $req, 2;
    my ($meth, $uri, $proto) = split ' ', $first // '';
    die "empty request line\n" unless defined $meth;
    $uri   //= '/';
    $proto //= 'HTTP/1.1';
    $body  //= '';
    $body =~ s/^\s+|\s+$//gs;

    my (%have, $hdrs);
    $hdrs = '';
    for my $line (split /\r?\n/, $more_headers // '') {
        next if $line =~ /^\s*#/ || $line !~ /\S/;
        my ($k, $v) = split /:\s*/, $line, 2;
        $v //= '';
        $have{lc $k} = $v;
        $hdrs .= "$k: $v\r\n";
    }
    my $head = "$meth $uri $proto\r\n";
    $head .= "Host: localhost\r\n" unless exists $have{host};
    $head .= "Connection: $conn\r\n" unless exists $have{connection};
    $head .= $hdrs;
    if (length $body && !exists $have{'content-length'}
        && !exists $have{'transfer-encoding'})
    {
        $head .= 'Content-Length: ' . length($body) . "\r\n";
    }
    return ("$head\r\n$body", uc $meth);
}

# Connects to 127.0.0.1:$port, sends the chunks (with $delay seconds between
# them), and reads until EOF.  $timeout is an inactivity timeout.
# Returns { raw => bytes, error => undef|msg, timed_out => bool }.
sub http_exchange {
    my (%o) = @_;
    my $timeout = $o{timeout} || default_timeout();
    my $port = $o{port} || $ServerPort;
    my $sock = IO::Socket::IP->new(PeerHost => '127.0.0.1', PeerPort => $port,
                                   Proto => 'tcp', Timeout => $timeout)
        or return { raw => '', error => "connect() to 127.0.0.1:$port failed: "
                                       . ($@ || $!), timed_out => 0 };
    binmode $sock;
    local $SIG{PIPE} = 'IGNORE';
    my $sel = IO::Select->new($sock);
    my ($raw, $error, $werr) = ('', undef, undef);
    my @chunks = @{ $o{chunks} || [] };

  WRITE:
    for my $i (0 .. $#chunks) {
        sleep $o{delay} if $i && $o{delay};
        my ($buf, $off) = ($chunks[$i], 0);
        while ($off < length $buf) {
            unless ($sel->can_write($timeout)) {
                $error = 'timeout';
                last WRITE;
            }
            my $n = syswrite $sock, $buf, length($buf) - $off, $off;
            unless (defined $n) {
                next if $!{EINTR} || $!{EAGAIN};
                $werr = "write failed: $!";
                last WRITE;
            }
            $off += $n;
        }
    }

    unless ($error) {
        while (1) {
            unless ($sel->can_read($timeout)) {
                $error = 'timeout';
                last;
            }
            my $n = sysread $sock, my $buf, 65536;
            unless (defined $n) {
                next if $!{EINTR} || $!{EAGAIN};
                $error = "read failed: $!" unless $!{ECONNRESET} && length $raw;
                last;
            }
            last if $n == 0;
            $raw .= $buf;
        }
    }
    close $sock;
    $error //= $werr unless length $raw;
    return { raw => $raw, error => $error,
             timed_out => (defined $error && $error eq 'timeout') ? 1 : 0 };
}

# Parses one response off the front of $raw.  Returns ($res, $rest):
# $res = { status, status_line, proto, headers => [[name, value]...],
#          header => {lc name => values joined by ", "}, body, error }.
sub parse_http_response {
    my ($raw, $method) = @_;
    my %res = (status => undef, headers => [], header => {}, body => '',
               error => undef);
    $raw //= '';
    while (1) {
        unless (length $raw) {
            $res{error} = 'empty response';
            return (\%res, '');
        }
        my ($pos, $sep) = (index($raw, "\r\n\r\n"), 4);
        ($pos, $sep) = (index($raw, "\n\n"), 2) if $pos < 0;
        my ($head, $rest);
        if ($pos < 0) {
            $res{error} = 'incomplete response header';
            ($head, $rest) = ($raw, '');
        } else {
            ($head, $rest) = (substr($raw, 0, $pos), substr($raw, $pos + $sep));
        }
        my @lines = split /\r?\n/, $head;
        my $sl = shift(@lines) // '';
        unless ($sl =~ m{^(HTTP/\d+\.\d+)\s+(\d{3})(?:\s+(.*))?$}) {
            $res{error} = "bad status line: $sl";
            $res{body} = $raw;
            return (\%res, '');
        }
        @res{qw(proto status status_line)} = ($1, $2, $sl);
        if ($2 =~ /^1/ && $2 != 101 && !$res{error}) {   # interim response
            $raw = $rest;
            next;
        }
        for my $l (@lines) {
            if ($l =~ /^[ \t]/ && @{ $res{headers} }) {
                (my $cont = $l) =~ s/^\s+/ /;
                $res{headers}[-1][1] .= $cont;
            } elsif ($l =~ /^([^:]+?)\s*:\s*(.*?)\s*$/) {
                push @{ $res{headers} }, [$1, $2];
            }
        }
        for my $h (@{ $res{headers} }) {
            my $k = lc $h->[0];
            $res{header}{$k} = exists $res{header}{$k}
                             ? "$res{header}{$k}, $h->[1]" : $h->[1];
        }
        return (\%res, '') if $res{error};

        my $te = $res{header}{'transfer-encoding'} // '';
        my $cl = $res{header}{'content-length'};
        if (($method // '') eq 'HEAD' || $res{status} =~ /^(?:1\d\d|204|304)$/) {
            return (\%res, $rest);
        }
        if ($te =~ /\bchunked\b/i) {
            my ($body, $left, $err) = _dechunk($rest);
            @res{qw(body error)} = ($body, $err);
            return (\%res, $left);
        }
        if (defined $cl && $cl =~ /^\s*(\d+)/) {
            my $len = $1;
            $res{body} = substr($rest, 0, $len);
            $res{error} = "response body truncated: got " . length($res{body})
                        . " of $len bytes" if length $res{body} < $len;
            return (\%res, length $rest > $len ? substr($rest, $len) : '');
        }
        $res{body} = $rest;     # delimited by connection close
        return (\%res, '');
    }
}

sub _dechunk {
    my ($data) = @_;
    my ($body, $pos) = ('', 0);
    while (1) {
        my $eol = index($data, "\n", $pos);
        return ($body, '', 'truncated chunked body') if $eol < 0;
        my $line = substr($data, $pos, $eol - $pos);
        return ($body, '', "bad chunk size line: $line")
            unless $line =~ /^\s*([0-9a-fA-F]+)/;
        my $size = hex $1;
        $pos = $eol + 1;
        if ($size == 0) {
            while (1) {     # trailers up to the empty line
                my $e = index($data, "\n", $pos);
                return ($body, '', undef) if $e < 0;
                my $l = substr($data, $pos, $e - $pos);
                $pos = $e + 1;
                last if $l =~ /^\r?$/;
            }
            return ($body, substr($data, $pos), undef);
        }
        if (length($data) < $pos + $size) {
            return ($body . substr($data, $pos), '', 'truncated chunk');
        }
        $body .= substr($data, $pos, $size);
        $pos += $size;
        if (substr($data, $pos, 2) eq "\r\n") { $pos += 2 }
        elsif (substr($data, $pos, 1) eq "\n") { $pos += 1 }
        else { return ($body, '', 'missing CRLF after chunk data') }
    }
}

# ------------------------------------------------------------------------
# Project extensions (not in upstream Test::Nginx)

# Starts nginx with the current conf/nginx.conf unless it is running.
sub nginx_start () {
    return 1 if nginx_running();
    my ($ok, $err) = start_nginx();
    warn "nginx_start: $err\n" . tail_file($ErrLogFile, 20) . "\n" unless $ok;
    return $ok;
}

sub nginx_stop ()   { stop_nginx() }
sub nginx_reload () { reload_nginx() }

# Whole error.log, or from a byte offset.
sub nginx_error_log (;$) { read_error_log($_[0]) }

# http_req($method, $path, \%headers, $body, %opts) over a raw socket.
# %opts: timeout, port.  Returns ($status, \%headers, $body, $error) where
# header names are lower-cased and repeated headers are joined by ", ".
sub http_req {
    my ($method, $path, $headers, $body, %opts) = @_;
    my $more = '';
    $more .= "$_: $headers->{$_}\n" for sort keys %{ $headers || {} };
    my $req = "$method $path HTTP/1.1";
    my ($bytes, $meth) = build_http_request($req, $more, 'close');
    # do not strip whitespace from a caller-supplied body
    if (defined $body && length $body) {
        $bytes =~ s/\r\n\r\n\z//;
        $bytes .= 'Content-Length: ' . length($body) . "\r\n"
            unless grep { lc $_ eq 'content-length'
                          || lc $_ eq 'transfer-encoding' } keys %$headers;
        $bytes .= "\r\n$body";
    }
    my $x = http_exchange(chunks => [$bytes], timeout => $opts{timeout},
                          port => $opts{port});
    my ($res) = parse_http_response($x->{raw}, $meth);
    my $err = $x->{error} // $res->{error};
    return ($res->{status}, $res->{header}, $res->{body}, $err);
}

END {
    if ($$ == $ParentPid && $StartedByUs && !$ENV{TEST_NGINX_NO_CLEAN}) {
        local $?;
        stop_nginx() if nginx_running();
    }
}

1;
