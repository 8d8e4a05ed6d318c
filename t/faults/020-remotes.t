# Remotes that misbehave (src/outbound/ngx_http_tent_fetch.c, _remote.c): hangs,
# resets, 5xx, huge and garbage answers, wrong challenges, unusable
# profiles, at every step of POST /followers (discovery, challenge) and
# POST /followings (discovery, POST {root}/followers).  Each gives the
# mapped status with a JSON error naming the step, and stores nothing.
# While a remote hangs the worker serves other requests; a reload in the
# middle of a pending follow leaves a server that serves.  All of it with
# one worker and with two.  Loopback receivers only.

use strict;
use warnings;

use Test::More;
use JSON::PP;
use POSIX qw(WNOHANG);
use Time::HiRes qw(sleep time);
use Tent::Peer;
use Tent::Receiver;
use Tent::Util qw(http_request);

my $CORE = 'https://tent.io/types/info/core/v0.1.0';
my $TENT_CT = 'application/vnd.tent.v0+json';

sub server_config {
    my ($timeout) = @_;
    return <<"CONF";
        tent_entity \$URL;
        tent_outbound_allow 127.0.0.0/8;
        tent_outbound_timeout $timeout;
        location = /tent/oauth/authorize {
            tent_owner "the owner";
        }
CONF
}

for my $workers (1, 2) {
    run_suite($workers);
}

done_testing();

sub run_suite {
    my ($workers) = @_;
    my $W = "[$workers worker" . ($workers > 1 ? 's' : '') . ']';

    my $rx = Tent::Receiver->start;
    my $E = $rx->url;
    my $peer = Tent::Peer->start(server_config => server_config('1s'),
                                 worker_processes => $workers);
    my $client = $peer->client;
    my (undef, $cred) = $peer->authorized_app(
        'write_followings,read_followings,read_followers');

    my $follow_me = sub {
        return $client->request(POST => '/followers', body => {
            entity => $E, types => ['all'], licenses => [],
            notification_path => 'notifications/n1',
            permissions => { public => JSON::PP::true } });
    };
    my $follow_them = sub {
        return $client->request(POST => '/followings', cred => $cred,
                                body => { entity => $E });
    };

    my $nothing_stored = sub {
        my ($what) = @_;
        my $r = $client->request(GET => '/followers', cred => $cred);
        is_deeply($r->{json}, [], "$W $what: GET /followers is empty")
            or diag($r->{body});
        $r = $client->request(GET => '/followers/count', cred => $cred);
        is($r->{body}, '0', "$W $what: no follower counted");
        $r = $client->request(GET => '/followings', cred => $cred);
        is_deeply($r->{json}, [], "$W $what: GET /followings is empty")
            or diag($r->{body});
        $r = $client->request(GET => '/followings/count', cred => $cred);
        is($r->{body}, '0', "$W $what: no following counted");
    };

    my $check = sub {
        my ($what, $res, $status, $re) = @_;
        is($res->{status}, $status, "$W $what: $status")
            or diag($res->{body});
        like($res->{headers}{'content-type'} // '', qr/json/,
             "$W $what: a JSON error");
        like($res->{json}{error} // '', $re, "$W $what: the error says why")
            or diag($res->{body});
    };

    my $matrix_log = -s $peer->error_log_file;

    # ---- discovery steps; both routes discover the same way

    my $prof = qr{/tent/profile};
    my @discovery = (
        ['HEAD / hangs', [{ method => 'HEAD', path => '^/$',
                            action => 'hang' }],
         504, qr{\Q$E\E: timed out}],
        ['GET /tent/profile hangs', [{ path => '^/tent/profile$',
                                       action => 'hang' }],
         504, qr{$prof: timed out}],
        ['HEAD / resets', [{ method => 'HEAD', path => '^/$',
                             action => 'reset' }],
         503, qr{\Q$E\E: could not connect}],
        ['the profile resets', [{ path => '^/tent/profile$',
                                  action => 'reset' }],
         503, qr{$prof: could not connect}],
        ['the profile answers 500', [{ path => '^/tent/profile$',
                                       action => { status => 500,
                                                   body => 'oops' } }],
         404, qr{not application/vnd\.tent\.v0\+json.*answered 500}],
        ['HEAD and GET / answer 500', [{ path => '^/$',
                                         action => { status => 500 } }],
         404, qr{no profile link}],
        ['the profile is 10 MB', [{ path => '^/tent/profile$',
                                    action => 'big' }],
         502, qr{$prof: the response is too large}],
        ['the profile is 10 MB chunked', [{ path => '^/tent/profile$',
                                            action => 'big_chunked' }],
         502, qr{$prof: the response is too large}],
        ['GET / is 10 MB with no Link', [
            { method => 'HEAD', path => '^/$', action => { status => 200 } },
            { method => 'GET', path => '^/$',
              action => { do => 'big', content_type => 'text/html' } }],
         502, qr{\Q$E\E: the response is too large}],
        ['the profile is garbage', [{ path => '^/tent/profile$',
                                      action => 'garbage' }],
         502, qr{$prof: the response is not valid HTTP}],
        ['HEAD / is garbage', [{ method => 'HEAD', path => '^/$',
                                 action => 'garbage' }],
         502, qr{\Q$E\E: the response is not valid HTTP}],
        ['the profile has no core section', [{ path => '^/tent/profile$',
            action => { status => 200,
                        headers => { 'Content-Type' => $TENT_CT },
                        body => { 'https://tent.io/types/info/basic/v0.1.0'
                                  => { name => 'x' } } } }],
         404, qr{no core section}],
        ['the profile is text/plain', [{ path => '^/tent/profile$',
            action => { status => 200,
                        headers => { 'Content-Type' => 'text/plain' },
                        body => { $CORE => { entity => $E,
                                             servers => ["$E/tent"] } } } }],
         404, qr{not application/vnd\.tent\.v0\+json}],
        ['the profile is not JSON', [{ path => '^/tent/profile$',
            action => { status => 200,
                        headers => { 'Content-Type' => $TENT_CT },
                        body => '{"https://tent.io/types/info/core' } }],
         404, qr{not JSON}],
        ['the profile lists no servers', [{ path => '^/tent/profile$',
            action => { status => 200,
                        headers => { 'Content-Type' => $TENT_CT },
                        body => { $CORE => { entity => $E,
                                             servers => [] } } } }],
         404, qr{no servers}],
    );

    for my $d (@discovery) {
        my ($what, $rules, $status, $re) = @$d;
        $rx->rules($rules);
        $check->("POST /followers: $what", $follow_me->(), $status,
                 qr/Discovery of .*$re/);
        $check->("POST /followings: $what", $follow_them->(), $status,
                 qr/Discovery of .*$re/);
        $nothing_stored->($what);
    }

    # ---- the challenge (POST /followers): anything but the echo is 403

    my $ch = '^/tent/notifications/n1$';
    my @challenge = (
        ['the challenge is answered wrongly',
         { status => 200, body => 'not the challenge' },
         qr/challenge GET .* was not answered \(status 200\)/],
        ['the challenge answers 404', { status => 404, body => 'no' },
         qr/was not answered \(status 404\)/],
        ['the challenge answers 500', { status => 500 },
         qr/was not answered \(status 500\)/],
        ['the challenge hangs', 'hang', qr/challenge GET .* timed out/],
        ['the challenge resets', 'reset', qr/could not connect/],
        ['the challenge answer is 10 MB', 'big', qr/too large/],
        ['the challenge answer is garbage', 'garbage', qr/not valid HTTP/],
    );

    for my $c (@challenge) {
        my ($what, $action, $re) = @$c;
        $rx->rules([{ method => 'GET', path => $ch, action => $action }]);
        $rx->clear;
        $check->("POST /followers: $what", $follow_me->(), 403,
                 qr/^Unauthorized: .*$re/);
        ok(scalar($rx->requests(method => 'GET', path => qr/$ch/)),
           "$W $what: the challenge was asked");
        $nothing_stored->($what);
    }

    # the echo of a different challenge (an old one) is no answer either
    $rx->rules([{ method => 'GET', path => $ch, action => { status => 200,
                  body => 'a' x 64 } }]);
    $check->('POST /followers: a stale challenge', $follow_me->(), 403,
             qr/^Unauthorized/);
    $nothing_stored->('a stale challenge');

    # ---- POST {their root}/followers (POST /followings)

    my $pf = '^/tent/followers$';
    my @remote = (
        ['their /followers answers 500', { status => 500,
            headers => { 'Content-Type' => $TENT_CT },
            body => { error => 'Internal Server Error' } },
         500, qr/refused \(500\) Internal Server Error/],
        ['their /followers answers 403', { status => 403,
            headers => { 'Content-Type' => $TENT_CT },
            body => { error => 'Unauthorized' } },
         403, qr/refused \(403\) Unauthorized/],
        ['their /followers answers 409 without a body', { status => 409 },
         409, qr/refused \(409\)/],
        ['their /followers hangs', 'hang', 504,
         qr/The follow request to .*followers: timed out/],
        ['their /followers resets', 'reset', 503, qr/could not connect/],
        ['their /followers answers 10 MB', 'big', 502, qr/too large/],
        ['their /followers answers 10 MB chunked', 'big_chunked', 502,
         qr/too large/],
        ['their /followers answers garbage', 'garbage', 502,
         qr/not valid HTTP/],
        ['their /followers answers 200 without credentials',
         { status => 200, headers => { 'Content-Type' => $TENT_CT },
           body => { id => 'x' } },
         502, qr/no usable credentials/],
    );

    for my $c (@remote) {
        my ($what, $action, $status, $re) = @$c;
        $rx->rules([{ method => 'POST', path => $pf, action => $action }]);
        $rx->clear;
        $check->("POST /followings: $what", $follow_them->(), $status, $re);
        ok(scalar($rx->requests(method => 'POST', path => qr/$pf/)),
           "$W $what: the follow request was sent");
        $nothing_stored->($what);
    }

    # ---- after all that, the same remote behaving works

    $rx->rules([]);
    my $res = $follow_me->();
    is($res->{status}, 200, "$W a good follower is accepted afterwards")
        or diag($res->{body});
    like($res->{json}{mac_key_id} // '', qr/^s:/, "$W with s: credentials");
    $res = $follow_them->();
    is($res->{status}, 200, "$W a good following is made afterwards")
        or diag($res->{body});
    $res = $client->request(GET => '/followers/count', cred => $cred);
    is($res->{body}, '1', "$W now one follower");
    $res = $client->request(GET => '/followings/count', cred => $cred);
    is($res->{body}, '1', "$W now one following");

    # an address literal is not a name: c-ares answers it without asking
    # the DNS servers, whose sockets would show in the debug log as events
    # added outside any connection (a slow server stalled these fetches)
    my @dns = grep { /\] \d+#\d+: epoll add event: fd:\d+ op:1 ev:00002001$/ }
              split /\n/, $peer->error_log_text($matrix_log);
    is(scalar(@dns), 0, "$W no DNS socket for http://127.0.0.1:PORT")
        or diag(join "\n", @dns[0 .. ($#dns > 4 ? 4 : $#dns)]);

    # ---- a hanging remote does not hold up the worker

    ok($peer->reload(server_config => server_config('5s')),
       "$W reload with a 5 s timeout");
    my $rx2 = Tent::Receiver->start(rules => [
        { method => 'HEAD', path => '^/$', action => 'hang' }]);

    my $pending = start_pending($peer, $rx2->url);
    ok(scalar($rx2->wait_requests(method => 'HEAD', timeout => 10)),
       "$W the follow is pending at the hanging remote");
    for my $i (1 .. ($workers > 1 ? 4 : 1)) {
        $res = $client->request(GET => '/profile');
        is($res->{status}, 200, "$W GET /profile ($i) while it hangs");
    }
    ok(!finished($pending), "$W ... answered before the follow returned");
    my $out = collect($pending, 20);
    like($out, qr/^504 .*timed out/, "$W the pending follow ends in 504");

    # ---- a reload while a follow is pending

    $rx2->clear;
    $pending = start_pending($peer, $rx2->url);
    ok(scalar($rx2->wait_requests(method => 'HEAD', timeout => 10)),
       "$W a follow is pending before the reload");
    my $log_off = -s $peer->error_log_file;
    my @old = worker_pids($peer);
    ok($peer->reload, "$W reloaded while the follow is pending");
    $res = $client->request(GET => '/profile');
    is($res->{status}, 200, "$W the new workers serve");
    $out = collect($pending, 20);
    # the old worker finishes the request, at the fetch's deadline
    like($out, qr/^504 .*timed out/, "$W the pending follow ended in 504 "
                                     . "from the old worker");
    ok(wait_gone(15, @old), "$W the old workers exited");
    my $log = $peer->error_log_text($log_off);
    is(scalar(grep { /\[(?:alert|crit|emerg)\]/ } split /\n/, $log), 0,
       "$W no alert after the reload")
        or diag(join "\n", grep { /\[(?:alert|crit|emerg)\]/ }
                           split /\n/, $log);
    unlike($log, qr/exited on signal/, "$W no worker crashed");
    $res = $client->request(GET => '/profile');
    is($res->{status}, 200, "$W serves after the reload");

    $rx2->stop;
    $rx->stop;
    $peer->stop;
}

# a POST /followers in a child process; its answer comes back through a pipe
sub start_pending {
    my ($peer, $entity) = @_;
    pipe(my $r, my $w) or die "pipe: $!";
    my $pid = fork;
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        close $r;
        my $res = http_request(method => 'POST', port => $peer->port,
            path => '/tent/followers', timeout => 30,
            headers => { 'Content-Type' => $TENT_CT },
            body => encode_json({ entity => $entity, types => ['all'],
                                  licenses => [],
                                  notification_path => 'notifications/n1' }));
        my $err = eval { decode_json($res->{body})->{error} };
        my $line = "$res->{status} " . ($err // $res->{body}
                                        // $res->{error} // '');
        $line =~ s/\n/ /g;
        syswrite $w, "$line\n";
        close $w;
        POSIX::_exit(0);
    }
    close $w;
    return { pid => $pid, fh => $r };
}

sub finished {
    my ($p) = @_;
    return waitpid($p->{pid}, WNOHANG) == $p->{pid} ? ($p->{done} = 1) : 0;
}

sub collect {
    my ($p, $seconds) = @_;
    my $end = time + $seconds;
    until ($p->{done} || finished($p)) {
        if (time > $end) { kill 'KILL', $p->{pid}; waitpid($p->{pid}, 0); last }
        sleep 0.05;
    }
    my $fh = $p->{fh};
    local $/;
    my $out = <$fh> // '';
    close $fh;
    chomp $out;
    return $out;
}

# the worker processes of a peer now
sub worker_pids {
    my ($peer) = @_;
    my $master = $peer->master_pid or return ();
    return grep { /^\d+$/ } map { s/\s+//gr } `ps -o pid= --ppid $master`;
}

# wait until these processes are gone
sub wait_gone {
    my ($seconds, @pids) = @_;
    my $end = time + $seconds;
    while (time < $end) {
        return 1 unless grep { kill 0, $_ } @pids;
        sleep 0.1;
    }
    return 0;
}
