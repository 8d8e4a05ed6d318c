# Issue 14 part 4 across two servers (docs/import.md, docs/export.md):
# entity A (this suite's nginx) exports, entity B on a second nginx
# (Tent::Peer) imports, and B's export is A's document field by field but
# for what must differ (the entity, the export's time, B's own core with A
# as a previous entity, attachments not fetched; docs/tent-move.md lists
# them).  A document with one bad row in one section changes nothing of
# that section, each section in turn (on entities of the peer made for
# it), the others written.  The export of a private post needs the
# scopes: anonymous, a follower's credential, the app's own key, an app
# without read_secrets, without read_posts, an app of another entity (on
# this nginx, and on the peer): refused, and the other entity's own
# export holds nothing of A; the right app gets the post.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx dechunk http_request);
use Tent::Client;
use Tent::MAC qw(signed_headers random_nonce);
use Tent::Receiver;
use Tent::Peer;
use JSON::PP;

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

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
my $CORE = 'https://tent.io/types/info/core/v0.1.0';
my $MOOD = 'https://example.org/types/info/mood/v0.1.0';
my $READ = 'read_secrets,read_profile,read_followers,read_followings,'
           . 'read_groups,read_posts';
my $WRITE = 'write_secrets,write_profile,write_followers,write_followings,'
            . 'write_groups,write_posts,import_posts';
my $JSON = JSON::PP->new->utf8->canonical;
my @SECTIONS = qw(profile profile_versions followings followers groups
                  posts);

# the peer: B, and one empty entity a section for the bad documents
my @BAD = map { "bad-$_.test" } @SECTIONS;
my $servers = join '', map { <<CONF } 'other.test', @BAD;
    server {
        listen 127.0.0.1:\$PORT;
        server_name $_;
        tent_entity http://$_;
        client_max_body_size 4m;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
CONF
my $peer = Tent::Peer->start(
    port => peer_port(1), worker_processes => 1,
    http_config => "tent_store \$SERVROOT/tent_temp;\n$servers",
    server_config => <<'CONF');
        tent_entity $URL;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
CONF
my $B = $peer->url;

sub export_of {
    my (%o) = @_;
    my $host = $o{host} // 'localhost';
    my $path = '/tent/export' . ($o{query} // '?posts=1');
    my $r = http_request(port => $o{port} // $PORT, path => $path,
        headers => { Host => $host, $o{cred}
            ? signed_headers(cred => $o{cred}, method => 'GET', uri => $path,
                             host => $host, port => 80,
                             nonce => random_nonce(8))
            : () });
    my $body = $r->{body} // '';
    ($body) = dechunk($body)
        if ($r->{headers}{'transfer-encoding'} // '') =~ /chunked/;
    $r->{doc} = eval { $JSON->decode($body) };
    return $r;
}

sub doc_of {
    my $r = export_of(@_);
    diag "export: $r->{status} " . substr($r->{body} // '', 0, 300)
        unless $r->{doc} && $r->{doc}{complete};
    return $r->{doc};
}

sub copy { $JSON->decode($JSON->encode($_[0])) }

my $c = Tent::Client->new;

# --- A: every kind of row ----------------------------------------------------

my (undef, $owner) = $c->authorized_app(
    "$READ,write_posts,write_groups,write_profile,write_followings,"
    . 'write_followers', post_types => 'all', info_types => 'all');

for my $name ('Alice', 'Alice Liddell') {
    my $r = $c->request(PUT => '/profile/' . Tent::Client::uri_escape($BASIC),
                        cred => $owner,
                        body => { name => $name,
                                  permissions => { public => JSON::PP::true } });
    is($r->{status}, 200, "A's basic section: $name");
}
my $res = $c->request(POST => '/groups', cred => $owner,
                      body => { name => 'family' });
is($res->{status}, 200, 'a group');
my $group = $res->{json}{id};
$res = $c->request(PUT => '/profile/' . Tent::Client::uri_escape($MOOD),
                   cred => $owner,
                   body => { mood => 'secret', permissions => {
                       public => JSON::PP::false,
                       groups => [{ id => $group }] } });
is($res->{status}, 200, 'a private profile section');

my $rx = Tent::Receiver->start;
$res = $c->request(POST => '/followers',
                   body => { entity => $rx->url, types => ['all'],
                             licenses => [],
                             notification_path => 'notifications/n' });
is($res->{status}, 200, 'a follower') or diag $res->{body};
my $fcred = $res->{json};
$res = $c->request(PUT => "/followers/$fcred->{id}", cred => $owner,
                   body => { groups => [{ id => $group }] });

my $rx2 = Tent::Receiver->start;
$res = $c->request(POST => '/followings', cred => $owner,
                   body => { entity => $rx2->url, groups => [$group] });
is($res->{status}, 200, 'a following') or diag $res->{body};

$res = $c->request(POST => '/posts', cred => $owner,
                   body => { type => $STATUS, content => { text => 'v1' },
                             permissions => { public => JSON::PP::true },
                             mentions => [{ entity => $rx->url }],
                             licenses => ['https://example.org/l'] });
is($res->{status}, 200, 'a public post');
my $public = $res->{json}{id};
$res = $c->request(PUT => "/posts/$public", cred => $owner,
                   body => { type => $STATUS, content => { text => 'v2' },
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'its second version');
$res = $c->request(POST => '/posts', cred => $owner,
                   body => { type => $STATUS,
                             content => { text => 'for the family only' },
                             permissions => { public => JSON::PP::false,
                                              groups => [{ id => $group }] } });
is($res->{status}, 200, 'a private post');
my $private = $res->{json}{id};

my $doc = doc_of(cred => $owner);
ok($doc && $doc->{complete}, "A's export");
my ($priv) = grep { $_->{id} eq $private } @{ $doc->{posts} || [] };
ok($priv, 'the private post is in the owner\'s export');
ok(@{ $doc->{$_} || [] }, "A's export has $_") for @SECTIONS;

# --- the private post: who may export it ------------------------------------

# on this nginx: another entity, and its app holding every scope
my $o = Tent::Client->new(host => 'other.test');
my (undef, $other) = $o->authorized_app($READ, post_types => 'all',
                                        info_types => 'all');
my (undef, $no_secrets) = $c->authorized_app(
    'read_profile,read_followers,read_followings,read_groups,read_posts',
    post_types => 'all', info_types => 'all');
my ($app, $no_posts) = $c->authorized_app(
    'read_secrets,read_profile,read_followers,read_followings,read_groups',
    post_types => 'all', info_types => 'all');
my $pb = $peer->client;
my (undef, $peer_app) = $pb->authorized_app($READ, post_types => 'all',
                                            info_types => 'all');

for my $case (['anonymous', undef],
              ["a follower's credential", $fcred],
              ["the app's own key", $app],
              ['an app without read_secrets', $no_secrets],
              ['an app without read_posts', $no_posts],
              ['an app of another entity of this nginx', $other],
              ['an app of the entity on the peer', $peer_app])
{
    my ($what, $cred) = @$case;
    my $r = export_of(cred => $cred);
    ok($r->{status} == 403 || $r->{status} == 401,
       "the export with posts, $what: refused") or diag "$r->{status}";
    unlike($r->{body} // '', qr/family only/, "$what: not the post");
}
my $r = export_of(cred => $no_posts, query => '');
is($r->{status}, 200, 'without read_posts, the export without posts: 200');
ok(!exists $r->{doc}{posts}, 'no posts in it');
$r = export_of(host => 'other.test', cred => $other);
is($r->{status}, 200, 'the other entity exports itself');
unlike($r->{body} // '', qr/family only|Alice/, 'nothing of A in it');
$r = export_of(cred => $owner);
like($r->{body} // '', qr/family only/, 'the right app: the private post');
is_deeply($priv->{versions}[-1]{permissions}{groups}, [{ id => $group }],
          'with its permissions');
$r = $c->request(GET => "/posts/$private");
ok($r->{status} == 403 || $r->{status} == 404,
   'the private post is not public on A') or diag $r->{status};

# --- A's document into B, on the peer; B's export -----------------------------

my (undef, $bowner) = $pb->authorized_app("$WRITE,$READ",
                                          post_types => 'all',
                                          info_types => 'all');
$res = $pb->request(POST => '/import', cred => $bowner, body => $doc);
is($res->{status}, 200, 'A into B: 200') or diag $res->{body};
my $rep = $res->{json} || {};
ok($rep->{$_}{written}, "$_ written") for @SECTIONS;
is($rep->{posts}{taken}, scalar @{ $doc->{posts} }, 'every post');

my $bdoc = doc_of(port => $peer->port, cred => $bowner);
ok($bdoc && $bdoc->{complete}, "B's export");

# what must differ, set aside: docs/tent-move.md
sub comparable {
    my ($d) = @_;
    my $x = copy($d);
    delete @{$x}{qw(entity exported_at)};
    $x->{profile} = [grep { $_->{type} ne $CORE } @{ $x->{profile} }];
    $x->{profile_versions} = [grep { $_->{type} ne $CORE }
                              @{ $x->{profile_versions} }];
    $_->{entity} = 'E' for map { @{ $_->{versions} } } @{ $x->{posts} };
    return $x;
}
is($bdoc->{entity}, $B, "B's document is of B");
# an imported follower is pending until its server follows again
# (docs/import.md): B's export says so, A's did not
ok(@{ $bdoc->{followers} || [] }
   && !(grep { !$_->{import_pending} } @{ $bdoc->{followers} }),
   "B's imported followers are pending");
# so are its imported followings, until their server delivers to it
ok(@{ $bdoc->{followings} || [] }
   && !(grep { !$_->{import_pending} } @{ $bdoc->{followings} }),
   "B's imported followings are pending");
delete $_->{import_pending} for @{ $bdoc->{followers} || [] },
                                @{ $bdoc->{followings} || [] };
is_deeply(comparable($bdoc), comparable($doc),
          "B's export is A's document but for the entity, field by field")
    or diag "A: " . $JSON->encode(comparable($doc)) . "\nB: "
            . $JSON->encode(comparable($bdoc));
my ($bcore) = grep { $_->{type} eq $CORE } @{ $bdoc->{profile} };
is($bcore->{content}{entity}, $B, "B's core is B's");
is_deeply($bcore->{content}{previous_entities}, [$A],
          'with A as a previous entity');
is_deeply([map { $_->{entity} } map { @{ $_->{versions} } }
           @{ $bdoc->{posts} }],
          [($B) x scalar(map { @{ $_->{versions} } } @{ $bdoc->{posts} })],
          'every version of every post is B\'s');

$r = $pb->request(GET => "/posts/$private");
ok($r->{status} == 403 || $r->{status} == 404,
   'the private post is not public on B either') or diag $r->{status};
$r = export_of(port => $peer->port, cred => $fcred);
ok($r->{status} == 403 || $r->{status} == 401,
   "on B, the follower's credential may not export either");
$r = $pb->request(GET => "/posts/$private", cred => $fcred);
is($r->{status}, 200, 'the follower in the group reads it on B, signing'
   . ' with the key A gave it') or diag $r->{body};

# --- one bad row in a section: nothing of that section ---------------------

my %bad = (
    profile => sub { push @{ $_[0] },
                     { type => 'https://example.org/types/info/x/v0.1.0',
                       content => 'not an object', version => 1,
                       permissions => { public => JSON::PP::true },
                       updated_at => 1 } },
    profile_versions => sub { $_[0][-1]{version} = 0 },
    followings => sub { push @{ $_[0] }, { %{ $_[0][0] },
                        id => 'f' x 32, entity => 'not a url',
                        mac_key_id => 's:other' } },
    followers => sub { push @{ $_[0] }, { %{ $_[0][0] },
                       id => 'e' x 32, entity => 'http://x.example',
                       mac_key_id => 's:other2',
                       notification_path => 'http://elsewhere/n' } },
    groups => sub { push @{ $_[0] }, { id => 'a/b', name => 'bad',
                                      created_at => 1, updated_at => 1 } },
    posts => sub { push @{ $_[0] }, { %{ copy($_[0][0]) }, id => 'badpost' };
                   $_[0][-1]{versions} = [{ %{ $_[0][-1]{versions}[0] },
                       id => 'badpost', content => 'not an object' }] },
);
for my $i (0 .. $#SECTIONS) {
    my $s = $SECTIONS[$i];
    my $host = $BAD[$i];
    my $cl = Tent::Client->new(port => $peer->port, host => $host);
    my (undef, $cred) = $cl->authorized_app("$WRITE,$READ",
                                            post_types => 'all',
                                            info_types => 'all');
    my $d = copy($doc);
    # the bad row last: the good rows before it are not written either
    $bad{$s}->($d->{$s});
    $res = $cl->request(POST => '/import', cred => $cred, body => $d);
    is($res->{status}, 200, "$s with a bad row: answered") or diag $res->{body};
    my $rp = $res->{json} || {};
    is($rp->{$s}{written}, JSON::PP::false, "$s: not written");
    is($rp->{$s}{taken}, 0, "$s: nothing taken");
    ok($rp->{$s}{invalid_count} && @{ $rp->{$s}{invalid} || [] },
       "$s: the reason") or diag $JSON->encode($rp->{$s});
    ok($rp->{$_}{written}, "$s bad: $_ written")
        for grep { $_ ne $s } @SECTIONS;
    my $e = doc_of(port => $peer->port, host => $host, cred => $cred);
    my @left = grep { $s !~ /^profile/ || $_->{type} ne $CORE }
               @{ $e->{$s} || [] };
    is(scalar @left, 0, "$s: nothing of it on the entity")
        or diag $JSON->encode(\@left);
    if ($s eq 'followers') {
        $r = $cl->request(GET => "/followers/$fcred->{id}", cred => $fcred);
        ok($r->{status} >= 400, "the follower's key is not taken there");
    }
    if ($s eq 'posts') {
        $r = $cl->request(GET => "/posts/$public");
        is($r->{status}, 404, 'the good post is not there either');
    }
}

$peer->stop;

__DATA__

=== TEST 1: entity A
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name other.test;
        tent_entity http://other.test;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/posts
--- error_code: 200
--- response_body: []
