# The operator's tools (bin/): each carries its manual as POD at its end,
# which --help prints (Pod::Usage) and the Debian package turns into its
# man page (pod2man, debian/rules).  Here: the POD is well formed, has the
# sections of a man page, --help answers from it, and pod2man renders it.
# No nginx, no network.

use strict;
use warnings;
use Test::More;
use FindBin;
use Pod::Checker;
use Pod::Man;

my $top = "$FindBin::Bin/../..";

for my $tool (qw(tent-admin tent-backup tent-move tent-curl)) {
    my $path = "$top/bin/$tool";

    my $checker = Pod::Checker->new(-warnings => 2);
    open my $null, '>', '/dev/null' or die;
    $checker->parse_from_file($path, $null);
    is($checker->num_errors, 0, "$tool: its POD has no error");
    is($checker->num_warnings, 0, "$tool: nor a warning");

    open my $fh, '<', $path or die "$path: $!";
    my $text = do { local $/; <$fh> };
    my @heads = $text =~ /^=head1 (.+)$/mg;
    for my $h ('NAME', 'SYNOPSIS', 'DESCRIPTION', 'OPTIONS', 'EXIT STATUS',
               'SEE ALSO') {
        ok((grep { $_ eq $h } @heads), "$tool: a $h section");
    }
    like($text, qr/^=head1 NAME\n\n\Q$tool\E - \S/m,
         "$tool: NAME is \"$tool - what it does\" (whatis)");

    my $help = `'$path' --help 2>&1`;
    is($? >> 8, 0, "$tool --help: exit 0");
    like($help, qr/\AUsage:\n    \Q$tool\E /, "$tool --help: the usage first");
    like($help, qr/^Options:$/m, "$tool --help: the options");
    like($help, qr/^\s+-h, --help$/m, "$tool --help: --help among them");

    # the long options its GetOptions takes are in its manual
    my ($spec) = $text =~ /GetOptions\w*\((.*?)\)\s*(?:or|;)/s;
    my @opts = map { (sort { length $b <=> length $a } split /\|/)[0] }
               ($spec // '') =~ /'([a-zA-Z][\w|-]*)(?:=[sif])?'/g;
    ok(@opts >= 2, "$tool: its options found (@opts)");
    my @missing = grep { my $o = $_;
                         $text !~ /^=item (?:.*[ \[])?B<--\Q$o\E>/m }
                  grep { !/^(?:data-binary|data-raw|algorithm)$/ } @opts;
    is_deeply(\@missing, [], "$tool: every option it takes is documented");

    my $man = '';
    my $parser = Pod::Man->new(section => $tool =~ /admin|backup/ ? 8 : 1,
                               center => 'ngx_http_tent_module',
                               release => 'test');
    $parser->output_string(\$man);
    $parser->parse_file($path);
    my $uc = uc $tool;
    like($man, qr/^\.TH "?\Q$uc\E"? [18] /m, "$tool: pod2man makes its page");
    like($man, qr/^\.SH "?SYNOPSIS"?$/m, "$tool: with its synopsis");
}

done_testing;
