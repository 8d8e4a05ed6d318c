# Our Update(Person) (issue #29, docs/activitypub.md "Update(Person) on
# a profile change"): when what the actor shows changes (the basic
# profile section through PUT {api}/profile/<basic>, a new key through
# POST {api}/activitypub/key), every ActivityPub follower's server gets
# the whole actor in a signed Update, once per inbox: bob and carol (one
# Tent::APPeer, one shared inbox) one request at the shared inbox, dave
# (an actor with no sharedInbox) his own.  A PUT of another profile type,
# or of the same values, sends nothing; another entity's credential, an
# app without write_profile, or without the basic type, cannot make one
# (their PUT refused, nothing queued); the peer down gets it on the
# queue's retry (tent_status counts the retry); a DELETE of the section
# sends the actor without it.

use strict;
use warnings;

use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep time);
use Tent::APPeer;
use Tent::Peer;
use Tent::Util;

my $PUBLIC = 'https://www.w3.org/ns/activitystreams#Public';
my $BASIC = 'https://tent.io/types/info/basic/v0.1.0';
my $MUSIC = 'https://example.org/types/info/music/v0.1.0';
my $AS = 'application/activity+json';

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
        location = /status { tent_status; }
CONF
my $URL = $peer->url;
my $API = "$URL/tent";
my $FOLLOWERS = "$API/activitypub/alice/followers";
my $c = $peer->client;
my $PROFILE = '/profile/' . Tent::Client::uri_escape($BASIC);
my $MUSIC_PROFILE = '/profile/' . Tent::Client::uri_escape($MUSIC);
my (undef, $writer) = $peer->authorized_app(
    'write_profile,read_profile', info_types => "$BASIC,$MUSIC");

my $ap = Tent::APPeer->start(names => ['bob', 'carol', 'dave'],
                             no_shared_inbox => ['dave']);
my $SHARED = $ap->shared_inbox_url;

sub actor {
    my $r = $c->request(GET => '//', headers => { Accept => $AS });
    return $r->{json};
}

# the Update(Person)s an inbox took ('shared', or an actor's name)
sub updates {
    my ($name) = @_;
    return $ap->inbox(type => 'Update', object_type => 'Person',
                      name => $name);
}

sub wait_update {
    my ($name, $what, $test) = @_;
    my ($r) = $ap->wait_inbox(type => 'Update', object_type => 'Person',
                              name => $name, timeout => 20,
                              match => $test);
    ok($r, "$name got the Update(Person) $what")
        or diag explain [$ap->rejected];
    return $r;
}

# the object as sent: the peer's record adds to/cc (undef) to it
sub object_of {
    my ($u) = @_;
    my $o = { %{ $u ? $u->{activity}{object} : {} } };
    defined $o->{$_} or delete $o->{$_} for keys %$o;
    return $o;
}

sub named {
    my ($n) = @_;
    return sub { ($_[0]{activity}{object}{name} // '') eq $n };
}

sub put_basic {
    my ($cred, %body) = @_;
    return $c->request(PUT => $PROFILE, cred => $cred,
                       body => { permissions => { public => JSON::PP::true },
                                 %body });
}

# ---- the peer's actors follow us: bob and carol share an inbox

my $first = actor();
my $key_made = time;
ok($first && $first->{publicKey}, 'our actor, its key made');
is($ap->follow($URL, as => 'bob'), 202, 'bob follows us');
is($ap->follow($URL, as => 'carol',
               inbox => "$API/activitypub/shared-inbox"),
   202, 'carol follows us at the shared inbox');
is($ap->follow($URL, as => 'dave'), 202,
   'dave (no shared inbox) follows us');
ok(scalar $ap->wait_inbox(type => 'Accept', name => $_), "$_ got our Accept")
    for qw(bob carol dave);
my (undef, $lister) = $peer->authorized_app('read_followers');
my $r = $c->request(GET => '/followers', cred => $lister);
is(scalar @{ $r->{json} || [] }, 3, 'three followers');
ok(!updates($_), "no Update(Person) at $_ yet") for qw(shared bob dave);

# ---- the owner changes the name: one Update per inbox

$r = put_basic($writer, name => 'Alice A', bio => 'I <b>like</b> tea',
               avatar_url => 'https://img.example/a.png');
is($r->{status}, 200, 'the owner\'s PUT of the basic section')
    or diag $r->{body};
my $actor = actor();
is($actor->{name}, 'Alice A', 'the actor shows the new name');

my $u = wait_update('shared', 'at the shared inbox', named('Alice A'));
my $a = $u ? $u->{activity} : {};
is($u && $u->{key_id}, "$URL#main-key",
   '... signed with our key (the peer verified it)');
like($a->{id} // '', qr/^\Q$URL\E#update-person-[0-9a-f]+$/, '... its id');
is($a->{actor}, $URL, '... by our actor');
is_deeply($a->{to}, [$PUBLIC], '... to the Public');
is_deeply($a->{cc}, [$FOLLOWERS], '... cc our followers');
is($a->{object}{id}, $URL, '... of our actor');
is($a->{object}{summary}, 'I &lt;b&gt;like&lt;/b&gt; tea',
   '... its summary');
is_deeply($a->{object}{icon},
          { type => 'Image', url => 'https://img.example/a.png' },
          '... its icon');
is($a->{object}{publicKey}{publicKeyPem}, $actor->{publicKey}{publicKeyPem},
   '... with the actor\'s key');
is_deeply(object_of($u), $actor,
          '... the whole actor, as GET of the entity URL answers it');
my $d = wait_update('dave', 'at his own inbox', named('Alice A'));
is($d && $d->{activity}{id}, $a->{id}, '... the same activity');

# a later post marks the end of what the change queued
my (undef, $poster) = $peer->authorized_app('write_posts',
                                            post_types => 'all');
my $mark = $c->post_ok($poster, Tent::Client::status_body('a marker'));
# (a public post: once at the shared inbox, for bob and carol)
ok(scalar $ap->wait_inbox(type => 'Create', name => $_,
                          object_id => "$API/posts/$mark->{id}"),
   "the marker post reached $_") for qw(shared dave);
is(scalar(updates('shared')), 1, 'one Update at the shared inbox, for two');
is(scalar(updates('dave')), 1, 'one at dave\'s inbox');
ok(!updates('bob') && !updates('carol'),
   'none at bob\'s nor carol\'s own inbox');

# ---- changes the actor does not show: nothing

$r = $c->request(PUT => $MUSIC_PROFILE, cred => $writer,
                 body => { genre => 'jazz',
                           permissions => { public => JSON::PP::true } });
is($r->{status}, 200, 'a PUT of another profile type');
$r = put_basic($writer, name => 'Alice A', bio => 'I <b>like</b> tea',
               avatar_url => 'https://img.example/a.png');
is($r->{status}, 200, 'a PUT of the same basic values');
$r = put_basic($writer, name => 'Alice A', bio => 'I <b>like</b> tea',
               avatar_url => 'https://img.example/a.png',
               website_url => 'https://alice.example/');
is($r->{status}, 200, 'a PUT of a field the actor does not show');

# ---- who may not: the profile route's own rules, nothing queued

my $other = Tent::Peer->start;
my (undef, $stranger) = $other->authorized_app('write_profile',
                                               info_types => 'all');
$r = put_basic($stranger, name => 'Mallory');
is($r->{status}, 401, 'another entity\'s credential: 401');
my (undef, $reader) = $peer->authorized_app('read_profile,write_posts',
                                            info_types => 'all');
$r = put_basic($reader, name => 'Mallory');
is($r->{status}, 403, 'an app without write_profile: 403');
my (undef, $music_only) = $peer->authorized_app('write_profile',
                                                info_types => $MUSIC);
$r = put_basic($music_only, name => 'Mallory');
is($r->{status}, 403, 'an app without the basic type: 403');
$r = put_basic(undef, name => 'Mallory');
is($r->{status}, 403, 'anonymous: 403');
is(actor()->{name}, 'Alice A', 'the name unchanged');
$other->stop;

# the next real change: the ones above sent nothing before it
$r = put_basic($writer, name => 'Alice B');
is($r->{status}, 200, 'a new name');
wait_update('shared', 'of the new name', named('Alice B'));
wait_update('dave', 'of the new name', named('Alice B'));
is_deeply([map { $_->{activity}{object}{name} } updates('shared')],
          ['Alice A', 'Alice B'],
          'nothing sent at the shared inbox in between');
is_deeply([map { $_->{activity}{object}{name} } updates('dave')],
          ['Alice A', 'Alice B'], 'nor at dave\'s');
ok(!grep({ ($_->{activity}{object}{name} // '') eq 'Mallory' }
         $ap->inbox(type => 'Update')), 'no Update naming Mallory');

# not public any more: the actor shows no name, that is a change too
$r = put_basic($writer, name => 'Alice B',
               permissions => { public => JSON::PP::false });
is($r->{status}, 200, 'the section made private');
wait_update('shared', 'without the name',
            sub { !exists $_[0]{activity}{object}{name} });

# ---- the peer down: the queue retries

my $st0 = Tent::Util::tent_status($c);
$ap->set(inbox_status => 503);
$r = put_basic($writer, name => 'Alice C');
is($r->{status}, 200, 'a new name while the peer is down');
ok(scalar $ap->wait_rejected(path => qr{^/inbox$}),
   'the shared inbox answered 503');
$ap->set(inbox_status => undef);
wait_update('shared', 'on the retry', named('Alice C'));
wait_update('dave', 'on the retry', named('Alice C'));
my $st1 = Tent::Util::tent_status($c);
cmp_ok($st1->{deliveries}{retried} // 0, '>', $st0->{deliveries}{retried} // 0,
       'tent_status: deliveries.retried counts it');
cmp_ok($st1->{deliveries}{activitypub} // 0, '>',
       $st0->{deliveries}{activitypub} // 0,
       'tent_status: deliveries.activitypub counts it delivered');

# ---- the section deleted: the actor without it

my $nameless = sub { !exists $_[0]{activity}{object}{name} };
$r = $c->request(DELETE => $PROFILE, cred => $writer);
is($r->{status}, 200, 'the owner deletes the basic section')
    or diag $r->{body};
ok(!exists actor()->{name}, 'the actor shows no name');
for my $who (qw(shared dave)) {
    # the second without a name (the first: the section made private)
    my @u = $ap->wait_inbox(type => 'Update', object_type => 'Person',
                            name => $who, count => 2, match => $nameless);
    is(scalar @u, 2, "$who got an Update(Person) without the name");
}
$r = put_basic($writer, name => 'Alice D');
is($r->{status}, 200, 'a basic section again');
wait_update('shared', 'of it', named('Alice D'));

# ---- the owner approves follows from now on: the actor says it, told

my $SETTINGS = '/profile/' . Tent::Client::uri_escape(
    'https://tent.io/types/info/activitypub/v0.1.0');
my (undef, $chooser) = $peer->authorized_app(
    'write_profile,read_profile',
    info_types => 'https://tent.io/types/info/activitypub/v0.1.0');
my $locked = sub {
    ($_[0]{activity}{object}{manuallyApprovesFollowers} // 0)
    && ($_[0]{activity}{object}{name} // '') eq 'Alice D' };
$r = $c->request(PUT => $SETTINGS, cred => $chooser,
                 body => { manually_approves_followers => JSON::PP::true,
                           permissions => { public => JSON::PP::false } });
is($r->{status}, 200, 'the owner chooses to approve follows')
    or diag $r->{body};
ok(actor()->{manuallyApprovesFollowers}, '... the actor says so');
$u = wait_update('shared', 'saying so, the name kept', $locked);
is_deeply(object_of($u), actor(), '... the actor as served');
wait_update('dave', 'saying so', $locked);
my $n = () = updates('shared');
$r = $c->request(PUT => $SETTINGS, cred => $chooser,
                 body => { manually_approves_followers => JSON::PP::true,
                           permissions => { public => JSON::PP::false } });
is($r->{status}, 200, 'the same choice again');
$r = $c->request(PUT => $SETTINGS, cred => $chooser,
                 body => { manually_approves_followers => JSON::PP::false,
                           permissions => { public => JSON::PP::false } });
is($r->{status}, 200, 'the choice turned off');
my @u = $ap->wait_inbox(type => 'Update', object_type => 'Person',
                        name => 'shared', timeout => 20, count => $n + 1);
ok(@u && !$u[-1]{activity}{object}{manuallyApprovesFollowers},
   'the shared inbox got the Update(Person) saying it is off');
is(scalar(() = updates('shared')), $n + 1,
   '... one Update for the two PUTs (the same choice again: none)');

# ---- a new key: the actor with it

my (undef, $secrets) = $peer->authorized_app('write_secrets');
my $wait = $key_made + 62 - time;
sleep $wait if $wait > 0;       # a key is rotated at most once a minute
$r = $c->request(POST => '/activitypub/key', cred => $secrets);
is($r->{status}, 200, 'the owner rotates the key') or diag $r->{body};
my $new = $r->{json}{public} // '';
isnt($new, $first->{publicKey}{publicKeyPem}, '... a new key');
$u = wait_update('shared', 'with the new key',
                 sub { ($_[0]{activity}{object}{publicKey}{publicKeyPem}
                        // '') eq $new });
is($u && $u->{activity}{object}{name}, 'Alice D', '... and the name');
is_deeply(object_of($u), actor(),
          '... the whole actor as served now');
wait_update('dave', 'with the new key',
            sub { ($_[0]{activity}{object}{publicKey}{publicKeyPem}
                   // '') eq $new });

my @bad = grep { /\[(alert|emerg|crit)\]|tent: .* failed/ }
          split /^/, $peer->error_log_text;
ok(!@bad, 'no alert, no failed step in the error log')
    or diag join '', @bad[0 .. ($#bad < 4 ? $#bad : 4)];

done_testing;
