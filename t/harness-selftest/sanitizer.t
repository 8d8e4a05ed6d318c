# Self-test of sanitizer_reports(): what makes a test fail under
# util/run-asan.sh.  No nginx: the logs are written by hand.
use strict;
use warnings;
use Test::More;
use File::Path qw(make_path remove_tree);
use Test::Nginx::Util qw(sanitizer_reports $LogDir $ErrLogFile);

remove_tree($LogDir);
make_path($LogDir);

sub put {
    my ($file, $mode, $text) = @_;
    open my $fh, $mode, $file or die "$file: $!";
    print {$fh} $text;
    close $fh;
}

put($ErrLogFile, '>', "2026/12/03 [error] 1#1: open() \"/x\" failed\n");
is(scalar(() = sanitizer_reports()), 0, 'an ordinary error log: no report');

put($ErrLogFile, '>>', "/src/a.c:925:5: runtime error: null pointer passed\n"
                     . "2026/12/03 [info] 1#1: more\n");
my @r = sanitizer_reports();
is(scalar @r, 1, 'a UBSan line in the error log: one report');
is($r[0][1], '/src/a.c:925:5: runtime error: null pointer passed',
   'the report is the UBSan line only');
is(scalar(() = sanitizer_reports()), 0, 'reported once');

put($ErrLogFile, '>', "b.c:1:1: runtime error: shift\n");
is(scalar(() = sanitizer_reports()), 1, 'a log begun again is read again');

put("$LogDir/asan.123", '>', "==123==ERROR: AddressSanitizer: boom\n");
@r = sanitizer_reports();
is(scalar @r, 1, 'an ASan log file: one report');
like($r[0][0], qr{/asan\.123$}, 'named by its file');

remove_tree($LogDir);
done_testing();
