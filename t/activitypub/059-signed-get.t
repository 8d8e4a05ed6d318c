# Our GETs signed (issue #29, docs/activitypub.md "Secure mode
# (authorized fetch)"): a Tent::APPeer in Mastodon's secure mode answers
# only signed GETs of its actors (it verifies them against our actor's
# publicKeyPem, as Mastodon does).  The inbox's key fetch is signed
# draft-cavage-12 rsa-sha256 over "(request-target) host date" (no
# Digest: no body), keyId our entity's #main-key, at our inbox and at the
# shared inbox: bob's and carol's Follows are 202.  Following an actor by
# acct: signs the WebFinger and the actor's GET.  Another tenant of the
# same nginx (tom) signs its inbox's fetch with its own key, never ours;
# the remote key it kept serves our inbox too (the actor's, whoever
# fetched it).  A peer that checks no GET (dave's) still works.  The suite checks each recorded GET with
# Tent::HTTPSig against our actor's key.

use strict;
use warnings;

use Test::More;
use JSON::PP;
use Tent::APPeer;
use Tent::HTTPSig;
use Tent::Peer;

# tom: another tenant of the same nginx
my $PT = Tent::Peer::free_port();
my $TOM = "http://127.0.0.1:$PT";
my $peer = Tent::Peer->start(
    worker_processes => 1,
    http_config => <<"HTTP",
    tent_store \$SERVROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 200ms;
    tent_delivery_retry 1s 2s;
    server {
        listen 127.0.0.1:$PT;
        tent_entity $TOM;
        tent_activitypub on;
        tent_ap_name tom;
    }
HTTP
    server_config => <<'CONF');
        tent_entity $URL;
        tent_activitypub on;
        tent_ap_name alice;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF
my $URL = $peer->url;
my $API = "$URL/tent";
my $c = $peer->client;
my (undef, $app) = $peer->authorized_app(
    'read_followers,read_followings,write_followings');

my $secure = Tent::APPeer->start(names => ['bob', 'carol', 'erin', 'frank'],
                                 authorized_fetch => 1);
my $open = Tent::APPeer->start(names => ['dave']);
my $BOB = $secure->actor_url('bob');

# our actor, its key (made now)
my $res = Tent::APPeer::http('GET', $URL,
                              headers => { Accept => 'application/activity+json' });
is($res->{status}, 200, 'our actor');
my $PEM = eval { decode_json($res->{body}) }->{publicKey}{publicKeyPem};
ok($PEM, '... its key');

# an unsigned GET of a secure actor: 401 (the peer is in secure mode)
my $st = Tent::APPeer::http('GET', $BOB,
                              headers => { Accept => 'application/activity+json' });
is($st->{status}, 401,
   'the secure peer refuses an unsigned GET of its actor');

# each GET the peer got of PATH, checked as the peer did (signed as
# ENTITY, with its key PEM: ours by default)
sub signed_gets {
    my ($ap, $path, $entity, $pem) = @_;
    $entity //= $URL;
    $pem //= $PEM;
    my @bad;
    my @got = grep { $_->{path} eq $path
                     && ($_->{headers}{'user-agent'} // '')
                        eq 'ngx_http_tent_module' }
              $ap->requests(method => 'GET');
    for my $g (@got) {
        my $h = $g->{headers};
        my $target = $g->{path}
                     . (defined $g->{query} && length $g->{query}
                        ? "?$g->{query}" : '');
        my %sig = ($h->{signature} // '') =~ /(\w+)="([^"]*)"/g;
        push @bad, "keyId " . ($sig{keyId} // 'none')
            unless ($sig{keyId} // '') eq "$entity#main-key";
        push @bad, "headers " . ($sig{headers} // 'none')
            unless ($sig{headers} // '') eq '(request-target) host date';
        push @bad, 'a Digest on a GET' if defined $h->{digest};
        my ($ok, $why) = Tent::HTTPSig::verify(
            method => 'GET', target => $target, headers => $h,
            public_key => $pem,
            require => ['(request-target)', 'host', 'date']);
        push @bad, "verify: $why" unless $ok;
    }
    return (scalar @got, @bad);
}

# ---- the inbox: bob's Follow, his actor fetched signed

is($secure->follow($URL, as => 'bob'), 202,
   'bob (secure mode) follows us at our inbox: 202')
    or diag explain [$secure->rejected, $secure->last_result];
my ($n, @bad) = signed_gets($secure, '/users/bob');
ok($n >= 1, 'our key fetch reached bob\'s actor');
ok(!@bad, '... signed as our entity, no digest, verifies with our key')
    or diag join ', ', @bad;
is(scalar(grep { $_->{path} eq '/users/bob' && $_->{status} == 200 }
          $secure->requests(method => 'GET')), $n, '... answered 200');
is(scalar(grep { $_->{path} eq '/users/bob' && $_->{status} == 401 }
          $secure->requests(method => 'GET')), 1,
   '... only the suite\'s unsigned GET was refused');
$res = $c->request(GET => '/followers', cred => $app);
ok((grep { $_->{entity} eq $BOB } @{ $res->{json} || [] }),
   'bob is our follower');
ok(scalar $secure->wait_inbox(type => 'Accept', name => 'bob'),
   'bob got our Accept');

# ---- the shared inbox: carol's Follow, signed as the request's entity

is($secure->follow($URL, as => 'carol', inbox => "$API/activitypub/shared-inbox"),
   202, 'carol (secure mode) follows us at the shared inbox: 202')
    or diag explain [$secure->rejected];
($n, @bad) = signed_gets($secure, '/users/carol');
ok($n >= 1 && !@bad, '... her actor fetched signed as our entity')
    or diag join ', ', @bad;

# ---- following erin by acct:: WebFinger and her actor, signed

$res = $c->request(POST => '/followings', cred => $app,
                   body => { entity => $secure->acct('erin') });
is($res->{status}, 200, 'we follow erin (secure mode) by acct:')
    or diag $res->{body};
is($res->{json}{entity}, $secure->actor_url('erin'), '... her actor');
($n, @bad) = signed_gets($secure, '/users/erin');
ok($n >= 1 && !@bad, '... her actor fetched signed') or diag join ', ', @bad;
($n, @bad) = signed_gets($secure, '/.well-known/webfinger');
ok($n >= 1 && !@bad, '... the WebFinger GET signed') or diag join ', ', @bad;
ok(scalar $secure->wait_inbox(type => 'Follow', name => 'erin'),
   '... our Follow reached her');

# ---- a peer that checks no GET: still works

is($open->follow($URL, as => 'dave'), 202, 'dave (no secure mode) follows us');
$res = $c->request(POST => '/followings', cred => $app,
                   body => { entity => $open->acct('dave') });
is($res->{status}, 200, 'we follow dave by acct:') or diag $res->{body};

# ---- another tenant: its own key signs its inbox's fetch

$res = Tent::APPeer::http('GET', $TOM,
                          headers => { Accept => 'application/activity+json' });
my $TOM_PEM = eval { decode_json($res->{body}) }->{publicKey}{publicKeyPem};
ok($TOM_PEM && $TOM_PEM ne $PEM, 'tom\'s actor, his own key');
is($secure->follow($TOM, as => 'frank'), 202,
   'frank (secure mode) follows tom: 202')
    or diag explain [$secure->rejected];
($n, @bad) = signed_gets($secure, '/users/frank', $TOM, $TOM_PEM);
ok($n == 1 && !@bad, '... frank\'s actor fetched signed as tom, with tom\'s key')
    or diag "$n: " . join ', ', @bad;
(undef, @bad) = signed_gets($secure, '/users/frank');
ok(scalar @bad, '... not as us');
is($secure->follow($URL, as => 'frank'), 202, 'frank follows us too: 202');
($n) = signed_gets($secure, '/users/frank', $TOM, $TOM_PEM);
is($n, 1, '... his key kept by the worker: not fetched again');

# ---- the POSTs keep their Digest

my ($acc) = $secure->inbox(type => 'Accept', name => 'bob');
ok($acc && defined $acc->{headers}{digest}
   && ($acc->{headers}{signature} // '')
      =~ /headers="\(request-target\) host date digest"/,
   'our deliveries still sign the Digest');

unlike($peer->error_log_text, qr/\[(alert|crit|emerg)\]/,
       'no alert in the log');

done_testing();
