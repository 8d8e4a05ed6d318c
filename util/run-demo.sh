#!/bin/sh
# Starts (or stops) nginx with the module and a demo entity on 127.0.0.1.
#   util/run-demo.sh start [PORT] | stop
# DEMO_DIR puts its files elsewhere than demo/ (the browser test's temp
# directory), MODULE names another build of the module.
set -e

top=$(cd "$(dirname "$0")/.." && pwd)
demo=${DEMO_DIR:-$top/demo}
module=${MODULE:-$top/build/ngx_http_tent_module.so}

# Workers run as "nobody" and must reach the store: a checkout in a
# directory they cannot enter (a 0700 home, say) keeps the demo's files
# in /tmp instead.
if [ -z "$DEMO_DIR" ] && [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 \
   && ! setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
        test -x "$top" 2>/dev/null
then
    demo=/tmp/tent-demo
    mkdir -p "$demo"
    chmod 755 "$demo"
fi
port=${2:-8080}
nginx=${NGINX:-/usr/sbin/nginx}
unset NGINX     # nginx reads it itself (binary upgrades)

stop() {
    if [ -f "$demo/logs/nginx.pid" ]; then
        pid=$(cat "$demo/logs/nginx.pid")
        if kill -QUIT "$pid" 2>/dev/null; then
            i=0
            while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do
                sleep 0.1
                i=$((i + 1))
            done
            echo "demo nginx (pid $pid) stopped"
        fi
        rm -f "$demo/logs/nginx.pid"
    fi
}

if [ "$1" = stop ]; then
    stop
    exit 0
fi

stop

mkdir -p "$demo/conf" "$demo/logs" "$demo/html" "$demo/tmp"

# the page's files, copied where the workers can read them when the
# checkout is closed to them
www=$top/www
if [ "$demo" != "$top/demo" ] && [ "$(id -u)" = 0 ] \
   && command -v setpriv >/dev/null 2>&1 \
   && ! setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
        test -r "$top/www/index.html" 2>/dev/null
then
    rm -rf "$demo/www"
    cp -R "$top/www" "$demo/www"
    chmod -R a+rX "$demo/www"
    www=$demo/www
fi

csp="default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

# what both demo entities' server blocks have: the authorize page, the
# body limits and the web page (www/, docs/web.md)
cat > "$demo/conf/entity.conf" <<CONF
# The demo's owner is anyone on this machine.  A real server protects
# the page with auth_basic and "tent_owner \$remote_user" (docs/auth.md).
location = /tent/oauth/authorize {
    allow       127.0.0.1;
    deny        all;
    tent_owner  "demo owner";
}

# Photos of a few MB: the whole multipart POST must fit in
# client_max_body_size, so it is tent_max_attachment_size and room for
# the post's JSON and the parts' headers (docs/web.md).
location /tent/ {
    client_max_body_size      11m;
    tent_max_attachment_size  10m;
}

# The web page at the entity's root, its files under /web/.  Its policy
# allows its own files only: no inline script or style, no framing.
location = / {
    root        $www;
    try_files   /index.html =404;
    add_header  Content-Security-Policy "$csp" always;
    add_header  X-Content-Type-Options nosniff always;
    add_header  Referrer-Policy no-referrer always;
    add_header  Cache-Control no-cache always;
}

location /web/ {
    alias       $www/web/;
    types {
        text/javascript  js;
        text/css         css;
        image/png        png;
    }
    add_header  Content-Security-Policy "$csp" always;
    add_header  X-Content-Type-Options nosniff always;
    add_header  Cache-Control no-cache always;
}
CONF

# DEMO_ACTIVITYPUB=1: the first entity speaks ActivityPub too (t/web/130)
ap_conf=
if [ -n "$DEMO_ACTIVITYPUB" ]; then
    ap_conf='tent_activitypub on;'
fi

cat > "$demo/conf/nginx.conf" <<CONF
load_module $module;

worker_processes  2;
pid               $demo/logs/nginx.pid;
error_log         $demo/logs/error.log notice;

events {
    worker_connections  1024;
}

http {
    access_log             $demo/logs/access.log;
    client_body_temp_path  $demo/tmp/body;
    proxy_temp_path        $demo/tmp/proxy;
    fastcgi_temp_path      $demo/tmp/fastcgi;
    uwsgi_temp_path        $demo/tmp/uwsgi;
    scgi_temp_path         $demo/tmp/scgi;

    tent_store  $demo/store;

    # Both demo entities live on loopback, which the SSRF guard refuses
    # by default: the demo opens it.  Never do this on a public server.
    tent_outbound_allow    127.0.0.0/8;
    tent_delivery_interval 300ms;

    server {
        listen       127.0.0.1:$port;
        server_name  localhost;

        tent_entity    http://127.0.0.1:$port;
        tent_api_root  /tent;
        $ap_conf

        include  $demo/conf/entity.conf;

        location / {
            root  $demo/html;
        }
    }

    # a second entity, to follow and be followed
    server {
        listen       127.0.0.1:$((port + 1));
        server_name  localhost;

        tent_entity    http://127.0.0.1:$((port + 1));

        # the same page and limits as the first entity's
        include  $demo/conf/entity.conf;
    }
}
CONF

echo "demo: nginx -t, then nginx on 127.0.0.1:$port and $((port + 1))" >&2
"$nginx" -p "$demo/" -c "$demo/conf/nginx.conf" -t -q
"$nginx" -p "$demo/" -c "$demo/conf/nginx.conf"

i=0
until curl -fsS -o /dev/null "http://127.0.0.1:$port/tent/profile" 2>/dev/null
do
    i=$((i + 1))
    if [ $i -gt 50 ]; then
        echo "the demo did not come up; see $demo/logs/error.log" >&2
        exit 1
    fi
    sleep 0.1
done

echo "demo: an owner app for each entity (util/demo-owner.pl)" >&2
owner=$(perl "$top/util/demo-owner.pl" "$port" "$demo") || {
    echo "could not make the demo's owner app; see $demo/logs/error.log" >&2
    exit 1
}

bob=$(perl "$top/util/demo-owner.pl" "$((port + 1))" "$demo" bob.json) || {
    echo "could not make the second entity's app; see $demo/logs/error.log" >&2
    exit 1
}

cat <<MSG
The demo entity http://127.0.0.1:$port is up (nginx, 2 workers, store in
$demo/store).  Its web page (sign in as the owner from this machine):

    http://127.0.0.1:$port/

Try:

    curl -I http://127.0.0.1:$port/
    curl http://127.0.0.1:$port/tent/profile

An owner app with every scope is in $owner; sign requests with it:

    bin/tent-curl --cred $owner http://127.0.0.1:$port/tent/apps
    bin/tent-curl --cred $owner -X PUT \\
        http://127.0.0.1:$port/tent/profile/https%3A%2F%2Ftent.io%2Ftypes%2Finfo%2Fbasic%2Fv0.1.0 \\
        -- -d '{"name":"Demo","permissions":{"public":true}}'

A second entity, http://127.0.0.1:$((port + 1)) (its page too), has its app
in $bob.
Let it follow the first, then post on the first and read the second's
feed (the post is pushed within a second):

    bin/tent-curl --cred $bob -X POST http://127.0.0.1:$((port + 1))/tent/followings \\
        -- -d '{"entity":"http://127.0.0.1:$port"}'
    bin/tent-curl --cred $owner -X POST http://127.0.0.1:$port/tent/posts \\
        -- -d '{"type":"https://tent.io/types/post/status/v0.1.0",
               "content":{"text":"hello"},"permissions":{"public":true}}'
    bin/tent-curl --cred $bob http://127.0.0.1:$((port + 1))/tent/posts

Stop it with: make stop
MSG
