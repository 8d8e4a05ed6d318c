# Move announcements cost passes over every post we keep bounded by the
# day, not by the announcers (issue 26; docs/move.md): anyone can follow
# us and then announce a move, and each re-keying read every post we keep
# for its mentions (8 throw-away followers: 424 store scans of 3,000
# posts).  Now each announcement records its mapping, one pass at a time
# applies all those recorded (one running: later ones joined to it), at
# most 4 passes a day; beyond, the mapping waits for the next pass, the
# rest of the re-keying (the announcer's own rows) done as before.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text);
use Tent::Client;
use Tent::Receiver;
use JSON::PP;
*uri_escape = \&Tent::Client::uri_escape;

master_on();
workers(2);
no_shuffle();
log_level('debug');
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $F = "http://127.0.0.1:" . ($ENV{TEST_NGINX_SERVER_PORT} || 1984);
my $c = Tent::Client->new;
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $PROFILE = 'https://tent.io/types/post/profile/v0.1.0';
my $CORE = 'https://tent.io/types/info/core/v0.1.0';
my $TENT_CT = 'application/vnd.tent.v0+json';
my $T = JSON::PP::true;
my $N = 8;

my (undef, $owner) = $c->authorized_app('read_posts,write_posts',
                                        post_types => 'all');

# the announcers O1..O8, each with its successor N1..N8 that lists it
my (@o, @n);
for my $i (1 .. $N) {
    my $old = Tent::Receiver->start;
    my $new = Tent::Receiver->start;
    $new->rules([{ method => 'GET', path => '^/tent/profile$',
                   action => { status => 200,
                               headers => { 'Content-Type' => $TENT_CT },
                               body => { $CORE => {
                                   entity => $new->url, licenses => [],
                                   servers => [$new->url . '/tent'],
                                   previous_entities => [$old->url] } } } }]);
    push @o, $old;
    push @n, $new;
}

# posts we keep: 150 of ours, one mentioning O1, one O8
sub post {
    my (%b) = @_;
    my $r = $c->post($owner, { type => $STATUS,
                               permissions => { public => $T }, %b });
    return $r->{json}{id};
}
my $m1 = post(content => { text => 'hi O1' },
              mentions => [{ entity => $o[0]->url }]);
my $m8 = post(content => { text => 'hi O8' },
              mentions => [{ entity => $o[-1]->url }]);
post(content => { text => "post $_" }) for 1 .. 150;
ok($m1 && $m8, 'F keeps 152 posts, two mentioning O1 and O8');

sub mentions_of {
    my ($id) = @_;
    my $r = $c->request(GET => "/posts/$id", cred => $owner);
    return $r->{json}{mentions}[0]{entity} // '';
}

# each O follows F (anyone can), then says it is its N
sub scans { () = error_log_text() =~ /phase 2: \d+ rows/g }

my $per_pass;
for my $i (0 .. $N - 1) {
    my $O = $o[$i];
    my $res = $c->request(POST => '/followers',
                          body => { entity => $O->url, types => ['all'],
                                    licenses => [],
                                    notification_path => 'notifications/x' });
    is($res->{status}, 200, "O$i follows F") or diag $res->{body};
    my $cred = { map { $_ => $res->{json}{$_} }
                 qw(mac_key_id mac_key mac_algorithm) };
    $O->rules([{ method => 'GET', path => '^/tent/profile$',
                 action => { status => 200,
                             headers => { 'Content-Type' => $TENT_CT },
                             body => { $CORE => {
                                 entity => $n[$i]->url, licenses => [],
                                 servers => [$n[$i]->url . '/tent'],
                                 previous_entities => [$O->url] } } } }]);
    $res = $c->request(POST => '/posts', cred => $cred,
                       body => { id => "mv$i", entity => $O->url,
                                 type => $PROFILE, version => 1,
                                 published_at => time,
                                 permissions => { public => $T },
                                 content => { types => [$CORE],
                                              action => 'update' } });
    is($res->{status}, 200, "O$i announces its move: 200")
        or diag $res->{body};
    $per_pass //= scans();
}

ok($per_pass, "a pass over F's posts is $per_pass scans");
my $scans = scans();
cmp_ok($scans, '<=', 4 * $per_pass,
       "$N announcements: at most 4 passes over every post ($scans scans)");

# every follower re-keyed all the same (its own rows: bounded by them)
for my $i (0 .. $N - 1) {
    my $r = $c->request(GET => '/followers?entity=' . uri_escape($n[$i]->url));
    is(scalar @{ $r->{json} || [] }, 1, "F's follower O$i is N$i now");
}

is(mentions_of($m1), $n[0]->url, "a pass re-keyed O1's mention: N1");
is(mentions_of($m8), $o[-1]->url,
   "O8's mention waits for the next pass (the day's passes spent)");
like(error_log_text(), qr/mentions deferred to the next pass/,
     'said in the log');

$_->stop for @o, @n;

unlike(error_log_text(), qr/\[alert\]|\[emerg\]|exited on signal/,
       'no alert, no crash in the error log');

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/posts
--- error_code: 200
