# The profile page of any entity (issue 30, item 4; docs/web.md), and
# ActivityPub actors by their names (item 6), in Debian's chromium,
# headless, against make run's demo (Tent::WebDemo, two entities; the
# first speaks ActivityPub too, DEMO_ACTIVITYPUB) and a Tent::APPeer
# actor following it: a name in the feed opens the entity's profile
# (#entity?entity=…): its name (with markup and a bidi override, shown
# as text), face, bio, website, URL and its posts through our following;
# Follow / Unfollow (asked first) and Block / Unblock with the keyboard
# alone, one notice at a time, each stored on the server; a blocked
# entity's posts leave the feed and come back once unblocked; Back
# returns to the feed; the actor listed and opened by its name; nothing
# to change for an anonymous visitor.

use strict;
use warnings;
use utf8;

use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use JSON::PP;
use Tent::APPeer;
use Tent::Client;
use Tent::WebDemo;

binmode Test::More->builder->$_, ':utf8' for qw(output failure_output);

$ENV{DEMO_ACTIVITYPUB} = 1;
my $w = Tent::WebDemo->start(name => 'profile');
my $page = $w->page;
my ($alice, $bob) = @$w{qw(alice bob)};
my ($ac, $acred) = ($w->owner_client, $w->owner_cred);
my ($bc, $bcred) = ($w->bob_client, $w->bob_cred);
my $BASIC = 'https%3A%2F%2Ftent.io%2Ftypes%2Finfo%2Fbasic%2Fv0.1.0';
my $Q = JSON::PP->new->allow_nonref;

my $bob_name = 'Bob <img src=x onerror="document.body.dataset.xss=1">';
is($ac->request(PUT => "/profile/$BASIC", cred => $acred, body => {
    name => 'Alice Example', permissions => { public => JSON::PP::true } })
   ->{status}, 200, 'the first entity names itself');
is($bc->request(PUT => "/profile/$BASIC", cred => $bcred, body => {
    name => "\x{202E}$bob_name", bio => 'Builds <b>things</b>',
    website_url => 'https://bob.example/site',
    permissions => { public => JSON::PP::true } })->{status}, 200,
   'the second: a name with markup and a bidi override, a bio, a website');
is($ac->request(POST => '/followings', cred => $acred,
                body => { entity => $bob })->{status}, 200,
   'the first follows the second');
is($bc->request(POST => '/followings', cred => $bcred,
                body => { entity => $alice })->{status}, 200,
   'and the second the first');
$w->post_status($bc, $bcred, 'A status of the second');
my $mine = $w->post_status($ac, $acred, 'A status of mine');
is($bc->request(POST => '/posts', cred => $bcred, body => {
    type => 'https://tent.io/types/post/repost/v0.1.0',
    content => { entity => $alice, id => $mine->{id} },
    mentions => [{ entity => $alice, post => $mine->{id} }],
    permissions => { public => JSON::PP::true } })->{status}, 200,
   'the second reposts the first\'s post');

# an ActivityPub actor follows the first entity (its Person named)
my $ap = Tent::APPeer->start(names => ['carol']);
my $CAROL = $ap->actor_url('carol');
$ap->{cfg}{actors}{carol}{name} = "Carol \x{202E}<i>Fedi</i>";
$ap->_save_config;
is($ap->follow($alice, as => 'carol',
               inbox => "$alice/tent/activitypub/shared-inbox"), 202,
   'an ActivityPub actor follows the first entity');
# her note to it with a photo on her server (a link, never fetched by
# the page) and a javascript: one (dropped by the inbox's mapping)
is($ap->create_note(as => 'carol', to => [$alice], mentions => [$alice],
                    content => '<p>a cat for you</p>',
                    inbox => "$alice/tent/activitypub/shared-inbox",
                    attachments => [
                        { url => 'https://media.example/cat.png',
                          mediaType => 'image/png', name => 'A <b>cat</b>' },
                        { url => 'javascript:alert(1)', name => 'evil' }]),
   202, 'her note to the first entity, with attachments');

sub blocks {
    my $r = $ac->request(GET => '/blocks', cred => $acred);
    diag("GET /blocks: $r->{status} $r->{body}") unless $r->{status} == 200;
    return [map { $_->{entity} } @{ ref $r->{json} eq 'ARRAY'
                                    ? $r->{json} : [] }];
}

sub following_bob {
    my $r = $ac->request(GET => '/followings?entity='
                                . Tent::Client::uri_escape($bob),
                         cred => $acred);
    return scalar grep { $_->{entity} eq $bob } @{ $r->{json} || [] };
}

sub active { $page->js('document.activeElement.id || '
                       . 'document.activeElement.className') }

# Tab until the element is focused (at most n presses)
sub tab_to {
    my ($id, $n) = @_;
    for (1 .. $n || 12) {
        return 1 if $page->js("document.activeElement.id === '$id'");
        $page->key('Tab');
    }
    return $page->js("document.activeElement.id === '$id'");
}

sub notices_ok {
    my ($re, $what) = @_;
    ok($page->wait_js("document.getElementById('error').hidden && "
                      . "$re.test(document.getElementById('notice')"
                      . ".textContent)"), "$what: said once, no error");
}

# anonymous: the profile shows, nothing to change
$page->go("$alice/#entity?" . 'entity=' . Tent::Client::uri_escape($alice));
ok($page->wait_js("document.body.dataset.ready && "
                  . "!document.getElementById('tab-entity').hidden"),
   'an anonymous visitor opens a profile by its address');
ok($page->wait_js("Array.from(document.querySelectorAll('#ent-posts "
                  . ".text')).some((t) => t.textContent === "
                  . "'A status of mine')"), '... its public posts');
is($page->js("Array.from(document.querySelectorAll('.ent-card button'))"
             . ".filter((b) => !b.hidden).length"), 0,
   '... no Follow nor Block for an anonymous visitor');

$w->sign_in;
my $arrived;
for (1 .. 50) {
    $page->click('#refresh');
    last if $arrived = $w->feed_has($page, 'A status of the second', 0.5);
}
ok($arrived, 'the second entity\'s status is in the feed');
ok($page->wait_js("!document.getElementById('refresh').disabled"),
   'the feed is loaded');

ok($page->wait_js("Array.from(document.querySelectorAll('#feed "
                  . ".reposted:not([hidden]) a.reposter')).some((a) => "
                  . "a.getAttribute('href').startsWith('#entity?') && "
                  . "a.dataset.entity === '$bob')"),
   '"reposted by" links to the reposter\'s profile');

# the profile from the feed's author, with the keyboard
my $post = "Array.from(document.querySelectorAll('#feed .post')).find((p) "
         . "=> p.querySelector('.text').textContent === "
         . "'A status of the second')";
like($page->js("($post).querySelector('.author').getAttribute('href')"),
     qr/^#entity\?entity=/, 'an author\'s name links to its profile');
$page->js("($post).querySelector('.author').focus(), true");
$page->key('Enter');
ok($page->wait_js("!document.getElementById('tab-entity').hidden && "
                  . "document.getElementById('tab-feed').hidden"),
   'Enter on the name opens the profile');
like($page->js('decodeURIComponent(location.hash)'),
     qr/^#entity\?entity=\Q$bob\E$/, 'the address names it');
is(active(), 'ent-title', 'the focus on its heading');
ok($page->wait_js("document.querySelector('#ent-who .name') && "
                  . "document.querySelector('#ent-who .name').textContent"
                  . " === " . $Q->encode($bob_name)),
   'its name, as text, without the bidi override');
is($page->js("document.querySelectorAll('#tab-entity img, "
             . "#ent-who .name *').length"), 0, 'its markup made no element');
is($page->js('document.body.dataset.xss'), undef, 'nothing ran');
is($page->js("document.querySelector('#ent-who .face').dataset.initial"),
   'B', 'its first letter for a face');
is($page->js("document.getElementById('ent-link').textContent"), $bob,
   'its URL');
is($page->js("document.getElementById('ent-link').href"), "$bob/",
   '... linked');
is($page->js("document.getElementById('ent-bio').textContent"),
   'Builds <b>things</b>', 'its bio, as text');
is($page->js("document.querySelector('#ent-website a').href"),
   'https://bob.example/site', 'its website');
ok($page->wait_js("/You follow it\\./.test(document.getElementById("
                  . "'ent-rel').textContent) && /It follows you/.test("
                  . "document.getElementById('ent-rel').textContent)"),
   'followed and following');
ok($page->wait_js("Array.from(document.querySelectorAll('#ent-posts "
                  . ".text')).some((t) => t.textContent === "
                  . "'A status of the second')"), 'its posts');
is($page->js("Array.from(document.querySelectorAll('#ent-posts .post'))"
             . ".every((p) => p.querySelector('.author').title === "
             . "'$bob' || (p.dataset.repost && p.querySelector("
             . "'.reposter').dataset.entity === '$bob'))"), JSON::PP::true,
   '... its own only (its repost shown as the original, reposted by it)');
is_deeply($page->js("['ent-follow', 'ent-unfollow', 'ent-block', "
                    . "'ent-unblock'].map((id) => "
                    . "!document.getElementById(id).hidden)"),
          [JSON::PP::false, JSON::PP::true, JSON::PP::true, JSON::PP::false],
          'Unfollow and Block offered');
like($page->js("document.getElementById('ent-unfollow')"
               . ".getAttribute('aria-label')"), qr/^Unfollow Bob/,
     'labelled with its name');
Tent::WebDemo::axe_ok($page, 'a profile');
Tent::WebDemo::controls_ok($page, 'a profile');
$w->step('profile');
$page->call('Emulation.setEmulatedMedia', { features => [
    { name => 'prefers-color-scheme', value => 'dark' } ] });
Tent::WebDemo::axe_ok($page, 'a profile, dark');
Tent::WebDemo::controls_ok($page, 'a profile, dark');
$w->step('profile-dark');
$page->call('Emulation.setEmulatedMedia', { features => [
    { name => 'prefers-color-scheme', value => 'light' } ] });
$page->call('Emulation.setDeviceMetricsOverride', { width => 390,
    height => 844, deviceScaleFactor => 1, mobile => JSON::PP::true });
ok($page->wait_js('document.documentElement.scrollWidth <= 390'),
   'a profile fits a phone\'s width');
Tent::WebDemo::axe_ok($page, 'a profile at a phone\'s width');
$w->step('profile-phone');
$page->call('Emulation.setDeviceMetricsOverride', { width => 900,
    height => 1000, deviceScaleFactor => 1, mobile => JSON::PP::false });
$page->js("document.getElementById('ent-title').focus(), true");

# Unfollow: asked first; Escape keeps it, OK (the keyboard) ends it
ok(tab_to('ent-unfollow'), 'Tab reaches Unfollow');
ok($page->js("document.getElementById('ent-unfollow')"
             . ".matches(':focus-visible')"), '... its focus visible');
$page->key('Enter');
ok($page->wait_js("document.getElementById('confirm').open && "
                  . "/^Stop following Bob/.test(document.getElementById("
                  . "'confirm-text').textContent)"), 'asked first, by name');
$w->step('profile-unfollow-asked');
$page->key('Escape');
ok($page->wait_js("!document.getElementById('confirm').open && "
                  . "document.activeElement.id === 'ent-unfollow'"),
   'Escape: not unfollowed, the focus back');
ok(following_bob(), '... still following');
$page->key('Enter');
ok($page->wait_js("document.getElementById('confirm').open"),
   'asked again');
$page->key('Tab');
is(active(), 'confirm-ok', 'Tab to OK');
$page->key('Enter');
notices_ok('/^Unfollowed Bob/', 'unfollowed');
ok($page->wait_js("document.activeElement.id === 'ent-follow'"),
   'the focus on Follow');
ok(!following_bob(), 'the following is gone from the server');

# Follow again with Enter
$page->key('Enter');
notices_ok('/^Following Bob/', 'followed');
ok($page->wait_js("document.activeElement.id === 'ent-unfollow'"),
   'the focus on Unfollow');
ok(following_bob(), 'following it on the server');

# Block: asked, then its posts leave the feed
ok(tab_to('ent-block'), 'Tab reaches Block');
$page->key('Enter');
ok($page->wait_js("document.getElementById('confirm').open && "
                  . "/^Block Bob/.test(document.getElementById("
                  . "'confirm-text').textContent)"), 'Block asks first');
$page->key('Tab');
$page->key('Enter');
notices_ok('/^Blocked Bob/', 'blocked');
ok($page->wait_js("document.activeElement.id === 'ent-unblock'"),
   'the focus on Unblock');
is_deeply(blocks(), [$bob], 'blocked on the server');
ok($page->wait_js("/Blocked/.test(document.getElementById('ent-rel')"
                  . ".textContent) && !document.getElementById('ent-empty')"
                  . ".hidden && !document.querySelector('#ent-posts .post')"),
   'the profile says so and shows none of its posts');
$w->step('profile-blocked');
Tent::WebDemo::axe_ok($page, 'a blocked entity\'s profile');

# Back to the feed: the blocked entity's posts are gone
$page->js('history.back(), true');
ok($page->wait_js("!document.getElementById('tab-feed').hidden && "
                  . "document.getElementById('tab-entity').hidden && "
                  . "location.hash === ''"), 'Back returns to the feed');
ok($page->wait_js("!Array.from(document.querySelectorAll('#feed .text'))"
                  . ".some((t) => t.textContent === "
                  . "'A status of the second') && "
                  . "Array.from(document.querySelectorAll('#feed .text'))"
                  . ".some((t) => t.textContent === 'A status of mine')"),
   'the blocked entity\'s posts are gone from the feed');
$page->js('history.forward(), true');
ok($page->wait_js("!document.getElementById('tab-entity').hidden && "
                  . "!document.getElementById('ent-unblock').hidden"),
   'Forward opens the profile again');

# Unblock with the keyboard: the posts come back
$page->js("document.getElementById('ent-unblock').focus(), true");
$page->key('Enter');
notices_ok('/^Unblocked Bob/', 'unblocked');
ok($page->wait_js("document.activeElement.id === 'ent-block'"),
   'the focus on Block');
is_deeply(blocks(), [], 'unblocked on the server');
$page->click('#ent-back');
ok($w->feed_has($page, 'A status of the second'),
   'its posts are in the feed again');

# the ActivityPub actor, by its name, in the followers and its profile
$page->click('#tabs button[data-tab=followers]');
ok($page->wait_js("Array.from(document.querySelectorAll('#followers "
                  . ".entity')).some((a) => a.dataset.entity === "
                  . $Q->encode($CAROL) . " && a.querySelector('.name') && "
                  . "a.querySelector('.name').textContent === "
                  . "'Carol <i>Fedi</i>')"),
   'the ActivityPub follower listed by its name, as text');
$w->step('profile-ap-followers');
$page->js("Array.from(document.querySelectorAll('#followers .entity'))"
          . ".find((a) => a.dataset.entity === " . $Q->encode($CAROL)
          . ").focus(), true");
$page->key('Enter');
ok($page->wait_js("!document.getElementById('tab-entity').hidden && "
                  . "document.querySelector('#ent-who .name') && "
                  . "document.querySelector('#ent-who .name').textContent"
                  . " === 'Carol <i>Fedi</i>'"),
   'its profile, by its name');
ok($page->wait_js("/It follows you/.test(document.getElementById('ent-rel')"
                  . ".textContent)"), '... a follower');
is($page->js("document.querySelector('#ent-who .face').dataset.initial"),
   'C', '... its first letter for a face');
is($page->js("document.getElementById('ent-link').textContent"), $CAROL,
   '... its URL');
ok($page->wait_js("Array.from(document.querySelectorAll('#ent-posts .post "
                  . ".links a')).some((a) => a.textContent === "
                  . "'Attachment: A <b>cat</b> (image/png)' && a.href === "
                  . "'https://media.example/cat.png' && a.rel.includes("
                  . "'noreferrer'))"),
   '... its note\'s photo as a link to its server, named as text');
is($page->js("Array.from(document.querySelectorAll('a')).filter((a) => "
             . "/^javascript:/i.test(a.getAttribute('href') || '')).length"),
   0, '... no javascript: link');
is($page->js("performance.getEntriesByType('resource').filter((e) => "
             . "e.name.includes('media.example')).length"), 0,
   '... nothing fetched from that server');
Tent::WebDemo::axe_ok($page, 'an ActivityPub actor\'s profile');
$w->step('profile-ap');

# reached from a notification's name too
$page->click('#tabs button[data-tab=notifications]');
ok($page->wait_js("Array.from(document.querySelectorAll('#notifications "
                  . "a.entity')).some((a) => a.getAttribute('href')"
                  . ".startsWith('#entity?'))"),
   'a notification\'s name links to the profile');

$ap->stop;
$w->finish;
done_testing();
