# Imported followings are pending (issue 26; docs/import.md): a document
# is its importer's word only, and may name any host as the servers of
# the entities "we follow".  Before, 300 imported followings at a host
# that never agreed got one signed POST each for one profile change.
# Now an imported following is told nothing (no profile post) until we
# follow it again ourselves (POST /followings, which the followed server
# must accept): the new following replaces the imported one.  A
# notification signed with the relationship's key confirms nothing: the
# importer supplied that key, so it can sign with it (before, signing one
# notification each put all 300 back on every profile change).

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text);
use Tent::Client;
use Tent::Receiver;
use JSON::PP;

add_block_preprocessor(sub {
    my $block = shift;
    $block->set_value(http_config => <<'CONF') unless defined $block->http_config;
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_timeout 20s;
    tent_outbound_allow 127.0.0.0/8;
    tent_delivery_interval 100ms;
    server {
        listen $TEST_NGINX_SERVER_PORT;
        server_name p.test;
        tent_entity http://p.test;
        location = /tent/oauth/authorize { tent_owner "the owner"; }
    }
CONF
    $block->set_value(config => <<'CONF') unless defined $block->config;
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize { tent_owner "the owner"; }
CONF
});

master_on();
workers(2);
no_shuffle();
log_level('info');
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $BASIC = 'https://tent.io/types/info/basic/v0.1.0';
my $PROFILE = 'https://tent.io/types/post/profile/v0.1.0';
my $READ = 'read_secrets,read_profile,read_followers,read_followings,'
           . 'read_groups,read_posts';
my $WRITE = 'write_secrets,write_profile,write_followers,write_followings,'
            . 'write_groups,write_posts,import_posts';
my $JSON = JSON::PP->new->utf8->canonical;
my $T = JSON::PP::true;
my $N = 100;

my $p = Tent::Client->new(host => 'p.test');
my (undef, $owner) = $p->authorized_app("$WRITE,$READ", post_types => 'all',
                                        info_types => 'all');
my $victim = Tent::Receiver->start;
my $real = Tent::Receiver->start;
my $moved = Tent::Receiver->start;      # an entity followed, for real

# the document's followings: N entities, all served by the victim host
sub rel {
    my ($n) = @_;
    return { id => sprintf('%032x', $n), entity => "http://v$n.test",
             servers => [$victim->url . '/tent'], remote_id => "r$n",
             types => ['all'], licenses => [], groups => [],
             permissions => { public => $T }, confirmed => $T,
             mac_key_id => "s:key$n", mac_key => "secret$n",
             mac_algorithm => 'hmac-sha-256', created_at => 1700000000,
             updated_at => 1700000000 };
}

sub km {
    return { %{ rel(500) }, entity => $moved->url,
             servers => [$moved->url . '/tent'] };
}

my $res = $p->request(POST => '/import', cred => $owner, timeout => 60,
                      body => { version => 0, entity => 'http://old.test',
                                complete => $T,
                                followings => [(map { rel($_) } 1 .. $N),
                                               km()] });
is($res->{status}, 200, "$N followings at one host imported")
    or diag $res->{body};
is($res->{json}{followings}{taken}, $N + 1, 'all taken')
    or diag $JSON->encode($res->{json});

# a following by the handshake, to see the profile post go out
$res = $p->request(POST => '/followings', cred => $owner,
                   body => { entity => $real->url });
is($res->{status}, 200, 'a following by the handshake') or diag $res->{body};

sub profile_change {
    my ($text) = @_;
    my $r = $p->request(PUT => '/profile/' . Tent::Client::uri_escape($BASIC),
                        cred => $owner,
                        body => { name => $text,
                                  permissions => { public => $T } });
    is($r->{status}, 200, "a profile change ($text)") or diag $r->{body};
    $r = $p->request(GET => '/posts?limit=1&post_types='
                            . Tent::Client::uri_escape($PROFILE),
                     cred => $owner);
    return $r->{json}[0]{id};
}

# the delivery jobs of a post, by entity
sub delivered_to {
    my ($id) = @_;
    my $r = $p->request(GET => "/posts/$id/deliveries", cred => $owner);
    return sort map { $_->{entity} } @{ $r->{json}{deliveries} || [] };
}

my $pp = profile_change('one');
ok($pp, 'its profile post');
my @got = $real->wait_requests(method => 'POST', path => qr{^/tent/posts$},
                               timeout => 20);
is(scalar @got, 1, 'the following by the handshake is told');
is_deeply([delivered_to($pp)], [$real->url],
          'one job: none for the imported followings')
    or diag join ' ', delivered_to($pp);
is(scalar($victim->requests(method => 'POST')), 0,
   'the victim host got no request');

# --- a notification signed with the imported key: confirms nothing ------

my $k1 = rel(1);
$res = $p->request(POST => "/notifications/$k1->{id}", cred => $k1,
                   body => { id => 'n1', entity => 'http://v1.test',
                             type => $STATUS, content => { text => 'hi' },
                             permissions => { public => $T },
                             published_at => 1700000000, version => 1 });
is($res->{status}, 200, 'a notification signed with an imported key: 200')
    or diag $res->{body};

sub following_of {
    my ($e) = @_;
    return grep { $_->{entity} eq $e }
           @{ Tent::Util::export_document(host => 'p.test',
                                          cred => $owner)->{followings} };
}
my ($f1) = following_of('http://v1.test');
ok($f1 && $f1->{import_pending},
   'that following still pending (the importer holds the key)')
    or diag $JSON->encode($f1);

$real->clear;
$pp = profile_change('two');
@got = $real->wait_requests(method => 'POST', path => qr{^/tent/posts$},
                            timeout => 20);
is(scalar @got, 1, 'the next profile change: the handshake one told');
is_deeply([delivered_to($pp)], [$real->url],
          'one job: none for the imported followings')
    or diag join ' ', delivered_to($pp);
is(scalar($victim->requests(method => 'POST')), 0,
   'the victim host still got no request');

# --- our own follow confirms: it replaces the imported one --------------

my $km = km();
my ($fm) = following_of($moved->url);
ok($fm && $fm->{import_pending}, 'a following at a real server: pending') or diag $JSON->encode($fm);

$res = $p->request(POST => '/followings', cred => $owner,
                   body => { entity => $moved->url });
is($res->{status}, 200, 'the owner follows it again: 200 (not 409)')
    or diag $res->{body};
my @fm = following_of($moved->url);
is(scalar @fm, 1, 'one following of it') or diag $JSON->encode(\@fm);
ok(@fm && !$fm[0]{import_pending} && $fm[0]{mac_key_id} ne 's:key500',
   'ours, confirmed, with the key its server gave')
    or diag $JSON->encode(\@fm);
$res = $p->request(POST => "/notifications/$km->{id}", cred => $km,
                   body => { id => 'n5', entity => $moved->url,
                             type => $STATUS, content => { text => 'x' },
                             permissions => { public => $T },
                             published_at => 1700000000 });
ok($res->{status} == 401 || $res->{status} == 403,
   'the imported key is gone') or diag "$res->{status} $res->{body}";

$moved->clear;
$pp = profile_change('three');
@got = $moved->wait_requests(method => 'POST', path => qr{^/tent/posts$},
                             timeout => 20);
is(scalar @got, 1, 'the next profile change: it is told, once');
is(scalar($victim->requests(method => 'POST')), 0,
   'the victim host still got no request');
$moved->stop;

$_->stop for $victim, $real;

unlike(error_log_text(), qr/\[alert\]|\[emerg\]|exited on signal/,
       'no alert, no crash in the error log');

__DATA__

=== TEST 1: the entity
--- request
GET /tent/posts
--- error_code: 200
