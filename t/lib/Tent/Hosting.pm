package Tent::Hosting;
# What the hosting suites (t/hosting/) share: the operator's token in a
# file only its owner reads, the text of a provisioning server block and
# of the tent_admin location (for Tent::Peer's http_config and
# server_config: $PORT and $SERVROOT are the peer's, $host nginx's), the
# operator's requests, a client of one entity of the host.
#
#   use Tent::Hosting qw(provisioning_host operator_request delete_all
#                        client_of);
#   my ($host, $token, $tokfile) = provisioning_host(
#       port => $P, root => $root, names => ['*.test'],
#       http => "    tent_delivery_interval 200ms;\n");
#   my $res = operator_request(port => $P, token => $token,
#                              body => { action => 'create', ... });
use strict;
use warnings;
use Exporter 'import';
use JSON::PP;
use IO::Socket::INET;
use Tent::Client;
use Tent::MAC ();
use Tent::Peer;
use Tent::Util qw(http_request);

our @EXPORT_OK = qw(operator_token provisioning_server admin_location
                    provisioning_host operator_request delete_all
                    client_of slow_open slow_finish);

# a new random token, written to FILE with mode 0600; returns it
sub operator_token {
    my ($file) = @_;
    my $token = 'op-' . join '', map { sprintf '%02x', int rand 256 } 1 .. 16;
    my $old = umask 077;
    open my $fh, '>', $file or die "$file: $!";
    print {$fh} "$token\n";
    close $fh;
    umask $old;
    return $token;
}

# a server block of provisioned entities named by PATTERN (server_name)
sub provisioning_server {
    my ($pattern) = @_;
    return <<"CONF";
    server {
        listen 127.0.0.1:\$PORT;
        server_name $pattern;
        tent_entity http://\$host:\$PORT;
        tent_provisioning on;
    }
CONF
}

# the operator's location, its token read from FILE, for 127.0.0.1 only
sub admin_location {
    my ($file) = @_;
    return <<"CONF";
        location /tent-admin {
            tent_admin;
            tent_admin_token_file $file;
            allow 127.0.0.1;
            deny all;
        }
CONF
}

# a host of provisioned entities (one store), started at PORT: a server
# block for each server_name pattern of NAMES, then SERVERS (more blocks,
# text); HTTP: more http-level directives; SERVER: more of the first
# server's (the peer's own, with the tent_admin location, its token in
# ROOT-token).  Returns the peer, the token and the token's file.
sub provisioning_host {
    my (%o) = @_;
    my $tokfile = "$o{root}-token";
    my $token = operator_token($tokfile);
    my $peer = Tent::Peer->start(
        port => $o{port},
        http_config => "    tent_store \$SERVROOT/store;\n"
                       . "    tent_outbound_allow 127.0.0.0/8;\n"
                       . ($o{http} // '')
                       . join('', map { provisioning_server($_) }
                                      @{ $o{names} })
                       . ($o{servers} // ''),
        server_config => ($o{server} // '') . admin_location($tokfile));
    return ($peer, $token, $tokfile);
}

# an operator's request to /tent-admin at PORT: body (a reference is
# sent as JSON; none: a GET), method, host (the Host: localhost),
# token ('' sends none), headers; the answer with {json} parsed
sub operator_request {
    my (%o) = @_;
    my $body = $o{body};
    # a create sets the password its owner signs in with in the suites
    # (Tent::Client::test_password), unless the body has one
    if (ref $body eq 'HASH' && ($body->{action} // '') eq 'create'
        && !exists $body->{password} && !ref $body->{entity}
        && ($body->{entity} // '') =~ m{^https?://([^/]+)}) {
        $body = { %$body, password => Tent::Client::test_password($1) };
    }
    $body = encode_json($body) if ref $body;
    my $res = http_request(
        method => $o{method} || (defined $o{body} ? 'POST' : 'GET'),
        path => '/tent-admin', port => $o{port}, body => $body,
        headers => { Host => $o{host} || 'localhost',
                     ($o{token} eq '' ? ()
                                      : (Authorization => "Bearer $o{token}")),
                     ($o{headers} ? %{ $o{headers} } : ()) });
    $res->{json} = eval { decode_json($res->{body}) };
    return $res;
}

# ENTITY deleted to its end (a call removes up to 1,000 rows): 1 when done
sub delete_all {
    my ($port, $token, $entity) = @_;
    for (1 .. 20) {
        my $r = operator_request(port => $port, token => $token,
                                 body => { action => 'delete',
                                           entity => $entity });
        return 1 if $r->{status} == 200 && $r->{json}{done};
    }
    return 0;
}

# a client of the entity NAME of the host at PORT
sub client_of {
    my ($name, $port) = @_;
    return Tent::Client->new(host => "$name:$port", port => $port);
}

# A request to the host at PORT sent but its last KEEP (1) bytes: the
# registry looked up (and a quota's count read), the body awaited.
# METHOD, PATH (under /tent), HOST (the name, without the port), CRED
# (signed), TYPE, BODY.  slow_finish() sends the rest, reads the answer.
sub slow_open {
    my (%o) = @_;
    my $port = $o{port};
    my %mac = $o{cred}
        ? Tent::MAC::signed_headers(cred => $o{cred}, method => $o{method},
                                    uri => "/tent$o{path}", host => $o{host},
                                    port => $port,
                                    nonce => Tent::MAC::random_nonce(8))
        : ();
    my $sock = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port")
        or die "connect: $!";
    my $keep = $o{keep} // 1;
    print {$sock} "$o{method} /tent$o{path} HTTP/1.1\r\n"
        . "Host: $o{host}:$port\r\n"
        . ($mac{Authorization}
           ? "Authorization: $mac{Authorization}\r\n" : '')
        . "Content-Type: $o{type}\r\n"
        . "Content-Length: " . length($o{body}) . "\r\n"
        . "Connection: close\r\n\r\n"
        . substr($o{body}, 0, length($o{body}) - $keep);
    $sock->flush;
    return { sock => $sock, rest => substr($o{body}, -$keep) };
}

# the rest of a slow_open() request sent: {status, body, json}
sub slow_finish {
    my ($s) = @_;
    my $sock = $s->{sock};
    print {$sock} $s->{rest};
    $sock->flush;
    my $raw = do { local $/; <$sock> } // '';
    close $sock;
    my ($head, $body) = split /\r\n\r\n/, $raw, 2;
    my ($status) = ($head // '') =~ m{^HTTP/1\.\d (\d+)};
    return { status => $status // 0, body => $body // '',
             json => eval { decode_json($body // '') } };
}

1;
