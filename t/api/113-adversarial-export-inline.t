# GET /export?attachments=inline against a document made to blow it up
# (issue 26): one imported version listing the same digest 60 times (the
# import takes the bytes once) made the export inline them 60 times, the
# worker holding ~5x that and the answer 60x the file.  Now each
# distinct digest's bytes are given once a document, at its first
# attachment; a later one has its url and digest and no "data"
# (docs/export.md), and an import takes the bytes given above for it.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx dechunk error_log_text);
use Tent::Client;
use Tent::MAC qw(signed_headers random_nonce);
use JSON::PP;
use MIME::Base64 qw(encode_base64);
use Digest::SHA qw(sha256_hex);

add_block_preprocessor(sub {
    my $block = shift;
    $block->set_value(http_config => <<'CONF') unless defined $block->http_config;
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_timeout 5s;
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name b.test;
        tent_entity http://b.test;
        client_max_body_size 32m;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name c.test;
        tent_entity http://c.test;
        client_max_body_size 32m;
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
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $PHOTO = 'https://tent.io/types/post/photo/v0.1.0';
my $READ = 'read_secrets,read_profile,read_followers,read_followings,'
           . 'read_groups,read_posts';
my $WRITE = 'write_secrets,write_profile,write_followers,write_followings,'
            . 'write_groups,write_posts,import_posts';
my $JSON = JSON::PP->new->utf8->canonical;
my $N = 60;

# the answer as it came, its size too
sub export_raw {
    my ($host, $cred) = @_;
    my $path = '/tent/export?posts=1&attachments=inline';
    my $r = Tent::Util::http_request(path => $path, timeout => 60,
        headers => { Host => $host,
                     signed_headers(cred => $cred, method => 'GET',
                                    uri => $path, host => $host, port => 80,
                                    nonce => random_nonce(8)) });
    my $body = $r->{body} // '';
    ($body) = dechunk($body)
        if ($r->{headers}{'transfer-encoding'} // '') =~ /chunked/;
    return ($r->{status}, $body);
}

# --- A: one photo post of 200 KB ----------------------------------------

my $c = Tent::Client->new;
my (undef, $owner) = $c->authorized_app("$READ,write_posts",
    post_types => 'all', info_types => 'all');

my $bytes = join '', map { chr(($_ * 31 + 7) % 251) } 0 .. 200 * 1024 - 1;
my $digest = sha256_hex($bytes);
my $b64 = encode_base64($bytes, '');
my $MB = '-----------TentInlineAdv';
my $mp = "--$MB\r\nContent-Disposition: form-data; name=\"post\"; "
       . "filename=\"post.json\"\r\nContent-Type: "
       . "application/vnd.tent.v0+json\r\n\r\n"
       . $JSON->encode({ type => $PHOTO, content => { caption => 'x' },
                         permissions => { public => JSON::PP::false } })
       . "\r\n--$MB\r\nContent-Disposition: form-data; name=\"photos[0]\"; "
       . "filename=\"a0.png\"\r\nContent-Type: image/png\r\n\r\n$bytes\r\n"
       . "--$MB--\r\n";
my $res = $c->request(POST => '/posts', cred => $owner, body => $mp,
    headers => { 'Content-Type' => "multipart/form-data; boundary=$MB" });
is($res->{status}, 200, 'a private photo post of 200 KB') or diag $res->{body};
my $pid = $res->{json}{id};

my $doc = Tent::Util::export_document(cred => $owner,
                                      query => '&attachments=inline');
ok($doc && $doc->{complete}, "A's export, inline");

# --- the document of the attack: that version lists the digest 60 times --

my ($p) = grep { $_->{id} eq $pid } @{ $doc->{posts} || [] };
my $att = $p->{versions}[-1]{attachments}[0];
is($att->{digest}, $digest, 'the attachment, its digest');
$p->{versions}[-1]{attachments} =
    [map { +{ %$att, name => "a$_.png" } } 0 .. $N - 1];

my $b = Tent::Client->new(host => 'b.test');
my (undef, $bowner) = $b->authorized_app("$WRITE,$READ",
    post_types => 'all', info_types => 'all');
$res = $b->request(POST => '/import', cred => $bowner, body => $doc,
                   timeout => 60);
is($res->{status}, 200, 'imported into B') or diag $res->{body};
ok($res->{json}{posts}{written}, 'its posts written')
    or diag $JSON->encode($res->{json});

$res = $b->request(GET => "/posts/$pid", cred => $bowner);
is(scalar @{ $res->{json}{attachments} || [] }, $N,
   "B's version lists the digest $N times");

# --- B's export inline: the bytes once ---------------------------------

my ($st, $body) = export_raw('b.test', $bowner);
is($st, 200, "B's export inline: 200");
my $bdoc = eval { $JSON->decode($body) };
ok($bdoc && $bdoc->{complete}, 'a complete document')
    or diag substr($body, 0, 300);

my $count = () = $body =~ /\Q$b64\E/g;
is($count, 1, "the digest's bytes appear once in the answer");
cmp_ok(length $body, '<', 2 * length($b64),
       'the answer is about one copy of the file, not 60')
    or diag length $body;

my ($bp) = grep { $_->{id} eq $pid } @{ $bdoc->{posts} || [] };
my @atts = @{ $bp->{versions}[-1]{attachments} || [] };
is(scalar @atts, $N, "the version's $N attachments exported");
is(scalar(grep { defined $_->{data} } @atts), 1, 'one carries "data"');
is($atts[0]{data}, $b64, 'the first, with the bytes');
ok(!grep({ exists $_->{data} } @atts[1 .. $#atts]),
   'the later ones have no "data"');
is(scalar(grep { ($_->{digest} // '') eq $digest && $_->{url} } @atts), $N,
   'each keeps its digest and url');

# --- that document imported: the bytes given above are taken -------------

my $cc = Tent::Client->new(host => 'c.test');
my (undef, $cowner) = $cc->authorized_app("$WRITE,$READ",
    post_types => 'all', info_types => 'all');
$res = $cc->request(POST => '/import', cred => $cowner, body => $bdoc,
                    timeout => 60);
is($res->{status}, 200, 'the deduplicated document imported into C')
    or diag $res->{body};
ok($res->{json}{posts}{written}, 'its posts written')
    or diag $JSON->encode($res->{json});
ok(!grep({ exists $_->{attachments_of} }
         @{ $res->{json}{posts}{skipped} || [] }),
   'no attachment skipped (a private post: no URL could be fetched)')
    or diag $JSON->encode($res->{json}{posts});

$res = $cc->request(GET => "/posts/$pid", cred => $cowner);
is(scalar @{ $res->{json}{attachments} || [] }, $N,
   "C's version lists the digest $N times");
$res = $cc->request(GET => "/posts/$pid/attachments/a" . ($N - 1) . '.png',
                    cred => $cowner);
is($res->{status}, 200, 'C serves the last attachment');
ok(($res->{body} // '') eq $bytes, 'its bytes');

# a later attachment of another size than the bytes given above: not taken
# from them (it has no URL either: left out)
{
    my $d = $JSON->decode($JSON->encode($bdoc));
    my ($q) = grep { $_->{id} eq $pid } @{ $d->{posts} };
    $q->{id} = 'other';
    $q->{versions}[-1]{id} = 'other';
    delete $q->{versions}[-1]{attachments}[1]{url};
    $q->{versions}[-1]{attachments}[1]{size} = 5;
    $d->{profile} = [];
    $res = $cc->request(POST => '/import?merge=1', cred => $cowner,
                        body => $d, timeout => 60);
    is($res->{status}, 200, 'a document lying about the size: answered');
    $res = $cc->request(GET => '/posts/other', cred => $cowner);
    ok(!grep({ $_->{size} == 5 } @{ $res->{json}{attachments} || [] }),
       'the lying attachment is not kept with the bytes above');
}

unlike(error_log_text(), qr/\[alert\]|\[emerg\]|exited on signal/,
       'no alert, no crash in the error log');

__DATA__

=== TEST 1: the entity
--- request
GET /tent/posts
--- error_code: 200
