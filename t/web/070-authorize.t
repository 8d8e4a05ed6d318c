# The authorize page (issue 30, point 7; docs/web.md, docs/auth.md) in
# Debian's chromium, headless, against make run's demo (Tent::WebDemo):
# styled like the web page (one inline style allowed by its hash in the
# CSP, light and dark), naming the app, its site and each scope in plain
# words, with the types of posts and profile sections it may use; an
# app whose name, site, description and asked-for types carry markup is
# shown as text with nothing run; Tab reaches Approve and Deny.

use strict;
use warnings;
use utf8;

use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Digest::SHA qw(sha256_base64);
use JSON::PP;
use Tent::Client;
use Tent::WebDemo;
use Tent::Util qw(http_request);

binmode Test::More->builder->$_, ':utf8' for qw(output failure_output);

my $w = Tent::WebDemo->start(name => 'authorize');
my $page = $w->page;
my $alice = $w->{alice};
my $client = $w->owner_client;

my $name = q{<script>document.body.dataset.xss=1</script>}
         . q{<img src=x onerror="document.body.dataset.xss=2">"'&amp;};
my $site = q{https://app.example/"><svg onload="document.body.dataset.xss=3">};
my $desc = q{<b>bold</b> & <i onmouseover="x()">it</i>};
my $app = eval { $client->register_app(name => $name, url => $site,
    description => $desc, redirect_uris => ['http://127.0.0.1:1/cb'],
    scopes => { read_posts => 'x', write_posts => 'x',
                read_followers => 'x' }) };
ok($app, 'an app with markup in its name, site and description registers')
    or diag($@);
my $evil_type = 'https://evil.example/<b>x</b>"onclick="y';
my $q = Tent::Client::authorize_query(undef, $app,
    scope => 'read_posts,write_posts,read_followers,made_up',
    post_types => "https://tent.io/types/post/status/v0.1.0,$evil_type",
    info_types => 'all', state => 's');
my $url = "$alice/tent/oauth/authorize?$q";

# the page's own headers: its one style by hash, nothing else
my $r = http_request(path => "/tent/oauth/authorize?$q", port => $w->{port},
                     headers => { Host => "127.0.0.1:$w->{port}" });
is($r->{status}, 200, 'the authorize page');
my $csp = $r->{headers}{'content-security-policy'} || '';
like($csp, qr/default-src 'none'/, "default-src 'none'");
like($csp, qr/frame-ancestors 'none'/, "frame-ancestors 'none'");
unlike($csp, qr/unsafe-inline|script-src/, 'no inline script allowed');
my @styles = $r->{body} =~ m{<style>(.*?)</style>}sg;
is(scalar @styles, 1, 'one inline style');
my $hash = sha256_base64($styles[0] // '');
$hash .= '=' while length($hash) % 4;
like($csp, qr/style-src 'sha256-\Q$hash\E'/, 'allowed by its hash');
unlike($r->{body}, qr/<(?:script|img|svg|b>|i\s)/i,
       'no markup of the app\'s in the HTML');

$page->go($url);
ok($page->wait_js("!!document.querySelector('button[value=approve]')"),
   'chromium shows it');
is($page->js("document.querySelector('h1 q').textContent"), $name,
   'the app\'s name, as text');
is($page->js("document.querySelectorAll('script, img, svg, b, i').length"),
   0, 'none of its markup made an element');
is($page->js('document.body.dataset.xss'), undef, 'nothing ran');
is($page->js("document.querySelector('dd code').textContent"), $site,
   'its site, as text');
like($page->js('document.body.innerText'), qr/\Q<b>bold<\/b> & <i\E/,
     'its description, as text');
my $text = $page->js('document.body.innerText');
for my $words ('read your posts, private ones too',
               'publish, edit and delete posts', 'see who follows you',
               'statuses', 'every section of your profile',
               "http://127.0.0.1:$w->{port}") {
    like($text, qr/\Q$words\E/, "it says \"$words\"");
}
like($text, qr/\Q$evil_type\E/, 'an unknown type by its URL, as text');
like($text, qr/does not know.*made_up/, 'an unknown scope said so');
is($page->js("getComputedStyle(document.querySelector('main'))"
             . ".borderTopLeftRadius"), '8px', 'styled (the style applied)');
is($page->js("getComputedStyle(document.querySelector("
             . "'button[value=approve]')).backgroundColor"),
   'rgb(31, 95, 191)', 'Approve in the web page\'s accent colour');
$w->step('authorize-xss');

# the keyboard reaches both decisions
my %reached;
for (1 .. 10) {
    $page->key('Tab');
    my $v = $page->js("document.activeElement.value || ''");
    $reached{$v} = 1;
    last if $reached{approve} && $reached{deny};
}
ok($reached{approve} && $reached{deny}, 'Tab reaches Approve and Deny');

# dark, and a phone's width
$page->call('Emulation.setEmulatedMedia', { features => [
    { name => 'prefers-color-scheme', value => 'dark' } ] });
is($page->js("getComputedStyle(document.body).backgroundColor"),
   'rgb(21, 24, 28)', 'dark by the system\'s setting');
$w->step('authorize-dark');
$page->call('Emulation.setEmulatedMedia', { features => [
    { name => 'prefers-color-scheme', value => 'light' } ] });
$page->call('Emulation.setDeviceMetricsOverride', { width => 390,
    height => 844, deviceScaleFactor => 1, mobile => JSON::PP::true });
$page->go($url);
ok($page->wait_js("!!document.querySelector('button[value=approve]')"),
   'at a phone\'s width');
ok($page->js('document.documentElement.scrollWidth <= 390'),
   'it fits, long names and URLs wrapped');
$w->step('authorize-phone');
$page->call('Emulation.setDeviceMetricsOverride', { width => 900,
    height => 1000, deviceScaleFactor => 1, mobile => JSON::PP::false });

# the web page's own sign-in: its scopes in words, then approved
$page->go("$alice/");
ok($page->wait_js('document.body.dataset.ready'), 'the web page');
$page->click('#sign-in');
ok($page->wait_js("location.pathname === '/tent/oauth/authorize' && "
                  . "!!document.querySelector('button[value=approve]')"),
   'its Sign in leads to the authorize page');
$text = $page->js('document.body.innerText');
is($page->js("document.querySelector('h1 q').textContent"), 'Tent web',
   'naming the web page');
for my $words ('change your profile', 'follow and unfollow entities',
               'see who may read each post', 'posts of every type') {
    like($text, qr/\Q$words\E/, "it says \"$words\"");
}
unlike($text, qr/does not know/, 'every scope of the page is known');
$w->step('authorize-web-page');
$page->click('button[value=approve]');
ok($page->wait_js("document.body.dataset.ready && "
                  . "document.body.dataset.state === 'signed-in'"),
   'approved: signed in');

$w->finish;
done_testing();
