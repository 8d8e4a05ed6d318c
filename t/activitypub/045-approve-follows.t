# Follows the owner approves (issue #29 item 3, docs/activitypub.md
# "Approving follows"): the owner's choice is the profile section
# https://tent.io/types/info/activitypub/v0.1.0 (write_profile).  With it
# on, the actor says manuallyApprovesFollowers; a Follow from a
# Tent::APPeer actor is a request (no follower, no Accept); the owner
# lists the requests (read_followers), accepts one (a follower, the
# Accept received signed by our key, then our posts reach it) or rejects
# one (the Reject received); an Undo of a request removes it; at most
# tent_ap_follow_requests wait (a flood refused with 429); anonymous,
# another entity's credential and an app without the scope refused;
# turned off again, follows are accepted at once.

use strict;
use warnings;

use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep time);
use Tent::APPeer;
use Tent::Client;
use Tent::Peer;

my $AP_INFO = 'https://tent.io/types/info/activitypub/v0.1.0';
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $AS = 'application/activity+json';
my $CTX = 'https://www.w3.org/ns/activitystreams';

my $CONF = <<'CONF';
        tent_entity $URL;
        tent_activitypub on;
        tent_ap_name alice;
        tent_ap_follow_requests 3;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF

my $peer = Tent::Peer->start(
    worker_processes => 2,
    http_config => <<'HTTP',
    tent_store $SERVROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 200ms;
    tent_delivery_retry 1s 2s;
HTTP
    server_config => $CONF);
my $URL = $peer->url;
my $API = "$URL/tent";
my $c = $peer->client;
my (undef, $owner) = $c->authorized_app(
    'write_posts,read_posts,read_followers,write_followers,write_profile',
    info_types => $AP_INFO, post_types => 'all');
my (undef, $reader) = $c->authorized_app('read_followers,read_posts',
                                         post_types => 'all');
my (undef, $poster) = $c->authorized_app('write_posts,read_posts',
                                         post_types => 'all');

# another entity, its owner's app with both scopes
my $other = Tent::Peer->start(server_config => $CONF);
my (undef, $stranger) = $other->client->authorized_app(
    'read_followers,write_followers', post_types => 'all');

my $ap = Tent::APPeer->start(names => [qw(bob carol dave erin frank)]);
my %ACTOR = map { $_ => $ap->actor_url($_) } qw(bob carol dave erin frank);

sub actor {
    my $r = Tent::APPeer::http('GET', "$URL/", headers => { Accept => $AS });
    return $r->{json} || {};
}

sub choose {
    my ($on) = @_;
    my $r = $c->request(
        PUT => '/profile/' . Tent::Client::uri_escape($AP_INFO),
        cred => $owner,
        body => { manually_approves_followers =>
                      $on ? JSON::PP::true : JSON::PP::false,
                  permissions => { public => JSON::PP::true } });
    return $r->{status};
}

sub followers {
    my $r = $c->request(GET => '/followers', cred => $owner);
    return [ sort map { $_->{entity} } list_of($r) ];
}

sub requests {
    my (%o) = @_;
    return $c->request(GET => '/activitypub/alice/requests',
                       cred => exists $o{cred} ? $o{cred} : $owner);
}

sub list_of {
    my ($r) = @_;
    return ref $r->{json} eq 'ARRAY' ? @{ $r->{json} } : ();
}

sub pending {
    return [ map { $_->{actor} } list_of(requests()) ];
}

sub request_of {
    my ($who) = @_;
    my ($q) = grep { $_->{actor} eq $ACTOR{$who} } list_of(requests());
    return $q || {};
}

sub answer {
    my ($what, $id, %o) = @_;
    return $c->request(POST => "/activitypub/alice/requests/$id/$what",
                       cred => exists $o{cred} ? $o{cred} : $owner,
                       body => '{}');
}

sub json_error {
    my ($r) = @_;
    return ($r->{headers}{'content-type'} // '') =~ /json/
           && ref $r->{json} eq 'HASH' && defined $r->{json}{error};
}

# ---- off (the default): unchanged

is(actor()->{manuallyApprovesFollowers}, JSON::PP::false,
   'the actor: manuallyApprovesFollowers false by default');

# ---- the owner's choice: on

is(choose(1), 200, 'the owner chooses to approve follows (write_profile)');
is(actor()->{manuallyApprovesFollowers}, JSON::PP::true,
   'the actor: manuallyApprovesFollowers true');
my $r = $c->request(PUT => '/profile/' . Tent::Client::uri_escape($AP_INFO),
                    cred => $poster,
                    body => { manually_approves_followers => JSON::PP::false });
is($r->{status}, 403, 'an app without write_profile cannot change it');
is(actor()->{manuallyApprovesFollowers}, JSON::PP::true, '... still true');

# ---- a Follow is a request

is($ap->follow($URL, as => 'bob'), 202, 'bob follows: 202')
    or diag explain $ap->last_result;
my $bob_follow = $ap->last_result->{activity};
is($ap->follow($URL, as => 'carol',
               inbox => "$API/activitypub/shared-inbox"),
   202, 'carol follows at the shared inbox: 202');
my $carol_follow = $ap->last_result->{activity};
is_deeply(followers(), [], 'neither is a follower');

$r = requests();
is($r->{status}, 200, 'the owner lists the requests: 200');
is_deeply([map { $_->{actor} } list_of($r)],
          [$ACTOR{bob}, $ACTOR{carol}], '... bob, then carol');
my $bq = request_of('bob');
like($bq->{id} // '', qr/^[0-9a-f]{32}$/, '... each with an id');
is($bq->{follow}, $bob_follow->{id}, '... the Follow\'s id');
is($bq->{inbox}, $ap->inbox_url('bob'), '... the actor\'s inbox');
like($bq->{created_at} // '', qr/^\d+$/, '... when it came');

is($ap->follow($URL, as => 'bob'), 202, 'bob follows again: 202');
is_deeply(pending(), [$ACTOR{bob}, $ACTOR{carol}], '... no second request');

# ---- who may list and answer

my $cq = request_of('carol');
$r = requests(cred => undef);
is($r->{status}, 403, 'anonymous list: 403');
ok(json_error($r), '... a JSON error');
$r = requests(cred => $poster);
is($r->{status}, 403, 'an app without read_followers: 403');
ok(json_error($r), '... a JSON error');
$r = requests(cred => $stranger);
is($r->{status}, 401, 'another entity\'s credential: 401');
ok(json_error($r), '... a JSON error');
is(requests(cred => $reader)->{status}, 200,
   'an app with read_followers lists them');
for my $what (qw(accept reject)) {
    $r = answer($what, $cq->{id}, cred => undef);
    is($r->{status}, 403, "anonymous $what: 403");
    ok(json_error($r), '... a JSON error');
    $r = answer($what, $cq->{id}, cred => $reader);
    is($r->{status}, 403, "$what with read_followers only: 403");
    ok(json_error($r), '... a JSON error');
    $r = answer($what, $cq->{id}, cred => $stranger);
    is($r->{status}, 401, "$what with another entity's credential: 401");
    ok(json_error($r), '... a JSON error');
}
$r = $c->request(GET => '/activitypub/bob/requests', cred => $owner);
is($r->{status}, 404, 'another name\'s requests: 404');
$r = answer('accept', '0' x 32);
is($r->{status}, 404, 'an unknown request: 404');
ok(json_error($r), '... a JSON error');
$r = answer('accept', 'not-an-id');
is($r->{status}, 404, 'a malformed id: 404');
is_deeply(pending(), [$ACTOR{bob}, $ACTOR{carol}], 'nothing changed');
is_deeply(followers(), [], '... no follower');

# ---- reject carol: a Reject, no follower

$r = answer('reject', $cq->{id});
is($r->{status}, 200, 'the owner rejects carol: 200') or diag $r->{body};
my ($rej) = $ap->wait_inbox(type => 'Reject', name => 'carol');
ok($rej, 'carol received our Reject') or diag explain [$ap->rejected];
is($rej && $rej->{key_id}, "$URL#main-key",
   '... signed with our key (verified by the peer)');
is($rej && $rej->{activity}{actor}, $URL, '... by our actor');
is($rej && $rej->{activity}{object}{id}, $carol_follow->{id},
   '... of her Follow');
is_deeply(pending(), [$ACTOR{bob}], 'carol\'s request is gone');
is_deeply(followers(), [], 'carol is no follower');
is(answer('reject', $cq->{id})->{status}, 404, 'rejected again: 404');
ok(!$ap->inbox(type => 'Accept'), 'no Accept was sent to anyone');

# ---- accept bob: the follower, the Accept, then our posts

my $bid = request_of('bob')->{id};
$r = answer('accept', $bid);
is($r->{status}, 200, 'the owner accepts bob: 200') or diag $r->{body};
is($r->{json} && $r->{json}{entity}, $ACTOR{bob}, '... the follower\'s entity');
like($r->{json} && $r->{json}{id} // '', qr/^[0-9a-f]{32}$/,
     '... and id');
my $bob_fid = $r->{json} && $r->{json}{id};
my ($acc) = $ap->wait_inbox(type => 'Accept', name => 'bob');
ok($acc, 'bob received our Accept') or diag explain [$ap->rejected];
is($acc && $acc->{key_id}, "$URL#main-key", '... signed with our key');
is($acc && $acc->{activity}{object}{id}, $bob_follow->{id},
   '... of his Follow');
is_deeply([$ap->following('bob')], [$URL], 'bob follows us now');
is_deeply(followers(), [$ACTOR{bob}], 'bob is our follower');
$r = $c->request(GET => "/followers/$bob_fid", cred => $owner);
is($r->{json} && $r->{json}{activitypub}{follow}, $bob_follow->{id},
   '... his record keeps his Follow');
is_deeply(pending(), [], 'no request left');
is(answer('accept', $bid)->{status}, 404, 'accepted again: 404');

my $p = $c->post_ok($owner, { type => $STATUS, content => { text => 'hi' },
                              permissions => { public => JSON::PP::true } });
# a public post goes once to the peer's shared inbox (docs/activitypub.md
# "Shared inboxes"), for bob, the one follower there
ok(scalar $ap->wait_inbox(type => 'Create', name => 'shared',
                          object_id => "$API/posts/$p->{id}"),
   'our public post reaches bob, at his shared inbox');
ok(!$ap->inbox(type => 'Create', name => 'carol'),
   '... and not carol');

# ---- an Undo of a request removes it

is($ap->follow($URL, as => 'dave'), 202, 'dave follows: 202');
is_deeply(pending(), [$ACTOR{dave}], '... a request');
is($ap->send(as => 'dave', inbox => "$API/activitypub/alice/inbox",
             activity => { '@context' => $CTX,
                           id => "$ACTOR{dave}#undo/other", type => 'Undo',
                           actor => $ACTOR{dave},
                           object => "$ACTOR{dave}#follows/another" }),
   202, 'dave undoes another Follow (by id): 202');
is_deeply(pending(), [$ACTOR{dave}], '... his request stays');
is($ap->send(as => 'carol', inbox => "$API/activitypub/alice/inbox",
             activity => { '@context' => $CTX,
                           id => "$ACTOR{carol}#undo/x", type => 'Undo',
                           actor => $ACTOR{carol},
                           object => { id => "$ACTOR{carol}#follows/x",
                                       type => 'Follow',
                                       actor => $ACTOR{carol},
                                       object => $URL } }),
   202, 'carol undoes a Follow of us (she has no request): 202');
is_deeply(pending(), [$ACTOR{dave}], '... dave\'s request stays');
is($ap->undo_follow($URL, as => 'dave'), 202, 'dave undoes his: 202');
is_deeply(pending(), [], '... the request is gone');
is_deeply(followers(), [$ACTOR{bob}], '... dave is no follower');
is($ap->follow($URL, as => 'dave'), 202, 'dave follows again: 202');
is_deeply(pending(), [$ACTOR{dave}], '... a request');
is($ap->send(as => 'dave', inbox => "$API/activitypub/alice/inbox",
             activity => { '@context' => $CTX,
                           id => "$ACTOR{dave}#delete", type => 'Delete',
                           actor => $ACTOR{dave}, object => $ACTOR{dave} }),
   202, 'dave\'s account deleted: 202');
is_deeply(pending(), [], '... his request is gone');

# ---- at most tent_ap_follow_requests (3) wait

is($ap->follow($URL, as => $_), 202, "$_ follows: 202")
    for qw(carol dave erin);
is($ap->follow($URL, as => 'frank'), 429, 'a fourth: 429');
my $body = eval { decode_json($ap->last_result->{body}) } || {};
like($body->{error} // '', qr/Too many follow requests/, '... a JSON error');
is_deeply(pending(), [@ACTOR{qw(carol dave erin)}],
          '... three requests, not frank\'s');
is(answer('reject', request_of('erin')->{id})->{status}, 200,
   'erin rejected');
is($ap->follow($URL, as => 'frank'), 202, 'then frank\'s Follow: 202');
is_deeply(pending(), [@ACTOR{qw(carol dave frank)}], '... a request');

# ---- the choice off again: Follows accepted at once

is(choose(0), 200, 'the owner turns it off');
is(actor()->{manuallyApprovesFollowers}, JSON::PP::false,
   'the actor: manuallyApprovesFollowers false');
is($ap->follow($URL, as => 'erin'), 202, 'erin follows: 202');
ok(scalar $ap->wait_inbox(type => 'Accept', name => 'erin'),
   '... accepted at once');
is_deeply(followers(), [sort @ACTOR{qw(bob erin)}], '... a follower');
is_deeply(pending(), [@ACTOR{qw(carol dave frank)}],
          'the requests still wait for the owner');
is($ap->follow($URL, as => 'frank'), 202, 'frank follows again: 202');
ok(scalar $ap->wait_inbox(type => 'Accept', name => 'frank'),
   '... accepted at once');
$r = $c->request(GET => '/followers', cred => $owner);
my ($ff) = grep { $_->{entity} eq $ACTOR{frank} } list_of($r);
$r = answer('accept', request_of('frank')->{id});
is($r->{status}, 200, 'his old request accepted: 200');
is($r->{json} && $r->{json}{id}, $ff && $ff->{id},
   '... the follower he is already (no second one)');
is_deeply(followers(), [sort @ACTOR{qw(bob erin frank)}],
          '... one record each');
is_deeply(pending(), [@ACTOR{qw(carol dave)}], '... his request gone');

# ---- nothing went wrong

my @bad = grep { /\[(?:alert|crit|emerg)\]|\[error\].*tent store/ }
          split /\n/, $peer->error_log_text;
is_deeply(\@bad, [], 'no alert or failed store step in the error log');

$ap->stop;
$other->stop;
$peer->stop;
done_testing;
