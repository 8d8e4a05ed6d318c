# The inbox's Update and Delete (issue #29, docs/activitypub.md "The
# inbox", "Activities"), with Tent::APPeer as the remote server: a
# Create keeps the Note under ngx_http_tent_ap_post_id() of its id with
# activitypub.id; an Update by its author is a new version, sanitized
# again; a Delete (a Tombstone or the id alone) by its author removes
# the post and its versions.  Attacks: an Update or a Delete of bob's
# note by eve (signed validly by eve, her own attributedTo or bob's)
# changes nothing; a Delete naming one of OUR posts changes nothing; an
# Update of a note we do not hold keeps nothing.  Update(Person) drops
# the actor's kept key (its next activity fetches it again); a Delete of
# the actor itself removes its follower record.

use strict;
use warnings;

use Test::More;
use JSON::PP;
use Digest::SHA qw(sha256);
use MIME::Base64 qw(encode_base64url);
use Tent::Peer;
use Tent::APPeer;
use Tent::Client;
use Tent::Util;

my $ap = Tent::APPeer->start(names => ['bob', 'eve']);
my $BOB = $ap->actor_url('bob');
my $EVE = $ap->actor_url('eve');

my $peer = Tent::Peer->start(worker_processes => 1, server_config => <<'CONF');
        tent_entity $URL;
        tent_activitypub on;
        tent_ap_name alice;
        tent_outbound_allow 127.0.0.0/8;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF
my $URL = $peer->url;
my $INBOX = "$URL/tent/activitypub/alice/inbox";
my $c = $peer->client;
my (undef, $cred) = $peer->authorized_app(
    'read_posts,write_posts,read_followers', post_types => 'all');

sub post_id { substr(encode_base64url(substr(sha256($_[0]), 0, 16)), 0, 22) }

sub posts_of {
    my ($actor) = @_;
    my $r = $c->request(GET => '/posts?limit=50&entity='
                               . Tent::Client::uri_escape($actor),
                        cred => $cred);
    return $r->{json} || [];
}

sub post_of {
    my ($actor, $id, $q) = @_;
    return $c->request(GET => '/posts/' . Tent::Client::uri_escape($actor)
                              . "/$id" . ($q // ''), cred => $cred);
}

sub fetches_of {
    my ($name) = @_;
    return scalar grep { $_->{method} eq 'GET'
                         && $_->{path} eq "/users/$name" } $ap->requests;
}

# ---- Create: kept under ngx_http_tent_ap_post_id(object id)

is($ap->create_note(as => 'bob', to => [$URL], content => '<p>first</p>',
                    attachments => [{ url => $ap->url . '/media/cat.png',
                                      mediaType => 'image/png',
                                      name => 'a cat' }],
                    inbox => $INBOX), 202, 'bob\'s Create(Note): 202');
my $NOTE = $ap->last_result->{object}{id};
my $ID = post_id($NOTE);
my $posts = posts_of($BOB);
is(scalar @$posts, 1, '... one post of bob');
is($posts->[0]{id}, $ID, '... its id ngx_http_tent_ap_post_id(object id)');
is($posts->[0]{activitypub}{id}, $NOTE, '... activitypub.id the object id');
is($posts->[0]{content}{text}, 'first', '... its text');
is($posts->[0]{version}, 1, '... version 1');
is_deeply($posts->[0]{activitypub}{attachments},
          [{ url => $ap->url . '/media/cat.png', mediaType => 'image/png',
             name => 'a cat' }],
          '... its attachment a link in activitypub.attachments');
is_deeply($posts->[0]{attachments}, [], '... no Tent attachment (no file)');
is(scalar(grep { $_->{path} eq '/media/cat.png' } $ap->requests), 0,
   '... not fetched');

# ---- Update by its author: version 2, sanitized

is($ap->update_note($NOTE, summary => 'cw',
                    content => '<p>second <script>alert(1)</script>'
                               . '<b onclick="steal()">bold</b> '
                               . '<a href="javascript:x()">l</a></p>',
                    inbox => $INBOX),
   202, 'bob\'s Update(Note) with a script: 202');
my $res = post_of($BOB, $ID);
is($res->{status}, 200, '... the post') or diag $res->{body};
is($res->{json}{version}, 2, '... version 2');
is($res->{json}{type}, 'https://tent.io/types/post/essay/v0.1.0',
   '... an essay now (a content warning)');
my $body = $res->{json}{content}{body} // '';
like($body, qr/second/, '... the new body');
unlike($body, qr/script|alert|onclick|javascript/i, '... sanitized');
like($body, qr{<b>bold</b>}, '... the allowed tag kept');
is($res->{json}{activitypub}{id}, $NOTE, '... activitypub.id kept');
# the same Update again (another activity id: not a replay): no version
my $upd = $ap->last_result->{activity};
is($ap->send(as => 'bob', inbox => $INBOX,
             activity => { %$upd, id => "$upd->{id}/again" }), 202,
   'the same Update again: 202');
is(post_of($BOB, $ID)->{json}{version}, 2, '... no version 3');
$res = post_of($BOB, $ID, '?version=1');
is($res->{json}{content}{text}, 'first', 'version 1 still there');
is(scalar @{ posts_of($BOB) }, 1, 'one post of bob still');

# ---- attacks: eve on bob's note

$res = $ap->send(as => 'eve', inbox => $INBOX, activity => {
    '@context' => 'https://www.w3.org/ns/activitystreams',
    id => "$EVE#u1", type => 'Update', actor => $EVE,
    object => { id => $NOTE, type => 'Note', attributedTo => $BOB,
                content => '<p>owned by eve</p>', to => [$URL] } });
is($res, 202, 'eve\'s Update of bob\'s note (attributed to bob): 202');
$res = $ap->send(as => 'eve', inbox => $INBOX, activity => {
    '@context' => 'https://www.w3.org/ns/activitystreams',
    id => "$EVE#u2", type => 'Update', actor => $EVE,
    object => { id => $NOTE, type => 'Note', attributedTo => $EVE,
                content => '<p>owned by eve</p>', to => [$URL] } });
is($res, 202, 'eve\'s Update of bob\'s note (claimed as hers): 202');
$res = post_of($BOB, $ID);
is($res->{json}{version}, 2, '... bob\'s post unchanged');
like($res->{json}{content}{body} // '', qr/second/, '... its body');
is(scalar @{ posts_of($EVE) }, 0, '... nothing kept under eve');

for my $obj ($NOTE, { id => $NOTE, type => 'Tombstone' }) {
    $res = $ap->send(as => 'eve', inbox => $INBOX, activity => {
        '@context' => 'https://www.w3.org/ns/activitystreams',
        id => "$EVE#d" . (ref $obj ? 't' : 's'), type => 'Delete',
        actor => $EVE, object => $obj });
    is($res, 202, 'eve\'s Delete of bob\'s note' . (ref $obj ? ' (Tombstone)'
                                                            : '') . ': 202');
}
is(post_of($BOB, $ID)->{status}, 200, '... bob\'s post still there');

# ---- a Delete naming one of OUR posts

$res = $c->request(POST => '/posts', cred => $cred, body => {
    type => 'https://tent.io/types/post/status/v0.1.0',
    content => { text => 'ours' }, permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a post of ours') or diag $res->{body};
my $OURS = $res->{json}{id};
for my $who (['bob', $BOB], ['eve', $EVE]) {
    $res = $ap->send(as => $who->[0], inbox => $INBOX, activity => {
        '@context' => 'https://www.w3.org/ns/activitystreams',
        id => "$who->[1]#dours", type => 'Delete', actor => $who->[1],
        object => { id => "$URL/tent/posts/$OURS", type => 'Tombstone' } });
    is($res, 202, "$who->[0]'s Delete of our post: 202");
}
$res = $c->request(GET => "/posts/$OURS", cred => $cred);
is($res->{status}, 200, '... our post still there');
is($res->{json}{content}{text}, 'ours', '... unchanged');

# ---- an Update of a note we do not hold: nothing kept

is($ap->create_note(as => 'bob', to => ['public'], content => '<p>x</p>',
                    inbox => $INBOX), 202,
   'a public Note of no following: 202 (not kept)');
my $OTHER = $ap->last_result->{object}{id};
is($ap->update_note($OTHER, content => '<p>y</p>', inbox => $INBOX), 202,
   '... its Update: 202');
is(post_of($BOB, post_id($OTHER))->{status}, 404, '... nothing kept');
is(scalar @{ posts_of($BOB) }, 1, '... one post of bob still');

# ---- Delete by its author: the post and its versions go

is($ap->delete_note($NOTE, inbox => $INBOX), 202,
   'bob\'s Delete(Tombstone): 202');
is(post_of($BOB, $ID)->{status}, 404, '... the post gone');
is(post_of($BOB, $ID, '?version=1')->{status}, 404, '... its versions too');
is(scalar @{ posts_of($BOB) }, 0, '... none of bob\'s in the feed');
is($ap->update_note($NOTE, content => '<p>back</p>', inbox => $INBOX), 202,
   'an Update after the Delete: 202');
is(post_of($BOB, $ID)->{status}, 404, '... does not bring it back');

# a Delete by the id alone
is($ap->create_note(as => 'bob', to => [$URL], content => '<p>two</p>',
                    inbox => $INBOX), 202, 'another note of bob');
my $TWO = $ap->last_result->{object}{id};
is(post_of($BOB, post_id($TWO))->{status}, 200, '... kept');
$res = $ap->send(as => 'bob', inbox => $INBOX, activity => {
    '@context' => 'https://www.w3.org/ns/activitystreams',
    id => "$TWO#delete", type => 'Delete', actor => $BOB, object => $TWO });
is($res, 202, 'its Delete by id: 202');
is(post_of($BOB, post_id($TWO))->{status}, 404, '... gone');

# ---- a reply to one of our posts names it as Tent does (public: our
# post's mentions list public posts)

is($ap->create_note(as => 'bob', to => ['public'], cc => [$URL],
                    content => '<p>re</p>',
                    in_reply_to => "$URL/tent/posts/$OURS",
                    inbox => $INBOX), 202, 'bob\'s reply to our post: 202');
my $RE = post_id($ap->last_result->{object}{id});
$res = post_of($BOB, $RE);
is_deeply($res->{json}{mentions}[0], { entity => $URL, post => $OURS },
          '... its first mention our post');
is($res->{json}{activitypub}{in_reply_to}, "$URL/tent/posts/$OURS",
   '... activitypub.in_reply_to the URL');
$res = $c->request(GET => "/posts/$OURS/mentions", cred => $cred);
is(scalar(grep { ($_->{post} // '') eq $RE } @{ $res->{json} || [] }), 1,
   '... listed in our post\'s mentions') or diag $res->{body};
is($ap->update_note($ap->last_result->{object}{id}, content => '<p>re2</p>',
                    inbox => $INBOX), 202, '... its Update: 202');
is_deeply(post_of($BOB, $RE)->{json}{mentions}[0],
          { entity => $URL, post => $OURS }, '... still naming our post');

# ---- Update(Person): the kept key dropped, fetched again next time

my $before = fetches_of('bob');
is($ap->update_person(as => 'bob', name => 'Bob B.', inbox => $INBOX), 202,
   'bob\'s Update(Person): 202');
is($ap->create_note(as => 'bob', to => [$URL], content => '<p>3</p>',
                    inbox => $INBOX), 202, 'bob\'s next Create: 202');
# (the peer records a request once it answered it: waited for)
Tent::Util::wait_for(sub { fetches_of('bob') > $before }, 10);
is(fetches_of('bob'), $before + 1, '... bob\'s actor fetched again, once');

# ---- Update(Person) of a follower: its record's inbox follows, on its
# own origin only

sub record_of {
    my ($actor) = @_;
    my $f = $c->request(GET => '/followers', cred => $cred)->{json} || [];
    my ($r) = grep { $_->{entity} eq $actor } @$f;
    return $r;
}
sub person_update {
    my ($who, $actor, %p) = @_;
    return $ap->send(as => $who, inbox => $INBOX, activity => {
        '@context' => 'https://www.w3.org/ns/activitystreams',
        id => "$actor#updates/" . rand, type => 'Update', actor => $actor,
        object => { id => $BOB, type => 'Person', %p } });
}
is($ap->follow($URL, as => 'bob', inbox => $INBOX), 202, 'bob follows');
is(record_of($BOB)->{activitypub}{inbox}, "$BOB/inbox", '... its inbox');
my $R = $ap->url;
is(person_update('bob', $BOB, inbox => "$BOB/inbox2",
                 endpoints => { sharedInbox => "$R/shared2" }), 202,
   'bob\'s Update(Person) with a new inbox: 202');
is(record_of($BOB)->{activitypub}{inbox}, "$BOB/inbox2",
   '... the follower\'s inbox the new one');
is(record_of($BOB)->{activitypub}{shared_inbox}, "$R/shared2",
   '... its shared inbox too');
is(person_update('bob', $BOB, inbox => 'http://169.254.169.254/inbox'), 202,
   'bob\'s Update(Person) with an inbox on another origin: 202');
is(record_of($BOB)->{activitypub}{inbox}, "$BOB/inbox2", '... not taken');
is(person_update('eve', $EVE, inbox => "$BOB/evil"), 202,
   'eve\'s Update of bob\'s Person: 202');
is(record_of($BOB)->{activitypub}{inbox}, "$BOB/inbox2", '... not taken');

# ---- Delete of the actor: its follower record goes

is($ap->follow($URL, as => 'eve', inbox => $INBOX), 202, 'eve follows');
my $f = $c->request(GET => '/followers', cred => $cred)->{json} || [];
is(scalar(grep { $_->{entity} eq $EVE } @$f), 1, '... a follower');
$res = $ap->send(as => 'eve', inbox => $INBOX, activity => {
    '@context' => 'https://www.w3.org/ns/activitystreams',
    id => "$EVE#delete", type => 'Delete', actor => $EVE, object => $EVE });
is($res, 202, 'eve\'s Delete of herself: 202');
$f = $c->request(GET => '/followers', cred => $cred)->{json} || [];
is(scalar(grep { $_->{entity} eq $EVE } @$f), 0, '... no longer a follower');

done_testing();
