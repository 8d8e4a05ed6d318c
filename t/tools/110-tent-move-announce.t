# bin/tent-move in one command (issue 27; docs/tent-move.md): --announce
# sends the move's announcement (POST /move of the source, signed by its
# credential) after a whole copy, so the old entity's profile names the
# new one; without write_secrets/write_profile it says what is missing,
# the copy made.  --target-connect-to HOST:PORT reaches the target at
# another address than its URL's (a node behind a front, docs/
# scaling.md), with the entity's Host: without it the target's URL (a
# port nothing listens on) cannot be reached.

use strict;
use warnings;

use Test::More;
use File::Temp qw(tempdir);
use JSON::PP;
use Tent::Peer;
use Tent::Client;

my $CORE = 'https://tent.io/types/info/core/v0.1.0';
my $READ = 'read_secrets,read_profile,read_followers,read_followings,'
           . 'read_groups,read_posts';
my $WRITE = 'write_secrets,write_profile,write_followers,write_followings,'
            . 'write_groups,write_posts,import_posts';
my $tmp = tempdir(CLEANUP => 1);
my $HTTP = <<'CONF';
    tent_store $SERVROOT/store;
    tent_outbound_allow 127.0.0.0/8;
CONF

my $a = Tent::Peer->start(http_config => $HTTP);
my $b = Tent::Peer->start(http_config => $HTTP);
# c's URL names a port nothing listens on: reached with --connect-to only
my $X = Tent::Peer::free_port();
my $c = Tent::Peer->start(http_config => $HTTP, server_config => <<"CONF");
        tent_entity http://127.0.0.1:$X;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF
my $C = "http://127.0.0.1:$X";

sub cred_file {
    my ($name, $cred) = @_;
    my $f = "$tmp/$name.json";
    open my $fh, '>', $f or die;
    print {$fh} encode_json($cred);
    close $fh;
    chmod 0600, $f;
    return $f;
}

# run tent-move: (exit status, stdout, stderr)
sub move {
    my (@args) = @_;
    my $out = `$^X bin/tent-move @args 2>$tmp/err`;
    my $rc = $? >> 8;
    my $err = do { local $/; open my $f, '<', "$tmp/err"; <$f> } // '';
    return ($rc, $out, $err);
}

my %ALL = (post_types => 'all', info_types => 'all');
my (undef, $aread) = $a->authorized_app($READ, %ALL);
my (undef, $aall) = $a->authorized_app(
    "$READ,write_secrets,write_profile,write_posts", %ALL);
my (undef, $bown) = $b->authorized_app("$WRITE,$READ", %ALL);
my $cc = Tent::Client->new(host => "127.0.0.1:$X", port => $c->port);
my (undef, $cown) = $cc->authorized_app("$WRITE,$READ", %ALL);
$a->client->post_status($aall, "a's post $_") for 1 .. 3;
my ($sa, $sr, $tb, $tc) = (cred_file('aall', $aall), cred_file('aread', $aread),
                           cred_file('bown', $bown), cred_file('cown', $cown));

# ---- --target-connect-to: the target reached at its node's address

my ($rc, $out, $err) = move("-q --source-cred $sr --target-cred $tc",
                            $a->url, $C);
is($rc, 4, 'the target\'s URL alone: unreachable (exit 4)');
($rc, $out, $err) = move("-q --source-cred $sr --target-cred $tc "
                         . '--target-connect-to 127.0.0.1:' . $c->port,
                         $a->url, $C);
is($rc, 0, '--target-connect-to: the copy is made') or diag $err;
my $report = eval { decode_json($out) } || {};
is($report->{posts}{taken}, 3, 'the 3 posts taken') or diag $out;
my $res = $cc->request(GET => '/posts', cred => $cown);
is(scalar @{ $res->{json} || [] }, 3, 'c serves them, under its Host');
($rc, $out, $err) = move("-q --source-cred $sr --target-cred $tc "
                         . '--target-connect-to nowhere', $a->url, $C);
is($rc, 2, '--target-connect-to without a port: a usage error');
# --connect-to: the target's, under a short name (c holds 3 posts: the
# import refuses a target that is not empty, so the copy is refused AT
# c, which only the right address reaches)
($rc, $out, $err) = move("-q --source-cred $sr --target-cred $tc "
                         . '--connect-to 127.0.0.1:' . $c->port,
                         $a->url, $C);
is($rc, 4, '--connect-to: c reached, and it refuses a second copy')
    or diag $err;
like($err, qr/not empty|409|exist/i, 'it says why (c answered)')
    or diag $err;
unlike($err, qr/connect|refused/i, 'not a connection failure') or diag $err;
($rc, $out, $err) = move("-q --source-cred $sr --target-cred $tc "
                         . '--connect-to 127.0.0.1:' . $c->port
                         . ' --target-connect-to 127.0.0.1:' . $c->port,
                         $a->url, $C);
is($rc, 2, '--connect-to with --target-connect-to: a usage error');

# ---- --announce: a credential that may not move says so, copy made

($rc, $out, $err) = move("-q --announce --source-cred $sr "
                         . "--target-cred $tb", $a->url, $b->url);
is($rc, 3, '--announce with a read-only source credential: exit 3');
like($err, qr/write_secrets and write_profile/, 'it says what is missing');
like($err, qr/the copy is made/, 'and that the copy is made');
is($a->client->request(GET => '/profile')->{json}{$CORE}{entity}, $a->url,
   'a is not moved');

# ---- --announce after a whole copy: the old entity names the new one

my $b2 = Tent::Peer->start(http_config => $HTTP);
my (undef, $b2own) = $b2->authorized_app("$WRITE,$READ", %ALL);
my $tb2 = cred_file('b2own', $b2own);
($rc, $out, $err) = move("--announce --source-cred $sa --target-cred $tb2",
                         $a->url, $b2->url);
is($rc, 0, 'tent-move --announce') or diag $err;
like($err, qr/announce: the old entity names/, 'the announcement is said');
my $core = $a->client->request(GET => '/profile')->{json}{$CORE} || {};
is($core->{entity}, $b2->url, 'a\'s profile names the new entity');
is_deeply($core->{previous_entities} // [], [$a->url],
          'and lists a among the previous entities');

done_testing();
