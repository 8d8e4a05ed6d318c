# Followers (spec 7.2): follow requests refused before anything is
# fetched (no body, an absolute notification path, a non-http entity)
# and a follower id with path tricks, in the blocks; then the permission
# matrix with followers (spec 6.2): posts that are public, addressed to
# one follower's entity, addressed to a group, or private, read by
# anonymous callers, followers (signing with their s: credential) in and
# out of the group, an unrelated follower, and apps with and without
# read_posts — on every read route.  Zero leaks.  Then the followers list
# walked by Link, a follower taken out of its group, and one removed.
# The followers are real: loopback receivers that answer the challenge.
# Two servers following each other: t/federation/010-federation.t; 600
# followers, over more than one store batch: 030-followers-many.t.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx);
use Tent::Client;
use Tent::Receiver;
use JSON::PP;

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $c = Tent::Client->new;
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';

my ($wapp, $owner) = $c->authorized_app(
    'write_posts,read_posts,read_followers,write_followers,read_groups,'
    . 'write_groups,read_secrets', post_types => 'all');
my (undef, $noread) = $c->authorized_app('read_groups');

# three followers, each a receiver acting as a Tent entity
my %f;
for my $name (qw(ingroup named other)) {
    my $rx = Tent::Receiver->start;
    my $res = $c->request(POST => '/followers',
                          body => { entity => $rx->url, types => ['all'],
                                    notification_path => 'notifications/x' });
    is($res->{status}, 200, "$name follows") or diag $res->{body};
    $f{$name} = { rx => $rx, id => $res->{json}{id},
                  cred => { map { $_ => $res->{json}{$_} }
                            qw(mac_key_id mac_key mac_algorithm) } };
}

my $res = $c->request(POST => '/groups', cred => $owner,
                      body => { name => 'friends' });
my $gid = $res->{json}{id};
$res = $c->request(PUT => "/followers/$f{ingroup}{id}", cred => $owner,
                   body => { groups => [{ id => $gid }] });
is($res->{status}, 200, 'a follower put in a group');

sub post {
    my ($text, $perms) = @_;
    return $c->post_ok($owner, { type => $STATUS,
                                 content => { text => $text },
                                 permissions => $perms,
                                 mentions => [{ entity =>
                                                'https://x.example' }] });
}

my %p = (
    public => post('public', { public => JSON::PP::true }),
    named => post('to one entity',
                  { entities => { $f{named}{rx}->url => JSON::PP::true } }),
    group => post('to a group', { groups => [{ id => $gid }] }),
    private => post('private', {}),
);

my %principals = (
    anonymous => undef,
    'follower in the group' => $f{ingroup}{cred},
    'follower named' => $f{named}{cred},
    'follower unrelated' => $f{other}{cred},
    'app with read_posts' => $owner,
    'app without read_posts' => $noread,
);

my %sees = (
    anonymous => [qw(public)],
    'follower in the group' => [qw(public group)],
    'follower named' => [qw(public named)],
    'follower unrelated' => [qw(public)],
    'app with read_posts' => [qw(public named group private)],
    'app without read_posts' => [qw(public)],
);

for my $who (sort keys %principals) {
    my @cr = $principals{$who} ? (cred => $principals{$who}) : ();
    my %want = map { $_ => 1 } @{ $sees{$who} };

    # the status posts made here (follows made follower posts too)
    my $q = 'post_types=' . Tent::Client::uri_escape($STATUS);
    my $list = $c->request(GET => "/posts?limit=200&$q", @cr)->{json} || [];
    my %listed = map { $_->{id} => 1 } @$list;
    my $count = $c->request(GET => "/posts/count?$q", @cr)->{body};
    my $head = $c->request(HEAD => "/posts?$q", @cr)->{headers}{count};
    my $mentioning = $c->request(
        GET => '/posts?mentioned_entity=https%3A%2F%2Fx.example', @cr)->{json};

    is($count, scalar @$list, "$who: /posts/count = the list's length");
    is($head, $count, "$who: HEAD Count = the count");
    is(scalar @$list, scalar keys %want, "$who: sees " . scalar(keys %want)
       . ' posts');
    is(scalar @$mentioning, scalar keys %want,
       "$who: the same through ?mentioned_entity=");

    for my $k (sort keys %p) {
        my $id = $p{$k}{id};
        my $w = $want{$k} ? 1 : 0;
        is($listed{$id} ? 1 : 0, $w, "$who: feed shows '$k': $w");
        is($c->request(GET => "/posts/$id", @cr)->{status},
           $w ? 200 : 404, "$who: GET /posts/:id '$k'");
        is($c->request(GET => "/posts/$id?version=1", @cr)->{status},
           $w ? 200 : 404, "$who: ?version=1 '$k'");
        is($c->request(GET => "/posts/$id/versions", @cr)->{status},
           $w ? 200 : 404, "$who: versions '$k'");
        is($c->request(GET => "/posts/$id/mentions", @cr)->{body},
           $c->request(GET => '/posts/n0SuchP0st/mentions', @cr)->{body},
           "$who: mentions of '$k' tell no more than of no post");
        my $cur = $c->request(GET => "/posts?before_id=$id&limit=200", @cr);
        my @leak = grep { my $id2 = $_->{id};
                          my ($kk) = grep { $p{$_}{id} eq $id2 } keys %p;
                          $kk && !$want{$kk} } @{ $cur->{json} || [] };
        is(scalar @leak, 0, "$who: before_id='$k' leaks nothing");
    }
}

# the followers list walks by Link, both ways, no gaps or repeats
my (@walk, $url) = ();
$url = '/followers?limit=1';
for (1 .. 10) {
    my $r = $c->request(GET => $url);
    push @walk, map { $_->{id} } @{ $r->{json} || [] };
    my ($next) = ($r->{headers}{link} // '') =~ /<([^>]+)>; rel="next"/;
    last unless $next;
    ($url = $next) =~ s{^/tent}{};
}
my %seen;
is(scalar(grep { !$seen{$_}++ } @walk), 3, 'three followers, one a page');
is(scalar @walk, 3, 'none twice');
my $r = $c->request(GET => "/followers?limit=2&since_id=$walk[-1]");
is(join(',', map { $_->{id} } @{ $r->{json} }), join(',', @walk[0, 1]),
   'since_id walks back to the newer ones, newest first');

# a follower leaves the group: the group's post is hidden from it again
$res = $c->request(PUT => "/followers/$f{ingroup}{id}", cred => $owner,
                   body => { groups => [] });
is($c->request(GET => "/posts/$p{group}{id}",
               cred => $f{ingroup}{cred})->{status}, 404,
   'out of the group: the group post is hidden');

# a removed follower's credential reads nothing more
$res = $c->request(DELETE => "/followers/$f{named}{id}", cred => $owner);
is($res->{status}, 200, 'the named follower is removed');
is($c->request(GET => "/posts/$p{named}{id}",
               cred => $f{named}{cred})->{status}, 401,
   'its credential no longer authenticates');

$f{$_}{rx}->stop for keys %f;

__DATA__

=== TEST 1: a follow request without a body
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
POST /tent/followers
--- more_headers
Content-Type: application/vnd.tent.v0+json
--- error_code: 400
--- response_body_like: "error"



=== TEST 2: a follow request with an absolute notification path
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
POST /tent/followers
{"entity":"http://127.0.0.1:1","notification_path":"http://evil.example/x"}
--- more_headers
Content-Type: application/vnd.tent.v0+json
--- error_code: 422
--- response_body_like: Invalid notification path



=== TEST 2b: notification paths that climb out with escapes: each 422
(the server decodes "%2e%2e/" into ".." and resolves it: under one
origin, another entity's path; found by review)
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request eval
[map { "POST /tent/followers\n{\"entity\":\"http://127.0.0.1:1\",\"notification_path\":\"$_\"}" }
 '%2e%2e/%2e%2e/b/tent/notifications/F1', '.%2E/b/notifications/x',
 'n/%2F/x', 'n%5cx', 'n/%23x', 'n/%00']
--- more_headers
Content-Type: application/vnd.tent.v0+json
--- error_code eval
[422, 422, 422, 422, 422, 422]
--- response_body_like eval
[("Invalid notification path") x 6]



=== TEST 2c: an escape that is not one of those is a path like any (the
follow goes on to discovery, which the SSRF guard refuses: 403)
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
POST /tent/followers
{"entity":"http://127.0.0.1:1","notification_path":"notifications/a%20b"}
--- more_headers
Content-Type: application/vnd.tent.v0+json
--- error_code: 403
--- response_body_unlike: Invalid notification path



=== TEST 3: a follow request for a non-http entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
POST /tent/followers
{"entity":"file:///etc/passwd","notification_path":"n/1"}
--- more_headers
Content-Type: application/vnd.tent.v0+json
--- error_code: 422
--- response_body_like: Invalid entity



=== TEST 4: a follower id that is not one
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/followers/..%2F..%2Fetc
--- error_code: 404



=== TEST 5: the server
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/posts
--- error_code: 200
--- response_body: []
