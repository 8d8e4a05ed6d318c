# bin/tent-move refuses an https entity whose API root is plain http (the
# export, credentials and private posts, would cross in clear: a
# discovery answer, a redirect or a typo must not decide it), unless
# --allow-http-downgrade (docs/tent-move.md).  A plain HTTP server on
# 127.0.0.1 counts the connections it gets: none when refused.

use strict;
use warnings;
use Test::More;
use IO::Socket::IP;
use FindBin;
use Cwd qw(abs_path);
use IPC::Open3;
use Symbol qw(gensym);

my $MOVE = abs_path("$FindBin::Bin/../../bin/tent-move");
my $port = ($ENV{TEST_NGINX_PORT} || 1984) + 91;

my $srv = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => $port,
                              Listen => 5, ReuseAddr => 1)
    or plan skip_all => "cannot listen on 127.0.0.1:$port: $!";
my $log = "/tmp/tent-move-downgrade-$$.log";
unlink $log;

my $pid = fork // die "fork: $!";
if ($pid == 0) {
    while (my $c = $srv->accept) {
        my $req = '';
        while (my $line = <$c>) {
            $req .= $line;
            last if $line =~ /^\r?\n\z/;
        }
        open my $fh, '>>', $log or die;
        print {$fh} ((split /\r?\n/, $req)[0] // '', "\n");
        close $fh;
        print {$c} "HTTP/1.1 500 Nope\r\nContent-Length: 4\r\n"
                   . "Connection: close\r\n\r\nnope";
        close $c;
    }
    exit 0;
}
close $srv;

sub run_move {
    my (@args) = @_;
    local %ENV = (%ENV,
                  TENT_MOVE_SOURCE_MAC_ID => 'a:1',
                  TENT_MOVE_SOURCE_MAC_KEY => 'k',
                  TENT_MOVE_SOURCE_MAC_ALG => 'hmac-sha-256',
                  TENT_MOVE_TARGET_MAC_ID => 'a:2',
                  TENT_MOVE_TARGET_MAC_KEY => 'k',
                  TENT_MOVE_TARGET_MAC_ALG => 'hmac-sha-256');
    my $err = gensym;
    my $p = open3(my $in, my $out, $err, $^X, $MOVE, '--timeout', 5, @args);
    close $in;
    my $stderr = do { local $/; <$err> } // '';
    my $stdout = do { local $/; <$out> } // '';
    waitpid $p, 0;
    return ($? >> 8, $stderr);
}

sub connections {
    open my $fh, '<', $log or return 0;
    my @l = <$fh>;
    return scalar @l;
}

my $root = "http://127.0.0.1:$port/tent";

my ($rc, $err) = run_move('--source-api-root', $root,
                          '--target-api-root', $root,
                          'http://127.0.0.1:1', "https://127.0.0.1:$port");
is($rc, 4, 'an https target with an http API root: exit 4');
like($err, qr/target: .*is https, but .* is not: refused/,
     'the downgrade named');
is(connections(), 0, 'nothing sent');

($rc, $err) = run_move('--source-api-root', $root,
                       '--target-api-root', $root,
                       "https://127.0.0.1:$port", 'http://127.0.0.1:1');
is($rc, 3, 'an https source with an http API root: exit 3');
like($err, qr/source: .*is https, but .* is not: refused/,
     'the downgrade named');
is(connections(), 0, 'nothing sent');

($rc, $err) = run_move('--allow-http-downgrade',
                       '--source-api-root', $root,
                       '--target-api-root', $root,
                       "https://127.0.0.1:$port", "https://127.0.0.1:$port");
unlike($err, qr/refused \(the export/, '--allow-http-downgrade: not refused');
ok(connections() >= 1, 'and it went on (the target asked)')
    or diag $err;

($rc, $err) = run_move('--source-api-root', $root,
                       '--target-api-root', $root,
                       'http://127.0.0.1:1', 'http://127.0.0.1:2');
unlike($err, qr/refused \(the export/, 'http entities: no downgrade');

kill 'TERM', $pid;
waitpid $pid, 0;
unlink $log;
done_testing();
