# The operator's blocked domain against an actor whose key the inbox
# already keeps (issue #29, docs/activitypub.md "Activities"): a key is
# kept an hour, so a domain blocked after a verified activity must still
# refuse what would keep or change a post here (Create, Update of a note,
# Announce: 403 JSON, nothing kept), while what only removes (Undo of
# the follow, Delete of a note) stays open.  The peer is named
# "blocked.test" (its ids, handles and Host), a name only this suite's
# network namespace resolves (Tent::Netns), listening on 127.0.0.1:
# domain blocks match names, never IP literals (docs/blocks.md).

use strict;
use warnings;

use Tent::Netns qw(reexec_in_netns);
BEGIN { reexec_in_netns(hosts => ['blocked.test']) }

use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep time);
use Tent::APPeer;
use Tent::Hosting qw(operator_token operator_request);
use Tent::Peer;

my $TOKFILE = "/tmp/tent-apdomain-token-$$";
my $TOKEN = operator_token($TOKFILE);
END { unlink $TOKFILE if $TOKFILE }

my $peer = Tent::Peer->start(
    worker_processes => 1,
    http_config => <<'CONF',
    tent_store $SERVROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 200ms;
CONF
    server_config => <<"CONF");
        tent_entity \$URL;
        tent_activitypub on;
        tent_ap_name alice;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
        location /tent-admin {
            tent_admin;
            tent_admin_token_file $TOKFILE;
            allow 127.0.0.1;
            deny all;
        }
CONF
my $URL = $peer->url;
my $API = "$URL/tent";
my $INBOX = "$API/activitypub/alice/inbox";
my $c = $peer->client;
my (undef, $owner) = $peer->authorized_app(
    'read_posts,read_followers', post_types => 'all');

my $ap = Tent::APPeer->start(names => ['bob'], name => 'blocked.test');
my $BOB = $ap->actor_url('bob');
like($BOB, qr{^http://blocked\.test:\d+/users/bob$}, 'the peer by name');

sub feed {
    my $r = $c->request(GET => '/posts?entity=' . Tent::APPeer::_escape($BOB),
                        cred => $owner);
    return [ map { $_->{content}{text} // '' } @{ $r->{json} || [] } ];
}

sub followers {
    my $r = $c->request(GET => '/followers', cred => $owner);
    return [ map { $_->{entity} } @{ $r->{json} || [] } ];
}

# ---- before the block: bob's key verified and kept, his note kept

is($ap->follow($URL, as => 'bob'), 202, 'bob follows us: 202')
    or diag explain $ap->last_result;
is_deeply(followers(), [$BOB], 'bob is a follower');
is($ap->create_note(as => 'bob', to => [$URL], mentions => [$URL],
                    content => '<p>before</p>'), 202,
   'a note to us before the block: 202');
my $before = $ap->last_result->{object}{id};
my $end = time + 10;
sleep 0.1 while time < $end && !grep { /before/ } @{ feed() };
ok((grep { /before/ } @{ feed() }), '... kept');

# ---- the operator blocks the domain; bob's key is still kept

my $res = operator_request(port => $peer->port, token => $TOKEN,
                           body => { action => 'block',
                                     domain => 'blocked.test' });
is($res->{status}, 201, 'the operator blocks blocked.test')
    or diag $res->{body};
$ap->clear;

is($ap->create_note(as => 'bob', to => [$URL], mentions => [$URL],
                    content => '<p>after</p>'), 403,
   'a note to us after the block: 403');
like(eval { decode_json($ap->last_result->{body})->{error} } // '',
     qr/domain is blocked/, '... saying why, in JSON');
is($ap->update_note($before, content => '<p>changed</p>'), 403,
   'an Update of his kept note: 403');
is($ap->announce("$API/posts/none", as => 'bob', inbox => $INBOX), 403,
   'an Announce: 403');
is(scalar(grep { $_->{method} eq 'GET' } $ap->requests), 0,
   '... none of them fetched anything of the peer');

my $f = feed();
ok(!(grep { /after|changed/ } @$f), 'nothing new kept, nothing changed')
    or diag explain $f;
ok((grep { /before/ } @$f), 'the note of before is there, as it was');

# ---- what removes stays open

is($ap->delete_note($before), 202, 'his Delete of that note: 202');
$end = time + 10;
sleep 0.1 while time < $end && grep { /before/ } @{ feed() };
is_deeply(feed(), [], '... it is gone');
is($ap->undo_follow($URL, as => 'bob'), 202, 'his Undo(Follow): 202');
is_deeply(followers(), [], '... no follower left');

$ap->stop;
$peer->stop;

done_testing();
