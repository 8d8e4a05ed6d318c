#!/usr/bin/perl
# bench/fanout-post.pl: POST /posts latency, one signed client, while
# bench/fanout.sh's fan-out runs.
#
#   perl bench/fanout-post.pl PORT CRED.json STOPFILE MAX
#
# PACE_MS (environment, default 0): at least that many milliseconds from
# one post's start to the next's, so that the client measures latency
# at a rate an owner posts at rather than loading the server itself.
#
# Sends signed POST /posts one after the other until STOPFILE exists or
# MAX posts were sent (at least 20, so that a short fan-out still gives
# a p99), each timed from the request's first byte to the answer's last.
# The posts are private and name no one (the engine sees their outbox
# row and sends them to no follower), so that measuring does not add to
# the fan-out it is measured against.  Prints
#   n N p50 X p99 Y max Z
# in milliseconds.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../t/lib";
use JSON::PP;
use Time::HiRes qw(time sleep);
use Tent::Client;

my ($port, $credfile, $stop, $max) = @ARGV;
defined $max && $max =~ /^\d+$/
    or die "usage: $0 PORT CRED.json STOPFILE MAX\n";
my $c = Tent::Client->new(port => $port, host => "127.0.0.1:$port");
my $cred = do {
    open my $fh, '<', $credfile or die "$credfile: $!\n";
    local $/;
    decode_json(<$fh>);
};

my $pace = ($ENV{PACE_MS} // 0) / 1000;
my @ms;
for my $i (1 .. $max) {
    last if $i > 20 && -e $stop;
    my $t0 = time;
    my $r = $c->request(POST => '/posts', cred => $cred, body => {
        type        => 'https://tent.io/types/post/status/v0.1.0',
        content     => { text => "fan-out bench $i" },
        permissions => { public => JSON::PP::false },
    });
    push @ms, (time - $t0) * 1000;
    die "POST /posts: $r->{status} $r->{body}\n" if $r->{status} != 200;
    my $left = $t0 + $pace - time;
    sleep $left if $left > 0;
}

@ms = sort { $a <=> $b } @ms;
my $at = sub { $ms[int($_[0] * $#ms + 0.5)] };
printf "n %d p50 %.2f p99 %.2f max %.2f\n", scalar @ms, $at->(0.50),
    $at->(0.99), $ms[-1];
