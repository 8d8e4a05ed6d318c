# Delivery of posts to followers (spec 9.2) from the queue in the store:
# real receivers on loopback follow the entity; each gets the posts it
# may see, signed with its own credential; a failure is retried later, a
# refusal is not; the POST never waits for fan-out; and a crash (SIGKILL
# of every nginx process) loses no delivery.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text
                  master_pid);
use Tent::Client;
use Tent::Receiver;
use Tent::MAC qw(mac_header);
use JSON::PP;
use Time::HiRes qw(sleep time);

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $c = Tent::Client->new;
my $T = 'https://tent.io/types/post/';
my $STATUS = "${T}status/v0.1.0";
my $ESSAY = "${T}essay/v0.1.0";

my ($wapp, $owner) = $c->authorized_app(
    'write_posts,read_posts,read_followers,write_followers,write_groups',
    post_types => 'all');

sub follow {
    my ($rx, %o) = @_;
    my $res = $c->request(POST => '/followers',
                          body => { entity => $rx->url,
                                    types => $o{types} || ['all'],
                                    notification_path => 'notifications/n' });
    die "follow: $res->{status} $res->{body}" unless $res->{status} == 200;
    return $res->{json};
}

sub post { $c->post_ok($owner, {@_}) }

sub notes {
    my ($rx) = @_;
    return grep { $_->{method} eq 'POST' && $_->{path} =~ m{/notifications/n$} }
           $rx->requests;
}

sub wait_notes {
    my ($rx, $n, $secs) = @_;
    my $end = time + ($secs || 15);
    my @got;
    while (time < $end) {
        @got = notes($rx);
        last if @got >= $n;
        sleep 0.1;
    }
    return @got;
}

# the notifications of one post (follows make follower posts too)
sub wait_post {
    my ($rx, $id, $secs) = @_;
    my $end = time + ($secs || 15);
    while (time < $end) {
        my @got = grep { (eval { decode_json($_->{body})->{id} } // '') eq $id }
                  notes($rx);
        return @got if @got;
        sleep 0.1;
    }
    return;
}

# a MAC over what the receiver saw, with the follower's credential
sub mac_ok {
    my ($req, $cred, $rx) = @_;
    my $h = $req->{headers}{authorization} // '';
    my %a = $h =~ /(\w+)="([^"]*)"/g;
    return 0 unless ($a{id} // '') eq $cred->{mac_key_id};
    my $want = mac_header(id => $a{id}, key => $cred->{mac_key},
                          algorithm => $cred->{mac_algorithm},
                          method => 'POST', uri => $req->{path},
                          host => '127.0.0.1', port => $rx->port,
                          ts => $a{ts}, nonce => $a{nonce});
    return $want eq $h;
}

my $all = Tent::Receiver->start;
my $essays = Tent::Receiver->start;
my $named = Tent::Receiver->start;
my $grouped = Tent::Receiver->start;

my $f_all = follow($all);
my $f_essays = follow($essays, types => [$ESSAY]);
my $f_named = follow($named);
my $f_grouped = follow($grouped);

my $res = $c->request(POST => '/groups', cred => $owner,
                      body => { name => 'close' });
my $gid = $res->{json}{id};
$c->request(PUT => "/followers/$f_grouped->{id}", cred => $owner,
            body => { groups => [{ id => $gid }] });

# a public status: every follower of all types
my $p1 = post(type => $STATUS, content => { text => 'to everyone' },
              permissions => { public => JSON::PP::true });

my @n = wait_post($all, $p1->{id});
is(scalar @n, 1, 'a follower of all types gets the public post');
my $body = eval { decode_json($n[0]{body}) } || {};
is($body->{id}, $p1->{id}, 'the post itself');
is($body->{entity}, $p1->{entity}, 'of our entity');
ok(!exists $body->{rus}, 'without internal fields');
ok(mac_ok($n[0], $f_all, $all), 'signed with the follower\'s s: credential');
like($n[0]{headers}{'content-type'} // '', qr{application/vnd\.tent\.v0\+json},
     'as Tent JSON');
ok(scalar wait_post($named, $p1->{id}), 'the named follower too');
ok(scalar wait_post($grouped, $p1->{id}), 'and the grouped one');

# an essay: the essay subscriber gets it
my $p2 = post(type => $ESSAY, content => { body => 'long read' },
              permissions => { public => JSON::PP::true });
@n = wait_post($essays, $p2->{id});
is(scalar @n, 1, 'the essay subscriber gets the essay');
is(eval { decode_json($n[0]{body})->{id} } // '', $p2->{id}, 'that one');
ok(!grep({ (eval { decode_json($_->{body})->{id} } // '') eq $p1->{id} }
         notes($essays)), 'and not the status');

# private posts: to the named entity, to the group
my $p3 = post(type => $STATUS, content => { text => 'just you' },
              permissions => { entities => { $named->url => JSON::PP::true } });
my $p4 = post(type => $STATUS, content => { text => 'the group' },
              permissions => { groups => [{ id => $gid }] });
my $p5 = post(type => $STATUS, content => { text => 'no one' },
              permissions => {});

wait_post($named, $p3->{id});
wait_post($grouped, $p4->{id});
sleep 1;

sub ids_of { map { eval { decode_json($_->{body})->{id} } // '' } notes($_[0]) }
my %named_got = map { $_ => 1 } ids_of($named);
my %grouped_got = map { $_ => 1 } ids_of($grouped);
my %all_got = map { $_ => 1 } ids_of($all);

ok($named_got{ $p3->{id} }, 'the named follower gets the post for it');
ok(!$named_got{ $p4->{id} }, 'not the group\'s');
ok($grouped_got{ $p4->{id} }, 'the group member gets the group\'s post');
ok(!$grouped_got{ $p3->{id} }, 'not the one for another entity');
ok(!$all_got{ $p3->{id} } && !$all_got{ $p4->{id} },
   'an unrelated follower gets neither');
ok(!grep({ $_->{ $p5->{id} } } \%named_got, \%grouped_got, \%all_got),
   'a private post goes to no one');
is(scalar(grep { $_ eq $p1->{id} } ids_of($all)), 1,
   'each post once per follower');

# a failure is retried; a refusal is not
$all->clear;
$all->rules([{ method => 'POST', path => 'notifications', times => 2,
               action => { status => 503, body => 'busy' } }]);
my $p6 = post(type => $STATUS, content => { text => 'retried' },
              permissions => { public => JSON::PP::true });
# counted by post: a late notification of an earlier post may come too
sub of_post {
    my ($rx, $id) = @_;
    return grep { (eval { decode_json($_->{body})->{id} } // '') eq $id }
           notes($rx);
}
my $end = time + 30;
sleep 0.1 while time < $end && of_post($all, $p6->{id}) < 3;
is(scalar of_post($all, $p6->{id}), 3,
   'two 503s, then delivered on the third attempt');
sleep 1.5;
is(scalar of_post($all, $p6->{id}), 3, 'and not again once taken');

$essays->clear;
$essays->rules([{ method => 'POST', path => 'notifications',
                  action => { status => 404, body => 'no such path' } }]);
post(type => $ESSAY, content => { body => 'refused' },
     permissions => { public => JSON::PP::true });
@n = wait_notes($essays, 1);
is(scalar @n, 1, 'a 404 from the follower');
sleep 3;
is(scalar notes($essays), 1, 'is not retried');
like(error_log_text(), qr/refused the post \(404\)/, 'and is logged');

# a follower taken out of a group while the job of a post to that group
# is retried: the job reads the follower's record as it is now, and the
# post no longer names it: settled, nothing sent (it used to go: found
# by review; a post's permissions do not change with a version, its
# readers may).  The receiver answers 503 until then, so no attempt can
# pass before the change.
$grouped->clear;
$grouped->rules([{ method => 'POST', path => 'notifications',
                   action => { status => 503, body => 'busy' } }]);
my $was = () = error_log_text() =~ /not for this entity as it is now/g;
my $pg = post(type => $STATUS, content => { text => 'for the group only' },
              permissions => { groups => [{ id => $gid }] });
sub of_grouped { grep { ($_->{body} // '') =~ /for the group only/ }
                 notes($grouped) }
$end = time + 15;
sleep 0.1 while time < $end && of_grouped() < 1;
ok(scalar of_grouped() >= 1, 'the first attempt answered 503');
$res = $c->request(PUT => "/followers/$f_grouped->{id}", cred => $owner,
                   body => { groups => [] });
is($res->{status}, 200, 'the follower out of the group') or diag $res->{body};
# a retry after it: settled with nothing sent (a debug line)
$end = time + 20;
sleep 0.1 while time < $end
    && (() = error_log_text() =~ /not for this entity as it is now/g) <= $was;
ok((() = error_log_text() =~ /not for this entity as it is now/g) > $was,
   'a retry found the post no longer for that follower');
my $tried = of_grouped();
sleep 2.5;      # longer than the longest retry (tent_delivery_retry 1s 2s)
is(scalar of_grouped(), $tried, 'and the job is over: no attempt since');
$grouped->rules([]);

# the POST does not wait: a follower that hangs
$all->clear;
$all->rules([{ method => 'POST', path => 'notifications', action => 'hang' }]);
my $p7 = $c->request(POST => '/posts', cred => $owner,
                     body => { type => $STATUS, content => { text => 'hang' },
                               permissions => { public => JSON::PP::true } });
is($p7->{status}, 200, 'a post while a follower hangs is acknowledged')
    or diag $p7->{body};
ok(scalar wait_notes($all, 1) >= 1, 'the delivery is under way meanwhile');

# a crash loses nothing: the receiver is down, nginx is killed, restarted
$all->stop;
my $p8 = post(type => $STATUS, content => { text => 'survives a crash' },
              permissions => { public => JSON::PP::true });
sleep 1.5;
my $mpid = master_pid();
my @kids = split ' ', `pgrep -P $mpid`;
kill 'KILL', $mpid, @kids;
for (1 .. 100) {
    last unless grep { kill 0, $_ } $mpid, @kids;
    sleep 0.1;
}
my $back = Tent::Receiver->start(port => $all->port);
start_last_nginx();

my @late = wait_post($back, $p8->{id}, 30);
is(scalar @late, 1, 'after SIGKILL and a restart the post is delivered, once');

unlike(error_log_text(), qr/\[alert\]|exited on signal/,
       'no alert, no crash');

$_->stop for $back, $essays, $named, $grouped;

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 200ms;
    tent_delivery_retry 1s 2s;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/posts
--- error_code: 200
--- response_body: []
