# The due index and the outbox marks (issue #13): a pass of the delivery
# engine sends store operations only for the entities with something to
# do.  A, the harness's server, has K followers among the entities of
# the same nginx (same-node delivery, server blocks on ports of their
# own) and IDLE entities that nobody follows and that never post (server
# blocks by name on one port).  Read from the debug log: the jobs of
# every follower are all delivered, and an idle entity's outbox and due
# jobs are scanned only in the passes that look at every entity (the
# first, and the prune once a minute: "due scans from the start again"),
# never in the passes of the fan-out.  Then a kill -9 of every nginx
# process in the middle of a second fan-out loses nothing: after the
# restart every follower has every post.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx wait_for master_pid
                  error_log_text);
use Tent::Client;
use JSON::PP;
use Time::HiRes qw(sleep);
use Compress::Raw::Zlib ();

my ($K, $IDLE);

BEGIN {
    $K = 6;
    $IDLE = 40;
    my $p = $ENV{TEST_NGINX_SERVER_PORT} || $ENV{TEST_NGINX_PORT} || 1984;
    $ENV{TEST_NGINX_IDLE_PORT} = $p + 1;
    $ENV{"TEST_NGINX_F${_}_PORT"} = $p + 1 + $_ for 1 .. $K;
}

master_on();
workers(2);
no_shuffle();

# the follower and idle server blocks, into the block's http_config
add_block_preprocessor(sub {
    my $block = shift;
    my $conf = $block->http_config // '';
    for my $i (1 .. $K) {
        my $port = $ENV{"TEST_NGINX_F${i}_PORT"};
        $conf .= <<"CONF";
    server {
        listen 127.0.0.1:$port;
        tent_entity http://127.0.0.1:$port;
        location = /tent/oauth/authorize {
            tent_owner "owner of F${i}";
        }
    }
CONF
    }
    for my $i (1 .. $IDLE) {
        my $port = $ENV{TEST_NGINX_IDLE_PORT};
        $conf .= <<"CONF";
    server {
        listen 127.0.0.1:$port;
        server_name idle$i.test;
        tent_entity http://idle$i.test:$port;
    }
CONF
    }
    $block->set_value('http_config', $conf);
});

run_tests();

start_last_nginx();
my $stopped;
END { stop_last_nginx() unless $stopped }

my $PA = Tent::Util::port();
my $A = "http://127.0.0.1:$PA";
my @F = map { $ENV{"TEST_NGINX_F${_}_PORT"} } 1 .. $K;

my $SCOPES = 'read_followers,write_followers,read_followings,'
             . 'write_followings,read_posts,write_posts';
my $a = Tent::Client->new;
my (undef, $acred) = $a->authorized_app($SCOPES, post_types => 'all');
my (@fc, @fcred);
for my $p (@F) {
    my $c = Tent::Client->new(port => $p, host => "127.0.0.1:$p");
    my (undef, $cred) = $c->authorized_app($SCOPES, post_types => 'all');
    push @fc, $c;
    push @fcred, $cred;
}

sub status { Tent::Util::tent_status($a)->{deliveries} }

sub post { $a->post_status($acred, $_[0]) }

# the followers that have A's post "id"
sub copies {
    my ($id) = @_;
    my $n = 0;
    for my $i (0 .. $#fc) {
        my $res = $fc[$i]->request(GET => '/posts/'
                                          . Tent::Client::uri_escape($A)
                                          . "/$id", cred => $fcred[$i]);
        $n++ if $res->{status} == 200;
    }
    return $n;
}

for my $i (0 .. $#fc) {
    my $res = $fc[$i]->request(POST => '/followings', cred => $fcred[$i],
                               body => { entity => $A });
    die "F$i following A: $res->{status} $res->{body}"
        unless $res->{status} == 200;
}

my $res = $a->request(GET => '/followers', cred => $acred);
is(scalar @{ $res->{json} || [] }, $K, "A has $K followers on this node");

# --- a fan-out: every follower gets every post -----------------------------

my $P = 5;
my $s0 = status();
my @ids = map { post("due index $_") } 1 .. $P;

ok(wait_for(sub { status()->{local} - $s0->{local} >= $K * $P }, 60),
   "the $P posts reached the $K followers (deliveries.local)");
is((grep { copies($_) == $K } @ids), $P, 'every follower has every post');

# --- the passes, from the debug log ------------------------------------------

my $log = error_log_text();
my $resets = () = $log =~ /tent delivery: due scans from the start again/g;
my $a_scans = () = $log =~ /tent delivery: "\Q$A\E": due scan from/g;
ok($resets >= 1, "passes that look at every entity: $resets");
ok($a_scans > $resets, "A's due jobs scanned in the other passes too "
                       . "($a_scans scans)");

# an entity's outbox mark is a bit by the CRC32 of its name (of 4,096):
# an idle entity whose bit is A's or a follower's is looked at with it
# (ports are random, so this happens now and then), and a write of rows
# of more than 8 entities marks every outbox.  The others are counted.
my %busy = map { (Compress::Raw::Zlib::crc32($_) % 4096) => 1 }
           $A, map { "http://127.0.0.1:$_" } @F;
my $every = () = $log =~ /tent store: outbox rows of many entities/g;

my ($idle_due, $idle_outbox, $worst, $shared) = (0, 0, 0, 0);
for my $i (1 .. $IDLE) {
    my $e = "http://idle$i.test:$ENV{TEST_NGINX_IDLE_PORT}";
    my $d = () = $log =~ /tent delivery: "\Q$e\E": due scan from/g;
    my $o = () = $log =~ /tent delivery: "\Q$e\E": outbox empty/g;
    $idle_due += $d;
    $worst = $d if $d > $worst;
    if ($busy{ Compress::Raw::Zlib::crc32($e) % 4096 }) {
        $shared++;
        next;
    }
    $idle_outbox += $o;
}
ok($idle_due >= $IDLE, "the idle entities' jobs were scanned at first "
                       . "($idle_due scans)");
ok($worst <= $resets, "an idle entity's jobs are scanned only in the "
                      . "passes that look at every entity (at most $worst "
                      . "times, for $resets such passes)");
ok($idle_outbox <= ($resets + $every) * ($IDLE - $shared),
   "and its outbox likewise ($idle_outbox scans for "
   . ($IDLE - $shared) . " entities, $resets + $every passes that mark "
   . "every outbox, $shared sharing a busy mark)");
unlike($log, qr/\[alert\]|exited on signal/, 'no alert, no crash');

# --- kill -9 in the middle of a second fan-out ------------------------------

my $s1 = status();
my @more = map { post("killed $_") } 1 .. 2 * $P;
my $m = master_pid();
my @pids = ($m, map { s/\s+//gr } `ps -o pid= --ppid $m`);
wait_for(sub { status()->{local} - $s1->{local} >= 1 }, 10);
kill 'KILL', grep { /^\d+$/ } @pids;
wait_for(sub { !kill 0, $m }, 10);
sleep 0.5;
unlink Tent::Util::servroot() . '/logs/nginx.pid';
start_last_nginx();

ok(wait_for(sub { (grep { copies($_) == $K } @more) == 2 * $P }, 90),
   'after a kill -9 of every process mid-way and a restart, every '
   . 'follower has every post');

stop_last_nginx();
$stopped = 1;

__DATA__

=== TEST 1: one entity followed on this node, many idle entities
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_delivery_interval 100ms;
    tent_delivery_retry 1s 2s;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "A's owner";
    }
    location = /status {
        tent_status;
    }
--- request
GET /tent/followers
--- error_code: 200
--- response_body: []
