#!/usr/bin/perl
# bench/ap-inbox-peer.pl: the ActivityPub actor whose key signs
# bench/ap-inbox.sh's inbox POSTs.  Starts a Tent::APPeer on 127.0.0.1
# with one actor, "bench", writes OUT (JSON: actor, key_id, private PEM)
# and serves it until killed, for at most 3600 s (a bench that dies
# leaves no server behind for long).
#
#   perl bench/ap-inbox-peer.pl OUT
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../t/lib";
use JSON::PP;
use Tent::APPeer;

@ARGV == 1 or die "usage: $0 OUT\n";
my ($out) = @ARGV;

my $peer = Tent::APPeer->start(names => ['bench']);
open my $fh, '>', "$out.tmp" or die "$out.tmp: $!\n";
print {$fh} encode_json({ actor => $peer->actor_url('bench'),
                          key_id => $peer->key_id('bench'),
                          private => $peer->private_key('bench') });
close $fh or die "$out.tmp: $!\n";
rename "$out.tmp", $out or die "$out: $!\n";

local $SIG{TERM} = local $SIG{INT} = sub { $peer->stop; exit 0 };
sleep 1 for 1 .. 3600;
$peer->stop;
