# bin/tent-move between two nginx instances (docs/tent-move.md): entity A
# (this suite's nginx) moved into B (a Tent::Peer) in one command, the API
# roots found by discovery, credentials from files and from the
# environment (never the command line), progress on stderr, the import's
# report on stdout; and its failures, each its exit status, a clear
# message and nothing written on the target: usage, a wrong source
# credential, a wrong target credential, a target not empty, a source
# down, a source whose export ends unfinished.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx dechunk http_request);
use Tent::Client;
use Tent::MAC qw(signed_headers random_nonce);
use Tent::Peer;
use JSON::PP;
use IO::Socket::IP;
use File::Temp qw(tempdir);
use Cwd qw(abs_path);
use FindBin;

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $MOVE = abs_path("$FindBin::Bin/../../bin/tent-move");
my $PORT = $ENV{TEST_NGINX_SERVER_PORT} || 1984;

# the peers' ports: just above the suite's, within the range a session
# is given (docs/testing.md); any free port when files run side by side
# (TEST_NGINX_RANDOMIZE), as other suites' peers take
sub peer_port {
    my ($n) = @_;
    return undef if $ENV{TEST_NGINX_RANDOMIZE};
    return ($ENV{TEST_NGINX_SERVER_PORT} || 1984) + $n;
}
my $A = "http://127.0.0.1:$PORT";
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $BASIC = 'https://tent.io/types/info/basic/v0.1.0';
my $READ = 'read_secrets,read_profile,read_followers,read_followings,'
           . 'read_groups,read_posts';
my $WRITE = 'write_secrets,write_profile,write_followers,write_followings,'
            . 'write_groups,write_posts,import_posts';
my $JSON = JSON::PP->new->utf8->canonical;
my $tmp = tempdir(CLEANUP => 1);

# run tent-move: (exit status, stdout, stderr)
sub move {
    my ($args, %env) = @_;
    local @ENV{keys %env} = values %env;
    delete local $ENV{$_} for grep { !defined $ENV{$_} } keys %env;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDOUT, '>', "$tmp/out" or die;
        open STDERR, '>', "$tmp/err" or die;
        exec $^X, $MOVE, @$args or die "exec: $!";
    }
    waitpid $pid, 0;
    my $code = $? >> 8;
    my ($out, $err) = map { local $/; open my $f, '<', "$tmp/$_"; <$f> // '' }
                      qw(out err);
    return ($code, $out, $err);
}

sub cred_file {
    my ($name, $cred) = @_;
    my $f = "$tmp/$name.json";
    open my $fh, '>', $f or die;
    print {$fh} $JSON->encode($cred);
    close $fh;
    chmod 0600, $f;
    return $f;
}

sub export_of { Tent::Util::export_document(port => $_[0], cred => $_[1]) }

sub empty {
    my ($d) = @_;
    return $d && @{ $d->{profile} } == 1 && !@{ $d->{posts} }
           && !@{ $d->{followers} } && !@{ $d->{groups} };
}

my $peer = Tent::Peer->start(port => peer_port(2), worker_processes => 1);
my $B = $peer->url;

# --- A ------------------------------------------------------------------------

my $c = Tent::Client->new;
my (undef, $owner) = $c->authorized_app("$READ,write_posts,write_groups,"
    . 'write_profile', post_types => 'all', info_types => 'all');
my $res = $c->request(PUT => '/profile/' . Tent::Client::uri_escape($BASIC),
                      cred => $owner,
                      body => { name => 'Alice',
                                permissions => { public => JSON::PP::true } });
is($res->{status}, 200, "A's basic section");
$res = $c->request(POST => '/groups', cred => $owner,
                   body => { name => 'family' });
is($res->{status}, 200, 'a group');
for my $i (1 .. 30) {
    $res = $c->request(POST => '/posts', cred => $owner,
                       body => { type => $STATUS, content => { text => "p$i" },
                                 permissions => { public => JSON::PP::true } });
    die "post: $res->{body}" unless $res->{status} == 200;
}
# a private photo post: its attachment moves inline (the default), as
# the target could not fetch it unsigned
my $PHOTO_BYTES = join '', map { chr(($_ * 11 + 3) % 256) } 0 .. 5000;
my $MB = '-----------TentMove';
$res = $c->request(POST => '/posts', cred => $owner,
    headers => { 'Content-Type' => "multipart/form-data; boundary=$MB" },
    body => "--$MB\r\nContent-Disposition: form-data; name=\"post\"; "
          . "filename=\"post.json\"\r\nContent-Type: "
          . "application/vnd.tent.v0+json\r\n\r\n"
          . $JSON->encode({ type => 'https://tent.io/types/post/photo/v0.1.0',
                            content => { caption => 'private' },
                            permissions => { public => JSON::PP::false } })
          . "\r\n--$MB\r\nContent-Disposition: form-data; "
          . "name=\"photos[0]\"; filename=\"p.png\"\r\n"
          . "Content-Type: image/png\r\n\r\n$PHOTO_BYTES\r\n--$MB--\r\n");
is($res->{status}, 200, 'a private photo post') or diag $res->{body};
my $photo = $res->{json}{id};
my (undef, $no_secrets) = $c->authorized_app(
    'read_profile,read_followers,read_followings,read_groups,read_posts');
my $adoc = export_of($PORT, $owner);
ok($adoc && $adoc->{complete}, "A's export");
my $nposts = @{ $adoc->{posts} };

my $pb = $peer->client;
my (undef, $bowner) = $pb->authorized_app("$WRITE,$READ",
                                          post_types => 'all',
                                          info_types => 'all');
my (undef, $bweak) = $pb->authorized_app("$READ,write_profile");

my $src = cred_file('src', $owner);
my $dst = cred_file('dst', $bowner);

# --- usage ----------------------------------------------------------------------

my ($code, $out, $err) = move([]);
is($code, 2, 'no arguments: 2');
like($err, qr/two arguments/, 'says so');
($code, $out, $err) = move(['--help']);
is($code, 0, '--help: 0');
like($out, qr/\AUsage:\s+tent-move \[options\] SOURCE_ENTITY/,
     'the usage, from the POD');
like($out, qr/^\s+--source-cred FILE$/m, 'its options');
($code, $out, $err) = move(['--source-cred', "$tmp/none", '--target-cred',
                            $dst, $A, $B]);
is($code, 2, 'a credential file that is not there: 2');
like($err, qr/cannot read the source credentials/, 'says so');
($code, $out, $err) = move([$A, $B], TENT_MOVE_SOURCE_CRED => undef,
                           TENT_MOVE_SOURCE_MAC_ID => undef);
is($code, 2, 'no source credentials at all: 2');
like($err, qr/no source credentials/, 'says so');
($code, $out, $err) = move(['--source-cred', $src, '--target-cred', $dst,
                            '--mac-key', 'x', $A, $B]);
is($code, 2, 'no option takes a key on the command line: 2');

# --- wrong credentials: nothing written ----------------------------------------

my $badsrc = cred_file('badsrc', { %$owner, mac_key => 'wrong' });
($code, $out, $err) = move(['--source-cred', $badsrc, '--target-cred', $dst,
                            $A, $B]);
is($code, 3, 'a wrong source key: 3') or diag $err;
like($err, qr/source: the export answered 40[13]/, 'says so');
ok(empty(export_of($peer->port, $bowner)), 'B: nothing written');

my $weak = cred_file('weak', $no_secrets);
($code, $out, $err) = move(['--source-cred', $weak, '--target-cred', $dst,
                            $A, $B]);
is($code, 3, 'a source app without read_secrets: 3');
like($err, qr/read_secrets/, 'says which scopes it needs');
ok(empty(export_of($peer->port, $bowner)), 'B: nothing written');

my $baddst = cred_file('baddst', { %$bowner, mac_key => 'wrong' });
($code, $out, $err) = move(['--source-cred', $src, '--target-cred', $baddst,
                            $A, $B]);
is($code, 4, 'a wrong target key: 4') or diag $err;
like($err, qr/target credentials are refused/, 'says so');
unlike($err, qr/export:/, 'before any export');
my $weakdst = cred_file('weakdst', $bweak);
($code, $out, $err) = move(['--source-cred', $src, '--target-cred', $weakdst,
                            $A, $B]);
is($code, 4, 'a target app without write_secrets: 4');
like($err, qr/write_secrets/, 'says which scopes it needs');
ok(empty(export_of($peer->port, $bowner)), 'B: nothing written');

# --- a source down, a source whose export ends unfinished -------------------------

# a port nothing listens on
my $down_port = peer_port(3) // do {
    my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                Listen => 1) or die "no free port: $@";
    my $p = $s->sockport;
    close $s;
    $p;
};
my $down = "http://127.0.0.1:$down_port";
($code, $out, $err) = move(['--source-cred', $src, '--target-cred', $dst,
                            $down, $B]);
is($code, 3, 'a source down: 3');
like($err, qr/source: \Q$down\E cannot be reached/, 'says so') or diag $err;
($code, $out, $err) = move(['--source-cred', $src, '--target-cred', $dst,
                            '--source-api-root', "$down/tent", $A, $B]);
is($code, 3, 'a source API root down: 3');
like($err, qr/source: the export failed/, 'says so') or diag $err;

# a static file that is A's document cut short, as a server that died
# mid-export sends it
my $cut = $JSON->encode($adoc);
$cut = substr($cut, 0, int(length($cut) * 0.7));
open my $fh, '>', "$ENV{TEST_NGINX_SERVER_ROOT}/html/cut.json" or die;
print {$fh} $cut;
close $fh;
($code, $out, $err) = move(['--source-cred', $src, '--target-cred', $dst,
                            '--source-api-root', "$A/cut", $A, $B]);
is($code, 3, 'an export that ends unfinished: 3') or diag $err;
like($err, qr/ended unfinished/, 'says so');
ok(empty(export_of($peer->port, $bowner)), 'B: nothing written');

# --- the move ------------------------------------------------------------------

($code, $out, $err) = move(['--source-cred', $src, '--target-cred', $dst,
                            $A, $B]);
is($code, 0, 'A moved into B: 0') or diag $err;
Test::More::note($err);
like($err, qr/source API root \Q$A\E\/tent, target API root \Q$B\E\/tent/,
     'both API roots discovered');
like($err, qr/export: done, .*, $nposts posts/, 'progress: the posts counted');
like($err, qr/import: posts: $nposts taken/, 'the report summed up');
my $report = eval { $JSON->decode($out) };
is($report->{posts}{taken}, $nposts, 'the report on stdout') or diag $out;
my $bdoc = export_of($peer->port, $bowner);
is(scalar @{ $bdoc->{posts} }, $nposts, "B has A's posts");
is_deeply([map { $_->{id} } @{ $bdoc->{posts} }],
          [map { $_->{id} } @{ $adoc->{posts} }], 'the same ids');
is_deeply($bdoc->{groups}, $adoc->{groups}, 'and groups');
$res = $pb->request(GET => '/profile');
is($res->{json}{$BASIC}{name}, 'Alice', 'and profile');
ok(!grep({ exists $_->{attachments_of} }
         @{ $report->{posts}{skipped} || [] }), 'no attachment left out');
$res = $pb->request(GET => "/posts/$photo/attachments/p.png",
                    cred => $bowner);
is($res->{status}, 200, "the private photo's attachment on B");
ok(($res->{body} // '') eq $PHOTO_BYTES, 'its bytes');

# --- the target not empty any more ------------------------------------------------

($code, $out, $err) = move(['--source-cred', $src, '--target-cred', $dst,
                            '-q', $A, $B]);
is($code, 4, 'again: the target is not empty: 4');
like($err, qr/409.*must be empty/s, 'says so') or diag $err;
unlike($err, qr/export: /, '-q: no progress');

# --- credentials from the environment; a move without posts ------------------

my $peer2 = Tent::Peer->start(port => peer_port(4), worker_processes => 1);
my (undef, $cowner) = $peer2->authorized_app("$WRITE,$READ",
                                             post_types => 'all',
                                             info_types => 'all');
($code, $out, $err) = move(['--no-posts', $A, $peer2->url],
    TENT_MOVE_SOURCE_CRED => $src,
    TENT_MOVE_TARGET_MAC_ID => $cowner->{access_token}
                               // $cowner->{mac_key_id},
    TENT_MOVE_TARGET_MAC_KEY => $cowner->{mac_key});
is($code, 0, 'credentials from the environment, --no-posts: 0') or diag $err;
my $cdoc = export_of($peer2->port, $cowner);
is(scalar @{ $cdoc->{posts} }, 0, 'no posts moved');
is(scalar @{ $cdoc->{groups} }, 1, 'the group moved');

# --- a section the import leaves out: exit 1, the report says why ------------

my $peer3 = Tent::Peer->start(port => peer_port(5), worker_processes => 1);
my (undef, $downer) = $peer3->authorized_app("$WRITE,$READ",
                                             post_types => 'all',
                                             info_types => 'all');
# A's document as A sends it ("complete" last), one post's content made
# invalid
my $path = '/tent/export?posts=1';
my $raw = http_request(path => $path, headers => {
    Host => 'localhost',
    signed_headers(cred => $owner, method => 'GET', uri => $path,
                   host => 'localhost', port => 80,
                   nonce => random_nonce(8)) });
my ($bad) = dechunk($raw->{body} // '');
ok($bad =~ s/"content":\{"text":"p30"\}/"content":"not an object"/,
   'a post made invalid');
open $fh, '>', "$ENV{TEST_NGINX_SERVER_ROOT}/html/bad.json" or die;
print {$fh} $bad;
close $fh;
($code, $out, $err) = move(['--source-cred', $src, '--target-cred',
                            cred_file('d', $downer), '--source-api-root',
                            "$A/bad", $A, $peer3->url]);
is($code, 1, "a section left out by the import: 1") or Test::More::diag($err);
like($err, qr/import: posts NOT written: invalid rows.*content/,
     'says which and why');
like($err, qr/import: groups: 1 taken/, 'the other sections written');
$report = eval { $JSON->decode($out) };
is($report->{posts}{written}, JSON::PP::false, 'the report on stdout');
is(scalar @{ export_of($peer3->port, $downer)->{posts} }, 0,
   'no post on the target');

# --- a target whose client_max_body_size is smaller than the document -----

my $peer4 = Tent::Peer->start(port => peer_port(6), worker_processes => 1,
    # the entity URL's Host (127.0.0.1:PORT) picks this server
    http_config => <<'CONF');
    tent_store $SERVROOT/tent_temp;
    server {
        listen 127.0.0.1:$PORT;
        server_name 127.0.0.1;
        tent_entity $URL;
        client_max_body_size 2k;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
CONF
my $small = Tent::Client->new(port => $peer4->port,
                              host => '127.0.0.1:' . $peer4->port);
my (undef, $sowner) = $small->authorized_app("$WRITE,$READ",
                                             post_types => 'all',
                                             info_types => 'all');
($code, $out, $err) = move(['--source-cred', $src, '--target-cred',
                            cred_file('s', $sowner), $A, $peer4->url]);
is($code, 4, 'a target that takes 2 KB bodies: 4') or diag $err;
like($err, qr/413|client_max_body_size/, 'says why') or diag $err;
$res = $small->request(GET => '/posts');
is_deeply($res->{json}, [], 'nothing written there');
$peer4->stop;

# --- a bigger document: streamed in many pieces, the posts counted once ------

my @many = map {
    my $id = sprintf 'moved-%05d', $_;
    $JSON->encode({ id => $id, versions => [{
        id => $id, entity => 'http://old.test', type => $STATUS,
        version => 1, content => { text => "post $_ " . ('x' x 200) },
        permissions => { public => JSON::PP::true },
        published_at => 1700000000 + $_, received_at => 1700000000 + $_,
        updated_at => 1700000000 + $_ }] })
} 1 .. 3000;
# in the server's order: "complete" last
open $fh, '>', "$ENV{TEST_NGINX_SERVER_ROOT}/html/big.json" or die;
print {$fh} '{"version":0,"entity":"http://old.test","posts":['
    . join(',', @many) . '],"complete":true}';
close $fh;
ok(-s "$ENV{TEST_NGINX_SERVER_ROOT}/html/big.json" > 1_000_000,
   'a document over 1 MB');
my $peer5 = Tent::Peer->start(port => peer_port(7), worker_processes => 1);
my (undef, $powner) = $peer5->authorized_app("$WRITE,$READ",
                                             post_types => 'all',
                                             info_types => 'all');
($code, $out, $err) = move(['--source-cred', $src, '--target-cred',
                            cred_file('p5', $powner), '--source-api-root',
                            "$A/big", $A, $peer5->url]);
is($code, 0, '3,000 posts moved: 0') or diag $err;
like($err, qr/export: done, 1\.\d MB, 3000 posts/,
     'the progress counts each post once') or diag $err;
is($JSON->decode($out)->{posts}{taken}, 3000, 'all taken');
$res = $peer5->client->request(GET => '/posts/count');
is($res->{body}, '3000', 'in the target\'s feed');
$peer5->stop;

$peer3->stop;
$peer2->stop;
$peer->stop;

__DATA__

=== TEST 1: entity A
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
    location = /big/export {
        default_type application/vnd.tent.export.v0+json;
        alias $TEST_NGINX_SERVER_ROOT/html/big.json;
    }
    location = /bad/export {
        default_type application/vnd.tent.export.v0+json;
        alias $TEST_NGINX_SERVER_ROOT/html/bad.json;
    }
    location = /cut/export {
        default_type application/vnd.tent.export.v0+json;
        alias $TEST_NGINX_SERVER_ROOT/html/cut.json;
    }
--- request
GET /tent/posts
--- error_code: 200
--- response_body: []
