# The operator's token file (tent_admin_token_file, docs/directives.md):
# "nginx -t" warns when the file is open to others than its owner (a
# token anyone on the host may read is anyone's), naming the file and
# its mode, and fails on a token shorter than 16 characters.

use strict;
use warnings;

use Test::More;
use File::Path qw(make_path remove_tree);
use File::Spec;
use Tent::Util ();

my $nginx = $ENV{TEST_NGINX_BINARY} || 'nginx';
my @mods = split ' ', $ENV{TEST_NGINX_LOAD_MODULES} || '';
my $port = ($ENV{TEST_NGINX_PORT} || 21300) + 7;
my $root = Tent::Util::own_root('/tmp/sr-admin-token') . '-token';

remove_tree($root);
make_path("$root/conf", "$root/logs");

my $tok = "$root/tent-admin.token";
my $load = join '', map { "load_module " . File::Spec->rel2abs($_) . ";\n" }
                    @mods;

open my $fh, '>', "$root/conf/nginx.conf" or die "conf: $!";
print {$fh} <<"CONF";
worker_processes 1;
${\ Tent::Util::user_line()}
error_log $root/logs/error.log;
pid $root/logs/nginx.pid;
$load
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $root/client_body;
    proxy_temp_path $root/proxy;
    fastcgi_temp_path $root/fastcgi;
    uwsgi_temp_path $root/uwsgi;
    scgi_temp_path $root/scgi;
    tent_store $root/store;
    server {
        listen 127.0.0.1:$port;
        location /tent-admin {
            tent_admin;
            tent_admin_token_file $tok;
        }
    }
}
CONF
close $fh;

# nginx -t with the token file as given: its exit status and its output
sub check {
    my ($token, $mode) = @_;
    open my $t, '>', $tok or die "$tok: $!";
    print {$t} "$token\n";
    close $t;
    chmod $mode, $tok or die "chmod: $!";
    my $out = `$nginx -t -p $root -c conf/nginx.conf 2>&1`;
    return ($? >> 8, $out);
}

my $good = '0123456789abcdef0123456789abcdef';

my ($rc, $out) = check($good, 0644);
is($rc, 0, 'a token file of mode 0644 is taken') or diag $out;
like($out, qr/\[warn\].*the token file "\Q$tok\E" is open to others than its owner \(mode 0644\)/,
     'with a warning naming the file and its mode') or diag $out;

($rc, $out) = check($good, 0640);
like($out, qr/\[warn\].*"\Q$tok\E".*\(mode 0640\)/,
     'readable by its group: the warning too') or diag $out;

($rc, $out) = check($good, 0600);
is($rc, 0, 'a token file of mode 0600 is taken') or diag $out;
unlike($out, qr/\[warn\]/, 'without a warning') or diag $out;

($rc, $out) = check('0123456789abcde', 0600);
isnt($rc, 0, 'a token of 15 characters: nginx -t fails');
like($out, qr/\[emerg\].*must be one line of 16 to 256 visible characters/,
     'and says why') or diag $out;

($rc, $out) = check('0123456789abcdef', 0600);
is($rc, 0, 'a token of 16 characters is taken') or diag $out;

remove_tree($root);

done_testing();
