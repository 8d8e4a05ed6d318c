# POST /import, what an attacker-minded review found (issue 14, parts 1-2
# leftovers; docs/import.md): imported followers are not delivered to
# until their server follows again (a document naming 10,000 "followers"
# at a victim host would have made every post a request to it); two
# imports at once into one empty entity: one of them only; a section too
# big for one store batch refuses the whole import, nothing written; the
# caps (previous_entities, times, versions, profile sections); hmac-sha-1
# relationships; ?merge=1: what exists is kept, a credential of the
# entity is never overwritten (an attacker's following with the key id
# of one of our followers).

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx dechunk);
use Tent::Client;
use Tent::MAC qw(signed_headers random_nonce);
use Tent::Receiver;
use JSON::PP;
use POSIX ();
use Time::HiRes qw(time sleep);
use IO::Socket::IP;

add_block_preprocessor(sub {
    my $block = shift;
    my $servers = join '', map { <<"CONF" } qw(f g h i k m p);
    server {
        listen \$TEST_NGINX_SERVER_PORT;
        server_name $_.test;
        tent_entity http://$_.test;
        client_max_body_size 40m;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
CONF
    $block->set_value(http_config => <<"CONF") unless defined $block->http_config;
    tent_store \$TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_timeout 20s;
    tent_outbound_allow 127.0.0.0/8;
    tent_delivery_interval 100ms;
$servers
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

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $BASIC = 'https://tent.io/types/info/basic/v0.1.0';
my $CORE = 'https://tent.io/types/info/core/v0.1.0';
my $READ = 'read_secrets,read_profile,read_followers,read_followings,'
           . 'read_groups,read_posts';
my $WRITE = 'write_secrets,write_profile,write_followers,write_followings,'
            . 'write_groups,write_posts,import_posts';
my $JSON = JSON::PP->new->utf8->canonical;
my $T = JSON::PP::true;
my $NOW = time;

sub owner_of {
    my ($host) = @_;
    my $cl = Tent::Client->new(host => $host);
    my (undef, $cred) = $cl->authorized_app("$WRITE,$READ",
                                            post_types => 'all',
                                            info_types => 'all');
    return ($cl, $cred);
}

sub export_of { Tent::Util::export_document(host => $_[0], cred => $_[1]) }

sub import_to {
    my ($cl, $cred, $body, %o) = @_;
    return $cl->request(POST => '/import' . ($o{query} // ''), cred => $cred,
                        body => $body, timeout => 60);
}

sub doc {
    my (%s) = @_;
    return { version => 0, entity => 'http://old.test', complete => $T, %s };
}

sub rel {
    my (%o) = @_;
    my $n = $o{n} // 1;
    return { id => sprintf('%032x', $n), entity => "http://peer$n.test",
             servers => ["http://peer$n.test/tent"], types => ['all'],
             licenses => [], groups => [], permissions => { public => $T },
             mac_key_id => "s:key$n", mac_key => "secret$n",
             mac_algorithm => 'hmac-sha-256', created_at => 1700000000,
             updated_at => 1700000000, %o };
}

sub post_doc {
    my ($id, %o) = @_;
    return { id => $id,
             versions => [{ id => $id, entity => 'http://old.test',
                            type => $o{type} // $STATUS, version => 1,
                            content => { text => $o{text} // "post $id" },
                            permissions => { public => $T },
                            published_at => 1700000000,
                            received_at => $o{received_at} // 1700000000,
                            updated_at => 1700000000 }] };
}

# --- F: an imported follower is not delivered to until it follows again -----

my ($f, $fowner) = owner_of('f.test');
my $victim = Tent::Receiver->start;
my $real = Tent::Receiver->start;

my $res = import_to($f, $fowner, doc(followers => [
    rel(n => 1, entity => $victim->url, servers => [$victim->url . '/tent'],
        notification_path => 'notifications/n')]));
is($res->{status}, 200, 'F: a follower at the victim host imported')
    or diag $res->{body};
is($res->{json}{followers}{taken}, 1, 'taken');
$res = import_to($f, $fowner, doc(), query => '?merge=0');
is($res->{status}, 409, 'F is not empty now: 409 without ?merge=1');

$res = $f->request(POST => '/followers',
                   body => { entity => $real->url, types => ['all'],
                             licenses => [],
                             notification_path => 'notifications/n' });
is($res->{status}, 200, 'F: a follower by the handshake') or diag $res->{body};

$res = $f->request(POST => '/posts', cred => $fowner,
                   body => { type => $STATUS, content => { text => 'one' },
                             permissions => { public => $T } });
is($res->{status}, 200, 'F posts');
my $p1 = $res->{json}{id};
my @got = $real->wait_requests(method => 'POST', path => qr{^/tent/notif},
                               timeout => 20);
is(scalar @got, 1, 'the follower by the handshake gets it');
$res = $f->request(GET => "/posts/$p1/deliveries", cred => $fowner);
is($res->{status}, 200, 'its deliveries') or diag $res->{body};
is_deeply([map { $_->{entity} } @{ $res->{json}{deliveries} || [] }],
          [$real->entity // $real->url],
          'one job: none for the imported follower')
    or diag $res->{body};
is(scalar($victim->requests(method => 'POST')), 0,
   'the victim host got nothing');

# the document's author knows the imported key: a PUT signed with it
# changes its types, not its standing
my $vkey = rel(n => 1);
$res = $f->request(PUT => "/followers/$vkey->{id}", cred => $vkey,
                   body => { types => ['all'], licenses => [] });
ok($res->{status} < 300, 'a PUT signed with the imported key: '
   . $res->{status}) or diag $res->{body};
my ($pend) = grep { $_->{id} eq $vkey->{id} }
             @{ export_of('f.test', $fowner)->{followers} };
ok($pend && $pend->{import_pending}, 'still pending after it');

# its server follows again: the handshake (discovery, the challenge)
$res = $f->request(POST => '/followers',
                   body => { entity => $victim->url, types => ['all'],
                             licenses => [],
                             notification_path => 'notifications/n' });
is($res->{status}, 200, 'the imported follower follows again')
    or diag $res->{body};
$res = $f->request(POST => '/posts', cred => $fowner,
                   body => { type => $STATUS, content => { text => 'two' },
                             permissions => { public => $T } });
@got = $victim->wait_requests(method => 'POST', path => qr{^/tent/notif},
                              timeout => 20);
is(scalar @got, 1, 'confirmed: it gets the next post');
my $fdoc = export_of('f.test', $fowner);
ok(!grep({ $_->{import_pending} } @{ $fdoc->{followers} }),
   'no follower pending any more');

# --- G: ?merge=1; a credential of the entity is never overwritten ---------

my ($g, $gowner) = owner_of('g.test');
my $rx = Tent::Receiver->start;
$res = $g->request(POST => '/followers',
                   body => { entity => $rx->url, types => ['all'],
                             licenses => [],
                             notification_path => 'notifications/n' });
is($res->{status}, 200, 'G: a follower') or diag $res->{body};
my $gf = $res->{json};
$res = $g->request(POST => '/groups', cred => $gowner,
                   body => { name => 'mine' });
my $ggroup = $res->{json}{id};

for my $bad ('2', '', 'yes', '1x') {
    $res = import_to($g, $gowner, doc(), query => "?merge=$bad");
    is($res->{status}, 400, "?merge=$bad: 400");
}

# a following holding the key id G gave its follower: its row would have
# become G's credential of that key id (the follower locked out, or the
# document's holder signing as the follower)
$res = import_to($g, $gowner, doc(
    followings => [rel(n => 2, mac_key_id => $gf->{mac_key_id},
                       remote_id => 'r2', confirmed => $T)],
    groups => [{ id => $ggroup, name => 'theirs', created_at => 1,
                 updated_at => 1 },
               { id => 'new-group', name => 'new', created_at => 1,
                 updated_at => 1 }],
    posts => [post_doc('merged-1')]), query => '?merge=1');
is($res->{status}, 200, 'G: merge') or diag $res->{body};
my $rep = $res->{json};
is($rep->{followings}{taken}, 0, 'the following with a taken key id: not taken');
like($rep->{followings}{skipped}[0]{reason} // '', qr/credential/,
     'skipped, the reason said');
is($rep->{groups}{taken}, 1, 'the new group taken');
is($rep->{groups}{skipped}[0]{index}, 0, 'the existing one skipped');
like($rep->{groups}{skipped}[0]{reason} // '', qr/exists/, 'kept');
is($rep->{posts}{taken}, 1, 'the post');
$res = $g->request(GET => "/followers/$gf->{id}", cred => $gf);
is($res->{status}, 200, "G's follower still signs with its key")
    or diag $res->{body};
$res = $g->request(GET => "/groups/$ggroup", cred => $gowner);
is($res->{json}{name}, 'mine', "G's group kept as it was");
my $gdoc = export_of('g.test', $gowner);
is(scalar @{ $gdoc->{followings} }, 0, 'no following written');
my ($gcore) = grep { $_->{type} eq $CORE } @{ $gdoc->{profile} };
is_deeply($gcore->{content}{previous_entities}, ['http://old.test'],
          'the previous entity');

# the same document again: everything exists, nothing written twice
$res = import_to($g, $gowner, doc(posts => [post_doc('merged-1')]),
                 query => '?merge=1');
is($res->{json}{posts}{taken}, 0, 'again: the post exists');
like($res->{json}{posts}{skipped}[0]{reason} // '', qr/exists/, 'kept');
$gdoc = export_of('g.test', $gowner);
($gcore) = grep { $_->{type} eq $CORE } @{ $gdoc->{profile} };
is_deeply($gcore->{content}{previous_entities}, ['http://old.test'],
          'the previous entity once');

# --- H: two imports at once into one empty entity: one only ----------------

my ($h, $howner) = owner_of('h.test');
my @docs = map {
    my $k = $_;
    doc(groups => [{ id => "group-$k", name => "name $k", created_at => 1,
                     updated_at => 1 }],
        followers => [rel(n => 100 + $k, notification_path => 'n')])
} 1, 2;
# both requests on their sockets before either is answered: the two
# imports' emptiness scans interleave in the store
my @socks = map {
    my $body = $JSON->encode($docs[$_]);
    my %hd = (Host => 'h.test', Connection => 'close',
              'Content-Type' => 'application/vnd.tent.v0+json',
              'Content-Length' => length $body,
              signed_headers(cred => $howner, method => 'POST',
                             uri => '/tent/import', host => 'h.test',
                             port => 80, nonce => random_nonce(8)));
    my $sock = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                   PeerPort => Tent::Util::port())
        or die "connect: $!";
    [$sock, "POST /tent/import HTTP/1.1\r\n"
            . join('', map { "$_: $hd{$_}\r\n" } sort keys %hd)
            . "\r\n" . $body]
} 0, 1;
syswrite($_->[0], $_->[1]) for @socks;
my @st = map {
    my ($sock) = @$_;
    local $/;
    my $raw = <$sock> // '';
    $raw =~ m{^HTTP/1\.1 (\d+)} ? $1 : 0
} @socks;
is_deeply([sort @st], [200, 409], 'two imports at once: one 200, one 409');
my $hdoc = export_of('h.test', $howner);
is(scalar @{ $hdoc->{groups} }, 1, "one document's group only")
    or diag $JSON->encode($hdoc->{groups});
is(scalar @{ $hdoc->{followers} }, 1, "one document's follower only");

# --- I: the caps ------------------------------------------------------------

my ($i, $iowner) = owner_of('i.test');
my $future = int($NOW) + 3 * 86400;
for my $case (
    [groups => [{ id => 'g', name => 'x', created_at => 2**62,
                  updated_at => 1 }], qr/times/, 'a time in 2^62'],
    [groups => [{ id => 'g', name => 'x', created_at => $future,
                  updated_at => 1 }], qr/times/, 'three days ahead'],
    [posts => [post_doc('t1', received_at => 10**15)], qr/times/,
     'received_at 10^15 (its µs order would overflow)'],
    [followers => [rel(n => 3, notification_path => 'n',
                       updated_at => -1)], qr/times/, 'a negative time'],
    [profile_versions => [{ type => $BASIC, content => {},
                            permissions => { public => $T },
                            version => 2**40, updated_at => 1 }],
     qr/version/, 'version 2^40'],
    [profile_versions => [map { { type => $BASIC, content => {},
                                  permissions => { public => $T },
                                  version => 3, updated_at => 1 } } 1, 2],
     qr/twice/, 'one version twice'],
    [followers => [rel(n => 4, notification_path => 'n',
                       mac_algorithm => 'hmac-md5')], qr/mac_algorithm/,
     'hmac-md5'],
    [followers => [rel(n => 5, notification_path => 'n',
                       mac_algorithm => ['hmac-sha-1'])], qr/mac_algorithm/,
     'an algorithm of the wrong type'])
{
    my ($section, $rows, $why, $what) = @$case;
    $res = import_to($i, $iowner, doc($section => $rows));
    is($res->{status}, 200, "$what: answered") or diag $res->{body};
    is($res->{json}{$section}{written}, JSON::PP::false, "$what: not written");
    like($res->{json}{$section}{invalid}[0]{reason} // '', $why,
         "$what: the reason") or diag $res->{body};
}

$res = import_to($i, $iowner, doc(profile => [map {
    { type => "https://example.com/types/info/x$_/v0.1.0", content => {},
      permissions => { public => $T }, version => 1, updated_at => 1 } }
    1 .. 257]));
is($res->{status}, 413, '257 profile sections: 413');
$res = import_to($i, $iowner, doc(profile_versions => [map {
    { type => $BASIC, content => {}, permissions => { public => $T },
      version => $_, updated_at => 1 } } 1 .. 10001]));
is($res->{status}, 413, '10,001 profile versions: 413');

# empty, malformed, wrong-type bodies
$res = import_to($i, $iowner, '');
is($res->{status}, 400, 'no body: 400');
$res = import_to($i, $iowner, '{"version":0,');
is($res->{status}, 400, 'malformed: 400');
$res = import_to($i, $iowner, '"a string"');
is($res->{status}, 400, 'a string: 400');
$res = import_to($i, $iowner, doc(profile_versions => 'x'));
is($res->{status}, 400, 'a section of the wrong type: 400');

my $idoc = export_of('i.test', $iowner);
ok($idoc && !@{ $idoc->{groups} } && !@{ $idoc->{followers} }
   && !@{ $idoc->{posts} } && !@{ $idoc->{profile_versions} },
   'I: nothing written by the refused documents');

# previous_entities: 16 at most
my ($pp, $powner) = owner_of('p.test');
my $n16;
for my $n (1 .. 17) {
    $res = import_to($pp, $powner,
                     { %{ doc() }, entity => "http://prev$n.test" },
                     query => '?merge=1');
    last unless $res->{status} == 200;
    $n16 = $n;
}
is($n16, 16, '16 previous entities taken');
is($res->{status}, 409, 'the 17th: 409');
like($res->{json}{error} // '', qr/previous_entities/, 'says why');
$res = import_to($pp, $powner, { %{ doc() }, entity => 'http://prev3.test' },
                 query => '?merge=1');
is($res->{status}, 200, 'one already listed: taken, not listed twice');
$idoc = export_of('p.test', $powner);
my ($icore) = grep { $_->{type} eq $CORE } @{ $idoc->{profile} };
is(scalar @{ $icore->{content}{previous_entities} }, 16, '16 listed');

# --- K: hmac-sha-1 relationships (the spec's schema allows it) ------------

my ($k, $kowner) = owner_of('k.test');
my $sha1 = rel(n => 6, notification_path => 'n',
               mac_algorithm => 'hmac-sha-1');
$res = import_to($k, $kowner, doc(followers => [$sha1]));
is($res->{json}{followers}{written}, $T, 'an hmac-sha-1 follower imported')
    or diag $res->{body};
$res = $k->request(GET => "/followers/$sha1->{id}", cred => $sha1);
is($res->{status}, 200, 'it signs with hmac-sha-1') or diag $res->{body};

# --- M: a section over 32 MB: the whole import refused, nothing written ---

my ($m, $mowner) = owner_of('m.test');
my $text = 'x' x 100_000;
my $huge = doc(groups => [{ id => 'kept-out', name => 'g', created_at => 1,
                            updated_at => 1 }],
               posts => [map { post_doc("big-$_", text => $text,
                                         type => 'https://example.com/types/post/blob/v0.1.0') }
                         1 .. 340]);
$res = import_to($m, $mowner, $huge);
is($res->{status}, 413, 'posts over 32 MB: 413') or diag $res->{body};
like($res->{json}{error} // '', qr/32 MB/, 'says why');
my $mdoc = export_of('m.test', $mowner);
ok($mdoc && !@{ $mdoc->{groups} } && !@{ $mdoc->{posts} },
   'M: nothing written, not even the groups');
$res = import_to($m, $mowner, doc(groups => $huge->{groups}));
is($res->{status}, 200, 'M is still empty: a second import is taken')
    or diag $res->{body};

__DATA__

=== TEST 1: the import route, anonymous
--- request
POST /tent/import?merge=1
{}
--- error_code: 403
--- response_body: {"error":"Unauthorized"}
