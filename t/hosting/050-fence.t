# The registry fence (issue 16; docs/store.md "The registry fence",
# docs/admin.md): the store owner executes every write, and checks with
# it that the entity a request looked up is still active, at the same
# incarnation.  An attacker is a tenant or an anonymous client holding a
# request open (its body sent in pieces) across an operator's disable,
# or delete and re-create of the name for somebody else: nothing of it
# may land, and it gets a clear JSON error.  An operator's write on
# another entity must not fail an upload in flight.  Uploads at once
# must not pass a quota of attachment bytes together.

use strict;
use warnings;

my @NAMES;
BEGIN { @NAMES = qw(amy.test ben.test cid.test dot.test eve.test fay.test) }
use Tent::Netns qw(reexec_in_netns);
BEGIN { reexec_in_netns(hosts => \@NAMES) }

use Test::More;
use IO::Socket::INET;
use Tent::MAC ();
use JSON::PP;
use Tent::Peer;
use Tent::Client;
use Tent::Receiver;
use Tent::Util qw(http_request wait_for);
use Tent::Hosting qw(provisioning_host operator_request delete_all client_of
                     slow_finish);

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $PHOTO = 'https://tent.io/types/post/photo/v0.1.0';
my $BASE = $ENV{TEST_NGINX_PORT} || 21300;
my $P = $BASE + 1;
my $root = Tent::Util::own_root('/tmp/sr-fence');
my ($host, $token, $tokfile) = provisioning_host(
    port => $P, root => $root, names => ['*.test'],
    http => <<'CONF');
    tent_delivery_interval 200ms;
CONF

sub admin {
    operator_request(port => $P, token => $token, body => $_[0]);
}


# a request sent but its last bytes: the registry looked up, the body
# awaited (Tent::Hosting)
sub slow_open { Tent::Hosting::slow_open(port => $P, @_) }

sub is_json_error {
    my ($res, $status, $error, $what) = @_;
    is($res->{status}, $status, "$what: $status") or diag $res->{body};
    is(ref $res->{json} eq 'HASH' ? $res->{json}{error} : undef, $error,
       "$what: the JSON error says why");
}

sub status_body {
    my ($text) = @_;
    return encode_json({ type => $STATUS, content => { text => $text },
                         permissions => { public => JSON::PP::true } });
}

my $MB = '-----------TentFence';
sub mp {
    my ($data) = @_;
    return "--$MB\r\nContent-Disposition: form-data; name=\"post\"; "
         . "filename=\"post.json\"\r\nContent-Type: "
         . "application/vnd.tent.v0+json\r\n\r\n"
         . encode_json({ type => $PHOTO, content => {} })
         . "\r\n--$MB\r\nContent-Disposition: form-data; name=\"photos\"; "
         . "filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n$data\r\n"
         . "--$MB--\r\n";
}

sub mine {
    my ($c, $cred, $text) = @_;
    my $r = $c->request(GET => '/posts?limit=200', cred => $cred);
    return grep { ($_->{content}{text} // '') eq $text } @{ $r->{json} || [] };
}

for my $e (qw(amy ben cid dot)) {
    is(admin({ action => 'create', entity => "http://$e.test:$P" })
       ->{status}, 201, "$e created");
}

# ---- a POST held open across a disable: 410, nothing written

my $amy = client_of('amy.test', $P);
my (undef, $ao) = $amy->authorized_app('write_posts,read_posts',
                                       post_types => 'all');
my $s = slow_open(method => 'POST', path => '/posts', host => 'amy.test',
                  cred => $ao, type => 'application/vnd.tent.v0+json',
                  body => status_body('across a disable'));
select undef, undef, undef, 0.5;
is(admin({ action => 'disable', entity => "http://amy.test:$P" })->{status},
   200, 'amy disabled while her POST waits for its last byte');
is_json_error(slow_finish($s), 410, 'This entity is disabled',
              'the POST held across the disable');
is(admin({ action => 'enable', entity => "http://amy.test:$P" })->{status},
   200, 'amy enabled');
is(scalar mine($amy, $ao, 'across a disable'), 0,
   'the POST held across the disable wrote no post');

# ---- across a delete and a re-create: the new tenant finds nothing

# an anonymous app registration (writes an app, its credential, a slot)
my $reg = encode_json({ name => 'planted', url => 'http://planted.example',
                        redirect_uris => ['http://planted.example/cb'],
                        scopes => {} });
my $ben = client_of('ben.test', $P);
my (undef, $bo) = $ben->authorized_app('write_posts,read_posts',
                                       post_types => 'all');
my $sa = slow_open(method => 'POST', path => '/apps', host => 'ben.test',
                   type => 'application/vnd.tent.v0+json', body => $reg);
my $sp = slow_open(method => 'POST', path => '/posts', host => 'ben.test',
                   cred => $bo, type => 'application/vnd.tent.v0+json',
                   body => status_body('planted in a re-created name'));
select undef, undef, undef, 0.5;
ok(delete_all($P, $token, "http://ben.test:$P"),
   'ben deleted while two requests wait');
is(admin({ action => 'create', entity => "http://ben.test:$P" })->{status},
   201, 'the name ben made anew for somebody else');
is_json_error(slow_finish($sa), 404, 'No such entity on this server',
              'the anonymous app registration held across it');
is_json_error(slow_finish($sp), 404, 'No such entity on this server',
              "the old tenant's POST held across it");
my (undef, $bo2) = $ben->authorized_app('read_posts,read_apps',
                                        post_types => 'all');
is(scalar mine($ben, $bo2, 'planted in a re-created name'), 0,
   'the new tenant finds no post of the old one');
my $apps = $ben->request(GET => '/apps', cred => $bo2);
is($apps->{status}, 200, 'the new tenant lists its apps')
    or diag $apps->{body};
ok(!grep({ ($_->{name} // '') eq 'planted' } @{ $apps->{json} || [] }),
   'and no app registered by the held request');

# ---- an operator's writes on other entities: an upload in flight goes on

my $cid = client_of('cid.test', $P);
my (undef, $co) = $cid->authorized_app('write_posts,read_posts',
                                       post_types => 'all');
my $su = slow_open(method => 'POST', path => '/posts', host => 'cid.test',
                   cred => $co, type => "multipart/form-data; boundary=$MB",
                   body => mp('c' x 2000));
select undef, undef, undef, 0.5;
is(admin({ action => 'quotas', entity => "http://dot.test:$P",
           quotas => { posts => 50 } })->{status}, 200,
   "dot's quotas changed while cid uploads");
is(admin({ action => 'disable', entity => "http://dot.test:$P" })->{status},
   200, 'dot disabled while cid uploads');
ok(delete_all($P, $token, "http://dot.test:$P"),
   'dot deleted while cid uploads');
my $up = slow_finish($su);
is($up->{status}, 200, "cid's upload: 200, whatever the operator did to "
                       . "others") or diag $up->{body};
ok(($up->{json}{attachments} // [])->[0], 'and it has its attachment');

# ---- a reload: the new store owner reads the registry anew; its fence
# must know every entity (else every tenant's write would be refused)

ok($host->reload, 'reloaded: a new store owner');
ok(wait_for(sub { $host->error_log_text
                  =~ /tent store: \d+ entities of the registry fenced/ },
            10), 'the new owner read the registry');
my $after = $amy->request(POST => '/posts', cred => $ao,
                          body => decode_json(status_body('reloaded')));
is($after->{status}, 200, 'amy posts after the reload') or diag $after->{body};
$s = slow_open(method => 'POST', path => '/posts', host => 'amy.test',
               cred => $ao, type => 'application/vnd.tent.v0+json',
               body => status_body('across a disable, reloaded'));
select undef, undef, undef, 0.5;
is(admin({ action => 'disable', entity => "http://amy.test:$P" })->{status},
   200, 'amy disabled again');
is_json_error(slow_finish($s), 410, 'This entity is disabled',
              'after the reload too, the POST held across the disable');
is(admin({ action => 'enable', entity => "http://amy.test:$P" })->{status},
   200, 'amy enabled again');

# ---- uploads at once against a quota of attachment bytes: each read the
# count before its body; without a compare-and-set they all pass

is(admin({ action => 'create', entity => "http://eve.test:$P",
           quotas => { attachment_bytes => 1000 } })->{status}, 201,
   'eve created with a quota of 1000 attachment bytes');
my $eve = client_of('eve.test', $P);
my (undef, $eo) = $eve->authorized_app('write_posts,read_posts',
                                       post_types => 'all');
my @held = map {
    slow_open(method => 'POST', path => '/posts', host => 'eve.test',
              cred => $eo, type => "multipart/form-data; boundary=$MB",
              body => mp(chr(ord('a') + $_) x 300))
} 0 .. 9;
select undef, undef, undef, 0.5;    # every count read, every body awaited
{
    my $sock;
    for my $h (@held) { $sock = $h->{sock}; print {$sock} $h->{rest};
                        $sock->flush }
    $_->{rest} = '' for @held;
}
my @up = map { slow_finish($_) } @held;
my $ok = grep { $_->{status} == 200 } @up;
my $over = grep { $_->{status} == 403 } @up;
note "$ok of 10 uploads of 300 bytes taken, $over refused";
cmp_ok($ok, '<=', 3, '10 uploads of 300 bytes at once: at most 3 taken '
                     . 'under a quota of 1000');
is($ok + $over, 10, 'the others: 403') or diag join ' ', map {
    "$_->{status} $_->{body}" } @up;
my $photos = $eve->request(GET => "/posts?types=" . uri($PHOTO),
                           cred => $eo);
is(scalar @{ $photos->{json} || [] }, $ok, 'as many photos stored');

sub uri {
    my ($s) = @_;
    $s =~ s/([^A-Za-z0-9\-._~])/sprintf '%%%02X', ord $1/ge;
    return $s;
}

# bytes taken by a create refused after it (a credential that may not
# write photos) are given back: the quota is not used up by refusals
my (undef, $eso) = $eve->authorized_app('write_posts', post_types => $STATUS);
my $left = 1000 - 300 * $ok;
my $refused = $eve->request(POST => '/posts', cred => $eso,
    headers => { 'Content-Type' => "multipart/form-data; boundary=$MB" },
    body => mp('r' x $left));
is($refused->{status}, 403, 'a photo with a credential for statuses only: '
                            . '403') or diag $refused->{body};
ok(wait_for(sub {
       my $r = $eve->request(POST => '/posts', cred => $eo,
           headers => { 'Content-Type' =>
                            "multipart/form-data; boundary=$MB" },
           body => mp('f' x $left));
       $r->{status} == 200 }, 10),
   'its bytes given back: the rest of the quota still takes a photo');

# ---- the delivery engine settles a delivery of an entity deleted while
# it was sent: the settlement's rows (its status, its index) must not
# land in the swept name, for whoever gets it next

my $rx = Tent::Receiver->start;
$rx->rules([{ method => 'POST', path => 'notifications',
              action => { do => 'default', delay => 3 } }]);
is(admin({ action => 'create', entity => "http://fay.test:$P" })->{status},
   201, 'fay created');
my $fay = client_of('fay.test', $P);
my (undef, $fo) = $fay->authorized_app('write_posts', post_types => 'all');
my $fr = $fay->request(POST => '/followers',
                       body => { entity => $rx->url, types => ['all'],
                                 notification_path => 'notifications/n' });
is($fr->{status}, 200, 'a remote follows fay') or diag $fr->{body};
my $fp = $fay->request(POST => '/posts', cred => $fo,
                       body => decode_json(status_body('to the remote')));
is($fp->{status}, 200, 'fay posts') or diag $fp->{body};
ok(wait_for(sub { scalar $rx->requests(method => 'POST',
                                       path => qr{notifications}) }, 20),
   'the engine sends it; the remote holds its answer');
ok(delete_all($P, $token, "http://fay.test:$P"),
   'fay deleted while it is sent');
sleep 5;    # the remote answers after 3 s; the engine settles

# ---- the count as stored

{
    $host->stop;
    my @rows = Tent::Util::ldb_rows("${\ $host->servroot}/store/db");
    my $q = unpack 'H*', "http://eve.test:$P\0Qattachment_bytes";
    my ($row) = grep { /^\Q$q\E\t/ } @rows;
    my ($n) = ($row // '') =~ /\s(\S+)\s*$/;
    $n = pack('H*', $n // '') if defined $n && $n =~ /^[0-9a-f]+$/;
    cmp_ok($n // 0, '<=', 1000, "eve's count of bytes: within the quota")
        or diag $row;
    my $f = unpack 'H*', "http://fay.test:$P\0";
    my @frows = grep { /^\Q$f\E/ } @rows;
    is(scalar @frows, 0, 'no row of deleted fay: the settlement did not '
                         . 'land') or diag join '', map {
        my ($k) = split /\t/; pack('H*', $k) =~ s/[^ -~]/./gr . "\n" } @frows;
    my $b = unpack 'H*', "http://ben.test:$P\0";
    my $bt = unpack 'H*', "http://ben.test:$P\0t";
    ok(!grep({ /^\Q$bt\E/ && /\Q${\ unpack 'H*', 'planted'}\E/ } @rows),
       'no planted post of the old ben in the store');
}

unlike($host->error_log_text, qr/\[alert\]|exited on signal|runtime error/,
       'no alert, no crash');

$host->stop;
unlink $tokfile;

done_testing();
