# Issue #11, findings 7 and 11.
#
# Every spelling of an entity URL is one entity (docs/federation.md,
# "Entity URLs"): the scheme and host in any case, a default or
# zero-padded port, a trailing slash, escaped unreserved bytes and dot
# segments.  POST /followers with each spelling keeps one follower and one
# credential; lookups by url-encoded entity, ?entity=, followings,
# notifications, mentions in and out, permissions.entities and the
# *_entity query parameters find it whatever the spelling.
#
# Follower posts are private (docs/federation.md): strangers that follow
# and unfollow make posts only our apps see, sent to none of our
# followers, and the public feed does not fill.
#
# Receivers on loopback play the other entities.  When a network
# namespace can be made (Tent::Netns) the suite runs in one, so that a
# receiver can listen on port 80 for the default-port spellings; without
# one those are skipped.

BEGIN {
    require Tent::Netns;
    my $w = Tent::Netns::netns_wrapper();
    if (!$ENV{TENT_IN_NETNS} && -x $w
        && system("'$w' true >/dev/null 2>&1") == 0)
    {
        Tent::Netns::reexec_in_netns();
    }
}

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx);
use Tent::Client;
use Tent::Receiver;
use IO::Socket::IP;
use JSON::PP;
use Time::HiRes qw(sleep time);
*uri_escape = \&Tent::Client::uri_escape;

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $PORT = $ENV{TEST_NGINX_SERVER_PORT} || 1984;
my $A_URL = "http://127.0.0.1:$PORT";
my $c = Tent::Client->new;
my $T = 'https://tent.io/types/post/';
my $STATUS = "${T}status/v0.1.0";
my $ESSAY = "${T}essay/v0.1.0";
my $FOLLOWER_T = "${T}follower/v0.1.0";
my $FOLLOWING_T = "${T}following/v0.1.0";
my $TENT_CT = 'application/vnd.tent.v0+json';

my ($app, $owner) = $c->authorized_app(
    'read_followers,write_followers,read_followings,write_followings,'
    . 'read_posts,write_posts,read_secrets', post_types => 'all');

sub free_port {
    my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                Listen => 1, ReuseAddr => 1)
        or die "no free port: $@";
    my $p = $s->sockport;
    close $s;
    return $p;
}

sub follow {
    my ($entity, @types) = @_;
    return $c->request(POST => '/followers',
                       body => { entity => $entity,
                                 types => @types ? [@types] : ['all'],
                                 notification_path => 'notifications/n' });
}

sub cred_of {
    my ($json) = @_;
    return { map { $_ => $json->{$_} } qw(mac_key_id mac_key mac_algorithm) };
}

sub post { $c->post_ok($owner, {@_}) }

# the requests of one post that reached a receiver, at a path
sub got { $_[0]->posts_of($_[1], path => $_[2]) }
sub wait_got { $_[0]->wait_posts_of($_[1], path => $_[2]) }

sub listed_ids {
    my ($q, @cr) = @_;
    my $res = $c->request(GET => "/posts?$q", @cr);
    return map { $_->{id} } @{ $res->{json} || [] };
}

# --- POST /followers: every spelling is one follower ---------------------

# "localhost" has letters for the case spellings; it resolves to
# 127.0.0.1, which the receiver listens on
my $P = free_port();
my $E = "http://localhost:$P";
my $rx = Tent::Receiver->start(port => $P, entity => $E);

my $res = follow($E, $ESSAY);
is($res->{status}, 200, 'an entity follows') or diag $res->{body};
my $fid = $res->{json}{id};
my $key_id = $res->{json}{mac_key_id};
my $cred = cred_of($res->{json});

my @spellings = ("http://LOCALHOST:$P/", "HTTP://LocalHost:$P",
                 "http://localhost:$P/", "http://localhost:0$P",
                 "http://localhost:000$P/", "http://%6cocalhost:$P",
                 "http://%6Cocalhost:$P//", "http://localhost:$P/.",
                 "http://localhost:$P/a/..", "http://localhost:$P/%2e/");
for my $s (@spellings) {
    $res = follow($s, $ESSAY);
    is($res->{status}, 200, "POST /followers as $s: 200")
        or diag $res->{body};
    is($res->{json}{id}, $fid, "$s: the same follower");
    is($res->{json}{mac_key_id}, $key_id, "$s: the same credential id");
    is($res->{json}{entity}, $E, "$s: kept as $E");
    $cred = cred_of($res->{json}) if $res->{status} == 200;
}

$res = $c->request(GET => '/followers/count');
is($res->{body}, '1', 'one follower whatever the spelling');
$res = $c->request(GET => '/followers', cred => $owner);
is(scalar @{ $res->{json} || [] }, 1, 'one listed to the app');
is($res->{json}[0]{entity}, $E, 'in its canonical spelling');
my @challenges = $rx->requests(method => 'GET', path => qr{/notifications/n$});
is(scalar @challenges, 1 + @spellings,
   'each follow was challenged (no shortcut taken)');

# one credential: only the newest key of the one key id works
$res = $c->request(GET => "/followers/$fid", cred => $cred);
is($res->{status}, 200, 'the newest key authenticates');
is_deeply($res->{json}{types}, [$ESSAY], 'as the follower itself');
$res = $c->request(GET => "/followers/$fid",
                   cred => { %$cred, mac_key => 'f' x 32 });
isnt($res->{status}, 200, 'another key of that id does not');

# lookups by url-encoded entity, in every spelling
for my $s ($E, @spellings) {
    $res = $c->request(GET => '/followers/' . uri_escape($s));
    is($res->{status}, 200, "GET /followers/<$s>: found");
    like($res->{headers}{'content-location'} // '', qr{/followers/$fid$},
         "$s: Content-Location by id");
    $res = $c->request(GET => '/followers?entity=' . uri_escape($s));
    is(scalar @{ $res->{json} || [] }, 1, "GET /followers?entity=$s: one");
}
(my $upper = uri_escape($E)) =~ s/^http/HTTP/;
$res = $c->request(GET => "/followers/$upper");
is($res->{status}, 200, 'an escaped entity with its scheme in capitals');
$res = $c->request(GET => '/followers/' . uri_escape("http://localhost:1$P"));
is($res->{status}, 404, 'another port is another entity');

# what is not an entity URL is refused before any request is made
$rx->clear;
for my $bad ("http://localhost:0", "http://localhost:00",
             "http://localhost:65536", "http://localhost:${P}x",
             "http://user\@localhost:$P", "http://localhost:$P/?q",
             "http://localhost:$P/%zz", "http://localhost:$P/%4",
             "http://%2Flocalhost:$P", "http://[::1", "ftp://localhost:$P",
             "http://:$P")
{
    $res = follow($bad);
    is($res->{status}, 422, "POST /followers as $bad: 422");
    is($res->{json}{error}, 'Invalid entity', "$bad: a clear error");
}
is($rx->connections, 0, 'none of them reached the receiver');

for my $self ("HTTP://127.0.0.1:$PORT/", "http://127.0.0.1:0$PORT",
              "http://127.0.0.1:$PORT/x/..")
{
    $res = follow($self);
    is($res->{status}, 406, "following ourselves as $self: 406");
}

# an entity with a path: its escapes and dot segments
my $P2 = free_port();
my $E2 = "http://localhost:$P2/~alice";
my $rx2 = Tent::Receiver->start(port => $P2, entity => $E2, rules => [
    { path => '^/~alice$',
      action => { status => 200, headers => {
          Link => "<http://127.0.0.1:$P2/tent/profile>; "
                  . 'rel="https://tent.io/rels/profile"' } } }]);
$res = follow($E2);
is($res->{status}, 200, 'an entity with a path follows') or diag $res->{body};
my $fid2 = $res->{json}{id};
for my $s ("http://localhost:$P2/%7Ealice", "http://localhost:$P2/%7ealice/",
           "http://localhost:$P2/./~alice", "http://localhost:$P2/x/../~alice",
           "http://LOCALHOST:$P2/%7E%61lice")
{
    $res = follow($s);
    is($res->{json}{id}, $fid2, "$s: the same follower");
    is($c->request(GET => '/followers/' . uri_escape($s))->{status}, 200,
       "GET /followers/<$s>: found");
}
is($c->request(GET => '/followers/count')->{body}, '2', 'two followers now');
is($c->request(GET => '/followers/'
               . uri_escape("http://localhost:$P2/%7EALICE"))->{status},
   404, 'a path in other case is another entity');

# the default port: a receiver on port 80 (in the network namespace)
SKIP: {
    skip 'no network namespace: port 80 is not ours', 8
        unless $ENV{TENT_IN_NETNS};
    my $rx80 = Tent::Receiver->start(port => 80,
                                     entity => 'http://127.0.0.1');
    $res = follow('http://127.0.0.1:80/');
    is($res->{status}, 200, 'http://127.0.0.1:80/ follows')
        or diag $res->{body};
    is($res->{json}{entity}, 'http://127.0.0.1', 'as http://127.0.0.1');
    my $id80 = $res->{json}{id};
    for my $s ('http://127.0.0.1', 'HTTP://127.0.0.1:080', 'http://127.0.0.1:') {
        $res = follow($s);
        is($res->{json}{id}, $id80, "$s: the same follower");
    }
    is($c->request(GET => '/followers/'
                   . uri_escape('http://127.0.0.1:00080'))->{status},
       200, 'found as http://127.0.0.1:00080');
    is($c->request(GET => '/followers/count')->{body}, '3',
       'three followers now');
    is($c->request(DELETE => "/followers/$id80", cred => $owner)->{status},
       200, 'removed again');
}

# --- followings: one per entity --------------------------------------

my $Pg = free_port();
my $G = "http://localhost:$Pg";
my $rxg = Tent::Receiver->start(port => $Pg, entity => $G);

$res = $c->request(POST => '/followings', cred => $owner,
                   body => { entity => "HTTP://LOCALHOST:$Pg/" });
is($res->{status}, 200, 'we follow HTTP://LOCALHOST:P/') or diag $res->{body};
is($res->{json}{entity}, $G, "kept as $G");
my $gid = $res->{json}{id};

for my $s ($G, "http://localhost:0$Pg/", "http://%6Cocalhost:$Pg",
           # not a spelling of it, but its profile names it
           "http://127.0.0.1:$Pg")
{
    $res = $c->request(POST => '/followings', cred => $owner,
                       body => { entity => $s });
    is($res->{status}, 409, "following $s again: 409 Already following")
        or diag $res->{body};
}
is(scalar($rxg->followers), 1, 'the entity got one follow request');
is($c->request(GET => '/followings/count')->{body}, '1', 'one following');

for my $s ("http://LocalHost:$Pg/", "http://localhost:0$Pg") {
    $res = $c->request(GET => '/followings/' . uri_escape($s));
    is($res->{status}, 200, "GET /followings/<$s>: found");
    like($res->{headers}{'content-location'} // '', qr{/followings/$gid$},
         "$s: Content-Location by id");
    $res = $c->request(GET => '/followings?entity=' . uri_escape($s));
    is(scalar @{ $res->{json} || [] }, 1, "GET /followings?entity=$s: one");
}

# following posts stay public (the owner's own act, as tentd)
$res = $c->request(GET => '/posts?post_types=' . uri_escape($FOLLOWING_T));
is(scalar(grep { $_->{content}{entity} eq $G } @{ $res->{json} || [] }), 1,
   'the following post is public');

# --- notifications from it, its entity in another spelling -------------

my ($gf) = $rxg->followers;
my $gcred = cred_of($gf);
my $NOTE = "/notifications/$gid";

sub g_post {
    my ($id, $entity) = @_;
    return { id => $id, entity => $entity, type => $STATUS,
             content => { text => "$id from G" },
             permissions => { public => JSON::PP::true },
             published_at => int(time), version => 1 };
}

$res = $c->request(POST => $NOTE, cred => $gcred,
                   body => g_post('g1', "http://LOCALHOST:$Pg/"));
is($res->{status}, 200, 'a notification whose post spells the entity '
                        . 'otherwise: 200') or diag $res->{body};
$res = $c->request(POST => $NOTE, cred => $gcred,
                   body => g_post('g1', "http://localhost:0$Pg"));
is($res->{status}, 200, 'the same post in a third spelling: 200');
sleep 0.01;
$res = $c->request(POST => $NOTE, cred => $gcred,
                   body => g_post('g2', $G));
is($res->{status}, 200, 'a second post');
$res = $c->request(POST => $NOTE, cred => $gcred,
                   body => g_post('g3', "http://localhost:$Pg/other"));
is($res->{status}, 403, 'a post of another entity (another path): 403');

for my $s ($G, "http://LocalHost:$Pg/", "HTTP://localhost:0$Pg") {
    $res = $c->request(GET => '/posts/' . uri_escape($s) . '/g1',
                       cred => $owner);
    is($res->{status}, 200, "GET /posts/<$s>/g1: found");
    is($res->{json}{entity}, $G, "$s: the copy is of $G");
    is_deeply([listed_ids('entity=' . uri_escape($s), cred => $owner)],
              ['g2', 'g1'], "?entity=$s: both posts, once each");
}

# the cursors' *_entity, in any spelling
for my $s ($G, "http://LOCALHOST:0$Pg/") {
    my $e = uri_escape($s);
    is_deeply([listed_ids("entity=$e&before_id=g2&before_id_entity=$e",
                          cred => $owner)],
              ['g1'], "before_id_entity=$s");
    is_deeply([listed_ids("entity=$e&since_id=g1&since_id_entity=$e",
                          cred => $owner)],
              ['g2'], "since_id_entity=$s");
}

# --- mentions in: a stranger names us in another spelling --------------

my $Pm = free_port();
my $M = "http://localhost:$Pm";
my $rxm = Tent::Receiver->start(port => $Pm, entity => $M);

my $ours = post(type => $STATUS, content => { text => 'mention me' },
                permissions => { public => JSON::PP::true });

sub m_post {
    my ($entity, $id) = @_;
    return { id => $id, entity => $entity, type => $STATUS,
             content => { text => 'hello @A' }, published_at => int(time),
             permissions => { public => JSON::PP::true }, version => 1,
             mentions => [{ entity => "http://127.0.0.1:0$PORT/",
                            post => $ours->{id} }] };
}

$rxm->rules([{ method => 'GET', path => '^/tent/posts/m1$',
               action => { status => 200,
                           headers => { 'Content-Type' => $TENT_CT },
                           body => m_post($M, 'm1') } }]);
$res = $c->request(POST => '/posts', body => m_post("HTTP://LOCALHOST:$Pm/",
                                                    'm1'));
is($res->{status}, 200, 'an unsigned mention naming us as '
                        . "http://127.0.0.1:0$PORT/: verified")
    or diag $res->{body};
$res = $c->request(POST => '/posts', body => m_post("http://localhost:0$Pm",
                                                    'm1'));
is($res->{status}, 200, 'pushed again in another spelling');
$res = $c->request(GET => '/posts/' . uri_escape("http://Localhost:$Pm/")
                          . '/m1', cred => $owner);
is($res->{status}, 200, 'the copy is found in any spelling');
is($res->{json}{entity}, $M, "of $M");
is_deeply([listed_ids('entity=' . uri_escape($M), cred => $owner)], ['m1'],
          'kept once');

$res = $c->request(GET => "/posts/$ours->{id}/mentions", cred => $owner);
is_deeply([map { "$_->{entity} $_->{post}" } @{ $res->{json} || [] }],
          ["$M m1"], 'our post lists the mention that spells us otherwise');
for my $s ($A_URL, "HTTP://127.0.0.1:$PORT/") {
    is_deeply([listed_ids('mentioned_entity=' . uri_escape($s),
                          cred => $owner)],
              ['m1'], "?mentioned_entity=$s finds it");
}

# --- mentions out and permissions: the follower named otherwise ----------

$rx->clear;
my $m = post(type => $STATUS, content => { text => 'hi @E' },
             permissions => { public => JSON::PP::true },
             mentions => [{ entity => "http://LOCALHOST:$P/" }]);
my @n = wait_got($rx, $m->{id}, qr{/notifications/n$});
is(scalar @n, 1, 'a status mentioning the follower (subscribed to essays '
                 . 'only) in another spelling reaches it');
like($n[0]{headers}{authorization} // '', qr/^MAC id="\Q$key_id\E"/,
     "signed with the follower's credential");
is(scalar(got($rx, $m->{id}, qr{^/tent/posts$})), 0,
   'not sent as to a stranger');
is_deeply([listed_ids('mentioned_entity=' . uri_escape($E), cred => $owner)],
          [$m->{id}], "?mentioned_entity=$E finds the post naming "
                      . "http://LOCALHOST:P/");

my $named = post(type => $ESSAY, content => { body => 'for E' },
                 permissions => { entities => {
                     "http://LocalHost:0$P/" => JSON::PP::true } });
is(scalar wait_got($rx, $named->{id}, qr{/notifications/n$}), 1,
   'a private essay naming the follower in another spelling reaches it');
is($c->request(GET => "/posts/$named->{id}", cred => $cred)->{status}, 200,
   'and the follower reads it');
ok(scalar(grep { $_ eq $named->{id} }
          listed_ids("post_types=" . uri_escape($ESSAY), cred => $cred)),
   'in its feed too');
is($c->request(GET => "/posts/$named->{id}")->{status}, 404,
   'not an anonymous reader');

# --- a stranger's follow is sent to no follower ------------------------

my @watch = map { Tent::Receiver->start } 1 .. 2;
for my $w (@watch) {
    $res = follow($w->url);
    is($res->{status}, 200, 'a follower subscribed to all');
}

sub follower_posts {
    my (@cr) = @_;
    my $r = $c->request(GET => '/posts?limit=200&post_types='
                               . uri_escape($FOLLOWER_T), @cr);
    return @{ $r->{json} || [] };
}

my $before = $c->request(GET => '/posts/count')->{body};

my $N = 10;
my @strangers = map { Tent::Receiver->start } 1 .. $N;
my $storm_ok = 0;
for my $s (@strangers) {
    my $r = follow($s->url);
    next unless $r->{status} == 200;
    my $d = $c->request(DELETE => "/followers/$r->{json}{id}",
                        cred => cred_of($r->{json}));
    $storm_ok++ if $d->{status} == 200;
}
is($storm_ok, $N, "$N strangers followed and unfollowed");

# a public post after the storm: once the followers have it, the storm's
# posts, made before it, would have been sent too
my $marker = post(type => $STATUS, content => { text => 'after the storm' },
                  permissions => { public => JSON::PP::true });
for my $w (@watch) {
    is(scalar wait_got($w, $marker->{id}, qr{/notifications/n$}), 1,
       'a follower gets the post made after the storm');
}
sleep 2;

my %stranger = map { $_->url => 1 } @strangers;
my $sent = 0;
for my $r (@watch, @strangers, $rx, $rx2) {
    $sent += grep { (eval { decode_json($_->{body})->{type} } // '')
                    eq $FOLLOWER_T }
             $r->requests(method => 'POST');
}
is($sent, 0, 'no follower post was sent to any follower');

my @mine = grep { $stranger{$_->{content}{entity}} }
           follower_posts(cred => $owner);
is(scalar(grep { $_->{content}{action} eq 'create' } @mine), $N,
   'our apps see a follower post for each follow');
is(scalar(grep { $_->{content}{action} eq 'delete' } @mine), $N,
   'and for each unfollow');
ok(!grep({ $_->{permissions}{public} } @mine), 'all private');
is(scalar(follower_posts()), 0, 'none in the public feed');
is($c->request(GET => '/posts/count')->{body}, $before + 1,
   'the public feed grew by the one post we made');

# a follow that is not confirmed makes no post at all
my $liar = Tent::Receiver->start(rules => [
    { method => 'GET', path => '/notifications/', action => {
        status => 200, body => 'not the challenge' } }]);
my $n_before = scalar(follower_posts(cred => $owner));
$res = follow($liar->url);
is($res->{status}, 403, 'a follower that fails the challenge: 403');
is(scalar(follower_posts(cred => $owner)), $n_before, 'and no post');

# --- removal by any spelling -------------------------------------------

$res = $c->request(DELETE => '/followings/' . uri_escape("http://LOCALHOST:0$Pg/"),
                   cred => $owner);
is($res->{status}, 200, 'unfollowing by another spelling');
is($c->request(GET => '/followings/count')->{body}, '0', 'no following left');
$res = $c->request(DELETE => '/followers/' . uri_escape("HTTP://LocalHost:$P/"),
                   cred => $owner);
is($res->{status}, 200, 'a follower removed by another spelling');
is($c->request(GET => "/followers/$fid", cred => $owner)->{status}, 404,
   'it is gone');

$_->stop for $rx, $rx2, $rxg, $rxm, $liar, @watch, @strangers;

__DATA__

=== TEST 1: the server
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
