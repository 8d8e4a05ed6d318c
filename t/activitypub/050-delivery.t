# ActivityPub delivery (issue #29, docs/activitypub.md#delivery): the
# engine's third transport.  Two ActivityPub followers (their records
# written into the stopped nginx's store, as the inbox's Follow will
# write them), each inbox a receiver on loopback.  Each post reaches
# the followers as a signed activity: Create of a Note (public: to the
# Public, cc the followers collection; private: to the one actor
# named), Update for a new version, Delete of a Tombstone for a delete;
# each request's cavage signature verified against the actor's
# publicKeyPem, its Digest and Date checked.  A 503 is retried and then
# delivered, a 410 is a dead letter sent once; a post with no
# ActivityPub form sends nothing and says so in its delivery status;
# the delivery status lists the actors; tent_status counts them.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text);
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

# the actor, its key made on this first fetch
my $res = $c->request(GET => '//',
                      headers => { Accept => 'application/activity+json' });
is($res->{status}, 200, 'the actor') or diag $res->{body};
my $pem = $res->{json}{publicKey}{publicKeyPem} // '';
like($pem, qr/BEGIN PUBLIC KEY/, 'its public key');
is($res->{json}{publicKey}{id}, "$ENTITY#main-key", 'its key id');
my $name = $res->{json}{preferredUsername} // '';

# bob takes activities; carol's inbox is gone for good
my $bob_rx = Tent::Receiver->start(
    rules => [{ method => 'POST', path => '^/users/bob/inbox$',
                action => { status => 202, body => '' } }]);
my $carol_rx = Tent::Receiver->start(
    rules => [{ method => 'POST', path => '^/users/carol/inbox$',
                action => { status => 410, body => 'gone' } }]);
my $BOB = $bob_rx->url . '/users/bob';
my $CAROL = $carol_rx->url . '/users/carol';

my ($bob_id, $carol_id) = Tent::APFollower::install($ENTITY,
    [$BOB, "$BOB/inbox"], [$CAROL, "$CAROL/inbox"]);

$res = $c->request(GET => '/followers', cred => $owner);
is_deeply([ sort map { $_->{entity} } @{ $res->{json} || [] } ],
          [ sort $BOB, $CAROL ], 'both actors are followers');

# the activities an inbox got, decoded, with the request
sub got {
    my ($rx, $path) = @_;
    return map { my $j = eval { decode_json($_->{body}) }; [$j || {}, $_] }
           $rx->requests(method => 'POST', path => qr{^\Q$path\E$});
}

sub wait_activity {
    my ($rx, $path, $id, $n) = @_;
    my $end = time + 20;
    my @a;
    while (time < $end) {
        @a = grep { ($_->[0]{id} // '') eq $id } got($rx, $path);
        last if @a >= ($n || 1);
        sleep 0.1;
    }
    return @a;
}

sub signed_ok {
    my ($req, $what) = @_;
    my @bad = Tent::APFollower::check($req, $pem, "$ENTITY#main-key");
    ok(!@bad, "$what: signed, its Digest and Date right")
        or diag join ', ', @bad;
    is($req->{headers}{'content-type'}, 'application/activity+json',
       "$what: application/activity+json");
}

sub deliveries { $c->deliveries($owner, $_[0]) }
sub wait_state { $c->wait_delivery($owner, @_) }

# ---- a public post: Create of a Note, to the Public, cc the followers

my $p1 = $c->post_ok($owner, { type => $STATUS,
                               content => { text => 'hello <fediverse> & all' },
                               permissions => { public => JSON::PP::true } });
my $obj1 = "$API/posts/$p1->{id}";
my ($create) = wait_activity($bob_rx, '/users/bob/inbox',
                             "$obj1#create-1");
ok($create, 'bob got the Create')
    or diag encode_json([map { $_->[1] } got($bob_rx, "/users/bob/inbox")]);
my ($a, $req) = @{ $create || [{}, {}] };
signed_ok($req, 'the Create');
is($a->{type}, 'Create', 'a Create');
is($a->{actor}, $ENTITY, 'by the entity');
is_deeply($a->{to}, [$PUBLIC], 'to the Public');
is_deeply($a->{cc}, ["$API/activitypub/$name/followers"],
          'cc the followers collection');
is($a->{object}{type}, 'Note', 'of a Note');
is($a->{object}{id}, $obj1, 'the post\'s object id');
is($a->{object}{attributedTo}, $ENTITY, 'attributed to the entity');
is($a->{object}{content}, '<p>hello &lt;fediverse&gt; &amp; all</p>',
   'its text as escaped HTML');
is_deeply($a->{object}{to}, [$PUBLIC], 'the object addressed alike');
is($req->{headers}{host}, $bob_rx->url =~ s{^http://}{}r,
   'to the inbox\'s host');

# carol's inbox answers 410: a dead letter, sent once
my ($c410) = wait_activity($carol_rx, '/users/carol/inbox',
                           "$obj1#create-1");
ok($c410, 'carol\'s inbox was offered the Create too');
my $d = wait_state($p1->{id}, $CAROL, 'failed');
is($d->{state}, 'failed', 'a 410: a dead letter');
is($d->{last_status}, 410, 'with its status');
$d = wait_state($p1->{id}, $BOB, 'delivered');
is($d->{state}, 'delivered', 'bob\'s: delivered, listed by its actor id');
is($d->{last_status}, 202, 'with the inbox\'s status');
sleep 2.5;    # two retry delays: a retried 410 would come again
is(scalar(grep { $_->[0]{id} eq "$obj1#create-1" }
           got($carol_rx, '/users/carol/inbox')), 1,
   'the 410 was not retried');

# ---- a private post naming bob: to bob alone, carol gets nothing

my $p2 = $c->post_ok($owner, { type => $STATUS,
                               content => { text => 'just for bob' },
                               permissions => {
                                   public => JSON::PP::false,
                                   entities => { $BOB => JSON::PP::true } } });
my ($priv) = wait_activity($bob_rx, '/users/bob/inbox',
                           "$API/posts/$p2->{id}#create-1");
ok($priv, 'bob got the private post');
($a, $req) = @{ $priv || [{}, {}] };
signed_ok($req, 'the private Create');
is_deeply($a->{to}, [$BOB], 'to bob only');
is_deeply($a->{cc}, [], 'no cc: no Public, no followers');
is_deeply($a->{object}{to}, [$BOB], 'its object alike');

# ---- a new version: Update

$res = $c->request(PUT => "/posts/$p1->{id}", cred => $owner,
                   body => { type => $STATUS,
                             content => { text => 'hello, edited' },
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a new version') or diag $res->{body};
my ($upd) = wait_activity($bob_rx, '/users/bob/inbox', "$obj1#update-2");
ok($upd, 'bob got the Update');
($a, $req) = @{ $upd || [{}, {}] };
signed_ok($req, 'the Update');
is($a->{type}, 'Update', 'an Update');
is($a->{object}{id}, $obj1, 'of the same object');
is($a->{object}{content}, '<p>hello, edited</p>', 'with the new text');

# ---- a delete: Delete of a Tombstone

$res = $c->request(DELETE => "/posts/$p1->{id}", cred => $owner);
is($res->{status}, 200, 'the post deleted') or diag $res->{body};
my ($del) = wait_activity($bob_rx, '/users/bob/inbox', "$obj1#delete");
ok($del, 'bob got the Delete');
($a, $req) = @{ $del || [{}, {}] };
signed_ok($req, 'the Delete');
is($a->{type}, 'Delete', 'a Delete');
is_deeply({ map { $_ => $a->{object}{$_} } qw(id type) },
          { id => $obj1, type => 'Tombstone' }, 'of a Tombstone of the post');
is_deeply($a->{object}{to}, $a->{to}, '... addressed as its Delete');

# ---- a post with no ActivityPub form: nothing sent, the status says so

my $n = () = got($bob_rx, '/users/bob/inbox');
my $p4 = $c->post_ok($owner, {
    type => 'https://tent.io/types/post/album/v0.1.0',
    content => { photos => ['x'] },
    permissions => { public => JSON::PP::true } });
$d = wait_state($p4->{id}, $BOB, 'delivered');
is($d->{state}, 'delivered', 'an album: settled');
is($d->{last_error}, 'no ActivityPub form', 'with no ActivityPub form');
is(scalar(() = got($bob_rx, '/users/bob/inbox')), $n, 'and nothing sent');

# ---- a 503, then 202: retried, delivered

$bob_rx->rules([{ method => 'POST', path => '^/users/bob/inbox$', times => 1,
                  action => { status => 503, body => 'later' } },
                { method => 'POST', path => '^/users/bob/inbox$',
                  action => { status => 202, body => '' } }]);
my $p3 = $c->post_ok($owner, { type => $STATUS,
                               content => { text => 'retried' },
                               permissions => { public => JSON::PP::true } });
my @tries = wait_activity($bob_rx, '/users/bob/inbox',
                          "$API/posts/$p3->{id}#create-1", 2);
is(scalar @tries, 2, 'a 503, then sent again');
signed_ok($tries[1][1], 'the retry') if $tries[1];
$d = wait_state($p3->{id}, $BOB, 'delivered');
is($d->{state}, 'delivered', 'and delivered');
is($d->{attempts}, 2, 'in two attempts');

# ---- tent_status counts the deliveries to ActivityPub inboxes

my $st = Tent::Util::tent_status($c);
cmp_ok($st->{deliveries}{activitypub} // 0, '>=', 5,
       'tent_status: deliveries.activitypub');

# the key is read with each batch of jobs, not once a job
my $log = error_log_text();
like($log, qr/activitypub: the actor's key read with the batch/,
     'the key read with the batch');
unlike($log, qr/activitypub: reading the actor's key/,
       'no read of the key for one job');

$bob_rx->stop;
$carol_rx->stop;

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
