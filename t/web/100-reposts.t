# Reposts (issue 30, point 2; docs/web.md), in Debian's chromium,
# headless, against make run's demo (Tent::WebDemo, two entities on one
# nginx): Repost on a followed entity's post makes a Tent repost post
# (https://tent.io/types/post/repost/v0.1.0, {"entity", "id"} of the
# original, mentioning it); the feed shows a repost as its original,
# "reposted by" the reposter's name: the owner's own post reposted by
# the other, another's post read from this server, or through the
# following when this server does not give it; a repost of a post
# nobody has is said so; Delete on the owner's repost takes back the
# repost, not the post.  No Repost for an anonymous visitor, nor on the
# owner's own or a private post.

use strict;
use warnings;
use utf8;

use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use JSON::PP;
use Tent::WebDemo;

binmode Test::More->builder->$_, ':utf8' for qw(output failure_output);

my $w = Tent::WebDemo->start(name => 'reposts');
my $page = $w->page;
my ($alice, $bob) = @$w{qw(alice bob)};
my ($ac, $acred) = ($w->owner_client, $w->owner_cred);
my ($bc, $bcred) = ($w->bob_client, $w->bob_cred);
my $BASIC = 'https%3A%2F%2Ftent.io%2Ftypes%2Finfo%2Fbasic%2Fv0.1.0';
my $REPOST = 'https://tent.io/types/post/repost/v0.1.0';
my $Q = JSON::PP->new->allow_nonref;

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
   'and the second the first');

my $mine = $w->post_status($ac, $acred, 'A post of mine worth sharing');
my $worth = $w->post_status($bc, $bcred, 'Worth reading');
my $proxied = $w->post_status($bc, $bcred, 'Read through the following');
my $secret = $w->post_status($bc, $bcred, 'Only for the first',
    permissions => { public => JSON::PP::false,
                     entities => { $alice => JSON::PP::true } });
sub repost {
    my ($entity, $id) = @_;
    my $r = $bc->request(POST => '/posts', cred => $bcred, body => {
        type => $REPOST, content => { entity => $entity, id => $id },
        mentions => [{ entity => $entity, post => $id }],
        permissions => { public => JSON::PP::true } });
    die "repost: $r->{status}" unless $r->{status} == 200;
    return $r->{json};
}
my $of_mine = repost($alice, $mine->{id});
my $of_proxied = repost($bob, $proxied->{id});
my $of_lost = repost($bob, 'nosuchpost0000');

sub post_of {
    my ($text) = @_;
    return "Array.from(document.querySelectorAll('#feed .post')).filter("
         . "(p) => p.querySelector('.text').textContent === "
         . $Q->encode($text) . ")";
}
sub reposter {
    my ($text) = @_;
    return $page->js("(() => { const p = " . post_of($text) . ".find((p) => "
        . "!p.querySelector('.reposted').hidden); const r = p && p."
        . "querySelector('.reposted'); return r ? [r.firstChild.textContent"
        . ", r.querySelector('.name').textContent, r.querySelector("
        . "'.entity').title] : null })()");
}

# anonymous: no Repost
$page->go("$alice/");
ok($page->wait_js('document.body.dataset.ready'), 'the anonymous page');
ok($w->feed_has($page, 'A post of mine worth sharing'), 'its public post');
is($page->js("document.querySelectorAll('.repost-button:not([hidden])')"
             . ".length"), 0, 'no Repost for an anonymous visitor');

$w->sign_in;

# a post this server does not give, asked of the second entity's server
# (its read answered 404 by the DevTools Fetch domain: the demo's two
# entities share a store, which would hand the first a copy)
$page->call('Fetch.enable', { patterns => [
    { urlPattern => "*/tent/posts/*/$proxied->{id}" } ] });
my $seen = scalar $w->chrome->events;
my $held = 0;
sub answer_404 {
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
}
# the three reposts in the feed (refreshed until then), then shown
my $reposts = "document.querySelectorAll('#feed .post[data-repost]').length"
    . " + Array.from(document.querySelectorAll('#feed .text')).filter((e)"
    . " => /^Loading the reposted|cannot show/.test(e.textContent)).length";
my $arrived;
for (1 .. 50) {
    $page->click('#refresh');
    for (1 .. 5) {
        answer_404();
        select undef, undef, undef, 0.1;
    }
    last if $arrived = $page->js("!document.getElementById('refresh')"
                                 . ".disabled && $reposts") >= 3;
}
for (1 .. 100) {
    answer_404();
    last if $page->js("document.querySelectorAll('#feed .post[data-repost]')"
                      . ".length === 2");
    select undef, undef, undef, 0.1;
}
$page->call('Fetch.disable');
ok($arrived, 'the second entity\'s reposts arrive')
    or diag(explain($page->js("Array.from(document.querySelectorAll("
        . "'#feed .post'), (p) => [p.dataset.id, p.dataset.repost, "
        . "p.querySelector('.text').textContent])")));
ok($page->wait_js("!document.getElementById('refresh').disabled"),
   'the feed is loaded');
ok($held, 'this server\'s read of one original answered 404');

# shown as the original, "reposted by" the reposter
is_deeply(reposter('A post of mine worth sharing'),
   ['reposted by ', 'Bob Example', $bob], 'the owner\'s post, reposted by the second entity by name');
is($page->js("(" . post_of('A post of mine worth sharing')
             . ".find((p) => !p.querySelector('.reposted').hidden))"
             . ".querySelector('.author .name').textContent"),
   'Alice Example', 'the original\'s author on it');
is_deeply(reposter('Read through the following'),
   ['reposted by ', 'Bob Example', $bob], 'another\'s post, read through the following');
my $log = do { local (@ARGV, $/) = "$w->{tmp}/demo/logs/access.log"; <> };
like($log, qr{"GET /tent/followings/\w+/posts/\Q$proxied->{id}\E HTTP/1.1" 200},
     'by GET /followings/:id/posts/:post_id');
like($page->js("Array.from(document.querySelectorAll('#feed .text')).find("
               . "(e) => /cannot show/.test(e.textContent)).textContent"),
     qr/^Reposted a post of .*Bob Example.* that this server cannot show\.$/,
     'a repost of a post nobody has, said so');
is($page->js("document.querySelectorAll('#feed .text')"
             . ".length === document.querySelectorAll('#feed .post').length"
             . " && !Array.from(document.querySelectorAll('#feed .text'))"
             . ".some((e) => /repost\\//.test(e.textContent))"), JSON::PP::true,
   'no repost shown by its type\'s name');

# Repost only on others' public posts
ok(!$page->js("(" . post_of('A post of mine worth sharing') . "[0])"
              . ".querySelector('.repost-button').hidden === false"),
   'no Repost on the owner\'s own post');
ok($page->wait_js("!!(" . post_of('Only for the first') . "[0])"),
   'the private post arrived');
is($page->js("(" . post_of('Only for the first') . "[0])"
             . ".querySelector('.repost-button').hidden"), JSON::PP::true,
   'no Repost on a private post');

# the owner reposts the second entity's post
$page->js("(" . post_of('Worth reading') . "[0]).querySelector("
          . "'.repost-button').click(), true");
ok($page->wait_js("document.getElementById('notice').textContent === "
                  . "'Reposted.'"), 'Repost');
my $r = $ac->request(GET => '/posts?limit=5&post_types='
                     . Tent::Client::uri_escape($REPOST)
                     . "&entity=" . Tent::Client::uri_escape($alice),
                     cred => $acred);
my ($rp) = @{ $r->{json} || [] };
is($rp && $rp->{type}, $REPOST, 'stored as a repost post');
is_deeply($rp && $rp->{content}, { entity => $bob, id => $worth->{id} },
          'naming the original');
is_deeply($rp && $rp->{mentions}, [{ entity => $bob, post => $worth->{id} }],
          'and mentioning it');
is($rp && $rp->{permissions}{public}, JSON::PP::true, 'public');
is_deeply(reposter('Worth reading'), ['reposted by ', 'Alice Example', $alice],
   'shown at once as the original, reposted by the owner');
$page->js("document.getElementById('feed-title').scrollIntoView(), true");
Tent::WebDemo::axe_ok($page, 'reposts in the feed');
$w->step('reposts');

# sent to the original's author (it mentions the post)
my $told;
for (1 .. 50) {
    $r = $bc->request(GET => '/posts?limit=5&mentioned_post='
                      . $worth->{id}, cred => $bcred);
    last if $told = grep { $_->{type} eq $REPOST && $_->{entity} eq $alice }
                    @{ $r->{json} || [] };
    select undef, undef, undef, 0.2;
}
ok($told, 'the original\'s author got the repost');

# after a refresh too, and Delete takes the repost back
$page->click('#refresh');
ok($page->wait_js("!document.getElementById('refresh').disabled && "
                  . "(() => { const p = " . post_of('Worth reading')
                  . ".find((p) => !p.querySelector('.reposted').hidden); "
                  . "return p && !p.querySelector('.delete-button').hidden "
                  . "&& p.querySelector('.edit-button').hidden })()"),
   'the owner\'s repost has Delete (the repost), no Edit');
is($page->js("(" . post_of('Worth reading') . ".find((p) => !p.querySelector("
             . "'.reposted').hidden)).querySelector('.delete-button')"
             . ".textContent"), 'Delete repost', 'said so');
$page->js("(" . post_of('Worth reading') . ".find((p) => !p.querySelector("
          . "'.reposted').hidden)).querySelector('.delete-button').click(),"
          . " true");
ok($page->wait_js("document.getElementById('confirm').open"), 'asked first');
$page->click('#confirm-ok');
ok($page->wait_js("document.getElementById('notice').textContent === "
                  . "'Post deleted.'"), 'deleted');
is($ac->request(GET => "/posts/$rp->{id}", cred => $acred)->{status}, 404,
   'the repost is gone');
is($ac->request(GET => '/posts/' . Tent::Client::uri_escape($bob)
                . "/$worth->{id}", cred => $acred)->{status}, 200,
   'the original stays');

$w->finish;
done_testing();
