# bench/export-inline-mem.t: a measurement, not a test (docs/export.md):
# the one worker's RssAnon, sampled every ms from /proc, during
# GET /export?posts=1&attachments=inline of one post with a photo of MB
# megabytes (default 9), three times.  Run with prove, as a suite:
#   MB=9 TEST_NGINX_BINARY=/usr/sbin/nginx \
#   TEST_NGINX_LOAD_MODULES=$PWD/build/ngx_http_tent_module.so \
#   TEST_NGINX_PORT=<port> prove -v -It/lib bench/export-inline-mem.t
use Test::Nginx::Socket 'no_plan';
use Tent::Util qw(start_last_nginx stop_last_nginx dechunk);
use Tent::Client;
use Tent::MAC qw(signed_headers random_nonce);
use JSON::PP;
use Time::HiRes qw(sleep time);
use POSIX ();

add_block_preprocessor(sub {
    my $block = shift;
    $block->set_value(http_config => <<'CONF') unless defined $block->http_config;
    tent_store $TEST_NGINX_SERVER_ROOT/tent_temp;
CONF
    $block->set_value(config => <<'CONF') unless defined $block->config;
    tent_entity http://127.0.0.1:$TEST_NGINX_SERVER_PORT;
    tent_max_attachment_size 25m;
    location = /tent/oauth/authorize { tent_owner "the owner"; }
CONF
});
master_on();
workers(1);
no_shuffle();
run_tests();
start_last_nginx();
END { stop_last_nginx() }

my $SIZE = ($ENV{MB} || 9) * 1024 * 1024;
my $JSON = JSON::PP->new->utf8->canonical;
my $PHOTO = 'https://tent.io/types/post/photo/v0.1.0';
my $c = Tent::Client->new;
my (undef, $owner) = $c->authorized_app(
    'read_secrets,read_profile,read_followers,read_followings,read_groups,'
    . 'read_posts,write_posts', post_types => 'all', info_types => 'all');
my $b = join '', map { chr(rand 256) } 1 .. $SIZE;
my $MB = '-----------TentInline';
my $mp = "--$MB\r\nContent-Disposition: form-data; name=\"post\"; "
       . "filename=\"post.json\"\r\nContent-Type: "
       . "application/vnd.tent.v0+json\r\n\r\n"
       . $JSON->encode({ type => $PHOTO, content => { caption => "p" },
                         permissions => { public => JSON::PP::true } })
       . "\r\n--$MB\r\nContent-Disposition: form-data; name=\"photos[0]\"; "
       . "filename=\"a.bin\"\r\nContent-Type: image/png\r\n\r\n$b\r\n"
       . "--$MB--\r\n";
my $res = $c->request(POST => '/posts', cred => $owner, body => $mp,
    headers => { 'Content-Type' => "multipart/form-data; boundary=$MB" });
is($res->{status}, 200, 'photo post') or diag $res->{body};

my $root = $Test::Nginx::Util::ServRoot;
open my $pf, '<', "$root/logs/nginx.pid" or die; my $master = <$pf>; chomp $master;
my ($worker) = grep { /^\d+$/ } split /\s+/, `pgrep -P $master`;
sub rss { open my $f, '<', "/proc/$worker/status" or return (0,0);
          my ($r, $a) = (0, 0);
          while (<$f>) { $r = $1 if /^VmRSS:\s+(\d+)/; $a = $1 if /^RssAnon:\s+(\d+)/ }
          return ($r, $a) }
for my $i (1 .. 3) {
    my ($r0, $a0) = rss();
    my $pid = fork;
    if (!$pid) {
        my $path = '/tent/export?posts=1&attachments=inline';
        my $r = Tent::Util::http_request(path => $path, timeout => 60, headers => {
            Host => 'localhost',
            signed_headers(cred => $owner, method => 'GET', uri => $path,
                           host => 'localhost', port => 80, nonce => random_nonce(8)) });
        print STDERR "export: status $r->{status}, ", length($r->{body} // ''), " bytes\n";
        POSIX::_exit(0);
    }
    my ($maxr, $maxa) = (0, 0);
    while (waitpid($pid, 1) == 0) {
        my ($r, $a) = rss();
        $maxr = $r if $r > $maxr; $maxa = $a if $a > $maxa;
        sleep 0.001;
    }
    my ($r1, $a1) = rss();
    diag sprintf "run %d: attachment %d kB; RssAnon before %d kB, max %d kB (+%d kB = %.2fx), after %d kB; VmRSS max +%d kB",
        $i, $SIZE / 1024, $a0, $maxa, $maxa - $a0, ($maxa - $a0) / ($SIZE / 1024), $a1, $maxr - $r0;
}

__DATA__

=== TEST 1: up
--- request
GET /tent/profile
--- error_code: 200
