package Tent::APFollower;

# ActivityPub followers for the delivery suites (t/activitypub/05x),
# before the inbox exists: the follower record an inbox's Follow writes
# (AP.md item 3: an "f" row and its "e" index, no credential), put into
# the stopped nginx's store with t/helpers/ldb-put; and the check of a
# request an actor's inbox got: its draft-cavage-12 rsa-sha256
# signature against the actor's publicKeyPem, its Digest, its Date.
#
#   Tent::APFollower::put($db, $entity, actor => URL, inbox => URL
#                         [, shared_inbox => URL]);
#   my @why = Tent::APFollower::check($req, $pem, $key_id);  # () is good

use strict;
use warnings;

use Crypt::OpenSSL::RSA;
use Digest::SHA qw(sha256);
use Time::Local qw(timegm);
use JSON::PP;
use MIME::Base64 qw(decode_base64 encode_base64);
use Time::HiRes qw(time);
use Tent::Util;

my $N = 0;

# a follower record of ACTOR with its inbox, into DB (nginx stopped)
sub put {
    my ($db, $entity, %a) = @_;
    my $id = sprintf('%016x%08x%08x', int(time * 1e6), $$, ++$N);
    my $record = encode_json({
        id => $id, entity => $a{actor},
        created_at => int(time), updated_at => int(time),
        permissions => { public => JSON::PP::false },
        licenses => [], types => ['all'], groups => [],
        activitypub => { inbox => $a{inbox},
                         follow => "$a{actor}#follow-$id",
                         ($a{shared_inbox}
                          ? (shared_inbox => $a{shared_inbox}) : ()) } });
    my $put = Tent::Util::ldb_tool('ldb-put');
    for ([ "$entity\0f$id", $record ], [ "$entity\0e$a{actor}", $id ]) {
        system($put, $db, unpack('H*', $_->[0]), unpack('H*', $_->[1])) == 0
            or die "ldb-put: $?";
    }
    return $id;
}

# an IMF-fixdate (RFC 9110), "Sun, 06 Nov 1994 08:49:37 GMT": seconds
my %MON = (Jan => 0, Feb => 1, Mar => 2, Apr => 3, May => 4, Jun => 5,
           Jul => 6, Aug => 7, Sep => 8, Oct => 9, Nov => 10, Dec => 11);
sub http_time {
    my ($d, $m, $y, $H, $M, $S) =
        $_[0] =~ /^\w{3}, (\d\d) (\w{3}) (\d{4}) (\d\d):(\d\d):(\d\d) GMT$/
        or return;
    return defined $MON{$m} ? timegm($S, $M, $H, $d, $MON{$m}, $y) : undef;
}

# what is wrong with a recorded request (Tent::Receiver's), by its
# signature: the empty list when nothing is
sub check {
    my ($req, $pem, $key_id) = @_;
    my $h = $req->{headers};
    my @bad;

    my %sig = ($h->{signature} // '') =~ /(\w+)="([^"]*)"/g;
    push @bad, "keyId $sig{keyId}" unless ($sig{keyId} // '') eq $key_id;
    push @bad, "algorithm $sig{algorithm}"
        unless ($sig{algorithm} // '') eq 'rsa-sha256';
    push @bad, "headers $sig{headers}"
        unless ($sig{headers} // '') eq '(request-target) host date digest';

    my $digest = 'SHA-256=' . encode_base64(sha256($req->{body} // ''), '');
    push @bad, 'digest' unless ($h->{digest} // '') eq $digest;

    my $date = http_time($h->{date} // '');
    push @bad, "date $h->{date}" unless $date && abs($date - time) < 60;

    my $text = join "\n",
        '(request-target): ' . lc($req->{method}) . " $req->{target}",
        "host: $h->{host}", "date: $h->{date}", "digest: $h->{digest}";
    my $rsa = Crypt::OpenSSL::RSA->new_public_key($pem);
    $rsa->use_sha256_hash;
    push @bad, 'signature'
        unless eval { $rsa->verify($text, decode_base64($sig{signature}
                                                        // '')) };
    return @bad;
}

1;
