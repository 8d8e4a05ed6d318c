# The inbox (issue #29, docs/activitypub.md "The inbox"): a signed
# Follow makes an ActivityPub follower, listed and counted as any
# follower; a second Follow makes no second one; Undo removes it.
# Signatures: cavage rsa-sha256 and hs2019, RFC 9421; refused: unsigned,
# a bad signature, a wrong Digest, an old Date, an unreachable key, an
# actor that is not the key's owner, a replay; bodies: empty, not JSON,
# not an object, too large.  A Follow of someone else is ignored, a
# blocked actor refused.  Anonymous cost: made-up keyIds on one host
# cost a bounded number of fetches.  Inside a network namespace
# (Tent::Netns) keyIds on refused addresses are 401 and nothing is
# connected.
#
# The remote actors are a Tent::Receiver serving their documents.

BEGIN {
    require Tent::Netns;
    my $w = Tent::Netns::netns_wrapper();
    if (!$ENV{TENT_IN_NETNS} && -x $w
        && system("'$w' true >/dev/null 2>&1") == 0)
    {
        Tent::Netns::reexec_in_netns();
    }
}

use strict;
use warnings;

use Test::More;
use JSON::PP;
use Tent::Peer;
use Tent::Receiver;
use Tent::HTTPSig;
use Tent::Util qw(http_request);
use IO::Socket::IP;

my $JSON = JSON::PP->new->canonical;
my $AS = 'application/activity+json';

# ---- the remote actors: bob and eve on one host, their keys

my $rx = Tent::Receiver->start;
my $R = $rx->url;
my %key = map { $_ => Tent::HTTPSig::new_key() } qw(bob eve carol far);
{
    # an RSA key whose public exponent is 34 bits long (65537 is 17): a
    # long exponent makes each verification as dear as a signature
    require Crypt::OpenSSL::RSA;
    my $rsa = Crypt::OpenSSL::RSA->generate_key(2048, 2 ** 33 + 1);
    $key{big} = { private => $rsa->get_private_key_string,
                  public => $rsa->get_public_key_x509_string };
}

sub actor_doc {
    my ($name, %o) = @_;
    my $id = "$R/users/$name";
    return {
        '@context' => ['https://www.w3.org/ns/activitystreams',
                       'https://w3id.org/security/v1'],
        id => $id, type => 'Person', preferredUsername => $name,
        inbox => "$id/inbox",
        endpoints => { sharedInbox => "$R/inbox" },
        publicKey => { id => "$id#main-key",
                       owner => $o{owner} // $id,
                       publicKeyPem => $key{$name}{public} },
    };
}

$rx->rules([
    { method => 'GET', path => '^/users/bob$',
      action => { status => 200, headers => { 'Content-Type' => $AS },
                  body => actor_doc('bob') } },
    { method => 'GET', path => '^/users/eve$',
      action => { status => 200, headers => { 'Content-Type' => $AS },
                  body => actor_doc('eve') } },
    # an actor whose server is slow: its key is fetched in a second
    { method => 'GET', path => '^/users/carol$',
      action => { status => 200, headers => { 'Content-Type' => $AS },
                  delay => 1, body => actor_doc('carol') } },
    # a document elsewhere on bob's origin (an upload) claiming to be bob,
    # with eve's key: never bob's own
    { method => 'GET', path => '^/uploads/x\.json$',
      action => { status => 200, headers => { 'Content-Type' => $AS },
                  body => { %{ actor_doc('bob') },
                            publicKey => { id => "$R/uploads/x.json#k",
                                           owner => "$R/users/bob",
                                           publicKeyPem => $key{eve}{public} } } } },
    # an actor whose inbox is on another host (a third party's)
    { method => 'GET', path => '^/users/far$',
      action => { status => 200, headers => { 'Content-Type' => $AS },
                  body => { %{ actor_doc('far') },
                            inbox => 'http://127.0.0.2:9/inbox',
                            endpoints => { sharedInbox =>
                                           'http://127.0.0.2:9/shared' } } } },
    { method => 'GET', path => '^/users/big$',
      action => { status => 200, headers => { 'Content-Type' => $AS },
                  body => actor_doc('big') } },
    # a key document under the actor's path, as GoToSocial serves
    { method => 'GET', path => '^/users/eve/main-key$',
      action => { status => 200, headers => { 'Content-Type' => $AS },
                  body => { %{ actor_doc('eve') },
                            publicKey => { id => "$R/users/eve/main-key",
                                           owner => "$R/users/eve",
                                           publicKeyPem => $key{eve}{public} } } } },
    # a document whose key claims another owner
    { method => 'GET', path => '^/users/liar$',
      action => { status => 200, headers => { 'Content-Type' => $AS },
                  body => { %{ actor_doc('eve') }, id => "$R/users/liar" } } },
]);

# ---- our entity

my $peer = Tent::Peer->start(worker_processes => 1, server_config => <<'CONF');
        tent_entity $URL;
        tent_activitypub on;
        tent_ap_name alice;
        tent_outbound_allow 127.0.0.0/8;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF
my $P = $peer->port;
my $URL = $peer->url;
my $INBOX = '/tent/activitypub/alice/inbox';
my $SHARED = '/tent/activitypub/shared-inbox';
my (undef, $cred) = $peer->authorized_app(
    'read_followers,write_followers,read_blocks,write_blocks');
my $c = $peer->client;

my $n = 0;
sub follow_of {
    my ($actor, $object) = @_;
    $n++;
    return { '@context' => 'https://www.w3.org/ns/activitystreams',
             id => "$actor#follows/$n", type => 'Follow',
             actor => $actor, object => $object // $URL };
}

# a POST to the inbox: body (a ref is JSON), signed by "as" (bob) unless
# unsigned; other arguments go to Tent::HTTPSig::sign
sub inbox {
    my (%o) = @_;
    my $path = delete $o{path} // $INBOX;
    my $body = delete $o{body};
    $body = $JSON->encode($body) if ref $body;
    my $as = delete $o{as} // 'bob';
    my $key_id = delete $o{key_id} // "$R/users/$as#main-key";
    my %h;
    if (delete $o{rfc9421}) {
        %h = Tent::HTTPSig::sign_rfc9421(
            key => $key{$as}{private}, key_id => $key_id, method => 'POST',
            target => $path, host => "127.0.0.1:$P", body => $body,
            components => ['@method', '@target-uri', '@authority',
                           'content-digest'], %o);
    } elsif (!delete $o{unsigned}) {
        %h = Tent::HTTPSig::sign(
            key => $key{$as}{private}, key_id => $key_id, method => 'POST',
            target => $path, host => "127.0.0.1:$P", body => $body, %o);
    } else {
        %h = (Host => "127.0.0.1:$P");
    }
    my $res = http_request(port => $P, method => 'POST', path => $path,
                           headers => { %h, 'Content-Type' => $AS },
                           body => $body, timeout => 15);
    $res->{json} = eval { decode_json($res->{body}) };
    $res->{sent} = \%h;
    $res->{sent_body} = $body;
    return $res;
}

sub followers {
    my $res = $c->request(GET => '/followers', cred => $cred);
    return $res->{json} || [];
}

sub count {
    return $c->request(GET => '/followers/count')->{body};
}

# ---- a Follow, cavage rsa-sha256

my $follow = follow_of("$R/users/bob");
my $res = inbox(body => $follow);
is($res->{status}, 202, 'a signed Follow: 202') or diag $res->{body};
my $f = followers();
is(scalar @$f, 1, 'one follower');
is($f->[0]{entity}, "$R/users/bob", 'the actor');
is_deeply($f->[0]{activitypub},
          { inbox => "$R/users/bob/inbox", shared_inbox => "$R/inbox",
            follow => $follow->{id}, name => 'bob' },
          'its inbox, shared inbox, Follow and name (its preferredUsername)');
is_deeply($f->[0]{types}, ['all'], 'all types');
is(count(), '1', 'counted');
is(scalar $rx->requests(method => 'GET', path => qr{^/users/bob$}), 1,
   'the key fetched once');

$res = inbox(body => follow_of("$R/users/bob"));
is($res->{status}, 202, 'a second Follow: 202');
is(count(), '1', 'no second follower');
is(scalar $rx->requests(method => 'GET', path => qr{^/users/bob$}), 1,
   'the key kept: not fetched again');

# ---- Undo, the Follow embedded

$res = inbox(body => { type => 'Undo', id => "$R/users/bob#undo/1",
                       actor => "$R/users/bob", object => $follow });
is($res->{status}, 202, 'Undo of the Follow: 202') or diag $res->{body};
is(count(), '0', 'the follower removed');

# ---- hs2019, then Undo by the Follow's id

$follow = follow_of("$R/users/bob");
$res = inbox(body => $follow, algorithm => 'hs2019');
is($res->{status}, 202, 'hs2019: 202') or diag $res->{body};
is(count(), '1', 'a follower again');

$res = inbox(body => { type => 'Undo', id => "$R/users/bob#undo/2",
                       actor => "$R/users/bob", object => 'no such id' });
is($res->{status}, 202, 'Undo of another Follow id: 202');
is(count(), '1', '... the follower stays');

$res = inbox(body => { type => 'Undo', id => "$R/users/bob#undo/3",
                       actor => "$R/users/bob", object => $follow->{id} });
is($res->{status}, 202, 'Undo by the Follow\'s id: 202');
is(count(), '0', 'the follower removed');

# ---- RFC 9421, at the shared inbox

$res = inbox(path => $SHARED, body => follow_of("$R/users/bob"),
             rfc9421 => 1);
is($res->{status}, 202, 'RFC 9421 rsa-v1_5-sha256 at the shared inbox: 202')
    or diag $res->{body};
is(count(), '1', 'a follower');

$res = inbox(path => $SHARED, body => follow_of("$R/users/bob"),
             rfc9421 => 1, components => ['@method', '@authority',
                                          'content-digest']);
is($res->{status}, 401, 'RFC 9421 not covering the target: 401');

# the owner's posts with an ActivityPub follower: no failure (its jobs
# are the ActivityPub transport's, #29)
my (undef, $wcred) = $peer->authorized_app('write_posts',
                                           post_types => 'all');
$res = $c->request(POST => '/posts', cred => $wcred,
                   body => { type => 'https://tent.io/types/post/status/v0.1.0',
                             permissions => { public => JSON::PP::true },
                             content => { text => 'hello fediverse' } });
is($res->{status}, 200, 'a public post with an ActivityPub follower')
    or diag $res->{body};

# the owner removes it, as any follower (no credential row to remove)
my $fid = followers()->[0]{id};
$res = $c->request(DELETE => "/followers/$fid", cred => $cred);
is($res->{status}, 200, 'the owner removes the ActivityPub follower')
    or diag $res->{body};
is(count(), '0', '... gone');
$res = inbox(path => $SHARED, body => follow_of("$R/users/bob"),
             rfc9421 => 1);
is($res->{status}, 202, 'it follows again');
is(count(), '1', '... a follower');

# ---- Create: a Note addressed to the entity, kept as bob's post

my (undef, $rcred) = $peer->authorized_app('read_posts', post_types => 'all');
sub posts_of {
    my ($actor) = @_;
    my $r = $c->request(GET => '/posts?limit=50&entity='
                               . Tent::Client::uri_escape($actor),
                        cred => $rcred);
    return $r->{json} || [];
}
sub create_of {
    my ($actor, %o) = @_;
    $n++;
    return { type => 'Create', id => "$actor/statuses/$n/activity",
             actor => $actor,
             object => { type => 'Note', id => "$actor/statuses/$n",
                         attributedTo => $actor,
                         content => '<p>hello <b>alice</b> &amp; co</p>',
                         to => [$URL],
                         tag => [{ type => 'Mention', href => $URL }],
                         %o } };
}

my $create = create_of("$R/users/bob");
$res = inbox(body => $create);
is($res->{status}, 202, 'Create(Note) addressed to the entity: 202')
    or diag $res->{body};
my $posts = posts_of("$R/users/bob");
is(scalar @$posts, 1, 'a post of the actor');
is($posts->[0]{type}, 'https://tent.io/types/post/status/v0.1.0',
   '... a status');
is($posts->[0]{content}{text}, 'hello alice & co', '... its text');
is($posts->[0]{entity}, "$R/users/bob", '... the actor\'s');
is_deeply($posts->[0]{mentions}, [{ entity => $URL }], '... mentioning us');
ok(!$posts->[0]{permissions}{public}, '... not public');

$res = inbox(body => { %$create, id => "$create->{id}/again" });
is($res->{status}, 202, 'the same Note again: 202');
is(scalar @{ posts_of("$R/users/bob") }, 1, '... one post still');

$res = inbox(body => create_of("$R/users/bob",
    to => ['https://www.w3.org/ns/activitystreams#Public'], tag => []));
is($res->{status}, 202, 'a public Note of no following, not to us: 202');
is(scalar @{ posts_of("$R/users/bob") }, 1, '... not kept');

$res = inbox(body => create_of("$R/users/bob",
                               attributedTo => "$R/users/eve"));
is($res->{status}, 202, 'a Note attributed to another actor: 202');
is(scalar @{ posts_of("$R/users/bob") }, 1, '... not kept');
is(scalar @{ posts_of("$R/users/eve") }, 0, '... under neither');

$res = inbox(body => create_of("$R/users/bob",
                               content => '<p>' . ('long ' x 80) . '</p>'));
is($res->{status}, 202, 'a Note over 256 characters: 202');
$posts = posts_of("$R/users/bob");
is(scalar @$posts, 2, '... kept');
is($posts->[0]{type}, 'https://tent.io/types/post/essay/v0.1.0',
   '... as an essay');

# a following's public Note is kept (the following imported: the
# ActivityPub follow of an actor is #29's next step)
{
    my (undef, $icred) = $peer->authorized_app(
        'write_secrets,write_profile,write_followers,write_followings,'
        . 'write_groups');
    my $r = $c->request(POST => '/import?merge=1', cred => $icred,
        body => { version => 0, entity => $URL, complete => JSON::PP::true,
                  followings => [{
                      id => 'f' x 32, entity => "$R/users/eve",
                      remote_id => 'r1', mac_key_id => 'x:1',
                      mac_key => 'k' x 32, mac_algorithm => 'hmac-sha-256',
                      confirmed => JSON::PP::true, types => ['all'],
                      licenses => [], permissions => { public => JSON::PP::false },
                      created_at => time, updated_at => time }] });
    is($r->{status}, 200, 'a following of eve (imported)')
        or diag $r->{body};
}
$res = inbox(body => create_of("$R/users/eve",
    to => ['https://www.w3.org/ns/activitystreams#Public'], tag => []),
    as => 'eve');
is($res->{status}, 202, 'a public Note of a following, not to us: 202')
    or diag $res->{body};
$posts = posts_of("$R/users/eve");
is(scalar @$posts, 1, '... kept');
ok($posts->[0]{permissions}{public}, '... public');

# ---- Accept and Reject of our follows (an ActivityPub following,
# imported until our Follow is sent by #29's next step)

my (undef, $icred) = $peer->authorized_app(
    'write_secrets,write_profile,write_followers,write_followings,'
    . 'write_groups,read_followings');
sub followings_of {
    my ($actor) = @_;
    my $r = $c->request(GET => '/followings', cred => $icred);
    return [ grep { $_->{entity} eq $actor } @{ $r->{json} || [] } ];
}
my $OUR_FOLLOW = "$URL#follow-carol";
$res = $c->request(POST => '/import?merge=1', cred => $icred,
    body => { version => 0, entity => $URL, complete => JSON::PP::true,
              followings => [{
                  id => 'c' x 32, entity => "$R/users/carol",
                  remote_id => 'r2', mac_key_id => 'x:2',
                  mac_key => 'k' x 32, mac_algorithm => 'hmac-sha-256',
                  confirmed => JSON::PP::true, types => ['all'],
                  licenses => [], permissions => { public => JSON::PP::false },
                  activitypub => { inbox => "$R/users/carol/inbox",
                                   follow => $OUR_FOLLOW },
                  created_at => time, updated_at => time }] });
is($res->{status}, 200, 'an ActivityPub following of carol (imported)')
    or diag $res->{body};

$res = inbox(body => { type => 'Reject', id => "$R/users/eve#r/1",
                       actor => "$R/users/eve", object => $OUR_FOLLOW },
             as => 'eve');
is($res->{status}, 202, 'Reject by another actor: 202');
is(scalar @{ followings_of("$R/users/eve") }, 1,
   '... its Tent following stays');
is(scalar @{ followings_of("$R/users/carol") }, 1, '... carol\'s stays');

$res = inbox(body => { type => 'Accept', id => "$R/users/carol#a/1",
                       actor => "$R/users/carol", object => $OUR_FOLLOW },
             as => 'carol');
is($res->{status}, 202, 'Accept of our Follow by its id: 202')
    or diag $res->{body};
my $fw = followings_of("$R/users/carol");
is(scalar @$fw, 1, '... the following stays');

$res = inbox(body => { type => 'Reject', id => "$R/users/carol#r/1",
                       actor => "$R/users/carol",
                       object => { type => 'Follow', id => 'other',
                                   actor => 'http://example.org/someone',
                                   object => "$R/users/carol" } },
             as => 'carol');
is($res->{status}, 202, 'Reject of another\'s Follow: 202');
is(scalar @{ followings_of("$R/users/carol") }, 1, '... the following stays');

$res = inbox(body => { type => 'Reject', id => "$R/users/carol#r/2",
                       actor => "$R/users/carol",
                       object => { type => 'Follow', id => $OUR_FOLLOW,
                                   actor => $URL,
                                   object => "$R/users/carol" } },
             as => 'carol');
is($res->{status}, 202, 'Reject of our Follow, embedded: 202');
is(scalar @{ followings_of("$R/users/carol") }, 0, '... the following gone');
is(scalar @{ followings_of("$R/users/eve") }, 1, '... eve\'s stays');

$res = inbox(body => create_of("$R/users/bob",
                               content => '<p>' . ('x' x 70000) . '</p>'));
is($res->{status}, 202, 'a Note over 64 KB: 202');
is(scalar @{ posts_of("$R/users/bob") }, 2, '... not kept');

# ---- refused signatures

my $other = follow_of("$R/users/eve");
$res = inbox(body => $other, unsigned => 1);
is($res->{status}, 401, 'unsigned: 401');
like($res->{json}{error} // '', qr/no HTTP signature/, '... says why');

$res = inbox(body => $other, as => 'eve', bad_signature => 1);
is($res->{status}, 401, 'a bad signature: 401');

$res = inbox(body => $other, as => 'eve',
             headers => { Digest => Tent::HTTPSig::digest('{}') });
is($res->{status}, 401, 'a Digest not of the body: 401');
like($res->{json}{error} // '', qr/Digest/, '... says Digest');

$res = inbox(body => $other, as => 'eve', date => time - 13 * 3600);
is($res->{status}, 401, 'a Date 13 hours old: 401');

$res = inbox(body => $other, as => 'eve', date => time + 2 * 3600);
is($res->{status}, 401, 'a Date 2 hours ahead: 401');

$res = inbox(body => $other, as => 'eve',
             covered => ['(request-target)', 'host', 'date']);
is($res->{status}, 401, 'no digest covered: 401');

# created only counts when (created) is covered: else anyone could set it
{
    my $body = $JSON->encode(follow_of("$R/users/eve"));
    my %h = Tent::HTTPSig::sign(
        key => $key{eve}{private}, key_id => "$R/users/eve#main-key",
        target => $INBOX, host => "127.0.0.1:$P", body => $body,
        covered => ['(request-target)', 'host', 'digest']);
    $h{Signature} .= ',created=' . time;
    $res = http_request(port => $P, method => 'POST', path => $INBOX,
                        headers => { %h, 'Content-Type' => $AS },
                        body => $body);
    is($res->{status}, 401, 'created given but not covered, no date: 401');
}
$res = inbox(body => follow_of("$R/users/eve", 'http://example.org/y'),
             as => 'eve', algorithm => 'hs2019',
             covered => ['(request-target)', '(created)', 'host', 'digest']);
is($res->{status}, 202, 'hs2019 over (created) instead of date: 202')
    or diag $res->{body};

$res = http_request(port => $P, method => 'POST', path => $INBOX,
                    headers => { Host => "127.0.0.1:$P",
                                 Signature => 'keyId="x",signature="' },
                    body => '{}');
is($res->{status}, 400, 'a malformed Signature: 400');

my $closed = Tent::Peer::free_port();
$res = inbox(body => follow_of("http://127.0.0.1:$closed/users/x"),
             as => 'eve', key_id => "http://127.0.0.1:$closed/users/x#k");
is($res->{status}, 401, 'a keyId whose actor is unreachable: 401');

$res = inbox(body => follow_of("$R/users/bob"), as => 'eve');
is($res->{status}, 401, 'the activity\'s actor not the key\'s owner: 401');
like($res->{json}{error} // '', qr/owner/, '... says so');

$res = inbox(body => follow_of("$R/users/liar"), as => 'eve',
             key_id => "$R/users/liar#main-key");
is($res->{status}, 401, 'a key whose owner is another actor: 401');

# a key document that is not the actor's own: an upload on bob's origin
# claiming bob, with eve's key (anyone who can publish a file there)
$res = inbox(body => follow_of("$R/users/bob"), as => 'eve',
             key_id => "$R/uploads/x.json#k");
is($res->{status}, 401, 'a key document elsewhere on the actor\'s origin: 401');
ok($peer->error_log_text =~ m{the key document at "\Q$R\E/uploads/x\.json" is not},
   '... said in the log');
$res = inbox(body => follow_of("$R/users/far"), as => 'far');
is($res->{status}, 400, 'a Follow of an actor whose inboxes are on another host: 400');
$res = inbox(body => follow_of("$R/users/big"), as => 'big');
is($res->{status}, 401, 'an RSA key with a 34-bit public exponent: 401');
$res = inbox(body => follow_of("$R/users/eve", 'http://example.org/gts'),
             as => 'eve', key_id => "$R/users/eve/main-key");
is($res->{status}, 202, 'a key document under the actor\'s path (GoToSocial): 202');

# a replay: the same request twice
$res = inbox(body => follow_of("$R/users/eve", 'http://example.org/x'),
             as => 'eve');
is($res->{status}, 202, 'a Follow of someone else: 202, ignored');
my %sent = (headers => { %{ $res->{sent} }, 'Content-Type' => $AS },
            body => $res->{sent_body});
my $replay = http_request(port => $P, method => 'POST', path => $INBOX,
                          %sent);
is($replay->{status}, 401, 'the same request again (a replay): 401');
like($replay->{body}, qr/seen before/, '... as a replay');
$replay = http_request(port => $P, method => 'POST', path => $INBOX,
                       %sent, body => $JSON->encode(follow_of("$R/users/eve")));
is($replay->{status}, 401, 'another body under the same signature: 401');
is(count(), '1', 'no follower from any of them');

# a replay sent while the first copy waits for the key: one passes
{
    my $body = $JSON->encode(follow_of("$R/users/carol",
                                       'http://example.org/z'));
    my %h = Tent::HTTPSig::sign(
        key => $key{carol}{private}, key_id => "$R/users/carol#main-key",
        target => $INBOX, host => "127.0.0.1:$P", body => $body);
    my $raw = "POST $INBOX HTTP/1.1\r\n"
              . join('', map { "$_: $h{$_}\r\n" } sort keys %h)
              . "Content-Type: $AS\r\nContent-Length: " . length($body)
              . "\r\nConnection: close\r\n\r\n$body";
    my @socks = map { IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                          PeerPort => $P, Timeout => 10)
                      or die "connect: $!" } 1 .. 2;
    print {$_} $raw for @socks;
    my @status;
    for my $s (@socks) {
        local $/;
        my $answer = <$s> // '';
        push @status, $answer =~ m{^HTTP/1\.1 (\d+)} ? $1 : 0;
    }
    is(join(',', sort @status), '202,401',
       'two copies of one request at once: one 202, one 401');
}

# ---- bodies

$res = inbox(body => '', as => 'eve');
is($res->{status}, 400, 'an empty body: 400');
$res = inbox(body => '{"type":', as => 'eve');
is($res->{status}, 400, 'malformed JSON: 400');
$res = inbox(body => '[1]', as => 'eve');
is($res->{status}, 400, 'a JSON array: 400');
$res = inbox(body => { %{ follow_of("$R/users/eve") },
                       pad => 'x' x (300 * 1024) }, as => 'eve');
is($res->{status}, 413, 'a 300 KB body: 413');
ok($res->{json}{error}, '... a JSON error');

# ---- routes

$res = inbox(path => '/tent/activitypub/bob/inbox',
             body => follow_of("$R/users/eve"), as => 'eve');
is($res->{status}, 404, 'another name\'s inbox: 404');
$res = http_request(port => $P, path => $INBOX,
                    headers => { Host => "127.0.0.1:$P" });
is($res->{status}, 405, 'GET of the inbox: 405');

# ---- a blocked actor

$res = $c->request(POST => '/blocks', cred => $cred,
                   body => { entity => "$R/users/eve" });
is($res->{status}, 201, 'the owner blocks eve') or diag $res->{body};
$res = inbox(body => follow_of("$R/users/eve"), as => 'eve');
is($res->{status}, 403, 'a Follow by a blocked actor: 403');
is(count(), '1', 'no follower');

# ---- a flood of made-up keyIds on one host: bounded fetches

$rx->clear;
my $refused = 0;
for my $i (1 .. 40) {
    my $r = inbox(body => follow_of("$R/ghost/$i"), as => 'eve',
                  key_id => "$R/ghost/$i#main-key");
    $refused++ if $r->{status} == 401;
}
is($refused, 40, '40 made-up keyIds: 401 each');
my $fetches = () = $rx->requests(path => qr{^/ghost/});
ok($fetches >= 1 && $fetches <= 8,
   "... at most 8 fetches of the host ($fetches)");
$rx->clear;
inbox(body => follow_of("$R/ghost/1"), as => 'eve',
      key_id => "$R/ghost/1#main-key");
is(scalar $rx->requests(path => qr{^/ghost/}), 0,
   'a keyId that failed: not fetched again');

# ---- refused addresses (inside a network namespace only)

SKIP: {
    skip 'no network namespace', 4 unless $ENV{TENT_IN_NETNS};
    for my $host ('169.254.169.254', '10.0.0.1') {
        $res = inbox(body => follow_of("http://$host/users/x"), as => 'eve',
                     key_id => "http://$host/users/x#main-key");
        is($res->{status}, 401, "a keyId on $host: 401");
    }
    my $log = $peer->error_log_text;
    for my $host ('169.254.169.254', '10.0.0.1') {
        like($log, qr{key's actor http://\Q$host\E/users/x: the address is not allowed},
             "the guard refused $host, before any connection");
    }
}

unlike($peer->error_log_text, qr/\[(alert|crit|emerg)\]/,
       'no alert in the error log');

done_testing();
