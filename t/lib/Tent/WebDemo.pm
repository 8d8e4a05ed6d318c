package Tent::WebDemo;

# What the web page's chromium suites (t/web/050- and after) share: make
# run's demo (util/run-demo.sh: two entities, the page at each root) in
# a temporary directory on two free ports, chromium (Tent::Chrome), a
# screenshot a step, the owner's sign-in through the authorize page.
#
#   my $w = Tent::WebDemo->start(name => 'polish');   # skips without
#   my $page = $w->page;                               # chromium
#   $w->sign_in($page);  $w->step('name');  $w->feed_has($page, 'text');
#   $w->owner_client; $w->owner_cred; $w->bob_client; $w->bob_cred;
#   $w->{alice}, $w->{bob}: the two entities' URLs; Tent::WebDemo::png(w, h)
#   Tent::WebDemo::axe_ok($page, 'view'): axe-core finds nothing serious
#   Tent::WebDemo::controls_ok($page, 'view'): what axe does not measure
#
# Screenshots and logs are kept (and their path printed) when a test
# fails or TEST_WEB_KEEP=1.

use strict;
use warnings;

use Test::More;
use File::Temp qw(tempdir);
use FindBin;
use IO::Socket::IP;
use JSON::PP;
use Tent::Chrome;
use Tent::Client;

my $JSON = JSON::PP->new->utf8->canonical;
my $current;

# two ports side by side: the harness's, else two free ones
sub free_pair {
    for (1 .. 50) {
        my $s = IO::Socket::IP->new(LocalHost => '127.0.0.1', LocalPort => 0,
                                    Listen => 1) or next;
        my $p = $s->sockport;
        close $s;
        my $t = IO::Socket::IP->new(LocalHost => '127.0.0.1',
                                    LocalPort => $p + 1, Listen => 1)
            or next;
        close $t;
        return $p;
    }
    die "no two free ports";
}

# the suite skipped, or its rest when it checked something already
sub skip_rest {
    my ($why) = @_;
    plan skip_all => $why unless Test::More->builder->current_test;
    note("$why: the rest skipped");
    done_testing();
    exit;
}

sub start {
    my ($class, %o) = @_;
    my $top = "$FindBin::Bin/../..";
    my $chromium = Tent::Chrome::find_binary()
        or skip_rest('chromium is not installed (on Debian, '
                     . 'util/install-deps.sh --test installs it)');
    my $module = $ENV{TEST_NGINX_LOAD_MODULES}
                 || "$top/build/ngx_http_tent_module.so";
    skip_rest("the module is not built ($module): make build")
        unless -f $module;

    my $port = $ENV{TEST_NGINX_RANDOMIZE} || !$ENV{TEST_NGINX_PORT}
               ? free_pair() : $ENV{TEST_NGINX_PORT};
    my $tmp = tempdir("tent-web-$o{name}-XXXXXX", TMPDIR => 1,
                      CLEANUP => 0);
    chmod 0755, $tmp;               # the workers (nobody) use the store
    mkdir "$tmp/$_" for qw(shots chromium demo);
    chmod 0755, "$tmp/demo";

    my $self = bless { top => $top, tmp => $tmp, port => $port, n => 0,
                       alice => "http://127.0.0.1:$port",
                       bob => "http://127.0.0.1:" . ($port + 1) }, $class;
    $current = $self;

    $ENV{DEMO_DIR} = "$tmp/demo";
    $ENV{MODULE} = $module;
    $ENV{NGINX} = $ENV{TEST_NGINX_BINARY} || '/usr/sbin/nginx';
    $ENV{TENT_ASAN_LOG} = "$tmp/demo/logs/asan";
    my $out = `$top/util/run-demo.sh start $port 2>&1`;
    if ($?) {
        fail('the demo starts');
        diag($out);
        done_testing();
        exit;
    }
    pass('the demo starts (make run\'s nginx, two entities)');

    $self->{chrome} = Tent::Chrome->new(binary => $chromium,
                                        dir => "$tmp/chromium");
    return $self;
}

sub chrome { $_[0]{chrome} }

# the suite's tab, which always acts as the focused window (':focus' and
# focus events as a person's would, whatever else the browser does)
sub page {
    my ($self, %o) = @_;
    return $self->{page} if $self->{page};
    my $p = $self->{chrome}->page(%o);
    $p->call('Emulation.setFocusEmulationEnabled',
             { enabled => JSON::PP::true });
    return $self->{page} = $p;
}

sub cred {
    my ($self, $file) = @_;
    open my $fh, '<', "$self->{tmp}/demo/$file" or die "$file: $!";
    local $/;
    return $JSON->decode(<$fh>);
}

sub owner_cred { $_[0]->cred('owner.json') }
sub bob_cred { $_[0]->cred('bob.json') }

sub owner_client {
    my ($self) = @_;
    return Tent::Client->new(port => $self->{port},
                             host => "127.0.0.1:$self->{port}");
}

sub bob_client {
    my ($self) = @_;
    my $p = $self->{port} + 1;
    return Tent::Client->new(port => $p, host => "127.0.0.1:$p");
}

# a status of the entity through the API, with the owner's credential
sub post_status {
    my ($self, $client, $cred, $text, %o) = @_;
    my $r = $client->request(POST => '/posts', cred => $cred, body => {
        type => 'https://tent.io/types/post/status/v0.1.0',
        content => { text => $text },
        permissions => { public => JSON::PP::true }, %o });
    die "posting: $r->{status}" unless $r->{status} == 200;
    return $r->{json};
}

# a PNG of w x h pixels (one colour)
sub png {
    my ($w, $h) = @_;
    require Compress::Zlib;
    my $raw = (pack('C', 0) . (pack('CCC', 200, 60, 60) x $w)) x $h;
    my $chunk = sub {
        pack('N', length $_[1]) . $_[0] . $_[1]
            . pack('N', Compress::Zlib::crc32($_[0] . $_[1]))
    };
    return "\x89PNG\r\n\x1a\n"
        . $chunk->('IHDR', pack('NNCCCCC', $w, $h, 8, 2, 0, 0, 0))
        . $chunk->('IDAT', Compress::Zlib::compress($raw))
        . $chunk->('IEND', '');
}

# axe-core (t/web/axe/axe.min.js, committed: docs/testing.md) run in the
# page as it is now: passes when no violation is of impact serious or
# critical, and prints each one's rule, impact, help and nodes; the
# others are noted.  It goes in by the DevTools protocol's
# Runtime.evaluate, which the page's CSP does not govern, again after each
# navigation.  A plain function: any suite's page (t/web/030's too).
my $axe_source;

sub axe_ok {
    my ($p, $view) = @_;
    unless ($axe_source) {
        (my $dir = __FILE__) =~ s{[^/]+$}{};
        my $file = "$dir../../web/axe/axe.min.js";
        open my $fh, '<', $file or die "$file: $!";
        local $/;
        $axe_source = <$fh>;
    }
    unless ($p->js("typeof window.axe === 'object'")) {
        my $r = $p->call('Runtime.evaluate', { expression => $axe_source });
        return fail("axe-core runs in the page ($view)")
            if $r->{exceptionDetails}
               || !$p->js("typeof window.axe === 'object'");
    }
    my $v = $p->js(<<'JS');
axe.run(document, { resultTypes: ['violations'] }).then((r) =>
    r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map((n) => n.target.join(' ')
                                  + (n.failureSummary ? ': '
                                     + n.failureSummary.replace(/\s+/g, ' ')
                                     : '')) })))
JS
    my @bad = grep { ($_->{impact} || '') =~ /^(?:serious|critical)$/ } @$v;
    for my $x (grep { ($_->{impact} || '') !~ /^(?:serious|critical)$/ }
               @$v) {
        note("axe ($view): $x->{id} ($x->{impact}): "
             . join('; ', @{ $x->{nodes} }));
    }
    my $ok = is(scalar @bad, 0,
                "axe-core: no serious or critical violation ($view)");
    for my $x (@bad) {
        diag("$x->{id} ($x->{impact}): $x->{help}");
        diag("    $_") for @{ $x->{nodes} };
    }
    return $ok;
}

# What axe-core leaves out of its colour contrast, measured on the
# computed styles of each control shown (buttons, text fields, not the
# browser's own radios, checkboxes and file pickers): a text field's
# placeholder 4.5:1 against the field (WCAG 1.4.3), and each control's
# edge (its border, else its background) 3:1 against what is behind it
# (WCAG 1.4.11, "non-text contrast").  Semi-transparent colours are
# composed over what is behind them.
sub controls_ok {
    my ($p, $view) = @_;
    my $bad = $p->js(<<'JS');
(() => {
    const rgba = (c) => {
        const m = (c.match(/[\d.]+/g) || [0, 0, 0, 0]).map(Number);
        return m.length > 3 ? m : [...m, 1];
    };
    const over = (top, under) => [0, 1, 2].map(
        (i) => top[i] * top[3] + under[i] * (1 - top[3])).concat(1);
    const lum = (c) => {
        const [r, g, b] = c.slice(0, 3).map((v) => {
            v /= 255;
            return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const ratio = (a, b) => {
        const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
        return (x + 0.05) / (y + 0.05);
    };
    const behind = (el) => {
        const layers = [];
        for (let e = el; e; e = e.parentElement) {
            const c = rgba(getComputedStyle(e).backgroundColor);
            if (c[3] > 0) {
                layers.push(c);
                if (c[3] === 1) {
                    break;
                }
            }
        }
        return layers.reverse().reduce((u, c) => over(c, u),
                                       [255, 255, 255, 1]);
    };
    const name = (e) => e.tagName.toLowerCase()
        + (e.id ? '#' + e.id : e.className ? '.' + e.className.split(' ')[0]
                                           : e.name ? '[' + e.name + ']' : '');
    const bad = [];
    const controls = document.querySelectorAll(
        'button, textarea, input:not([type=radio]):not([type=checkbox])'
        + ':not([type=file]):not([type=hidden])');
    for (const e of controls) {
        if (e.disabled || !e.getClientRects().length
            || getComputedStyle(e).visibility !== 'visible') {
            continue;
        }
        const s = getComputedStyle(e);
        const out = behind(e.parentElement);
        const face = over(rgba(s.backgroundColor), out);
        const edge = parseFloat(s.borderTopWidth) > 0
                     ? over(rgba(s.borderTopColor), out) : face;
        const r = Math.max(ratio(edge, out), ratio(face, out));
        if (r < 3) {
            bad.push(`${name(e)}: its edge ${s.borderTopColor} on `
                     + `rgb(${out.slice(0, 3)}), ${r.toFixed(2)}:1`);
        }
        if (e.placeholder) {
            const ph = over(rgba(getComputedStyle(e, '::placeholder').color),
                            face);
            const q = ratio(ph, face);
            if (q < 4.5) {
                bad.push(`${name(e)}: its placeholder rgb(${ph.slice(0, 3)})`
                         + ` on rgb(${face.slice(0, 3)}), ${q.toFixed(2)}:1`);
            }
        }
    }
    return bad;
})()
JS
    return is_deeply($bad, [], "the controls' edges and placeholders "
                     . "contrast ($view)") || diag(join "\n", @$bad);
}

sub step {
    my ($self, $name, $p) = @_;
    $p ||= $self->page;
    my $file = sprintf '%s/shots/%02d-%s.png', $self->{tmp}, ++$self->{n},
                       $name;
    ok($p->screenshot($file) > 1000, "screenshot $file");
}

sub feed_has {
    my ($self, $p, $text, $timeout) = @_;
    my $q = JSON::PP->new->allow_nonref->encode($text);
    return $p->wait_js("Array.from(document.querySelectorAll('#feed .text'))"
                       . ".some((e) => e.textContent === $q)", $timeout);
}

sub error_text {
    my ($self, $p) = @_;
    return ($p || $self->page)->js(
        "document.getElementById('error').hidden ? '' : "
        . "document.getElementById('error').textContent");
}

# the owner signs in: the page's Sign in, the authorize page, Approve
sub sign_in {
    my ($self, $p) = @_;
    $p ||= $self->page;
    $p->go("$self->{alice}/");
    $p->wait_js('document.body.dataset.ready')
        or return fail('the page loads');
    $p->click('#sign-in');
    $p->wait_js("location.pathname === '/tent/oauth/authorize' && "
                . "!!document.querySelector('button[value=approve]')")
        or return fail('the authorize page');
    $p->click('button[value=approve]');
    return ok($p->wait_js("document.body.dataset.ready && "
                          . "document.body.dataset.state === 'signed-in'"),
              'the owner signs in');
}

# no uncaught exception in the pages, no sanitizer report from nginx
sub finish {
    my ($self) = @_;
    my @js = grep { ($_->{method} || '') eq 'Runtime.exceptionThrown' }
             $self->{chrome}->events;
    is(scalar @js, 0, 'no uncaught exception in the pages')
        or diag(explain(\@js));
    $self->{chrome}->quit;
    system("$self->{top}/util/run-demo.sh stop >/dev/null");
    my @asan = glob "$self->{tmp}/demo/logs/asan*";
    is(scalar @asan, 0, 'no sanitizer report from the demo\'s nginx')
        or diag(map { local (@ARGV, $/) = $_; <> } @asan);
}

END {
    local $?;
    my $self = $current or return;
    $self->{chrome}->quit if $self->{chrome};
    system("$self->{top}/util/run-demo.sh stop >/dev/null")
        if $ENV{DEMO_DIR};
    if ($ENV{TEST_WEB_KEEP} || !Test::More->builder->is_passing) {
        diag("screenshots and logs kept in $self->{tmp}");
    } else {
        system('rm', '-rf', $self->{tmp});
    }
}

1;
