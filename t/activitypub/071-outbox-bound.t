# The outbox's bound (docs/activitypub.md, "The outbox"): a request reads
# at most 10,000 rows of the feed index.  An entity with 10,010 private
# posts between 5 new public ones and 30 old ones (written by an import:
# POST /import?merge=1): totalItems counts what the first 10,000 rows
# hold (a lower bound), the first page stops at the bound with the 5 new
# ones and a next link from the last row read, and walking on gives every
# public post once, in order; the same backwards from "last".

use strict;
use warnings;

use Test::More;
use JSON::PP;
use Tent::Peer;

my $AS = 'application/activity+json';
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';

my $peer = Tent::Peer->start(server_config => <<'CONF');
        tent_entity $URL;
        tent_activitypub on;
        tent_ap_name big;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF
my $URL = $peer->url;
my $c = $peer->client;
my $BASE = "$URL/tent/activitypub/big";

my (undef, $writer) = $c->authorized_app(
    'write_secrets,write_profile,write_followers,write_followings,'
    . 'write_groups,write_posts,import_posts', post_types => 'all');

# oldest first: 30 public, 10,010 private, 5 public
my $t0 = 1600000000;
my (@posts, @public);
my $n = 0;
sub a_post {
    my ($public) = @_;
    $n++;
    my $id = sprintf('p%05d', $n);
    push @public, $id if $public;
    push @posts, { id => $id, versions => [{
        id => $id, entity => $URL, type => $STATUS, version => 1,
        content => { text => "post $n" },
        permissions => { public => $public ? JSON::PP::true
                                           : JSON::PP::false },
        mentions => [], licenses => [],
        published_at => $t0 + $n, received_at => $t0 + $n,
        updated_at => $t0 + $n }] };
}
a_post(1) for 1 .. 30;
a_post(0) for 1 .. 10010;
a_post(1) for 1 .. 5;

my $res = $c->request(POST => '/import?merge=1', cred => $writer,
                      timeout => 120,
                      body => { version => 0, entity => $URL,
                                complete => JSON::PP::true,
                                posts => \@posts });
is($res->{status}, 200, '10,045 posts imported') or diag $res->{body};

sub get {
    my ($url) = @_;
    (my $path = $url) =~ s{^\Q$URL\E}{};
    return $c->request(GET => "/$path", headers => { Accept => $AS });
}

$res = get("$BASE/outbox");
is($res->{status}, 200, 'the outbox: 200');
is($res->{json}{totalItems}, 5,
   'totalItems: the public posts of the 10,000 newest rows (a lower bound)');

my @newest_first = reverse @public;

my (@pages, @items);
my $url = $res->{json}{first};
while ($url && @pages < 10) {
    my $r = get($url);
    is($r->{status}, 200, "page $url: 200") or last;
    push @pages, $r->{json};
    push @items, map { $_->{object}{id} =~ s{.*/}{}r }
                 @{ $r->{json}{orderedItems} || [] };
    $url = $r->{json}{next};
}
is(scalar @{ $pages[0]{orderedItems} }, 5,
   'the first page stops at the bound: the 5 new posts');
like($pages[0]{next} // '', qr{max_id=\d+\.\d+\.p\d+$},
     '... and a next link from the last row read');
is_deeply([map { scalar @{ $_->{orderedItems} } } @pages], [5, 20, 10],
          'pages of 5, 20 and 10');
is_deeply(\@items, \@newest_first, 'every public post once, newest first');

# backwards: the oldest page, then up through the private rows
@items = ();
my $n_pages = 0;
$url = $res->{json}{last};
while ($url && $n_pages++ < 10) {
    my $r = get($url);
    is($r->{status}, 200, "page $url: 200") or last;
    unshift @items, map { $_->{object}{id} =~ s{.*/}{}r }
                    @{ $r->{json}{orderedItems} || [] };
    $url = $r->{json}{prev};
}
is_deeply(\@items, \@newest_first,
          'backwards from last: every public post once');

unlike($peer->error_log_text, qr/\[(alert|emerg|crit)\]/,
       'no alert in the error log');

done_testing();
