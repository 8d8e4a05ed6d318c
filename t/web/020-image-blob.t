# www/web/api.js imageBlob(): a photo is shown from a blob of the type its
# post declares (checked: png, jpeg, gif, webp), never of the type the
# serving server answered with: bytes served as text/html (a followed
# entity's server, through the followings proxy) opened as "image in a
# new tab" would otherwise be a document of the page's origin, where the
# keys are. In node (its Blob is the browser's); skipped without node.

use strict;
use warnings;
use Test::More;
use FindBin;
use Cwd qw(abs_path);

my $node = (grep { -x } map { "$_/node" } split /:/, $ENV{PATH})[0]
    or plan skip_all => 'no node';
my $api = abs_path("$FindBin::Bin/../../www/web/api.js");

my $js = <<"JS";
import('file://$api').then(async (m) => {
    const out = [];
    const html = new Blob(['<script>alert(1)</script>'],
                          { type: 'text/html' });
    const b = m.imageBlob(html, 'image/png');
    out.push('png:' + (b && b.type) + ':' + (b && await b.text()));
    out.push('PNG:' + (m.imageBlob(html, 'IMAGE/PNG') || {}).type);
    for (const t of ['text/html', 'image/svg+xml', 'image/png; x=y',
                     ' image/png', undefined, 42]) {
        out.push('refused:' + String(t) + ':' + m.imageBlob(html, t));
    }
    console.log(out.join('\\n'));
}, (e) => { console.log('ERROR ' + e); });
JS

open my $fh, '-|', $node, '--input-type=module', '-e', $js
    or die "node: $!";
my $out = do { local $/; <$fh> };
close $fh;
like $out, qr/^png:image\/png:<script>alert\(1\)<\/script>$/m,
    'text/html bytes become a blob of image/png, the bytes unchanged';
like $out, qr/^PNG:image\/png$/m, 'the type lower-cased';
my @refused = $out =~ /^refused:.*:null$/mg;
is scalar @refused, 6, 'no blob for a type that is not a checked image'
    or diag $out;

done_testing();
