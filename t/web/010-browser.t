# The web page (www/, docs/web.md) in a real browser: Debian's chromium,
# headless, driven through the DevTools protocol (t/lib/Tent/Chrome.pm),
# against make run's demo (util/run-demo.sh: two entities, nginx with the
# module) in a temporary directory.  Each step is checked in the page and
# saved as a screenshot under the temporary directory (kept, and its path
# printed, when a check fails or TEST_WEB_KEEP=1).

use strict;
use warnings;
use utf8;

use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Compress::Zlib qw(compress crc32);
use File::Temp qw(tempdir);
use IO::Socket::IP;
use JSON::PP;
use Tent::Chrome;
use Tent::Client;
use Tent::Util qw(http_request);

binmode Test::More->builder->$_, ':utf8' for qw(output failure_output);

my $top = "$FindBin::Bin/../..";
my $chromium = Tent::Chrome::find_binary()
    or plan skip_all => 'chromium is not installed (on Debian, '
                      . 'util/install-deps.sh --test installs it: make test '
                      . 'does)';
my $module = $ENV{TEST_NGINX_LOAD_MODULES}
             || "$top/build/ngx_http_tent_module.so";
plan skip_all => "the module is not built ($module): make build"
    unless -f $module;

# two ports side by side: the harness's, else two free ones
sub free_pair {
    for (1 .. 50) {
        my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                    Listen => 1) or next;
        my $p = $s->sockport;
        close $s;
        my $t = IO::Socket::IP->new(LocalHost => '127.0.0.1',
                                    LocalPort => $p + 1, Listen => 1)
            or next;
        close $t;
        return $p;
    }
    die "no two free ports";
}
my $port = $ENV{TEST_NGINX_RANDOMIZE} || !$ENV{TEST_NGINX_PORT}
           ? free_pair() : $ENV{TEST_NGINX_PORT};
my $alice = "http://127.0.0.1:$port";
my $bob = "http://127.0.0.1:" . ($port + 1);

my $tmp = tempdir('tent-web-XXXXXX', TMPDIR => 1, CLEANUP => 0);
chmod 0755, $tmp;                   # the workers (nobody) use the store
my $shots = "$tmp/shots";
mkdir $shots;
mkdir "$tmp/chromium";

$ENV{DEMO_DIR} = "$tmp/demo";
$ENV{MODULE} = $module;
$ENV{NGINX} = $ENV{TEST_NGINX_BINARY} || '/usr/sbin/nginx';
# under util/run-asan.sh: the demo's sanitizer reports, read at the end
$ENV{TENT_ASAN_LOG} = "$tmp/demo/logs/asan";
mkdir "$tmp/demo";
chmod 0755, "$tmp/demo";
my $out = `$top/util/run-demo.sh start $port 2>&1`;
if ($?) {
    fail('the demo starts');
    diag($out);
    done_testing();
    exit;
}
pass('the demo starts (make run\'s nginx, two entities)');
like($out, qr{^\s+\Q$alice\E/$}m, "make run's output names the page");

my ($failed, $chrome);
END {
    local $?;                   # the exit status is the tests'
    $chrome->quit if $chrome;
    system("$top/util/run-demo.sh stop >/dev/null") if $ENV{DEMO_DIR};
    if ($tmp) {
        if ($failed || $ENV{TEST_WEB_KEEP}
            || !Test::More->builder->is_passing) {
            diag("screenshots and logs kept in $tmp");
        } else {
            system('rm', '-rf', $tmp);
        }
    }
}

my $JSON = JSON::PP->new->utf8->canonical;
sub cred {
    open my $fh, '<', "$tmp/demo/$_[0]" or die "$_[0]: $!";
    local $/;
    return $JSON->decode(<$fh>);
}
my $bob_client = Tent::Client->new(port => $port + 1,
                                   host => "127.0.0.1:" . ($port + 1));
my $bob_cred = cred('bob.json');
my $alice_client = Tent::Client->new(port => $port, host => "127.0.0.1:$port");
my $r = $alice_client->request(POST => '/groups', cred => cred('owner.json'),
                               body => { name => 'Friends <b>' });
is($r->{status}, 200, 'a group of the first entity');

# the page's headers: its own files only, no framing
{
    my $r = http_request(path => '/', port => $port,
                         headers => { Host => "127.0.0.1:$port" });
    my $csp = $r->{headers}{'content-security-policy'} || '';
    like($csp, qr/script-src 'self'/, 'the page has a CSP');
    unlike($csp, qr/unsafe-inline|unsafe-eval/, 'without unsafe-inline');
    like($csp, qr/frame-ancestors 'none'/, 'the page may not be framed');
    unlike($r->{body}, qr/<script>|<style|\sstyle=|\son\w+=/i,
           'no inline script or style in the HTML');
    like($r->{headers}{link} || '', qr{rel="https://tent\.io/rels/profile"},
         'the page carries the discovery Link');
}

$chrome = Tent::Chrome->new(binary => $chromium, dir => "$tmp/chromium");
my $page = $chrome->page;
my $n = 0;

sub step {
    my ($name, $p) = @_;
    $p ||= $page;
    my $file = sprintf '%s/%02d-%s.png', $shots, ++$n, $name;
    ok($p->screenshot($file) > 1000, "screenshot $file");
}

sub text_of { $page->js("(document.querySelector('$_[0]') || {}).textContent") }

sub error_text { $page->js("document.getElementById('error').hidden ? '' : "
                           . "document.getElementById('error').textContent") }

sub feed_has {
    my ($p, $text, $timeout) = @_;
    my $q = JSON::PP->new->allow_nonref->encode($text);
    return $p->wait_js("Array.from(document.querySelectorAll('#feed .text'))"
                       . ".some((e) => e.textContent === $q)", $timeout);
}

# 1. an anonymous visitor, nothing posted yet
$page->go("$alice/");
ok($page->wait_js('document.body.dataset.ready'), 'the page loads');
is($page->js('document.body.dataset.state'), 'anonymous', 'anonymous');
is(text_of('#entity-url'), $alice, 'it names the entity');
ok($page->js("!document.getElementById('sign-in').hidden"),
   'a Sign in button');
ok($page->js("document.getElementById('compose').hidden"),
   'no compose form for anonymous visitors');
step('anonymous');

# the page's HTTP MAC gives the spec's test vectors (section 13)
for my $v (
    ['POST', 'http://example.com/resource/1?b=1&a=2', 1336363200, 'dj83hs9s',
     '489dks293j39', 'hmac-sha-1', 'SIBz/j9mI1Ba2Y+10wdwbQGv2Yk='],
    ['GET', 'http://example.com/resource/1?b=1&a=2', 1336363200, 'dj83hs9s',
     '489dks293j39', 'hmac-sha-1', '6T3zZzy2Emppni6bzL7kdRxUWL4='],
    ['POST', 'http://example.com/resource/1?b=1&a=2', 1336363200, 'dj83hs9s',
     '489dks293j39', 'hmac-sha-256',
     'Xt51rtHY5F+jxKXMCoiKgXa3geofWW/7RANCXB1yu08='],
    ['GET', 'http://example.com/posts?b=1&a=2', 1336363200, 'dj83hs9s',
     'c81c01908a35c460a07a98ab7167a2e8', 'hmac-sha-256',
     'iqYTKvVQGIwVYwrf0A9hEiKLdbQcwEvk802ZitOY+2w='],
) {
    my ($method, $url, $ts, $nonce, $key, $alg, $mac) = @$v;
    my $h = $page->js("import('/web/mac.js').then((m) => m.authorization("
        . "{ id: 'h480djs93hd8', key: '$key', algorithm: '$alg' }, "
        . "'$method', new URL('$url'), $ts, '$nonce'))");
    is($h, qq{MAC id="h480djs93hd8", ts="$ts", nonce="$nonce", mac="$mac"},
       "mac.js: the spec's vector, $method $url $alg");
}

# keyboard: the first Tab reaches Sign in
$page->key('Tab');
is($page->js('document.activeElement.id'), 'sign-in',
   'the first Tab reaches Sign in');

# only http(s) URLs become links
is_deeply($page->js("import('/web/api.js').then((m) => ["
    . "'javascript:alert(1)', ' JavaScript:alert(1)', 'java\\tscript:x', "
    . "'data:text/html,x', 'vbscript:x', '//evil.example/', 'file:///etc', "
    . "'https://ok.example', 'HTTP://OK.example/a'].map(m.httpUrl))"),
    [(undef) x 7, 'https://ok.example/', 'http://ok.example/a'],
    'httpUrl takes http and https URLs only');

# 2. sign in, denied first: said in words, nothing stored
$page->click('#sign-in');
ok($page->wait_js("!!document.querySelector('button[value=deny]')"),
   'the authorize page');
$page->click('button[value=deny]');
ok($page->wait_js("document.body.dataset.ready && "
                  . "!document.getElementById('error').hidden"),
   'denied: back at the page');
like(error_text(), qr/denied/, 'which says so');
is($page->js("localStorage.getItem('tent-web:auth')"), undef,
   'no credential');

# the page registers (it did: the app is kept), the owner approves, the
# code exchange
$page->click('#sign-in');
ok($page->wait_js("location.pathname === '/tent/oauth/authorize' && "
                  . "!!document.querySelector('button[value=approve]')"),
   'Sign in leads to the authorize page');
like($page->js('document.body.innerText'), qr/Tent web/,
     'the authorize page names the page as the app');
step('authorize');
my ($authz) = grep { ($_->{method} || '') eq 'Network.responseReceived'
                     && $_->{params}{response}{url} =~ m{/oauth/authorize\?} }
              $chrome->events;
my %ah = map { lc $_ => $authz->{params}{response}{headers}{$_} }
         keys %{ $authz ? $authz->{params}{response}{headers} : {} };
like($ah{'content-security-policy'} || '', qr/frame-ancestors 'none'/,
     'the authorize page may not be framed');
$page->click('button[value=approve]');
ok($page->wait_js("document.body.dataset.ready && "
                  . "document.body.dataset.state === 'signed-in'"),
   'approved: signed in');
is($page->js('location.search'), '', 'the code is gone from the address');
my $stored = $JSON->decode($page->js(
    "localStorage.getItem('tent-web:auth')") || 'null');
like($stored->{id} || '', qr/^u:/, 'the u: credential is in localStorage');
ok($page->js("!!document.querySelector('#compose:not([hidden])')"),
   'the compose form is shown');
step('signed-in');

# 3. a status
my $hello = 'Hello from the web page, é ü ✓';
$page->type('#status-text', $hello);
is(text_of('#status-count'), length($hello) . ' / 256', 'the counter');
$page->click('#post-button');
ok(feed_has($page, $hello), 'the status is in the feed');
is($page->js("document.getElementById('status-text').value"), '',
   'the text is cleared once posted');
step('posted');

# 256 characters as the server counts them (code points, not bytes or
# UTF-16 units): 256 four-byte characters are one status
my $long = "\x{1F600}" x 256;
$page->type('#status-text', $long);
is(text_of('#status-count'), '256 / 256', '256 emoji count as 256');
$page->click('#post-button');
ok(feed_has($page, $long), '256 emoji are accepted by the server');
$page->type('#status-text', $long . 'x');
ok($page->js("document.getElementById('status-count')"
             . ".classList.contains('over')"), '257 is shown as too long');
$page->click('#post-button');
like(error_text(), qr/at most 256 characters/, 'and refused in words');
is($page->js("document.getElementById('status-text').value"), $long . 'x',
   'the text stays');
step('too-long');

# an XSS attempt renders as text (posted with the keyboard: Tab from the
# text to the Post button, Enter)
my $xss = '<img src=x onerror="document.body.dataset.xss=1">'
        . '<script>document.body.dataset.xss=2</script>';
$page->type('#status-text', $xss);
$page->js("document.getElementById('status-entities').disabled || "
          . "document.getElementById('status-entities').focus(), "
          . "document.querySelector('input[name=visibility]:checked')"
          . ".focus(), true");
my $tabs = 0;
while ($page->js('document.activeElement.id') ne 'post-button'
       && $tabs++ < 10) {
    $page->key('Tab');
}
is($page->js('document.activeElement.id'), 'post-button',
   'Tab reaches the Post button');
$page->key('Enter');
ok(feed_has($page, $xss), 'markup in a status is shown as text');
ok($page->js("!document.querySelector('#feed .text img, #feed .text script')"
             . " && document.body.dataset.xss === undefined"),
   'no element made of it, nothing ran');
step('xss');

# a real PNG of w x h pixels, stored uncompressed: 3 bytes a pixel
sub png {
    my ($w, $h) = @_;
    my $raw = '';
    my $row = pack('C', 0) . join('', map { pack 'CCC', $_ % 256,
                                            ($_ * 7) % 256, 128 } 1 .. $w);
    $raw .= $row for 1 .. $h;
    my $chunk = sub {
        my ($type, $data) = @_;
        return pack('N', length $data) . $type . $data
               . pack('N', crc32($type . $data));
    };
    my $z = Compress::Zlib::deflateInit(-Level => 0);
    my ($d1) = $z->deflate($raw);
    my ($d2) = $z->flush;
    return "\x89PNG\r\n\x1a\n"
        . $chunk->('IHDR', pack('NNCCCCC', $w, $h, 8, 2, 0, 0, 0))
        . $chunk->('IDAT', $d1 . $d2) . $chunk->('IEND', '');
}

# 4. a photo of a few MB
{
    open my $fh, '>:raw', "$tmp/photo.png" or die $!;
    print {$fh} png(1000, 1000);
    close $fh;
}
cmp_ok(-s "$tmp/photo.png", '>', 2_900_000, 'a photo of about 3 MB');
$page->type('#status-text', 'A photo');
$page->set_files('#status-photo', "$tmp/photo.png");
$page->click('#post-button');
ok(feed_has($page, 'A photo', 60), 'the photo post is in the feed');
ok($page->wait_js("(() => { const i = document.querySelector("
                  . "'#feed .post .photos img'); return i && i.complete "
                  . "&& i.naturalWidth === 1000 })()", 30),
   'its photo is shown, fetched with the signature');
is(error_text(), '', 'no error');
step('photo');

# 5. follow the second entity; its post arrives in the feed
$page->click('#tabs button[data-tab=following]');
$page->type('#follow-url', 'http://127.0.0.1:1/');
$page->click('#follow-button');
ok($page->wait_js("!document.getElementById('error').hidden"),
   'following what does not answer fails');
my $err = error_text();
ok(length $err && $err !~ /^\d{3}\b/, "and says why in words ($err)");
$page->type('#follow-url', $bob);
$page->click('#follow-button');
ok($page->wait_js("Array.from(document.querySelectorAll('#followings a'))"
                  . ".some((a) => a.textContent === '$bob')"),
   'the second entity is in the followings list');
step('following');

my $bob_text = 'A post of the second entity';
$r = $bob_client->request(POST => '/posts', cred => $bob_cred, body => {
    type => 'https://tent.io/types/post/status/v0.1.0',
    content => { text => $bob_text }, permissions => { public => JSON::PP::true } });
is($r->{status}, 200, 'the second entity posts');
$page->click('#tabs button[data-tab=feed]');
my $arrived;
for (1 .. 50) {
    $page->click('#refresh');
    last if $arrived = feed_has($page, $bob_text, 0.5);
}
ok($arrived, "the second entity's post arrives in the feed");
ok($page->js("Array.from(document.querySelectorAll('#feed .post')).some("
             . "(p) => p.querySelector('.author').textContent === '$bob')"),
   'shown as the second entity\'s');
step('followed-post');

# a photo of the second entity: the received copy lists no attachment,
# the page asks the author's server through the following
{
    my $b = 'tentwebboundary';
    my $photo = png(40, 30);
    my $body = "--$b\r\nContent-Disposition: form-data; name=\"post\"\r\n"
        . "Content-Type: application/vnd.tent.v0+json\r\n\r\n"
        . $JSON->encode({ type => 'https://tent.io/types/post/photo/v0.1.0',
                          content => { caption => 'A photo of the second' },
                          permissions => { public => JSON::PP::true } })
        . "\r\n--$b\r\nContent-Disposition: form-data; name=\"photos[0]\"; "
        . "filename=\"small.png\"\r\nContent-Type: image/png\r\n\r\n"
        . $photo . "\r\n--$b--\r\n";
    $r = $bob_client->request(POST => '/posts', cred => $bob_cred,
        body => $body,
        headers => { 'Content-Type' => "multipart/form-data; boundary=$b" });
    is($r->{status}, 200, 'the second entity posts a photo');
}
my $photo_arrived;
for (1 .. 50) {
    $page->click('#refresh');
    last if $photo_arrived = feed_has($page, 'A photo of the second', 0.5);
}
ok($photo_arrived, 'its photo post arrives');
$page->click('#feed .post .photo-button:not([hidden])');
ok($page->wait_js("(() => { const i = document.querySelector("
                  . "'#feed .post .photos img'); return i && i.complete "
                  . "&& i.naturalWidth === 40 })()"),
   'Show photo fetches it from its server through the following');
step('followed-photo');

# followers: the second entity follows back
$r = $bob_client->request(POST => '/followings', cred => $bob_cred,
                          body => { entity => $alice });
is($r->{status}, 200, 'the second entity follows the first');
$page->click('#tabs button[data-tab=followers]');
ok($page->wait_js("Array.from(document.querySelectorAll('#followers a'))"
                  . ".some((a) => a.textContent === '$bob')"),
   'it is in the followers list');
step('followers');

# 6. a private post to the second entity
$page->click('#tabs button[data-tab=feed]');
my $secret = 'Only for the second entity';
$page->type('#status-text', $secret);
$page->click('input[name=visibility][value=private]');
$page->type('#status-entities', $bob);
$page->click('#post-button');
ok(feed_has($page, $secret), 'the private post is in the feed');
ok($page->js("!document.querySelector('#feed .post .private').hidden"),
   'marked private');
$page->click('#feed .post .deliveries-button');
ok($page->wait_js("/delivered 1/.test(document.querySelector("
                  . "'#feed .post .deliveries').textContent)", 5)
   || do {
       my $ok;
       for (1 .. 30) {
           $page->click('#feed .post .deliveries-button');
           last if $ok = $page->wait_js("/delivered 1/.test(document."
               . "querySelector('#feed .post .deliveries').textContent)", 0.5);
       }
       $ok;
   }, 'its delivery status says delivered to the second entity');
like(text_of('#feed .post .deliveries'), qr/\Q$bob\E — delivered/,
     'and names it');
step('private-delivered');

# to a group: its name shown as text, its id in the permissions
my $to_group = 'For the Friends group';
$page->js("document.getElementById('status-entities').value = '', true");
$page->type('#status-text', $to_group);
ok($page->js("Array.from(document.querySelectorAll('#status-groups label'))"
             . ".some((l) => l.textContent.trim() === 'Friends <b>')"),
   'the group is offered by its name, as text');
$page->click('#status-groups input');
$page->click('#post-button');
ok(feed_has($page, $to_group), 'the post to the group is in the feed');
my $posts = $alice_client->request(GET => '/posts?limit=5',
                                   cred => cred('owner.json'))->{json};
my ($gp) = grep { ($_->{content}{text} || '') eq $to_group } @$posts;
ok($gp && !$gp->{permissions}{public} && @{ $gp->{permissions}{groups} || [] },
   'stored private, to the group');
step('private-group');

# the signed-in page at a phone's width
$page->call('Emulation.setDeviceMetricsOverride', { width => 390,
    height => 844, deviceScaleFactor => 1, mobile => JSON::PP::true });
ok($page->wait_js('document.documentElement.scrollWidth <= 390'),
   'signed in, it fits a phone\'s width too');
step('signed-in-phone');
$page->call('Emulation.setDeviceMetricsOverride', { width => 900,
    height => 1000, deviceScaleFactor => 1, mobile => JSON::PP::false });

# 7. the profile: read and edit the basic section
$page->click('#tabs button[data-tab=profile]');
ok($page->wait_js("document.getElementById('profile-form').dataset.loaded "
                  . "=== 'true'"), 'the profile is read');
$page->type('#p-name', 'Alice Demo');
$page->type('#p-bio', 'Writes from a browser');
$page->click('#profile-save');
ok($page->wait_js("document.getElementById('entity-name').textContent "
                  . "=== 'Alice Demo'"), 'the profile name is saved');
$r = http_request(path => '/tent/profile', port => $port,
                  headers => { Host => "127.0.0.1:$port" });
like($r->{body}, qr/"bio":"Writes from a browser"/,
     'anyone reads the new basic profile');
step('profile');

# pages: Older posts follows the Link header's next page
{
    my $owner = cred('owner.json');
    for my $i (1 .. 22) {
        my $r = $alice_client->request(POST => '/posts', cred => $owner,
            body => { type => 'https://tent.io/types/post/status/v0.1.0',
                      content => { text => "Filler $i" },
                      permissions => { public => JSON::PP::true } });
        die "filler: $r->{status}" unless $r->{status} == 200;
    }
}
$page->click('#tabs button[data-tab=feed]');
$page->click('#refresh');
ok(feed_has($page, 'Filler 22'), 'the newest post first');
is($page->js("document.querySelectorAll('#feed .post').length"), 20,
   'a page of 20');
ok(!feed_has($page, $hello, 0.2), 'the first status is on a later page');
ok($page->js("!document.getElementById('older').hidden"),
   'an Older posts button');
$page->click('#older');
ok($page->wait_js("document.querySelectorAll('#feed .post').length > 20"),
   'Older posts adds the next page');
my $ids = $page->js("Array.from(document.querySelectorAll('#feed .post'),"
                    . " (p) => p.dataset.id)");
my %seen;
is(scalar(grep { $seen{$_}++ } @$ids), 0, 'no post twice');
my $more = 0;
while (!feed_has($page, $hello, 0.2) && $more++ < 5) {
    $page->click('#older');
}
ok(feed_has($page, $hello), 'the first status is reached by Older posts');
step('older');

# a browser clock an hour fast: the first signature is refused as out of
# tent_mac_skew, the page takes the server's Date and signs again
my $count401 = sub {
    scalar grep { ($_->{method} || '') eq 'Network.responseReceived'
                  && $_->{params}{response}{status} == 401 } $chrome->events;
};
my $before401 = $count401->();
$page->js("(() => { const now = Date.now.bind(Date); "
          . "Date.now = () => now() + 3600 * 1000; return true })()");
$page->js("document.getElementById('error').hidden = true");
$page->click('#refresh');
ok($page->wait_js("!document.getElementById('refresh').disabled && "
                  . "document.querySelectorAll('#feed .post').length === 20"),
   'with the clock an hour fast the feed still loads');
is(error_text(), '', 'no error: signed again with the server\'s time');
is($count401->() - $before401, 1, 'after one 401 for the time');

# 8. an anonymous visitor at the root: public posts only, read-only
my $ctx = $chrome->context;
my $anon = $chrome->page(context => $ctx, width => 390, height => 844,
                         mobile => 1);
$anon->go("$alice/");
ok($anon->wait_js('document.body.dataset.ready'), 'the anonymous page loads');
is($anon->js('document.body.dataset.state'), 'anonymous',
   'not signed in (another profile)');
ok(feed_has($anon, 'Filler 22'), 'it shows the newest public post');
# every page, so that what is absent is absent from all of them
for (1 .. 10) {
    last if $anon->js("document.getElementById('older').hidden");
    my $n = $anon->js("document.querySelectorAll('#feed .post').length");
    $anon->click('#older');
    $anon->wait_js("document.querySelectorAll('#feed .post').length > $n");
}
ok($anon->js("document.getElementById('older').hidden"),
   'Older posts reaches the last page');
ok(feed_has($anon, $hello), 'the public status is there');
ok(!feed_has($anon, $secret, 1), 'not the private one');
ok(!feed_has($anon, $to_group, 0.2), 'nor the one to a group');
like($anon->js('document.title'), qr/Alice Demo/, 'the profile name');
ok($anon->js("document.getElementById('compose').hidden && "
             . "document.querySelectorAll('#feed .deliveries-button:not([hidden])')"
             . ".length === 0"), 'and nothing to write with');
ok($anon->js('document.documentElement.scrollWidth <= 390'),
   'it fits a phone\'s width');
step('anonymous-phone', $anon);
$anon->go("$bob/");
ok($anon->wait_js('document.body.dataset.ready'),
   'the second entity has the page too');
is($anon->js("document.getElementById('entity-url').textContent"), $bob,
   'naming it');
ok(feed_has($anon, $bob_text), 'with its public post');
ok(!feed_has($anon, $hello, 0.2), 'and not the first entity\'s');
step('second-entity', $anon);

# the page opened by another name of the server (localhost): its API
# calls and the Link pages stay on the page's origin
$anon->go("http://localhost:$port/");
ok($anon->wait_js('document.body.dataset.ready'), 'the page by localhost');
ok(feed_has($anon, 'Filler 22'), 'reads the posts');
$anon->click('#older');
ok($anon->wait_js("document.querySelectorAll('#feed .post').length > 20"),
   'and the next page');
is($anon->js("document.getElementById('error').hidden ? '' : "
             . "document.getElementById('error').textContent"), '',
   'with no error');

# times in the reader's locale and time zone
$anon->call('Emulation.setLocaleOverride', { locale => 'de-DE' });
$anon->call('Emulation.setTimezoneOverride', { timezoneId => 'Asia/Tokyo' });
$anon->go("$alice/");
ok($anon->wait_js('document.body.dataset.ready'), 'the page in German');
my ($when, $iso) = @{ $anon->js("(() => { const t = document.querySelector("
    . "'#feed .when'); return [t.textContent, t.dateTime] })()") };
like($when, qr/^\d{2}\.\d{2}\.\d{4}, \d{2}:\d{2}$/,
     "a German date and time ($when)");
my @utc = gmtime(do { require Time::Local;
    my ($y, $mo, $d, $h, $mi, $se) = $iso =~ /(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)/;
    Time::Local::timegm($se, $mi, $h, $d, $mo - 1, $y) + 9 * 3600 });
is(substr($when, -5), sprintf('%02d:%02d', $utc[2], $utc[1]),
   'in Tokyo time (its datetime attribute is UTC)');
step('german-tokyo', $anon);
$anon->close;

# 9. unfollow
$page->click('#tabs button[data-tab=following]');
$page->wait_js("Array.from(document.querySelectorAll('#followings button'))"
               . ".length > 0");
$page->click('#followings button');
ok($page->wait_js("document.getElementById('confirm').open"),
   'Unfollow asks first');
$page->click('#confirm-ok');
ok($page->wait_js("!Array.from(document.querySelectorAll('#followings a'))"
                  . ".some((a) => a.textContent === '$bob')"),
   'unfollowed');
step('unfollowed');

# 10. a photo over tent_max_attachment_size: the module's error, in words,
# and the text stays
{
    open my $fh, '>:raw', "$tmp/big.png" or die $!;
    print {$fh} "\x89PNG\r\n\x1a\n", "\0" x (10 * 1024 * 1024 + 100_000);
    close $fh;
}
$page->click('#tabs button[data-tab=feed]');
$page->type('#status-text', 'Too big a photo');
$page->set_files('#status-photo', "$tmp/big.png");
$page->click('#post-button');
ok($page->wait_js("!document.getElementById('error').hidden", 60),
   'an attachment over 10m fails');
like(error_text(), qr/[a-z]{3,} .*[a-z]{3,}/i, 'with the module\'s words: '
     . error_text());
is($page->js("document.getElementById('status-text').value"),
   'Too big a photo', 'the text stays');
step('too-big');

# sign out: the server forgets the page's app and its authorization
{
    my $app = $JSON->decode($page->js("localStorage.getItem('tent-web:app')")
                            || '{}');
    my $u = { mac_key_id => $stored->{id}, mac_key => $stored->{key},
              mac_algorithm => $stored->{algorithm} };
    is($alice_client->request(GET => '/posts?limit=1', cred => $u)->{status},
       200, 'the u: key works before signing out');
    $page->click('#sign-out');
    ok($page->wait_js("document.body.dataset.state === 'anonymous' && "
                      . "/Signed out/.test(document.getElementById('notice')"
                      . ".textContent)"), 'signed out');
    is($page->js("localStorage.getItem('tent-web:auth')"), undef,
       'the credential is forgotten');
    is($alice_client->request(GET => '/posts?limit=1', cred => $u)->{status},
       401, 'and the u: key no longer works on the server');
    step('signed-out');
    $stored->{app_key} = $app->{key};
}

# the keys never left the browser: no request carried them, and every
# signed request went to the page's own origin
{
    my @keys = grep { defined && length } $stored->{key}, $stored->{app_key};
    is(scalar @keys, 2, 'the u: and a: MAC keys are known to the test');
    my ($sent, $signed, $leaks, $elsewhere) = (0, 0, 0, 0);
    for my $e ($chrome->events) {
        next unless ($e->{method} || '') eq 'Network.requestWillBeSent';
        my $req = $e->{params}{request};
        $sent++;
        my $all = join "\n", $req->{url}, %{ $req->{headers} || {} },
                             $req->{postData} // '';
        $leaks += grep { index($all, $_) >= 0 } @keys;
        my ($auth) = grep { lc eq 'authorization' } keys %{ $req->{headers} };
        next unless $auth;
        $signed++;
        $elsewhere++ if index($req->{url}, "$alice/") != 0
                        || $req->{headers}{$auth} !~ /^MAC id="[au]:/;
    }
    cmp_ok($signed, '>', 20, "$signed of $sent requests were signed");
    is($leaks, 0, 'no request carried a MAC key');
    is($elsewhere, 0, 'every signed request went to the page\'s origin');
}

my @js_errors = grep { ($_->{method} || '') eq 'Runtime.exceptionThrown' }
                $chrome->events;
is(scalar @js_errors, 0, 'no uncaught exception in the pages')
    or diag(explain(\@js_errors));

$chrome->quit;
system("$top/util/run-demo.sh stop >/dev/null");
my @asan = glob "$tmp/demo/logs/asan*";
is(scalar @asan, 0, 'no sanitizer report from the demo\'s nginx')
    or diag(map { local (@ARGV, $/) = $_; <> } @asan);
my @ubsan = do {
    open my $fh, '<', "$tmp/demo/logs/error.log" or die $!;
    grep { /runtime error:/ } <$fh>;
};
is(scalar @ubsan, 0, 'no UBSan report in its error log') or diag(@ubsan);
done_testing();
