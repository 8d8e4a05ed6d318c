# Posts (spec 6, 7.5-7.8): every type valid and invalid, the query
# parameters, pagination over 250 posts both ways, versions and delete,
# idempotent create, and the permission matrix on every read route.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx);
use Tent::Client;
use JSON::PP;

no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $c = Tent::Client->new;
my $T = 'https://tent.io/types/post/';
my $STATUS = "${T}status/v0.1.0";
my $ENTITY = 'https://alice.example';

my ($wapp, $writer) = $c->authorized_app('write_posts,read_posts,import_posts',
                                         post_types => 'all');
my ($rapp, $reader) = $c->authorized_app('read_posts', post_types => 'all');
my ($sapp, $status_reader) = $c->authorized_app('read_posts',
                                                post_types => $STATUS);
my ($napp, $noread) = $c->authorized_app('read_groups');
my ($eapp, $essayist) = $c->authorized_app('write_posts',
                                           post_types => "${T}essay/v0.1.0");

sub post {
    my ($body, %o) = @_;
    return $c->post($o{cred} || $writer, $body, headers => $o{headers});
}

sub public { { public => JSON::PP::true } }

# ---- every type, valid and invalid

my @valid = (
  [status => { text => 'Just landed.' }],
  [status => { location => { type => 'Point', coordinates => [50.9, 4.0] } }],
  [status => { text => "\x{e9}" x 256 }],
  [essay => { title => 'T', excerpt => '<p>e</p>', body => '<p>b</p>',
              tags => ['a'] }],
  [photo => { caption => 'c', albums => ['x'], tags => [], exif => {} }],
  [album => { title => 't', photos => ['p1', 'p2'], cover => 'p1' }],
  [repost => { entity => 'https://bob.example', id => 'abc' }],
  [profile => { types => ['https://tent.io/types/info/basic/v0.1.0'],
                action => 'update' }],
  [delete => { id => 'abc' }],
  [follower => { id => 'f1', entity => 'https://bob.example',
                 action => 'create' }],
  [following => { id => 'f2', entity => 'https://bob.example',
                  action => 'delete' }],
);

for my $v (@valid) {
    my ($name, $content) = @$v;
    my $res = post({ type => "$T$name/v0.1.0", content => $content,
                     permissions => public() });
    is($res->{status}, 200, "$name: valid") or diag($res->{body});
}

my $res = post({ type => 'https://example.org/types/custom/v1.0.0',
                 content => { anything => [1, 2, { x => 'y' }] },
                 permissions => public() });
is($res->{status}, 200, 'an unknown type is stored as given');
is_deeply($res->{json}{content}, { anything => [1, 2, { x => 'y' }] },
          'with its content intact');

my @invalid = (
  [status => { text => "\x{e9}" x 257 }, qr/256/, 'status of 257 characters'],
  [status => {}, qr/text or location/, 'empty status'],
  [status => { text => 5 }, qr/text/, 'status text not a string'],
  [status => { location => { type => 'Point', coordinates => [1] } },
   qr/coordinates|location/, 'a location with one coordinate'],
  [essay => { title => 'no body' }, qr/body/, 'essay without body'],
  [album => { title => 'x' }, qr/photos/, 'album without photos'],
  [repost => { id => 'x' }, qr/entity/, 'repost without entity'],
  [repost => { entity => 'ftp://x', id => 'x' }, qr/entity/,
   'repost with a non-http entity'],
  [profile => { types => [], action => 'explode' }, qr/action/,
   'profile with an unknown action'],
  [delete => {}, qr/id/, 'delete without id'],
  [follower => { id => 'x', entity => 'https://b.example' }, qr/action/,
   'follower without action'],
);

for my $v (@invalid) {
    my ($name, $content, $re, $what) = @$v;
    $res = post({ type => "$T$name/v0.1.0", content => $content });
    is($res->{status}, 422, "$what: 422");
    like($res->{json}{error} // '', $re, "$what: the error says why");
}

$res = post({ content => { text => 'x' } });
is($res->{status}, 422, 'no type: 422');
$res = post({ type => $STATUS });
is($res->{status}, 422, 'no content: 422');
$res = post({ type => $STATUS, content => { text => 'x' },
              mentions => [{ post => 'x' }] });
is($res->{status}, 422, 'a mention without entity: 422');
$res = post('{"type":');
is($res->{status}, 400, 'broken JSON: 400');
$res = post({ type => $STATUS, content => { text => 'x' } }, cred => $reader);
is("$res->{status} $res->{json}{error}", '403 Unauthorized',
   'POST /posts without write_posts: 403');
$res = post({ type => $STATUS, content => { text => 'x' } }, cred => $essayist);
is($res->{status}, 403, 'POST of a type the authorization lacks: 403');
$res = $c->request(POST => '/posts',
                   body => { type => $STATUS, content => { text => 'x' } });
is($res->{status}, 403, 'POST /posts anonymous: 403');

# the server sets id, entity, app, received_at, version; keeps published_at
$res = post({ type => $STATUS, content => { text => 'fields' },
              published_at => 1356283728000, id => 'mine', entity => 'https://x',
              permissions => public() }, cred => ($c->authorized_app(
                  'write_posts', post_types => 'all'))[1]);
is($res->{status}, 200, 'a post with fields the server sets');
like($res->{json}{id}, qr/^[A-Za-z0-9_-]{22}$/, 'the server chose the id');
is($res->{json}{entity}, $ENTITY, 'the entity is ours');
is($res->{json}{published_at}, 1356283728, 'published_at in ms is divided');
is($res->{json}{app}{name}, 'Test App', 'the app is the authorization\'s');
is($res->{json}{version}, 1, 'version 1');

# ---- retry-safe create

my $first = post({ type => $STATUS, content => { text => 'once' },
                   permissions => public() },
                 headers => { 'Idempotency-Key' => 'k-123' });
my $again = post({ type => $STATUS, content => { text => 'once' },
                   permissions => public() },
                 headers => { 'Idempotency-Key' => 'k-123' });
is($again->{status}, 200, 'the same Idempotency-Key again: 200');
is($again->{json}{id}, $first->{json}{id}, 'and the same post');
$res = $c->request(GET => '/posts?limit=200', cred => $reader);
is(scalar(grep { ($_->{content}{text} // '') eq 'once' } @{ $res->{json} }), 1,
   'stored once');

my $imp = { type => $STATUS, content => { text => 'imported' }, id => 'imp1',
            entity => 'https://old.example', received_at => 1300000000,
            permissions => public() };
$res = post($imp);
is("$res->{status} $res->{json}{id} $res->{json}{entity}",
   '200 imp1 https://old.example', 'import keeps id and entity');
$res = post($imp);
is("$res->{status} $res->{json}{id}", '200 imp1', 'the same import again: the same post');
$res = $c->request(GET => '/posts?entity=https%3A%2F%2Fold.example',
                   cred => $reader);
is(scalar @{ $res->{json} }, 1, 'stored once');
$res = $c->request(GET => '/posts/https%3A%2F%2Fold.example/imp1', cred => $reader);
is("$res->{status} $res->{json}{content}{text}", '200 imported',
   'GET /posts/:entity/:id');

# ---- the permission matrix: principals x visibility x read routes

my $pub = post({ type => $STATUS, content => { text => 'matrix public' },
                 permissions => public() })->{json};
my $priv = post({ type => $STATUS, content => { text => 'matrix private' } })->{json};
my $ent = post({ type => $STATUS, content => { text => 'matrix entities' },
                 permissions => { entities => { 'https://bob.example' => JSON::PP::true } } })->{json};
my $essay = post({ type => "${T}essay/v0.1.0", content => { body => 'matrix essay' } })->{json};

my %principals = (
    anonymous => undef,
    'app without read_posts' => $noread,
    'read_posts, all types' => $reader,
    'read_posts, status only' => $status_reader,
);

my %sees = (
    anonymous => { $pub->{id} => 1 },
    'app without read_posts' => { $pub->{id} => 1 },
    'read_posts, all types' => { map { $_->{id} => 1 } $pub, $priv, $ent, $essay },
    'read_posts, status only' => { map { $_->{id} => 1 } $pub, $priv, $ent },
);

for my $who (sort keys %principals) {
    my $cred = $principals{$who};
    my @cr = $cred ? (cred => $cred) : ();
    my $list = $c->request(GET => '/posts?limit=200', @cr)->{json};
    my %listed = map { $_->{id} => 1 } @$list;
    my $count = $c->request(GET => '/posts/count', @cr)->{body};
    my $head = $c->request(HEAD => '/posts', @cr)->{headers}{count};

    is($count, scalar @$list, "$who: /posts/count = the list's length");
    is($head, $count, "$who: HEAD Count = /posts/count");

    for my $p ($pub, $priv, $ent, $essay) {
        my $what = $p->{content}{text} // $p->{content}{body};
        my $want = $sees{$who}{ $p->{id} } ? 1 : 0;
        is($listed{ $p->{id} } ? 1 : 0, $want, "$who: list shows '$what': $want");
        my $one = $c->request(GET => "/posts/$p->{id}", @cr);
        is($one->{status}, $want ? 200 : 404, "$who: GET '$what'");
        my $vers = $c->request(GET => "/posts/$p->{id}/versions", @cr);
        is($vers->{status}, $want ? 200 : 404, "$who: versions of '$what'");
        my $ids = $c->request(GET => "/posts?limit=200&since_id=$p->{id}", @cr);
        unlike(join(',', map { $_->{id} } @{ $ids->{json} || [] }),
               qr/\Q$priv->{id}\E/, "$who: since_id cursor leaks nothing")
            unless $sees{$who}{ $priv->{id} };
        my $v1 = $c->request(GET => "/posts/$p->{id}?version=1", @cr);
        is($v1->{status}, $want ? 200 : 404, "$who: ?version=1 of '$what'");
    }

    # nothing private in what anyone else gets
    unless ($sees{$who}{ $priv->{id} }) {
        ok(!grep({ !$_->{permissions}{public} } @$list),
           "$who: no private post in the list");
    }
    ok(!grep({ exists $_->{received_at} } @$list), "$who: no received_at")
        unless $cred && $cred->{access_token};
}

# extended permissions only with read_permissions
$res = $c->request(GET => "/posts/$ent->{id}", cred => $reader);
is_deeply($res->{json}{permissions}, { public => JSON::PP::false },
          'without read_permissions: permissions are {public}');
my ($pp, $perm_reader) = $c->authorized_app('read_posts,read_permissions',
                                            post_types => 'all');
$res = $c->request(GET => "/posts/$ent->{id}", cred => $perm_reader);
is($res->{json}{permissions}{entities}{'https://bob.example'}, JSON::PP::true,
   'with read_permissions: the entities');

# ---- versions, revert, delete

my $p = post({ type => $STATUS, content => { text => 'v1' },
               permissions => public() })->{json};
$res = $c->request(PUT => "/posts/$p->{id}", cred => $writer,
                   body => { content => { text => 'v2' } });
is("$res->{status} $res->{json}{version} $res->{json}{content}{text}",
   '200 2 v2', 'PUT: version 2');
$res = $c->request(PUT => "/posts/$p->{id}", cred => $writer,
                   body => { content => { text => 'x' x 300 } });
is($res->{status}, 422, 'PUT with invalid content: 422');
$res = $c->request(PUT => "/posts/$p->{id}", cred => $writer, body => { version => 1 });
is("$res->{status} $res->{json}{version} $res->{json}{content}{text}",
   '200 3 v1', 'PUT {"version": 1}: a version 3 copied from 1');
$res = $c->request(GET => "/posts/$p->{id}/versions");
is(join(',', map { "$_->{version}:$_->{content}{text}" } @{ $res->{json} }),
   '3:v1,2:v2,1:v1', 'versions, newest first');
$res = $c->request(GET => "/posts/$p->{id}?version=2");
is($res->{json}{content}{text}, 'v2', 'GET ?version=2');
$res = $c->request(PUT => "/posts/$p->{id}", cred => $reader, body => { content => {} });
is($res->{status}, 403, 'PUT without write_posts: 403');

$res = $c->request(DELETE => "/posts/$p->{id}?version=2", cred => $writer);
is($res->{status}, 200, 'DELETE ?version=2');
$res = $c->request(GET => "/posts/$p->{id}?version=2");
is($res->{status}, 404, 'that version is gone');
$res = $c->request(GET => "/posts/$p->{id}");
is($res->{json}{version}, 3, 'the post is still there');

$res = $c->request(DELETE => "/posts/$p->{id}", cred => $writer);
is("$res->{status} $res->{body}", '200 ', 'DELETE: 200, empty');
$res = $c->request(GET => "/posts/$p->{id}");
is($res->{status}, 404, 'the deleted post: 404');
$res = $c->request(GET => "/posts/$p->{id}/versions");
is($res->{status}, 404, 'and its versions');
$res = $c->request(GET => "/posts?limit=5&post_types=" .
                   Tent::Client::uri_escape("${T}delete/v0.1.0"));
is($res->{json}[0]{content}{id}, $p->{id}, 'a delete post names it');
is($res->{json}[0]{permissions}{public}, JSON::PP::true,
   'with the deleted post\'s permissions');
$res = $c->request(DELETE => "/posts/$p->{id}", cred => $writer);
is($res->{status}, 404, 'DELETE again: 404');

# ---- query parameters

my ($qapp, $qw) = $c->authorized_app('write_posts,read_posts,import_posts',
                                     post_types => 'all');
my @q;
for my $i (1 .. 6) {
    push @q, post({ type => $i % 2 ? $STATUS : "${T}essay/v0.1.0",
                    content => $i % 2 ? { text => "q$i" } : { body => "q$i" },
                    published_at => 1000000000 + 10 * $i,
                    entity => $i == 6 ? 'https://carol.example' : undef,
                    id => "query$i",
                    mentions => $i == 3 ? [{ entity => 'https://bob.example',
                                             post => 'bobpost' }] : [],
                    permissions => public() }, cred => $qw)->{json};
}
my $ids = sub { join ',', map { $_->{id} } @{ $_[0]{json} } };

$res = $c->request(GET => '/posts?sort_by=published_at&limit=3&since_time=1000000010&before_time=1000000060');
is($ids->($res), 'query5,query4,query3', 'sort_by=published_at with since_time/before_time');
$res = $c->request(GET => '/posts?sort_by=published_at&order=asc&limit=2&since_time=1000000010');
is($ids->($res), 'query2,query3', 'order=asc');
$res = $c->request(GET => '/posts?sort_by=published_at&limit=10&post_types=' .
                   Tent::Client::uri_escape("${T}essay/v0.1.0") . '&before_time=1000000100');
is($ids->($res), 'query4,query2', 'post_types, matched by base');
$res = $c->request(GET => '/posts?mentioned_entity=https%3A%2F%2Fbob.example', cred => $qw);
is($ids->($res), 'query3', 'mentioned_entity');
$res = $c->request(GET => '/posts?mentioned_post=bobpost', cred => $qw);
is($ids->($res), 'query3', 'mentioned_post');
$res = $c->request(GET => '/posts?entity=https%3A%2F%2Fcarol.example', cred => $qw);
is($ids->($res), 'query6', 'entity');
$res = $c->request(GET => '/posts?sort_by=published_at&limit=2&before_id=query4');
is($ids->($res), 'query3,query2', 'before_id');
$res = $c->request(GET => '/posts?sort_by=published_at&limit=2&since_id=query2');
is($ids->($res), 'query4,query3', 'since_id: the posts just after it, newest first');
$res = $c->request(GET => '/posts?sort_by=published_at&limit=10&until_id=query3&before_time=1000000100');
is($ids->($res), 'query5,query4', 'until_id');
$res = $c->request(GET => '/posts?since_id=nosuchpost');
is("$res->{status} $res->{body}", '200 []', 'an unknown cursor: an empty list');
$res = $c->request(GET => '/posts?limit=0');
is($res->{status}, 400, 'limit=0: 400');
$res = $c->request(GET => '/posts?sort_by=nonsense');
is($res->{status}, 400, 'an unknown sort_by: 400');
$res = $c->request(GET => '/posts?limit=500');
ok(@{ $res->{json} } <= 200, 'limit is at most 200');

# ---- /posts/:id/mentions: public posts that mention a post of ours

{
    my $target = post({ type => $STATUS, content => { text => 'talked about' },
                        permissions => public() })->{json};
    my @m;
    for my $i (1 .. 3) {
        push @m, post({ type => $STATUS, content => { text => "reply $i" },
                        mentions => [{ entity => $ENTITY, post => $target->{id} }],
                        permissions => $i == 2 ? {} : public() })->{json};
    }
    post({ type => $STATUS, content => { text => 'other entity, same id' },
           mentions => [{ entity => 'https://bob.example', post => $target->{id} }],
           permissions => public() });

    $res = $c->request(GET => "/posts/$target->{id}/mentions");
    is_deeply([map { $_->{post} } @{ $res->{json} }], [$m[2]{id}, $m[0]{id}],
              'mentions: the public replies, newest first');
    is_deeply([sort keys %{ $res->{json}[0] }], [qw(entity post type)],
              'mentions: entity, post and type');
    $res = $c->request(HEAD => "/posts/$target->{id}/mentions");
    is($res->{headers}{count}, 2, 'mentions: HEAD Count');
    $res = $c->request(GET => "/posts/$target->{id}/mentions?limit=1");
    like($res->{headers}{link}, qr{^</tent/posts/\Q$target->{id}\E/mentions\?limit=1&since_id=},
         'mentions: Link to its own path');
}

# ---- attachments, sent as tent-client-ruby sends them

{
    my $B = '-----------TentAttachment';
    my $png = join '', map { chr($_ % 256) } 0 .. 3000;
    my $mp = sub {
        my ($json, @files) = @_;
        my $body = "--$B\r\nContent-Disposition: form-data; name=\"post\"; "
                 . "filename=\"post.json\"\r\nContent-Type: "
                 . "application/vnd.tent.v0+json\r\n\r\n$json\r\n";
        for my $f (@files) {
            my ($name, $file, $type, $data) = @$f;
            $body .= "--$B\r\nContent-Disposition: form-data; name=\"$name\"; "
                   . "filename=\"$file\"\r\nContent-Type: $type\r\n\r\n"
                   . "$data\r\n";
        }
        return $body . "--$B--\r\n";
    };
    my $json = JSON::PP->new->utf8->encode({
        type => "${T}photo/v0.1.0", content => { caption => 'two photos' },
        permissions => { public => JSON::PP::true } });
    my $res = $c->request(POST => '/posts', cred => $writer,
        headers => { 'Content-Type' => "multipart/form-data;boundary=$B" },
        body => $mp->($json, ['photos[0]', 'a.png', 'image/png', $png],
                             ['photos[1]', 'b.txt', 'text/plain', "hello\r\n--not a boundary"]));
    is($res->{status}, 200, 'a photo post with two attachments') or diag($res->{body});
    is_deeply($res->{json}{attachments},
              [{ category => 'photos', type => 'image/png', name => 'a.png',
                 size => length $png },
               { category => 'photos', type => 'text/plain', name => 'b.txt',
                 size => 23 }],
              'the attachments: category, type, name, size');
    my $id = $res->{json}{id};

    $res = $c->request(GET => "/posts/$id/attachments/a.png",
                       headers => { Accept => 'image/png' });
    is($res->{status}, 200, 'GET an attachment');
    is($res->{headers}{'content-type'}, 'image/png', 'with its type');
    ok($res->{body} eq $png, 'and its bytes, all ' . length($png));
    $res = $c->request(GET => "/posts/$id/attachments/b.txt");
    is($res->{body}, "hello\r\n--not a boundary", 'a text attachment, CRLF inside');
    $res = $c->request(GET => "/posts/$id/attachments/a.png",
                       headers => { Accept => 'image/jpeg' });
    is($res->{status}, 404, 'another Accept type: 404');
    $res = $c->request(GET => "/posts/$id/attachments/c.png");
    is($res->{status}, 404, 'an unknown attachment: 404');
    $res = $c->request(GET => '/posts/' . Tent::Client::uri_escape($ENTITY)
                       . "/$id/attachments/a.png");
    is($res->{status}, 200, 'GET /posts/:entity/:id/attachments/:name');

    my $private = JSON::PP->new->utf8->encode({
        type => "${T}photo/v0.1.0", content => {} });
    $res = $c->request(POST => '/posts', cred => $writer,
        headers => { 'Content-Type' => "multipart/form-data; boundary=\"$B\"" },
        body => $mp->($private, ['photos', 'p.png', 'image/png', 'secret']));
    my $pid = $res->{json}{id};
    is($c->request(GET => "/posts/$pid/attachments/p.png")->{status}, 404,
       'an attachment of a private post: 404 for anonymous');
    is($c->request(GET => "/posts/$pid/attachments/p.png", cred => $reader)->{body},
       'secret', 'and readable with read_posts');

    $res = $c->request(POST => '/posts', cred => $writer,
        headers => { 'Content-Type' => "multipart/form-data; boundary=$B" },
        body => $mp->($json, ['photos', 'big.bin', 'application/octet-stream',
                              'x' x 5000]));
    is($res->{status}, 413, 'an attachment over tent_max_attachment_size: 413');
    like($res->{body}, qr/"error"/, 'a JSON error');

    $res = $c->request(POST => '/posts', cred => $writer,
        headers => { 'Content-Type' => "multipart/form-data; boundary=$B" },
        body => "--$B\r\nContent-Type: image/png\r\n\r\nno post\r\n--$B--\r\n");
    is("$res->{status} $res->{json}{error}", '400 The multipart body has no post',
       'a multipart body without the post: 400');
    $res = $c->request(POST => '/posts', cred => $writer,
        headers => { 'Content-Type' => "multipart/form-data; boundary=$B" },
        body => "--$B\r\nbroken");
    is($res->{status}, 400, 'a broken multipart body: 400');
}

# ---- pagination over 250 posts, forward and back

my ($papp, $pw) = $c->authorized_app('write_posts', post_types => 'all');
my %made;
for my $i (1 .. 250) {
    my $r = post({ type => 'https://example.org/types/page/v1.0.0',
                   content => { n => $i }, permissions => public() }, cred => $pw);
    $made{ $r->{json}{id} } = $i;
}
my $pt = 'post_types=' . Tent::Client::uri_escape('https://example.org/types/page/v1.0.0');
my (@seen, $next, $pages);
$res = $c->request(GET => "/posts?limit=40&$pt");
while (1) {
    $pages++;
    push @seen, map { $_->{id} } @{ $res->{json} };
    ($next) = ($res->{headers}{link} // '') =~ /<([^>]+)>; rel="next"/;
    last unless $next && $pages < 20;
    $res = $c->request(GET => "//$next");
}
is(scalar @seen, 250, 'next links: 250 posts');
my %u = map { $_ => 1 } @seen;
is(scalar keys %u, 250, 'next links: no repeats');
is(join(',', map { $made{$_} } @seen), join(',', reverse 1 .. 250),
   'next links: newest first, no gaps');
is($pages, 7, 'next links: 7 pages of 40');

my @back;
$res = $c->request(GET => "/posts?limit=40&$pt&before_id=$seen[-1]");
is(scalar @{ $res->{json} }, 0, 'nothing before the oldest');
$res = $c->request(GET => "/posts?limit=40&$pt&since_id=$seen[-1]");
$pages = 0;
while (1) {
    $pages++;
    unshift @back, map { $_->{id} } @{ $res->{json} };
    my ($prev) = ($res->{headers}{link} // '') =~ /<([^>]+)>; rel="prev"/;
    last unless $prev && @{ $res->{json} } && $pages < 20;
    $res = $c->request(GET => "//$prev");
}
is(join(',', map { $made{$_} } @back), join(',', reverse 2 .. 250),
   'prev links: from the oldest back up to the newest, no gaps, no repeats');
is($c->request(GET => "/posts/count?$pt")->{body}, 250, 'count with post_types');

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
