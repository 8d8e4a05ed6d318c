package Test::Nginx::Socket;

# A small, from-scratch subset of OpenResty's Test::Nginx::Socket (same test
# file format, same function names), built on Test::Base.  See the POD at the
# end of this file.
#
# NOTE: "use Test::Base -Base" enables Spiffy's source filter: a line of the
# form "sub name {" gets "my $self = shift;" injected.  Every sub below is
# therefore written as "sub name () {", which the filter turns into a plain
# sub without prototype and without $self.

use Test::Base -Base;

our $VERSION = '0.01';

use List::Util qw(shuffle);
use Time::HiRes qw(sleep time);
use File::Path qw(make_path remove_tree);
use Test::LongString ();
use Test::Nginx::Util qw(:DEFAULT
    expand_env alloc_rand_port build_nginx_conf write_conf write_user_files
    wipe_servroot start_nginx stop_nginx reload_nginx error_log_size
    read_error_log read_file tail_file http_exchange build_http_request
    parse_http_response sanitizer_reports nginx_version use_hup
    use_valgrind default_timeout
);

our @EXPORT = qw(
    run_tests repeat_each no_shuffle workers master_on master_off
    master_process_enabled log_level no_long_string worker_connections
    env_to_nginx add_block_preprocessor add_response_body_check
    server_port server_root html_dir bail_out no_root_location
    check_accum_error_log

    nginx_start nginx_stop nginx_reload nginx_master_pid nginx_running
    nginx_error_log http_req
);

our $NoLongString = 0;
our @BlockPreprocessors;
our @ResponseBodyChecks;

# upstream scripts sometimes read this one directly
*RepeatEach = \$Test::Nginx::Util::RepeatEach;

# sections whose text gets $TEST_NGINX_* expansion
my @ExpandedSections = qw(
    main_config http_config config post_main_config server_name log_level
    user_files request pipelined_requests raw_request more_headers
    error_code error_code_like response_body response_body_like
    response_body_unlike response_headers response_headers_like
    error_log no_error_log grep_error_log grep_error_log_out
    shutdown_error_log no_shutdown_error_log
);

sub no_long_string () { $NoLongString = 1 }
sub add_block_preprocessor () { push @BlockPreprocessors, @_ }
sub add_response_body_check () { push @ResponseBodyChecks, @_ }
sub bail_out () { Test::More::BAIL_OUT(join '', @_) }

# ------------------------------------------------------------------------
# Main loop

sub run_tests () {
    Test::More::plan('no_plan') unless Test::Builder->new->has_plan;

    my @blocks = blocks();
    unless ($Test::Nginx::Util::NoShuffle) {
        my $seed = $ENV{TEST_NGINX_SHUFFLE_SEED} // (int(time * 1000) ^ $$)
                                                   % 1_000_000;
        srand $seed;
        @blocks = shuffle @blocks;
        Test::More::note("blocks shuffled, seed $seed "
                         . '(TEST_NGINX_SHUFFLE_SEED to replay)');
    }

    # sanitizer logs left over from an earlier run are not ours to report
    sanitizer_reports() unless nginx_running();

    for my $block (@blocks) {
        $_->($block) for @BlockPreprocessors;
        for my $rep (0 .. $Test::Nginx::Util::RepeatEach - 1) {
            run_block($block, $rep);
        }
    }

    unless ($ENV{TEST_NGINX_NO_CLEAN}) {
        stop_nginx();
        report_sanitizers('final nginx shutdown');
    }
}

sub run_block () {
    my ($block, $rep) = @_;
    my $name = $block->name;

    if (my ($n, $why) = skip_count($block)) {
        SKIP: { skip("$name - $why", $n) }
        return;
    }

    set_rand_ports($block);
    my %s;
    for my $sec (@ExpandedSections) {
        my $v = $block->$sec;
        next unless defined $v;
        $s{$sec} = eval { expand_env($v, "$name, --- $sec") };
        bail_out($@) if $@;
    }

    my $conf = build_nginx_conf(map { ($_ => $s{$_}) }
        qw(main_config http_config config post_main_config server_name
           log_level));

    return run_must_die($block, \%s, $conf) if defined $block->must_die;

    my $offset = prepare_nginx($block, \%s, $conf);
    return unless defined $offset;

    if (defined(my $init = $block->init)) {
        unless (eval "package main; no strict; $init; 1") {
            fail("$name - --- init code failed");
            diag($@);
        }
    }

    run_requests($block, \%s, $rep);

    my $wait = $block->wait;
    sleep $wait if $wait;

    my $log = read_error_log($offset);
    check_log_patterns($name, $log, $s{error_log}, 1, 'error.log');
    check_log_patterns($name, $log, $s{no_error_log}, 0, 'error.log');
    check_grep_error_log($block, \%s, $log, $rep);

    if (defined $s{shutdown_error_log} || defined $s{no_shutdown_error_log}) {
        stop_nginx();
        $log = read_error_log($offset);
        check_log_patterns($name, $log, $s{shutdown_error_log}, 1,
                           'error.log after shutdown');
        check_log_patterns($name, $log, $s{no_shutdown_error_log}, 0,
                           'error.log after shutdown');
    }

    report_sanitizers($name);
}

# Makes sure nginx runs with $conf (restart or HUP as needed).  Returns the
# error.log offset where this block's messages start, or undef on failure.
sub prepare_nginx () {
    my ($block, $s, $conf) = @_;
    my $name = $block->name;
    my $running = nginx_running();
    my $cur = $Test::Nginx::Util::RunningConf;

    if ($running && defined $cur && $conf eq $cur) {
        write_user_files($s->{user_files});
        return error_log_size();
    }

    if ($running && defined $cur && use_hup()) {
        my $offset = error_log_size();
        write_conf($conf);
        remove_tree($Test::Nginx::Util::HtmlDir);
        make_path($Test::Nginx::Util::HtmlDir);
        write_user_files($s->{user_files});
        reload_nginx();
        my $new = read_error_log($offset);
        if ($new =~ /\[(?:emerg|alert)\]/) {
            fail("$name - nginx reload (HUP) failed");
            diag($new);
            $Test::Nginx::Util::RunningConf = undef;
            return undef;
        }
        $Test::Nginx::Util::RunningConf = $conf;
        return $offset;
    }

    stop_nginx();
    report_sanitizers("$name (previous nginx instance)");
    wipe_servroot();
    write_conf($conf);
    write_user_files($s->{user_files});
    my ($ok, $err) = start_nginx();
    unless ($ok) {
        fail("$name - nginx started");
        diag(startup_diag($err));
        report_sanitizers($name);
        return undef;
    }
    $Test::Nginx::Util::RunningConf = $conf;
    return 0;
}

sub startup_diag () {
    my ($err) = @_;
    my $msg = "$err\n";
    my $stderr = read_file($Test::Nginx::Util::StderrFile);
    $msg .= "--- nginx stderr:\n$stderr" if $stderr =~ /\S/;
    $msg .= "--- tail of error.log:\n"
          . tail_file($Test::Nginx::Util::ErrLogFile, 30) . "\n";
    return $msg;
}

sub run_must_die () {
    my ($block, $s, $conf) = @_;
    my $name = $block->name;
    stop_nginx();
    report_sanitizers("$name (previous nginx instance)");
    wipe_servroot();
    write_conf($conf);
    write_user_files($s->{user_files});
    my ($ok, $err) = start_nginx();
    if ($ok) {
        fail("$name - nginx should have failed to start");
        stop_nginx();
    } else {
        pass("$name - nginx died ($err)");
    }
    $Test::Nginx::Util::RunningConf = undef;
    my $log = read_file($Test::Nginx::Util::StderrFile) . read_error_log(0);
    check_log_patterns($name, $log, $s->{error_log}, 1, 'error output');
    check_log_patterns($name, $log, $s->{no_error_log}, 0, 'error output');
    report_sanitizers($name);
}

sub report_sanitizers () {
    my ($what) = @_;
    for my $r (sanitizer_reports()) {
        fail("$what - no memory errors reported in $r->[0]");
        diag($r->[1]);
    }
}

sub skip_count () {
    my ($block) = @_;
    if (defined(my $spec = $block->skip_nginx)) {
        my ($n, $op, $ver) =
            $spec =~ /^\s*(\d+)\s*:\s*(<=|>=|==|!=|<|>)\s*(\d[\d.]*)\s*$/
            or bail_out($block->name . " - bad --- skip_nginx: $spec");
        my $cur  = Test::Nginx::Util::version_num(nginx_version());
        my $want = Test::Nginx::Util::version_num($ver);
        my %cmp = ('<' => $cur < $want, '<=' => $cur <= $want,
                   '>' => $cur > $want, '>=' => $cur >= $want,
                   '==' => $cur == $want, '!=' => $cur != $want);
        return ($n, 'nginx version ' . nginx_version() . " $op $ver")
            if $cmp{$op};
    }
    if (defined(my $spec = $block->skip_eval)) {
        my ($n, $code) = $spec =~ /^\s*(\d+)\s*:\s*(.*)$/s
            or bail_out($block->name . " - bad --- skip_eval: $spec");
        my $r = eval "package main; $code";
        bail_out($block->name . " - --- skip_eval failed: $@") if $@;
        return ($n, "skip_eval: $code") if $r;
    }
    return;
}

# $TEST_NGINX_RAND_PORT_<n>: one free port per <n>, chosen once per block.
sub set_rand_ports () {
    my ($block) = @_;
    my $ports = $block->{_rand_ports};
    unless ($ports) {
        my $text = join "\n", map { flat_text($_) }
                   map { @{ $block->{$_} } }
                   grep { !/^_/ && ref $block->{$_} eq 'ARRAY' } keys %$block;
        my %p;
        for my $n ($text =~ /\bTEST_NGINX_RAND_PORT_(\d+)/g) {
            next if exists $p{$n};
            my $port = alloc_rand_port(values %p);
            $p{$n} = $port;
        }
        $ports = $block->{_rand_ports} = \%p;
    }
    $ENV{"TEST_NGINX_RAND_PORT_$_"} = $ports->{$_} for keys %$ports;
}

sub flat_text () {
    my ($v) = @_;
    return '' unless defined $v;
    return join "\n", map { flat_text($_) } @$v if ref $v eq 'ARRAY';
    return ref $v ? '' : $v;
}

# per-request value of a section: arrays are indexed, scalars apply to all
sub idx () {
    my ($v, $i) = @_;
    return ref $v eq 'ARRAY' ? $v->[$i] : $v;
}

sub to_regex () {
    my ($v) = @_;
    return $v if ref $v eq 'Regexp';
    return qr/$v/s;
}

sub parse_timeout () {
    my ($t) = @_;
    return undef unless defined $t && $t =~ /^\s*([\d.]+)\s*(ms|s)?\s*$/;
    return ($2 && $2 eq 'ms') ? $1 / 1000 : $1;
}

# ------------------------------------------------------------------------
# Requests and response checks

# Returns a list of exchanges (one TCP connection each):
# { chunks => [bytes...], methods => [one method per expected response] }
sub build_exchanges () {
    my ($block, $s) = @_;
    my @ex;
    if (defined $s->{raw_request}) {
        my $raw = $s->{raw_request};
        my @chunks = ref $raw eq 'ARRAY' ? @$raw : ($raw);
        my ($m) = join('', @chunks) =~ /^\s*(\S+)/;
        push @ex, { chunks => \@chunks, methods => [uc($m // '')] };
    } elsif (defined $s->{pipelined_requests}) {
        my $reqs = $s->{pipelined_requests};
        bail_out($block->name . ' - --- pipelined_requests must be an array'
                 . ' (use "--- pipelined_requests eval")')
            unless ref $reqs eq 'ARRAY';
        my ($bytes, @methods) = ('');
        for my $i (0 .. $#$reqs) {
            my ($b, $m) = build_http_request($reqs->[$i],
                idx($s->{more_headers}, $i),
                $i == $#$reqs ? 'close' : 'keep-alive');
            $bytes .= $b;
            push @methods, $m;
        }
        push @ex, { chunks => [$bytes], methods => \@methods };
    } elsif (defined $s->{request}) {
        my $r = $s->{request};
        my @reqs = ref $r eq 'ARRAY' ? @$r : ($r);
        for my $i (0 .. $#reqs) {
            my $one = $reqs[$i];
            $one = join '', map { ref $_ ? $_->{value} : $_ } @$one
                if ref $one eq 'ARRAY';
            my ($b, $m) = build_http_request($one,
                idx($s->{more_headers}, $i), 'close');
            push @ex, { chunks => [$b], methods => [$m] };
        }
    }
    return @ex;
}

sub run_requests () {
    my ($block, $s, $rep) = @_;
    my $name = $block->name;
    my @ex = eval { build_exchanges($block, $s) };
    bail_out("$name - bad request: $@") if $@;
    my $total = 0;
    $total += @{ $_->{methods} } for @ex;
    my $timeout = parse_timeout($block->timeout) // default_timeout();
    my $delay = $block->raw_request_middle_delay // 0.05;
    my $i = 0;

    for my $ex (@ex) {
        my $x = http_exchange(chunks => $ex->{chunks}, timeout => $timeout,
                              delay => $delay);
        if ($x->{timed_out}) {
            fail("$name - client socket timed out after ${timeout}s")
                unless defined $block->abort;
        } elsif ($x->{error}) {
            fail("$name - $x->{error}");
        }
        my $raw = $x->{raw};
        for my $method (@{ $ex->{methods} }) {
            my ($res, $rest) = parse_http_response($raw, $method);
            $raw = $rest;
            diag("$name - response parse problem: $res->{error}")
                if $res->{error} && !$x->{error}
                   && !defined $block->ignore_response;
            check_response($block, $s, $res, $i++, $total > 1, $rep);
        }
        if (length $raw && !defined $block->ignore_response) {
            (my $show = substr($raw, 0, 200))
                =~ s/([^\x20-\x7e])/sprintf('\\x%02x', ord $1)/ge;
            diag("$name - unexpected extra bytes after response: \"$show\"");
        }
    }
}

sub check_response () {
    my ($block, $s, $res, $i, $need_array, $rep) = @_;
    return if defined $block->ignore_response;
    my $name = $block->name . ($need_array ? " (req $i)" : '');
    my $status = $res->{status} // '';
    my $hdr = $res->{header};

    if (defined $s->{error_code_like}) {
        like($status, to_regex(idx($s->{error_code_like}, $i)),
             "$name - status code ok");
    } else {
        my $exp = defined $s->{error_code} ? idx($s->{error_code}, $i) : 200;
        is($status, $exp // 200, "$name - status code ok");
    }

    if (defined(my $spec = idx($s->{response_headers}, $i))) {
        my @items = ref $spec eq 'HASH'
            ? map { [$_, $spec->{$_}] } sort keys %$spec
            : map { header_line($name, $_) } grep { /\S/ } split /\n/, $spec;
        for my $it (@items) {
            my ($h, $v) = @$it;
            my $got = $hdr->{lc $h};
            if (!defined $v) {
                ok(!defined $got, "$name - header $h not present")
                    or diag("  got: $h: $got");
            } else {
                is($got, $v, "$name - header $h ok");
            }
        }
    }

    if (defined(my $spec = idx($s->{response_headers_like}, $i))) {
        for my $it (map { header_line($name, $_) } grep { /\S/ }
                    split /\n/, $spec)
        {
            my ($h, $re) = @$it;
            my $got = $hdr->{lc $h};
            if (!defined $re) {
                ok(!defined $got, "$name - header $h not present");
            } elsif (!defined $got) {
                fail("$name - header $h like /$re/ (header missing)");
            } else {
                like($got, qr/$re/, "$name - header $h like /$re/");
            }
        }
    }

    my $body = $res->{body} // '';
    if (defined $s->{response_body}) {
        my $exp = idx($s->{response_body}, $i) // '';
        my $tn = "$name - response_body - response is expected";
        if (ref $exp eq 'Regexp') {
            like($body, $exp, $tn);
        } elsif ($NoLongString) {
            is($body, $exp, $tn);
        } else {
            Test::LongString::is_string($body, $exp, $tn);
        }
    }
    if (defined $s->{response_body_like}) {
        my $re = to_regex(idx($s->{response_body_like}, $i) // '');
        if ($NoLongString) {
            like($body, $re, "$name - response_body_like - response is expected");
        } else {
            Test::LongString::like_string($body, $re,
                "$name - response_body_like - response is expected");
        }
    }
    if (defined $s->{response_body_unlike}) {
        my $re = to_regex(idx($s->{response_body_unlike}, $i) // '');
        unlike($body, $re,
               "$name - response_body_unlike - response is expected");
    }
    $_->($block, $body, $i, $rep, 0) for @ResponseBodyChecks;
}

# "Name: value" -> [Name, value]; "!Name" -> [Name, undef]
sub header_line () {
    my ($name, $line) = @_;
    return [$1, undef] if $line =~ /^\s*!\s*([^:\s]+)\s*$/;
    return [$1, $2] if $line =~ /^\s*([^:]+?)\s*:\s*(.*?)\s*$/;
    bail_out("$name - bad header line: $line");
}

# One test per pattern.  $spec: text (one pattern per line), an array of
# strings/regexps, or a single regexp.  Strings are substring matches.
sub check_log_patterns () {
    my ($name, $log, $spec, $want, $what) = @_;
    return unless defined $spec;
    my @pats = ref $spec eq 'ARRAY'  ? @$spec
             : ref $spec eq 'Regexp' ? ($spec)
             : grep { /\S/ } split /\n/, $spec;
    my @lines = split /\n/, $log;
    for my $pat (@pats) {
        my @hits = ref $pat eq 'Regexp' ? grep { $_ =~ $pat } @lines
                                        : grep { index($_, $pat) >= 0 } @lines;
        my $desc = ref $pat ? "$pat" : qq{"$pat"};
        if ($want) {
            ok(scalar @hits, "$name - pattern $desc should match a line in $what")
                or diag("last lines of $what:\n"
                        . join("\n", @lines > 15 ? @lines[-15 .. -1] : @lines));
        } else {
            ok(!@hits, "$name - pattern $desc should not match any line in $what")
                or diag("matching lines:\n" . join("\n", @hits[0 .. ($#hits > 9 ? 9 : $#hits)]));
        }
    }
}

sub check_grep_error_log () {
    my ($block, $s, $log, $rep) = @_;
    my $pat = $s->{grep_error_log};
    my $exp = $s->{grep_error_log_out};
    return unless defined $pat && defined $exp;
    my $re = ref $pat eq 'Regexp' ? $pat : qr/\Q$pat\E/;
    my $out = '';
    for my $line (split /\n/, $log) {
        while ($line =~ /$re/g) {
            $out .= substr($line, $-[0], $+[0] - $-[0]) . "\n";
        }
    }
    $exp = $exp->[$rep < @$exp ? $rep : -1] if ref $exp eq 'ARRAY';
    my $tn = $block->name . ' - grep_error_log_out';
    if (ref $exp eq 'Regexp') {
        like($out, $exp, $tn);
    } else {
        is($out, $exp, $tn);
    }
}

1;
__END__

=head1 NAME

Test::Nginx::Socket - small from-scratch subset of OpenResty's
Test::Nginx::Socket for this project's test suites

=head1 SYNOPSIS

    use Test::Nginx::Socket 'no_plan';
    # or: use Test::Nginx::Socket;
    #     plan tests => repeat_each() * blocks() * 2;

    repeat_each(1);
    no_shuffle();
    workers(2);
    master_on();
    run_tests();

    __DATA__

    === TEST 1: hello
    --- config
        location = /t { return 200 "hello"; }
    --- request
    GET /t
    --- response_body chomp
    hello
    --- no_error_log
    [error]

Run with C<prove -It/lib t/>.

=head1 DESCRIPTION

Each block gets an nginx.conf generated into the server root
(C<conf/nginx.conf>).  nginx is (re)started only when the generated
configuration differs from the running one.  A restart stops nginx (QUIT,
then TERM and KILL) and wipes C<conf/>, C<html/>, C<logs/> and every C<*_temp>
entry of the server root (other files are kept).  Requests go over raw TCP
sockets to 127.0.0.1.  Test counts follow upstream: one status-code test per
request always; one test per present response section per request; one test
per line/element of the error-log sections per block run.

=head1 FUNCTIONS

Upstream-compatible: C<run_tests>, C<repeat_each>, C<no_shuffle>,
C<workers>, C<master_on>, C<master_off>, C<master_process_enabled>,
C<log_level>, C<no_long_string>, C<no_diff>, C<worker_connections>,
C<env_to_nginx>, C<add_block_preprocessor>, C<add_response_body_check>,
C<server_port>, C<server_root>, C<html_dir>, C<bail_out>,
C<no_root_location>, C<check_accum_error_log> (no-op), plus Test::Base's
C<blocks>, C<plan>, C<is>, C<ok>, C<like>, ... .  Use C<'no_plan'> or an
explicit C<plan>; never C<done_testing> (clashes with Test::Base's END).

=head2 Project extensions (not upstream)

For C<--- init> code or plain Perl after C<run_tests()>:

=over

=item nginx_start()

Starts nginx with the current C<conf/nginx.conf> unless it is running
(does not wipe anything).  Returns true on success.

=item nginx_stop()

Stops nginx (QUIT, TERM after 5s, KILL after 10s).  The next block restarts.

=item nginx_reload()

Sends HUP to the master and sleeps TEST_NGINX_HUP_SLEEP (default 0.3) s.

=item nginx_master_pid(), nginx_running()

=item nginx_error_log([$offset])

Contents of logs/error.log (from a byte offset).

=item http_req($method, $path, \%headers, $body, %opts)

One request on its own connection to 127.0.0.1:server_port
(C<%opts>: C<timeout>, C<port>).  Returns C<($status, \%headers, $body,
$error)>; header names are lower-cased, repeated headers joined by ", ".
The body is sent verbatim.

=back

=head1 SECTIONS

=over

=item Configuration

C<main_config>, C<http_config>, C<config>, C<post_main_config>,
C<server_name>, C<log_level>, C<user_files> (C<< >>> path [mtime] >> headers,
written under html/; or an eval'ed array of C<[path, content]>), C<init>
(Perl code run in package main before the requests), C<must_die> (nginx must
fail to start; one test, then C<error_log>/C<no_error_log> are checked against
nginx's stderr plus error.log).  The default C<location /> is omitted when
C<config> contains C<location / {> or after C<no_root_location()>.

=item Requests

C<request> (C<METHOD /uri [HTTP/1.x]> then the body, whose surrounding
whitespace is stripped; C<eval> may give an array for several requests, one
connection each), C<pipelined_requests> (eval'ed array, one keep-alive
connection), C<raw_request> (verbatim; an array is sent in chunks separated by
C<raw_request_middle_delay>, default 0.05 s), C<more_headers> (C<Key: value>
lines, C<#> comments; may be an array indexed per request), C<timeout>
(seconds, or C<500ms>), C<abort> (a client timeout is not a failure),
C<ignore_response>, C<wait> (seconds to sleep before reading error.log).
C<Host: localhost> and C<Connection: close> are added unless given, and
C<Content-Length> when there is a body (and no Content-Length /
Transfer-Encoding header).

=item Response checks

C<error_code> (default 200, always one test per request), C<error_code_like>,
C<response_body>, C<response_body_like>, C<response_body_unlike> (strings are
unanchored C</.../s> regexps; eval may give qr//), C<response_headers>
(C<Name: value> exact, C<!Name> absent; repeated headers are compared joined
with ", "), C<response_headers_like> (C<Name: regex>).  With several requests
any of these may be an eval'ed array indexed per request.

=item Log checks

C<error_log>, C<no_error_log> (one pattern per line, substring match against
a single line of this block's part of error.log; eval may give an array of
strings/qr//), C<grep_error_log> + C<grep_error_log_out> (all matches, each
followed by "\n"; the expected value may be an array indexed by repeat),
C<shutdown_error_log>, C<no_shutdown_error_log> (nginx is stopped after the
block first).

=item Meta

C<ONLY>, C<SKIP>, C<LAST> (Test::Base), C<skip_nginx: N: E<lt> 1.21.0>,
C<skip_eval: N: perl-expr>.

=back

C<$TEST_NGINX_*> variables in all sections above are expanded from %ENV
(unset ones bail out).  C<$TEST_NGINX_RAND_PORT_E<lt>nE<gt>> is a free port
chosen once per block.  C<TEST_NGINX_SERVER_PORT>, C<TEST_NGINX_SERVER_ROOT>
and C<TEST_NGINX_HTML_DIR> are always set.

=head1 ENVIRONMENT

=over

=item TEST_NGINX_BINARY

nginx binary (default: C<nginx> from PATH, then /usr/sbin/nginx).

=item TEST_NGINX_SERVER_PORT, TEST_NGINX_PORT

Listening port (default 1984).

=item TEST_NGINX_SERVROOT

Server root (default C<t/servroot> under the current directory).

=item TEST_NGINX_LOAD_MODULES

Space-separated .so paths, emitted as C<load_module> lines.

=item TEST_NGINX_MASTER_PROCESS

C<on> forces C<master_process on>.

=item TEST_NGINX_LOG_LEVEL

Default error_log level (default C<debug>).

=item TEST_NGINX_NO_SHUFFLE

Keep block order.  TEST_NGINX_SHUFFLE_SEED replays an order.

=item TEST_NGINX_NO_CLEAN

Leave nginx running after the run.

=item TEST_NGINX_SLEEP

Extra seconds to wait after nginx starts.

=item TEST_NGINX_TIMEOUT

Default client timeout in seconds (3; 10 under valgrind).

=item TEST_NGINX_WORKER_USER

Emit C<user NAME;> (by default C<user root;> when root with a master).

=item TEST_NGINX_USE_HUP

Reload with HUP on config changes instead of restarting (forces the master
process on; the server root is not wiped; TEST_NGINX_HUP_SLEEP, default 0.3,
is the wait after HUP).  A reload that logs C<[emerg]> fails the block.

=item TEST_NGINX_USE_VALGRIND

C<1> runs nginx (C<daemon off>, as our child) under
C<valgrind -q --tool=memcheck --leak-check=full --show-possibly-lost=no
--error-exitcode=99 --log-file=logs/valgrind.%p.log>, plus
C<--suppressions=t/lib/Test/Nginx/nginx-core.supp> (stock nginx's own
exit-time leaks and third-party library singletons); any other value is used
verbatim as the command prefix.  After every block and every shutdown new
error reports in C<logs/valgrind.*.log> make a test fail (with the report as
diagnostics).

=item TEST_NGINX_VALGRIND_SUPP

Suppressions file passed to valgrind.

=item ASAN_OPTIONS, LSAN_OPTIONS, LD_PRELOAD

Passed to nginx (C<env> lines).  Convention: set
C<ASAN_OPTIONS=log_path=$servroot/logs/asan> (absolute path); any non-empty
C<logs/asan.*> file found after a block or a shutdown fails a test.

=back

=head1 DIFFERENCES FROM UPSTREAM

Written from scratch; only the features above exist.  No stap, no
C<--- udp_*>/C<--- tcp_*> mock servers, no C<raw_response_headers_*>,
no C<--- http2>, no check of error.log for alerts by default.

=cut
