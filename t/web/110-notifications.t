# Notifications (issue 30, point 3; docs/web.md), in Debian's chromium,
# headless, against make run's demo (Tent::WebDemo, two entities on one
# nginx): one view with the mentions of the owner, the replies to its
# posts, the reposts of them and its new followers, by the other's name,
# and an unread count on its tab kept in localStorage (the newest seen):
# gone once the view is seen, across a reload, back for a new mention;
# nothing of the owner's own posts nor of others' posts that do not
# concern it; nothing for an anonymous visitor; forgotten on sign out.

use strict;
use warnings;
use utf8;

use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use JSON::PP;
use Tent::WebDemo;

binmode Test::More->builder->$_, ':utf8' for qw(output failure_output);

my $w = Tent::WebDemo->start(name => 'notes');
my $page = $w->page;
my ($alice, $bob) = @$w{qw(alice bob)};
my ($ac, $acred) = ($w->owner_client, $w->owner_cred);
my ($bc, $bcred) = ($w->bob_client, $w->bob_cred);
my $BASIC = 'https%3A%2F%2Ftent.io%2Ftypes%2Finfo%2Fbasic%2Fv0.1.0';
my $REPOST = 'https://tent.io/types/post/repost/v0.1.0';

for ([$ac, $acred, 'Alice Example'], [$bc, $bcred, 'Bob Example']) {
    my ($c, $cr, $name) = @$_;
    is($c->request(PUT => "/profile/$BASIC", cred => $cr, body => {
        name => $name, permissions => { public => JSON::PP::true } })
       ->{status}, 200, "$name names itself");
}
is($ac->request(POST => '/followings', cred => $acred,
                body => { entity => $bob })->{status}, 200,
   'the first follows the second');
is($bc->request(POST => '/followings', cred => $bcred,
                body => { entity => $alice })->{status}, 200,
   'and the second the first: a new follower');

my $mine = $w->post_status($ac, $acred, 'Anyone there?');
$w->post_status($ac, $acred, 'A post of mine mentioning myself',
                mentions => [{ entity => $alice }]);
my $other = $w->post_status($bc, $bcred, 'Nothing to do with the first');
$w->post_status($bc, $bcred, 'Here I am',
                mentions => [{ entity => $alice, post => $mine->{id} }]);
$w->post_status($bc, $bcred, 'Say hello to the first',
                mentions => [{ entity => $alice }]);
$w->post_status($bc, $bcred, 'Answering myself',
                mentions => [{ entity => $bob, post => $other->{id} }]);
for ([$alice, $mine->{id}], [$bob, $other->{id}]) {
    my ($e, $id) = @$_;
    is($bc->request(POST => '/posts', cred => $bcred, body => {
        type => $REPOST, content => { entity => $e, id => $id },
        mentions => [{ entity => $e, post => $id }],
        permissions => { public => JSON::PP::true } })->{status}, 200,
       "a repost of a post of $e");
}

# anonymous: no notifications
$page->go("$alice/");
ok($page->wait_js('document.body.dataset.ready'), 'the anonymous page');
ok($page->js("document.getElementById('tabs').hidden"),
   'no tabs, no notifications for an anonymous visitor');

$w->sign_in;
my $unread = "(() => { const u = document.getElementById('unread'); "
           . "return u.hidden ? 0 : Number(u.textContent.match(/\\d+/)[0])"
           . " })()";
my $four;
for (1 .. 50) {
    $page->click('#refresh');
    last if $four = $page->wait_js("$unread === 4", 0.5);
}
ok($four, 'four unread on the tab: a follower, a reply, a mention, a '
   . 'repost') or diag($page->js($unread));
like($page->js("document.querySelector('#tabs button[data-tab="
               . "notifications]').textContent.replace(/\\s+/g, ' ')"),
     qr/^Notifications 4 unread\s*$/, 'the tab says it in words');
$w->step('notifications-unread');

$page->click('#tabs button[data-tab=notifications]');
ok($page->wait_js("document.querySelectorAll('#notifications .note')"
                  . ".length === 4"), 'the view lists four');
my $notes = $page->js("Array.from(document.querySelectorAll("
    . "'#notifications .note'), (n) => [n.dataset.kind, n.querySelector("
    . "'.what .name').textContent, n.querySelector('.what').textContent"
    . ".replace(n.querySelector('.what .entity').textContent, '')"
    . ".replace(/ · .*/, ''), (n.querySelector('.text') || {}).textContent"
    . ", n.classList.contains('unread')])");
my %by = map { $_->[0] => $_ } @$notes;
is_deeply([sort keys %by], [qw(follower mention reply repost)],
          'one of each kind');
is_deeply($by{reply}, ['reply', 'Bob Example', ' replied to your post',
                       'Here I am', JSON::PP::true], 'the reply');
is_deeply($by{mention}, ['mention', 'Bob Example', ' mentioned you',
                         'Say hello to the first', JSON::PP::true],
          'the mention');
is_deeply($by{repost}, ['repost', 'Bob Example', ' reposted your post',
                        undef, JSON::PP::true], 'the repost');
is_deeply($by{follower}, ['follower', 'Bob Example', ' followed you',
                          undef, JSON::PP::true], 'the new follower');
like($page->js("document.querySelector('#notifications .note[data-kind="
               . "repost] a.open').getAttribute('href')"),
     qr/^#thread\?.*\Q$mine->{id}\E/, 'the repost links to the post');
ok($page->wait_js("document.getElementById('unread').hidden"),
   'seen: no count on the tab');
like($page->js("localStorage.getItem('tent-web:seen')"), qr/"at":\d+/,
     'the newest seen kept in localStorage');
Tent::WebDemo::axe_ok($page, 'the notifications');
$w->step('notifications');
$page->call('Emulation.setDeviceMetricsOverride', { width => 390,
    height => 844, deviceScaleFactor => 1, mobile => JSON::PP::true });
ok($page->wait_js('document.documentElement.scrollWidth <= 390'),
   'the notifications fit a phone\'s width');
Tent::WebDemo::axe_ok($page, 'the notifications at a phone\'s width');
$w->step('notifications-phone');
$page->call('Emulation.setDeviceMetricsOverride', { width => 900,
    height => 1000, deviceScaleFactor => 1, mobile => JSON::PP::false });

# a reload: still seen
$page->go("$alice/");
ok($page->wait_js("document.body.dataset.ready && document.body.dataset"
                  . ".state === 'signed-in'"), 'reloaded');
select undef, undef, undef, 0.5;
ok($page->wait_js("document.getElementById('unread').hidden"),
   'no count after a reload');

# a new mention: one unread, marked in the view
sleep 1;                    # a second after the newest seen
$w->post_status($bc, $bcred, 'One more for the first',
                mentions => [{ entity => $alice }]);
my $one;
for (1 .. 50) {
    $page->click('#refresh');
    last if $one = $page->wait_js("$unread === 1", 0.5);
}
ok($one, 'a new mention: one unread');
$page->click('#tabs button[data-tab=notifications]');
ok($page->wait_js("document.querySelectorAll('#notifications .note')"
                  . ".length === 5"), 'five listed');
is_deeply($page->js("Array.from(document.querySelectorAll("
                    . "'#notifications .note.unread .text'), (e) => "
                    . "e.textContent)"), ['One more for the first'],
          'the new one alone marked unread, first');

# the reply's conversation from the view
$page->click("#notifications .note[data-kind=reply] a.open");
ok($page->wait_js("!document.getElementById('tab-thread').hidden && "
                  . "document.querySelectorAll('#thread .post').length === 2"),
   'a reply opens its conversation');

# signing out forgets what was seen
$page->click('#sign-out');
ok($page->wait_js("document.body.dataset.state === 'anonymous'"),
   'signed out');
is($page->js("localStorage.getItem('tent-web:seen')"), undef,
   'what was seen is forgotten');

$w->finish;
done_testing();
