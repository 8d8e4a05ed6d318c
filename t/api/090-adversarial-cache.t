# Issue #11, findings 9 and 10: what anonymous readers can make a server
# keep.
#
# 9: on a "tent_entity http://$host" server every new Host was an entity,
# and reading its profile wrote one to the store.  Now no read writes:
# thousands of random Hosts read every route an anonymous request can
# reach, and the LevelDB (read with nginx stopped) has no row of theirs.
# The core section is stored by a PUT of it; before that readers get the
# default, and a stored one out of line with the configuration shows as
# the next version without being written.
#
# 10: the workers' cache of anonymous replies was keyed by the URI as
# sent, so junk parameters made an entry each.  Now it is keyed by the
# query as parsed: junk, repeats, defaults spelled out, Accept variants
# make no new entry (seen in the debug log's "tent cache:" lines), while
# the Link of each reply still repeats its own request's parameters;
# entries are per Host; HEAD shares the GET's entry; and the bytes a
# worker keeps stay under tent_anonymous_cache with replies near the
# largest kept.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text);
use Tent::Client;
use IO::Socket::IP;
use JSON::PP;

BEGIN {
    # a port for the second server block (a fixed entity)
    my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                Listen => 1) or die "no free port: $!";
    $ENV{TEST_NGINX_FIXED_PORT} = $s->sockport;
    close $s;
}

workers(2);
no_shuffle();
run_tests();

my $stopped;
END { stop_last_nginx() unless $stopped }

start_last_nginx();

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $ESSAY = 'https://tent.io/types/post/essay/v0.1.0';
my $CORE = 'https://tent.io/types/info/core/v0.1.0';
my $BASIC = 'https://tent.io/types/info/basic/v0.1.0';
my $CACHE = 1024 * 1024;        # tent_anonymous_cache below
my $esc = \&Tent::Client::uri_escape;
my $JSON = JSON::PP->new->utf8->canonical;

my $root = Tent::Util::servroot();

# every key of the store (nginx stopped: LevelDB is one process)
sub store_keys {
    stop_last_nginx();
    my @keys = map { chomp; my ($k, $v) = split /\t/;
                     [pack('H*', $k), pack('H*', $v // '')] }
               Tent::Util::ldb_rows("$root/tent_temp/db");
    start_last_nginx();
    return @keys;
}

# "tent cache:" debug lines written since offset $off
# the feed's and the profile's entries; the move check's ("moved?",
# docs/move.md: the cache line just before its own on that connection)
# left out
sub cache_log {
    my ($off) = @_;
    my $text = substr(error_log_text(), $off);
    my (@l, %last, %moved);
    for my $line (split /\n/, $text) {
        if ($line =~ /\*(\d+) tent cache: (?:hit|miss) ([0-9A-F]{8})/) {
            $last{$1} = $2;
        } elsif ($line =~ /\*(\d+) tent move: moved\? checked/) {
            $moved{$last{$1}} = 1 if defined $last{$1};
        }
    }
    while ($text =~ /\] (\d+)#\d+: \*\d+ tent cache: (stored|hit|miss) ([0-9A-F]{8})(?:, (\d+) bytes; (\d+) entries, (\d+) bytes)?/g) {
        next if $moved{$3};
        push @l, { pid => $1, ev => $2, key => $3, size => $4,
                   n => $5, bytes => $6 };
    }
    return @l;
}
sub log_size { length error_log_text() }

sub client { Tent::Client->new(host => $_[0]) }

sub post_as {
    my ($c, $cred, $text, %o) = @_;
    my $res = $c->request(POST => '/posts', cred => $cred,
                          body => { type => $STATUS,
                                    content => { text => $text },
                                    permissions => { public => JSON::PP::true },
                                    %o });
    die "post: $res->{status} $res->{body}" unless $res->{status} == 200;
    return $res->{json};
}

# many GETs on few connections: (host, path) pairs -> statuses
sub pipelined {
    my (@reqs) = @_;
    my @status;
    while (my @batch = splice @reqs, 0, 100) {
        my $sock = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                       PeerPort => Tent::Util::port(),
                                       Timeout => 10) or die "connect: $!";
        my $out = '';
        for my $i (0 .. $#batch) {
            my ($host, $path, $method) = @{ $batch[$i] };
            $out .= ($method || 'GET') . " $path HTTP/1.1\r\nHost: $host\r\n"
                  . ($i == $#batch ? "Connection: close\r\n" : '') . "\r\n";
        }
        my $raw = '';
        eval {
            local $SIG{ALRM} = sub { die "timeout\n" };
            alarm 30;
            print {$sock} $out;
            while (sysread($sock, my $buf, 65536)) { $raw .= $buf }
            alarm 0;
        };
        alarm 0;
        close $sock;
        push @status, $raw =~ m{HTTP/1\.1 (\d\d\d) }g;
    }
    return @status;
}

# ==== finding 9: reads on hosts no one wrote to store nothing ==========

# a host someone did write to: an app, posts, a follower-less feed
my $alice = client('alice.example');
my ($aapp, $acred) = $alice->authorized_app(
    'read_posts,write_posts,read_profile,write_profile',
    post_types => 'all', info_types => 'all');
my @aposts = map { post_as($alice, $acred, "alice $_") } 1 .. 5;
my $apost = $aposts[0];

my @rnd = map { sprintf 'h%04d-%06x.rnd.example', $_, int rand 0xffffff }
          1 .. 2000;

# every route an anonymous request can reach, for the first 100 hosts
my $ent = $esc->('http://alice.example');
my @routes = (
    ['/'], ['/', 'HEAD'], ['/tent/profile'], ['/tent/profile', 'HEAD'],
    ['/tent/profile/' . $esc->($CORE)],
    ['/tent/profile/' . $esc->($CORE) . '?version=1'],
    ['/tent/profile/' . $esc->($BASIC)],
    ['/tent/posts'], ['/tent/posts', 'HEAD'], ['/tent/posts/count'],
    ['/tent/posts?limit=5&sort_by=published_at&since_id=x'],
    ["/tent/posts/$apost->{id}"], ["/tent/posts/$apost->{id}", 'HEAD'],
    ["/tent/posts/$apost->{id}/versions"],
    ["/tent/posts/$apost->{id}/mentions"],
    ["/tent/posts/$ent/$apost->{id}"],
    ["/tent/posts/$apost->{id}/attachments/a.png"],
    ['/tent/groups'], ['/tent/groups/count'], ['/tent/groups/g1'],
    ['/tent/followers'], ['/tent/followers/count'], ['/tent/followers/f1'],
    ['/tent/followings'], ['/tent/followings/count'],
    ['/tent/followings/f1'], ['/tent/followings/f1/posts'],
    ['/tent/apps'], ["/tent/apps/$aapp->{id}"],
    ["/tent/apps/$aapp->{id}/authorizations"],
    ['/tent/notifications/f1?challenge=abc'],
    ['/tent/oauth/authorize?client_id=' . $aapp->{id}
     . '&redirect_uri=' . $esc->('https://app.example/cb')],
    ['/tent/no/such/route'],
);

my @reqs;
for my $h (@rnd[0 .. 99]) {
    push @reqs, map { [$h, $_->[0], $_->[1]] } @routes;
}
# the finding as reported: the profile of 2,000 new Hosts, twice
push @reqs, map { [$_, '/tent/profile'] } @rnd, @rnd;

my @st = pipelined(@reqs);
is(scalar @st, scalar @reqs, scalar(@reqs) . ' anonymous requests answered');
is(scalar(grep { $_ >= 500 } @st), 0, 'none with a 5xx');

# signed ones, with keys no host has, and refused writes
for my $h (@rnd[100 .. 119]) {
    my $c = client($h);
    my $res = $c->request(GET => '/posts',
                          cred => { mac_key_id => 'a:nosuchkey',
                                    mac_key => 'x' x 32,
                                    mac_algorithm => 'hmac-sha-256' });
    is($res->{status}, 401, "$h: an unknown key is 401") if $h eq $rnd[100];
    $c->request(POST => '/apps', body => '[]');
    $c->request(POST => '/followers', body => { entity => 'http://10.0.0.1' });
    $c->request(POST => '/posts', body => { type => $STATUS });
}

# a fresh host's profile: the default, version 1, its own entity
my $res = client($rnd[5])->request(GET => '/profile');
is($res->{json}{$CORE}{entity}, "http://$rnd[5]", 'a fresh host: its entity');
is($res->{json}{$CORE}{version}, 1, 'a fresh host: the default, version 1');

{

    my @keys = store_keys();
    my @theirs = grep { $_->[0] =~ /\.rnd\.example/ } @keys;
    is(scalar @theirs, 0, 'not one row for 2,000 hosts only read')
        or diag(join "\n", map { unpack 'H*', $_->[0] } @theirs[0 .. 4]);
    my %entities = map { ($_->[0] =~ /^([^\0]*)\0/)[0] => 1 } @keys;
    is_deeply([sort keys %entities], ['http://alice.example'],
              'the store has the one entity written to');
    ok(!grep({ $_->[0] =~ /^http:\/\/alice\.example\0p/ } @keys),
       'and no profile row for it: no one wrote its profile');
}

# ---- the core section: stored by a PUT, never by a read

my $fixed = Tent::Client->new(port => $ENV{TEST_NGINX_FIXED_PORT},
                              host => 'servers.example');
my $core = '/profile/' . $esc->($CORE);
my %one = (headers => { 'X-Server' => 'one.example' });
my %two = (headers => { 'X-Server' => 'two.example' });

sub core_of {
    my ($r) = @_;
    my $s = $r->{json}{$CORE} || $r->{json};
    return "$r->{status} v" . ($s->{version} // '-') . ' '
           . join(',', @{ $s->{servers} || [] });
}

is(core_of($fixed->request(GET => '/profile', %one)),
   '200 v1 https://one.example', 'nothing stored: the default, version 1');
is(core_of($fixed->request(GET => '/profile', %two)),
   '200 v1 https://two.example', 'other servers: still the default');

my (undef, $fcred) = $fixed->authorized_app('write_profile,read_profile',
                                            info_types => 'all');
$res = $fixed->request(PUT => $core, cred => $fcred, %one,
                       body => { licenses => ['https://example.org/l'] });
is(core_of($res), '200 v2 https://one.example',
   'the first PUT comes after the default readers saw: version 2');

is(core_of($fixed->request(GET => '/profile', %two)),
   '200 v3 https://two.example',
   'servers changed: shown as the next version');
is(core_of($fixed->request(GET => '/profile', %two)),
   '200 v3 https://two.example', 'again: the same');
is(core_of($fixed->request(GET => '/profile', %one)),
   '200 v2 https://one.example', 'back in line: the stored version');
is($fixed->request(GET => '/profile', %two)->{json}{$CORE}{licenses}[0],
   'https://example.org/l', 'the PUT content is kept in what is shown');

{
    my @keys = store_keys();
    my ($row) = grep { $_->[0] eq "https://servers.example\0p"
                                   . 'https://tent.io/types/info/core' }
                @keys;
    my $rec = $row ? eval { decode_json($row->[1]) } : undef;
    is(($rec->{version} // '-') . ' ' . join(',', @{ $rec->{content}{servers} || [] }),
       '2 https://one.example', 'the store has version 2: no read wrote');
}

$res = $fixed->request(PUT => $core, cred => $fcred, %two,
                       body => { licenses => [] });
is(core_of($res), '200 v4 https://two.example',
   'a PUT after version 3 was shown: version 4');

# ==== finding 10: the cache, keyed by what the reply depends on ========

my $anon = client('alice.example');

# the canonical reply, then the same query spelled every other way
my $off = log_size();
my $ref = $anon->request(GET => '/posts?limit=3');
is($ref->{status}, 200, 'the feed, limit=3');
is(scalar @{ $ref->{json} }, 3, 'three posts');

my @spellings = ('limit=3', 'limit=03', 'limit=3&limit=9', 'limit=3&z=1',
                 'z=2&limit=3', 'limit=3&order=sideways',
                 'limit=3&sort_by=received_at', 'limit=3&&&', 'limit=3&foo',
                 'limit=3&post_types=', 'limit=3&view=', 'limit=3&utm=x%20y',
                 'limit=3&limitx=1', 'limit=3&since_time=',
                 map { "limit=3&z=$_" } 3 .. 200);
my $same = 0;
my $links = 0;
for my $q (@spellings) {
    my $r = $anon->request(GET => "/posts?$q");
    $same++ if $r->{status} == 200 && $r->{body} eq $ref->{body};
    # each Link repeats its own request's parameters
    (my $rest = $q) =~ s/&+$//;
    $links++ if ($r->{headers}{link} // '') =~ /^<\/tent\/posts\?\Q$rest\E&since_id=/;
}
is($same, scalar @spellings, scalar(@spellings) . ' spellings: the same body');
is($links, scalar @spellings, 'each with a Link of its own parameters');

my @l = cache_log($off);
my %stored = map { $_->{key} => 1 } grep { $_->{ev} eq 'stored' } @l;
is(scalar keys %stored, 1, 'one entry for them all')
    or diag(join ' ', keys %stored);
my @stores = grep { $_->{ev} eq 'stored' } @l;
ok(@stores <= 2, 'stored at most once a worker (' . scalar(@stores) . ')');
ok(scalar(grep { $_->{ev} eq 'hit' } @l) >= @spellings - 1,
   'the rest are hits');

# Accept: no cached route answers by it, so it makes no entry either
$off = log_size();
for my $accept ('application/vnd.tent.v0+json', '*/*', 'text/html',
                'application/json;q=0.9, */*;q=0.1', 'x' x 300, '') {
    my $r = $anon->request(GET => '/posts?limit=3',
                           headers => { Accept => $accept });
    is("$r->{status} " . ($r->{headers}{'content-type'} // ''),
       '200 application/vnd.tent.v0+json', "Accept: '" . substr($accept, 0, 20)
       . "': the same representation");
    is($r->{body}, $ref->{body}, '... and body');
}
@l = cache_log($off);
is(scalar(grep { $_->{ev} eq 'stored' } @l), 0, 'Accept made no new entry');

# queries that mean something else are other entries, and right
for my $q (['limit=2', 2], ['limit=5', 5], ['limit=3&order=asc', 3],
           ['limit=3&sort_by=published_at', 3],
           ['limit=3&before_id=' . $aposts[3]{id}, 3],
           ['limit=3&post_types=' . $esc->('https://x.example/types/no/v0'), 0])
{
    my ($query, $n) = @$q;
    my $r = $anon->request(GET => "/posts?$query");
    is(scalar @{ $r->{json} || [] }, $n, "?$query: $n posts");
    my $again = $anon->request(GET => "/posts?$query");
    is($again->{body}, $r->{body}, "?$query: the same again");
}
my $asc = $anon->request(GET => '/posts?limit=3&order=asc');
is($asc->{json}[0]{id}, $aposts[0]{id}, 'order=asc: oldest first');
is($anon->request(GET => '/posts?limit=3&order=asc&z=1')->{body}, $asc->{body},
   'and junk beside it changes nothing');

# Host: each entity its own entries
my $bob = client('bob.example');
my (undef, $bcred) = $bob->authorized_app('write_posts', post_types => 'all');
my @bposts = map { post_as($bob, $bcred, "bob $_") } 1 .. 2;

my %feeds;
for my $round (1, 2) {
    for my $h ('alice.example', 'bob.example', 'ALICE.example',
               'alice.example.', $rnd[7]) {
        my $r = client($h)->request(GET => '/posts?limit=3');
        push @{ $feeds{$h} }, join ',', map { $_->{content}{text} }
                                        @{ $r->{json} || [] };
    }
}
is($feeds{'alice.example'}[1], 'alice 5,alice 4,alice 3', "alice's feed");
is($feeds{'bob.example'}[1], 'bob 2,bob 1', "bob's, not alice's");
is($feeds{'ALICE.example'}[1], $feeds{'alice.example'}[1],
   'Host in capitals: the same entity ($host is lower case)');
is($feeds{$rnd[7]}[1], '', 'a host no one wrote to: an empty feed');
is_deeply([map { $_->[0] eq $_->[1] ? 1 : 0 } values %feeds],
          [map { 1 } values %feeds], 'each the same from the cache');
is(client('bob.example')->request(GET => '/profile')->{json}{$CORE}{entity},
   'http://bob.example', "bob's profile names bob");
is(client('alice.example')->request(GET => '/profile')->{json}{$CORE}{entity},
   'http://alice.example', "alice's names alice");

# HEAD: the profile's shares the GET's entry; the feed's is a count
$off = log_size();
my $get = $anon->request(GET => '/profile?junk=1');
my $head = $anon->request(HEAD => '/profile?other=2');
is($head->{headers}{'content-length'}, length $get->{body},
   'HEAD /profile: the GET reply\'s length');
is($head->{body}, '', 'and no body');
my %keys = map { $_->{key} => 1 } cache_log($off);
is(scalar keys %keys, 1, 'GET and HEAD of the profile: one entry, junk or not');
$head = $anon->request(HEAD => '/posts?limit=3');
is("$head->{status} " . ($head->{headers}{count} // '-'), '200 5',
   'HEAD /posts: the count, not a cached page');

# ---- the byte bound, with replies near the largest an entry may be

my $big = client('big.example');
my (undef, $gcred) = $big->authorized_app('write_posts', post_types => 'all');
for my $i (1 .. 210) {
    my $r = $big->request(POST => '/posts', cred => $gcred,
                          body => { type => $ESSAY,
                                    content => { body => sprintf('%04d ', $i)
                                                         . ('x' x 800) },
                                    permissions => { public => JSON::PP::true } });
    die "essay: $r->{status} $r->{body}" unless $r->{status} == 200;
}

$off = log_size();
# (the pages are counted, not decoded: JSON::PP is slow at 200 KB)
sub page {
    my ($path) = @_;
    return Tent::Util::http_request(path => "/tent$path",
                                    headers => { Host => 'big.example' });
}
my $right = 0;
for my $limit (150 .. 200) {
    my $r = page("/posts?limit=$limit");
    my $n = () = $r->{body} =~ /"type":"\Q$ESSAY\E"/g;
    $right++ if $n == $limit && $r->{body} =~ /^\[\{[^\]]*?"body":"0210 /;
}
is($right, 51, '51 pages of 150 to 200 posts, each right');
@l = grep { $_->{ev} eq 'stored' } cache_log($off);
ok(@l >= 10, scalar(@l) . ' of them kept (about 200 KB each)');
my ($over) = grep { $_->{bytes} > $CACHE } @l;
ok(!$over, 'a worker never kept more than tent_anonymous_cache 1m')
    or diag("$over->{bytes} bytes in $over->{n} entries");
my $most = (sort { $b <=> $a } map { $_->{bytes} } @l)[0] // 0;
ok($most > $CACHE / 2, "and used it ($most bytes at most)");

# evicted ones come back right
$res = page('/posts?limit=150');
is(scalar(() = $res->{body} =~ /"type":"\Q$ESSAY\E"/g), 150,
   'an evicted page, asked again: right');

# the finding's attack: limit=160 and junk, 300 times
$off = log_size();
my $junk_ok = 0;
for my $n (1 .. 300) {
    $junk_ok++ if page("/posts?limit=160&z=$n")->{status} == 200;
}
is($junk_ok, 300, '300 junk spellings of a 160-post page answered');
@l = cache_log($off);
ok(scalar(grep { $_->{ev} eq 'stored' } @l) <= 2,
   '300 junk spellings of one page: stored at most once a worker');

# a write moves the generation: the next read is fresh
post_as($alice, $acred, 'alice 6');
is($anon->request(GET => '/posts?limit=3&z=999')->{json}[0]{content}{text},
   'alice 6', 'after a write, the new post, whatever the spelling');

unlike(error_log_text(), qr/\[alert\]|exited on signal|runtime error/,
       'no alert, no crash, no UBSan report');

__DATA__

=== TEST 1: tent_anonymous_cache takes a size or "off"
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_anonymous_cache lots;
--- config
    tent_entity https://alice.example;
--- must_die
--- error_log
"tent_anonymous_cache" directive takes a size (e.g. 16m) or "off"



=== TEST 2: tent_anonymous_cache: a negative size is refused
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_anonymous_cache -1m;
--- config
    tent_entity https://alice.example;
--- must_die
--- error_log
"tent_anonymous_cache" directive takes a size (e.g. 16m) or "off"



=== TEST 3: tent_anonymous_cache once
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_anonymous_cache 1m;
    tent_anonymous_cache 2m;
--- config
    tent_entity https://alice.example;
--- must_die
--- error_log
"tent_anonymous_cache" directive is duplicate



=== TEST 4: tent_anonymous_cache is for the http block (one per worker)
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity https://alice.example;
    tent_anonymous_cache 1m;
--- must_die
--- error_log
"tent_anonymous_cache" directive is not allowed here



=== TEST 5: off: right answers, nothing kept
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_anonymous_cache off;
--- config
    tent_entity https://off.example;
--- request eval
["GET /tent/profile", "GET /tent/profile", "GET /tent/posts", "GET /tent/posts"]
--- error_code eval
[200, 200, 200, 200]
--- response_body_like eval
[qr/"entity":"https:\/\/off\.example"/, qr/"entity":"https:\/\/off\.example"/,
 qr/^\[\]$/, qr/^\[\]$/]
--- no_error_log
tent cache:



=== TEST 6: the entities: one per Host, and a fixed one on another port
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_anonymous_cache 1m;
    tent_delivery off;

    server {
        listen 127.0.0.1:$TEST_NGINX_FIXED_PORT;
        tent_entity https://servers.example;
        tent_servers https://$http_x_server;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
    }
--- config
    tent_entity http://$host;
    tent_provisioning off;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/profile
--- more_headers
Host: first.example
--- error_code: 200
--- response_body_like: "entity":"http://first\.example"
