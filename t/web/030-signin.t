# The web page's Sign in on a provisioning host (docs/web.md "Signing
# in", docs/auth.md "Sign-in per tenant"), in Debian's chromium, headless:
# two tenants of one server block (amy.test, bob.test: chromium maps
# *.test to 127.0.0.1), each with its own password.  On amy's page Sign
# in leads to the authorize page's password form; bob's password is
# refused there, amy's signs her in, Approve brings the page back signed
# in, and she posts.  axe-core finds no serious or critical violation on
# the password form, light and dark (Tent::WebDemo::axe_ok).  Screenshots
# as in 010-browser.t.

use strict;
use warnings;

use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use File::Temp qw(tempdir);
use Tent::Chrome;
use Tent::Client;
use Tent::Util;
use Tent::Hosting qw(provisioning_host operator_request client_of);
use Tent::WebDemo;

my $top = File::Spec->rel2abs("$FindBin::Bin/../..");
my $chromium = Tent::Chrome::find_binary()
    or plan skip_all => 'chromium is not installed (on Debian, '
                      . 'util/install-deps.sh --test installs it)';

my $P = Tent::Util::free_port();
my $root = Tent::Util::own_root('/tmp/sr-web-signin');
my $tmp = tempdir('tent-web-signin-XXXXXX', TMPDIR => 1, CLEANUP => 0);
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

for my $n (qw(amy bob)) {
    is(operator_request(port => $P, token => $token,
                        body => { action => 'create',
                                  entity => "http://$n.test:$P",
                                  password => "the password of $n" })
           ->{status}, 201, "$n created with a password");
}

my $chrome = Tent::Chrome->new(binary => $chromium, dir => "$tmp/chromium",
                               args => ['--host-resolver-rules=MAP *.test '
                                        . '127.0.0.1',
                                        # WebCrypto, as on 127.0.0.1
                                        '--unsafely-treat-insecure-origin-'
                                        . "as-secure=http://amy.test:$P,"
                                        . "http://bob.test:$P"]);
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
sub on_form { "location.pathname === '/tent/oauth/authorize' && "
              . "!!document.querySelector('input[name=password]')" }

my $amy = "http://amy.test:$P";
$page->go("$amy/");
ok($page->wait_js('document.body.dataset.ready'), "amy's page loads");
is($page->js('document.body.dataset.state'), 'anonymous', 'anonymous');
$page->click('#sign-in');
ok($page->wait_js(on_form()), 'Sign in leads to the password form');
ok(!$page->js("!!document.querySelector('button[value=approve]')"),
   'no Approve before signing in');
step('signin-form');
Tent::WebDemo::axe_ok($page, 'the password form');
Tent::WebDemo::controls_ok($page, 'the password form');

# bob's password on amy's page
$page->type('input[name=password]', 'the password of bob');
$page->click('form button');
ok($page->wait_js(on_form() . " && /Wrong password/"
                  . ".test(document.body.innerText)"),
   "bob's password is refused on amy's page");
is($page->js('document.cookie'), '', 'no cookie a script can read');
step('refused');
Tent::WebDemo::axe_ok($page, 'the password form, refused');
$page->call('Emulation.setEmulatedMedia', { features => [
    { name => 'prefers-color-scheme', value => 'dark' } ] });
Tent::WebDemo::axe_ok($page, 'the password form, refused, dark');
Tent::WebDemo::controls_ok($page, 'the password form, dark');
$page->call('Emulation.setEmulatedMedia', { features => [
    { name => 'prefers-color-scheme', value => 'light' } ] });

# amy's own: the app to approve, then the page signed in
$page->type('input[name=password]', 'the password of amy');
$page->click('form button');
ok($page->wait_js("!!document.querySelector('button[value=approve]')"),
   "amy's password: the app to approve");
like($page->js('document.body.innerText'), qr/Tent web/,
     'the page names the page as the app');
step('approve');
Tent::WebDemo::axe_ok($page, 'the authorize page after the password');
$page->click('button[value=approve]');
ok($page->wait_js("document.body.dataset.ready && "
                  . "document.body.dataset.state === 'signed-in'"),
   'approved: the page is signed in');
is($page->js('location.origin'), $amy, "on amy's page");
step('signed-in');

$page->type('#status-text', 'Hello from a provisioned tenant');
$page->click('#post-button');
ok($page->wait_js("Array.from(document.querySelectorAll('#feed .text'))"
                  . ".some((e) => e.textContent === "
                  . "'Hello from a provisioned tenant')"),
   'she posts');
step('posted');

# the post is amy's, not bob's
my $res = client_of('amy.test', $P)->request(GET => '/posts');
ok((grep { ($_->{content}{text} // '') eq 'Hello from a provisioned tenant' }
    @{ $res->{json} || [] }), "the status is in amy's posts");
$res = client_of('bob.test', $P)->request(GET => '/posts');
ok(!(grep { ($_->{content}{text} // '') =~ /provisioned tenant/ }
     @{ $res->{json} || [] }), "and not in bob's");

my @js_errors = grep { ($_->{method} || '') eq 'Runtime.exceptionThrown' }
                $chrome->events;
is(scalar @js_errors, 0, 'no uncaught exception in the pages')
    or diag(explain(\@js_errors));

unlink $tokfile;
done_testing();
