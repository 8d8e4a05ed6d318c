#!/usr/bin/perl
# bench/fanout-local.pl: entities of one nginx follow another of the same
# nginx, for bench/fanout.sh's same-node phase.
#
#   perl bench/fanout-local.pl ENTITY FIRST_PORT COUNT
#
# For each port FIRST_PORT .. FIRST_PORT + COUNT - 1 (a server block with
# tent_entity http://127.0.0.1:PORT and its authorize page open to
# 127.0.0.1): an app with write_followings is made the way any app gets
# one, then POST /followings {"entity": ENTITY} signed by it, so that the
# entity at PORT follows ENTITY for real (discovery, POST /followers, the
# challenge, all over HTTP).  Dies on the first failure.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../t/lib";
use Tent::Client;

my ($entity, $first, $count) = @ARGV;
defined $count && $first =~ /^\d+$/ && $count =~ /^\d+$/
    or die "usage: $0 ENTITY FIRST_PORT COUNT\n";

for my $port ($first .. $first + $count - 1) {
    my $c = Tent::Client->new(port => $port, host => "127.0.0.1:$port");
    my (undef, $cred) = $c->authorized_app('write_followings');
    my $r = $c->request(POST => '/followings', cred => $cred,
                        body => { entity => $entity });
    die "127.0.0.1:$port: POST /followings: $r->{status} $r->{body}\n"
        if $r->{status} != 200;
}
