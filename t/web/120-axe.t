# The web page accessible and light (issue 30, point 9; docs/web.md
# "Accessibility"), in Debian's chromium, headless, against make run's
# demo (Tent::WebDemo): axe-core (t/web/axe/axe.min.js, committed, put in
# the page through the DevTools protocol) finds no serious or critical
# violation on every view a person reaches, nor is a control's edge or
# placeholder too faint (which it does not measure), light and dark and
# at a phone's width: anonymous, the authorize page, the feed signed in with
# a photo and a private post, the composer, an edit, the confirmation
# dialog, a post's delivery status, an error, the followings, followers
# and profile; the keyboard alone reaches the composer, Post and each
# post's actions, each with a visible focus.  (The page's 150 KB budget
# is util/lint.sh's.)

use strict;
use warnings;

use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use JSON::PP;
use Tent::WebDemo;

my $w = Tent::WebDemo->start(name => 'axe');
my $page = $w->page;
my ($alice, $bob) = @$w{qw(alice bob)};
my $client = $w->owner_client;
my $cred = $w->owner_cred;
my $JS = JSON::PP->new->allow_nonref;

# what the feed holds: a status, a private post to the second entity
# (delivered there: its delivery status has a recipient), a status and
# a photo of the followed second entity, which follows back; the first
# entity's photo is posted from the composer below
is($client->request(POST => '/followings', cred => $cred,
                    body => { entity => $bob })->{status}, 200,
   'the first entity follows the second');
is($w->bob_client->request(POST => '/followings', cred => $w->bob_cred,
                           body => { entity => $alice })->{status}, 200,
   'which follows back: a follower to list');
$w->post_status($w->bob_client, $w->bob_cred, 'A post of the second entity');
{
    # a photo of the second entity: its received copy has Show photo
    my $b = 'tentaxeboundary';
    my $body = "--$b\r\nContent-Disposition: form-data; name=\"post\"\r\n"
        . "Content-Type: application/vnd.tent.v0+json\r\n\r\n"
        . JSON::PP->new->encode({
              type => 'https://tent.io/types/post/photo/v0.1.0',
              content => { caption => 'A photo of the second entity' },
              permissions => { public => JSON::PP::true } })
        . "\r\n--$b\r\nContent-Disposition: form-data; "
        . "name=\"photos[0]\"; filename=\"small.png\"\r\n"
        . "Content-Type: image/png\r\n\r\n"
        . Tent::WebDemo::png(40, 30) . "\r\n--$b--\r\n";
    is($w->bob_client->request(POST => '/posts', cred => $w->bob_cred,
           body => $body, headers => {
               'Content-Type' => "multipart/form-data; boundary=$b" })
           ->{status}, 200, 'the second entity posts a photo');
}
$w->post_status($client, $cred, 'A public status');
$w->post_status($client, $cred, 'A private post',
                permissions => { public => JSON::PP::false,
                                 entities => { $bob => JSON::PP::true } },
                mentions => [ { entity => $bob } ]);

# axe-core, and the contrast of the controls' edges and placeholders,
# which it does not measure
sub axe {
    my ($view, $p) = @_;
    Tent::WebDemo::axe_ok($p || $page, $view);
    Tent::WebDemo::controls_ok($p || $page, $view);
}

sub theme {
    my ($scheme) = @_;
    $page->call('Emulation.setEmulatedMedia', { features => [
        { name => 'prefers-color-scheme', value => $scheme } ] });
}

sub width {
    my ($px) = @_;
    $page->call('Emulation.setDeviceMetricsOverride', {
        width => $px, height => $px < 600 ? 844 : 1000,
        deviceScaleFactor => 1,
        mobile => $px < 600 ? JSON::PP::true : JSON::PP::false });
}

sub post_of {
    my ($text) = @_;
    return "Array.from(document.querySelectorAll('#feed .post')).find("
         . "(p) => p.querySelector('.text').textContent === "
         . $JS->encode($text) . ")";
}

# the page loaded; signed in, with the second entity's photo post,
# delivered after its answer (Refresh until it is there)
sub loaded {
    my $idle = "!document.getElementById('refresh').disabled";
    return 0 unless $page->wait_js('document.body.dataset.ready')
                    && $w->feed_has($page, 'A public status');
    if ($page->js('document.body.dataset.state') eq 'signed-in') {
        my $in;
        for (1 .. 30) {
            last if $in = $w->feed_has($page, 'A photo of the second entity',
                                       0.5);
            $page->wait_js($idle);
            $page->click('#refresh');
        }
        return 0 unless $in;
    }
    return $page->wait_js($idle);
}

# anonymous
$page->go("$alice/");
ok(loaded(), 'the anonymous page');
ok($page->js("!(typeof axe === 'object')"),
   'axe-core is not in the page of itself');
axe('anonymous');
$w->step('anonymous');

# the sign-in: the authorize page, then approved
$page->click('#sign-in');
ok($page->wait_js("location.pathname === '/tent/oauth/authorize' && "
                  . "!!document.querySelector('button[value=approve]')"),
   'Sign in leads to the authorize page');
my $authorize = $page->js('location.href');
axe('the authorize page');
$page->click('button[value=approve]');
ok($page->wait_js("document.body.dataset.ready && "
                  . "document.body.dataset.state === 'signed-in'"),
   'the owner signs in');
ok(loaded(), 'the feed');

# the composer in use: a caption, a photo chosen, private to an entity
{
    open my $fh, '>:raw', "$w->{tmp}/photo.png" or die $!;
    print {$fh} Tent::WebDemo::png(48, 32);
    close $fh;
}
$page->type('#status-text', 'A photo');
$page->set_files('#status-photo', "$w->{tmp}/photo.png");
$page->click('input[name=visibility][value=private]');
ok($page->wait_js("!document.getElementById('status-entities').disabled"),
   'private: the entities asked for');
$page->type('#status-entities', $bob);
axe('the composer, private, with a photo');
$w->step('composer');
$page->click('input[name=visibility][value=public]');
$page->click('#post-button');
ok($w->feed_has($page, 'A photo'), 'the photo posted');
ok($page->wait_js("(() => { const i = (" . post_of('A photo') . ")"
                  . ".querySelector('.photos img'); return i && i.complete"
                  . " && i.naturalWidth === 48 })()"), 'and shown');
ok($page->wait_js("!(" . post_of('A private post')
                  . ").querySelector('.badge.private').hidden"),
   'the private post marked private');

# each view of the signed-in page, light then dark
my @views = (
    [ 'the feed, signed in' => sub {
        $page->click('#tabs button[data-tab=feed]');
        1;
    } ],
    [ "a post's delivery status" => sub {
        $page->js(post_of('A private post')
                  . ".querySelector('.deliveries-button').click(), true");
        $page->wait_js("(() => { const b = (" . post_of('A private post')
                       . ").querySelector('.deliveries'); return !b.hidden"
                       . " && b.querySelectorAll('li').length })()");
    } ],
    [ 'an edit' => sub {
        $page->js(post_of('A public status')
                  . ".querySelector('.edit-button').click(), true");
        $page->wait_js("document.activeElement.classList"
                       . ".contains('edit-text')");
    }, sub { $page->key('Escape') } ],
    [ 'the confirmation dialog' => sub {
        $page->js(post_of('A public status')
                  . ".querySelector('.delete-button').click(), true");
        $page->wait_js("document.getElementById('confirm').open");
    }, sub {
        $page->key('Escape');
        $page->wait_js("!document.getElementById('confirm').open");
    } ],
    [ 'an error' => sub {
        $page->click('#tabs button[data-tab=following]');
        $page->type('#follow-url', 'http://127.0.0.1:1/');
        $page->click('#follow-button');
        $page->wait_js("!document.getElementById('error').hidden", 30);
    } ],
    [ 'the followings' => sub {
        $page->click('#tabs button[data-tab=following]');
        $page->wait_js("document.querySelectorAll('#followings li')"
                       . ".length");
    } ],
    [ 'the followers' => sub {
        $page->click('#tabs button[data-tab=followers]');
        $page->wait_js("document.querySelectorAll('#followers li').length");
    } ],
    [ 'the profile form' => sub {
        $page->click('#tabs button[data-tab=profile]');
        $page->wait_js("!document.getElementById('profile-fields')"
                       . ".disabled");
    } ],
);

for my $scheme (qw(light dark)) {
    theme($scheme);
    $page->go("$alice/");
    ok(loaded(), "the page, $scheme");
    is($page->js("matchMedia('(prefers-color-scheme: dark)').matches")
           ? 'dark' : 'light', $scheme, "the system's setting: $scheme");
    for my $v (@views) {
        my ($name, $show, $hide) = @$v;
        ok($show->(), "$name ($scheme)");
        axe("$name, $scheme");
        $w->step("$scheme-" . ($name =~ s/\W+/-/gr));
        $hide->() if $hide;
    }
    $page->go($authorize);
    ok($page->wait_js("!!document.querySelector('button[value=approve]')"),
       "the authorize page ($scheme)");
    axe("the authorize page, $scheme");
}

# a phone's width, each theme: the feed signed in and the authorize
# page; then an anonymous visitor's
for my $scheme (qw(light dark)) {
    theme($scheme);
    width(390);
    $page->go("$alice/");
    ok(loaded(), "390 px wide, $scheme");
    ok($page->js('document.documentElement.scrollWidth <= 390'),
       'no horizontal scrolling');
    axe("the feed, 390 px, $scheme");
    $w->step("phone-$scheme");
    $page->go($authorize);
    ok($page->wait_js("!!document.querySelector('button[value=approve]')"),
       "the authorize page, 390 px, $scheme");
    axe("the authorize page, 390 px, $scheme");
}
# WCAG's reflow: 320 CSS pixels (a 1280 px screen zoomed to 400 %)
# without scrolling sideways, each section and the authorize page
width(320);
$page->go("$alice/");
ok(loaded(), '320 px wide');
for my $tab (qw(feed following followers profile)) {
    $page->click("#tabs button[data-tab=$tab]");
    ok($page->wait_js('document.documentElement.scrollWidth <= 320', 2),
       "$tab: no horizontal scrolling at 320 px")
        or diag($page->js("Array.from(document.querySelectorAll('body *'))"
                          . ".filter((e) => e.getBoundingClientRect().right"
                          . " > 320).map((e) => e.tagName + '#' + e.id + '.'"
                          . " + e.className + ' ' + e.getBoundingClientRect()"
                          . ".right).join(', ')"));
}
$w->step('reflow-320');
$page->go($authorize);
ok($page->wait_js("!!document.querySelector('button[value=approve]')"
                  . " && document.documentElement.scrollWidth <= 320"),
   'nor on the authorize page');
width(900);
theme('light');

{
    my $anon = $w->chrome->page(context => $w->chrome->context,
                                width => 390, mobile => 1);
    $anon->go("$alice/");
    ok($anon->wait_js('document.body.dataset.ready && document.body'
                      . ".dataset.state === 'anonymous'"),
       'anonymous, 390 px');
    ok($anon->wait_js("document.querySelectorAll('#feed .post').length"),
       'its posts');
    axe('anonymous, 390 px', $anon);
    $w->step('phone-anonymous', $anon);
    $anon->close;
}

# the keyboard alone: from the top, Tab reaches the composer, Post and
# every action of every post, each focus visible (the :focus-visible
# outline, or a shadow)
$page->go("$alice/");
ok(loaded(), 'the page, for the keyboard');
ok($page->wait_js("document.querySelectorAll('#feed .post .actions "
                  . "button:not([hidden])').length >= 8"),
   "the posts' actions shown");
$page->js(<<'JS');
window.tabbed = new Set();
window.unseen = [];
window.focusOf = () => {
    const e = document.activeElement;
    if (!e || e === document.body) {
        return 'body';
    }
    window.tabbed.add(e);
    const s = getComputedStyle(e);
    const outline = s.outlineStyle !== 'none'
                    && parseFloat(s.outlineWidth) > 0
                    && s.outlineColor !== 'rgba(0, 0, 0, 0)';
    if (!e.matches(':focus-visible') || !(outline || s.boxShadow !== 'none')) {
        window.unseen.push(e.outerHTML.slice(0, 120));
    }
    return e.id || e.className || e.tagName;
};
true
JS
my @path;
my $all = "Array.from(document.querySelectorAll('#feed .post .actions "
        . "button:not([hidden])'))";
for (1 .. 150) {
    $page->key('Tab');
    push @path, $page->js('focusOf()');
    last if $page->js("$all.every((b) => tabbed.has(b))");
}
note('Tab: ' . join(', ', @path));
ok($page->js("tabbed.has(document.getElementById('status-text'))"),
   'Tab reaches the composer');
ok($page->js("tabbed.has(document.getElementById('status-photo'))"),
   'its photo');
ok($page->js("tabbed.has(document.querySelector("
             . "'input[name=visibility]:checked'))"), 'who may see it');
ok($page->js("tabbed.has(document.getElementById('post-button'))"),
   'and Post');
is($page->js("$all.filter((b) => !tabbed.has(b)).length"), 0,
   "and every post's actions")
    or diag($page->js("$all.filter((b) => !tabbed.has(b)).map((b) => "
                      . "b.className).join(', ')"));
is_deeply($page->js('unseen'), [], 'each focus visible');
$w->step('keyboard');

# a post's actions used with the keyboard: the focus stays where the
# person is, not thrown back to the top of the page
$page->js(post_of('A private post')
          . ".querySelector('.deliveries-button').focus(), true");
$page->key('Enter');
ok($page->wait_js("!(" . post_of('A private post')
                  . ").querySelector('.deliveries').hidden"),
   'Enter on Delivery status shows it');
ok($page->wait_js("!document.querySelector('.deliveries-button:disabled')"),
   'done');
ok($page->js("document.activeElement === (" . post_of('A private post')
             . ").querySelector('.deliveries-button')"),
   'the focus still on Delivery status')
    or diag($page->js('document.activeElement.outerHTML.slice(0, 200)'));
$page->js(post_of('A photo of the second entity')
          . ".querySelector('.photo-button').focus(), true");
$page->key('Enter');
ok($page->wait_js("(() => { const i = (" . post_of('A photo of the second '
                  . 'entity') . ").querySelector('.photos img'); return i"
                  . " && i.complete && i.naturalWidth === 40 })()"),
   'Enter on Show photo shows it');
ok($page->wait_js("(" . post_of('A photo of the second entity')
                  . ").contains(document.activeElement)", 2),
   'the focus stays in that post, Show photo gone')
    or diag($page->js('document.activeElement.outerHTML.slice(0, 200)'));
ok($page->js("document.activeElement.matches(':focus-visible') && "
             . "getComputedStyle(document.activeElement).outlineStyle "
             . "!== 'none'"), 'on the photo, visibly');
$w->step('show-photo-keyboard');
$page->key('Tab');
ok($page->js("!document.activeElement.matches('.photos img') && "
             . "document.activeElement.matches('button, a') && "
             . "document.activeElement.closest('#feed')"),
   'Tab goes on from the photo, to the next action in the feed')
    or diag($page->js('document.activeElement.outerHTML.slice(0, 200)'));

$w->finish;
done_testing();
