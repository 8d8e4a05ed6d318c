# tent_status (issue 13, part 6): the operator's counters of the whole
# nginx, in JSON and in Prometheus's text format.  The counters move as a
# signed POST /posts goes to one follower (one delivery, store
# operations), a retry and a dead letter, a reload; only GET and HEAD are
# answered; allow/deny applies.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text
                  reload_nginx wait_for);
use Tent::Client;
use Tent::Promlint;
use Tent::Receiver;
use JSON::PP;
use Time::HiRes qw(sleep time);

# every block runs the same server: the store, a loopback follower's
# settings, the entity and the status locations
add_block_preprocessor(sub {
    my $block = shift;
    $block->set_value(http_config => <<'CONF') unless defined $block->http_config;
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 200ms;
    tent_delivery_retry 1s 2s;
CONF
    $block->set_value(config => <<'CONF') unless defined $block->config;
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize { tent_owner "the owner"; }
    location = /status { tent_status; }
    location = /status-denied { deny all; tent_status; }
CONF
});

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $c = Tent::Client->new;
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';

sub status {
    my $res = $c->request(GET => '//status');
    die "status: $res->{status} $res->{body}" unless $res->{status} == 200;
    return decode_json($res->{body});
}

my $s0 = status();
ok(ref $s0 eq 'HASH', 'the JSON is an object');
is_deeply([sort keys %$s0],
          [qw(connections deliveries nonces reply_cache store store_lock
              store_threads)],
          'its groups');
is_deeply($s0->{store_lock}, { locked => 0, pid => 0 },
          'the store\'s lock is ours: no other holder');
is_deeply([sort keys %{ $s0->{store_threads} }],
          [qw(background deferred request waiting)],
          'the store\'s operations by class');
is_deeply([sort keys %{ $s0->{deliveries} }],
          [qw(activitypub breakers_open dead delivered in_flight local queued
               retried shared_followers shared_inbox)],
          'the deliveries\' counters');
is_deeply([sort keys %{ $s0->{store} }], [qw(cas get mget scan write)],
          'the store\'s operations by kind');
ok(!grep({ !defined $_->{count} || !defined $_->{ms} }
         values %{ $s0->{store} }), 'each with a count and milliseconds');
ok($s0->{nonces}{capacity} > 0, 'the nonce cache\'s capacity');
is($s0->{nonces}{owner}{capacity}, $s0->{nonces}{capacity},
   'the owner\'s budget is the whole cache');
is($s0->{nonces}{app}{capacity}, int($s0->{nonces}{capacity} / 4),
   'an app\'s a quarter of it');
is($s0->{connections}{reused}, 0, 'no connection reused: no keep-alive');

my ($wapp, $owner) = $c->authorized_app(
    'write_posts,read_posts,read_followers,write_followers',
    post_types => 'all');

my $rx = Tent::Receiver->start;

sub notes {
    return grep { $_->{method} eq 'POST'
                  && $_->{path} =~ m{/notifications/n$} } $rx->requests;
}

my $res = $c->request(POST => '/followers',
                      body => { entity => $rx->url, types => ['all'],
                                notification_path => 'notifications/n' });
is($res->{status}, 200, 'the receiver follows') or diag $res->{body};

# whatever the follow set going settles first
wait_for(sub { status()->{deliveries}{in_flight} == 0 });
sleep 0.5;

my $s1 = status();
ok($s1->{nonces}{app}{used} + $s1->{nonces}{owner}{used} >= 1,
   'the signed requests\' nonces are counted');

$rx->clear;
$res = $c->request(POST => '/posts', cred => $owner,
                   body => { type => $STATUS, content => { text => 'hi' },
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a signed POST /posts') or diag $res->{body};
my $id = $res->{json}{id} // '';

ok(wait_for(sub { grep { (eval { decode_json($_->{body})->{id} } // '')
                         eq $id } notes() }),
   'the follower gets it');
ok(wait_for(sub { status()->{deliveries}{delivered}
                  > $s1->{deliveries}{delivered} }),
   'the delivered counter moves');
wait_for(sub { status()->{deliveries}{in_flight} == 0 });
sleep 0.5;

my $s2 = status();
is($s2->{deliveries}{delivered} - $s1->{deliveries}{delivered}, 1,
   'delivered: up by one');
is($s2->{deliveries}{queued} - $s1->{deliveries}{queued}, 1,
   'queued: one job written');
is($s2->{deliveries}{dead} - $s1->{deliveries}{dead}, 0, 'none dead');
is($s2->{deliveries}{retried} - $s1->{deliveries}{retried}, 0,
   'none retried');
ok($s2->{connections}{opened} > $s1->{connections}{opened},
   'an outbound connection opened');
is($s2->{connections}{reused}, 0, 'and none reused');
for my $k (qw(get write scan)) {
    ok($s2->{store}{$k}{count} > $s1->{store}{$k}{count},
       "store operations of kind $k counted");
    ok($s2->{store}{$k}{ms} >= $s1->{store}{$k}{ms},
       "their milliseconds do not go back ($k)");
}

# the reply cache: anonymous reads of the profile, through both workers
my $s3 = status();
for (1 .. 10) {
    $res = $c->request(GET => '/profile');
}
is($res->{status}, 200, 'anonymous profile reads');
my $s4 = status();
my $hits = $s4->{reply_cache}{hits} - $s3->{reply_cache}{hits};
my $misses = $s4->{reply_cache}{misses} - $s3->{reply_cache}{misses};
is($hits + $misses, 10, 'each read is a hit or a miss');
ok($hits >= 1, 'and a worker\'s second read is a hit');

# the Prometheus text format
$res = $c->request(GET => '//status?format=prometheus');
is($res->{status}, 200, 'format=prometheus');
like($res->{headers}{'content-type'} // '', qr{^text/plain; version=0\.0\.4},
     'as Prometheus\' text format');
my @lines = split /\n/, $res->{body};
my @bad = grep { !/^# (HELP|TYPE) tent_[a-z_]+ \S.*$/
                 && !/^tent_[a-z_]+(\{[a-z]+="[a-z_]+"\})? \d+(\.\d+)?$/ }
          @lines;
is_deeply(\@bad, [], 'each line is "name value" or # HELP/# TYPE')
    or diag $res->{body};

# Prometheus' naming rules: promtool where Debian's prometheus package is
# installed, and the same rules in t/lib whether or not
is_deeply([Tent::Promlint::lint($res->{body})], [],
          'the names as promtool check metrics wants them: base units, '
          . '_total on counters only, HELP and TYPE first')
    or diag $res->{body};
is_deeply([Tent::Promlint::lint(<<'OLD')],
# HELP tent_store_milliseconds_total Time.
# TYPE tent_store_milliseconds_total counter
tent_store_milliseconds_total{kind="get"} 3
# HELP tent_x_waiting_total Now.
# TYPE tent_x_waiting_total gauge
tent_x_waiting_total 1
tent_x_waiting_total 1
OLD
    ['tent_x_waiting_total: series {} twice',
     'tent_store_milliseconds_total: use base unit "seconds" instead of '
     . '"milliseconds"',
     'tent_x_waiting_total: non-counter metrics should not have "_total" '
     . 'suffix'],
    'the checker finds milliseconds, a gauge\'s _total, a series twice');
SKIP: {
    my $promtool = $ENV{TEST_PROMTOOL}
        || (grep { -x } map { "$_/promtool" } split /:/, $ENV{PATH})[0];
    skip 'no promtool (Debian\'s prometheus package)', 1 unless $promtool;
    open my $in, '|-', "'$promtool' check metrics > $ENV{TEST_NGINX_SERVER_ROOT}"
                       . "/promtool.out 2>&1" or die "promtool: $!";
    print {$in} $res->{body};
    close $in;
    my $rc = $? >> 8;
    open my $fh, '<', "$ENV{TEST_NGINX_SERVER_ROOT}/promtool.out" or die;
    my $said = do { local $/; <$fh> };
    is("$rc $said", '0 ', 'promtool check metrics finds nothing');
}

my %m = map { /^(\S+) (\d+(?:\.\d+)?)$/ ? ($1, $2) : () } @lines;
my %types = map { /^# TYPE (\S+) (\S+)$/ ? ($1, $2) : () } @lines;
my %helps = map { /^# HELP (\S+) / ? ($1, 1) : () } @lines;
my %names = map { /^(tent_[a-z_]+)/ ? ($1, 1) : () } grep { !/^#/ } @lines;
ok(!grep({ !$types{$_} || !$helps{$_} } keys %names),
   'every metric has its HELP and TYPE');
is($types{tent_deliveries_delivered_total}, 'counter', 'counters are counters');
is($types{tent_deliveries_in_flight}, 'gauge', 'the tasks running a gauge');
is($types{tent_deliveries_local_total}, 'counter',
   'same-node deliveries a counter');
my $s5 = status();
is($m{tent_deliveries_delivered_total}, $s5->{deliveries}{delivered},
   'the same counters as the JSON');
ok(defined $m{'tent_store_operations_total{kind="write"}'}
   && defined $m{'tent_store_seconds_total{kind="get"}'}
   && defined $m{'tent_nonces_capacity{budget="owner"}'},
   'store operations, their time and the nonce cache, labelled');
is($types{tent_store_background_waiting}, 'gauge',
   'background operations waiting a gauge');
is(join(',', $types{tent_store_locked} // '',
        $types{tent_store_lock_holder_pid} // '',
        $m{tent_store_locked} // '', $m{tent_store_lock_holder_pid} // ''),
   'gauge,gauge,0,0', 'the store\'s lock: gauges, 0 while it is ours');
is($m{tent_store_request_operations_total} > 0
   && defined $m{tent_store_background_operations_total}
   && defined $m{tent_store_background_deferred_total}, 1,
   'store operations by class');

# a failure then a success: one retry, one delivery; a refusal: one dead
sub post_one {
    my ($text) = @_;
    my $r = $c->request(POST => '/posts', cred => $owner,
                        body => { type => $STATUS, content => { text => $text },
                                  permissions => { public => JSON::PP::true } });
    die "post: $r->{status} $r->{body}" unless $r->{status} == 200;
}

my $s6 = status();
$rx->rules([{ method => 'POST', path => 'notifications', times => 1,
              action => { status => 503, body => 'busy' } }]);
post_one('retried once');
ok(wait_for(sub { status()->{deliveries}{delivered}
                  > $s6->{deliveries}{delivered} }, 20),
   'delivered after a 503');
wait_for(sub { status()->{deliveries}{in_flight} == 0 });
my $s7 = status();
is($s7->{deliveries}{retried} - $s6->{deliveries}{retried}, 1,
   'retried: up by one');
is($s7->{deliveries}{delivered} - $s6->{deliveries}{delivered}, 1,
   'delivered: up by one, on the second attempt');
is($s7->{deliveries}{queued} - $s6->{deliveries}{queued}, 1,
   'queued: one job (a retry is the same job)');

$rx->rules([{ method => 'POST', path => 'notifications',
              action => { status => 404, body => 'no such path' } }]);
post_one('refused');
ok(wait_for(sub { status()->{deliveries}{dead} > $s7->{deliveries}{dead} }),
   'a refusal is a dead letter');
wait_for(sub { status()->{deliveries}{in_flight} == 0 });
my $s8 = status();
is($s8->{deliveries}{dead} - $s7->{deliveries}{dead}, 1, 'dead: up by one');
is($s8->{deliveries}{delivered}, $s7->{deliveries}{delivered},
   'and not delivered');

# a reload keeps the zone, and the counters with it
reload_nginx();
sleep 1.5;
my $s9 = status();
is($s9->{deliveries}{delivered}, $s8->{deliveries}{delivered},
   'the counters survive a reload');

unlike(error_log_text(), qr/\[alert\]|exited on signal/, 'no alert, no crash');

$rx->stop;

__DATA__

=== TEST 1: GET: JSON, not cached
--- request
GET /status
--- error_code: 200
--- response_headers
Content-Type: application/json
Cache-Control: no-store
--- response_body_like: ^\{"deliveries":\{"queued":0,"in_flight":\d+,"delivered":0,
--- no_error_log
[error]



=== TEST 2: HEAD: the headers only
--- request
HEAD /status
--- error_code: 200
--- response_body:



=== TEST 3: POST is refused
--- request
POST /status
{"reset": true}
--- error_code: 405
--- response_headers
Allow: GET, HEAD
--- response_body_like: "error"



=== TEST 4: PUT, DELETE, OPTIONS and PATCH are refused
--- request eval
["PUT /status\n{}", "DELETE /status", "OPTIONS /status", "PATCH /status\n{}"]
--- error_code eval
[405, 405, 405, 405]
--- response_body_like eval
["error", "error", "error", "error"]



=== TEST 5: deny all: 403
--- request
GET /status-denied
--- error_code: 403
--- response_body_unlike: deliveries



=== TEST 6: an unknown format is a clear 400
--- request
GET /status?format=xml
--- error_code: 400
--- response_body_like: format is json or prometheus



=== TEST 7: format=json is the default's
--- request
GET /status?format=json
--- error_code: 200
--- response_body_like: ^\{"deliveries":
