# Likes of our posts (issue #29, docs/activitypub.md "Likes"), with
# Tent::APPeer as the remote server: a signed Like whose object is one
# of our post ids is one row per (post, actor): the same actor again
# counts once, two actors twice, Undo(Like) takes one away.  The count,
# when there are any, is in the post's ActivityPub object
# (likes.totalItems) and, for the owner's app, in GET {api}/posts/:id
# (activitypub.likes); an anonymous read has none.  Not counted: a Like of a post that is not ours (one
# we keep of carol's), of none, of a private post by an actor it does
# not mention; an unsigned or badly signed Like is 401, a blocked
# actor's 403.  The post's
# DELETE removes its rows: a post imported later under the same id has
# no likes.

use strict;
use warnings;

use Test::More;
use JSON::PP;
use Digest::SHA qw(sha256);
use MIME::Base64 qw(encode_base64url);
use Tent::Peer;
use Tent::APPeer;
use Tent::Client;
use Tent::Util qw(http_request);

my $AS = 'application/activity+json';

my $ap = Tent::APPeer->start(names => ['bob', 'carol', 'eve']);
my $BOB = $ap->actor_url('bob');
my $CAROL = $ap->actor_url('carol');

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
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';

sub post_id { substr(encode_base64url(substr(sha256($_[0]), 0, 16)), 0, 22) }

sub new_post {
    my (%o) = @_;
    my $r = $c->request(POST => '/posts', cred => $cred, body => {
        type => $STATUS, content => { text => 'ours' },
        permissions => { public => $o{public} ? JSON::PP::true
                                              : JSON::PP::false },
        ($o{mentions} ? (mentions => $o{mentions}) : ()) });
    return $r->{json}{id};
}

# the count the owner's app sees (undef: none shown)
sub likes {
    my ($id) = @_;
    my $r = $c->request(GET => "/posts/$id", cred => $cred);
    return 'status ' . $r->{status} unless $r->{status} == 200;
    return $r->{json}{activitypub} ? $r->{json}{activitypub}{likes} : undef;
}

# the count in the post's ActivityPub object
sub total {
    my ($id) = @_;
    my $r = http_request(port => $peer->port, method => 'GET',
                         path => "/tent/posts/$id",
                         headers => { Accept => $AS });
    return 'status ' . $r->{status} unless $r->{status} == 200;
    my $o = decode_json($r->{body});
    return 0 unless exists $o->{likes};
    return $o->{likes}{type} eq 'Collection' ? $o->{likes}{totalItems}
                                              : 'no Collection';
}

sub like_of {
    my ($id, $as, %o) = @_;
    return $ap->like($id =~ m{^https?://} ? $id : "$URL/tent/posts/$id",
                     as => $as, inbox => $INBOX, %o);
}

sub undo_last {
    my ($as) = @_;
    my $like = $ap->last_result->{activity};
    my $me = $ap->actor_url($as);
    return $ap->send(as => $as, inbox => $INBOX, activity => {
        '@context' => 'https://www.w3.org/ns/activitystreams',
        id => "$me#undo/" . int(rand 1e9), type => 'Undo', actor => $me,
        object => $like });
}

my $OURS = new_post(public => 1);
ok($OURS, 'a public post of ours');
is(likes($OURS), undef, 'no likes: none shown to the owner\'s app');
is(total($OURS), 0, '... nor in its object');

# ---- counted once per actor

is(like_of($OURS, 'bob'), 202, 'bob likes it: 202');
is(likes($OURS), 1, '... activitypub.likes 1 for the owner\'s app');
is(total($OURS), 1, '... likes.totalItems 1 in its object');

is(like_of($OURS, 'bob'), 202, 'bob likes it again (another Like): 202');
is(likes($OURS), 1, '... still 1');

is(like_of($OURS, 'carol'), 202, 'carol likes it: 202');
is(likes($OURS), 2, '... 2');
is(total($OURS), 2, '... 2 in its object');

my $anon = $c->request(GET => "/posts/$OURS");
is($anon->{status}, 200, 'an anonymous read: 200');
ok(!exists $anon->{json}{activitypub}, '... no likes in it');

# ---- Undo(Like)

is(undo_last('carol'), 202, 'carol undoes her Like: 202');
is(likes($OURS), 1, '... 1');
is(undo_last('carol'), 202, '... again: 202');
is(likes($OURS), 1, '... still 1');
is(total($OURS), 1, '... 1 in its object');

# ---- not counted

is(like_of("$URL/tent/posts/nosuchpost", 'eve'), 202,
   'a Like of no post: 202');
is(like_of("http://127.0.0.1:1/tent/posts/$OURS", 'eve'), 202,
   'a Like of another origin\'s post of the same id: 202');
is(likes($OURS), 1, '... our post\'s count unchanged');

is($ap->create_note(as => 'carol', to => [$URL], content => '<p>c</p>',
                    inbox => $INBOX), 202, 'carol\'s note to us: kept');
my $KEPT = post_id($ap->last_result->{object}{id});
is(like_of($KEPT, 'eve'), 202,
   'a Like of our URL naming the post we keep of carol\'s: 202');
my $r = $c->request(GET => '/posts/' . Tent::Client::uri_escape($CAROL)
                           . "/$KEPT", cred => $cred);
is($r->{status}, 200, '... carol\'s post is there');
ok(!exists $r->{json}{activitypub}{likes}, '... with no likes');

my $PRIV = new_post(public => 0);
my $DM = new_post(public => 0, mentions => [{ entity => $CAROL }]);
is(like_of($PRIV, 'eve'), 202, 'eve likes a private post: 202');
is(likes($PRIV), undef, '... not counted');
is(like_of($DM, 'eve'), 202,
   'eve likes a private post mentioning carol: 202');
is(likes($DM), undef, '... not counted');
is(like_of($DM, 'carol'), 202, 'carol likes it: 202');
is(likes($DM), 1, '... counted');

is(like_of($OURS, 'eve', unsigned => 1), 401, 'an unsigned Like: 401');
is(like_of($OURS, 'eve', bad_signature => 1), 401,
   'a badly signed Like: 401');
is(likes($OURS), 1, '... not counted');

my (undef, $bcred) = $peer->authorized_app('read_blocks,write_blocks');
$r = $c->request(POST => '/blocks', cred => $bcred,
                 body => { entity => $ap->actor_url('eve') });
is($r->{status}, 201, 'the owner blocks eve') or diag $r->{body};
is(like_of($OURS, 'eve'), 403, 'a Like by a blocked actor: 403');
is(likes($OURS), 1, '... not counted');

# ---- the post deleted: its rows too

$r = $c->request(DELETE => "/posts/$OURS", cred => $cred);
is($r->{status}, 200, 'our post deleted') or diag $r->{body};
is(total($OURS), 'status 404', '... its object 404');

my (undef, $icred) = $peer->authorized_app('import_posts,read_posts',
                                           post_types => 'all');
$r = $c->request(POST => '/posts', cred => $icred, body => {
    id => $OURS, entity => $URL, type => $STATUS,
    content => { text => 'again' }, received_at => time,
    permissions => { public => JSON::PP::true } });
is($r->{status}, 200, 'a post imported under its id') or diag $r->{body};
is(likes($OURS), undef, '... no likes: the rows went with the post');
is(total($OURS), 0, '... 0 in its object');

done_testing();
