#!/bin/bash
# bench/ap-inbox.sh: the ActivityPub inbox against Tent's notifications,
# in one run (issue #29: target, the inbox at >= 0.5 x the notification
# rate).
#
# Starts, on 127.0.0.1:
#   module  ngx_http_tent_module (tent_activitypub on, tent_ap_name alice,
#           tent_outbound_allow 127.0.0.0/8) with a fresh store and an
#           owner app (bench/posts-lib.sh), and a following of a Tent
#           entity imported with a credential this script knows;
#   peer    a Tent::APPeer with one actor whose key signs the inbox
#           POSTs (bench/ap-inbox-peer.pl); the module fetches its key
#           once, on the first POST, then keeps it (docs/activitypub.md).
# Both kinds of request store one received post each, with a synced
# write, and are made beforehand, each sent once (bench/ap-inbox-sign.pl,
# bench/posts-write.lua): the inbox's carry a draft-cavage rsa-sha256
# signature the module verifies (RSA-2048) and a replay set entry; the
# notifications an HTTP MAC signature and a nonce; at the end the store
# must hold at least as many posts of each sender as were answered 2xx.  ROUNDS times, inbox
# then notifications, DURATION seconds each, wrk -t1 -cCONNECTIONS; the
# best of each kind is kept.  A run with a non-2xx answer, a socket
# error or that ran out of requests is reported and not counted.  Last
# line:
#   ap-inbox: inbox A POST/s, notifications T POST/s, ratio R (target >= 0.5)
#
# Environment (defaults): WORKERS=1 DURATION=4 ROUNDS=2 CONNECTIONS=16
#   AP_RATE_CAP=8000 TENT_RATE_CAP=15000 (requests made per second of a
#   run: a run that sends them all is reported as exhausted)
set -e

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=bench/posts-lib.sh
. "$(dirname "$0")/posts-lib.sh"

WORKERS=${WORKERS:-1}
DURATION=${DURATION:-4}
ROUNDS=${ROUNDS:-2}
CONNECTIONS=${CONNECTIONS:-16}
AP_RATE_CAP=${AP_RATE_CAP:-8000}
TENT_RATE_CAP=${TENT_RATE_CAP:-15000}

bench_init
bench_ensure_module
command -v perl >/dev/null || bench_die "perl is not installed"
command -v wrk >/dev/null || bench_die "wrk is not installed (util/install-deps.sh --bench)"

port=$(bench_free_port 18181)
url=http://127.0.0.1:$port
prefix=$(bench_prefix module)
MODULE_SERVER_CONF="tent_activitypub on; tent_ap_name alice;" \
MODULE_HTTP_CONF="tent_outbound_allow 127.0.0.0/8 ::1;" \
    posts_module_start "$prefix" "$port" "$WORKERS"

# --- the peer, whose actor signs the inbox's requests ----------------------
peer_pid=
stop_peer() {
    [ -n "$peer_pid" ] && kill "$peer_pid" 2>/dev/null || true
    peer_pid=
}
trap 'stop_peer; bench_cleanup' EXIT
perl "$BENCH_TOP/bench/ap-inbox-peer.pl" "$BENCH_TMP/peer.json" \
    > "$BENCH_TMP/peer.log" 2>&1 &
peer_pid=$!
for _ in $(seq 1 100); do
    [ -s "$BENCH_TMP/peer.json" ] && break
    sleep 0.1
done
[ -s "$BENCH_TMP/peer.json" ] || bench_die "the peer did not start: $(cat "$BENCH_TMP/peer.log")"

# --- the Tent following whose notifications are the baseline --------------
perl -I"$BENCH_TOP/t/lib" -MTent::Client -MJSON::PP -e '
    my ($port, $credfile, $out) = @ARGV;
    my $c = Tent::Client->new(port => $port, host => "127.0.0.1:$port");
    open my $fh, "<", $credfile or die "$credfile: $!\n";
    my $cred = decode_json(do { local $/; <$fh> });
    my $pub = "http://127.0.0.1:9/publisher";
    my $f = { id => "b" x 32, entity => $pub, remote_id => "r",
              mac_key_id => "s:bench", mac_key => "k" x 32,
              mac_algorithm => "hmac-sha-256", confirmed => JSON::PP::true,
              types => ["all"], licenses => [],
              permissions => { public => JSON::PP::false },
              created_at => time, updated_at => time };
    my $r = $c->request(POST => "/import?merge=1", cred => $cred,
        body => { version => 0, entity => "http://127.0.0.1:$port",
                  complete => JSON::PP::true, followings => [$f] });
    die "POST /import: $r->{status} $r->{body}\n" if $r->{status} != 200;
    open my $o, ">", $out or die "$out: $!\n";
    print {$o} encode_json({ entity => $pub, map { $_ => $f->{$_} }
                             qw(mac_key_id mac_key mac_algorithm) });
' "$port" "$prefix/owner.json" "$BENCH_TMP/following.json" \
    || bench_die "could not import the following"

inbox=/tent/activitypub/alice/inbox
notes=/tent/notifications/$(printf 'b%.0s' $(seq 1 32))

sign() {    # sign KIND KEYS PATH COUNT OUT
    perl "$BENCH_TOP/bench/ap-inbox-sign.pl" "$1" "$2" "$port" "$url" \
        "$3" "$4" 1 "$5" || bench_die "ap-inbox-sign.pl $1 failed"
}

# one of each first: the answers, and the peer's key fetched and kept
send_one() {    # send_one FILE: the status of its one request
    perl -MIO::Socket::INET -e '
        my ($port, $file) = @ARGV;
        open my $fh, "<:raw", $file or die;
        my $len = <$fh>; read $fh, my $req, $len;
        my $s = IO::Socket::INET->new("127.0.0.1:$port") or die "$!\n";
        print {$s} $req; my $line = <$s>;
        print +($line =~ m{^HTTP/1\.\d (\d+)})[0] // 0, "\n";
    ' "$port" "$1.0"
}
sign ap "$BENCH_TMP/peer.json" "$inbox" 1 "$BENCH_TMP/one-ap"
sign tent "$BENCH_TMP/following.json" "$notes" 1 "$BENCH_TMP/one-tent"
s=$(send_one "$BENCH_TMP/one-ap")
[ "$s" = 202 ] || bench_die "a signed inbox POST: $s, not 202; see $prefix/logs/error.log"
s=$(send_one "$BENCH_TMP/one-tent")
[ "$s" = 200 ] || bench_die "a signed notification: $s, not 200; see $prefix/logs/error.log"

echo "module $url ($WORKERS worker(s)), store $prefix/store; inbox $inbox," \
     "notifications $notes"
echo "requests: each stores one received post (a synced write); inbox:" \
     "draft-cavage rsa-sha256 (RSA-2048), notifications: HTTP MAC;" \
     "DURATION=${DURATION}s, wrk -t1 -c$CONNECTIONS, best of $ROUNDS"
echo "load average before: $(bench_load) ($(nproc) cores)"

# the received posts of one entity, read as the owner
stored() {      # stored ENTITY
    perl -I"$BENCH_TOP/t/lib" -MTent::Client -MJSON::PP -e '
        my ($port, $credfile, $entity) = @ARGV;
        my $c = Tent::Client->new(port => $port, host => "127.0.0.1:$port");
        open my $fh, "<", $credfile or die "$credfile: $!\n";
        my $cred = decode_json(do { local $/; <$fh> });
        my $r = $c->request(GET => "/posts/count?entity="
                            . Tent::Client::uri_escape($entity),
                            cred => $cred);
        die "GET /posts/count: $r->{status}\n" if $r->{status} != 200;
        print $r->{body} + 0, "\n";
    ' "$port" "$prefix/owner.json" "$1" || bench_die "could not count posts"
}
actor=$(perl -MJSON::PP -e 'local $/; print decode_json(<>)->{actor}' \
            "$BENCH_TMP/peer.json")
answered_ap=1 answered_tent=1       # the first of each, above

best_ap=0 best_tent=0
for r in $(seq 1 "$ROUNDS"); do
    for kind in ap tent; do
        if [ $kind = ap ]; then
            n=$((AP_RATE_CAP * DURATION)) keys=$BENCH_TMP/peer.json path=$inbox
        else
            n=$((TENT_RATE_CAP * DURATION)) keys=$BENCH_TMP/following.json
            path=$notes
        fi
        sign $kind "$keys" "$path" "$n" "$BENCH_TMP/req-$kind"
        posts_wrk "$url$path" 1 "$CONNECTIONS" "$DURATION" \
            "$BENCH_TMP/req-$kind"
        rps=$(posts_wrk_field rps)
        non=$(posts_wrk_field non2xx)
        sock=$(posts_wrk_field sockerr)
        ex=$(posts_wrk_field exhausted)
        note=""
        [ "$non" = 0 ] || note="$note $non non-2xx"
        [ "$sock" = 0 ] || note="$note $sock socket errors"
        [ "$ex" = 0 ] || note="$note ran out of its $n requests"
        echo "round $r $kind: $rps POST/s${note:+ (not counted:$note)}"
        if [ $kind = ap ]; then
            answered_ap=$((answered_ap + $(posts_wrk_field completed) - non))
        else
            answered_tent=$((answered_tent + $(posts_wrk_field completed) - non))
        fi
        if [ -z "$note" ]; then
            if [ $kind = ap ] && [ "$rps" -gt "$best_ap" ]; then best_ap=$rps; fi
            if [ $kind = tent ] && [ "$rps" -gt "$best_tent" ]; then best_tent=$rps; fi
        fi
        rm -f "$BENCH_TMP"/req-$kind.*
    done
done
echo "load average after: $(bench_load)"

# every 2xx a post kept (requests in flight when wrk stops are kept too)
kept_ap=$(stored "$actor")
kept_tent=$(stored http://127.0.0.1:9/publisher)
echo "kept: $kept_ap posts of the actor for $answered_ap inbox 2xx," \
     "$kept_tent of the Tent entity for $answered_tent notification 2xx"
[ "$kept_ap" -ge "$answered_ap" ] && [ "$kept_tent" -ge "$answered_tent" ] \
    || bench_die "fewer posts kept than answered 2xx"
awk -v a="$best_ap" -v t="$best_tent" 'BEGIN {
    printf "ap-inbox: inbox %d POST/s, notifications %d POST/s, ratio %s " \
           "(target >= 0.5)\n", a, t, (t > 0 ? sprintf("%.2f", a / t) : "?") }'
