# GET /posts/:id/deliveries (issue 13, part 5): how far a post got, for
# the author's apps.  A post to two followers, one answering 503 (late)
# then 200, one 404: the counts and each recipient's state move pending
# -> retrying -> delivered, and failed; attempts, last_status, times.
# The tent_status counters move with them (JSON and Prometheus).  30 more
# followers: the list pages with Link (limit=10) over all of them.  Who
# may ask: anonymous, a follower's key, an app without read_posts,
# read_followers or read_followings, or of
# another type, another entity's app in the same nginx, a received post,
# ids that do not exist or are malformed.  Bad limit, version and
# cursors are 400.  The records go tent_delivery_dead_letter_time after
# their job ended.  A follower that cannot be reached: last_error.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text
                  wait_for);
use Tent::Client;
use Tent::Receiver;
use Tent::Peer;
use JSON::PP;
use Time::HiRes qw(sleep time);

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $c = Tent::Client->new;
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $ESSAY = 'https://tent.io/types/post/essay/v0.1.0';

sub status { Tent::Util::tent_status($c) }

sub cred_of {
    my ($j) = @_;
    return { map { $_ => $j->{$_} } qw(mac_key_id mac_key mac_algorithm) };
}

sub code {
    my ($r) = @_;
    my $e = ref $r->{json} eq 'HASH' ? $r->{json}{error} : undef;
    return ($r->{status} // '') . ' ' . ($e // '');
}

my ($wapp, $owner) = $c->authorized_app(
    'write_posts,read_posts,read_followers,read_followings',
    post_types => 'all');
my ($rapp, $reader) = $c->authorized_app(
    'read_posts,read_followers,read_followings', post_types => 'all');
my (undef, $posts_only) = $c->authorized_app('read_posts',
                                             post_types => 'all');
my (undef, $no_followings) = $c->authorized_app('read_posts,read_followers',
                                                post_types => 'all');
my ($napp, $noread) = $c->authorized_app('read_followers,write_posts',
                                         post_types => 'all');
my ($eapp, $essays) = $c->authorized_app(
    'read_posts,read_followers,read_followings', post_types => $ESSAY);

# two followers: A answers 503 (after 2 s) once, then 200; B 404
my $rxa = Tent::Receiver->start;
my $rxb = Tent::Receiver->start;
my %follower;
for my $rx ($rxa, $rxb) {
    my $res = $c->request(POST => '/followers',
                          body => { entity => $rx->url, types => ['all'],
                                    notification_path => 'notifications/n' });
    is($res->{status}, 200, 'a receiver follows') or diag $res->{body};
    $follower{ $rx->url } = cred_of($res->{json});
}
wait_for(sub { status()->{deliveries}{in_flight} == 0 });
sleep 0.5;

$rxa->rules([{ method => 'POST', path => 'notifications', times => 1,
               action => { status => 503, body => 'busy', delay => 2 } }]);
$rxb->rules([{ method => 'POST', path => 'notifications',
               action => { status => 404, body => 'no such path' } }]);

my $s0 = status();
my $res = $c->request(POST => '/posts', cred => $owner,
                      body => { type => $STATUS, content => { text => 'hi' },
                                permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a post to both') or diag $res->{body};
my $id = $res->{json}{id} // '';

sub deliveries {
    my ($query, $cred) = @_;
    return $c->request(GET => "/posts/$id/deliveries" . ($query // ''),
                       cred => $cred || $reader);
}

sub by_entity {
    my $r = deliveries();
    return {} unless $r->{status} == 200;
    return { map { $_->{entity} => $_ } @{ $r->{json}{deliveries} } };
}

my $A = $rxa->url;
my $B = $rxb->url;

ok(wait_for(sub { my $d = by_entity();
                  ($d->{$A}{state} // '') eq 'pending'
                  && ($d->{$B}{state} // '') eq 'failed' }),
   'A pending (its answer is late), B failed (404)');

$res = deliveries();
is($res->{status}, 200, 'read_posts of the author: 200') or diag $res->{body};
like($res->{headers}{'content-type'} // '', qr{^application/vnd\.tent\.v0\+json},
     'JSON');
is_deeply([sort keys %{ $res->{json} }],
          [qw(counts counts_complete deliveries)], 'the answer\'s shape');
is_deeply($res->{json}{counts},
          { delivered => 0, pending => 1, retrying => 0, failed => 1 },
          'counts: 1 pending, 1 failed');
ok($res->{json}{counts_complete}, 'every record counted');
my $d = { map { $_->{entity} => $_ } @{ $res->{json}{deliveries} } };
is_deeply([sort keys %{ $d->{$A} }],
          [qw(attempts entity id last_attempt_at last_error last_status
              next_attempt_at state)], 'a recipient\'s fields');
is($d->{$A}{attempts}, 0, 'pending: no attempt done');
ok(!defined $d->{$A}{last_status} && !defined $d->{$A}{last_attempt_at},
   'pending: no status, no time yet');
is($d->{$B}{attempts}, 1, 'failed: one attempt');
is($d->{$B}{last_status}, 404, 'failed: last_status 404');
ok(!defined $d->{$B}{next_attempt_at}, 'failed: no next attempt');
ok(($d->{$B}{last_attempt_at} // 0) >= time - 60, 'failed: when');

ok(wait_for(sub { (by_entity()->{$A}{state} // '') eq 'retrying' }),
   'A retrying after its 503');
$d = by_entity();
is($d->{$A}{attempts}, 1, 'retrying: one attempt');
is($d->{$A}{last_status}, 503, 'retrying: last_status 503');
ok(!defined $d->{$A}{last_error}, 'retrying: an HTTP answer, no error');
ok(($d->{$A}{next_attempt_at} // 0) >= $d->{$A}{last_attempt_at},
   'retrying: the next attempt comes after the last');
is_deeply(deliveries()->{json}{counts},
          { delivered => 0, pending => 0, retrying => 1, failed => 1 },
          'counts: 1 retrying, 1 failed');

ok(wait_for(sub { (by_entity()->{$A}{state} // '') eq 'delivered' }),
   'A delivered on its second attempt');
$d = by_entity();
is($d->{$A}{attempts}, 2, 'delivered: two attempts');
is($d->{$A}{last_status}, 200, 'delivered: last_status 200');
ok(!defined $d->{$A}{next_attempt_at}, 'delivered: no next attempt');
is_deeply(deliveries()->{json}{counts},
          { delivered => 1, pending => 0, retrying => 0, failed => 1 },
          'counts: 1 delivered, 1 failed');

# HEAD: the headers only
$res = $c->request(HEAD => "/posts/$id/deliveries", cred => $reader);
is($res->{status}, 200, 'HEAD: 200');
is($res->{body} // '', '', 'HEAD: no body');

# the operator's counters moved as the records did
wait_for(sub { status()->{deliveries}{in_flight} == 0 });
my $s1 = status();
is($s1->{deliveries}{queued} - $s0->{deliveries}{queued}, 2,
   'tent_status: 2 queued');
is($s1->{deliveries}{retried} - $s0->{deliveries}{retried}, 1,
   'tent_status: 1 retried');
is($s1->{deliveries}{delivered} - $s0->{deliveries}{delivered}, 1,
   'tent_status: 1 delivered');
is($s1->{deliveries}{dead} - $s0->{deliveries}{dead}, 1,
   'tent_status: 1 dead');
$res = $c->request(GET => '//status?format=prometheus');
my %m = map { /^(\S+) (\d+)$/ ? ($1, $2) : () } split /\n/, $res->{body};
is($m{tent_deliveries_delivered_total}, $s1->{deliveries}{delivered},
   'prometheus: delivered as in the JSON');
is($m{tent_deliveries_dead_total}, $s1->{deliveries}{dead},
   'prometheus: dead as in the JSON');
is($m{tent_deliveries_retried_total}, $s1->{deliveries}{retried},
   'prometheus: retried as in the JSON');
is($m{tent_deliveries_queued_total}, $s1->{deliveries}{queued},
   'prometheus: queued as in the JSON');

# ---- who may ask

my $other = Tent::Client->new(host => 'other.test');
my (undef, $other_owner) = $other->authorized_app(
    'read_posts,read_followers,read_followings,write_posts',
    post_types => 'all');

# a post another entity sent us (a follower's key on POST /posts)
my $rid = 'received' . int(rand(1e9));
$res = $c->request(POST => '/posts', cred => $follower{$A},
                   body => { id => $rid, entity => $A, type => $STATUS,
                             content => { text => 'from A' },
                             published_at => int(time),
                             permissions => { public => JSON::PP::true } });
ok($res->{status} == 200, 'a post received from A') or diag $res->{body};
$res = $c->request(GET => '/posts/' . Tent::Client::uri_escape($A) . "/$rid",
                   cred => $reader);
is($res->{status}, 200, 'it is stored, as A\'s');

my $private = $c->request(POST => '/posts', cred => $owner,
                          body => { type => $STATUS,
                                    content => { text => 'private' } });
is($private->{status}, 200, 'a private post');
my $pid = $private->{json}{id};

for my $t (
    ['anonymous', "/posts/$id/deliveries", undef, '403 Unauthorized'],
    ['anonymous, a private post', "/posts/$pid/deliveries", undef,
     '403 Unauthorized'],
    ['anonymous, no such post', '/posts/nosuchpost/deliveries', undef,
     '403 Unauthorized'],
    ['a follower\'s key', "/posts/$id/deliveries", $follower{$A},
     '403 Unauthorized'],
    ['a follower\'s key, a private post', "/posts/$pid/deliveries",
     $follower{$B}, '403 Unauthorized'],
    ['an app without read_posts', "/posts/$id/deliveries", $noread,
     '403 Unauthorized'],
    ['read_posts alone (private followers are not its)',
     "/posts/$pid/deliveries", $posts_only, '403 Unauthorized'],
    ['read_posts alone, the public post', "/posts/$id/deliveries",
     $posts_only, '403 Unauthorized'],
    ['without read_followings', "/posts/$id/deliveries", $no_followings,
     '403 Unauthorized'],
    ['the app\'s own a: key', "/posts/$id/deliveries", cred_of($rapp),
     '403 Unauthorized'],
    ['another entity\'s app', "/posts/$id/deliveries", $other_owner,
     '401 Invalid MAC Key ID'],
    ['read_posts of essays only, a status', "/posts/$id/deliveries",
     $essays, '404 Not Found'],
    ['read_posts of essays only, no such post',
     '/posts/nosuchpost/deliveries', $essays, '404 Not Found'],
    ['a received post\'s id', "/posts/$rid/deliveries", $reader,
     '404 Not Found'],
    ['a post that does not exist', '/posts/nosuchpost/deliveries', $reader,
     '404 Not Found'],
    ['a malformed id', '/posts/a%2Eb/deliveries', $reader, '404 Not Found'],
    ['an id too long', '/posts/' . ('x' x 65) . '/deliveries', $reader,
     '404 Not Found'],
    ['read_posts, the private post', "/posts/$pid/deliveries", $reader,
     '200 '],
    ['read_posts, the public post', "/posts/$id/deliveries", $reader,
     '200 '])
{
    my ($what, $path, $cred, $want) = @$t;
    $res = $c->request(GET => $path, $cred ? (cred => $cred) : ());
    is(code($res), $want, "$what: $want");
    unlike($res->{body} // '', qr/\Q$A\E|\Q$B\E/, "$what: no follower named")
        unless $want =~ /^200/;
}

# the other entity's own app on its own post: its deliveries, not ours
$res = $other->request(POST => '/posts', cred => $other_owner,
                       body => { type => $STATUS, content => { text => 'o' },
                                 permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'the other entity posts');
my $oid = $res->{json}{id};
is(code($other->request(GET => "/posts/$id/deliveries",
                        cred => $other_owner)), '404 Not Found',
   'the other entity\'s app on its host: our post is not its');
is(code($c->request(GET => "/posts/$oid/deliveries", cred => $reader)),
   '404 Not Found', 'our app: the other entity\'s post is not ours');

$res = $c->request(POST => "/posts/$id/deliveries", cred => $reader,
                   body => {});
is($res->{status}, 405, 'POST: 405');

# ---- bad input

for my $q ('?limit=0', '?limit=-1', '?limit=abc', '?limit=',
           '?version=0', '?version=abc', '?version=99999999999',
           '?before_id=', '?before_id=%00', '?since_id=a%20b',
           '?since_id=' . ('x' x 3000), '?before_id=%0D%0A')
{
    $res = deliveries($q);
    is($res->{status}, 400, "$q: 400");
    like($res->{body} // '', qr/^\{"error":"Invalid (limit|version|cursor)"\}$/,
         "$q: a JSON error");
}
is(deliveries('?limit=500')->{status}, 200, 'a limit over 200: at most 200');
is(deliveries('?version=1')->{status}, 200, 'version=1: 200');
$res = deliveries('?version=7');
is($res->{status}, 404, 'a version the post does not have: 404');

# ---- pages: 30 more followers (a second nginx plays them)

my $core = '{"https://tent.io/types/info/core/v0.1.0":{"entity":"$URL/$1",'
         . '"licenses":[],"servers":["$URL/$1/tent"]}}';
my $many = Tent::Peer->start(worker_processes => 1, server_config => <<CONF);
        location ~ ^/(f[0-9]+)\$ {
            add_header  Link '</\$1/tent/profile>; rel="https://tent.io/rels/profile"';
            return      200 'follower';
        }

        location ~ ^/(f[0-9]+)/tent/profile\$ {
            default_type  application/vnd.tent.v0+json;
            return        200 '$core';
        }

        location ~ ^/f[0-9]+/tent/notifications/ {
            default_type  text/plain;
            if (\$request_method = GET) {
                return 200 \$arg_challenge;
            }
            return 200 '';
        }
CONF
my $U = $many->url;
my $N = 30;
my $bad = 0;
for my $i (1 .. $N) {
    $res = $c->request(POST => '/followers',
                       body => { entity => "$U/f$i", types => [$STATUS],
                                 notification_path => 'notifications/n' });
    $bad++ unless $res->{status} == 200;
}
is($bad, 0, "$N more followers");

$res = $c->request(POST => '/posts', cred => $owner,
                   body => { type => $STATUS, content => { text => 'all' },
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a post to all of them');
$id = $res->{json}{id};

ok(wait_for(sub { my $k = deliveries()->{json}{counts} || {};
                  ($k->{delivered} // 0) == $N + 1
                  && ($k->{failed} // 0) == 1 }, 60),
   'counts: all delivered but B, failed')
    or diag encode_json(deliveries()->{json}{counts} || {});

my (@all, @pages, $url);
$url = "/posts/$id/deliveries?limit=10";
for (1 .. 10) {
    $res = $c->request(GET => $url, cred => $reader);
    last unless $res->{status} == 200;
    push @pages, $res;
    push @all, map { $_->{id} } @{ $res->{json}{deliveries} };
    my ($next) = ($res->{headers}{link} // '') =~ /<([^>]+)>; rel="next"/;
    last unless $next;
    ($url = $next) =~ s{^/tent}{};
}
my %seen;
is(scalar(grep { !$seen{$_}++ } @all), $N + 2,
   'the pages cover every recipient');
is(scalar @all, $N + 2, 'none twice');
is(scalar @{ $pages[0]{json}{deliveries} }, 10, 'a page holds the limit');
is_deeply($pages[1]{json}{counts}, $pages[0]{json}{counts},
          'every page has the counts');
my ($prev) = ($pages[1]{headers}{link} // '') =~ /<([^>]+)>; rel="prev"/;
ok($prev, 'the second page links to the first');
($url = $prev // '') =~ s{^/tent}{};
$res = $c->request(GET => $url, cred => $reader);
is_deeply([map { $_->{id} } @{ $res->{json}{deliveries} || [] }],
          [map { $_->{id} } @{ $pages[0]{json}{deliveries} }],
          'prev: the first page again');

# ---- kept tent_delivery_dead_letter_time after the end, then gone

ok(wait_for(sub { my $r = deliveries();
                  $r->{status} == 200
                  && @{ $r->{json}{deliveries} } == 0 }, 60),
   'the records go after tent_delivery_dead_letter_time');
is_deeply(deliveries()->{json}{counts},
          { delivered => 0, pending => 0, retrying => 0, failed => 0 },
          'counts: nothing left');
like(error_log_text(), qr/ended deliveries' records expired|dead letters expired/,
     'the prune ran');

# ---- a follower no one answers for: no status, and why

my $rxc = Tent::Receiver->start;
my $C = $rxc->url;
$res = $c->request(POST => '/followers',
                   body => { entity => $C, types => [$STATUS],
                             notification_path => 'notifications/n' });
is($res->{status}, 200, 'C follows') or diag $res->{body};
$rxc->stop;
$res = $c->request(POST => '/posts', cred => $owner,
                   body => { type => $STATUS, content => { text => 'C?' },
                             permissions => { public => JSON::PP::true } });
$id = $res->{json}{id};
ok(wait_for(sub { (by_entity()->{$C}{state} // '') eq 'retrying' }),
   'C retrying: its server is gone');
$d = by_entity();
ok(!defined $d->{$C}{last_status}, 'no answer: no last_status');
is($d->{$C}{last_error}, 'could not connect', 'last_error says why');

unlike(error_log_text(), qr/\[alert\]|exited on signal/, 'no alert, no crash');

$many->stop;
$rxa->stop;
$rxb->stop;

__DATA__

=== TEST 1: anonymous: 403, whatever the id
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 5s;
    tent_delivery_interval 200ms;
    tent_delivery_retry 3s 6s;
    tent_delivery_dead_letter_time 12s;
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name other.test;
        tent_entity http://other.test;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize { tent_owner "the owner"; }
    location = /status { tent_status; }
--- request
GET /tent/posts/abc/deliveries
--- error_code: 403
--- response_body: {"error":"Unauthorized"}



=== TEST 2: a method it does not take
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 5s;
    tent_delivery_interval 200ms;
    tent_delivery_retry 3s 6s;
    tent_delivery_dead_letter_time 12s;
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name other.test;
        tent_entity http://other.test;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize { tent_owner "the owner"; }
    location = /status { tent_status; }
--- request
DELETE /tent/posts/abc/deliveries
--- error_code: 405
--- response_headers
Allow: GET, HEAD
