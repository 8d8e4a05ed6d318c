# Apps under attack (security issue #11, findings 5, 14, 15): what an
# anonymous POST /apps, or an app with its own a: key, can make the
# server store is bounded field by field and in number (unconfirmed apps
# take one of tent_apps_unconfirmed places until first authorized, and
# give it up after tent_apps_unconfirmed_time); the owner pages through
# GET /apps and tells authorized apps from the others; redirect URIs are
# http(s) only, at registration, at PUT, and at the authorize page for
# rows an older version stored.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text);
use Tent::Client;
use JSON::PP;
use IO::Socket::IP;
use Time::HiRes qw(sleep);

BEGIN {
    # bob: a second entity with the default places and a larger body limit
    my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                Listen => 1) or die "no free port: $!";
    $ENV{TEST_NGINX_BOB_PORT} = $s->sockport;
    close $s;
}

master_on();
workers(1);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $JSON = JSON::PP->new->utf8->canonical;
my $alice = Tent::Client->new;
my $bob = Tent::Client->new(port => $ENV{TEST_NGINX_BOB_PORT});

# a 4xx (matching $want) with a JSON error body matching $msg
sub json_4xx {
    my ($res, $want, $msg, $what) = @_;
    my $ok = $res->{status} =~ $want
             && ($res->{headers}{'content-type'} // '')
                =~ m{^application/vnd\.tent\.v0\+json}
             && ($res->{body} // '') =~ /^\{"error":"(?:[^"\\]|\\.)+"\}$/
             && ($res->{json}{error} // '') =~ $msg;
    ok($ok, "$what: $res->{status} " . ($res->{json}{error} // ''))
        or diag("$res->{status} " . ($res->{headers}{'content-type'} // '')
                . ' ' . substr($res->{body} // '', 0, 300)
                . ($res->{error} ? " ($res->{error})" : ''));
}

sub no_crash { Tent::Util::no_crash($_[0], also => qr/runtime error:/) }

my %good = (name => 'Good', description => 'fine', url => 'https://a.example',
            icon => 'https://a.example/i.png',
            redirect_uris => ['https://a.example/cb'],
            scopes => { read_posts => 'to read' });

# bob's owner, and every app of bob's as the owner sees them
my (undef, $bob_owner) = $bob->authorized_app('read_apps,write_apps');

sub all_apps {
    my ($c, $cred, $query) = @_;
    my $res = $c->request(GET => '/apps?limit=200' . ($query // ''),
                          cred => $cred);
    return $res->{json} || [];
}

# ---- finding 5: each field of POST /apps, one by one, over its bound

my $before = scalar @{ all_apps($bob, $bob_owner) };

for my $t (['name', { name => 'n' x 257 }, qr/^name is longer than 256/],
           ['description', { description => 'd' x 1025 },
            qr/^description is longer than 1024/],
           ['url', { url => 'https://a.example/' . 'u' x 2048 },
            qr/^url is longer than 2048/],
           ['icon', { icon => 'https://a.example/' . 'i' x 2048 },
            qr/^icon is longer than 2048/],
           ['a redirect URI', { redirect_uris =>
                ['https://a.example/cb', 'https://a.example/' . 'r' x 2048] },
            qr/^redirect_uris\[1\] is longer than 2048/],
           ['9 redirect URIs', { redirect_uris =>
                [map { "https://a.example/cb$_" } 1 .. 9] },
            qr/^redirect_uris has more than 8 entries/],
           ['100k redirect URIs', { redirect_uris =>
                [map { "https://a.example/cb$_" } 1 .. 100_000] },
            qr/^redirect_uris has more than 8 entries/],
           ['33 scopes', { scopes => { map { ("s$_" => 'why') } 1 .. 33 } },
            qr/^scopes has more than 32 entries/],
           ['a scope name', { scopes => { ('k' x 65) => 'why' } },
            qr/^a name in scopes is longer than 64/],
           ['a scope reason', { scopes => { read_posts => 'w' x 513 } },
            qr/^scopes\.read_posts is longer than 512/],
           ['every field at its bound, together', {
                redirect_uris => [map { "https://a.example/$_" . 'r' x 2000 }
                                  1 .. 8],
                scopes => { map { ("s$_" => 'w' x 512) } 1 .. 32 } },
            qr/^the app's fields together are longer than 32768/])
{
    my ($what, $fields, $msg) = @$t;
    my $res = $bob->request(POST => '/apps', body => { %good, %$fields });
    json_4xx($res, qr/^413$/, $msg, "POST /apps, $what over its bound");
}

for my $key ("read\nposts", 'read posts', "read\x{e9}", '') {
    (my $show = $key) =~ s/([^\x21-\x7e])/sprintf('\\x%02x', ord $1)/ge;
    json_4xx($bob->request(POST => '/apps', body => {
                 %good, scopes => { $key => 'why' } }),
             qr/^400$/, qr/^a name in scopes is (not a scope name|empty)/,
             "POST /apps, the scope name \"$show\"");
}

# a 1 MB body: a 1 MB scope name at bob (who takes 4 MB bodies), a
# 1.1 MB description at alice
my $mb = $bob->request(POST => '/apps', body => {
    %good, scopes => { ('s' x 1_000_000) => 'why' } });
json_4xx($mb, qr/^413$/, qr/^a name in scopes is longer than 64/,
         'POST /apps, a 1 MB body (a 1 MB scope name)');
$mb = $alice->request(POST => '/apps', body => {
    %good, description => 'd' x 1_100_000 });
json_4xx($mb, qr/^413$/, qr/^description is longer/,
         'POST /apps, a 1.1 MB description at alice');

is(scalar @{ all_apps($bob, $bob_owner) }, $before,
   'none of the refused registrations stored an app');

# at the bounds: accepted
my $res = $bob->request(POST => '/apps', body => {
    %good, name => 'n' x 256, description => 'd' x 1024,
    url => 'https://a.example/' . 'u' x 2030,
    redirect_uris => [map { "https://a.example/$_" } 1 .. 8],
    scopes => { map { ("s$_" => 'w' x 100) } 1 .. 32 } });
is($res->{status}, 200, 'POST /apps with every field at its bound: 200')
    or diag(substr $res->{body}, 0, 300);
is($res->{json}{authorized}, JSON::PP::false, 'a new app is not authorized');
ok(!exists $res->{json}{unconfirmed_slot}, 'its place is not shown');

# whatever else a body carries is not stored
$res = $bob->request(POST => '/apps', body => {
    %good, name => 'Padded', pad => 'p' x 500_000,
    nested => { deep => ['x' x 100_000] } });
is($res->{status}, 200, 'POST /apps with unknown fields of 600 KB: 200');
my $padded = $res->{json};
$res = $bob->request(GET => "/apps/$padded->{id}", cred => $bob_owner);
ok(!exists $res->{json}{pad} && !exists $res->{json}{nested}
   && length($res->{body}) < 2000,
   'unknown fields are not stored (' . length($res->{body}) . ' bytes)');

# ---- finding 5: PUT /apps/:id by the app itself, bounded the same way

{
    my $app = $bob->register_app(name => 'Self');
    for my $t (['name', { name => 'n' x 257 }, qr/^name is longer/],
               ['description', { description => 'd' x 5000 },
                qr/^description is longer/],
               ['url', { url => 'u' x 3000 }, qr/^url is longer/],
               ['icon', { icon => 'i' x 3000 }, qr/^icon is longer/],
               ['9 redirect URIs', { redirect_uris =>
                    [map { "https://a.example/cb$_" } 1 .. 9] },
                qr/^redirect_uris has more than 8/],
               ['33 scopes', { scopes => { map { ("s$_" => 'y') } 1 .. 33 } },
                qr/^scopes has more than 32/],
               ['a 1 MB scope name', { scopes => { ('s' x 1_000_000) => 'y' } },
                qr/^a name in scopes is longer/],
               ['a scope reason', { scopes => { read_posts => 'w' x 600 } },
                qr/^scopes\.read_posts is longer/])
    {
        my ($what, $fields, $msg) = @$t;
        json_4xx($bob->request(PUT => "/apps/$app->{id}", cred => $app,
                               body => $fields),
                 qr/^413$/, $msg, "PUT /apps/:id by the app, $what");
    }
    json_4xx($bob->request(PUT => "/apps/$app->{id}", cred => $app,
                           body => { redirect_uris => ['javascript:alert(1)'] }),
             qr/^400$/, qr/^redirect_uris\[0\] must be an http or https URL/,
             'PUT /apps/:id by the app, a javascript: redirect URI');

    $res = $bob->request(GET => "/apps/$app->{id}", cred => $app);
    is("$res->{json}{name} $res->{json}{redirect_uris}[0]",
       'Self https://app.example/cb', 'the app is as it was');

    $res = $bob->request(PUT => "/apps/$app->{id}", cred => $app,
                         body => { name => 'Self 2', pad => 'p' x 100_000 });
    is("$res->{status} $res->{json}{name}", '200 Self 2',
       'a PUT within the bounds: 200');
    ok(!exists $res->{json}{unconfirmed_slot}, 'the place is not shown');
}

no_crash('bounds');

# ---- finding 15: redirect URIs are http(s) URLs

for my $uri ('javascript:alert(1)', 'JavaScript:alert(1)', 'JAVASCRIPT:x',
             ' javascript:alert(1)', "java\tscript:alert(1)",
             "\njavascript:alert(1)", "javascript\n:alert(1)",
             'javascript://a.example/%0aalert(1)',
             'data:text/html,<script>alert(1)</script>',
             'vbscript:msgbox(1)', 'file:///etc/passwd', 'ftp://a.example/cb',
             '//evil.example/cb', '/cb', 'https:evil.example/cb',
             'https:///evil.example', 'https://', 'http:/\\evil.example',
             " https://a.example/cb", "https://a.example/cb ",
             "https://a.example/c b", "https://a.example/cb\x7f", 'https://a.example/cb#frag')
{
    (my $show = $uri) =~ s/([\x00-\x20\x7f])/sprintf('\\x%02x', ord $1)/ge;
    json_4xx($bob->request(POST => '/apps', body => {
                 %good, redirect_uris => ['https://a.example/ok', $uri] }),
             qr/^400$/, qr/^redirect_uris\[1\] must be an http or https URL/,
             "register the redirect URI \"$show\"");
}

{
    my $app = $bob->register_app(name => 'Schemes');
    for my $uri ('javascript:alert(1)', ' JavaScript:alert(1)',
                 "java\tscript:alert(1)", 'data:text/html,x',
                 'vbscript:x', 'file:///etc/passwd')
    {
        (my $show = $uri) =~ s/([\x00-\x20])/sprintf('\\x%02x', ord $1)/ge;
        json_4xx($bob->request(PUT => "/apps/$app->{id}", cred => $bob_owner,
                               body => { redirect_uris => [$uri] }),
                 qr/^400$/, qr/^redirect_uris\[0\] must be/,
                 "update to the redirect URI \"$show\"");
    }

    $res = $bob->request(POST => '/apps', body => {
        %good, redirect_uris => ['HTTPS://A.example/cb', 'http://127.0.0.1:8080/',
                                 'https://[::1]/cb?x=1&y="2"'] });
    is($res->{status}, 200, 'http(s) in any case, loopback, IPv6: accepted')
        or diag($res->{body});
    my $ok = $res->{json};
    $res = $bob->authorize($ok, redirect_uri => 'HTTPS://A.example/cb');
    like($res->{headers}{location} // '', qr{^HTTPS://A\.example/cb\?code=},
         'and the authorize page returns to it');
}

# ---- finding 15: rows an older version stored are not followed

my $root = Tent::Util::servroot();
my $put = "$root/ldb-put";
my $built = system('cc', '-o', $put, 't/helpers/ldb-put.c', '-lleveldb') == 0;

SKIP: {
    skip 'cannot build t/helpers/ldb-put.c (no cc or leveldb headers)', 6
        unless $built;

    my @old;
    for my $uri ('javascript:alert(document.domain)', 'data:text/html,x',
                 ' JavaScript:alert(1)')
    {
        my $app = $bob->register_app(name => 'Old');
        my $rec = $bob->request(GET => "/apps/$app->{id}?secrets=true",
                                cred => $bob_owner)->{json};
        push @old, [$app, $uri, { %$rec, redirect_uris => [$uri],
                                  mac_key_id => $app->{mac_key_id},
                                  mac_key => $app->{mac_key},
                                  mac_algorithm => $app->{mac_algorithm} }];
    }

    stop_last_nginx();
    for (@old) {
        my ($app, $uri, $rec) = @$_;
        delete @$rec{qw(authorized authorizations)};
        my $key = "https://bob.example\0a$app->{id}";
        system($put, "$root/tent_temp/db", unpack('H*', $key),
               unpack('H*', $JSON->encode($rec))) == 0
            or die "ldb-put failed";
    }
    start_last_nginx();

    for (@old) {
        my ($app, $uri) = @$_;
        (my $show = $uri) =~ s/ /\\x20/g;
        $res = $bob->request(GET => '/oauth/authorize?'
            . $bob->authorize_query($app, redirect_uri => $uri));
        json_4xx($res, qr/^400$/, qr/not an http or https URL/,
                 "authorize page, a stored \"$show\"");
        ok(!$res->{headers}{location}, "\"$show\": no Location");
    }
}

no_crash('schemes');

# ---- finding 5: unconfirmed apps take places (alice: 3 places, 2 s)

my ($a_app, $alice_owner) = $alice->authorized_app('read_apps,write_apps');

my @wait = map { $alice->register_app(name => "Wait $_") } 1 .. 3;
$res = $alice->request(POST => '/apps', body => { %good, name => 'Fourth' });
json_4xx($res, qr/^429$/, qr/^Too many apps wait for the owner's authorization/,
         'a fourth unconfirmed app: 429');
like($res->{headers}{'retry-after'} // '', qr/^[12]$/,
     'with Retry-After: when the oldest one may give its place');

# the owner's apps (write_apps) register confirmed apps: no place
$res = $alice->request(POST => '/apps', cred => $alice_owner,
                       body => { %good, name => 'By the owner' });
is($res->{status}, 200, 'an app registered by the owner takes no place');

# an authorization frees a place
my $code = Tent::Client::code_from($alice->authorize($wait[0]));
ok($code, 'the first waiting app is authorized');
sleep 0.05;
my $fifth = $alice->request(POST => '/apps', body => { %good, name => 'Fifth' });
is($fifth->{status}, 200, 'its place is free: a new registration gets it');
$res = $alice->request(POST => '/apps', body => { %good, name => 'Sixth' });
is($res->{status}, 429, 'and then all places are taken again');

# the authorized app stays, whatever happens to places
is($alice->request(GET => "/apps/$wait[0]{id}", cred => $wait[0])->{status},
   200, 'the authorized app is there');

# after tent_apps_unconfirmed_time the oldest gives its place up
sleep 2.5;
my $seventh = $alice->request(POST => '/apps',
                              body => { %good, name => 'Seventh' });
is($seventh->{status}, 200, 'after 2 s: a registration takes the place of '
                            . 'the oldest unconfirmed app');
$res = $alice->request(GET => "/apps/$wait[1]{id}", cred => $alice_owner);
is($res->{status}, 404, 'which is deleted');
$res = $alice->request(GET => "/apps/$wait[1]{id}", cred => $wait[1]);
is($res->{status}, 401, 'with its key');
like(error_log_text(), qr/app "\Q$wait[1]{id}\E" .* was not authorized in time/,
     'the error log says so');

# an unconfirmed app past its time may still be authorized
$code = Tent::Client::code_from($alice->authorize($wait[2]));
ok($code, 'a waiting app past its time is still authorized while it is there');
$res = $alice->request(POST => '/apps', body => { %good, name => 'Eighth' });
is($res->{status}, 200, 'which frees its place');
is($alice->request(GET => "/apps/$wait[2]{id}", cred => $wait[2])->{status},
   200, 'and it stays');

# the owner shown the page of an app that is then deleted: nothing approved
{
    my $gone = $alice->register_app(name => 'Gone');
    is($alice->request(GET => "/apps/$fifth->{json}{id}",
                       cred => $fifth->{json})->{status}, 401,
       'its registration took the place of the next one past its time');
    my $page = $alice->request(GET => '/oauth/authorize?'
                                      . $alice->authorize_query($gone));
    is($page->{status}, 200, 'the authorize page of an app');
    is($alice->request(DELETE => "/apps/$gone->{id}",
                       cred => $gone)->{status}, 200,
       'which deletes itself meanwhile');
    $res = $alice->authorize($gone);
    is($res->{status}, 404, 'approving it: 404, no redirect, no authorization');
    ok(!$res->{headers}{location}, 'no Location');
}

# a deleted unconfirmed app gave its place back
$res = $alice->request(POST => '/apps', body => { %good, name => 'Ninth' });
is($res->{status}, 200, 'the place of the deleted app is free');
$res = $alice->request(POST => '/apps', body => { %good, name => 'Tenth' });
is($res->{status}, 429, 'and then all places are taken');

no_crash('places');

# ---- finding 14: GET /apps in pages, authorized or not

{
    # confirmed apps of the owner's: as many as we like
    $alice->request(POST => '/apps', cred => $alice_owner,
                    body => { %good, name => "Many $_" }) for 1 .. 8;

    my $all = all_apps($alice, $alice_owner);
    my %want = map { $_->{id} => $_ } @$all;
    ok(keys(%want) > 7, scalar(keys %want) . ' apps in one page of 200');

    my %auth = map { $_->{id} => 1 } ($a_app, $wait[0], $wait[2]);
    is(scalar(grep { !JSON::PP::is_bool($_->{authorized}) } @$all), 0,
       'each app says whether it is authorized');
    is(join(',', sort map { $_->{id} } grep { $_->{authorized} } @$all),
       join(',', sort keys %auth), 'the authorized ones are those authorized');

    # page by page through the Link header
    my (%seen, $pages, $dupes);
    my $path = '/apps?limit=3';
    my $first;
    while ($path && $pages++ < 20) {
        $res = $alice->request(GET => $path, cred => $alice_owner);
        is($res->{status}, 200, "page $pages: 200") or last;
        ok(@{ $res->{json} } <= 3, "page $pages: at most 3 apps");
        $first //= $res;
        $dupes += $seen{ $_->{id} }++ ? 1 : 0 for @{ $res->{json} };
        my ($next) = ($res->{headers}{link} // '') =~ /<([^>]+)>; rel="next"/;
        $path = $next ? "/$next" : undef;
    }
    like($first->{headers}{link} // '',
         qr{</tent/apps\?before_id=[\w:-]+&limit=3>; rel="next"},
         'the first page links to the next');
    is(join(',', sort keys %seen), join(',', sort keys %want),
       "$pages pages: every app, once" . ($dupes ? " ($dupes twice)" : ''));

    # the prev link of page 2 is page 1
    my ($next) = $first->{headers}{link} =~ /<([^>]+)>; rel="next"/;
    my $second = $alice->request(GET => "/$next", cred => $alice_owner);
    my ($prev) = $second->{headers}{link} =~ /<([^>]+)>; rel="prev"/;
    $res = $alice->request(GET => "/$prev", cred => $alice_owner);
    is(join(',', map { $_->{id} } @{ $res->{json} }),
       join(',', map { $_->{id} } @{ $first->{json} }),
       'the prev link of the second page gives the first');

    # the filter, kept in the links
    my $never = all_apps($alice, $alice_owner, '&authorized=false');
    is(join(',', sort map { $_->{id} } @$never),
       join(',', sort grep { !$auth{$_} } keys %want),
       '?authorized=false: the apps never authorized');
    my $yes = all_apps($alice, $alice_owner, '&authorized=true');
    is(join(',', sort map { $_->{id} } @$yes), join(',', sort keys %auth),
       '?authorized=true: the authorized ones');

    %seen = ();
    $path = '/apps?limit=2&authorized=false';
    $pages = 0;
    while ($path && $pages++ < 20) {
        $res = $alice->request(GET => $path, cred => $alice_owner);
        $seen{ $_->{id} }++ for @{ $res->{json} };
        my ($n) = ($res->{headers}{link} // '') =~ /<([^>]+)>; rel="next"/;
        like($n, qr/&authorized=false/, 'the next link keeps the filter')
            if $n && $pages == 1;
        $path = $n ? "/$n" : undef;
    }
    is(join(',', sort keys %seen), join(',', sort map { $_->{id} } @$never),
       "?authorized=false in $pages pages of 2: the same apps");

    json_4xx($alice->request(GET => '/apps?authorized=maybe',
                             cred => $alice_owner),
             qr/^400$/, qr/^authorized must be true or false$/,
             '?authorized=maybe');

    $res = $alice->request(HEAD => '/apps', cred => $alice_owner);
    is($res->{headers}{count}, scalar(keys %want), 'HEAD /apps: Count');

    $res = $alice->request(GET => "/apps/$wait[0]{id}", cred => $alice_owner);
    is($res->{json}{authorized}, JSON::PP::true,
       'GET /apps/:id of an authorized app: authorized');
    $res = $alice->request(GET => "/apps/$seventh->{json}{id}",
                           cred => $alice_owner);
    is($res->{json}{authorized}, JSON::PP::false,
       'GET /apps/:id of another: not authorized');

}

# the authorizations are read in scans of 1000: an app with more, and
# one after it (imported ids sort "aaa..." first, "zzz..." last)
{
    my (undef, $imp) = $bob->authorized_app(
        'read_apps,write_apps,write_secrets');
    for my $id ('aaa-many', 'zzz-one', 'mmm-none') {
        $res = $bob->request(POST => '/apps', cred => $imp,
                             body => { %good, id => $id });
        is($res->{status}, 200, "an app imported as $id");
    }
    my $made = 0;
    for my $n (1 .. 1001) {
        $made++ if $bob->request(POST => '/apps/aaa-many/authorizations',
                                 cred => $imp, body => {
                                     scopes => ['read_posts'] })->{status}
                   == 200;
    }
    is($made, 1001, '1001 authorizations of aaa-many');
    is($bob->request(POST => '/apps/zzz-one/authorizations', cred => $imp,
                     body => { scopes => ['read_posts'] })->{status}, 200,
       'one of zzz-one');
    my %is = map { $_->{id} => $_->{authorized} } @{ all_apps($bob, $imp) };
    is(join(' ', map { "$_:" . ($is{$_} ? 1 : 0) }
                 qw(aaa-many mmm-none zzz-one)),
       'aaa-many:1 mmm-none:0 zzz-one:1',
       'each is told authorized or not');
}

no_crash('the end');

__DATA__

=== TEST 1: tent_apps_unconfirmed is between 1 and 10000
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    tent_apps_unconfirmed 0;
--- must_die
--- error_log
"tent_apps_unconfirmed" directive must be between 1 and 10000



=== TEST 2: tent_apps_unconfirmed at most 10000, in the http block too
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_apps_unconfirmed 10001;
--- config
    tent_entity https://alice.example;
--- must_die
--- error_log
"tent_apps_unconfirmed" directive must be between 1 and 10000



=== TEST 3: tent_apps_unconfirmed_time is a time of 1s or more
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    tent_apps_unconfirmed_time 0;
--- must_die
--- error_log
"tent_apps_unconfirmed_time" directive must be at least 1s



=== TEST 4: tent_apps_unconfirmed_time is a time
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    tent_apps_unconfirmed_time soon;
--- must_die
--- error_log
"tent_apps_unconfirmed_time" directive invalid value



=== TEST 5: alice with 3 places of 2 s, bob with the defaults
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    server {
        listen 127.0.0.1:$TEST_NGINX_BOB_PORT;
        server_name localhost;
        tent_entity https://bob.example;
        client_max_body_size 4m;
        location = /tent/oauth/authorize {
            tent_owner "bob";
        }
    }
--- config
    tent_entity https://alice.example;
    tent_apps_unconfirmed 3;
    tent_apps_unconfirmed_time 2s;
    location = /tent/oauth/authorize {
        tent_owner "alice";
    }
--- request
GET /tent/profile
--- error_code: 200
