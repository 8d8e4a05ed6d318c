# Same-node delivery by origin (issue #13): the store owner finds a job's
# fixed entity in an index of the fixed entities by the origin of each
# server they are matched by, not by trying each.  Five entities of one
# nginx share the origin of F, a front server block that is an entity
# itself (no tent_servers: its origin and /tent) and hands /b/, /c/,
# /e/ and /v/ to the server blocks of B, C, E and V, whose tent_servers
# are under F (path-based entities).  Each gets A's posts as a local
# copy of its own, none over HTTP (the access log shows no POST to their
# notification paths), but V, whose tent_servers has a variable
# ($host): never matched, so told over HTTP through F.  E lists two
# origins, F's and G's (a second front): A's follower row of E has
# F's first; after a reload where E lists G's first, the row's URL is
# matched by E's second server, still locally.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx wait_for reload_nginx);
use Tent::Client;
use JSON::PP;

BEGIN {
    my $p = $ENV{TEST_NGINX_SERVER_PORT} || $ENV{TEST_NGINX_PORT} || 1984;
    $ENV{TEST_NGINX_F_PORT} = $p + 1;
    $ENV{TEST_NGINX_B_PORT} = $p + 2;
    $ENV{TEST_NGINX_C_PORT} = $p + 3;
    $ENV{TEST_NGINX_E_PORT} = $p + 4;
    $ENV{TEST_NGINX_V_PORT} = $p + 5;
    $ENV{TEST_NGINX_G_PORT} = $p + 6;
}

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $PA = Tent::Util::port();
my %port = map { $_ => $ENV{"TEST_NGINX_${_}_PORT"} } qw(F B C E V G);
my $A = "http://127.0.0.1:$PA";
my $F = "http://127.0.0.1:$port{F}";
my $G = "http://127.0.0.1:$port{G}";

my $SCOPES = 'read_followers,write_followers,read_followings,'
             . 'write_followings,read_posts,write_posts';

my $a = Tent::Client->new;
my (undef, $acred) = $a->authorized_app($SCOPES, post_types => 'all');

# each follower: its client (on its own port, under its API root), its
# credential, its entity, its notification path's prefix in the log
my %who;
for my $n (qw(F B C E V)) {
    my $root = $n eq 'F' ? '/tent' : '/' . lc($n) . '/tent';
    my $c = Tent::Client->new(port => $port{$n}, host => "127.0.0.1:$port{$n}",
                              root => $root);
    my (undef, $cred) = $c->authorized_app($SCOPES, post_types => 'all');
    $who{$n} = { c => $c, cred => $cred, root => $root,
                 entity => "http://127.0.0.1:$port{$n}" };
}

# the POSTs to a notification path under "root" the access log has seen
# (F logs the ones it hands on too)
sub notification_posts {
    my ($root) = @_;
    open my $fh, '<', Tent::Util::servroot() . '/logs/access.log' or return 0;
    return scalar grep { m{"POST \Q$root\E/notifications/} } <$fh>;
}

sub status { Tent::Util::tent_status($a)->{deliveries} }

sub post { $a->post_status($acred, $_[0]) }

# the copy of A's post "id" in the feed of follower "n"
sub copy {
    my ($n, $id) = @_;
    my $res = $who{$n}{c}->request(GET => '/posts/'
                                          . Tent::Client::uri_escape($A)
                                          . "/$id", cred => $who{$n}{cred});
    return $res->{status} == 200 ? $res->{json} : undef;
}

# --- the follows: over HTTP, through F ------------------------------------

my $res = $who{B}{c}->request(GET => '/profile');
is_deeply($res->{json}{'https://tent.io/types/info/core/v0.1.0'}{servers},
          ["$F/b/tent"], 'B\'s server is under F\'s origin')
    or diag $res->{body};

for my $n (qw(F B C E V)) {
    $res = $who{$n}{c}->request(POST => '/followings', cred => $who{$n}{cred},
                                body => { entity => $A });
    is($res->{status}, 200, "$n follows A") or diag $res->{body};
}

$res = $a->request(GET => '/followers', cred => $acred);
is(scalar @{ $res->{json} || [] }, 5, 'A has five followers')
    or diag $res->{body};

my %n0 = map { $_ => notification_posts($who{$_}{root}) } keys %who;
my $s0 = status();

# --- one post: four local copies, V's over HTTP ---------------------------

my $p1 = post('to all');

for my $n (qw(F B C E V)) {
    ok(wait_for(sub { copy($n, $p1) }), "$n gets A's post");
    is(copy($n, $p1)->{content}{text}, 'to all', "$n\'s copy, as A wrote it");
}

for my $n (qw(F B C E)) {
    is(notification_posts($who{$n}{root}) - $n0{$n}, 0,
       "no POST to $n\'s notification path: a local copy");
}
ok(notification_posts('/v/tent') - $n0{V} > 0,
   'V, with a variable in tent_servers, is told over HTTP');
ok(wait_for(sub { status()->{local} - $s0->{local} >= 4 }),
   'deliveries.local counts the four');

# --- E lists G's origin first: the row's URL is its second server ---------

my $conf = Tent::Util::servroot() . '/conf/nginx.conf';
open my $in, '<', $conf or die "$conf: $!";
my $text = do { local $/; <$in> };
close $in;
my $n = $text =~ s{tent_servers \Q$F\E/e/tent \Q$G\E/e/tent;}
                  {tent_servers $G/e/tent $F/e/tent;};
is($n, 1, 'E\'s servers swapped in the configuration');
open my $out, '>', $conf or die "$conf: $!";
print $out $text;
close $out;

reload_nginx();

ok(wait_for(sub {
       my $r = $who{E}{c}->request(GET => '/profile');
       my $core = $r->{json}
                  && $r->{json}{'https://tent.io/types/info/core/v0.1.0'};
       $core && $core->{servers}[0] eq "$G/e/tent";
   }), 'after a reload E\'s profile lists G\'s server first');

my %n1 = map { $_ => notification_posts($who{$_}{root}) } keys %who;
my $s1 = status();
my $p2 = post('after the reload');

for my $n (qw(F B C E)) {
    ok(wait_for(sub { copy($n, $p2) }), "$n gets the next post");
    is(notification_posts($who{$n}{root}) - $n1{$n}, 0,
       "and no POST to $n\'s notification path");
}
ok(wait_for(sub { copy('V', $p2) }), 'V too, over HTTP');
ok(wait_for(sub { status()->{local} - $s1->{local} >= 4 }),
   'deliveries.local counts four again');

__DATA__

=== TEST 1: five entities under one origin, one of them with a variable
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
        tent_api_root /b/tent;
        tent_servers http://127.0.0.1:$TEST_NGINX_F_PORT/b/tent;
        location = /b/tent/oauth/authorize {
            tent_owner "B's owner";
        }
    }

    server {
        listen 127.0.0.1:$TEST_NGINX_V_PORT;
        tent_entity http://127.0.0.1:$TEST_NGINX_V_PORT;
        tent_api_root /v/tent;
        tent_servers http://127.0.0.1:$TEST_NGINX_F_PORT/v/tent
                     http://$host:$server_port/v/tent;
        location = /v/tent/oauth/authorize {
            tent_owner "V's owner";
        }
    }

    server {
        listen 127.0.0.1:$TEST_NGINX_C_PORT;
        tent_entity http://127.0.0.1:$TEST_NGINX_C_PORT;
        tent_api_root /c/tent;
        tent_servers http://127.0.0.1:$TEST_NGINX_F_PORT/c/tent;
        location = /c/tent/oauth/authorize {
            tent_owner "C's owner";
        }
    }

    server {
        listen 127.0.0.1:$TEST_NGINX_E_PORT;
        tent_entity http://127.0.0.1:$TEST_NGINX_E_PORT;
        tent_api_root /e/tent;
        tent_servers http://127.0.0.1:$TEST_NGINX_F_PORT/e/tent http://127.0.0.1:$TEST_NGINX_G_PORT/e/tent;
        location = /e/tent/oauth/authorize {
            tent_owner "E's owner";
        }
    }

    server {
        listen 127.0.0.1:$TEST_NGINX_F_PORT;
        tent_entity http://127.0.0.1:$TEST_NGINX_F_PORT;
        location = /tent/oauth/authorize {
            tent_owner "F's owner";
        }
        location /b/ {
            proxy_pass http://127.0.0.1:$TEST_NGINX_B_PORT;
            proxy_set_header Host $http_host;
        }
        location /c/ {
            proxy_pass http://127.0.0.1:$TEST_NGINX_C_PORT;
            proxy_set_header Host $http_host;
        }
        location /e/ {
            proxy_pass http://127.0.0.1:$TEST_NGINX_E_PORT;
            proxy_set_header Host $http_host;
        }
        location /v/ {
            proxy_pass http://127.0.0.1:$TEST_NGINX_V_PORT;
            proxy_set_header Host $http_host;
        }
    }

    server {
        listen 127.0.0.1:$TEST_NGINX_G_PORT;
        location /e/ {
            proxy_pass http://127.0.0.1:$TEST_NGINX_E_PORT;
            proxy_set_header Host $http_host;
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
