# The deployment recipe of docs/directives.md ("Limiting anonymous
# requests that reach other servers"): nginx's own limit_req, keyed on
# unsigned POSTs only, bounds what strangers can make the module fetch
# (POST /followers and unsigned mentions both discover an entity), while
# reads and signed requests are not limited.  Errors stay Tent JSON.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx);
use Tent::Client;

master_on();
workers(1);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $c = Tent::Client->new;
my ($app, $owner) = $c->authorized_app('write_posts,read_posts',
                                       post_types => 'all');

# far faster than 1 a second: after the burst of 3, refusals
my %status;
for my $i (1 .. 12) {
    my $res = $c->request(POST => '/followers',
                          body => { entity => "http://127.0.0.1:9/e$i",
                                    types => ['all'],
                                    notification_path => 'notifications/x' });
    $status{ $res->{status} }++;
    if ($res->{status} == 429 && !$status{seen}++) {
        like($res->{headers}{'content-type'} // '', qr{vnd\.tent\.v0\+json},
             'a limited request gets Tent JSON');
        like($res->{json}{error} // '', qr/\S/, 'with an error message');
    }
}
# the first ones pass the limit (and the SSRF guard refuses them: 403)
ok(($status{429} // 0) >= 5 && ($status{403} // 0) >= 1,
   'unsigned POSTs beyond the burst are refused with 429: '
   . join(', ', map { "$_ x$status{$_}" } grep { /^\d+$/ } sort keys %status));

my $res = $c->request(POST => '/posts', body => {
    type => 'https://tent.io/types/post/status/v0.1.0',
    entity => 'http://127.0.0.1:9/e', id => 'abc',
    mentions => [{ entity => 'https://alice.example' }],
    content => { text => 'hi' },
    permissions => { public => JSON::PP::true } });
is($res->{status}, 429, 'an unsigned mention is limited by the same zone');

# signed writes and reads are not limited
my $ok = 0;
for my $i (1 .. 10) {
    my $r = $c->request(POST => '/posts', cred => $owner, body => {
        type => 'https://tent.io/types/post/status/v0.1.0',
        content => { text => "signed $i" },
        permissions => { public => JSON::PP::true } });
    $ok++ if $r->{status} == 200;
}
is($ok, 10, 'signed POSTs meanwhile: all 10 accepted');
$ok = 0;
for (1 .. 10) { $ok++ if $c->request(GET => '/posts')->{status} == 200 }
is($ok, 10, 'anonymous reads meanwhile: all 10 answered');

__DATA__

=== TEST 1: the recipe
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;

    map "$request_method:$http_authorization" $tent_anonymous_post {
        "POST:"  $binary_remote_addr;
        default  "";
    }
    limit_req_zone $tent_anonymous_post zone=tent_anonymous:1m rate=1r/m;
--- config
    tent_entity https://alice.example;
    location /tent/ {
        limit_req zone=tent_anonymous burst=3 nodelay;
        limit_req_status 429;
    }
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/profile
--- error_code: 200
