# The census of apps (issue #13): a post only the entity's apps could
# get (private, naming no one, mentioning no one: the "follower" post
# each follow writes) has no outbox row while the engine's last census
# found no app subscribed; where rows must be written (an app is
# subscribed) they sort after the rows of posts for followers.
#
# 1. No app: after the first follow's row was seen by the outbox pass
#    (its census: no app), 2,000 more follows write no outbox row (the
#    debug log says so for each; the passes list a handful of rows, not
#    thousands), and a public post sent right after them reaches every
#    follower.
# 2. An app subscribes while follows come in (another process follows
#    meanwhile): every follow that began after its authorization was
#    answered is told to it, and so is every later one.
# 3. No outbox row is left in the store at the end (read with nginx
#    stopped).

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text wait_for
                  follower_host_config follow_many);
use Tent::Client;
use Tent::Peer;
use Tent::Receiver;
use JSON::PP;
use Time::HiRes qw(sleep time);

master_on();
workers(2);
worker_connections(1024);
log_level('debug');
no_shuffle();
run_tests();

if ($ENV{TEST_NGINX_USE_VALGRIND}) {
    pass('the many-follows part is skipped under valgrind');
    exit 0;
}

start_last_nginx();
END { stop_last_nginx() }

my $N = 2000;
my $ENTITY = 'http://127.0.0.1:' . Tent::Util::port();
my $FOLLOWER = 'https://tent.io/types/post/follower/v0.1.0';
my $c = Tent::Client->new;
my (undef, $owner) = $c->authorized_app(
    'write_posts,read_posts,read_followers,write_followers',
    post_types => 'all');

my $rx = Tent::Peer->start(
    worker_processes => 1,
    log_level => 'warn',
    http_config => <<'CONF',
    tent_store  $SERVROOT/tent_temp;
    log_format  notes  '$request_method $uri $status';
    keepalive_timeout  75s;
    keepalive_requests 100000;
CONF
    server_config => follower_host_config(names => '[fgh][0-9]+',
                                         log => 'notes'));
my $U = $rx->url;
my $notes = $rx->servroot . '/logs/notes.log';

sub delivered {
    my %got;
    open(my $fh, '<', $notes) or return 0;
    while (<$fh>) {
        $got{$1} = 1 if m{^POST /f(\d+)/tent/notifications/n 200};
    }
    return scalar keys %got;
}

# "tent delivery: outbox of "<entity>": <n> rows; followers: ...": the
# rows each pass listed (its census lines: the apps', the followers')
sub rows_listed {
    my $n = 0;
    $n += $1 for error_log_text()
        =~ /outbox of "\Q$ENTITY\E": (\d+) rows; (?:app subscriptions|followers): /g;
    return $n;
}

# a follow, again after a 503 (the outbound cap, busy with deliveries)
sub follow {
    my ($cl, $name) = @_;
    my $r;
    for (1 .. 20) {
        $r = $cl->request(POST => '/followers',
            body => { entity => "$U/$name",
                      types => ['https://tent.io/types/post/status/v0.1.0'],
                      notification_path => 'notifications/n' });
        last unless $r->{status} == 503;
        sleep 0.2;
    }
    return $r;
}

# --- 1. no app: the follows write no outbox row ---------------------------

my ($bad) = follow_many($c, $U, ['f0']);
is($bad, 0, 'a first follow');
ok(wait_for(sub { error_log_text()
        =~ /outbox of "\Q$ENTITY\E": \d+ rows; app subscriptions: none/ },
            10),
   'the outbox pass counts the apps: none');

my $before = rows_listed();
($bad) = follow_many($c, $U, [map { "f$_" } 1 .. $N]);
is($bad, 0, "$N entities follow");

my $res = $c->request(POST => '/posts', cred => $owner,
                      body => { type => 'https://tent.io/types/post/status/v0.1.0',
                                content => { text => 'right after' },
                                permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a public post right after the follows');

ok(wait_for(sub { delivered() >= $N + 1 }, 180),
   'it reaches every follower') or diag(delivered() . ' of ' . ($N + 1));

my $log = error_log_text();
my $skipped = () = $log =~ /no app of "\Q$ENTITY\E" subscribed: post "[^"]+" has no outbox row/g;
ok($skipped >= $N, "the follows' posts had no outbox row ($skipped)");

my $listed = rows_listed() - $before;
ok($listed < 50,
   "the outbox passes listed $listed rows during $N follows, not thousands");
my $expanded = () = $log =~ /tent delivery: outbox row: post /g;
ok($expanded <= 5, "and made $expanded of them into tasks");

# --- 2. an app subscribes while follows come in ---------------------------

my $hook = Tent::Receiver->start(
    rules => [{ method => 'POST', path => '^/hook/',
                action => { status => 200, body => '{}' } }]);

my $M = 150;
my $times = Tent::Util::servroot() . '/follow-times';
unlink $times;

my $pid = fork() // die "fork: $!";
if ($pid == 0) {
    my $cc = Tent::Client->new;
    open(my $fh, '>', $times) or die "$times: $!";
    $fh->autoflush(1);
    for my $i (1 .. $M) {
        my $t = time;
        my $r = follow($cc, "g$i");
        my $e = ($r->{error} // $r->{body} // '') =~ s/\s+/_/gr;
        print $fh "$i $t " . ($r->{status} == 200 ? 0 : 1)
                  . " $r->{status} $e\n";
    }
    close $fh;
    require POSIX;
    POSIX::_exit(0);
}

sub follows_done {
    open(my $fh, '<', $times) or return ();
    return map { [split] } grep { /\n$/ } <$fh>;
}

ok(wait_for(sub { my @d = follows_done(); @d >= $M / 3 }, 60),
   'another process follows meanwhile');
my (undef, $app) = $c->authorized_app('read_posts', post_types => $FOLLOWER,
    notification_url => $hook->url . '/hook/app');
my $acked = time;
waitpid($pid, 0);

my @done = follows_done();
is(scalar(@done), $M, "$M follows in all");
is(scalar(grep { $_->[2] } @done), 0, 'none refused');
my @after = map { "g$_->[0]" } grep { $_->[1] > $acked } @done;
ok(@after > 0 && @after < $M,
   scalar(@after) . ' of them began after the app was subscribed');

# and more, one at a time, the app subscribed all along
$bad = 0;
for my $i (1 .. 30) {
    my $r = follow($c, "h$i");
    next if $r->{status} == 200;
    diag("h$i: $r->{status} " . ($r->{error} // $r->{body}))
        unless $bad++;
}
is($bad, 0, '30 more follows');
push @after, map { "h$_" } 1 .. 30;

sub told {
    my %got;
    for my $r ($hook->requests(method => 'POST', path => qr{^/hook/app$})) {
        my $p = eval { decode_json($r->{body}) } or next;
        next unless ($p->{type} // '') eq $FOLLOWER;
        $got{$1} = 1 if ($p->{content}{entity} // '') =~ m{/([gh]\d+)$};
    }
    return \%got;
}

ok(wait_for(sub { my $t = told(); !grep { !$t->{$_} } @after }, 120),
   'the app is told of every follow that began after it subscribed')
    or diag('missing: ' . join(' ', grep { !told()->{$_} } @after));

ok(error_log_text()
       =~ /tent delivery: a batch of \d+ rows for apps: \d+ jobs for 1 subscriptions, one write/,
   'their rows go to the app in batches');

# --- 3. no outbox row left -------------------------------------------------

# every row the app is told of goes with its fan-out's write
ok(wait_for(sub {
       my @l = error_log_text()
           =~ /outbox of "\Q$ENTITY\E": \d+ rows[^\n]*|"\Q$ENTITY\E": outbox empty/g;
       @l && $l[-1] =~ /outbox empty/ }, 60),
   'the outbox pass finds the outbox empty');

my $root = Tent::Util::servroot();

{

    stop_last_nginx();

    my $rows = 0;
    for (Tent::Util::ldb_rows("$root/tent_temp/db")) {
        my ($k) = split /\t/;
        $rows++ if pack('H*', $k) =~ /^\Q$ENTITY\E\0o/;
    }
    is($rows, 0, 'no outbox row left in the store');

    start_last_nginx();
}

my @alerts = error_log_text() =~ /^(.*(?:\[alert\]|exited on signal).*)$/mg;
is(scalar(@alerts), 0, 'no alert, no crash') or diag(join("\n", @alerts[0 .. 4]));

$hook->stop if $hook->can('stop');
$rx->stop;

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_delivery_interval 100ms;
    tent_delivery_concurrency 64;
    tent_delivery_host_concurrency 64;
    tent_delivery_breaker off;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/followers/count
--- error_code: 200
--- response_body: 0
