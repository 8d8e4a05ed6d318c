package Tent::Peer;

# A second nginx, with the harness's binary and modules, for suites in
# which two Tent servers talk to each other (follow, notify).  Its own
# server root ("<servroot>-peerN"), its own free port on 127.0.0.1, a
# master and workers, daemonized.  Under TEST_NGINX_USE_VALGRIND it runs
# without valgrind; under util/run-asan.sh its ASan and UBSan reports go
# to its own logs/ and stop() turns them into a failed test.
#
#   my $peer = Tent::Peer->start(server_config => 'tent_entity $URL;');
#   my ($app, $cred) = $peer->authorized_app('write_followings');
#   $peer->client->request(POST => '/followings', cred => $cred, ...);
#
# See docs/testing.md.

use strict;
use warnings;

use Cwd ();
use File::Path qw(make_path remove_tree);
use File::Spec;
use IO::Socket::IP;
use POSIX qw(WNOHANG);
use Scalar::Util qw(weaken);
use Time::HiRes qw(sleep time);
use Tent::Client;

my @LIVE;
my $N = 0;

my $DEFAULT_HTTP = 'tent_store $SERVROOT/tent_temp;';
my $DEFAULT_SERVER = <<'CONF';
        tent_entity $URL;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF

sub _base_servroot {
    my $r = File::Spec->rel2abs($ENV{TEST_NGINX_SERVROOT}
                                || File::Spec->catdir('t', 'servroot'));
    $r =~ s{/+$}{};
    # files side by side (TEST_NGINX_RANDOMIZE) that did not load the
    # harness, which makes the server root its own: one of their own too
    # (util/run-asan.sh gives every file the same TEST_NGINX_SERVROOT)
    $r .= "-$$" if $ENV{TEST_NGINX_RANDOMIZE} && !$INC{'Test/Nginx/Util.pm'};
    return $r;
}

sub _running {
    my ($root) = @_;
    open my $fh, '<', "$root/logs/nginx.pid" or return 0;
    my $pid = <$fh> // '';
    return $pid =~ /^\s*(\d+)/ && kill(0, $1) ? 1 : 0;
}

# a free port on 127.0.0.1, never one this process was given before: a
# port a suite took for a server it starts later (free_port()) is free
# until then, and the kernel may offer it again
my %given;
sub free_port {
    for (1 .. 100) {
        my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                    Listen => 1, ReuseAddr => 1)
            or die "Tent::Peer: no free port: $@\n";
        my $p = $s->sockport;
        close $s;
        return $p if !$given{$p}++;
    }
    die "Tent::Peer: no free port not given before\n";
}
sub _free_port { free_port() }

# start(http_config => TEXT, server_config => TEXT, main_config => TEXT,
#       worker_processes => 2, port => N, log_level => 'debug',
#       servroot => DIR)
# In the texts $PORT, $URL (http://127.0.0.1:PORT) and $SERVROOT are
# replaced, and so is every $TEST_NGINX_* set in the environment.
# Defaults: a store in the peer's root; "tent_entity $URL" and an owner
# authorize page for "the owner" (what Tent::Client->authorize expects).
sub start {
    my ($class, %a) = @_;
    # the next root whose nginx is not running (another suite's peer)
    $N++ while !$a{servroot}
               && _running(_base_servroot() . '-peer' . ($N + 1));
    $N++;
    my $self = bless {
        n => $N,
        servroot => $a{servroot} || _base_servroot() . "-peer$N",
        workers => $a{worker_processes} || 2,
        log_level => $a{log_level} || $ENV{TEST_NGINX_LOG_LEVEL} || 'debug',
        owner => $$,
        bin => $ENV{TEST_NGINX_BINARY} || '/usr/sbin/nginx',
    }, $class;
    $self->{$_} = $a{$_} for qw(http_config server_config main_config);
    $self->{http_config} //= $DEFAULT_HTTP;
    $self->{server_config} //= $DEFAULT_SERVER;

    my $sr = $self->{servroot};
    die "Tent::Peer: refusing to wipe $sr\n" if $sr eq '/' || $sr eq '';

    # a free port may be taken between the probe and nginx's bind: retry
    my ($ok, $err);
    for my $try (1 .. ($a{port} ? 1 : 3)) {
        $self->{port} = $a{port} || _free_port();
        $self->{url} = "http://127.0.0.1:$self->{port}";
        remove_tree($sr);
        make_path(map { "$sr/$_" } qw(conf logs html client_body_temp
                                      proxy_temp fastcgi_temp uwsgi_temp
                                      scgi_temp));
        $self->_write_conf;
        ($ok, $err) = $self->_start;
        last if $ok || $self->error_log_text !~ /Address already in use/;
    }
    die "Tent::Peer: $err\n" . $self->_log_tail unless $ok;
    push @LIVE, $self;
    weaken($LIVE[-1]);
    return $self;
}

sub port     { $_[0]{port} }
sub url      { $_[0]{url} }
sub servroot { $_[0]{servroot} }
sub conf     { $_[0]{conf} }

sub error_log_file { "$_[0]{servroot}/logs/error.log" }

sub error_log_text {
    my ($self, $offset) = @_;
    open my $fh, '<', $self->error_log_file or return '';
    seek $fh, $offset, 0 if $offset;
    local $/;
    my $t = <$fh>;
    return $t // '';
}

# wait until the peer's error log matches $re, at most $seconds
sub wait_for_log {
    my ($self, $re, $seconds) = @_;
    my $end = time + ($seconds || 5);
    while (time < $end) {
        return 1 if $self->error_log_text =~ $re;
        sleep 0.1;
    }
    return 0;
}

# a Tent::Client on the peer (Host: localhost, API root /tent)
sub client {
    my ($self, %o) = @_;
    return Tent::Client->new(port => $self->{port}, %o);
}

# an owner app with these scopes on the peer: (app, credentials), as
# Tent::Client::authorized_app
sub authorized_app {
    my ($self, $scope, %o) = @_;
    return $self->client->authorized_app($scope, %o);
}

sub master_pid {
    my ($self) = @_;
    open my $fh, '<', "$self->{servroot}/logs/nginx.pid" or return undef;
    my $pid = <$fh> // '';
    close $fh;
    return $pid =~ /^\s*(\d+)/ && kill(0, $1) ? $1 : undef;
}

# reload(http_config => ..., server_config => ...): rewrite the conf when
# given, HUP, and wait for the new workers.  Returns 1, or 0 when nginx
# refused the new conf (the old one keeps running).
sub reload {
    my ($self, %a) = @_;
    for (qw(http_config server_config main_config worker_processes)) {
        next unless exists $a{$_};
        $self->{$_ eq 'worker_processes' ? 'workers' : $_} = $a{$_};
    }
    $self->_write_conf if %a;
    my $pid = $self->master_pid or die "Tent::Peer: not running\n";
    my $off = -s $self->error_log_file || 0;
    kill 'HUP', $pid or die "Tent::Peer: HUP $pid: $!\n";

    my $end = time + 10;
    my $ok;
    while (time < $end) {
        my $log = $self->error_log_text($off);
        if ($log =~ /\[emerg\]/) { $ok = 0; last }
        # notice level: the new workers; other levels: just wait
        if ($log =~ /start worker process/
            || $self->{log_level} !~ /^(?:debug|info|notice)$/)
        {
            $ok = 1;
            last;
        }
        sleep 0.05;
    }
    sleep($ENV{TEST_NGINX_HUP_SLEEP} // 0.3);   # old workers leave
    return $ok // 0;
}

# ASan reports this peer wrote (logs/asan.*) and UBSan lines in its logs:
# list of [file, text]
sub sanitizer_reports {
    my ($self) = @_;
    my @r;
    for my $f (glob "$self->{servroot}/logs/asan.*") {
        open my $fh, '<', $f or next;
        local $/;
        push @r, [$f, scalar <$fh>];
    }
    # UBSan writes to stderr, which nginx points at the error log
    for my $f (glob "$self->{servroot}/logs/*.log") {
        open my $fh, '<', $f or next;
        my @ub = grep { /: runtime error: / } <$fh>;
        push @r, [$f, join('', @ub)] if @ub;
    }
    return @r;
}

sub stop {
    my ($self) = @_;
    return unless $self->{owner} == $$ && !$self->{stopped};
    $self->{stopped} = 1;
    local ($!, $?);
    my $pid = $self->master_pid;
    if ($pid) {
        # its workers too: a master killed after 10 s leaves them
        # exiting, and the store's lock held, while a suite reads it
        my @workers = grep { /^\d+$/ } map { s/\s+//gr }
                      `ps -o pid= --ppid $pid 2>/dev/null`;
        kill 'QUIT', $pid;
        my $start = time;
        my $term;
        while (kill 0, $pid) {
            my $el = time - $start;
            if ($el > 10) { kill 'KILL', $pid; last }
            kill 'TERM', $pid if $el > 5 && !$term++;
            sleep 0.02;
        }
        while (my @left = grep { _process_runs($_) } @workers) {
            if (time - $start > 30) { kill 'KILL', @left; last }
            sleep 0.02;
        }
    }
    if (my @r = $self->sanitizer_reports) {
        if (defined &Test::More::fail) {
            Test::More::fail("peer $self->{n}: ASan reports");
            Test::More::diag("$_->[0]:\n$_->[1]") for @r;
        } else {
            warn "peer $self->{n}: ASan report $_->[0]:\n$_->[1]\n" for @r;
        }
    }
    return;
}

# a process that still runs (not gone, not a zombie: an orphaned
# worker is reaped by whoever is pid 1, which in a container may not)
sub _process_runs {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/stat" or return 0;
    my $stat = <$fh> // '';
    return $stat =~ /^\d+ \(.*\) ([A-Za-z])/ && $1 ne 'Z';
}

# stop() and start again on the same root, port and configuration: the
# store and logs are kept (a node that was down for a while)
sub restart {
    my ($self) = @_;
    $self->stop;
    $self->{stopped} = 0;
    my ($ok, $err) = $self->_start;
    die "Tent::Peer: restart: $err\n" . $self->_log_tail unless $ok;
    return $self;
}

sub DESTROY { $_[0]->stop }

END { for my $p (@LIVE) { $p->stop if $p } }

# ------------------------------------------------------------------------

sub _subst {
    my ($self, $text) = @_;
    $text //= '';
    $text =~ s/\$PORT\b/$self->{port}/g;
    $text =~ s/\$URL\b/$self->{url}/g;
    $text =~ s/\$SERVROOT\b/$self->{servroot}/g;
    $text =~ s{\$(TEST_NGINX_[A-Za-z0-9_]+)}{
        defined $ENV{$1} ? $ENV{$1}
                         : die "Tent::Peer: \$$1 is not set\n"
    }ge;
    return $text;
}

sub _write_conf {
    my ($self) = @_;
    my $sr = $self->{servroot};
    my $out = "worker_processes  $self->{workers};\n"
            . "daemon on;\nmaster_process on;\n"
            . "error_log $sr/logs/error.log $self->{log_level};\n"
            . "pid $sr/logs/nginx.pid;\n";
    for my $var (qw(LD_PRELOAD LD_LIBRARY_PATH ASAN_OPTIONS LSAN_OPTIONS
                    UBSAN_OPTIONS))
    {
        $out .= "env $var;\n" if defined $ENV{$var};
    }
    if (my $user = $ENV{TEST_NGINX_WORKER_USER}) {
        $out .= "user $user;\n";
    } elsif ($> == 0) {
        $out .= "user root;\n";
    }
    for my $mod (split ' ', $ENV{TEST_NGINX_LOAD_MODULES} || '') {
        $out .= 'load_module ' . File::Spec->rel2abs($mod) . ";\n";
    }
    $out .= "\n" . $self->_subst($self->{main_config}) . "\n"
          . "events {\n    worker_connections  256;\n}\n\n"
          . "http {\n"
          . "    access_log $sr/logs/access.log;\n";
    for my $t (qw(client_body proxy fastcgi uwsgi scgi)) {
        $out .= "    ${t}_temp_path $sr/${t}_temp;\n";
    }
    $out .= "    default_type text/plain;\n\n"
          . $self->_subst($self->{http_config}) . "\n\n"
          . "    server {\n"
          . "        listen 127.0.0.1:$self->{port};\n"
          . "        server_name localhost;\n"
          . "        client_max_body_size 30M;\n\n"
          . $self->_subst($self->{server_config}) . "\n"
          . "    }\n}\n";
    $self->{conf} = $out;
    open my $fh, '>', "$sr/conf/nginx.conf" or die "Tent::Peer: conf: $!\n";
    print {$fh} $out;
    close $fh or die "Tent::Peer: conf: $!\n";
}

sub _log_tail {
    my ($self) = @_;
    my @l = split /\n/, $self->error_log_text
                        . _slurp("$self->{servroot}/logs/stderr.log");
    splice @l, 0, @l - 20 if @l > 20;
    return join "\n", @l;
}

sub _slurp {
    open my $fh, '<', $_[0] or return '';
    local $/;
    return scalar <$fh> // '';
}

sub _listening {
    my ($self) = @_;
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                PeerPort => $self->{port}, Timeout => 1);
    return $s ? 1 : 0;
}

sub _start {
    my ($self) = @_;
    my $sr = $self->{servroot};
    my @cmd = ($self->{bin}, '-p', "$sr/", '-c', "$sr/conf/nginx.conf");
    my $v = `'$self->{bin}' -v 2>&1` // '';
    my @ver = ($v =~ m{nginx/(\d+)\.(\d+)\.(\d+)}) ? ($1, $2, $3) : (0, 0, 0);
    push @cmd, '-e', "$sr/logs/error.log"
        if $ver[0] * 1e6 + $ver[1] * 1e3 + $ver[2] >= 1019005;

    my $pid = fork;
    die "Tent::Peer: fork: $!\n" unless defined $pid;
    if ($pid == 0) {
        # under util/run-asan.sh: reports to this peer's logs
        $ENV{TENT_ASAN_LOG} = "$sr/logs/asan";
        open STDIN, '<', '/dev/null';
        open STDOUT, '>>', "$sr/logs/stderr.log";
        open STDERR, '>&', \*STDOUT;
        { no warnings 'exec'; exec { $cmd[0] } @cmd; }
        print STDERR "cannot exec $cmd[0]: $!\n";
        POSIX::_exit(127);
    }
    my $end = time + 30;
    my $r;
    sleep 0.02 while ($r = waitpid($pid, WNOHANG)) == 0 && time < $end;
    if ($r == 0) {
        kill 'KILL', $pid;
        waitpid($pid, 0);
        return (0, 'nginx did not daemonize within 30s');
    }
    return (0, "nginx failed to start (status $?)") if $?;
    $end = time + 10;
    while (time < $end) {
        return (1) if $self->master_pid && $self->_listening;
        sleep 0.02;
    }
    return (0, "nginx is not listening on 127.0.0.1:$self->{port}");
}

1;
