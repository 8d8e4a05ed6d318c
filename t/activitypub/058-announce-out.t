# Our reposts as Announce (issue #29, docs/activitypub.md "Our
# reposts"), with Tent::APPeer as the followers' server (bob, carol
# follow us; its inbox verifies every signature against our actor's key,
# as Mastodon does).  A public repost of bob's note we keep is an
# Announce of the note's own id (not our copy's), to the Public, cc our
# followers; a repost of our own post announces our object id; of a Tent
# post elsewhere its Tent route here.  A private repost for carol alone
# reaches carol alone (to her, no Public, no followers), bob nothing.
# Deleting a repost sends Undo(Announce) of that Announce's id.

use strict;
use warnings;

use Test::More;
use JSON::PP;
use Digest::SHA qw(sha256);
use MIME::Base64 qw(encode_base64url);
use Time::HiRes qw(sleep time);
use Tent::APPeer;
use Tent::Client;
use Tent::Peer;

my $PUBLIC = 'https://www.w3.org/ns/activitystreams#Public';
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $REPOST = 'https://tent.io/types/post/repost/v0.1.0';

my $peer = Tent::Peer->start(
    worker_processes => 1,
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
my $INBOX = "$API/activitypub/alice/inbox";
my $FOLLOWERS = "$API/activitypub/alice/followers";
my $c = $peer->client;
my (undef, $owner) = $peer->authorized_app(
    'write_posts,read_posts,read_followers,read_followings',
    post_types => 'all');

# no shared inbox: each actor's own gets its copy, checked one by one
# (056 checks a public post's one delivery to a shared inbox)
my $ap = Tent::APPeer->start(names => ['bob', 'carol'],
                             no_shared_inbox => ['bob', 'carol']);
my $BOB = $ap->actor_url('bob');
my $CAROL = $ap->actor_url('carol');

sub post_id { substr(encode_base64url(substr(sha256($_[0]), 0, 16)), 0, 22) }

sub deliveries {
    my ($pid) = @_;
    my $r = $c->request(GET => "/posts/$pid/deliveries", cred => $owner);
    return { map { $_->{entity} => $_ } @{ $r->{json}{deliveries} || [] } };
}

# the delivery of $pid to $who settled (not pending), or {}
sub wait_settled {
    my ($pid, $who) = @_;
    my $end = time + 20;
    my $d;
    while (time < $end) {
        $d = deliveries($pid)->{$who};
        last if $d && $d->{state} ne 'pending';
        sleep 0.2;
    }
    return $d || {};
}

sub announced {
    my ($name, $id, %o) = @_;
    my ($r) = $ap->wait_inbox(type => 'Announce', name => $name,
                              match => sub { $_[0]{activity}{id} eq $id },
                              %o);
    return $r;
}

sub repost {
    my ($entity, $id, %o) = @_;
    return $c->post_ok($owner, {
        type => $REPOST, content => { entity => $entity, id => $id },
        mentions => [{ entity => $entity, post => $id }],
        permissions => { public => JSON::PP::true }, %o });
}

# ---- bob and carol follow us; bob's note to us is kept

is($ap->follow($URL, as => 'bob'), 202, 'bob follows us');
is($ap->follow($URL, as => 'carol'), 202, 'carol follows us');
ok(scalar $ap->wait_inbox(type => 'Accept', name => 'carol'),
   '... accepted');

is($ap->create_note(as => 'bob', to => [$URL, 'public'],
                    content => '<p>worth a boost</p>', inbox => $INBOX),
   202, 'bob\'s public note to us');
my $NOTE = $ap->last_result->{object}{id};
my $NOTE_ID = post_id($NOTE);
my $res = $c->request(GET => '/posts/' . Tent::Client::uri_escape($BOB)
                             . "/$NOTE_ID", cred => $owner);
is($res->{json}{activitypub}{id}, $NOTE, '... kept, with activitypub.id');

# ---- a public repost of it: Announce of the note's own id

my $r1 = repost($BOB, $NOTE_ID);
my $ANN1 = "$API/posts/$r1->{id}#announce";
for my $name ('bob', 'carol') {
    my $got = announced($name, $ANN1);
    ok($got, "$name got the Announce of our repost")
        or diag explain [$ap->rejected, deliveries($r1->{id})];
    next unless $got;
    my $a = $got->{activity};
    is($got->{key_id}, "$URL#main-key",
       '... signed with our key (the peer verified it)');
    is($a->{actor}, $URL, '... by our actor');
    is($a->{object}, $NOTE, '... of bob\'s note by its own id');
    is_deeply($a->{to}, [$PUBLIC], '... to the Public');
    ok((grep { $_ eq $FOLLOWERS } @{ $a->{cc} || [] }),
       '... cc our followers');
    ok((grep { $_ eq $BOB } @{ $a->{cc} || [] }), '... cc its author');
    like($a->{published} // '', qr/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/,
         '... published');
    ok(!$got->{dropped}, '... taken by the peer (addressed)');
}
is(wait_settled($r1->{id}, $BOB)->{state}, 'delivered',
   'the delivery status: delivered');

# ---- a repost of our own post: our object id

my $mine = $c->post_ok($owner, { type => $STATUS,
                                 content => { text => 'mine' },
                                 permissions => { public => JSON::PP::true }
                               });
my $r2 = repost($URL, $mine->{id});
my $got = announced('bob', "$API/posts/$r2->{id}#announce");
is($got && $got->{activity}{object}, "$API/posts/$mine->{id}",
   'a repost of our own post announces our object id');

# ---- a repost of a Tent post elsewhere: its Tent route here

my $ELSE = 'https://tent.example';
my $r3 = repost($ELSE, 'aTentPost');
$got = announced('bob', "$API/posts/$r3->{id}#announce");
is($got && $got->{activity}{object},
   "$API/posts/" . Tent::Client::uri_escape($ELSE) . '/aTentPost',
   'a repost of a Tent post elsewhere announces its Tent route');

# ---- a private repost for carol alone: carol only

my $r4 = repost($BOB, $NOTE_ID,
                permissions => { public => JSON::PP::false,
                                 entities => { $CAROL => JSON::PP::true } });
my $ANN4 = "$API/posts/$r4->{id}#announce";
$got = announced('carol', $ANN4);
ok($got, 'carol got the private repost\'s Announce');
if ($got) {
    is_deeply($got->{activity}{to}, [$CAROL], '... to her alone');
    is_deeply($got->{activity}{cc}, [], '... no cc');
    is($got->{activity}{object}, $NOTE, '... of bob\'s note');
    unlike(encode_json($got->{activity}), qr/\Q$PUBLIC\E|followers/,
           '... neither the Public nor the followers in it');
}
is(wait_settled($r4->{id}, $CAROL)->{state}, 'delivered',
   '... delivered to carol');
ok(!exists deliveries($r4->{id})->{$BOB}, '... no job for bob at all');
is(scalar(grep { $_->{activity}{id} eq $ANN4 }
          $ap->inbox(type => 'Announce', name => 'bob')), 0,
   '... bob got nothing');

# ---- deleting a repost: Undo(Announce)

$res = $c->request(DELETE => "/posts/$r1->{id}", cred => $owner);
is($res->{status}, 200, 'the owner deletes the public repost');
for my $name ('bob', 'carol') {
    my ($u) = $ap->wait_inbox(
        type => 'Undo', name => $name,
        match => sub { ref $_[0]{activity}{object} eq 'HASH'
                       && ($_[0]{activity}{object}{id} // '') eq $ANN1 });
    ok($u, "$name got the Undo of the Announce") or next;
    is($u->{activity}{object}{type}, 'Announce', '... of an Announce');
    is($u->{activity}{actor}, $URL, '... by our actor');
    is($u->{key_id}, "$URL#main-key", '... signed');
    is_deeply($u->{activity}{to}, [$PUBLIC], '... addressed as the repost');
}
is(scalar(grep { ($_->{activity}{type} // '') eq 'Delete' }
          $ap->inbox(name => 'bob')), 0, '... no Delete(Tombstone) for it');

$res = $c->request(GET => '/posts?limit=5&post_types='
                   . Tent::Client::uri_escape(
                         'https://tent.io/types/post/delete/v0.1.0'),
                   cred => $owner);
is($res->{json}[0]{content}{id}, $r1->{id}, 'the delete post names it');
is($res->{json}[0]{content}{type}, $REPOST, '... and its type');

# the private repost deleted: carol alone gets the Undo
$res = $c->request(DELETE => "/posts/$r4->{id}", cred => $owner);
my ($u4) = $ap->wait_inbox(
    type => 'Undo', name => 'carol',
    match => sub { ref $_[0]{activity}{object} eq 'HASH'
                   && ($_[0]{activity}{object}{id} // '') eq $ANN4 });
ok($u4, 'the private repost deleted: carol gets its Undo');
is_deeply($u4 && $u4->{activity}{to}, [$CAROL], '... to her alone');

# a status deleted is still a Delete(Tombstone)
$res = $c->request(DELETE => "/posts/$mine->{id}", cred => $owner);
my ($del) = $ap->wait_inbox(type => 'Delete', name => 'bob',
                            object_id => "$API/posts/$mine->{id}");
ok($del, 'a status deleted: still a Delete of its Tombstone');

is(scalar(grep { $_->{path} =~ m{/users/bob/statuses/} }
          $ap->requests(method => 'GET')), 0,
   'the note was never fetched by us');
unlike($peer->error_log_text, qr/\[(alert|crit|emerg)\]/, 'no alert in the log');

done_testing();
