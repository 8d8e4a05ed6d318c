package Tent::Client;

# A Tent client for the suites: JSON requests, MAC signing, and the OAuth
# dance an app does with the owner's authorize page.

use strict;
use warnings;

use JSON::PP;
use Tent::MAC qw(signed_headers random_nonce);
use Tent::Util qw(http_request);

my $JSON = JSON::PP->new->utf8->canonical;

# new(port => N, host => 'localhost', root => '/tent', addr => '127.0.0.1':
# the loopback address connected to)
sub new {
    my ($class, %a) = @_;
    return bless {
        port => $a{port} || $ENV{TEST_NGINX_SERVER_PORT} || 1984,
        addr => $a{addr},
        host => $a{host} || 'localhost',
        root => defined $a{root} ? $a{root} : '/tent',
    }, $class;
}

sub root { $_[0]{root} }

# request(METHOD, PATH, cred => {...}, body => ref|string, headers => {...},
#         ts => T, nonce => N): PATH is relative to the API root unless it
# starts with "//".  Returns http_request's hash plus "json".
sub request {
    my ($self, $method, $path, %o) = @_;
    $path = $path =~ m{^//} ? substr($path, 1) : $self->{root} . $path;

    my %h = (Host => $self->{host}, %{ $o{headers} || {} });
    my $body = $o{body};
    $body = $JSON->encode($body) if ref $body;
    $h{'Content-Type'} ||= 'application/vnd.tent.v0+json' if defined $body;

    if ($o{cred}) {
        my ($host, $port) = split /:/, $h{Host};
        # 8 random bytes, not tent-client-ruby's 3: the server refuses a
        # second (key, ts, nonce), and at 150 requests a second 24 bits
        # repeat within a second about once in 300 runs of a stress suite
        my $nonce = defined $o{nonce} ? $o{nonce} : random_nonce(8);
        %h = (%h, signed_headers(cred => $o{cred}, method => $method,
                                 uri => $path, host => $host,
                                 port => $port || 80,
                                 ts => $o{ts}, nonce => $nonce));
    }

    my $res = http_request(method => $method, path => $path, headers => \%h,
                           body => $body, port => $o{port} || $self->{port},
                           ($self->{addr} ? (addr => $self->{addr}) : ()),
                           ($o{timeout} ? (timeout => $o{timeout}) : ()),
                           ($o{local_addr}
                            ? (local_addr => $o{local_addr}) : ()));
    $res->{json} = eval { $JSON->decode($res->{body}) }
        if defined $res->{body} && length $res->{body};
    return $res;
}

sub register_app {
    my ($self, %fields) = @_;
    my $res = $self->request(POST => '/apps', body => {
        name => 'Test App', description => 'an app of the test suite',
        url => 'https://app.example', redirect_uris => ['https://app.example/cb'],
        scopes => { read_posts => 'test' }, %fields });
    die "register_app: $res->{status} $res->{body}" unless $res->{status} == 200;
    return $res->{json};
}

sub uri_escape {
    my ($s) = @_;
    $s =~ s/([^A-Za-z0-9\-._~])/sprintf('%%%02X', ord $1)/ge;
    return $s;
}

# the query of an authorize request
sub authorize_query {
    my ($self, $app, %o) = @_;
    my %q = (client_id => $app->{id},
             redirect_uri => $o{redirect_uri} || $app->{redirect_uris}[0],
             scope => $o{scope} || 'read_posts',
             state => defined $o{state} ? $o{state} : 'st4te',
             response_type => 'code');
    $q{tent_post_types} = $o{post_types} if $o{post_types};
    $q{tent_profile_info_types} = $o{info_types} if $o{info_types};
    $q{tent_notification_url} = $o{notification_url}
        if defined $o{notification_url};
    return join '&', map { "$_=" . uri_escape($q{$_}) } sort keys %q;
}

# the hidden fields of a page's form
sub form_of {
    my ($page) = @_;
    my %form;
    while ($page->{body} =~ /<input type="hidden" name="([^"]+)" value="([^"]*)">/g) {
        my ($n, $v) = ($1, $2);
        $v =~ s/&quot;/"/g; $v =~ s/&lt;/</g; $v =~ s/&gt;/>/g;
        $v =~ s/&#x27;/'/g; $v =~ s/&amp;/&/g;
        $form{$n} = $v;
    }
    return %form;
}

# the password a provisioned entity of the suites has unless told
# otherwise (Tent::Hosting's operator_request sets it at a create)
sub test_password { "test password of $_[0]" }

sub post_form {
    my ($self, $form, %o) = @_;
    my $body = join '&', map { "$_=" . uri_escape($form->{$_}) }
                             sort keys %$form;
    return $self->request(POST => '/oauth/authorize', body => $body,
        headers => { 'Content-Type' => 'application/x-www-form-urlencoded',
                     %{ $o{headers} || {} } },
        ($o{local_addr} ? (local_addr => $o{local_addr}) : ()));
}

# A provisioned entity's sign-in form (a page with a password field):
# POST it with the password (o{password}, else the client's, else
# test_password of its host); the answer, and the session cookie it set
sub sign_in {
    my ($self, $page, %o) = @_;
    my %form = (form_of($page), %{ $o{signin_tamper} || {} });
    $form{password} = $o{password} // $self->{password}
                      // test_password($self->{host});
    my $res = $self->post_form(\%form, %o);
    my ($cookie) = ($res->{headers}{'set-cookie'} || '')
                   =~ /^((?:__Host-)?tent_session=[^;]*)/;
    return ($res, $cookie);
}

# The owner's page: GET it, read the form, POST it back with "decision".
# Returns the final response (a 302 to the app when all went well).  On
# a provisioned entity the page first asks for the owner's password:
# signed in, the answer is the page, with the session cookie.
sub authorize {
    my ($self, $app, %o) = @_;
    my $q = $self->authorize_query($app, %o);
    my $page = $self->request(GET => "/oauth/authorize?$q",
                              headers => $o{headers});
    return $page unless $page->{status} == 200;

    my %h = %{ $o{headers} || {} };

    if ($page->{body} =~ /name="password"/) {
        my $cookie;
        ($page, $cookie) = $self->sign_in($page, %o);
        return $page unless $page->{status} == 200 && $cookie;
        $h{Cookie} = $cookie;
    }

    my %form = (form_of($page), %{ $o{tamper} || {} });
    $form{decision} = $o{decision} || 'approve';

    return $self->post_form(\%form, %o, headers => \%h);
}

sub code_from {
    my ($res) = @_;
    my ($code) = ($res->{headers}{location} || '') =~ /[?&]code=([0-9a-f]+)/;
    return $code;
}

sub exchange {
    my ($self, $app, $code, %body) = @_;
    return $self->request(POST => "/apps/$app->{id}/authorizations",
                          cred => $app, body => { code => $code, %body });
}

# an app with an authorization holding these scopes: (app, credentials)
sub authorized_app {
    my ($self, $scope, %o) = @_;
    my $app = $self->register_app(%{ $o{app} || {} });
    my $res = $self->authorize($app, scope => $scope, %o);
    my $code = code_from($res) or die "authorize: $res->{status} $res->{body}";
    my $ex = $self->exchange($app, $code);
    die "exchange: $ex->{status} $ex->{body}" unless $ex->{status} == 200;
    return ($app, $ex->{json});
}

# POST /posts of BODY (a hash: JSON), signed with CRED, o{headers}: the
# answer, whatever it is
sub post {
    my ($self, $cred, $body, %o) = @_;
    return $self->request(POST => '/posts', cred => $cred, body => $body,
                          headers => $o{headers});
}

# the same for a post the test needs taken: its JSON (else dies)
sub post_ok {
    my ($self, $cred, $body, %o) = @_;
    my $res = $self->post($cred, $body, %o);
    die "post: $res->{status} $res->{body}" unless $res->{status} == 200;
    return $res->{json};
}

# a status post's body: TEXT, public unless o{public} is given false
sub status_body {
    my ($text, %o) = @_;
    return { type => 'https://tent.io/types/post/status/v0.1.0',
             content => { text => $text },
             permissions => { public => (!exists $o{public} || $o{public})
                                        ? JSON::PP::true : JSON::PP::false } };
}

# a public status post of ours, signed with $cred: its id (else dies)
sub post_status {
    my ($self, $cred, $text) = @_;
    return $self->post_ok($cred, status_body($text))->{id};
}

# GET /posts/ID/deliveries with CRED: its recipients by entity (or inbox)
sub deliveries {
    my ($self, $cred, $id) = @_;
    my $res = $self->request(GET => "/posts/$id/deliveries", cred => $cred);
    return { map { $_->{entity} => $_ } @{ $res->{json}{deliveries} || [] } };
}

# the same, read again (20 s at most) until WHO's state is STATE: its
# record then, or the last one read ({} if none)
sub wait_delivery {
    my ($self, $cred, $id, $who, $state) = @_;
    my $end = time + 20;
    my $d;
    while (time < $end) {
        $d = $self->deliveries($cred, $id)->{$who};
        last if $d && $d->{state} eq $state;
        select(undef, undef, undef, 0.2);
    }
    return $d || {};
}

1;
