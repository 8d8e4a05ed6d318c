# GET /export (issue 14, part 1; docs/export.md): who may export (anonymous,
# an app without read_secrets, without the read scope of a part asked
# for: 403), what the document holds (the profile's sections and old
# versions, followings and followers with their credentials, groups, apps
# and authorizations with ?apps=1, posts with their versions with
# ?posts=1 and not without), that another entity of the same nginx and
# store is never in it, that a big entity comes in many pages read one
# after the other by a slow reader, and that a client leaving mid-stream
# leaves nginx healthy.  Validated against docs/export.schema.json when
# python3-jsonschema is there.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text
                  parallel_clients dechunk);
use Tent::Client;
use Tent::MAC qw(signed_headers random_nonce);
use Tent::Receiver;
use Socket qw(PF_INET SOCK_STREAM SOL_SOCKET SO_RCVBUF inet_aton
              pack_sockaddr_in);
use JSON::PP;
use File::Temp qw(tempfile);
use Digest::SHA qw(sha256_hex);
use Time::HiRes qw(sleep);
use POSIX ();

# every block's nginx: the servers below
add_block_preprocessor(sub {
    my $block = shift;
    $block->set_value(http_config => <<'CONF') unless defined $block->http_config;
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_timeout 2s;
    tent_outbound_allow 127.0.0.0/8;
    server {
        listen $TEST_NGINX_SERVER_PORT sndbuf=8k;
        server_name other.test;
        tent_entity http://other.test;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
CONF
    $block->set_value(config => <<'CONF') unless defined $block->config;
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize { tent_owner "the owner"; }
CONF
});

master_on();
workers(2);
no_shuffle();
log_level('debug');
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $PORT = $ENV{TEST_NGINX_SERVER_PORT} || 1984;
my $A = "http://127.0.0.1:$PORT";
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $BASIC = 'https://tent.io/types/info/basic/v0.1.0';
my $CORE = 'https://tent.io/types/info/core/v0.1.0';
my $BASE = 'read_secrets,read_profile,read_followers,read_followings,'
           . 'read_groups';

my $c = Tent::Client->new;
my $o = Tent::Client->new(host => 'other.test');

# GET /tent/export?query signed with $cred; the body dechunked.  With
# rcvbuf a small receive window (the server waits on the socket between
# pages); with stop_after the client reads that much and closes.
sub export_get {
    my ($cred, $query, %o) = @_;
    my $path = '/tent/export' . (defined $query ? "?$query" : '');
    socket(my $sock, PF_INET, SOCK_STREAM, 0) or die "socket: $!";
    setsockopt($sock, SOL_SOCKET, SO_RCVBUF, pack('i', $o{rcvbuf}))
        if $o{rcvbuf};
    connect($sock, pack_sockaddr_in($PORT, inet_aton('127.0.0.1')))
        or die "connect: $!";
    my $host = $o{host} || 'localhost';
    my %h = (Host => $host, Connection => 'close');
    %h = (%h, signed_headers(cred => $cred, method => 'GET', uri => $path,
                             host => $host, port => 80,
                             nonce => random_nonce(8)))
        if $cred;
    syswrite($sock, "GET $path HTTP/1.1\r\n"
        . join('', map { "$_: $h{$_}\r\n" } sort keys %h) . "\r\n");

    my $raw = '';
    local $SIG{ALRM} = sub { die "timeout\n" };
    alarm 60;
    while (1) {
        my $n = sysread($sock, my $buf, $o{rcvbuf} ? 4096 : 65536);
        last if !$n;
        $o{on_first}->() if $o{on_first} && $raw eq '';
        $raw .= $buf;
        last if $o{stop_after} && length $raw >= $o{stop_after};
        sleep($o{delay} || 0.001) if $o{rcvbuf};
    }
    alarm 0;
    close $sock;
    return { raw => $raw } if $o{stop_after};

    my ($head, $body) = split /\r\n\r\n/, $raw, 2;
    my ($status) = $head =~ m{^HTTP/1\.\d (\d+)};
    my %hd = map { /^([^:]+):\s*(.*)$/ ? (lc $1 => $2) : () }
             split /\r\n/, $head;
    my $complete = 1;
    if (($hd{'transfer-encoding'} // '') =~ /chunked/) {
        ($body, $complete) = dechunk($body);
    }
    my $json = eval { JSON::PP->new->utf8->decode($body) };
    return { status => $status, headers => \%hd, body => $body,
             json => $json, chunked_complete => $complete };
}

# --- who may export --------------------------------------------------------

my $res = export_get(undef);
is($res->{status}, 403, 'anonymous: 403');
is($res->{json}{error}, 'Unauthorized', 'in JSON');

my (undef, $no_secrets) = $c->authorized_app(
    'read_profile,read_followers,read_followings,read_groups,read_posts,'
    . 'read_apps');
$res = export_get($no_secrets);
is($res->{status}, 403, 'every read scope but read_secrets: 403');

my (undef, $base) = $c->authorized_app($BASE);
$res = export_get($base, 'posts=1');
is($res->{status}, 403, '?posts=1 without read_posts: 403');
$res = export_get($base, 'apps=1');
is($res->{status}, 403, '?apps=1 without read_apps: 403');
my (undef, $no_groups) = $c->authorized_app(
    'read_secrets,read_profile,read_followers,read_followings');
$res = export_get($no_groups);
is($res->{status}, 403, 'without read_groups: 403');

my (undef, $all) = $c->authorized_app(
    "$BASE,read_posts,read_apps", post_types => 'all', info_types => 'all');
$res = export_get($all, 'attachments=bogus');
is($res->{status}, 400, 'attachments=bogus: 400 (t/api/111-export-inline.t '
   . 'for inline)');

$res = $c->request(HEAD => '/export', cred => $base);
is($res->{status}, 200, 'HEAD: 200');
is($res->{headers}{'content-type'}, 'application/vnd.tent.export.v0+json',
   'HEAD: the export media type');
is($res->{body}, '', 'HEAD: no body, nothing scanned');
is($c->request(HEAD => '/export')->{status}, 403, 'HEAD anonymous: 403');

# --- an empty entity: a whole document ---------------------------------

$res = export_get($base);
is($res->{status}, 200, 'read_secrets and the graph scopes: 200');
is($res->{headers}{'content-type'}, 'application/vnd.tent.export.v0+json',
   'the export media type');
is($res->{headers}{'cache-control'}, 'no-store', 'never cached');
ok($res->{chunked_complete}, 'the chunked body ends');
ok($res->{json}, 'the document parses') or diag $res->{body};
is($res->{json}{version}, 0, 'version 0');
is($res->{json}{entity}, $A, 'the entity');
is($res->{json}{complete}, JSON::PP::true, 'complete: true');
is(scalar @{ $res->{json}{profile} }, 1, 'an entity no one wrote: core');
is($res->{json}{profile}[0]{type}, $CORE, 'the core section');
is($res->{json}{profile}[0]{content}{entity}, $A, 'of the entity');
ok(!exists $res->{json}{posts}, 'no posts without ?posts=1');
ok(!exists $res->{json}{apps}, 'no apps without ?apps=1');
like($res->{body}, qr/"complete":true\}$/, 'complete is the last field');

# --- another entity on the same nginx and store ---------------------------

my (undef, $oowner) = $o->authorized_app(
    'write_posts,write_groups,write_profile,read_posts',
    post_types => 'all', info_types => 'all');
$res = $o->request(POST => '/groups', cred => $oowner,
                   body => { name => 'other-group-marker' });
is($res->{status}, 200, 'the other entity makes a group');
$res = $o->request(POST => '/posts', cred => $oowner,
                   body => { type => $STATUS,
                             content => { text => 'other-post-marker' },
                             permissions => { public => JSON::PP::false } });
is($res->{status}, 200, 'and a post');
$res = $o->request(PUT => '/profile/' . Tent::Client::uri_escape($BASIC),
                   cred => $oowner,
                   body => { name => 'other-profile-marker',
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'and a profile section');

# --- our entity: profile, graph, groups, apps, posts -----------------------

my (undef, $owner) = $c->authorized_app(
    'write_posts,read_posts,write_groups,write_profile,write_followings,'
    . 'write_followers,read_followers',
    post_types => 'all', info_types => 'all');

for my $name ('Alice', 'Alice Liddell') {
    $res = $c->request(PUT => '/profile/' . Tent::Client::uri_escape($BASIC),
                       cred => $owner,
                       body => { name => $name,
                                 permissions => { public => JSON::PP::false } });
    is($res->{status}, 200, "the basic section: $name");
}

$res = $c->request(POST => '/groups', cred => $owner,
                   body => { name => 'family' });
is($res->{status}, 200, 'a group');
my $group = $res->{json}{id};

my $rx = Tent::Receiver->start;
$res = $c->request(POST => '/followers',
                   body => { entity => $rx->url, types => ['all'],
                             licenses => [],
                             notification_path => 'notifications/n' });
is($res->{status}, 200, 'a follower') or diag $res->{body};
my $follower = $res->{json}{id};

my $rx2 = Tent::Receiver->start;
$res = $c->request(POST => '/followings', cred => $owner,
                   body => { entity => $rx2->url, groups => [$group] });
is($res->{status}, 200, 'a following') or diag $res->{body};

$res = $c->request(POST => '/posts', cred => $owner,
                   body => { type => $STATUS, content => { text => 'v1' },
                             permissions => { public => JSON::PP::false,
                                              groups => [{ id => $group }] },
                             mentions => [{ entity => $rx->url }] });
is($res->{status}, 200, 'a private post');
my $post = $res->{json}{id};
$res = $c->request(PUT => "/posts/$post", cred => $owner,
                   body => { type => $STATUS, content => { text => 'v2' },
                             permissions => { public => JSON::PP::false,
                                              groups => [{ id => $group }] } });
is($res->{status}, 200, 'its second version');

# a photo post: multipart, the post and one file
my $B = '-----------TentExport';
my $photo = join '', map { chr(($_ * 7) % 256) } 0 .. 5000;
my $mp = "--$B\r\nContent-Disposition: form-data; name=\"post\"; "
       . "filename=\"post.json\"\r\nContent-Type: "
       . "application/vnd.tent.v0+json\r\n\r\n"
       . JSON::PP->new->encode({ type => 'https://tent.io/types/post/photo/v0.1.0',
                                 content => { caption => 'a photo' },
                                 permissions => { public => JSON::PP::false } })
       . "\r\n--$B\r\nContent-Disposition: form-data; name=\"photos[0]\"; "
       . "filename=\"a b.png\"\r\nContent-Type: image/png\r\n\r\n$photo\r\n"
       . "--$B--\r\n";
$res = $c->request(POST => '/posts', cred => $owner, body => $mp,
    headers => { 'Content-Type' => "multipart/form-data; boundary=$B" });
is($res->{status}, 200, 'a photo post') or diag $res->{body};
my $photo_post = $res->{json}{id};

$res = export_get($all, 'apps=1&posts=1');
is($res->{status}, 200, 'the full export');
my $doc = $res->{json};
ok($doc && $doc->{complete}, 'parses, complete');
is_deeply($doc->{includes}, { apps => JSON::PP::true,
                              posts => JSON::PP::true }, 'includes');

my ($basic) = grep { $_->{type} eq $BASIC } @{ $doc->{profile} };
is($basic->{content}{name}, 'Alice Liddell', 'the basic section, current');
is($basic->{version}, 2, 'its version');
is($basic->{permissions}{public}, JSON::PP::false, 'its permissions');
my @old = grep { $_->{type} eq $BASIC } @{ $doc->{profile_versions} };
is(scalar @old, 1, 'its replaced version');
is($old[0]{content}{name}, 'Alice', 'as it was');
ok((grep { $_->{type} eq $CORE } @{ $doc->{profile} }), 'core is there');

is(scalar @{ $doc->{followers} }, 1, 'one follower');
my $f = $doc->{followers}[0];
is($f->{id}, $follower, 'its id');
is($f->{entity}, $rx->url, 'its entity');
is($f->{notification_path}, 'notifications/n', 'its notification path');
like($f->{mac_key_id} // '', qr/^s:/, 'its credential id');
ok(length($f->{mac_key} // ''), 'its key');
is($f->{mac_algorithm}, 'hmac-sha-256', 'its algorithm');
is_deeply($f->{types}, ['all'], 'its types');
ok(!exists $f->{profile}, 'not its profile');

is(scalar @{ $doc->{followings} }, 1, 'one following');
my $g = $doc->{followings}[0];
is($g->{entity}, $rx2->url, 'its entity');
ok($g->{mac_key_id} && $g->{mac_key} && $g->{mac_algorithm},
   'with the credentials it gave us');
is_deeply($g->{groups}, [$group], 'its groups');
ok($g->{remote_id}, 'its id there');

is(scalar @{ $doc->{groups} }, 1, 'one group');
is($doc->{groups}[0]{name}, 'family', 'its name');

ok(scalar @{ $doc->{apps} } >= 5, 'the apps') or diag scalar @{ $doc->{apps} };
ok((grep { $_->{mac_key} } @{ $doc->{apps} }), 'with their keys');
ok(!(grep { exists $_->{unconfirmed_slot} } @{ $doc->{apps} }),
   'not their places');
ok(scalar @{ $doc->{authorizations} } >= 5, 'the authorizations');
ok(!(grep { exists $_->{token_code} } @{ $doc->{authorizations} }),
   'no OAuth code');

my ($p) = grep { $_->{id} eq $post } @{ $doc->{posts} };
ok($p, 'the post');
is(scalar @{ $p->{versions} }, 2, 'both versions');
is_deeply([map { $_->{content}{text} } @{ $p->{versions} }], ['v1', 'v2'],
          'oldest first, the current last');
is_deeply($p->{versions}[0]{mentions}, [{ entity => $rx->url }],
          'the mentions');
is_deeply($p->{versions}[1]{permissions}{groups}, [{ id => $group }],
          'the permissions in full');
ok(!exists $p->{versions}[0]{rus}, 'no internal fields');
ok((grep { $_->{type} =~ m{/following/} } map { $_->{versions}[-1] }
    @{ $doc->{posts} }), 'the posts the server made too');

my ($pp) = grep { $_->{id} eq $photo_post } @{ $doc->{posts} };
my $att = $pp->{versions}[-1]{attachments}[0];
is($att->{name}, 'a b.png', 'the attachment, by name');
is($att->{size}, length $photo, 'its size');
is($att->{type}, 'image/png', 'its type');
is($att->{category}, 'photos', 'its category');
is($att->{digest}, sha256_hex($photo), 'its digest: the SHA-256 of the bytes');
is($att->{url}, "$A/tent/posts/$photo_post/attachments/a%20b.png",
   'its URL on this server, escaped');
(my $apath = $att->{url}) =~ s{^\Q$A\E}{};
$res = $c->request(GET => "/$apath" =~ s{^/+}{//}r, cred => $all);
is($res->{status}, 200, 'the URL serves it to the exporting app');
is($res->{body}, $photo, 'the bytes');
$res = export_get($all, 'apps=1&posts=1');

unlike($res->{body}, qr/other-|other\.test/,
       'nothing of the other entity of this nginx and store');

# the other entity's own export holds its things, not ours
my (undef, $oall) = $o->authorized_app("$BASE,read_posts",
                                       post_types => 'all');
{
    my $path = '/tent/export?posts=1';
    my $r2 = Tent::Util::http_request(path => $path, headers => {
        Host => 'other.test',
        signed_headers(cred => $oall, method => 'GET', uri => $path,
                       host => 'other.test', port => 80,
                       nonce => random_nonce(8)) });
    is($r2->{status}, 200, 'the other entity exports');
    like($r2->{body}, qr/other-post-marker/, 'its post');
    unlike($r2->{body}, qr/Alice|family/, 'nothing of ours');
}

# --- the schema ------------------------------------------------------------

SKIP: {
    skip 'python3-jsonschema is not installed', 1
        if system('python3 -c "import jsonschema" 2>/dev/null') != 0;
    my ($fh, $file) = tempfile(UNLINK => 1);
    print {$fh} $res->{body};
    close $fh;
    my $out = `python3 -c '
import json, sys, jsonschema
schema = json.load(open("docs/export.schema.json"))
jsonschema.validators.validator_for(schema).check_schema(schema)
jsonschema.validate(json.load(open(sys.argv[1])), schema)
print("valid")' $file 2>&1`;
    like($out, qr/^valid$/m, 'the document is valid by docs/export.schema.json')
        or diag $out;
}

# --- a big entity: many pages, one after the other -------------------------

# (the shared listen socket has sndbuf=8k, so a slow reader makes nginx
# wait on the socket between pages, as a real one would)
my $N = 1200;
my @made = parallel_clients(2, 120, sub {
    my ($i, $iter) = @_;
    return () if $iter >= $N / 2;
    my $r = $c->request(POST => '/posts', cred => $owner,
                        body => { type => $STATUS,
                                  content => { text => "bulk $i $iter "
                                                       . ('x' x 200) },
                                  permissions => { public => JSON::PP::true } });
    return ($r->{status});
});
is(scalar(grep { $_ == 200 } @made), $N, "$N posts made");

my $from = length error_log_text();
$res = export_get($all, 'posts=1', rcvbuf => 8192);
is($res->{status}, 200, 'the big export, read slowly');
ok($res->{json} && $res->{json}{complete}, 'whole and complete');
my @bulk = grep { ($_->{versions}[-1]{content}{text} // "") =~ /^bulk/ }
           @{ $res->{json}{posts} || [] };
is(scalar @bulk, $N, "all $N posts in it");
my $log = substr(error_log_text(), $from);
my @pages = $log =~ /tent export: page \d+: "posts", (\d+) rows/g;
ok(@pages >= $N / 100, 'the posts in pages of at most 100 rows: '
                       . scalar @pages);
ok(!(grep { $_ > 100 } @pages), 'none larger');
like($log, qr/tent export: the socket is writable/,
     'a page waited for the socket before the next scan');
my @bytes = $log =~ /tent export: page \d+: "posts", \d+ rows, (\d+) bytes/g;
ok(!(grep { $_ > 100 * 1024 } @bytes),
   'every page under 100 KB (bounded worker memory)');

# --- a reload in the middle: the old worker finishes the export -------------

{
    pipe(my $rd, my $wr) or die "pipe: $!";
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        close $rd;
        $wr->autoflush(1);
        my $r = export_get($all, 'posts=1', rcvbuf => 4096, delay => 0.005,
                           on_first => sub { print {$wr} "started\n" });
        print {$wr} ($r->{chunked_complete} ? 'ended ' : 'cut ')
                  . ($r->{json} && $r->{json}{complete} ? 'complete ' : 'no ')
                  . scalar(@{ ($r->{json} || {})->{posts} || [] }) . "\n";
        close $wr;
        POSIX::_exit(0);
    }
    close $wr;

    # the reload once the export's first bytes came (a reload before the
    # request was read would close its connection as idle: ASan's -j2 CI)
    my $line = <$rd> // '';
    my $at = -s Tent::Util::servroot() . '/logs/error.log';
    if ($line eq "started\n") {
        Tent::Util::reload_nginx();
        $line = <$rd> // '';
    }
    waitpid $pid, 0;
    like($line, qr/^ended complete (\d+)$/,
         'an export across a reload ends whole')
        or diag $line, grep { /tent (store|export)|exit/ && !/\[debug\]/ }
                        split /^/, log_since($at);
    my ($n) = $line =~ /(\d+)$/;
    ok(($n // 0) > $N, 'with every post');

    # the next block stops the new owner: it must have opened by then
    ok(Tent::Util::wait_for(sub {
        log_since($at) =~ /tent store: opened/ }, 10),
       'the new owner opened the store after the reload');
}

# --- the store silent mid-stream: the document ends unfinished -------------
#
# The worker that is not the store owner serves an export read slowly;
# the owner is stopped (SIGSTOP) past tent_store_timeout (2s here), so a
# scan gets no answer: the status went long ago, the connection ends
# without the last chunk and without "complete".

sub log_since {
    my ($from) = @_;
    open my $fh, '<', Tent::Util::servroot() . '/logs/error.log' or return '';
    seek $fh, $from, 0;
    local $/;
    my $t = <$fh> // '';
    close $fh;
    return $t;
}

{
    my $text = error_log_text();
    my ($owner) = $text =~ /.*\] (\d+)#\d+: tent store: opened/s;
    my $from = length $text;
    undef $text;
    my $cut;
    for my $try (1 .. 8) {
        my $at = -s Tent::Util::servroot() . '/logs/error.log';
        pipe(my $rd, my $wr) or die "pipe: $!";
        my $pid = fork // die "fork: $!";
        if ($pid == 0) {
            close $rd;
            my $r = export_get($all, 'posts=1', rcvbuf => 4096,
                               delay => 0.01);
            print {$wr} ($r->{chunked_complete} ? 'ended ' : 'cut ')
                      . ($r->{json} && $r->{json}{complete}
                         ? 'complete' : 'incomplete') . "\n";
            close $wr;
            POSIX::_exit(0);
        }
        close $wr;
        my $worker;
        Tent::Util::wait_for(sub {
            ($worker) = log_since($at)
                =~ /\] (\d+)#\d+: \*\d+ tent export: page 1:/;
            return $worker;
        }, 10);
        if (defined $worker && $owner && $worker != $owner) {
            kill 'STOP', $owner;
            sleep 3;
            kill 'CONT', $owner;
        }
        my $line = <$rd> // '';
        waitpid $pid, 0;
        if (defined $worker && $owner && $worker != $owner) {
            $cut = $line;
            last;
        }
    }
    SKIP: {
        skip 'no export landed on the worker that is not the owner', 3
            unless defined $cut;
        is($cut, "cut incomplete\n",
           'the store silent mid-stream: no last chunk, no "complete"')
            or diag "owner $owner", grep { /tent store|exit/
                                           && !/\[debug\]/ }
                                    split /^/, log_since($from);
        like(log_since($from),
             qr/tent export: the scan of "\w+" failed .*ends unfinished/,
             'logged: the document ends unfinished');
        $res = export_get($all, 'posts=1');
        ok($res->{json} && $res->{json}{complete},
           'the next export is whole');
    }
}

# --- a client that leaves mid-stream ----------------------------------------

$from = length error_log_text();
for (1 .. 3) {
    my $r = export_get($all, 'posts=1', rcvbuf => 4096, stop_after => 3000);
    ok(length $r->{raw} >= 3000, 'a client reads a little and goes');
}
sleep 1;
$res = export_get($all, 'posts=1');
ok($res->{json} && $res->{json}{complete}, 'the next export is whole');
$res = $c->request(GET => '/profile');
is($res->{status}, 200, 'and nginx answers');
$log = substr(error_log_text(), $from);
like($log, qr/tent export: the client went away/,
     'the export saw the client go') or diag substr($log, -3000);
unlike(error_log_text(), qr/\[(alert|crit|emerg)\]|exited on signal/,
       'no alert, no crash');

# --- exports at once: one an entity, at most 4 a worker -------------------
#
# Ten clients of one entity ask and read nothing: an export that fills
# the socket waits there holding its pages, so a tenant could pile them
# up and hold every slot of a worker (the others 503).  One export of an
# entity runs at a time in a worker (two workers here: at most two go),
# the rest get 429 with Retry-After; another entity's export still goes
# meanwhile.  Before, four a worker went and the fifth got 503.

{
    my @socks;
    for (1 .. 10) {
        socket(my $sock, PF_INET, SOCK_STREAM, 0) or die "socket: $!";
        setsockopt($sock, SOL_SOCKET, SO_RCVBUF, pack('i', 4096));
        connect($sock, pack_sockaddr_in($PORT, inet_aton('127.0.0.1')))
            or die "connect: $!";
        my $path = '/tent/export?posts=1';
        my %h = (Host => 'localhost', Connection => 'close',
                 signed_headers(cred => $all, method => 'GET', uri => $path,
                                host => 'localhost', port => 80,
                                nonce => random_nonce(8)));
        syswrite($sock, "GET $path HTTP/1.1\r\n"
            . join('', map { "$_: $h{$_}\r\n" } sort keys %h) . "\r\n");
        push @socks, $sock;
        sleep 0.1;
    }
    my (%st, $retry, $error);
    for my $sock (@socks) {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm 10;
        my $head = '';
        while ($head !~ /\r\n\r\n/) {
            my $n = sysread($sock, my $buf, 1);
            last if !$n;
            $head .= $buf;
        }
        my ($s) = $head =~ m{^HTTP/1\.\d (\d+)};
        $st{$s // 'none'}++;
        if (($s // 0) == 429) {
            $retry = $1 if $head =~ /^Retry-After: (\d+)/mi;
            my $body = '';
            while (sysread($sock, my $buf, 4096)) { $body .= $buf }
            $error = $1 if $body =~ /"error":"([^"]+)"/;
        }
        alarm 0;
    }

    # the other entity, while ours are held
    my $path = '/tent/export?posts=1';
    my $r2 = Tent::Util::http_request(path => $path, headers => {
        Host => 'other.test',
        signed_headers(cred => $oall, method => 'GET', uri => $path,
                       host => 'other.test', port => 80,
                       nonce => random_nonce(8)) });

    close $_ for @socks;
    ok(($st{200} // 0) >= 1 && ($st{200} // 0) <= 2,
       'ten exports of one entity at once: one a worker goes')
        or diag join(" ", %st);
    is(($st{429} // 0) + ($st{200} // 0), 10, 'the rest: 429')
        or diag join(" ", %st);
    is($retry, 5, 'with Retry-After');
    is($error, 'An export of this entity is running', 'a JSON error');
    is($r2->{status}, 200, 'another entity exports meanwhile')
        or diag $r2->{body};
    sleep 1;
    $res = export_get($all, 'posts=1');
    ok($res->{json} && $res->{json}{complete},
       'once they are gone an export goes again');
}

# --- rows the store's scan cuts by bytes ------------------------------------
#
# A scan also ends at the store's byte budget (16 MB), before its row
# limit: the other entity's 90 posts of 200 KB make the first scan of its
# posts section come back short of its 100 rows.  A short page is no end:
# every post is in the document (a section ended at a short page would
# have dropped the rest and still said "complete").

{
    my $BIG = 'https://example.com/types/big/v0.1.0';
    my (undef, $oall) = $o->authorized_app(
        "$BASE,read_posts,write_posts", post_types => 'all',
        info_types => 'all');
    my @big = parallel_clients(2, 120, sub {
        my ($i, $iter) = @_;
        return () if $iter >= 45;
        my $r = $o->request(POST => '/posts', cred => $oall,
                            body => { type => $BIG,
                                      content => { data => "big $i $iter "
                                                   . ('y' x 200_000) },
                                      permissions => {
                                          public => JSON::PP::true } });
        return ($r->{status});
    });
    is(scalar(grep { $_ == 200 } @big), 90, '90 posts of 200 KB made');
    my $from = length error_log_text();
    $res = export_get($oall, 'posts=1', host => 'other.test');
    ok($res->{json} && $res->{json}{complete}, 'the export is whole');
    my @got = grep { ($_->{versions}[-1]{content}{data} // '') =~ /^big/ }
              @{ $res->{json}{posts} || [] };
    is(scalar @got, 90, 'with all 90 big posts');
    my @short = grep { $_ > 0 && $_ < 100 }
                substr(error_log_text(), $from)
                    =~ /tent export: page \d+: "posts", (\d+) rows/g;
    ok(@short >= 2, 'pages came back short of 100 rows and the section '
                    . 'went on: ' . scalar @short);
}

$rx->stop;
$rx2->stop;

__DATA__

=== TEST 1: anonymous: 403
--- request
GET /tent/export
--- error_code: 403
--- response_body: {"error":"Unauthorized"}



=== TEST 2: a method it does not take
--- request
POST /tent/export
{}
--- error_code: 405
--- response_headers
Allow: GET, HEAD
