# Tent::APPeer (t/lib/Tent/APPeer.pm), the Mastodon/snac-like ActivityPub
# peer of the #29 suites, checked against itself: two peers on loopback
# find each other by WebFinger, follow each other (a signed Accept
# embedding the Follow), post both ways (public, followers-only, direct
# with a mention, a reply, bcc only: dropped), update and delete a note,
# update a profile, like, announce, unfollow; its inbox refuses with 401
# what Mastodon refuses (a bad signature, a wrong Digest, an old Date, no
# signature, another's key, an actor not the key's owner, a keyId off
# loopback, a Digest not signed) and records why, and takes RFC 9421.
# Then the module's side as it is: the peer resolves an entity with
# tent_activitypub on by WebFinger and reads its actor.

use strict;
use warnings;

use Test::More;
use Tent::APPeer;
use Tent::HTTPSig;
use Tent::Peer;
use Tent::Util;

my $AS = 'https://www.w3.org/ns/activitystreams#Public';

my $A = Tent::APPeer->start(names => ['alice', 'carol']);
my $B = Tent::APPeer->start(names => ['bob']);
my $alice = $A->actor_url('alice');
my $bob = $B->actor_url('bob');

# ---- discovery

my $jrd = $A->webfinger($B->acct('bob'));
is($jrd->{subject}, $B->acct('bob'), 'WebFinger: the subject');
my ($self) = grep { $_->{rel} eq 'self' } @{ $jrd->{links} };
is($self->{href}, $bob, 'its self link is the actor');
ok(!$A->webfinger('acct:nobody@' . $B->hostport), 'an unknown name: none');
my $doc = $A->resolve($B->acct('bob'));
is($doc->{id}, $bob, 'resolve(acct:): the actor');
is($doc->{type}, 'Person', 'a Person');
is($doc->{publicKey}{id}, "$bob#main-key", 'its key id');
is($doc->{publicKey}{owner}, $bob, 'owned by it');
is($doc->{publicKey}{publicKeyPem}, $B->public_key('bob'), 'its public key');
is($doc->{endpoints}{sharedInbox}, $B->shared_inbox_url, 'a shared inbox');
is($doc->{inbox}, $B->inbox_url('bob'), 'an inbox');
is($A->acct_of($bob), $B->acct('bob'),
   "acct_of: its preferredUsername and host give it back");

# ---- follows, both ways

is($A->follow($B->acct('bob'), as => 'alice'), 202, 'alice follows bob: 202');
my $follow = $A->last_result->{activity};
my ($acc) = $A->wait_inbox(type => 'Accept', name => 'alice');
ok($acc, 'bob answered with an Accept');
is(ref $acc->{activity}{object}, 'HASH', 'that embeds the Follow');
is($acc->{activity}{object}{id}, $follow->{id}, '... the same Follow');
is($acc->{key_id}, "$bob#main-key", 'signed by bob');
is_deeply([$A->following('alice')], [$bob], 'alice follows bob');
is_deeply([map { $_->{actor} } $B->followers('bob')], [$alice],
          'bob has alice as follower');
is(($B->followers('bob'))[0]{inbox}, $A->inbox_url('alice'),
   '... with her inbox');

is($B->follow($alice, as => 'bob'), 202, 'bob follows alice: 202');
ok(scalar $B->wait_inbox(type => 'Accept', name => 'bob'), 'accepted');
is_deeply([$B->following('bob')], [$alice], 'bob follows alice');

# ---- posts, both ways

is($B->create_note(as => 'bob', to => ['public'], cc => ['followers'],
                   content => '<p>hello fediverse</p>'), 202,
   'bob posts publicly to his followers: 202');
my $n1 = $B->last_result->{object}{id};
my ($got) = $A->wait_inbox(type => 'Create', object_id => $n1);
ok($got, 'alice got it');
is_deeply($got->{addressed}, ['followers', 'public'],
          'addressed: public, and its followers');
is($A->notes->{$n1}{content}, '<p>hello fediverse</p>', 'its content');
my $r = Tent::APPeer::http('GET', $n1, headers => {
    Accept => 'application/activity+json' });
is($r->{json}{id}, $n1, 'the note is served at its id');

is($B->create_note(as => 'bob', to => ['followers'], content => 'fo'), 202,
   'a followers-only note');
my $n2 = $B->last_result->{object}{id};
($got) = $A->wait_inbox(object_id => $n2);
is_deeply($got->{addressed}, ['followers'], 'addressed: followers');

is($A->create_note(as => 'alice', to => [$bob], mentions => [$bob],
                   content => '<p>@bob hi</p>', in_reply_to => $n1), 202,
   'alice replies directly with a mention');
my $n3 = $A->last_result->{object}{id};
($got) = $B->wait_inbox(object_id => $n3);
is_deeply($got->{addressed}, ['bob'], 'addressed: bob');
is($got->{activity}{object}{inReplyTo}, $n1, 'inReplyTo');
is_deeply($got->{activity}{object}{tag},
          [{ type => 'Mention', href => $bob,
             name => '@bob@' . $B->hostport }], 'the Mention');

is($B->create_note(as => 'bob', bcc => [$alice], content => 'secret'), 202,
   'a note addressed by bcc only is taken (202)');
my $n4 = $B->last_result->{object}{id};
($got) = $A->wait_inbox(object_id => $n4);
like($got->{dropped} // '', qr/not addressed/, '... and dropped: bcc ignored');
ok(!$A->notes->{$n4}, 'no note of it');

is($B->create_note(as => 'bob', to => ['public'], cc => ['followers'],
                   content => 'p', attachments => [
                       { url => "$bob/a.png", mediaType => 'image/png',
                         name => 'a photo' }]), 202, 'a photo');
my $n5 = $B->last_result->{object}{id};
$A->wait_inbox(object_id => $n5);
is($A->notes->{$n5}{attachment}[0]{url}, "$bob/a.png", 'its attachment');

is($B->update_note($n1, content => '<p>edited</p>'), 202, 'an Update');
$A->wait_inbox(type => 'Update');
is($A->notes->{$n1}{content}, '<p>edited</p>', 'the note changed');

is($B->delete_note($n1), 202, 'a Delete');
$A->wait_inbox(type => 'Delete');
is($A->notes->{$n1}{type}, 'Tombstone', 'a Tombstone now');
is(Tent::APPeer::http('GET', $n1)->{status}, 410, 'served as 410');

is($B->update_person(as => 'bob', name => 'Robert'), 202,
   'an Update(Person) to the followers');
($got) = $A->wait_inbox(type => 'Update', object_type => 'Person');
is($got->{activity}{object}{name}, 'Robert', 'the new name');
is($A->resolve($bob, fresh => 1)->{name}, 'Robert', 'and the actor says so');

is($A->like($n2, as => 'alice', to => $bob), 202, 'a Like');
ok(scalar $B->wait_inbox(type => 'Like'), 'bob got it');
is($A->announce($n2, as => 'alice', to => $bob), 202, 'an Announce');
ok(scalar $B->wait_inbox(type => 'Announce'), 'bob got it');

# ---- what its inbox refuses

my $before = () = $B->inbox;
my %post = (as => 'alice', to => [$bob], content => 'x');
for my $t (['bad_signature', 'bad signature'],
           ['wrong_digest', 'digest mismatch'],
           ['old_date', 'date too old'],
           ['unsigned', 'no signature'],
           ['no_digest', 'digest not signed'])
{
    my ($opt, $why) = @$t;
    $B->clear;
    is($A->create_note(%post, $opt => 1), 401, "$opt: 401");
    my ($rej) = $B->rejected;
    is($rej && $rej->{why}, $why, "... recorded: $why");
    is(scalar $B->inbox, 0, '... and nothing taken');
}
$B->clear;
is($A->create_note(%post, key => $A->private_key('carol')), 401,
   "another actor's key under alice's keyId: 401");
is(($B->rejected)[0]{why}, 'bad signature', '... bad signature');
$B->clear;
is($A->create_note(%post, key => $A->private_key('carol'),
                   key_id => $A->key_id('carol')), 401,
   "signed by carol for alice's activity: 401");
like(($B->rejected)[0]{why}, qr/is not the key's owner/, "... not the owner");
$B->clear;
is($A->create_note(%post, key_id => 'http://192.0.2.1/actor#main-key'), 401,
   'a keyId off loopback: 401, not fetched');
like(($B->rejected)[0]{why}, qr/not a loopback/, '... recorded');
$B->clear;
is($A->create_note(%post, rfc9421 => 1), 202, 'RFC 9421: taken');
is(($B->inbox)[0]{rfc9421}, 1, '... as RFC 9421');
$B->clear;
is($A->create_note(%post, rfc9421 => 1, bad_signature => 1), 401,
   'RFC 9421 with a bad signature: 401');

# another's profile and another's note
$B->clear;
is($A->send(as => 'alice', inbox => $B->inbox_url('bob'), activity => {
    id => "$alice#u1", type => 'Update', actor => $alice,
    object => { %{ $A->resolve($bob) }, name => 'Mallory' } }), 202,
   "an Update of bob's Person by alice: taken");
like(($B->inbox)[0]{dropped} // '', qr/another actor/, '... and dropped');
is($A->send(as => 'alice', inbox => $B->inbox_url('bob'), activity => {
    id => "$alice#c1", type => 'Create', actor => $alice, to => [$AS],
    object => { id => "$alice/statuses/x", type => 'Note', content => 'x',
                attributedTo => $bob, to => [$AS] } }), 202,
   'a Create of a note attributed to bob, by alice');
like(($B->inbox)[1]{dropped} // '', qr/attributedTo/, '... dropped');

# ---- unfollow, both ways

is($A->undo_follow($bob, as => 'alice'), 202, 'alice unfollows bob');
ok(Tent::Util::wait_for(sub { !$B->followers('bob') }, 10),
   'bob has no follower now');
is_deeply([$A->following('alice')], [], 'alice follows no one');
is($B->undo_follow($alice, as => 'bob'), 202, 'bob unfollows alice');
ok(Tent::Util::wait_for(sub { !$A->followers('alice') }, 10),
   'alice has no follower now');

# ---- Mastodon's secure mode, a peer that fails, a peer that was down

my $C = Tent::APPeer->start(names => ['cyd'], authorized_fetch => 1,
                            signed_fetch => 1);
my $cyd = $C->actor_url('cyd');
is(Tent::APPeer::http('GET', $cyd, headers => {
    Accept => 'application/activity+json' })->{status}, 401,
   'authorized_fetch: an unsigned GET of the actor is 401');
like(($C->wait_rejected)[0]{why}, qr/no signature/, '... recorded');
ok(!$A->resolve($cyd), 'so a peer that does not sign cannot read it');
is($C->resolve($bob)->{id}, $bob, 'signed_fetch: it reads others');
is($C->follow($alice, as => 'cyd'), 401,
   'cyd follows alice: 401, she cannot read its key');
like(($A->wait_rejected)[-1]{why} // '', qr/keyId fetch: 401/,
     '... recorded so');
ok(!$A->inbox(type => 'Follow', actor => $cyd), '... took no Follow');
ok(!$C->inbox(type => 'Accept'), '... and sent no Accept');
$A->set(signed_fetch => 1);
is($C->follow($alice, as => 'cyd'), 202, 'with signed fetches: 202');
ok(scalar $C->wait_inbox(type => 'Accept'), '... and accepted');
$A->set(signed_fetch => 0);

$B->clear;
$B->set(inbox_status => 503);
is($A->create_note(as => 'alice', to => [$bob], content => 'x'), 503,
   'inbox_status 503: its inbox fails');
is(scalar $B->inbox, 0, '... and takes nothing');
$B->set(inbox_status => undef);
is($A->create_note(as => 'alice', to => [$bob], content => 'x'), 202,
   'then takes again');

my $port = $B->port;
my $key = $B->public_key('bob');
$B->stop;
is($A->create_note(as => 'alice', to => [$bob], content => 'y'), 0,
   'stopped: not reached (0)');
$B->restart;
is($B->port, $port, 'restarted on the same port');
is($A->resolve($bob, fresh => 1)->{publicKey}{publicKeyPem}, $key,
   'with the same key');
is($A->create_note(as => 'alice', to => [$bob], content => 'z'), 202,
   'its inbox takes again');

# ---- the module, as it is: WebFinger and the actor

my $peer = Tent::Peer->start(server_config => <<'CONF');
        tent_entity $URL;
        tent_activitypub on;
        tent_ap_name alice;
CONF
my $P = $peer->port;
my $acct = "acct:alice\@127.0.0.1:$P";
$jrd = $A->webfinger($acct);
is($jrd && $jrd->{subject}, $acct, "the peer resolves $acct");
$doc = $A->resolve($acct);
is($doc && $doc->{id}, $peer->url, 'and reads the actor: the entity URL');
is($doc->{preferredUsername}, 'alice', 'preferredUsername');
is($doc->{publicKey}{owner}, $peer->url, 'its key is its own');
like($doc->{publicKey}{publicKeyPem}, qr/BEGIN PUBLIC KEY/,
     'a public key PEM');
like($A->{last_fetch}{headers}{'content-type'}, qr{activity\+json},
     'as application/activity+json');
is($A->acct_of($peer->url), $acct,
   "its preferredUsername and host give it back, as Mastodon checks")
    or diag $A->{acct_error};

$peer->stop;
done_testing;
