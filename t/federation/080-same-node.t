# Same-node delivery (issue #13 part 3): entities of one nginx sharing its
# tent_store get each other's posts written straight into their rows by
# the store owner, with the rules of POST /notifications/:id and no HTTP
# request (the access log shows none).  A is the harness's server, B and
# C two more server blocks of the same nginx on their own ports.  The
# follow handshake stays HTTP.  The attacker: a follower of C whose
# profile lists B's server and whose notification path is B's following
# of A.  B answers no challenge for a confirmed following, so C refuses
# the follow (403); C's posts do not land in B, locally or over HTTP
# (were such a row there, the local path checks B's credential row as
# the MAC check would: 401).  D, a fourth server block whose
# tent_entity is http://$host:$server_port, is not matched: it is told
# over HTTP.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx wait_for);
use Tent::Client;
use Tent::Receiver;
use JSON::PP;

BEGIN {
    my $p = $ENV{TEST_NGINX_SERVER_PORT} || $ENV{TEST_NGINX_PORT} || 1984;
    $ENV{TEST_NGINX_B_PORT} = $p + 1;
    $ENV{TEST_NGINX_C_PORT} = $p + 2;
    $ENV{TEST_NGINX_D_PORT} = $p + 4;
}

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my ($PA, $PB, $PC) = (Tent::Util::port(), $ENV{TEST_NGINX_B_PORT},
                      $ENV{TEST_NGINX_C_PORT});
my ($A, $B, $C) = map { "http://127.0.0.1:$_" } $PA, $PB, $PC;

my $a = Tent::Client->new;
my $b = Tent::Client->new(port => $PB, host => "127.0.0.1:$PB");
my $cc = Tent::Client->new(port => $PC, host => "127.0.0.1:$PC");

my $SCOPES = 'read_followers,write_followers,read_followings,'
             . 'write_followings,read_posts,write_posts';
my (undef, $acred) = $a->authorized_app($SCOPES, post_types => 'all');
my (undef, $bcred) = $b->authorized_app($SCOPES, post_types => 'all');
my (undef, $ccred) = $cc->authorized_app($SCOPES, post_types => 'all');

sub status { Tent::Util::tent_status($a)->{deliveries} }

# the POSTs to the notification paths the access log has seen
sub notification_posts {
    open my $fh, '<', Tent::Util::servroot() . '/logs/access.log' or return 0;
    return scalar grep { m{"POST /tent/notifications/} } <$fh>;
}

sub follow {
    my ($who, $cred, $entity) = @_;
    my $res = $who->request(POST => '/followings', cred => $cred,
                            body => { entity => $entity });
    die "following $entity: $res->{status} $res->{body}"
        unless $res->{status} == 200;
    return $res->{json};
}

sub post { my ($who, $cred, %b) = @_; $who->post_ok($cred, \%b)->{id} }

# the copy of A's post "id" in the feed of "who"
sub copy {
    my ($who, $cred, $entity, $id) = @_;
    my $res = $who->request(GET => '/posts/' . Tent::Client::uri_escape($entity)
                                   . "/$id", cred => $cred);
    return $res->{status} == 200 ? $res->{json} : undef;
}

# --- the follows: over HTTP ----------------------------------------------

my $b_follows_a = follow($b, $bcred, $A);
follow($cc, $ccred, $A);
follow($a, $acred, $B);

my $res = $a->request(GET => '/followers', cred => $acred);
is(scalar @{ $res->{json} || [] }, 2, 'A has two followers, B and C')
    or diag $res->{body};
my $challenges = do {
    open my $fh, '<', Tent::Util::servroot() . '/logs/access.log' or die;
    scalar grep { m{"GET /tent/notifications/\w+\?challenge=} } <$fh>;
};
ok($challenges >= 3, 'the follow handshakes went over HTTP (challenges)');

my $s0 = status();
my $n0 = notification_posts();

# --- a public post reaches both, with no HTTP request --------------------

my $p1 = post($a, $acred, type => $STATUS, content => { text => 'hello' },
              permissions => { public => JSON::PP::true });

ok(wait_for(sub { copy($b, $bcred, $A, $p1) && copy($cc, $ccred, $A, $p1) }),
   'a public post of A reaches B and C');
my $copy = copy($b, $bcred, $A, $p1);
is($copy->{entity}, $A, 'under A\'s entity');
is($copy->{content}{text}, 'hello', 'as A wrote it');
ok($copy->{received_at}, 'received, as a notification is');

is(notification_posts() - $n0, 0, 'no POST to a notification path');
ok(wait_for(sub { status()->{local} - $s0->{local} >= 2 }),
   'deliveries.local counts both');
# (the follows' own relationship posts may still be on their way: all
# of them local too)
my $s1 = status();
is($s1->{local} - $s0->{local}, $s1->{delivered} - $s0->{delivered},
   'every delivery of this nginx was a local one');

# the author sees them as any delivery (GET /posts/:id/deliveries)
sub delivery_of {
    my ($who, $cred, $id, $entity) = @_;
    my $res = $who->request(GET => "/posts/$id/deliveries", cred => $cred);
    return {} unless $res->{status} == 200;
    my ($d) = grep { $_->{entity} eq $entity }
              @{ $res->{json}{deliveries} || [] };
    return $d || {};
}
ok(wait_for(sub { (delivery_of($a, $acred, $p1, $B)->{state} // '')
                  eq 'delivered' }), 'A\'s record: delivered to B');
is(delivery_of($a, $acred, $p1, $B)->{last_status}, 200,
   'with the status HTTP would have had, 200');
is(delivery_of($a, $acred, $p1, $C)->{state}, 'delivered', 'and to C');

# a duplicate changes nothing: the feed has one copy
$res = $b->request(GET => '/posts?entity=' . Tent::Client::uri_escape($A),
                   cred => $bcred);
is(scalar(grep { $_->{id} eq $p1 } @{ $res->{json} || [] }), 1,
   'one copy in B\'s feed');

# and the other way
my $p_b = post($b, $bcred, type => $STATUS, content => { text => 'from B' },
               permissions => { public => JSON::PP::true });
ok(wait_for(sub { copy($a, $acred, $B, $p_b) }),
   'B\'s post reaches A, its follower, the same way');

# --- a private post reaches only its addressee ---------------------------

my $p2 = post($a, $acred, type => $STATUS, content => { text => 'to B' },
              permissions => { entities => { $B => JSON::PP::true } });
my $p3 = post($a, $acred, type => $STATUS, content => { text => 'marker' },
              permissions => { public => JSON::PP::true });

ok(wait_for(sub { copy($b, $bcred, $A, $p2) }), 'the private post reaches B');
ok(wait_for(sub { copy($cc, $ccred, $A, $p3) }), 'a later public one C');
ok(!copy($cc, $ccred, $A, $p2), 'C never gets the private post');

# --- a delete goes too ---------------------------------------------------

$res = $a->request(DELETE => "/posts/$p1", cred => $acred);
is($res->{status}, 200, 'A deletes its public post') or diag $res->{body};
ok(wait_for(sub { !copy($b, $bcred, $A, $p1) && !copy($cc, $ccred, $A, $p1) }),
   'B\'s and C\'s copies go');
is(notification_posts() - $n0, 0, 'still no POST to a notification path');

# --- the attacker: C cannot deliver into B without a relationship --------

my $fid = $b_follows_a->{id};
my $XP = $PA + 3;
my $x = Tent::Receiver->start(port => $XP,
    profile => { 'https://tent.io/types/info/core/v0.1.0' => {
                     entity => "http://127.0.0.1:$XP", licenses => [],
                     servers => ["$B/tent"] } });

$res = $cc->request(POST => '/followers',
                    body => { entity => $x->url, types => ['all'],
                              notification_path => "notifications/$fid" });
is($res->{status}, 403,
   'a follower of C pointing at B\'s following of A: refused (B answers '
   . 'no challenge for a confirmed following)') or diag $res->{body};

my $s2 = status();
my $p4 = post($cc, $ccred, type => $STATUS, content => { text => 'injected' },
              permissions => { public => JSON::PP::true });

ok($p4, 'C posts');
sleep 1;
ok(!copy($b, $bcred, $C, $p4), 'B does not have C\'s post');
is(delivery_of($cc, $ccred, $p4, $x->url)->{state}, undef,
   'C has no delivery to the attacker at all');
$res = $b->request(GET => '/posts?entity=' . Tent::Client::uri_escape($C),
                   cred => $bcred);
is(scalar @{ $res->{json} || [] }, 0, 'nothing of C in B\'s feed');
is(status()->{local} - $s2->{local}, 0, 'no local delivery counted');
is(notification_posts() - $n0, 0, 'and no HTTP request either');

# --- an entity with variables ($host): told over HTTP --------------------

my $PD = $ENV{TEST_NGINX_D_PORT};
my $D = "http://127.0.0.1:$PD";
my $d = Tent::Client->new(port => $PD, host => "127.0.0.1:$PD");
my (undef, $dcred) = $d->authorized_app($SCOPES, post_types => 'all');
my $d_follows_a = follow($d, $dcred, $A);
is($d_follows_a->{entity}, $A, 'D, a $host entity, follows A');

my $s3 = status();
my $n3 = notification_posts();
my $p5 = post($a, $acred, type => $STATUS, content => { text => 'to all' },
              permissions => { public => JSON::PP::true });
ok(wait_for(sub { copy($d, $dcred, $A, $p5) && copy($b, $bcred, $A, $p5)
                  && copy($cc, $ccred, $A, $p5) }),
   'A\'s next post reaches B, C and D');
is(notification_posts() - $n3, 1, 'one POST to a notification path: D\'s');
ok(wait_for(sub { status()->{local} - $s3->{local} >= 2 }),
   'B and C got theirs locally');

__DATA__

=== TEST 1: three entities of one nginx, one store
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 100ms;
    tent_delivery_retry 1s 2s;
    tent_delivery_attempts 2;

    server {
        listen 127.0.0.1:$TEST_NGINX_B_PORT;
        tent_entity http://127.0.0.1:$TEST_NGINX_B_PORT;
        location = /tent/oauth/authorize {
            tent_owner "B's owner";
        }
    }

    server {
        listen 127.0.0.1:$TEST_NGINX_D_PORT;
        tent_entity http://$host:$server_port;
        tent_provisioning off;
        location = /tent/oauth/authorize {
            tent_owner "D's owner";
        }
    }

    server {
        listen 127.0.0.1:$TEST_NGINX_C_PORT;
        tent_entity http://127.0.0.1:$TEST_NGINX_C_PORT;
        location = /tent/oauth/authorize {
            tent_owner "C's owner";
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
