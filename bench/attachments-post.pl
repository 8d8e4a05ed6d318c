#!/usr/bin/perl
# bench/attachments-post.pl CRED.json PORT FILE NAME TYPE: posts a public
# photo with FILE as its one attachment (multipart, as tent-client-ruby
# sends it), signed by the authorization in CRED.json, to the module on
# 127.0.0.1:PORT; prints the new post's id.  bench/attachments.sh uses it.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../t/lib";

use JSON::PP;
use Tent::Client;

@ARGV == 5 or die "usage: $0 CRED.json PORT FILE NAME TYPE\n";
my ($credfile, $port, $file, $name, $type) = @ARGV;

my $cred = do {
    open my $fh, '<', $credfile or die "$credfile: $!\n";
    local $/;
    decode_json(<$fh>);
};
my $bytes = do {
    open my $fh, '<:raw', $file or die "$file: $!\n";
    local $/;
    <$fh>;
};

my $B = '-----------TentBench';
my $post = encode_json({ type => 'https://tent.io/types/post/photo/v0.1.0',
                         content => { caption => 'bench' },
                         permissions => { public => JSON::PP::true } });
my $body = "--$B\r\nContent-Disposition: form-data; name=\"post\"; "
         . "filename=\"post.json\"\r\nContent-Type: "
         . "application/vnd.tent.v0+json\r\n\r\n$post\r\n"
         . "--$B\r\nContent-Disposition: form-data; name=\"photos[0]\"; "
         . "filename=\"$name\"\r\nContent-Type: $type\r\n\r\n$bytes\r\n"
         . "--$B--\r\n";

my $c = Tent::Client->new(port => $port, host => "127.0.0.1:$port");
my $res = $c->request(POST => '/posts', cred => $cred, timeout => 30,
    headers => { 'Content-Type' => "multipart/form-data; boundary=$B" },
    body => $body);
$res->{status} == 200 && $res->{json} && $res->{json}{id}
    or die "POST /tent/posts: $res->{status} " . ($res->{body} // '') . "\n";
print "$res->{json}{id}\n";
