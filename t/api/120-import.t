# POST /import (issue 14, part 2; docs/import.md): an entity's export
# document taken into an empty entity of the same nginx and store (another
# server block): who may import (anonymous, without write_secrets, posts
# without import_posts: 403), what is refused before anything is written
# (no body, malformed JSON, a section of the wrong type, an incomplete
# document, ?merge=2, a body over client_max_body_size, an entity not
# empty: 409), all or nothing per section (one invalid post: no post
# written, the other sections written, the report says why), that a
# document naming a third entity of this nginx as its own writes nothing
# of that entity, and the round trip: B's export is A's but for the
# entity and the documented differences.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx dechunk);
use Tent::Client;
use Tent::MAC qw(signed_headers random_nonce);
use Tent::Receiver;
use JSON::PP;

# every block's nginx: the servers below
add_block_preprocessor(sub {
    my $block = shift;
    $block->set_value(http_config => <<'CONF') unless defined $block->http_config;
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_timeout 2s;
    tent_outbound_allow 127.0.0.0/8;
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name b.test;
        tent_entity http://b.test;
        client_max_body_size 256k;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name c.test;
        tent_entity http://c.test;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name d.test;
        tent_entity http://d.test;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name e.test;
        tent_entity http://e.test;
        client_max_body_size 8m;
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
my $READ = 'read_secrets,read_profile,read_followers,read_followings,'
           . 'read_groups,read_posts';
my $WRITE = 'write_secrets,write_profile,write_followers,write_followings,'
            . 'write_groups,write_posts,import_posts';
my $JSON = JSON::PP->new->utf8->canonical;

my $c = Tent::Client->new;

# GET /tent/export?posts=1 of the entity of $host, dechunked, parsed
sub export_of { Tent::Util::export_document(host => $_[0], cred => $_[1]) }

sub import_to {
    my ($cl, $cred, $body, %o) = @_;
    return $cl->request(POST => '/import' . ($o{query} // ''), cred => $cred,
                        body => $body);
}

# an export with nothing but core, as a just-configured entity has
sub is_empty {
    my ($doc, $what) = @_;
    ok($doc && @{ $doc->{profile} } == 1 && !@{ $doc->{followers} }
       && !@{ $doc->{followings} } && !@{ $doc->{groups} }
       && !@{ $doc->{posts} } && !@{ $doc->{profile_versions} },
       "$what: nothing written")
        or diag $JSON->encode($doc);
}

# --- entity A: profile, graph, groups, posts --------------------------------

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

my $rx = Tent::Receiver->start;
$res = $c->request(POST => '/followers',
                   body => { entity => $rx->url, types => ['all'],
                             licenses => [],
                             notification_path => 'notifications/n' });
is($res->{status}, 200, 'a follower') or diag $res->{body};
my $fcred = $res->{json};

my $rx2 = Tent::Receiver->start;
$res = $c->request(POST => '/followings', cred => $owner,
                   body => { entity => $rx2->url, groups => [$group] });
is($res->{status}, 200, 'a following') or diag $res->{body};

$res = $c->request(POST => '/posts', cred => $owner,
                   body => { type => $STATUS, content => { text => 'v1' },
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'a post');
my $post = $res->{json}{id};
$res = $c->request(PUT => "/posts/$post", cred => $owner,
                   body => { type => $STATUS, content => { text => 'v2' },
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'its second version');

# a photo post: its attachment's bytes are not fetched by the import
my $MB = '-----------TentImport';
my $mp = "--$MB\r\nContent-Disposition: form-data; name=\"post\"; "
       . "filename=\"post.json\"\r\nContent-Type: "
       . "application/vnd.tent.v0+json\r\n\r\n"
       . JSON::PP->new->encode({ type => 'https://tent.io/types/post/photo/v0.1.0',
                                 content => { caption => 'a photo' },
                                 permissions => { public => JSON::PP::true } })
       . "\r\n--$MB\r\nContent-Disposition: form-data; name=\"photos[0]\"; "
       . "filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\nPNGBYTES\r\n"
       . "--$MB--\r\n";
$res = $c->request(POST => '/posts', cred => $owner, body => $mp,
    headers => { 'Content-Type' => "multipart/form-data; boundary=$MB" });
is($res->{status}, 200, 'a photo post') or diag $res->{body};
my $photo_post = $res->{json}{id};

my $doc = export_of('localhost', $owner);
ok($doc && $doc->{complete}, "A's export");
my $nposts = scalar @{ $doc->{posts} };
is($nposts, 6, 'the posts, the following, follower and profile posts')
    or diag $JSON->encode($doc->{posts});
my $npublic = grep { $_->{versions}[-1]{permissions}{public} }
              @{ $doc->{posts} };

# --- B: who may import, what is refused before anything is written ---------

my $b = Tent::Client->new(host => 'b.test');
my (undef, $bowner) = $b->authorized_app("$WRITE,$READ",
                                         post_types => 'all',
                                         info_types => 'all');
my (undef, $no_secrets) = $b->authorized_app(
    'write_profile,write_followers,write_followings,write_groups,'
    . 'write_posts,import_posts');
my (undef, $no_import) = $b->authorized_app(
    'write_secrets,write_profile,write_followers,write_followings,'
    . 'write_groups,write_posts');

$res = import_to($b, undef, $doc);
is($res->{status}, 403, 'anonymous: 403');
is($res->{json}{error}, 'Unauthorized', 'in JSON');
$res = import_to($b, $no_secrets, $doc);
is($res->{status}, 403, 'without write_secrets: 403');
$res = import_to($b, $no_import, $doc);
is($res->{status}, 403, 'posts without import_posts: 403');

$res = import_to($b, $bowner, '');
is($res->{status}, 400, 'no body: 400');
ok($res->{json}{error}, 'in JSON') or diag $res->{body};
$res = import_to($b, $bowner, '{"version": 0, ');
is($res->{status}, 400, 'malformed JSON: 400');
$res = import_to($b, $bowner, { %$doc, followers => {} });
is($res->{status}, 400, '"followers": {}: 400');
like($res->{json}{error} // '', qr/array/, 'says so');
$res = import_to($b, $bowner, { %$doc, complete => JSON::PP::false });
is($res->{status}, 400, 'an incomplete document: 400');
$res = import_to($b, $bowner, { %$doc, version => 1 });
is($res->{status}, 400, 'another version: 400');
$res = import_to($b, $bowner, [1]);
is($res->{status}, 400, 'not an object: 400');
$res = import_to($b, $bowner, $doc, query => '?merge=2');
is($res->{status}, 400, '?merge=2: 400');
like($res->{json}{error} // '', qr/merge/, 'says so');
$res = import_to($b, $bowner,
                 { %$doc, groups => [{ id => 'g', name => 'x' x 300000,
                                       created_at => 1, updated_at => 1 }] });
is($res->{status}, 413, 'over client_max_body_size: 413');

is_empty(export_of('b.test', $bowner), 'after the refusals');

# --- D: one invalid post; the document names a third entity (C) ------------

my $cc = Tent::Client->new(host => 'c.test');
my (undef, $cowner) = $cc->authorized_app($READ, post_types => 'all',
                                          info_types => 'all');
my $d = Tent::Client->new(host => 'd.test');
my (undef, $downer) = $d->authorized_app("$WRITE,$READ",
                                         post_types => 'all',
                                         info_types => 'all');

my $bad = $JSON->decode($JSON->encode($doc));
$bad->{entity} = 'http://c.test';
for my $p (@{ $bad->{posts} }) {
    $_->{entity} = 'http://c.test' for @{ $p->{versions} };
}
$bad->{posts}[0]{versions}[0]{content} = 'not an object';
$res = import_to($d, $downer, $bad);
is($res->{status}, 200, 'a document with one invalid post: 200')
    or diag $res->{body};
my $rep = $res->{json};
is($rep->{posts}{written}, JSON::PP::false, 'posts: not written');
is($rep->{posts}{taken}, 0, 'none taken');
like($rep->{posts}{invalid}[0]{reason} // '', qr/content/, 'the reason');
is($rep->{posts}{invalid}[0]{index}, 0, 'and which');
is($rep->{followers}{written}, JSON::PP::true, 'followers: written');
is($rep->{followers}{taken}, 1, 'one');
is($rep->{groups}{taken}, 1, 'groups: one');

my $ddoc = export_of('d.test', $downer);
is(scalar @{ $ddoc->{posts} }, 0, 'D: no post at all');
is(scalar @{ $ddoc->{followers} }, 1, 'D: the follower');
my ($dcore) = grep { $_->{type} eq $CORE } @{ $ddoc->{profile} };
is($dcore->{content}{entity}, 'http://d.test', "D's core is D's");
is_deeply($dcore->{content}{previous_entities}, ['http://c.test'],
          'the document\'s entity: a previous one');
is_empty(export_of('c.test', $cowner), 'C, named by the document');

$res = import_to($d, $downer, $bad);
is($res->{status}, 409, 'D is not empty any more: 409');

# --- C: rows that would take the place of others' -------------------------

my (undef, $cimport) = $cc->authorized_app("$WRITE,$READ",
                                           post_types => 'all',
                                           info_types => 'all');
my $steal = $JSON->decode($JSON->encode($doc));
$steal->{followings}[0]{mac_key_id} = $cowner->{mac_key_id};
push @{ $steal->{followers} }, { %{ $steal->{followers}[0] } };
push @{ $steal->{posts} }, $steal->{posts}[0];
$res = import_to($cc, $cimport, $steal);
is($res->{status}, 200, 'a document with clashing key ids: 200');
is($res->{json}{followings}{written}, JSON::PP::false,
   "a following with the owner app's key id: not written");
like($res->{json}{followings}{invalid}[0]{reason} // '', qr/key id/,
     'the reason');
is($res->{json}{followers}{written}, JSON::PP::false,
   'the same follower twice: not written');
like($res->{json}{followers}{invalid}[0]{reason} // '', qr/twice/,
     'the reason');
like($res->{json}{posts}{invalid}[0]{reason} // '', qr/twice/,
     'the same post twice: not written');
is($res->{json}{groups}{written}, JSON::PP::true, 'the groups are');
my $cdoc = export_of('c.test', $cowner);
ok($cdoc && $cdoc->{complete}, "C's owner app's key still C's own");
is(scalar @{ $cdoc->{followings} }, 0, 'no following');

# --- the round trip: A into B ------------------------------------------------

# read before the import: the reply and credential caches must not keep
# what B was before
$res = $b->request(GET => '/profile');
is($res->{status}, 200, "B's profile before");
ok(!exists $res->{json}{$BASIC}, 'no basic section yet');
$res = $b->request(GET => "/followers/$fcred->{id}", cred => $fcred);
ok($res->{status} >= 400, "the follower's key unknown to B yet: "
   . $res->{status});

$res = import_to($b, $bowner, $doc);
is($res->{status}, 200, 'A into B: 200') or diag $res->{body};
my $report = $res->{json};
$res = $b->request(GET => '/profile');
is($res->{json}{$BASIC}{name}, 'Alice Liddell',
   "B's profile after: the basic section, not a cached reply");
$rep = $report;

is($rep->{profile}{taken}, 1, 'profile: basic taken');
is($rep->{profile}{skipped}[0]{type}, $CORE, 'core skipped');
is($rep->{profile_versions}{taken}, 1, 'the old basic version');
is($rep->{followings}{taken}, 1, 'followings: 1');
is($rep->{followers}{taken}, 1, 'followers: 1');
is($rep->{groups}{taken}, 1, 'groups: 1');
is($rep->{posts}{taken}, $nposts, 'posts: all');

my $bdoc = export_of('b.test', $bowner);
ok($bdoc && $bdoc->{complete}, "B's export");
is($bdoc->{entity}, 'http://b.test', 'of B');

# A's document, its entity B's, but for the documented differences
sub comparable {
    my ($d, $entity) = @_;
    my $x = $JSON->decode($JSON->encode($d));
    $x->{profile} = [grep { $_->{type} ne $CORE } @{ $x->{profile} }];
    $x->{profile_versions} = [grep { $_->{type} ne $CORE }
                              @{ $x->{profile_versions} }];
    for my $p (@{ $x->{posts} }) {
        for my $v (@{ $p->{versions} }) {
            $v->{entity} = 'E';
            delete $v->{attachments};
        }
    }
    # imported followers wait for their server to follow again, imported
    # followings for their server to deliver to us
    delete $_->{import_pending} for @{ $x->{followers} },
                                    @{ $x->{followings} };
    # the credential rows' kind is the server's; profiles are left out
    return { map { $_ => $x->{$_} }
             qw(profile profile_versions followings followers groups posts) };
}
is_deeply(comparable($bdoc), comparable($doc),
          "B's export is A's, modulo the entity");
my ($bcore) = grep { $_->{type} eq $CORE } @{ $bdoc->{profile} };
is($bcore->{content}{entity}, 'http://b.test', "B's core stays B's");
is_deeply($bcore->{content}{previous_entities}, [$A], 'A is a previous one');
is($bdoc->{posts}[0]{versions}[0]{entity}, 'http://b.test',
   'the posts are B\'s');

# the follower's credentials work on B as they did on A
$res = $b->request(GET => "/followers/$fcred->{id}", cred => $fcred);
is($res->{status}, 200, 'the follower signs with its credentials on B')
    or diag $res->{body};
$res = $b->request(GET => "/posts/$post");
is($res->{status}, 200, 'the post on B');
is($res->{json}{content}{text}, 'v2', 'its current version');
is($res->{json}{version}, 2, 'with its version');
$res = $b->request(GET => '/posts');
is(scalar @{ $res->{json} || [] }, $npublic, 'the feed has the public posts');

is_deeply([map { $_->{attachments_of} } @{ $rep->{posts}{skipped} }],
          [$photo_post], 'the photo post: its attachment not fetched, said');
$res = $b->request(GET => "/posts/$photo_post");
is($res->{status}, 200, 'the photo post on B');
is_deeply($res->{json}{attachments}, [], 'without its attachment');
$res = $b->request(GET => "/posts/$photo_post/attachments/a.png");
is($res->{status}, 404, 'its attachment on B: 404');

$res = import_to($b, $bowner, $doc);
is($res->{status}, 409, 'again: 409');
like($res->{json}{error} // '', qr/not empty/, 'says why');

# --- E: 3,000 posts in one document, one batch (client_max_body_size 8m)

my $e = Tent::Client->new(host => 'e.test');
my (undef, $eowner) = $e->authorized_app("$WRITE,$READ",
                                         post_types => 'all',
                                         info_types => 'all');
# What goes into the request line and headers of our requests to a
# relationship (its servers, a follower's notification path, key ids) is
# checked as POST /followers and a follow's answer are: CR, LF, spaces, a
# scheme in a path, other schemes are refused, never written (a follower
# path with CRLF would smuggle a request into every delivery)
for my $case (
    [followers => notification_path => "n HTTP/1.1\r\nHost: x\r\n\r\nGET /admin",
     qr/notification_path/],
    [followers => notification_path => 'http://elsewhere/n', qr/notification_path/],
    [followers => servers => ["http://127.0.0.1:1/\r\nX: y"], qr/servers/],
    [followings => servers => ['ftp://127.0.0.1/'], qr/servers/],
    [followers => mac_key_id => "s:ab\r\nX-Injected: 1", qr/key id/],
    [followings => mac_key_id => 's:a"b', qr/key id/],
    [followings => remote_id => "r1 HTTP/1.1\r\nHost: x\r\n\r\n", qr/remote_id/])
{
    my ($section, $field, $value, $why) = @$case;
    my $inj = $JSON->decode($JSON->encode($doc));
    $inj->{$_} = [] for grep { $_ ne $section }
                        qw(profile profile_versions followings followers
                           groups posts);
    $inj->{$section}[0]{$field} = $value;
    $res = import_to($e, $eowner, $inj);
    is($res->{status}, 200, "$section with a bad $field: answered");
    is($res->{json}{$section}{written}, JSON::PP::false,
       "$section with a bad $field: not written");
    like($res->{json}{$section}{invalid}[0]{reason} // '', $why,
         "$section with a bad $field: the reason");
}
is_empty(export_of('e.test', $eowner), 'E after the refused relationships');

my @many = map {
    my $id = sprintf 'imported-%05d', $_;
    { id => $id,
      versions => [{ id => $id, entity => 'http://old-e.test',
                     type => $STATUS, version => 1,
                     content => { text => "post $_ " . ('x' x 200) },
                     permissions => { public => JSON::PP::true },
                     published_at => 1700000000 + $_,
                     received_at => 1700000000 + $_,
                     updated_at => 1700000000 + $_ }] }
} 1 .. 3000;
my $big = { version => 0, entity => 'http://old-e.test',
            complete => JSON::PP::true, posts => \@many };
ok(length($JSON->encode($big)) > 1_100_000,
   'a document over 1 MB (the default limit)');
$res = import_to($e, $eowner, $big);
is($res->{status}, 200, 'imported') or diag substr($res->{body} // '', 0, 300);
is($res->{json}{posts}{taken}, 3000, 'the 3,000 posts taken')
    or diag $JSON->encode($res->{json}{posts}{invalid}[0]);
$res = $e->request(GET => '/posts/count');
is($res->{body}, '3000', 'counted in the feed') or diag $res->{body};
$res = $e->request(GET => '/posts?limit=2');
is_deeply([map { $_->{id} } @{ $res->{json} || [] }],
          ['imported-03000', 'imported-02999'],
          'newest first, by the received_at they had');

__DATA__

=== TEST 1: a method it does not take
--- request
GET /tent/import
--- error_code: 405
--- response_headers
Allow: POST



=== TEST 2: anonymous: 403
--- request
POST /tent/import
{}
--- error_code: 403
--- response_body: {"error":"Unauthorized"}
