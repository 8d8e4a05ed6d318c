# Same-node delivery with tent_same_node_rows index (issue #28 part 3):
# the post stays in its author's rows, each recipient of this nginx gets
# its feed rows and one reference ("l") row, and every read checks the
# author's current post and follower row.  A (the harness's server) is
# followed by B and C, entities of the same nginx; D follows no one.
# B's app is subscribed (a hook).  What a recipient must never see
# through its references: a post for another entity (D, C), a post
# deleted (at once, before the delete post reaches it), an old version
# as current (the new one shows at once, before its delivery), a private
# post once its author removed the follower, or took it out of the group
# the post was for.  And B's app is still told, also by an app job row
# of the version before (JSON) naming with "l" where the post is.  B
# and C get their rows from the fan-out's own write, with no job: the
# status route and tent_status still show them delivered.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx wait_for);
use Tent::Client;
use Tent::Receiver;
use JSON::PP;

BEGIN {
    my $p = $ENV{TEST_NGINX_SERVER_PORT} || $ENV{TEST_NGINX_PORT} || 1984;
    $ENV{TEST_NGINX_B_PORT} = $p + 1;
    $ENV{TEST_NGINX_C_PORT} = $p + 2;
    $ENV{TEST_NGINX_D_PORT} = $p + 3;
}

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $PA = Tent::Util::port();
my %port = (B => $ENV{TEST_NGINX_B_PORT}, C => $ENV{TEST_NGINX_C_PORT},
            D => $ENV{TEST_NGINX_D_PORT});
my $A = "http://127.0.0.1:$PA";
my %url = map { $_ => "http://127.0.0.1:$port{$_}" } keys %port;

my $SCOPES = 'read_followers,write_followers,read_followings,'
             . 'write_followings,read_posts,write_posts,write_groups';
my $a = Tent::Client->new;
my (undef, $acred) = $a->authorized_app($SCOPES, post_types => 'all');
my (%cl, %cred);
for my $n (sort keys %port) {
    $cl{$n} = Tent::Client->new(port => $port{$n},
                                host => "127.0.0.1:$port{$n}");
    (undef, $cred{$n}) = $cl{$n}->authorized_app($SCOPES,
                                                 post_types => 'all');
}

sub error_log { Tent::Util::error_log_lines() }

sub post {
    my (%b) = @_;
    my $res = $a->request(POST => '/posts', cred => $acred, body => \%b);
    die "post: $res->{status} $res->{body}" unless $res->{status} == 200;
    return $res->{json}{id};
}

# A's post "id" as entity "n" reads it: the post, or undef (404)
sub seen {
    my ($n, $id) = @_;
    my $res = $cl{$n}->request(GET => '/posts/' . Tent::Client::uri_escape($A)
                                      . "/$id", cred => $cred{$n});
    return $res->{status} == 200 ? $res->{json} : undef;
}

# the ids of A's posts in the feed of "n", and its count of them
sub feed {
    my ($n) = @_;
    my $res = $cl{$n}->request(GET => '/posts?limit=100&entity='
                                      . Tent::Client::uri_escape($A),
                               cred => $cred{$n});
    return map { $_->{id} } @{ $res->{json} || [] };
}
sub in_feed { my ($n, $id) = @_; scalar grep { $_ eq $id } feed($n) }
sub count {
    my ($n) = @_;
    my $res = $cl{$n}->request(GET => '/posts/count?entity='
                                      . Tent::Client::uri_escape($A),
                               cred => $cred{$n});
    return $res->{json};
}

sub follower_of {
    my ($entity) = @_;
    my $res = $a->request(GET => '/followers', cred => $acred);
    my ($f) = grep { $_->{entity} eq $entity } @{ $res->{json} || [] };
    return $f;
}

# --- B and C follow A (over HTTP); B's app is subscribed ------------------

for my $n ('B', 'C') {
    my $res = $cl{$n}->request(POST => '/followings', cred => $cred{$n},
                               body => { entity => $A });
    die "$n following A: $res->{status} $res->{body}"
        unless $res->{status} == 200;
}
my ($fb, $fc) = (follower_of($url{B}), follower_of($url{C}));
ok($fb && $fc, 'A has B and C as followers');

my $hook = Tent::Receiver->start(port => $PA + 6,
    rules => [{ method => 'POST', path => '^/hook/',
                action => { status => 200, body => '{}' } }]);
$cl{B}->authorized_app('read_posts,read_permissions', post_types => 'all',
                       notification_url => $hook->url . '/hook/b');

my $res = $a->request(POST => '/groups', cred => $acred,
                      body => { name => 'close' });
my $gid = $res->{json}{id};
$res = $a->request(PUT => "/followers/$fc->{id}", cred => $acred,
                   body => { groups => [{ id => $gid }] });
is($res->{status}, 200, 'C is in A\'s group "close"') or diag $res->{body};

# --- a public post: references, no copy ------------------------------------

my $p1 = post(type => $STATUS, content => { text => 'hello' },
              permissions => { public => JSON::PP::true });
ok(wait_for(sub { seen('B', $p1) && seen('C', $p1) }),
   'a public post of A reaches B and C');
my $got = seen('B', $p1);
is($got->{content}{text}, 'hello', 'as A wrote it');
is($got->{entity}, $A, 'under A\'s entity');
ok($got->{received_at}, 'with the time B received it');
ok(!exists $got->{rus}, 'and none of A\'s internal fields');
ok(scalar(grep { /tent posts: post "\Q$p1\E": no copy, its reference read/ }
          error_log()),
   'B has no copy: its read went by the reference');
ok(in_feed('B', $p1), 'in B\'s feed');

# no job for a recipient of this node: the fan-out's own write holds its
# rows and its record "delivered"; tent_status counts it as before
ok(wait_for(sub { grep { /tent delivery: post "\Q$p1\E": 2 delivered on this node with no job, 0 jobs/ }
                  error_log() }),
   'B\'s and C\'s rows are written by the fan-out, with no job');
ok(!grep({ /tent local: post "\Q$p1\E" to "/ } error_log()),
   'so no job of the post is carried to them');
my $dl = $a->request(GET => "/posts/$p1/deliveries", cred => $acred);
my %by = map { $_->{entity} => $_ } @{ $dl->{json}{deliveries} || [] };
is($by{$url{B}}{state}, 'delivered', 'the status route: B delivered')
    or diag $dl->{body};
is($by{$url{C}}{state}, 'delivered', 'and C');
is($by{$url{B}}{last_status}, 200, 'with a 200');
is($by{$url{B}}{attempts}, 1, 'in one attempt');
is($dl->{json}{counts}{delivered}, 2, 'two delivered');
my $st = Tent::Util::tent_status($a)->{deliveries};
ok($st->{local} >= 2 && $st->{delivered} >= 2,
   "tent_status counts them: $st->{local} local, $st->{delivered} "
   . 'delivered');
is(count('B'), scalar(feed('B')), 'and B\'s count agrees with its feed');

ok(scalar $hook->wait_requests(method => 'POST', path => qr{^/hook/b$},
                               timeout => 10),
   'B\'s app is told');
sub told_ids {
    return map { eval { decode_json($_->{body})->{id} } // '' }
           $hook->requests(method => 'POST', path => qr{^/hook/b$});
}
ok(wait_for(sub { grep { $_ eq $p1 } told_ids() }, 10),
   'of the post B received') or diag join ' ', told_ids();

# --- the wrong entity: D follows no one; C was not named -------------------

ok(!seen('D', $p1), 'D, of the same nginx, has no reference: 404');
is(scalar(grep { $_ eq $p1 } feed('D')), 0, 'nor anything in its feed');

my $p2 = post(type => $STATUS, content => { text => 'to B' },
              permissions => { entities => { $url{B} => JSON::PP::true } });
ok(wait_for(sub { seen('B', $p2) }), 'a post to B reaches B');
is(seen('B', $p2)->{permissions}{public}, JSON::PP::false,
   'not public');
ok(!seen('C', $p2), 'C never sees it');
ok(!in_feed('C', $p2), 'nor has it in its feed');
ok(wait_for(sub { grep { $_ eq $p2 } told_ids() }, 10),
   'B\'s app is told of it') or diag join ' ', told_ids();
my ($told) = grep { $_->{id} eq $p2 }
             map { eval { decode_json($_->{body}) } || {} }
             $hook->requests(method => 'POST', path => qr{^/hook/b$});
is_deeply($told->{permissions}, { public => JSON::PP::false },
          'with read_permissions, whom A\'s post is for is not told: as a '
          . 'copy would hold it') or diag(encode_json($told || {}));

# --- the group: C sees its post, then not once out of the group ------------

my $p3 = post(type => $STATUS, content => { text => 'to the group' },
              permissions => { groups => [{ id => $gid }] });
ok(wait_for(sub { seen('C', $p3) }), 'the group\'s post reaches C');
ok(!seen('B', $p3), 'not B, out of the group');
my $count_c = count('C');
$res = $a->request(PUT => "/followers/$fc->{id}", cred => $acred,
                   body => { groups => [] });
is($res->{status}, 200, 'C out of the group') or diag $res->{body};
ok(!seen('C', $p3), 'C cannot read the group\'s post any more');
ok(!in_feed('C', $p3), 'nor find it in its feed');
is(count('C'), $count_c - 1, 'nor count it');

# --- a new version: never the old one as current ---------------------------

$res = $a->request(PUT => "/posts/$p1", cred => $acred,
                   body => { type => $STATUS, content => { text => 'v2' },
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'A makes a new version of its public post')
    or diag $res->{body};
is(seen('B', $p1)->{content}{text}, 'v2', 'B reads the new version at once');
is(seen('B', $p1)->{version}, 2, 'as version 2');
ok(wait_for(sub { 2 <= grep { /tent local batch: post "\Q$p1\E" to "\Q$url{B}\E": 200, stored/ }
                       error_log() }),
   'and its delivery rewrites B\'s references');

# --- a delete: gone at once, then the references go ------------------------

$res = $a->request(DELETE => "/posts/$p1", cred => $acred);
is($res->{status}, 200, 'A deletes its public post') or diag $res->{body};
ok(!seen('B', $p1) && !seen('C', $p1), 'B and C cannot read it, at once');
ok(!in_feed('B', $p1), 'nor find it in their feeds');
ok(wait_for(sub { grep { /"\Q$url{B}\E": references of post "\Q$p1\E" removed/ }
                  error_log() }),
   'the delete post\'s delivery removes B\'s references');

# --- an app's job row of the version before (JSON) with "l" ----------------
# B's app job of a post B holds by reference, caught while its hook hangs
# (nginx stopped), carries "l" binary; written again as JSON with "l", as
# the version before wrote it, it is still read where "l" says: delivered.

my $n_told = -1;             # the notifications before: all answered
for (1 .. 10) {
    my $n = () = told_ids();
    last if $n == $n_told;
    ($n_told = $n), sleep 1;
}
$hook->rules([{ method => 'POST', path => '^/hook/', action => 'hang' }]);
my $p5 = post(type => $STATUS, content => { text => 'job of old' },
              permissions => { public => JSON::PP::true });
ok(wait_for(sub { grep { $_ eq $p5 } told_ids() }, 10),
   'B\'s app is offered a referenced post (its hook hangs)');
stop_last_nginx();

my $db = Tent::Util::servroot() . '/tent_temp/db';
my ($jkey, $jval);
for (Tent::Util::ldb_rows($db)) {
    chomp;
    my ($k, $v) = split /\t/;
    my $key = pack('H*', $k);
    ($jkey, $jval) = ($key, pack('H*', $v // ''))
        if $key =~ /^\Q$url{B}\E\0j.{8}A\S+ \S+ \Q$p5\E \d+$/s;
}
my ($kind, $ver, $to, $app, $jid, $pent, $l) =
    unpack('x C x2 x8 Q> x16 n/a* n/a* n/a* n/a* n/a*', $jval // '');
ok(defined $jkey && $kind == 3, 'B has its app\'s job row, binary');
is($l, $A, 'which names A as where the post is');
my $json = encode_json({ subscription => $to, app => $app, id => $jid,
                         version => $ver + 0, attempt => 1,
                         first => time - 5, post_entity => $pent,
                         l => $A });
is(system(Tent::Util::ldb_tool('ldb-put'), $db, unpack('H*', $jkey // ''),
          unpack('H*', $json)), 0, 'the row written again as JSON');

# a kill -9 in the middle of a fan-out leaves its outbox row: the next
# store owner runs the fan-out again.  p2's row put back so: B's rows are
# found at the version, nothing is written twice
my $orow = "$A\0o" . pack('Q>', int(time * 1e6)) . $p2;
is(system(Tent::Util::ldb_tool('ldb-put'), $db, unpack('H*', $orow),
          unpack('H*', encode_json({ id => $p2, version => 1,
                                     type => $STATUS }))), 0,
   'p2\'s outbox row put back, as a kill mid fan-out leaves it');
$hook->clear;
$hook->rules([{ method => 'POST', path => '^/hook/',
                action => { status => 200, body => '{}' } }]);
start_last_nginx();
ok(wait_for(sub { grep { /tent local batch: post "\Q$p2\E" to "\Q$url{B}\E": 200, nothing written, no job/ }
                  error_log() }),
   'the fan-out again: B\'s reference found at the version, nothing '
   . 'written');
is(scalar(grep { $_ eq $p2 } feed('B')), 1, 'p2 once in B\'s feed');
ok(wait_for(sub { grep { $_ eq $p5 } told_ids() }, 15),
   'the JSON job is read where "l" says: B\'s app is told')
    or diag join ' ', told_ids();

# --- the follower removed before the read -----------------------------------

my $p4 = post(type => $STATUS, content => { text => 'to B again' },
              permissions => { entities => { $url{B} => JSON::PP::true } });
ok(wait_for(sub { seen('B', $p4) }), 'a private post to B reaches B');
$res = $a->request(DELETE => "/followers/$fb->{id}", cred => $acred);
is($res->{status}, 200, 'A removes its follower B') or diag $res->{body};
ok(!seen('B', $p4), 'B cannot read the private post any more');
ok(!in_feed('B', $p4), 'nor find it in its feed');
ok(!seen('B', $p2), 'nor the earlier one');

__DATA__

=== TEST 1: tent_same_node_rows takes copy or index, nothing else
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_same_node_rows copies;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
invalid value "copies"



=== TEST 2: four entities of one nginx, one store, index rows
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 100ms;
    tent_delivery_retry 1s 2s;
    tent_delivery_attempts 2;
    tent_same_node_rows index;

    server {
        listen 127.0.0.1:$TEST_NGINX_B_PORT;
        tent_entity http://127.0.0.1:$TEST_NGINX_B_PORT;
        location = /tent/oauth/authorize {
            tent_owner "B's owner";
        }
    }

    server {
        listen 127.0.0.1:$TEST_NGINX_C_PORT;
        tent_entity http://127.0.0.1:$TEST_NGINX_C_PORT;
        location = /tent/oauth/authorize {
            tent_owner "C's owner";
        }
    }

    server {
        listen 127.0.0.1:$TEST_NGINX_D_PORT;
        tent_entity http://127.0.0.1:$TEST_NGINX_D_PORT;
        location = /tent/oauth/authorize {
            tent_owner "D's owner";
        }
    }
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "A's owner";
    }
    location = /status {
        tent_status;
    }
--- request
GET /tent/posts
--- error_code: 200
--- response_body: []
