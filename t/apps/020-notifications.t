# Notifications to apps (spec 9.2): an authorization with a notification
# URL subscribes its app to posts of its types: our public ones, and
# private ones and those we receive from others when it has read_posts.
# Each goes, signed with the authorization's u: credential, to that URL;
# a receiver on loopback plays the apps.  The entity has no follower at
# all, so the engine must not clear its outbox as "for no one".

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text);
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

my $hook = Tent::Receiver->start(
    rules => [{ method => 'POST', path => '^/hook/',
                action => { status => 200, body => '{}' } }]);
my $H = $hook->url;

# reader: statuses, read_posts; public: every type, no read_posts
my ($reader_app, $reader) = $c->authorized_app(
    'read_posts', post_types => $STATUS, notification_url => "$H/hook/reader");
my ($public_app, $public) = $c->authorized_app(
    'read_profile', post_types => 'all', notification_url => "$H/hook/public");
my (undef, $perms) = $c->authorized_app(
    'read_posts,read_permissions', post_types => $STATUS,
    notification_url => "$H/hook/perms");
my (undef, $mute) = $c->authorized_app(
    'read_posts', post_types => 'all', notification_url => 'ftp://nowhere');
my ($owner_app, $owner) = $c->authorized_app('write_posts,read_posts',
                                             post_types => 'all');

sub post { $c->post_ok($owner, {@_}) }

sub got { my ($who, $id) = @_; $hook->posts_of($id, path => qr{^/hook/$who$}) }
sub wait_got {
    my ($who, $id) = @_;
    return $hook->wait_posts_of($id, path => qr{^/hook/$who$});
}

# the MAC the receiver saw, with the authorization's u: credential
sub mac_ok {
    my ($req, $cred) = @_;
    my $h = $req->{headers}{authorization} // '';
    my %a = $h =~ /(\w+)="([^"]*)"/g;
    return 0 unless ($a{id} // '') eq $cred->{access_token};
    return $h eq mac_header(id => $a{id}, key => $cred->{mac_key},
                            algorithm => $cred->{mac_algorithm},
                            method => 'POST', uri => $req->{path},
                            host => '127.0.0.1', port => $hook->port,
                            ts => $a{ts}, nonce => $a{nonce});
}

my $res;
my $p1 = post(type => $STATUS, content => { text => 'hello apps' },
              permissions => { public => JSON::PP::true });
my @n = wait_got('reader', $p1->{id});
is(scalar @n, 1, 'the app subscribed to statuses gets a public status');
ok(mac_ok($n[0], $reader), "signed with its authorization's u: credential");
like($n[0]{headers}{'content-type'} // '', qr{application/vnd\.tent\.v0\+json},
     'as Tent JSON');
my $body = eval { decode_json($n[0]{body}) } || {};
is($body->{content}{text}, 'hello apps', 'the post itself');
ok(!exists $body->{rus}, 'without internal fields');
@n = wait_got('public', $p1->{id});
is(scalar @n, 1, 'an app of all types without read_posts gets it too');
ok(mac_ok($n[0], $public), 'signed with its own credential');

my $p2 = post(type => $STATUS, content => { text => 'just us' },
              permissions => { public => JSON::PP::false });
my $p3 = post(type => $ESSAY, content => { body => 'long' },
              permissions => { public => JSON::PP::true });
is(scalar wait_got('reader', $p2->{id}), 1,
   'a private status goes to the app with read_posts');
is(scalar wait_got('public', $p3->{id}), 1,
   'a public essay to the app of all types');

# whom a private post is for: only to an app with read_permissions
my $bob = 'https://bob.example';
my $p8 = post(type => $STATUS, content => { text => 'for bob' },
              permissions => { entities => { $bob => JSON::PP::true } });
@n = wait_got('perms', $p8->{id});
is(scalar @n, 1, 'the app with read_permissions gets the private post');
$body = eval { decode_json($n[0]{body}) } || {};
ok($body->{permissions}{entities}{$bob}, 'with whom it is for');
ok(mac_ok($n[0], $perms), 'signed with its own credential');
@n = wait_got('reader', $p8->{id});
$body = eval { decode_json($n[0]{body}) } || {};
is_deeply($body->{permissions}, { public => JSON::PP::false },
          'the app with read_posts only sees that it is not public');

# a last post: the ones before it have been expanded by then
my $p4 = post(type => $STATUS, content => { text => 'last' },
              permissions => { public => JSON::PP::true });
ok(scalar wait_got('reader', $p4->{id}), 'a later post arrives');
ok(scalar wait_got('public', $p4->{id}), 'to both');
sleep 1;
is(scalar got('public', $p2->{id}), 0,
   'a private post does not go to an app without read_posts');
is(scalar got('reader', $p3->{id}), 0,
   'nor a type the app did not ask for');
is(scalar got('reader', $p1->{id}), 1, 'each post once');
is(scalar $hook->requests(path => qr{^(?!/hook/)}), 0,
   'nothing went elsewhere (the ftp:// URL is no subscription)');

# a post we receive (here an unsigned mention, read again at its server)
my $A_URL = "http://127.0.0.1:" . ($ENV{TEST_NGINX_SERVER_PORT} || 1984);
my $other = Tent::Receiver->start;
my $theirs = { id => 'r1', entity => $other->url, type => $STATUS,
               content => { text => 'hello @A' }, published_at => 1700000000,
               licenses => [], version => 1,
               permissions => { public => JSON::PP::true },
               mentions => [{ entity => $A_URL }] };
$other->rules([{ method => 'GET', path => '^/tent/posts/r1$',
                 action => { status => 200, body => $theirs,
                             headers => { 'Content-Type' =>
                                          'application/vnd.tent.v0+json' } } }]);
$res = $c->request(POST => '/posts', body => $theirs);
is($res->{status}, 200, 'we receive a post of another entity')
    or diag $res->{body};
@n = wait_got('reader', 'r1');
is(scalar @n, 1, 'the app with read_posts hears of it');
is(eval { decode_json($n[0]{body})->{entity} } // '', $other->url,
   'as the other entity\'s post');
my $p7 = post(type => $STATUS, content => { text => 'after r1' },
              permissions => { public => JSON::PP::true });
ok(scalar wait_got('public', $p7->{id}), 'a later post of ours arrives');
sleep 1;
is(scalar got('public', 'r1'), 0,
   'an app without read_posts does not hear of posts we receive');
$other->stop;

# the app is deleted: its subscription goes with it
$res = $c->request(DELETE => "/apps/$public_app->{id}", cred => $public_app);
is($res->{status}, 200, 'the app of all types is deleted') or diag $res->{body};
my $p5 = post(type => $ESSAY, content => { body => 'after' },
              permissions => { public => JSON::PP::true });
my $p6 = post(type => $STATUS, content => { text => 'after too' },
              permissions => { public => JSON::PP::true });
ok(scalar wait_got('reader', $p6->{id}), 'the other app still gets posts');
sleep 1;
is(scalar got('public', $p5->{id}) + scalar got('public', $p6->{id}), 0,
   'the deleted app gets nothing more');

unlike(error_log_text(), qr/\[alert\]|exited on signal/, 'no alert, no crash');

$hook->stop;

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
