# bin/tent-backup (docs/operations.md#backup-and-restore): a copy of a live
# store while posts are being written, restored into a new store under
# another nginx, which opens it cleanly and has every post acknowledged
# before the backup began; the owner goes on after the pause; a copy to
# another file system; and the refusals (DEST exists, not a store, no
# nginx holding it without --offline).

use strict;
use warnings;
use Test::More;
use Tent::Peer;
use Tent::Client;
use JSON::PP;
use File::Temp qw(tempdir);
use Cwd qw(abs_path);
use FindBin;
use POSIX ();
use Time::HiRes qw(sleep time);
use Digest::SHA qw(sha256_hex);

my $BACKUP = abs_path("$FindBin::Bin/../../bin/tent-backup");
my $BASE = $ENV{TEST_NGINX_PORT} || $ENV{TEST_NGINX_SERVER_PORT} || 1984;
my $TYPE = 'https://example.org/types/backup/v1.0.0';
# the peers' ports: just above the suite's, within the range a session
# is given; any free port when files run side by side (TEST_NGINX_RANDOMIZE)
sub peer_port { $ENV{TEST_NGINX_RANDOMIZE} ? undef : $BASE + $_[0] }
my $tmp = tempdir('tent-backup-XXXXXX', TMPDIR => 1, CLEANUP => 1);

# run tent-backup: (exit status, stderr)
sub backup {
    my (@args) = @_;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDOUT, '>', "$tmp/out" or die;
        open STDERR, '>', "$tmp/err" or die;
        exec $^X, $BACKUP, @args or die "exec: $!";
    }
    waitpid $pid, 0;
    my $code = $? >> 8;
    open my $f, '<', "$tmp/err" or die;
    local $/;
    return ($code, <$f> // '');
}

# every mark of our type in the entity's feed
sub marks {
    my ($c, $cred) = @_;
    my (%m, $pages);
    my $pt = 'post_types=' . Tent::Client::uri_escape($TYPE);
    my $res = $c->request(GET => "/posts?limit=200&$pt", cred => $cred);
    return undef unless $res->{status} == 200;
    while (1) {
        $m{ $_->{content}{mark} }++ for @{ $res->{json} || [] };
        my ($next) = ($res->{headers}{link} // '') =~ /<([^>]+)>; rel="next"/;
        last unless $next && ++$pages < 100;
        $res = $c->request(GET => "//$next", cred => $cred);
    }
    return \%m;
}

# $pad bytes of content: enough of them fill LevelDB's write buffer, set
# to 4 MB here (tent_store_write_buffer; 16m by default), so that the
# store has tables (linked) besides its log (copied), and tables are
# written and compacted while the backup runs
sub post {
    my ($c, $cred, $mark, $pad) = @_;
    return $c->post($cred, { type => $TYPE,
                             content => { mark => $mark,
                                          pad => 'x' x ($pad // 0) } },
                    headers => { 'Idempotency-Key' => $mark });
}

# both nginx serve the same entity, whatever their port: the keys start
# with it
my $ENTITY = 'https://backup.example';
my $server = <<"CONF";
        tent_entity $ENTITY;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF

my $a = Tent::Peer->start(port => peer_port(1), worker_processes => 2,
                          http_config => 'tent_store $SERVROOT/tent_temp;'
                                         . ' tent_store_write_buffer 4m;',
                          server_config => $server);
my $store = $a->servroot . '/tent_temp';
my $c = $a->client;
my (undef, $cred) = $c->authorized_app('write_posts,read_posts',
                                       post_types => 'all');

for my $i (1 .. 30) {
    my $r = post($c, $cred, "before-$i", 200_000);
    die "post: $r->{body}" unless $r->{status} == 200;
}

# a photo: its bytes are a file of the store's attachments/
my $B = '-----------TentBackup';
my $PHOTO = 'x' x 1000 . join('', map { chr } 0 .. 255) x 200;
my $res = $c->request(POST => '/posts', cred => $cred,
    headers => { 'Content-Type' => "multipart/form-data; boundary=$B" },
    body => "--$B\r\nContent-Disposition: form-data; name=\"post\"; "
          . "filename=\"post.json\"\r\nContent-Type: "
          . "application/vnd.tent.v0+json\r\n\r\n"
          . encode_json({ type => 'https://tent.io/types/post/photo/v0.1.0',
                          content => {} })
          . "\r\n--$B\r\nContent-Disposition: form-data; name=\"photos\"; "
          . "filename=\"p.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n"
          . "$PHOTO\r\n--$B--\r\n");
is($res->{status}, 200, 'a photo post') or diag($res->{body});
my $photo = $res->{json}{id};
my $D = sha256_hex($PHOTO);
my $file = "attachments/" . substr(sha256_hex($ENTITY), 0, 32) . '/'
           . substr($D, 0, 2) . '/' . substr($D, 2);
ok(-f "$store/$file", 'its file');

# a writer all along the backup: its acknowledgements in a file, each with
# the time it came back
my $acks = "$tmp/acks";
my $stop = "$tmp/stop";
my $writer = fork // die "fork: $!";
if ($writer == 0) {
    open my $fh, '>', $acks or POSIX::_exit(1);
    $fh->autoflush(1);
    my $wc = $a->client;
    for (my $i = 1; !-e $stop && $i < 5000; $i++) {
        my $r = post($wc, $cred, "during-$i", 20_000);
        my $t = sprintf '%.6f', time;
        print {$fh} $r->{status} == 200 ? "ok during-$i $t\n"
                                        : "status $r->{status} during-$i $t\n";
    }
    POSIX::_exit(0);
}

# let it write for a while, then back up
my $end = time + 10;
sleep 0.05 while time < $end && (-s $acks // 0) < 3000;
my $began = time;
my ($code, $err) = backup($store, "$tmp/copy");
my $finished = time;
sleep 0.3;
open my $sf, '>', $stop or die;
close $sf;
waitpid $writer, 0;

is($code, 0, 'tent-backup exits 0') or diag($err);
note($err);
ok(glob("$tmp/copy/db/*.ldb") || glob("$tmp/copy/db/*.sst"),
   'the copy has LevelDB tables');
ok(glob("$tmp/copy/db/*.log") && -f "$tmp/copy/db/CURRENT",
   'and its log and CURRENT');
like($err, qr/owner \d+ paused [0-9.]+ s/, 'it says whom it paused and how long');
ok(-f "$tmp/copy/BACKUP" && -d "$tmp/copy/db", 'the copy has the database');
ok(!-e "$tmp/copy/store.sock", 'not the socket');
is((stat "$tmp/copy/$file")[1], (stat "$store/$file")[1],
   'the attachment file: a link, on the same file system');

# the photo deleted after the backup: its file goes from the store, not
# from the copy
is($c->request(DELETE => "/posts/$photo", cred => $cred)->{status}, 200,
   'the photo post deleted');
ok(!-e "$store/$file", 'its file removed from the store');
ok(-f "$tmp/copy/$file", 'kept in the copy');

my (@before, @after, @bad);
open my $af, '<', $acks or die;
while (<$af>) {
    my ($st, $mark, $t) = split;
    if ($st ne 'ok') { push @bad, $_; next }
    push @before, $mark if $t < $began;
    push @after, $mark if $t > $finished;
}
ok(@before > 5, scalar(@before) . ' posts acknowledged during the writes '
   . 'before the backup began');
ok(@after > 0, scalar(@after) . ' acknowledged after it: the owner went on');
is(scalar @bad, 0, 'no write failed during the backup') or diag(@bad[0 .. 4]);

# the live store has them all still
my $live = marks($c, $cred);
is(scalar(grep { !$live->{$_} } @before, @after), 0, 'the live store is whole');

# a copy to another file system (tmpfs), through a staging directory
SKIP: {
    skip 'no /dev/shm', 2 unless -d '/dev/shm' && -w '/dev/shm';
    my $shm = tempdir('tent-backup-XXXXXX', DIR => '/dev/shm', CLEANUP => 1);
    my ($code2, $err2) = backup($store, "$shm/copy");
    is($code2, 0, 'a copy to another file system') or diag($err2);
    ok(-d "$shm/copy/db" && !glob("$store/.tent-backup.*"),
       'its staging directory is gone');
}

# the refusals
($code, $err) = backup($store, "$tmp/copy");
isnt($code, 0, 'DEST that exists: refused');
like($err, qr/exists/, '... and why');
($code, $err) = backup($tmp, "$tmp/copy2");
isnt($code, 0, 'a directory that is not a store: refused');
ok(!-e "$tmp/copy2", '... nothing made');
($code, $err) = backup($store, "$store/attachments/copy");
isnt($code, 0, 'DEST inside the store: refused');
like($err, qr/inside the store/, '... and why');

# restore: the copy becomes the store of another nginx
system('cp', '-a', "$tmp/copy", "$tmp/restored") == 0 or die 'cp';
my $b = Tent::Peer->start(port => peer_port(2), worker_processes => 2,
                          server_config => $server,
                          http_config => "tent_store $tmp/restored;");
my $bc = $b->client;
my $got;
my $until = time + 10;
until (($got = marks($bc, $cred)) || time > $until) { sleep 0.1 }
ok($got, 'the restored store answers, with the same credential');
$got ||= {};
my @lost = grep { !$got->{$_} } (map { "before-$_" } 1 .. 30), @before;
is(scalar @lost, 0, 'every post acknowledged before the backup began is there')
    or diag("lost: @lost[0 .. ($#lost > 9 ? 9 : $#lost)]");
ok(!grep({ $got->{$_} } @after), 'none acknowledged after it ended');
$res = $bc->request(GET => "/posts/$photo/attachments/p.jpg", cred => $cred);
ok($res->{status} == 200 && $res->{body} eq $PHOTO,
   'the restored store serves the photo') or diag("$res->{status}");
is(post($bc, $cred, 'after-restore')->{status}, 200,
   'the restored store takes writes');
my $blog = $b->error_log_text;
unlike($blog, qr/\[(?:alert|crit|emerg)\]/, 'and opened cleanly')
    or diag(join "\n", grep { /\[(alert|crit|emerg)\]/ } split /\n/, $blog);
$b->stop;

# backups while nginx reloads: the owner changes hands; each backup pauses
# whichever holds the lock, and its copy opens
{
    my $kid = fork // die "fork: $!";
    if ($kid == 0) {
        for (1 .. 4) { sleep 0.3; kill 'HUP', $a->master_pid; }
        POSIX::_exit(0);
    }
    my @codes;
    for my $n (1 .. 4) {
        my ($cd, $e) = backup('--wait', 10, $store, "$tmp/reload$n");
        push @codes, $cd;
        diag($e) if $cd;
        sleep 0.2;
    }
    waitpid $kid, 0;
    is("@codes", '0 0 0 0', 'four backups during four reloads');
    system('cp', '-a', "$tmp/reload3", "$tmp/restored3") == 0 or die 'cp';
    my $r = Tent::Peer->start(port => peer_port(4), worker_processes => 1,
                              server_config => $server,
                              http_config => "tent_store $tmp/restored3;");
    my $m;
    my $u = time + 10;
    until (($m = marks($r->client, $cred)) || time > $u) { sleep 0.1 }
    $m ||= {};
    is(scalar(grep { !$m->{$_} } @before, @after), 0,
       'a copy made during a reload has every post');
    unlike($r->error_log_text, qr/\[(?:alert|crit|emerg)\]/,
           'and opens cleanly');
    $r->stop;
}

# nginx stopped: nobody holds the store; --offline copies it as it is
$a->stop;
($code, $err) = backup('--wait', '0.2', $store, "$tmp/copy3");
isnt($code, 0, 'no process holds the store: refused without --offline');
like($err, qr/no process holds/, '... and why');
($code, $err) = backup('--offline', $store, "$tmp/copy3");
is($code, 0, '--offline copies a stopped store') or diag($err);

done_testing();
