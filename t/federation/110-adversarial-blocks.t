# Issue #27, item 3: the owner's blocks (docs/blocks.md).
#
# An entity the owner blocks (POST /blocks, write_blocks) is refused
# everywhere it reaches us: a follow (403 before any challenge is sent),
# a notification signed with the credential of our following of it, an
# unsigned mention (403 before its server is asked), any request signed
# with a relationship's credential; the owner's proxied reads of it (GET
# /followings/:id/*) and a new following of it are refused with nothing
# sent.  Blocking it ends its follower relationship (its row and
# credential go), its posts kept from before leave every feed, and our
# posts are not sent to it (no job, even when a post mentions it).  Both
# workers see a block at once (the generation in the shared zone).
# Who may block: an app with write_blocks only; listing takes
# read_blocks.  Unblocked, it is an entity like any other again.
# Receivers on loopback play the entities.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text dechunk);
use Tent::Client;
use Tent::Receiver;
use Tent::Peer;
use JSON::PP;
use Time::HiRes qw(sleep time);
*uri_escape = \&Tent::Client::uri_escape;

BEGIN {
    my $p = $ENV{TEST_NGINX_SERVER_PORT} || $ENV{TEST_NGINX_PORT} || 1984;
    $ENV{TEST_NGINX_L_PORT} = $p + 1;
}

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $PORT = $ENV{TEST_NGINX_SERVER_PORT} || 1984;
my $A_URL = "http://127.0.0.1:$PORT";
my $c = Tent::Client->new;
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';

my (undef, $owner) = $c->authorized_app(
    'read_followers,write_followers,read_followings,write_followings,'
    . 'read_posts,write_posts,read_blocks,write_blocks',
    post_types => 'all');
my (undef, $weak) = $c->authorized_app(
    'read_followers,write_followers,read_followings,write_followings,'
    . 'read_posts,write_posts', post_types => 'all');
my (undef, $reader) = $c->authorized_app('read_blocks');

sub cred_of {
    my ($json) = @_;
    return { map { $_ => $json->{$_} } qw(mac_key_id mac_key mac_algorithm) };
}

sub follows_us {
    my ($url) = @_;
    return $c->request(POST => '/followers',
                       body => { entity => $url, types => ['all'],
                                 notification_path => 'notifications/n' });
}

sub a_post {
    my ($e, $id, %o) = @_;
    return { id => $id, entity => $e, type => $STATUS,
             content => { text => "$id from $e" },
             published_at => int(time), licenses => [],
             permissions => { public => JSON::PP::true },
             mentions => $o{mentions} // [],
             version => 1 };
}

sub got { $_[0]->posts_of($_[1]) }
sub wait_got { $_[0]->wait_posts_of($_[1]) }

sub feed_ids {
    my ($q, @cr) = @_;
    my $res = $c->request(GET => "/posts?limit=200" . ($q ? "&$q" : ''),
                          @cr);
    return map { $_->{id} } @{ $res->{json} || [] };
}

# --- the blocked entity, before: a follower, a following, its posts ----

my $bad = Tent::Receiver->start;
my $good = Tent::Receiver->start;
my $B = $bad->url;

my $res = follows_us($B);
is($res->{status}, 200, 'B follows us') or diag $res->{body};
my $bf = $res->{json};
my $bfcred = cred_of($bf);
$res = follows_us($good->url);
is($res->{status}, 200, 'G follows us') or diag $res->{body};

$res = $c->request(POST => '/followings', cred => $owner,
                   body => { entity => $B });
is($res->{status}, 200, 'we follow B') or diag $res->{body};
my $gid = $res->{json}{id};
my ($bcred) = map { cred_of($_) } $bad->followers;
my $NOTE = "/notifications/$gid";

$res = $c->request(POST => $NOTE, cred => $bcred, body => a_post($B, 'b1'));
is($res->{status}, 200, 'a notification from B: kept') or diag $res->{body};
ok((grep { $_ eq 'b1' } feed_ids('', cred => $owner)),
   'its post is in the feed');

# --- who may block -------------------------------------------------------

for my $who (['anonymous', []], ['an app without write_blocks',
             [cred => $weak]], ['an app with read_blocks only',
             [cred => $reader]], ["B's follower credential",
             [cred => $bfcred]])
{
    $res = $c->request(POST => '/blocks', @{ $who->[1] },
                       body => { entity => $B });
    is($res->{status}, 403, "$who->[0]: POST /blocks 403");
    like($res->{body}, qr/"error"/, "$who->[0]: a JSON error");
}
is($c->request(GET => '/blocks', cred => $weak)->{status}, 403,
   'GET /blocks without read_blocks: 403');
is($c->request(GET => '/blocks')->{status}, 403,
   'GET /blocks anonymous: 403');

for my $e ('', 'ftp://x.example', 'http://', "http://a\nb",
           'http://u@x.example', [1], undef)
{
    $res = $c->request(POST => '/blocks', cred => $owner,
                       body => { entity => $e });
    is($res->{status}, 422, 'an invalid entity: 422')
        or diag encode_json $e;
}
$res = $c->request(POST => '/blocks', cred => $owner,
                   body => { entity => "HTTP://127.0.0.1:$PORT/" });
is($res->{status}, 422, 'blocking ourselves (another spelling): 422');
is($c->request(POST => '/blocks', cred => $owner, body => '[1')->{status},
   400, 'a body that is no JSON: 400');

# --- the block -----------------------------------------------------------

my $Bport = $bad->port;
$res = $c->request(POST => '/blocks', cred => $owner,
                   body => { entity => "HTTP://127.0.0.1:$Bport/" });
is($res->{status}, 201, 'B blocked (another spelling): 201')
    or diag $res->{body};
is($res->{json}{entity}, $B, 'kept in its one spelling');
ok($res->{json}{created_at}, 'with its time');

$res = $c->request(POST => '/blocks', cred => $owner,
                   body => { entity => $B });
is($res->{status}, 409, 'blocked again: 409');

# both workers: every read below is made twice, whichever worker takes it

for my $n (1, 2) {
    is($c->request(GET => '/followers/' . uri_escape($B),
                   cred => $owner)->{status},
       404, "($n) its follower relationship is gone");
    is($c->request(GET => '/posts', cred => $bfcred)->{status}, 401,
       "($n) its follower credential no longer authenticates");
    ok(!(grep { $_ eq 'b1' } feed_ids('', cred => $owner)),
       "($n) its post left the owner's feed");
    is_deeply([feed_ids('entity=' . uri_escape($B), cred => $owner)], [],
              "($n) ?entity=B: nothing");
    is($c->request(GET => '/posts/count?entity=' . uri_escape($B),
                   cred => $owner)->{body}, '0', "($n) counted 0");
}
is($c->request(GET => '/followers/count', cred => $owner)->{body}, '1',
   'one follower left (G)');

# inbound, each refused before any work
$bad->clear;
for my $n (1, 2) {
    $res = $c->request(POST => $NOTE, cred => $bcred,
                       body => a_post($B, "b2$n"));
    is($res->{status}, 403, "($n) a notification from B: 403");
    like($res->{json}{error} // '', qr/blocked/, "($n) the error says so");
    is($c->request(GET => '/posts/' . uri_escape($B) . "/b2$n",
                   cred => $owner)->{status},
       404, "($n) nothing stored");

    # any route, signed with the credential of our following of it
    is($c->request(GET => '/profile', cred => $bcred)->{status}, 403,
       "($n) B's signed GET /profile: 403");

    $res = follows_us($B);
    is($res->{status}, 403, "($n) B follows again: 403");
    $res = follows_us("http://127.0.0.1:0$Bport");
    is($res->{status}, 403, "($n) in another spelling: 403");

    $res = $c->request(POST => '/posts',
                       body => a_post($B, "m$n",
                                      mentions => [{ entity => $A_URL }]));
    is($res->{status}, 403, "($n) an unsigned mention from B: 403");
    like($res->{json}{error} // '', qr/blocked/, "($n) the error says so");

    $res = $c->request(GET => "/followings/$gid/posts", cred => $owner);
    is($res->{status}, 403, "($n) a proxied read of B: 403");
    $res = $c->request(GET => '/followings/' . uri_escape($B) . '/profile',
                       cred => $owner);
    is($res->{status}, 403, "($n) by its entity: 403");

    $res = $c->request(POST => '/followings', cred => $owner,
                       body => { entity => $B });
    is($res->{status}, 403, "($n) a new following of B: 403");
}
is(scalar $bad->requests, 0,
   'B was sent nothing: no challenge, no discovery, no read, no proxy');

# outbound: a post that mentions B and G goes to G only
$bad->clear;
$res = $c->request(POST => '/posts', cred => $owner,
                   body => { type => $STATUS,
                             content => { text => 'hello B and G' },
                             permissions => { public => JSON::PP::true },
                             mentions => [{ entity => $B },
                                          { entity => $good->url }] });
is($res->{status}, 200, 'a public post mentioning B and G')
    or diag $res->{body};
my $pid = $res->{json}{id};
ok(scalar wait_got($good, $pid), 'G got it');

# a marker after it: once G has the marker, B would have had the first
$res = $c->request(POST => '/posts', cred => $owner,
                   body => { type => $STATUS, content => { text => 'mark' },
                             permissions => { public => JSON::PP::true } });
my $mark = $res->{json}{id};
ok(scalar wait_got($good, $mark), 'G got the marker');
is(scalar got($bad, $pid), 0, 'B got nothing of the post that names it');
is(scalar $bad->requests(method => 'POST'), 0, 'B was sent no post at all');

# --- the list, paged -----------------------------------------------------

for my $i (1 .. 4) {
    $res = $c->request(POST => '/blocks', cred => $owner,
                       body => { entity => "http://blocked-$i.test" });
    is($res->{status}, 201, "blocked-$i blocked");
}
my (@walk, $url);
$url = '/blocks?limit=2';
for (1 .. 10) {
    $res = $c->request(GET => $url, cred => $reader);
    is($res->{status}, 200, "GET $url") or last;
    push @walk, map { $_->{entity} } @{ $res->{json} || [] };
    my ($next) = ($res->{headers}{link} // '') =~ /<([^>]+)>; rel="next"/;
    last unless $next;
    ($url = $next) =~ s{^/tent}{};
}
is(scalar @walk, 5, 'five blocks walked, two a page');
my %seen;
is(scalar(grep { !$seen{$_}++ } @walk), 5, 'none twice');
is($c->request(GET => '/blocks?limit=0', cred => $reader)->{status}, 400,
   'limit=0: 400');

# --- export and import: the blocks go with the entity ----------------------

my $READ = 'read_secrets,read_profile,read_followers,read_followings,'
           . 'read_groups';
my $WRITE = 'write_secrets,write_profile,write_followers,write_followings,'
            . 'write_groups';
my (undef, $exporter) = $c->authorized_app("$READ,read_blocks");
my (undef, $noblocks) = $c->authorized_app($READ);

sub export_doc {
    my ($cl, $cred) = @_;
    my $r = $cl->request(GET => '/export', cred => $cred);
    my $body = $r->{body} // '';
    ($body) = dechunk($body)
        if ($r->{headers}{'transfer-encoding'} // '') =~ /chunked/;
    return eval { decode_json($body) };
}

my $doc = export_doc($c, $exporter);
ok($doc && $doc->{complete}, 'the export') or diag encode_json $doc;
is_deeply([sort map { $_->{entity} } @{ $doc->{blocks} || [] }],
          [sort $B, map { "http://blocked-$_.test" } 1 .. 4],
          'it holds the blocks');
ok($doc->{includes}{blocks}, 'includes.blocks says so');
ok((!grep { !$_->{created_at} } @{ $doc->{blocks} }), 'each with its time');
my $nodoc = export_doc($c, $noblocks);
ok($nodoc && $nodoc->{complete} && !exists $nodoc->{blocks},
   'without read_blocks: no blocks in it');

my $peer = Tent::Peer->start(worker_processes => 1);
my $pc = $peer->client;
my (undef, $pweak) = $pc->authorized_app($WRITE);
my $res2 = $pc->request(POST => '/import', cred => $pweak, body => $doc);
is($res2->{status}, 403, 'importing blocks without write_blocks: 403');

my $baddoc = JSON::PP->new->decode(JSON::PP->new->encode($doc));
push @{ $baddoc->{blocks} }, { entity => $peer->url, created_at => 1 },
                          { entity => 'ftp://x.test', created_at => 1 },
                          { entity => 'http://late.test',
                            created_at => time + 10 * 86400 },
                          { entity => $B, created_at => 1 };
my (undef, $pown) = $pc->authorized_app("$WRITE,write_blocks,read_blocks");
$res2 = $pc->request(POST => '/import', cred => $pown, body => $baddoc);
is($res2->{status}, 200, 'a document with bad blocks: 200')
    or diag $res2->{body};
ok(!$res2->{json}{blocks}{written}, 'its blocks not written')
    or diag encode_json $res2->{json}{blocks};
is($res2->{json}{blocks}{invalid_count}, 4,
   'itself, a bad URL, a time ahead, one twice: invalid')
    or diag encode_json $res2->{json}{blocks};
is_deeply($pc->request(GET => '/blocks', cred => $pown)->{json}, [],
          'no block on the peer');
$res2 = $pc->request(POST => '/import?merge=1', cred => $pown, body => $doc);
is($res2->{status}, 200, 'the document again (merge)') or diag $res2->{body};
ok($res2->{json}{blocks}{written}, 'its blocks written')
    or diag encode_json $res2->{json}{blocks};
$res2 = $pc->request(GET => '/blocks', cred => $pown);
is_deeply([sort map { $_->{entity} } @{ $res2->{json} || [] }],
          [sort $B, map { "http://blocked-$_.test" } 1 .. 4],
          'the peer blocks the same entities');

# an entity URL past 512 bytes is refused (4,096 blocks must stay far
# below the store scan's bytes, or the list was cut unseen), and an
# import may not pass the cap of 4,096 blocks (kept plus the section's)
my $LONG = 'http://long.test/' . ('p' x 590);
$res2 = $pc->request(POST => '/blocks', cred => $pown,
                     body => { entity => $LONG });
is($res2->{status}, 422, 'a 600-byte entity URL: 422') or diag $res2->{body};
like($res2->{json}{error} // '', qr/too long/, 'it says why');
my $longdoc = JSON::PP->new->decode(JSON::PP->new->encode($doc));
$longdoc->{blocks} = [{ entity => $LONG, created_at => 1 }];
$res2 = $pc->request(POST => '/import?merge=1', cred => $pown,
                     body => $longdoc);
is($res2->{status}, 200, 'a document with a long block: 200')
    or diag $res2->{body};
ok(!$res2->{json}{blocks}{written}, 'the long block not written')
    or diag encode_json $res2->{json}{blocks};
like($res2->{body}, qr/longer than 512/, 'the report says why');
my $bigdoc = JSON::PP->new->decode(JSON::PP->new->encode($doc));
$bigdoc->{blocks} = [map { { entity => "http://many-$_.test",
                             created_at => 1 } } 1 .. 4092];
$res2 = $pc->request(POST => '/import?merge=1', cred => $pown,
                     body => $bigdoc);
is($res2->{status}, 200, 'a document past the cap: 200')
    or diag substr($res2->{body}, 0, 500);
ok(!$res2->{json}{blocks}{written}, 'its blocks not written (5 + 4092)')
    or diag encode_json $res2->{json}{blocks};
like($res2->{body}, qr/more blocks than an owner keeps/,
     'the report says why');
is(scalar @{ $pc->request(GET => '/blocks?limit=100', cred => $pown)
                ->{json} || [] }, 5, 'the peer still blocks five');
$res2 = $pc->request(POST => '/posts',
                     body => a_post($B, 'pb1',
                                    mentions => [{ entity => $peer->url }]));
is($res2->{status}, 403, 'and refuses them');
$peer->stop;

# --- same-node: an entity of this nginx and store, blocked --------------

my $LP = $ENV{TEST_NGINX_L_PORT};
my $L = "http://127.0.0.1:$LP";
my $lc = Tent::Client->new(port => $LP, host => "127.0.0.1:$LP");
my (undef, $lown) = $lc->authorized_app(
    'read_posts,write_posts,read_followers,read_followings',
                                        post_types => 'all');
$res = $c->request(POST => '/followings', cred => $owner,
                   body => { entity => $L });
is($res->{status}, 200, 'we follow L, of this nginx') or diag $res->{body};

sub l_post {
    my ($text) = @_;
    my $r = $lc->request(POST => '/posts', cred => $lown,
                         body => { type => $STATUS,
                                   content => { text => $text },
                                   permissions => { public => JSON::PP::true } });
    return $r->{json}{id};
}

sub l_settled {
    my ($id) = @_;
    my $end = time + 15;
    while (time < $end) {
        my $d = $lc->request(GET => "/posts/$id/deliveries",
                             cred => $lown)->{json};
        return $d if $d && $d->{counts}
                     && $d->{counts}{delivered} + $d->{counts}{failed} >= 1;
        sleep 0.1;
    }
    return undef;
}

my $l1 = l_post('before');
ok(l_settled($l1), 'L\'s post delivered');
is($c->request(GET => '/posts/' . uri_escape($L) . "/$l1",
               cred => $owner)->{status}, 200, 'we have its copy');

$res = $c->request(POST => '/blocks', cred => $owner,
                   body => { entity => $L });
is($res->{status}, 201, 'L blocked');
my $l2 = l_post('after');
my $d = l_settled($l2);
ok($d, 'L\'s next post settled');
is($d && $d->{counts}{failed}, 1, 'its delivery to us refused (same-node)')
    or diag encode_json($d || {});
is($c->request(GET => '/posts/' . uri_escape($L) . "/$l2",
               cred => $owner)->{status}, 404, 'no copy of it here');
is($c->request(DELETE => '/blocks/' . uri_escape($L),
               cred => $owner)->{status}, 200, 'L unblocked');

# --- unblocked: like any entity again --------------------------------------

is($c->request(DELETE => '/blocks/' . uri_escape('http://nope.test'),
               cred => $owner)->{status}, 404, 'unblocking no block: 404');
is($c->request(DELETE => '/blocks/' . uri_escape($B),
               cred => $weak)->{status}, 403,
   'unblocking without write_blocks: 403');
$res = $c->request(DELETE => '/blocks/' . uri_escape("http://127.0.0.1:0$Bport/"),
                   cred => $owner);
is($res->{status}, 200, 'B unblocked (another spelling)') or diag $res->{body};

$res = $c->request(POST => $NOTE, cred => $bcred, body => a_post($B, 'b3'));
is($res->{status}, 200, 'a notification from B: kept again');
ok((grep { $_ eq 'b1' } feed_ids('', cred => $owner)),
   'its old post is back in the feed');
$res = follows_us($B);
is($res->{status}, 200, 'B may follow again') or diag $res->{body};

# --- an owner's block churn does not make the operator's domains stale ----
# Owner blocks and the operator's domain blocks had one generation: a
# tenant alternating POST and DELETE /blocks made every worker re-read
# the domains at each request and tick (and held delivery for the whole
# host).  A domain scan logs "tent domains: N blocked, generation G".

sub domain_scans {
    my @s = error_log_text() =~ /tent domains: \d+ blocked, generation/g;
    return scalar @s;
}

$c->request(GET => '/posts') for 1 .. 4;
my $scans = domain_scans();
ok($scans >= 1, 'the domains were read at least once') or diag $scans;
my $churn = 'http://127.0.0.1:1/churn';
for (1 .. 2) {
    $res = $c->request(POST => '/blocks', cred => $owner,
                       body => { entity => $churn });
    is($res->{status}, 201, 'churn: blocked') or diag $res->{body};
    $res = $c->request(DELETE => '/blocks/' . uri_escape($churn),
                       cred => $owner);
    is($res->{status}, 200, 'churn: unblocked') or diag $res->{body};
}
$c->request(GET => '/posts') for 1 .. 4;
is(domain_scans(), $scans, 'the domains not read again after the churn');

my $log = error_log_text();
my @added = $log =~ /\[notice\].*tent blocks: "\Q$A_URL\E" blocked "\Q$B\E"/g;
is(scalar @added, 1, 'the block logged once at notice');
my @removed = $log =~ /\[notice\].*tent blocks: "\Q$A_URL\E" unblocked "\Q$B\E"/g;
is(scalar @removed, 1, 'the unblock logged once at notice');

$_->stop for $bad, $good;

__DATA__

=== TEST 1: the server
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_delivery_interval 100ms;

    server {
        listen 127.0.0.1:$TEST_NGINX_L_PORT;
        tent_entity http://127.0.0.1:$TEST_NGINX_L_PORT;
        location = /tent/oauth/authorize {
            tent_owner "L's owner";
        }
    }
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/blocks
--- error_code: 403
--- response_body_like: "error"
