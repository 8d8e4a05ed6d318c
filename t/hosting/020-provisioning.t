# Provisioning (issue 16, part 1; docs/admin.md): on a "tent_entity
# http://$host" server with "tent_provisioning on" an entity exists once
# the operator created it through the tent_admin location.  Not created:
# 404 in JSON on every route, no Link, nothing written; disabled: 410,
# data kept; deleted: 404 and its rows gone.  The operator's location
# wants its token.  A created entity's posts reach its followers (the
# delivery engine takes the registry's entities).  Host names resolve to
# 127.0.0.1 inside a network namespace (Tent::Netns).

use strict;
use warnings;

my @NAMES;
BEGIN { @NAMES = qw(alice.test ghost.test carol.test dave.test erin.test
                    frank.test
                    quinn.test fixed.test) }
use Tent::Netns qw(reexec_in_netns);
BEGIN { reexec_in_netns(hosts => \@NAMES) }

use Test::More;
use POSIX ();
use IO::Socket::INET;
use Tent::MAC ();
use JSON::PP;
use Tent::Peer;
use Tent::Client;
use Tent::Util qw(http_request wait_for);
use Tent::Hosting qw(provisioning_host operator_request client_of);

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $BASE = $ENV{TEST_NGINX_PORT} || 21200;
my $P = $BASE + 1;
my $root = Tent::Util::own_root('/tmp/sr-provision');
my ($host, $token, $tokfile) = provisioning_host(
    port => $P, root => $root, names => ['*.test'],
    http => <<'CONF', servers => <<'CONF', server => <<'CONF');
    tent_delivery_interval 200ms;
    tent_delivery_retry 1s 2s;
CONF
    server {
        listen 127.0.0.1:$PORT;
        server_name fixed.test;
        tent_entity http://fixed.test:$PORT;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
    }
CONF
        location = /status {
            tent_status;
        }
CONF

# a fixed entity on another server: the follower
my $bob = Tent::Peer->start(port => $P + 1, http_config => <<'CONF');
    tent_store $SERVROOT/store;
    tent_outbound_allow 127.0.0.0/8;
CONF

sub admin { operator_request(port => $P, token => $token, @_) }

sub is_json_error {
    my ($res, $status, $what) = @_;
    is($res->{status}, $status, "$what: $status")
        or diag "$res->{status} $res->{body}";
    ok(ref $res->{json} eq 'HASH' && defined $res->{json}{error},
       "$what: a JSON error") or diag $res->{body};
}

# ---- an entity never created: 404 everywhere, no Link, nothing written

my $ghost = client_of('ghost.test', $P);
for my $r (['GET', '/profile'], ['GET', '/posts'], ['GET', '/followers'],
           ['GET', '/apps'], ['GET', '/oauth/authorize?client_id=x'])
{
    is_json_error($ghost->request($r->[0] => $r->[1]), 404,
                  "not created: $r->[0] $r->[1]");
}
is_json_error($ghost->request(POST => '/apps', body => {
                  name => 'x', url => 'http://x.example',
                  redirect_uris => ['http://x.example/cb'],
                  scopes => {} }), 404, 'not created: POST /apps');
is_json_error($ghost->request(POST => '/posts', body => {
                  type => $STATUS, content => { text => 'x' } }), 404,
              'not created: POST /posts');
my $res = http_request(method => 'HEAD', path => '/', port => $P,
                       headers => { Host => "ghost.test:$P" });
ok(!defined $res->{headers}{link},
   'not created: no Link header to a profile that is not there');

# ---- the operator's location: its token, nothing else

is_json_error(admin(token => ''), 401, 'admin without a token');
is_json_error(admin(token => 'wrong-token-wrong-token'), 401,
              'admin with a wrong token');
is_json_error(admin(token => substr($token, 0, -1)), 401,
              'admin with the token less its last character');
$res = admin(token => '', headers => {
    Authorization => 'MAC id="u:abc", ts="1", nonce="x", mac="x"' });
is_json_error($res, 401, "admin with a tenant's MAC credential");
$res = admin(host => "alice.test:$P");
is($res->{status}, 404, 'the admin path on a tenant host name is no admin')
    or diag $res->{body};
is_json_error(admin(method => 'POST', body => ''), 400,
              'admin: an empty body');
is_json_error(admin(body => '{"action":'), 400, 'admin: malformed JSON');
is_json_error(admin(body => '[1,2]'), 400, 'admin: a JSON array');
is_json_error(admin(body => { action => 'create', entity => 5 }), 400,
              'admin: entity of the wrong type');
is_json_error(admin(body => { action => 'create',
                              entity => 'ftp://alice.test' }), 400,
              'admin: not an http(s) entity');
is_json_error(admin(body => { action => 'explode',
                              entity => "http://alice.test:$P" }), 400,
              'admin: an unknown action');
is_json_error(admin(body => { action => 'create',
                              entity => "http://alice.test:$P",
                              quotas => { posts => 'many' } }), 400,
              'admin: a quota of the wrong type');
is_json_error(admin(body => '{"action":"create","entity":"'
                            . ('a' x 20000) . '"}'), 413,
              'admin: an oversized body');
is_json_error(admin(body => { action => 'disable',
                              entity => "http://ghost.test:$P" }), 404,
              'admin: disabling an entity never created');

# ---- created: it works

$res = admin(body => { action => 'create', entity => "http://alice.test:$P" });
is($res->{status}, 201, 'alice created') or diag $res->{body};
is($res->{json}{state}, 'active', 'alice is active');
is(admin(body => { action => 'create',
                   entity => "http://alice.test:$P" })->{status}, 409,
   'creating alice again: 409');

my $alice = client_of('alice.test', $P);
is($alice->request(GET => '/profile')->{status}, 200, 'alice has a profile');
$res = http_request(method => 'HEAD', path => '/', port => $P,
                    headers => { Host => "alice.test:$P" });
like($res->{headers}{link} // '', qr{http://alice\.test:$P/tent/profile},
     'alice: the Link header');

$res = admin();
is($res->{status}, 200, 'the registry listed');
is_deeply([map { $_->{entity} } @{ $res->{json} || [] }],
          ["http://alice.test:$P"], 'the registry lists alice only');
is_deeply($res->{json}[0]{quotas}, {}, 'no quotas of her own');

# ---- bob follows alice; alice's post reaches bob (the delivery engine)

my (undef, $ao) = $alice->authorized_app('write_posts,read_posts,'
                                         . 'read_followers',
                                         post_types => 'all');
my $bc = $bob->client;
my (undef, $bo) = $bc->authorized_app('write_followings,read_followings,'
                                      . 'read_posts', post_types => 'all');
$res = $bc->request(POST => '/followings', cred => $bo,
                    body => { entity => "http://alice.test:$P" });
is($res->{status}, 200, 'bob follows alice') or diag $res->{body};

sub post { $_[0]->post($_[1], Tent::Client::status_body($_[2])) }

$res = post($alice, $ao, 'hello from a provisioned entity');
is($res->{status}, 200, 'alice posts') or diag $res->{body};
my $pid = $res->{json}{id} // '';
ok(wait_for(sub {
       my $r = $bc->request(GET => "/posts?entity="
                            . "http%3A%2F%2Falice.test%3A$P", cred => $bo);
       grep { $_->{id} eq $pid } @{ $r->{json} || [] } }, 20),
   "alice's post reached her follower bob over HTTP");

# ---- frank, on the same node, follows alice: same-node delivery, no HTTP

sub local_count {
    my $r = http_request(method => 'GET', path => '/status', port => $P);
    return (eval { decode_json($r->{body}) } || {})->{deliveries}{local} // 0;
}

$res = admin(body => { action => 'create', entity => "http://frank.test:$P" });
is($res->{status}, 201, 'frank created') or diag $res->{body};
my $frank = client_of('frank.test', $P);
my (undef, $fo) = $frank->authorized_app('write_followings,read_posts',
                                         post_types => 'all');
$res = $frank->request(POST => '/followings', cred => $fo,
                       body => { entity => "http://alice.test:$P" });
is($res->{status}, 200, 'frank follows alice') or diag $res->{body};
my $local0 = local_count();
$res = post($alice, $ao, 'to bob and frank');
my $pid2 = $res->{json}{id} // '';
ok(wait_for(sub {
       my $r = $frank->request(GET => "/posts?entity="
                               . "http%3A%2F%2Falice.test%3A$P", cred => $fo);
       grep { $_->{id} eq $pid2 } @{ $r->{json} || [] } }, 20),
   "alice's post reached frank on the same node");
cmp_ok(local_count(), '>', $local0,
       'written into his rows by same-node delivery (deliveries.local)');
ok(wait_for(sub {
       my $r = $bc->request(GET => "/posts?entity="
                            . "http%3A%2F%2Falice.test%3A$P", cred => $bo);
       grep { $_->{id} eq $pid2 } @{ $r->{json} || [] } }, 20),
   'and bob over HTTP');

# ---- frank disabled: same-node delivery writes nothing into him either
# (an attacker's view: a batch must not deliver what HTTP refuses, 410)

sub deliveries {
    my $r = http_request(method => 'GET', path => '/status', port => $P);
    return (eval { decode_json($r->{body}) } || {})->{deliveries} || {};
}

$res = admin(body => { action => 'disable',
                       entity => "http://frank.test:$P" });
is($res->{status}, 200, 'frank disabled') or diag $res->{body};
my $d0 = deliveries();
$res = post($alice, $ao, 'while frank is disabled');
my $pid3 = $res->{json}{id} // '';
ok(wait_for(sub {
       my $d = deliveries();
       ($d->{dead} // 0) > ($d0->{dead} // 0)
           || ($d->{local} // 0) > ($d0->{local} // 0) }, 20),
   "the job for disabled frank settled");
is(deliveries()->{local} // 0, $d0->{local} // 0,
   'no same-node delivery into a disabled entity');
$res = admin(body => { action => 'enable', entity => "http://frank.test:$P" });
is($res->{status}, 200, 'frank enabled') or diag $res->{body};
$res = $frank->request(GET => "/posts?entity=http%3A%2F%2Falice.test%3A$P",
                       cred => $fo);
is($res->{status}, 200, 'frank reads his copies') or diag $res->{body};
ok(!grep({ $_->{id} eq $pid3 } @{ $res->{json} || [] }),
   'the post sent while he was disabled was not written into his rows');

# ---- disabled: 410, the data kept; enabled: back

$res = admin(body => { action => 'disable',
                       entity => "http://alice.test:$P" });
is($res->{status}, 200, 'alice disabled') or diag $res->{body};
for my $try (1 .. 3) {    # every worker, whichever answers
    is_json_error($alice->request(GET => '/profile'), 410,
                  "disabled: GET /profile ($try)");
}
is_json_error($alice->request(GET => "/posts/$pid", cred => $ao), 410,
              'disabled: her post');
is_json_error(post($alice, $ao, 'while disabled'), 410,
              'disabled: POST /posts');
$res = admin(body => { action => 'enable', entity => "http://alice.test:$P" });
is($res->{status}, 200, 'alice enabled') or diag $res->{body};
$res = $alice->request(GET => "/posts/$pid", cred => $ao);
is($res->{status}, 200, 'enabled: her post is back') or diag $res->{body};

# ---- deleted: 404 and her rows gone

$res = admin(body => { action => 'create', entity => "http://carol.test:$P" });
is($res->{status}, 201, 'carol created') or diag $res->{body};
my $carol = client_of('carol.test', $P);
my (undef, $co) = $carol->authorized_app('write_posts', post_types => 'all');
is(post($carol, $co, "carol's")->{status}, 200, 'carol posts');

my $done;
for my $i (1 .. 20) {
    $res = admin(body => { action => 'delete',
                           entity => "http://carol.test:$P" });
    last unless $res->{status} == 200;
    if ($res->{json}{done}) { $done = 1; last }
}
ok($done, 'carol deleted, batch by batch') or diag $res->{body};
is_json_error($carol->request(GET => '/profile'), 404, 'deleted: 404');
$res = admin(body => { action => 'delete', entity => "http://carol.test:$P" });
is($res->{status}, 200, 'deleting her again sweeps what could be left');
ok($res->{json}{done}, 'and finds nothing') or diag $res->{body};
is_deeply([map { $_->{entity} } @{ admin()->{json} || [] }],
          ["http://alice.test:$P", "http://frank.test:$P"],
          'the registry lists alice and frank, no carol');

# ---- a fixed entity of the configuration (no registry row) is no
# leftover of a deleted one: the operator's delete does not sweep it

my $fixed = client_of('fixed.test', $P);
my (undef, $xo) = $fixed->authorized_app('write_posts,read_posts',
                                         post_types => 'all');
$res = post($fixed, $xo, 'a fixed entity posts');
is($res->{status}, 200, 'the fixed entity posts') or diag $res->{body};
my $xpid = $res->{json}{id} // '';
$res = admin(body => { action => 'delete', entity => "http://fixed.test:$P" });
is_json_error($res, 409, 'admin: deleting a fixed entity of the configuration');
$res = $fixed->request(GET => "/posts/$xpid", cred => $xo);
is($res->{status}, 200, "the fixed entity's post is still there")
    or diag $res->{body};

# ---- quotas: posts and apps; the create refused writes nothing

$res = admin(body => { action => 'create', entity => "http://erin.test:$P",
                       quotas => { posts => 2, apps => 2 } });
is($res->{status}, 201, 'erin created with quotas') or diag $res->{body};
is_deeply($res->{json}{quotas}, { posts => 2, apps => 2 }, 'her quotas');
my $erin = client_of('erin.test', $P);
my (undef, $eo) = $erin->authorized_app('write_posts,read_posts,write_apps',
                                        post_types => 'all');
is(post($erin, $eo, "erin $_")->{status}, 200, "erin's post $_") for 1 .. 2;
$res = post($erin, $eo, 'erin 3');
is_json_error($res, 403, 'the third post: over the quota');
is($res->{json}{error}, 'quota exceeded: posts', 'the error names the quota');
$res = $erin->request(GET => '/posts', cred => $eo);
is(scalar @{ $res->{json} || [] }, 2, 'the refused post was not written');
my $app = { name => 'a', url => 'http://a.example',
            redirect_uris => ['http://a.example/cb'], scopes => {} };
# her owner app, approved on the authorize page, is the first of 2
is($erin->request(POST => '/apps', cred => $eo, body => $app)->{status}, 200,
   "the owner's second app");
$res = $erin->request(POST => '/apps', cred => $eo, body => $app);
is_json_error($res, 403, "the owner's third app: over the quota");
is($res->{json}{error}, 'quota exceeded: apps', 'the error names it');
is($erin->request(POST => '/apps', body => $app)->{status}, 200,
   'an anonymous registration is not counted before it is authorized');
$res = admin(body => { action => 'quotas', entity => "http://erin.test:$P",
                       quotas => { posts => undef } });
is($res->{status}, 200, 'her quota of posts lifted') or diag $res->{body};
is(post($erin, $eo, 'erin 3')->{status}, 200, 'now the third post is taken');

# the posts quota against a tenant's own concurrent creates: were the
# count read and written back plus one, N creates at once would all pass
# and add 1, not N, and wave after wave the quota would never hold; each
# create takes its place by a compare-and-set of the count (quota.c)
$res = admin(body => { action => 'create', entity => "http://quinn.test:$P",
                       quotas => { posts => 3 } });
is($res->{status}, 201, 'quinn created with a quota of 3 posts')
    or diag $res->{body};
my $quinn = client_of('quinn.test', $P);
my (undef, $qo) = $quinn->authorized_app('write_posts,read_posts',
                                         post_types => 'all');
my $taken = 0;
for my $wave (1 .. 4) {
    my @kids;
    pipe my $go_r, my $go_w or die "pipe: $!";
    for my $i (1 .. 12) {
        my $pid = fork;
        die "fork: $!" unless defined $pid;
        if ($pid == 0) {
            close $go_w;
            sysread $go_r, my $x, 1;    # all go when the parent closes it
            my $r = post($quinn, $qo, "quinn $wave.$i");
            POSIX::_exit($r->{status} == 200 ? 0 : 1);
        }
        push @kids, $pid;
    }
    close $go_r;
    close $go_w;
    for (@kids) { waitpid $_, 0; $taken++ if $? == 0 }
}
note "$taken of 48 concurrent posts taken";
cmp_ok($taken, '<=', 3,
       "48 concurrent posts in 4 waves: at most the quota's 3 taken");

# two operator writes at once (a disable and a quotas change, say a
# billing job): each reads the row and writes it back whole; without a
# compare-and-set the later write silently undoes the other (the tenant
# stays active after a disable that answered 200)
my $lost = 0;
for my $try (1 .. 15) {
    admin(body => { action => 'enable', entity => "http://quinn.test:$P" });
    my %kid;
    pipe my $go_r, my $go_w or die "pipe: $!";
    for my $what ('disable', 'quotas') {
        my $pid = fork;
        die "fork: $!" unless defined $pid;
        if ($pid == 0) {
            close $go_w;
            sysread $go_r, my $x, 1;
            my $r = admin(body => { action => $what,
                                    entity => "http://quinn.test:$P",
                                    ($what eq 'quotas'
                                     ? (quotas => { posts => 100 + $try })
                                     : ()) });
            POSIX::_exit($r->{status} == 200 ? 0 : 1);
        }
        $kid{$what} = $pid;
    }
    close $go_r;
    close $go_w;
    my %ok;
    for (keys %kid) { waitpid $kid{$_}, 0; $ok{$_} = $? == 0 }
    my ($row) = grep { $_->{entity} eq "http://quinn.test:$P" }
                @{ admin()->{json} || [] };
    $lost++ if $ok{disable} && ($row->{state} // '') ne 'disabled';
    $lost++ if $ok{quotas} && ($row->{quotas}{posts} // 0) != 100 + $try;
}
is($lost, 0, 'concurrent operator writes: none answered 200 and lost');
admin(body => { action => 'enable', entity => "http://quinn.test:$P" });

# attachment bytes: what the posts and their new versions upload
my $PHOTO = 'https://tent.io/types/post/photo/v0.1.0';
my $MB = '-----------TentQuota';
sub mp {
    my ($post, $data) = @_;
    return "--$MB\r\nContent-Disposition: form-data; name=\"post\"; "
         . "filename=\"post.json\"\r\nContent-Type: "
         . "application/vnd.tent.v0+json\r\n\r\n" . encode_json($post)
         . "\r\n--$MB\r\nContent-Disposition: form-data; name=\"photos\"; "
         . "filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n$data\r\n"
         . "--$MB--\r\n";
}
sub send_mp {
    my ($method, $path, $post, $data) = @_;
    return $erin->request($method => $path, cred => $eo,
        headers => { 'Content-Type' => "multipart/form-data; boundary=$MB" },
        body => mp($post, $data));
}
$res = admin(body => { action => 'quotas', entity => "http://erin.test:$P",
                       quotas => { attachment_bytes => 1000 } });
is($res->{status}, 200, 'a quota of 1000 attachment bytes') or diag $res->{body};
$res = send_mp(POST => '/posts', { type => $PHOTO, content => {} },
               'x' x 600);
is($res->{status}, 200, 'a post with 600 bytes of photo') or diag $res->{body};
my $photo = $res->{json}{id} // '';
$res = send_mp(POST => '/posts', { type => $PHOTO, content => {} },
               'y' x 600);
is_json_error($res, 403, 'another 600 bytes: over the quota');
is($res->{json}{error}, 'quota exceeded: attachment_bytes', 'named');
$res = send_mp(PUT => "/posts/$photo", { content => { caption => 'v2' } },
               'z' x 600);
is_json_error($res, 403, 'a new version with 600 new bytes: over it too');
$res = $erin->request(GET => "/posts/$photo", cred => $eo);
is($res->{json}{version}, 1, 'the refused new version was not written');
$res = send_mp(PUT => "/posts/$photo", { content => { caption => 'v2' } },
               'w' x 300);
is($res->{status}, 200, 'a new version with 300 bytes fits')
    or diag $res->{body};

# ---- bin/tent-admin: create prints the first owner credential

# a credential file already there (another user's, planted where the
# operator writes): refused before anything is created
my $planted = "$root-planted.json";
{
    open my $fh, '>', $planted or die "$planted: $!";
    print {$fh} "planted\n";
    close $fh;
    chmod 0644, $planted;
}
my $pout = `bin/tent-admin --url http://127.0.0.1:$P/tent-admin --host localhost --token-file $tokfile --credential-file $planted create http://ghost.test:$P 2>&1`;
isnt($?, 0, 'tent-admin create into a file already there: refused')
    or diag $pout;
is(do { local $/; open my $fh, '<', $planted or die; <$fh> }, "planted\n",
   'the planted file did not get the owner credential');
ok(!grep({ $_->{entity} eq "http://ghost.test:$P" } @{ admin()->{json} || [] }),
   'and no entity was created');
unlink $planted;

my $credfile = "$root-dave.json";
unlink $credfile;
my $out = `bin/tent-admin --url http://127.0.0.1:$P/tent-admin --host localhost --token-file $tokfile --credential-file $credfile create http://dave.test:$P 2>&1`;
is($?, 0, 'tent-admin create dave') or diag $out;
is((stat $credfile)[2] & 07777, 0600, 'the credential file is mode 0600');
my $dcred = eval { local $/; open my $fh, '<', $credfile or die;
                   decode_json(<$fh>) } || {};
like($dcred->{mac_key_id} // '', qr/^u:/, 'an authorization key id');
my $dave = client_of('dave.test', $P);
$res = post($dave, $dcred, 'the first post of dave');
is($res->{status}, 200, "dave posts with tent-admin's owner credential")
    or diag $res->{body};
$res = $dave->request(GET => '/apps', cred => $dcred);
is($res->{status}, 200, 'the credential reads the apps: every scope')
    or diag $res->{body};
$out = `bin/tent-admin --url http://127.0.0.1:$P/tent-admin --host localhost --token-file $tokfile list`;
is(scalar(() = $out =~ /"entity"/g), 5,
   'tent-admin list: alice, erin, frank, quinn, dave')
    or diag $out;
$out = `bin/tent-admin --url http://127.0.0.1:$P/tent-admin --host localhost --token-file $tokfile disable http://dave.test:$P`;
is($?, 0, 'tent-admin disable');
is($dave->request(GET => '/profile')->{status}, 410, 'dave: 410');
$out = `bin/tent-admin --url http://127.0.0.1:$P/tent-admin --host localhost --token-file $tokfile delete http://dave.test:$P 2>&1`;
is($?, 0, 'tent-admin delete') or diag $out;
is($dave->request(GET => '/profile')->{status}, 404, 'dave: 404');
$out = `bin/tent-admin --url http://127.0.0.1:$P/tent-admin --host localhost --token-file /dev/null list 2>&1`;
isnt($?, 0, 'tent-admin without a token fails');
unlink $credfile;

# ---- a create and a delete of the same name at once: a delete that
# found no row sweeps leftovers, and must not then remove the row of an
# entity created meanwhile (answered 201, then gone)

my $vanished = 0;
for my $try (1 .. 15) {
    my $e = "http://race$try.test:$P";
    my %kid;
    pipe my $go_r, my $go_w or die "pipe: $!";
    for my $what ('create', 'delete') {
        my $pid = fork;
        die "fork: $!" unless defined $pid;
        if ($pid == 0) {
            close $go_w;
            sysread $go_r, my $x, 1;
            my $r = admin(body => { action => $what, entity => $e });
            POSIX::_exit($r->{status} == ($what eq 'create' ? 201 : 200)
                         ? 0 : 1);
        }
        $kid{$what} = $pid;
    }
    close $go_r;
    close $go_w;
    my %ok;
    for (keys %kid) { waitpid $kid{$_}, 0; $ok{$_} = $? == 0 }
    $vanished++ if $ok{create}
        && !grep { $_->{entity} eq $e } @{ admin()->{json} || [] };
    for (1 .. 5) {
        last if admin(body => { action => 'delete', entity => $e })
                ->{json}{done};
    }
}
is($vanished, 0, 'no entity created (201) was removed by a delete that '
                 . 'found no row');

# ---- a request that passed the registry check before a delete writes
# after the sweep (the store owner fences every write of a request to
# the entity's incarnation it looked up; t/hosting/050-fence.t has more): a tenant being deleted keeps a POST open (its body sent
# slowly), the operator deletes it to the end, the body completes and the
# post lands in the rows of a deleted name; whoever gets the name next
# finds it as their own (planted data; an authorization the same way
# would be a credential for the next tenant)

$res = admin(body => { action => 'create', entity => "http://sly.test:$P" });
is($res->{status}, 201, 'sly created') or diag $res->{body};
my $sly = client_of('sly.test', $P);
my (undef, $so) = $sly->authorized_app('write_posts,read_posts',
                                       post_types => 'all');
my $planted_body = encode_json({ type => $STATUS,
                                 content => { text => 'planted by sly' },
                                 permissions => { public => JSON::PP::true } });
my %mac = Tent::MAC::signed_headers(cred => $so, method => 'POST',
                                    uri => '/tent/posts', host => 'sly.test',
                                    port => $P,
                                    nonce => Tent::MAC::random_nonce(8));
my $sock = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$P")
    or die "connect: $!";
my $half = int(length($planted_body) / 2);
print {$sock} "POST /tent/posts HTTP/1.1\r\nHost: sly.test:$P\r\n"
    . "Authorization: $mac{Authorization}\r\n"
    . "Content-Type: application/vnd.tent.v0+json\r\n"
    . "Content-Length: " . length($planted_body) . "\r\n"
    . "Connection: close\r\n\r\n" . substr($planted_body, 0, $half);
select undef, undef, undef, 1;    # the headers checked, the body awaited
my $sly_done;
for (1 .. 20) {
    $res = admin(body => { action => 'delete', entity => "http://sly.test:$P" });
    if ($res->{json}{done}) { $sly_done = 1; last }
}
ok($sly_done, 'sly deleted to the end while the POST waits');
print {$sock} substr($planted_body, $half);
my $late = do { local $/; <$sock> } // '';
close $sock;
$res = admin(body => { action => 'create', entity => "http://sly.test:$P" });
is($res->{status}, 201, 'the name sly given to a new tenant') or diag $res->{body};
my (undef, $so2) = $sly->authorized_app('read_posts', post_types => 'all');
$res = $sly->request(GET => '/posts', cred => $so2);
like((split /\r\n/, $late)[0] // '', qr/ 404 /,
     "the late POST: 404, the store's registry fence refused its write");
like($late, qr/"error":"No such entity on this server"/,
     'the late POST: the JSON error says why');
ok(!grep({ ($_->{content}{text} // '') eq 'planted by sly' }
         @{ $res->{json} || [] }),
   "the new tenant finds no post of the deleted one's")
    or diag "the late POST: " . (split /\r\n/, $late)[0];
for (1 .. 5) {
    last if admin(body => { action => 'delete',
                            entity => "http://sly.test:$P" })->{json}{done};
}

# ---- the store: nothing of ghost, nothing of carol

{
    $host->stop;
    my @rows = Tent::Util::ldb_rows("${\ $host->servroot}/store/db");
    my $hex = sub { unpack 'H*', $_[0] };
    my ($g, $c, $a) = map { my $h = $hex->("http://$_.test:$P\0");
                            scalar grep { /^\Q$h\E/ } @rows }
                      qw(ghost carol alice);
    my $d = do { my $h = $hex->("http://dave.test:$P\0");
                 scalar grep { /^\Q$h\E/ } @rows };
    is($d, 0, 'no row of dave, deleted by tent-admin');
    is($g, 0, 'no row of the entity never created');
    is($c, 0, 'no row of the deleted entity');
    ok($a > 0, "alice's rows are there ($a)");
}

unlike($host->error_log_text, qr/\[alert\]|exited on signal|runtime error/,
       'no alert, no crash');

$bob->stop;
$host->stop;
unlink $tokfile;

done_testing();
