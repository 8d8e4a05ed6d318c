# Groups (spec 7.9): who may create and read them, their ids, the list
# with its count, limit and cursors, rename and delete.  Written through
# one worker and read through either (two workers).  What a group gives
# its members to read is in t/federation/020-followers.t.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx);
use Tent::Client;

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $c = Tent::Client->new;
my $res;

my ($gw, $gwriter) = $c->authorized_app('read_groups,write_groups');
my ($gr, $greader) = $c->authorized_app('read_groups');

$res = $c->request(POST => '/groups', cred => $greader, body => { name => 'x' });
is($res->{status}, 403, 'POST /groups needs write_groups');
$res = $c->request(GET => '/groups');
is($res->{status}, 403, 'GET /groups needs read_groups');

my @ids;
for my $name ('family', 'friends', 'work') {
    $res = $c->request(POST => '/groups', cred => $gwriter, body => { name => $name });
    is($res->{status}, 200, "POST /groups $name");
    like($res->{json}{id}, qr/^[A-Za-z0-9_-]{22}$/, "group $name: an id");
    push @ids, $res->{json}{id};
}

$res = $c->request(POST => '/groups', cred => $gwriter, body => { name => '' });
is($res->{status}, 422, 'a group needs a name');

$res = $c->request(GET => '/groups', cred => $greader);
is(scalar @{ $res->{json} }, 3, 'GET /groups: all three');
$res = $c->request(GET => '/groups/count', cred => $greader);
is($res->{body}, '3', 'GET /groups/count');
$res = $c->request(HEAD => '/groups', cred => $greader);
is($res->{headers}{count}, 3, 'HEAD /groups: Count');
$res = $c->request(GET => '/groups?limit=2', cred => $greader);
is(scalar @{ $res->{json} }, 2, 'GET /groups?limit=2');
my @sorted = sort @ids;
$res = $c->request(GET => "/groups?since_id=$sorted[0]", cred => $greader);
is_deeply([map { $_->{id} } @{ $res->{json} }], [@sorted[1, 2]],
          'GET /groups?since_id');
$res = $c->request(GET => "/groups?before_id=$sorted[2]", cred => $greader);
is_deeply([map { $_->{id} } @{ $res->{json} }], [@sorted[0, 1]],
          'GET /groups?before_id');

$res = $c->request(PUT => "/groups/$ids[0]", cred => $gwriter, body => { name => 'kin' });
is("$res->{status} $res->{json}{name}", '200 kin', 'PUT /groups/:id renames');
$res = $c->request(GET => "/groups/$ids[0]", cred => $greader);
is($res->{json}{name}, 'kin', 'GET /groups/:id');

$res = $c->request(DELETE => "/groups/$ids[0]", cred => $gwriter);
is($res->{status}, 200, 'DELETE /groups/:id');
$res = $c->request(GET => "/groups/$ids[0]", cred => $greader);
is($res->{status}, 404, 'a deleted group: 404');
$res = $c->request(GET => '/groups/..%2Fx', cred => $greader);
is($res->{status}, 404, 'a group id with path tricks: 404');

__DATA__

=== TEST 1: the server the tests above run against
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/groups
--- error_code: 403
