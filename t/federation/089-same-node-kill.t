# A kill -9 of worker 0 (the store owner) between the steps of same-node
# fan-outs with no job (tent_same_node_rows index, issue #28 part 3)
# loses nothing and writes nothing twice.  A (the harness's server) is
# followed by N = 220 entities of the same nginx (one server block each,
# http://127.0.89.<i>:P: loopback addresses, one port), so a fan-out is
# three steps of followers (100, 100, 20), each one write holding its
# recipients' rows and "delivered" records; the outbox row goes with the
# last.  Rounds of posts, worker 0 killed in each once some deliveries
# are counted and before all, then: every recipient has each post once
# in its feed (GET /posts as the recipient, its count), once in its
# stored rows (one "l" row, one row of each feed index), the status
# route says delivered for all N, no outbox row is left, and a fan-out
# cut between its steps was run again (its first steps' recipients
# found at the version: "nothing written").  The steps' recipients in
# flight are bounded (128 x tent_delivery_concurrency, 2 here): those
# beyond get their job, and the jobs are killed mid-way too.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx wait_for master_pid
                  error_log_text);
use Tent::Client;
use JSON::PP;
use Time::HiRes qw(sleep time);

our ($N, $P, @ADDRS);

BEGIN {
    my $p = $ENV{TEST_NGINX_SERVER_PORT} || $ENV{TEST_NGINX_PORT} || 1984;
    $N = 220;
    $P = $p + 1;
    @ADDRS = map { "127.0.89.$_" } 1 .. $N;
}

# the N entities' server blocks: one port, an address each
sub entity_blocks {
    return join '', map { <<"END" } @ADDRS;
    server {
        listen $_:$P;
        tent_entity http://$_:$P;
        location = /tent/oauth/authorize {
            tent_owner "owner $_";
        }
    }
END
}

master_on();
workers(2);
worker_connections(1024);
no_shuffle();
run_tests();

# under valgrind 220 entities' follows take too long
if ($ENV{TEST_NGINX_USE_VALGRIND}) {
    pass('the kill part is skipped under valgrind');
    exit 0;
}

start_last_nginx();
END { stop_last_nginx() }

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $A = 'http://127.0.0.1:' . Tent::Util::port();
my $SCOPES = 'read_followers,write_followers,read_followings,'
             . 'write_followings,read_posts,write_posts';

my $a = Tent::Client->new;
my (undef, $acred) = $a->authorized_app($SCOPES, post_types => 'all');

my (%cl, %cred);
for my $ip (@ADDRS) {
    $cl{$ip} = Tent::Client->new(addr => $ip, port => $P,
                                 host => "$ip:$P");
    (undef, $cred{$ip}) = $cl{$ip}->authorized_app($SCOPES,
                                                   post_types => 'all');
    my $res = $cl{$ip}->request(POST => '/followings', cred => $cred{$ip},
                                body => { entity => $A });
    die "$ip following A: $res->{status} $res->{body}"
        unless $res->{status} == 200;
}

my $res = $a->request(GET => '/followers?limit=200', cred => $acred);
my $nf = @{ $res->{json} || [] };
$res = $a->request(GET => '/followers?limit=200&before_id='
                          . $res->{json}[-1]{id}, cred => $acred);
$nf += @{ $res->{json} || [] };
is($nf, $N, "A has $N followers, entities of this nginx");

# worker 0: the worker that holds the store's LevelDB lock
sub worker0 {
    my $m = master_pid() or return;
    for my $pid (map { s/\s+//gr } `ps -o pid= --ppid $m`) {
        next unless $pid =~ /^\d+$/;
        opendir my $d, "/proc/$pid/fd" or next;
        for (readdir $d) {
            my $t = readlink("/proc/$pid/fd/$_") // next;
            return $pid if $t =~ m{/tent_temp/.*LOCK$};
        }
    }
    return;
}

# deliveries counted so far (undef while no worker answers)
sub delivered {
    my $r = $a->request(GET => '//status', timeout => 2);
    return undef unless $r->{status} == 200;
    return eval { decode_json($r->{body})->{deliveries}{delivered} };
}

sub quiet {
    my $d0 = -1;
    for (1 .. 100) {
        my $d = delivered() // next;
        return 1 if $d == $d0;
        $d0 = $d;
        sleep 0.3;
    }
    return 0;
}

ok(quiet(), 'the follows\' deliveries are over');

# rounds: K posts, worker 0 killed once some of their deliveries are
# counted (a step's are counted when judged, before its write) and
# before all: at a different count each round, so that kills fall
# before, between and after the steps' writes
my ($K, $mid, @ids) = (6, 0);
my @at = (300, 700, 500, 1000, 200);
for my $round (1 .. @at) {
    my $w0 = worker0() or last;
    my $d0;
    wait_for(sub { defined($d0 = delivered()) }, 20);
    for my $k (1 .. $K) {
        my $r = $a->request(POST => '/posts', cred => $acred,
                            body => { type => $STATUS,
                                      content => { text => "r$round $k" },
                                      permissions => {
                                          public => JSON::PP::true } });
        die "post: $r->{status} $r->{body}" unless $r->{status} == 200;
        push @ids, $r->{json}{id};
    }
    my $n = 0;
    my $end = time + 30;
    while (time < $end) {
        $n = (delivered() // $d0) - $d0;
        last if $n >= $at[$round - 1];
    }
    kill 'KILL', $w0;
    $mid++ if $n >= $at[$round - 1] && $n < $K * $N;
    diag("round $round: worker 0 ($w0) killed at $n of " . $K * $N
         . ' deliveries counted');
    ok(wait_for(sub { my $w = worker0(); $w && $w != $w0 }, 20),
       "round $round: the master started a new worker 0");
}
ok($mid >= 2, "worker 0 killed mid-way through the fan-outs ($mid of "
              . scalar(@at) . ' rounds)');

# every post delivered to all N, by the status route
sub states {
    my ($id) = @_;
    my (%st, $before);
    for (1 .. 3) {
        my $r = $a->request(GET => "/posts/$id/deliveries?limit=200"
                                   . ($before ? "&before_id=$before" : ''),
                            cred => $acred);
        return {} unless $r->{status} == 200;
        my $l = $r->{json}{deliveries} || [];
        $st{$_->{entity}} .= $_->{state} for @$l;
        last if @$l < 200;
        $before = $l->[-1]{id};
    }
    return \%st;
}
sub all_delivered {
    my ($id) = @_;
    my $st = states($id);
    return (grep { ($st->{"http://$_:$P"} // "") eq "delivered" } @ADDRS)
           == $N;
}
ok(wait_for(sub { !grep { !all_delivered($_) } @ids }, 120),
   scalar(@ids) . ' posts: the status route says delivered to each of the '
   . "$N, once")
    or diag join ' ', map { my $st = states($_);
                            "$_: " . grep { $_ eq 'delivered' } values %$st }
                      @ids;
my $dl = $a->request(GET => "/posts/$ids[-1]/deliveries", cred => $acred);
is_deeply($dl->{json}{counts},
          { delivered => $N, pending => 0, retrying => 0, failed => 0 },
          'counts: all delivered') or diag $dl->{body};

# each recipient's feed: each post once, no other of A's
my (@missing, @twice);
for my $ip (@ADDRS) {
    my $r = $cl{$ip}->request(GET => '/posts?limit=200&entity='
                                     . Tent::Client::uri_escape($A),
                              cred => $cred{$ip});
    my %n;
    $n{$_->{id}}++ for @{ $r->{json} || [] };
    push @missing, map { "$ip $_" } grep { !$n{$_} } @ids;
    push @twice, map { "$ip $_ x$n{$_}" } grep { $n{$_} > 1 } keys %n;
}
is(scalar @missing, 0, "each of the $N feeds has each of the "
                       . scalar(@ids) . ' posts')
    or diag join "\n", @missing[0 .. ($#missing > 9 ? 9 : $#missing)];
is(scalar @twice, 0, 'and none twice')
    or diag join "\n", @twice[0 .. ($#twice > 9 ? 9 : $#twice)];
my $ip1 = $ADDRS[-1];
$res = $cl{$ip1}->request(GET => '/posts/count?entity='
                                 . Tent::Client::uri_escape($A),
                          cred => $cred{$ip1});
is($res->{json}, scalar @ids, 'a recipient\'s count agrees');

# the repeat of a fan-out cut between its steps: rows found at the version
my %repeat = map { $_ => 1 }
             error_log_text() =~ /tent local batch: post "([^"]+)" to "[^"]+": 200, nothing written, no job/g;
ok(scalar(keys %repeat),
   'a fan-out cut by a kill ran again, finding its first recipients\' '
   . 'rows (' . scalar(keys %repeat) . ' posts)');

# the steps' recipients in flight are bounded (128 x 2 here, six fan-outs
# of 100 a step): the followers beyond got a job, carried by the engine
ok(scalar(() = error_log_text() =~ /recipients in the steps' writes already: a job/g),
   'recipients beyond the steps\' budget got their job');
ok(error_log_text() =~ /tent local batch: \d+ jobs settled in one write/,
   'which same-node batches carried');

# the rows: one "l" row and one row of each feed index a recipient and
# post; no outbox row left
stop_last_nginx();
my $db = Tent::Util::servroot() . '/tent_temp/db';
my %want = map { $_ => 1 } @ids;
my (%rows, $outbox);
for (Tent::Util::ldb_rows($db)) {
    my ($k) = split /\t/;
    my $key = pack('H*', $k);
    if ($key =~ /^http:\/\/(127\.0\.89\.\d+):\d+\0l\Q$A\E\0(.+)$/s) {
        $rows{"$1 $2 l"}++;
    } elsif ($key =~ /^http:\/\/(127\.0\.89\.\d+):\d+\0i([rpu]).{16}\Q$A\E\0(.+)$/s) {
        $rows{"$1 $3 $2"}++;
    }
    $outbox++ if $key =~ /^\Q$A\E\0o/;
}
my @bad;
for my $ip (@ADDRS) {
    for my $id (@ids) {
        for my $t (qw(l r p u)) {
            my $n = delete $rows{"$ip $id $t"} // 0;
            push @bad, "$ip $id $t x$n" if $n != 1;
        }
    }
}
is(scalar @bad, 0, 'each recipient holds one "l" row and one row of '
                   . 'each feed index of each post')
    or diag join "\n", @bad[0 .. ($#bad > 9 ? 9 : $#bad)];
is(scalar(keys %rows), 0, 'and nothing of any other post of A')
    or diag join "\n", (keys %rows)[0 .. 9];
ok(!$outbox, 'no outbox row left');

my @alerts = grep { /\[alert\]/ && !/exited on signal 9/ }
             split /\n/, error_log_text();
is(scalar @alerts, 0, 'no alert but the killed workers\'')
    or diag join "\n", @alerts[0 .. ($#alerts > 5 ? 5 : $#alerts)];
unlike(error_log_text(), qr/exited on signal (?!9)/, 'no crash');

__DATA__

=== TEST 1: 220 entities of one nginx follow A, index rows
--- http_config eval
"    tent_store \$TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 100ms;
    tent_delivery_retry 1s 2s;
    tent_delivery_concurrency 2;
    tent_same_node_rows index;
" . main::entity_blocks()
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
