# Same-node delivery in batches (issue #13): the local jobs due together
# go to the store as one read (the recipients' credential rows, each
# once, and their copies) and one synced write (every copy and every
# job's settlement), with the outcome each would have over HTTP.  A
# (the harness's server) is followed by B, C and F, entities of the same
# nginx, and by E, whose credential row is gone: E unfollowed, but its
# DELETE to A was refused (A's location denies it), so A still has E's
# follower row.  E's job goes over HTTP after all, where E's MAC check
# answers 401: a dead letter, as before.  A public post to the four is
# one batch: one write for the three copies and the four settlements, no
# per-job compare-and-set, no HTTP request to B, C or F.  A private post
# reaches its addressee only; a deleted post's copies go, in a batch too.
# F has no app subscribed: once the outbox pass has seen it, F's copies
# are written without the outbox row the pass would only remove; an app
# F authorizes later is told of the next post (the subscription's write
# moves a generation the engine checks).

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx wait_for);
use Tent::Client;
use Tent::Receiver;
use JSON::PP;

BEGIN {
    my $p = $ENV{TEST_NGINX_SERVER_PORT} || $ENV{TEST_NGINX_PORT} || 1984;
    $ENV{TEST_NGINX_B_PORT} = $p + 1;
    $ENV{TEST_NGINX_C_PORT} = $p + 2;
    $ENV{TEST_NGINX_E_PORT} = $p + 3;
    $ENV{TEST_NGINX_F_PORT} = $p + 4;
}

master_on();
workers(2);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

my $STATUS = 'https://tent.io/types/post/status/v0.1.0';
my $PA = Tent::Util::port();
my %port = (B => $ENV{TEST_NGINX_B_PORT}, C => $ENV{TEST_NGINX_C_PORT},
            E => $ENV{TEST_NGINX_E_PORT}, F => $ENV{TEST_NGINX_F_PORT});
my $A = "http://127.0.0.1:$PA";
my %url = map { $_ => "http://127.0.0.1:$port{$_}" } keys %port;

my $SCOPES = 'read_followers,write_followers,read_followings,'
             . 'write_followings,read_posts,write_posts';
my $a = Tent::Client->new;
my (undef, $acred) = $a->authorized_app($SCOPES, post_types => 'all');
my (%cl, %cred);
for my $n (sort keys %port) {
    $cl{$n} = Tent::Client->new(port => $port{$n},
                                host => "127.0.0.1:$port{$n}");
    (undef, $cred{$n}) = $cl{$n}->authorized_app($SCOPES,
                                                 post_types => 'all');
}

sub dumped { JSON::PP->new->canonical->allow_nonref->encode($_[0]) }

sub status { Tent::Util::tent_status($a)->{deliveries} }

sub access_log {
    open my $fh, '<', Tent::Util::servroot() . '/logs/access.log' or return ();
    return <$fh>;
}

sub error_log { Tent::Util::error_log_lines() }

# the POSTs to a notification path of the server on "port"
sub notification_posts {
    my ($port) = @_;
    return scalar grep { m{^$port "POST /tent/notifications/} }
                  access_log();
}

sub post { my ($who, $cred, %b) = @_; $who->post_ok($cred, \%b)->{id} }

sub copy {
    my ($n, $id) = @_;
    my $res = $cl{$n}->request(GET => '/posts/' . Tent::Client::uri_escape($A)
                                      . "/$id", cred => $cred{$n});
    return $res->{status} == 200 ? $res->{json} : undef;
}

# A's record of a post's deliveries: the counts and each recipient
sub deliveries {
    my ($id) = @_;
    my $res = $a->request(GET => "/posts/$id/deliveries", cred => $acred);
    return $res->{status} == 200 ? $res->{json} : {};
}

sub state_of {
    my ($id, $entity) = @_;
    my ($d) = grep { $_->{entity} eq $entity }
              @{ deliveries($id)->{deliveries} || [] };
    return $d || {};
}

# the engine's store operations for the copies of post "id" (their
# first key is a recipient's copy, "<recipient> 0 t <A> 0 <id>", cut in
# the log; the clients' reads of the copies are not background ones)
sub copy_ops {
    my ($id) = @_;
    my $to = join '|', map { quotemeta } @url{qw(B C E F)};
    my $k = quotemeta('\x00t' . $A . '\x00' . substr($id, 0, 10));
    return map { m{tent store: sent \(here\) (\w+(?: sync)?) background}
                 ? $1 : () }
           grep { /tent store: sent \(here\) .*"(?:$to)$k/ } error_log();
}

# --- the follows, over HTTP; E's credential goes, A keeps E's row -------

my %following;
for my $n (sort keys %port) {
    my $res = $cl{$n}->request(POST => '/followings', cred => $cred{$n},
                               body => { entity => $A });
    die "$n following A: $res->{status} $res->{body}"
        unless $res->{status} == 200;
    $following{$n} = $res->{json}{id};
}

my $res = $a->request(GET => '/followers', cred => $acred);
is(scalar @{ $res->{json} || [] }, 4, 'A has four followers')
    or diag $res->{body};

$res = $cl{E}->request(DELETE => "/followings/$following{E}",
                       cred => $cred{E});
is($res->{status}, 200, 'E unfollows A (its DELETE to A refused)')
    or diag $res->{body};
$res = $a->request(GET => '/followers', cred => $acred);
is(scalar @{ $res->{json} || [] }, 4, 'A still has E as a follower');

# the relationship posts of the follows are delivered first
my $s0 = status();
ok(wait_for(sub { status()->{in_flight} == 0 }),
   'the follows\' deliveries are over') or diag dumped status();

$s0 = status();
my %n0 = map { $_ => notification_posts($port{$_}) } keys %port;

# --- one public post, four jobs, one batch --------------------------------

my $p1 = post($a, $acred, type => $STATUS, content => { text => 'batch' },
              permissions => { public => JSON::PP::true });

ok(wait_for(sub { copy('B', $p1) && copy('C', $p1) && copy('F', $p1) }),
   'the public post reaches B, C and F');
is(copy('F', $p1)->{content}{text}, 'batch', 'as A wrote it');
ok(wait_for(sub { (state_of($p1, $url{E})->{state} // '') eq 'failed' }),
   'E\'s job: a dead letter') or diag dumped deliveries($p1);
is(state_of($p1, $url{E})->{last_status}, 401,
   'with the 401 E\'s MAC check answered over HTTP');
ok(!copy('E', $p1), 'E has no copy');

for my $n (qw(B C F)) {
    is(state_of($p1, $url{$n})->{state}, 'delivered', "delivered to $n");
    is(notification_posts($port{$n}) - $n0{$n}, 0,
       "no HTTP request to $n");
}
is(notification_posts($port{E}) - $n0{E}, 1,
   'one POST to E\'s notification path: the job over HTTP');

my $d = deliveries($p1);
is_deeply([ @{ $d->{counts} || {} }{qw(delivered pending retrying failed)} ],
          [3, 0, 0, 1],
          'no job of the post is left: 3 delivered, 1 failed')
    or diag dumped $d;

my @ops = copy_ops($p1);
is_deeply(\@ops, ['write sync'],
          'the copies of B, C and F: one store operation, a synced write, '
          . 'no compare-and-set each') or diag dumped \@ops;

my @batches = grep { /tent local batch: \d+ jobs, \d+ credentials, one read/ }
              error_log();
ok((grep { /batch: (\d+) jobs, (\d+) cred/ && $1 >= 4 && $2 >= 4 } @batches),
   'a batch of the four jobs, each recipient\'s credential row read in it')
    or diag dumped \@batches;
my @writes = grep { /tent local batch: \d+ jobs settled in one write/ }
             error_log();
ok((grep { /batch: (\d+) jobs settled/ && $1 >= 3 } @writes),
   'and settled in one write, the three copies\' jobs')
    or diag dumped \@writes;

my $s1 = status();
is($s1->{local} - $s0->{local}, 3, 'deliveries.local: 3');

# --- a private post: its addressee only ------------------------------------

my $p2 = post($a, $acred, type => $STATUS, content => { text => 'to C' },
              permissions => { entities => { $url{C} => JSON::PP::true } });
my $p3 = post($a, $acred, type => $STATUS, content => { text => 'marker' },
              permissions => { public => JSON::PP::true });

ok(wait_for(sub { copy('C', $p2) && copy('B', $p3) && copy('F', $p3) }),
   'the private post reaches C, a later public one B and F');
ok(!copy('B', $p2) && !copy('F', $p2), 'B and F never get the private one');
is(copy('C', $p2)->{permissions}{public}, JSON::PP::false,
   'C\'s copy is not public');

# --- F's apps: none, so its copies have no outbox row; then one ----------

ok(scalar(grep { /no app of "\Q$url{F}\E" subscribed: its copy has no outbox/ }
          error_log()),
   'F has no app subscribed: its later copies are written with no outbox '
   . 'row for the engine to read and remove');

my $hook = Tent::Receiver->start(port => $PA + 6,
    rules => [{ method => 'POST', path => '^/hook/',
                action => { status => 200, body => '{}' } }]);
my (undef, $fapp) = $cl{F}->authorized_app('read_posts',
    post_types => 'all', notification_url => $hook->url . '/hook/f');

my $p4 = post($a, $acred, type => $STATUS, content => { text => 'for apps' },
              permissions => { public => JSON::PP::true });
ok(wait_for(sub { copy('F', $p4) }), 'the next post reaches F');
ok(scalar $hook->wait_requests(method => 'POST', path => qr{^/hook/f$},
                               timeout => 10),
   'and F\'s app, subscribed since, is told of it');
# the marker's copy may have been written before the census knew F had
# no app (its outbox row then tells the app subscribed since): the post
# F received is among what the app is told, not necessarily the first
sub told_ids {
    return map { eval { decode_json($_->{body})->{id} } // '' }
           $hook->requests(method => 'POST', path => qr{^/hook/f$});
}
ok(wait_for(sub { grep { $_ eq $p4 } told_ids() }, 10),
   'the post F received') or diag join ' ', told_ids();
is(scalar(grep { $_ eq $p2 } told_ids()), 0,
   'and never of the private post to C');

# --- a deleted post: the copies go, in a batch ----------------------------

$res = $a->request(DELETE => "/posts/$p1", cred => $acred);
is($res->{status}, 200, 'A deletes the public post') or diag $res->{body};
ok(wait_for(sub { !copy('B', $p1) && !copy('C', $p1) && !copy('F', $p1) }),
   'B\'s, C\'s and F\'s copies go');

sub left {
    my $c = deliveries($_[0])->{counts} || {};
    return ($c->{pending} // 1) + ($c->{retrying} // 1);
}
ok(wait_for(sub { left($p2) == 0 && left($p3) == 0
                  && status()->{in_flight} == 0 }),
   'every job settled: none pending or retrying')
    or diag dumped [ deliveries($p2), deliveries($p3) ];
for my $n (qw(B C F)) {
    is(notification_posts($port{$n}) - $n0{$n}, 0,
       "still no HTTP request to $n");
}

# every local job went in a batch's write: the writes' jobs add up
my $jobs = 0;
$jobs += $_ for map { /batch: (\d+) jobs settled/ ? $1 : () } error_log();
my $s2 = status();
ok($jobs >= $s2->{local}, "the batches settled every local job ($jobs)");
ok(scalar(grep { /jobs settled in one write/ } error_log()) < $jobs,
   'in fewer writes than jobs');

__DATA__

=== TEST 1: five entities of one nginx, one store
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_outbound_allow 127.0.0.0/8;
    tent_outbound_timeout 3s;
    tent_delivery_interval 100ms;
    tent_delivery_retry 1s 2s;
    tent_delivery_attempts 2;
    log_format port '$server_port "$request"';

    server {
        listen 127.0.0.1:$TEST_NGINX_B_PORT;
        tent_entity http://127.0.0.1:$TEST_NGINX_B_PORT;
        access_log logs/access.log port;
        location = /tent/oauth/authorize {
            tent_owner "B's owner";
        }
    }

    server {
        listen 127.0.0.1:$TEST_NGINX_C_PORT;
        tent_entity http://127.0.0.1:$TEST_NGINX_C_PORT;
        access_log logs/access.log port;
        location = /tent/oauth/authorize {
            tent_owner "C's owner";
        }
    }

    server {
        listen 127.0.0.1:$TEST_NGINX_E_PORT;
        tent_entity http://127.0.0.1:$TEST_NGINX_E_PORT;
        access_log logs/access.log port;
        location = /tent/oauth/authorize {
            tent_owner "E's owner";
        }
    }

    server {
        listen 127.0.0.1:$TEST_NGINX_F_PORT;
        tent_entity http://127.0.0.1:$TEST_NGINX_F_PORT;
        access_log logs/access.log port;
        location = /tent/oauth/authorize {
            tent_owner "F's owner";
        }
    }
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    access_log logs/access.log port;
    location = /tent/oauth/authorize {
        tent_owner "A's owner";
    }
    location = /status {
        tent_status;
    }
    # an unfollow's DELETE is refused: A keeps the follower row
    location /tent/followers/ {
        limit_except GET POST PUT {
            deny all;
        }
    }
--- request
GET /tent/posts
--- error_code: 200
--- response_body: []
