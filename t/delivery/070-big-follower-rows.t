# Followers with big profiles (issue #13 review): a follower's row keeps
# its discovered profile (up to 64 KB), and the store ends a scan at 16 MB
# whatever its row limit.  Three hundred followers with profiles of 60 KB,
# who followed first, make the first scan of the followers come back
# short of its 500 rows.  A short batch is no end:
# the thirty followers after them still get the post (before, the fan-out
# stopped there, so anyone able to follow 300 times could keep a post
# from everyone after them), and GET /followers/count counts them all.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text wait_for
                  follower_host_config follow_many);
use Tent::Client;
use Tent::Peer;
use JSON::PP;

master_on();
workers(1);
log_level('info');
no_shuffle();
run_tests();

if ($ENV{TEST_NGINX_USE_VALGRIND}) {
    pass('skipped under valgrind');
    exit 0;
}

start_last_nginx();
END { stop_last_nginx() }

my $BIG = 300;
my $SMALL = 30;
my $c = Tent::Client->new;
my (undef, $owner) = $c->authorized_app('write_posts,read_followers',
                                        post_types => 'all');

# b<i>: a profile of 60 KB, a file in the receiver's html; f<i>: small
my $rx = Tent::Peer->start(worker_processes => 1,
                           http_config => <<HTTP,
    tent_store  \$SERVROOT/tent_temp;
    log_format  notes  '\$request_method \$uri \$status';
HTTP
                           server_config => follower_host_config(
                               names => '[bf][0-9]+', log => 'notes',
                               first => <<FIRST));
        location ~ ^/(b[0-9]+)/tent/profile\$ {
            default_type  application/vnd.tent.v0+json;
            alias         \$SERVROOT/html/\$1.json;
        }

FIRST
my $U = $rx->url;
my $html = $rx->servroot . '/html';
mkdir $html;

for my $i (1 .. $BIG) {
    open(my $fh, '>', "$html/b$i.json") or die "$html/b$i.json: $!";
    print {$fh} encode_json({
        'https://tent.io/types/info/core/v0.1.0' => {
            entity => "$U/b$i", licenses => [], servers => ["$U/b$i/tent"] },
        'https://example.com/types/info/pad/v0.1.0' => {
            pad => 'p' x 60_000 } });
    close $fh;
}

my ($bad) = follow_many($c, $U, [(map { "b$_" } 1 .. $BIG),
                                 (map { "f$_" } 1 .. $SMALL)],
                        types => ['all']);
is($bad, 0, ($BIG + $SMALL) . ' entities follow, the big ones first');

my $res = $c->request(GET => '/followers/count', cred => $owner);
is($res->{status}, 200, 'the followers counted');
is($res->{body}, $BIG + $SMALL, 'all of them, past the big rows');

$res = $c->request(POST => '/posts', cred => $owner,
                   body => { type => 'https://tent.io/types/post/status/v0.1.0',
                             content => { text => 'to all of you' },
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a public post');

my $notes = $rx->servroot . '/logs/notes.log';
sub got {
    my %got;
    open(my $fh, '<', $notes) or return {};
    while (<$fh>) {
        $got{$1}++ if m{^POST /([bf]\d+)/tent/notifications/n 200};
    }
    return \%got;
}
ok(wait_for(sub { keys %{ got() } >= $BIG + $SMALL }, 60),
   'every follower got the post');
my $got = got();
is(scalar(grep { /^f/ } keys %$got), $SMALL,
   "the $SMALL small followers after the big ones too");
is(scalar(grep { /^b/ } keys %$got), $BIG, "and the $BIG big ones");
unlike(error_log_text(), qr/\[(alert|crit|emerg)\]|exited on signal/,
       'no alert, no crash');

$rx->stop;

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_delivery_interval 100ms;
    tent_delivery_retry 200ms 1s;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/followers/count
--- error_code: 200
--- response_body: 0
