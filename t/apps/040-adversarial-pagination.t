# GET /apps page by page (issue 26, part 6; docs/api.md): every app is
# listed exactly once across the pages, in both orders, following the
# Link header.  With order=asc there was no Link at all (one page of 50
# of 105 apps: most authorized ones never seen).  105 apps: 100 waiting
# for the owner (anonymous registrations), 5 authorized, the reader one
# of them; pages of several sizes, the authorized=true|false filters;
# then there and back (next to the last page, prev to the first), and
# /followers (the same code) there and back in both orders.

use strict;
use warnings;

use Test::More;
use Tent::Peer;
use Tent::Client;
use Tent::Util qw(follower_host_config follow_many);

my $peer = Tent::Peer->start(http_config => <<'CONF', worker_processes => 1);
    tent_store $SERVROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
CONF
my $c = $peer->client;

my (%all, %authorized);
my ($reader, $cred) = $c->authorized_app('read_apps');
$all{ $reader->{id} } = $authorized{ $reader->{id} } = 1;
for (1 .. 4) {
    my ($app) = $c->authorized_app('read_posts');
    $all{ $app->{id} } = $authorized{ $app->{id} } = 1;
}
for my $i (1 .. 100) {
    my $app = $c->register_app(name => "waiting $i");
    $all{ $app->{id} } = 1;
}
is(scalar keys %all, 105, '105 apps registered, 5 of them authorized');

# the pages from FIRST on, following rel="next": (ids in order, pages,
# problems)
sub walk {
    my ($first) = @_;
    my (@ids, @problems);
    my ($path, $pages) = ($first, 0);
    while (defined $path) {
        my $res = $c->request(GET => $path, cred => $cred);
        if ($res->{status} != 200) {
            push @problems, "$path: $res->{status} $res->{body}";
            last;
        }
        $pages++;
        my $list = $res->{json} || [];
        push @problems, "$path: an empty page" if !@$list;
        push @ids, map { $_->{id} } @$list;
        my ($next) = ($res->{headers}{link} // '') =~ /<([^>]+)>; rel="next"/;
        if ($pages > 60) {
            push @problems, 'more than 60 pages';
            last;
        }
        $path = defined $next ? "//$next" : undef;
    }
    return (\@ids, $pages, \@problems);
}

sub check {
    my ($first, $want, $order, $what) = @_;
    my ($ids, $pages, $problems) = walk($first);
    is("@$problems", '', "$what: no error, no empty page");
    my %seen;
    my @dups = grep { $seen{$_}++ } @$ids;
    is(scalar @dups, 0, "$what: no app twice") or diag "@dups";
    is_deeply([sort keys %seen], [sort keys %$want],
              "$what: every app listed ($pages pages)");
    my @sorted = sort @$ids;
    @sorted = reverse @sorted if $order eq 'desc';
    is_deeply($ids, \@sorted, "$what: in $order order of ids");
}

for my $limit (50, 7, 105, 104, 1) {
    next if $limit == 1 && !$ENV{TEST_SLOW};
    check("/apps?limit=$limit", \%all, 'desc', "limit $limit, newest first");
    check("/apps?order=asc&limit=$limit", \%all, 'asc',
          "limit $limit, order=asc");
}
check('/apps?order=asc&limit=3&authorized=true', \%authorized, 'asc',
      'authorized=true, order=asc');
check('/apps?limit=3&authorized=true', \%authorized, 'desc',
      'authorized=true');
my %waiting = map { $_ => 1 } grep { !$authorized{$_} } keys %all;
check('/apps?order=asc&limit=30&authorized=false', \%waiting, 'asc',
      'authorized=false, order=asc');
check('/apps?limit=30&authorized=false', \%waiting, 'desc',
      'authorized=false');

# the prev link of an ascending page goes back to the page before
{
    my $res = $c->request(GET => '/apps?order=asc&limit=10', cred => $cred);
    my ($next) = ($res->{headers}{link} // '') =~ /<([^>]+)>; rel="next"/;
    ok($next, 'order=asc: a next link') or diag $res->{headers}{link};
    $next //= '';
    like($next, qr/order=asc/, 'order=asc: kept in the next link');
    my $first = [map { $_->{id} } @{ $res->{json} || [] }];
    $res = $c->request(GET => "//$next", cred => $cred);
    my ($prev) = ($res->{headers}{link} // '') =~ /<([^>]+)>; rel="prev"/;
    ok($prev, 'order=asc: the second page has a prev link')
        or diag $res->{headers}{link};
    $res = $c->request(GET => '//' . ($prev // ''), cred => $cred);
    is_deeply([map { $_->{id} } @{ $res->{json} || [] }], $first,
              'order=asc: prev of the second page is the first page');
}

# there and back: next to the last page, then prev back to the first.
# Each page links to its neighbours and only to them: a page reached
# through prev has a next link (the page it came from) and a prev link
# unless it is the first.  Its next link had been gated on the items
# past its far side, so the first page, reached back, had none (and a
# prev link to an empty page).
sub links {
    my ($res) = @_;
    my $link = $res->{headers}{link} // '';
    my ($prev) = $link =~ /<([^>]+)>; rel="prev"/;
    my ($next) = $link =~ /<([^>]+)>; rel="next"/;
    return map { defined $_ ? "//$_" : undef } $prev, $next;
}

sub ids_of { return [map { $_->{id} } @{ $_[0]{json} || [] }] }

sub there_and_back {
    my ($client, $first, $want, $what, @cr) = @_;
    my (@fwd, @back, @problems, $prev, $next, $res);

    my $path = $first;
    while (defined $path && @fwd < 60) {
        $res = $client->request(GET => $path, @cr);
        push @problems, "$path: $res->{status}" if $res->{status} != 200;
        push @fwd, ids_of($res);
        ($prev, $next) = links($res);
        push @problems, "forward page " . @fwd . ": no prev link"
            if !defined $prev;
        $path = $next;
    }
    ok(@fwd > 1 && !defined $path, "$what: forward to the last page ("
       . @fwd . ' pages)');

    $path = $prev;
    while (defined $path && @back < 60) {
        $res = $client->request(GET => $path, @cr);
        push @problems, "$path: $res->{status}" if $res->{status} != 200;
        my $page = ids_of($res);
        my $k = @fwd - 2 - @back;        # the forward page it should be
        unshift @back, $page;
        ($path, $next) = links($res);
        push @problems, "back to page " . ($k + 1) . ": "
            . ($res->{headers}{link} // 'no Link')
            if $k < 0 || !defined $next
               || (defined $path ? 1 : 0) != ($k > 0 ? 1 : 0);
        next if !defined $next || $k < 0;
        my $ahead = $client->request(GET => $next, @cr);
        push @problems, "back to page " . ($k + 1) . ": next is not page "
            . ($k + 2)
            if "@{ ids_of($ahead) }" ne "@{ $fwd[$k + 1] }";
    }
    is("@problems", '', "$what: each page's links, both ways");
    is_deeply(\@back, [@fwd[0 .. $#fwd - 1]],
              "$what: back through prev, the same pages");
    my (%seen, @dups);
    @dups = grep { $seen{$_}++ } map { @$_ } @back, $fwd[-1];
    is("@dups", '', "$what: back, no item twice");
    is_deeply([sort keys %seen], [sort keys %$want],
              "$what: back, every item");
}

for my $limit (50, 7) {
    there_and_back($c, "/apps?limit=$limit", \%all,
                   "there and back, limit $limit", cred => $cred);
    there_and_back($c, "/apps?order=asc&limit=$limit", \%all,
                   "there and back, limit $limit, order=asc", cred => $cred);
}
there_and_back($c, '/apps?limit=30&authorized=false', \%waiting,
               'there and back, authorized=false', cred => $cred);
there_and_back($c, '/apps?order=asc&limit=30&authorized=false', \%waiting,
               'there and back, authorized=false, order=asc', cred => $cred);

# the same code lists followers: 7 of them, pages of 2, both orders
{
    my $host = Tent::Peer->start(worker_processes => 1,
                                 server_config => follower_host_config());
    my ($bad, @ids) = follow_many($c, $host->url, [map { "f$_" } 1 .. 7]);
    is($bad, 0, '7 entities follow');
    my %followers = map { $_ => 1 } @ids;
    there_and_back($c, '/followers?limit=2', \%followers,
                   'there and back, followers');
    there_and_back($c, '/followers?order=asc&limit=2', \%followers,
                   'there and back, followers, order=asc');
    $host->stop;
}

unlike($peer->error_log_text, qr/\[alert\]|exited on signal|runtime error/,
       'no alert, no crash');
$peer->stop;

done_testing();
