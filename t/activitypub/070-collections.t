# The actor's collections (issue #29 part 5, docs/activitypub.md
# "Collections"): the outbox of the entity's public status and essay
# posts, walked page by page both ways through its links (45 posts, each
# once, in order, the pages stable under a new post); private, group,
# one-entity and app-only posts, posts of types with no ActivityPub form
# and a post received from another entity never in it; followers and
# following (loopback Tent entities, and bob, an entity of the same
# nginx, both ways), their totals and the public ones' ids, against
# Tent's anonymous GET /followers; a post of ours by content
# negotiation; bad queries, methods, another name.  Every document the same for anonymous,
# the owner's app, a follower's key, other entities' apps and an unknown
# key: the fediverse is anonymous.

use strict;
use warnings;

use Test::More;
use JSON::PP;
use Tent::Peer;
use Tent::Client;
use Tent::Receiver;
use Tent::Util qw(http_request);

my $AS = 'application/activity+json';
my $LD = 'application/ld+json; profile="https://www.w3.org/ns/activitystreams"';
my $PUBLIC = 'https://www.w3.org/ns/activitystreams#Public';
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $ESSAY = 'https://tent.io/types/post/essay/v0.1.0';
my $TENT_CT = 'application/vnd.tent.v0+json';

# bob: another entity of the same nginx, which follows alice and which
# alice follows
my $PB = Tent::Peer::free_port();
my $BOB = "http://127.0.0.1:$PB";
my $peer = Tent::Peer->start(http_config => <<"HTTP", server_config => <<'CONF');
    tent_store \$SERVROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    server {
        listen 127.0.0.1:$PB;
        tent_entity $BOB;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
    }
HTTP
        tent_entity $URL;
        tent_activitypub on;
        tent_ap_name alice;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF
my $P = $peer->port;
my $URL = $peer->url;
my $c = $peer->client;
my $BASE = "$URL/tent/activitypub/alice";

my (undef, $owner) = $c->authorized_app(
    'write_posts,read_posts,read_followers,write_followers,read_followings,'
    . 'write_followings,read_groups,write_groups', post_types => 'all');

sub get {
    my ($path, %o) = @_;
    $path =~ s{^\Q$URL\E}{};
    my $res = $c->request($o{method} || 'GET', "/$path",
                          headers => { Accept => $o{accept} // $AS },
                          $o{cred} ? (cred => $o{cred}) : ());
    return $res;
}
sub ap { get("/tent/activitypub/alice/$_[0]", @_[1 .. $#_]) }

# ---- followers and followings: Tent receivers, public and not

my (%rx, $res);
for my $name (qw(f1 f2 fpriv)) {
    $rx{$name} = Tent::Receiver->start;
    my $res = $c->request(POST => '/followers',
        body => { entity => $rx{$name}->url, types => ['all'],
                  notification_path => 'notifications/x',
                  permissions => { public => $name eq 'fpriv'
                                             ? JSON::PP::false
                                             : JSON::PP::true } });
    is($res->{status}, 200, "$name follows") or diag $res->{body};
    $rx{"${name}_id"} = $res->{json}{id};
    $rx{"${name}_cred"} = { map { $_ => $res->{json}{$_} }
                            qw(mac_key_id mac_key mac_algorithm) };
}
for my $name (qw(g1 gpriv)) {
    $rx{$name} = Tent::Receiver->start;
    my $res = $c->request(POST => '/followings', cred => $owner,
        body => { entity => $rx{$name}->url,
                  permissions => { public => $name eq 'g1'
                                             ? JSON::PP::true
                                             : JSON::PP::false } });
    is($res->{status}, 200, "we follow $name") or diag $res->{body};
}

my $bc = Tent::Client->new(port => $PB, host => "127.0.0.1:$PB");
my (undef, $bcred) = $bc->authorized_app('read_followings,write_followings',
                                         post_types => 'all');
$res = $bc->request(POST => '/followings', cred => $bcred,
                    body => { entity => $URL });
is($res->{status}, 200, 'bob, of the same nginx, follows alice')
    or diag $res->{body};
$res = $c->request(POST => '/followings', cred => $owner,
                   body => { entity => $BOB });
is($res->{status}, 200, 'alice follows bob') or diag $res->{body};

# ---- posts: 45 public ones, and all the kinds that are not

$res = $c->request(POST => '/groups', cred => $owner,
                      body => { name => 'friends' });
my $gid = $res->{json}{id};

sub post {
    my ($body) = @_;
    return $c->post_ok($owner, $body)->{id};
}

my (@public, %hidden);
for my $i (1 .. 45) {
    if ($i % 9 == 0) {
        push @public, post({ type => $ESSAY,
                             content => { title => "essay $i",
                                          body => "body <$i>" },
                             permissions => { public => JSON::PP::true } });
    } else {
        push @public, post(Tent::Client::status_body("public $i"));
    }
    next if $i % 10;
    $hidden{"private $i"} = post(Tent::Client::status_body("private $i",
                                                           public => 0));
    $hidden{"group $i"} = post({ type => $STATUS,
                                 content => { text => "group $i" },
                                 permissions => { groups => [{ id => $gid }] } });
    $hidden{"entity $i"} = post({ type => $STATUS,
                                  content => { text => "entity $i" },
                                  permissions => { entities =>
                                      { $rx{f1}->url => JSON::PP::true } } });
}
$hidden{'a public post of another type'} = post({
    type => 'https://tent.io/types/post/repost/v0.1.0',
    content => { entity => $rx{g1}->url, id => 'x' },
    permissions => { public => JSON::PP::true } });

# a public post of another entity, received: a mention verified at its
# server (t/federation/050), in the same feed index as ours
my $rxm = $rx{g1};
my $C = $rxm->url;
my $theirs = { id => 'm1', entity => $C, type => $STATUS,
               content => { text => 'hello from C' },
               published_at => time, licenses => [],
               permissions => { public => JSON::PP::true },
               mentions => [{ entity => $URL }], version => 1 };
$rxm->rules([{ method => 'GET', path => '^/tent/posts/m1$',
               action => { status => 200,
                           headers => { 'Content-Type' => $TENT_CT },
                           body => $theirs } }]);
$res = $c->request(POST => '/posts', body => $theirs);
is($res->{status}, 200, 'a public post of another entity received')
    or diag $res->{body};
$res = $c->request(GET => '/posts/' . Tent::Client::uri_escape($C) . '/m1',
                   cred => $owner);
is($res->{status}, 200, '... kept (its copy read by the owner)');

# ---- the outbox collection

$res = ap('outbox');
is($res->{status}, 200, 'outbox: 200') or diag $res->{body};
like($res->{headers}{'content-type'}, qr{^application/activity\+json},
     'application/activity+json');
is($res->{headers}{'access-control-allow-origin'}, '*', 'CORS: *');
my $o = $res->{json};
is($o->{'@context'}, 'https://www.w3.org/ns/activitystreams', '@context');
is($o->{id}, "$BASE/outbox", 'id: the actor\'s outbox');
is($o->{type}, 'OrderedCollection', 'an OrderedCollection');
is($o->{totalItems}, 45, 'totalItems: the 45 public posts');
is($o->{first}, "$BASE/outbox?page=true", 'first');
is($o->{last}, "$BASE/outbox?page=true&min_id=0", 'last: the oldest page');
ok(!exists $o->{orderedItems}, 'no items in the collection itself');
is(join(',', sort keys %$o), '@context,first,id,last,totalItems,type',
   'nothing else');
my $actor = get('/', accept => $AS)->{json};
is($actor->{outbox}, $o->{id}, 'the actor names this outbox');

# a Create of our post, field by field
sub check_item {
    my ($item, $id, $i) = @_;
    my $obj = $item->{object} || {};
    my $essay = $i % 9 == 0;
    return 0 unless $item->{type} eq 'Create'
        && $item->{id} eq "$URL/tent/posts/$id#create-1"
        && $item->{actor} eq $URL
        && $obj->{id} eq "$URL/tent/posts/$id"
        && $obj->{url} eq $obj->{id}
        && $obj->{type} eq ($essay ? 'Article' : 'Note')
        && $obj->{attributedTo} eq $URL
        && $obj->{content} eq ($essay ? "body &lt;$i&gt;"    # HTML, kept
                                      : "<p>public $i</p>")
        && (!$essay || $obj->{name} eq "essay $i")
        && $obj->{published} =~ /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/
        && $item->{published} eq $obj->{published}
        && JSON::PP->new->canonical->encode($obj->{to})
           eq qq(["$PUBLIC"])
        && JSON::PP->new->canonical->encode($item->{to})
           eq qq(["$PUBLIC"])
        && !exists $item->{'@context'};
    return 1;
}

# walk a collection from $start by $link; the pages' items, in order
sub walk {
    my ($start, $link, %o) = @_;
    my (@items, @pages, %seen);
    my $url = $start;
    while ($url && @pages < 20) {
        die "a loop at $url" if $seen{$url}++;
        my $r = get($url, %o);
        is($r->{status}, 200, "page $url: 200") or last;
        push @pages, $r->{json};
        push @items, @{ $r->{json}{orderedItems} || [] };
        $url = $r->{json}{$link};
    }
    return (\@items, \@pages);
}

my %index_of = map { $public[$_] => $_ + 1 } 0 .. $#public;
my @newest_first = reverse @public;

my ($items, $pages) = walk($o->{first}, 'next');
is(scalar @$pages, 3, 'forward: 3 pages for 45 posts');
is_deeply([map { scalar @{ $_->{orderedItems} } } @$pages], [20, 20, 5],
          '... of 20, 20 and 5');
is_deeply([map { $_->{object}{id} =~ s{.*/}{}r } @$items], \@newest_first,
          '... every public post once, newest first');
is(scalar(grep { check_item($_, $_->{object}{id} =~ s{.*/}{}r,
                            $index_of{$_->{object}{id} =~ s{.*/}{}r}) }
                 @$items), 45, '... each a Create of its object, every field');
my $p1 = $pages->[0];
is($p1->{type}, 'OrderedCollectionPage', 'a page: OrderedCollectionPage');
is($p1->{partOf}, "$BASE/outbox", 'partOf the outbox');
is($p1->{id}, "$BASE/outbox?page=true", 'the first page\'s id');
is($p1->{'@context'}, 'https://www.w3.org/ns/activitystreams', '@context');
ok(!exists $p1->{prev}, 'the first page: no prev');
like($p1->{next}, qr{^\Q$BASE\E/outbox\?page=true&max_id=\d+\.\d+\.[\w-]+$},
     'next: max_id, a position');
is($pages->[1]{id}, $p1->{next}, 'the second page\'s id: the link to it');
ok($pages->[1]{prev}, 'the second page: a prev');
ok(!exists $pages->[2]{next}, 'the last page: no next');

# backwards, from "last"
my ($back, $bpages) = walk($o->{last}, 'prev');
is_deeply([map { scalar @{ $_->{orderedItems} } } @$bpages], [20, 20, 5],
          'backward from last: pages of 20, 20 and 5');
is_deeply([map { $_->{object}{id} =~ s{.*/}{}r }
           map { @{ $_->{orderedItems} } } reverse @$bpages],
          \@newest_first,
          '... every public post once, each page newest first');
ok(!exists $bpages->[0]{next}, 'the oldest page: no next');
is($bpages->[0]{id}, "$BASE/outbox?page=true&min_id=0", '... its id');

# prev of the second page is the first one's items
my $r = get($pages->[1]{prev});
is_deeply([map { $_->{id} } @{ $r->{json}{orderedItems} }],
          [map { $_->{id} } @{ $p1->{orderedItems} }],
          'the second page\'s prev: the first page\'s items');
ok(!exists $r->{json}{prev}, '... and nothing newer');

# kept by the worker until a post is written: of three asks, two reach
# the same one of the two workers
my $before = get($o->{first})->{body};
is(get($o->{first})->{body}, $before, 'the first page again: the same')
    for 1 .. 2;
like($peer->error_log_text, qr/tent ap: the outbox's document from the cache/,
     '... from the worker\'s cache');

# a new post moves no page: the second page is the same after it
my $second = get($p1->{next})->{body};
my $new = post(Tent::Client::status_body('public 46'));
is(get($p1->{next})->{body}, $second,
   'a new post: the page after the first one\'s cursor is unchanged');
$r = get($o->{first});
is($r->{json}{orderedItems}[0]{object}{id}, "$URL/tent/posts/$new",
   '... the new one heads the first page');
is(ap('outbox')->{json}{totalItems}, 46, '... and is counted');
push @public, $new;
unshift @newest_first, $new;

# a photo: a Note, its file an Image at our attachment URL
my $MB = '-----------TentAttachment';
my $pj = JSON::PP->new->encode({
    type => 'https://tent.io/types/post/photo/v0.1.0',
    content => { caption => 'a <photo>' },
    permissions => { public => JSON::PP::true } });
$res = $c->request(POST => '/posts', cred => $owner,
    headers => { 'Content-Type' => "multipart/form-data; boundary=$MB" },
    body => "--$MB\r\nContent-Disposition: form-data; name=\"post\"; "
            . "filename=\"post.json\"\r\nContent-Type: $TENT_CT\r\n\r\n"
            . "$pj\r\n--$MB\r\nContent-Disposition: form-data; "
            . "name=\"photos\"; filename=\"a b.png\"\r\n"
            . "Content-Type: image/png\r\n\r\nPNG bytes\r\n--$MB--\r\n");
is($res->{status}, 200, 'a public photo post') or diag $res->{body};
my $photo = $res->{json}{id};
$r = get($o->{first});
my $head = $r->{json}{orderedItems}[0]{object} || {};
is($head->{id}, "$URL/tent/posts/$photo", 'the photo heads the outbox');
is($head->{type}, 'Note', '... a Note');
is($head->{content}, '<p>a &lt;photo&gt;</p>', '... its caption, escaped');
is(scalar @{ $head->{attachment} || [] }, 1, '... one attachment');
is($head->{attachment}[0]{type}, 'Image', '... an Image');
is($head->{attachment}[0]{mediaType}, 'image/png', '... its type');
is($head->{attachment}[0]{url},
   "$URL/tent/posts/$photo/attachments/a%20b.png",
   '... at our attachment URL');
$res = get($head->{attachment}[0]{url}, accept => '*/*');
is($res->{status}, 200, '... which an anonymous reader fetches');
is($res->{body}, 'PNG bytes', '... the file');
push @public, $photo;

# no hidden post anywhere in the outbox
($items) = walk($o->{first}, 'next');
my %listed = map { ($_->{object}{id} =~ s{.*/}{}r) => 1 } @$items;
for my $k (sort keys %hidden) {
    ok(!$listed{$hidden{$k}}, "not in the outbox: $k");
}
ok(!grep({ $_->{object}{id} =~ m{/m1$} || $_->{actor} ne $URL } @$items),
   'not in the outbox: the post received from another entity');
is(scalar @$items, 47, 'the outbox: the 47 public posts, no more');
is(ap('outbox')->{json}{totalItems}, 47, '... its totalItems');
$res = ap('outbox', method => 'HEAD');
is($res->{status}, 200, 'HEAD outbox: 200');
is($res->{body}, '', '... no body');

# ---- followers and following

$res = ap('followers');
is($res->{status}, 200, 'followers: 200');
is($res->{json}{id}, "$BASE/followers", 'id');
is($res->{json}{type}, 'OrderedCollection', 'OrderedCollection');
is($res->{json}{totalItems}, 4, 'totalItems: every follower');
is($res->{json}{first}, "$BASE/followers?page=true", 'first');
is($actor->{followers}, $res->{json}{id}, 'the actor names it');
$r = get($res->{json}{first});
is($r->{json}{type}, 'OrderedCollectionPage', 'its page');
is($r->{json}{partOf}, "$BASE/followers", 'partOf');
is_deeply($r->{json}{orderedItems}, [$BOB, $rx{f2}->url, $rx{f1}->url],
          'the public followers\' ids, newest first; not the private one');
ok(!exists $r->{json}{next}, 'one page');
my $tent = $c->request(GET => '/followers');
is_deeply([sort @{ $r->{json}{orderedItems} }],
          [sort map { $_->{entity} } @{ $tent->{json} || [] }],
          '... those that Tent\'s anonymous GET /followers lists');

$r = get("$BASE/followers?page=true&max_id=$rx{f2_id}");
is_deeply($r->{json}{orderedItems}, [$rx{f1}->url],
          'max_id: the followers older than it');
is($r->{json}{prev}, "$BASE/followers?page=true&min_id=$rx{f1_id}",
   '... prev from its first');
$r = get("$BASE/followers?page=true&min_id=$rx{f1_id}");
is_deeply($r->{json}{orderedItems}, [$BOB, $rx{f2}->url],
          'min_id: the followers newer than it');
is($r->{json}{next}, "$BASE/followers?page=true&max_id=$rx{f2_id}",
   '... next from its last');

$res = ap('following');
is($res->{status}, 200, 'following: 200');
is($res->{json}{id}, "$BASE/following", 'id');
is($res->{json}{totalItems}, 3, 'totalItems: every following');
is($actor->{following}, $res->{json}{id}, 'the actor names it');
$r = get($res->{json}{first});
is_deeply($r->{json}{orderedItems}, [$BOB, $rx{g1}->url],
          'the public followings\' ids, newest first; not the private one');
$tent = $c->request(GET => '/followings');
is_deeply([sort @{ $r->{json}{orderedItems} }],
          [sort map { $_->{entity} } @{ $tent->{json} || [] }],
          '... what Tent\'s anonymous GET /followings lists');

# ---- a post of ours by content negotiation

my $pid = $public[0];
$res = get("/tent/posts/$pid");
is($res->{status}, 200, 'GET /posts/:id as activity+json: 200')
    or diag $res->{body};
like($res->{headers}{'content-type'}, qr{^application/activity\+json},
     'application/activity+json');
is($res->{headers}{vary}, 'Accept', 'Vary: Accept');
is($res->{headers}{'access-control-allow-origin'}, '*', 'CORS: *');
is($res->{json}{'@context'}, 'https://www.w3.org/ns/activitystreams',
   '@context');
my %obj = %{ $res->{json} };
delete $obj{'@context'};
($r) = grep { $_->{object}{id} eq "$URL/tent/posts/$pid" } @$items;
is_deeply(\%obj, $r->{object}, 'the object the outbox\'s Create wraps');
is(get("/tent/posts/$pid", accept => $LD)->{json}{id},
   "$URL/tent/posts/$pid", 'the ld+json Accept with the profile: the same');
$res = get("/tent/posts/$pid", method => 'HEAD');
is($res->{status}, 200, 'HEAD: 200');
is($res->{body}, '', '... no body');

# Tent's answers unchanged, with Vary
$res = get("/tent/posts/$pid", accept => $TENT_CT);
is($res->{status}, 200, 'Accept Tent: 200');
is($res->{json}{content}{text}, 'public 1', '... the Tent post');
is($res->{json}{entity}, $URL, '... of ours');
is($res->{headers}{vary}, 'Accept', '... with Vary: Accept');
is(get("/tent/posts/$hidden{'private 10'}", accept => $TENT_CT,
       cred => $owner)->{status}, 200,
   'Accept Tent: the owner\'s app reads a private post, as before');

for my $k (sort keys %hidden) {
    for my $who ([anonymous => undef], ['the owner\'s app' => $owner]) {
        $res = get("/tent/posts/$hidden{$k}",
                   $who->[1] ? (cred => $who->[1]) : ());
        is($res->{status}, 404, "as activity+json, $k, $who->[0]: 404");
        is($res->{json}{error}, 'Not Found', '... JSON');
    }
}
is(get('/tent/posts/m1')->{status}, 404,
   'as activity+json, the received post\'s id: 404');
is(get('/tent/posts/' . Tent::Client::uri_escape($C) . '/m1')->{status},
   404, '... nor under its entity');
is(get('/tent/posts/nosuchpost')->{status}, 404, 'an unknown id: 404');

# another entity (of another server: the module off there), its app

my $off = Tent::Peer->start(server_config => <<'CONF');
        tent_entity $URL;
        tent_ap_name alice;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF
my $oc = $off->client;
my (undef, $oo) = $oc->authorized_app('write_posts', post_types => 'all');

# ---- every document the same whoever asks

my %who = (
    'the owner\'s app' => $owner,
    'a follower\'s key' => $rx{f1_cred},
    'another entity\'s app' => $oo,
    'bob\'s app (the same nginx)' => $bcred,
    'an unknown key' => { mac_key_id => 'u:nosuch', mac_key => 'x' x 32,
                          mac_algorithm => 'hmac-sha-256' },
);
my @docs = ('/tent/activitypub/alice/outbox', $o->{first}, $p1->{next},
            $o->{last}, '/tent/activitypub/alice/followers',
            "$BASE/followers?page=true", '/tent/activitypub/alice/following',
            "$BASE/following?page=true", "/tent/posts/$pid",
            "/tent/posts/$hidden{'private 10'}",
            "/tent/posts/$hidden{'group 20'}");
for my $d (@docs) {
    my $anon = get($d);
    for my $w (sort keys %who) {
        $res = get($d, cred => $who{$w});
        ok($res->{status} == $anon->{status} && $res->{body} eq $anon->{body},
           "$d: $w gets what anonymous gets ($anon->{status})")
            or diag "$res->{status} $res->{body}";
    }
}

is(get('/tent/posts', accept => $TENT_CT, cred => $who{'an unknown key'})
   ->{status}, 401, '(a Tent route answers the unknown key 401)');

# ---- bad queries, methods, names

for my $q ('page=false', 'page=1', 'page=', 'max_id=x', 'max_id=1.2',
           'max_id=1.2.', 'max_id=1..abc', 'max_id=.1.abc', 'max_id=1.2.a%20b',
           'max_id=1.2.a.b', 'max_id=a.2.abc',
           'max_id=99999999999999999999.1.abc',
           'min_id=' . ('1' x 30) . '.1.abc',
           'max_id=1.2.' . ('a' x 65), 'min_id=x',
           'max_id=0&min_id=0', 'page=true&max_id=1.2.abc&min_id=0') {
    $res = ap("outbox?$q");
    is($res->{status}, 400, "outbox?$q: 400");
    ok($res->{json} && $res->{json}{error}, '... JSON');
}
for my $q ('max_id=x!', 'min_id=' . ('a' x 65), 'page=yes') {
    $res = ap("followers?$q");
    is($res->{status}, 400, "followers?$q: 400");
}
$res = ap('outbox?page=true&max_id=0');
is($res->{status}, 200, 'max_id=0: 200');
is_deeply($res->{json}{orderedItems}, [], '... nothing is before it');
$res = ap('outbox?page=true&max_id=1.0.abc');
is_deeply($res->{json}{orderedItems}, [], 'a cursor before every post: empty');
$res = ap('outbox?page=true&min_id=9999999999.0.abc');
is_deeply($res->{json}{orderedItems}, [], 'a cursor after every post: empty');
$res = ap('outbox?page=true&whatever=1');
is(scalar @{ $res->{json}{orderedItems} }, 20, 'other arguments ignored');

for my $m (qw(POST PUT DELETE)) {
    for my $coll (qw(outbox followers following)) {
        $res = ap($coll, method => $m);
        is($res->{status}, 405, "$m $coll: 405");
        ok($res->{json} && $res->{json}{error}, '... JSON');
    }
}
for my $coll (qw(outbox followers following)) {
    $res = get("/tent/activitypub/bob/$coll");
    is($res->{status}, 404, "another name's $coll: 404");
    is($res->{json}{error}, 'Not Found', '... JSON');
}

unlike($peer->error_log_text, qr/\[(alert|emerg|crit)\]/,
       'no alert in the error log');

# ---- the module off: no collections, Tent's posts unchanged

my $oid = $oc->post_status($oo, 'off');
for my $coll (qw(outbox followers following)) {
    $res = $oc->request(GET => "/activitypub/alice/$coll",
                        headers => { Accept => $AS });
    is($res->{status}, 404, "the module off: $coll 404");
}
$res = $oc->request(GET => "/posts/$oid", headers => { Accept => $AS });
is($res->{status}, 200, 'the module off: a post asked as activity+json');
is($res->{json}{content}{text}, 'off', '... is Tent\'s answer');
ok(!exists $res->{headers}{vary}, '... with no Vary');
$off->stop;

done_testing();
