# bin/tent-move quotes servers' answers in its messages on stderr: a
# hostile (or broken) server's escape sequences must not reach the
# operator's terminal (a title set, the screen cleared, text hidden with
# a carriage return). A one-connection HTTP server answers the target's
# credential check with a 500 whose body holds ESC, BEL and CR.

use strict;
use warnings;
use Test::More;
use IO::Socket::IP;
use FindBin;
use Cwd qw(abs_path);
use IPC::Open3;
use Symbol qw(gensym);

my $MOVE = abs_path("$FindBin::Bin/../../bin/tent-move");
my $port = ($ENV{TEST_NGINX_PORT} || 1984) + 90;

my $srv = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => $port,
                              Listen => 5, ReuseAddr => 1)
    or plan skip_all => "cannot listen on 127.0.0.1:$port: $!";

my $evil = "\e]0;owned\a\e[2J\rforged line\x7f\x00 end";

my $pid = fork // die "fork: $!";
if ($pid == 0) {
    while (my $c = $srv->accept) {
        my $req = '';
        while (my $line = <$c>) {
            $req .= $line;
            last if $line eq "\r\n";
        }
        my ($len) = $req =~ /^content-length:\s*(\d+)/mi;
        read $c, my $body, $len if $len;
        print $c "HTTP/1.1 500 Oops\r\nContent-Type: text/plain\r\n"
            . "Content-Length: " . length($evil) . "\r\n"
            . "Connection: close\r\n\r\n$evil";
        close $c;
    }
    exit 0;
}
close $srv;
END { local $?; if ($pid) { kill "TERM", $pid; waitpid $pid, 0 } }

local $ENV{TENT_MOVE_SOURCE_MAC_ID} = 'a';
local $ENV{TENT_MOVE_SOURCE_MAC_KEY} = 'k';
local $ENV{TENT_MOVE_TARGET_MAC_ID} = 'b';
local $ENV{TENT_MOVE_TARGET_MAC_KEY} = 'k';

my $root = "http://127.0.0.1:$port/tent";
my $err = gensym;
my $p = open3(my $in, my $out, $err, $^X, $MOVE,
              '--source-api-root', $root, '--target-api-root', $root,
              "http://127.0.0.1:$port", "http://127.0.0.1:$port");
close $in;
my $stderr = do { local $/; <$err> };
my $stdout = do { local $/; <$out> };
waitpid $p, 0;

is $? >> 8, 4, 'the target failed: exit 4';
like $stderr, qr/answered 500 Oops: .*forged line/, 'its answer quoted';
unlike $stderr, qr/[\x00-\x09\x0b-\x1f\x7f]/,
    'no control character but the newline on stderr';

done_testing();
