# Upgrades while serving (docs/operations.md#upgrades): a new module build
# installed under a new file name and nginx reloaded (HUP) with load_module
# pointing at it, then nginx itself replaced by a binary upgrade (USR2,
# WINCH, QUIT).  Clients post all along: every request is answered (a 503
# while the store changes hands is retried, as a careful client does, with
# the same Idempotency-Key), every acknowledged post is there once, the
# posts from before are there, and the new workers run the new file.

use strict;
use warnings;
use Test::More;
use Tent::Peer;
use Tent::Client;
use Tent::Util qw(parallel_clients);
use File::Temp qw(tempdir);
use File::Copy qw(copy);
use File::Spec;
use POSIX ();
use Time::HiRes qw(sleep time);

my $BASE = $ENV{TEST_NGINX_PORT} || $ENV{TEST_NGINX_SERVER_PORT} || 1984;
my $TYPE = 'https://example.org/types/upgrade/v1.0.0';
# the peers' ports: just above the suite's, within the range a session
# is given; any free port when files run side by side (TEST_NGINX_RANDOMIZE)
sub peer_port { $ENV{TEST_NGINX_RANDOMIZE} ? undef : $BASE + $_[0] }
my $tmp = tempdir('tent-upgrade-XXXXXX', TMPDIR => 1, CLEANUP => 1);

my ($so) = grep { /ngx_http_tent_module/ }
           split ' ', $ENV{TEST_NGINX_LOAD_MODULES} || '';
plan skip_all => 'TEST_NGINX_LOAD_MODULES names no tent module' unless $so;
$so = File::Spec->rel2abs($so);

# Under util/run-asan.sh nginx is a wrapper that preloads libasan: the
# binary upgrade's new master must get it too (env), and ASan stops a
# master that loads a second copy of an instrumented module (an ODR
# violation): the reload then loads the same file again instead.
my $BIN = $ENV{TEST_NGINX_BINARY} || '';
my $asan = -f $BIN && -T $BIN && do {
    open my $w, '<', $BIN; local $/; (<$w> // '') =~ /libasan/
};
my $a = Tent::Peer->start(port => peer_port(3), worker_processes => 2,
    $asan ? (main_config => "env LD_PRELOAD;\nenv ASAN_OPTIONS;\n"
                            . "env UBSAN_OPTIONS;") : ());
my $c = $a->client;
my (undef, $cred) = $c->authorized_app('write_posts,read_posts',
                                       post_types => 'all');

sub post {
    my ($cl, $mark) = @_;
    return $cl->post($cred, { type => $TYPE, content => { mark => $mark } },
                     headers => { 'Idempotency-Key' => $mark });
}

sub marks {
    my (%m, $pages);
    my $pt = 'post_types=' . Tent::Client::uri_escape($TYPE);
    my $res = $c->request(GET => "/posts?limit=200&$pt", cred => $cred);
    while (1) {
        $m{ $_->{content}{mark} }++ for @{ $res->{json} || [] };
        my ($next) = ($res->{headers}{link} // '') =~ /<([^>]+)>; rel="next"/;
        last unless $next && ++$pages < 100;
        $res = $c->request(GET => "//$next", cred => $cred);
    }
    return \%m;
}

# the worker pids of a master, and whether each maps $file
sub workers_mapping {
    my ($master, $file) = @_;
    my @w;
    opendir my $d, '/proc' or die;
    for my $p (grep { /^\d+$/ } readdir $d) {
        open my $st, '<', "/proc/$p/stat" or next;
        my $s = <$st> // '';
        my ($ppid) = $s =~ /\)\s+\S+\s+(\d+)/;
        next unless $ppid && $ppid == $master;
        open my $m, '<', "/proc/$p/maps" or next;
        local $/;
        my $maps = <$m> // '';
        push @w, [$p, index($maps, $file) >= 0];
    }
    return @w;
}

# clients posting for $seconds while $during runs; each retries a 503
# with its key
sub storm {
    my ($name, $seconds, $during) = @_;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        sleep 0.3;
        $during->();
        POSIX::_exit(0);
    }
    my @lines = parallel_clients(4, $seconds, sub {
        my ($i, $iter) = @_;
        my $mark = "$name-c$i-$iter";
        for my $try (1 .. 30) {
            my $res = post($a->client, $mark);
            return "ok $mark" if $res->{status} == 200;
            return "bad $mark $res->{status} $res->{body}"
                unless $res->{status} == 503;
            sleep 0.1;
        }
        return "gave-up $mark";
    });
    waitpid $pid, 0;
    return @lines;
}

for my $i (1 .. 20) {
    die 'post' unless post($c, "before-$i")->{status} == 200;
}

# 1. a new build under a new name, and a reload
my $new = "$tmp/ngx_http_tent_module-2.so";
copy($so, $new) or die "copy: $!";
$new = $so if $asan;
my $old_master = $a->master_pid;
my $reloaded;
my @lines = storm('reload', 3, sub {
    local $ENV{TEST_NGINX_LOAD_MODULES} = $new;
    $reloaded = $a->reload(worker_processes => 2);
    sleep 0.5;
});
# the child's $reloaded is not ours: look at the workers instead
is($a->master_pid, $old_master, 'a reload keeps the master');
my @w;
my $until = time + 10;
while (time < $until) {
    @w = workers_mapping($a->master_pid, $new);
    last if @w == 2 && !grep { !$_->[1] } @w;
    sleep 0.1;
}
is(scalar(grep { $_->[1] } @w), 2, 'both new workers run the new file')
    or diag(explain \@w);
my $opened = () = $a->error_log_text =~ /tent store: opened/g;
ok($opened >= 2, 'the new owner opened the store');

my @ok = grep { /^ok / } @lines;
my @bad = grep { !/^ok / } @lines;
ok(@ok > 40, scalar(@ok) . ' posts acknowledged across the reload');
is(scalar @bad, 0, 'every request answered') or diag(@bad[0 .. 4]);

# 1b. why a new name: a build renamed over the same path and a reload
# leaves the new workers on the old code (the master has that path
# loaded: dlopen() answers with it), the file they map is the deleted one
SKIP: {
skip 'under ASan the reload loads the same file', 1 if $asan;
copy($so, "$new.tmp") or die "copy: $!";
rename "$new.tmp", $new or die "rename: $!";
{
    local $ENV{TEST_NGINX_LOAD_MODULES} = $new;
    $a->reload(worker_processes => 2);
}
$until = time + 10;
my @d;
while (time < $until) {
    @d = workers_mapping($a->master_pid, "$new (deleted)");
    last if @d == 2 && !grep { !$_->[1] } @d;
    sleep 0.1;
}
is(scalar(grep { $_->[1] } @d), 2,
   'a build renamed over the loaded path: the reload keeps the old code')
    or diag(explain \@d);
}

# 2. nginx itself: a binary upgrade, USR2 then WINCH then QUIT
my $pidfile = $a->servroot . '/logs/nginx.pid';
my $new_master;
my @lines2 = storm('binary', 5, sub {
    kill 'USR2', $old_master or die "USR2: $!";
    my $end = time + 10;
    sleep 0.05 while time < $end && !-e "$pidfile.oldbin";
    sleep 0.3;
    kill 'WINCH', $old_master;        # old workers leave gracefully
    sleep 1;
    kill 'QUIT', $old_master;         # and the old master
    $end = time + 10;
    sleep 0.05 while time < $end && kill 0, $old_master;
});
ok(-e "$pidfile" && !-e "$pidfile.oldbin", 'the new master took the pid file');
$new_master = $a->master_pid;
ok($new_master && $new_master != $old_master && !kill(0, $old_master),
   'a new master, the old one gone');
$until = time + 10;
while (time < $until) {
    @w = workers_mapping($new_master, $asan ? $new : "$new\n");
    last if @w == 2 && !grep { !$_->[1] } @w;
    sleep 0.1;
}
is(scalar(grep { $_->[1] } @w), 2,
   'the new master loaded the file on disk: its workers map it')
    or diag(explain \@w);
@ok = (@ok, grep { /^ok / } @lines2);
@bad = grep { !/^ok / } @lines2;
ok(scalar(grep { /^ok / } @lines2) > 40,
   scalar(grep { /^ok / } @lines2) . ' posts acknowledged across it');
is(scalar @bad, 0, 'every request answered') or diag(@bad[0 .. 4]);

# 3. the data: the posts from before and every acknowledged one, once
my $m = marks();
my @lost = grep { !$m->{$_} } (map { "before-$_" } 1 .. 20),
                              map { (split / /)[1] } @ok;
is(scalar @lost, 0, 'no post lost') or diag("@lost[0 .. 9]");
is(scalar(grep { $m->{$_} > 1 } keys %$m), 0, 'none twice');
is(post($c, 'after')->{status}, 200, 'and it takes writes');
unlike($a->error_log_text, qr/\[(?:alert|crit|emerg)\]/, 'no alert logged');

$a->stop;
done_testing();
