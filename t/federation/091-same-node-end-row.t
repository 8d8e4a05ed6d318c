# Same-node delivery with no job (tent_same_node_rows index): a fan-out
# step's recipients share one end index row for their status records
# (issue #28, "One end row a step"), not a row each; and a recipient's
# block of the sender, read "none" once, is not read again until a block
# row is written (the blocks' generation).  A (the
# harness's server) is followed by B, C and D, entities of the same nginx;
# the status route still lists each of them delivered, and the prune
# still removes every record, the shared row's others included, once
# tent_delivery_dead_letter_time has passed.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx wait_for);
use Tent::Client;
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
             . 'write_followings,read_posts,write_posts,write_blocks';
my $a = Tent::Client->new;
my (undef, $acred) = $a->authorized_app($SCOPES, post_types => 'all');
my (%cl, %cred);
for my $n (sort keys %port) {
    $cl{$n} = Tent::Client->new(port => $port{$n},
                                host => "127.0.0.1:$port{$n}");
    (undef, $cred{$n}) = $cl{$n}->authorized_app($SCOPES,
                                                 post_types => 'all');
    my $res = $cl{$n}->request(POST => '/followings', cred => $cred{$n},
                               body => { entity => $A });
    die "$n following A: $res->{status} $res->{body}"
        unless $res->{status} == 200;
}

sub error_log { Tent::Util::error_log_lines() }

sub seen {
    my ($n, $id) = @_;
    my $res = $cl{$n}->request(GET => '/posts/' . Tent::Client::uri_escape($A)
                                      . "/$id", cred => $cred{$n});
    return $res->{status} == 200;
}

sub deliveries {
    my ($id) = @_;
    return $a->request(GET => "/posts/$id/deliveries", cred => $acred);
}

my $res = $a->request(POST => '/posts', cred => $acred,
                      body => { type => $STATUS,
                                content => { text => 'to all three' },
                                permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'A posts') or diag $res->{body};
my $p1 = $res->{json}{id};

ok(wait_for(sub { seen('B', $p1) && seen('C', $p1) && seen('D', $p1) }),
   'the post reaches B, C and D');
ok(wait_for(sub { grep { /tent delivery: post "\Q$p1\E": 3 delivered on this node with no job, 0 jobs/ }
                  error_log() }),
   'by the fan-out, with no job');

# one end row for the three records, not one each
ok(scalar(grep { /tent delivery: one end row for 3 same-node records/ }
          error_log()),
   'the step writes one end index row for its three records');

my $dl = deliveries($p1);
my %by = map { $_->{entity} => $_ } @{ $dl->{json}{deliveries} || [] };
for my $n ('B', 'C', 'D') {
    is($by{$url{$n}}{state}, 'delivered', "the status route: $n delivered")
        or diag $dl->{body};
    is($by{$url{$n}}{last_status}, 200, "$n with a 200");
}
is($dl->{json}{counts}{delivered}, 3, 'three delivered');
my $st = Tent::Util::tent_status($a)->{deliveries};
ok($st->{local} >= 3 && $st->{delivered} >= 3,
   "tent_status counts each: $st->{local} local, $st->{delivered} "
   . 'delivered');

# the recipients' blocks of A, read with p1, are known for the next post
# while no block row is written; B's block of A, written since, is seen
$res = $a->request(POST => '/posts', cred => $acred,
                   body => { type => $STATUS, content => { text => 'again' },
                             permissions => { public => JSON::PP::true } });
my $p2 = $res->{json}{id};
ok(wait_for(sub { seen('B', $p2) && seen('C', $p2) && seen('D', $p2) }),
   'a second post reaches B, C and D');
ok(scalar(grep { /tent local: 0 recipients' blocks read, 3 known/ }
          error_log()),
   'with no read of their blocks of A: known from the first');

$res = $cl{B}->request(POST => '/blocks', cred => $cred{B},
                       body => { entity => $A });
is($res->{status}, 201, 'B blocks A') or diag $res->{body};
$res = $a->request(POST => '/posts', cred => $acred,
                   body => { type => $STATUS, content => { text => 'third' },
                             permissions => { public => JSON::PP::true } });
my $p3 = $res->{json}{id};
ok(wait_for(sub { seen('C', $p3) && seen('D', $p3) }),
   'a third post reaches C and D');
ok(wait_for(sub { my $d = deliveries($p3)->{json};
                  $d && $d->{counts} && $d->{counts}{failed} == 1 }, 20),
   'and is refused to B, which blocked A since')
    or diag deliveries($p3)->{body};
ok(!seen('B', $p3), 'B does not have it');

# the prune reads the shared row and removes every record it names
ok(wait_for(sub { my $r = deliveries($p1);
                  $r->{status} == 200
                  && @{ $r->{json}{deliveries} || [1] } == 0
                  && @{ deliveries($p2)->{json}{deliveries} || [1] } == 0 },
            90),
   'every record goes after tent_delivery_dead_letter_time, the shared '
   . 'row\'s others too')
    or diag deliveries($p1)->{body};
is_deeply(deliveries($p1)->{json}{counts},
          { delivered => 0, pending => 0, retrying => 0, failed => 0 },
          'counts: nothing left');
ok(scalar(grep { /ended deliveries' records expired/ } error_log()),
   'the prune ran');
ok(seen('B', $p1) && seen('D', $p1), 'the post is still B\'s and D\'s');

__DATA__

=== TEST 1: four entities of one nginx, one store, index rows
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 100ms;
    tent_delivery_dead_letter_time 12s;
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
