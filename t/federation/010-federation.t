# Federation between two real servers (spec 7.1-7.4, 9.1, 9.6): the
# harness's nginx is entity A, a second nginx (Tent::Peer) entity B, both
# with two workers, talking over loopback.  They follow each other
# through the app API, notifications are checked for signature, replay
# and sender, unfollow removes both sides, and A reloads in the middle.
# Follow requests refused before any fetch: t/federation/020-followers.t.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx reload_nginx
                  error_log_text);
use Tent::Client;
use Tent::MAC qw(signed_headers);
use Tent::Peer;
use Tent::Receiver;
use JSON::PP;
*uri_escape = \&Tent::Client::uri_escape;

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $A_URL = "http://127.0.0.1:" . ($ENV{TEST_NGINX_SERVER_PORT} || 1984);
my $a = Tent::Client->new;

my $b_peer = Tent::Peer->start(
    http_config => 'tent_store $SERVROOT/tent_temp;'
                   . ' tent_outbound_allow 127.0.0.0/8;');
my $B_URL = $b_peer->url;
my $b = $b_peer->client;

my ($a_app, $a_cred) = $a->authorized_app(
    'read_followers,write_followers,read_followings,write_followings,'
    . 'read_posts,write_posts,read_secrets,write_profile',
    post_types => 'all', info_types => 'all');
my ($b_app, $b_cred) = $b_peer->authorized_app(
    'read_followers,write_followers,read_followings,write_followings,'
    . 'read_posts,read_secrets,write_profile', post_types => 'all',
    info_types => 'all');
my (undef, $b_weak) = $b_peer->authorized_app('read_posts');

# --- B follows A ---------------------------------------------------------

my $res = $b->request(POST => '/followings', cred => $b_weak,
                      body => { entity => $A_URL });
is($res->{status}, 403, 'following needs write_followings');

$res = $b->request(POST => '/followings', cred => $b_cred,
                   body => { entity => "$A_URL/" });
is($res->{status}, 200, 'B follows A') or diag $res->{body};
my $b_following = $res->{json};
is($b_following->{entity}, $A_URL, 'the following is A, slash dropped');
ok($b_following->{remote_id}, 'with the id A gave its follower');
ok(!exists $b_following->{mac_key}, 'and no secrets in the answer');
is($b_following->{profile}{'https://tent.io/types/info/core/v0.1.0'}{entity},
   $A_URL, "and A's profile");

$res = $b->request(POST => '/followings', cred => $b_cred,
                   body => { entity => $A_URL });
is($res->{status}, 409, 'following A again: 409 Already following');

$res = $a->request(GET => '/followers');
is($res->{status}, 200, 'A lists its followers');
is(scalar @{ $res->{json} }, 1, 'one follower');
is($res->{json}[0]{entity}, $B_URL, 'B');
is($res->{json}[0]{id}, $b_following->{remote_id}, 'under the id B keeps');
ok(!exists $res->{json}[0]{mac_key}, 'anonymous: no secrets');
ok(!exists $res->{json}[0]{notification_path},
   'anonymous: no notification path');

my $fid = $b_following->{remote_id};

$res = $a->request(GET => '/followers/' . uri_escape($B_URL));
is($res->{status}, 200, 'A finds its follower by url-encoded entity');
like($res->{headers}{'content-location'} // '', qr{/tent/followers/$fid$},
     'with Content-Location by id') or diag join ",", %{ $res->{headers} };

$res = $a->request(GET => '/followers/count');
is($res->{body}, '1', 'A counts one follower');
$res = $a->request(HEAD => '/followers');
is($res->{headers}{count}, '1', 'HEAD /followers: Count: 1');

$res = $a->request(GET => "/followers/$fid?secrets=true", cred => $a_cred);
is($res->{status}, 200, 'A app reads the follower');
like($res->{json}{mac_key_id} // '', qr/^s:/, 'secrets with read_secrets');
is($res->{json}{notification_path}, "notifications/$b_following->{id}",
   'the notification path points at B\'s following');
my $s_cred = { mac_key_id => $res->{json}{mac_key_id},
               mac_key => $res->{json}{mac_key},
               mac_algorithm => $res->{json}{mac_algorithm} };

$res = $b->request(GET => "/followings/$b_following->{id}?secrets=true",
                   cred => $b_cred);
is($res->{json}{mac_key_id}, $s_cred->{mac_key_id},
   'both sides hold the same s: credential');

$res = $b->request(GET => '/followings');
is(scalar @{ $res->{json} }, 1, 'B lists A among its followings');

$res = $b->request(GET => '/followings?entity=' . uri_escape($A_URL));
is(scalar @{ $res->{json} }, 1, '?entity= finds it ("am I following?")');
$res = $b->request(GET => '/followings?entity=' . uri_escape($B_URL));
is(scalar @{ $res->{json} }, 0, 'and not another entity');

# the relationship posts (spec 7.1, 7.3): A's follower post, B's following
my $FOLLOWER_T = 'https://tent.io/types/post/follower/v0.1.0';
my $FOLLOWING_T = 'https://tent.io/types/post/following/v0.1.0';
$res = $a->request(GET => '/posts?post_types=' . uri_escape($FOLLOWER_T),
                   cred => $a_cred);
is(scalar(grep { $_->{content}{entity} eq $B_URL
                 && $_->{content}{action} eq 'create' } @{ $res->{json} }),
   1, 'A made a follower post for B');
ok(!$_->{permissions}{public},
   'a private one (no fan-out: 060-adversarial-entities.t)')
    for grep { $_->{content}{entity} eq $B_URL } @{ $res->{json} };
$res = $a->request(GET => '/posts?post_types=' . uri_escape($FOLLOWER_T));
is(scalar @{ $res->{json} }, 0, 'anonymous readers do not see it');
$res = $b->request(GET => '/posts?post_types=' . uri_escape($FOLLOWING_T));
is(scalar(grep { $_->{content}{entity} eq $A_URL
                 && $_->{content}{action} eq 'create' } @{ $res->{json} }),
   1, 'B made a following post for A');

# the follower itself, signed with s:, sees its own subscription
$res = $a->request(GET => "/followers/$fid", cred => $s_cred);
is_deeply($res->{json}{types}, ['all'], 'the follower sees its types');

# the follower changes its own subscription, signed with s:
$res = $a->request(PUT => "/followers/$fid", cred => $s_cred,
                   body => { types => ['https://tent.io/types/post/status/v0.1.0',
                                       'all'],
                             permissions => { public => JSON::PP::false } });
is($res->{status}, 200, 'the follower updates its types itself');
is(scalar @{ $res->{json}{types} }, 2, 'two types now');
$res = $a->request(GET => "/followers/$fid", cred => $a_cred);
ok($res->{json}{permissions}{public}, 'but it cannot make itself private');
$res = $a->request(PUT => "/followers/$fid", cred => $b_cred,
                   body => { types => ['all'] });
is($res->{status}, 401, 'another server\'s app key is unknown here');
$res = $a->request(PUT => "/followers/$fid", body => { types => ['all'] });
is($res->{status}, 403, 'anonymous: 403');
$res = $a->request(PUT => "/followers/$fid", cred => $s_cred,
                   body => { types => ['all'] });

# followings by url-encoded entity, and PUT by the app
$res = $b->request(GET => '/followings/' . uri_escape($A_URL));
is($res->{status}, 200, 'B finds its following by url-encoded entity');
like($res->{headers}{'content-location'} // '',
     qr{/tent/followings/$b_following->{id}$}, 'with Content-Location');
$res = $b->request(PUT => "/followings/$b_following->{id}", cred => $b_cred,
                   body => { permissions => { public => JSON::PP::false } });
is($res->{status}, 200, 'B makes its following private');
$res = $b->request(GET => '/followings/count');
is($res->{body}, '0', 'anonymous readers no longer see it');
$res = $b->request(GET => '/followings/count', cred => $b_cred);
is($res->{body}, '1', 'the app with read_followings does');
$res = $b->request(PUT => "/followings/$b_following->{id}", cred => $b_cred,
                   body => { permissions => { public => JSON::PP::true } });

# the signed proxy: B's app reads A's profile through B (spec 7.3)
$res = $b->request(GET => "/followings/$b_following->{id}/profile",
                   cred => $b_cred);
is($res->{status}, 200, 'GET /followings/:id/profile proxies to A');
like($res->{body}, qr/\Q$A_URL\E/, 'with A\'s profile');

# --- A follows B: mutual --------------------------------------------------

$res = $a->request(POST => '/followings', cred => $a_cred,
                   body => { entity => $B_URL });
is($res->{status}, 200, 'A follows B') or diag $res->{body};
my $a_following = $res->{json};

$res = $b->request(GET => '/followers');
is($res->{json}[0]{entity}, $A_URL, 'B has A as follower');

$res = $a->request(POST => '/followers',
                   body => { entity => $B_URL,
                             notification_path => 'notifications/'
                                                  . ('0' x 32) });
is($res->{status}, 403, 'a challenge to an unknown following: refused');

$res = $a->request(POST => '/followers',
                   body => { entity => $A_URL,
                             notification_path => 'x' });
is($res->{status}, 406, 'following oneself: 406');

# --- notifications into B, from A -----------------------------------------

my $NOTE = "/notifications/$b_following->{id}";
my $a_note_cred;
$res = $b->request(GET => "/followings/$b_following->{id}?secrets=true",
                   cred => $b_cred);
$a_note_cred = { map { $_ => $res->{json}{$_} }
                 qw(mac_key_id mac_key mac_algorithm) };

my $post = { id => 'n0tifiedP0st', entity => $A_URL,
             type => 'https://tent.io/types/post/status/v0.1.0',
             content => { text => 'hello followers' },
             permissions => { public => JSON::PP::true },
             published_at => time, version => 1 };

sub notify {
    my (%o) = @_;
    return $b->request(POST => $o{path} || $NOTE, body => $o{post} || $post,
                       cred => $o{cred}, nonce => $o{nonce}, ts => $o{ts});
}

$res = notify();
is($res->{status}, 401, 'an unsigned notification: 401');

$res = notify(cred => { %$a_note_cred, mac_key => 'f' x 32 });
is($res->{status}, 403, 'signed with a wrong key: 403');

$res = notify(cred => $a_note_cred, path => '/notifications/' . ('1' x 32));
is($res->{status}, 403, 'to another following\'s path: 403');

$res = notify(cred => $a_note_cred,
              post => { %$post, entity => 'https://mallory.example' });
is($res->{status}, 403, 'a post of another entity: 403');

$res = notify(cred => $b_cred);
is($res->{status}, 401, 'an app credential cannot notify') or diag "$res->{status} $res->{body}";

# the same key, ts and nonce: ts pinned, a slow run may cross a second
my $once_ts = time;
$res = notify(cred => $a_note_cred, nonce => 'once0nly', ts => $once_ts);
is($res->{status}, 200, 'a notification signed by A: 200')
    or diag "$res->{status} $res->{body}";

$res = notify(cred => $a_note_cred, nonce => 'once0nly', ts => $once_ts);
is($res->{status}, 401, 'the same request replayed: 401');
like($res->{body}, qr/nonce/, 'nonce already used');

$res = notify(cred => $a_note_cred);
is($res->{status}, 200, 'the same post again (new nonce): accepted');

$res = $b->request(GET => '/posts', cred => $b_cred);
my @got = grep { $_->{id} eq 'n0tifiedP0st' } @{ $res->{json} || [] };
is(scalar @got, 1, 'B\'s app sees the post once in its feed');
is($got[0]{entity}, $A_URL, 'as A\'s');

$res = $b->request(GET => '/posts');
@got = grep { $_->{id} eq 'n0tifiedP0st' } @{ $res->{json} || [] };
is(scalar @got, 0, 'anonymous readers of B do not see A\'s post');

$res = $b->request(GET => '/posts/' . uri_escape($A_URL) . '/n0tifiedP0st',
                   cred => $b_cred);
is($res->{status}, 200, 'GET /posts/:entity/:id finds it');
is($res->{json}{content}{text}, 'hello followers', 'as sent');

$res = notify(cred => $a_note_cred,
              post => { %$post, version => 2,
                        content => { text => 'edited' } });
is($res->{status}, 200, 'version 2 of the post');
$res = $b->request(GET => '/posts/' . uri_escape($A_URL) . '/n0tifiedP0st',
                   cred => $b_cred);
is($res->{json}{content}{text}, 'edited', 'replaces the copy');
$res = $b->request(GET => '/posts', cred => $b_cred);
@got = grep { $_->{id} eq 'n0tifiedP0st' } @{ $res->{json} || [] };
is(scalar @got, 1, 'still once in the feed');

$res = notify(cred => $a_note_cred, post => { %$post, version => 1,
                                              content => { text => 'old' } });
is($res->{status}, 200, 'an older version is accepted');
$res = $b->request(GET => '/posts/' . uri_escape($A_URL) . '/n0tifiedP0st',
                   cred => $b_cred);
is($res->{json}{content}{text}, 'edited', 'and ignored');

# a delete post from A removes B's copy of the post it names
$res = notify(cred => $a_note_cred,
              post => { id => 'de1etePost', entity => $A_URL,
                        type => 'https://tent.io/types/post/delete/v0.1.0',
                        content => { id => 'n0tifiedP0st' },
                        permissions => { public => JSON::PP::true },
                        published_at => time, version => 1 });
is($res->{status}, 200, 'a delete post from A') or diag $res->{body};
$res = $b->request(GET => '/posts/' . uri_escape($A_URL) . '/n0tifiedP0st',
                   cred => $b_cred);
is($res->{status}, 404, 'B\'s copy of the deleted post is gone');
$res = $b->request(GET => '/posts', cred => $b_cred);
ok(!grep({ $_->{id} eq 'n0tifiedP0st' } @{ $res->{json} || [] }),
   'and out of its feed');

# --- a reload of A in the middle -------------------------------------------

reload_nginx();
sleep 1;

$res = $a->request(GET => '/followers/count');
is($res->{body}, '1', 'after a reload A still has its follower');
$res = $a->request(GET => '/followings', cred => $a_cred);
is(scalar @{ $res->{json} }, 1, 'and its following');

# --- unfollow --------------------------------------------------------------

$res = $b->request(DELETE => "/followings/$b_following->{id}",
                   cred => $b_weak);
is($res->{status}, 403, 'unfollow needs write_followings');

$res = $b->request(DELETE => "/followings/$b_following->{id}",
                   cred => $b_cred);
is($res->{status}, 200, 'B unfollows A');

$res = $b->request(GET => '/followings');
is(scalar @{ $res->{json} }, 0, 'B follows no one');
$res = $a->request(GET => '/followers/count');
is($res->{body}, '0', 'A was told: no follower left');
$res = $a->request(GET => "/followers/$fid", cred => $a_cred);
is($res->{status}, 404, 'the follower record is gone');

$res = notify(cred => $a_note_cred);
is($res->{status}, 401, 'the old credential notifies no more');
$res = $a->request(GET => '/posts?post_types=' . uri_escape($FOLLOWER_T),
                   cred => $a_cred);
is(scalar(grep { $_->{content}{entity} eq $B_URL
                 && $_->{content}{action} eq 'delete' } @{ $res->{json} }),
   1, 'A made a follower post (delete) when B left');

# A blocks B (write_followers): the follower record goes, B is not told
$res = $b->request(GET => '/followers', cred => $b_cred);
my $bid = $res->{json}[0]{id};
$res = $b->request(DELETE => "/followers/$bid", cred => $b_cred);
is($res->{status}, 200, 'B removes its follower A');
$res = $b->request(GET => '/followers/count');
is($res->{body}, '0', 'B has no follower');

# B follows A again after all that
$res = $b->request(POST => '/followings', cred => $b_cred,
                   body => { entity => $A_URL });
is($res->{status}, 200, 'B can follow A again');
my $b_again = $res->{json};
$fid = $b_again->{remote_id};
$res = $a->request(GET => "/followers/$fid?secrets=true", cred => $a_cred);
$s_cred = { map { $_ => $res->{json}{$_} }
            qw(mac_key_id mac_key mac_algorithm) };
$res = $a->request(GET => '/followers/count');
is($res->{body}, '1', 'A has its follower back');

# --- a post of A reaches B's feed: delivery through the queue --------

$res = $a->request(POST => '/posts', cred => $a_cred,
                   body => { type => 'https://tent.io/types/post/status/v0.1.0',
                             content => { text => 'from A, pushed' },
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'A posts');
my $pushed = $res->{json}{id};
my $seen;
for (1 .. 150) {
    $res = $b->request(GET => '/posts?entity=' . uri_escape($A_URL),
                       cred => $b_cred);
    last if ($seen) = grep { $_->{id} eq $pushed } @{ $res->{json} || [] };
    select undef, undef, undef, 0.1;
}
ok($seen, "A's post arrived in B's feed");
is($seen && $seen->{content}{text}, 'from A, pushed', 'as A wrote it');

# --- A changes its profile: B reads it again (spec 9.4) ------------------

my $INFO = 'https://example.org/types/info/mood/v0.1.0';
$res = $a->request(PUT => '/profile/' . uri_escape($INFO), cred => $a_cred,
                   body => { mood => 'federated',
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'A changes its profile') or diag $res->{body};
my $fresh;
for (1 .. 150) {
    $res = $b->request(GET => "/followings/$b_again->{id}", cred => $b_cred);
    last if $fresh = $res->{json}{profile}{$INFO};
    select undef, undef, undef, 0.1;
}
is($fresh && $fresh->{mood}, 'federated',
   'B\'s following of A holds the new section');

# --- B, a follower of A, changes its profile: A hears of it at /posts,
# signed with the relationship's credential (spec 9.3, 9.4)

$res = $b->request(PUT => '/profile/' . uri_escape($INFO), cred => $b_cred,
                   body => { mood => 'following',
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'B changes its profile') or diag $res->{body};
$fresh = undef;
for (1 .. 150) {
    $res = $a->request(GET => "/followers/$b_again->{remote_id}",
                       cred => $a_cred);
    last if $fresh = $res->{json}{profile}{$INFO};
    select undef, undef, undef, 0.1;
}
is($fresh && $fresh->{mood}, 'following',
   'A\'s follower record of B holds B\'s new section');
$res = $a->request(GET => '/posts?entity=' . uri_escape($B_URL)
                          . '&post_types='
                          . uri_escape('https://tent.io/types/post/profile/v0.1.0'),
                   cred => $a_cred);
ok(scalar @{ $res->{json} || [] } >= 1, 'and B\'s profile post is in A\'s feed');

# --- a credential reset asked by someone else ------------------------------
#
# A follow request is anonymous: anyone can ask A to follow "as B" with
# B's notification path (A learnt it from B's own follow request, so
# every server B follows knows one).  A's credential reset (spec 7.1)
# would give the asker a new key of B's relationship, and break B's.
# B answers a challenge only for a following being set up, so the reset
# fails and B's relationship stays as it was.

$res = $a->request(POST => '/followers',
                   body => { entity => $B_URL, types => ['all'],
                             notification_path =>
                                 "notifications/$b_again->{id}" });
is($res->{status}, 403, 'a follow request "as B" by someone else: 403')
    or diag $res->{body};
ok(!$res->{json}{mac_key}, 'no key given');
$res = $b->request(GET => "/notifications/$b_again->{id}?challenge=abc");
is($res->{status}, 404, 'B answers no challenge for a confirmed following');
$res = $a->request(GET => '/followers/count');
is($res->{body}, '1', 'still one follower');
like(error_log_text() . $b_peer->error_log_text,
     qr/a challenge for the confirmed following "\w+" refused/,
     'B logged the refusal');

# interim answers (103 Early Hints, 100 Continue) come before the real one
my $rx = Tent::Receiver->start;
my $link = '<' . $rx->url . '/tent/profile>; rel="https://tent.io/rels/profile"';
$rx->rules([{ method => 'HEAD', path => '^/$',
              action => { do => 'garbage', bytes =>
                  "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
                  . "HTTP/1.1 100 Continue\r\n\r\n"
                  . "HTTP/1.1 200 OK\r\nLink: $link\r\nContent-Length: 0\r\n\r\n" } },
            { method => 'GET', path => '^/$', action => { status => 404 } }]);
$res = $a->request(POST => '/followings', cred => $a_cred,
                   body => { entity => $rx->url });
is($res->{status}, 200, 'discovery through 1xx interim answers')
    or diag $res->{body};
$rx->stop;

# a refused follow leaves no unconfirmed following behind
my $rx2 = Tent::Receiver->start;
$rx2->rules([{ method => 'POST', path => '/tent/followers',
               action => { status => 500, body => '{"error":"nope"}' } }]);
$res = $a->request(POST => '/followings', cred => $a_cred,
                   body => { entity => $rx2->url });
is($res->{status}, 500, 'the remote\'s 500 is passed on');
like($res->{body}, qr/nope/, 'with its error');
my ($asked) = $rx2->requests(method => 'POST');
my $np = eval { decode_json($asked->{body})->{notification_path} } // 'x';
$res = $a->request(GET => "/$np?challenge=abc");
is($res->{status}, 404, 'the pending following was removed');
$rx2->stop;

my $log = error_log_text() . $b_peer->error_log_text;
unlike($log, qr/\[(?:alert|crit|emerg)\]|exited on signal/,
       'no alert, no crash in either error log');

$b_peer->stop;

__DATA__

=== TEST 1: entity A, at its real loopback URL
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/followers
--- error_code: 200
--- response_body: []



=== TEST 2: the challenge of an unknown following
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/notifications/00000000000000000000000000000000?challenge=abc
--- error_code: 404



=== TEST 3: a challenge that is not a token is not echoed
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- request
GET /tent/notifications/00000000000000000000000000000000?challenge=%3Cscript%3E
--- error_code: 400
--- response_body_unlike: script



=== TEST 4: the last block: A for the flows above
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
