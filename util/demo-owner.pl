#!/usr/bin/perl
# For the demo: an owner app with every scope, made the way any app gets
# one (register, the owner approves on the authorize page, the code
# exchange), and saved to demo/owner.json for bin/tent-curl --cred.
#   util/demo-owner.pl PORT DEMO_DIR [FILE]
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/../t/lib";
use JSON::PP;
use Tent::Client;

my ($port, $dir, $name) = @ARGV;
my $file = "$dir/" . ($name || 'owner.json');
my $c = Tent::Client->new(port => $port, host => "127.0.0.1:$port");
my $json = JSON::PP->new->canonical->pretty;

# keep the one made before while the store still knows it
if (open my $fh, '<', $file) {
    local $/;
    my $cred = eval { decode_json(<$fh>) };
    if ($cred && $c->request(GET => '/apps', cred => $cred)->{status} == 200) {
        print "$file\n";
        exit 0;
    }
}

my @scopes = qw(read_posts write_posts import_posts read_profile
                write_profile read_followers write_followers read_followings
                write_followings read_groups write_groups read_permissions
                write_permissions read_apps write_apps follow_ui read_secrets
                write_secrets read_blocks write_blocks);

my ($app, $auth) = $c->authorized_app(join(',', @scopes),
    post_types => 'all', info_types => 'all',
    app => { name => 'Demo owner app', url => "http://127.0.0.1:$port/",
             description => 'The demo entity owner\'s app, every scope',
             scopes => { map { $_ => 'the owner may do anything' } @scopes },
             redirect_uris => ["http://127.0.0.1:$port/"] });

open my $out, '>', $file or die "$file: $!";
print {$out} $json->encode({ %$auth, app_id => $app->{id} });
close $out;
chmod 0600, $file;

print "$file\n";
