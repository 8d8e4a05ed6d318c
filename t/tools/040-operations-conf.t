# The production nginx.conf of docs/operations.md, taken from the doc
# itself: its two blocks (nginx.conf, one entity's file for alice and
# bob), only paths and ports made local, a self-signed *.tent.example
# certificate.  nginx -t passes, and it serves: TLS with the entity's
# name, plain HTTP redirected, a name that is no entity 404, the
# authorize page behind basic auth (401 without or with a wrong password),
# auth_request in bob's variant, the counters on their own listener only,
# a body over client_max_body_size 413, and unsigned POSTs limited (429).

use strict;
use warnings;
use Test::More;
use File::Path qw(make_path remove_tree);
use File::Spec;
use File::Temp ();
use FindBin;
use Time::HiRes qw(sleep time);

my $BASE = $ENV{TEST_NGINX_PORT} || $ENV{TEST_NGINX_SERVER_PORT} || 1984;
# ports just above the suite's; free ones when files run side by side
sub free_port {
    require IO::Socket::IP;
    my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                Listen => 1) or die "no free port: $@";
    return $s->sockport;
}
my ($HTTP, $HTTPS, $STATUS) = $ENV{TEST_NGINX_RANDOMIZE}
    ? (free_port(), free_port(), free_port())
    : ($BASE + 10, $BASE + 11, $BASE + 12);
my $BIN = $ENV{TEST_NGINX_BINARY} || '/usr/sbin/nginx';
my ($so) = grep { /ngx_http_tent_module/ }
           split ' ', $ENV{TEST_NGINX_LOAD_MODULES} || '';
plan skip_all => 'TEST_NGINX_LOAD_MODULES names no tent module' unless $so;
plan skip_all => 'needs root (user www-data)' unless $> == 0;
plan skip_all => 'needs curl and openssl'
    if system('curl --version >/dev/null 2>&1 && '
              . 'openssl version >/dev/null 2>&1');
$so = File::Spec->rel2abs($so);

# under /tmp whatever TEST_NGINX_SERVROOT says: the workers run as
# www-data, and a server root inside a checkout in a 0700 directory (a
# CI clone in mktemp -d, util/run-asan.sh's t/servroot) is closed to them
my $sr = File::Temp::tempdir('/tmp/tent-opsconf-XXXXXX', CLEANUP => 1);
make_path("$sr/ent", "$sr/logs");
chmod 0755, $sr;

# the doc's blocks: the indented text after "`/etc/nginx/nginx.conf`:"
# and after "`/etc/nginx/tent-entities/alice.conf`, one per entity:"
open my $fh, '<', "$FindBin::Bin/../../docs/operations.md" or die;
my $doc = do { local $/; <$fh> };
sub block_after {
    my ($marker) = @_;
    my $i = index($doc, $marker);
    die "no $marker in docs/operations.md" if $i < 0;
    my ($b) = substr($doc, $i) =~ /\n\n((?:    [^\n]*\n|\n)+)/;
    $b =~ s/^    //mg;
    return $b;
}
my $main = block_after('`/etc/nginx/nginx.conf`:');
my $ent = block_after('`/etc/nginx/tent-entities/alice.conf`');
like($main, qr/tent_store/, 'the doc has the nginx.conf');
like($ent, qr/tent_entity\s+https:\/\/alice\.tent\.example;/,
     'and the entity block');

my %subst = (
    'include  /etc/nginx/modules-enabled/*.conf;' => "load_module $so;",
    '/run/nginx.pid' => "$sr/nginx.pid",
    '/var/log/nginx' => "$sr/logs",
    '/etc/ssl/tent.example/fullchain.pem' => "$sr/cert.pem",
    '/etc/ssl/tent.example/privkey.pem' => "$sr/key.pem",
    '/var/lib/nginx/tent' => "$sr/store",
    '/etc/nginx/tent-entities/*.conf' => "$sr/ent/*.conf",
    '/etc/nginx/mime.types' => '/etc/nginx/mime.types',
    '/etc/nginx/tent-owners/' => "$sr/",
);
for my $k (keys %subst) {
    $main =~ s/\Q$k\E/$subst{$k}/g;
    $ent =~ s/\Q$k\E/$subst{$k}/g;
}
for ($main, $ent) {
    s/^\s*listen\s+\[::\].*\n//mg;                 # no IPv6 needed here
    s/^\s*listen\s+10\.0\.0\.5:.*\n//mg;           # no private network
    s/listen(\s+)80\b/listen${1}127.0.0.1:$HTTP/g;
    s/listen(\s+)443\b/listen${1}127.0.0.1:$HTTPS/g;
    s/listen(\s+)127\.0\.0\.1:8081\b/listen${1}127.0.0.1:$STATUS/g;
}
$main =~ s/^(events \{)/error_log $sr\/logs\/error.log notice;\n$1/m;
$main .= "\n";
unlike($main . $ent, qr{/etc/ssl|/var/|/run/}, 'every path made local');

# bob: the auth_request variant of the doc, with a checker that knows one
# token
my ($areq) = $doc =~ /\n((?: {8}location = \/tent\/oauth\/authorize \{\n(?: {12}auth_request[^\n]*\n| {12}tent_owner[^\n]*\n)+ {8}\}\n {8}location = \/sso-check \{\n(?: {12}[^\n]*\n)+ {8}\}\n))/;
ok($areq, 'the doc has the auth_request variant');
$areq =~ s/^    //mg;
$areq =~ s{http://127\.0\.0\.1:9000/check}{http://127.0.0.1:$HTTP/sso-check-backend};
(my $bob = $ent) =~ s/alice/bob/g;
$bob =~ s/    location = \/tent\/oauth\/authorize \{.*?\n    \}\n/$areq/s;
like($bob, qr/auth_request\s+\/sso-check;/, "bob's file uses auth_request");
# the checker, on the port-80 server: 200 with X-User for one token
$main =~ s{(return\s+301 https://\$host\$request_uri;)}{
    location = /sso-check-backend {
        if (\$http_x_token = "letmein") {
            add_header X-User "bob";
            return 200;
        }
        return 401;
    }
    location / { $1 }}s;

open my $o, '>', "$sr/nginx.conf" or die;
print {$o} $main;
close $o;
for (['alice', $ent], ['bob', $bob]) {
    open $o, '>', "$sr/ent/$_->[0].conf" or die;
    print {$o} $_->[1];
    close $o;
}
system("openssl req -x509 -newkey rsa:2048 -nodes -subj '/CN=*.tent.example' "
       . "-keyout $sr/key.pem -out $sr/cert.pem -days 2 2>/dev/null") == 0
    or die 'openssl';
# the owner's password, apr1 as htpasswd makes it
my $hash = `openssl passwd -apr1 secret`;
chomp $hash;
open $o, '>', "$sr/alice.htpasswd" or die;
print {$o} "alice:$hash\n";
close $o;

my $t = `$BIN -t -p $sr/ -c $sr/nginx.conf 2>&1`;
is($?, 0, 'nginx -t passes') or diag($t);

system($BIN, '-p', "$sr/", '-c', "$sr/nginx.conf") == 0 or die "start: $t";
END {
    if (open my $p, '<', "$sr/nginx.pid") {
        my $pid = <$p>;
        if ($pid && $pid =~ /(\d+)/) {
            my $m = $1;
            kill 'QUIT', $m;
            my $end = time + 10;
            sleep 0.05 while kill(0, $m) && time < $end;
        }
    }
}

# curl: (status, headers and body)
sub curl {
    my ($url, @opt) = @_;
    my @resolve = map { ('--resolve', "$_.tent.example:$HTTPS:127.0.0.1",
                         '--resolve', "$_.tent.example:$HTTP:127.0.0.1") }
                  qw(alice bob carol);
    open my $c, '-|', 'curl', '-sk', '-i', '--max-time', '10', @resolve,
         @opt, $url or die;
    my $out = do { local $/; <$c> } // '';
    close $c;
    my ($st) = $out =~ /^HTTP\/\S+ (\d+)/;
    return ($st // 0, $out);
}

my $end = time + 10;
my ($st, $out);
while (time < $end) {
    ($st, $out) = curl("https://alice.tent.example:$HTTPS/tent/profile");
    last if $st == 200;
    sleep 0.1;
}
is($st, 200, 'TLS: the profile of alice');
like($out, qr/"entity":"https:\/\/alice\.tent\.example"/, 'her entity');
($st, $out) = curl("https://bob.tent.example:$HTTPS/tent/profile");
like($out, qr/"entity":"https:\/\/bob\.tent\.example"/, "bob's block");
($st, $out) = curl("https://alice.tent.example:$HTTPS/", '-I');
like($out, qr/^Link: .*rel="https:\/\/tent\.io\/rels\/profile"/mi,
     'the entity page: the Link header');
($st, $out) = curl("http://alice.tent.example:$HTTP/tent/profile");
is($st, 301, 'plain HTTP: redirected');
like($out, qr{^Location: https://alice\.tent\.example}mi, 'to https');
($st) = curl("https://carol.tent.example:$HTTPS/tent/profile");
is($st, 404, 'a name that is no entity: 404');

# the authorize page
my $az = "https://alice.tent.example:$HTTPS/tent/oauth/authorize";
($st) = curl($az);
is($st, 401, 'authorize: 401 without a password');
($st) = curl($az, '-u', 'alice:wrong');
is($st, 401, 'and with a wrong one');
($st, $out) = curl($az, '-u', 'alice:secret');
ok($st != 401 && $st != 403, "the owner passes ($st: no client_id)");
my $bz = "https://bob.tent.example:$HTTPS/tent/oauth/authorize";
($st) = curl($bz);
is($st, 401, 'auth_request: 401 without the token');
($st) = curl($bz, '-H', 'X-Token: letmein');
ok($st != 401 && $st != 403, "auth_request: the owner passes ($st)");

# the counters
($st, $out) = curl("http://127.0.0.1:$STATUS/tent_status");
is($st, 200, 'tent_status on its listener');
like($out, qr/"deliveries":/, 'the counters');
($st) = curl("https://alice.tent.example:$HTTPS/tent_status");
isnt($st, 200, 'not on the public server');

# limits
my $big = "$sr/big";
open $o, '>', $big or die;
print {$o} 'x' x (12 * 1024 * 1024);
close $o;
($st) = curl("https://alice.tent.example:$HTTPS/tent/posts",
             '-H', 'Content-Type: application/vnd.tent.v0+json',
             '--data-binary', "\@$big");
is($st, 413, 'a body over client_max_body_size: 413');
my @st;
for (1 .. 14) {
    ($st) = curl("https://alice.tent.example:$HTTPS/tent/posts",
                 '-H', 'Content-Type: application/vnd.tent.v0+json',
                 '--data-binary', '{}');
    push @st, $st;
}
ok(!grep({ $_ == 429 } @st[0 .. 9]), 'unsigned POSTs: the burst passes')
    or diag("@st");
is($st[-1], 429, 'then 429') or diag("@st");

open my $el, '<', "$sr/logs/error.log";
my $log = do { local $/; <$el> } // '';
unlike($log, qr/\[(?:alert|crit|emerg)\]/, 'no alert in the error log');
like($log, qr/tent store: opened/, 'the store opened (notice level)');

done_testing();
