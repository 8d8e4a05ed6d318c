# Moving an entity (spec 9.5, issue 14 part 3; docs/move.md).  The
# harness's nginx is entity A, a Tent::Peer entity B, another entity F
# that follows A; a scripted tentd-like follower R; scripted hostile
# entities H (F follows it) and Y.  A is exported and imported into B,
# then A moves to B (POST /move): R gets the profile post, F re-keys its
# following and A's posts to B by itself and keeps receiving B's posts.
# Refused, nothing changed: a move by anonymous, by an app without
# write_secrets, signed with a relationship's credential, bodies that are
# not a move, a move to an entity whose profile does not list A; on the
# receiving side, a forged successor claim (the new profile does not list
# the old entity), H claiming to be B (B lists A, not H), G (a follower of
# F) claiming the same, H announcing itself A's successor while staying
# H, a move signed with H's credential on A's following.  After the move:
# reads of A's posts redirected to B, F's follower A (A followed F) is B's
# and F's posts reach B at the following B imported, F's post mentioning A
# mentions B.  A successor not reachable now: 503, for the sender to retry.
# A follower Q moving to W whose servers are a victim V that answers no
# challenge: not re-keyed (F delivers to Q, never to V); B answers a
# challenge for its imported following only marked move=1 and signed with
# that relationship's key.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text dechunk
                  wait_for);
use Tent::Client;
use Tent::MAC qw(signed_headers random_nonce);
use Tent::Peer;
use Tent::Receiver;
use JSON::PP;
use POSIX ();
*uri_escape = \&Tent::Client::uri_escape;

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $PORT = $ENV{TEST_NGINX_SERVER_PORT} || 1984;
my $A = "http://127.0.0.1:$PORT";
my $T = 'https://tent.io/types/post/';
my $STATUS = "${T}status/v0.1.0";
my $PROFILE = "${T}profile/v0.1.0";
my $CORE = 'https://tent.io/types/info/core/v0.1.0';
my $READ = 'read_secrets,read_profile,read_followers,read_followings,'
           . 'read_groups,read_posts';
my $WRITE = 'write_secrets,write_profile,write_followers,write_followings,'
            . 'write_groups,write_posts,import_posts';
my $JSON = JSON::PP->new->utf8->canonical;
my $HTTP = 'tent_store $SERVROOT/tent_temp; tent_outbound_allow 127.0.0.0/8;'
           . ' tent_delivery_interval 200ms;';

my $a = Tent::Client->new;
my $bp = Tent::Peer->start(port => $PORT + 1, http_config => $HTTP);
my $fp = Tent::Peer->start(port => $PORT + 2, http_config => $HTTP);
my ($B, $F) = ($bp->url, $fp->url);
my ($b, $f) = ($bp->client, $fp->client);

my (undef, $aown) = $a->authorized_app("$READ,$WRITE",
    post_types => 'all', info_types => 'all');
my (undef, $aweak) = $a->authorized_app('write_profile,read_profile',
    post_types => 'all', info_types => 'all');
my (undef, $bown) = $bp->authorized_app("$READ,$WRITE",
    post_types => 'all', info_types => 'all');
my (undef, $fown) = $fp->authorized_app(
    'read_followings,write_followings,read_posts,read_secrets',
    post_types => 'all', info_types => 'all');

sub post_of {
    my ($cl, $cred, $text) = @_;
    my $r = $cl->request(POST => '/posts', cred => $cred,
                         body => { type => $STATUS,
                                   content => { text => $text },
                                   permissions => { public => JSON::PP::true } });
    die "post: $r->{status} $r->{body}" unless $r->{status} == 200;
    return $r->{json}{id};
}

sub f_has {
    my ($entity, $id) = @_;
    my $r = $f->request(GET => '/posts/' . uri_escape($entity) . "/$id",
                        cred => $fown);
    return $r->{status} == 200;
}

sub f_following {
    my ($entity) = @_;
    my $r = $f->request(GET => '/followings?entity=' . uri_escape($entity),
                        cred => $fown);
    return @{ $r->{json} || [] };
}

sub a_core {
    my $r = $a->request(GET => '/profile');
    return $r->{json}{$CORE} || {};
}

# --- F and R follow A; A posts ------------------------------------------

my $res = $f->request(POST => '/followings', cred => $fown,
                      body => { entity => $A });
is($res->{status}, 200, 'F follows A') or diag $res->{body};
my $fl = $res->{json};

my $rx = Tent::Receiver->start(port => $PORT + 3);
$res = $a->request(POST => '/followers',
                   body => { entity => $rx->url, types => ['all'],
                             licenses => [],
                             notification_path => 'notifications/r' });
is($res->{status}, 200, 'R (tentd-like) follows A') or diag $res->{body};

# A follows F too: B keeps that following with the exported credential
$res = $a->request(POST => '/followings', cred => $aown,
                   body => { entity => $F });
is($res->{status}, 200, 'A follows F') or diag $res->{body};

my $p1 = post_of($a, $aown, 'before the move');

# F's own post mentioning A
my (undef, $fpost) = $fp->authorized_app('write_posts,read_posts',
    post_types => 'all', info_types => 'all');
$res = $f->request(POST => '/posts', cred => $fpost,
                   body => { type => $STATUS,
                             content => { text => 'hello A' },
                             mentions => [{ entity => $A }],
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, "F's post mentioning A") or diag $res->{body};
my $pm = $res->{json}{id};
ok(wait_for(sub { f_has($A, $p1) }), "F receives A's post");

# --- the export of A into B ----------------------------------------------

sub export_of { Tent::Util::export_document(port => $_[0], cred => $_[1]) }

my $doc = export_of($PORT, $aown);
ok($doc && $doc->{complete}, "A's export") or diag $JSON->encode($doc || {});
$res = $b->request(POST => '/import', cred => $bown, body => $doc);
is($res->{status}, 200, 'imported into B') or diag $res->{body};
$res = $b->request(GET => '/profile');
is_deeply($res->{json}{$CORE}{previous_entities}, [$A],
          "B's core lists A in previous_entities");

# --- who may move A ------------------------------------------------------

$res = $a->request(POST => '/move', body => { entity => $B });
is($res->{status}, 403, 'anonymous: 403');
$res = $a->request(POST => '/move', cred => $aweak, body => { entity => $B });
is($res->{status}, 403, 'an app without write_secrets: 403');

$res = $f->request(GET => "/followings/$fl->{id}?secrets=true",
                   cred => $fown);
my $fcred = { map { $_ => $res->{json}{$_} }
              qw(mac_key_id mac_key mac_algorithm) };
ok($fcred->{mac_key_id}, "F's credential of its relationship with A");
$res = $a->request(POST => '/move', cred => $fcred, body => { entity => $B });
is($res->{status}, 403, "signed with a follower's credential: 403");

for my $case ([undef, 400, 'no body'], ['{', 400, 'malformed JSON'],
              ['[]', 400, 'an array'], [{ entity => 5 }, 400, 'a number'],
              [{ entity => 'ftp://x' }, 422, 'not an entity URL'],
              [{ entity => $A }, 422, 'itself'],
              [{ entity => $F }, 422, 'an entity that does not list A'])
{
    my ($body, $status, $what) = @$case;
    $res = $a->request(POST => '/move', cred => $aown,
                       defined $body ? (body => $body) : ());
    is($res->{status}, $status, "a move with $what: $status")
        or diag $res->{body};
}

$res = $a->request(POST => '/move', cred => $aown,
                   body => 'x' x (2 * 1024 * 1024));
ok($res->{status} == 413 || $res->{status} == 400, 'an oversized body')
    or diag $res->{status};

is(a_core()->{entity}, $A, 'after all that: A is still A');

# --- hostile announcements, at F ----------------------------------------

my $Y = Tent::Receiver->start(port => $PORT + 5);
my $H = Tent::Receiver->start(port => $PORT + 4);
my $HU = $H->url;

$res = $f->request(POST => '/followings', cred => $fown,
                   body => { entity => $HU });
is($res->{status}, 200, 'F follows H') or diag $res->{body};
my $hid = $res->{json}{id};
my ($hf) = $H->followers;
my $hcred = { map { $_ => $hf->{$_} } qw(mac_key_id mac_key mac_algorithm) };

my $n = 0;
sub h_announces {
    my ($core, $path, $at) = @_;
    $H->rules([{ method => 'GET', path => '^/tent/profile$',
                 action => { status => 200,
                             headers => { 'Content-Type' =>
                                          'application/vnd.tent.v0+json' },
                             body => { $CORE => $core } } }]);
    $n++;
    return $f->request(POST => $path // "/notifications/$hid",
                       cred => $hcred,
                       body => { id => "hp$n", entity => $HU,
                                 type => $PROFILE, version => 1,
                                 published_at => $at // time,
                                 permissions => { public => JSON::PP::true },
                                 content => { types => [$CORE],
                                              action => 'update' } });
}

sub nothing_rekeyed {
    my ($what) = @_;
    is(scalar(f_following($HU)), 1, "$what: F's following of H is H's");
    is(scalar(f_following($A)), 1, "$what: F's following of A is A's");
    ok(f_has($A, $p1), "$what: A's post is A's at F");
}

my $flog = length $fp->error_log_text;

$res = h_announces({ entity => $Y->url, servers => ["$HU/tent"],
                     licenses => [], previous_entities => [$HU] });
is($res->{status}, 200, 'H says it is Y now: acknowledged');
ok(wait_for(sub { $fp->error_log_text($flog) =~ /does not list it/ }, 10),
   'refused: Y does not list H');
is(scalar(f_following($Y->url)), 0, 'no following of Y');
nothing_rekeyed('a forged successor');

# the new entity not reachable now: 503, so that the sender tries again
$res = h_announces({ entity => 'http://127.0.0.1:' . ($PORT + 9),
                     servers => ["$HU/tent"], licenses => [],
                     previous_entities => [$HU] });
is($res->{status}, 503, 'H says it is N, N not reachable: 503, try again')
    or diag $res->{body};
nothing_rekeyed('an unreachable successor');

$res = h_announces({ entity => $B, servers => ["$HU/tent"], licenses => [],
                     previous_entities => [$HU, $A] });
is($res->{status}, 200, 'H says it is B, successor of H and A');
ok(wait_for(sub { (() = $fp->error_log_text($flog) =~ /does not list it/g)
                  >= 2 }, 10), 'refused: B lists A, not H');
is(scalar(f_following($B)), 0, 'no following of B');

$res = h_announces({ entity => $B, servers => ["$HU/tent"], licenses => [],
                     previous_entities => [$A] });
ok(wait_for(sub { $fp->error_log_text($flog) =~ /without listing itself/ },
            10), 'H says it is B, not listing itself: not a move');

$res = h_announces({ entity => $HU, servers => ["$HU/tent"], licenses => [],
                     previous_entities => [$A] });
is($res->{status}, 200, "H says it is A's successor, staying H");
nothing_rekeyed("H, A's successor");

# a follower of F, G, claims to be B (B lists A, not G)
my $G = Tent::Receiver->start(port => $PORT + 6);
$res = $f->request(POST => '/followers',
                   body => { entity => $G->url, types => ['all'],
                             licenses => [],
                             notification_path => 'notifications/g' });
is($res->{status}, 200, 'G follows F') or diag $res->{body};
my $gcred = { map { $_ => $res->{json}{$_} }
              qw(mac_key_id mac_key mac_algorithm) };
$G->rules([{ method => 'GET', path => '^/tent/profile$',
             action => { status => 200,
                         headers => { 'Content-Type' =>
                                      'application/vnd.tent.v0+json' },
                         body => { $CORE => {
                             entity => $B, servers => [$G->url . '/tent'],
                             licenses => [],
                             previous_entities => [$G->url, $A] } } } }]);
$res = $f->request(POST => '/posts', cred => $gcred,
                   body => { id => 'gp1', entity => $G->url,
                             type => $PROFILE, version => 1,
                             published_at => time,
                             permissions => { public => JSON::PP::true },
                             content => { types => [$CORE],
                                          action => 'update' } });
is($res->{status}, 200, "G's profile post, signed as F's follower")
    or diag $res->{body};
ok(wait_for(sub { (() = $fp->error_log_text($flog) =~ /does not list it/g)
                  >= 3 }, 10), 'refused: B does not list G');
$res = $f->request(GET => '/followers?entity=' . uri_escape($G->url));
is(scalar @{ $res->{json} || [] }, 1, "F's follower G is still G");
$res = $f->request(GET => '/followers?entity=' . uri_escape($A));
is(scalar @{ $res->{json} || [] }, 1, "F's follower A is still A");
$res = $f->request(GET => '/followers?entity=' . uri_escape($B));
is(scalar @{ $res->{json} || [] }, 0, 'no follower B');

$res = h_announces({ entity => $B, servers => ["$HU/tent"], licenses => [],
                     previous_entities => [$A] },
                   "/notifications/$fl->{id}");
is($res->{status}, 403, "H's credential on A's following: 403");
nothing_rekeyed('every hostile announcement');

# a follower Q of F says it is W, W lists Q (both the attacker's), but W's
# servers are a victim V that never agreed to be followed: F must not
# aim its posts at V on Q's word (a follow needs the challenge answered
# at the servers; a move must not skip it: docs/move.md)
my $Q = Tent::Receiver->start(port => $PORT + 7);
my $W = Tent::Receiver->start(port => $PORT + 8);
my $V = Tent::Receiver->start(port => $PORT + 10);
$V->rules([{ method => 'GET', path => '/notifications/',
             action => { status => 404, body => "who are you\n" } }]);
$res = $f->request(POST => '/followers',
                   body => { entity => $Q->url, types => ['all'],
                             licenses => [],
                             notification_path => 'notifications/q' });
is($res->{status}, 200, 'Q follows F') or diag $res->{body};
my $qcred = { map { $_ => $res->{json}{$_} }
              qw(mac_key_id mac_key mac_algorithm) };
my $wcore = { entity => $W->url, servers => [$V->url . '/tent'],
              licenses => [], previous_entities => [$Q->url] };
for my $rx2 ($Q, $W) {
    $rx2->rules([{ method => 'GET', path => '^/tent/profile$',
                   action => { status => 200,
                               headers => { 'Content-Type' =>
                                            'application/vnd.tent.v0+json' },
                               body => { $CORE => $wcore } } }]);
}
$res = $f->request(POST => '/posts', cred => $qcred,
                   body => { id => 'qp1', entity => $Q->url,
                             type => $PROFILE, version => 1,
                             published_at => time,
                             permissions => { public => JSON::PP::true },
                             content => { types => [$CORE],
                                          action => 'update' } });
is($res->{status}, 200, "Q's profile post: acknowledged") or diag $res->{body};
my $qu = $Q->url;
ok(wait_for(sub { $fp->error_log_text($flog)
                  =~ /tent move: "\Q$qu\E" (?:is "|.*challenge)/ }, 10),
   'the move of Q to W considered');
$res = $f->request(GET => '/followers?entity=' . uri_escape($W->url));
is(scalar @{ $res->{json} || [] }, 0,
   "F's follower Q is not W's: W's servers did not answer the challenge");
post_of($f, $fpost, 'to my followers, Q among them');
ok(wait_for(sub { scalar $Q->requests(method => 'POST') }, 20),
   "Q, still Q, gets F's post") or diag $fp->error_log_text($flog);
is(scalar($V->requests(method => 'POST')), 0, 'the victim V gets nothing');
$Q->rules([]);
$H->rules([]);

# H (followed by F) says it is Z, Z lists H (both the attacker's), but Z's
# servers are a victim V2: F follows Z again there, signed, before its
# following is re-keyed (a following's servers get our profile posts);
# V2 does not take it: F's following stays H's.  Announcements cost a
# scan of every post F keeps: one re-keying of an entity at a time (a
# copy meanwhile: 503), none older than the last handled, 3 a day.
my $Z = Tent::Receiver->start(port => $PORT + 11);
my $V2 = Tent::Receiver->start(port => $PORT + 12);
$V2->rules([{ path => '.', action => { status => 404, body => "no\n" } }]);
my $zcore = { entity => $Z->url, servers => [$V2->url . '/tent'],
              licenses => [], previous_entities => [$HU] };
$Z->rules([{ method => 'GET', path => '^/tent/profile$',
             action => { status => 200, delay => 2,
                         headers => { 'Content-Type' =>
                                      'application/vnd.tent.v0+json' },
                         body => { $CORE => $zcore } } }]);
my $zu = $Z->url;
my $zdone = sub { () = $fp->error_log_text($flog) =~ /"\Q$HU\E" is "\Q$zu\E" now/g };
my $pid = fork // die "fork: $!";
if (!$pid) {
    my $r = h_announces($zcore, undef, 1001);
    POSIX::_exit($r->{status} == 200 ? 0 : 1);
}
$n++;       # the child's post id: not the next one's
ok($Z->wait_requests(method => 'GET', path => '^/tent/profile$',
                     timeout => 10),
   'H says it is Z: F discovers Z');
$res = h_announces($zcore, undef, 1002);
is($res->{status}, 503, 'a copy while the first is re-keyed: 503')
    or diag $res->{body};
like($res->{body} // '', qr/under way/, 'a re-keying under way');
waitpid $pid, 0;
is($?, 0, 'the first announcement: 200');
ok(wait_for(sub { $zdone->() == 1 }, 10), 'the first one handled')
    or diag $fp->error_log_text($flog);
like($fp->error_log_text($flog),
     qr/did not answer the following's challenge: the following not re-keyed/,
     "Z's servers (V2) did not take F's follow");
is(scalar(f_following($Z->url)), 0, 'no following of Z');
is(scalar(f_following($HU)), 1, "F's following of H is H's");
ok(scalar($V2->requests(method => 'POST', path => 'followers')),
   'the follow went to V2, signed')
    or diag join "\n", map { "$_->{method} $_->{path}" } $V2->requests;
$Z->rules([{ method => 'GET', path => '^/tent/profile$',
             action => { status => 200,
                         headers => { 'Content-Type' =>
                                      'application/vnd.tent.v0+json' },
                         body => { $CORE => $zcore } } }]);
$res = h_announces($zcore, undef, 1001);
is($res->{status}, 200, 'the same announcement again: acknowledged');
ok(wait_for(sub { $fp->error_log_text($flog) =~ /not newer than the move/ },
            10), 'refused: not newer than the one handled');
for my $at (1003, 1004) {
    $res = h_announces($zcore, undef, $at);
    is($res->{status}, 200, "announcement of $at") or diag $res->{body};
}
is($zdone->(), 3, 'three re-keyings');
$res = h_announces($zcore, undef, 1005);
ok(wait_for(sub { $fp->error_log_text($flog) =~ /moves in a chain/ }, 10),
   'a fourth within a day: refused');
is($zdone->(), 3, 'still three');
$Z->rules([]);
$H->rules([]);

# --- A moves to B --------------------------------------------------------

$res = $a->request(POST => '/move', cred => $aown, body => { entity => $B });
is($res->{status}, 200, 'A moves to B') or diag $res->{body};
is($res->{json}{entity}, $B, 'its core names B');
is_deeply($res->{json}{previous_entities}, [$A], 'and A as previous');

my $core = a_core();
is($core->{entity}, $B, "A's profile: entity B");
is_deeply($core->{previous_entities}, [$A], 'previous_entities: A');
like($core->{servers}[0] // '', qr/^\Q$B\E/, "B's servers");

# A's posts: redirected to B (tent_moved_redirect_time), but for A's apps
$res = $a->request(GET => "/posts/$p1");
is($res->{status}, 301, "an anonymous read of A's post: 301");
is($res->{headers}{location}, "$B/tent/posts/$p1", 'to the same post at B');
$res = $b->request(GET => "/posts/$p1");
is($res->{status}, 200, 'which B has') or diag $res->{body};
is($res->{json}{entity}, $B, "as B's");
$res = $a->request(GET => '/posts?limit=5');
is($res->{status}, 301, "A's feed: 301");
is($res->{headers}{location}, "$B/tent/posts?limit=5", "to B's, same query");
$res = $a->request(GET => "/posts/$p1", cred => $fcred);
is($res->{status}, 301, "a follower's signed read: 301 too");
$res = $a->request(GET => "/posts/$p1", cred => $aown);
is($res->{status}, 200, "A's own app: answered") or diag $res->{body};
$res = $a->request(DELETE => "/posts/$p1");
isnt($res->{status}, 301, 'a DELETE is not redirected');

my @prof;
wait_for(sub {
    @prof = grep { (eval { decode_json($_->{body})->{type} } // '')
                   eq $PROFILE } $rx->requests(method => 'POST');
    return scalar @prof;
}, 15);
ok(@prof, 'R (tentd-like) gets the profile post')
    or diag join "\n", map { "$_->{method} $_->{path} $_->{body}" }
                  $rx->requests;
my $pp = @prof ? decode_json($prof[-1]{body}) : {};
is($pp->{entity}, $A, 'with the old entity (spec 9.5)');
is_deeply($pp->{content}{types}, [$CORE], 'of the core section');

ok(wait_for(sub { scalar f_following($B) }, 20),
   "F's following is B's now") or diag $fp->error_log_text($flog);
is(scalar(f_following($A)), 0, 'and no longer A\'s');
my ($fb) = f_following($B);
is($fb->{id}, $fl->{id}, 'the same following');
ok(f_has($B, $p1), "A's post is B's at F");
ok(!f_has($A, $p1), 'not A\'s any more');

$res = $f->request(GET => '/posts?entity=' . uri_escape($B), cred => $fown);
ok((grep { $_->{id} eq $p1 } @{ $res->{json} || [] }),
   "the feed's index: B's posts list it");
$res = $f->request(GET => '/posts?entity=' . uri_escape($A), cred => $fown);
is(scalar @{ $res->{json} || [] }, 0, "A's posts: none");

# mentions of A in the posts F keeps name B now
$res = $f->request(GET => '/posts?mentioned_entity=' . uri_escape($B),
                   cred => $fown);
my ($mp) = grep { $_->{id} eq $pm } @{ $res->{json} || [] };
ok($mp, "F's post mentioning A is found as mentioning B")
    or diag $res->{body};
is($mp && $mp->{mentions}[0]{entity}, $B, 'its mention names B');
$res = $f->request(GET => '/posts?mentioned_entity=' . uri_escape($A),
                   cred => $fown);
is(scalar @{ $res->{json} || [] }, 0, 'no post mentions A any more');

# F keeps receiving B's posts, without doing anything.  B imported F as a
# follower "import_pending" (docs/import.md: an imported follower gets
# nothing until its server follows again, so that a document cannot aim
# B's posts at a victim host); F's server, re-keying its following to B,
# followed B again, signed with the relationship's key, and answered B's
# move=1 challenge: B's follower F is confirmed, with the same id and key.
$res = $b->request(GET => '/followers?entity=' . uri_escape($F),
                   cred => $bown);
my ($bf) = @{ $res->{json} || [] };
ok($bf && !$bf->{import_pending}, "B's imported follower F: confirmed")
    or diag $res->{body};
is($bf && $bf->{id}, $fb->{remote_id}, 'the same follower id');
my $p2 = post_of($b, $bown, 'after the move');
ok(wait_for(sub { f_has($B, $p2) }, 20), "F receives B's post")
    or diag $bp->error_log_text;

# F's follower A is B now: F's posts reach B, at the following B imported
$res = $f->request(GET => '/followers?entity=' . uri_escape($B));
is(scalar @{ $res->{json} || [] }, 1, "F's follower A is B's now");
my $p4 = post_of($f, $fpost, 'to my follower, moved');
ok(wait_for(sub {
    $b->request(GET => '/posts/' . uri_escape($F) . "/$p4",
                cred => $bown)->{status} == 200 }, 20),
   "B receives F's post, as A's following did")
    or diag $fp->error_log_text;


# B answers a challenge for its imported (confirmed) following of F only
# when signed with that relationship's own key: F, re-keying its follower
# A to B, asked so; anyone else (unsigned, another relationship's key) not
$res = $a->request(GET => '/followings?entity=' . uri_escape($F), cred => $aown);
my ($af) = @{ $res->{json} || [] };
$res = $a->request(GET => "/followings/$af->{id}?secrets=true", cred => $aown);
my $afcred = { map { $_ => $res->{json}{$_} }
               qw(mac_key_id mac_key mac_algorithm) };
$res = $b->request(GET => "/notifications/$af->{id}?challenge=abc");
is($res->{status}, 404, "B's confirmed following: unsigned challenge, 404");
$res = $b->request(GET => "/notifications/$af->{id}?challenge=abc",
                   cred => $fcred);
is($res->{status}, 404, "signed with another relationship's key: 404");
$res = $b->request(GET => "/notifications/$af->{id}?challenge=abc",
                   cred => $afcred);
is($res->{status}, 404, "signed with its own key, not marked move=1: 404");
$res = $b->request(GET => "/notifications/$af->{id}?move=1&challenge=abc",
                   cred => $fcred);
is($res->{status}, 404, "move=1, signed with another relationship's key: 404");
$res = $b->request(GET => "/notifications/$af->{id}?move=1&challenge=abc");
is($res->{status}, 404, 'move=1, unsigned: 404');
$res = $b->request(GET => "/notifications/$af->{id}?move=1&challenge=abc",
                   cred => $afcred);
is($res->{status}, 200, "signed with the relationship's own key: answered");
is($res->{body}, 'abc', 'the challenge back');

# others asking B to follow "as F" (for a new key of F's relationship):
# unsigned, or signed with a key that is not F's follower credential, the
# challenge goes unmarked and unsigned, which F's confirmed following does
# not answer: refused, F's key kept (its next post still reaches F)
my $asf = { entity => $F, types => ['all'], licenses => [],
            notification_path => "notifications/$fl->{id}" };
$res = $b->request(POST => '/followers', body => $asf);
is($res->{status}, 403, 'an unsigned follow "as F" at B: 403')
    or diag $res->{body};
$res = $b->request(POST => '/followers', body => $asf, cred => $afcred);
is($res->{status}, 403, 'signed with a following\'s key: 403')
    or diag $res->{body};

my $p3 = post_of($b, $bown, 'and again');
ok(wait_for(sub { f_has($B, $p3) }, 20), 'and the next one');

unlike($fp->error_log_text, qr/\[(?:alert|crit|emerg)\]|exited on signal/,
       'F: no alert, crash');
unlike($bp->error_log_text, qr/\[(?:alert|crit|emerg)\]|exited on signal/,
       'B: no alert, crash');
unlike(error_log_text(), qr/\[(?:alert|crit|emerg)\]|exited on signal/,
       'A: no alert, crash');

$bp->stop;
$fp->stop;

__DATA__

=== TEST 1: POST /move needs a signed owner app
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
POST /tent/move
{"entity":"http://127.0.0.1:1"}
--- more_headers
Content-Type: application/vnd.tent.v0+json
--- error_code: 403



=== TEST 2: the last block: A for the flows above
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_delivery_interval 200ms;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/followings
--- error_code: 200
--- response_body: []
