# GET /export?attachments=inline (issue 14, part 1; docs/export.md): each
# attachment's bytes in base64 in the document ("data"), next to its URL
# and digest; a version a page.  Anything but "urls" or "inline": 400;
# anonymous: 403.  A file gone from the store: "data": null, the export
# still complete.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx dechunk);
use Tent::Client;
use Tent::MAC qw(signed_headers random_nonce);
use JSON::PP;
use MIME::Base64 qw(decode_base64);
use Digest::SHA qw(sha256_hex);

add_block_preprocessor(sub {
    my $block = shift;
    $block->set_value(http_config => <<'CONF') unless defined $block->http_config;
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_timeout 5s;
CONF
    $block->set_value(config => <<'CONF') unless defined $block->config;
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize { tent_owner "the owner"; }
CONF
});

master_on();
workers(2);
no_shuffle();
log_level('info');
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $PORT = $ENV{TEST_NGINX_SERVER_PORT} || 1984;
my $JSON = JSON::PP->new->utf8->canonical;
my $PHOTO = 'https://tent.io/types/post/photo/v0.1.0';
my $c = Tent::Client->new;
my (undef, $owner) = $c->authorized_app(
    'read_secrets,read_profile,read_followers,read_followings,read_groups,'
    . 'read_posts,write_posts', post_types => 'all', info_types => 'all');

sub export_raw {
    my ($query, $cred) = @_;
    my $path = "/tent/export$query";
    my $r = Tent::Util::http_request(path => $path, timeout => 30, headers => {
        Host => 'localhost',
        $cred ? signed_headers(cred => $cred, method => 'GET', uri => $path,
                               host => 'localhost', port => 80,
                               nonce => random_nonce(8)) : () });
    my $body = $r->{body} // '';
    ($body) = dechunk($body)
        if ($r->{headers}{'transfer-encoding'} // '') =~ /chunked/;
    return ($r->{status}, $body);
}

my %bytes;
for my $n (1 .. 3) {
    my $b = join '', map { chr(($_ * 7 + $n) % 256) } 0 .. (1000 * $n + 17);
    my $MB = '-----------TentInline';
    my $mp = "--$MB\r\nContent-Disposition: form-data; name=\"post\"; "
           . "filename=\"post.json\"\r\nContent-Type: "
           . "application/vnd.tent.v0+json\r\n\r\n"
           . $JSON->encode({ type => $PHOTO, content => { caption => "p$n" },
                             permissions => { public => JSON::PP::true } })
           . "\r\n--$MB\r\nContent-Disposition: form-data; name=\"photos[0]\"; "
           . "filename=\"a$n.bin\"\r\nContent-Type: image/png\r\n\r\n$b\r\n"
           . "--$MB--\r\n";
    my $res = $c->request(POST => '/posts', cred => $owner, body => $mp,
        headers => { 'Content-Type' => "multipart/form-data; boundary=$MB" });
    is($res->{status}, 200, "photo post $n") or diag $res->{body};
    $bytes{$res->{json}{id}} = $b;
}

my ($st, $body) = export_raw('?posts=1&attachments=inline', $owner);
is($st, 200, 'attachments=inline: 200');
my $doc = eval { $JSON->decode($body) };
ok($doc && $doc->{complete}, 'a complete document') or diag substr($body, 0, 300);
ok($doc->{includes}{attachments_inline}, 'includes says so');
my $seen = 0;
for my $p (@{ $doc->{posts} || [] }) {
    next unless exists $bytes{$p->{id}};
    my $a = $p->{versions}[-1]{attachments}[0];
    is(decode_base64($a->{data} // ''), $bytes{$p->{id}},
       "post $p->{id}: its bytes");
    is(sha256_hex(decode_base64($a->{data} // '')), $a->{digest},
       'they match the digest');
    ok($a->{url}, 'the URL kept');
    $seen++;
}
is($seen, 3, 'the three photo posts');

($st, $body) = export_raw('?posts=1', $owner);
$doc = eval { $JSON->decode($body) };
ok(!grep({ exists $_->{versions}[-1]{attachments}[0]{data} }
         grep { exists $bytes{$_->{id}} } @{ $doc->{posts} || [] }),
   'the default (urls): no data');

for my $bad ('bogus', '', 'INLINE', 'inline,urls') {
    ($st) = export_raw("?posts=1&attachments=$bad", $owner);
    is($st, 400, "attachments=$bad: 400");
}
($st) = export_raw('?posts=1&attachments=inline');
is($st, 403, 'anonymous: 403');

# a file gone: "data": null, still complete
my $root = $Test::Nginx::Util::ServRoot;
my @files = glob("$root/tent_temp/attachments/*/*/*");
my ($gone) = grep { -f } @files;
SKIP: {
    skip 'no attachment file found', 2 unless $gone;
    ok(unlink($gone), 'a file removed');
    ($st, $body) = export_raw('?posts=1&attachments=inline', $owner);
    $doc = eval { $JSON->decode($body) };
    ok($doc && $doc->{complete}, 'a file gone: still complete');
    ok((grep { exists $_->{data} && !defined $_->{data} }
        map { @{ $_->{versions}[-1]{attachments} || [] } }
        @{ $doc->{posts} || [] }) == 1, 'its data null');
}

__DATA__

=== TEST 1: anonymous
--- request
GET /tent/export?attachments=inline
--- error_code: 403
