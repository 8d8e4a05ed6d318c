package Tent::Receiver;

# A scripted HTTP/1.1 server on loopback for the federation suites: it
# plays a remote Tent entity (discovery, profile, follow handshake,
# notifications) and, by rules the suite changes while it runs, a broken
# one (hangs, resets, huge or garbage answers, slow answers).  Every
# request is recorded.  Core Perl only.
#
#   my $rx = Tent::Receiver->start;            # a free port on 127.0.0.1
#   ... nginx talks to $rx->url ...
#   my @posts = $rx->requests(method => 'POST', path => qr{^/tent/notif});
#   $rx->rules([{ method => 'GET', path => '^/tent/profile$',
#                 action => 'hang' }]);
#
# See docs/testing.md for the rules and actions.

use strict;
use warnings;

use Fcntl qw(:flock O_WRONLY O_APPEND O_CREAT);
use File::Temp qw(tempdir);
use IO::Select;
use IO::Socket::IP;
use JSON::PP;
use POSIX qw(WNOHANG);
use Scalar::Util qw(weaken);
use Socket qw(SOL_SOCKET SO_LINGER);
use Time::HiRes qw(sleep time);

my $JSON = JSON::PP->new->utf8->canonical;
my $TENT_CT = 'application/vnd.tent.v0+json';
my $CORE = 'https://tent.io/types/info/core/v0.1.0';
my $REL = 'https://tent.io/rels/profile';

our $MAX_HEADER = 65536;
our $MAX_BODY = 32 * 1024 * 1024;
our $READ_TIMEOUT = 10;      # a request must arrive within this
our $HANG_MAX = 300;         # a hanging connection gives up after this

my @LIVE;    # weak refs, for END

# start(port => 0, host => '127.0.0.1' | '::1', entity => URL,
#       api_root => '/tent', profile => {...}, rules => [...],
#       keepalive => 0 | 1)
# keepalive: answers without "Connection: close" and reads the next
# request on the same connection (each request records conn and nreq)
sub start {
    my ($class, %a) = @_;
    my $host = $a{host} || '127.0.0.1';
    die "Tent::Receiver: loopback only, not $host\n"
        unless $host =~ /^127\.\d+\.\d+\.\d+$/ || $host eq '::1';

    my $lsock = IO::Socket::IP->new(
        LocalHost => $host, LocalPort => $a{port} || 0, Listen => 64,
        ReuseAddr => 1, Proto => 'tcp',
    ) or die "Tent::Receiver: cannot listen on $host:"
             . ($a{port} || 0) . ": $@\n";

    my $port = $lsock->sockport;
    my $hostport = $host =~ /:/ ? "[$host]:$port" : "$host:$port";
    my $url = "http://$hostport";
    my $dir = tempdir('tent-rx-XXXXXX', TMPDIR => 1, CLEANUP => 1);

    my $self = bless {
        port => $port, host => $host, url => $url, dir => $dir,
        owner => $$, gen => 0,
        entity => $a{entity} || $url,
        api_root => defined $a{api_root} ? $a{api_root} : '/tent',
    }, $class;
    $self->{profile} = $a{profile} || {
        $CORE => { entity => $self->{entity}, licenses => [],
                   servers => [ $url . $self->{api_root} ] } };

    _write_atomic("$dir/config.json", $JSON->encode({
        entity => $self->{entity}, api_root => $self->{api_root},
        profile => $self->{profile}, url => $url,
        keepalive => $a{keepalive} ? 1 : 0 }));
    $self->rules($a{rules} || []);
    _write_atomic("$dir/requests.jsonl", '');
    _write_atomic("$dir/followers.jsonl", '');
    _write_atomic("$dir/connections.log", '');

    my $pid = fork;
    die "Tent::Receiver: fork: $!\n" unless defined $pid;
    if ($pid == 0) {
        eval { _serve($lsock, $dir, $self->{owner}) };
        POSIX::_exit(0);
    }
    close $lsock;
    $self->{pid} = $pid;
    push @LIVE, $self;
    weaken($LIVE[-1]);
    return $self;
}

sub port   { $_[0]{port} }
sub url    { $_[0]{url} }
sub entity { $_[0]{entity} }
sub dir    { $_[0]{dir} }
sub pid    { $_[0]{pid} }

# rules([ {method => 'POST', path => 'regex' | qr//, query => 'regex',
#          times => N, action => ...}, ... ]); no argument: the current
# rules.  Takes effect from the next request.
sub rules {
    my ($self, $rules) = @_;
    return $self->{rules} unless $rules;
    my @r = map {
        my %r = %$_;
        for my $k (qw(path query)) {
            $r{$k} = "$r{$k}" if ref $r{$k} eq 'Regexp';
        }
        $r{action} = { %{ $r{action} } } if ref $r{action} eq 'HASH';
        $r{action}{body} = $JSON->encode($r{action}{body})
            if ref $r{action} eq 'HASH' && ref $r{action}{body};
        \%r;
    } @$rules;
    $self->{rules} = $rules;
    $self->{gen}++;
    _write_atomic("$self->{dir}/rules.json",
                  $JSON->encode({ gen => $self->{gen}, rules => \@r }));
    return $rules;
}

# requests(method => 'POST', path => qr//): the recorded requests, oldest
# first, each { method, target, path, query, proto, headers => {lc name =>
# value}, body, rule (index of the rule that matched, or undef), time }
sub requests {
    my ($self, %f) = @_;
    my @all = map { $JSON->decode($_) } _lines("$self->{dir}/requests.jsonl");
    return grep {
        (!defined $f{method} || uc $_->{method} eq uc $f{method})
        && (!defined $f{path} || $_->{path} =~ $f{path})
    } @all;
}

# wait_requests(count => 1, timeout => 5, method => ..., path => ...):
# polls until that many matching requests were recorded; returns them
# (fewer when the time ran out).
sub wait_requests {
    my ($self, %f) = @_;
    my $count = delete $f{count} || 1;
    my $end = time + (delete $f{timeout} || 5);
    my @r;
    while (1) {
        @r = $self->requests(%f);
        return @r if @r >= $count || time > $end;
        sleep 0.05;
    }
}

# posts_of(ID, path => qr//): the POSTs it was sent whose JSON body is
# the post ID (its notifications), oldest first
sub posts_of {
    my ($self, $id, %f) = @_;
    return grep { (eval { $JSON->decode($_->{body})->{id} } // '') eq $id }
           $self->requests(method => 'POST', %f);
}

# the same, polled for up to 15 s until one came (none then: none)
sub wait_posts_of {
    my ($self, $id, %f) = @_;
    my $end = time + 15;
    my @got;
    while (time < $end) {
        last if @got = $self->posts_of($id, %f);
        sleep 0.1;
    }
    return @got;
}

sub clear {
    my ($self) = @_;
    _locked_append("$self->{dir}/requests.jsonl", undef, 1);
    _locked_append("$self->{dir}/connections.log", undef, 1);
    return;
}

# how many connections were accepted (since start or clear), whether or
# not a request came on them: 0 proves nothing connected
sub connections {
    my ($self) = @_;
    return scalar _lines("$self->{dir}/connections.log");
}

# the followers the default POST /followers created, each with the
# credentials it handed out (to check the MAC of later notifications)
sub followers {
    my ($self) = @_;
    return map { $JSON->decode($_) } _lines("$self->{dir}/followers.jsonl");
}

sub stop {
    my ($self) = @_;
    return unless $self->{pid} && $self->{owner} == $$;
    my $pid = delete $self->{pid};
    local ($!, $?);
    # the server and its per-connection children share a process group
    kill 'TERM', -$pid or kill 'TERM', $pid;
    my $end = time + 5;
    while (waitpid($pid, WNOHANG) == 0) {
        if (time > $end) { kill 'KILL', -$pid; kill 'KILL', $pid; }
        sleep 0.02;
    }
    kill 'KILL', -$pid;     # connections still hanging
    return;
}

sub DESTROY { $_[0]->stop }

END { for my $rx (@LIVE) { $rx->stop if $rx } }

# ------------------------------------------------------------------------
# files shared with the server process

sub _write_atomic {
    my ($path, $data) = @_;
    open my $fh, '>', "$path.tmp$$" or die "write $path: $!\n";
    binmode $fh;
    print {$fh} $data;
    close $fh or die "write $path: $!\n";
    rename "$path.tmp$$", $path or die "rename $path: $!\n";
}

sub _lines {
    my ($path) = @_;
    open my $fh, '<', $path or return ();
    flock $fh, LOCK_SH;
    binmode $fh;
    my @l = grep { length } map { chomp; $_ } <$fh>;
    close $fh;
    return @l;
}

sub _locked_append {
    my ($path, $line, $truncate) = @_;
    sysopen my $fh, $path, O_WRONLY | O_APPEND | O_CREAT or return;
    flock $fh, LOCK_EX;
    truncate $fh, 0 if $truncate;
    syswrite $fh, "$line\n" if defined $line;
    close $fh;
}

sub _read_json {
    my ($path) = @_;
    open my $fh, '<', $path or return undef;
    binmode $fh;
    local $/;
    my $t = <$fh>;
    return eval { $JSON->decode($t) };
}

# ------------------------------------------------------------------------
# the server process

sub _serve {
    my ($lsock, $dir, $owner) = @_;
    setpgrp(0, 0);
    $SIG{CHLD} = 'IGNORE';     # connection children reap themselves
    $SIG{PIPE} = 'IGNORE';
    $SIG{TERM} = sub { POSIX::_exit(0) };
    my $sel = IO::Select->new($lsock);
    my $serial = 0;

    while (1) {
        # the suite died without stopping us: go too
        POSIX::_exit(0) if getppid() != $owner;
        next unless $sel->can_read(0.5);
        my $c = $lsock->accept or next;
        $serial++;
        # every accepted connection, before anything is read from it
        _locked_append("$dir/connections.log", $serial);
        my $pid = fork;
        if (!defined $pid) { close $c; next }
        if ($pid == 0) {
            close $lsock;
            $SIG{TERM} = 'DEFAULT';
            eval { _connection($c, $dir, $serial) };
            POSIX::_exit(0);
        }
        close $c;
    }
}

our $KEEPALIVE = 0;

# one connection: one request, or with keepalive as many as come
sub _connection {
    my ($c, $dir, $serial) = @_;
    binmode $c;
    my $cfg = _read_json("$dir/config.json") || {};
    local $KEEPALIVE = $cfg->{keepalive};
    for (my $n = 1; ; $n++) {
        _request($c, $dir, $serial, $n) or last;
        last unless $KEEPALIVE;
    }
    return unless defined fileno $c;     # 'reset' closed it already
    shutdown $c, 1;
    close $c;
}

# 1: the connection may carry another request
sub _request {
    my ($c, $dir, $serial, $nreq) = @_;
    my $req = _read_request($c) or return 0;
    $req->{conn} = $serial;
    $req->{nreq} = $nreq;

    my $rules = _read_json("$dir/rules.json") || { rules => [] };
    my ($action, $idx) = ('default', undef);
    my $i = 0;
    for my $r (@{ $rules->{rules} }) {
        if (_rule_matches($r, $req)
            && _take_hit($dir, $rules->{gen}, $i, $r->{times}))
        {
            ($action, $idx) = ($r->{action} // 'default', $i);
            last;
        }
        $i++;
    }
    $req->{rule} = $idx;
    _locked_append("$dir/requests.jsonl", $JSON->encode($req));

    my $cfg = _read_json("$dir/config.json");
    my ($name, $opt) = ref $action eq 'HASH'
        ? (($action->{do} // (exists $action->{status} ? 'respond'
                                                       : 'default')), $action)
        : ($action, {});
    ($name, $opt) = ('big', { %$opt, chunked => 1 })
        if $name eq 'big_chunked';

    sleep $opt->{delay} if $opt->{delay};

    my $again = $KEEPALIVE
                && ($req->{headers}{connection} // '') !~ /close/i;

    if ($name eq 'respond') {
        my %h = %{ $opt->{headers} || {} };
        $again = 0 if grep { lc $_ eq 'connection' && $h{$_} =~ /close/i }
                      keys %h;
        _send($c, _canned($opt, $req->{method} eq 'HEAD'));
        # bytes after the answer, later: what a kept connection must not
        # read as the next answer
        if (defined $opt->{then}) {
            sleep $opt->{then_delay} if $opt->{then_delay};
            _write_all($c, $opt->{then});
        }
    } elsif ($name eq 'default') {
        _send($c, _default($req, $cfg, $dir));
    } elsif ($name eq 'echo_challenge') {
        _send($c, _echo_challenge($req, 1));
    } elsif ($name eq 'hang') {
        my $end = time + $HANG_MAX;
        my $ppid = getppid();
        # keep the socket open, without reading, until stopped
        sleep 0.2 while time < $end && getppid() == $ppid;
    } elsif ($name eq 'reset') {
        setsockopt($c, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0));
        close $c;
        return 0;
    } elsif ($name eq 'drop') {
        return 0;
    } elsif ($name eq 'big') {
        _big($c, $opt);
    } elsif ($name eq 'garbage') {
        _write_all($c, $opt->{bytes} // "\x00\xffSSH-2.0-garbage \x01\x02"
                                       . "\r\n\r\n<<not http>>\n");
    } elsif ($name eq 'slow') {
        my $bytes = exists $opt->{status} ? _canned($opt)
                                          : _default($req, $cfg, $dir);
        my $gap = $opt->{interval} || 0.1;
        for my $i (0 .. length($bytes) - 1) {
            _write_all($c, substr($bytes, $i, 1)) or last;
            sleep $gap;
        }
    } else {
        _send($c, _response(500, { 'Content-Type' => 'text/plain' },
                            "Tent::Receiver: unknown action $name\n"));
    }
    return $again && ($name eq 'respond' || $name eq 'default'
                      || $name eq 'echo_challenge');
}

sub _rule_matches {
    my ($r, $req) = @_;
    return 0 if defined $r->{method} && uc $r->{method} ne $req->{method};
    return 0 if defined $r->{path} && $req->{path} !~ /$r->{path}/;
    return 0 if defined $r->{query} && $req->{query} !~ /$r->{query}/;
    return 0 if $r->{reused} && $req->{nreq} < 2;
    return 1;
}

# a rule with "times" applies to its first N matching requests only
sub _take_hit {
    my ($dir, $gen, $i, $times) = @_;
    return 1 unless defined $times;
    my $path = "$dir/hits-$gen-$i";
    sysopen my $fh, $path, O_WRONLY | O_APPEND | O_CREAT or return 1;
    flock $fh, LOCK_EX;
    my $n = -s $path;
    my $ok = $n < $times;
    syswrite $fh, '.' if $ok;
    close $fh;
    return $ok;
}

sub _read_some {
    my ($c, $buf, $end) = @_;
    my $sel = IO::Select->new($c);
    my $left = $end - time;
    return 0 if $left <= 0 || !$sel->can_read($left);
    my $n = sysread $c, $$buf, 65536, length $$buf;
    return $n ? $n : 0;
}

sub _read_request {
    my ($c) = @_;
    my $end = time + $READ_TIMEOUT;
    my $buf = '';
    my $pos;
    while (($pos = index($buf, "\r\n\r\n")) < 0) {
        return undef if length $buf > $MAX_HEADER;
        _read_some($c, \$buf, $end) or return undef;
    }
    my $head = substr($buf, 0, $pos);
    my $rest = substr($buf, $pos + 4);
    my @lines = split /\r\n/, $head;
    my ($method, $target, $proto) = split ' ', shift(@lines) // '';
    return undef unless defined $proto && $proto =~ m{^HTTP/1\.[01]$};

    my %h;
    for (@lines) {
        my ($k, $v) = /^([^:\s]+)\s*:\s*(.*?)\s*$/ or next;
        $k = lc $k;
        $h{$k} = exists $h{$k} ? "$h{$k}, $v" : $v;
    }
    my ($path, $query) = split /\?/, $target, 2;

    my $body = '';
    if (($h{'transfer-encoding'} // '') =~ /chunked/i) {
        while (1) {
            my $eol;
            while (($eol = index($rest, "\r\n")) < 0) {
                _read_some($c, \$rest, $end) or return undef;
            }
            my ($size) = substr($rest, 0, $eol) =~ /^([0-9a-fA-F]+)/
                or return undef;
            $size = hex $size;
            return undef if length($body) + $size > $MAX_BODY;
            $rest = substr($rest, $eol + 2);
            if ($size == 0) {
                # trailers, up to the empty line
                while (1) {
                    while (($eol = index($rest, "\r\n")) < 0) {
                        _read_some($c, \$rest, $end) or last;
                    }
                    last if $eol <= 0;
                    $rest = substr($rest, $eol + 2);
                }
                last;
            }
            while (length $rest < $size + 2) {
                _read_some($c, \$rest, $end) or return undef;
            }
            $body .= substr($rest, 0, $size);
            $rest = substr($rest, $size + 2);
        }
    } elsif (defined $h{'content-length'}) {
        my ($len) = $h{'content-length'} =~ /^(\d+)$/ or return undef;
        return undef if $len > $MAX_BODY;
        while (length $rest < $len) {
            _read_some($c, \$rest, $end) or return undef;
        }
        $body = substr($rest, 0, $len);
    }

    return { method => uc $method, target => $target, path => $path,
             query => $query // '', proto => $proto, headers => \%h,
             body => $body, time => time };
}

sub _query_param {
    my ($query, $name) = @_;
    for my $kv (split /[&;]/, $query // '') {
        my ($k, $v) = split /=/, $kv, 2;
        next unless defined $k && $k eq $name;
        $v //= '';
        $v =~ tr/+/ /;
        $v =~ s/%([0-9a-fA-F]{2})/chr hex $1/ge;
        return $v;
    }
    return undef;
}

sub _response {
    my ($status, $headers, $body, $head_only) = @_;
    my %h = (%{ $headers || {} });
    $body //= '';
    $h{'Content-Length'} = length $body
        unless grep { lc $_ eq 'content-length' || lc $_ eq 'transfer-encoding'
                    } keys %h;
    $h{Connection} = 'close'
        unless $KEEPALIVE || grep { lc $_ eq 'connection' } keys %h;
    my $out = "HTTP/1.1 $status " . _reason($status) . "\r\n";
    $out .= "$_: $h{$_}\r\n" for sort keys %h;
    return "$out\r\n" . ($head_only ? '' : $body);
}

sub _reason {
    my %r = (200 => 'OK', 201 => 'Created', 204 => 'No Content',
             301 => 'Moved Permanently', 302 => 'Found', 400 => 'Bad Request',
             401 => 'Unauthorized', 403 => 'Forbidden', 404 => 'Not Found',
             409 => 'Conflict', 422 => 'Unprocessable Entity',
             500 => 'Internal Server Error', 502 => 'Bad Gateway',
             503 => 'Service Unavailable', 504 => 'Gateway Timeout');
    return $r{$_[0]} || 'Status';
}

# { status => 201, headers => {...}, body => '...' }
sub _canned {
    my ($o, $head_only) = @_;
    my %h = %{ $o->{headers} || {} };
    $h{'Content-Type'} = 'text/plain'
        unless grep { lc $_ eq 'content-type' } keys %h;
    return _response($o->{status} || 200, \%h, $o->{body}, $head_only);
}

sub _echo_challenge {
    my ($req, $always) = @_;
    my $ch = _query_param($req->{query}, 'challenge');
    return _response(404, { 'Content-Type' => 'text/plain' }, "no challenge\n")
        unless defined $ch || $always;
    return _response(200, { 'Content-Type' => 'text/plain' }, $ch // '');
}

sub _rand_id {
    my ($bytes) = @_;
    return join '', map { sprintf '%02x', int rand 256 } 1 .. $bytes;
}

# a minimal Tent entity at $cfg->{url}
sub _default {
    my ($req, $cfg, $dir) = @_;
    my ($m, $p) = ($req->{method}, $req->{path});
    my $root = $cfg->{api_root};
    my $link = "<$cfg->{url}$root/profile>; rel=\"$REL\"";
    my %json = ('Content-Type' => $TENT_CT, Link => $link);

    if (($m eq 'GET' || $m eq 'HEAD') && $p eq '/') {
        return _response(200, { 'Content-Type' => 'text/plain', Link => $link },
                         'Tent!', $m eq 'HEAD');
    }
    if (($m eq 'GET' || $m eq 'HEAD') && $p eq "$root/profile") {
        return _response(200, \%json, $JSON->encode($cfg->{profile}),
                         $m eq 'HEAD');
    }
    if ($m eq 'GET' && $p =~ m{^\Q$root\E/notifications/.}) {
        return _echo_challenge($req, 0);
    }
    if ($m eq 'POST' && $p eq "$root/followers") {
        my $in = eval { $JSON->decode($req->{body}) };
        return _response(400, \%json, '{"error":"Request body required"}')
            unless ref $in eq 'HASH';
        my $f = {
            id => _rand_id(11), entity => $in->{entity},
            created_at => int time,
            permissions => { public => JSON::PP::true },
            mac_key_id => 's:' . _rand_id(4), mac_key => _rand_id(16),
            mac_algorithm => 'hmac-sha-256',
            types => $in->{types} || ['all'],
            licenses => $in->{licenses} || [],
            notification_path => $in->{notification_path},
        };
        _locked_append("$dir/followers.jsonl", $JSON->encode($f));
        return _response(200, \%json, $JSON->encode($f));
    }
    if ($m eq 'POST' && ($p =~ m{^\Q$root\E/notifications/.}
                         || $p eq "$root/posts"))
    {
        return _response(200, \%json, '{}');
    }
    if ($m eq 'DELETE' && $p =~ m{^\Q$root\E/followers/[^/]+$}) {
        return _response(200, { Link => $link }, '');
    }
    return _response(404, \%json, '{"error":"Not Found"}');
}

sub _write_all {
    my ($c, $data) = @_;
    my $off = 0;
    while ($off < length $data) {
        my $n = syswrite $c, $data, length($data) - $off, $off;
        unless (defined $n) {
            next if $!{EINTR} || $!{EAGAIN};
            return 0;
        }
        $off += $n;
    }
    return 1;
}

sub _send {
    my ($c, $bytes) = @_;
    _write_all($c, $bytes);
}

# 200 with a body of "size" bytes (10 MB), Content-Length or chunked
sub _big {
    my ($c, $o) = @_;
    my $size = $o->{size} || 10 * 1024 * 1024;
    my $block = 'x' x 65536;
    my %h = ('Content-Type' => $o->{content_type} || $TENT_CT);
    if ($o->{chunked}) {
        $h{'Transfer-Encoding'} = 'chunked';
    } else {
        $h{'Content-Length'} = $size;
    }
    _write_all($c, _response(200, \%h, '', 1)) or return;
    my $left = $size;
    while ($left > 0) {
        my $n = $left < length $block ? $left : length $block;
        my $data = substr($block, 0, $n);
        $data = sprintf("%x\r\n", $n) . $data . "\r\n" if $o->{chunked};
        _write_all($c, $data) or return;
        $left -= $n;
    }
    _write_all($c, "0\r\n\r\n") if $o->{chunked};
}

1;
