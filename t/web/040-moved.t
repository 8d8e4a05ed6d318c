# The web page of an entity that moved (issue 27; docs/web.md, docs/
# move.md), in Debian's chromium, headless: amy.test is copied into
# bob.test and the move announced in one command (bin/tent-move
# --announce, with owner credentials of bin/tent-admin credential); amy's
# page then says "moved to" bob with a link, not "Failed to fetch" (her
# feed's reads are sent to bob, another origin).  Bob's page, which lists
# amy among its previous entities, is not "moved".

use strict;
use warnings;

# bob.test resolves for amy's move (her server discovers bob)
use Tent::Netns qw(reexec_in_netns);
BEGIN { reexec_in_netns(hosts => [qw(amy.test bob.test)]) }

use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use File::Temp qw(tempdir);
use Tent::Chrome;
use Tent::Client;
use Tent::Util;
use Tent::Hosting qw(provisioning_host operator_request client_of);
use Tent::WebDemo;
use JSON::PP;

my $top = File::Spec->rel2abs("$FindBin::Bin/../..");
my $chromium = Tent::Chrome::find_binary()
    or plan skip_all => 'chromium is not installed (on Debian, '
                      . 'util/install-deps.sh --test installs it)';

my $P = Tent::Util::free_port();
my $root = Tent::Util::own_root('/tmp/sr-web-moved');
my $tmp = tempdir('tent-web-moved-XXXXXX', TMPDIR => 1, CLEANUP => 0);
mkdir "$tmp/chromium";
mkdir "$tmp/shots";

# the page's files, readable by the workers whoever they run as
system('cp', '-R', "$top/www", "$tmp/www") == 0 or die "cp www: $?";
system('chmod', '-R', 'a+rX', $tmp) == 0 or die "chmod: $?";

my $csp = "default-src 'none'; script-src 'self'; style-src 'self'; "
        . "img-src 'self' blob:; connect-src 'self'; form-action 'self'; "
        . "base-uri 'none'; frame-ancestors 'none'";
my ($host, $token, $tokfile) = provisioning_host(
    port => $P, root => $root, names => [],
    http => "    tent_password_scrypt 1024 8 1;\n",
    servers => <<"CONF");
    server {
        listen 127.0.0.1:\$PORT;
        server_name *.test;
        tent_entity http://\$host:\$PORT;
        tent_provisioning on;
        location = / {
            root $tmp/www;
            try_files /index.html =404;
            add_header Content-Security-Policy "$csp" always;
        }
        location /web/ {
            alias $tmp/www/web/;
            types {
                text/javascript js;
                text/css css;
            }
            add_header Content-Security-Policy "$csp" always;
        }
    }
CONF

my %cred;
for my $n (qw(amy bob)) {
    my $e = "http://$n.test:$P";
    my $out = `$top/bin/tent-admin --url http://127.0.0.1:$P/tent-admin --host localhost --token-file $tokfile create $e 2>$tmp/admin.err`;
    is($?, 0, "$n created with an owner credential") or diag $out;
    $cred{$n} = "$tmp/$n.json";
    open my $fh, '>', $cred{$n} or die;
    print {$fh} $out;
    close $fh;
    chmod 0600, $cred{$n};
}
my $pc = client_of('amy.test', $P);
$pc->post_status(decode_json(do { local $/; open my $f, '<', $cred{amy}; <$f> }),
                 'before the move');
my $out = `$top/bin/tent-move -q --announce --source-cred $cred{amy} --target-cred $cred{bob} --source-connect-to 127.0.0.1:$P --target-connect-to 127.0.0.1:$P http://amy.test:$P http://bob.test:$P 2>&1 >/dev/null`;
is($?, 0, 'amy copied into bob and the move announced') or diag $out;

my $chrome = Tent::Chrome->new(binary => $chromium, dir => "$tmp/chromium",
                               args => ['--host-resolver-rules=MAP *.test '
                                        . '127.0.0.1',
                                        ]);
END {
    local $?;
    $chrome->quit if $chrome;
    if ($tmp) {
        if ($ENV{TEST_WEB_KEEP} || !Test::More->builder->is_passing) {
            diag("screenshots kept in $tmp/shots");
        } else {
            system('rm', '-rf', $tmp);
        }
    }
}

my $page = $chrome->page;
my $n = 0;
sub step {
    my ($name) = @_;
    my $file = sprintf '%s/shots/%02d-%s.png', $tmp, ++$n, $name;
    ok($page->screenshot($file) > 1000, "screenshot $file");
}

my ($amy, $bob) = ("http://amy.test:$P", "http://bob.test:$P");
$page->go("$amy/");
ok($page->wait_js('document.body.dataset.ready'), "amy's page loads");
is($page->js('document.body.dataset.state'), 'moved', 'it is "moved"');
like($page->js("document.getElementById('error').textContent"),
     qr/moved to \Q$bob\E/, 'it says "moved to" bob');
unlike($page->js('document.body.innerText'), qr/Failed to fetch/,
       'not "Failed to fetch"');
is($page->js("document.querySelector('#error a').href"), "$bob/",
   'with a link to bob');
step('moved');
Tent::WebDemo::axe_ok($page, 'a moved entity\'s page');

$page->go("$bob/");
ok($page->wait_js('document.body.dataset.ready'), "bob's page loads");
isnt($page->js('document.body.dataset.state'), 'moved',
     'bob, the successor, is not "moved"');
ok($page->wait_js("Array.from(document.querySelectorAll('#feed .text'))"
                  . ".some((e) => e.textContent === 'before the move')"),
   'bob shows the post copied from amy');
step('bob');

done_testing();
