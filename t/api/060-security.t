# Security: oversize input of every kind, bad UTF-8 in bodies and query
# parameters, a signed write replayed through the other worker, path
# tricks in ids and entities, header injection through stored values, and
# HTML injection into the owner's authorize page.  Everywhere: a 4xx with
# a JSON error, never a 500, never a crash, never another record.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(http_request start_last_nginx stop_last_nginx
                  no_crash);
use Tent::Client;
use Tent::MAC qw(mac_header);
use JSON::PP;
use IO::Socket::IP;

BEGIN {
    # a free port for the reuseport server that spreads over both workers
    my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                Listen => 1) or die "no free port: $!";
    $ENV{TEST_NGINX_SPREAD_PORT} = $s->sockport;
    close $s;
}

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $c = Tent::Client->new;
my $spread = Tent::Client->new(port => $ENV{TEST_NGINX_SPREAD_PORT});
my $JSON = JSON::PP->new->utf8->canonical;
my $T = 'https://tent.io/types/post/';
my $STATUS = "${T}status/v0.1.0";
my $ENTITY = 'https://alice.example';
my $esc = \&Tent::Client::uri_escape;

my ($wapp, $all) = $c->authorized_app(
    'read_posts,write_posts,import_posts,read_apps,write_apps,read_groups,'
    . 'write_groups,read_profile,write_profile,read_permissions',
    post_types => 'all', info_types => 'all');

# a 4xx (matching $want) with a JSON error body
sub json_4xx {
    my ($res, $want, $what) = @_;
    my $ok = $res->{status} =~ $want
             && ($res->{headers}{'content-type'} // '')
                =~ m{^application/vnd\.tent\.v0\+json}
             && $res->{body} =~ /^\{"error":"(?:[^"\\]|\\.)+"\}$/;
    ok($ok, "$what: $res->{status} with a JSON error")
        or diag("$res->{status} " . ($res->{headers}{'content-type'} // '')
                . ' ' . substr($res->{body} // '', 0, 300)
                . ($res->{error} ? " ($res->{error})" : ''));
}

sub post {
    my ($body, %o) = @_;
    return $c->post($o{cred} || $all, $body, headers => $o{headers});
}

my $res;
my $public = { public => JSON::PP::true };

# ---- 1. oversize everything

$res = $c->request(GET => '/profile',
                   headers => { Authorization => 'MAC id="' . ('a' x 20000)
                                                 . '"' });
json_4xx($res, qr/^(400|431|494)$/, 'an Authorization header of 20 KB');

$res = $c->request(GET => '/posts',
                   headers => { Authorization => 'MAC id="' . ('u:' x 3000)
                       . '", ts="1", nonce="' . ('n' x 1000) . '", mac="x"' });
json_4xx($res, qr/^401$/, 'an Authorization header of 7 KB, not a key');

$res = $c->request(GET => '/profile',
                   headers => { map { ("X-Header-$_" => 'v' x 20) } 1 .. 300 });
is($res->{status}, 200, '300 request headers: served');

$res = $c->request(GET => '/profile',
                   headers => { map { ("X-Header-$_" => 'v' x 40) } 1 .. 2000 });
json_4xx($res, qr/^(400|431|494)$/, '2000 request headers (over 32 KB)');

# nginx refuses it before it knows the URI, so before any location: its
# own HTML page, as for any server
$res = $c->request(GET => '/posts/' . ('a' x 20000));
is($res->{status}, 414, 'a request line of 20 KB: 414');

$res = post('{"type":"' . ('x' x (5 * 1024 * 1024)) . '"}');
json_4xx($res, qr/^413$/, 'a body over client_max_body_size');

{
    # the same, chunked: no Content-Length to refuse it up front
    my $chunk = 'x' x 65536;
    my $body = join('', map { sprintf("%x\r\n%s\r\n", length $chunk, $chunk) }
                        1 .. 80) . "0\r\n\r\n";
    my $auth = mac_header(id => $all->{access_token}, key => $all->{mac_key},
                          algorithm => $all->{mac_algorithm},
                          method => 'POST', uri => '/tent/posts',
                          host => 'localhost', port => 80);
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                PeerPort => $c->{port}) or die "connect: $!";
    $SIG{PIPE} = 'IGNORE';
    print {$s} "POST /tent/posts HTTP/1.1\r\nHost: localhost\r\n"
             . "Connection: close\r\nTransfer-Encoding: chunked\r\n"
             . "Authorization: $auth\r\n"
             . "Content-Type: application/vnd.tent.v0+json\r\n\r\n$body";
    my $raw = '';
    eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm 10;
        while (sysread($s, my $buf, 65536)) { $raw .= $buf }
        alarm 0;
    };
    alarm 0;
    close $s;
    like($raw, qr{^HTTP/1\.1 413 .*\r\n\r\n\{"error":"[^"]+"\}$}s,
         'a chunked body over client_max_body_size: a JSON 413');
}

my $deep = '[' x 100_000 . ']' x 100_000;
json_4xx(post($deep), qr/^400$/, 'POST /posts, 100k nested arrays');
json_4xx(post('{"type":"' . $STATUS . '","content":{"text":"x","deep":'
              . $deep . '}}'), qr/^400$/,
         'POST /posts, 100k nested arrays inside content');
json_4xx($c->request(POST => '/apps', body => '{"name":' . $deep . '}'),
         qr/^400$/, 'POST /apps, 100k nested arrays');
json_4xx($c->request(PUT => '/profile/' . $esc->(
             'https://example.org/types/info/deep/v0.1.0'),
             cred => $all, body => '{"x":' . ('{"x":' x 100_000) . '1'
                                     . ('}' x 100_001)),
         qr/^400$/, 'PUT /profile/:type, 100k nested objects');
json_4xx($c->request(POST => '/groups', cred => $all, body => $deep),
         qr/^400$/, 'POST /groups, 100k nested arrays');

$res = post({ type => $STATUS, content => { text => 'many mentions' },
              mentions => [map { { entity => "https://m$_.example" } }
                           1 .. 100_000], permissions => $public });
json_4xx($res, qr/^(413|422)$/, 'a post with 100k mentions');

$res = post({ type => $STATUS, content => { text => 'many readers' },
              permissions => { entities => { map { ("https://e$_.example"
                  => JSON::PP::true) } 1 .. 100_000 } } });
json_4xx($res, qr/^(413|422)$/, 'a post with 100k permitted entities');

$res = post({ type => $STATUS, content => { text => 'x' x 100_000 } });
json_4xx($res, qr/^422$/, 'a status of 100k characters');

$res = post({ type => 'https://example.org/types/' . ('t' x 100_000)
                      . '/v0.1.0', content => {} });
json_4xx($res, qr/^422$/, 'a post type of 100k characters');

{
    my $big = 'https://example.org/types/info/big/v0.1.0';
    $res = $c->request(PUT => '/profile/' . $esc->($big), cred => $all,
                       body => { bio => 'b' x 1_000_000,
                                 permissions => $public });
    ok($res->{status} == 200 || $res->{status} =~ /^4/,
       "a profile section with a 1 MB string: $res->{status}, not a 5xx")
        or diag(substr $res->{body}, 0, 300);
    $res = $c->request(GET => '/profile');
    is($res->{status}, 200, 'the profile is still served');
    $res = $c->request(PUT => '/profile/' . $esc->($big), cred => $all,
                       body => { ('k' x 100_000) => 1 });
    ok($res->{status} == 200 || $res->{status} =~ /^4/,
       "a profile section with a key of 100k characters: $res->{status}");
}

$res = $c->request(POST => '/apps', body => {
    name => 'n' x 100_000, redirect_uris => ['https://a.example/cb'] });
json_4xx($res, qr/^413$/, 'an app name of 100k characters');
$res = $c->request(POST => '/apps', body => {
    name => 'x', redirect_uris => [map { "https://a.example/cb$_" }
                                   1 .. 100_000] });
json_4xx($res, qr/^(413|422)$/, 'an app with 100k redirect URIs');
$res = $c->request(POST => '/groups', cred => $all,
                   body => { name => 'g' x 1_000_000 });
json_4xx($res, qr/^(413|422)$/, 'a group name of 1M characters');

$res = post({ type => $STATUS, content => { text => 'key' },
              permissions => $public },
            headers => { 'Idempotency-Key' => 'k' x 6000 });
ok($res->{status} == 200 || $res->{status} =~ /^4/,
   "an Idempotency-Key of 6000 bytes: $res->{status}");

no_crash('oversize');

# ---- 2. bad UTF-8: bodies and query parameters

for my $bad (["\xff\xfe", 'bytes that are never UTF-8'],
             ["\xc0\xaf", 'an overlong encoding'],
             ["\xed\xa0\x80", 'a UTF-16 surrogate'],
             ["\xf4\x90\x80\x80", 'beyond U+10FFFF'],
             ['\\ud800', 'an escaped lone surrogate'],
             ["a\xe2\x82", 'a truncated sequence'])
{
    my ($bytes, $what) = @$bad;
    json_4xx(post('{"type":"' . $STATUS . '","content":{"text":"' . $bytes
                  . '"}}'), qr/^400$/, "POST /posts, $what");
    json_4xx($c->request(PUT => '/profile/' . $esc->(
                 'https://example.org/types/info/utf/v0.1.0'),
                 cred => $all, body => '{"x":"' . $bytes . '"}'),
             qr/^400$/, "PUT /profile/:type, $what");
    json_4xx($c->request(POST => '/groups', cred => $all,
                         body => '{"name":"' . $bytes . '"}'),
             qr/^400$/, "POST /groups, $what");
}

for my $q ('entity=%FF', 'mentioned_entity=%C0%AF',
           'post_types=%ED%A0%80', 'since_id=%FF%FE', 'before_id=a%80',
           'mentioned_post=%F4%90%80%80',
           'since_id=x&since_id_entity=https%3A%2F%2Fa.example%FF')
{
    json_4xx($c->request(GET => "/posts?$q", cred => $all), qr/^400$/,
             "GET /posts?$q");
}
json_4xx($c->request(GET => '/posts/count?entity=%FF', cred => $all),
         qr/^400$/, 'GET /posts/count?entity=%FF');
{
    my $app = $c->register_app(name => 'UTF-8 App');
    for my $st ('%FF', '%C0%AF', '%ED%A0%80') {
        my $q = $c->authorize_query($app) . "&state=$st";
        $q =~ s/&state=st4te//;
        my $r = $c->request(GET => "/oauth/authorize?$q");
        is($r->{status}, 400, "the authorize page, state=$st: 400");
    }
}

no_crash('bad UTF-8');

# ---- 3. a signed write replayed through the other worker

{
    my $body = $JSON->encode({ type => $STATUS, content => { text => 'replay' },
                               permissions => $public });
    my $hdr = mac_header(id => $all->{access_token}, key => $all->{mac_key},
                         algorithm => $all->{mac_algorithm}, method => 'POST',
                         uri => '/tent/posts', host => 'localhost', port => 80);
    my %h = (Authorization => $hdr,
             'Content-Type' => 'application/vnd.tent.v0+json',
             Host => 'localhost');
    my $first = $spread->request(POST => '/posts', headers => \%h,
                                 body => $body);
    is($first->{status}, 200, 'replay: the first use creates the post')
        or diag($first->{body});
    my $pid = $first->{headers}{'x-pid'} // '';
    my (%pids, @codes);
    for (1 .. 100) {
        my $again = $spread->request(POST => '/posts', headers => \%h,
                                     body => $body);
        my $p = $again->{headers}{'x-pid'} // '?';
        $pids{$p}++;
        push @codes, "$again->{status} " . ($again->{json}{error} // '');
        last if $p ne $pid && $pids{$p} >= 2;
    }
    ok(grep({ $_ ne $pid } keys %pids),
       'replay: reached the other worker (' . join(',', $pid, keys %pids)
       . ')');
    is(scalar(grep { $_ ne '401 MAC nonce already used' } @codes), 0,
       'replay: every replay (' . scalar(@codes) . ') refused with 401, '
       . 'on either worker');
    $res = $c->request(GET => '/posts?limit=200', cred => $all);
    is(scalar(grep { ($_->{content}{text} // '') eq 'replay' }
              @{ $res->{json} }), 1, 'replay: one post stored');
}

# ---- 4. path tricks in ids and entities

{
    my $secret = post({ type => $STATUS, content => { text => 'secret' } })
                 ->{json};
    my $app = $c->register_app(name => 'Path App');
    my $group = $c->request(POST => '/groups', cred => $all,
                            body => { name => 'g' })->{json};
    my $e = $esc->($ENTITY);
    my @tricks = ('..', '%2e%2e', '%2E%2E%2Fapps', 'a%2Fb', '%2F', 'a%00b',
                  '%00', 'x' x 5000, "$secret->{id}%00",
                  "$secret->{id}%2F..", "$secret->{id}%20",
                  '..%2F..%2Fprofile', '%252e%252e', '.', "$secret->{id}/.");
    my @paths;
    for my $t (@tricks) {
        push @paths, "/posts/$t", "/posts/$e/$t", "/posts/$t/$secret->{id}",
                     "/posts/$t/versions", "/posts/$t/mentions",
                     "/posts/$t/attachments/a.png",
                     "/apps/$t", "/apps/$t/authorizations", "/groups/$t",
                     "/profile/$t";
    }
    my (@bad, %seen);
    for my $path (@paths) {
        next if $seen{$path}++;
        for my $cred (undef, $all) {
            my $r = $c->request(GET => $path, $cred ? (cred => $cred) : ());
            my $who = $cred ? 'authorized' : 'anonymous';
            # a normalized ".." may name another route: never a 5xx, and
            # never the private post's text
            # (nginx itself refuses %00 in a path with its own 400 page,
            # before it looks for a location; "../../" leaves the API)
            push @bad, "$who GET $path: $r->{status} "
                       . substr($r->{body} // '', 0, 100)
                if $r->{status} >= 500 || $r->{status} == 0
                   || ($r->{body} // '') =~ /"secret"/
                   || ($r->{status} >= 400
                       && !($r->{status} == 400 && $path =~ /%00/)
                       && !($r->{status} == 404 && $path =~ /\.\.%2F\.\./)
                       && ($r->{body} // '')
                          !~ /^\{"error":"(?:[^"\\]|\\.)+"\}$/);
        }
    }
    is(scalar @bad, 0, 'path tricks: ' . scalar(keys %seen) . ' paths, '
                       . 'twice each: 4xx JSON or another route, never '
                       . 'a 500 or the private post')
        or diag(join "\n", @bad[0 .. ($#bad > 19 ? 19 : $#bad)]);

    # the plain ids still work: the tricks matched nothing by accident
    is($c->request(GET => "/posts/$secret->{id}", cred => $all)->{status},
       200, 'path tricks: the post itself');
    is($c->request(GET => "/apps/$app->{id}", cred => $all)->{status}, 200,
       'path tricks: the app itself');
    is($c->request(GET => "/groups/$group->{id}", cred => $all)->{status},
       200, 'path tricks: the group itself');

    # writes through the same tricks
    @bad = ();
    for my $t (@tricks) {
        for my $req (["PUT", "/posts/$t", { content => { text => 'w' } }],
                     ["DELETE", "/posts/$t"], ["PUT", "/apps/$t",
                      { name => 'w' }], ["DELETE", "/apps/$t"],
                     ["PUT", "/groups/$t", { name => 'w' }],
                     ["DELETE", "/groups/$t"],
                     ["PUT", "/profile/$t", { x => 1 }])
        {
            my ($m, $p, $b) = @$req;
            my $r = $c->request($m => $p, cred => $all,
                                defined $b ? (body => $b) : ());
            push @bad, "$m $p: $r->{status} " . substr($r->{body}, 0, 100)
                if $r->{status} >= 500 || $r->{status} == 0
                   || ($r->{status} == 200 && $m eq 'DELETE');
        }
    }
    is(scalar @bad, 0, 'path tricks in writes: no 5xx, nothing deleted')
        or diag(join "\n", @bad[0 .. ($#bad > 19 ? 19 : $#bad)]);
    is($c->request(GET => "/posts/$secret->{id}", cred => $all)->{json}
       {content}{text}, 'secret', 'path tricks: the post is unchanged');
}

no_crash('path tricks');

# ---- 5. header injection through stored values

sub clean_headers {
    my ($r, $what) = @_;
    my @bad = grep { $r->{headers}{$_} =~ /[\r\n]/ || /^(set-cookie|x-evil)$/ }
              keys %{ $r->{headers} };
    is(scalar @bad, 0, "$what: no header split")
        or diag(join "\n", map { "$_: $r->{headers}{$_}" } @bad);
}

# the raw head of a response: a bare CR or LF would be lost by a parser
sub raw_head {
    my ($path) = @_;
    my $s = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                PeerPort => $c->{port}) or die "connect: $!";
    print {$s} "GET $path HTTP/1.1\r\nHost: localhost\r\n"
             . "Connection: close\r\n\r\n";
    my $raw = '';
    eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm 5;
        while (sysread($s, my $buf, 65536)) { $raw .= $buf }
        alarm 0;
    };
    alarm 0;
    close $s;
    my ($head) = split /\r\n\r\n/, $raw, 2;
    return $head // '';
}

{
    my $app = $c->register_app(name => 'Injector');

    # state is echoed into the Location of the redirect to the app: the
    # page refuses control characters in it, and escapes the rest
    for my $st ("s\r\nSet-Cookie: evil=1\r\nX-Evil: 1", "s\nX-Evil: 1",
                "s\rX-Evil: 1")
    {
        (my $show = $st) =~ s/\r/\\r/g;
        $show =~ s/\n/\\n/g;
        for my $decision ('approve', 'deny') {
            $res = $c->authorize($app, state => $st, decision => $decision);
            ok($res->{status} == 400
               || ($res->{headers}{location} // '') =~ /state=s%0[AD]/,
               "authorize ($decision), state \"$show\": refused or "
               . "escaped ($res->{status})");
            clean_headers($res, "authorize ($decision), state \"$show\"");
        }
    }
    $res = $c->authorize($app, state => 'a b&c=d#e%f');
    like($res->{headers}{location} // '', qr/state=a%20b%26c(?:=|%3D)d%23e%25f$/,
         'a state with URI delimiters comes back escaped');

    for my $uri ("https://a.example/cb\r\nX-Evil: 1", "https://a.example/\ncb",
                 "https://a.example/cb\rX-Evil: 1")
    {
        (my $show = $uri) =~ s/\r/\\r/g;
        $show =~ s/\n/\\n/g;
        json_4xx($c->request(POST => '/apps', body => {
                     name => 'x', redirect_uris => [$uri] }),
                 qr/^(400|422)$/, "register a redirect URI \"$show\"");
        json_4xx($c->request(PUT => "/apps/$app->{id}", cred => $all, body => {
                     name => 'x', redirect_uris => [$uri] }),
                 qr/^(400|422)$/, "update to a redirect URI \"$show\"");
    }

    # an imported post's entity and id end up in Link headers
    $res = post({ type => $STATUS, content => { text => 'i' },
                  entity => "https://imp.example\r\nX-Evil: 1", id => 'imp',
                  permissions => $public });
    json_4xx($res, qr/^422$/, 'an imported entity with CRLF');
    $res = post({ type => $STATUS, content => { text => 'i' },
                  entity => 'https://imp.example', id => "imp\r\nX-Evil: 1",
                  permissions => $public });
    json_4xx($res, qr/^422$/, 'an imported id with CRLF');

    # an attachment's Content-Type comes back as the Content-Type header
    my $B = '-----------TentInject';
    my $json = $JSON->encode({ type => "${T}photo/v0.1.0", content => {},
                               permissions => $public });
    for my $type ("image/png\nX-Evil: 1", "image/png\rX-Evil: 1",
                  "image/png\x00x")
    {
        (my $show = $type) =~ s/([\x00-\x1f])/sprintf('\\x%02x', ord $1)/ge;
        my $body = "--$B\r\nContent-Disposition: form-data; name=\"post\"; "
                 . "filename=\"post.json\"\r\nContent-Type: "
                 . "application/vnd.tent.v0+json\r\n\r\n$json\r\n"
                 . "--$B\r\nContent-Disposition: form-data; name=\"photos\"; "
                 . "filename=\"a.png\"\r\nContent-Type: $type\r\n\r\n"
                 . "bytes\r\n--$B--\r\n";
        $res = $c->request(POST => '/posts', cred => $all, body => $body,
            headers => { 'Content-Type' => "multipart/form-data; boundary=$B" });
        if ($res->{status} == 200) {
            my $id = $res->{json}{id};
            my $head = raw_head("/tent/posts/$id/attachments/a.png");
            ok($head !~ /\r(?!\n)|(?<!\r)\n|\nX-Evil/i,
               "an attachment typed \"$show\": no header split")
                or diag($head);
        } else {
            json_4xx($res, qr/^(400|422)$/,
                     "an attachment typed \"$show\" is refused");
        }
    }
}

no_crash('header injection');

# ---- 6. HTML injection into the owner's authorize page

{
    my $app = $c->register_app(
        name => '<script>alert("name")</script>',
        description => '"><img src=x onerror=alert(1)>\'<b>',
        url => 'https://app.example/"><script>alert(2)</script>',
        redirect_uris => ['https://app.example/cb?a=1&b="><script>x</script>']);
    my $q = $c->authorize_query($app,
        state => '"><script>alert(3)</script>',
        scope => 'read_posts,<script>',
        post_types => "${T}status/v0.1.0,\"><script>alert(4)</script>");
    $res = $c->request(GET => "/oauth/authorize?$q");
    is($res->{status}, 200, 'authorize page with hostile app fields: 200')
        or diag($res->{body});
    my $body = $res->{body} // '';
    # the page's own head (its style, '<html lang="en"><head>') holds
    # nothing of the app's: the app's fields are in the body
    my ($head, $page) = $body =~ /^(.*?<body>)(.*)\z/s;
    unlike($head // '', qr/alert\(|app\.example|<script/i,
           'nothing of the app in the page\'s head');
    unlike($page // $body, qr/<script|<img|onerror=alert\(1\)>|"><|<b>/i,
           'no markup from the app or the query comes through');
    like($body, qr/&lt;script&gt;alert\(&quot;name&quot;\)&lt;\/script&gt;/,
         'the app name is shown, escaped');

    # and the round trip still works: the hostile state comes back intact
    $res = $c->authorize($app, state => '"><script>alert(3)</script>',
                         redirect_uri => $app->{redirect_uris}[0]);
    is($res->{status}, 302, 'approving it: 302');
    like($res->{headers}{location} // '',
         qr/^\Qhttps:\/\/app.example\/cb?a=1&b="><script>x<\/script>&code=\E/,
         'to the registered redirect URI, as registered');
    like($res->{headers}{location} // '',
         qr/state=%22%3E%3Cscript%3Ealert\(3\)%3C\/script%3E/,
         'with the state escaped');
}

no_crash('the end');

__DATA__

=== TEST 1: the server the tests above run against
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    server {
        listen 127.0.0.1:$TEST_NGINX_SPREAD_PORT reuseport;
        server_name localhost;
        tent_entity https://alice.example;
        add_header X-Pid $pid always;
    }
--- config
    tent_entity https://alice.example;
    location /tent/ {
        client_max_body_size 4m;
    }
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/profile
--- error_code: 200
