# The registry fence attacked (issue 16 review): writes a tenant or a
# remote can keep in flight across an operator's delete and re-create of
# the name for somebody else.  The delivery engine's own writes (a
# fan-out's jobs, a settlement's retry put back) are of the old tenant:
# nothing of them may land in the new one, nor be sent again in its name.
# And a tenant's import under a quota of posts.

use strict;
use warnings;

my @NAMES;
BEGIN { @NAMES = qw(gus.test hal.test) }
use Tent::Netns qw(reexec_in_netns);
BEGIN { reexec_in_netns(hosts => \@NAMES) }

use Test::More;
use JSON::PP;
use Tent::Peer;
use Tent::Client;
use Tent::Receiver;
use Tent::Util qw(http_request wait_for);
use Tent::Hosting qw(provisioning_host operator_request delete_all client_of);

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $BASE = $ENV{TEST_NGINX_PORT} || 22400;
my $P = $BASE + 1;
my $root = Tent::Util::own_root('/tmp/sr-fence-attacks');
my ($host, $token, $tokfile) = provisioning_host(
    port => $P, root => $root, names => ['*.test'],
    http => <<'CONF');
    tent_delivery_interval 200ms;
CONF

sub admin {
    operator_request(port => $P, token => $token, body => $_[0]);
}


# ---- a settlement's retry across a delete and a re-create: the old
# tenant's remote follower answers slowly, then 503; the job put back
# for its retry must not land in the new tenant's name (it would be sent
# again from there, the old tenant's post in the new one's name)

my $rx = Tent::Receiver->start;
$rx->rules([{ method => 'POST', path => 'notifications',
              action => { status => 503, body => 'later', delay => 3 } }]);
is(admin({ action => 'create', entity => "http://gus.test:$P" })->{status},
   201, 'gus created');
my $gus = client_of('gus.test', $P);
my (undef, $go) = $gus->authorized_app('write_posts', post_types => 'all');
my $fr = $gus->request(POST => '/followers',
                       body => { entity => $rx->url, types => ['all'],
                                 notification_path => 'notifications/g' });
is($fr->{status}, 200, "the old tenant's remote follows gus")
    or diag $fr->{body};
my $gp = $gus->request(POST => '/posts', cred => $go,
                       body => { type => $STATUS,
                                 content => { text => 'old tenant' },
                                 permissions => { public => JSON::PP::true } });
is($gp->{status}, 200, 'gus posts') or diag $gp->{body};
my $pid = $gp->{json}{id} // 'none';
ok(wait_for(sub { scalar $rx->requests(method => 'POST',
                                       path => qr{notifications}) }, 20),
   'the engine sends it; the remote holds its answer');
ok(delete_all($P, $token, "http://gus.test:$P"),
   'gus deleted while it is sent');
is(admin({ action => 'create', entity => "http://gus.test:$P" })->{status},
   201, 'the name gus made anew for somebody else');
$rx->rules([]);
sleep 4;    # the remote answers 503 after 3 s; the engine settles (retry)
my $n0 = () = $rx->requests(method => 'POST', path => qr{notifications});
ok(!wait_for(sub {
        my $n = () = $rx->requests(method => 'POST',
                                   path => qr{notifications});
        $n > $n0 }, 8),
   "the old tenant's post is not sent again from the re-created name")
    or diag "sent again: " . join ' ', map { $_->{path} }
        $rx->requests(method => 'POST', path => qr{notifications});

# ---- a tenant passes its quota of posts by an import (100,000 posts a
# document, ?merge=1 again and again): it counts them, and over the
# quota its posts' section is not written

is(admin({ action => 'create', entity => "http://hal.test:$P",
           quotas => { posts => 2 } })->{status}, 201,
   'hal created with a quota of 2 posts');
my $hal = client_of('hal.test', $P);
my (undef, $ho) = $hal->authorized_app(
    'write_secrets,write_profile,write_followers,write_followings,'
    . 'write_groups,write_posts,import_posts,read_posts',
    post_types => 'all', info_types => 'all');
my @five = map {
    my $id = sprintf 'imported-%05d', $_;
    { id => $id,
      versions => [{ id => $id, entity => 'http://old-hal.test',
                     type => $STATUS, version => 1,
                     content => { text => "imported $_" },
                     permissions => { public => JSON::PP::true },
                     published_at => 1700000000 + $_,
                     received_at => 1700000000 + $_,
                     updated_at => 1700000000 + $_ }] }
} 1 .. 5;
my $im = $hal->request(POST => '/import', cred => $ho,
                       body => { version => 0, entity => 'http://old-hal.test',
                                 complete => JSON::PP::true,
                                 posts => \@five });
is($im->{status}, 200, 'an import of 5 posts under a quota of 2: 200')
    or diag $im->{body};
is($im->{json}{posts}{error} // '', 'quota exceeded: posts',
   'its posts not written, the report says why') or diag $im->{body};
my $count = $hal->request(GET => '/posts/count', cred => $ho);
cmp_ok($count->{body} // 0, '<=', 2, 'hal holds no more than 2 posts')
    or diag $count->{body};

unlike($host->error_log_text, qr/\[alert\]|exited on signal|runtime error/,
       'no alert, no crash');

# ---- the rows as stored: the new gus made no request, so no row of its
# own; a job put back (j), a status (D) would be the old tenant's

$host->stop;
{
    my @rows = Tent::Util::ldb_rows("${\ $host->servroot}/store/db");
    my $g = unpack 'H*', "http://gus.test:$P\0";
    my @grows = grep { /^\Q$g\E/ } @rows;
    is(scalar @grows, 0, "no row of the old gus's delivery in the new gus")
        or diag join '', map {
            my ($k) = split /\t/; pack('H*', $k) =~ s/[^ -~]/./gr . "\n"
        } @grows;
}

unlink $tokfile;

done_testing();
