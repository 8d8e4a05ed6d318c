package Tent::APPeer;

# An ActivityPub server on loopback for the ActivityPub suites (#29),
# written from the specifications (ActivityPub, draft-cavage-12, RFC 7033)
# to behave as Mastodon and snac do: WebFinger, a Person actor per name
# (publicKey, inbox, sharedInbox, followers, outbox), an inbox that
# REQUIRES a valid HTTP Signature (it fetches the keyId's actor and
# verifies with its publicKeyPem; Digest against the body; Date within
# 12 hours back, 5 minutes ahead; the activity's actor the key's owner)
# and refuses otherwise with 401, a Follow answered with a signed Accept
# embedding it, addressing by to/cc only (bcc ignored).  A forked process
# like Tent::Receiver; the suite reads what it accepted and refused from
# its files.  The suite's side sends signed activities (follow,
# create_note, ...), correctly or broken on purpose.
#
#   my $ap = Tent::APPeer->start(names => ['alice', 'bob']);
#   $ap->actor_url('alice');                   # http://127.0.0.1:P/users/alice
#   is($ap->follow($entity_url, as => 'alice'), 202);
#   my ($accept) = $ap->wait_inbox(type => 'Accept', name => 'alice');
#   $ap->create_note(as => 'alice', to => ['public'], cc => ['followers'],
#                    content => '<p>hi</p>');
#   is($ap->create_note(..., bad_signature => 1), 401);
#
# See docs/testing.md.

use strict;
use warnings;

use File::Temp qw(tempdir);
use IO::Select;
use IO::Socket::IP;
use JSON::PP;
use POSIX qw(WNOHANG);
use Scalar::Util qw(weaken);
use Time::HiRes qw(sleep time);

use Tent::HTTPSig qw(new_key sign verify digest http_date);
use Tent::Receiver;     # its HTTP/1.1 request reader and file helpers

my $JSON = JSON::PP->new->utf8->canonical;
my $AS = 'application/activity+json';
my $AS_TYPE = qr/activity\+json|ld\+json/;
my $PUBLIC = 'https://www.w3.org/ns/activitystreams#Public';
my @CONTEXT = ('https://www.w3.org/ns/activitystreams',
               'https://w3id.org/security/v1');

our $TIMEOUT = 10;          # one outbound request
our $MAX_BODY = 1 << 20;    # an inbox POST, a fetched document

my @LIVE;

# the Receiver's plumbing, said once there
*_read_request = \&Tent::Receiver::_read_request;
*_write_all = \&Tent::Receiver::_write_all;
*_lines = \&Tent::Receiver::_lines;
*_append = \&Tent::Receiver::_locked_append;
*_write_atomic = \&Tent::Receiver::_write_atomic;
*_read_json = \&Tent::Receiver::_read_json;

# start(names => ['alice'], host => '127.0.0.1', port => 0,
#       name => 'peer.test'  (its URLs and handles by that host name,
#                             listening on host: a name a suite's
#                             Tent::Netns hosts resolve to 127.0.0.1),
#       past => 43200, future => 300   (the Date window, seconds),
#       auto_accept => 1  (answer a Follow with an Accept),
#       signed_fetch => 0 (sign its GETs of keys and actors, as
#                          Mastodon's secure mode),
#       authorized_fetch => 0 (its actors answer only signed GETs: 401),
#       require => ['(request-target)', 'host', 'date', 'digest'],
#       no_shared_inbox => ['dave'] (actors with no endpoints.sharedInbox,
#                                    as snac's))
sub start {
    my ($class, %a) = @_;
    my $host = $a{host} || '127.0.0.1';
    die "Tent::APPeer: loopback only, not $host\n"
        unless $host =~ /^127\.\d+\.\d+\.\d+$/;
    my $lsock = IO::Socket::IP->new(
        LocalHost => $host, LocalPort => $a{port} || 0, Listen => 64,
        ReuseAddr => 1, Proto => 'tcp',
    ) or die "Tent::APPeer: cannot listen on $host: $@\n";
    my $port = $lsock->sockport;
    my $name = $a{name} // $host;
    die "Tent::APPeer: bad name $name\n" unless $name =~ /^[a-z0-9.-]+$/;
    my $dir = tempdir('tent-ap-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $self = bless {
        host => $host, port => $port, url => "http://$name:$port",
        name => $name,
        dir => $dir, owner => $$, names => $a{names} || ['alice'],
        serial => 0,
    }, $class;
    my %actors;
    for my $n (@{ $self->{names} }) {
        die "Tent::APPeer: bad name $n\n" unless $n =~ /^[a-z0-9_]+$/;
        my $k = new_key();
        $actors{$n} = { private => $k->{private}, public => $k->{public},
                        name => ucfirst $n, summary => "<p>$n here</p>" };
    }
    $actors{$_}{no_shared} = 1 for @{ $a{no_shared_inbox} || [] };
    $self->{cfg} = {
        url => $self->{url}, hostport => "$name:$port",
        actors => \%actors,
        past => $a{past} // 12 * 3600, future => $a{future} // 300,
        auto_accept => $a{auto_accept} // 1,
        signed_fetch => $a{signed_fetch} ? 1 : 0,
        authorized_fetch => $a{authorized_fetch} ? 1 : 0,
        require => $a{require}
                   || ['(request-target)', 'host', 'date', 'digest'],
    };
    $self->_save_config;
    _write_atomic("$dir/$_.jsonl", '')
        for qw(requests inbox rejected sent objects client);
    $self->_fork($lsock);
    push @LIVE, $self;
    weaken($LIVE[-1]);
    return $self;
}

sub _fork {
    my ($self, $lsock) = @_;
    my $pid = fork;
    die "Tent::APPeer: fork: $!\n" unless defined $pid;
    if ($pid == 0) {
        eval { _serve($lsock, $self->{dir}, $self->{owner}) };
        POSIX::_exit(0);
    }
    close $lsock;
    $self->{pid} = $pid;
}

# restart(): after stop(), serve again on the same port with the same
# actors, keys and records (a peer that was down for a while)
sub restart {
    my ($self) = @_;
    $self->stop;
    my $lsock = IO::Socket::IP->new(
        LocalHost => $self->{host}, LocalPort => $self->{port},
        Listen => 64, ReuseAddr => 1, Proto => 'tcp',
    ) or die "Tent::APPeer: cannot listen again on $self->{port}: $@\n";
    $self->_fork($lsock);
    return $self;
}

# set(inbox_status => 503 | undef, auto_accept => 0, past => s,
#     future => s, authorized_fetch => 1, signed_fetch => 1): changes
# its behaviour from the next request.  inbox_status: every inbox POST
# is answered so (recorded in rejected as "inbox_status N"), whatever
# its signature: a peer that fails for a while.
sub set {
    my ($self, %c) = @_;
    for my $k (keys %c) {
        die "Tent::APPeer::set: unknown $k\n"
            unless $k =~ /^(inbox_status|auto_accept|past|future|
                            authorized_fetch|signed_fetch)$/x;
        $self->{cfg}{$k} = $c{$k};
    }
    $self->_save_config;
    return $self;
}

sub _save_config {
    my ($self) = @_;
    _write_atomic("$self->{dir}/config.json", $JSON->encode($self->{cfg}));
}

sub url       { $_[0]{url} }
sub port      { $_[0]{port} }
sub dir       { $_[0]{dir} }
sub hostport  { "$_[0]{name}:$_[0]{port}" }
sub actor_url { "$_[0]{url}/users/$_[1]" }
sub key_id    { "$_[0]{url}/users/$_[1]#main-key" }
sub inbox_url { "$_[0]{url}/users/$_[1]/inbox" }
sub shared_inbox_url { "$_[0]{url}/inbox" }
sub followers_url { "$_[0]{url}/users/$_[1]/followers" }
sub acct      { "acct:$_[1]\@$_[0]{name}:$_[0]{port}" }
sub private_key { $_[0]{cfg}{actors}{$_[1]}{private} }
sub public_key  { $_[0]{cfg}{actors}{$_[1]}{public} }
# the last send: { status, body, inbox, activity, object, results => [...] }
sub last_result { $_[0]{last} }

sub stop {
    my ($self) = @_;
    return unless $self->{pid} && $self->{owner} == $$;
    my $pid = delete $self->{pid};
    local ($!, $?);
    kill 'TERM', -$pid or kill 'TERM', $pid;
    my $end = time + 5;
    while (waitpid($pid, WNOHANG) == 0) {
        if (time > $end) { kill 'KILL', -$pid; kill 'KILL', $pid; }
        sleep 0.02;
    }
    kill 'KILL', -$pid;
    return;
}

sub DESTROY { $_[0]->stop }

END { for my $p (@LIVE) { $p->stop if $p } }

# ------------------------------------------------------------------------
# what it received: the suite's side reads the files

sub _records {
    my ($self, $file) = @_;
    return map { $JSON->decode($_) } _lines("$self->{dir}/$file.jsonl");
}

sub _id_of { ref $_[0] eq 'HASH' ? $_[0]{id} : $_[0] }

sub _filter {
    my ($f, @r) = @_;
    return grep {
        my $a = $_->{activity} || {};
        (!defined $f->{type} || ($a->{type} // '') eq $f->{type})
        && (!defined $f->{name} || ($_->{name} // '') eq $f->{name})
        && (!defined $f->{actor} || (_id_of($a->{actor}) // '') eq $f->{actor})
        && (!defined $f->{object_type} || (ref $a->{object} eq 'HASH'
               && ($a->{object}{type} // '') eq $f->{object_type}))
        && (!defined $f->{object_id}
            || (_id_of($a->{object}) // '') eq $f->{object_id})
        && (!defined $f->{path} || ($_->{path} // '') =~ $f->{path})
        && (!$f->{match} || $f->{match}->($_))
    } @r;
}

# inbox(type => 'Create', name => 'alice' | 'shared', actor => URL,
#       object_type => 'Note', object_id => ID (embedded or not),
#       match => sub { $_[0]{activity} ... }):
# the activities it accepted, oldest first, each { name (whose inbox, or
# 'shared'), path, activity, key_id, addressed => [...], dropped (why it
# was not taken, e.g. addressed by bcc only), headers, time }
sub inbox {
    my ($self, %f) = @_;
    return _filter(\%f, $self->_records('inbox'));
}

# the same, polled until "count" came (default 1) or "timeout" (15 s)
sub wait_inbox {
    my ($self, %f) = @_;
    my $count = delete $f{count} || 1;
    my $end = time + (delete $f{timeout} || 15);
    my @r;
    while (1) {
        @r = $self->inbox(%f);
        return @r if @r >= $count || time > $end;
        sleep 0.05;
    }
}

# the POSTs it refused: { path, status, why, headers, body, time }
sub rejected {
    my ($self, %f) = @_;
    return grep { !$f{path} || $_->{path} =~ $f{path} }
           $self->_records('rejected');
}

sub wait_rejected {
    my ($self, %f) = @_;
    my $count = delete $f{count} || 1;
    my $end = time + (delete $f{timeout} || 15);
    my @r;
    while (1) {
        @r = $self->rejected(%f);
        return @r if @r >= $count || time > $end;
        sleep 0.05;
    }
}

# every request it was sent: { method, path, query, headers, status }
sub requests {
    my ($self, %f) = @_;
    return grep {
        (!defined $f{method} || $_->{method} eq uc $f{method})
        && (!defined $f{path} || $_->{path} =~ $f{path})
    } $self->_records('requests');
}

# what its server sent by itself (the Accepts): { inbox, status, activity }
sub sent {
    my ($self) = @_;
    return $self->_records('sent');
}

sub clear {
    my ($self) = @_;
    _append("$self->{dir}/$_.jsonl", undef, 1)
        for qw(requests inbox rejected sent);
    return;
}

# followers(NAME): the actors that follow NAME (a Follow accepted, not
# undone): [{ actor, inbox, shared_inbox, follow }]
sub followers {
    my ($self, $name) = @_;
    return @{ _followers($self->{dir}, $self->actor_url($name)) };
}

# following(NAME): the actor ids NAME follows (a Follow sent, an Accept
# of it received, no Undo sent since)
sub following {
    my ($self, $name) = @_;
    my $me = $self->actor_url($name);
    my %follow;
    for my $c ($self->_records('client')) {
        my $a = $c->{activity};
        next unless ref $a eq 'HASH' && (_id_of($a->{actor}) // '') eq $me;
        if ($a->{type} eq 'Follow' && $c->{status} =~ /^2/) {
            $follow{ $a->{id} } = _id_of($a->{object});
        } elsif ($a->{type} eq 'Undo' && ref $a->{object} eq 'HASH'
                 && ($a->{object}{type} // '') eq 'Follow') {
            delete $follow{ $a->{object}{id} };
        }
    }
    my %accepted = map { (_id_of($_->{activity}{object}) // '') => 1 }
                   $self->inbox(name => $name, type => 'Accept'),
                   $self->inbox(name => 'shared', type => 'Accept');
    return sort map { $follow{$_} } grep { $accepted{$_} } keys %follow;
}

# notes(): the objects others' Create, Update and Delete left, by id (a
# Delete leaves a Tombstone); only those addressed to it
sub notes {
    my ($self, %f) = @_;
    my %o;
    for my $r ($self->inbox(%f)) {
        next if $r->{dropped};
        my $a = $r->{activity};
        my $obj = $a->{object};
        if ($a->{type} eq 'Create' && ref $obj eq 'HASH') {
            $o{ $obj->{id} } = $obj;
        } elsif ($a->{type} eq 'Update' && ref $obj eq 'HASH'
                 && $o{ $obj->{id} }) {
            $o{ $obj->{id} } = $obj;
        } elsif ($a->{type} eq 'Delete') {
            my $id = _id_of($obj);
            $o{$id} = { id => $id, type => 'Tombstone' } if $o{$id};
        }
    }
    return \%o;
}

# ------------------------------------------------------------------------
# an HTTP client for loopback

sub _split_url {
    my ($url) = @_;
    my ($host, $port, $target) =
        ($url // '')
        =~ m{^http://(127\.\d+\.\d+\.\d+|localhost)(?::(\d+))?(/[^#]*)?}
        or return;
    return ($host, $port || 80, defined $target ? $target : '/');
}

# http(METHOD, URL, headers => {...}, body => ...): { status, headers,
# body, json }; status 0 and "error" when it could not be asked (not
# loopback, refused, timeout)
sub http {
    my ($method, $url, %a) = @_;
    my ($host, $port, $target) = _split_url($url)
        or return { status => 0, error => "not a loopback http URL: "
                                          . ($url // 'none') };
    my $sock = IO::Socket::IP->new(PeerHost => $host eq 'localhost'
                                               ? '127.0.0.1' : $host,
                                   PeerPort => $port, Timeout => $TIMEOUT)
        or return { status => 0, error => "connect $host:$port: $!" };
    my $body = $a{body} // '';
    my %h = (Host => "$host:$port", Connection => 'close',
             %{ $a{headers} || {} });
    $h{'Content-Length'} = length $body
        if length $body || $method eq 'POST';
    my $req = "$method $target HTTP/1.1\r\n"
            . join('', map { "$_: $h{$_}\r\n" } sort keys %h) . "\r\n"
            . $body;
    my $raw = '';
    my $ok = eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm $TIMEOUT;
        _write_all($sock, $req);
        while (length $raw <= $MAX_BODY + 65536) {
            my $n = sysread($sock, my $buf, 65536);
            last unless $n;
            $raw .= $buf;
        }
        alarm 0;
        1;
    };
    alarm 0;
    close $sock;
    return { status => 0, error => $@ || 'read failed' } unless $ok;
    my ($head, $content) = split /\r\n\r\n/, $raw, 2;
    my @lines = split /\r\n/, $head // '';
    my ($status) = (shift(@lines) // '') =~ m{^HTTP/1\.\d (\d+)}
        or return { status => 0, error => 'no response' };
    my %rh;
    for (@lines) {
        my ($k, $v) = /^([^:]+):\s*(.*)$/ or next;
        $k = lc $k;
        $rh{$k} = exists $rh{$k} ? "$rh{$k}, $v" : $v;
    }
    $content //= '';
    require Tent::Util;
    ($content) = Tent::Util::dechunk($content)
        if ($rh{'transfer-encoding'} // '') =~ /chunked/i;
    my $json = eval { $JSON->decode($content) };
    return { status => $status, headers => \%rh, body => $content,
             json => $json };
}

# GET a document as ActivityPub asks it; signed by "sign" => [private,
# key id] when given
sub _get_as {
    my ($url, $signer) = @_;
    my %h = (Accept => "$AS, application/ld+json; "
                       . 'profile="https://www.w3.org/ns/activitystreams"');
    if ($signer) {
        my ($host, $port, $target) = _split_url($url);
        %h = sign(key => $signer->[0], key_id => $signer->[1],
                  method => 'GET', target => $target // '/',
                  host => "$host:" . ($port // 80), headers => \%h);
    }
    return http('GET', $url, headers => \%h);
}

# ------------------------------------------------------------------------
# the suite's side: resolve and send

# webfinger('acct:NAME@HOST:PORT'): the JRD's JSON or undef
sub webfinger {
    my ($self, $acct) = @_;
    my ($host) = $acct =~ /\@([^@]+)$/ or return undef;
    my $r = http('GET', "http://$host/.well-known/webfinger?resource="
                        . _escape($acct),
                 headers => { Accept => 'application/jrd+json' });
    $self->{last_webfinger} = $r;
    return $r->{status} == 200 ? $r->{json} : undef;
}

sub _escape {
    my ($s) = @_;
    $s =~ s/([^A-Za-z0-9\-._~])/sprintf '%%%02X', ord $1/ge;
    return $s;
}

# resolve(acct: or URL): the actor's document (cached), as Mastodon
# looks one up: WebFinger's self link for an acct:, then the actor with
# Accept: application/activity+json.  undef when it fails.
sub resolve {
    my ($self, $who, %o) = @_;
    return $self->{actors}{$who} if $self->{actors}{$who} && !$o{fresh};
    my $url = $who;
    if ($who =~ /^acct:/) {
        my $jrd = $self->webfinger($who) or return undef;
        my ($self_link) = grep { ($_->{rel} // '') eq 'self'
                                 && ($_->{type} // '') =~ $AS_TYPE }
                          @{ $jrd->{links} || [] };
        $url = $self_link && $self_link->{href} or return undef;
    }
    my $signer = $self->{cfg}{signed_fetch}
        ? [ $self->private_key($self->{names}[0]),
            $self->key_id($self->{names}[0]) ] : undef;
    my $r = _get_as($url, $signer);
    $self->{last_fetch} = $r;
    return undef unless $r->{status} == 200 && ref $r->{json} eq 'HASH'
        && ($r->{headers}{'content-type'} // '') =~ $AS_TYPE;
    $self->{actors}{$who} = $self->{actors}{ $r->{json}{id} // $url }
        = $r->{json};
    return $r->{json};
}

# acct_of(ACTOR URL): Mastodon's check of a fetched actor: its
# preferredUsername at its id's host (with the port) looked up by
# WebFinger must give back the same actor.  The acct:, or undef and
# $self->{acct_error} says why.
sub acct_of {
    my ($self, $url) = @_;
    my $doc = $self->resolve($url, fresh => 1)
        or return $self->_acct_error("no actor at $url");
    my ($host) = ($doc->{id} // '') =~ m{^https?://([^/]+)}
        or return $self->_acct_error('no id');
    my $user = $doc->{preferredUsername}
        // return $self->_acct_error('no preferredUsername');
    my $acct = "acct:$user\@$host";
    my $jrd = $self->webfinger($acct)
        or return $self->_acct_error("WebFinger of $acct: "
                                     . $self->{last_webfinger}{status});
    my @self = grep { ($_->{rel} // '') eq 'self' } @{ $jrd->{links} || [] };
    return $self->_acct_error("$acct is not $doc->{id}")
        unless grep { ($_->{href} // '') eq $doc->{id} } @self;
    return $acct;
}

sub _acct_error { $_[0]{acct_error} = $_[1]; return undef }

sub _rand { join '', map { sprintf '%02x', int rand 256 } 1 .. 8 }

# send(activity => {...}, inbox => URL, as => NAME, and the options):
# a signed POST of the activity; returns the status (0: not reached).
# Options: unsigned, bad_signature, wrong_digest (a Digest of other
# bytes), no_digest (none sent nor signed), old_date (two days old),
# date => epoch, key => PEM and key_id => ID (another's key or keyId),
# covered => [...], rfc9421 (Signature-Input / Signature instead),
# body => bytes (sent instead of the activity's JSON), headers => {...}
sub send {
    my ($self, %a) = @_;
    my $name = $a{as} || $self->{names}[0];
    my @inboxes = ref $a{inbox} eq 'ARRAY' ? @{ $a{inbox} } : ($a{inbox});
    die "Tent::APPeer::send: no inbox\n" unless grep { defined } @inboxes;
    my $activity = $a{activity};
    my $body = defined $a{body} ? $a{body} : $JSON->encode($activity);
    my @results;
    for my $inbox (grep { defined } @inboxes) {
        my $r = $self->_post($name, $inbox, $body, %a);
        push @results, { inbox => $inbox, status => $r->{status},
                         body => $r->{body}, error => $r->{error} };
        _append("$self->{dir}/client.jsonl", $JSON->encode({
            inbox => $inbox, status => $r->{status}, activity => $activity,
            time => time }));
    }
    my ($worst) = grep { $_->{status} !~ /^2/ } @results;
    $worst ||= $results[0];
    $self->{last} = { %$worst, activity => $activity,
                      object => ref $activity eq 'HASH'
                                && ref $activity->{object} eq 'HASH'
                                ? $activity->{object} : undef,
                      results => \@results };
    return $worst->{status};
}

sub _post {
    my ($self, $name, $inbox, $body, %o) = @_;
    my ($host, $port, $target) = _split_url($inbox)
        or return { status => 0, error => "not a loopback inbox $inbox" };
    my %h = ('Content-Type' => $AS, Accept => $AS,
             %{ $o{headers} || {} });
    my $key = $o{key} || $self->private_key($name);
    my $key_id = $o{key_id} || $self->key_id($name);
    my $hostport = "$host:$port";
    unless ($o{unsigned}) {
        $h{$o{rfc9421} ? "Content-Digest" : "Digest"} =
            digest("not the body $body", $o{rfc9421}) if $o{wrong_digest};
        my $date = $o{old_date} ? int(time) - 2 * 86400 : $o{date};
        if ($o{rfc9421}) {
            $h{Date} = http_date($date) if defined $date;
            %h = Tent::HTTPSig::sign_rfc9421(
                key => $key, key_id => $key_id, method => 'POST',
                target => $target, host => $hostport, body => $body,
                headers => \%h, bad_signature => $o{bad_signature},
                (defined $date ? (created => $date) : ()));
        } else {
            my @covered = $o{covered} ? @{ $o{covered} }
                : $o{no_digest} ? ('(request-target)', 'host', 'date')
                : ('(request-target)', 'host', 'date', 'digest');
            %h = sign(key => $key, key_id => $key_id, method => 'POST',
                      target => $target, host => $hostport, body => $body,
                      headers => \%h, date => $date, covered => \@covered,
                      bad_signature => $o{bad_signature});
        }
    } elsif ($o{wrong_digest}) {
        $h{Digest} = digest("not the body $body");
    } else {
        $h{Digest} = digest($body) unless $o{no_digest};
    }
    delete $h{Host};
    return http('POST', $inbox, headers => \%h, body => $body);
}

sub _target_inbox {
    my ($self, $who, $shared) = @_;
    my $doc = $self->resolve($who) or return undef;
    return $shared && ref $doc->{endpoints} eq 'HASH'
           && $doc->{endpoints}{sharedInbox}
           ? $doc->{endpoints}{sharedInbox} : $doc->{inbox};
}

# follow(ACTOR URL or acct:, as => NAME, inbox => URL, and send's
# options): resolves the actor, sends a signed Follow to its inbox
sub follow {
    my ($self, $who, %o) = @_;
    my $name = $o{as} || $self->{names}[0];
    my $doc = $self->resolve($who);
    my $id = $doc ? $doc->{id} : $who;
    my $me = $self->actor_url($name);
    my $f = { '@context' => $CONTEXT[0], id => "$me#follows/" . _rand(),
              type => 'Follow', actor => $me, object => $id };
    $self->{follows}{$name}{$id} = $f;
    my $inbox = $o{inbox} || ($doc && $doc->{inbox});
    return 0 unless $inbox;
    return $self->send(%o, as => $name, activity => $f, inbox => $inbox);
}

# undo_follow(ACTOR URL, as => NAME): an Undo embedding that Follow
sub undo_follow {
    my ($self, $who, %o) = @_;
    my $name = $o{as} || $self->{names}[0];
    my $doc = $self->resolve($who);
    my $id = $doc ? $doc->{id} : $who;
    my $me = $self->actor_url($name);
    my $f = $self->{follows}{$name}{$id}
        || { id => "$me#follows/" . _rand(), type => 'Follow',
             actor => $me, object => $id };
    my $u = { '@context' => $CONTEXT[0], id => "$me#undo/" . _rand(),
              type => 'Undo', actor => $me, object => $f };
    my $inbox = $o{inbox} || ($doc && $doc->{inbox});
    return 0 unless $inbox;
    return $self->send(%o, as => $name, activity => $u, inbox => $inbox);
}

sub _expand {
    my ($self, $name, $list) = @_;
    return [ map { $_ eq 'public' ? $PUBLIC
                   : $_ eq 'followers' ? $self->followers_url($name)
                   : $_ } @{ $list || [] } ];
}

# the inboxes of an addressing: each actor of to/cc (its shared inbox
# with shared => 1) and, for "followers", this actor's followers
sub _inboxes_for {
    my ($self, $name, $o, @lists) = @_;
    return ref $o->{inbox} ? $o->{inbox} : [ $o->{inbox} ] if $o->{inbox};
    my %seen;
    my @in;
    for my $u (map { @$_ } @lists) {
        next if $u eq $PUBLIC;
        if ($u eq $self->followers_url($name)) {
            for my $f ($self->followers($name)) {
                my $i = $o->{shared} && $f->{shared_inbox}
                        ? $f->{shared_inbox} : $f->{inbox};
                push @in, $i if $i && !$seen{$i}++;
            }
            next;
        }
        next if index($u, $self->{url}) == 0;     # its own actors
        my $i = $self->_target_inbox($u, $o->{shared});
        push @in, $i if $i && !$seen{$i}++;
    }
    return \@in;
}

# create_note(as => NAME, to => [...], cc => [...], bcc => [...],
#             content => HTML, in_reply_to => ID, summary => CW,
#             mentions => [actor URLs], attachments => [{url, mediaType,
#             name}], type => 'Note', inbox => URL | [...], shared => 1,
#             and send's options)
# "public" and "followers" in to/cc stand for as:Public and its
# followers collection.  Delivered to the inboxes of the actors
# addressed (a mention not in to/cc goes into cc) and of its followers
# when "followers" is; the note is served at its id.  Returns the status
# (the first not 2xx of them); last->{object}{id} is the note's id.
sub create_note {
    my ($self, %o) = @_;
    my $name = $o{as} || $self->{names}[0];
    my $me = $self->actor_url($name);
    my $to = $self->_expand($name, $o{to});
    my $cc = $self->_expand($name, $o{cc});
    my @tags;
    for my $m (@{ $o{mentions} || [] }) {
        my $doc = $self->resolve($m);
        my $id = $doc ? $doc->{id} : $m;
        my ($h) = $id =~ m{^https?://([^/]+)};
        push @tags, { type => 'Mention', href => $id,
                      name => '@' . ($doc && $doc->{preferredUsername}
                                     // 'someone') . '@' . ($h // '') };
        push @$cc, $id unless grep { $_ eq $id } @$to, @$cc;
    }
    my $n = ++$self->{serial};
    my $id = "$me/statuses/" . int(time) . "$n";
    my $now = _iso(time);
    my $obj = { id => $id, type => $o{type} || 'Note', attributedTo => $me,
                content => $o{content} // '', published => $now,
                to => $to, cc => $cc, url => $id,
                sensitive => JSON::PP::false };
    $obj->{summary} = $o{summary} if defined $o{summary};
    $obj->{inReplyTo} = $o{in_reply_to} if defined $o{in_reply_to};
    $obj->{tag} = \@tags if @tags;
    $obj->{attachment} = [ map { { type => 'Document',
                                   mediaType => $_->{mediaType} || 'image/png',
                                   url => $_->{url}, name => $_->{name} } }
                           @{ $o{attachments} } ] if $o{attachments};
    my $act = { '@context' => [@CONTEXT], id => "$id/activity",
                type => 'Create', actor => $me, published => $now,
                to => $to, cc => $cc, object => $obj };
    $act->{bcc} = $self->_expand($name, $o{bcc}) if $o{bcc};
    _append("$self->{dir}/objects.jsonl", $JSON->encode($obj));
    my $inboxes = $self->_inboxes_for($name, \%o, $to, $cc, $o{bcc} || []);
    $self->{notes}{$id} = { object => $obj, inboxes => $inboxes,
                            as => $name };
    $self->{last} = { status => 0, activity => $act, object => $obj };
    return 0 unless @$inboxes;
    return $self->send(%o, as => $name, activity => $act,
                       inbox => $inboxes);
}

sub _iso {
    my @g = gmtime $_[0];
    return sprintf '%04d-%02d-%02dT%02d:%02d:%02dZ', $g[5] + 1900,
        $g[4] + 1, @g[3, 2, 1, 0];
}

# update_note(ID, content => HTML, ...): an Update of a note it created,
# to the same inboxes (or inbox => ...)
sub update_note {
    my ($self, $id, %o) = @_;
    my $n = $self->{notes}{$id} or die "Tent::APPeer: no note $id\n";
    my $name = $n->{as};
    my $obj = { %{ $n->{object} }, updated => _iso(time + 1) };
    $obj->{content} = $o{content} if defined $o{content};
    $obj->{summary} = $o{summary} if defined $o{summary};
    $n->{object} = $obj;
    _append("$self->{dir}/objects.jsonl", $JSON->encode($obj));
    my $act = { '@context' => [@CONTEXT], id => "$id#updates/" . _rand(),
                type => 'Update', actor => $obj->{attributedTo},
                to => $obj->{to}, cc => $obj->{cc}, object => $obj };
    return $self->send(%o, as => $name, activity => $act,
                       inbox => $o{inbox} || $n->{inboxes});
}

# delete_note(ID): a Delete whose object is a Tombstone, to the same
# inboxes; the note is then served as 410
sub delete_note {
    my ($self, $id, %o) = @_;
    my $n = $self->{notes}{$id} or die "Tent::APPeer: no note $id\n";
    my $name = $n->{as};
    my $obj = $n->{object};
    _append("$self->{dir}/objects.jsonl",
            $JSON->encode({ id => $id, type => 'Tombstone' }));
    my $act = { '@context' => [@CONTEXT], id => "$id#delete",
                type => 'Delete', actor => $obj->{attributedTo},
                to => $obj->{to}, cc => $obj->{cc},
                object => { id => $id, type => 'Tombstone' } };
    return $self->send(%o, as => $name, activity => $act,
                       inbox => $o{inbox} || $n->{inboxes});
}

# update_person(as => NAME, name => ..., summary => ..., icon => URL,
# inbox => ...): its actor changed (served so from now) and an
# Update(Person) sent to its followers' inboxes
sub update_person {
    my ($self, %o) = @_;
    my $name = $o{as} || $self->{names}[0];
    my $a = $self->{cfg}{actors}{$name};
    for my $k (qw(name summary icon)) {
        $a->{$k} = $o{$k} if exists $o{$k};
    }
    $self->_save_config;
    my $doc = _actor_doc($self->{cfg}, $name);
    my $act = { '@context' => [@CONTEXT],
                id => $self->actor_url($name) . '#updates/' . _rand(),
                type => 'Update', actor => $doc->{id},
                to => [$PUBLIC], cc => [ $self->followers_url($name) ],
                object => $doc };
    my $inboxes = $self->_inboxes_for($name, \%o,
                                      [ $self->followers_url($name) ]);
    return 0 unless @$inboxes;
    return $self->send(%o, as => $name, activity => $act,
                       inbox => $inboxes);
}

# the inbox of an object's author: inbox => given, else to => actor, else
# the object fetched and its attributedTo resolved
sub _author_inbox {
    my ($self, $object, %o) = @_;
    return $o{inbox} if $o{inbox};
    my $who = $o{to};
    unless ($who) {
        my $r = _get_as($object);
        $who = ref $r->{json} eq 'HASH' ? _id_of($r->{json}{attributedTo})
                                        : undef;
    }
    return $who ? $self->_target_inbox($who) : undef;
}

# announce(OBJECT ID, as => NAME, to => its author | inbox => URL)
sub announce {
    my ($self, $object, %o) = @_;
    my $name = $o{as} || $self->{names}[0];
    my $me = $self->actor_url($name);
    my $inbox = $self->_author_inbox($object, %o) or return 0;
    my $act = { '@context' => $CONTEXT[0], id => "$me/announces/" . _rand(),
                type => 'Announce', actor => $me, published => _iso(time),
                to => [$PUBLIC], cc => [ $self->followers_url($name),
                                         $o{to} ? ($o{to}) : () ],
                object => $object };
    return $self->send(%o, as => $name, activity => $act, inbox => $inbox);
}

# like(OBJECT ID, as => NAME, to => its author | inbox => URL)
sub like {
    my ($self, $object, %o) = @_;
    my $name = $o{as} || $self->{names}[0];
    my $me = $self->actor_url($name);
    my $inbox = $self->_author_inbox($object, %o) or return 0;
    my $act = { '@context' => $CONTEXT[0], id => "$me#likes/" . _rand(),
                type => 'Like', actor => $me, object => $object };
    return $self->send(%o, as => $name, activity => $act, inbox => $inbox);
}

# ------------------------------------------------------------------------
# the server process

sub _actor_doc {
    my ($cfg, $name) = @_;
    my $a = $cfg->{actors}{$name} or return undef;
    my $id = "$cfg->{url}/users/$name";
    my $doc = {
        '@context' => [@CONTEXT], id => $id, type => 'Person',
        preferredUsername => $name, name => $a->{name},
        summary => $a->{summary}, url => $id,
        inbox => "$id/inbox", outbox => "$id/outbox",
        followers => "$id/followers", following => "$id/following",
        endpoints => { sharedInbox => "$cfg->{url}/inbox" },
        manuallyApprovesFollowers => $cfg->{auto_accept}
                                     ? JSON::PP::false : JSON::PP::true,
        discoverable => JSON::PP::true,
        publicKey => { id => "$id#main-key", owner => $id,
                       publicKeyPem => $a->{public} },
    };
    $doc->{icon} = { type => 'Image', url => $a->{icon} } if $a->{icon};
    delete $doc->{endpoints} if $a->{no_shared};
    return $doc;
}

# the followers of an actor of ours, from what its inbox accepted
sub _followers {
    my ($dir, $me) = @_;
    my (%f, %by_follow);
    for my $r (map { $JSON->decode($_) } _lines("$dir/inbox.jsonl")) {
        my $a = $r->{activity};
        my $actor = _id_of($a->{actor}) // next;
        if ($a->{type} eq 'Follow' && (_id_of($a->{object}) // '') eq $me) {
            $f{$actor} = { actor => $actor, follow => $a->{id},
                           inbox => $r->{sender}{inbox},
                           shared_inbox => $r->{sender}{shared_inbox} };
        } elsif ($a->{type} eq 'Undo') {
            my $o = $a->{object};
            my $fid = _id_of($o) // '';
            delete $f{$actor}
                if $f{$actor} && ($f{$actor}{follow} eq $fid
                                  || (ref $o eq 'HASH'
                                      && ($o->{type} // '') eq 'Follow'
                                      && (_id_of($o->{object}) // '') eq $me));
        }
    }
    return [ map { $f{$_} } sort keys %f ];
}

sub _serve {
    my ($lsock, $dir, $owner) = @_;
    setpgrp(0, 0);
    $SIG{CHLD} = 'IGNORE';
    $SIG{PIPE} = 'IGNORE';
    $SIG{TERM} = sub { POSIX::_exit(0) };
    my $sel = IO::Select->new($lsock);
    while (1) {
        POSIX::_exit(0) if getppid() != $owner;
        next unless $sel->can_read(0.5);
        my $c = $lsock->accept or next;
        my $pid = fork;
        if (!defined $pid) { close $c; next }
        if ($pid == 0) {
            close $lsock;
            $SIG{TERM} = 'DEFAULT';
            eval { _connection($c, $dir) };
            POSIX::_exit(0);
        }
        close $c;
    }
}

sub _respond {
    my ($c, $status, $type, $body, %h) = @_;
    $body = $JSON->encode($body) if ref $body;
    $body //= '';
    $h{'Content-Type'} = $type if $type;
    $h{'Content-Length'} = length $body;
    $h{Connection} = 'close';
    my $out = "HTTP/1.1 $status " . Tent::Receiver::_reason($status)
              . "\r\n" . join('', map { "$_: $h{$_}\r\n" } sort keys %h)
              . "\r\n$body";
    _write_all($c, $out);
    return $status;
}

sub _connection {
    my ($c, $dir) = @_;
    binmode $c;
    local $Tent::Receiver::MAX_BODY = $MAX_BODY;
    my $req = _read_request($c) or return;
    my $cfg = _read_json("$dir/config.json");
    my @after;
    my $status = eval { _route($c, $req, $cfg, $dir, \@after) };
    $status = _respond($c, 500, 'text/plain', "APPeer: $@") unless $status;
    _append("$dir/requests.jsonl", $JSON->encode({
        method => $req->{method}, path => $req->{path},
        query => $req->{query}, headers => $req->{headers},
        status => $status, time => time }));
    shutdown $c, 1;
    close $c;
    # what a server does from its queue, once it answered
    $_->() for @after;
}

sub _route {
    my ($c, $req, $cfg, $dir, $after) = @_;
    my ($m, $p) = ($req->{method}, $req->{path});
    my $get = $m eq 'GET' || $m eq 'HEAD';
    my $nf = sub { _respond($c, 404, 'application/json',
                            { error => 'Not Found' }) };

    if ($get && $p eq '/.well-known/webfinger') {
        my $res = Tent::Receiver::_query_param($req->{query}, 'resource')
                  // '';
        my $name;
        if ($res =~ /^acct:([^@]+)\@(.+)$/ && $2 eq $cfg->{hostport}) {
            $name = $1;
        } elsif ($res =~ m{^\Q$cfg->{url}\E/users/([^/]+)$}) {
            $name = $1;
        }
        return _respond($c, 400, 'application/json',
                        { error => 'resource' }) unless length $res;
        return $nf->() unless defined $name && $cfg->{actors}{$name};
        my $id = "$cfg->{url}/users/$name";
        return _respond($c, 200, 'application/jrd+json', {
            subject => "acct:$name\@$cfg->{hostport}", aliases => [$id],
            links => [ { rel => 'self', type => $AS, href => $id },
                       { rel => 'http://webfinger.net/rel/profile-page',
                         type => 'text/html', href => $id } ] },
            'Access-Control-Allow-Origin' => '*');
    }
    if ($get && $p =~ m{^/users/([^/]+)$}) {
        my $doc = _actor_doc($cfg, $1) or return $nf->();
        if ($cfg->{authorized_fetch}) {
            my ($ok, $why) = _check_signature($req, $cfg, $dir);
            return _refuse($c, $dir, $req, 401, $why) unless $ok;
        }
        return _respond($c, 200, $AS, $doc);
    }
    if ($get && $p =~ m{^/users/([^/]+)/(followers|following|outbox)$}) {
        my ($name, $what) = ($1, $2);
        return $nf->() unless $cfg->{actors}{$name};
        my $id = "$cfg->{url}/users/$name";
        my @items = $what eq 'followers'
            ? map { $_->{actor} } @{ _followers($dir, $id) } : ();
        return _respond($c, 200, $AS, {
            '@context' => $CONTEXT[0], id => "$id/$what",
            type => 'OrderedCollection', totalItems => scalar @items,
            orderedItems => \@items });
    }
    if ($get && $p =~ m{^/users/([^/]+)/statuses/[^/]+$}) {
        my $url = "$cfg->{url}$p";
        my ($obj) = grep { $_->{id} eq $url } reverse
                    map { $JSON->decode($_) } _lines("$dir/objects.jsonl");
        return $nf->() unless $obj;
        return _respond($c, 410, $AS, $obj) if $obj->{type} eq 'Tombstone';
        return _respond($c, 200, $AS,
                        { '@context' => [@CONTEXT], %$obj });
    }
    if ($m eq 'POST' && ($p eq '/inbox' || $p =~ m{^/users/([^/]+)/inbox$}))
    {
        my $name = $1;
        return $nf->() if defined $name && !$cfg->{actors}{$name};
        return _inbox($c, $req, $cfg, $dir, $name // 'shared', $after);
    }
    if ($get && $p =~ m{/inbox$}) {
        return _respond($c, 405, 'application/json',
                        { error => 'Method Not Allowed' });
    }
    return $nf->();
}

sub _refuse {
    my ($c, $dir, $req, $status, $why) = @_;
    _append("$dir/rejected.jsonl", $JSON->encode({
        path => $req->{path}, status => $status, why => $why,
        headers => $req->{headers},
        body => substr($req->{body} // '', 0, 65536), time => time }));
    return _respond($c, $status, 'application/json', { error => $why });
}

# the signature of a request, checked as Mastodon does: (1, key owner's
# actor document) or (0, why)
sub _check_signature {
    my ($req, $cfg, $dir) = @_;
    my $h = $req->{headers};
    return (0, 'no signature') unless defined $h->{signature};
    my $rfc9421 = defined $h->{'signature-input'};
    my ($key_id, $why);
    if ($rfc9421) {
        # Mastodon takes RFC 9421 too: its keyid, checked below
        ($key_id) = $h->{'signature-input'} =~ /;keyid="([^"]*)"/
            or return (0, 'signature-input: no keyid');
    } else {
        my $sig;
        ($sig, $why) = Tent::HTTPSig::parse_signature($h->{signature});
        return (0, "signature: $why") unless $sig;
        $key_id = $sig->{keyId};
    }
    my ($doc_url) = $key_id =~ /^([^#]*)/;
    return (0, "keyId not a loopback http URL: $key_id")
        unless _split_url($doc_url);
    my $me = (sort keys %{ $cfg->{actors} })[0];
    my $signer = $cfg->{signed_fetch}
        ? [ $cfg->{actors}{$me}{private}, "$cfg->{url}/users/$me#main-key" ]
        : undef;
    my $r = _get_as($doc_url, $signer);
    return (0, "keyId fetch: $r->{status} " . ($r->{error} // ''))
        unless $r->{status} == 200 && ref $r->{json} eq 'HASH';
    return (0, 'keyId fetch: not activity+json: '
               . ($r->{headers}{'content-type'} // 'none'))
        unless ($r->{headers}{'content-type'} // '') =~ $AS_TYPE;
    my $doc = $r->{json};
    my ($key, $owner);
    if (defined $doc->{publicKeyPem}) {        # a key document
        ($key, $owner) = ($doc, _id_of($doc->{owner}));
    } else {
        my @k = ref $doc->{publicKey} eq 'ARRAY' ? @{ $doc->{publicKey} }
              : ($doc->{publicKey});
        ($key) = grep { ref $_ eq 'HASH' && ($_->{id} // '') eq $key_id } @k;
        $owner = $doc->{id};
        return (0, "no key $key_id in its actor") unless $key;
        return (0, 'the key is not its owner\'s')
            if defined $key->{owner} && _id_of($key->{owner}) ne $owner;
    }
    my @v = (method => $req->{method}, target => $req->{target},
             headers => $h,
             body => $req->{method} eq 'POST' ? $req->{body} : undef,
             public_key => $key->{publicKeyPem},
             past => $cfg->{past}, future => $cfg->{future});
    my ($ok, $vwhy) = $rfc9421
        ? Tent::HTTPSig::verify_rfc9421(@v, require =>
              [ '@method', $req->{method} eq 'POST' ? ('content-digest')
                                                    : () ])
        : verify(@v, require => $req->{method} eq 'POST' ? $cfg->{require}
                     : [ grep { $_ ne 'digest' } @{ $cfg->{require} } ]);
    return (0, "rfc9421: $vwhy") if !$ok && $rfc9421;
    return (0, $vwhy) unless $ok;
    return (1, $doc, $owner, $key_id, $rfc9421 ? 1 : 0);
}

sub _addressed {
    my ($a, $cfg, $sender) = @_;
    my @to = map { ref $_ eq 'ARRAY' ? @$_ : defined $_ ? ($_) : () }
             $a->{to}, $a->{cc},
             ref $a->{object} eq 'HASH' ? ($a->{object}{to},
                                           $a->{object}{cc}) : ();
    my %r;
    for my $u (@to) {
        $u = _id_of($u) // next;
        if ($u eq $PUBLIC || $u eq 'as:Public' || $u eq 'Public') {
            $r{public} = 1;
        } elsif ($u =~ m{^\Q$cfg->{url}\E/users/([^/]+)$}) {
            $r{$1} = 1;
        } elsif (defined $sender->{followers} && $u eq $sender->{followers}) {
            $r{followers} = 1;
        }
    }
    return [ sort keys %r ];
}

sub _inbox {
    my ($c, $req, $cfg, $dir, $name, $after) = @_;
    return _refuse($c, $dir, $req, $cfg->{inbox_status},
                   "inbox_status $cfg->{inbox_status}")
        if $cfg->{inbox_status};
    my ($ok, $doc, $owner, $key_id, $rfc9421) =
        _check_signature($req, $cfg, $dir);
    return _refuse($c, $dir, $req, 401, $doc) unless $ok;
    my $a = eval { $JSON->decode($req->{body}) };
    return _refuse($c, $dir, $req, 400, 'not JSON')
        unless ref $a eq 'HASH' && defined $a->{type};
    my $actor = _id_of($a->{actor}) // '';
    return _refuse($c, $dir, $req, 401,
                   "actor $actor is not the key's owner $owner")
        unless $actor eq $owner;

    my $sender = { inbox => $doc->{inbox},
                   shared_inbox => ref $doc->{endpoints} eq 'HASH'
                                   ? $doc->{endpoints}{sharedInbox} : undef,
                   followers => $doc->{followers} };
    my $rec = { name => $name, path => $req->{path}, activity => $a,
                key_id => $key_id, rfc9421 => $rfc9421,
                sender => $sender, headers => $req->{headers},
                addressed => _addressed($a, $cfg, $sender), time => time };
    my $t = $a->{type};
    my $obj = $a->{object};
    if ($t eq 'Create' || $t eq 'Announce'
        || ($t eq 'Update' && ref $obj eq 'HASH'
            && ($obj->{type} // '') ne 'Person'))
    {
        # to and cc only: bto and bcc are not for the receiver
        $rec->{dropped} = 'not addressed to it (to/cc)'
            unless @{ $rec->{addressed} };
        $rec->{dropped} = 'attributedTo is not the actor'
            if ref $obj eq 'HASH' && $t ne 'Announce'
               && (_id_of($obj->{attributedTo}) // '') ne $actor;
    } elsif ($t eq 'Update') {
        $rec->{dropped} = 'Update(Person) of another actor'
            unless (_id_of($obj) // '') eq $actor;
    }
    _append("$dir/inbox.jsonl", $JSON->encode($rec));

    if ($t eq 'Follow' && $cfg->{auto_accept}
        && (_id_of($obj) // '') =~ m{^\Q$cfg->{url}\E/users/([^/]+)$}
        && $cfg->{actors}{$1} && $sender->{inbox})
    {
        my $me = $1;
        push @$after, sub { _send_accept($cfg, $dir, $me, $a,
                                         $sender->{inbox}) };
    }
    return _respond($c, 202, 'application/json', {});
}

sub _send_accept {
    my ($cfg, $dir, $name, $follow, $inbox) = @_;
    my $me = "$cfg->{url}/users/$name";
    my $acc = { '@context' => $CONTEXT[0], id => "$me#accepts/" . _rand(),
                type => 'Accept', actor => $me, object => $follow };
    my $body = $JSON->encode($acc);
    my ($host, $port, $target) = _split_url($inbox);
    my $r = $host
        ? http('POST', $inbox, body => $body, headers => { sign(
              key => $cfg->{actors}{$name}{private},
              key_id => "$me#main-key", method => 'POST',
              target => $target, host => "$host:$port", body => $body,
              headers => { 'Content-Type' => $AS }) })
        : { status => 0, error => "not a loopback inbox $inbox" };
    _append("$dir/sent.jsonl", $JSON->encode({
        inbox => $inbox, status => $r->{status}, error => $r->{error},
        body => $r->{body}, activity => $acc, time => time }));
}

1;
