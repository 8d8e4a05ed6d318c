# Conversations (issue 30, point 1; docs/web.md), in Debian's chromium,
# headless, against make run's demo (Tent::WebDemo, two entities on one
# nginx): a reply made from the page is a status mentioning the post
# ({"entity", "post"}); a reply shows "in reply to" its author by name,
# linked to the conversation; the conversation shows the chain up to
# the top and the replies below it that this server has, the opened
# post marked; a parent this server lacks is asked through the
# following; one nobody has is said so.  No Reply for an anonymous
# visitor, and a private reply is not listed to one by ?mentioned_post=.

use strict;
use warnings;
use utf8;

use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use JSON::PP;

use Tent::WebDemo;

binmode Test::More->builder->$_, ':utf8' for qw(output failure_output);

my $w = Tent::WebDemo->start(name => 'threads');
my $page = $w->page;
my ($alice, $bob) = @$w{qw(alice bob)};
my ($ac, $acred) = ($w->owner_client, $w->owner_cred);
my ($bc, $bcred) = ($w->bob_client, $w->bob_cred);
my $BASIC = 'https%3A%2F%2Ftent.io%2Ftypes%2Finfo%2Fbasic%2Fv0.1.0';
my $Q = JSON::PP->new->allow_nonref;

for ([$ac, $acred, 'Alice Example'], [$bc, $bcred, 'Bob Example']) {
    my ($c, $cr, $name) = @$_;
    is($c->request(PUT => "/profile/$BASIC", cred => $cr, body => {
        name => $name, permissions => { public => JSON::PP::true } })
       ->{status}, 200, "$name names itself");
}

# a post of the second entity's for the first, before the first follows
# it: the first server never gets it
my $old = $w->post_status($bc, $bcred, 'An old post of the second',
    permissions => { public => JSON::PP::false,
                     entities => { $alice => JSON::PP::true } });
is($ac->request(POST => '/followings', cred => $acred,
                body => { entity => $bob })->{status}, 200,
   'the first follows the second');
is($bc->request(POST => '/followings', cred => $bcred,
                body => { entity => $alice })->{status}, 200,
   'and the second the first');

my $top = $w->post_status($ac, $acred, 'Where shall we meet?');
my $reply = $w->post_status($bc, $bcred, 'At the station',
    mentions => [{ entity => $alice, post => $top->{id} }]);
my $later = $w->post_status($bc, $bcred, 'Following up on my old post',
    mentions => [{ entity => $bob, post => $old->{id} }]);
my $orphan = $w->post_status($bc, $bcred, 'Answering a lost post',
    mentions => [{ entity => $bob, post => 'nosuchpost0000' }]);
my $private = $w->post_status($bc, $bcred, 'Only for the first',
    permissions => { public => JSON::PP::false,
                     entities => { $alice => JSON::PP::true } });

sub post_of {
    my ($list, $text) = @_;
    return "Array.from(document.querySelectorAll('$list .post')).find("
         . "(p) => p.querySelector('.text').textContent === "
         . $Q->encode($text) . ")";
}

# anonymous: no Reply
$page->go("$alice/");
ok($page->wait_js('document.body.dataset.ready'), 'the anonymous page');
ok($w->feed_has($page, 'Where shall we meet?'), 'its public post');
is($page->js("document.querySelectorAll('.reply-button:not([hidden])')"
             . ".length"), 0, 'no Reply for an anonymous visitor');

$w->sign_in;
my $arrived;
for (1 .. 50) {
    $page->click('#refresh');
    last if $arrived = $w->feed_has($page, 'Answering a lost post', 0.5)
                       && $w->feed_has($page, 'Only for the first', 0.1)
                       && $w->feed_has($page, 'At the station', 0.1)
                       && $w->feed_has($page, 'Following up on my old post',
                                       0.1);
}
ok($arrived, 'the second entity\'s replies arrive');
ok($page->wait_js("!document.getElementById('refresh').disabled"),
   'the feed is loaded');

# "in reply to" the author, by name, linked to the conversation
ok($page->wait_js("(() => { const p = " . post_of('#feed', 'At the station')
                  . "; const r = p && p.querySelector('.in-reply'); return "
                  . "r && !r.hidden && /^in reply to/.test(r.textContent) "
                  . "&& r.querySelector('.name') && r.querySelector('.name')"
                  . ".textContent === 'Alice Example' })()"),
   'a reply says "in reply to" its parent\'s author by name');
is($page->js("(" . post_of('#feed', 'Where shall we meet?')
             . ").querySelector('.in-reply').hidden"), JSON::PP::true,
   'a post that answers none says nothing');
my $href = $page->js("(" . post_of('#feed', 'At the station')
                     . ").querySelector('.in-reply a').getAttribute('href')");
like($href, qr/^#thread\?/, 'its link opens the conversation');
like($href, qr/\Q$top->{id}\E/, 'of the parent post');

# a reply from the page, with the keyboard
$page->js("(" . post_of('#feed', 'At the station')
          . ").querySelector('.reply-button').click(), true");
ok($page->wait_js("document.activeElement.classList.contains('reply-text')"),
   'Reply opens a text field, focused');
$page->type('.post .reply-form:not([hidden]) .reply-text', 'Not this');
$page->key('Escape');
ok($page->wait_js("document.activeElement.classList.contains("
                  . "'reply-button')"), 'Escape closes it');
$page->key('Enter');
ok($page->wait_js("document.activeElement.classList.contains('reply-text')"),
   'opened again with the keyboard');
$page->type('.post .reply-form:not([hidden]) .reply-text', 'x' x 257);
$page->click('.post .reply-form:not([hidden]) .reply-send');
ok($page->wait_js("!document.getElementById('error').hidden"),
   'a reply over 256 characters is refused');
$page->type('.post .reply-form:not([hidden]) .reply-text', 'See you there');
$page->click('.post .reply-form:not([hidden]) .reply-send');
ok($w->feed_has($page, 'See you there'), 'the reply is in the feed');
my $r = $ac->request(GET => '/posts?limit=5&mentioned_post=' . $reply->{id},
                     cred => $acred);
my ($mine) = grep { $_->{entity} eq $alice } @{ $r->{json} || [] };
ok($mine, 'stored, found by ?mentioned_post=');
is_deeply($mine && $mine->{mentions},
          [{ entity => $bob, post => $reply->{id} }],
          'a status mentioning the post and its entity');
is($mine && $mine->{permissions}{public}, JSON::PP::true,
   'public as the post it answers');
is($mine && $mine->{content}{text}, 'See you there', 'its text');

# a reply to a private post is private to its author
$page->js("(" . post_of('#feed', 'Only for the first')
          . ").querySelector('.reply-button').click(), true");
$page->type('.post .reply-form:not([hidden]) .reply-text', 'Between us');
$page->click('.post .reply-form:not([hidden]) .reply-send');
ok($w->feed_has($page, 'Between us'), 'a reply to a private post');
$r = $ac->request(GET => '/posts?limit=5&mentioned_post=' . $private->{id},
                  cred => $acred);
($mine) = grep { $_->{entity} eq $alice } @{ $r->{json} || [] };
is($mine && $mine->{permissions}{public}, JSON::PP::false, 'private');
is_deeply($mine && [sort keys %{ $mine->{permissions}{entities} || {} }],
          [$bob], 'to the post\'s author alone');

# the conversation: opened from the reply's "in reply to"
$page->js("(" . post_of('#feed', 'See you there')
          . ").querySelector('.in-reply a').click(), true");
ok($page->wait_js("!document.getElementById('tab-thread').hidden && "
                  . "document.querySelectorAll('#thread .post').length === 3"),
   'the conversation is shown');
my $shown = $page->js("Array.from(document.querySelectorAll('#thread .post'"
    . ")).map((p) => [p.querySelector('.text').textContent, p.dataset.depth,"
    . " p.classList.contains('opened')])");
is_deeply($shown, [['Where shall we meet?', '0', JSON::PP::false],
                   ['At the station', '1', JSON::PP::true],
                   ['See you there', '2', JSON::PP::false]],
          'the top, the reply opened, the reply to it, in order');
ok($page->js("document.getElementById('tab-feed').hidden"),
   'the feed is hidden meanwhile');
like($page->js('location.hash'), qr/^#thread\?/, 'the address names it');
Tent::WebDemo::axe_ok($page, 'the conversation');
$w->step('thread');
$page->call('Emulation.setDeviceMetricsOverride', { width => 390,
    height => 844, deviceScaleFactor => 1, mobile => JSON::PP::true });
ok($page->wait_js('document.documentElement.scrollWidth <= 390'),
   'the conversation fits a phone\'s width');
Tent::WebDemo::axe_ok($page, 'the conversation at a phone\'s width');
$w->step('thread-phone');
$page->call('Emulation.setDeviceMetricsOverride', { width => 900,
    height => 1000, deviceScaleFactor => 1, mobile => JSON::PP::false });

# replying within the conversation puts the reply under its post
$page->js("(" . post_of('#thread', 'Where shall we meet?')
          . ").querySelector('.reply-button').click(), true");
$page->type('#thread .reply-form:not([hidden]) .reply-text', 'Or the cafe');
$page->click('#thread .reply-form:not([hidden]) .reply-send');
ok($page->wait_js("(() => { const p = " . post_of('#thread', 'Or the cafe')
                  . "; return p && p.dataset.depth === '1' && p."
                  . "previousElementSibling.querySelector('.text')"
                  . ".textContent === 'Where shall we meet?' })()"),
   'a reply in the conversation goes under its post');

# back to the posts, then a parent this server does not give (its read
# answered 404 by the DevTools Fetch domain: the demo's two entities
# share a store, which hands the first a copy): asked of the second
# entity's server through the following
$page->click('#thread-back');
ok($page->wait_js("!document.getElementById('tab-feed').hidden && "
                  . "document.getElementById('tab-thread').hidden"),
   'Back shows the posts again');
$page->call('Fetch.enable', { patterns => [
    { urlPattern => "*/tent/posts/*/$old->{id}" } ] });
my $seen = scalar $w->chrome->events;
$page->js("(" . post_of('#feed', 'Following up on my old post')
          . ").querySelector('.permalink').click(), true");
my $held = 0;
for (1 .. 100) {
    my @ev = $w->chrome->events;
    for my $e (@ev[$seen .. $#ev]) {
        next unless ($e->{method} || '') eq 'Fetch.requestPaused';
        $held++;
        $page->call('Fetch.fulfillRequest', {
            requestId => $e->{params}{requestId}, responseCode => 404,
            responseHeaders => [{ name => 'Content-Type',
                                  value => 'application/json' }],
            body => 'eyJlcnJvciI6Ik5vdCBGb3VuZCJ9' });  # {"error":"Not Found"}
    }
    $seen = scalar @ev;
    last if $page->js("document.querySelectorAll('#thread .post').length"
                      . " === 2");
    select undef, undef, undef, 0.1;
}
$page->call('Fetch.disable');
ok($held, 'this server\'s read of the parent answered 404');
ok($page->wait_js("document.querySelectorAll('#thread .post').length === 2"
                  . " && document.querySelector('#thread .post .text')"
                  . ".textContent === 'An old post of the second'"),
   'the parent is read through the following');
ok($page->js("(" . post_of('#thread', 'An old post of the second')
             . ").querySelector('.private').hidden === false"),
   '(private to the first)');
my $log = do { local (@ARGV, $/) = "$w->{tmp}/demo/logs/access.log"; <> };
like($log, qr{"GET /tent/followings/\w+/posts/\Q$old->{id}\E HTTP/1.1" 200},
     'by GET /followings/:id/posts/:post_id');

# a parent nobody has
$page->go("$alice/#thread?entity=" . Tent::Client::uri_escape($bob)
          . "&post=$orphan->{id}");
ok($page->wait_js("!document.getElementById('thread-missing').hidden && "
                  . "document.querySelectorAll('#thread .post').length === 1"),
   'a lost parent is said so, the post shown');
like($page->js("document.getElementById('thread-missing').textContent"),
     qr/earlier post of .*Bob Example.* that this server does not have/,
     'in words, by name');
$w->step('thread-missing');

# two conversations opened one after the other: the first, answering
# last (its replies' read held), does not mix into the second
$page->js("location.hash = '#'; true");
$page->call('Fetch.enable', { patterns => [
    { urlPattern => "*/tent/posts?*mentioned_post=$top->{id}*" } ] });
$seen = scalar $w->chrome->events;
$page->js("location.hash = " . $Q->encode(
    "#thread?entity=" . Tent::Client::uri_escape($alice)
    . "&post=$top->{id}") . "; true");
my $paused;
for (1 .. 100) {
    my @ev = $w->chrome->events;
    ($paused) = grep { ($_->{method} || '') eq 'Fetch.requestPaused' }
                @ev[$seen .. $#ev];
    last if $paused;
    $page->js('1');
    select undef, undef, undef, 0.1;
}
ok($paused, 'the first conversation\'s replies are held');
$page->js("location.hash = " . $Q->encode(
    "#thread?entity=" . Tent::Client::uri_escape($bob)
    . "&post=$orphan->{id}") . "; true");
ok($page->wait_js("!document.getElementById('thread-missing').hidden && "
                  . "document.querySelectorAll('#thread .post').length === 1"),
   'the second is shown');
$page->call('Fetch.continueRequest',
            { requestId => $paused->{params}{requestId} }) if $paused;
$page->call('Fetch.disable');
ok(!$page->wait_js("document.querySelectorAll('#thread .post').length "
                   . "!== 1", 3), 'the first, answering late, is not shown');
is($page->js("document.querySelector('#thread .post .text').textContent"),
   'Answering a lost post', 'the second stays');

# a private reply is not listed to an anonymous reader
is($ac->request(POST => '/posts', cred => $acred, body => {
    type => 'https://tent.io/types/post/status/v0.1.0',
    content => { text => 'Just between us' },
    mentions => [{ entity => $alice, post => $top->{id} }],
    permissions => { public => JSON::PP::false } })->{status}, 200,
   'a private reply');
$r = $ac->request(GET => "/posts?mentioned_post=$top->{id}");
my @anon = map { $_->{content}{text} } @{ $r->{json} || [] };
ok((grep { $_ eq 'Or the cafe' } @anon), 'anonymous: the public reply');
ok(!(grep { $_ eq 'Just between us' } @anon), 'not the private one');
$r = $ac->request(GET => "/posts?mentioned_post=$top->{id}", cred => $bcred);
is($r->{status}, 401, 'nor another entity\'s credential');

# the anonymous conversation: the entity's own public posts
$page->click('#sign-out');
ok($page->wait_js("document.body.dataset.state === 'anonymous'"),
   'signed out');
$page->go("$alice/#thread?entity=" . Tent::Client::uri_escape($alice)
          . "&post=$top->{id}");
ok($page->wait_js("(() => { const t = Array.from(document.querySelectorAll("
                  . "'#thread .post .text'), (e) => e.textContent); return "
                  . "t.includes('Where shall we meet?') && t.includes("
                  . "'Or the cafe') })()"),
   'anonymous: the public posts of the conversation');
ok(!$page->js("Array.from(document.querySelectorAll('#thread .post .text'))"
              . ".some((e) => e.textContent === 'Just between us')"),
   'not the private reply');
is($page->js("document.querySelectorAll('#thread .reply-button:not("
             . "[hidden])').length"), 0, 'and nothing to reply with');

$w->finish;
done_testing();
