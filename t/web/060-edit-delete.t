# Editing and deleting the owner's posts from the web page, and
# unfollowing only once asked (issue 30, point 5; docs/web.md), in
# Debian's chromium, headless, against make run's demo (Tent::WebDemo).
# An edit is a new version (PUT /posts/:id); a delete asks first in a
# dialog (Escape keeps the post); Edit and Delete are on the owner's own
# posts only, never on a followed entity's nor for an anonymous visitor,
# and the API refuses others anyway.

use strict;
use warnings;

use Test::More;
use FindBin;
use lib "$FindBin::Bin/../lib";
use JSON::PP;
use Tent::WebDemo;
use Tent::Util qw(http_request);

my $w = Tent::WebDemo->start(name => 'edit');
my $page = $w->page;
my $chrome = $w->chrome;
my ($alice, $bob) = @$w{qw(alice bob)};
my $client = $w->owner_client;
my $cred = $w->owner_cred;

my $edit_me = $w->post_status($client, $cred, 'Edit me');
my $delete_me = $w->post_status($client, $cred, 'Delete me');
my $r = $client->request(POST => '/followings', cred => $cred,
                         body => { entity => $bob });
is($r->{status}, 200, 'the first entity follows the second');
my $bob_post = $w->post_status($w->bob_client, $w->bob_cred,
                               'A post of the second entity');

# the post with this text: its buttons shown, as a JavaScript expression
sub post_of {
    my ($text) = @_;
    my $q = JSON::PP->new->allow_nonref->encode($text);
    return "Array.from(document.querySelectorAll('#feed .post')).find("
         . "(p) => p.querySelector('.text').textContent === $q)";
}
sub shown {
    my ($p, $text, $button) = @_;
    return $p->js("(() => { const p = " . post_of($text) . "; const b = "
                  . "p && p.querySelector('.$button'); return !!b && "
                  . "!b.hidden })()");
}

# an anonymous visitor: nothing to edit or delete
$page->go("$alice/");
ok($page->wait_js('document.body.dataset.ready'), 'the anonymous page');
ok($w->feed_has($page, 'Edit me'), 'shows the public posts');
is($page->js("document.querySelectorAll('#feed .edit-button:not([hidden]),"
             . " #feed .delete-button:not([hidden])').length"), 0,
   'with no Edit nor Delete for an anonymous visitor');

# the API refuses a change without the owner's credential
for my $m (qw(PUT DELETE)) {
    my $res = http_request(method => $m, port => $w->{port},
        path => "/tent/posts/$edit_me->{id}",
        headers => { Host => "127.0.0.1:$w->{port}",
                     'Content-Type' => 'application/vnd.tent.v0+json' },
        body => '{"content":{"text":"defaced"}}');
    ok($res->{status} == 401 || $res->{status} == 403,
       "an unsigned $m is refused ($res->{status})");
}

$w->sign_in;
my $arrived;
for (1 .. 50) {
    $page->click('#refresh');
    last if $arrived = $w->feed_has($page, 'A post of the second entity',
                                    0.5);
}
ok($arrived, "the second entity's post is in the feed");
# no refresh still under way (its answer would replace the feed)
ok($page->wait_js("!document.getElementById('refresh').disabled"),
   'the feed is loaded');
ok(shown($page, 'Edit me', 'edit-button')
   && shown($page, 'Edit me', 'delete-button'),
   'the owner\'s own status has Edit and Delete');
ok(!shown($page, 'A post of the second entity', 'edit-button')
   && !shown($page, 'A post of the second entity', 'delete-button'),
   'the followed entity\'s post has neither');
# nor may the owner's credential change the received copy
$r = $client->request(PUT => "/posts/$bob_post->{id}", cred => $cred,
                      body => { content => { text => 'not mine' } });
isnt($r->{status}, 200, "the API refuses to change another's post "
     . "($r->{status})");

# edit: Escape leaves it as it was
$page->js(post_of('Edit me') . ".querySelector('.edit-button').click(), "
          . "true");
ok($page->wait_js("document.activeElement.classList.contains('edit-text')"
                  . " && document.activeElement.value === 'Edit me'"),
   'Edit opens the text, focused');
$w->step('editing');
$page->type('.post .edit-form:not([hidden]) .edit-text', 'Not this');
$page->key('Escape');
ok($page->wait_js("!!(" . post_of('Edit me') . ")"),
   'Escape leaves the post as it was');
ok($page->js("document.activeElement.classList.contains('edit-button')"),
   'focus back on Edit');

# too long: said, nothing sent, the text kept
$page->key('Enter');
ok($page->wait_js("document.activeElement.classList.contains('edit-text')"),
   'Edit opened with the keyboard');
my $long = 'x' x 257;
$page->type('.post .edit-form:not([hidden]) .edit-text', $long);
$page->click('.post:not([hidden]) .edit-form:not([hidden]) .edit-save');
ok($page->wait_js("!document.getElementById('error').hidden"),
   'an edit over 256 characters is refused');
like($w->error_text, qr/at most 256 characters/, 'in words');

# a new version
$page->type('.post .edit-form:not([hidden]) .edit-text', 'Edited, v2');
my $tabs = 0;
while (!$page->js("document.activeElement.classList.contains('edit-save')")
       && $tabs++ < 5) {
    $page->key('Tab');
}
$page->key('Enter');
ok($w->feed_has($page, 'Edited, v2'), 'the edit is shown');
ok(!$w->feed_has($page, 'Edit me', 0.2), 'in place of the old text');
ok($page->js("!(" . post_of('Edited, v2') . ").querySelector('.edited')"
             . ".hidden"), 'marked edited');
like($page->js("document.getElementById('notice').textContent"), qr/edited/,
     'a notice says so');
$r = $client->request(GET => "/posts/$edit_me->{id}", cred => $cred);
is($r->{json}{content}{text}, 'Edited, v2', 'stored');
is($r->{json}{version}, 2, 'as version 2');
is($r->{json}{permissions}{public}, JSON::PP::true, 'still public');
$r = $client->request(GET => "/posts/$edit_me->{id}/versions", cred => $cred);
is(scalar @{ $r->{json} || [] }, 2, 'the first version is kept');
$w->step('edited');

# a photo's caption: a new version that keeps the photo
{
    open my $fh, '>:raw', "$w->{tmp}/small.png" or die $!;
    print {$fh} Tent::WebDemo::png(24, 16);
    close $fh;
}
$page->type('#status-text', 'A caption');
$page->set_files('#status-photo', "$w->{tmp}/small.png");
$page->click('#post-button');
ok($w->feed_has($page, 'A caption'), 'a photo posted from the page');
$page->js(post_of('A caption') . ".querySelector('.edit-button').click(), "
          . "true");
ok($page->wait_js("document.activeElement.value === 'A caption'"),
   'Edit opens its caption');
$page->type('.post .edit-form:not([hidden]) .edit-text', 'A better caption');
$page->click('.post:not([hidden]) .edit-form:not([hidden]) .edit-save');
ok($w->feed_has($page, 'A better caption'), 'the new caption is shown');
ok($page->wait_js("(() => { const i = (" . post_of('A better caption')
                  . ").querySelector('.photos img'); return i && i.complete"
                  . " && i.naturalWidth === 24 })()"),
   'with the photo, kept by the new version');
$w->step('caption-edited');

# delete: asked first, Escape keeps the post
$page->js(post_of('Delete me') . ".querySelector('.delete-button').click(),"
          . " true");
ok($page->wait_js("document.getElementById('confirm').open"),
   'Delete asks first');
like($page->js("document.getElementById('confirm-text').textContent"),
     qr/Delete this post\?/, 'in words');
is($page->js('document.activeElement.id'), 'confirm-cancel',
   'Cancel has the focus');
$w->step('confirm-delete');
$page->key('Escape');
ok($page->wait_js("!document.getElementById('confirm').open"),
   'Escape closes the dialog');
ok($w->feed_has($page, 'Delete me', 0.5), 'the post stays');
is($client->request(GET => "/posts/$delete_me->{id}",
                    cred => $cred)->{status}, 200, 'on the server too');
$page->js(post_of('Delete me') . ".querySelector('.delete-button').click(),"
          . " true");
ok($page->wait_js("document.getElementById('confirm').open"),
   'asked again');
$page->click('#confirm-ok');
ok($page->wait_js("!(" . post_of('Delete me') . ")"),
   'confirmed: the post leaves the feed');
like($page->js("document.getElementById('notice').textContent"),
     qr/deleted/, 'a notice says so');
is($client->request(GET => "/posts/$delete_me->{id}",
                    cred => $cred)->{status}, 404, 'deleted on the server');
$w->step('deleted');

# unfollow asks first
$page->click('#tabs button[data-tab=following]');
ok($page->wait_js("document.querySelectorAll('#followings button').length"),
   'the followings list');
$page->click('#followings button');
ok($page->wait_js("document.getElementById('confirm').open"),
   'Unfollow asks first');
like($page->js("document.getElementById('confirm-text').textContent"),
     qr/Stop following \Q$bob\E\?/, 'naming the entity');
$w->step('confirm-unfollow');
$page->click('#confirm-cancel');
ok($page->wait_js("!document.getElementById('confirm').open"),
   'Cancel closes it');
my $following = sub {
    scalar grep { $_->{entity} eq $bob }
        @{ $client->request(GET => '/followings', cred => $cred)->{json}
           || [] };
};
is($following->(), 1, 'still following');
$page->click('#followings button');
ok($page->wait_js("document.getElementById('confirm').open"), 'asked again');
$page->click('#confirm-ok');
ok($page->wait_js("!Array.from(document.querySelectorAll('#followings a'))"
                  . ".some((a) => a.textContent === '$bob')"),
   'confirmed: unfollowed');
is($following->(), 0, 'on the server too');

$w->finish;
done_testing();
