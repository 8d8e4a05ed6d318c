# The delivery engine's list of entities follows the registry without a
# reload (issue 26, part 6; docs/admin.md#the-delivery-engine): a
# disabled or deleted entity left the engine's work at once but kept its
# place (its name, a copy of its server's conf) until the next reload, so
# an operator creating and deleting names (sign-ups and departures) grew
# worker 0's list without end.  Its place is now dropped by the next
# read of the registry that finds no job of it on its way, and the next
# new entity takes it: the list is as long as the entities active at
# once.  An entity enabled again, or one in a place dropped, delivers.

use strict;
use warnings;

use Test::More;
use JSON::PP;
use Tent::Peer;
use Tent::Receiver;
use Tent::Util qw(wait_for);
use Tent::Hosting qw(provisioning_host operator_request delete_all
                     client_of);

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $P = Tent::Peer::free_port();
my $root = Tent::Util::own_root('/tmp/sr-engine-list');
my ($host, $token, $tokfile) = provisioning_host(
    port => $P, root => $root, names => ['*.test'],
    http => "    tent_delivery_interval 200ms;\n");

sub admin {
    operator_request(port => $P, token => $token, body => $_[0]);
}

sub act {
    my ($action, @names) = @_;
    my $ok = 0;
    for my $n (@names) {
        $ok++ if admin({ action => $action,
                         entity => "http://$n.test:$P" })->{status}
                 == ($action eq 'create' ? 201 : 200);
    }
    return $ok;
}

# the engine's last read of the registry: (active, entities, chunks, free)
my @read;
sub read_is {
    my ($active, $entities, $chunks, $what) = @_;
    my $ok = wait_for(sub {
        my @all = $host->error_log_text
            =~ /the registry read: (\d+) active, (\d+) entities in (\d+) chunks(?:, (\d+) places free)?/g;
        @read = @all[-4 .. -1] if @all;
        @read && $read[0] == $active && $read[1] == $entities
            && $read[2] == $chunks }, 20);
    ok($ok, "$what: $active active, $entities entities in $chunks chunks")
        or diag 'last read: ' . join(' ', map { $_ // '-' } @read);
}

my @d = map { "d$_" } 1 .. 40;
is(act('create', @d), 40, '40 entities created');
read_is(40, 40, 2, 'the list');

# 20 deleted, 20 disabled: their places dropped, no reload

is(scalar(grep { delete_all($P, $token, "http://$_.test:$P") } @d[0 .. 19]),
   20, '20 deleted');
is(act('disable', @d[20 .. 39]), 20, '20 disabled');
read_is(0, 0, 2, 'none active');
is($read[3], 40, 'their 40 places free');
like($host->error_log_text,
     qr/"http:\/\/d1\.test:$P" dropped from the list: place \d+ free/,
     'the engine says it dropped them');

# 40 new names take the places dropped: no chunk more

my @e = map { "e$_" } 1 .. 40;
is(act('create', @e), 40, '40 other entities created');
read_is(40, 40, 2, 'the new ones in the places dropped');

# the disabled ones enabled: places again (64 in two chunks; 20 more)

is(act('enable', @d[20 .. 39]), 20, '20 enabled again');
read_is(60, 60, 2, 'enabled again');

# ---- they deliver: one in a dropped place, one enabled again

my $rx = Tent::Receiver->start;
for my $name ('e40', 'd40') {
    my $c = client_of("$name.test", $P);
    my $r = $c->request(POST => '/followers',
                        body => { entity => $rx->url, types => ['all'],
                                  notification_path => "notifications/$name" });
    is($r->{status}, 200, "the remote follows $name") or diag $r->{body};
    my (undef, $cred) = $c->authorized_app('write_posts,read_posts',
                                           post_types => 'all');
    $r = $c->request(POST => '/posts', cred => $cred,
        body => { type => $STATUS, content => { text => "from $name" },
                  permissions => { public => JSON::PP::true } });
    is($r->{status}, 200, "$name posts") or diag $r->{body};
    ok(wait_for(sub { scalar $rx->requests(
                          method => 'POST',
                          path => qr{/notifications/\Q$name\E$}) }, 20),
       "$name: its post reaches its follower");
}

unlike($host->error_log_text,
       qr/\[alert\]|exited on signal|runtime error|is not in the list/,
       'no alert, no crash');
$rx->stop;
$host->stop;
unlink $tokfile;

done_testing();
