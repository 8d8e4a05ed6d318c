# GET /apps page by page (issue 26, part 6; docs/api.md): every app is
# listed exactly once across the pages, in both orders, following the
# Link header.  With order=asc there was no Link at all (one page of 50
# of 105 apps: most authorized ones never seen).  105 apps: 100 waiting
# for the owner (anonymous registrations), 5 authorized, the reader one
# of them; pages of several sizes, the authorized=true|false filters,
# and /followers (the same code) in ascending order.

use strict;
use warnings;

use Test::More;
use Tent::Peer;
use Tent::Client;

my $peer = Tent::Peer->start(http_config => <<'CONF', worker_processes => 1);
    tent_store $SERVROOT/tent_temp;
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

unlike($peer->error_log_text, qr/\[alert\]|exited on signal|runtime error/,
       'no alert, no crash');
$peer->stop;

done_testing();
