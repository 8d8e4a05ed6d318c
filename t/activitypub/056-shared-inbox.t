# A public post once per ActivityPub shared inbox (issue #29 item 4,
# docs/activitypub.md#shared-inboxes).  Three followers of one peer
# with a shared inbox and one with its inbox only (records written into
# the stopped nginx's store, Tent::APFollower): a public post is 2
# POSTs, one to the shared inbox (to the Public, cc the followers
# collection, no follower named) and one to the inbox, both signed; a
# private post to one of them goes to that actor's own inbox only; the
# Update and the Delete of the public post once per shared inbox too.
# With 150 followers more on a second shared inbox (the fan-out takes two
# steps of 100) a post is still one delivery to it, and the fan-out run
# again from its first follower (the outbox row put back, as a kill -9
# between its steps leaves it) makes no job twice.  The status route
# lists a shared inbox by its URL; tent_status counts the jobs and the
# followers they carry.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text wait_for);
use Tent::Client;
use Tent::Receiver;
use Tent::APFollower;
use JSON::PP;
use Time::HiRes qw(sleep time);

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $ENTITY = 'http://127.0.0.1:' . ($ENV{TEST_NGINX_SERVER_PORT} || 1984);
my $API = "$ENTITY/tent";
my $PUBLIC = 'https://www.w3.org/ns/activitystreams#Public';
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $c = Tent::Client->new;
my (undef, $owner) = $c->authorized_app(
    'write_posts,read_posts,read_followers,read_followings',
    post_types => 'all');

my $res = $c->request(GET => '//',
                      headers => { Accept => 'application/activity+json' });
is($res->{status}, 200, 'the actor') or diag $res->{body};
my $pem = $res->{json}{publicKey}{publicKeyPem} // '';
my $name = $res->{json}{preferredUsername} // '';

# one peer: every inbox takes activities
my $rx = Tent::Receiver->start(
    rules => [{ method => 'POST', path => '^/',
                action => { status => 202, body => '' } }]);
my $PEER = $rx->url;
my $SHARED = "$PEER/inbox";
my $SHARED2 = "$PEER/shared2";
my %actor = map { $_ => "$PEER/users/$_" } qw(a b c d);

my $db = Tent::Util::servroot() . '/tent_temp/db';
stop_last_nginx();
for (qw(a b c)) {
    Tent::APFollower::put($db, $ENTITY, actor => $actor{$_},
                          inbox => "$actor{$_}/inbox",
                          shared_inbox => $SHARED);
}
Tent::APFollower::put($db, $ENTITY, actor => $actor{d},
                      inbox => "$actor{d}/inbox");
start_last_nginx();

# the activities the peer got, by path
sub got {
    my ($path, $id) = @_;
    return grep { !defined $id || ($_->[0]{id} // '') eq $id }
           map { my $j = eval { decode_json($_->{body}) }; [$j || {}, $_] }
           $rx->requests(method => 'POST', path => qr{^\Q$path\E$});
}

# every POST of an activity id, by path
sub paths_of {
    my ($id) = @_;
    my %n;
    for ($rx->requests(method => 'POST')) {
        my $j = eval { decode_json($_->{body}) } || {};
        $n{ $_->{path} // $_->{target} }++ if ($j->{id} // '') eq $id;
    }
    return \%n;
}

sub deliveries {
    my ($pid) = @_;
    my $r = $c->request(GET => "/posts/$pid/deliveries", cred => $owner);
    return { map { $_->{entity} => $_ } @{ $r->{json}{deliveries} || [] } };
}

# every recipient listed delivered: then no job of the post is left
sub all_delivered {
    my ($pid, @who) = @_;
    return wait_for(sub {
        my $d = deliveries($pid);
        !grep { ($d->{$_}{state} // '') ne 'delivered' } @who;
    }, 30);
}

sub signed_ok {
    my ($req, $what) = @_;
    my @bad = Tent::APFollower::check($req, $pem, "$ENTITY#main-key");
    ok(!@bad, "$what: signed, its Digest and Date right")
        or diag join ', ', @bad;
}

my $st0 = Tent::Util::tent_status($c);

# ---- a public post: the shared inbox once, d's inbox once

my $p1 = $c->post_ok($owner, { type => $STATUS,
                               content => { text => 'to all' },
                               permissions => { public => JSON::PP::true } });
my $obj1 = "$API/posts/$p1->{id}";
ok(all_delivered($p1->{id}, $SHARED, $actor{d}),
   'the shared inbox and d: delivered')
    or diag encode_json(deliveries($p1->{id}));
is_deeply(paths_of("$obj1#create-1"),
          { '/inbox' => 1, '/users/d/inbox' => 1 },
          'a public post: 2 POSTs, one to the shared inbox, one to d\'s '
          . 'inbox');
my ($sh) = got('/inbox', "$obj1#create-1");
my ($a, $req) = @{ $sh || [{}, {}] };
signed_ok($req, 'the shared inbox\'s Create');
is_deeply($a->{to}, [$PUBLIC], 'to the Public');
is_deeply($a->{cc}, ["$API/activitypub/$name/followers"],
          'cc the followers collection, no follower named');
unlike($req->{body} // '', qr{/users/[abc]\b}, 'no follower of it named');
my ($dd) = got('/users/d/inbox', "$obj1#create-1");
signed_ok($dd->[1] || {}, 'd\'s Create');

my $d = deliveries($p1->{id});
is(scalar keys %$d, 2, 'the status route: two recipients');
is($d->{$SHARED}{shared_inbox}, JSON::PP::true,
   'the shared inbox, named by its URL');
like($d->{$SHARED}{id} // '', qr/^S[0-9a-f]{32}$/, 'its recipient id');
is($d->{$SHARED}{last_status}, 202, 'its status');
ok(!$d->{$actor{d}}{shared_inbox}, 'd by its actor id');

my $st = Tent::Util::tent_status($c);
is(($st->{deliveries}{shared_inbox} // 0)
   - ($st0->{deliveries}{shared_inbox} // 0), 1,
   'tent_status: one shared inbox job');
is(($st->{deliveries}{shared_followers} // 0)
   - ($st0->{deliveries}{shared_followers} // 0), 3,
   'carrying three followers');

# ---- a private post to b: b's own inbox only

my $p2 = $c->post_ok($owner, { type => $STATUS,
                               content => { text => 'just b' },
                               permissions => {
                                   public => JSON::PP::false,
                                   entities => { $actor{b} => JSON::PP::true }
                               } });
ok(all_delivered($p2->{id}, $actor{b}), 'b: delivered');
is_deeply(paths_of("$API/posts/$p2->{id}#create-1"),
          { '/users/b/inbox' => 1 },
          'a private post: b\'s inbox only, not the shared one');
my ($pb) = got('/users/b/inbox', "$API/posts/$p2->{id}#create-1");
is_deeply($pb->[0]{to}, [$actor{b}], 'to b alone');
is_deeply([ keys %{ deliveries($p2->{id}) } ], [$actor{b}],
          'its status lists b only');

# ---- the Update and the Delete: once per shared inbox

$res = $c->request(PUT => "/posts/$p1->{id}", cred => $owner,
                   body => { type => $STATUS,
                             content => { text => 'to all, edited' },
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a new version') or diag $res->{body};
ok(all_delivered($p1->{id}, $SHARED, $actor{d}), 'version 2 delivered');
ok(wait_for(sub { paths_of("$obj1#update-2")->{'/users/d/inbox'} }, 20),
   'd got the Update');
is_deeply(paths_of("$obj1#update-2"),
          { '/inbox' => 1, '/users/d/inbox' => 1 },
          'the Update: once to the shared inbox, once to d');

$res = $c->request(DELETE => "/posts/$p1->{id}", cred => $owner);
is($res->{status}, 200, 'the post deleted') or diag $res->{body};
ok(wait_for(sub {
       my $n = paths_of("$obj1#delete");
       $n->{'/inbox'} && $n->{'/users/d/inbox'};
   }, 20), 'the Delete reached the shared inbox and d');
sleep 1;    # a second job would be due at once
is_deeply(paths_of("$obj1#delete"),
          { '/inbox' => 1, '/users/d/inbox' => 1 },
          'the Delete: once to the shared inbox, once to d');

# ---- 150 followers more on a second shared inbox: two steps, one job

stop_last_nginx();
for my $i (1 .. 150) {
    Tent::APFollower::put($db, $ENTITY, actor => "$PEER/users/e$i",
                          inbox => "$PEER/users/e$i/inbox",
                          shared_inbox => $SHARED2);
}
start_last_nginx();
$st0 = Tent::Util::tent_status($c);

my $p3 = $c->post_ok($owner, { type => $STATUS,
                               content => { text => 'to 154' },
                               permissions => { public => JSON::PP::true } });
my $obj3 = "$API/posts/$p3->{id}";
ok(all_delivered($p3->{id}, $SHARED, $SHARED2, $actor{d}),
   'both shared inboxes and d: delivered')
    or diag encode_json(deliveries($p3->{id}));
is_deeply(paths_of("$obj3#create-1"),
          { '/inbox' => 1, '/shared2' => 1, '/users/d/inbox' => 1 },
          '154 followers: 3 POSTs, one per shared inbox and d\'s');
is(scalar keys %{ deliveries($p3->{id}) }, 3, 'three recipients listed');
my $log = error_log_text();
like($log, qr/post "\Q$p3->{id}\E": shared inbox \Q$SHARED2\E has its job already \(\d+ followers more\)/,
     'the second step found the inbox\'s job of the first');
$st = Tent::Util::tent_status($c);
is(($st->{deliveries}{shared_inbox} // 0)
   - ($st0->{deliveries}{shared_inbox} // 0), 2,
   'tent_status: two shared inbox jobs');
is(($st->{deliveries}{shared_followers} // 0)
   - ($st0->{deliveries}{shared_followers} // 0), 153,
   'carrying 153 followers');

# ---- the fan-out run again from its first follower, as a kill -9
# between its steps leaves it (its outbox row is there until the last
# step's write): every inbox's job found, none made twice

stop_last_nginx();
my $orow = "$ENTITY\0o" . pack('Q>', int(time * 1e6)) . $p3->{id};
is(system(Tent::Util::ldb_tool('ldb-put'), $db, unpack('H*', $orow),
          unpack('H*', encode_json({ id => $p3->{id}, version => 1,
                                     type => $STATUS }))), 0,
   'p3\'s outbox row put back, as a kill mid fan-out leaves it');
start_last_nginx();
my $done = qr/post "\Q$p3->{id}\E": fan-out done, the outbox row goes/;
ok(wait_for(sub { my @n = error_log_text() =~ /$done/g; @n >= 2 }, 30),
   'the fan-out ran again to its end');
$log = error_log_text();
my @again = $log =~ /post "\Q$p3->{id}\E": (0) shared inbox jobs made/g;
ok(scalar @again >= 3, 'its steps made no shared inbox job');
my $p4 = $c->post_ok($owner, { type => $STATUS,
                               content => { text => 'after' },
                               permissions => { public => JSON::PP::true } });
ok(all_delivered($p4->{id}, $SHARED, $SHARED2, $actor{d}),
   'a post after it delivered (the queue is past p3)');
is_deeply(paths_of("$obj3#create-1"),
          { '/inbox' => 1, '/shared2' => 1, '/users/d/inbox' => 2 },
          'p3 still once per shared inbox (d\'s own job made again, as '
          . 'any follower\'s)')
    or diag encode_json(paths_of("$obj3#create-1"));

$rx->stop;

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 200ms;
    tent_delivery_retry 1s 2s;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    tent_activitypub on;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
    location = / {
        tent_entity_page;
    }
    location = /status { tent_status; }
--- request
GET /tent/posts
--- error_code: 200
--- response_body: []
