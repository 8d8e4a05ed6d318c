#!/usr/bin/perl
# bench/posts-sign.pl: pre-signed POST /posts requests for wrk
# (bench/posts-write.lua), so that the client spends no time signing.
#
#   perl bench/posts-sign.pl CRED.json PORT COUNT FILES OUT [TAG]
#
# Writes COUNT complete HTTP/1.1 requests, split round-robin into FILES
# files OUT.0 .. OUT.(FILES-1) (one per wrk thread).  Each record is
# "<length>\n<request bytes>".  Every request is signed with HTTP MAC
# (Tent::MAC) by the authorization in CRED.json (access_token, mac_key,
# mac_algorithm) for Host 127.0.0.1:PORT, with ts = now and a nonce
# unique to this run (TAG, default pid.time) and request, so none is a
# replay.  The server must accept a ts this old when the requests are
# sent: the bench config sets tent_mac_skew 30m.  Bodies all have the
# same length (the text carries a zero-padded sequence number).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../t/lib";
use JSON::PP;
use Tent::MAC qw(mac_sign);

@ARGV >= 5 or die "usage: $0 CRED.json PORT COUNT FILES OUT [TAG]\n";
my ($credfile, $port, $count, $files, $out, $tag) = @ARGV;
$tag = sprintf '%x%x', $$, time unless defined $tag;
$tag =~ /^[A-Za-z0-9._-]+$/ or die "bad TAG\n";
$count =~ /^\d+$/ && $files =~ /^[1-9]\d*$/ or die "bad COUNT or FILES\n";

my $cred = do {
    open my $fh, '<', $credfile or die "$credfile: $!\n";
    local $/;
    decode_json(<$fh>);
};
my $id = $cred->{access_token} // $cred->{mac_key_id}
    or die "$credfile: no access_token\n";
my $key = $cred->{mac_key} or die "$credfile: no mac_key\n";
my $alg = $cred->{mac_algorithm} || 'hmac-sha-256';

my $path = '/tent/posts';
my $host = '127.0.0.1';
my $ts = time;

my @fh;
for my $i (0 .. $files - 1) {
    open $fh[$i], '>:raw', "$out.$i" or die "$out.$i: $!\n";
}

for my $n (1 .. $count) {
    my $nonce = "$tag-$n";
    my $mac = mac_sign(key => $key, algorithm => $alg, ts => $ts,
                       nonce => $nonce, method => 'POST', uri => $path,
                       host => $host, port => $port);
    my $body = sprintf '{"type":"https://tent.io/types/post/status/v0.1.0",'
        . '"content":{"text":"bench post %09d"},"permissions":{"public":true}}',
        $n;
    my $req = "POST $path HTTP/1.1\r\n"
        . "Host: $host:$port\r\n"
        . qq{Authorization: MAC id="$id", ts="$ts", nonce="$nonce", mac="$mac"\r\n}
        . "Content-Type: application/vnd.tent.v0+json\r\n"
        . 'Content-Length: ' . length($body) . "\r\n"
        . "\r\n" . $body;
    print { $fh[$n % $files] } length($req), "\n", $req;
}

for my $i (0 .. $files - 1) {
    close $fh[$i] or die "$out.$i: $!\n";
}
