# The web page's polish (issue 30, point 8; docs/web.md), in Debian's
# chromium, headless, against make run's demo (Tent::WebDemo): while
# the page loads it says so instead of offering "Sign in"; "Signed in"
# is said once; one notice at a time (an error replaces a stale
# "Following ..." notice, and the other way round); the feed's order is
# the API's and stays so across refreshes, a post just made included.

use strict;
use warnings;

use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use Tent::WebDemo;

my $w = Tent::WebDemo->start(name => 'polish');
my $page = $w->page;
my $chrome = $w->chrome;
my ($alice, $bob) = @$w{qw(alice bob)};

# the page held while its profile is read: what does it offer then?
sub held {
    my ($what) = @_;
    $page->call('Fetch.enable', { patterns => [
        { urlPattern => '*/tent/profile' } ] });
    my $seen = scalar $chrome->events;
    $page->go("$alice/");
    my $paused;
    for (1 .. 150) {
        ($paused) = grep { ($_->{method} || '') eq 'Fetch.requestPaused' }
                    ($chrome->events)[$seen .. scalar($chrome->events) - 1];
        last if $paused;
        $page->js('1');
        select undef, undef, undef, 0.1;
    }
    ok($paused, "$what: the profile's request is held");
    my $s = $page->js("(() => { const v = (id) => { const e = document."
        . "getElementById(id); return !!e && !e.hidden }; return { "
        . "signin: v('sign-in'), loading: v('loading'), text: "
        . "(document.getElementById('loading') || {}).textContent } })()");
    ok(!$s->{signin}, "$what: no Sign in while the page loads");
    ok($s->{loading} && ($s->{text} || '') =~ /Loading/,
       "$what: it says it is loading");
    $w->step("loading-$what");
    Tent::WebDemo::axe_ok($page, "the page loading, $what");
    $page->call('Fetch.continueRequest',
                { requestId => $paused->{params}{requestId} }) if $paused;
    $page->call('Fetch.disable');
    ok($page->wait_js('document.body.dataset.ready'), "$what: it loads");
    ok($page->js("(document.getElementById('loading') || {}).hidden"),
       "$what: and no longer says loading");
}

held('anonymous');
ok($page->js("!document.getElementById('sign-in').hidden"),
   'then an anonymous visitor is offered Sign in');

# signed in: "Signed in" once, in the header
$w->sign_in;
my $said = $page->js("(document.body.innerText.match(/Signed in/g) || [])"
                     . ".length");
is($said, 1, '"Signed in" is said once');
$w->step('signed-in');

held('signed-in');
is($page->js('document.body.dataset.state'), 'signed-in',
   'then the owner is signed in');

# one notice at a time
$page->click('#tabs button[data-tab=following]');
$page->type('#follow-url', $bob);
$page->click('#follow-button');
ok($page->wait_js("/Following/.test(document.getElementById('notice')"
                  . ".textContent)"), 'a "Following ..." notice');
# the list is read again after the notice, the button disabled until then
# (a click on it then is lost: this failed on a busy machine)
ok($page->wait_js("!document.getElementById('follow-button').disabled"),
   'the follow done');
$page->type('#follow-url', 'http://127.0.0.1:1/');
$page->click('#follow-button');
ok($page->wait_js("!document.getElementById('error').hidden"),
   'following what does not answer fails');
is($page->js("document.getElementById('notice').textContent"), '',
   'the stale "Following ..." notice is gone under the error');
$w->step('error-alone');
$page->click('#tabs button[data-tab=profile]');
ok($page->wait_js("document.getElementById('profile-form').dataset.loaded "
                  . "=== 'true'"), 'the profile is read');
$page->click('#profile-save');
ok($page->wait_js("/saved/.test(document.getElementById('notice')"
                  . ".textContent)"), 'a new notice (Profile saved)');
ok($page->js("document.getElementById('error').hidden"),
   'and the old error is gone');

# the feed's order: the API's, also within one second, across refreshes,
# and a post made from the page goes where the API puts it
my $client = $w->owner_client;
my $cred = $w->owner_cred;
$w->post_status($client, $cred, "Burst $_") for 1 .. 6;
$page->click('#tabs button[data-tab=feed]');
$page->click('#refresh');
ok($w->feed_has($page, 'Burst 6'), 'the burst is in the feed');
my $api = [ map { $_->{id} } @{ $client->request(GET => '/posts?limit=20',
                                                 cred => $cred)->{json} } ];
my $ids = "Array.from(document.querySelectorAll('#feed .post'), "
        . "(p) => p.dataset.id)";
is_deeply($page->js($ids), $api, "the page's order is the API's");
my @texts = @{ $page->js("Array.from(document.querySelectorAll("
                         . "'#feed .text'), (e) => e.textContent)") };
is_deeply([ grep { /^Burst/ } @texts ], [ map { "Burst $_" } reverse 1 .. 6 ],
          'the newest first, in the order they were made');
for my $i (1 .. 3) {
    $page->click('#refresh');
    $page->wait_js("!document.getElementById('refresh').disabled");
    is_deeply($page->js($ids), $api, "the same order after refresh $i");
}
for my $t ('From the page 1', 'From the page 2') {
    $page->type('#status-text', $t);
    $page->click('#post-button');
    ok($w->feed_has($page, $t), "$t is in the feed");
}
my $shown = $page->js($ids);
$page->js("document.querySelector('#feed .post').dataset.old = 1, true");
$page->click('#refresh');
ok($page->wait_js("!document.querySelector('#feed .post').dataset.old"),
   'refreshed');
is_deeply($page->js($ids), $shown,
          'the posts made from the page stay where they were shown');
$w->step('order');

$w->finish;
done_testing();
