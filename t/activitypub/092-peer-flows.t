# The ActivityPub flows end to end (issue #29, docs/activitypub.md):
# the module (tent_activitypub on) and a Tent::APPeer on loopback, two
# actors of it (bob, carol), nothing stubbed.  The peer follows our
# entity and receives our signed Accept through the queue and the
# ActivityPub transport (verified against our actor's key); our posts
# reach it (public status, a private post to bob alone, an essay, a
# photo whose Image it fetches, an Update, a Delete); its posts reach our
# feed (addressed to us, sanitized; a reply to ours as a mention of our
# post); its Undo(Follow) ends the follow; a peer down gets the post
# when it is back; the owner's block refuses its activities and sends
# it nothing.
#
# Elsewhere: the peer's Update/Delete/Announce/Like of its notes (043,
# 044), our own Follow of a peer's actor (080, 081), our Update(Person)
# on a profile change (054, 055).  The operator's domain block: 042 (a
# named peer in a network namespace) and 081 (our follows).

use strict;
use warnings;

use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep time);
use Tent::APPeer;
use Tent::Peer;

my $PUBLIC = 'https://www.w3.org/ns/activitystreams#Public';
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $ESSAY = 'https://tent.io/types/post/essay/v0.1.0';
my $PHOTO = 'https://tent.io/types/post/photo/v0.1.0';
my $TENT_CT = 'application/vnd.tent.v0+json';

my $peer = Tent::Peer->start(
    worker_processes => 2,
    http_config => <<'HTTP',
    tent_store $SERVROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 200ms;
    tent_delivery_retry 1s 2s;
HTTP
    server_config => <<'CONF');
        tent_entity $URL;
        tent_activitypub on;
        tent_ap_name alice;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF
my $URL = $peer->url;
my $API = "$URL/tent";
my $FOLLOWERS = "$API/activitypub/alice/followers";
my $c = $peer->client;
my (undef, $owner) = $peer->authorized_app(
    'write_posts,read_posts,read_followers,write_followers,read_followings,'
    . 'read_blocks,write_blocks', post_types => 'all');

my $ap = Tent::APPeer->start(names => ['bob', 'carol']);
my $BOB = $ap->actor_url('bob');
my $CAROL = $ap->actor_url('carol');

sub followers {
    my $r = $c->request(GET => '/followers', cred => $owner);
    return [ sort map { $_->{entity} } @{ $r->{json} || [] } ];
}

sub post {
    my ($body) = @_;
    return $c->post_ok($owner, $body);
}

sub status {
    my ($text, %o) = @_;
    return post({ type => $STATUS, content => { text => $text },
                  permissions => { public => JSON::PP::true }, %o });
}

# the Create of our post $id an actor's inbox took
sub created {
    my ($id, $name, %o) = @_;
    my ($r) = $ap->wait_inbox(type => 'Create', name => $name,
                              object_id => "$API/posts/$id", %o);
    return $r;
}

# ---- 1. the peer follows our entity: 202, a follower, our Accept

my $doc = $ap->resolve($URL);
is($doc && $doc->{id}, $URL, 'the peer reads our actor');
is($ap->follow($URL, as => 'bob'), 202, 'bob follows us: 202')
    or diag explain $ap->last_result;
my $follow = $ap->last_result->{activity};
is($ap->last_result->{inbox}, "$API/activitypub/alice/inbox",
   '... at our actor\'s inbox');
is_deeply(followers(), [$BOB], 'bob is our follower');
my ($acc) = $ap->wait_inbox(type => 'Accept', name => 'bob');
ok($acc, 'bob received our Accept (the queue, the transport)')
    or diag explain [$ap->rejected];
is($acc->{key_id}, "$URL#main-key",
   '... signed with our key, verified against our actor');
is($acc->{activity}{actor}, $URL, '... by our actor');
like($acc->{activity}{id} // '', qr/^\Q$URL\E#accept-[0-9a-f]+$/,
     '... its id');
is(ref $acc->{activity}{object}, 'HASH', '... embedding the Follow');
is($acc->{activity}{object}{id}, $follow->{id}, '... bob\'s Follow');
is_deeply([$ap->following('bob')], [$URL], 'bob now follows us');

is($ap->follow($URL, as => 'carol', inbox => "$API/activitypub/shared-inbox"),
   202, 'carol follows us at the shared inbox: 202');
ok(scalar $ap->wait_inbox(type => 'Accept', name => 'carol'),
   'carol received our Accept');
is_deeply(followers(), [sort $BOB, $CAROL], 'both are followers');
ok(!$ap->rejected, 'the peer refused nothing so far')
    or diag explain [$ap->rejected];

# ---- 2. we post

my $p1 = status('hello <fediverse> & https://example.org/x');
# a public post: once, at the peer's shared inbox, for bob and carol
# (docs/activitypub.md#shared-inboxes)
my $cr = created($p1->{id}, 'shared');
ok($cr, 'a public status: the peer\'s shared inbox got its Create') or diag explain [$ap->rejected];
my $a = $cr ? $cr->{activity} : {};
is($a->{actor}, $URL, '... by our actor');
is($a->{id}, "$API/posts/$p1->{id}#create-1", '... its id');
is_deeply($a->{to}, [$PUBLIC], '... to the Public');
is_deeply($a->{cc}, [$FOLLOWERS], '... cc our followers');
is($a->{object}{type}, 'Note', '... a Note');
is($a->{object}{attributedTo}, $URL, '... attributed to us');
like($a->{object}{content}, qr/hello &lt;fediverse&gt; &amp; <a href/,
     '... its text as HTML, escaped, the URL a link');
is_deeply($cr->{addressed}, ['followers', 'public'],
          '... the peer sees it public and for our followers')
    if $cr;
ok(!$cr->{dropped}, '... and keeps it') if $cr;
sleep 1;
is(scalar $ap->inbox(type => 'Create', name => 'shared',
                     object_id => "$API/posts/$p1->{id}"), 1,
   'once for both followers');
ok(!$ap->inbox(type => 'Create', name => $_,
               object_id => "$API/posts/$p1->{id}"),
   "nothing at $_\'s own inbox") for qw(bob carol);

my $p2 = post({ type => $STATUS,
                content => { text => 'just for bob' },
                mentions => [{ entity => $BOB }],
                permissions => { public => JSON::PP::false,
                                 entities => { $BOB => JSON::PP::true } } });
$cr = created($p2->{id}, 'bob');
ok($cr, 'a private post naming bob: bob got it');
$a = $cr ? $cr->{activity} : {};
is_deeply($a->{to}, [$BOB], '... to bob alone');
is_deeply($a->{cc} || [], [], '... no cc');
is_deeply($a->{object}{to}, [$BOB], '... its object alike');
is_deeply($a->{object}{cc} || [], [], '... no cc on the object');
is_deeply([map { $_->{href} } @{ $a->{object}{tag} || [] }], [$BOB],
          '... the Mention of bob');
is_deeply($cr->{addressed}, ['bob'], '... the peer sees it for bob only')
    if $cr;
unlike(JSON::PP->new->canonical->encode($a), qr/\Q$FOLLOWERS\E|#Public/,
       '... neither the followers nor the Public anywhere');

my $p3 = post({ type => $ESSAY,
                content => { title => 'An essay', excerpt => 'in short',
                             body => '<p>the <b>body</b></p>' },
                permissions => { public => JSON::PP::true } });
$cr = created($p3->{id}, 'shared');
ok($cr, 'an essay: the shared inbox got it');
$a = $cr ? $cr->{activity} : {};
is($a->{object}{type}, 'Article', '... an Article');
is($a->{object}{name}, 'An essay', '... its title');
is($a->{object}{content}, '<p>the <b>body</b></p>', '... its body');

my $MB = '-----------TentAttachment';
my $pj = JSON::PP->new->encode({
    type => $PHOTO, content => { caption => 'a photo' },
    permissions => { public => JSON::PP::true } });
my $res = $c->request(POST => '/posts', cred => $owner,
    headers => { 'Content-Type' => "multipart/form-data; boundary=$MB" },
    body => "--$MB\r\nContent-Disposition: form-data; name=\"post\"; "
            . "filename=\"post.json\"\r\nContent-Type: $TENT_CT\r\n\r\n"
            . "$pj\r\n--$MB\r\nContent-Disposition: form-data; "
            . "name=\"photos\"; filename=\"a.png\"\r\n"
            . "Content-Type: image/png\r\n\r\nPNG bytes\r\n--$MB--\r\n");
is($res->{status}, 200, 'a public photo post') or diag $res->{body};
my $p4 = $res->{json} || {};
$cr = created($p4->{id} // 'none', 'shared');
ok($cr, 'a photo: the shared inbox got it');
$a = $cr ? $cr->{activity} : {};
is($a->{object}{type}, 'Note', '... a Note');
my ($img) = @{ $a->{object}{attachment} || [] };
is($img && $img->{type}, 'Image', '... with an Image');
is($img && $img->{mediaType}, 'image/png', '... its type');
$res = Tent::APPeer::http('GET', $img ? $img->{url} : '');
is($res->{status}, 200, '... which the peer GETs');
is($res->{body}, 'PNG bytes', '... its bytes');

$res = $c->request(PUT => "/posts/$p1->{id}", cred => $owner,
                   body => { type => $STATUS,
                             content => { text => 'hello, edited' },
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a new version') or diag $res->{body};
my ($up) = $ap->wait_inbox(type => 'Update', name => 'shared',
                           object_id => "$API/posts/$p1->{id}");
ok($up, 'the shared inbox got the Update');
is($up && $up->{activity}{id}, "$API/posts/$p1->{id}#update-2",
   '... its id');
is($up && $up->{activity}{object}{content}, '<p>hello, edited</p>',
   '... the new text');
is($ap->notes(name => 'shared')->{"$API/posts/$p1->{id}"}{content},
   '<p>hello, edited</p>', '... the peer\'s note changed');

$res = $c->request(DELETE => "/posts/$p1->{id}", cred => $owner);
is($res->{status}, 200, 'the post deleted') or diag $res->{body};
my ($del) = $ap->wait_inbox(type => 'Delete', name => 'shared',
                            object_id => "$API/posts/$p1->{id}");
ok($del, 'the shared inbox got the Delete');
is($del && $del->{activity}{object}{type}, 'Tombstone', '... of a Tombstone');
is($ap->notes(name => 'shared')->{"$API/posts/$p1->{id}"}{type}, 'Tombstone',
   '... the peer\'s note is a Tombstone');

# ---- 3. the peer posts to us

sub feed_of {
    my ($who) = @_;
    my $r = $c->request(GET => '/posts?entity=' . Tent::APPeer::_escape($who),
                        cred => $owner);
    return $r->{json} || [];
}

sub wait_feed {
    my ($who, $n) = @_;
    my $end = time + 15;
    my $f;
    while (1) {
        $f = feed_of($who);
        return $f if @$f >= $n || time > $end;
        sleep 0.1;
    }
}

is($ap->create_note(as => 'bob', to => ['public'], cc => ['followers'],
                    content => '<p>not for you</p>'), 0,
   'bob\'s public note to his followers: we are not one, none sent');
is($ap->create_note(as => 'bob', to => ['public'], cc => ['followers'],
                    inbox => "$API/activitypub/alice/inbox",
                    content => '<p>not for you either</p>'), 202,
   '... sent to our inbox all the same: 202');
my $ignored = $ap->last_result->{object}{id};

is($ap->create_note(as => 'bob', to => ['public'], cc => ['followers'],
                    mentions => [$URL],
                    content => '<p>hi <span class="h-card"><a href="'
                               . $URL . '">@alice</a></span> '
                               . '<script>alert(1)</script>'
                               . '<b onclick="x()">there</b></p>'), 202,
   'bob\'s public note mentioning us: 202');
my $n1 = $ap->last_result->{object}{id};
my $f = wait_feed($BOB, 1);
is(scalar @$f, 1, 'one post of bob in our feed (the other not kept)')
    or diag explain $f;
my ($got) = grep { ($_->{content}{text} // '') =~ /hi/ } @$f;
ok($got, 'the note mentioning us is in our feed');
is($got && $got->{entity}, $BOB, '... under bob\'s actor');
is($got && $got->{type}, $STATUS, '... a status');
is($got && $got->{content}{text}, 'hi @alice there',
   '... its text, the HTML taken off, the script dropped');
ok($got && $got->{permissions}{public}, '... public');
is_deeply([map { $_->{entity} } @{ $got ? $got->{mentions} : [] }], [$URL],
          '... mentioning us');

is($ap->create_note(as => 'bob', to => [$URL], mentions => [$URL],
                    summary => 'a content warning',
                    content => '<p>long <i>read</i><img src=x onerror=y>'
                               . '<a href="javascript:z()">link</a></p>'),
   202, 'bob\'s note with a content warning, to us alone: 202');
$f = wait_feed($BOB, 2);
($got) = grep { $_->{type} eq $ESSAY } @$f;
ok($got, 'an essay in our feed');
is($got && $got->{content}{body}, '<p>long <i>read</i>link</p>',
   '... its body sanitized (no img, no javascript: link)');
is($got && $got->{content}{excerpt}, 'a content warning', '... its excerpt');
ok($got && !$got->{permissions}{public}, '... not public');

is($ap->create_note(as => 'bob', to => ['public'], cc => ['followers', $URL],
                    mentions => [$URL], in_reply_to => "$API/posts/$p3->{id}",
                    content => '<p>a reply</p>'), 202,
   'bob replies to our essay: 202');
$f = wait_feed($BOB, 3);
($got) = grep { ($_->{content}{text} // '') eq 'a reply' } @$f;
ok($got, 'the reply is in our feed');
my ($m) = @{ $got ? $got->{mentions} : [] };
is_deeply($m && { entity => $m->{entity}, post => $m->{post} },
          { entity => $URL, post => $p3->{id} },
          '... its first mention our essay') or diag explain $got;

# ---- 4. the peer's Undo(Follow)

is($ap->undo_follow($URL, as => 'carol',
                    inbox => "$API/activitypub/shared-inbox"),
   202, 'carol undoes her follow: 202');
is_deeply(followers(), [$BOB], 'carol is no follower');
my $p5 = status('after carol left');
ok(created($p5->{id}, 'shared'), 'our next post reaches bob\'s shared inbox');

# ---- 5. the peer down, then back: the queue retries

$ap->set(inbox_status => 503);
my $p6 = status('while you were down');
ok(scalar $ap->wait_rejected(path => qr{/inbox$}),
   'the peer down: its inbox answered 503');
$ap->set(inbox_status => undef);
$cr = created($p6->{id}, 'shared');
ok($cr, 'back: the queue retried, the shared inbox got the Create');
my $end = time + 15;
my ($d, $r);
while (time < $end) {
    $r = $c->request(GET => "/posts/$p6->{id}/deliveries", cred => $owner);
    ($d) = grep { $_->{entity} eq $ap->shared_inbox_url }
           @{ $r->{json}{deliveries} || [] };
    last if $d && $d->{state} eq 'delivered';
    sleep 0.2;
}
is($d && $d->{state}, 'delivered', '... delivered') or diag $r->{body};
cmp_ok($d ? $d->{attempts} : 0, '>=', 2, '... after more than one attempt');

$ap->stop;
my $p7 = status('while you were stopped');
sleep 1.5;
$ap->restart;
ok(created($p7->{id}, 'shared', timeout => 20),
   'a peer stopped and restarted gets the Create');

# ---- 6. the owner blocks bob

$res = $c->request(POST => '/blocks', cred => $owner,
                   body => { entity => $BOB });
is($res->{status}, 201, 'the owner blocks bob') or diag $res->{body};
is($ap->create_note(as => 'bob', to => [$URL], mentions => [$URL],
                    content => '<p>blocked?</p>'), 403,
   'bob\'s note to us: 403');
is($ap->follow($URL, as => 'bob'), 403, 'bob\'s Follow: 403');
is($ap->follow($URL, as => 'carol', inbox => "$API/activitypub/shared-inbox"),
   202, 'carol follows again: 202');
ok(scalar $ap->wait_inbox(type => 'Accept', name => 'carol', count => 2),
   '... accepted');
my $p8 = status('not for bob');
ok(created($p8->{id}, 'shared'), 'our next post reaches carol\'s shared inbox');
sleep 1;
ok(!$ap->inbox(type => 'Create', name => 'bob',
               object_id => "$API/posts/$p8->{id}"),
   '... and nothing of it bob');
ok(!$ap->inbox(type => 'Create', name => 'carol',
               object_id => "$API/posts/$p5->{id}"),
   'the post after carol\'s Undo never reached her');
ok(!$ap->inbox(type => 'Create', object_id => "$API/posts/$p8->{id}",
               name => 'carol'), 'nor to carol\'s own inbox');

$res = $c->request(DELETE => '/blocks/' . Tent::APPeer::_escape($BOB),
                   cred => $owner);
is($res->{status}, 200, 'the owner unblocks bob') or diag $res->{body};
is(scalar @{ feed_of($BOB) }, 3,
   'bob\'s posts in our feed again, the one sent while blocked not kept');

# our error log: no alert, no crash
my $log = $peer->error_log_text;
unlike($log, qr/\[(alert|emerg|crit)\]/, 'no alert in the error log');

$ap->stop;
$peer->stop;
done_testing;
