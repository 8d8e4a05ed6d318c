# Quotas that count every way in (issue 26, docs/admin.md#quotas).  A
# tenant with {"posts":3,"apps":2} tries each way a row of its own gets
# written: PUT /profile (its profile post), PUT /posts/:id (a version),
# an import (its posts, its profile_versions), a move, an app registered unsigned then approved on the authorize
# page or authorized by an owner's app, a signed registration, and
# uploads at once racing for the last attachment bytes.  Each stops at
# the quota with 403 {"error":"quota exceeded: ..."}, and the store holds
# no more than the quota.

use strict;
use warnings;

my @NAMES;
BEGIN { @NAMES = qw(ann.test bea.test cat.test dan.test eli.test fay.test
                       gus.test ivy.test jon.test) }
use Tent::Netns qw(reexec_in_netns);
BEGIN { reexec_in_netns(hosts => \@NAMES) }

use Test::More;
use JSON::PP;
use POSIX ();
use Digest::SHA qw(sha256_hex);
use MIME::Base64 qw(encode_base64);
use Tent::Peer;
use Tent::Client;
use Tent::Util qw(http_request);
use Tent::Hosting qw(provisioning_host operator_request client_of slow_open
                     slow_finish);

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $PHOTO = 'https://tent.io/types/post/photo/v0.1.0';
my $BASIC = 'https://tent.io/types/info/basic/v0.1.0';
my $BASE = $ENV{TEST_NGINX_PORT} || 22600;
my $P = $BASE + 1;
my $root = Tent::Util::own_root('/tmp/sr-quotas');
my ($host, $token, $tokfile) = provisioning_host(
    port => $P, root => $root, names => ['*.test'],
    http => <<'CONF');
    tent_delivery_interval 200ms;
    tent_apps_unconfirmed 4;
CONF

sub admin {
    operator_request(port => $P, token => $token, body => $_[0]);
}

sub is_quota {
    my ($res, $what, $name) = @_;
    is($res->{status}, 403, "$name: 403") or diag $res->{body};
    is(ref $res->{json} eq 'HASH' ? $res->{json}{error} : undef,
       "quota exceeded: $what", "$name: the error names the quota");
}

sub status_post {
    my ($c, $cred, $text) = @_;
    return $c->request(POST => '/posts', cred => $cred,
                       body => { type => $STATUS, content => { text => $text },
                                 permissions => { public => JSON::PP::true } });
}

sub profile_put {
    my ($c, $cred, $name) = @_;
    return $c->request(PUT => '/profile/' . Tent::Client::uri_escape($BASIC),
                       cred => $cred,
                       body => { name => $name,
                                 permissions => { public => JSON::PP::true } });
}

# N children run CODE at the same instant (a pipe closed releases them):
# how many answered 200, and every status seen
sub at_once {
    my ($n, $code) = @_;
    pipe my $go_r, my $go_w or die "pipe: $!";
    my @kids;
    for my $i (1 .. $n) {
        pipe my $r, my $w or die "pipe: $!";
        my $pid = fork;
        die "fork: $!" unless defined $pid;
        if ($pid == 0) {
            close $go_w;
            close $r;
            sysread $go_r, my $x, 1;
            my $res = $code->($i);
            print {$w} "$res->{status}\n";
            close $w;
            POSIX::_exit(0);
        }
        close $w;
        push @kids, [$pid, $r];
    }
    close $go_r;
    close $go_w;
    my @status;
    for (@kids) {
        my ($pid, $r) = @$_;
        my $s = <$r> // "0\n";
        chomp $s;
        push @status, $s;
        waitpid $pid, 0;
    }
    return (scalar(grep { $_ == 200 } @status), @status);
}

my $all = 'write_posts,read_posts,write_profile,read_profile,write_apps,'
          . 'read_apps,write_secrets,write_followers,write_followings,'
          . 'write_groups,import_posts';

# ---- posts: every own post version, whatever writes it

is(admin({ action => 'create', entity => "http://ann.test:$P",
           quotas => { posts => 3, apps => 2 } })->{status}, 201,
   'ann created with {"posts":3,"apps":2}');
my $ann = client_of('ann.test', $P);
my (undef, $ao) = $ann->authorized_app($all, post_types => 'all',
                                       info_types => 'all');
ok(ref $ao eq 'HASH', "ann's owner app, approved on the page");

my $res = status_post($ann, $ao, 'first');
is($res->{status}, 200, 'a post: 1 of 3') or diag $res->{body};
my $pid = $res->{json}{id} // 'none';
$res = $ann->request(PUT => "/posts/$pid", cred => $ao,
                     body => { content => { text => 'first, v2' } });
is($res->{status}, 200, 'its version 2: 2 of 3') or diag $res->{body};
$res = profile_put($ann, $ao, 'Ann');
is($res->{status}, 200, 'PUT /profile (a profile post): 3 of 3')
    or diag $res->{body};
is_quota(profile_put($ann, $ao, 'Ann again'), 'posts',
         'PUT /profile at the quota');
is_quota($ann->request(PUT => "/posts/$pid", cred => $ao,
                       body => { content => { text => 'first, v3' } }),
         'posts', 'PUT /posts/:id (a version) at the quota');
is_quota($ann->request(PUT => "/posts/$pid", cred => $ao,
                       body => { version => 1 }),
         'posts', 'PUT /posts/:id bringing back version 1 at the quota');
is_quota(status_post($ann, $ao, 'second'), 'posts', 'POST /posts at it');
is_quota($ann->request(POST => '/followings', cred => $ao,
                       body => { entity => "http://bea.test:$P" }),
         'posts', 'POST /followings (a following post) at it');
$res = $ann->request(GET => '/profile/' . Tent::Client::uri_escape($BASIC),
                     cred => $ao);
ok($res->{status} == 200 && $res->{body} =~ /"Ann"/
   && $res->{body} !~ /Ann again/,
   'the refused PUT /profile changed nothing') or diag $res->{body};

# ---- apps: however they got authorized

my $app2 = $ann->register_app(name => 'two');
$res = $ann->authorize($app2, scope => 'read_posts');
is($res->{status}, 302, 'an unsigned app approved on the page: 2 of 2')
    or diag $res->{body};
my $app3 = $ann->register_app(name => 'three');
ok($app3->{id}, 'an unsigned registration is taken (unconfirmed)');
is_quota($ann->authorize($app3, scope => 'read_posts'), 'apps',
         'approving it on the authorize page at the quota');
is_quota($ann->request(POST => "/apps/$app3->{id}/authorizations",
                       cred => $ao, body => { scopes => ['read_posts'] }),
         'apps', "an owner's app authorizing it at the quota");
is_quota($ann->request(POST => '/apps', cred => $ao,
                       body => { name => 'signed', url => 'http://s.example',
                                 redirect_uris => ['http://s.example/cb'],
                                 scopes => {} }),
         'apps', 'a signed registration at the quota');
$res = $ann->request(GET => "/apps/$app3->{id}", cred => $ao);
ok(!($res->{json}{authorized} // 0)
   && !@{ $res->{json}{authorizations} || [] },
   'the refused approval wrote no authorization') or diag $res->{body};

# ---- approvals on the authorize page at once, for the last app's place

is(admin({ action => 'create', entity => "http://ivy.test:$P",
           quotas => { apps => 2 } })->{status}, 201,
   'ivy created with a quota of 2 apps');
my $ivy = client_of('ivy.test', $P);
$ivy->authorized_app('read_posts');
my @waiting = map { $ivy->register_app(name => "waiting $_") } 1 .. 4;
my ($aok, @ast) = at_once(4, sub {
    my $r = $ivy->authorize($waiting[$_[0] - 1], scope => 'read_posts');
    return { status => $r->{status} == 302 ? 200 : $r->{status} };
});
note "ivy: $aok of 4 approvals taken (@ast)";
is($aok, 1, '4 approvals at once, 1 place left: one taken');
is(scalar(grep { $_ == 403 } @ast), 3, 'the others: 403');

# ---- concurrent PUT /profile against the last place of posts

is(admin({ action => 'create', entity => "http://bea.test:$P",
           quotas => { posts => 2 } })->{status}, 201,
   'bea created with a quota of 2 posts');
my $bea = client_of('bea.test', $P);
my (undef, $bo) = $bea->authorized_app($all, post_types => 'all',
                                       info_types => 'all');
my ($ok, @st) = at_once(12, sub {
    my ($i) = @_;
    return $_[0] % 2 ? profile_put($bea, $bo, "Bea $i")
                     : status_post($bea, $bo, "bea $i");
});
note "bea: $ok of 12 taken (@st)";
cmp_ok($ok, '<=', 2, '12 PUT /profile and POST /posts at once: at most 2');
is(scalar(grep { $_ != 200 && $_ != 403 && $_ != 409 } @st), 0,
   'the others: 403 (or 409, the section changed meanwhile)');

# ---- attachment bytes: uploads held open, each fitting alone, not
# together; finished at once: one takes the bytes, the others 403

is(admin({ action => 'create', entity => "http://cat.test:$P",
           quotas => { attachment_bytes => 1000 } })->{status}, 201,
   'cat created with a quota of 1000 attachment bytes');
my $cat = client_of('cat.test', $P);
my (undef, $co) = $cat->authorized_app($all, post_types => 'all');
my $MB = '-----------TentQuotas';
sub mp {
    my ($post, $data) = @_;
    return "--$MB\r\nContent-Disposition: form-data; name=\"post\"; "
         . "filename=\"post.json\"\r\nContent-Type: "
         . "application/vnd.tent.v0+json\r\n\r\n" . encode_json($post)
         . "\r\n--$MB\r\nContent-Disposition: form-data; name=\"photos\"; "
         . "filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n$data\r\n"
         . "--$MB--\r\n";
}
$res = $cat->request(POST => '/posts', cred => $co,
    headers => { 'Content-Type' => "multipart/form-data; boundary=$MB" },
    body => mp({ type => $PHOTO, content => {} }, 'p' x 200));
is($res->{status}, 200, 'a photo of 200 bytes') or diag $res->{body};
my $photo = $res->{json}{id} // 'none';
my @held = map {
    slow_open(port => $P, host => 'cat.test', cred => $co,
              type => "multipart/form-data; boundary=$MB",
              ($_ % 2 ? (method => 'POST', path => '/posts',
                         body => mp({ type => $PHOTO, content => {} },
                                    chr(ord('a') + $_) x 500))
                      : (method => 'PUT', path => "/posts/$photo",
                         body => mp({ content => { v => $_ } },
                                    chr(ord('a') + $_) x 500))))
} 1 .. 6;
select undef, undef, undef, 0.5;    # every count read, every body awaited
for my $h (@held) {
    my $sock = $h->{sock};
    print {$sock} $h->{rest};
    $sock->flush;
    $h->{rest} = '';
}
my @up = map { slow_finish($_) } @held;
$ok = grep { $_->{status} == 200 } @up;
my @over = grep { $_->{status} == 403
                  && ($_->{json}{error} // '')
                     eq 'quota exceeded: attachment_bytes' } @up;
is($ok, 1, '6 uploads of 500 bytes at once, 800 left: exactly one taken')
    or diag join ' ', map { $_->{status} } @up;
is(scalar @over, 5, 'the other five: 403 quota exceeded: attachment_bytes')
    or diag join ' ', map { "$_->{status} $_->{body}" } @up;

# ---- imports: their post versions and attachment bytes count; over a
# quota the posts' section is not written, the report names the quota

is(admin({ action => 'create', entity => "http://dan.test:$P",
           quotas => { posts => 3, attachment_bytes => 1000 } })->{status},
   201, 'dan created with {"posts":3,"attachment_bytes":1000}');
my $dan = client_of('dan.test', $P);
my (undef, $do) = $dan->authorized_app($all, post_types => 'all',
                                       info_types => 'all');
is(status_post($dan, $do, 'own')->{status}, 200, "dan's post: 1 of 3");
my $FROM = 'http://old-dan.test';
my $n = 0;
sub doc_post {
    my (%o) = @_;
    my $id = sprintf 'imported%05d', ++$n;
    my @v = map {
        { id => $id, entity => $FROM, type => $o{type} // $STATUS,
          version => $_, content => $o{content} // { text => "$id v$_" },
          permissions => { public => JSON::PP::true },
          published_at => 1700000000 + $n, received_at => 1700000000 + $n,
          updated_at => 1700000000 + $n + $_,
          ($o{data} ? (attachments => [{
              category => 'photos', type => 'image/png', name => 'a.png',
              size => length $o{data}, digest => sha256_hex($o{data}),
              data => encode_base64($o{data}, '') }]) : ()) }
    } 1 .. ($o{versions} // 1);
    return { id => $id, versions => \@v };
}
sub import_doc {
    my (@posts) = @_;
    return $dan->request(POST => '/import?merge=1', cred => $do,
                         body => { version => 0, entity => $FROM,
                                   complete => JSON::PP::true,
                                   groups => [{ id => "g$n", name => 'g',
                                                created_at => 1700000000,
                                                updated_at => 1700000000 }],
                                   posts => \@posts });
}
$res = import_doc(doc_post(versions => 2), doc_post());
is($res->{status}, 200, 'an import of 3 post versions, 2 places left: 200')
    or diag $res->{body};
is($res->{json}{posts}{error} // '', 'quota exceeded: posts',
   'its report: the posts not written, the quota named')
    or diag $res->{body};
ok(!$res->{json}{posts}{written}, 'posts: written false');
ok($res->{json}{groups}{written}, 'the other sections written');
$res = import_doc(doc_post(), doc_post());
ok($res->{status} == 200 && $res->{json}{posts}{written}
   && ($res->{json}{posts}{taken} // 0) == 2,
   'an import of 2 posts: written, 3 of 3') or diag $res->{body};
is_quota(status_post($dan, $do, 'after the import'), 'posts',
         'POST /posts after it: the import counted');
is(admin({ action => 'quotas', entity => "http://dan.test:$P",
           quotas => { posts => 100 } })->{status}, 200,
   "dan's quota of posts raised to 100");
$res = import_doc(doc_post(type => $PHOTO, content => {},
                           data => 'q' x 1200));
is($res->{json}{posts}{error} // '', 'quota exceeded: attachment_bytes',
   'an import of 1200 bytes of photo under 1000: posts not written')
    or diag $res->{body};
$res = import_doc(doc_post(type => $PHOTO, content => {},
                           data => 'r' x 600));
ok($res->{status} == 200 && $res->{json}{posts}{written},
   'an import of 600 bytes of photo: written') or diag $res->{body};
$res = $dan->request(POST => '/posts', cred => $do,
    headers => { 'Content-Type' => "multipart/form-data; boundary=$MB" },
    body => mp({ type => $PHOTO, content => {} }, 's' x 600));
is_quota($res, 'attachment_bytes', 'a photo of 600 bytes after it');

# where no quota is set, an import counts all the same: a quota set
# later holds against what it brought
is(admin({ action => 'create', entity => "http://fay.test:$P" })->{status},
   201, 'fay created without quotas');
my $fay = client_of('fay.test', $P);
my (undef, $fo) = $fay->authorized_app($all, post_types => 'all',
                                       info_types => 'all');
$res = $fay->request(POST => '/import?merge=1', cred => $fo,
                         body => { version => 0, entity => $FROM,
                                   complete => JSON::PP::true,
                                   posts => [doc_post(), doc_post()] });
ok($res->{status} == 200 && $res->{json}{posts}{written},
   'fay, without a quota of posts, imports 2 posts') or diag $res->{body};
is(admin({ action => 'quotas', entity => "http://fay.test:$P",
           quotas => { posts => 2 } })->{status}, 200,
   "fay's quota of posts set to 2");
is_quota(status_post($fay, $fo, 'fay'), 'posts',
         'her first POST /posts: the 2 imported counted');

# an import's profile_versions count as PUT /profile's kept versions do:
# over the quota of posts the section is not written, the report says so
is(admin({ action => 'create', entity => "http://jon.test:$P",
           quotas => { posts => 3 } })->{status}, 201,
   'jon created with a quota of 3 posts');
my $jon = client_of('jon.test', $P);
my (undef, $jo) = $jon->authorized_app($all, post_types => 'all',
                                       info_types => 'all');
sub history {
    my ($type, $count) = @_;
    return map {
        { type => $type, content => { name => "v$_" },
          permissions => { public => JSON::PP::true }, version => $_,
          updated_at => 1700000000 + $_ }
    } 1 .. $count;
}
sub jon_import {
    my (%s) = @_;
    return $jon->request(POST => '/import?merge=1', cred => $jo,
                         body => { version => 0, entity => $FROM,
                                   complete => JSON::PP::true, %s });
}
$res = jon_import(profile_versions => [history($BASIC, 4)],
                  groups => [{ id => 'jg', name => 'g',
                               created_at => 1700000000,
                               updated_at => 1700000000 }]);
is($res->{status}, 200, 'an import of 4 profile versions under 3: 200')
    or diag $res->{body};
is($res->{json}{profile_versions}{error} // '', 'quota exceeded: posts',
   'its report: profile_versions not written, the quota named')
    or diag $res->{body};
ok(!$res->{json}{profile_versions}{written}
   && ($res->{json}{profile_versions}{taken} // 1) == 0,
   'profile_versions: written false, none taken');
ok($res->{json}{groups}{written}, 'its groups written');
$res = jon_import(
    profile_versions => [history('https://tent.io/types/info/x/v0.1.0', 2)],
    posts => [doc_post()]);
ok($res->{status} == 200 && $res->{json}{profile_versions}{written}
   && $res->{json}{posts}{written},
   'an import of 2 profile versions and a post: written, 3 of 3')
    or diag $res->{body};
is_quota(status_post($jon, $jo, 'jon'), 'posts',
         'POST /posts after it: the profile versions counted');
is_quota(profile_put($jon, $jo, 'Jon'), 'posts', 'PUT /profile after it');
# a move writes a profile post (and keeps the core's version): counted,
# refused at the quota before its body is read (no discovery of the new
# entity, the core unchanged)
is_quota($jon->request(POST => '/move', cred => $jo,
                       body => { entity => "http://ann.test:$P" }),
         'posts', 'POST /move at the quota');
$res = $jon->request(GET => '/profile', cred => $jo);
unlike($res->{body} // '', qr/ann\.test/, 'the refused move changed no core')
    or diag $res->{body};

# ---- no quota set: the counts are taken at the store all the same, so
# that a quota set later finds them whole (read and written back plus
# one, 12 creates at once would have counted 1)

is(admin({ action => 'create', entity => "http://gus.test:$P" })->{status},
   201, 'gus created without quotas');
my $gus = client_of('gus.test', $P);
my (undef, $go) = $gus->authorized_app($all, post_types => 'all');
my ($gok) = at_once(12, sub {
    $gus->request(POST => '/posts', cred => $go,
        headers => { 'Content-Type' => "multipart/form-data; boundary=$MB" },
        body => mp({ type => $PHOTO, content => {} },
                   chr(ord('a') + $_[0]) x 100));
});
is($gok, 12, "12 of gus's photos at once: all taken");

# ---- unconfirmed apps: not counted, bounded by tent_apps_unconfirmed

is(admin({ action => 'create', entity => "http://eli.test:$P",
           quotas => { apps => 1 } })->{status}, 201,
   'eli created with a quota of 1 app');
my $eli = client_of('eli.test', $P);
my @reg = map {
    $eli->request(POST => '/apps',
                  body => { name => "flood $_", url => 'http://f.example',
                            redirect_uris => ['http://f.example/cb'],
                            scopes => {} })->{status}
} 1 .. 10;
is(scalar(grep { $_ == 200 } @reg), 4,
   '10 unsigned registrations: 4 kept (tent_apps_unconfirmed)')
    or diag "@reg";
is(scalar(grep { $_ == 429 } @reg), 6, 'the others: 429');

unlike($host->error_log_text, qr/\[alert\]|exited on signal|runtime error/,
       'no alert, no crash');

# ---- the rows as stored

$host->stop;
my @rows = Tent::Util::ldb_rows("${\ $host->servroot}/store/db");

sub rows_of {
    my ($name, $table) = @_;
    my $k = unpack 'H*', "http://$name.test:$P\0$table";
    return grep { /^\Q$k\E/ } @rows;
}

sub value_of {
    my ($row) = @_;
    my (undef, $v) = split /\t/, $row;
    chomp $v;
    return pack 'H*', $v;
}

is(scalar(rows_of('ann', 'v')), 3, "ann's store: 3 own post versions")
    or diag scalar rows_of('ann', 'v');
is(scalar(rows_of('ann', 'F')), 0, "ann's store: no following");
my @confirmed = grep { value_of($_) !~ /unconfirmed_slot/ } rows_of('ann', 'a');
is(scalar @confirmed, 2, "ann's store: 2 apps authorized");
cmp_ok(scalar(rows_of('bea', 'v')), '<=', 2,
       "bea's store: no more than 2 own post versions");
my $qk = unpack 'H*', "http://cat.test:$P\0Qattachment_bytes";
my ($qb) = grep { /^\Q$qk\E\t/ } @rows;
cmp_ok(value_of($qb // "x\t"), '<=', 1000, "cat's count of bytes: in the quota");
is(scalar(rows_of('dan', 'v')), 4,
   "dan's store: 4 own post versions (1 posted, 2 + 1 imported)");
sub count_of {
    my ($name, $what) = @_;
    my $k = unpack 'H*', "http://$name.test:$P\0Q$what";
    my ($row) = grep { /^\Q$k\E\t/ } @rows;
    return $row ? value_of($row) : 0;
}
is(count_of('dan', 'posts'), 4,
   "dan's count of posts: 4 (the refused imports' given back)");
is(count_of('dan', 'attachment_bytes'), 600, "dan's count of bytes: 600");
is(scalar(rows_of('jon', 'q')), 2,
   "jon's store: 2 profile versions (the refused import's 4 not written)");
is(count_of('jon', 'posts'), 3,
   "jon's count of posts: 3 (the refused import took none)");
is(scalar(grep { value_of($_) !~ /unconfirmed_slot/ } rows_of('ivy', 'a')),
   2, "ivy's store: 2 apps authorized");
is(count_of('gus', 'posts'), 12, "gus's count of posts: 12, none lost");
is(count_of('gus', 'attachment_bytes'), 1200, "gus's count of bytes: 1200");
is(count_of('gus', 'apps'), 1, "gus's count of apps: his owner app");
cmp_ok(scalar(rows_of('eli', 'a')), '<=', 4,
       "eli's store: no more than 4 unconfirmed apps");

unlink $tokfile;

done_testing();
