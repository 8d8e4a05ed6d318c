# The inbox's Announce and Like (issue #29, docs/activitypub.md "The
# inbox", "Activities"), with Tent::APPeer as the remote server: an
# Announce of one of our posts, by anyone, is a Tent repost of the actor
# naming our post; an Announce by one of our followings of a remote
# note is a repost naming {attributedTo, ngx_http_tent_ap_post_id(URL)}
# (the copy we keep of it, when we keep it) or the URL itself, the URL
# in activitypub.object; an Announce by a stranger of another's note is
# not kept; the same Announce again is one repost.  The object is never
# fetched: an Announce of a note on the peer costs the peer no request,
# one on a refused address (169.254.169.254) is kept as a URL and
# nothing connects.  Like: 202, our post unchanged (counted: 047).

use strict;
use warnings;

use Test::More;
use JSON::PP;
use Digest::SHA qw(sha256);
use MIME::Base64 qw(encode_base64url);
use Tent::Peer;
use Tent::APPeer;
use Tent::Client;

my $ap = Tent::APPeer->start(names => ['bob', 'carol', 'eve']);
my $BOB = $ap->actor_url('bob');
my $CAROL = $ap->actor_url('carol');
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
my (undef, $cred) = $peer->authorized_app('read_posts,write_posts',
                                          post_types => 'all');
my $REPOST = 'https://tent.io/types/post/repost/v0.1.0';

sub post_id { substr(encode_base64url(substr(sha256($_[0]), 0, 16)), 0, 22) }

sub posts_of {
    my ($actor) = @_;
    my $r = $c->request(GET => '/posts?limit=50&entity='
                               . Tent::Client::uri_escape($actor),
                        cred => $cred);
    return $r->{json} || [];
}

sub gets_of {
    my ($path) = @_;
    return scalar grep { $_->{method} eq 'GET' && $_->{path} eq $path }
                  $ap->requests;
}

# ---- bob is one of our followings (imported, as in 040)
{
    my (undef, $icred) = $peer->authorized_app(
        'write_secrets,write_profile,write_followers,write_followings,'
        . 'write_groups');
    my $r = $c->request(POST => '/import?merge=1', cred => $icred,
        body => { version => 0, entity => $URL, complete => JSON::PP::true,
                  followings => [{
                      id => 'b' x 32, entity => $BOB,
                      remote_id => 'r1', mac_key_id => 'x:1',
                      mac_key => 'k' x 32, mac_algorithm => 'hmac-sha-256',
                      confirmed => JSON::PP::true, types => ['all'],
                      licenses => [],
                      permissions => { public => JSON::PP::false },
                      created_at => time, updated_at => time }] });
    is($r->{status}, 200, 'a following of bob (imported)') or diag $r->{body};
}

# ---- an Announce of our post, by a stranger: a repost naming ours

my $res = $c->request(POST => '/posts', cred => $cred, body => {
    type => 'https://tent.io/types/post/status/v0.1.0',
    content => { text => 'ours' },
    permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a post of ours') or diag $res->{body};
my $OURS = $res->{json}{id};
my $OURS_URL = "$URL/tent/posts/$OURS";

is($ap->announce($OURS_URL, as => 'eve', inbox => $INBOX), 202,
   'eve announces our post: 202');
my $posts = posts_of($EVE);
is(scalar @$posts, 1, '... one post of eve');
is($posts->[0]{type}, $REPOST, '... a repost');
is_deeply($posts->[0]{content}, { entity => $URL, id => $OURS },
          '... of our post');
is($posts->[0]{activitypub}{object}, $OURS_URL,
   '... the object\'s URL in activitypub.object');
ok($posts->[0]{permissions}{public}, '... public (addressed so)');
$res = $c->request(GET => "/posts/$OURS", cred => $cred);
is($res->{json}{version}, 1, 'our post unchanged');

# the same Announce again (another body: the same bytes in the same
# second would be a replay, 401): one repost
my $again = { %{ $ap->last_result->{activity} },
              published => '2026-01-01T00:00:00Z' };
is($ap->send(as => 'eve', inbox => $INBOX, activity => $again), 202,
   'the same Announce again: 202');
is(scalar @{ posts_of($EVE) }, 1, '... one repost still');

# ---- a stranger's Announce of a remote note: not kept

is($ap->announce("$CAROL/statuses/1", as => 'eve', inbox => $INBOX), 202,
   'eve announces carol\'s note: 202');
is(scalar @{ posts_of($EVE) }, 1, '... not kept');

# ---- a following's Announce of a note we keep: the repost names it

is($ap->create_note(as => 'carol', to => [$URL], content => '<p>c</p>',
                    inbox => $INBOX), 202, 'carol\'s note to us: kept');
my $NOTE = $ap->last_result->{object}{id};
my $before = gets_of("/users/carol/statuses/" . ($NOTE =~ m{/(\d+)$})[0]);
is($ap->announce({ id => $NOTE, type => 'Note', attributedTo => $CAROL },
                 as => 'bob', inbox => $INBOX), 202,
   'bob announces it (embedded): 202');
$posts = posts_of($BOB);
is(scalar @$posts, 1, '... a post of bob');
is($posts->[0]{type}, $REPOST, '... a repost');
is_deeply($posts->[0]{content}, { entity => $CAROL, id => post_id($NOTE) },
          '... naming carol\'s post as we keep it');
$res = $c->request(GET => '/posts/' . Tent::Client::uri_escape($CAROL)
                          . '/' . $posts->[0]{content}{id}, cred => $cred);
is($res->{status}, 200, '... which is there') or diag $res->{body};
is(gets_of("/users/carol/statuses/" . ($NOTE =~ m{/(\d+)$})[0]), $before,
   '... the note not fetched');

# by reference, not kept: the URL, nothing fetched
my $n0 = scalar $ap->requests;
is($ap->announce("$CAROL/statuses/999", as => 'bob', inbox => $INBOX), 202,
   'bob announces a note by its URL: 202');
$posts = posts_of($BOB);
is(scalar @$posts, 2, '... a second repost');
is_deeply($posts->[0]{content}, { entity => "$CAROL/statuses/999",
                                  id => post_id("$CAROL/statuses/999") },
          '... naming the URL (its author unknown)');
is($posts->[0]{activitypub}{object}, "$CAROL/statuses/999",
   '... the URL in activitypub.object');
is(gets_of('/users/carol/statuses/999'), 0, '... nothing fetched');

# a refused address: kept as a URL, nothing connects
my $META = 'http://169.254.169.254/latest/meta-data';
is($ap->announce($META, as => 'bob', inbox => $INBOX), 202,
   'bob announces an object on 169.254.169.254: 202');
$posts = posts_of($BOB);
is(scalar @$posts, 3, '... a repost');
is($posts->[0]{activitypub}{object}, $META, '... the URL kept, as text');
my $log = $peer->error_log_text;
unlike($log, qr/169\.254\.169\.254/, '... no fetch of it in the log');

# not http(s): not kept
is($ap->announce('javascript:alert(1)', as => 'bob', inbox => $INBOX), 202,
   'an Announce of a javascript: object: 202');
is(scalar @{ posts_of($BOB) }, 3, '... not kept');

# ---- Like: 202, no post kept (the count: 047-likes)

my $eve_before = scalar @{ posts_of($EVE) };
is($ap->like($OURS_URL, as => 'eve', inbox => $INBOX), 202,
   'eve likes our post: 202');
is(scalar @{ posts_of($EVE) }, $eve_before, '... nothing kept');
$res = $c->request(GET => "/posts/$OURS", cred => $cred);
is($res->{json}{version}, 1, '... our post unchanged');

done_testing();
