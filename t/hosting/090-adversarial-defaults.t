# Safe by default (issue 26, part 5; docs/directives.md tent_provisioning):
# a server whose tent_entity has variables serves only the entities the
# operator created unless "tent_provisioning off" is written.  Before,
# a block without the line let anyone's unsigned POST /apps or POST
# /followers under a made-up Host write rows: a store filled under any
# number of names.  The open mode, asked for, makes nginx -t warn.

use strict;
use warnings;

use Test::More;
use File::Path qw(make_path remove_tree);
use File::Spec;
use Tent::Peer;
use Tent::Receiver;
use Tent::Util qw(http_request);
use Tent::Hosting qw(operator_token admin_location operator_request
                     client_of);

my $root = Tent::Util::own_root('/tmp/sr-defaults');
my $tokfile = "$root-token";
my $token = operator_token($tokfile);

# a "*.test" block with a variable tent_entity and no tent_provisioning
my $host = Tent::Peer->start(http_config => <<'CONF',
    tent_store $SERVROOT/store;
    tent_outbound_allow 127.0.0.0/8;
    server {
        listen 127.0.0.1:$PORT;
        server_name *.test;
        tent_entity http://$host:$PORT;
    }
CONF
    server_config => admin_location($tokfile));
my $P = $host->port;
my $rx = Tent::Receiver->start;

my $app = { name => 'squatter', url => 'http://squat.example',
            redirect_uris => ['http://squat.example/cb'], scopes => {} };

# ---- a name never created: nothing written, whatever the request

for my $name (qw(madeup.test other.madeup.test)) {
    my $c = client_of($name, $P);
    my $res = $c->request(POST => '/apps', body => $app);
    is($res->{status}, 404, "$name: unsigned POST /apps is 404")
        or diag $res->{body};
    like($res->{body}, qr/"error":\s*"No such entity on this server"/,
         "$name: the JSON error says why");
    $res = $c->request(POST => '/followers',
                       body => { entity => $rx->url, types => ['all'],
                                 notification_path => 'notifications' });
    is($res->{status}, 404, "$name: unsigned POST /followers is 404")
        or diag $res->{body};
    is($c->request(GET => '/profile')->{status}, 404,
       "$name: no profile");
    $res = http_request(method => 'HEAD', path => '/', port => $P,
                        headers => { Host => "$name:$P" });
    ok(!defined $res->{headers}{link}, "$name: no Link header");
}

# ---- one the operator created is served

my $res = operator_request(port => $P, token => $token,
                           body => { action => 'create',
                                     entity => "http://alice.test:$P" });
is($res->{status}, 201, 'the operator creates alice.test') or diag $res->{body};
$res = client_of('alice.test', $P)->request(POST => '/apps', body => $app);
is($res->{status}, 200, 'alice.test takes an app') or diag $res->{body};

# ---- the store: no row under the made-up names

$host->stop;
{
    my @rows = Tent::Util::ldb_rows($host->servroot . '/store/db');
    for my $name (qw(madeup.test other.madeup.test)) {
        my $h = unpack 'H*', "http://$name:$P\0";
        is(scalar(grep { /^\Q$h\E/ } @rows), 0, "no row of $name");
    }
    my $h = unpack 'H*', "http://alice.test:$P\0";
    ok(scalar(grep { /^\Q$h\E/ } @rows) > 0, 'the rows of alice.test');
}
unlike($host->error_log_text, qr/\[alert\]|exited on signal|runtime error/,
       'no alert, no crash');
$rx->stop;
unlink $tokfile;

# ---- nginx -t: the open mode warns, naming the risk

my $nginx = $ENV{TEST_NGINX_BINARY} || 'nginx';
my @mods = split ' ', $ENV{TEST_NGINX_LOAD_MODULES} || '';
my $load = join '', map { "load_module " . File::Spec->rel2abs($_) . ";\n" }
                    @mods;
my $troot = "$root-t";

# nginx -t of a server with ENTITY and LINES (HTTP_LINES in its http
# block): exit status and output
sub check {
    my ($entity, $lines, $http_lines) = @_;
    $http_lines //= '';
    remove_tree($troot);
    make_path("$troot/conf", "$troot/logs");
    open my $fh, '>', "$troot/conf/nginx.conf" or die "conf: $!";
    print {$fh} <<"CONF";
worker_processes 1;
${\ Tent::Util::user_line()}
error_log $troot/logs/error.log;
pid $troot/logs/nginx.pid;
$load
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $troot/client_body;
    proxy_temp_path $troot/proxy;
    fastcgi_temp_path $troot/fastcgi;
    uwsgi_temp_path $troot/uwsgi;
    scgi_temp_path $troot/scgi;
    tent_store $troot/store;
    $http_lines
    server {
        listen 127.0.0.1:$P;
        server_name *.test;
        tent_entity $entity;
        $lines
    }
}
CONF
    close $fh;
    my $out = `$nginx -t -p $troot -c conf/nginx.conf 2>&1`;
    return ($? >> 8, $out);
}

my ($rc, $out) = check('http://$host', 'tent_provisioning off;');
is($rc, 0, '"tent_provisioning off" on a variable entity is taken')
    or diag $out;
like($out, qr/\[warn\] \d+#\d+: "tent_provisioning off" with a variable "tent_entity": any Host name becomes an entity on its first unsigned write in \S+nginx\.conf:\d+/,
     'with a warning naming the risk') or diag $out;

($rc, $out) = check('http://$host', '');
is($rc, 0, 'a variable entity without the line is taken') or diag $out;
unlike($out, qr/\[warn\]/, 'without a warning: it is provisioned')
    or diag $out;

# provisioned by default, so one owner for all its tenants is refused
# as with the line written (docs/auth.md, sign-in per tenant)
($rc, $out) = check('http://$host',
                    'location /o { tent_owner "one for all"; }');
isnt($rc, 0, 'a variable entity without the line refuses tent_owner');
like($out, qr/\[emerg\] \d+#\d+: "tent_owner" in a server with "tent_provisioning on"/,
     'and says why') or diag $out;

($rc, $out) = check('http://$host', 'tent_provisioning on;');
unlike($out, qr/\[warn\]/, '"tent_provisioning on": no warning') or diag $out;

($rc, $out) = check('http://fixed.test', '');
is($rc, 0, 'a fixed entity without the line is taken') or diag $out;
unlike($out, qr/\[warn\]/, 'without a warning') or diag $out;

($rc, $out) = check('http://fixed.test', 'tent_provisioning off;');
is($rc, 0, 'a fixed entity with "tent_provisioning off"') or diag $out;
unlike($out, qr/\[warn\]/, 'is no risk: no warning') or diag $out;

($rc, $out) = check('http://fixed.test', 'tent_provisioning on;');
isnt($rc, 0, 'a fixed entity with "tent_provisioning on" fails');
like($out, qr/"tent_provisioning" needs a "tent_entity" with variables/,
     'and says why') or diag $out;

# a server's open mode is its own: written in the http block the line
# would reach every server silently (the variable ones' default is on),
# so it is refused there rather than merged or overridden
for my $v (qw(off on)) {
    ($rc, $out) = check('http://$host', '', "tent_provisioning $v;");
    isnt($rc, 0, "\"tent_provisioning $v\" in the http block fails");
    like($out, qr/"tent_provisioning" directive is not allowed here/,
         'and says why') or diag $out;
}

remove_tree($troot);

done_testing();
