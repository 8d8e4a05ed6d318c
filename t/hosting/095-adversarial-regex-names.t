# A provisioning block named by a regular expression (issue 26, part 6;
# docs/admin.md): nginx keeps a "~..." server_name without its "~", so
# the operator's create never recognised it and answered every name 400.
# The create now matches the host name against the block's regex as
# nginx would: a name it matches is created and served, one it does not
# (nor any other block) is still refused.

use strict;
use warnings;

use Test::More;
use Tent::Peer;
use Tent::Util qw(http_request);
use Tent::Hosting qw(provisioning_host operator_request client_of);

my $P = Tent::Peer::free_port();
my $root = Tent::Util::own_root('/tmp/sr-regex-names');
my ($host, $token, $tokfile) = provisioning_host(
    port => $P, root => $root,
    names => ['~^r[0-9]+\.test$', '*.b.test']);

sub admin {
    operator_request(port => $P, token => $token, body => $_[0]);
}

for my $name (qw(r1.test r42.test x.b.test)) {
    my $res = admin({ action => 'create', entity => "http://$name:$P" });
    is($res->{status}, 201, "$name created") or diag $res->{body};
    $res = client_of($name, $P)->request(GET => '/profile');
    is($res->{status}, 200, "$name is served on its name")
        or diag $res->{body};
    like($res->{body}, qr{"entity":"http://\Q$name\E:$P"},
         "$name: its own profile");
}

# names the regex does not match, nor the other block's wildcard
for my $name (qw(x.test r.test ar1.test r1.test.evil r1xtest b.test
                 localhost))
{
    my $res = admin({ action => 'create', entity => "http://$name:$P" });
    is($res->{status}, 400, "no provisioning server serves $name: 400")
        or diag $res->{body};
    like($res->{json}{error} // '', qr/No provisioning server/,
         "$name: the error says why");
}

is_deeply([sort map { $_->{entity} } @{ admin()->{json} || [] }],
          [map { "http://$_:$P" } qw(r1.test r42.test x.b.test)],
          'the registry holds the three entities only');

# a name of the regex never created: 404, as any
my $res = client_of('r7.test', $P)->request(GET => '/profile');
is($res->{status}, 404, 'r7.test, not created: 404') or diag $res->{body};

unlike($host->error_log_text, qr/\[alert\]|exited on signal|runtime error/,
       'no alert, no crash');
$host->stop;
unlink $tokfile;

done_testing();
