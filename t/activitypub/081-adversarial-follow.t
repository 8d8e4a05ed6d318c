# Following an ActivityPub actor, against what a stranger's server or a
# careless app may send (issue #29, docs/activitypub.md "Following an
# actor"): malformed handles 400 (nothing fetched); handles on refused
# addresses 403 by the guard (inside a network namespace, Tent::Netns:
# no packet leaves), also when a WebFinger answer redirects there or
# names an actor there; the operator's blocked domain 403 before any
# fetch; a WebFinger answer naming another host's actor whose own handle
# does not resolve back to it 502; an actor whose id is not the URL
# fetched 502; oversized WebFinger and actor answers 502; no self link,
# no inbox 502; an unknown account 404; the owner's blocked actor 403;
# ourselves 406; a host name beginning with "127." asked over https
# (only a loopback address is asked over http).  None of them leaves a
# following or sends a Follow.
# A WebFinger answer of one host naming another host's actor whose own
# handle does resolve back to it (a delegated domain) follows that actor
# by its id.

use strict;
use warnings;

use Tent::Netns qw(reexec_in_netns);
BEGIN { reexec_in_netns(hosts => ['blocked.test', '127.name.test']) }

use Test::More;
use JSON::PP;
use Time::HiRes qw(sleep time);
use Tent::APPeer;
use Tent::Client;
use Tent::Hosting qw(operator_token operator_request);
use Tent::Peer;
use Tent::Receiver;

my $AS = 'application/activity+json';
my $JRD = 'application/jrd+json';

my $TOKFILE = "/tmp/tent-apfollow-token-$$";
my $TOKEN = operator_token($TOKFILE);
END { unlink $TOKFILE if $TOKFILE }

my $AP = Tent::APPeer->start(names => ['bob', 'carol']);
my $R1 = Tent::Receiver->start;
my $R2 = Tent::Receiver->start;
my ($U1, $U2) = ($R1->url, $R2->url);
my ($H1, $H2) = ($U1 =~ m{//(.*)}, $U2 =~ m{//(.*)});

sub actor {
    my ($base, $name, %o) = @_;
    my $id = "$base/users/$name";
    return { '@context' => 'https://www.w3.org/ns/activitystreams',
             id => $id, type => 'Person', preferredUsername => $name,
             inbox => "$id/inbox", %o };
}

sub jrd {
    my ($href) = @_;
    return { links => [{ rel => 'self', type => $AS, href => $href }] };
}

sub wf_rule {
    my ($name, $action) = @_;
    return { method => 'GET', path => '^/\.well-known/webfinger$',
             query => "resource=acct:$name\@", action => $action };
}

sub ok_json {
    my ($type, $body) = @_;
    return { status => 200, headers => { 'Content-Type' => $type },
             body => $body };
}

my $pad = 'x' x (130 * 1024);
$R1->rules([
    # eve@R1 is zed of R2, whose own handle does not resolve (404)
    wf_rule('eve', ok_json($JRD, jrd("$U2/users/zed"))),
    # mia@R1 is yan of R2, whose own handle names another actor
    wf_rule('mia', ok_json($JRD, jrd("$U2/users/yan"))),
    # alias@R1 is APPeer's bob, whose own handle resolves to him
    wf_rule('alias', ok_json($JRD, jrd($AP->actor_url('bob')))),
    # liar: the actor served there says it is another one
    wf_rule('liar', ok_json($JRD, jrd("$U1/users/liar"))),
    { method => 'GET', path => '^/users/liar$',
      action => ok_json($AS, actor($U1, 'other')) },
    # far: served at R1, its id on R2
    wf_rule('far', ok_json($JRD, jrd("$U1/users/far"))),
    { method => 'GET', path => '^/users/far$',
      action => ok_json($AS, actor($U2, 'far')) },
    # big: a WebFinger answer over 64 KB
    wf_rule('big', ok_json($JRD, { %{ jrd("$U1/users/big") },
                                   padding => $pad })),
    # fat: an actor over 128 KB
    wf_rule('fat', ok_json($JRD, jrd("$U1/users/fat"))),
    { method => 'GET', path => '^/users/fat$',
      action => ok_json($AS, actor($U1, 'fat', padding => $pad)) },
    # noself: links of other kinds only
    wf_rule('noself', ok_json($JRD, { links => [
        { rel => 'self', type => 'text/html', href => "$U1/users/n" },
        { rel => 'http://webfinger.net/rel/profile-page',
          type => 'text/html', href => "$U1/users/n" }] })),
    # noinbox: an actor with no inbox
    wf_rule('noinbox', ok_json($JRD, jrd("$U1/users/noinbox"))),
    { method => 'GET', path => '^/users/noinbox$',
      action => ok_json($AS, { %{ actor($U1, 'noinbox') },
                               inbox => undef }) },
    # hop: the WebFinger answer redirects to a refused address
    wf_rule('hop', { status => 302, headers => {
        Location => 'http://10.11.12.13/.well-known/webfinger' } }),
    # inner: names an actor on a refused address
    wf_rule('inner', ok_json($JRD, jrd('http://169.254.169.254/users/x'))),
    # tob: names an actor on the operator's blocked domain
    wf_rule('tob', ok_json($JRD, jrd('http://blocked.test:' . $AP->port
                                      . '/users/bob'))),
    { method => 'GET', path => '^/\.well-known/webfinger$',
      action => { status => 404, body => '' } },
]);
$R2->rules([
    { method => 'GET', path => '^/users/zed$',
      action => ok_json($AS, actor($U2, 'zed')) },
    { method => 'GET', path => '^/users/yan$',
      action => ok_json($AS, actor($U2, 'yan')) },
    wf_rule('yan', ok_json($JRD, jrd("$U2/users/someone-else"))),
    { method => 'GET', path => '^/\.well-known/webfinger$',
      action => { status => 404, body => '' } },
]);

my $peer = Tent::Peer->start(
    worker_processes => 1,
    http_config => <<'CONF',
    tent_store $SERVROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 200ms;
CONF
    server_config => <<"CONF");
        tent_entity \$URL;
        tent_activitypub on;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
        location = / {
            tent_entity_page;
        }
        location /tent-admin {
            tent_admin;
            tent_admin_token_file $TOKFILE;
            allow 127.0.0.1;
            deny all;
        }
CONF
my $URL = $peer->url;
my $P = $peer->port;
my $c = $peer->client;
my (undef, $app) = $peer->authorized_app(
    'read_followings,write_followings,read_blocks,write_blocks');

sub follow {
    return $c->request(POST => '/followings', cred => $app,
                       body => { entity => $_[0] });
}

sub refused {
    my ($entity, $status, $what, $why) = @_;
    my $res = follow($entity);
    is($res->{status}, $status, "$what: $status") or diag $res->{body};
    like($res->{json}{error} // '', $why // qr/./, '... a JSON error');
    return $res;
}

sub requests_all {
    return scalar($R1->requests) + scalar($R2->requests)
           + scalar($AP->requests);
}

# ---- malformed handles: 400, nothing asked of anyone

for my $h ('acct:', 'acct:bob', '@bob', '@bob@', 'acct:@host',
           "acct:b ob\@$H1", "acct:bob\@$H1/x", "acct:bob\@$H1?x=1",
           "acct:bob\@$H1#f", 'acct:bob@ho st', 'acct:bob@h@x',
           'acct:bob@host:99999999', 'acct:bob@host:', 'acct:bob@[::1',
           'acct:bob@[zz]', 'acct:bob@-host', 'acct:b%40b@host',
           "acct:bob\@host\r\nX: y", 'acct:' . ('n' x 65) . '@host',
           'acct:bob@' . ('h' x 256), "\@b\x{e9}b\@host")
{
    (my $shown = $h) =~ s/[^\x20-\x7e]/?/g;
    refused($h, 400, "the handle \"$shown\"", qr/^Malformed handle/);
}
is(requests_all(), 0, 'no request made for any of them');

# ---- refused addresses: the guard, before any connection

refused('acct:bob@10.1.2.3', 403, 'a handle on 10.0.0.0/8');
refused('@bob@169.254.169.254', 403, 'a handle on the metadata address');
refused('acct:bob@[::1]:' . $AP->port, 403,
        'a handle on [::1] (not in tent_outbound_allow)');
refused('acct:bob@192.168.0.1:8080', 403, 'a handle on 192.168.0.0/16');
refused("acct:hop\@$H1", 403, 'WebFinger redirecting to 10.11.12.13');
refused("acct:inner\@$H1", 403, 'WebFinger naming an actor on 169.254/16');

# ---- the operator's blocked domain: no fetch at all

my $res = operator_request(port => $P, token => $TOKEN,
                           body => { action => 'block',
                                     domain => 'blocked.test' });
is($res->{status}, 201, 'the operator blocks blocked.test')
    or diag $res->{body};
$AP->clear;
refused('acct:bob@blocked.test:' . $AP->port, 403,
        'a handle on the blocked domain', qr/blocked/);
refused('http://blocked.test:' . $AP->port . '/users/bob', 403,
        'an actor URL on the blocked domain', qr/blocked/);
is(scalar $AP->requests, 0, '... nothing reached it');
refused("acct:tob\@$H1", 403,
        'WebFinger naming an actor on the blocked domain');
is(scalar $AP->requests, 0, '... nothing reached it');

# ---- answers that do not hold

refused("acct:eve\@$H1", 502,
        'WebFinger naming another host\'s actor, whose handle is unknown',
        qr/resolve back/);
ok(scalar $R2->requests(method => 'GET',
                        path => qr{^/\.well-known/webfinger$}),
   '... its own host was asked');
refused("acct:mia\@$H1", 502,
        'WebFinger naming another host\'s actor, whose handle names another',
        qr/resolve back/);
refused("acct:liar\@$H1", 502, 'an actor whose id is not its URL',
        qr/id is not the URL/);
refused("acct:far\@$H1", 502, 'an actor whose id is on another host',
        qr/its id on its own host/);
refused("acct:big\@$H1", 502, 'a WebFinger answer over 64 KB');
refused("acct:fat\@$H1", 502, 'an actor over 128 KB');
refused("acct:noself\@$H1", 502, 'no ActivityPub self link',
        qr/names no ActivityPub actor/);
refused("acct:noinbox\@$H1", 502, 'an actor without inbox', qr/no inbox/);
refused("acct:nobody\@$H1", 404, 'an unknown account');
$AP->clear;
$res = follow('acct:bob@127.name.test:' . $AP->port);
isnt($res->{status}, 200, 'a name beginning with "127." is no loopback '
     . 'address: WebFinger over https, which the peer does not speak');
is(scalar $AP->requests(method => 'GET'), 0, '... no plain http GET');
refused($AP->url . '/users/nobody', 404,
        'a URL with neither a Tent profile nor an actor');
refused("acct:127\@127.0.0.1:$P", 406, 'ourselves', qr/self/);

$res = $c->request(POST => '/blocks', cred => $app,
                   body => { entity => $AP->actor_url('carol') });
is($res->{status}, 201, 'the owner blocks carol') or diag $res->{body};
refused('acct:carol@' . $AP->hostport, 403, 'a blocked actor',
        qr/blocked/);

$res = $c->request(GET => '/followings', cred => $app);
is_deeply($res->{json}, [], 'no following made by any of them');
sleep 1;
is(scalar($R1->requests(method => 'POST'))
   + scalar($R2->requests(method => 'POST'))
   + scalar($AP->inbox(type => 'Follow')), 0, 'no Follow sent anywhere');

# ---- a delegated handle: the actor's own handle resolves back

$res = follow("acct:alias\@$H1");
is($res->{status}, 200, 'WebFinger of R1 naming APPeer\'s bob, who '
   . 'resolves back: 200') or diag $res->{body};
is($res->{json}{entity}, $AP->actor_url('bob'), '... bob\'s actor followed');
ok(scalar $AP->wait_inbox(type => 'Follow', name => 'bob', actor => $URL),
   '... our Follow reached bob');

$peer->stop;
unlike($peer->error_log_text, qr/\[(alert|emerg|crit)\]/,
       'no alert in the error log');

done_testing;
