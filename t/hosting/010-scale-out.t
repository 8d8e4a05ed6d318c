# Scale-out (issue 16, part 3; docs/scaling.md): a front nginx routes each
# entity's host name to the node that owns it (upstream "hash $host
# consistent"), two module nodes keep their entities in stores of their
# own.  Entities on different nodes follow each other through the front
# and get each other's posts; a node stopped for a while delays the
# deliveries to it (the other node's queue retries) and loses none; a
# third node changes the owner of only the names the hash gives it.
# Host names resolve to 127.0.0.1 inside a network namespace with an
# /etc/hosts of the suite's own (Tent::Netns): nothing leaves loopback.

use strict;
use warnings;

my @NAMES;
BEGIN { @NAMES = map { "e$_.test" } 1 .. 16 }
use Tent::Netns qw(reexec_in_netns);
BEGIN { reexec_in_netns(hosts => \@NAMES) }

use Test::More;
use JSON::PP;
use IO::Socket::IP;
use Time::HiRes qw(sleep);
use Tent::Peer;
use Tent::Client;
use Tent::Util qw(http_request wait_for);

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';

# the front's port first: every entity's URL carries it
# (one no peer of this suite is given: ASan CI's run had node1 on it)
my $FP = Tent::Peer::free_port();

# every node has a server block for every name (the same configuration
# on every node: the front decides which one serves it); a fixed entity
# per block, since only fixed entities have the delivery engine yet
# (docs/scaling.md)
sub node {
    my ($name) = @_;
    my $blocks = join '', map { <<"CONF" } @NAMES;
    server {
        listen 127.0.0.1:\$PORT;
        server_name $_;
        tent_entity http://$_:$FP;
        add_header X-Tent-Node $name always;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
    }
CONF
    return Tent::Peer->start(
        http_config => <<"CONF" . $blocks,
    tent_store \$SERVROOT/store;
    tent_outbound_allow 127.0.0.0/8;
    tent_delivery_interval 200ms;
    tent_delivery_retry 1s 2s;
    tent_delivery_breaker 3 1s;
CONF
        server_config => <<"CONF");
        location = /status {
            tent_status;
        }
CONF
}

sub front_http {
    my (@nodes) = @_;
    my $servers = join '', map { "        server 127.0.0.1:" . $_->port
                                 . " max_fails=0;\n" } @nodes;
    return <<"CONF";
    upstream tent_nodes {
        hash \$host consistent;
$servers    }
CONF
}

my $FRONT_SERVER = <<'CONF';
        location / {
            proxy_pass http://tent_nodes;
            # an entity's rows are on its node only: never another node
            proxy_next_upstream off;
            proxy_http_version 1.1;
            proxy_set_header Host $http_host;
            proxy_set_header Connection "";
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        }
CONF

my $n1 = node('node1');
my $n2 = node('node2');
my $front = Tent::Peer->start(port => $FP, http_config => front_http($n1, $n2),
                              server_config => $FRONT_SERVER);

# who answers a name through the front
sub owner_of {
    my ($name) = @_;
    my $res = http_request(method => 'HEAD', path => '/',
                           headers => { Host => "$name:$FP" }, port => $FP);
    return $res->{headers}{'x-tent-node'} // "none ($res->{status})";
}

my %owner = map { $_ => owner_of($_) } @NAMES;
my @on1 = grep { $owner{$_} eq 'node1' } @NAMES;
my @on2 = grep { $owner{$_} eq 'node2' } @NAMES;
is(@on1 + @on2, scalar @NAMES, 'every name is served by node1 or node2')
    or diag explain \%owner;
ok(@on1 && @on2, 'the hash spreads the names: ' . @on1 . ' on node1, '
                 . @on2 . ' on node2');

# the same name always reaches the same node
is(owner_of($on1[0]), 'node1', 'a name goes to the same node again');

# the Link header names the entity with the front's port
my $res = http_request(method => 'HEAD', path => '/',
                       headers => { Host => "$on2[0]:$FP" }, port => $FP);
like($res->{headers}{link} // '',
     qr{http://\Q$on2[0]:$FP\E/tent/profile},
     'discovery through the front: the entity is the name and the front');

sub client_of { Tent::Client->new(host => "$_[0]:$FP", port => $FP) }

my ($x, $y) = ($on1[0], $on2[0]);
my $cx = client_of($x);
my $cy = client_of($y);
my (undef, $xo) = $cx->authorized_app('write_posts,read_posts,read_followers',
                                     post_types => 'all');
my (undef, $yo) = $cy->authorized_app('write_followings,read_followings,'
                                      . 'read_posts', post_types => 'all');

# ---- y (node2) follows x (node1): discovery, follow and challenge all
# go through the front, each to the node of its name

$res = $cy->request(POST => '/followings', cred => $yo,
                    body => { entity => "http://$x:$FP" });
is($res->{status}, 200, "$y (node2) follows $x (node1) through the front")
    or diag $res->{body};

$res = $cx->request(GET => '/followers', cred => $xo);
is($res->{status}, 200, "$x lists its followers");
is_deeply([map { $_->{entity} } @{ $res->{json} || [] }],
          ["http://$y:$FP"], "$x has $y as its follower");

# the other way too: x follows a second entity of node2 (z)
my $z = $on2[1] // $on2[0];
my $cz = client_of($z);
my (undef, $zo) = $cz->authorized_app('write_posts', post_types => 'all');
my (undef, $xf) = $cx->authorized_app('write_followings');
$res = $cx->request(POST => '/followings', cred => $xf,
                    body => { entity => "http://$z:$FP" });
is($res->{status}, 200, "$x (node1) follows $z (node2)") or diag $res->{body};

sub post { $_[0]->post_status($_[1], $_[2]) }

# the post ids of $entity that $c's entity has received
sub received {
    my ($c, $cred, $entity) = @_;
    (my $q = $entity) =~ s/([^A-Za-z0-9._~-])/sprintf('%%%02X', ord $1)/ge;
    my $r = $c->request(GET => "/posts?limit=200&entity=$q", cred => $cred);
    return {} unless $r->{status} == 200;
    return { map { $_->{id} => 1 } grep { $_->{entity} eq $entity }
             @{ $r->{json} || [] } };
}

my $p1 = post($cx, $xo, 'from node1');
ok(wait_for(sub { received($cy, $yo, "http://$x:$FP")->{$p1} }, 20),
   "$y on node2 got the post of $x from node1");

my (undef, $xr) = $cx->authorized_app('read_posts', post_types => 'all');
my $pz = post($cz, $zo, 'from node2');
ok(wait_for(sub { received($cx, $xr, "http://$z:$FP")->{$pz} }, 20),
   "$x on node1 got the post of $z from node2");

# ---- node2 down for a while: node1's deliveries to y fail and wait,
# nothing is lost when it comes back

sub status_of {
    my ($node) = @_;
    my $r = http_request(method => 'GET', path => '/status',
                         port => $node->port);
    return eval { decode_json($r->{body}) } || {};
}

$n2->stop;
my $s0 = status_of($n1);
my @down = map { post($cx, $xo, "while node2 is down $_") } 1 .. 3;
ok(wait_for(sub {
       (status_of($n1)->{deliveries}{retried} // 0)
       > ($s0->{deliveries}{retried} // 0) }, 20),
   'node1 retries the deliveries to the stopped node');
my $mine = received($cx, $xo, "http://$x:$FP");
is(scalar(grep { $mine->{$_} } @down), 3, "$x still serves its posts meanwhile")
    or diag explain [$mine, \@down];

$n2->restart;
ok(wait_for(sub { my $r = received($cy, $yo, "http://$x:$FP");
                  !grep { !$r->{$_} } @down }, 30),
   'node2 back: all 3 posts made while it was down arrive');
is((status_of($n1)->{deliveries}{dead} // 0) - ($s0->{deliveries}{dead} // 0),
   0, 'none of them was given up');

# ---- a third node: only the names the hash now gives it move

my $n3 = node('node3');
ok($front->reload(http_config => front_http($n1, $n2, $n3)),
   'the front reloads with a third node');
my %now = map { $_ => owner_of($_) } @NAMES;
my @moved = grep { $now{$_} ne $owner{$_} } @NAMES;
is(scalar(grep { $now{$_} ne 'node3' } @moved), 0,
   'no name moved between node1 and node2 (' . join(' ', map {
       "$_:$owner{$_}->$now{$_}" } @moved) . ')');
ok(@moved >= 1 && @moved < @NAMES,
   scalar(@moved) . ' of ' . @NAMES . ' names moved, all to node3');

# a moved name starts empty on its new node: its data is moved by the
# operator (docs/scaling.md: export from the old node, import on the new)
if (my ($m) = grep { $_ eq $x || $_ eq $y } @moved) {
    note("$m moved: its relationships stay on its old node until moved");
}

for my $n ($front, $n1, $n2, $n3) {
    unlike($n->error_log_text, qr/\[alert\]|\[emerg\]|exited on signal/,
           'no alert or crash in ' . $n->servroot);
    $n->stop;
}

done_testing();
