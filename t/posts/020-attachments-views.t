# Attachments of posts and views: PUT /posts/:id with attachments
# (multipart), the reclaiming of attachment bytes no version of any post
# lists any more (checked in the LevelDB itself once nginx is stopped),
# clients racing on posts that share a file, and ?view= on GET /posts
# and GET /posts/:id, within what the principal may see.  A create with
# attachments as tent-client-ruby sends it is in t/posts/010-posts.t.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx parallel_clients);
use Tent::Client;
use JSON::PP;
use Digest::SHA qw(sha256_hex);

workers(2);
no_shuffle();
run_tests();

start_last_nginx();
my $stopped;
END { stop_last_nginx() unless $stopped }

my $c = Tent::Client->new;
my $T = 'https://tent.io/types/post/';
my $PHOTO = "${T}photo/v0.1.0";
my $ESSAY = "${T}essay/v0.1.0";
my $ENTITY = 'https://alice.example';
my $J = JSON::PP->new->utf8->canonical;

my ($wapp, $writer) = $c->authorized_app('write_posts,read_posts',
                                         post_types => 'all');
my ($rapp, $reader) = $c->authorized_app('read_posts', post_types => 'all');
my ($papp, $perms) = $c->authorized_app('read_posts,read_permissions',
                                        post_types => 'all');

my $B = '-----------TentAttachment';

# a multipart body as tent-client-ruby sends it
sub mp {
    my ($post, @files) = @_;
    my $json = ref $post ? $J->encode($post) : $post;
    my $body = "--$B\r\nContent-Disposition: form-data; name=\"post\"; "
             . "filename=\"post.json\"\r\nContent-Type: "
             . "application/vnd.tent.v0+json\r\n\r\n$json\r\n";
    for my $f (@files) {
        my ($name, $file, $type, $data) = @$f;
        $body .= "--$B\r\nContent-Disposition: form-data; name=\"$name\"; "
               . "filename=\"$file\"\r\nContent-Type: $type\r\n\r\n$data\r\n";
    }
    return $body . "--$B--\r\n";
}

sub send_mp {
    my ($method, $path, $post, @files) = @_;
    my $cred = $writer;
    $cred = shift @files if @files && ref $files[0] eq 'HASH';
    return $c->request($method => $path, cred => $cred,
        headers => { 'Content-Type' => "multipart/form-data; boundary=$B" },
        body => mp($post, @files));
}

sub attachment {
    my ($id, $name, %o) = @_;
    my $q = $o{version} ? "?version=$o{version}" : '';
    return $c->request(GET => "/posts/$id/attachments/$name$q",
                       cred => $o{cred});
}

sub public { { public => JSON::PP::true } }

# distinct bytes per test, so each digest is this test's alone
my $n = 0;
sub bytes { my ($tag) = @_; $n++; join '', "$tag-$n-", map { chr(($_ * 7 + $n) % 256) } 0 .. 2000 }

# ---- PUT /posts/:id with attachments

my $A = bytes('a');
my $Bb = bytes('b');

my $res = send_mp(POST => '/posts', { type => $PHOTO, content => { caption => 'v1' },
                                      permissions => public() },
                  ['photos', 'a.png', 'image/png', $A]);
is($res->{status}, 200, 'a photo post with a.png') or diag($res->{body});
my $pid = $res->{json}{id};

$res = send_mp(PUT => "/posts/$pid", { content => { caption => 'v2' } },
               ['photos', 'b.png', 'image/png', $Bb]);
is($res->{status}, 200, 'PUT multipart: 200') or diag($res->{body});
is($res->{json}{version}, 2, 'PUT multipart: a new version');
is($res->{json}{content}{caption}, 'v2', 'PUT multipart: the new content');
is_deeply($res->{json}{attachments},
          [{ category => 'photos', type => 'image/png', name => 'b.png',
             size => length $Bb }],
          'PUT multipart: the uploads replace the attachments');

ok(attachment($pid, 'b.png')->{body} eq $Bb, 'the new attachment is served');
is(attachment($pid, 'a.png')->{status}, 404,
   'the replaced one is not in the current version');
ok(attachment($pid, 'a.png', version => 1)->{body} eq $A,
   'version 1 still serves its own attachment');
is(attachment($pid, 'b.png', version => 1)->{status}, 404,
   'and not version 2\'s');
$res = $c->request(GET => "/posts/$pid?version=1");
is_deeply([map { $_->{name} } @{ $res->{json}{attachments} }], ['a.png'],
          'GET ?version=1 lists a.png');

$res = $c->request(PUT => "/posts/$pid", cred => $writer,
                   body => { content => { caption => 'v3' } });
is("$res->{status} $res->{json}{version}", '200 3', 'a JSON PUT: version 3');
is_deeply([map { $_->{name} } @{ $res->{json}{attachments} }], ['b.png'],
          'a JSON PUT keeps the attachments');
ok(attachment($pid, 'b.png')->{body} eq $Bb, 'and they are served');

$res = send_mp(PUT => "/posts/$pid", { content => { caption => 'big' } },
               ['photos', 'big.bin', 'application/octet-stream', 'x' x 5000]);
is($res->{status}, 413, 'PUT with an attachment over tent_max_attachment_size: 413');
like($res->{body}, qr/"error"/, 'a JSON error');
$res = send_mp(PUT => "/posts/$pid", { content => { caption => 'bad' } },
               ['photos', 'x.png', "image/png\x01", 'x']);
is($res->{status}, 422, 'PUT with a control character in a part\'s type: 422');
$res = send_mp(PUT => "/posts/$pid", { content => { caption => 'ro' } }, $reader,
               ['photos', 'r.png', 'image/png', 'r']);
is($res->{status}, 403, 'PUT multipart without write_posts: 403');
$res = $c->request(PUT => "/posts/$pid", cred => $writer,
    headers => { 'Content-Type' => "multipart/form-data; boundary=$B" },
    body => "--$B\r\nbroken");
is($res->{status}, 400, 'PUT with a broken multipart body: 400');
$res = $c->request(PUT => "/posts/$pid", cred => $writer,
    headers => { 'Content-Type' => "multipart/form-data; boundary=$B" },
    body => "--$B\r\nContent-Type: image/png\r\n\r\nno post\r\n--$B--\r\n");
is($res->{status}, 400, 'PUT multipart without the post: 400');
$res = send_mp(PUT => "/posts/$pid", { content => { caption => 5 } },
               ['photos', 'c.png', 'image/png', 'c']);
is($res->{status}, 422, 'PUT multipart with invalid content: 422');
is($c->request(GET => "/posts/$pid")->{json}{version}, 3,
   'none of the refused PUTs made a version');

$res = $c->request(PUT => "/posts/$pid", cred => $writer,
                   body => { version => 1 });
is("$res->{status} $res->{json}{version}", '200 4', 'revert to version 1');
is_deeply([map { $_->{name} } @{ $res->{json}{attachments} }], ['a.png'],
          'a revert brings back that version\'s attachments');
ok(attachment($pid, 'a.png')->{body} eq $A, 'and serves them');

my ($C1, $C2) = (bytes('c1'), bytes('c2'));
$res = send_mp(PUT => "/posts/$pid", { content => { caption => 'two' } },
               ['photos[0]', 'c1.png', 'image/png', $C1],
               ['photos[1]', 'c2.txt', 'text/plain', $C2]);
is_deeply([map { "$_->{category} $_->{name}" } @{ $res->{json}{attachments} }],
          ['photos c1.png', 'photos c2.txt'], 'PUT with two files, photos[n]');
ok(attachment($pid, 'c2.txt')->{body} eq $C2, 'both served');

my $ppriv = send_mp(POST => '/posts', { type => $PHOTO, content => {} },
                    ['photos', 'p.png', 'image/png', 'private']);
$res = send_mp(PUT => "/posts/$ppriv->{json}{id}", { content => {} },
               ['photos', 'q.png', 'image/png', 'still private']);
is($res->{status}, 200, 'PUT multipart on a private post');
is(attachment($ppriv->{json}{id}, 'q.png')->{status}, 404,
   'its new attachment: 404 anonymous');
is(attachment($ppriv->{json}{id}, 'q.png', cred => $reader)->{body},
   'still private', 'and served with read_posts');

# ---- reclaiming bytes: counted references per digest

my %expect;    # what => [digest, 1: the bytes must be there, 0: gone]
sub expect { my ($what, $bytes, $kept) = @_; $expect{$what} = [sha256_hex($bytes), $kept] }

# two posts share one file; the second keeps it when the first goes
my $S = bytes('shared');
my $x = send_mp(POST => '/posts', { type => $PHOTO, content => {},
                                    permissions => public() },
                ['photos', 's.png', 'image/png', $S]);
my $y = send_mp(POST => '/posts', { type => $PHOTO, content => {},
                                    permissions => public() },
                ['photos', 's.png', 'image/png', $S]);
is($c->request(DELETE => "/posts/$x->{json}{id}", cred => $writer)->{status},
   200, 'delete the first of two posts sharing a file');
ok(attachment($y->{json}{id}, 's.png')->{body} eq $S,
   'the other still serves it');
is($c->request(DELETE => "/posts/$y->{json}{id}", cred => $writer)->{status},
   200, 'delete the second');
is(attachment($y->{json}{id}, 's.png')->{status}, 404, 'gone with it');
expect('shared by two posts, both deleted', $S, 0);

# the same bytes again once reclaimed: stored anew
my $S2 = bytes('again');
my $g = send_mp(POST => '/posts', { type => $PHOTO, content => {},
                                    permissions => public() },
                ['photos', 'g.png', 'image/png', $S2]);
$c->request(DELETE => "/posts/$g->{json}{id}", cred => $writer);
$g = send_mp(POST => '/posts', { type => $PHOTO, content => {},
                                 permissions => public() },
             ['photos', 'g2.png', 'image/png', $S2]);
ok(attachment($g->{json}{id}, 'g2.png')->{body} eq $S2,
   'bytes reclaimed, then uploaded again: served');
expect('reclaimed, then uploaded again', $S2, 1);

# versions share a file: deleting one version keeps it for the other
my $T1 = bytes('versions');
my $z = send_mp(POST => '/posts', { type => $PHOTO, content => { caption => 'one' },
                                    permissions => public() },
                ['photos', 't.png', 'image/png', $T1]);
my $zid = $z->{json}{id};
$c->request(PUT => "/posts/$zid", cred => $writer,
            body => { content => { caption => 'two' } });
is($c->request(DELETE => "/posts/$zid?version=1", cred => $writer)->{status},
   200, 'delete version 1 of two that list the same file');
ok(attachment($zid, 't.png')->{body} eq $T1, 'version 2 still serves it');
is($c->request(DELETE => "/posts/$zid?version=2", cred => $writer)->{status},
   200, 'delete the only version left');
expect('shared by two versions, both deleted', $T1, 0);

# a version whose file was replaced: deleting it reclaims the old file only
my ($U, $V) = (bytes('old'), bytes('new'));
my $w = send_mp(POST => '/posts', { type => $PHOTO, content => {},
                                    permissions => public() },
                ['photos', 'u.png', 'image/png', $U]);
my $wid = $w->{json}{id};
send_mp(PUT => "/posts/$wid", { content => {} }, ['photos', 'v.png', 'image/png', $V]);
is($c->request(DELETE => "/posts/$wid?version=1", cred => $writer)->{status},
   200, 'delete the version with the replaced file');
ok(attachment($wid, 'v.png')->{body} eq $V, 'the current file is served');
expect('replaced, its version deleted', $U, 0);
expect('the replacement', $V, 1);

# the same file twice in one post, then the post deleted
my $D = bytes('twice');
my $d2 = send_mp(POST => '/posts', { type => $PHOTO, content => {},
                                     permissions => public() },
                 ['photos[0]', 'd1.png', 'image/png', $D],
                 ['photos[1]', 'd2.png', 'image/png', $D]);
ok(attachment($d2->{json}{id}, 'd2.png')->{body} eq $D,
   'one file twice in a post');
$c->request(DELETE => "/posts/$d2->{json}{id}", cred => $writer);
expect('twice in one deleted post', $D, 0);

# a retried create gives back the references of the retry
my $R = bytes('retry');
my @r = map {
    $c->request(POST => '/posts', cred => $writer,
        headers => { 'Content-Type' => "multipart/form-data; boundary=$B",
                     'Idempotency-Key' => 'gc-retry' },
        body => mp({ type => $PHOTO, content => {}, permissions => public() },
                   ['photos', 'r.png', 'image/png', $R]))
} 1 .. 2;
is($r[1]{json}{id}, $r[0]{json}{id}, 'a retried create with a file: the same post');
$c->request(DELETE => "/posts/$r[0]{json}{id}", cred => $writer);
expect('a retried create, deleted', $R, 0);

# a refused PUT (403) takes no reference; the post's own file stays
expect('versions 1 and 4 of a post', $A, 1);
expect('versions 2 and 3 of a post', $Bb, 1);
expect('the upload of a refused PUT', 'r', 0);

# ---- ?view=

my $E1 = bytes('view-png');
my $views = {
    summary => { content => ['/title', '/excerpt', '/missing'] },
    pics    => { content => ['/title'], attachments => [{ category => 'photos' }] },
    bytype  => { attachments => [{ type => 'text/plain' }, { name => 'a.png' }] },
    nothing => { attachments => [{}] },
    escapes => { content => ['/a~1b', '/m~0n', '/tags/1', '/tags/01', '/permissions'] },
};
my $essay = { title => 'T', excerpt => '<p>e</p>', body => '<p>b</p>',
              tags => ['x', 'y'], 'a/b' => 1, 'm~n' => 2 };
$res = send_mp(POST => '/posts', { type => $ESSAY, content => $essay,
                                   views => $views, permissions => public() },
               ['photos', 'a.png', 'image/png', $E1],
               ['docs', 'c.txt', 'text/plain', 'text']);
is($res->{status}, 200, 'an essay with views and two attachments') or diag($res->{body});
my $eid = $res->{json}{id};

sub view { my ($v, %o) = @_; $c->request(GET => "/posts/$eid?view=$v", cred => $o{cred}) }
my $full = $c->request(GET => "/posts/$eid")->{json};

is_deeply(view('full')->{json}, $full, 'view=full is the default');
is_deeply($c->request(GET => "/posts/$eid?view=")->{json}, $full,
          'an empty view is the default');
$res = view('meta')->{json};
ok(!exists $res->{content} && !exists $res->{attachments},
   'view=meta: no content, no attachments');
is_deeply([sort keys %$res], [sort grep { !/^(content|attachments)$/ } keys %$full],
          'view=meta: every other field');
is_deeply(view('summary')->{json}{content},
          { title => 'T', excerpt => '<p>e</p>', missing => undef },
          'a named view: the content its pointers name, null when absent');
is(scalar @{ view('summary')->{json}{attachments} }, 2,
   'a view without attachment selectors keeps them all');
$res = view('pics')->{json};
is_deeply([map { $_->{name} } @{ $res->{attachments} }], ['a.png'],
          'a view selecting by category');
is_deeply($res->{content}, { title => 'T' }, 'with its content');
is_deeply([map { $_->{name} } @{ view('bytype')->{json}{attachments} }],
          ['a.png', 'c.txt'], 'selectors are ORed (by type, by name)');
is_deeply(view('bytype')->{json}{content}, {},
          'a view without content pointers: empty content');
is_deeply(view('nothing')->{json}{attachments}, [],
          'an empty selector selects nothing');
is_deeply(view('escapes')->{json}{content},
          { 'a/b' => 1, 'm~n' => 2, 1 => 'y', '01' => undef,
            permissions => undef },
          'pointers: ~1 and ~0, array indexes, and nothing outside content');
$res = view('unknown')->{json};
is_deeply($res->{content}, {}, 'an unknown view: empty content (tentd)');
is(scalar @{ $res->{attachments} }, 2, 'and every attachment');
is(view('%6Deta')->{json}{content}, undef, 'the view name is percent-decoded');
ok(!grep({ exists $_->{digest} } map { @{ view($_)->{json}{attachments} || [] } }
         qw(full summary pics bytype unknown)), 'no view shows a digest');
ok(!exists view('summary')->{json}{received_at},
   'a view keeps the audience\'s fields: no received_at for anonymous');
ok(exists view('summary', cred => $reader)->{json}{received_at},
   'received_at for an app');

$res = $c->request(GET => "/posts/$eid?view=summary&version=1");
is_deeply($res->{json}{content}{title}, 'T', 'a view of ?version=n');
$res = $c->request(GET => "/posts/$eid/versions?view=summary");
is($res->{status}, 200, 'GET /posts/:id/versions in a view');
is_deeply([map { $_->{content} } @{ $res->{json} || [] }],
          [{ title => 'T', excerpt => '<p>e</p>', missing => undef }],
          'each version in the view: its pointers only');
$res = $c->request(GET => "/posts/$eid/versions?view=meta");
ok(@{ $res->{json} || [] } && !grep({ exists $_->{content} } @{ $res->{json} }),
   'versions in view=meta: no content');

# the feed
$res = $c->request(GET => '/posts?view=meta&post_types='
                   . Tent::Client::uri_escape($ESSAY));
ok(@{ $res->{json} } && !grep({ exists $_->{content} } @{ $res->{json} }),
   'GET /posts?view=meta: no content in any post');
$res = $c->request(GET => '/posts?view=pics&limit=3&post_types='
                   . Tent::Client::uri_escape($ESSAY) . ','
                   . Tent::Client::uri_escape($PHOTO));
my ($mine) = grep { $_->{id} eq $eid } @{ $res->{json} };
is_deeply($mine->{content}, { title => 'T' }, 'GET /posts?view=pics: the essay');
ok(!grep({ $_->{id} ne $eid && %{ $_->{content} } } @{ $res->{json} }),
   'other posts have no such view: empty content');
like($res->{headers}{link} // '', qr/view=pics/, 'the Link pages keep the view');
$res = $c->request(GET => '/posts?view=%FF');
is($res->{status}, 400, 'a view that is not UTF-8: 400 as any parameter');

# views never show more than the full post would
my $secret = $c->request(POST => '/posts', cred => $writer, body => {
    type => $ESSAY, content => { title => 'S', body => 'secret' },
    views => { summary => { content => ['/title'] } } });
my $sid = $secret->{json}{id};
is($c->request(GET => "/posts/$sid?view=meta")->{status}, 404,
   'a private post with view=meta: 404 anonymous');
is($c->request(GET => "/posts/$sid?view=summary")->{status}, 404,
   'and with a named view');
ok(!grep({ $_->{id} eq $sid } @{ $c->request(GET => '/posts?view=meta')->{json} }),
   'absent from the anonymous feed in a view');
$res = $c->request(GET => "/posts/$sid?view=meta", cred => $reader);
is($res->{status}, 200, 'read_posts sees it in a view');
is_deeply($res->{json}{permissions}, { public => JSON::PP::false },
          'without read_permissions: only public, in a view too');
for my $who ([$reader, 'read_posts'], [$perms, 'read_permissions']) {
    is_deeply(view('meta', cred => $who->[0])->{json}{permissions},
              $c->request(GET => "/posts/$eid", cred => $who->[0])->{json}{permissions},
              "$who->[1]: the permissions of the full post, no more");
}

# invalid views are refused
for my $bad ([{ x => 5 }, 'a view that is not an object'],
             [{ x => { content => '/title' } }, 'content not an array'],
             [{ x => { content => ['title'] } }, 'content not a JSON pointer'],
             [{ x => { content => [5] } }, 'a pointer not a string'],
             [{ x => { attachments => {} } }, 'attachments not an array'],
             [{ x => { attachments => ['a.png'] } }, 'a selector not an object']) {
    $res = $c->request(POST => '/posts', cred => $writer, body => {
        type => $ESSAY, content => { body => 'b' }, views => $bad->[0] });
    is($res->{status}, 422, "views: $bad->[1]: 422");
    like($res->{json}{error} // '', qr/view/, "views: $bad->[1]: the error says why");
}
$res = $c->request(PUT => "/posts/$eid", cred => $writer,
                   body => { views => { x => [] } });
is($res->{status}, 422, 'PUT with an invalid view: 422');
$res = $c->request(PUT => "/posts/$eid", cred => $writer,
                   body => { views => { short => { content => ['/body'] } } });
is($res->{status}, 200, 'PUT with new views');
is_deeply(view('short')->{json}{content}, { body => '<p>b</p>' }, 'the new view works');

# ---- concurrent creates and deletes of posts sharing one file

my $Q = bytes('race');
my $keep = send_mp(POST => '/posts', { type => $PHOTO, content => {},
                                       permissions => public() },
                   ['photos', 'keep.png', 'image/png', $Q]);
my $W = bytes('race-alone');
my @lines = parallel_clients(4, 60, sub {
    my ($i, $iter) = @_;
    return () if $iter >= 6;
    my @out;
    for my $bytes ($Q, $W) {
        my $p = send_mp(POST => '/posts', { type => $PHOTO, content => {},
                                            permissions => public() },
                        ['photos', 'q.png', 'image/png', $bytes]);
        push @out, "create $p->{status}";
        my $got = attachment($p->{json}{id}, 'q.png');
        push @out, 'read ' . ($got->{status} == 200 && $got->{body} eq $bytes
                              ? 'ok' : "bad $got->{status}");
        push @out, 'delete ' . $c->request(DELETE => "/posts/$p->{json}{id}",
                                           cred => $writer)->{status};
    }
    return @out;
});
my %seen;
$seen{$_}++ for @lines;
is_deeply(\%seen, { 'create 200' => 48, 'read ok' => 48, 'delete 200' => 48 },
          '4 clients creating, reading, deleting posts that share files at once')
    or diag(join ',', map { "$_: $seen{$_}" } sort keys %seen);
ok(attachment($keep->{json}{id}, 'keep.png')->{body} eq $Q,
   'a post holding the file meanwhile still serves it');
expect('raced, and held by a post', $Q, 1);
expect('raced, held by none at the end', $W, 0);

# ---- the store: which bytes are there (nginx stopped: LevelDB is one process)

{
    my $root = Tent::Util::servroot();
    
    stop_last_nginx();
    $stopped = 1;

    my %rows;
    for (Tent::Util::ldb_rows("$root/tent_temp/db")) {
        chomp;
        my ($k, $v) = split /\t/;
        $k = pack 'H*', $k;
        $rows{$k} = $v eq '-' ? '-' : pack 'H*', $v;
    }
    ok(scalar keys %rows, 'the store read') or diag("helper: $?");

    # the bytes are files, <store>/attachments/<entity>/<ab>/<cdef...>
    # (docs/store.md); no "b" row is written any more
    my $dir = "$root/tent_temp/attachments/"
              . substr(Digest::SHA::sha256_hex($ENTITY), 0, 32);
    my $file = sub { my $d = shift; "$dir/" . substr($d, 0, 2) . '/' . substr($d, 2) };

    for my $what (sort keys %expect) {
        my ($digest, $kept) = @{ $expect{$what} };
        my $ckey = "$ENTITY\0B$digest";
        if ($kept) {
            ok(-f $file->($digest), "$what: bytes still listed are kept (their file)");
            like($rows{$ckey} // '', qr/^\{"n":[1-9]/, "$what: with their count");
        } else {
            ok(!-e $file->($digest), "$what: bytes no version lists are gone (their file)");
            ok(!exists $rows{$ckey}, "$what: and their count");
        }
    }

    # every count matches the versions that list the digest
    my %listed;
    for my $k (grep { /^\Q$ENTITY\E\0v/ } keys %rows) {
        my $v = $rows{$k};
        next if $v eq '-';
        my $p = eval { $J->decode($v) } or next;
        $listed{ $_->{digest} }++ for grep { $_->{digest} } @{ $p->{attachments} || [] };
    }
    my %counted;
    for my $k (grep { /^\Q$ENTITY\E\0B/ } keys %rows) {
        my ($d) = $k =~ /\0B(.*)$/s;
        $counted{$d} = $J->decode($rows{$k})->{n};
    }
    is_deeply(\%counted, \%listed,
              'each count is the number of versions listing its digest');
    my %b = map { m{/(..)/([0-9a-f]{62})$} ? ("$1$2" => 1) : () } glob("$dir/*/*");
    is_deeply(\%b, { map { $_ => 1 } keys %listed },
              'files are kept exactly for the digests some version lists');
    ok(!grep({ /^\Q$ENTITY\E\0b/ } keys %rows), 'and no bytes are LevelDB rows');
}

__DATA__

=== TEST 1: the server the tests above run against
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    tent_max_attachment_size 4k;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/profile
--- error_code: 200
