package Tent::Chrome;

# A small client of the Chrome DevTools protocol for the browser suite:
# Debian's chromium, headless, spoken to over --remote-debugging-pipe
# (JSON messages ended by a NUL byte on fds 3 and 4), so that neither a
# WebSocket module nor a debugging port is needed.

use strict;
use warnings;

use Fcntl qw(F_SETFD);
use IO::Handle;
use IO::Select;
use JSON::PP;
use MIME::Base64 qw(decode_base64);
use POSIX ();
use Time::HiRes qw(time sleep);

my $JSON = JSON::PP->new->utf8->canonical->allow_nonref;

# the chromium binary, or undef; TEST_CHROMIUM names another one (one
# that is not there: none, as where chromium is missing)
sub find_binary {
    return -x $ENV{TEST_CHROMIUM} ? $ENV{TEST_CHROMIUM} : undef
        if defined $ENV{TEST_CHROMIUM};
    for my $b (qw(/usr/bin/chromium /usr/bin/chromium-browser)) {
        return $b if -x $b;
    }
    return undef;
}

# new(binary => path, dir => a directory for its profile and log)
sub new {
    my ($class, %o) = @_;
    my ($cmd_r, $cmd_w, $res_r, $res_w);
    pipe($cmd_r, $cmd_w) or die "pipe: $!";
    pipe($res_r, $res_w) or die "pipe: $!";

    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        my ($r, $w) = (fileno $cmd_r, fileno $res_w);
        $r = POSIX::dup($r) if $r == 4;
        $w = POSIX::dup($w) if $w == 3;
        POSIX::dup2($r, 3) if $r != 3;
        POSIX::dup2($w, 4) if $w != 4;
        for my $fd (3, 4) {
            open my $fh, '+<&=', $fd or POSIX::_exit(126);
            fcntl $fh, F_SETFD, 0;
        }
        open STDIN, '<', '/dev/null';
        open STDOUT, '>', "$o{dir}/chromium.log";
        open STDERR, '>&', \*STDOUT;
        { exec $o{binary}, '--headless', '--remote-debugging-pipe',
            ($> == 0 ? '--no-sandbox' : ()), '--disable-gpu',
            '--disable-dev-shm-usage', '--no-first-run',
            '--no-default-browser-check', '--disable-extensions',
            '--disable-background-networking', '--disable-sync',
            '--password-store=basic', '--use-mock-keychain',
            '--lang=en-US', "--user-data-dir=$o{dir}/profile",
            @{ $o{args} || [] }, "about:blank" };
        POSIX::_exit(127);
    }
    close $cmd_r;
    close $res_w;
    $cmd_w->autoflush(1);
    return bless { pid => $pid, out => $cmd_w, in => $res_r, buf => '',
                   id => 0, events => [], sel => IO::Select->new($res_r),
                   timeout => $o{timeout} || 30 }, $class;
}

sub _send {
    my ($self, $msg) = @_;
    my $out = $self->{out};
    print {$out} $JSON->encode($msg), "\0" or die "chromium: write: $!";
}

sub _read {
    my ($self, $deadline) = @_;
    while (1) {
        my $i = index $self->{buf}, "\0";
        if ($i >= 0) {
            my $m = substr $self->{buf}, 0, $i;
            substr($self->{buf}, 0, $i + 1) = '';
            return $JSON->decode($m);
        }
        my $left = $deadline - time;
        die "chromium: no answer in time\n" if $left <= 0;
        next unless $self->{sel}->can_read($left);
        my $n = sysread $self->{in}, $self->{buf}, 1 << 20,
                        length $self->{buf};
        die "chromium: the pipe closed\n" unless $n;
    }
}

# call(METHOD, {params}, session): the result, or dies with the error
sub call {
    my ($self, $method, $params, $session) = @_;
    my $id = ++$self->{id};
    $self->_send({ id => $id, method => $method, params => $params || {},
                   ($session ? (sessionId => $session) : ()) });
    my $deadline = time + $self->{timeout};
    while (1) {
        my $m = $self->_read($deadline);
        if (defined $m->{id} && $m->{id} == $id) {
            die "chromium: $method: $m->{error}{message}\n" if $m->{error};
            return $m->{result};
        }
        push @{ $self->{events} }, $m if $m->{method};
        shift @{ $self->{events} } if @{ $self->{events} } > 50000;
    }
}

# a new tab; context => a browserContextId (an incognito-like profile)
sub page {
    my ($self, %o) = @_;
    my $t = $self->call('Target.createTarget', { url => 'about:blank',
        ($o{context} ? (browserContextId => $o{context}) : ()) });
    my $s = $self->call('Target.attachToTarget',
                        { targetId => $t->{targetId}, flatten => JSON::PP::true });
    my $page = bless { chrome => $self, session => $s->{sessionId},
                       target => $t->{targetId} }, 'Tent::Chrome::Page';
    $page->call('Page.enable');
    $page->call('Runtime.enable');
    $page->call('Network.enable');      # requests seen, in events()
    $page->call('Emulation.setDeviceMetricsOverride',
                { width => $o{width} || 900, height => $o{height} || 1000,
                  deviceScaleFactor => 1,
                  mobile => $o{mobile} ? JSON::PP::true : JSON::PP::false });
    return $page;
}

sub context {
    my ($self) = @_;
    return $self->call('Target.createBrowserContext')->{browserContextId};
}

# console messages and exceptions seen so far
sub events { @{ $_[0]{events} } }

sub DESTROY { $_[0]->quit }

# closes the browser and waits for it (killed after 5 s); once
sub quit {
    my ($self) = @_;
    return unless $self->{pid};
    local $?;
    eval { $self->_send({ id => ++$self->{id}, method => 'Browser.close' }) };
    close $self->{out};
    my $t = time + 5;
    my $pid = delete $self->{pid};
    while (time < $t) {
        return if waitpid($pid, POSIX::WNOHANG()) == $pid;
        sleep 0.1;
    }
    kill 'KILL', $pid;
    waitpid $pid, 0;
}


package Tent::Chrome::Page;

use JSON::PP;
use MIME::Base64 qw(decode_base64);
use Time::HiRes qw(time sleep);

sub call {
    my ($self, $method, $params) = @_;
    return $self->{chrome}->call($method, $params, $self->{session});
}

sub go {
    my ($self, $url) = @_;
    $self->call('Page.navigate', { url => $url });
}

# the value of a JavaScript expression (promises awaited); dies on an
# exception in the page
sub js {
    my ($self, $expr) = @_;
    my $r = $self->call('Runtime.evaluate', {
        expression => $expr, awaitPromise => JSON::PP::true,
        returnByValue => JSON::PP::true });
    if ($r->{exceptionDetails}) {
        my $d = $r->{exceptionDetails};
        die 'page: ' . ($d->{exception}{description} || $d->{text}) . "\n";
    }
    return $r->{result}{value};
}

# waits until the expression is true (navigations in between are
# fine); returns its value, or undef after the timeout
sub wait_js {
    my ($self, $expr, $timeout) = @_;
    my $end = time + ($timeout || 15);
    while (time < $end) {
        my $v = eval { $self->js($expr) };
        return $v if $v;
        sleep 0.1;
    }
    return undef;
}

# types into the element as a keyboard would (focus, then insertText)
sub type {
    my ($self, $selector, $text) = @_;
    $self->js("(() => { const e = document.querySelector("
              . _q($selector) . "); e.focus(); e.select && e.select(); "
              . "return true })()");
    $self->call('Input.insertText', { text => $text });
}

sub click {
    my ($self, $selector) = @_;
    $self->js("document.querySelector(" . _q($selector) . ").click(), true");
}

# a key pressed and released, as the keyboard does: 'Enter', 'Tab', ' ',
# 'Escape'
sub key {
    my ($self, $key) = @_;
    my %k = (Enter => [13, 'Enter', "\r"], Tab => [9, 'Tab', ''],
             ' ' => [32, 'Space', ' '], Escape => [27, 'Escape', '']);
    my ($vk, $code, $text) = @{ $k{$key} or die "key $key?" };
    $self->call('Input.dispatchKeyEvent', { type => 'keyDown', key => $key,
        code => $code, windowsVirtualKeyCode => $vk,
        (length $text ? (text => $text) : ()) });
    $self->call('Input.dispatchKeyEvent', { type => 'keyUp', key => $key,
        code => $code, windowsVirtualKeyCode => $vk });
}

sub set_files {
    my ($self, $selector, @files) = @_;
    my $r = $self->call('Runtime.evaluate', {
        expression => 'document.querySelector(' . _q($selector) . ')' });
    $self->call('DOM.setFileInputFiles', { files => \@files,
                                           objectId => $r->{result}{objectId} });
}

sub screenshot {
    my ($self, $file) = @_;
    my $r = $self->call('Page.captureScreenshot', { format => 'png' });
    open my $fh, '>:raw', $file or die "$file: $!";
    print {$fh} decode_base64($r->{data});
    close $fh;
    return -s $file;
}

sub close {
    my ($self) = @_;
    $self->{chrome}->call('Target.closeTarget', { targetId => $self->{target} });
}

sub _q { JSON::PP->new->allow_nonref->encode($_[0]) }

1;
