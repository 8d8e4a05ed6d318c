# The scope matrix: each route x (anonymous, an authorization without the
# scope, one with exactly it) -> the status expected; and bad input that
# must store nothing.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx);
use Tent::Client;

no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $c = Tent::Client->new;
my $PRIV = 'https://example.org/types/info/secret/v0.1.0';
my $priv = '/profile/' . Tent::Client::uri_escape($PRIV);

my %auth;
sub auth_with {
    my ($scope) = @_;
    $auth{$scope} ||= [ $c->authorized_app($scope, info_types => 'all',
                                           post_types => 'all') ]->[1];
    return $auth{$scope};
}

# fixtures: an app with an authorization, a group, a private section
my $target = $c->register_app(name => 'Target');
my $code = Tent::Client::code_from($c->authorize($target, scope => 'read_posts'));
$c->exchange($target, $code);
my $admin = auth_with('read_apps,write_apps,read_groups,write_groups,'
                      . 'write_profile');
my ($target_auth) = map { $_->{id} } @{ $c->request(GET => "/apps/$target->{id}",
    cred => $admin)->{json}{authorizations} };
my $group = $c->request(POST => '/groups', cred => $admin,
                        body => { name => 'g' })->{json}{id};
is($c->request(PUT => $priv, cred => $admin, body => { x => 1 })->{status},
   200, 'fixture: a private section');

# [method, path, body, scope, status with the scope, status without]
my @matrix = (
    ['GET', '/apps', undef, 'read_apps', 200, 403],
    ['GET', "/apps/$target->{id}", undef, 'read_apps', 200, 403],
    ['GET', "/apps/$target->{id}/authorizations", undef, 'read_apps', 200, 403],
    ['PUT', "/apps/$target->{id}", { name => 'T2' }, 'write_apps', 200, 403],
    ['PUT', "/apps/$target->{id}/authorizations/$target_auth",
     { scopes => ['read_posts'] }, 'write_apps', 200, 403],
    ['POST', "/apps/$target->{id}/authorizations", { scopes => ['read_posts'] },
     'write_apps,write_secrets', 200, 403],
    ['GET', '/groups', undef, 'read_groups', 200, 403],
    ['GET', '/groups/count', undef, 'read_groups', 200, 403],
    ['GET', "/groups/$group", undef, 'read_groups', 200, 403],
    ['POST', '/groups', { name => 'n' }, 'write_groups', 200, 403],
    ['PUT', "/groups/$group", { name => 'm' }, 'write_groups', 200, 403],
    ['GET', $priv, undef, 'read_profile', 200, 404],
    ['PUT', $priv, { y => 2 }, 'write_profile', 200, 403],
    ['DELETE', "/groups/$group", undef, 'write_groups', 200, 403],
    ['DELETE', $priv, undef, 'write_profile', 200, 403],
);

my $without = auth_with('read_posts');

for my $m (@matrix) {
    my ($method, $path, $body, $scope, $with, $wo) = @$m;
    my @b = defined $body ? (body => $body) : ();

    # without first: the "with" request may delete the thing
    my $res = $c->request($method => $path, @b);
    is($res->{status}, $wo, "$method $path anonymous: $wo");
    $res = $c->request($method => $path, cred => $without, @b);
    is($res->{status}, $wo, "$method $path without $scope: $wo");
    $res = $c->request($method => $path, cred => auth_with($scope), @b);
    is($res->{status}, $with, "$method $path with $scope: $with")
        or diag($res->{body});
}

# GET /posts/:id/deliveries: read_posts, read_followers and
# read_followings (it names private followers), on a post of the entity's
# own
my $post = $c->request(POST => '/posts', cred => auth_with('write_posts'),
    body => { type => 'https://tent.io/types/post/status/v0.1.0',
              content => { text => 'to whom?' } });
is($post->{status}, 200, 'fixture: a private post');
for my $d ([undef, 403, 'anonymous'],
           [auth_with('read_groups'), 403, 'without read_posts'],
           [auth_with('write_posts'), 403, 'with write_posts only'],
           [$without, 403, 'with read_posts only'],
           [auth_with('read_posts,read_followers'), 403,
            'without read_followings'],
           [auth_with('read_posts,read_followers,read_followings'), 200,
            'with read_posts, read_followers, read_followings'])
{
    my ($cred, $status, $who) = @$d;
    my $res = $c->request(GET => "/posts/$post->{json}{id}/deliveries",
                          $cred ? (cred => $cred) : ());
    is($res->{status}, $status, "GET /posts/:id/deliveries $who: $status");
}

# GET /export: read_secrets and the read scopes of every part asked for
# (docs/export.md); each one missing is 403, the app's own key too
my @export = qw(read_secrets read_profile read_followers read_followings
                read_groups);
for my $q (['', []], ['?posts=1', ['read_posts']],
           ['?apps=1', ['read_apps']])
{
    my ($query, $more) = @$q;
    my @need = (@export, @$more);
    is($c->request(GET => "/export$query")->{status}, 403,
       "GET /export$query anonymous: 403");
    is($c->request(GET => "/export$query", cred => $target)->{status}, 403,
       "GET /export$query with the app's own key: 403");
    for my $miss (@need) {
        my $scopes = join ',', grep { $_ ne $miss } @need;
        is($c->request(GET => "/export$query",
                       cred => auth_with($scopes))->{status}, 403,
           "GET /export$query without $miss: 403");
    }
    is($c->request(GET => "/export$query",
                   cred => auth_with(join ',', @need))->{status}, 200,
       "GET /export$query with " . join(',', @need) . ': 200');
}

# POST /import: write_secrets and the write scopes of the sections, posts
# also write_posts and import_posts (docs/import.md); past the scopes the
# entity, not empty here, is a 409
my @import = qw(write_secrets write_profile write_followers write_followings
                write_groups);
for my $q ([{}, []], [{ posts => [{ id => 'x', versions => [] }] },
                      ['write_posts', 'import_posts']])
{
    my ($extra, $more) = @$q;
    my $doc = { version => 0, entity => 'http://x.test',
                complete => JSON::PP::true, %$extra };
    my $what = @$more ? 'POST /import with posts' : 'POST /import';
    my @need = (@import, @$more);
    is($c->request(POST => '/import', body => $doc)->{status}, 403,
       "$what anonymous: 403");
    is($c->request(POST => '/import', body => $doc,
                   cred => $target)->{status}, 403,
       "$what with the app's own key: 403");
    for my $miss (@need) {
        my $scopes = join ',', grep { $_ ne $miss } @need;
        is($c->request(POST => '/import', body => $doc,
                       cred => auth_with($scopes))->{status}, 403,
           "$what without $miss: 403");
    }
    is($c->request(POST => '/import', body => $doc,
                   cred => auth_with(join ',', @need))->{status}, 409,
       "$what with " . join(',', @need) . ': past the scopes, 409');
}

# an app's own a: key is not an authorization: no scopes
my $res = $c->request(GET => '/groups', cred => $target);
is($res->{status}, 403, "an app's own key has no scopes");

# ---- bad input stores nothing

my $count = sub { scalar @{ $c->request(GET => '/apps', cred => auth_with(
                                            'read_apps'))->{json} } };
my $before = $count->();

for my $bad (['{"name":', 400, 'broken JSON'],
             ['{"name":"x","redirect_uris":[1]}', 422, 'wrong types'],
             ['{"name":"' . ('x' x 3000) . '","redirect_uris":[]}', 413,
              'a field over its limit'],
             ['{"name":"x","redirect_uris":[], "pad":"' . ('x' x 70000) . '"}',
              413, 'a body over client_max_body_size'],
             ["{\"name\":\"\xff\xfe\",\"redirect_uris\":[]}", 400,
              'invalid UTF-8'],
             ['[' x 5000 . ']' x 5000, 400, 'nesting too deep'],
             ['{"name":"x","redirect_uris":["https://a/cb\\r\\nSet-Cookie: x=1"]}',
              400, 'a redirect URI with CRLF'])
{
    my ($body, $status, $what) = @$bad;
    $res = $c->request(POST => '/apps', body => $body);
    is($res->{status}, $status, "POST /apps, $what: $status");
    like($res->{headers}{'content-type'}, qr{^application/vnd\.tent\.v0\+json},
         "$what: a JSON error");
    like($res->{body}, qr/^\{"error":"[^"]+"\}$/, "$what: {\"error\": ...}");
}

is($count->(), $before, 'bad input stored no app');

__DATA__

=== TEST 1: the server the tests above run against
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    location /tent/ {
        client_max_body_size 64k;
    }
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/profile
--- error_code: 200
