# GET {api}/avatars/:entity (issue 30, point 4; docs/web.md, "Avatars of
# other origins"): the avatar of a following, fetched by the module and
# served from our own origin, so that the page (connect-src 'self')
# shows faces of other origins without the browser telling their
# servers who reads it.  Only the avatar_url of a profile kept with a
# following or follower is ever fetched; the answer is served only as
# the image type its first bytes say (PNG, JPEG, GIF, WebP), at most
# 1 MB, and kept by the worker so that the same face costs one fetch.
# SVG, HTML, 2 MB, an avatar on 169.254.169.254 or 10.x (the guard
# refuses them before any connect: tent_outbound_allow opens loopback
# only) are 502 with the reason; anonymous, an app's own key, another
# tenant's key, an authorization without the read scopes are refused;
# an entity the owner does not know is 404 without a fetch.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text free_port
                  parallel_clients);
use Tent::Client;
use Tent::Receiver;
use JSON::PP;

add_block_preprocessor(sub {
    my $block = shift;
    $block->set_value(http_config => <<'CONF') unless defined $block->http_config;
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_timeout 20s;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 5s;
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name p.test;
        tent_entity http://p.test;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
CONF
    $block->set_value(config => <<'CONF') unless defined $block->config;
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize { tent_owner "the owner"; }
CONF
});

# one worker: its cache is what the second request must find
master_on();
workers(1);
no_shuffle();
log_level('info');
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $CORE = 'https://tent.io/types/info/core/v0.1.0';
my $BASIC = 'https://tent.io/types/info/basic/v0.1.0';
my $JSON = JSON::PP->new->utf8->canonical;

my $c = Tent::Client->new;
my (undef, $owner) = $c->authorized_app(
    'read_followings,write_followings,read_followers');
my ($app_only, $no_scope) = $c->authorized_app('read_posts');
my (undef, $followers_only) = $c->authorized_app('read_followers');
my (undef, $followings_only) = $c->authorized_app('read_followings');
my (undef, $blocker) = $c->authorized_app('write_blocks');
my $p = Tent::Client->new(host => 'p.test');
my (undef, $other) = $p->authorized_app('read_followings,read_followers');

my $PNG = "\x89PNG\r\n\x1a\n" . ("\0" x 24) . 'a png';
my $GIF = 'GIF89a' . ("\0" x 20);

# an entity whose basic profile names AVATAR (a path of its own server,
# or a whole URL); RULES answer it
sub entity_with {
    my ($avatar, @rules) = @_;
    my $port = free_port();
    my $me = "http://127.0.0.1:$port";
    my $url = $avatar =~ m{^[a-z]+:} ? $avatar : $me . $avatar;
    return Tent::Receiver->start(port => $port, rules => \@rules,
        profile => {
            $CORE => { entity => $me, licenses => [],
                       servers => ["$me/tent"] },
            $BASIC => { name => 'Someone', avatar_url => $url } });
}

# ... which the owner follows
sub followed {
    my $rx = entity_with(@_);
    my $res = $c->request(POST => '/followings', cred => $owner,
                          body => { entity => $rx->url });
    is($res->{status}, 200, "followed, its avatar $_[0]")
        or diag $res->{body};
    return $rx;
}

sub avatar {
    my ($rx, %o) = @_;
    my $entity = ref $rx ? $rx->url : $rx;
    return ($o{client} || $c)->request(
        $o{method} || 'GET',
        '/avatars/' . Tent::Client::uri_escape($entity),
        ($o{cred} || !exists $o{cred} ? (cred => $o{cred} || $owner) : ()));
}

sub fetches {
    my ($rx, $path) = @_;
    return scalar $rx->requests(method => 'GET', path => $path);
}

# --- a PNG: served as image/png, from our origin, with the headers -----

my $png = followed('/face.png',
    { method => 'GET', path => '^/face\.png$',
      action => { status => 200, body => $PNG,
                  headers => { 'Content-Type' => 'text/html' } } });

my $res = avatar($png);
is($res->{status}, 200, 'the avatar of a following: 200') or diag $res->{body};
is($res->{body}, $PNG, 'its bytes');
is($res->{headers}{'content-type'}, 'image/png',
   'image/png, as its first bytes say (the remote said text/html)');
is($res->{headers}{'x-content-type-options'}, 'nosniff', 'nosniff');
is($res->{headers}{'content-security-policy'}, "default-src 'none'",
   "Content-Security-Policy: default-src 'none'");
like($res->{headers}{'cache-control'} // '', qr/^private, max-age=\d+$/,
     'Cache-Control: private, max-age');
ok(!defined $res->{headers}{'content-location'},
   'no Content-Location of the following record');
is(fetches($png, qr{^/face\.png$}), 1, 'one fetch');
my ($got) = $png->requests(method => 'GET', path => qr{^/face\.png$});
like($got->{headers}{accept} // '', qr{image/png}, 'it asked for an image');
ok(!defined $got->{headers}{authorization} && !defined $got->{headers}{cookie},
   'unsigned, without cookies');

$res = avatar($png);
is($res->{status}, 200, 'again: 200');
is($res->{body}, $PNG, 'the same bytes');
is(fetches($png, qr{^/face\.png$}), 1, 'from the cache: no second fetch');

$res = avatar($png, method => 'HEAD');
is($res->{status}, 200, 'HEAD: 200');
is($res->{headers}{'content-type'}, 'image/png', 'HEAD: image/png');

# the entity in another spelling is the same entity
$res = avatar($png->url . '/');
is($res->{status}, 200, 'the entity with a trailing slash: 200');
is(fetches($png, qr{^/face\.png$}), 1, 'the same entry');

# a GIF behind a redirect on its own server
my $gif = followed('/old.gif',
    { method => 'GET', path => '^/old\.gif$',
      action => { status => 302, body => '',
                  headers => { Location => '/new.gif' } } },
    { method => 'GET', path => '^/new\.gif$',
      action => { status => 200, body => $GIF,
                  headers => { 'Content-Type' => 'image/gif' } } });
$res = avatar($gif);
is($res->{status}, 200, 'a GIF after a redirect: 200') or diag $res->{body};
is($res->{headers}{'content-type'}, 'image/gif', 'image/gif');

# --- requests together for one avatar share its one fetch -------------

my $slow = followed('/slow.png',
    { method => 'GET', path => '^/slow\.png$',
      action => { status => 200, body => $PNG, delay => 2,
                  headers => { 'Content-Type' => 'image/png' } } });
my @together = parallel_clients(5, 30, sub {
    my ($i, $iter) = @_;
    return () if $iter;
    my $r = avatar($slow);
    return "$r->{status} " . ($r->{body} eq $PNG ? 'png' : 'other');
});
is_deeply([sort @together], [('200 png') x 5],
          '5 requests at once for one avatar: all 200, the image')
    or diag join ', ', @together;
is(fetches($slow, qr{^/slow\.png$}), 1, 'one fetch for the five');

# --- a follower's avatar, with read_followers ------------------------

my $follower = entity_with('/me.jpg',
    { method => 'GET', path => '^/me\.jpg$',
      action => { status => 200, body => "\xff\xd8\xff\xe0" . ("\0" x 16),
                  headers => { 'Content-Type' => 'image/jpeg' } } });
$res = $c->request(POST => '/followers',
                   body => { entity => $follower->url, licenses => [],
                             types => ['all'],
                             notification_path => 'notifications/x' });
is($res->{status}, 200, 'an entity follows the owner') or diag $res->{body};
$res = avatar($follower, cred => $followings_only);
is($res->{status}, 404, "with read_followings only, a follower's: 404");
is(fetches($follower, qr{^/me\.jpg$}), 0, 'not fetched');
$res = avatar($follower, cred => $followers_only);
is($res->{status}, 200, "with read_followers, a follower's: 200")
    or diag $res->{body};
is($res->{headers}{'content-type'}, 'image/jpeg', 'image/jpeg');
$res = avatar($png, cred => $followers_only);
is($res->{status}, 404, "with read_followers only, a following's: 404");

# --- what is not an image is never served ----------------------------

my $svg = followed('/face.svg',
    { method => 'GET', path => '^/face\.svg$',
      action => { status => 200,
                  body => '<svg xmlns="http://www.w3.org/2000/svg">'
                          . '<script>alert(1)</script></svg>',
                  headers => { 'Content-Type' => 'image/svg+xml' } } });
$res = avatar($svg);
is($res->{status}, 502, 'an SVG: 502');
like($res->{json}{error} // '', qr/not a PNG, JPEG, GIF or WebP image/,
     'the reason') or diag $res->{body};
unlike($res->{body}, qr/<svg|script/, 'none of it served');
like($res->{headers}{'content-type'} // '', qr{json},
     'a JSON error');
$res = avatar($svg);
is($res->{status}, 502, 'again: 502');
is(fetches($svg, qr{^/face\.svg$}), 1,
   'the failure kept a short while: no second fetch');

my $html = followed('/face.png',
    { method => 'GET', path => '^/face\.png$',
      action => { status => 200, body => '<html><script>x()</script>',
                  headers => { 'Content-Type' => 'image/png' } } });
$res = avatar($html);
is($res->{status}, 502, 'HTML said to be image/png: 502');
unlike($res->{body}, qr/script/, 'none of it served');

my $big = followed('/big.png',
    { method => 'GET', path => '^/big\.png$',
      action => { do => 'big', size => 2 * 1024 * 1024,
                  content_type => 'image/png' } });
$res = avatar($big);
is($res->{status}, 502, '2 MB: 502');
like($res->{json}{error} // '', qr/too large/, 'too large')
    or diag $res->{body};

my $chunked = followed('/big.png',
    { method => 'GET', path => '^/big\.png$',
      action => { do => 'big', size => 2 * 1024 * 1024, chunked => 1,
                  content_type => 'image/png' } });
$res = avatar($chunked);
is($res->{status}, 502, '2 MB chunked (no Content-Length): 502');
like($res->{json}{error} // '', qr/too large/, 'too large, counted');

my $missing = followed('/none.png');
$res = avatar($missing);
is($res->{status}, 502, 'an avatar that is not there: 502');
like($res->{json}{error} // '', qr/answered 404/, 'it answered 404');

# --- the guard: nothing connected ------------------------------------

for my $url ('http://169.254.169.254/latest/meta-data/avatar.png',
             'http://10.1.2.3/avatar.png') {
    my $rx = followed($url);
    $res = avatar($rx);
    is($res->{status}, 502, "an avatar at $url: 502");
    like($res->{json}{error} // '',
         qr/the address is not allowed \(tent_outbound_allow\)/,
         'refused by the guard') or diag $res->{body};
}

my $redirect = followed('/face.png',
    { method => 'GET', path => '^/face\.png$',
      action => { status => 302, body => '',
                  headers => { Location => 'http://10.1.2.3/x.png' } } });
$res = avatar($redirect);
is($res->{status}, 502, 'a redirect to 10.1.2.3: 502');
like($res->{json}{error} // '', qr/not allowed/, 'refused by the guard');

my $scheme = followed('file:///etc/passwd');
$res = avatar($scheme);
is($res->{status}, 404, 'a file: URL is no avatar: 404');

# --- who may ask ------------------------------------------------------

my $before = fetches($png, qr{^/face\.png$});
$res = avatar($png, cred => undef);
is($res->{status}, 403, 'anonymous: 403');
like($res->{headers}{'content-type'} // '', qr{json},
     'a JSON error');
$res = avatar($png, cred => $no_scope);
is($res->{status}, 403, 'an authorization without read_followings: 403');
$res = avatar($png, cred => $app_only);
is($res->{status}, 403, "an app's own key: 403");
$res = avatar($png, cred => $other);
is($res->{status}, 401, "another tenant's key: 401");
$res = avatar($png, client => $p, cred => $other);
is($res->{status}, 404,
   'the other tenant, which does not follow it: 404');
is(fetches($png, qr{^/face\.png$}), $before, 'none of them fetched');

# --- a blocked entity: nothing fetched from it ------------------------

my $blocked = followed('/face.png',
    { method => 'GET', path => '^/face\.png$',
      action => { status => 200, body => $PNG,
                  headers => { 'Content-Type' => 'image/png' } } });
$res = $c->request(POST => '/blocks', cred => $blocker,
                   body => { entity => $blocked->url });
is($res->{status}, 201, 'the owner blocks a following') or diag $res->{body};
$res = avatar($blocked);
ok($res->{status} == 403 || $res->{status} == 404,
   "a blocked entity's avatar: refused ($res->{status})")
    or diag $res->{body};
is(fetches($blocked, qr{^/face\.png$}), 0, 'not fetched');

# --- entities the owner does not know -------------------------------

my $stranger = Tent::Receiver->start;
$res = avatar($stranger);
is($res->{status}, 404, 'an entity the owner does not know: 404');
like($res->{json}{error} // '', qr/No avatar/, 'no avatar');
is(scalar $stranger->requests, 0, 'nothing was fetched from it');
$res = avatar('not a url');
is($res->{status}, 404, 'not an entity: 404');

my $plain = Tent::Receiver->start;
$res = $c->request(POST => '/followings', cred => $owner,
                   body => { entity => $plain->url });
is($res->{status}, 200, 'a following without a basic profile');
$plain->clear;
$res = avatar($plain);
is($res->{status}, 404, 'no avatar_url: 404');
is(scalar $plain->requests, 0, 'nothing fetched');

$_->stop for $png, $gif, $follower, $slow, $blocked, $svg, $html, $big, $chunked, $missing, $redirect,
              $scheme, $stranger, $plain;

unlike(error_log_text(), qr/\[alert\]|\[emerg\]|exited on signal/,
       'no alert, no crash in the error log');

__DATA__

=== TEST 1: the entity
--- request
GET /tent/posts
--- error_code: 200
