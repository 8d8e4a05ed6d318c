# ActivityPub discovery (issue #29, docs/activitypub.md): WebFinger by
# acct: and by URL, host-meta, NodeInfo 2.1, the actor at the entity URL
# by content negotiation (a Person, its RSA-2048 key made on first use
# and kept across a restart), the page and Link header unchanged for
# other Accept values.  Adversarial: malformed and oversized resources,
# many concurrent first requests making one key, another tenant's
# entity its own key, the private key in no reply.

use strict;
use warnings;

use Test::More;
use JSON::PP;
use File::Temp qw(tempfile);
use Tent::Peer;
use Tent::Client;
use Tent::Util qw(http_request);
use Tent::Hosting qw(provisioning_host operator_request admin_location
                     operator_token);

my $AS = 'application/activity+json';
my $LD = 'application/ld+json; profile="https://www.w3.org/ns/activitystreams"';
my $BASIC = 'https://tent.io/types/info/basic/v0.1.0';
my @replies;    # every body, for the private key's check at the end

sub req {
    my (%a) = @_;
    my $res = http_request(%a);
    push @replies, join("\n", map { "$_: $res->{headers}{$_}" }
                                  keys %{ $res->{headers} || {} })
                   . "\n\n" . ($res->{body} // '');
    $res->{json} = eval { decode_json($res->{body}) };
    return $res;
}

sub wf {
    my ($port, $resource, %h) = @_;
    return req(port => $port,
               path => '/.well-known/webfinger'
                       . (defined $resource ? "?resource=$resource" : ''),
               headers => { %h });
}

sub actor {
    my ($port, %h) = @_;
    my $method = delete $h{method} || 'GET';
    my $path = delete $h{path} || '/';
    return req(port => $port, path => $path, method => $method,
               headers => { Accept => $AS, %h });
}

# the PEM's key as openssl reads it: "RSA 2048" or the error
sub pem_kind {
    my ($pem) = @_;
    my ($fh, $file) = tempfile(UNLINK => 1);
    print {$fh} $pem;
    close $fh;
    my $out = `openssl pkey -pubin -in $file -noout -text 2>&1`;
    return $? == 0 && $out =~ /Public-Key: \((\d+) bit\)/ ? "RSA $1" : $out;
}

# ---- one entity, fixed: named by tent_ap_name

my $peer = Tent::Peer->start(server_config => <<'CONF');
        tent_entity $URL;
        tent_activitypub on;
        tent_ap_name alice;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
        location = / {
            tent_entity_page;
        }
CONF
my $P = $peer->port;
my $URL = $peer->url;

my $res = wf($P, "acct:alice\@127.0.0.1:$P");
is($res->{status}, 200, 'webfinger acct:NAME@HOST:PORT: 200')
    or diag $res->{body};
like($res->{headers}{'content-type'}, qr{^application/jrd\+json},
     'application/jrd+json');
is($res->{json}{subject}, "acct:alice\@127.0.0.1:$P", 'subject');
is_deeply($res->{json}{aliases}, [$URL], 'aliases: the entity URL');
my ($self) = grep { $_->{rel} eq 'self' } @{ $res->{json}{links} || [] };
is($self->{type}, $AS, 'self: application/activity+json');
is($self->{href}, $URL, 'self: the actor, at the entity URL');
my ($page) = grep { $_->{rel} eq 'http://webfinger.net/rel/profile-page' }
                  @{ $res->{json}{links} || [] };
is($page->{href}, $URL, 'the profile page');
is($res->{headers}{'access-control-allow-origin'}, '*', 'CORS: *');

is(wf($P, 'acct:alice@127.0.0.1')->{status}, 200,
   'the host without its port: 200');
is(wf($P, 'acct%3Aalice%40127.0.0.1')->{status}, 200,
   'the resource percent-encoded: 200');
$res = wf($P, Tent::Client::uri_escape($URL));
is($res->{status}, 200, 'webfinger by the entity URL: 200');
is($res->{json}{subject}, "acct:alice\@127.0.0.1:$P",
   'its subject is the account');
is(wf($P, "$URL/")->{status}, 200, 'the URL with a trailing slash: 200');
is(wf($P, "HTTP://127.0.0.1:$P")->{status}, 200,
   'the URL in another spelling: 200');

# unknown: 404, JSON
for my $r ("acct:bob\@127.0.0.1:$P", 'acct:alice@other.example',
           "acct:alice\@127.0.0.1:1", 'http://other.example',
           "$URL/alice", 'acct:' . ('a' x 100) . '@127.0.0.1') {
    $res = wf($P, $r);
    is($res->{status}, 404, "unknown $r: 404");
    ok($res->{json} && $res->{json}{error}, '... in JSON');
}

# malformed: 400, JSON
for my $r (undef, '', 'alice', 'acct:alice', 'acct:@127.0.0.1',
           'acct:alice@', 'mailto:alice@127.0.0.1', 'acct:al%20ice@x',
           'http://', 'acct:a%00b@127.0.0.1') {
    $res = wf($P, $r);
    is($res->{status}, 400, 'malformed ' . ($r // 'none') . ': 400');
    like($res->{headers}{'content-type'} // '', qr{json}, '... JSON');
}

$res = wf($P, 'acct:' . ('a' x 600) . '@127.0.0.1');
is($res->{status}, 400, 'a resource over 512 bytes: 400');
$res = wf($P, 'http://127.0.0.1/' . ('%41' x 300));
is($res->{status}, 400, 'an escaped resource of 900 bytes: 400');
is(req(port => $P, method => 'POST',
       path => '/.well-known/webfinger?resource=acct:alice@127.0.0.1',
       body => 'x')->{status}, 405, 'POST: 405');

# ---- host-meta, NodeInfo

$res = req(port => $P, path => '/.well-known/host-meta');
is($res->{status}, 200, 'host-meta: 200');
like($res->{headers}{'content-type'}, qr{^application/xrd\+xml},
     'application/xrd+xml');
like($res->{body},
     qr{<Link rel="lrdd" type="application/jrd\+json" template="\Q$URL\E/\.well-known/webfinger\?resource=\{uri\}"/>},
     'the lrdd template');

$res = req(port => $P, path => '/.well-known/nodeinfo');
is($res->{status}, 200, 'nodeinfo: 200');
is($res->{json}{links}[0]{rel},
   'http://nodeinfo.diaspora.software/ns/schema/2.1', 'NodeInfo 2.1');
my $href = $res->{json}{links}[0]{href};
is($href, "$URL/.well-known/nodeinfo/2.1", 'its document');
$res = req(port => $P, path => '/.well-known/nodeinfo/2.1');
is($res->{status}, 200, 'the document: 200');
like($res->{headers}{'content-type'}, qr{^application/json; profile=},
     'application/json with its profile');
is($res->{json}{version}, '2.1', 'version 2.1');
is($res->{json}{software}{name}, 'ngx-http-tent-module', 'software name');
like($res->{json}{software}{version}, qr/^\d+\.\d+/, 'software version');
is_deeply($res->{json}{protocols}, ['activitypub'], 'protocols');
is($res->{json}{usage}{users}{total}, 1, 'users: the entity');
ok(!$res->{json}{openRegistrations}, 'registrations closed');

# ---- the actor

$res = actor($P);
is($res->{status}, 200, 'the entity URL as activity+json: 200')
    or diag $res->{body};
like($res->{headers}{'content-type'}, qr{^application/activity\+json},
     'application/activity+json');
is($res->{headers}{vary}, 'Accept', 'Vary: Accept');
my $a = $res->{json};
is($a->{type}, 'Person', 'a Person');
is($a->{id}, $URL, 'id: the entity URL');
is($a->{preferredUsername}, 'alice', 'preferredUsername');
is($a->{'@context'}[0], 'https://www.w3.org/ns/activitystreams', '@context');
is($a->{inbox}, "$URL/tent/activitypub/alice/inbox", 'inbox: the entity\'s own');
is($a->{outbox}, "$URL/tent/activitypub/alice/outbox", 'outbox: the entity\'s own');
is($a->{followers}, "$URL/tent/activitypub/alice/followers", 'followers: the entity\'s own');
is($a->{following}, "$URL/tent/activitypub/alice/following", 'following: the entity\'s own');
is($a->{endpoints}{sharedInbox}, "$URL/tent/activitypub/shared-inbox",
   'sharedInbox');
is($a->{publicKey}{id}, "$URL#main-key", 'publicKey id');
is($a->{publicKey}{owner}, $URL, 'publicKey owner');
my $pem = $a->{publicKey}{publicKeyPem} // '';
like($pem, qr/^-----BEGIN PUBLIC KEY-----\n/, 'a PEM public key');
is(pem_kind($pem), 'RSA 2048', 'openssl reads it: RSA, 2048 bits');
ok(!exists $a->{name}, 'no basic section: no name');

$res = actor($P);
is($res->{json}{publicKey}{publicKeyPem}, $pem, 'the same key again');
$res = actor($P, Accept => $LD);
is($res->{status}, 200, 'application/ld+json with the AS profile: 200');
is($res->{json}{publicKey}{publicKeyPem}, $pem, '... the same key');
$res = actor($P, Accept => 'text/html, application/activity+json;q=0.9');
is($res->{json}{type}, 'Person', 'activity+json among others: the actor');
$res = actor($P, method => 'HEAD');
is($res->{status}, 200, 'HEAD: 200');
is($res->{body}, '', '... no body');

# the page and the Link header unchanged without the Accept
for my $acc (undef, 'text/html', 'application/json', 'application/ld+json') {
    $res = req(port => $P, path => '/',
               headers => { defined $acc ? (Accept => $acc) : () });
    is($res->{body}, "Tent!\n", 'Accept ' . ($acc // 'none') . ': the page');
    like($res->{headers}{link} // '', qr{^<\Q$URL\E/tent/profile>; rel="https://tent\.io/rels/profile"$},
         '... the Link header');
    is($res->{headers}{vary}, 'Accept', '... Vary: Accept');
}

# the collections (t/activitypub/070); another name than the entity's: 404
for my $r ('outbox', 'followers', 'following') {
    $res = req(port => $P, path => "/tent/activitypub/alice/$r");
    is($res->{status}, 200, "GET alice/$r: 200");
    is($res->{json}{type}, 'OrderedCollection', '... a collection');
}
# the inboxes (t/activitypub/040): unsigned, 401
for my $r (['POST', 'alice/inbox'], ['POST', 'shared-inbox']) {
    $res = req(port => $P, method => $r->[0],
               path => "/tent/activitypub/$r->[1]", body => '{}');
    is($res->{status}, 401, "$r->[0] $r->[1] unsigned: 401");
}
for my $r (['GET', 'bob/outbox'], ['GET', 'alicex/followers'],
           ['GET', 'alic/following'], ['POST', 'bob/inbox'],
           ['GET', 'outbox'], ['POST', 'inbox']) {
    $res = req(port => $P, method => $r->[0],
               path => "/tent/activitypub/$r->[1]",
               body => $r->[0] eq 'POST' ? '{}' : undef);
    is($res->{status}, 404, "$r->[0] $r->[1]: 404");
    like($res->{body}, qr/"error"/, '... in JSON');
}

# the basic section, public: name, summary (escaped), icon
my $c = $peer->client;
my ($w, $writer) = $c->authorized_app('write_profile',
                                      info_types => $BASIC);
$res = $c->request(PUT => '/profile/' . Tent::Client::uri_escape($BASIC),
                   cred => $writer,
                   body => { name => 'Alice', bio => 'I <b>like</b> tea',
                             avatar_url => 'https://img.example/a.png',
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'PUT basic') or diag $res->{body};
$a = actor($P)->{json};
is($a->{name}, 'Alice', 'name from basic');
is($a->{summary}, 'I &lt;b&gt;like&lt;/b&gt; tea', 'summary: the bio, escaped');
is_deeply($a->{icon}, { type => 'Image', url => 'https://img.example/a.png' },
          'icon: the avatar');
is($a->{publicKey}{publicKeyPem}, $pem, 'the same key');

# not public: not shown
$res = $c->request(PUT => '/profile/' . Tent::Client::uri_escape($BASIC),
                   cred => $writer,
                   body => { name => 'Secret',
                             permissions => { public => JSON::PP::false } });
is($res->{status}, 200, 'PUT basic, not public');
$a = actor($P)->{json};
ok(!exists $a->{name} && !exists $a->{icon},
   'a section not public is not in the actor');

# each reply answered once: no second reply after an error, no 500
sub log_clean {
    my ($p, $what) = @_;
    my @bad = grep { /\[(alert|emerg|crit)\]|header already sent|tent: .* failed/ }
                   split /^/, $p->error_log_text;
    ok(!@bad, "$what: no alert, no failed step in the error log")
        or diag join '', @bad[0 .. ($#bad < 4 ? $#bad : 4)];
}
# the export: the private key only with read_secrets (the owner's
# secrets document, as the relationships' credentials; 020-key-portability)
my ($nx, $noexp) = $c->authorized_app(
    'read_profile,read_followers,read_followings,read_groups,read_posts',
    info_types => 'all', post_types => 'all');
$res = $c->request(GET => '/export', cred => $noexp);
push @replies, $res->{body};
is($res->{status}, 403, 'an export without read_secrets: 403');
my ($ex, $exporter) = $c->authorized_app(
    'read_secrets,read_profile,read_followers,read_followings,read_groups,'
    . 'read_posts', info_types => 'all', post_types => 'all');
my $doc = Tent::Util::export_document(port => $P, cred => $exporter);
ok($doc && $doc->{complete}, 'the owner\'s export');
is($doc->{activitypub_keys}[0]{public}, $pem, '... carries the key');

log_clean($peer, 'one entity');

# after a restart: the same key
$peer->restart;
$res = actor($P);
is($res->{json}{publicKey}{publicKeyPem}, $pem, 'after a restart: the same key');

# ---- many concurrent first requests: one key

my $peer2 = Tent::Peer->start(server_config => <<'CONF');
        tent_entity $URL;
        tent_activitypub on;
        location = / {
            tent_entity_page;
        }
CONF
my $P2 = $peer2->port;
my @kids;
for my $i (1 .. 16) {
    pipe(my $rd, my $wr) or die "pipe: $!";
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        close $rd;
        my $r = http_request(port => $P2, path => '/',
                             headers => { Accept => $AS }, timeout => 20);
        my $j = eval { decode_json($r->{body}) } || {};
        my $k = $j->{publicKey}{publicKeyPem} // '';
        $k =~ s/\n/|/g;
        print {$wr} "$r->{status} $k\n";
        close $wr;
        POSIX::_exit(0);
    }
    close $wr;
    push @kids, [$pid, $rd];
}
my %keys;
my $ok = 0;
for (@kids) {
    my ($pid, $rd) = @$_;
    my $line = <$rd> // '';
    close $rd;
    waitpid $pid, 0;
    chomp $line;
    my ($st, $k) = split / /, $line, 2;
    $ok++ if ($st // 0) == 200;
    $keys{$k // ''}++;
}
is($ok, 16, '16 concurrent first requests: 200 each');
is(scalar keys %keys, 1, '... one key among them');
my ($pem2) = keys %keys;
$pem2 =~ s/\|/\n/g;
is(pem_kind($pem2), 'RSA 2048', '... RSA 2048');
isnt($pem2, $pem, 'another entity, another key');
is(actor($P2)->{json}{publicKey}{publicKeyPem}, $pem2, 'kept');
log_clean($peer2, 'concurrent first requests');
my $dir = $peer2->servroot;
$peer2->stop;
my $rows = grep { /004b6d61696e\t/ } Tent::Util::ldb_rows("$dir/tent_temp/db");
is($rows, 1, 'one key row in the store');

# the module's name: the host's first label by default
$peer2->restart;
$res = wf($P2, "acct:127\@127.0.0.1:$P2");
is($res->{status}, 200, 'no tent_ap_name: the host\'s first label');
is(actor($P2)->{json}{preferredUsername}, '127', '... preferredUsername');
$peer2->stop;

# ---- provisioned entities: each its own name and key

my $HP = Tent::Peer::free_port();
my $root = Tent::Util::own_root('/tmp/sr-apdisc');
my ($host, $token) = provisioning_host(
    port => $HP, root => $root, names => [],
    servers => <<'CONF');
    map $uri $ap_tenant {
        ~^/users/(?<t>[a-z]+)$                   $t;
        ~^/tent/activitypub/(?<t>[a-z]+)/[a-z]+$ $t;
        default                                  "";
    }
    server {
        listen 127.0.0.1:$PORT;
        server_name q.test;
        tent_entity http://$host:$PORT/users/$ap_tenant;
        tent_activitypub on;
    }
    server {
        listen 127.0.0.1:$PORT;
        server_name *.p.test;
        tent_entity http://$host:$PORT;
        tent_activitypub on;
        location = / {
            tent_entity_page;
        }
    }
CONF
for my $n ('x', 'y') {
    $res = operator_request(port => $HP, token => $token,
                            body => { action => 'create',
                                      entity => "http://$n.p.test:$HP" });
    is($res->{status}, 201, "$n.p.test created") or diag $res->{body};
}
$res = wf($HP, "acct:x\@x.p.test:$HP", Host => "x.p.test:$HP");
is($res->{status}, 200, 'a tenant: acct:x@x.p.test') or diag $res->{body};
is($res->{json}{aliases}[0], "http://x.p.test:$HP", '... its entity');
is(wf($HP, 'acct:x@x.p.test', Host => "x.p.test:$HP")->{status}, 200,
   '... without the port');
is(wf($HP, "acct:y\@x.p.test:$HP", Host => "x.p.test:$HP")->{status}, 404,
   'another name on its host: 404');
is(wf($HP, "acct:y\@y.p.test:$HP", Host => "x.p.test:$HP")->{status}, 404,
   'another tenant asked on its host: 404');
is(wf($HP, "acct:z\@z.p.test:$HP", Host => "z.p.test:$HP")->{status}, 404,
   'a name never created: 404');
is(actor($HP, Host => "z.p.test:$HP")->{status}, 404,
   '... no actor, no key made');
my $kx = actor($HP, Host => "x.p.test:$HP")->{json}{publicKey}{publicKeyPem};
my $ky = actor($HP, Host => "y.p.test:$HP")->{json}{publicKey}{publicKeyPem};
is(pem_kind($kx // ''), 'RSA 2048', 'x: RSA 2048');
is(pem_kind($ky // ''), 'RSA 2048', 'y: RSA 2048');
isnt($kx, $ky, 'x and y: their own keys');
is(actor($HP, Host => "x.p.test:$HP")->{json}{preferredUsername}, 'x',
   'x: preferredUsername');
$res = req(port => $HP, path => '/.well-known/nodeinfo/2.1',
           headers => { Host => "z.p.test:$HP" });
is($res->{json}{usage}{users}{total}, 0, 'nodeinfo of a name not created: 0');

$res = operator_request(port => $HP, token => $token,
                        body => { action => 'disable',
                                  entity => "http://y.p.test:$HP" });
is($res->{status}, 200, 'y disabled');
is(actor($HP, Host => "y.p.test:$HP")->{status}, 410, 'its actor: 410');
is(wf($HP, "acct:y\@y.p.test:$HP", Host => "y.p.test:$HP")->{status}, 404,
   'its webfinger: 404');

# entities on paths of one host: NAME is the path's segment
$res = operator_request(port => $HP, token => $token,
                        body => { action => 'create',
                                  entity => "http://q.test:$HP/users/ann" });
is($res->{status}, 201, 'q.test/users/ann created') or diag $res->{body};
$res = wf($HP, "acct:ann\@q.test:$HP", Host => "q.test:$HP");
is($res->{status}, 200, 'on paths: acct:ann@q.test') or diag $res->{body};
is_deeply($res->{json}{aliases}, ["http://q.test:$HP/users/ann"],
          '... its entity');
is($res->{json}{subject}, "acct:ann\@q.test:$HP", '... its subject');
$res = wf($HP, "http://q.test:$HP/users/ann", Host => "q.test:$HP");
is($res->{status}, 200, 'on paths: by the URL');
for my $r ("acct:bob\@q.test:$HP", "http://q.test:$HP/users/ann/x",
           "http://q.test:$HP/users/bob", "acct:ann\@x.p.test:$HP",
           "acct:ann%2Fx\@q.test:$HP") {
    is(wf($HP, $r, Host => "q.test:$HP")->{status}, 404,
       "on paths: $r: 404");
}
$res = actor($HP, Host => "q.test:$HP", path => '/users/ann');
is($res->{status}, 200, 'on paths: the actor') or diag $res->{body};
is($res->{json}{id}, "http://q.test:$HP/users/ann", '... its id');
is($res->{json}{preferredUsername}, 'ann', '... its name');
is(pem_kind($res->{json}{publicKey}{publicKeyPem} // ''), 'RSA 2048',
   '... its key');
is($res->{json}{inbox}, "http://q.test:$HP/tent/activitypub/ann/inbox",
   '... its own inbox, under the host\'s API root');
is($res->{json}{endpoints}{sharedInbox},
   "http://q.test:$HP/tent/activitypub/shared-inbox", '... the host\'s shared one');
$res = req(port => $HP, path => '/tent/activitypub/ann/outbox',
           headers => { Host => "q.test:$HP" });
is($res->{status}, 200, 'on paths: ann\'s own route, mapped to ann: 200');
is($res->{json}{id}, "http://q.test:$HP/tent/activitypub/ann/outbox",
   '... ann\'s outbox');
$res = req(port => $HP, path => '/tent/activitypub/bob/outbox',
           headers => { Host => "q.test:$HP" });
is($res->{status}, 404, 'on paths: a name never created: 404');
is(actor($HP, Host => "q.test:$HP", path => '/users/bob')->{status}, 404,
   'on paths: an entity not created: no actor');
sub q_users {
    my $r = req(port => $HP, path => '/.well-known/nodeinfo/2.1',
                headers => { Host => "q.test:$HP" });
    return $r->{json}{usage}{users}{total} // 'none';
}
is(q_users(), 1, 'on paths: nodeinfo counts the registry\'s entities: 1');
# twice more: of three asks, two reach the same one of the two workers
is(q_users(), 1, '... again (the worker\'s count)') for 1 .. 2;
$res = operator_request(port => $HP, token => $token,
                        body => { action => 'create',
                                  entity => "http://q.test:$HP/users/bob" });
is($res->{status}, 201, 'q.test/users/bob created');
is(q_users(), 2, '... counted at once (the registry\'s generation moved)');
$res = operator_request(port => $HP, token => $token,
                        body => { action => 'disable',
                                  entity => "http://q.test:$HP/users/bob" });
is(q_users(), 1, '... a disabled one is not');
like($host->error_log_text, qr/tent nodeinfo: 1 users under "[^"]+" \(kept\)/,
     '... a count kept served without a scan');
log_clean($host, 'tenants');
$host->stop;

# ---- the private key: in no reply

ok(!grep({ /PRIVATE KEY|BEGIN RSA/ } @replies),
   'no reply carried a private key (' . scalar(@replies) . ' replies)');

done_testing();
