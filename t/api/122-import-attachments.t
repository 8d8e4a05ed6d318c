# POST /import with attachments (issue 14, part 2; docs/import.md,
# "Attachments"): an export of A with ?attachments=inline imported into B
# (another server block of the same nginx): B serves each attachment's
# bytes, ETag its digest; the counts are right across versions and posts
# sharing a digest (deleting one post keeps the bytes for the other, the
# last takes the file with it).  The attacker's documents: a digest that
# is not the bytes', data that is not base64, a size that is not the
# bytes', an attachment over tent_max_attachment_size, a malformed
# attachment: the posts section not written, no file stored.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx dechunk);
use Tent::Client;
use Tent::MAC qw(signed_headers random_nonce);
use Tent::Receiver;
use POSIX ();
use JSON::PP;
use MIME::Base64 qw(encode_base64 decode_base64);
use Digest::SHA qw(sha256_hex);

add_block_preprocessor(sub {
    my $block = shift;
    $block->set_value(http_config => <<'CONF') unless defined $block->http_config;
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_timeout 5s;
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name b.test;
        tent_entity http://b.test;
        client_max_body_size 4m;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name c.test;
        tent_entity http://c.test;
        client_max_body_size 4m;
        tent_max_attachment_size 3000;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name d.test;
        tent_entity http://d.test;
        client_max_body_size 4m;
        tent_outbound_allow 127.0.0.0/8;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name e.test;
        tent_entity http://e.test;
        client_max_body_size 4m;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name f.test;
        tent_entity http://f.test;
        client_max_body_size 4m;
        tent_outbound_allow 127.0.0.0/8;
        tent_max_attachment_size 3000;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name g.test;
        tent_entity http://g.test;
        client_max_body_size 4m;
        tent_outbound_allow 127.0.0.0/8;
        tent_outbound_timeout 1s;
        tent_max_attachment_size 3000;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name h.test;
        tent_entity http://h.test;
        client_max_body_size 4m;
        tent_outbound_allow 127.0.0.0/8;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
CONF
    $block->set_value(config => <<'CONF') unless defined $block->config;
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize { tent_owner "the owner"; }
CONF
});

master_on();
workers(2);
no_shuffle();
log_level('debug');
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $PORT = $ENV{TEST_NGINX_SERVER_PORT} || 1984;
my $PHOTO = 'https://tent.io/types/post/photo/v0.1.0';
my $READ = 'read_secrets,read_profile,read_followers,read_followings,'
           . 'read_groups,read_posts';
my $WRITE = 'write_secrets,write_profile,write_followers,write_followings,'
            . 'write_groups,write_posts,import_posts';
my $JSON = JSON::PP->new->utf8->canonical;
my $ROOT = $Test::Nginx::Util::ServRoot;

sub export_of {
    Tent::Util::export_document(host => $_[0], cred => $_[1],
                                query => $_[2]);
}

sub import_to {
    my ($cl, $cred, $doc, $query) = @_;
    return $cl->request(POST => '/import' . ($query // ''), cred => $cred,
                        body => $doc);
}

# the file of a digest in an entity's attachment directory
sub file_of {
    my ($entity, $digest) = @_;
    my $e = substr(sha256_hex($entity), 0, 32);
    return "$ROOT/tent_temp/attachments/$e/" . substr($digest, 0, 2) . '/'
           . substr($digest, 2);
}

sub files_of {
    my $e = substr(sha256_hex(shift), 0, 32);
    return grep { -f && !/\.tmp$/ }
           glob("$ROOT/tent_temp/attachments/$e/*/*");
}

sub photo {
    my ($cl, $cred, $name, $bytes) = @_;
    my $MB = '-----------TentImportAtt';
    my $mp = "--$MB\r\nContent-Disposition: form-data; name=\"post\"; "
           . "filename=\"post.json\"\r\nContent-Type: "
           . "application/vnd.tent.v0+json\r\n\r\n"
           . $JSON->encode({ type => $PHOTO, content => { caption => $name },
                             permissions => { public => JSON::PP::true } })
           . "\r\n--$MB\r\nContent-Disposition: form-data; "
           . "name=\"photos[0]\"; filename=\"$name\"\r\n"
           . "Content-Type: image/png\r\n\r\n$bytes\r\n--$MB--\r\n";
    my $res = $cl->request(POST => '/posts', cred => $cred, body => $mp,
        headers => { 'Content-Type' => "multipart/form-data; boundary=$MB" });
    is($res->{status}, 200, "photo post $name") or diag $res->{body};
    return $res->{json}{id};
}

# --- A: three photo posts, two sharing their bytes, one of two versions --

my $c = Tent::Client->new;
my (undef, $owner) = $c->authorized_app("$READ,write_posts",
    post_types => 'all', info_types => 'all');

my $shared = join '', map { chr(($_ * 13 + 5) % 256) } 0 .. 2047;
my $other = join '', map { chr(($_ * 7 + 1) % 256) } 0 .. 4095;
my $p1 = photo($c, $owner, 'one.png', $shared);
my $res = $c->request(PUT => "/posts/$p1", cred => $owner,
    body => { type => $PHOTO, content => { caption => 'one, again' },
              permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'p1: a second version keeping its attachment');
my $p2 = photo($c, $owner, 'two.png', $shared);
my $p3 = photo($c, $owner, 'three.png', $other);

my $doc = export_of('localhost', $owner, '&attachments=inline');
ok($doc && $doc->{complete}, "A's export, attachments inline");
my %posts = map { $_->{id} => $_ } @{ $doc->{posts} || [] };
is(scalar @{ $posts{$p1}{versions} || [] }, 2, 'p1 has two versions');

my $copy = sub { $JSON->decode($JSON->encode($doc)) };

# --- the attacker's documents: each into C, nothing of the posts stored ---

my $cc = Tent::Client->new(host => 'c.test');
my (undef, $cowner) = $cc->authorized_app("$WRITE,$READ",
    post_types => 'all', info_types => 'all');

sub att_of { my ($d, $id) = @_;
    my ($p) = grep { $_->{id} eq $id } @{ $d->{posts} };
    return $p->{versions}[-1]{attachments}[0];
}

my @attacks = (
    [ 'a digest not of the bytes', sub {
        my $a = att_of($_[0], $p1);
        $a->{data} = encode_base64('other bytes' x 10, '');
        $a->{size} = 110 }, qr/digest/ ],
    [ 'data not base64', sub {
        att_of($_[0], $p1)->{data} = '!!!not*base64!!' }, qr/base64/ ],
    [ 'a size not the bytes\'', sub {
        att_of($_[0], $p1)->{size} = 5 }, qr/size/ ],
    [ 'a digest not 64 hex digits', sub {
        att_of($_[0], $p1)->{digest} = '../../../etc/passwd' },
      qr/attachment must be/ ],
    [ 'a name with a slash', sub {
        att_of($_[0], $p1)->{name} = '../x' }, qr/attachment must be/ ],
    [ 'a type with CR LF', sub {
        att_of($_[0], $p1)->{type} = "image/png\r\nX-Evil: 1" },
      qr/attachment must be/ ],
    [ 'attachments not a list', sub {
        my ($p) = grep { $_->{id} eq $p1 } @{ $_[0]->{posts} };
        $p->{versions}[-1]{attachments} = { a => 1 } }, qr/must be a list/ ],
);

my $merge = '';
for my $t (@attacks) {
    my ($what, $spoil, $reason) = @$t;
    my $d = $copy->();
    $spoil->($d);
    $res = import_to($cc, $cowner, $d, $merge);
    is($res->{status}, 200, "$what: the import answers") or diag $res->{body};
    my $pr = $res->{json}{posts} || {};
    ok(!$pr->{written}, "$what: the posts not written");
    like(join(' ', map { $_->{reason} } @{ $pr->{invalid} || [] }), $reason,
         "$what: the reason said") or diag $JSON->encode($pr);
    is(scalar(files_of('http://c.test')), 0, "$what: no file stored");
    # C is no longer empty (its profile written): merge the next ones
    $merge = '?merge=1';
}

# over C's tent_max_attachment_size (3000): p3's 4096 bytes
{
    my $d = $copy->();
    $d->{profile} = [];
    $res = $cc->request(POST => '/import?merge=1', cred => $cowner,
                        body => $d);
    is($res->{status}, 200, 'oversize: the import answers');
    my $pr = $res->{json}{posts} || {};
    ok(!$pr->{written}, 'oversize: the posts not written');
    like(join(' ', map { $_->{reason} } @{ $pr->{invalid} || [] }),
         qr/tent_max_attachment_size/, 'oversize: the reason said');
    is(scalar(files_of('http://c.test')), 0, 'oversize: no file stored');
    $res = $cc->request(GET => "/posts/$p1");
    is($res->{status}, 404, 'no post of the document on C');
}

# --- B: the document as it is ---------------------------------------------

my $b = Tent::Client->new(host => 'b.test');
my (undef, $bowner) = $b->authorized_app("$WRITE,$READ",
    post_types => 'all', info_types => 'all');

$res = import_to($b, $bowner, $doc);
is($res->{status}, 200, 'the import into B') or diag $res->{body};
my $rep = $res->{json} || {};
ok($rep->{posts}{written}, 'posts written') or diag $JSON->encode($rep);
ok(!grep({ exists $_->{attachments_of} } @{ $rep->{posts}{skipped} || [] }),
   'no attachment skipped');

my $dshared = sha256_hex($shared);
my $dother = sha256_hex($other);

for my $t ([$p1, 'one.png', $shared, $dshared],
           [$p2, 'two.png', $shared, $dshared],
           [$p3, 'three.png', $other, $dother])
{
    my ($id, $name, $bytes, $digest) = @$t;
    $res = $b->request(GET => "/posts/$id/attachments/$name");
    is($res->{status}, 200, "B serves $name");
    ok(($res->{body} // '') eq $bytes, "$name: the same bytes");
    is($res->{headers}{etag}, "\"$digest\"", "$name: ETag its digest");
}
ok(-f file_of('http://b.test', $dshared), 'the shared bytes: one file');
is(scalar(files_of('http://b.test')), 2, 'two files in all');

$res = $b->request(GET => "/posts/$p1/versions", cred => $bowner);
is(scalar @{ $res->{json} || [] }, 2, 'p1 on B: two versions');
my ($v1) = grep { $_->{version} == 1 } @{ $res->{json} || [] };
is($v1->{attachments}[0]{name}, 'one.png',
   'p1 version 1 lists the attachment too') or diag $JSON->encode($res->{json});
$res = $b->request(GET => "/posts/$p1/attachments/one.png?version=1");
ok(($res->{body} // '') eq $shared, 'and serves its bytes');

# the counts: shared 3 (p1's two versions, p2), other 1
$res = $b->request(DELETE => "/posts/$p2", cred => $bowner);
is($res->{status}, 200, 'p2 deleted on B');
$res = $b->request(GET => "/posts/$p1/attachments/one.png");
is($res->{status}, 200, 'p1 still serves the shared bytes');
ok(($res->{body} // '') eq $shared, 'the same bytes');
ok(-f file_of('http://b.test', $dshared), 'the shared file kept');

$res = $b->request(DELETE => "/posts/$p1", cred => $bowner);
is($res->{status}, 200, 'p1 deleted on B');
ok(!-f file_of('http://b.test', $dshared),
   'the last reference gone: the shared file with it');
ok(-f file_of('http://b.test', $dother), 'the other file kept');

# A still has its own bytes (another entity's counts)
$res = $c->request(GET => "/posts/$p2/attachments/two.png");
is($res->{status}, 200, 'A still serves p2');

# --- by URL (the default export): fetched through the outbound client ----

my $udoc = export_of('localhost', $owner, '');
ok($udoc && $udoc->{complete}, "A's export, attachments by URL");
like(att_of($udoc, $p1)->{url} // '', qr{^http://127\.0\.0\.1:$PORT/},
     'the URL on A');
# A's URLs name 127.0.0.1, whose default server here is B's block: asked
# as "localhost" they reach A's (c-ares reads /etc/hosts)
for my $p (@{ $udoc->{posts} }) {
    $_->{url} =~ s{//127\.0\.0\.1:}{//localhost:}
        for map { @{ $_->{attachments} || [] } } @{ $p->{versions} };
}
my $ucopy = sub { $JSON->decode($JSON->encode($udoc)) };

sub client_of {
    my $cl = Tent::Client->new(host => shift);
    my (undef, $cred) = $cl->authorized_app("$WRITE,$READ",
        post_types => 'all', info_types => 'all');
    return ($cl, $cred);
}

# the attacker's rows, refused before anything is fetched: the posts not
# written (E has no tent_outbound_allow: nothing would be fetched anyway)
my ($ec, $ecred) = client_of('e.test');
my $merge_e = '';
my @uattacks = (
    [ 'a URL not http', sub {
        att_of($_[0], $p1)->{url} = 'file:///etc/passwd' }, qr/http/ ],
    [ 'a URL with a CR LF', sub {
        att_of($_[0], $p1)->{url} = "http://127.0.0.1:$PORT/x\r\nX: y" },
      qr/visible ASCII/ ],
    [ 'more than 1000 attachments by URL', sub {
        my ($p) = grep { $_->{id} eq $p1 } @{ $_[0]->{posts} };
        my $a = att_of($_[0], $p1);
        $p->{versions}[-1]{attachments} = [ map {
            +{ %$a, digest => sha256_hex("n$_"), name => "n$_.png" } }
            1 .. 1001 ] }, qr/more than 1000/ ],
);
for my $t (@uattacks) {
    my ($what, $spoil, $reason) = @$t;
    my $d = $ucopy->();
    $spoil->($d);
    $res = import_to($ec, $ecred, $d, $merge_e);
    is($res->{status}, 200, "$what: the import answers") or diag $res->{body};
    my $pr = $res->{json}{posts} || {};
    ok(!$pr->{written}, "$what: the posts not written");
    like(join(' ', map { $_->{reason} } @{ $pr->{invalid} || [] }),
         $reason, "$what: the reason said") or diag $JSON->encode($pr);
    is(scalar(files_of('http://e.test')), 0, "$what: no file stored");
    $res = $ec->request(GET => "/posts/$p3");
    is($res->{status}, 404, "$what: no post written");
    $merge_e = '?merge=1';
}

# a fetch that fails leaves the attachment out, the post kept, and says
# why: the SSRF guard (E: no tent_outbound_allow for 127.0.0.1)
sub left_out {
    my ($what, $cl, $rep, $id, $name, $reason, $host) = @_;
    my $pr = $rep->{posts} || {};
    ok($pr->{written}, "$what: the posts written") or diag $JSON->encode($pr);
    my ($sk) = grep { ($_->{attachments_of} // '') eq $id }
               @{ $pr->{skipped} || [] };
    like($sk->{reason} // '', $reason, "$what: ${id}'s attachment left out")
        or diag $JSON->encode($pr);
    my $r = $cl->request(GET => "/posts/$id");
    is($r->{status}, 200, "$what: the post kept");
    is_deeply($r->{json}{attachments}, [], "$what: without its attachment");
    $r = $cl->request(GET => "/posts/$id/attachments/$name");
    is($r->{status}, 404, "$what: its attachment 404");
}

$res = import_to($ec, $ecred, $ucopy->(), '?merge=1');
is($res->{status}, 200, 'SSRF: the import answers') or diag $res->{body};
left_out('SSRF', $ec, $res->{json} || {}, $p3, 'three.png',
         qr/not allowed/);
is(scalar(files_of('http://e.test')), 0, 'SSRF: no file stored');

# a URL whose bytes are not the digest's, on a server whose guard allows
# it: fetched, refused by the digest, left out
my ($fc, $fcred) = client_of('f.test');
{
    my $d = $ucopy->();
    $d->{posts} = [grep { $_->{id} ne $p3 } @{ $d->{posts} }];
    # one fetch a digest: every URL of the shared one spoiled
    for my $p (@{ $d->{posts} }) {
        $_->{url} = "http://localhost:$PORT/tent/posts/$p2"
            for grep { $_->{digest} eq sha256_hex($shared) }
                map { @{ $_->{attachments} || [] } } @{ $p->{versions} };
    }
    $res = import_to($fc, $fcred, $d);
    left_out('bytes not of the digest', $fc, $res->{json} || {}, $p2,
             'two.png', qr/digest/);
    is(scalar(files_of('http://f.test')), 0, 'no file');
}

# an answer of more bytes than the document says (100; the server sends
# 4096, over F's tent_max_attachment_size 3000 too): cut at the size
{
    my $d = $ucopy->();
    for my $p (@{ $d->{posts} }) {
        $_->{size} = 100 for map { @{ $_->{attachments} || [] } }
                             @{ $p->{versions} };
    }
    $res = import_to($fc, $fcred, $d, '?merge=1');
    left_out('too many bytes', $fc, $res->{json} || {}, $p3, 'three.png',
             qr/more bytes than its size/);
    is(scalar(files_of('http://f.test')), 0, 'no file');
}

# a hostile server for the URLs: one that never answers (bounded by
# tent_outbound_timeout), one that sends 10 MB chunked (cut at the size
# the document says); the post kept, each attachment left out
{
    my $rx = Tent::Receiver->start(rules => [
        { path => '^/hang', action => 'hang' },
        { path => '^/big', action => { do => 'big', chunked => 1,
                                       size => 10 * 1024 * 1024 } },
    ]);
    my ($gc, $gcred) = client_of('g.test');
    my $d = $ucopy->();
    $d->{posts} = [grep { $_->{id} eq $p1 || $_->{id} eq $p3 }
                   @{ $d->{posts} }];
    for my $p (@{ $d->{posts} }) {
        $_->{url} = $rx->url . ($p->{id} eq $p1 ? '/hang' : '/big')
            for map { @{ $_->{attachments} || [] } } @{ $p->{versions} };
        $_->{size} = 100 for map { @{ $_->{attachments} || [] } }
                             @{ $p->{versions} };
    }
    $res = import_to($gc, $gcred, $d);
    is($res->{status}, 200, 'a hostile URL server: the import answers')
        or diag $res->{body};
    left_out('an answer that never comes', $gc, $res->{json} || {}, $p1,
             'one.png', qr/timed out|fetch failed/);
    left_out('10 MB chunked', $gc, $res->{json} || {}, $p3, 'three.png',
             qr/more bytes than its size/);
    is(scalar(files_of('http://g.test')), 0, 'no file');
    ok(scalar($rx->requests(path => qr{^/big})) >= 1, 'the big one asked');
    $rx->stop;
}

# the posts' batch not written after the counts were taken: they go back,
# and the file they brought with them.  The import waits on a slow URL
# (after pass 1, before the counts are taken) while the post that is the
# batch's first row is created on H: the batch's guard fails.
{
    my $rx = Tent::Receiver->start(rules => [
        { path => '^/slow', action => { status => 404, delay => 3 } } ]);
    my ($hc, $hcred) = client_of('h.test');
    my $d = $copy->();
    my ($pp3) = grep { $_->{id} eq $p3 } @{ $d->{posts} };
    my ($pp1) = grep { $_->{id} eq $p1 } @{ $d->{posts} };
    $_->{url} = $rx->url . '/slow', delete $_->{data}
        for map { @{ $_->{attachments} || [] } } @{ $pp1->{versions} };
    $d->{posts} = [$pp3, $pp1];
    my $out = "$ROOT/import-race.json";
    my $pid = fork // die;
    if (!$pid) {
        my $r = import_to($hc, $hcred, $d);
        # _exit: the END block would stop the test's nginx
        open my $fh, '>', $out or POSIX::_exit(1);
        print {$fh} $r->{body} // '';
        close $fh;
        POSIX::_exit(0);
    }
    ok(Tent::Util::wait_for(sub { scalar $rx->requests(path => qr{^/slow}) },
                            20), 'the import fetches the slow URL');
    my $v1 = $JSON->decode($JSON->encode($pp3->{versions}[0]));
    $v1->{entity} = 'http://h.test';
    $v1->{attachments} = [];
    delete $v1->{$_} for qw(version updated_at);
    $res = $hc->request(POST => '/posts', cred => $hcred, body => $v1);
    is($res->{status}, 200, 'meanwhile the post of the first row is made')
        or diag $res->{body};
    waitpid $pid, 0;
    my $r = eval { open my $fh, '<', $out or die; local $/; $JSON->decode(<$fh>) };
    my $pr = $r->{posts} || {};
    ok(!$pr->{written}, 'the posts not written') or diag $JSON->encode($r);
    like($pr->{error} // '', qr/written meanwhile/, 'the report says why');
    is(scalar(files_of('http://h.test')), 0,
       'the counts taken went back, and the file with them');
    $rx->stop;
}

# D: the document as it is, fetched from A
my ($dc, $dcred) = client_of('d.test');
$res = import_to($dc, $dcred, $udoc);
is($res->{status}, 200, 'the import by URL into D') or diag $res->{body};
$rep = $res->{json} || {};
ok($rep->{posts}{written}, 'posts written') or diag $JSON->encode($rep);
for my $t ([$p1, 'one.png', $shared, $dshared],
           [$p2, 'two.png', $shared, $dshared],
           [$p3, 'three.png', $other, $dother])
{
    my ($id, $name, $bytes, $digest) = @$t;
    $res = $dc->request(GET => "/posts/$id/attachments/$name");
    is($res->{status}, 200, "D serves $name");
    ok(($res->{body} // '') eq $bytes, "$name: the same bytes");
    is($res->{headers}{etag}, "\"$digest\"", "$name: ETag its digest");
}
is(scalar(files_of('http://d.test')), 2, 'D: two files');
$res = $dc->request(DELETE => "/posts/$p1", cred => $dcred);
$res = $dc->request(GET => "/posts/$p2/attachments/two.png");
ok(($res->{body} // '') eq $shared, 'D: p1 deleted, p2 keeps the bytes');
$res = $dc->request(DELETE => "/posts/$p2", cred => $dcred);
ok(!-f file_of('http://d.test', $dshared), 'D: both gone, the file too');

__DATA__

=== TEST 1: anonymous import
--- request
POST /tent/import
{}
--- error_code: 403
