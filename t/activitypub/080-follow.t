# Following an ActivityPub actor (issue #29, docs/activitypub.md
# "Following an actor"): POST /followings with acct:NAME@HOST, @NAME@HOST
# or the actor's URL (no Tent profile there) resolves it by WebFinger and
# its actor document, keeps an unconfirmed following and queues our
# signed Follow; the peer (Tent::APPeer, Mastodon-like) answers Accept
# and the following is confirmed (GET /followings/:id 200, 404 before);
# a second POST answers the same following and sends no second Follow;
# the actor's public note then lands in our feed; DELETE sends an Undo
# of our Follow (also of a following not accepted yet).  An anonymous
# request and an app without write_followings: 403, nothing fetched.

use strict;
use warnings;

use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep time);
use Tent::APPeer;
use Tent::Client;
use Tent::Peer;

my $AP = Tent::APPeer->start(names => ['bob', 'carol', 'dave', 'erin']);
my $HP = $AP->hostport;

my $peer = Tent::Peer->start(
    worker_processes => 2,
    http_config => <<'CONF',
    tent_store $SERVROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 5s;
    tent_delivery_interval 200ms;
    tent_delivery_retry 1s 2s;
CONF
    server_config => <<'CONF');
        tent_entity $URL;
        tent_activitypub on;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
        location = / {
            tent_entity_page;
        }
CONF
my $URL = $peer->url;
my $c = $peer->client;
my (undef, $app) = $peer->authorized_app('read_followings,write_followings');
my (undef, $reader) = $peer->authorized_app('read_posts',
                                            post_types => 'all');
my (undef, $weak) = $peer->authorized_app('read_followings');

sub follow {
    my ($entity, %o) = @_;
    return $c->request(POST => '/followings', cred => $o{cred} // $app,
                       body => { entity => $entity, %{ $o{body} || {} } });
}

sub following {
    return $c->request(GET => "/followings/$_[0]", cred => $app);
}

# polled: the following confirmed by the peer's Accept
sub wait_confirmed {
    my ($id) = @_;
    my $end = time + 20;
    my $r;
    while (1) {
        $r = following($id);
        return $r if $r->{status} == 200 || time > $end;
        sleep 0.1;
    }
}

sub our_follows {
    my ($name) = @_;
    return $AP->inbox(type => 'Follow', name => $name, actor => $URL);
}

# ---- acct:NAME@HOST

my $bob = $AP->actor_url('bob');
my $res = follow("acct:bob\@$HP");
is($res->{status}, 200, 'follow acct:bob@host: 200') or diag $res->{body};
my $fb = $res->{json} || {};
like($fb->{id} // '', qr/^\w+$/, 'a following id');
is($fb->{entity}, $bob, 'its entity: the actor id');
like($fb->{activitypub}{follow} // '', qr/^\Q$URL\E#follow-[0-9a-f]{32}$/,
     'our Follow\'s id');
is($fb->{activitypub}{inbox}, $AP->inbox_url('bob'), 'the actor\'s inbox');
is($fb->{activitypub}{shared_inbox}, $AP->shared_inbox_url,
   'its shared inbox');
is_deeply($fb->{types}, ['all'], 'all types, by default');
is_deeply($fb->{permissions}, { public => JSON::PP::true }, 'public');
ok(!exists $fb->{confirmed}, 'no "confirmed" in the answer (as Tent\'s)');

my ($fr) = $AP->wait_inbox(type => 'Follow', name => 'bob', actor => $URL);
ok($fr, 'bob\'s inbox took our Follow (its signature verified)');
is($fr->{activity}{id}, $fb->{activitypub}{follow}, '... the id we keep');
is($fr->{activity}{object}, $bob, '... of bob');
is($fr->{key_id}, "$URL#main-key", '... signed with our key');

$res = wait_confirmed($fb->{id});
is($res->{status}, 200, 'bob accepted: the following is confirmed')
    or diag $res->{body};
is($res->{json}{entity}, $bob, '... bob\'s');
my @sent = grep { $_->{activity}{type} eq 'Accept' } $AP->sent;
is($sent[0]{status}, 202, 'our inbox took bob\'s Accept');
is(($AP->followers("bob"))[0]{actor}, $URL,
          'the peer has us among bob\'s followers');
$res = $c->request(GET => '/followings', cred => $app);
is_deeply([map { $_->{entity} } @{ $res->{json} || [] }], [$bob],
          'listed by GET /followings');

# ---- a second follow of the same actor: the same following

for my $again ("acct:bob\@$HP", "\@bob\@$HP", $bob) {
    $res = follow($again);
    is($res->{status}, 200, "again as $again: 200") or diag $res->{body};
    is($res->{json}{id}, $fb->{id}, '... the same following');
    is($res->{json}{activitypub}{follow}, $fb->{activitypub}{follow},
       '... the same Follow');
}
sleep 1;
is(scalar our_follows('bob'), 1, 'one Follow reached bob, no second');

# ---- bob's public note lands in our feed

is($AP->create_note(as => 'bob', to => ['public'], cc => ['followers'],
                    content => '<p>hello from bob</p>'), 202,
   'bob posts to his followers (our inbox among them): 202');
my $posts = $c->request(GET => '/posts?entity=' . Tent::Client::uri_escape($bob),
                        cred => $reader)->{json} || [];
is(scalar @$posts, 1, 'a post of bob in our feed');
is($posts->[0]{entity}, $bob, '... under bob\'s actor id');
is($posts->[0]{content}{text}, 'hello from bob', '... its text');

# ---- @NAME@HOST, its Accept coming later (the peer's owner approves)

$AP->set(auto_accept => 0);
my $carol = $AP->actor_url('carol');
$res = follow("\@carol\@$HP", body => { permissions => { public => JSON::PP::false } });
is($res->{status}, 200, 'follow @carol@host: 200') or diag $res->{body};
my $fc = $res->{json} || {};
is($fc->{entity}, $carol, 'carol\'s actor');
is_deeply($fc->{permissions}, { public => JSON::PP::false },
          'the app\'s permissions kept');
my ($cf) = $AP->wait_inbox(type => 'Follow', name => 'carol', actor => $URL);
ok($cf, 'carol got our Follow');
is(following($fc->{id})->{status}, 404,
   'not accepted yet: GET /followings/:id 404 (no following yet)');
$res = $c->request(GET => '/followings', cred => $app);
is(scalar @{ $res->{json} || [] }, 1, '... nor listed');
$res = follow("acct:carol\@$HP");
is($res->{json}{id}, $fc->{id}, 'asked again meanwhile: the same following');
is($AP->send(as => 'carol', inbox => "$URL/tent/activitypub/127/inbox",
             activity => { '@context' => 'https://www.w3.org/ns/activitystreams',
                           id => "$carol#accepts/1", type => 'Accept',
                           actor => $carol, object => $cf->{activity} }), 202,
   'carol accepts (signed): 202');
is(following($fc->{id})->{status}, 200, 'now confirmed');
is(scalar our_follows('carol'), 1, 'one Follow reached carol');

# ---- a following not accepted yet, given up: an Undo all the same

my $erin = $AP->actor_url('erin');
$res = follow("acct:erin\@$HP");
is($res->{status}, 200, 'follow erin (no Accept coming)') or diag $res->{body};
my $fe = $res->{json} || {};
$AP->wait_inbox(type => 'Follow', name => 'erin', actor => $URL);
$res = $c->request(DELETE => "/followings/$fe->{id}", cred => $app);
is($res->{status}, 200, 'DELETE of the pending following: 200')
    or diag $res->{body};
my ($ue) = $AP->wait_inbox(type => 'Undo', name => 'erin', actor => $URL);
ok($ue, 'erin got an Undo');
is($ue->{activity}{object}{id}, $fe->{activitypub}{follow},
   '... of our Follow');
$AP->set(auto_accept => 1);

# ---- the actor's URL: no Tent profile there

my $dave = $AP->actor_url('dave');
$res = follow($dave);
is($res->{status}, 200, 'follow the actor URL of dave: 200')
    or diag $res->{body};
my $fd = $res->{json} || {};
is($fd->{entity}, $dave, 'dave\'s actor');
ok(scalar $AP->wait_inbox(type => 'Follow', name => 'dave', actor => $URL),
   'dave got our Follow');
is(wait_confirmed($fd->{id})->{status}, 200, 'accepted: confirmed');
ok(scalar $AP->requests(method => 'GET', path => qr{^/\.well-known/webfinger$}),
   'the actor\'s handle was checked by WebFinger back');

# ---- unfollow: an Undo of our Follow

$res = $c->request(DELETE => "/followings/$fb->{id}", cred => $app);
is($res->{status}, 200, 'unfollow bob: 200') or diag $res->{body};
my ($undo) = $AP->wait_inbox(type => 'Undo', name => 'bob', actor => $URL);
ok($undo, 'bob got an Undo');
my $uo = $undo->{activity}{object} || {};
is_deeply({ map { $_ => $uo->{$_} } qw(id type actor object) },
          { id => $fb->{activitypub}{follow}, type => 'Follow',
            actor => $URL, object => $bob },
          '... of our Follow, embedded');
is($undo->{key_id}, "$URL#main-key", '... signed');
is(scalar(grep { $_->{actor} eq $URL } $AP->followers('bob')), 0,
   'the peer no longer counts us among bob\'s followers');
is(following($fb->{id})->{status}, 404, 'the following is gone');
$res = $c->request(GET => '/followings', cred => $app);
is_deeply([sort map { $_->{entity} } @{ $res->{json} || [] }],
          [sort $carol, $dave], 'carol and dave are left');

# ---- who may: anonymous and a weaker app, 403, nothing fetched

$AP->clear;
$res = $c->request(POST => '/followings',
                   body => { entity => "acct:bob\@$HP" });
is($res->{status}, 403, 'anonymous: 403');
like($res->{json}{error} // '', qr/./, '... a JSON error');
$res = follow("acct:bob\@$HP", cred => $weak);
is($res->{status}, 403, 'read_followings only: 403');
is(scalar $AP->requests, 0, 'nothing asked of the peer');

$peer->stop;
unlike($peer->error_log_text, qr/\[(alert|emerg|crit)\]/,
       'no alert in the error log');

done_testing;
