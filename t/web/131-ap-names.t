# ActivityPub actors' names and faces (issue 30, item 6; docs/activitypub.md
# "Names and faces"), with Tent::APPeer as the remote server: the name
# and icon of an actor we follow (read when the following is made) and of
# a follower (from its Update(Person)) are kept in its record's
# "activitypub" and shown by GET /followings and GET /followers as the
# basic profile a Tent entity's record carries, which the web page reads.
# Bounded: the name as text, at most 80 characters, no control character
# nor bidi override; the icon only when it is an http(s) URL of at most
# 2 KB.  Attacks: eve's Update of bob's Person names nobody; an anonymous
# list shows no profile.

use strict;
use warnings;
use utf8;

use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep time);
use Tent::Peer;
use Tent::APPeer;
use Tent::Client;

binmode Test::More->builder->$_, ':utf8' for qw(output failure_output);

my $ap = Tent::APPeer->start(names => ['bob', 'eve']);
my $BOB = $ap->actor_url('bob');
my $EVE = $ap->actor_url('eve');
my $R = $ap->url;
my $BASIC = 'https://tent.io/types/info/basic/v0.1.0';

my $peer = Tent::Peer->start(worker_processes => 1,
    http_config => <<'CONF',
    tent_store $SERVROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_delivery_interval 200ms;
CONF
    server_config => <<'CONF');
        tent_entity $URL;
        tent_activitypub on;
        tent_ap_name alice;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF
my $URL = $peer->url;
my $INBOX = "$URL/tent/activitypub/alice/inbox";
my $c = $peer->client;
my (undef, $cred) = $peer->authorized_app(
    'read_followers,read_followings,write_followings');

sub record_of {
    my ($kind, $actor, %o) = @_;
    my $f = $c->request(GET => "/$kind",
                        exists $o{cred} ? (cred => $o{cred}) : (cred => $cred)
                        )->{json} || [];
    my ($r) = grep { $_->{entity} eq $actor } @$f;
    return $r;
}

# ---- a follower: its Follow (the actor read for its key), then its
# Update(Person), give its name and icon

is($ap->follow($URL, as => 'bob', inbox => $INBOX), 202, 'bob follows');
my $rec = record_of('followers', $BOB);
ok($rec, '... a follower');
is($rec && $rec->{activitypub}{name}, 'Bob',
   'its name, from its actor fetched for the Follow\'s key, kept');
is_deeply($rec && $rec->{profile}, { $BASIC => { name => 'Bob' } },
          '... shown as a basic profile (no icon: none given)');

my $long = 'B' x 100;
is($ap->update_person(as => 'bob', inbox => $INBOX,
                      name => "  \x{202E}Bob <b>the</b>\tBuilder\x{2066} ",
                      icon => "$R/media/bob.png"), 202,
   'bob\'s Update(Person) with a name and an icon: 202');
$rec = record_of('followers', $BOB);
is($rec->{activitypub}{name}, 'Bob <b>the</b>Builder',
   'the name kept as text, without bidi overrides nor controls');
is($rec->{activitypub}{icon}, "$R/media/bob.png", 'the icon\'s URL kept');
is_deeply($rec->{profile}, { $BASIC => { name => 'Bob <b>the</b>Builder',
                                         avatar_url => "$R/media/bob.png" } },
          'GET /followers shows them as a basic profile');
is($rec->{activitypub}{inbox}, "$BOB/inbox", 'its inbox kept');
is(scalar(grep { $_->{path} eq '/media/bob.png' } $ap->requests), 0,
   'the icon is not fetched');

is($ap->update_person(as => 'bob', inbox => $INBOX, name => $long,
                      icon => 'javascript:alert(1)'), 202,
   'a name of 100 characters, an icon that is no http(s) URL');
$rec = record_of('followers', $BOB);
is($rec->{activitypub}{name}, 'B' x 80, 'the name cut at 80 characters');
ok(!exists $rec->{activitypub}{icon}, 'the icon dropped');
is_deeply($rec->{profile}, { $BASIC => { name => 'B' x 80 } },
          '... and from the profile');

is($ap->update_person(as => 'bob', inbox => $INBOX, name => 'Bob',
                      icon => "$R/" . ('a' x 2100) . '.png'), 202,
   'an icon URL over 2 KB');
$rec = record_of('followers', $BOB);
is($rec->{activitypub}{name}, 'Bob', 'the new name');
ok(!exists $rec->{activitypub}{icon}, 'the long icon not kept');

# eve, signing validly, updates bob's Person: nothing changes
is($ap->send(as => 'eve', inbox => $INBOX, activity => {
        '@context' => 'https://www.w3.org/ns/activitystreams',
        id => "$EVE#updates/1", type => 'Update', actor => $EVE,
        object => { id => $BOB, type => 'Person', name => 'Eve was here',
                    inbox => "$BOB/inbox" } }), 202,
   'eve\'s Update of bob\'s Person: 202');
is(record_of('followers', $BOB)->{activitypub}{name}, 'Bob',
   '... bob\'s name unchanged');

# anonymous: no profile in the list
my $anon = record_of('followers', $BOB, cred => undef);
ok($anon && !exists $anon->{profile} && !exists $anon->{activitypub},
   'an anonymous list shows neither');

# ---- a following: the actor's name and icon read when it is made

{
    # the peer serves eve's Person with this name and icon from now on
    my $a = $ap->{cfg}{actors}{eve};
    $a->{name} = "Eve \x{202E}Example";
    $a->{icon} = "$R/media/eve.png";
    $ap->_save_config;
}
my $r = $c->request(POST => '/followings', cred => $cred,
                    body => { entity => $EVE });
is($r->{status}, 200, 'alice follows eve') or diag $r->{body};
my $end = time + 20;
my $f;
until (($f = record_of('followings', $EVE)) || time > $end) {
    sleep 0.2;
}
ok($f, '... eve accepted: a following');
is($f && $f->{activitypub}{name}, 'Eve Example', 'her name kept');
is_deeply($f && $f->{profile}, { $BASIC => { name => 'Eve Example',
                                             avatar_url => "$R/media/eve.png" } },
          'GET /followings shows it as a basic profile');

done_testing();
