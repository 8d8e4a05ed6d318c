# tent_store_thread_nice (docs/store.md, "The pool's threads below the
# event loop"): the store owner's pool threads raise their own nice value
# by N the first time they run a store operation, and the worker's own
# thread (its event loop) keeps its value.  Read from
# /proc/<worker>/task/<tid>/stat once the owner has run reads, writes
# and a compare-and-set group.  The directive takes 0 to 19, in http.

use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx master_pid);
use Tent::Client;

master_on();
workers(1);
no_shuffle();
run_tests();

start_last_nginx();
END { stop_last_nginx() }

# the nice value of a thread: field 19 of its stat, after "(comm)"
sub nice_of {
    my ($pid, $tid) = @_;
    open my $fh, '<', "/proc/$pid/task/$tid/stat" or return undef;
    my $stat = <$fh> // '';
    my ($rest) = $stat =~ /\) (.*)$/ or return undef;
    return (split / /, $rest)[16];
}

my $c = Tent::Client->new;
my (undef, $cred) = $c->authorized_app('write_posts,read_posts',
                                       post_types => 'all');
for my $i (1 .. 20) {
    my $res = $c->request(POST => '/posts', cred => $cred,
                          body => { type => 'https://tent.io/types/post/'
                                            . 'status/v0.1.0',
                                    content => { text => "nice $i" } });
    die "post: $res->{status} $res->{body}" unless $res->{status} == 200;
    $res = $c->request(GET => '/posts', cred => $cred);
    die "posts: $res->{status}" unless $res->{status} == 200;
}

my $m = master_pid();
my ($w) = grep { /^\d+$/ } map { s/\s+//gr } `ps -o pid= --ppid $m`;
ok($w, "the worker ($w)");

opendir(my $dh, "/proc/$w/task") or die "/proc/$w/task: $!";
my @tids = grep { /^\d+$/ } readdir $dh;
my $base = nice_of($w, $w);
my $want = $base + 10 > 19 ? 19 : $base + 10;
my %at;
for my $t (@tids) {
    next if $t == $w;
    push @{ $at{ nice_of($w, $t) // 'gone' } }, $t;
}

is(nice_of($w, $w), $base, "the event loop keeps the worker's nice ($base)");
ok(@{ $at{$want} || [] } >= 1,
   'pool threads that ran store operations are at ' . $want . ' ('
   . scalar(@{ $at{$want} || [] }) . ' of ' . (@tids - 1) . ')');
my @other = grep { $_ ne $want && $_ ne $base && $_ ne 'gone' } keys %at;
is(scalar @other, 0, 'no thread at any other value')
    or diag(join "; ", map { "$_: @{ $at{$_} }" } sort keys %at);

__DATA__

=== TEST 1: the pool's threads 10 below the event loop
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_thread_nice 10;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/profile
--- error_code: 200



=== TEST 2: 20 is above the range
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_thread_nice 20;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
value must be between 0 and 19



=== TEST 3: not a number
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_thread_nice -1;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
--- must_die
--- error_log
"tent_store_thread_nice" directive invalid number



=== TEST 4: http only
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    tent_store_thread_nice 10;
--- must_die
--- error_log
"tent_store_thread_nice" directive is not allowed here



=== TEST 5: the last block again, for the live check: 10
--- http_config
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
    tent_store_thread_nice 10;
--- config
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    location = /tent/oauth/authorize {
        tent_owner "the owner";
    }
--- request
GET /tent/profile
--- error_code: 200
