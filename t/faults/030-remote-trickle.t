# A remote that sends its response headers a byte at a time (within the
# timeout) must cost the worker what one parse of them costs: the block
# is parsed once it is whole, not again after every read (which took the
# square of its size in time and pool memory: 481 MB for 8 KB).  The
# follow goes through, and the worker's peak memory barely moves.
# Loopback receivers only.

use strict;
use warnings;

use Test::More;
use JSON::PP;
use Tent::Peer;
use Tent::Receiver;

sub peak_kb {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/status" or return undef;
    while (<$fh>) {
        return $1 if /^VmHWM:\s+(\d+)\s+kB/;
    }
    return undef;
}

my $rx = Tent::Receiver->start;
my $E = $rx->url;

# ~7 KB of headers on HEAD /, the Link among them, one byte every 0.2 ms
my %pad = map { sprintf('X-Pad-%03d', $_) => 'p' x 40 } 1 .. 140;
$rx->rules([{ method => 'HEAD', path => '^/$',
              action => { do => 'slow', interval => 0.0002, status => 200,
                          headers => { %pad,
                              Link => "<$E/tent/profile>; "
                                      . 'rel="https://tent.io/rels/profile"' } } }]);

my $peer = Tent::Peer->start(worker_processes => 1, server_config => <<'CONF');
        tent_entity $URL;
        tent_outbound_allow 127.0.0.0/8;
        tent_outbound_timeout 60s;
CONF

my $mpid = $peer->master_pid;
my ($worker) = split ' ', `pgrep -P $mpid`;
ok($worker, 'the worker is there');

my $client = $peer->client;
my $before = peak_kb($worker);
ok($before, "its peak memory before: ${\ ($before // '?')} kB");

my $res = $client->request(POST => '/followers', timeout => 120, body => {
    entity => $E, types => ['all'], licenses => [],
    notification_path => 'notifications/n1',
    permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'the follow goes through the trickled headers')
    or diag($res->{body});

my ($head) = grep { $_->{method} eq 'HEAD' } $rx->requests;
ok($head, 'the HEAD was answered slowly, as ruled');

my $after = peak_kb($worker);
my $growth = ($after // 0) - ($before // 0);
cmp_ok($growth, '<', 64 * 1024,
       "the worker's peak memory grew by $growth kB, not hundreds of MB");

is(scalar(grep { $_ } map { kill 0, $_ } $worker), 1,
   'the same worker is still there');
unlike($peer->error_log_text, qr/\[alert\]|\[emerg\]|exited on signal/,
       'no alert, no crash');

$peer->stop;
$rx->stop;

done_testing();
