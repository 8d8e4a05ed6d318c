#!/usr/bin/perl
# bench/ap-inbox-sign.pl: pre-signed requests for bench/ap-inbox.sh, sent
# once each by wrk (bench/posts-write.lua), so that the client spends no
# time signing.  Two kinds, each storing one received post:
#
#   perl bench/ap-inbox-sign.pl ap PEER.json PORT ENTITY INBOX COUNT FILES OUT
#       COUNT ActivityPub inbox POSTs: a Create of a Note addressed to
#       ENTITY by the actor of PEER.json (bench/ap-inbox-peer.pl), signed
#       draft-cavage-12 rsa-sha256 over (request-target) host date digest,
#       each its own activity, note and Date-and-signature (the inbox
#       refuses a replay);
#   perl bench/ap-inbox-sign.pl tent CRED.json PORT ENTITY PATH COUNT FILES OUT
#       COUNT Tent notification POSTs to PATH (/tent/notifications/<id>)
#       of a followed entity's new status, HTTP MAC signed by the
#       following's credential CRED.json ({entity, mac_key_id, mac_key,
#       mac_algorithm}), each its own post id and nonce.
#
# Records "<length>\n<request bytes>", round-robin into OUT.0 ..
# OUT.(FILES-1), one file per wrk thread.  Bodies of one kind have one
# length (zero-padded numbers).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../t/lib";
use JSON::PP;
use Tent::HTTPSig;
use Tent::MAC qw(mac_sign);

@ARGV == 8 or die "usage: $0 ap|tent KEYS.json PORT ENTITY PATH COUNT FILES OUT\n";
my ($kind, $keys, $port, $entity, $path, $count, $files, $out) = @ARGV;
$count =~ /^\d+$/ && $files =~ /^[1-9]\d*$/ or die "bad COUNT or FILES\n";
$path =~ m{^/[!-~]*$} or die "bad PATH\n";

my $k = do {
    open my $fh, '<', $keys or die "$keys: $!\n";
    local $/;
    decode_json(<$fh>);
};
my $host = "127.0.0.1:$port";
my $tag = sprintf '%x%x', $$, time;
my $ts = time;
my $json = JSON::PP->new->canonical;

my @fh;
for my $i (0 .. $files - 1) {
    open $fh[$i], '>:raw', "$out.$i" or die "$out.$i: $!\n";
}

for my $n (1 .. $count) {
    my ($body, %h);
    if ($kind eq 'ap') {
        my $note = sprintf '%s/notes/%s-%09d', $k->{actor}, $tag, $n;
        $body = $json->encode({
            '@context' => 'https://www.w3.org/ns/activitystreams',
            id => "$note#create", type => 'Create', actor => $k->{actor},
            to => [$entity],
            object => { id => $note, type => 'Note',
                        attributedTo => $k->{actor}, to => [$entity],
                        content => sprintf('<p>bench note %09d</p>', $n),
                        published => '2026-12-07T00:00:00Z' } });
        %h = Tent::HTTPSig::sign(
            key => $k->{private}, key_id => $k->{key_id}, method => 'POST',
            target => $path, host => $host, body => $body, date => $ts,
            headers => { 'Content-Type' => 'application/activity+json' });
    } elsif ($kind eq 'tent') {
        my $id = sprintf 'b%s%09d', $tag, $n;
        $body = $json->encode({
            id => $id, entity => $k->{entity}, version => 1,
            type => 'https://tent.io/types/post/status/v0.1.0',
            content => { text => sprintf('bench note %09d', $n) },
            permissions => { public => JSON::PP::true },
            published_at => $ts });
        my $mac = mac_sign(key => $k->{mac_key},
                           algorithm => $k->{mac_algorithm},
                           ts => $ts, nonce => "$tag-$n", method => 'POST',
                           uri => $path, host => '127.0.0.1', port => $port);
        %h = ('Host' => $host,
              'Authorization' => qq{MAC id="$k->{mac_key_id}", ts="$ts", }
                                 . qq{nonce="$tag-$n", mac="$mac"},
              'Content-Type' => 'application/vnd.tent.v0+json');
    } else {
        die "KIND: ap or tent\n";
    }
    $h{Host} //= $host;
    my $req = "POST $path HTTP/1.1\r\n"
        . join('', map { "$_: $h{$_}\r\n" } sort keys %h)
        . 'Content-Length: ' . length($body) . "\r\n\r\n" . $body;
    print { $fh[$n % $files] } length($req), "\n", $req;
}

for my $i (0 .. $files - 1) {
    close $fh[$i] or die "$out.$i: $!\n";
}
