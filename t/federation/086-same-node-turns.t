# Same-node delivery: a due batch's local jobs in one synced write (issue
# #13).  The engine starts a due batch's jobs 16 a turn of the event loop
# (ngx_http_tent_delivery_load.c); the same-node batch waits for the rest
# of them (and for the due batches still read), so that one write takes
# them all, not one write each 16.  A (the harness's server) is followed
# by N = 24 entities of the same nginx; one public post is 24 local jobs,
# one due batch (tent_delivery_concurrency 64): one same-node batch of
# more than 16 jobs, every copy written, no HTTP request to any of them.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx wait_for);
use Tent::Client;
use JSON::PP;

our ($N, @PORTS);

BEGIN {
    my $p = $ENV{TEST_NGINX_SERVER_PORT} || $ENV{TEST_NGINX_PORT} || 1984;
    $N = 24;
    @PORTS = map { $p + $_ } 1 .. $N;
}

# the N entities' server blocks
sub entity_blocks {
    return join '', map { <<"END" } @PORTS;
    server {
        listen 127.0.0.1:$_;
        tent_entity http://127.0.0.1:$_;
        access_log logs/access.log port;
        location = /tent/oauth/authorize {
            tent_owner "owner $_";
        }
    }
END
}

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $PA = Tent::Util::port();
my $A = "http://127.0.0.1:$PA";

my $SCOPES = 'read_followers,write_followers,read_followings,'
             . 'write_followings,read_posts,write_posts';
my $a = Tent::Client->new;
my (undef, $acred) = $a->authorized_app($SCOPES, post_types => 'all');

sub dumped { JSON::PP->new->canonical->allow_nonref->encode($_[0]) }

sub status { Tent::Util::tent_status($a)->{deliveries} }

sub error_log { Tent::Util::error_log_lines() }

sub notification_posts {
    open my $fh, '<', Tent::Util::servroot() . '/logs/access.log' or return 0;
    return scalar grep { m{^\d+ "POST /tent/notifications/} } <$fh>;
}

my (%cl, %cred);
for my $p (@PORTS) {
    $cl{$p} = Tent::Client->new(port => $p, host => "127.0.0.1:$p");
    (undef, $cred{$p}) = $cl{$p}->authorized_app($SCOPES,
                                                 post_types => 'all');
    my $res = $cl{$p}->request(POST => '/followings', cred => $cred{$p},
                               body => { entity => $A });
    die "$p following A: $res->{status} $res->{body}"
        unless $res->{status} == 200;
}

my $res = $a->request(GET => '/followers?limit=100', cred => $acred);
is(scalar @{ $res->{json} || [] }, $N, "A has $N followers")
    or diag $res->{body};

ok(wait_for(sub { status()->{in_flight} == 0 }),
   'the follows\' deliveries are over') or diag dumped status();

my $s0 = status();
my $n0 = notification_posts();
my $w0 = () = grep { /jobs settled in one write/ } error_log();

$res = $a->request(POST => '/posts', cred => $acred,
                   body => { type => $STATUS, content => { text => 'all' },
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'A posts') or diag $res->{body};
my $id = $res->{json}{id};

sub copies {
    my $n = 0;
    for my $p (@PORTS) {
        my $r = $cl{$p}->request(GET => '/posts/'
                                 . Tent::Client::uri_escape($A) . "/$id",
                                 cred => $cred{$p});
        $n++ if $r->{status} == 200 && $r->{json}{content}{text} eq 'all';
    }
    return $n;
}

ok(wait_for(sub { status()->{local} - $s0->{local} >= $N }),
   "$N local deliveries") or diag dumped status();
is(copies(), $N, "each of the $N has its copy");
is(notification_posts() - $n0, 0, 'no HTTP request to any of them');

my @writes = grep { /jobs settled in one write/ } error_log();
my @sizes = map { /batch: (\d+) jobs settled/ ? $1 : () }
            @writes[$w0 .. $#writes];
ok((grep { $_ > 16 } @sizes),
   'a same-node write of more than a turn\'s 16 jobs')
    or diag dumped \@sizes;
my $sum = 0;
$sum += $_ for @sizes;
is($sum, $N, "the writes settled the $N jobs") or diag dumped \@sizes;

__DATA__

=== TEST 1: 24 entities of one nginx, one store
--- http_config eval
"    tent_store \$TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 100ms;
    tent_delivery_concurrency 64;
    log_format port '\$server_port \"\$request\"';
" . main::entity_blocks()
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    access_log logs/access.log port;
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
