# Attachments at static-file speed (issue 13, part 8): the bytes are
# files under the store directory, one per entity and digest
# (<store>/attachments/<entity>/<ab>/<cdef...>, docs/store.md), written
# by the store owner before the count that makes them visible and removed
# with the last one; GET and HEAD /posts/:id/attachments/:name check the
# post on every request, then send the file as nginx sends one: ETag the
# digest, If-None-Match, Range (one, several, too many, unsatisfiable),
# Cache-Control public or private.  And as an attacker: a private post's
# attachment to anyone else, names and digests that try to leave the
# directory, a digest a client lists without uploading the bytes (another
# post's), bytes stored as a "b" row before files (still served).  The
# server has sendfile on (the error log shows "sendfile:" lines), so
# the file is sent as it is in production.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx);
use Tent::Client;
use JSON::PP;
use Digest::SHA qw(sha256_hex);
use IO::Socket::IP;
use Socket;

workers(2);
no_shuffle();
run_tests();

start_last_nginx();
my $stopped;
END { stop_last_nginx() unless $stopped }

my $c = Tent::Client->new;
my $PHOTO = 'https://tent.io/types/post/photo/v0.1.0';
my $ENTITY = 'https://alice.example';
my $J = JSON::PP->new->utf8->canonical;
my $root = Tent::Util::servroot();
my $dir = "$root/tent_temp/attachments/" . substr(sha256_hex($ENTITY), 0, 32);

my ($wapp, $writer) = $c->authorized_app('write_posts,read_posts',
                                         post_types => 'all');
my ($rapp, $reader) = $c->authorized_app('read_posts', post_types => 'all');

my $B = '-----------TentAttachment';

sub send_mp {
    my ($method, $path, $post, @files) = @_;
    my $body = "--$B\r\nContent-Disposition: form-data; name=\"post\"; "
             . "filename=\"post.json\"\r\nContent-Type: "
             . "application/vnd.tent.v0+json\r\n\r\n" . $J->encode($post) . "\r\n";
    for my $f (@files) {
        my ($name, $file, $type, $data) = @$f;
        $body .= "--$B\r\nContent-Disposition: form-data; name=\"$name\"; "
               . "filename=\"$file\"\r\nContent-Type: $type\r\n\r\n$data\r\n";
    }
    $body .= "--$B--\r\n";
    return $c->request($method => $path, cred => $writer,
        headers => { 'Content-Type' => "multipart/form-data; boundary=$B" },
        body => $body);
}

sub get {
    my ($id, $name, %o) = @_;
    return $c->request($o{method} // 'GET' => "/posts/$id/attachments/$name",
                       cred => $o{cred}, headers => $o{headers} || {});
}

sub file_of { my $d = shift; "$dir/" . substr($d, 0, 2) . '/' . substr($d, 2) }

sub public { { public => JSON::PP::true } }

my $n = 0;
sub bytes {
    my ($tag, $len) = @_;
    $n++;
    my $s = "$tag-$n-" . join '', map { chr(($_ * 13 + $n) % 256) } 0 .. 4095;
    $s x= int($len / length($s)) + 1;
    return substr($s, 0, $len);
}

# ---- a public photo: the bytes, the file, the headers

my $P = bytes('photo', 300_000);
my $D = sha256_hex($P);
my $res = send_mp(POST => '/posts', { type => $PHOTO, content => {},
                                      permissions => public() },
                  ['photos', 'p.jpg', 'image/jpeg', $P]);
is($res->{status}, 200, 'a public photo post of 300 KB') or diag($res->{body});
my $pid = $res->{json}{id};

ok(-f file_of($D), 'its bytes are a file under the store: attachments/<entity>/<ab>/<rest>');
is(-s file_of($D), length $P, 'of their length');
is((stat file_of($D))[2] & 07777, 0600, 'mode 0600: the workers\' user only');
my $disk = '';
if (open my $fh, '<', file_of($D)) { binmode $fh; local $/; $disk = <$fh> }
ok($disk eq $P, 'the same bytes');
ok(!grep({ /\.tmp$/ } glob("$dir/*/*")), 'no temporary file left');

$res = get($pid, 'p.jpg');
is($res->{status}, 200, 'GET: 200');
ok($res->{body} eq $P, 'GET: the bytes, identical');
is($res->{headers}{'content-length'}, length $P, 'Content-Length');
is($res->{headers}{'content-type'}, 'image/jpeg', 'the type posted');
is($res->{headers}{etag}, "\"$D\"", 'ETag: the digest');
is($res->{headers}{'cache-control'}, 'public, max-age=86400, immutable',
   'Cache-Control of a public post');
is($res->{headers}{'accept-ranges'}, 'bytes', 'Accept-Ranges: bytes');
like($res->{headers}{'content-security-policy'} // '', qr/default-src 'none'.*sandbox/,
     'the attachment CSP is kept');
is($res->{headers}{'x-content-type-options'}, 'nosniff', 'nosniff is kept');
ok(!exists $res->{headers}{'content-disposition'}, 'an image is shown inline');

$res = get($pid, 'p.jpg', method => 'HEAD');
is($res->{status}, 200, 'HEAD: 200');
is($res->{headers}{'content-length'}, length $P, 'HEAD: Content-Length');
is($res->{body}, '', 'HEAD: no body');
is($res->{headers}{etag}, "\"$D\"", 'HEAD: the ETag');

# ---- conditional requests

$res = get($pid, 'p.jpg', headers => { 'If-None-Match' => "\"$D\"" });
is($res->{status}, 304, 'If-None-Match with the digest: 304');
is($res->{body}, '', '304: no body');
is($res->{headers}{etag}, "\"$D\"", '304: the ETag');
is($res->{headers}{'cache-control'}, 'public, max-age=86400, immutable',
   '304: Cache-Control');
$res = get($pid, 'p.jpg', headers => { 'If-None-Match' => "\"x\", \"$D\"" });
is($res->{status}, 304, 'If-None-Match listing the digest among others: 304');
$res = get($pid, 'p.jpg', headers => { 'If-None-Match' => '"' . ('0' x 64) . '"' });
is($res->{status}, 200, 'If-None-Match with another digest: 200');
ok($res->{body} eq $P, 'and the bytes');
$res = get($pid, 'p.jpg', method => 'HEAD',
           headers => { 'If-None-Match' => "\"$D\"" });
is($res->{status}, 304, 'HEAD with If-None-Match: 304');

# ---- ranges (nginx's range filter; max_ranges 4 in this server)

$res = get($pid, 'p.jpg', headers => { Range => 'bytes=100-199' });
is($res->{status}, 206, 'one range: 206');
is($res->{headers}{'content-range'}, 'bytes 100-199/' . length $P, 'Content-Range');
is($res->{headers}{'content-length'}, 100, 'its length');
ok($res->{body} eq substr($P, 100, 100), 'its bytes');
$res = get($pid, 'p.jpg', headers => { Range => 'bytes=-10' });
is($res->{status}, 206, 'a suffix range: 206');
ok($res->{body} eq substr($P, -10), 'the last 10 bytes');
$res = get($pid, 'p.jpg', headers => { Range => 'bytes=299990-' });
ok($res->{status} == 206 && $res->{body} eq substr($P, 299990),
   'an open range: to the end');

$res = get($pid, 'p.jpg', headers => { Range => 'bytes=0-9,1000-1009' });
is($res->{status}, 206, 'two ranges: 206');
like($res->{headers}{'content-type'} // '', qr{^multipart/byteranges; boundary=},
     'multipart/byteranges');
like($res->{body}, qr/Content-Range: bytes 0-9\/300000\r\n\r\n\Q${\ substr($P, 0, 10)}\E\r\n/,
     'the first part');
like($res->{body}, qr/Content-Range: bytes 1000-1009\/300000\r\n\r\n\Q${\ substr($P, 1000, 10)}\E\r\n/,
     'the second part');
like($res->{body}, qr/Content-Type: image\/jpeg/, 'each part with the type');

$res = get($pid, 'p.jpg', headers => {
    Range => 'bytes=' . join ',', map { ($_ * 10) . '-' . ($_ * 10 + 1) } 0 .. 9 });
is($res->{status}, 200, 'more ranges than max_ranges: the whole file, 200');
ok($res->{body} eq $P, 'once');
$res = get($pid, 'p.jpg', headers => { Range => 'bytes=0-299999,0-299999' });
is($res->{status}, 200, 'ranges adding up to more than the file: the whole file');
is(length $res->{body}, length $P, 'once, not twice');

$res = get($pid, 'p.jpg', headers => { Range => 'bytes=300000-' });
is($res->{status}, 416, 'a range past the end: 416');
is($res->{headers}{'content-range'}, 'bytes */300000', '416: Content-Range');
$res = get($pid, 'p.jpg', headers => { Range => 'bytes=5-1' });
is($res->{status}, 416, 'a reversed range: 416');
$res = get($pid, 'p.jpg', headers => { Range => 'lines=1-2' });
is($res->{status}, 200, 'another unit: ignored, 200');
$res = get($pid, 'p.jpg', method => 'HEAD', headers => { Range => 'bytes=0-9' });
is("$res->{status} $res->{headers}{'content-length'}", '206 10',
   'HEAD with a range: 206, its length');
is($res->{body}, '', 'no body');

$res = get($pid, 'p.jpg', headers => { Range => 'bytes=0-9', 'If-Range' => "\"$D\"" });
is($res->{status}, 206, 'If-Range with the ETag: the range');
$res = get($pid, 'p.jpg', headers => { Range => 'bytes=0-9', 'If-Range' => '"other"' });
is($res->{status}, 200, 'If-Range with another: the whole file');

# ---- a private post: its attachment is nobody else's

my $S = bytes('secret', 5000);
my $SD = sha256_hex($S);
$res = send_mp(POST => '/posts', { type => $PHOTO, content => {} },
               ['photos', 's.png', 'image/png', $S]);
is($res->{status}, 200, 'a private photo post');
my $sid = $res->{json}{id};
ok(-f file_of($SD), 'its file');

for my $h ({}, { Range => 'bytes=0-9' }, { 'If-None-Match' => "\"$SD\"" }) {
    my $what = join(' ', %$h) || 'plain';
    $res = get($sid, 's.png', headers => $h);
    is($res->{status}, 404, "anonymous, $what: 404 as for any post it may not see");
    unlike($res->{body}, qr/\Q${\ substr($S, 0, 32)}\E/, "anonymous, $what: none of its bytes");
    ok(!$res->{headers}{etag}, "anonymous, $what: no ETag");
}
is(get($sid, 's.png', method => 'HEAD')->{status}, 404, 'HEAD anonymous: 404');

$res = get($sid, 's.png', cred => $reader);
is($res->{status}, 200, 'read_posts: 200');
ok($res->{body} eq $S, 'the bytes');
is($res->{headers}{'cache-control'}, 'private', 'Cache-Control: private');
is($res->{headers}{etag}, "\"$SD\"", 'the ETag');

# ---- names and digests that would leave the directory

for my $name ('..%2F..%2Fdb%2FCURRENT', '..%2F..%2F..%2Fconf%2Fnginx.conf',
              "$SD", substr($SD, 0, 2) . '%2F' . substr($SD, 2), '%2E%2E')
{
    $res = get($pid, $name);
    is($res->{status}, 404, "name \"$name\": 404");
}
like(get($pid, 'p.jpg%00')->{status}, qr/^40[04]$/, 'a name with %00: refused');

# a client lists attachments without uploading them: they are not kept
# (a post is rebuilt from the fields it may have), so a "digest" in them
# names no bytes of ours (the private post's above), nor a path
for my $d ($SD, '../../db/CURRENT', '../../../conf/nginx.conf', uc $SD) {
    $res = $c->request(POST => '/posts', cred => $writer, body => {
        type => $PHOTO, content => {}, permissions => public(),
        attachments => [{ category => 'photos', name => 'x.png',
                          type => 'image/png', size => 10, digest => $d }] });
    is($res->{status}, 200, "a JSON post listing digest \"$d\"");
    my $fid = $res->{json}{id};
    $res = get($fid, 'x.png');
    is($res->{status}, 404, "\"$d\": its attachment has no bytes here, 404");
    unlike($res->{body}, qr/\Q${\ substr($S, 0, 32)}\E/, "\"$d\": not the private bytes");
    is($c->request(DELETE => "/posts/$fid", cred => $writer)->{status}, 200,
       "\"$d\": deleted");
}
ok(-f file_of($SD), 'deleting those took nothing of the private post\'s file');
ok(get($sid, 's.png', cred => $reader)->{body} eq $S, 'which is still served');

# ---- a file shared by posts and versions stays until the last goes

my $Q = bytes('shared', 20_000);
my $QD = sha256_hex($Q);
my @ids;
for my $i (1 .. 2) {
    $res = send_mp(POST => '/posts', { type => $PHOTO, content => {},
                                       permissions => public() },
                   ['photos', "q$i.png", 'image/png', $Q]);
    push @ids, $res->{json}{id};
}
ok(-f file_of($QD), 'two posts with one file: one file');
$res = $c->request(PUT => "/posts/$ids[1]", cred => $writer,
                   body => { content => { caption => 'v2' } });
is($res->{status}, 200, 'a new version of the second keeps it');
is($c->request(DELETE => "/posts/$ids[0]", cred => $writer)->{status}, 200,
   'the first post deleted');
ok(-f file_of($QD), 'the file stays: the second lists it');
ok(get($ids[1], 'q2.png')->{body} eq $Q, 'and serves it');
is($c->request(DELETE => "/posts/$ids[1]?version=2", cred => $writer)->{status},
   200, 'its version 2 deleted');
ok(-f file_of($QD), 'the file stays: version 1 lists it');
is($c->request(DELETE => "/posts/$ids[1]", cred => $writer)->{status}, 200,
   'the last post deleted');
ok(!-e file_of($QD), 'the file is gone with the last version');
is(get($ids[1], 'q2.png')->{status}, 404, 'and the attachment is 404');

$res = send_mp(POST => '/posts', { type => $PHOTO, content => {},
                                   permissions => public() },
               ['photos', 'again.png', 'image/png', $Q]);
ok(-f file_of($QD), 'uploaded again: the file again');
ok(get($res->{json}{id}, 'again.png')->{body} eq $Q, 'served');

# a file removed while a reader is sending it: read to its end
my $G = bytes('big', 9_000_000);
my $GD = sha256_hex($G);
$res = send_mp(POST => '/posts', { type => $PHOTO, content => {},
                                   permissions => public() },
               ['photos', 'big.bin', 'application/octet-stream', $G]);
is($res->{status}, 200, 'a 9 MB attachment') or diag($res->{body});
my $gid = $res->{json}{id};
my $sock = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                               PeerPort => $ENV{TEST_NGINX_SERVER_PORT} || 1984)
    or die "connect: $!";
# a small window: most of the file is still to be read when it goes
setsockopt($sock, Socket::SOL_SOCKET(), Socket::SO_RCVBUF(), 262144);
print {$sock} "GET /tent/posts/$gid/attachments/big.bin HTTP/1.1\r\n"
            . "Host: localhost\r\nConnection: close\r\n\r\n";
my $got = '';
sysread($sock, $got, 4096, length $got) while $got !~ /\r\n\r\n/;
is($c->request(DELETE => "/posts/$gid", cred => $writer)->{status}, 200,
   'its post deleted while the answer is being read');
ok(!-e file_of($GD), 'the file is gone');
while (1) {
    my $r = sysread($sock, $got, 65536, length $got);
    last unless $r;
}
close $sock;
my ($head, $body) = split /\r\n\r\n/, $got, 2;
like($head, qr{^HTTP/1\.1 200}, 'the reader got 200');
ok(defined $body && $body eq $G, 'and every byte, read from the open file');
is(get($gid, 'big.bin')->{status}, 404, 'the next reader: 404');

# a counted digest whose file is missing (never by the module): 404, no 500
my $LB = bytes('lost', 100);
$res = send_mp(POST => '/posts', { type => $PHOTO, content => {},
                                   permissions => public() },
               ['photos', 'lost.png', 'image/png', $LB]);
my $lost = $res->{json}{id};
ok(unlink(file_of(sha256_hex($LB))), 'a file removed by hand');
$res = get($lost, 'lost.png');
is($res->{status}, 404, 'its attachment: 404 (no bytes anywhere), not a 500');
is($c->request(DELETE => "/posts/$lost", cred => $writer)->{status}, 200,
   'its post can still be deleted');

# an empty file
$res = send_mp(POST => '/posts', { type => $PHOTO, content => {},
                                   permissions => public() },
               ['photos', 'empty.txt', 'text/plain', '']);
my $eid = $res->{json}{id};
$res = get($eid, 'empty.txt');
is("$res->{status} $res->{headers}{'content-length'}", '200 0', 'an empty file: 200, length 0');
is($res->{headers}{etag}, '"' . sha256_hex('') . '"', 'its ETag');

# a download keeps its Content-Disposition when served from a file
$res = send_mp(POST => '/posts', { type => $PHOTO, content => {},
                                   permissions => public() },
               ['photos', 'page.html', 'text/html', '<script>x</script>']);
$res = get($res->{json}{id}, 'page.html');
like($res->{headers}{'content-disposition'} // '', qr/^attachment; filename\*=UTF-8''page\.html$/,
     'HTML: still a download');

# ---- bytes stored before files: a "b" row in LevelDB, still served

my $put = Tent::Util::ldb_tool('ldb-put');
{

    my $L = bytes('legacy', 30_000);
    my $LD = sha256_hex($L);
    $res = send_mp(POST => '/posts', { type => $PHOTO, content => {},
                                       permissions => public() },
                   ['photos', 'old.png', 'image/png', $L]);
    my $lid = $res->{json}{id};

    # as an older module left it: the bytes a row, no file
    stop_last_nginx();
    unlink file_of($LD);
    system($put, "$root/tent_temp/db", unpack('H*', "$ENTITY\0b$LD"),
           unpack('H*', $L)) == 0 or die 'ldb-put failed';
    start_last_nginx();

    $res = get($lid, 'old.png');
    is($res->{status}, 200, 'a "b" row: 200');
    ok($res->{body} eq $L, 'its bytes');
    is($res->{headers}{etag}, "\"$LD\"", 'the ETag');
    is($res->{headers}{'cache-control'}, 'public, max-age=86400, immutable',
       'Cache-Control');
    is(get($lid, 'old.png', headers => { 'If-None-Match' => "\"$LD\"" })->{status},
       304, 'If-None-Match: 304');
    $res = get($lid, 'old.png', headers => { Range => 'bytes=10-19' });
    ok($res->{status} == 206 && $res->{body} eq substr($L, 10, 10), 'a range: 206');
    $res = get($lid, 'old.png', method => 'HEAD');
    is("$res->{status} $res->{headers}{'content-length'} [$res->{body}]",
       "200 30000 []", 'HEAD');

    is($c->request(DELETE => "/posts/$lid", cred => $writer)->{status}, 200,
       'its post deleted');
    is(get($lid, 'old.png')->{status}, 404, 'then 404');

    stop_last_nginx();
    my %rows;
    for (Tent::Util::ldb_rows("$root/tent_temp/db")) {
        chomp;
        my ($k, $v) = split /\t/;
        $rows{pack 'H*', $k} = 1;
    }
    ok(scalar keys %rows, 'the store read');
    ok(!$rows{"$ENTITY\0b$LD"}, 'the "b" row went with its last reference');
    ok(!$rows{"$ENTITY\0B$LD"}, 'and its count');
    start_last_nginx();
}

# ---- nothing crashed, nothing leaked into the error log

$res = get($pid, 'p.jpg');
ok($res->{status} == 200 && $res->{body} eq $P, 'still serving');
stop_last_nginx();
$stopped = 1;
my $log = do { local $/; open my $fh, '<', "$root/logs/error.log"; <$fh> // '' };
unlike($log, qr/\[(alert|crit|emerg)\]|exited on signal/, 'no alert, crit or crash in the error log');

__DATA__

=== TEST 1: the server the tests above run against
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    max_ranges 4;
    sendfile on;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/profile
--- error_code: 200
