# Sign-in per tenant (issue 26, docs/auth.md "Sign-in per tenant"): on a
# provisioning host the authorize page signs in the entity's own owner
# with the password the operator set in its registry row.  Attacked:
# another tenant's password, another tenant's session cookie, a form
# posted from another site or without its token, an old session after
# the password changed, guessing (429 with Retry-After, by entity and by
# client address, a flood of addresses, tries at the tenants of an
# entity's throttle set, IPv6 by /64), bodies of every wrong shape,
# the hash read back from the operator's location, and the one
# configuration that would let any tenant's owner approve for all
# (tent_owner in a provisioning server), refused at "nginx -t".

use strict;
use warnings;

use Test::More;
use File::Path qw(make_path remove_tree);
use File::Spec;
use JSON::PP;
use Tent::Client;
use Tent::Util qw(http_request);
use Tent::Hosting qw(provisioning_host operator_request client_of);

my $BASE = $ENV{TEST_NGINX_PORT} || 22700;
my $P = $BASE + 1;
my $root = Tent::Util::own_root('/tmp/sr-signin');
# a cheap hash: the suite signs in some hundred times
my ($host, $token, $tokfile) = provisioning_host(
    port => $P, root => $root, names => ['*.test'],
    http => "    tent_password_scrypt 1024 8 1;\n",
    servers => <<'CONF');
    server {
        listen 127.0.0.1:$PORT;
        server_name *.tls.example;
        tent_entity https://$host:$PORT;
        tent_provisioning on;
    }
    server {
        listen 127.0.0.1:$PORT;
        server_name *.six.test;
        tent_entity http://$host:$PORT;
        tent_provisioning on;
        set_real_ip_from 127.0.0.0/8;
        real_ip_header X-Real-IP;
    }
    server {
        listen 127.0.0.1:$PORT;
        server_name fixed.example;
        tent_entity http://fixed.example:$PORT;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
    }
CONF

sub admin { operator_request(port => $P, token => $token, body => $_[0]) }
sub pw { Tent::Client::test_password("$_[0]:$P") }

for my $n (qw(amy bob carl dan eve fay)) {
    is(admin({ action => 'create', entity => "http://$n.test:$P" })
           ->{status}, 201, "$n created with a password");
}

my $amy = client_of('amy.test', $P);
my $bob = client_of('bob.test', $P);
my $app = $amy->register_app;
my $bapp = $bob->register_app;
my $q = $amy->authorize_query($app);
my $bq = $bob->authorize_query($bapp);

sub page {
    my ($c, $query, %h) = @_;
    return $c->request(GET => "/oauth/authorize?$query", headers => \%h);
}

# ---- the page asks for the password, framed by no one

my $form = page($amy, $q);
is($form->{status}, 200, 'the authorize page of a provisioned entity');
like($form->{body}, qr/<input type="password" name="password"/,
     'is a sign-in form');
unlike($form->{body}, qr/value="approve"/, 'with no Approve before it');
is($form->{headers}{'x-frame-options'}, 'DENY', 'X-Frame-Options: DENY');
like($form->{headers}{'content-security-policy'} || '',
     qr/frame-ancestors 'none'/, "frame-ancestors 'none'");
is($form->{headers}{'cache-control'}, 'no-store', 'not cached');

# ---- wrong passwords: another tenant's among them

my ($res, $cookie) = $amy->sign_in($form, password => pw('bob.test'));
is($res->{status}, 403, "bob's password is refused on amy's page");
like($res->{body}, qr/Wrong password/, 'said on the form');
ok(!$cookie, 'no session');
($res, $cookie) = $amy->sign_in($form, password => 'not the password');
is($res->{status}, 403, 'a wrong password: 403');

# ---- amy's own: a session cookie for amy's page only

($res, $cookie) = $amy->sign_in($form, local_addr => '127.0.0.1');
is($res->{status}, 200, "amy's password signs her in");
like($res->{body}, qr/value="approve"/, 'and shows the app to approve');
my $sc = $res->{headers}{'set-cookie'} || '';
like($sc, qr/^tent_session=[0-9]+\.[A-Za-z0-9_-]+;/, 'a session cookie');
like($sc, qr/; HttpOnly/, 'HttpOnly');
like($sc, qr/; SameSite=Lax/, 'SameSite=Lax (an app sends the owner here)');
like($sc, qr/; Path=\/tent\/oauth\/authorize;/, 'for the authorize page');
unlike($sc, qr/Secure/, 'not Secure on http (it is on https)');
my %approve = (Tent::Client::form_of($res), decision => 'approve');

# the decision needs the session and the form's token, from this site

$res = $amy->post_form(\%approve);
is($res->{status}, 403, 'the approve form without the session: 403');
like($res->{body}, qr/Sign in first/, 'asks to sign in');
$res = $amy->post_form({ %approve, csrf => '' },
                       headers => { Cookie => $cookie });
is($res->{status}, 403, 'with the session but no token: 403');
$res = $amy->post_form(\%approve, headers => { Cookie => $cookie,
                                               Origin => 'http://evil.test' });
is($res->{status}, 403, 'from another Origin: 403');
$res = $amy->post_form(\%approve, headers => { Cookie => $cookie,
                                               'Sec-Fetch-Site' => 'cross-site' });
is($res->{status}, 403, 'Sec-Fetch-Site: cross-site: 403');
$res = $amy->post_form(\%approve, headers => { Cookie => $cookie,
                                               Origin => 'null' });
is($res->{status}, 403, 'Origin: null alone: 403');
$res = $amy->post_form(\%approve, headers => { Cookie => $cookie,
                                               Origin => "http://amy.test:$P.evil.test" });
is($res->{status}, 403, 'an Origin the entity is a prefix of: 403');
$res = $amy->post_form(\%approve, headers => {
    Cookie => $cookie, Origin => "http://amy.test:$P",
    'Sec-Fetch-Site' => 'same-origin' });
is($res->{status}, 302, 'the session, the token, this site: approved');
my $code = Tent::Client::code_from($res);
ok($code, 'with a code');
is($amy->exchange($app, $code)->{status}, 200, 'the code gives credentials');

# a GET with the session shows the page at once
$res = page($amy, $q, Cookie => $cookie);
like($res->{body}, qr/value="approve"/, 'signed in: the page at once');

# ---- amy's session is nobody else's

$res = page($bob, $bq, Cookie => $cookie);
like($res->{body}, qr/name="password"/, "amy's cookie on bob's page: sign in");
my %bform = Tent::Client::form_of(page($bob, $bq));
$res = $bob->post_form({ %bform, decision => 'approve' },
                       headers => { Cookie => $cookie });
is($res->{status}, 403, "amy's cookie approves nothing on bob's page");
ok(!Tent::Client::code_from($res), 'no code');
# the approve form of amy's page posted to bob's
$res = $bob->post_form({ %approve, client_id => $bapp->{id},
                         redirect_uri => $bapp->{redirect_uris}[0] },
                       headers => { Cookie => $cookie });
is($res->{status}, 403, "amy's form and cookie on bob's page: 403");

# ---- the sign-in form itself: its token, this site

($res, $cookie) = $amy->sign_in($form, signin_tamper => { csrf => 'x' });
is($res->{status}, 403, 'a sign-in without its token: 403');
ok(!$cookie, 'no session');
($res, $cookie) = $amy->sign_in($form,
                                headers => { Origin => 'http://evil.test' });
is($res->{status}, 403, 'a sign-in posted from another site: 403');
ok(!$cookie, 'no session');

# ---- a new password ends every session

($res, $cookie) = $amy->sign_in($form);
ok($cookie, 'signed in again');
$res = admin({ action => 'password', entity => "http://amy.test:$P",
               password => 'a new password for amy' });
is($res->{status}, 200, 'the operator sets a new password');
unlike($res->{body}, qr/scrypt|a new password/, 'the answer has no hash');
is($res->{json}{password_set}, JSON::PP::true, 'says one is set');
$res = page($amy, $q, Cookie => $cookie);
like($res->{body}, qr/name="password"/, 'the old session has ended');
($res) = $amy->sign_in($form);
is($res->{status}, 403, 'the old password is refused');
($res, $cookie) = $amy->sign_in($form, password => 'a new password for amy');
is($res->{status}, 200, 'the new one signs in');

# ---- the operator's location never gives the hash

$res = operator_request(port => $P, token => $token);
is($res->{status}, 200, 'the registry listed');
unlike($res->{body}, qr/scrypt|"password"/, 'without any hash');
my ($row) = grep { $_->{entity} eq "http://amy.test:$P" } @{ $res->{json} };
is($row->{password_set}, JSON::PP::true, 'a row says a password is set');

for my $bad ('short', 5, [1], { a => 1 }, 'x' x 1025) {
    $res = admin({ action => 'password', entity => "http://fay.test:$P",
                   password => $bad });
    is($res->{status}, 400, 'a password of ' . (ref $bad || length $bad)
                            . ': 400');
}
is(admin({ action => 'password', entity => "http://fay.test:$P" })
       ->{status}, 400, 'the action without "password": 400');
is(admin({ action => 'password', entity => "http://nobody.test:$P",
           password => 'a password' })->{status}, 404,
   'of an entity not created: 404');
$res = admin({ action => 'password', entity => "http://fay.test:$P",
               password => undef });
is($res->{status}, 200, 'null takes the password away');
is($res->{json}{password_set}, JSON::PP::false, 'none set');
my $fay = client_of('fay.test', $P);
$res = $fay->request(
    GET => '/oauth/authorize?' . $fay->authorize_query($fay->register_app));
is($res->{status}, 403, 'no password: no sign-in, 403');
like($res->{json}{error} // '', qr/No password is set/, 'said in JSON');

# ---- bodies of every wrong shape

sub post_raw {
    my ($body, %h) = @_;
    return http_request(method => 'POST', path => '/tent/oauth/authorize',
                        port => $P, body => $body,
                        headers => { Host => "amy.test:$P",
                                     'Content-Type' =>
                                     'application/x-www-form-urlencoded',
                                     %h });
}

is(post_raw('')->{status}, 400, 'an empty body: 400');
is(post_raw('password=x')->{status}, 400, 'only a password: 400');
is(post_raw('{"password":"x"}', 'Content-Type' => 'application/json')
       ->{status}, 400, 'JSON: 400');
my %sf = Tent::Client::form_of($form);
my $enc = join '&', map { "$_=" . Tent::Client::uri_escape($sf{$_}) }
                        sort keys %sf;
$res = post_raw("$enc&password=" . ('a' x 1100));
is($res->{status}, 400, 'a password over 1024 bytes: 400');
$res = post_raw("$enc&password=");
is($res->{status}, 400, 'an empty password: 400');
$res = post_raw("$enc&password=%00%01" . Tent::Client::uri_escape(pw('amy.test')));
is($res->{status}, 403, 'control bytes in a password: just wrong');
$res = post_raw("$enc&password=x&password=y");
is($res->{status}, 403, 'two passwords: the first, wrong');
$res = post_raw("$enc&password=" . ('b' x (2 * 1024 * 1024)));
is($res->{status}, 413, 'a body over client_max_body_size: 413');

# ---- guessing: by client address, by entity, and what a success resets

my $carl = client_of('carl.test', $P);
my $cform = page($carl, $carl->authorize_query($carl->register_app));
for my $i (1 .. 5) {
    ($res) = $carl->sign_in($cform, password => "guess $i",
                            local_addr => '127.0.0.2');
    is($res->{status}, 403, "guess $i from 127.0.0.2: wrong");
}
($res, $cookie) = $carl->sign_in($cform, local_addr => '127.0.0.2');
is($res->{status}, 429, 'then even the right password from there: 429');
ok(!$cookie, 'no session');
like($res->{headers}{'retry-after'} // '', qr/^[1-9][0-9]*$/,
     'with Retry-After in seconds');
($res, $cookie) = $carl->sign_in($cform, local_addr => '127.0.0.3');
is($res->{status}, 200, 'from another address the owner signs in');

my $dan = client_of('dan.test', $P);
my $dform = page($dan, $dan->authorize_query($dan->register_app));
my $wrong = 0;
for my $a (10 .. 13) {
    for my $i (1 .. 5) {
        ($res) = $dan->sign_in($dform, password => "guess $a.$i",
                               local_addr => "127.0.0.$a");
        $wrong++ if $res->{status} == 403;
    }
}
is($wrong, 20, '20 guesses from 4 addresses, each wrong');
($res) = $dan->sign_in($dform, local_addr => '127.0.0.14');
is($res->{status}, 429, 'then the entity waits, from a new address too');
like($res->{headers}{'retry-after'} // '', qr/^[1-9][0-9]*$/, 'Retry-After');

# a flood of addresses does not push the entity's count out
my $flood = 0;
for my $i (1 .. 600) {
    my $a = sprintf '127.1.%d.%d', int($i / 250), $i % 250 + 1;
    ($res) = $dan->sign_in($dform, password => "flood $i", local_addr => $a);
    $flood++ if $res->{status} == 429;
}
is($flood, 600, '600 addresses more: every one 429, nothing checked');
($res) = $dan->sign_in($dform, local_addr => '127.0.0.15');
is($res->{status}, 429, 'the entity still waits');

# bob, guessed at from the same addresses, is not slowed by dan's count
my $bform = page($bob, $bq);
($res, $cookie) = $bob->sign_in($bform, local_addr => '127.0.0.16');
is($res->{status}, 200, "another entity's owner signs in meanwhile");

# a success clears the count of its entity and address
my $eve = client_of('eve.test', $P);
my $eform = page($eve, $eve->authorize_query($eve->register_app));
for my $round (1 .. 2) {
    for my $i (1 .. 4) {
        ($res) = $eve->sign_in($eform, password => "guess $i",
                               local_addr => '127.0.0.20');
        is($res->{status}, 403, "round $round, guess $i: wrong, not 429");
    }
    ($res, $cookie) = $eve->sign_in($eform, local_addr => '127.0.0.20');
    is($res->{status}, 200, "round $round: the owner signs in");
}

# ---- the entity's count is not pushed out by tries at other entities

# before: the slot's set was murmur2(entity) mod 1024, computable by
# anyone; four other tenants of that set, each tried once, pushed out a
# locked entity's slot.  Now the hash is keyed with a secret of the
# zone and a slot counting failures is never taken.
sub mul32 {
    my ($a, $m) = @_;
    return ($a * ($m & 0xffff) + ((($a * ($m >> 16)) & 0xffff) << 16))
           & 0xffffffff;
}
sub murmur2 {
    my @d = unpack 'C*', $_[0];
    my $len = @d;
    my $h = $len;
    my $i = 0;
    while ($len - $i >= 4) {
        my $k = $d[$i] | $d[$i + 1] << 8 | $d[$i + 2] << 16
                | $d[$i + 3] << 24;
        $k = mul32($k, 0x5bd1e995);
        $k ^= $k >> 24;
        $k = mul32($k, 0x5bd1e995);
        $h = mul32($h, 0x5bd1e995) ^ $k;
        $i += 4;
    }
    my $rest = $len - $i;
    $h ^= $d[$i + 2] << 16 if $rest >= 3;
    $h ^= $d[$i + 1] << 8 if $rest >= 2;
    if ($rest >= 1) { $h ^= $d[$i]; $h = mul32($h, 0x5bd1e995) }
    $h ^= $h >> 13;
    $h = mul32($h, 0x5bd1e995);
    $h ^= $h >> 15;
    return $h;
}
sub old_set { ((murmur2($_[0]) ^ ord 'e') | 1) & 1023 }
{
    my $x = "http://ivy.test:$P";
    my @same;
    for (my $n = 0; @same < 4 && $n < 200000; $n++) {
        push @same, "c$n" if old_set("http://c$n.test:$P") == old_set($x);
    }
    is(scalar @same, 4, 'four tenants of the same set, computed offline');
    for my $n ('ivy', @same) {
        admin({ action => 'create', entity => "http://$n.test:$P" });
    }
    my $ivy = client_of('ivy.test', $P);
    my $iform = page($ivy, $ivy->authorize_query($ivy->register_app));
    my $wrong = 0;
    for my $a (1 .. 20) {
        my ($r) = $ivy->sign_in($iform, password => "guess $a",
                                local_addr => sprintf('127.2.%d.%d',
                                                      int($a / 5), $a));
        $wrong++ if $r->{status} == 403;
    }
    is($wrong, 20, '20 guesses at ivy, each wrong');
    # a second passes: the four tries are the newest of their set
    select undef, undef, undef, 1.1;
    my $i = 0;
    for my $n (@same) {
        my $c = client_of("$n.test", $P);
        my $f = page($c, $c->authorize_query($c->register_app));
        $c->sign_in($f, password => 'wrong', local_addr => '127.2.9.' . ++$i);
    }
    ($res, $cookie) = $ivy->sign_in($iform, local_addr => '127.2.9.10');
    is($res->{status}, 429, 'ivy still waits after tries at its set');
    ok(!$cookie, 'no session');
}

# ---- IPv6 addresses are counted by /64 (the addresses of realip)

{
    admin({ action => 'create', entity => "http://jo.six.test:$P" });
    my $jo = client_of('jo.six.test', $P);
    my $jform = page($jo, $jo->authorize_query($jo->register_app));
    for my $i (1 .. 5) {
        ($res) = $jo->sign_in($jform, password => "guess $i", headers => {
            'X-Real-IP' => "2001:db8:0:7::$i" });
        is($res->{status}, 403, "guess $i from 2001:db8:0:7::$i: wrong");
    }
    ($res) = $jo->sign_in($jform, headers => {
        'X-Real-IP' => '2001:db8:0:7::ffff' });
    is($res->{status}, 429, 'another address of that /64: 429');
    ($res) = $jo->sign_in($jform, headers => {
        'X-Real-IP' => '2001:db8:0:8::1' });
    is($res->{status}, 200, 'another /64: the owner signs in');
}

# ---- a locked entity: its owner's known device still signs in

{
    admin({ action => 'create', entity => "http://kim.test:$P" });
    my $kim = client_of('kim.test', $P);
    my $kform = page($kim, $kim->authorize_query($kim->register_app));
    ($res) = $kim->sign_in($kform, local_addr => '127.3.0.1');
    is($res->{status}, 200, 'kim signs in once from her device');
    my ($dev) = ($res->{headers}{'set-cookie'} || '')
                =~ /(?:^|, )(tent_device=[^;]*)/;
    ok($dev, 'which is known from then on (tent_device)');
    like($res->{headers}{'set-cookie'} || '',
         qr/tent_device=[^;]+; Path=\/tent\/oauth\/authorize; Max-Age=7776000; HttpOnly; SameSite=Lax/,
         'for 90 days, HttpOnly, SameSite=Lax');
    my $wrong = 0;
    for my $a (1 .. 4) {
        for my $i (1 .. 5) {
            my ($r) = $kim->sign_in($kform, password => "guess $a.$i",
                                    local_addr => "127.3.1.$a");
            $wrong++ if $r->{status} == 403;
        }
    }
    is($wrong, 20, '20 guesses at kim from 4 addresses');
    ($res) = $kim->sign_in($kform, local_addr => '127.3.2.1');
    is($res->{status}, 429, 'kim is locked: her password alone is 429');
    ($res, $cookie) = $kim->sign_in($kform, local_addr => '127.3.2.2',
                                    headers => { Cookie => $dev });
    is($res->{status}, 200, 'with her known device she signs in');
    ok($cookie, 'a session');
    ($res) = $kim->sign_in($kform, password => 'a guess',
                           local_addr => '127.3.2.3',
                           headers => { Cookie => $dev });
    is($res->{status}, 403, 'a wrong password with the device: 403');
    # another entity's device cookie, or a forged one, is not kim's
    ($res) = $amy->sign_in(page($amy, $q), local_addr => '127.3.2.4',
                           password => 'a new password for amy');
    my ($adev) = ($res->{headers}{'set-cookie'} || '')
                 =~ /(?:^|, )(tent_device=[^;]*)/;
    ok($adev, "amy's own device cookie");
    ($res) = $kim->sign_in($kform, local_addr => '127.3.2.5',
                           headers => { Cookie => $adev });
    is($res->{status}, 429, "amy's device cookie on kim's page: 429");
    (my $forged = $dev) =~ s/=(\d+)\./'=' . ($1 - 1) . '.'/e;
    ($res) = $kim->sign_in($kform, local_addr => '127.3.2.6',
                           headers => { Cookie => $forged });
    is($res->{status}, 429, 'a device cookie with another expiry: 429');
    # the device's address still counts
    for my $i (1 .. 5) {
        $kim->sign_in($kform, password => "dev guess $i",
                      local_addr => '127.3.3.1',
                      headers => { Cookie => $dev });
    }
    ($res) = $kim->sign_in($kform, local_addr => '127.3.3.1',
                           headers => { Cookie => $dev });
    is($res->{status}, 429, 'the address throttle holds for a device too');
    # a new password ends the device
    admin({ action => 'password', entity => "http://kim.test:$P",
            password => 'kim, a new password' });
    ($res) = $kim->sign_in($kform, password => 'kim, a new password',
                           local_addr => '127.3.4.1',
                           headers => { Cookie => $dev });
    is($res->{status}, 429, 'after a new password the old device is unknown');
}

# ---- bin/tent-admin: the password from stdin or a file, never argv

{
    my $ta = "bin/tent-admin --url http://127.0.0.1:$P/tent-admin "
             . "--host localhost --token-file $tokfile";
    my $pwf = "$root-pw";
    open my $fh, '>', $pwf or die "$pwf: $!";
    print {$fh} "gus's own password\n";
    close $fh;
    my $out = `$ta --password-file $pwf --credential-file $root-gus.json create http://gus.test:$P 2>&1`;
    is($?, 0, 'tent-admin create --password-file') or diag $out;
    my $gus = client_of('gus.test', $P);
    my $gapp = $gus->register_app;
    my $gform = page($gus, $gus->authorize_query($gapp));
    ($res, $cookie) = $gus->sign_in($gform, password => "gus's own password");
    is($res->{status}, 200, 'its owner signs in with the password of the file');

    $out = `printf 'from stdin, gus\n' | $ta password http://gus.test:$P 2>&1`;
    is($?, 0, 'tent-admin password, from stdin') or diag $out;
    like($out, qr/the password is set/, 'says so');
    unlike($out, qr/from stdin/, 'never printing it');
    ($res) = $gus->sign_in($gform, password => "gus's own password");
    is($res->{status}, 403, 'the old password is refused');
    ($res) = $gus->sign_in($gform, password => 'from stdin, gus');
    is($res->{status}, 200, 'the one of stdin signs in');

    $out = `printf 'short\n' | $ta password http://gus.test:$P 2>&1`;
    is($? >> 8, 2, 'a password under 8 bytes: a usage error') or diag $out;
    $out = `$ta password http://gus.test:$P 'a password in argv' 2>&1 </dev/null`;
    is($? >> 8, 2, 'a password in argv: a usage error') or diag $out;
    like($out, qr/never from the command line/, 'saying why');
    $out = `$ta password http://gus.test:$P 2>&1 </dev/null`;
    is($? >> 8, 2, 'no password on stdin: a usage error') or diag $out;
    ($res) = $gus->sign_in($gform, password => 'from stdin, gus');
    is($res->{status}, 200, 'nothing changed by either');
    $out = `$ta --remove password http://gus.test:$P 2>&1`;
    is($?, 0, 'tent-admin password --remove') or diag $out;
    like($out, qr/no password/, 'says so');
    $out = `$ta --password-file $pwf list 2>&1`;
    is($? >> 8, 2, '--password-file with list: a usage error');
    unlink $pwf, "$root-gus.json";
}

# ---- an https:// entity's cookie is Secure (TLS ended before nginx)

{
    is(admin({ action => 'create', entity => "https://hal.tls.example:$P" })
           ->{status}, 201, 'an https:// entity created');
    my $hal = client_of('hal.tls.example', $P);
    my $hform = page($hal, $hal->authorize_query($hal->register_app));
    ($res, $cookie) = $hal->sign_in($hform);
    is($res->{status}, 200, 'its owner signs in');
    my $hc = $res->{headers}{'set-cookie'} || '';
    like($hc, qr/^__Host-tent_session=[^;]+; Path=\/; [^,]*; Secure, /,
         'the session cookie is __Host-, Path=/ and Secure');
    like($hc, qr/, __Host-tent_device=[^;]+; Path=\/; Max-Age=7776000; HttpOnly; SameSite=Lax; Secure$/,
         'so is the known device\'s');
    like($cookie // '', qr/^__Host-tent_session=/, 'the session read back');
    $res = page($hal, $hal->authorize_query($hal->register_app),
                Cookie => $cookie);
    like($res->{body}, qr/value="approve"/, 'signed in with it');
    ($cookie = $cookie // '') =~ s/^__Host-//;
    $res = page($hal, $hal->authorize_query($hal->register_app),
                Cookie => $cookie);
    like($res->{body}, qr/name="password"/,
         'the same value without __Host- (any host of the domain may '
         . 'set it) is no session');
    ($res) = $hal->sign_in($hform, headers => {
        Origin => "http://hal.tls.example:$P" });
    is($res->{status}, 403, 'a form posted from its http:// origin: 403');
}

# ---- a fixed entity keeps nginx's access control (tent_owner)

my $fixed = client_of('fixed.example', $P);
$res = $fixed->authorize($fixed->register_app);
is($res->{status}, 302, 'a fixed entity: tent_owner approves as before');

# ---- nginx -t: tent_owner in a provisioning server is refused

{
    my $nginx = $ENV{TEST_NGINX_BINARY} || 'nginx';
    my @mods = split ' ', $ENV{TEST_NGINX_LOAD_MODULES} || '';
    my $load = join '', map { "load_module " . File::Spec->rel2abs($_)
                              . ";\n" } @mods;
    my $t = "$root-conf";
    remove_tree($t);
    make_path("$t/conf", "$t/logs");
    my $conf = sub {
        my ($server, $http, $main) = @_;
        $http //= '';
        $main //= '';
        open my $fh, '>', "$t/conf/nginx.conf" or die "conf: $!";
        print {$fh} <<"CONF";
worker_processes 1;
${\ Tent::Util::user_line()}
error_log $t/logs/error.log;
pid $t/logs/nginx.pid;
$load
$main
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $t/client_body;
    proxy_temp_path $t/proxy;
    fastcgi_temp_path $t/fastcgi;
    uwsgi_temp_path $t/uwsgi;
    scgi_temp_path $t/scgi;
    tent_store $t/store;
$http
    server {
        listen 127.0.0.1:$P;
        server_name *.test;
        tent_entity http://\$host;
$server
    }
}
CONF
        close $fh;
        my $out = `$nginx -t -p $t -c conf/nginx.conf 2>&1`;
        return ($? >> 8, $out);
    };
    my ($rc, $out) = $conf->(<<'S');
        tent_provisioning on;
        location = /tent/oauth/authorize {
            auth_basic "Tent owner";
            auth_basic_user_file /etc/nginx/shared.htpasswd;
            tent_owner $remote_user;
        }
S
    isnt($rc, 0, 'tent_owner in a provisioning server: nginx -t fails');
    like($out, qr/\[emerg\].*"tent_owner" in a server with "tent_provisioning on".*tent-admin password/,
         'saying why') or diag $out;
    ($rc, $out) = $conf->("        tent_provisioning on;\n"
                          . "        tent_owner \"the owner\";\n");
    isnt($rc, 0, 'at the server level too');
    ($rc, $out) = $conf->("        tent_provisioning on;\n");
    is($rc, 0, 'a provisioning server without it passes') or diag $out;
    ($rc, $out) = $conf->("        tent_password_scrypt 1024 8 1;\n");
    like($out, qr/"tent_password_scrypt" directive is not allowed here/,
         'tent_password_scrypt is the http block\'s');
    ($rc, $out) = $conf->('', "    tent_password_scrypt 1000 8 1;\n");
    like($out, qr/\[emerg\].*"tent_password_scrypt" takes N \(a power of 2/,
         'its N a power of 2') or diag $out;
    ($rc, $out) = $conf->('', "    tent_password_scrypt 1048576 8 1;\n");
    like($out, qr/\[emerg\].*at most 32 MB/, 'its memory bounded');
    # the operator's password action hashes in the event loop
    ($rc, $out) = $conf->('', "    tent_password_scrypt 65536 8 1;\n");
    isnt($rc, 0, 'a hash of 64 MB: nginx -t fails');
    like($out, qr/\[emerg\].*128 \* N \* r at most 32 MB/, 'saying why')
        or diag $out;
    ($rc, $out) = $conf->('', "    tent_password_scrypt 32768 8 4;\n");
    isnt($rc, 0, '32 MB four times over: nginx -t fails');
    ($rc, $out) = $conf->('', "    tent_password_scrypt 32768 8 2;\n");
    is($rc, 0, 'a cost of 32768 8 2 passes') or diag $out;
    # the checks take threads of their own, not the store's
    my $pools = "thread_pool tent threads=4;\nthread_pool pw threads=2;\n";
    ($rc, $out) = $conf->("        tent_provisioning on;\n",
                          "    tent_store_thread_pool tent;\n"
                          . "    tent_password_thread_pool tent;\n", $pools);
    isnt($rc, 0, "the password checks on the store's pool: nginx -t fails");
    like($out, qr/\[emerg\].*"tent_password_thread_pool tent" shares the store's thread pool/,
         'saying why') or diag $out;
    ($rc, $out) = $conf->("        tent_provisioning on;\n",
                          "    tent_store_thread_pool tent;\n"
                          . "    tent_password_thread_pool pw;\n", $pools);
    is($rc, 0, 'on a pool of their own: passes') or diag $out;
    ($rc, $out) = $conf->("        tent_provisioning on;\n",
                          "    tent_password_thread_pool nopool;\n");
    like($out, qr/unknown thread pool "nopool"/, 'an undeclared pool fails')
        or diag $out;
    remove_tree($t);
}

unlink $tokfile;

done_testing();
