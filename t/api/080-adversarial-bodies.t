# Issue #11, finding 8: request bodies as an attacker sends them, to every
# route that reads one (the router's POST and PUT routes, module.c), each
# signed by the principal the route needs so that the body is really
# read: no body, Content-Length: 0, an empty chunked body, white space
# only, broken JSON, JSON that is not an object, and more than
# client_max_body_size (with a length and chunked).  Each gets a JSON
# error with the right status; nothing is written (the LevelDB is read
# before and after, nginx stopped); under util/run-asan.sh no UBSan line
# (an empty body was a memcpy() from NULL, ngx_http_tent_json.c).

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text);
use Tent::Client;
use Tent::MAC qw(signed_headers random_nonce);
use Tent::Receiver;
use IO::Socket::IP;
use JSON::PP;

workers(2);
no_shuffle();
run_tests();

my $stopped;
END { stop_last_nginx() unless $stopped }

start_last_nginx();

my $c = Tent::Client->new;
my $JSON = JSON::PP->new->utf8->canonical;
my $esc = \&Tent::Client::uri_escape;
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $BASIC = 'https://tent.io/types/info/basic/v0.1.0';
my $B = '-----------TentAttachment';
my $MP = "multipart/form-data; boundary=$B";
my $TENT = 'application/vnd.tent.v0+json';
my $FORM = 'application/x-www-form-urlencoded';
my $LIMIT = 16 * 1024;       # client_max_body_size of /tent/ below

# ---- fixtures: a record for every id route, and who may write each

my ($app, $owner) = $c->authorized_app(
    'read_posts,write_posts,read_profile,write_profile,read_followers,'
    . 'write_followers,read_followings,write_followings,read_groups,'
    . 'write_groups,read_apps,write_apps,read_secrets,write_secrets',
    post_types => 'all', info_types => 'all');

sub ok_json {
    my ($res, $what) = @_;
    die "$what: $res->{status} $res->{body}" unless $res->{status} == 200;
    return $res->{json};
}

my $post = ok_json($c->request(POST => '/posts', cred => $owner,
                               body => { type => $STATUS,
                                         content => { text => 'hi' } }),
                   'a post');
my $group = ok_json($c->request(POST => '/groups', cred => $owner,
                                body => { name => 'g' }), 'a group');
my ($auth_id) = map { $_->{id} }
    @{ ok_json($c->request(GET => "/apps/$app->{id}", cred => $owner),
               'the app')->{authorizations} };

# a follower (it sends us its posts on POST /posts) and a following (it
# sends them to /notifications/:id), each a scripted remote
my $frx = Tent::Receiver->start;
my $follower = ok_json($c->request(POST => '/followers',
                           body => { entity => $frx->url, types => ['all'],
                                     notification_path => 'notifications/n' }),
                       'a follower');
my $fcred = { map { $_ => $follower->{$_} }
              qw(mac_key_id mac_key mac_algorithm) };

my $grx = Tent::Receiver->start;
my $following = ok_json($c->request(POST => '/followings', cred => $owner,
                                    body => { entity => $grx->url }),
                        'a following');
my ($given) = $grx->followers;
my $gcred = { map { $_ => $given->{$_} }
              qw(mac_key_id mac_key mac_algorithm) };

# ---- raw requests: the framing is the test

# (method, path, cred, content type, body, chunked) -> response
sub raw {
    my (%a) = @_;
    my $path = $a{path} =~ m{^//} ? substr($a{path}, 1) : "/tent$a{path}";
    my %h = (Host => 'localhost', Connection => 'close');
    $h{'Content-Type'} = $a{type} if $a{type};
    %h = (%h, signed_headers(cred => $a{cred}, method => $a{method},
                             uri => $path, host => 'localhost', port => 80,
                             nonce => random_nonce(8)))
        if $a{cred};

    my $body = $a{body};
    if ($a{chunked}) {
        $h{'Transfer-Encoding'} = 'chunked';
        $body = (length($body // '')
                 ? sprintf("%x\r\n%s\r\n", length $body, $body) : '')
              . "0\r\n\r\n";
    } elsif (defined $body) {
        $h{'Content-Length'} = length $body;
    }

    my $sock = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                   PeerPort => Tent::Util::port(),
                                   Timeout => 5)
        or return { status => 0, error => "connect: $!" };
    my $raw = '';
    eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        local $SIG{PIPE} = 'IGNORE';
        alarm 10;
        print {$sock} "$a{method} $path HTTP/1.1\r\n"
                      . join('', map { "$_: $h{$_}\r\n" } sort keys %h)
                      . "\r\n" . ($body // '');
        while (sysread($sock, my $buf, 65536)) { $raw .= $buf }
        alarm 0;
    };
    alarm 0;
    close $sock;

    my ($head, $content) = split /\r\n\r\n/, $raw, 2;
    my ($status) = ($head // '') =~ m{^HTTP/1\.\d (\d+)};
    my %hd = map { /^([^:]+):\s*(.*)$/ ? (lc $1 => $2) : () }
             split /\r\n/, $head // '';
    return { status => $status || 0, headers => \%hd,
             body => $content // '', error => $@ };
}

# ---- the routes that read a body, as the router has them

my $fid = $follower->{id};
my $gid = $following->{id};
my $basic = '/profile/' . $esc->($BASIC);
my $npath = '/' . $given->{notification_path};

# [what, method, path, cred, content type, status of a bad body]
my @routes = (
    ['POST /apps', 'POST', '/apps', undef, $TENT, 400],
    ['PUT /apps/:id (the app)', 'PUT', "/apps/$app->{id}", $app, $TENT, 400],
    ['POST /apps/:id/authorizations (the exchange)', 'POST',
     "/apps/$app->{id}/authorizations", $app, $TENT, 400],
    ['POST /apps/:id/authorizations (write_apps)', 'POST',
     "/apps/$app->{id}/authorizations", $owner, $TENT, 400],
    ['PUT /apps/:id/authorizations/:auth', 'PUT',
     "/apps/$app->{id}/authorizations/$auth_id", $owner, $TENT, 400],
    ['POST /followers', 'POST', '/followers', undef, $TENT, 400],
    ['PUT /followers/:id', 'PUT', "/followers/$fid", $owner, $TENT, 400],
    ['PUT /followers/:id (the follower)', 'PUT', "/followers/$fid", $fcred,
     $TENT, 400],
    ['POST /followings', 'POST', '/followings', $owner, $TENT, 400],
    ['PUT /followings/:id', 'PUT', "/followings/$gid", $owner, $TENT, 400],
    ['POST /posts', 'POST', '/posts', $owner, $TENT, 400],
    ['POST /posts (multipart)', 'POST', '/posts', $owner, $MP, 400],
    ['POST /posts (a follower relays)', 'POST', '/posts', $fcred, $TENT, 400],
    ['POST /posts (an unsigned mention)', 'POST', '/posts', undef, $TENT,
     403],
    ['PUT /posts/:id', 'PUT', "/posts/$post->{id}", $owner, $TENT, 400],
    ['PUT /posts/:id (multipart)', 'PUT', "/posts/$post->{id}", $owner, $MP,
     400],
    ['PUT /profile/:type', 'PUT', $basic, $owner, $TENT, 400],
    ['POST /groups', 'POST', '/groups', $owner, $TENT, 400],
    ['PUT /groups/:id', 'PUT', "/groups/$group->{id}", $owner, $TENT, 400],
    ['POST /notifications/:id', 'POST', $npath, $gcred, $TENT, 400],
    ['POST /oauth/authorize (the form)', 'POST', '/oauth/authorize', undef,
     $FORM, 400],
);

# [what, body, chunked, error wanted (undef: any)]
my @bodies = (
    ['no body', undef, 0, 'Request body required'],
    ['Content-Length: 0', '', 0, 'Request body required'],
    ['an empty chunked body', '', 1, 'Request body required'],
    ['white space', " \r\n\t \n", 0, 'Request body required'],
    ['white space, chunked', "  \n", 1, 'Request body required'],
    ['broken JSON', '{"name":', 0, 'Invalid JSON body'],
    ['broken JSON, chunked', '{"a":[1,', 1, 'Invalid JSON body'],
    ['a JSON array', '[{"name":"x"}]', 0, 'Invalid JSON body'],
    ['a JSON string', '"x"', 0, 'Invalid JSON body'],
    ['a JSON number', '42', 0, 'Invalid JSON body'],
    ['JSON null', 'null', 0, 'Invalid JSON body'],
    ['a NUL byte', "{\0}", 0, 'Invalid JSON body'],
);

# a multipart body whose post part is $post
sub mp {
    my ($json) = @_;
    return "--$B\r\nContent-Disposition: form-data; name=\"post\"\r\n"
         . "Content-Type: $TENT\r\n\r\n$json\r\n--$B--\r\n";
}

my @mp_bodies = (
    ['no body', undef, 0, 'Request body required'],
    ['Content-Length: 0', '', 0, 'Request body required'],
    ['an empty chunked body', '', 1, 'Request body required'],
    ['white space', "\r\n\r\n", 0, 'Request body required'],
    ['no boundary in it', '{"type":"x"}', 0, 'Invalid multipart body'],
    ['only the closing boundary', "--$B--\r\n", 0,
     'The multipart body has no post'],
    ['an empty post part', mp(''), 0, 'Invalid JSON body'],
    ['an empty post part, chunked', mp(''), 1, 'Invalid JSON body'],
    ['a post part of white space', mp("  \r\n"), 0, 'Invalid JSON body'],
    ['a broken post part', mp('{"type":'), 0, 'Invalid JSON body'],
    ['a post part that is an array', mp('[]'), 0, 'Invalid JSON body'],
    ['a post part that is a number', mp('7'), 0, 'Invalid JSON body'],
    ['a part cut short', "--$B\r\nContent-Type: $TENT\r\n\r\n{}", 0,
     'Invalid multipart body'],
);

my @form_bodies = (
    ['no body', undef, 0], ['Content-Length: 0', '', 0],
    ['an empty chunked body', '', 1], ['white space', " \r\n", 0],
    ['junk', '&&==&%zz&client_id', 0], ['JSON', '{"client_id":"x"}', 0],
);

sub json_error {
    my ($res, $status, $error, $what) = @_;
    my $got = ($res->{headers}{'content-type'} // '') eq $TENT
              && $res->{body} =~ /^\{"error":"((?:[^"\\]|\\.)+)"\}$/
              ? $1 : undef;
    my $ok = $res->{status} == $status && defined $got
             && (!defined $error || $got eq $error);
    ok($ok, "$what: $status" . (defined $error ? " $error" : ''))
        or diag("got $res->{status} "
                . ($res->{headers}{'content-type'} // '-') . ' '
                . substr($res->{body}, 0, 200)
                . ($res->{error} ? " ($res->{error})" : ''));
}

# ---- the store before: nothing below may change it

my $root = Tent::Util::servroot();

sub rows {
    stop_last_nginx();
    my $rows = join '', sort Tent::Util::ldb_rows("$root/tent_temp/db");
    start_last_nginx();
    return $rows;
}

my $before = rows();

for my $r (@routes) {
    my ($what, $method, $path, $cred, $type, $status) = @$r;
    my @set = $type eq $MP ? @mp_bodies
            : $type eq $FORM ? @form_bodies : @bodies;

    for my $b (@set) {
        my ($bwhat, $body, $chunked, $error) = @$b;
        my $res = raw(method => $method, path => $path, cred => $cred,
                      type => $type, body => $body, chunked => $chunked);
        # an unsigned POST /posts that is not a mention is refused as one
        $error = 'Unauthorized' if $status == 403;
        # the owner's form: a form without the parameters it needs
        $error = 'client_id and redirect_uri are required' if $type eq $FORM;
        json_error($res, $status, $error, "$what, $bwhat");
    }

    # over client_max_body_size: with a length, and chunked (no length
    # to refuse it by before the body is read)
    for my $chunked (0, 1) {
        my $big = $type eq $MP ? mp('{"x":"' . ('y' x $LIMIT) . '"}')
                : $type eq $FORM ? 'client_id=' . ('x' x $LIMIT)
                : '{"x":"' . ('y' x $LIMIT) . '"}';
        my $res = raw(method => $method, path => $path, cred => $cred,
                      type => $type, body => $big, chunked => $chunked);
        json_error($res, 413, 'Request Entity Too Large',
                   "$what, over the limit" . ($chunked ? ', chunked' : ''));
    }
}

# ---- a body refused before it is read is not the next request

# On one kept-alive connection: a request refused before its body is
# read, whose body is a whole request, then a real one.  Two answers,
# not three: the body must be discarded, not parsed.
my $smuggled = "GET /tent/posts/count HTTP/1.1\r\nHost: smuggled.example\r\n\r\n";

sub two_on_one {
    my ($method, $path, $cred, $type, $chunked) = @_;
    my $full = "/tent$path";
    my %h = (Host => 'localhost', 'Content-Type' => $type);
    %h = (%h, signed_headers(cred => $cred, method => $method, uri => $full,
                             host => 'localhost', port => 80,
                             nonce => random_nonce(8)))
        if $cred;
    my $body = $smuggled;
    if ($chunked) {
        $h{'Transfer-Encoding'} = 'chunked';
        $body = sprintf("%x\r\n%s\r\n0\r\n\r\n", length $body, $body);
    } else {
        $h{'Content-Length'} = length $body;
    }
    my $sock = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                   PeerPort => Tent::Util::port(),
                                   Timeout => 5) or return '';
    my $raw = '';
    eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm 10;
        print {$sock} "$method $full HTTP/1.1\r\n"
                      . join('', map { "$_: $h{$_}\r\n" } sort keys %h)
                      . "\r\n$body"
                      . "GET /tent/profile HTTP/1.1\r\nHost: localhost\r\n"
                      . "Connection: close\r\n\r\n";
        while (sysread($sock, my $buf, 65536)) { $raw .= $buf }
        alarm 0;
    };
    alarm 0;
    close $sock;
    # an answer follows the body before it, not a new line
    return join ' ', $raw =~ m{HTTP/1\.1 (\d\d\d) }g;
}

for my $r (['anonymous POST /followings', 'POST', '/followings', undef, 403],
           ['POST /groups by an app without scopes', 'POST', '/groups', $app,
            403],
           ['unsigned POST /notifications/:id', 'POST', '/notifications/x',
            undef, 401],
           ['unsigned POST /posts that is no mention (text/plain)', 'POST',
            '/posts', undef, 403, 'text/plain'],
           ['PUT /posts/:id of no post', 'PUT', '/posts/nosuchpost', $owner,
            404],
           ['PUT /groups/:id of no group', 'PUT', '/groups/nosuchgroup',
            $owner, 404],
           ['PUT /apps/:id of no app', 'PUT', '/apps/nosuchapp', $owner, 404],
           ['PUT /profile/:type of a bad type', 'PUT', '/profile/%20', $owner,
            404],
           ['POST /profile (no such method)', 'POST', '/profile', undef, 405])
{
    my ($what, $method, $path, $cred, $status, $type) = @$r;
    for my $chunked (0, 1) {
        is(two_on_one($method, $path, $cred, $type || $TENT, $chunked),
           "$status 200",
           "$what" . ($chunked ? ', chunked' : '')
           . ": its body is not taken for a request");
    }
}

# the fixtures still work: nothing above broke a record
is($c->request(GET => "/posts/$post->{id}", cred => $owner)->{json}{content}{text},
   'hi', 'the post is as it was');
is($c->request(GET => "/groups/$group->{id}", cred => $owner)->{json}{name},
   'g', 'the group is as it was');
is($c->request(GET => "/apps/$app->{id}", cred => $app)->{json}{name},
   'Test App', 'the app is as it was');

{
    my $after = rows();
    is($after, $before, 'not a row of the store changed')
        or diag("before: " . scalar(split /\n/, $before) . " rows, after: "
                . scalar(split /\n/, $after));
}

unlike(error_log_text(), qr/\[alert\]|exited on signal|runtime error/,
       'no alert, no crash, no UBSan report');

$frx->stop;
$grx->stop;

__DATA__

=== TEST 1: the entity, bodies up to 16k under the API root
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery off;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location /tent/ {
        client_max_body_size 16k;
    }
    location = /tent/oauth/authorize {
        client_max_body_size 16k;
        tent_owner "the owner";
    }
--- request
GET /tent/profile
--- error_code: 200
