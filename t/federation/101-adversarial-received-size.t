# What an outsider makes us keep is bounded by a post, not by
# client_max_body_size (issue 26): a post pushed by a follower (anyone
# can follow: POST /followers answers any entity that takes the
# challenge) and a mention's copy read again at its server (unsigned:
# anyone) are kept only up to 64 KB as stored (docs/posts.md).  Before,
# each such request stored up to the 1 MB body, twice (post and
# version rows).  A following's posts (the owner chose to follow) keep
# client_max_body_size.  A chunked body (no length to refuse it by) is
# bounded as it arrives: before, it was read whole up to
# client_max_body_size, parsed, and a mention's server asked.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx error_log_text);
use Tent::Client;
use Tent::Receiver;
use Tent::MAC qw(signed_headers random_nonce);
use IO::Socket::IP;
use JSON::PP;
*uri_escape = \&Tent::Client::uri_escape;

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $A_URL = "http://127.0.0.1:" . ($ENV{TEST_NGINX_SERVER_PORT} || 1984);
my $c = Tent::Client->new;
my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $TENT_CT = 'application/vnd.tent.v0+json';
my $MAX = 65536;

my (undef, $read) = $c->authorized_app('read_posts', post_types => 'all');

# a post of entity $e whose JSON (as JSON::PP writes it) is $len bytes
sub a_post {
    my ($e, $id, $len) = @_;
    my $p = { id => $id, entity => $e, type => $STATUS,
              content => { text => 'hi', pad => '' }, published_at => 1700000000,
              licenses => [], permissions => { public => JSON::PP::true },
              mentions => [{ entity => $A_URL }], version => 1 };
    my $base = length JSON::PP->new->utf8->canonical->encode($p);
    $p->{content}{pad} = 'x' x ($len - $base) if $len > $base;
    return $p;
}

sub copy {
    my ($e, $id) = @_;
    return $c->request(GET => '/posts/' . uri_escape($e) . "/$id",
                       cred => $read);
}

# POST /tent/posts with a chunked body (no Content-Length: nothing to
# refuse it by before it is read): the status
sub chunked_post {
    my ($cred, $post) = @_;
    my $body = JSON::PP->new->utf8->canonical->encode($post);
    my %h = (Host => 'localhost', Connection => 'close',
             'Content-Type' => $TENT_CT, 'Transfer-Encoding' => 'chunked');
    %h = (%h, signed_headers(cred => $cred, method => 'POST',
                             uri => '/tent/posts', host => 'localhost',
                             port => 80, nonce => random_nonce(8)))
        if $cred;
    my $chunks = '';
    for (my $i = 0; $i < length $body; $i += 16384) {
        my $c = substr($body, $i, 16384);
        $chunks .= sprintf("%x\r\n%s\r\n", length $c, $c);
    }
    my $sock = IO::Socket::IP->new(PeerHost => '127.0.0.1',
                                   PeerPort => Tent::Util::port(),
                                   Timeout => 5) or return 0;
    my $raw = '';
    eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        local $SIG{PIPE} = 'IGNORE';
        alarm 10;
        print {$sock} "POST /tent/posts HTTP/1.1\r\n"
                      . join('', map { "$_: $h{$_}\r\n" } sort keys %h)
                      . "\r\n$chunks" . "0\r\n\r\n";
        while (sysread($sock, my $buf, 65536)) { $raw .= $buf }
        alarm 0;
    };
    alarm 0;
    close $sock;
    return $raw =~ m{^HTTP/1\.1 (\d+)} ? $1 : 0;
}

# --- a self-made follower's push ------------------------------------

my $rx = Tent::Receiver->start;
my $F = $rx->url;
my $res = $c->request(POST => '/followers',
                      body => { entity => $F, types => ['all'],
                                notification_path => 'notifications/x' });
is($res->{status}, 200, 'an outsider follows us') or diag $res->{body};
my $fcred = { map { $_ => $res->{json}{$_} }
              qw(mac_key_id mac_key mac_algorithm) };

$res = $c->request(POST => '/posts', cred => $fcred,
                   body => a_post($F, 'small', 2000));
is($res->{status}, 200, 'a follower pushes a post of 2 KB: 200')
    or diag $res->{body};
is(copy($F, 'small')->{status}, 200, 'kept');

$res = $c->request(POST => '/posts', cred => $fcred,
                   body => a_post($F, 'big', 300_000));
is($res->{status}, 413, 'a follower pushes a post of 300 KB: 413')
    or diag $res->{body};
like($res->{json}{error} // '', qr/too large/, 'a JSON error says so');
is(copy($F, 'big')->{status}, 404, 'nothing kept');

# chunked: no length to refuse it by; bounded as it arrives
is(chunked_post($fcred, a_post($F, 'csmall', 2000)), 200,
   'a follower pushes a chunked post of 2 KB: 200');
is(copy($F, 'csmall')->{status}, 200, 'kept');
is(chunked_post($fcred, a_post($F, 'cbig', 300_000)), 413,
   'a follower pushes a chunked post of 300 KB: 413');
is(copy($F, 'cbig')->{status}, 404, 'nothing kept');

# just under the bound as sent, over it as stored (our received_at, ...)
$res = $c->request(POST => '/posts', cred => $fcred,
                   body => a_post($F, 'edge', $MAX - 8));
is($res->{status}, 413, 'a post that is over 64 KB once stored: 413')
    or diag $res->{body};
is(copy($F, 'edge')->{status}, 404, 'nothing kept');

$res = $c->request(POST => '/posts', cred => $fcred,
                   body => a_post($F, 'under', $MAX - 200));
is($res->{status}, 200, 'a post just under 64 KB stored: 200')
    or diag $res->{body};
is(copy($F, 'under')->{status}, 200, 'kept');

# --- a mention whose copy at its server is big -------------------------

my $m = Tent::Receiver->start;
my $M = $m->url;
sub serve {
    my ($id, $post) = @_;
    $m->rules([{ method => 'GET', path => "^/tent/posts/\Q$id\E\$",
                 action => { status => 200,
                             headers => { 'Content-Type' => $TENT_CT },
                             body => $post } }]);
}

serve('m1', a_post($M, 'm1', 2000));
$res = $c->request(POST => '/posts', body => a_post($M, 'm1', 500));
is($res->{status}, 200, 'a mention of 2 KB at its server: 200')
    or diag $res->{body};
is(copy($M, 'm1')->{status}, 200, 'kept');

serve('m2', a_post($M, 'm2', 300_000));
$res = $c->request(POST => '/posts', body => a_post($M, 'm2', 500));
is($res->{status}, 502, 'a mention read again as 300 KB: refused (502)')
    or diag $res->{body};
like($res->{json}{error} // '', qr/too large/, 'the error says so');
is(copy($M, 'm2')->{status}, 404, 'nothing kept');

serve('m3', a_post($M, 'm3', $MAX - 8));
$res = $c->request(POST => '/posts', body => a_post($M, 'm3', 500));
is($res->{status}, 413, 'a mention over 64 KB once stored: 413')
    or diag $res->{body};
is(copy($M, 'm3')->{status}, 404, 'nothing kept');

# the unsigned body itself: not read past the bound
$res = $c->request(POST => '/posts', body => a_post($M, 'm4', 300_000));
is($res->{status}, 413, 'an unsigned body of 300 KB: 413, not read')
    or diag $res->{body};
is(scalar $m->requests(path => qr{^/tent/posts/m4}), 0,
   'its server not asked');

# the same, chunked: not read past the bound either (before, the whole
# body up to client_max_body_size was read and parsed, then its server
# asked)
serve('m5', a_post($M, 'm5', 2000));
is(chunked_post(undef, a_post($M, 'm5', 500)), 200,
   'a chunked mention of 500 bytes: 200');
is(copy($M, 'm5')->{status}, 200, 'kept');
is(chunked_post(undef, a_post($M, 'm6', 300_000)), 413,
   'an unsigned chunked body of 300 KB: 413');
is(scalar $m->requests(path => qr{^/tent/posts/m6}), 0,
   'its server not asked');

$_->stop for $rx, $m;

unlike(error_log_text(), qr/\[alert\]|\[emerg\]|exited on signal/,
       'no alert, no crash in the error log');

__DATA__

=== TEST 1: the entity
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/posts
--- error_code: 200
