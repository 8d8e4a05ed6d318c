# util/layers.sh checks calls as well as includes (docs/architecture.md,
# "Layers"): in a tree of its own (a copy of the script, a few files in
# src/<layer>/ compiled with cc into build/addon/<layer>/), a lower
# layer's file that calls a function of a higher layer is a finding that
# names both; a callback the higher layer hands down at run time is not,
# nor is the module object of the commented list; a build older than a
# source is said and not read.  No nginx, no network.

use strict;
use warnings;
use Test::More;
use FindBin;
use File::Temp qw(tempdir);
use File::Path qw(make_path);
use File::Basename qw(dirname);

my $top = "$FindBin::Bin/../..";
my $cc = $ENV{CC} || 'cc';

plan skip_all => 'no nm' if system('command -v nm >/dev/null 2>&1');

my $dir = tempdir(CLEANUP => 1);

sub put {
    my ($path, $text) = @_;
    make_path(dirname("$dir/$path"));
    open my $fh, '>', "$dir/$path" or die "$path: $!";
    print $fh $text;
    close $fh;
}

# the tree: the script, a config, and the files of three layers
put('util/layers.sh', do {
    open my $fh, '<', "$top/util/layers.sh" or die $!;
    local $/;
    <$fh>;
});
chmod 0755, "$dir/util/layers.sh";
put('config', "# the sources\n");
put('src/base/ngx_http_tent_low.h', "/* a header: the layers have some */\n");

# base (0): calls store's function directly (a finding), and a callback
# it is given (none); names the module object (listed: none)
put('src/base/ngx_http_tent_low.c', <<'EOF');
typedef struct { int index; } ngx_module_t;
extern ngx_module_t  ngx_http_tent_module;
int ngx_http_tent_store_thing(int x);

int
ngx_http_tent_low(int x, int (*cb)(int))
{
    return ngx_http_tent_store_thing(x) + cb(x)
           + ngx_http_tent_module.index;
}
EOF

# store (2): defines what base calls; calls base (down: none)
put('src/store/ngx_http_tent_store_thing.c', <<'EOF');
int ngx_http_tent_low(int x, int (*cb)(int));

int
ngx_http_tent_store_thing(int x)
{
    return x + 1;
}

static int
ngx_http_tent_store_cb(int x)
{
    return x;
}

int
ngx_http_tent_store_down(int x)
{
    return ngx_http_tent_low(x, ngx_http_tent_store_cb);
}
EOF

# module (5): the module object
put('src/module/ngx_http_tent_module.c', <<'EOF');
typedef struct { int index; } ngx_module_t;
ngx_module_t  ngx_http_tent_module = { 7 };
EOF

sub build {
    for my $f (glob("$dir/src/*/*.c")) {
        my ($layer, $name) = $f =~ m{/src/([^/]+)/([^/]+)\.c$};
        make_path("$dir/build/addon/$layer");
        system($cc, '-c', '-o', "$dir/build/addon/$layer/$name.o", $f) == 0
            or die "cc $f failed";
    }
    put('build/ngx_http_tent_module.so', '');
    # newer than every source, whatever the clock's resolution
    my $t = time + 10;
    utime $t, $t, "$dir/build/ngx_http_tent_module.so";
}

sub layers {
    my $out = `cd '$dir' && util/layers.sh 2>&1`;
    return ($? >> 8, $out);
}

build();
my ($rc, $out) = layers();
is($rc, 1, 'a call upward: exit 1');
my $finding = 'layers: src/base/ngx_http_tent_low.c (layer 0) uses'
    . ' ngx_http_tent_store_thing of src/store/ngx_http_tent_store_thing.c'
    . ' (layer 2)';
like($out, qr/^\Q$finding\E$/m,
     'the finding names the caller, the function and where it is defined');
unlike($out, qr/ngx_http_tent_store_cb/,
       'a callback handed down at run time: no finding');
unlike($out, qr/ngx_http_tent_low of/, 'a call downward: no finding');
unlike($out, qr/ngx_http_tent_module of/,
       'the module object (the commented list): no finding');
is(scalar(() = $out =~ /^layers: /mg), 1, 'one finding, no other');

# the definition moved down to base: clean
put('src/base/ngx_http_tent_low.c', <<'EOF');
typedef struct { int index; } ngx_module_t;
extern ngx_module_t  ngx_http_tent_module;

int
ngx_http_tent_store_thing(int x)
{
    return x + 1;
}

int
ngx_http_tent_low(int x, int (*cb)(int))
{
    return ngx_http_tent_store_thing(x) + cb(x)
           + ngx_http_tent_module.index;
}
EOF
put('src/store/ngx_http_tent_store_thing.c', <<'EOF');
int ngx_http_tent_low(int x, int (*cb)(int));

static int
ngx_http_tent_store_cb(int x)
{
    return x;
}

int
ngx_http_tent_store_down(int x)
{
    return ngx_http_tent_low(x, ngx_http_tent_store_cb);
}
EOF
unlink glob("$dir/build/addon/*/*.o");
build();
($rc, $out) = layers();
is($rc, 0, 'the definition in its layer: exit 0');
is($out, "layers: clean\n", 'and clean');

# a source newer than the build: said, not read (a stale object could
# report what is fixed already, or miss what is not)
my $t = time + 20;
utime $t, $t, "$dir/src/base/ngx_http_tent_low.c";
($rc, $out) = layers();
is($rc, 0, 'a build older than a source: no finding');
my $stale = 'layers: calls not checked: src/base/ngx_http_tent_low.c is'
    . ' newer than build/ngx_http_tent_module.so (make build)';
like($out, qr/^\Q$stale\E$/m,
     'and it says the calls were not checked, and why');

# no build at all
unlink "$dir/build/ngx_http_tent_module.so";
($rc, $out) = layers();
like($out, qr{^layers: calls not checked: no build/ngx_http_tent_module\.so}m,
     'no build: said');

done_testing();
