# Profile writes with scopes, types, permissions and versions (spec 3.3),
# the core section, deletes, and the public profile and feed cached by
# each worker seen changed at once by both.  Groups (spec 7.9), once
# here, are t/api/050-groups.t.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx);
use Tent::Client;
use IO::Socket::IP;

BEGIN {
    my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                Listen => 1) or die "no free port: $!";
    $ENV{TEST_NGINX_SPREAD_PORT} = $s->sockport;
    close $s;
}

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $c = Tent::Client->new;
my $BASIC = 'https://tent.io/types/info/basic/v0.1.0';
my $MUSIC = 'https://tent.io/types/info/music/v0.1.0';
my $CORE = 'https://tent.io/types/info/core/v0.1.0';
my $basic = '/profile/' . Tent::Client::uri_escape($BASIC);
my $music = '/profile/' . Tent::Client::uri_escape($MUSIC);
my $core = '/profile/' . Tent::Client::uri_escape($CORE);

my ($w, $writer) = $c->authorized_app('write_profile,read_permissions',
                                      info_types => "$BASIC,$CORE");
my ($rd, $reader) = $c->authorized_app('read_profile', info_types => $MUSIC);
my ($al, $all) = $c->authorized_app('read_profile', info_types => 'all');
my ($nw, $nope) = $c->authorized_app('read_posts', info_types => 'all');

# ---- writes need write_profile and the type

my $res = $c->request(PUT => $basic, cred => $nope, body => { name => 'x' });
is("$res->{status} $res->{json}{error}", '403 Unauthorized',
   'PUT without write_profile: 403');

$res = $c->request(PUT => $music, cred => $writer, body => { x => 1 });
is("$res->{status} $res->{json}{error}", '403 Unauthorized',
   'PUT of a type the authorization does not have: 403');

$res = $c->request(PUT => $basic, body => { name => 'x' });
is($res->{status}, 403, 'PUT anonymous: 403');

# a public basic section, version 1
$res = $c->request(PUT => $basic, cred => $writer,
                   body => { name => 'Alice', bio => 'hi',
                             permissions => { public => JSON::PP::true } });
is($res->{status}, 200, 'PUT basic (public)');
is($res->{json}{$BASIC}{name}, 'Alice', 'the reply is the whole profile');
is($res->{json}{$BASIC}{version}, 1, 'version 1');
ok($res->{json}{$CORE}, 'with the core section');

# version 2, still public (permissions kept when not given)
$res = $c->request(PUT => $basic, cred => $writer,
                   body => { name => 'Alice Liddell' });
is($res->{json}{$BASIC}{version}, 2, 'PUT again: version 2');
is($res->{json}{$BASIC}{permissions}{public}, JSON::PP::true,
   'permissions kept when the PUT does not say');

$res = $c->request(GET => '/profile');
is($res->{json}{$BASIC}{name}, 'Alice Liddell', 'anonymous sees the public section');
is_deeply($res->{json}{$BASIC}{permissions}, { public => JSON::PP::true },
          'anonymous sees only {public}');

$res = $c->request(GET => "$basic?version=1");
is("$res->{status} $res->{json}{name} $res->{json}{version}",
   '200 Alice 1', 'GET ?version=1: the old version');
$res = $c->request(GET => $basic);
is("$res->{status} $res->{json}{version}", '200 2', 'GET the type: current');
$res = $c->request(GET => "$basic?version=7");
is($res->{status}, 404, 'GET an unknown version: 404');

# ---- a private section (the default for a new one) and who sees it

my ($mw, $music_writer) = $c->authorized_app('write_profile',
                                             info_types => $MUSIC);
$res = $c->request(PUT => $music, cred => $music_writer,
                   body => { favorite => 'Bach' });
is($res->{status}, 200, 'PUT music (private by default)');

$res = $c->request(GET => '/profile');
ok(!exists $res->{json}{$MUSIC}, 'anonymous does not see a private section');
$res = $c->request(GET => $music);
is($res->{status}, 404, 'GET of a private type anonymously: 404');

$res = $c->request(GET => '/profile', cred => $reader);
is($res->{json}{$MUSIC}{favorite}, 'Bach', 'read_profile with the type sees it');
$res = $c->request(GET => $music, cred => $reader);
is($res->{status}, 200, 'and GET of the type');

$res = $c->request(GET => '/profile', cred => $all);
ok($res->{json}{$MUSIC}, 'read_profile with "all" sees it');

$res = $c->request(GET => '/profile', cred => $nope);
ok(!exists $res->{json}{$MUSIC}, 'without read_profile: not seen');

my ($bo, $basic_only) = $c->authorized_app('read_profile', info_types => $BASIC);
$res = $c->request(GET => '/profile', cred => $basic_only);
ok(!exists $res->{json}{$MUSIC}, 'read_profile for another type: not seen');

# ---- the core section follows the configuration

$res = $c->request(PUT => $core, cred => $writer,
                   body => { entity => 'https://evil.example',
                             servers => ['https://evil.example/tent'],
                             licenses => ['http://creativecommons.org/licenses/by/3.0/'] });
is($res->{status}, 200, 'PUT core');
is($res->{json}{$CORE}{entity}, 'https://alice.example', 'core: entity stays');
is_deeply($res->{json}{$CORE}{servers}, ['https://alice.example/tent'],
          'core: servers stay');
is_deeply($res->{json}{$CORE}{licenses},
          ['http://creativecommons.org/licenses/by/3.0/'], 'core: licenses set');

$res = $c->request(DELETE => $core, cred => $writer);
is($res->{status}, 403, 'the core section cannot be deleted');

# ---- deleting versions and sections

$res = $c->request(DELETE => "$basic?version=2", cred => $writer);
is($res->{status}, 200, 'DELETE the current version');
$res = $c->request(GET => $basic);
is("$res->{json}{name} $res->{json}{version}", 'Alice 1',
   'the version before it is current again');

$res = $c->request(DELETE => $basic, cred => $writer);
is("$res->{status} $res->{body}", '200 ', 'DELETE the section: 200, empty');
$res = $c->request(GET => $basic);
is($res->{status}, 404, 'the section is gone');
$res = $c->request(GET => "$basic?version=1");
is($res->{status}, 404, 'and its history');

$res = $c->request(PUT => $basic, cred => $writer, body => '[1]');
is($res->{status}, 400, 'PUT with a JSON array: 400');
$res = $c->request(PUT => $basic, cred => $writer,
                   body => { permissions => 'public' });
is($res->{status}, 422, 'PUT with permissions not an object: 422');

# ---- every worker sees a change at once (each caches the public profile)

{
    my $spread = Tent::Client->new(port => $ENV{TEST_NGINX_SPREAD_PORT});
    my $seen = sub {
        my ($want) = @_;
        my (%pids, @wrong);
        for (1 .. 400) {
            my $r = $spread->request(GET => '/profile');
            $pids{ $r->{headers}{'x-pid'} // '?' } = 1;
            my $name = $r->{json}{$BASIC}{name} // '(none)';
            push @wrong, $name if $name ne $want;
            last if keys %pids >= 2 && $_ >= 20;
        }
        return (scalar keys %pids, \@wrong);
    };

    $res = $c->request(PUT => $basic, cred => $writer,
                       body => { name => 'Before',
                                 permissions => { public => JSON::PP::true } });
    my ($n, $wrong) = $seen->('Before');
    is($n, 2, 'cache: both workers answered');
    is(scalar @$wrong, 0, 'cache: both show the section');

    $res = $c->request(PUT => $basic, cred => $writer, body => { name => 'After' });
    ($n, $wrong) = $seen->('After');
    is(scalar @$wrong, 0, 'cache: after a PUT, no worker shows the old one')
        or diag(join ',', @$wrong[0 .. 4]);

    $res = $c->request(DELETE => $basic, cred => $writer);
    ($n, $wrong) = $seen->('(none)');
    is(scalar @$wrong, 0, 'cache: after a DELETE, no worker shows it');

    # the public feed too: a new post shows on every worker at once
    my ($pa, $poster) = $c->authorized_app('write_posts', post_types => 'all');
    my $feed = sub {
        my ($want) = @_;
        my (%pids, @wrong);
        for (1 .. 400) {
            my $r = $spread->request(GET => '/posts?limit=1');
            $pids{ $r->{headers}{'x-pid'} // '?' } = 1;
            my $text = $r->{json}[0]{content}{text} // '(none)';
            push @wrong, $text if $text ne $want;
            last if keys %pids >= 2 && $_ >= 20;
        }
        return (scalar keys %pids, \@wrong);
    };
    for my $text ('first', 'second') {
        $c->request(POST => '/posts', cred => $poster, body => {
            type => 'https://tent.io/types/post/status/v0.1.0',
            content => { text => $text }, permissions => { public => JSON::PP::true } });
        ($n, $wrong) = $feed->($text);
        is("$n " . scalar(@$wrong), '2 0',
           "feed cache: after posting '$text', both workers show it");
    }
}

__DATA__

=== TEST 1: the server the tests above run against
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    server {
        listen 127.0.0.1:$TEST_NGINX_SPREAD_PORT reuseport;
        server_name localhost;
        tent_entity https://alice.example;
        add_header X-Pid $pid always;
    }
--- config
    tent_entity https://alice.example;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/profile
--- error_code: 200
