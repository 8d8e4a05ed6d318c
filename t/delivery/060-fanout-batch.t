# Cheaper fan-out (issue #13): one post to a few hundred followers on one
# receiver host.  The due jobs are read in batches (one store read for
# every job's row, record and post: the debug log's "batch load" lines
# are far fewer than the jobs), the post's body is rendered once a batch,
# not once a job, and the settlements are written in batches too.  Four
# followers in ten answer 503 until the test lets them take the post:
# their retries settle and end, every follower gets the post, nothing is
# sent again, a second post after the queue's cursor moved past every
# removed job reaches everyone too, and no job is left in the store
# afterwards (checked in the LevelDB, with nginx stopped).  The due scans
# resume past the jobs on their way instead of reading them all again.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text wait_for
                  follower_host_config follow_many);
use Tent::Client;
use Tent::Peer;
use JSON::PP;
use Time::HiRes qw(sleep time);

master_on();
workers(1);
log_level('debug');
no_shuffle();
run_tests();

if ($ENV{TEST_NGINX_USE_VALGRIND}) {
    pass('the many-followers part is skipped under valgrind');
    exit 0;
}

start_last_nginx();
END { stop_last_nginx() }

my $N = 400;
my $ENTITY = 'http://127.0.0.1:' . ($ENV{TEST_NGINX_SERVER_PORT} || 1984);
my $c = Tent::Client->new;
my (undef, $owner) = $c->authorized_app('write_posts', post_types => 'all');

# f<i> whose number ends in 0, 3, 6 or 9 (the flaky ones) answers 503 to
# notifications until the file "up" exists in the receiver's servroot;
# the others take them at once
my $rx = Tent::Peer->start(worker_processes => 1,
                           http_config => <<HTTP,
    tent_store  \$SERVROOT/tent_temp;
    log_format  notes  '\$request_method \$uri \$status';
HTTP
                           server_config => follower_host_config(
                               log => 'notes', first => <<FIRST));
        location ~ ^/f[0-9]*[0369]/tent/notifications/ {
            access_log    \$SERVROOT/logs/notes.log notes;
            default_type  text/plain;
            if (\$request_method = GET) {
                return 200 \$arg_challenge;
            }
            if (!-f \$SERVROOT/up) {
                return 503 'later';
            }
            return 200 '';
        }

FIRST
my $U = $rx->url;
my $notes = $rx->servroot . '/logs/notes.log';

my %flaky = map { $_ => 1 } grep { /[0369]$/ } 1 .. $N;

my ($bad) = follow_many($c, $U, [map { "f$_" } 1 .. $N]);
is($bad, 0, "$N entities follow");

# what the receiver logged: "POST /f<i>/tent/notifications/n <status>"
sub answers {
    my %got;
    open(my $fh, '<', $notes) or return {};
    while (<$fh>) {
        next unless m{^POST /f(\d+)/tent/notifications/n (\d+)};
        push @{ $got{$1} }, $2;
    }
    return \%got;
}

sub delivered {
    my $got = answers();
    return scalar grep { grep { $_ == 200 } @$_ } values %$got;
}

my $res = $c->request(POST => '/posts', cred => $owner,
                      body => { type => 'https://tent.io/types/post/status/v0.1.0',
                                content => { text => 'to all of you' },
                                permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a public post');

# the steady ones get it; the flaky ones answer 503, and are retried
my $steady = $N - keys %flaky;
ok(wait_for(sub { delivered() >= $steady }, 60),
   "the $steady steady followers got the post");
ok(wait_for(sub {
       my $got = answers();
       (grep { $got->{$_} && grep { $_ == 503 } @{ $got->{$_} } }
             keys %flaky) == keys %flaky }, 60),
   'every flaky follower answered 503 at least once');

# they come up: the retries, settled in batches, reach them all
open(my $up, '>', $rx->servroot . '/up') or die "up: $!";
close $up;

ok(wait_for(sub { delivered() >= $N }, 90), "all $N followers got the post")
    or diag(delivered() . " of $N");

my $got = answers();
is(scalar(grep { !$got->{$_} || !grep { $_ == 200 } @{ $got->{$_} } } 1 .. $N),
   0, 'none lost');
is(scalar(grep { $got->{$_} && grep { $_ == 503 } @{ $got->{$_} } }
           grep { !$flaky{$_} } 1 .. $N),
   0, 'the steady ones never failed');

# settled: nothing sent again once every job ended
sleep 1.5;
my $posts = 0;
$posts += @$_ for values %{ answers() };
sleep 1;
my $again = 0;
$again += @$_ for values %{ answers() };
is($again, $posts, 'and nothing is sent after the jobs ended');

# the due scans now start past every job removed: a second post's jobs,
# put after that, are not skipped
sub oks {
    my $n = 0;
    for my $a (values %{ answers() }) {
        $n += grep { $_ == 200 } @$a;
    }
    return $n;
}
my $first = oks();
$res = $c->request(POST => '/posts', cred => $owner,
                   body => { type => 'https://tent.io/types/post/status/v0.1.0',
                             content => { text => 'and again' },
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a second post');
ok(wait_for(sub { oks() >= $first + $N }, 60),
   "the second post reached the $N followers too")
    or diag(oks() - $first . " of $N");
sleep 1;

my $log = error_log_text();
my $due = () = $log =~ /tent delivery: job due: /g;
my $loads = () = $log =~ /tent delivery: batch load: \d+ jobs/g;
my $rendered = () = $log =~ /tent delivery: post "[^"]+": rendered, /g;
my $settles = () = $log =~ /tent delivery: settle batch: \d+ jobs in one write/g;
my $settled = () = $log =~ /tent delivery: settled: /g;
my $alone = () = $log =~ /tent delivery: a settlement written alone/g;

ok($due >= 2 * $N + keys %flaky, "the jobs were due ($due)");
ok($loads > 0 && $loads * 4 <= $due,
   "one load a batch, not a job ($loads loads for $due due jobs)");
ok($rendered <= $loads,
   "the post rendered once a batch ($rendered for $loads batches)");
# and a post's body rendered by one batch is the next batches' too (the
# post's parse shared through the records' cache, its body kept)
ok($rendered <= 2,
   "each post rendered once, not once a batch ($rendered for 2 posts, "
   . "$loads batches)");
ok($settles > 0 && $settles * 2 <= $settled,
   "settlements in batches ($settles writes for $settled)");
is($alone, 0, 'none written alone');
like($log, qr/tent delivery: "[^"]+": due scan from [1-9]\d* /,
     'the due scans start past the jobs removed');

# the jobs in flight are not read again by each scan: a scan resumes past
# them, so the due rows all scans read are about the jobs, not the jobs
# times the batches (with 32 in flight, 8 slots free a batch: 5 times)
my $resumed = () = $log =~ /due scan from \d+ to \d+, past the rows on their way/g;
my $read = 0;
$read += $_ for $log =~ /tent delivery: "[^"]+": (\d+) jobs due, next scan/g;
ok($resumed > 0, "the due scans resume past the jobs on their way ($resumed)");
ok($read <= 2 * $due,
   "the due scans read each job about once ($read rows for $due due jobs)");
unlike($log, qr/\[alert\]|exited on signal|the queue could not be updated/,
       'no alert, no crash, no failed write');

# no job left in the store
my $root = Tent::Util::servroot();

{

    stop_last_nginx();

    my ($jobs, $dead) = (0, 0);
    for (Tent::Util::ldb_rows("$root/tent_temp/db")) {
        my ($k) = split /\t/;
        my $key = pack('H*', $k);
        $jobs++ if $key =~ /^\Q$ENTITY\E\0j/;
        $dead++ if $key =~ /^\Q$ENTITY\E\0x/;
    }
    is($jobs, 0, 'no job left in the store');
    is($dead, 0, 'and no dead letter');

    start_last_nginx();
}

$rx->stop;

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_delivery_interval 100ms;
    tent_delivery_concurrency 32;
    tent_delivery_host_concurrency 32;
    tent_delivery_breaker off;
    tent_delivery_retry 200ms 1s;
    tent_delivery_attempts 100;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/followers/count
--- error_code: 200
--- response_body: 0
