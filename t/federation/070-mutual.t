# Mutual relationships get one copy (issue #13 part 7): a profile post
# goes to our followers at their notification path and to our followings
# at their /posts (spec 9.4); an entity that is both gets it once, on the
# follower's path, as tentd's notify_entity (Follower.first ||
# Following.first).  Scripted receivers play the other entities: one we
# follow that follows us, one we only follow, one that only follows us,
# and one both ways whose follower subscription leaves profile posts out.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text);
use Tent::Client;
use Tent::Receiver;
use JSON::PP;
use Time::HiRes qw(sleep time);
*uri_escape = \&Tent::Client::uri_escape;

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $c = Tent::Client->new;
my $T = 'https://tent.io/types/post/';
my $STATUS = "${T}status/v0.1.0";
my $PROFILE = "${T}profile/v0.1.0";
my $INFO = 'https://example.org/types/info/mood/v0.1.0';

my (undef, $owner) = $c->authorized_app(
    'write_posts,read_posts,read_followers,write_followers,'
    . 'read_followings,write_followings,write_profile',
    post_types => 'all', info_types => 'all');

# we follow it: a confirmed following, told at its /posts
sub we_follow {
    my ($rx) = @_;
    my $res = $c->request(POST => '/followings', cred => $owner,
                          body => { entity => $rx->url });
    die "following: $res->{status} $res->{body}" unless $res->{status} == 200;
    return $res->{json};
}

# it follows us: a follower, told at /tent/notifications/n
sub follows_us {
    my ($rx, %o) = @_;
    my $res = $c->request(POST => '/followers',
                          body => { entity => $o{spelling} || $rx->url,
                                    types => $o{types} || ['all'],
                                    notification_path => 'notifications/n' });
    die "follower: $res->{status} $res->{body}" unless $res->{status} == 200;
    return $res->{json};
}

# the paths a post came to a receiver at, by the post's id
sub copies {
    my ($rx, $id) = @_;
    return map { $_->{path} }
           grep { (eval { decode_json($_->{body})->{id} } // '') eq $id }
           $rx->requests(method => 'POST');
}

sub wait_copies {
    my ($id, @rx) = @_;
    my $end = time + 15;
    sleep 0.1 while time < $end && grep { !copies($_, $id) } @rx;
}

sub post { $c->post_ok($owner, {@_})->{id} }

my $NOTE = '/tent/notifications/n';
my $POSTS = '/tent/posts';

my $mutual = Tent::Receiver->start;
my $fonly = Tent::Receiver->start;
my $ronly = Tent::Receiver->start;
my $picky = Tent::Receiver->start;

we_follow($_) for $mutual, $fonly, $picky;
# the follower spelled otherwise: kept, and compared, normalized
follows_us($mutual, spelling => $mutual->url . '/');
follows_us($ronly);
follows_us($picky, types => [$STATUS]);

my $res = $c->request(GET => '/followings', cred => $owner);
is(scalar(grep { $_->{confirmed} // 1 } @{ $res->{json} || [] }), 3,
   'three followings') or diag $res->{body};
$res = $c->request(GET => '/followers', cred => $owner);
is(scalar @{ $res->{json} || [] }, 3, 'three followers');

# --- a profile change ----------------------------------------------------

$res = $c->request(PUT => '/profile/' . uri_escape($INFO), cred => $owner,
                   body => { mood => 'mutual',
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'the profile changes') or diag $res->{body};

$res = $c->request(GET => '/posts?limit=1&post_types=' . uri_escape($PROFILE),
                   cred => $owner);
my $p1 = $res->{json}[0]{id} // '';
ok($p1, 'its profile post') or diag $res->{body};

wait_copies($p1, $mutual, $fonly, $ronly, $picky);
sleep 2;    # a second copy would be sent in the same pass

is_deeply([copies($mutual, $p1)], [$NOTE],
          'the mutual entity: one copy, at its notification path');
is_deeply([copies($fonly, $p1)], [$POSTS],
          'a following only: its copy at /posts');
is_deeply([copies($ronly, $p1)], [$NOTE],
          'a follower only: its copy at its notification path');
is_deeply([copies($picky, $p1)], [$POSTS],
          'mutual, its follower not subscribed to profile posts: '
          . 'one copy, as a following');

# --- a profile post written through POST /posts: the same ----------------

my $p2 = post(type => $PROFILE,
              content => { types => [$INFO], action => 'update' },
              permissions => { public => JSON::PP::true });

wait_copies($p2, $mutual, $fonly, $ronly, $picky);
sleep 2;

is_deeply([copies($mutual, $p2)], [$NOTE],
          'a posted profile post: one copy to the mutual entity');
is_deeply([copies($fonly, $p2)], [$POSTS], 'one to the following');
is_deeply([copies($ronly, $p2)], [$NOTE], 'one to the follower');
is_deeply([copies($picky, $p2)], [$POSTS],
          'one to the picky mutual entity, as a following');

# --- a private profile post naming another entity ------------------------

my $p3 = post(type => $PROFILE,
              content => { types => [$INFO], action => 'update' },
              permissions => { entities => { $ronly->url => JSON::PP::true } });
# a public status after it: the mutual entity's copy shows the pass ran
my $p4 = post(type => $STATUS, content => { text => 'to followers' },
              permissions => { public => JSON::PP::true });

wait_copies($p3, $ronly);
wait_copies($p4, $mutual, $ronly, $picky);
sleep 2;

is_deeply([copies($ronly, $p3)], [$NOTE],
          'a private profile post: to the follower it names, once');
is_deeply([copies($mutual, $p3)], [],
          'not to the mutual entity it does not name, on neither path');
is_deeply([copies($picky, $p3)], [], 'nor to the picky one');
is_deeply([copies($fonly, $p3)], [], 'nor to a following');

is_deeply([copies($mutual, $p4)], [$NOTE],
          'a status: once to the mutual entity, as a follower');
is_deeply([copies($picky, $p4)], [$NOTE], 'and to the picky one');
is_deeply([copies($fonly, $p4)], [],
          'a following hears of profile posts only');

unlike(error_log_text(), qr/\[alert\]|exited on signal/,
       'no alert, no crash');

$_->stop for $mutual, $fonly, $ronly, $picky;

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
