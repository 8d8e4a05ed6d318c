#!/bin/bash
# bench/delivery.sh: how fast posts reach followers through the delivery
# queue (store owner, outbound client, signed POSTs), against how fast the
# same receiver takes POSTs from wrk.
#
# Starts, on 127.0.0.1:
#   receiver  plain nginx acting as FOLLOWERS Tent entities
#             (http://127.0.0.1:R/f<i>): the Link header, a profile, the
#             challenge echoed, and 200 to every notification POST, which
#             its access log counts;
#   module    ngx_http_tent_module with tent_outbound_allow 127.0.0.0/8,
#             tent_delivery_interval 50ms; the FOLLOWERS entities follow
#             it (POST /tent/followers, discovery and challenge for real).
# Then POSTS public posts are created (signed, durable), and the clock
# runs until the receiver has logged FOLLOWERS x POSTS notifications (at
# most TIMEOUT s).  Baseline: wrk POSTing the same size of body to the
# receiver for DURATION s, keep-alive.  Last line:
#   delivery: module D deliveries/s, receiver B POST/s, ratio R
#
# Environment (defaults): FOLLOWERS=100 POSTS=100 WORKERS=1
#   CONCURRENCY=32 (tent_delivery_concurrency) TIMEOUT=120 DURATION=5
#   TLS=0; TLS=1: the followers are https://localhost:R/f<i>, with a CA and
#   certificate made by openssl for the run and trusted by the module
#   (tent_outbound_trusted_certificate); the last line then also says how
#   many deliveries came on a resumed TLS session ($ssl_session_reused).
set -e

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

FOLLOWERS=${FOLLOWERS:-100}
POSTS=${POSTS:-100}
WORKERS=${WORKERS:-1}
CONCURRENCY=${CONCURRENCY:-32}
TIMEOUT=${TIMEOUT:-120}
DURATION=${DURATION:-5}

bench_init
bench_ensure_module
command -v perl >/dev/null || bench_die "perl is not installed"

mport=$(bench_free_port 18081)
rport=$(bench_free_port $((mport + 1)))
murl=http://127.0.0.1:$mport
rurl=http://127.0.0.1:$rport
rlisten=
rtrust=
if [ "${TLS:-0}" = 1 ]; then
    command -v openssl >/dev/null || bench_die "openssl is not installed"
    tls=$BENCH_TMP/tls
    mkdir -p "$tls"
    echo "subjectAltName=DNS:localhost" > "$tls/ext"
    { openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=bench-ca \
          -keyout "$tls/ca.key" -out "$tls/ca.pem" \
      && openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
          -keyout "$tls/tls.key" -out "$tls/tls.csr" \
      && openssl x509 -req -in "$tls/tls.csr" -CA "$tls/ca.pem" \
          -CAkey "$tls/ca.key" -CAcreateserial -days 1 -extfile "$tls/ext" \
          -out "$tls/tls.pem"; } >/dev/null 2>&1 \
        || bench_die "openssl could not make the certificates"
    rtport=$(bench_free_port $((rport + 1)))
    rurl=https://localhost:$rtport
    rlisten="        listen 127.0.0.1:$rtport ssl;
        ssl_certificate      $tls/tls.pem;
        ssl_certificate_key  $tls/tls.key;"
    rtrust="    tent_outbound_trusted_certificate  $tls/ca.pem;"
fi

# --- the receiver: FOLLOWERS entities in one plain nginx --------------------
rprefix=$(bench_prefix receiver)
core='{"https://tent.io/types/info/core/v0.1.0":{"entity":"'$rurl'/$1",'
core=$core'"licenses":[],"servers":["'$rurl'/$1/tent"]}}'
bench_write_conf "$rprefix" "$rport" 1 "" \
"$rlisten
$(bench_follower_locations "$rprefix" "$core")" \
"    log_format  notes  '\$request_method \$ssl_session_reused';"
bench_nginx_start "$rprefix" "http://127.0.0.1:$rport/ok"

# --- the module --------------------------------------------------------------
mprefix=$(bench_prefix module)
bench_write_conf "$mprefix" "$mport" "$WORKERS" \
    "load_module $BENCH_MODULE;" \
"        tent_entity    $murl;
        tent_mac_skew  30m;

        location = /tent/oauth/authorize {
            allow       127.0.0.1;
            deny        all;
            tent_owner  \"bench owner\";
        }" \
"    tent_store                 $mprefix/store;
    tent_outbound_allow        127.0.0.0/8 ::1;
$rtrust
    tent_delivery_interval     50ms;
    tent_delivery_concurrency  $CONCURRENCY;"
bench_nginx_start "$mprefix" "$murl/tent/profile"

cred=$(perl "$BENCH_TOP/util/demo-owner.pl" "$mport" "$mprefix") \
    || bench_die "could not make an owner app on the module"

bench_log "making $FOLLOWERS followers (discovery and challenge each)"
for i in $(seq 1 "$FOLLOWERS"); do
    code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 \
        -H 'Content-Type: application/vnd.tent.v0+json' \
        -d '{"entity":"'$rurl'/f'$i'","types":["all"],"notification_path":"notifications/n"}' \
        "$murl/tent/followers")
    [ "$code" = 200 ] || bench_die "follower $i: POST /tent/followers gave $code"
done

# the follower posts these follows made are delivered too: let them land
sleep 2
before=$(grep -c '^POST' "$rprefix/logs/notes.log" 2>/dev/null || true)
rbefore=$(grep -c '^POST r$' "$rprefix/logs/notes.log" 2>/dev/null || true)

bench_log "posting $POSTS posts; waiting for $((FOLLOWERS * POSTS)) deliveries"
start=$(date +%s.%N)
perl -I"$BENCH_TOP/t/lib" -MTent::Client -MJSON::PP -e '
    my ($port, $credfile, $n) = @ARGV;
    my $c = Tent::Client->new(port => $port, host => "127.0.0.1:$port");
    open my $fh, "<", $credfile or die "$credfile: $!\n";
    my $cred = decode_json(do { local $/; <$fh> });
    for my $i (1 .. $n) {
        my $r = $c->request(POST => "/posts", cred => $cred, body => {
            type => "https://tent.io/types/post/status/v0.1.0",
            content => { text => "delivery bench $i" },
            permissions => { public => JSON::PP::true } });
        die "POST: $r->{status} $r->{body}\n" if $r->{status} != 200;
    }
' "$mport" "$cred" "$POSTS" || bench_die "posting failed"

want=$((before + FOLLOWERS * POSTS))
deadline=$(( $(date +%s) + TIMEOUT ))
got=0
while :; do
    got=$(grep -c '^POST' "$rprefix/logs/notes.log" 2>/dev/null || true)
    [ "$got" -ge "$want" ] && break
    [ "$(date +%s)" -ge "$deadline" ] && break
    sleep 0.05
done
end=$(date +%s.%N)
done_n=$((got - before))
secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
rate=$(awk -v n="$done_n" -v s="$secs" 'BEGIN { printf "%d", n / s }')
bench_log "$done_n of $((FOLLOWERS * POSTS)) deliveries in $(printf %.2f "$secs") s"

# --- the baseline: wrk POSTing to the same receiver ------------------------
body=$(printf '{"id":"x","entity":"%s","type":"https://tent.io/types/post/status/v0.1.0","content":{"text":"delivery bench 000"},"permissions":{"public":true},"published_at":1,"version":1}' "$murl")
cat > "$BENCH_TMP/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/vnd.tent.v0+json"
LUA
base=$(timeout $((DURATION + 10)) wrk -t1 -c"$CONCURRENCY" -d"${DURATION}s" \
           -s "$BENCH_TMP/post.lua" \
           "${rurl/localhost/127.0.0.1}/f1/tent/notifications/n" \
       | sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p')
base=${base%.*}

[ "$done_n" -ge $((FOLLOWERS * POSTS)) ] \
    || echo "delivery: only $done_n of $((FOLLOWERS * POSTS)) arrived within ${TIMEOUT} s"
how="signed, over kept-alive connections (tent_outbound_keepalive)"
if [ "${TLS:-0}" = 1 ]; then
    resumed=$(grep -c '^POST r$' "$rprefix/logs/notes.log" || true)
    resumed=$((resumed - rbefore))
    how="$how, TLS: $resumed of $done_n sessions resumed"
fi
echo "delivery: module $rate deliveries/s, receiver ${base:-?} POST/s," \
     "ratio $(bench_ratio "$rate" "${base:-0}")" \
     "($FOLLOWERS followers x $POSTS posts, $how)"
