# Issue #26: one tenant's heavy work does not starve another tenant's
# requests in the store (docs/store.md, "Tenants sharing the owner").
# Two tenants of one nginx (two workers, one store owner).  Tenant A
# keeps the store busy: posts that fan out to 200 followers each (the
# engine's background operations), whole exports, scans of 200 posts,
# many writes, all at once in forked clients that loop until told to
# stop.  Meanwhile tenant B's signed writes and reads, and its
# anonymous reads, are all answered 200: none waits past the store's
# timeout (which would be 503).  No timing is asserted; that A's work
# was still going when B's last request was answered is checked.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx follower_host
                  follow_many wait_for);
use Tent::Client;
use Tent::Peer;
use Tent::MAC qw(signed_headers random_nonce);
use File::Temp qw(tempdir);
use JSON::PP;
use POSIX ();
use Time::HiRes qw(sleep time);

master_on();
workers(1);
no_shuffle();
run_tests();

if ($ENV{TEST_NGINX_USE_VALGRIND}) {
    pass('the heavy part is skipped under valgrind');
    exit 0;
}

start_last_nginx();
END { stop_last_nginx() }

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $SCOPES = 'read_posts,write_posts,read_secrets,read_profile,'
           . 'read_followers,read_followings,read_groups';

my $blocks = join '', map { <<"CONF" } qw(alice bob);
    server {
        listen 127.0.0.1:\$PORT;
        server_name $_.test;
        tent_entity http://$_.test;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
    }
CONF

my $peer = Tent::Peer->start(
    http_config => <<'CONF' . $blocks,
    tent_store $SERVROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_delivery_interval 100ms;
    tent_delivery_concurrency 32;
    tent_delivery_host_concurrency 32;
    tent_delivery_breaker off;
CONF
    worker_processes => 2);

my %C = map { ($_ => $peer->client(host => "$_.test")) } qw(alice bob);
my %O;
for my $t (qw(alice bob)) {
    (undef, $O{$t}) = $C{$t}->authorized_app($SCOPES, post_types => 'all');
    ok($O{$t}{access_token}, "$t: an owner app");
}

# alice's followers, on a host of their own
my ($fpeer, $furl, $notes) = follower_host();
my ($bad) = follow_many($C{alice}, $furl, [map { "f$_" } 1 .. 200]);
is($bad, 0, '200 remotes follow alice');

# some posts of alice's to export and scan
my $made = 0;
for my $i (1 .. 200) {
    $made++ if $C{alice}->request(POST => '/posts', cred => $O{alice},
        body => { type => $STATUS,
                  content => { text => "a$i " . 'x' x 200 },
                  permissions => { public => JSON::PP::true } })->{status}
        == 200;
}
is($made, 200, 'alice has 200 posts');

# ---- alice's heavy work: each kind in a child, until the stop file

my $dir = tempdir('tent-fair-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $STOP = "$dir/stop";

sub signed_get_all {
    my ($c, $cred, $path) = @_;
    # a whole answer, read to its end
    return $c->request(GET => $path, cred => $cred, timeout => 60);
}

my %work = (
    fanout => sub {
        $C{alice}->request(POST => '/posts', cred => $O{alice},
            body => { type => $STATUS, content => { text => 'to all' },
                      permissions => { public => JSON::PP::true } });
    },
    export => sub { signed_get_all($C{alice}, $O{alice}, '/export') },
    scan => sub {
        signed_get_all($C{alice}, $O{alice}, '/posts?limit=200');
    },
    writes => sub {
        $C{alice}->request(POST => '/posts', cred => $O{alice},
            body => { type => $STATUS, content => { text => 'w' x 250 },
                      permissions => { public => JSON::PP::false } });
    },
);

my %kids;
for my $name (sort keys %work) {
    for my $n (1 .. ($name eq 'writes' ? 4 : 2)) {
        my $pid = fork;
        die "fork: $!" unless defined $pid;
        if ($pid == 0) {
            my $end = time + 120;
            my ($done, $fail) = (0, 0);
            while (!-e $STOP && time < $end) {
                my $r = $work{$name}->();
                $r->{status} == 200 ? $done++ : $fail++;
                open my $fh, '>', "$dir/$name.$n" or POSIX::_exit(1);
                print {$fh} "$done $fail\n";
                close $fh;
            }
            POSIX::_exit(0);
        }
        $kids{"$name.$n"} = $pid;
    }
}

sub progress {
    my ($k) = @_;
    open my $fh, '<', "$dir/$k" or return (0, 0);
    my $l = <$fh> // '';
    return split ' ', $l;
}

ok(wait_for(sub { !grep { !(progress($_))[0] } keys %kids }, 60),
   'alice\'s work is under way: every kind answered once')
    or diag join ', ', map { "$_: " . join('/', progress($_)) } sort keys %kids;

# ---- meanwhile bob

my (%got, @odd);
for my $i (1 .. 40) {
    for my $req (
        ['write', POST => '/posts', cred => $O{bob},
         body => { type => $STATUS, content => { text => "b$i" },
                   permissions => { public => JSON::PP::true } }],
        ['read', GET => '/posts?limit=20', cred => $O{bob}],
        ['profile', GET => '/profile', cred => $O{bob}],
        ['anonymous', GET => '/posts?limit=5'])
    {
        my ($kind, @r) = @$req;
        my $res = $C{bob}->request(@r);
        $got{$kind}{ $res->{status} }++;
        push @odd, "$kind $res->{status} " . ($res->{body} // '')
            if $res->{status} != 200;
    }
}
for my $kind (qw(write read profile anonymous)) {
    is($got{$kind}{200} // 0, 40,
       "bob's ${kind}s while alice's work runs: 40 of 40 answered 200");
}
diag join "\n", @odd[0 .. ($#odd < 4 ? $#odd : 4)] if @odd;

my @gone = grep { waitpid($kids{$_}, POSIX::WNOHANG()) != 0 } sort keys %kids;
is("@gone", '', 'alice\'s work was still going when bob was done');

my $res = $C{bob}->request(GET => "/posts?limit=200", cred => $O{bob});
is(scalar(grep { ($_->{content}{text} // '') =~ /^b\d+$/ }
          @{ $res->{json} || [] }), 40, 'bob has his 40 posts');

open my $fh, '>', $STOP or die "$STOP: $!";
close $fh;
for my $k (sort keys %kids) {
    my $end = time + 90;
    while (waitpid($kids{$k}, POSIX::WNOHANG()) == 0) {
        kill 'KILL', $kids{$k} if time > $end;
        sleep 0.1;
    }
}
my %a = map { ($_ => [progress($_)]) } sort keys %kids;
diag 'alice: ' . join ', ', map { "$_ $a{$_}[0] ok/$a{$_}[1] not" }
                            sort keys %a;
ok(!grep({ $a{$_}[0] == 0 } keys %a), 'alice\'s work was answered too');

$peer->stop;
$fpeer->stop;

__DATA__

=== TEST 1: the harness's nginx (the tenants are a peer's)
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://localhost.test;
--- request
GET /tent/profile
--- error_code: 200
