# bin/tent-admin in the layout docs/admin.md recommends (issue 27): the
# operator's location in a server of its own (another port, http and
# https with a test CA), the tenants in theirs (http, and https).
# create gives the entity and its first owner credential or neither;
# "credential" gives a new owner credential of an entity, provisioned or
# fixed, through the operator's location only; a URL its block's
# tent_entity cannot make (scheme, port) is refused; sizes as nginx
# writes them; list shows the use beside the quotas.

use strict;
use IO::Socket::INET;
use warnings;

use File::Temp qw(tempdir);
my $TLS;
BEGIN {
    $TLS = tempdir(CLEANUP => 1);
    my $q = '2>/dev/null';
    open(my $ext, '>', "$TLS/ext") or die "$TLS/ext: $!\n";
    print $ext "subjectAltName=DNS:localhost,DNS:*.s.test,IP:127.0.0.1\n";
    close $ext;
    system("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-ca"
           . " -keyout $TLS/ca.key -out $TLS/ca.pem $q") == 0
        and system("openssl req -newkey rsa:2048 -nodes -subj /CN=localhost"
                   . " -keyout $TLS/tls.key -out $TLS/tls.csr $q") == 0
        and system("openssl x509 -req -in $TLS/tls.csr -CA $TLS/ca.pem"
                   . " -CAkey $TLS/ca.key -CAcreateserial -days 2"
                   . " -extfile $TLS/ext -out $TLS/tls.pem $q") == 0
        or die "openssl could not make the test certificates\n";
}

use Test::More;
use HTTP::Tiny;
use IO::Socket::IP;
use JSON::PP;
use Tent::Peer;
use Tent::Client;
use Tent::MAC ();
use Tent::Util qw(http_request);
use Tent::Hosting qw(operator_token provisioning_server client_of);

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $BASE = $ENV{TEST_NGINX_PORT} || 21900;
my $P = $BASE + 1;      # the peer's own server: the http tenants
my $A = $BASE + 2;      # the operator's server, http
my $AS = $BASE + 3;     # the operator's server, https
my $S = $BASE + 4;      # the https tenants
my $F = $BASE + 5;      # a fixed entity
my $root = Tent::Util::own_root('/tmp/sr-admin-layout');
my $tokfile = "$root-token";
my $token = operator_token($tokfile);

my $host = Tent::Peer->start(
    port => $P,
    http_config => "    tent_store \$SERVROOT/store;\n"
                   . "    tent_outbound_allow 127.0.0.0/8;\n"
                   . provisioning_server('*.test') . <<"CONF",
    server {
        listen 127.0.0.1:$A;
        listen 127.0.0.1:$AS ssl;
        server_name operator.local;
        ssl_certificate $TLS/tls.pem;
        ssl_certificate_key $TLS/tls.key;
        location /tent-admin {
            tent_admin;
            tent_admin_token_file $tokfile;
            allow 127.0.0.1;
            deny all;
        }
    }
    server {
        listen 127.0.0.1:$S ssl;
        server_name *.s.test;
        ssl_certificate $TLS/tls.pem;
        ssl_certificate_key $TLS/tls.key;
        tent_entity https://\$host:$S;
        tent_provisioning on;
    }
    server {
        listen 127.0.0.1:$F;
        server_name fixed.local;
        tent_entity http://fixed.local:$F;
    }
CONF
    server_config => '');

my $ADMIN = "bin/tent-admin --token-file $tokfile";
my $HTTP_OP = "$ADMIN --url http://127.0.0.1:$A/tent-admin";
my $HTTPS_OP = "$ADMIN --url https://127.0.0.1:$AS/tent-admin";

# tent-admin ARGS: (exit status, stdout, stderr)
sub run {
    my ($cmd) = @_;
    my $err = "$TLS/stderr";
    my $out = `$cmd 2>$err`;
    my $rc = $? >> 8;
    my $e = do { local $/; open my $fh, '<', $err or die; <$fh> } // '';
    return ($rc, $out, $e);
}

sub cred_of { my ($out) = @_; return eval { decode_json($out) } || {} }

sub post { $_[0]->post($_[1], Tent::Client::status_body($_[2])) }

# a signed GET of PATH (under /tent) of an https entity NAME
sub https_get {
    my ($name, $cred, $path) = @_;
    my %mac = Tent::MAC::signed_headers(
        cred => $cred, method => 'GET', uri => "/tent$path",
        host => $name, port => $S, nonce => Tent::MAC::random_nonce(8));
    return HTTP::Tiny->new(verify_SSL => 1,
                           SSL_options => { SSL_ca_file => "$TLS/ca.pem" })
        ->request(GET => "https://$name:$S/tent$path",
                  { headers => \%mac, peer => '127.0.0.1' });
}

sub listed {
    my ($rc, $out) = run("$HTTP_OP list");
    return { map { my $r = decode_json($_); ($r->{entity} => $r) }
             split /\n/, $out };
}

# ---- create through an operator's server of its own: the entity and
# its first owner credential

my ($rc, $out, $err) = run("$HTTP_OP create http://dave.test:$P");
is($rc, 0, 'create dave through the operator\'s own server') or diag $err;
my $dcred = cred_of($out);
is($dcred->{entity}, "http://dave.test:$P", 'the credential names dave');
like($dcred->{mac_key_id} // '', qr/^u:/, 'an authorization key id');
my $dave = client_of('dave.test', $P);
my $res = post($dave, $dcred, 'the first post of dave');
is($res->{status}, 200, 'dave posts with the credential') or diag $res->{body};
$res = $dave->request(GET => '/apps', cred => $dcred);
is($res->{status}, 200, 'it reads the apps: every scope') or diag $res->{body};

# a second create of dave: 409, and dave (his credential) is kept
($rc, $out, $err) = run("$HTTP_OP create http://dave.test:$P");
is($rc, 1, 'create dave again: refused');
like($err, qr/409/, 'the entity exists already: 409');
is(post($dave, $dcred, 'still here')->{status}, 200,
   'dave and his credential are kept');

# ---- credential: a new owner credential of an existing entity

($rc, $out, $err) = run("$HTTP_OP credential http://dave.test:$P");
is($rc, 0, 'credential dave') or diag $err;
my $dcred2 = cred_of($out);
isnt($dcred2->{mac_key_id} // '', $dcred->{mac_key_id},
     'a new credential, not the first');
is(post($dave, $dcred2, 'with the second credential')->{status}, 200,
   'the new credential posts');
is(post($dave, $dcred, 'with the first')->{status}, 200,
   'the first one still works');

my $cf = "$root-cred.json";
unlink $cf;
($rc, $out, $err) = run("$HTTP_OP --credential-file $cf credential "
                        . "http://dave.test:$P");
is($rc, 0, 'credential --credential-file') or diag $err;
is((stat $cf)[2] & 07777, 0600, 'the file is mode 0600');
($rc, $out, $err) = run("$HTTP_OP --credential-file $cf credential "
                        . "http://dave.test:$P");
is($rc, 2, 'a credential file already there: refused');
unlink $cf;

($rc, $out, $err) = run("$HTTP_OP credential http://nobody.test:$P");
is($rc, 1, 'credential of no entity: refused');
like($err, qr/404/, 'it says 404');
is($out, '', 'and prints no credential');

# a disabled entity: none (the registry fence), until enabled again
($rc, $out, $err) = run("$HTTP_OP disable http://dave.test:$P");
is($rc, 0, 'dave disabled') or diag $err;
($rc, $out, $err) = run("$HTTP_OP credential http://dave.test:$P");
is($rc, 1, 'credential of a disabled entity: refused');
like($err, qr/410/, 'it says 410');
is($out, '', 'and prints no credential');
($rc, $out, $err) = run("$HTTP_OP enable http://dave.test:$P");
is($rc, 0, 'dave enabled') or diag $err;

# a fixed entity of the configuration: its first credential too
($rc, $out, $err) = run("$HTTP_OP credential http://fixed.local:$F");
is($rc, 0, 'credential of a fixed entity') or diag $err;
my $fcred = cred_of($out);
my $fixed = Tent::Client->new(host => "fixed.local:$F", port => $F);
is(post($fixed, $fcred, 'the fixed entity posts')->{status}, 200,
   'the fixed entity\'s credential posts');

# ---- as an attacker: only the operator's token makes a credential

sub operator_post {
    my ($headers, $body, $port) = @_;
    return http_request(method => 'POST', path => '/tent-admin',
                        port => $port // $A,
                        headers => { Host => 'operator.local', %$headers },
                        body => encode_json($body));
}

my $want = { action => 'credential', entity => "http://dave.test:$P" };
$res = operator_post({}, $want);
is($res->{status}, 401, 'credential without a token: 401');
my %mac = Tent::MAC::signed_headers(
    cred => $dcred, method => 'POST', uri => '/tent-admin',
    host => 'operator.local', port => $A,
    nonce => Tent::MAC::random_nonce(8));
$res = operator_post(\%mac, $want);
is($res->{status}, 401, 'credential with the tenant\'s owner MAC: 401');
$res = operator_post({ Authorization => "Bearer $dcred->{mac_key}" }, $want);
is($res->{status}, 401, 'with the tenant\'s MAC key as a token: 401');
$res = client_of('dave.test', $P)->request(POST => '/tent-admin',
                                           cred => $dcred, body => $want);
isnt($res->{status}, 200, 'the tenant\'s own server has no operator '
                          . 'location');
unlike($res->{body} // '', qr/mac_key/, 'and gives no key');

# ---- https: the operator's location and a tenant on https

($rc, $out, $err) = run("$HTTPS_OP --cacert $TLS/ca.pem list");
is($rc, 0, 'list over https, the test CA given') or diag $err;
($rc, $out, $err) = run("$HTTPS_OP list");
is($rc, 1, 'over https, a certificate of no CA trusted: refused');
like($err, qr/certificate|SSL/i, 'it says why');
($rc, $out, $err) = run("$HTTPS_OP --insecure list");
is($rc, 0, '--insecure: taken unchecked') or diag $err;
($rc, $out, $err) = run("$HTTP_OP --cacert $TLS/ca.pem list");
is($rc, 2, '--cacert with an http URL: a usage error');

($rc, $out, $err) = run("$HTTPS_OP --cacert $TLS/ca.pem create "
                        . "https://erin.s.test:$S");
is($rc, 0, 'create an https tenant over https') or diag $err;
my $ecred = cred_of($out);
is($ecred->{entity}, "https://erin.s.test:$S", 'erin\'s credential');
$res = https_get('erin.s.test', $ecred, '/apps');
is($res->{status}, 200, 'erin\'s credential reads her apps over https')
    or diag $res->{content};

# ---- an entity URL its block cannot make: refused, nothing created

for my $bad (["https://dave2.test:$P", 'scheme', 'https on an http block'],
             ["http://dave2.test:9", 'port', 'another port'],
             ["http://dave2.test", 'port', 'the default port'],
             ["http://erin2.s.test:$S", 'scheme', 'http on an https block'],
             ["https://erin2.s.test", 'port', 'https without the port'])
{
    my ($url, $why, $name) = @$bad;
    ($rc, $out, $err) = run("$HTTP_OP create $url");
    is($rc, 1, "create $url ($name): refused");
    like($err, qr/400 .*another $why/, "the error names the $why");
}
my $l = listed();
ok(!grep({ /dave2|erin2/ } keys %$l), 'none of them was created');

# ---- sizes as nginx writes them; the use beside the quotas

($rc, $out, $err) = run("$HTTP_OP --attachment-bytes 10m --posts 5 create "
                        . "http://frank.test:$P");
is($rc, 0, 'create --attachment-bytes 10m') or diag $err;
my $frank = client_of('frank.test', $P);
my $fr = cred_of($out);
is(post($frank, $fr, "frank $_")->{status}, 200, "frank posts $_") for 1 .. 2;
$l = listed();
is($l->{"http://frank.test:$P"}{quotas}{attachment_bytes}, 10 * 1024 * 1024,
   '10m: 10485760 bytes');
($rc, $out, $err) = run("$HTTP_OP --attachment-bytes 512k quotas "
                        . "http://frank.test:$P");
is($rc, 0, 'quotas --attachment-bytes 512k') or diag $err;
($rc, $out, $err) = run("$HTTP_OP --attachment-bytes 1g quotas "
                        . "http://dave.test:$P");
is($rc, 0, 'quotas --attachment-bytes 1g') or diag $err;
for my $bad (qw(10x 1.5m m -1)) {
    ($rc, $out, $err) = run("$HTTP_OP --attachment-bytes $bad quotas "
                            . "http://frank.test:$P");
    is($rc, 2, "--attachment-bytes $bad: a usage error");
}
$l = listed();
is($l->{"http://frank.test:$P"}{quotas}{attachment_bytes}, 512 * 1024,
   '512k: 524288 bytes');
is($l->{"http://dave.test:$P"}{quotas}{attachment_bytes}, 1024 ** 3,
   '1g: 1073741824 bytes');
is($l->{"http://frank.test:$P"}{use}{posts}, 2, 'frank\'s use: 2 posts')
    or diag explain $l->{"http://frank.test:$P"};
is($l->{"http://dave.test:$P"}{use}{posts}, 4, 'dave\'s use: 4 posts');

# ---- all or nothing: a credential that cannot be made deletes the
# entity again (an operator's location scripted to fail the credential)

{
    my $fp = Tent::Util::free_port();
    my $log = "$TLS/fake.log";
    my $ls = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => $fp,
                                 Listen => 5, ReuseAddr => 1)
        or die "listen: $!";
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        open my $lf, '>', $log or die;
        $lf->autoflush(1);
        for (1 .. 3) {
            my $c = $ls->accept or last;
            my ($len, $line) = (0);
            while (defined($line = <$c>) && $line ne "\r\n") {
                $len = $1 if $line =~ /^Content-Length:\s*(\d+)/i;
            }
            my $body = q{};
            read $c, $body, $len;
            my $b = eval { decode_json($body) } || {};
            print {$lf} "$b->{action}\n";
            my ($st, $out) = $b->{action} eq 'create'
                ? (201, { entity => $b->{entity}, state => 'active' })
                : $b->{action} eq 'credential'
                ? (500, { error => 'the store failed' })
                : (200, { entity => $b->{entity}, done => JSON::PP::true });
            my $j = encode_json($out);
            print {$c} "HTTP/1.1 $st X\r\nContent-Type: application/json\r\n"
                . "Content-Length: " . length($j) . "\r\nConnection: close"
                . "\r\n\r\n$j";
            close $c;
        }
        exit 0;
    }
    close $ls;
    my $cf = "$TLS/never.json";
    ($rc, $out, $err) = run("$ADMIN --url http://127.0.0.1:$fp/tent-admin "
                            . "--credential-file $cf create "
                            . "http://gone.test:$P");
    waitpid $pid, 0;
    is($rc, 1, 'create whose credential fails: exit 1');
    like($err, qr/500 the store failed/, 'it says why');
    like($err, qr/removed again/, 'and that the entity was removed again');
    is(do { local $/; open my $f, '<', $log or die; <$f> },
       "create\ncredential\ndelete\n",
       'create, credential, then delete: no entity without its credential');
    ok(!-e $cf, 'no credential file left');
    is($out, '', 'nothing on stdout');
}

# ---- a proxy in the environment is never used: the operator's token
# would go to it (in clear over http), and --host's address be ignored
{
    my $px = IO::Socket::INET->new(Listen => 5, LocalAddr => '127.0.0.1',
                                   LocalPort => 0, ReuseAddr => 1)
        or die "proxy listener: $!";
    my $pp = $px->sockport;
    local $ENV{http_proxy} = "http://127.0.0.1:$pp";
    local $ENV{https_proxy} = "http://127.0.0.1:$pp";
    local $ENV{all_proxy} = "http://127.0.0.1:$pp";
    ($rc, $out, $err) = run("$HTTP_OP list");
    is($rc, 0, 'list with http_proxy set: done') or diag $err;
    like($out, qr/"entity":"http:\/\/dave\.test:$P"/,
         'through the --url, not the proxy');
    $px->blocking(0);
    ok(!$px->accept, 'the proxy got no connection');
    close $px;
}

done_testing();
