# bin/tent-backup's destination against another local user (issue 26,
# part 6; docs/operations.md#backup-and-restore): the copy holds every
# post and key of the store, so it must never land where someone else
# reads it.  tent-backup checked that DEST did not exist, then waited for
# the store's owner and created DEST only then: a symbolic link planted
# meanwhile (to a directory of the other user's) took the copy.  DEST is
# now made at once by a mkdir that fails on anything there, a link
# included; a directory anyone may write to without the sticky bit is
# refused as DEST's parent, and so is one its group may write to (that
# was taken: a group member could rename DEST away), unless sticky and
# owned by root or the user (/tmp).  No nginx here: a store of a few
# files, its lock held by a process of the suite.

use strict;
use warnings;
use Test::More;
use File::Temp qw(tempdir);
use File::Path qw(make_path);
use Cwd qw(abs_path);
use FindBin;
use POSIX ();
use Time::HiRes qw(sleep time);
use Tent::Util qw(wait_for);

my $BACKUP = abs_path("$FindBin::Bin/../../bin/tent-backup");
my $tmp = tempdir('tent-backup-adv-XXXXXX', TMPDIR => 1, CLEANUP => 1);

# a store as LevelDB and the module leave it
my $store = "$tmp/store";
make_path("$store/db", "$store/attachments/ab");
for (['db/CURRENT', "MANIFEST-000002\n"], ['db/MANIFEST-000002', 'm' x 64],
     ['db/000003.log', 'secret post ' x 100], ['db/000005.ldb', 't' x 256],
     ['attachments/ab/abcdef', 'a photo'])
{
    open my $f, '>', "$store/$_->[0]" or die "$_->[0]: $!";
    print {$f} $_->[1];
    close $f;
}

# the other user's directory, where nothing of the store may arrive
my $theirs = "$tmp/theirs";
mkdir $theirs or die;

sub entries {
    my ($dir) = @_;
    opendir my $d, $dir or return ();
    return grep { $_ ne '.' && $_ ne '..' } readdir $d;
}

# tent-backup started in the background: its pid; its stderr in FILE
sub start_backup {
    my ($file, @args) = @_;
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open STDOUT, '>', '/dev/null' or die;
        open STDERR, '>', $file or die;
        exec $^X, $BACKUP, @args or die "exec: $!";
    }
    return $pid;
}

sub finish {
    my ($pid, $file) = @_;
    waitpid $pid, 0;
    my $code = $? >> 8;
    open my $f, '<', $file or die;
    local $/;
    return ($code, <$f> // '');
}

sub backup { finish(start_backup("$tmp/err", @_), "$tmp/err") }

# ---- a link planted before: refused, nothing through it

symlink $theirs, "$tmp/copy1" or die;
my ($code, $err) = backup('--offline', $store, "$tmp/copy1");
isnt($code, 0, 'DEST a link to their directory: refused');
like($err, qr/exists/, '... and why');
is(scalar(entries($theirs)), 0, '... nothing written into it');

symlink "$theirs/new", "$tmp/copy2" or die;
($code, $err) = backup('--offline', $store, "$tmp/copy2");
isnt($code, 0, 'DEST a dangling link: refused');
ok(!-e "$theirs/new", '... its target not made');
ok(-l "$tmp/copy2" && !-e "$tmp/copy2", '... the link left as it was');

# ---- a link planted while tent-backup waits for the store's owner

my $e = "$tmp/err-race";
my $pid = start_backup($e, '--wait', 20, $store, "$tmp/copy3");
# the backup runs its check, then waits for a process to hold the lock:
# DEST is there at once now (before: nothing until the owner was found)
wait_for(sub { -d "$tmp/copy3" }, 3);
my $planted = symlink $theirs, "$tmp/copy3";
ok(!$planted, 'a link planted at DEST meanwhile: the name is taken');

# now an owner holds the store: the backup goes on
my $holder = fork // die "fork: $!";
if ($holder == 0) {
    my $lk = Tent::Util::store_lock($store);
    sleep 0.1 while 1;
}
($code, $err) = finish($pid, $e);
kill 'KILL', $holder;
waitpid $holder, 0;
is($code, 0, 'the backup is made') or diag $err;
is(join(' ', sort(entries($theirs))), '',
   'nothing of the store in their directory');
ok(!-l "$tmp/copy3" && -f "$tmp/copy3/db/000003.log",
   'the copy is in DEST, a directory of its own');
is((stat "$tmp/copy3")[2] & 07777, 0700, '... of mode 0700');

# ---- a parent anyone may rename in: refused

my $open = "$tmp/open";
mkdir $open or die;
chmod 0777, $open or die;
($code, $err) = backup('--offline', $store, "$open/copy");
isnt($code, 0, 'DEST in a directory anyone may write to: refused');
like($err, qr/writable by anyone \(mode 0777\)/, '... and why');
ok(!-e "$open/copy", '... nothing made');

# a group's shared directory: its members could rename DEST away too
my $shared = "$tmp/shared";
mkdir $shared or die;
for my $mode (0775, 0770, 0730) {
    chmod $mode, $shared or die;
    ($code, $err) = backup('--offline', $store, "$shared/copy");
    isnt($code, 0, sprintf('DEST in a directory of mode %04o (its group '
                           . 'may write): refused', $mode));
    like($err, qr/writable by its group .*choose another place/,
         '... and why') or diag $err;
    ok(!-e "$shared/copy", '... nothing made');
}

chmod 01775, $shared or die;
($code, $err) = backup('--offline', $store, "$shared/copy");
is($code, 0, 'group-writable with the sticky bit, ours: taken')
    or diag $err;
ok(-f "$shared/copy/db/CURRENT", '... the copy made');

chmod 01777, $open or die;
($code, $err) = backup('--offline', $store, "$open/copy");
is($code, 0, 'with the sticky bit (/tmp): taken') or diag $err;
ok(-f "$open/copy/db/CURRENT", '... the copy made');

# sticky but another user's: its owner renames any entry in it
SKIP: {
    skip 'chown needs root', 3 if $> != 0;
    my $nobody = getpwnam('nobody') // 65534;
    my $other = "$tmp/other";
    mkdir $other or die;
    chmod 01777, $other or die;
    chown $nobody, -1, $other or die "chown: $!";
    ($code, $err) = backup('--offline', $store, "$other/copy");
    isnt($code, 0, 'sticky, writable by anyone, another user\'s: refused');
    like($err, qr/not a sticky directory of root's or yours/, '... and why')
        or diag $err;
    ok(!-e "$other/copy", '... nothing made');
}

# ---- a failure removes what the run made, and only that

($code, $err) = backup('--wait', '0.2', $store, "$tmp/copy4");
isnt($code, 0, 'no process holds the store: refused');
ok(!-e "$tmp/copy4", '... DEST made for it removed');

done_testing();
