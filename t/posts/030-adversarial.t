# Findings 4, 6 and 12 of the adversarial review (issue #11), tried as an
# attacker would:
# - an import of an id we have answers as a read of it would: a post the
#   importer may not read is never shown, nor overwritten (an
#   Idempotency-Key does not open a way around the check);
# - a cursor (since_id, until_id, before_id, with *_entity, every sort,
#   both orders, lists, counts, HEAD, /posts/:id/mentions) naming a post
#   the reader may not see answers byte for byte as an unknown id, for
#   anonymous readers, a follower, an app whose read_posts is limited to
#   essays and an app without read_posts;
# - attachments cannot run on the entity's origin: every one sandboxed by
#   its CSP, active types (HTML, SVG, XHTML, XML, scripts, PDF, a list
#   with a comma) downloaded, never inline; nosniff on every answer.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx http_request);
use Tent::Client;
use Tent::Receiver;
use JSON::PP;
use File::Temp qw(tempdir);

workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $c = Tent::Client->new;
my $PORT = $ENV{TEST_NGINX_SERVER_PORT};
my $ENTITY = "http://127.0.0.1:$PORT";
my $BOB = 'https://bob.example';
my $T = 'https://tent.io/types/post/';
my $STATUS = "${T}status/v0.1.0";
my $ESSAY = "${T}essay/v0.1.0";
my $PHOTO = "${T}photo/v0.1.0";
my $J = JSON::PP->new->utf8->canonical;
my $esc = \&Tent::Client::uri_escape;

sub public { { public => JSON::PP::true } }

my ($oapp, $owner) = $c->authorized_app(
    'write_posts,read_posts,read_permissions,import_posts',
    post_types => 'all');
my (undef, $imp) = $c->authorized_app('import_posts', post_types => $ESSAY);
my (undef, $impr) = $c->authorized_app('import_posts,read_posts',
                                       post_types => $ESSAY);
my (undef, $essays) = $c->authorized_app('read_posts', post_types => $ESSAY);
my (undef, $noread) = $c->authorized_app('read_groups', post_types => 'all');
my (undef, $photos) = $c->authorized_app('write_posts', post_types => $PHOTO);

# a follower: a loopback receiver that answers the challenge
my $rx = Tent::Receiver->start;
my $res = $c->request(POST => '/followers',
                      body => { entity => $rx->url, types => ['all'],
                                notification_path => 'notifications/x' });
is($res->{status}, 200, 'a follower follows') or diag $res->{body};
my $fcred = { map { $_ => $res->{json}{$_} }
              qw(mac_key_id mac_key mac_algorithm) };

sub post {
    my ($cred, $post, %h) = @_;
    return $c->post_ok($cred, $post, headers => \%h);
}

# oldest first; the hidden posts sit between public ones, so a page placed
# at one of them would not be empty
my %p;
$p{P1} = post($owner, { type => $ESSAY, content => { body => 'first' },
                        permissions => public() });
my @mention = (mentions => [{ entity => $ENTITY, post => $p{P1}{id} }]);
$p{P2} = post($owner, { type => $STATUS, content => { text => 'second' },
                        permissions => public(), @mention });
$p{S} = post($owner, { type => $STATUS, content => { text => 'secret status' },
                       @mention });
$p{E} = post($owner, { type => $ESSAY, content => { body => 'secret essay' },
                       @mention });
$p{N} = post($owner, { type => $STATUS,
                       content => { text => 'secret to the follower' },
                       permissions => { entities => { $rx->url => JSON::PP::true } },
                       @mention });
$p{BP} = post($owner, { type => $STATUS, entity => $BOB, id => 'bobPublic1',
                        content => { text => 'bob public' },
                        permissions => public(), @mention });
$p{BS} = post($owner, { type => $STATUS, entity => $BOB, id => 'bobSecret1',
                        content => { text => 'secret of bob' }, @mention });
$p{P3} = post($owner, { type => $STATUS, content => { text => 'third' },
                        permissions => public(), @mention });
$p{P4} = post($owner, { type => $ESSAY, content => { body => 'fourth' },
                        permissions => public(), @mention });

sub stored {
    my ($k) = @_;
    my $path = $p{$k}{entity} eq $ENTITY ? "/posts/$p{$k}{id}"
             : '/posts/' . $esc->($p{$k}{entity}) . "/$p{$k}{id}";
    return $c->request(GET => $path, cred => $owner);
}

# ---- finding 6: a cursor the reader may not see is an unknown id

# one answer as bytes: status, headers but Date, body
sub answer {
    my ($r) = @_;
    my %h = %{ $r->{headers} || {} };
    delete $h{date};
    return join "\n", $r->{status}, (map { "$_: $h{$_}" } sort keys %h), '',
                $r->{body};
}

my %readers = (
    anonymous => undef,
    follower => $fcred,
    'read_posts of essays' => $essays,
    'no read_posts' => $noread,
);
my %hidden = (
    anonymous => [qw(S E N BP BS)],
    follower => [qw(S E BP BS)],
    'read_posts of essays' => [qw(S N BS)],
    'no read_posts' => [qw(S E N BP BS)],
);
my %shown = (
    anonymous => 'P2', follower => 'N', 'read_posts of essays' => 'E',
    'no read_posts' => 'P3',
);

my @routes = (
    [GET => '/posts'], [GET => '/posts/count'], [HEAD => '/posts'],
    [GET => "/posts/$p{P1}{id}/mentions"],
);
my @sorts = map { my $s = $_; ("sort_by=$s", "sort_by=$s&order=asc") }
            qw(received_at published_at updated_at);

# every route, sort and order with this cursor: "name => answer"
sub cursor_answers {
    my ($cred, $cursor, $id, $entity) = @_;
    my %a;
    for my $rt (@routes) {
        for my $s (@sorts) {
            my $q = "limit=2&$s&$cursor=$id";
            $q .= "&${cursor}_entity=" . $esc->($entity) if defined $entity;
            my $r = $c->request($rt->[0] => "$rt->[1]?$q",
                                $cred ? (cred => $cred) : ());
            $a{"$rt->[0] $rt->[1]?$s"} = answer($r);
        }
    }
    return \%a;
}

sub differences {
    my ($a, $b) = @_;
    return [ grep { $a->{$_} ne $b->{$_} } sort keys %$a ];
}

for my $who (sort keys %readers) {
    my $cred = $readers{$who};
    my %unknown;

    for my $cursor (qw(since_id until_id before_id)) {
        for my $k (@{ $hidden{$who} }) {
            my $ours = $p{$k}{entity} eq $ENTITY;
            my @entities = $ours ? (undef, $ENTITY) : ($BOB);

            for my $e (@entities) {
                my $ek = defined $e ? $e : '';
                $unknown{"$cursor $ek"} ||=
                    cursor_answers($cred, $cursor, 'n0SuchP0st', $e);
                my $got = cursor_answers($cred, $cursor, $p{$k}{id}, $e);
                is_deeply(differences($got, $unknown{"$cursor $ek"}), [],
                          "$who: $cursor=<$k>"
                          . (defined $e ? "&${cursor}_entity" : '')
                          . ' answers as an unknown id, every route and sort')
                    or diag join "\n---\n", map {
                        "$_:\n$got->{$_}\nunknown:\n"
                        . $unknown{"$cursor $ek"}{$_} }
                        @{ differences($got, $unknown{"$cursor $ek"}) };
            }
        }

        # the comparison can tell: a post it sees places the page
        my $got = cursor_answers($cred, $cursor, $p{ $shown{$who} }{id});
        ok(scalar @{ differences($got, $unknown{"$cursor "}) },
           "$who: $cursor=<$shown{$who}>, a post it sees, places the page");
    }
}

# the owner sees them all: its pages are placed
$res = $c->request(GET => "/posts?limit=2&before_id=$p{S}{id}",
                   cred => $owner);
is_deeply([ map { $_->{id} } @{ $res->{json} } ],
          [ map { $p{$_}{id} } qw(P2 P1) ], 'the owner: before_id=<S> placed');
$res = $c->request(GET => "/posts/count?since_id=bobSecret1"
                   . '&since_id_entity=' . $esc->($BOB) . '&post_types='
                   . $esc->($STATUS), cred => $owner);
is($res->{body}, '1', 'the owner: since_id=<BS>&since_id_entity counts '
   . 'the status after it');

# ---- finding 4: import_posts returned posts it may not read

sub import_post {
    my ($cred, $k, %o) = @_;
    my $post = { type => $o{type} || $ESSAY,
                 content => $o{content} || { body => 'imported' },
                 id => $o{id} || $p{$k}{id},
                 entity => $o{entity} || ($k ? $p{$k}{entity} : $ENTITY) };
    return $c->request(POST => '/posts', cred => $cred, body => $post,
                       headers => $o{headers} || {});
}

sub refused {
    my ($r, $what) = @_;
    is($r->{status}, 409, "$what: 409");
    is_deeply($r->{json}, { error => 'A post with this id exists' },
              "$what: only that the id is taken");
    unlike($r->{body}, qr/secret|bob public/, "$what: nothing of the post");
}

refused(import_post($imp, 'S'),
        'import_posts only, essays, the id of a private status');
refused(import_post($imp, 'S', type => $STATUS,
                    content => { text => 'x' }),
        'the same as a status');
refused(import_post($imp, 'S', headers => { 'Idempotency-Key' => 'k1' }),
        'the same with an Idempotency-Key');
refused(import_post($imp, 'E'),
        'import_posts only, the id of a private essay (no read_posts)');
refused(import_post($impr, 'S'),
        'import_posts and read_posts of essays, a private status');
refused(import_post($imp, 'BS', type => $STATUS, content => { text => 'x' }),
        'a private post received from another entity');
refused(import_post($imp, 'BP', type => $STATUS, content => { text => 'x' }),
        'a public post received from another entity, without read_posts');

for my $k (qw(S E BS)) {
    my $r = stored($k);
    is_deeply([ @{ $r->{json} }{qw(type content version)} ],
              [ @{ $p{$k} }{qw(type content)}, 1 ],
              "the stored post $k is unchanged");
}
my $feed = $c->request(GET => '/posts?limit=200', cred => $owner)->{json};
is(scalar(grep { $_->{id} eq $p{S}{id} } @$feed), 1,
   'the private status is once in the feed');

$res = import_post($impr, 'E');
is($res->{status}, 200, 'an importer that may read the private essay: 200');
is_deeply($res->{json}{content}, { body => 'secret essay' },
          'it gets the stored post, as a read');
$res = import_post($impr, 'BP', type => $STATUS, content => { text => 'x' });
is($res->{status}, 200, 'a received public post, with read_posts: 200');
is($res->{json}{content}{text}, 'bob public', 'the stored post');
$res = import_post($imp, 'P2', type => $STATUS, content => { text => 'x' });
is($res->{status}, 200, 'our public post: 200');
is($res->{json}{content}{text}, 'second', 'the stored post, not the import');
$res = import_post($imp, undef, id => 'n0SuchImport1',
                   content => { body => 'new one' });
is($res->{status}, 200, 'an unknown id: imported');
is_deeply([ @{ $res->{json} }{qw(id content)} ],
          [ 'n0SuchImport1', { body => 'new one' } ],
          'the answer is the new post, nothing stored before');
$res = import_post($imp, undef, id => 'n0SuchImport2',
                   headers => { 'Idempotency-Key' => 'k2' });
is($res->{status}, 200, 'an unknown id with an Idempotency-Key: imported');
$res = import_post($imp, undef, id => 'n0SuchImport2',
                   headers => { 'Idempotency-Key' => 'k2' });
is($res->{status}, 409, 'the retry: the id is taken (a private essay '
   . 'this importer cannot read)');

# ---- finding 12: attachments served as active content

my $B = '-----------TentAttachment37';

sub mp {
    my ($post, @files) = @_;
    my $body = "--$B\r\nContent-Disposition: form-data; name=\"post\"; "
             . "filename=\"post.json\"\r\nContent-Type: "
             . "application/vnd.tent.v0+json\r\n\r\n" . $J->encode($post)
             . "\r\n";
    for my $f (@files) {
        my ($name, $type, $data) = @$f;
        $body .= "--$B\r\nContent-Disposition: form-data; name=\"photos\"; "
               . "filename=\"$name\"\r\nContent-Type: $type\r\n\r\n$data\r\n";
    }
    return $body . "--$B--\r\n";
}

my $HTML = '<html><body><script>document.body.innerHTML = "R" + "AN!"'
         . '</script>inert</body></html>';
my $SVG = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)'
        . '</script></svg>';
my $PNG = "\x89PNG\r\n\x1a\n" . ("\0" x 32) . $HTML;
my $utf8name = "a b;c=\xc3\xa9'(x).html";

# name, type as uploaded, served inline?
my @files = (
    ['x.html', 'text/html', $HTML, 0],
    ['x.svg', 'image/svg+xml', $SVG, 0],
    ['x.xhtml', 'application/xhtml+xml', $HTML, 0],
    ['x.xml', 'text/xml', $SVG, 0],
    ['x.js', 'application/javascript', 'alert(1)', 0],
    ['x.pdf', 'application/pdf', '%PDF-1.4', 0],
    ['x.bin', 'application/octet-stream', $HTML, 0],
    ['comma.png', 'image/png, text/html', $HTML, 0],
    ['nothing', 'text/html; charset=utf-8', $HTML, 0],
    [$utf8name, 'text/html', $HTML, 0],
    ['x.png', 'image/png', $PNG, 1],
    ['upper.png', 'IMAGE/PNG', $PNG, 1],
    ['x.jpg', 'image/jpeg; x=1', $PNG, 1],
    ['x.txt', 'text/plain; charset=utf-8', $HTML, 1],
    ['x.mp4', 'video/mp4', $HTML, 1],
);

$res = $c->request(POST => '/posts', cred => $photos,
    headers => { 'Content-Type' => "multipart/form-data; boundary=$B" },
    body => mp({ type => $PHOTO, content => { caption => 'look' },
                 permissions => public() },
               map { [ @$_[0 .. 2] ] } @files));
is($res->{status}, 200, 'an app that writes only photos attaches all of them')
    or diag $res->{body};
my $photo = $res->{json}{id};

sub disposition {
    my ($name) = @_;
    (my $e = $name) =~ s/([^A-Za-z0-9.\-_~])/sprintf('%%%02X', ord $1)/ge;
    return "attachment; filename*=UTF-8''$e";
}

my $BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,'
            . 'image/avif,image/webp,*/*;q=0.8';

for my $f (@files) {
    my ($name, $type, $data, $inline) = @$f;
    my $path = "/posts/$photo/attachments/" . $esc->($name);

    for my $method (qw(GET HEAD)) {
        for my $accept ('*/*', $type eq 'text/html' ? $BROWSER : ()) {
            my $r = $c->request($method => $path,
                                headers => { Accept => $accept });
            my $h = $r->{headers};
            my $what = "$method $name ($type, Accept: "
                     . ($accept eq '*/*' ? '*/*' : 'a browser\'s') . ')';
            is($r->{status}, 200, "$what: 200");
            is($h->{'content-type'}, $type, "$what: its type");
            is($h->{'x-content-type-options'}, 'nosniff', "$what: nosniff");
            like($h->{'content-security-policy'} // '',
                 qr/^default-src 'none';.*; sandbox$/,
                 "$what: sandboxed, nothing loads");
            is($h->{'content-disposition'},
               $inline ? undef : disposition($name),
               "$what: " . ($inline ? 'inline' : 'a download'));
            if ($method eq 'GET') {
                ok($r->{body} eq $data, "$what: the bytes");
            } else {
                is($r->{body}, '', "$what: no body");
                is($h->{'content-length'}, length $data,
                   "$what: Content-Length");
            }
        }
    }
}

# the same headers under /posts/:entity/:id/attachments and for versions
$res = $c->request(GET => '/posts/' . $esc->($ENTITY)
                   . "/$photo/attachments/x.svg?version=1");
is($res->{status}, 200, '/posts/:entity/:id/attachments/x.svg?version=1');
is($res->{headers}{'content-disposition'}, disposition('x.svg'),
   'it is a download there too');
like($res->{headers}{'content-security-policy'}, qr/sandbox/,
     'sandboxed there too');

# ---- a real browser opens the HTML attachment, when there is one

my ($chromium) = grep { -x } map { ("$_/chromium", "$_/chromium-browser") }
                 split /:/, $ENV{PATH};
SKIP: {
    skip('chromium is not installed (util/install-deps.sh --test)', 3)
        unless $chromium;

    my $dir = tempdir(CLEANUP => 1);

    # the DOM once the page has run; downloads, if any, land in $dir
    my $dom = sub {
        my ($url) = @_;
        local $ENV{HOME} = $dir;
        open my $err, '>&', \*STDERR or die "dup: $!";
        open STDERR, '>>', "$dir/chromium.log" or die "chromium.log: $!";
        open my $fh, '-|', 'timeout', '60', $chromium, '--headless',
             '--no-sandbox', '--disable-gpu', '--no-first-run',
             "--user-data-dir=$dir/profile", '--dump-dom', $url
            or die "chromium: $!";
        my $out = do { local $/; <$fh> };
        close $fh;
        open STDERR, '>&', $err or die "dup: $!";
        return $out // '';
    };

    my $script = '<body><script>document.body.innerHTML = "R" + "AN!"'
               . '</script></body>';
    like($dom->("data:text/html,$script"), qr/RAN!/,
         'chromium runs a page\'s script (the check below can fail)');
    my $got = $dom->("$ENTITY/tent/posts/$photo/attachments/x.html");
    unlike($got, qr/RAN!/, 'an HTML attachment opened in chromium runs '
           . 'nothing');
    unlike($got, qr/inert/, 'nor is it shown: a download');
}

# ---- nosniff on every answer: JSON, errors, the authorize page, the root

my @answers = (
    ['GET /posts', $c->request(GET => '/posts')],
    ['HEAD /posts', $c->request(HEAD => '/posts')],
    ['GET /posts/count', $c->request(GET => '/posts/count')],
    ['GET /profile', $c->request(GET => '/profile')],
    ['GET /posts/:id', $c->request(GET => "/posts/$p{P2}{id}")],
    ['a 404', $c->request(GET => "/posts/$p{S}{id}")],
    ['a 400', $c->request(GET => '/posts?sort_by=nope')],
    ['a bad signature', $c->request(GET => '/posts',
                                    cred => { %$owner, mac_key => 'wrong' })],
    ['a 403', $c->request(POST => '/posts', cred => $noread,
                          body => { type => $STATUS,
                                    content => { text => 'x' } })],
    ['a 405', $c->request(PATCH => '/posts')],
    ['a 413 of nginx', http_request(method => 'POST', path => '/tent/posts',
                                    body => 'x' x 70000)],
    ['an attachment 404', $c->request(GET => "/posts/$photo/attachments/no")],
    ['the authorize page', $c->request(GET => '/oauth/authorize?'
                                       . $c->authorize_query($oapp))],
    ['an authorize error', $c->request(GET => '/oauth/authorize?client_id=x')],
    ['the entity root', http_request(path => '/')],
);
for my $a (@answers) {
    my ($what, $r) = @$a;
    ok($r->{status}, "$what: answered ($r->{status})");
    is($r->{headers}{'x-content-type-options'}, 'nosniff', "$what: nosniff");
}
my %st = map { $_->[0] => $_->[1]{status} } @answers;
is_deeply([ @st{'a 413 of nginx', 'the authorize page', 'the entity root'} ],
          [413, 200, 200], 'nginx\'s 413, the page and the root were tried');

$rx->stop;

__DATA__

=== TEST 1: the server
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location /tent/ {
        client_max_body_size 64k;
    }
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/posts
--- error_code: 200
--- response_body: []
