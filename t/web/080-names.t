# Names and faces (issue 30, point 4, for the entities whose profile
# this server has; docs/web.md), in Debian's chromium, headless, against
# make run's demo (Tent::WebDemo): the entity's own name and avatar (an
# attachment of its own origin) on its posts, a followed entity's name
# (from the profile kept with the following) on its post and in the
# followings and followers lists, its face (its avatar is on another
# origin: through the module's GET {api}/avatars/:entity, the page
# itself asking nothing of that origin), the URL on hover and focus and in the
# title; a name with markup shown as text; an anonymous visitor sees
# the entity's own public name.

use strict;
use warnings;
use utf8;

use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use JSON::PP;
use Tent::WebDemo;

binmode Test::More->builder->$_, ':utf8' for qw(output failure_output);

my $w = Tent::WebDemo->start(name => 'names');
my $page = $w->page;
my ($alice, $bob) = @$w{qw(alice bob)};
my ($ac, $acred) = ($w->owner_client, $w->owner_cred);
my ($bc, $bcred) = ($w->bob_client, $w->bob_cred);
my $JSON = JSON::PP->new->utf8->canonical;
my $BASIC = 'https%3A%2F%2Ftent.io%2Ftypes%2Finfo%2Fbasic%2Fv0.1.0';

# an entity's avatar: a public photo of its own (SIZE pixels), on its
# origin: its URL
sub face {
    my ($client, $cred, $origin, $size) = @_;
    my $b = 'namesboundary';
    my $r = $client->request(POST => '/posts', cred => $cred,
        headers => { 'Content-Type' => "multipart/form-data; boundary=$b" },
        body => "--$b\r\nContent-Disposition: form-data; name=\"post\"\r\n"
              . "Content-Type: application/vnd.tent.v0+json\r\n\r\n"
              . $JSON->encode({
                    type => 'https://tent.io/types/post/photo/v0.1.0',
                    content => { caption => 'my face' },
                    permissions => { public => JSON::PP::true } })
              . "\r\n--$b\r\nContent-Disposition: form-data; "
              . "name=\"photos[0]\"; filename=\"face.png\"\r\n"
              . "Content-Type: image/png\r\n\r\n"
              . Tent::WebDemo::png($size, $size) . "\r\n--$b--\r\n");
    is($r->{status}, 200, "a photo for the avatar of $origin");
    my $att = $r->{json}{attachments}[0]{name} // '';
    return "$origin/tent/posts/$r->{json}{id}/attachments/$att";
}

my $avatar = face($ac, $acred, $alice, 32);
my $bob_avatar = face($bc, $bcred, $bob, 24);
my $r;

$r = $ac->request(PUT => "/profile/$BASIC", cred => $acred, body => {
    name => 'Alice Example', avatar_url => $avatar,
    permissions => { public => JSON::PP::true } });
is($r->{status}, 200, 'the first entity\'s name and avatar');
my $bob_name = 'Bob <img src=x onerror="document.body.dataset.xss=1">';
my $bidi = "\x{202E}"; # a right-to-left override: dropped from the name
$r = $bc->request(PUT => "/profile/$BASIC", cred => $bcred, body => {
    name => "$bidi$bob_name", avatar_url => $bob_avatar,
    permissions => { public => JSON::PP::true } });
is($r->{status}, 200, 'the second entity\'s name, with markup');
is($ac->request(POST => '/followings', cred => $acred,
                body => { entity => $bob })->{status}, 200,
   'the first follows the second');
is($bc->request(POST => '/followings', cred => $bcred,
                body => { entity => $alice })->{status}, 200,
   'and the second the first');
$w->post_status($ac, $acred, 'A status of mine');
$w->post_status($bc, $bcred, 'A status of the second');

# the entity by its name, as a JavaScript expression on the post's author
sub author {
    my ($p, $text, $what) = @_;
    my $q = JSON::PP->new->allow_nonref->encode($text);
    return $p->js("(() => { const p = Array.from(document.querySelectorAll("
        . "'#feed .post')).find((p) => p.querySelector('.text')"
        . ".textContent === $q); const a = p && p.querySelector('.author');"
        . " return a && $what })()");
}

# anonymous: the entity's own public name on its posts
$page->go("$alice/");
ok($page->wait_js('document.body.dataset.ready'), 'the anonymous page');
ok($w->feed_has($page, 'A status of mine'), 'its status');
is(author($page, 'A status of mine', "a.querySelector('.name').textContent"),
   'Alice Example', 'shown by the entity\'s name');
is(author($page, 'A status of mine', 'a.title'), $alice,
   'its URL in the title');

$w->sign_in;
my $arrived;
for (1 .. 50) {
    $page->click('#refresh');
    last if $arrived = $w->feed_has($page, 'A status of the second', 0.5);
}
ok($arrived, 'the followed entity\'s status arrives');
ok($page->wait_js("!document.getElementById('refresh').disabled"),
   'no refresh under way');
ok($page->wait_js("!!Array.from(document.querySelectorAll('#feed .author"
                  . " .name')).find((n) => n.textContent.startsWith('Bob'))"),
   'its name is shown once the followings are read');
is(author($page, 'A status of the second',
          "a.querySelector('.name').textContent"), $bob_name,
   'the name kept with the following, as text');
is($page->js("document.querySelectorAll('#feed .author .name *, "
             . "#feed .author img:not(.face img), #feed script').length"), 0,
   'its markup made no element');
is($page->js('document.body.dataset.xss'), undef, 'nothing ran');
ok($page->wait_js("(() => { const p = Array.from(document.querySelectorAll("
                  . "'#feed .post')).find((p) => p.querySelector('.text')"
                  . ".textContent === 'A status of the second'); const i = p"
                  . " && p.querySelector('.author .face img'); return i && "
                  . "i.complete && i.naturalWidth === 24 })()"),
   'its face, though its avatar is on another origin');
like(author($page, 'A status of the second',
            "a.querySelector('.face img').src"), qr/^blob:/,
     '... from a blob: of what the module served');
is($page->js("performance.getEntriesByType('resource').filter((e) => "
             . "e.name.startsWith(" . $JSON->encode($bob) . ")).length"), 0,
   '... the page asked nothing of that origin');
ok(scalar(grep { m{/tent/avatars/} }
          map { $_->{name} } @{ $page->js("performance.getEntriesByType("
                                          . "'resource').map((e) => "
                                          . "({ name: e.name }))") || [] }),
   '... but our own /avatars/ route');
is(author($page, 'A status of the second', 'a.title'), $bob,
   'its URL in the title');
is(author($page, 'A status of the second',
          "getComputedStyle(a.querySelector('.url')).position"), 'absolute',
   'the URL is not shown by default');
is(author($page, 'A status of the second',
          "(a.focus(), getComputedStyle(a.querySelector('.url')).position)"),
   'static', 'it is shown on focus');
is(author($page, 'A status of the second', "a.querySelector('.url')"
          . ".textContent"), $bob, 'the whole URL');
ok($page->wait_js("(() => { const p = Array.from(document.querySelectorAll("
                  . "'#feed .post')).find((p) => p.querySelector('.text')"
                  . ".textContent === 'A status of mine'); const i = p && "
                  . "p.querySelector('.author .face img'); return i && "
                  . "i.complete && i.naturalWidth === 32 })()"),
   'the entity\'s own avatar, from its origin');
$w->step('names-feed');
Tent::WebDemo::axe_ok($page, 'names and faces in the feed');

$page->click('#tabs button[data-tab=following]');
ok($page->wait_js("Array.from(document.querySelectorAll('#followings "
                  . ".name')).some((n) => n.textContent === "
                  . JSON::PP->new->allow_nonref->encode($bob_name) . ")"),
   'the followings list by name');
$page->click('#tabs button[data-tab=followers]');
ok($page->wait_js("Array.from(document.querySelectorAll('#followers "
                  . ".entity')).some((a) => a.title === '$bob' && "
                  . "a.querySelector('.name'))"),
   'the followers list too');
$w->step('names-followers');
Tent::WebDemo::axe_ok($page, 'the followers by name');

# a private post's delivery status names its recipient
$page->click('#tabs button[data-tab=feed]');
$page->type('#status-text', 'For the second only');
$page->click('input[name=visibility][value=private]');
$page->type('#status-entities', $bob);
$page->click('#post-button');
ok($w->feed_has($page, 'For the second only'), 'a private post');
my $named;
for (1 .. 30) {             # its delivery is made after the answer
    $page->click('#feed .post .deliveries-button');
    last if $named = $page->wait_js("(() => { const n = document."
        . "querySelector('#feed .post .deliveries .entity .name'); return n"
        . " && n.textContent.startsWith('Bob') && n.closest('.entity')"
        . ".title === '$bob' })()", 0.5);
}
ok($named, 'its delivery status names the recipient');
$w->step('names-deliveries');

$page->call('Emulation.setDeviceMetricsOverride', { width => 390,
    height => 844, deviceScaleFactor => 1, mobile => JSON::PP::true });
$page->click('#tabs button[data-tab=feed]');
$page->js("document.querySelector('#feed .author').focus(), true");
ok($page->wait_js('document.documentElement.scrollWidth <= 390'),
   'a focused name with its URL fits a phone\'s width');
$w->step('names-phone');
Tent::WebDemo::axe_ok($page, 'a focused name at a phone\'s width');

$page->call('Emulation.setDeviceMetricsOverride', { width => 900,
    height => 1000, deviceScaleFactor => 1, mobile => JSON::PP::false });

# kept in the browser: a reload names the entity before the followings
# are read again (their request held)
like($page->js("localStorage.getItem('tent-web:people')") || '',
     qr/\Q$bob\E/, 'the names are kept in localStorage');
$page->call('Fetch.enable', { patterns => [
    { urlPattern => '*/tent/followings*' },
    { urlPattern => '*/tent/followers*' },
    { urlPattern => '*/tent/apps/*' } ] });
my $seen = scalar $w->chrome->events;
$page->go("$alice/");
ok($w->feed_has($page, 'A status of the second'), 'reloaded');
my $held;
for (1 .. 100) {
    ($held) = grep { ($_->{method} || '') eq 'Fetch.requestPaused' }
              ($w->chrome->events)[$seen .. scalar($w->chrome->events) - 1];
    last if $held;
    $page->js('1');
    select undef, undef, undef, 0.1;
}
ok($held, 'the followings\' request is held');
is(author($page, 'A status of the second',
          "a.querySelector('.name') && a.querySelector('.name').textContent"),
   $bob_name, 'the name is shown from the browser\'s copy');
$seen = scalar $w->chrome->events;
$page->call('Fetch.continueRequest',
            { requestId => $held->{params}{requestId} }) if $held;

# the followers' request, asked next, held in its turn
my $held2;
for (1 .. 100) {
    ($held2) = grep { ($_->{method} || '') eq 'Fetch.requestPaused'
                      && ($_->{params}{request}{url} || '') =~ /followers/ }
               ($w->chrome->events)[$seen .. scalar($w->chrome->events) - 1];
    last if $held2;
    $page->js('1');
    select undef, undef, undef, 0.1;
}
ok($held2, 'the followers\' request is held');

# signing out forgets them, the entity's own name stays; the followers'
# answer, let go only after it (and before the app's deletion revokes
# the key it was signed with), keeps nothing
$seen = scalar $w->chrome->events;
$page->click('#sign-out');
ok($page->wait_js("document.body.dataset.state === 'anonymous' && "
                  . "!document.getElementById('refresh').disabled"),
   'signed out');
my $held3;
for (1 .. 100) {
    ($held3) = grep { ($_->{method} || '') eq 'Fetch.requestPaused'
                      && ($_->{params}{request}{url} || '') =~ m{/apps/} }
               ($w->chrome->events)[$seen .. scalar($w->chrome->events) - 1];
    last if $held3;
    $page->js('1');
    select undef, undef, undef, 0.1;
}
ok($held3, 'the app\'s deletion is held');
$page->call('Fetch.continueRequest',
            { requestId => $held2->{params}{requestId} }) if $held2;
ok($page->wait_js("performance.getEntriesByType('resource').some((e) => "
                  . "e.name.includes('/tent/followers?limit=200'))"),
   'the followers\' answer came');
select undef, undef, undef, 0.5;    # read a few turns later
$page->call('Fetch.continueRequest',
            { requestId => $held3->{params}{requestId} }) if $held3;
$page->call('Fetch.disable');
ok($page->wait_js("/app is deleted/.test(document.body.textContent)"),
   'the app deleted');
is($page->js("localStorage.getItem('tent-web:people')"), undef,
   'the names are forgotten');
ok($w->feed_has($page, 'A status of mine'), 'the public posts');
is(author($page, 'A status of mine', "a.querySelector('.name').textContent"),
   'Alice Example', 'by the entity\'s own name still');

$w->finish;
done_testing();
