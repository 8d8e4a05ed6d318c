
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The outbound HTTP client: one request to another Tent server, run on
 * nginx's event loop.  Names go through c-ares, every address through
 * the SSRF guard before it is connected, TLS through nginx's OpenSSL
 * layer with the peer verified, and the answer through nginx's own
 * status line, header and chunked parsers.  A fetch has a deadline per
 * hop and the deadline of the operation it is part of, caps on header and
 * body sizes, and per-worker caps on fetches in flight: all of them, and
 * those made for unsigned requests.  It needs no client request and no
 * configured location, so background work (deliveries) uses it as
 * handlers do.
 */


#define NGX_HTTP_TENT_FETCH_PRIVATE  1

#include "ngx_http_tent_module.h"
#include "ngx_http_tent_fetch_private.h"
#include "ngx_http_tent_guard.h"
#include "ngx_http_tent_mac.h"
#include "ngx_http_tent_resolver.h"
#include <ares.h>


#define NGX_HTTP_TENT_FETCH_HEADER_MAX  16384
#define NGX_HTTP_TENT_SSL_SESSIONS      64
#define NGX_HTTP_TENT_SSL_SESSION_KEY   (255 + sizeof(":65535"))


#if (NGX_HTTP_SSL)

/*
 * A worker's TLS sessions, one per "name:port" it has talked to, so the
 * next delivery to a follower resumes instead of a full handshake.  A
 * small array, the least recently used entry replaced: a lookup costs
 * far less than the handshake it saves.
 */

typedef struct {
    SSL_SESSION                    *session;
    ngx_msec_t                      used;
    size_t                          len;
    u_char                          key[NGX_HTTP_TENT_SSL_SESSION_KEY];
} ngx_http_tent_ssl_session_t;


typedef struct {
    ngx_http_tent_ssl_session_t     entries[NGX_HTTP_TENT_SSL_SESSIONS];
} ngx_http_tent_ssl_sessions_t;

#endif


static void ngx_http_tent_fetch_hop(ngx_http_tent_fetch_t *f);
static void ngx_http_tent_fetch_resolved(void *data, int status,
    struct ares_addrinfo *ai);
static void ngx_http_tent_fetch_connect(ngx_http_tent_fetch_t *f);
static void ngx_http_tent_fetch_connected(ngx_event_t *ev);
#if (NGX_HTTP_SSL)
static void ngx_http_tent_fetch_handshaked(ngx_connection_t *c);
static ngx_http_tent_ssl_session_t *ngx_http_tent_fetch_session(
    ngx_http_tent_fetch_t *f, ngx_uint_t create);
static void ngx_http_tent_fetch_save_session(ngx_http_tent_fetch_t *f,
    ngx_connection_t *c);
static void ngx_http_tent_ssl_sessions_cleanup(void *data);
#endif
static void ngx_http_tent_fetch_send(ngx_event_t *ev);
static void ngx_http_tent_fetch_recv(ngx_event_t *ev);
static ngx_int_t ngx_http_tent_fetch_parse(ngx_http_tent_fetch_t *f,
    ngx_uint_t eof);
static ngx_int_t ngx_http_tent_fetch_block(ngx_http_tent_fetch_t *f);
static ngx_int_t ngx_http_tent_fetch_headers(ngx_http_tent_fetch_t *f,
    ngx_uint_t eof);
static ngx_int_t ngx_http_tent_fetch_chunked(ngx_http_tent_fetch_t *f);
static ngx_int_t ngx_http_tent_fetch_redirect(ngx_http_tent_fetch_t *f);
static ngx_int_t ngx_http_tent_fetch_build(ngx_http_tent_fetch_t *f);
static void ngx_http_tent_fetch_timeout(ngx_event_t *ev);
static void ngx_http_tent_fetch_close(ngx_http_tent_fetch_t *f);
static void ngx_http_tent_fetch_finish(ngx_http_tent_fetch_t *f,
    ngx_uint_t result);
static void ngx_http_tent_fetch_done_event(ngx_event_t *ev);
static void ngx_http_tent_fetch_request_cleanup(void *data);
static void ngx_http_tent_fetch_request_done(ngx_http_tent_fetch_t *f);


static char  *ngx_http_tent_fetch_errors[] = {
    "ok",
    "the address is not allowed (tent_outbound_allow)",
    "the name could not be resolved",
    "could not connect",
    "timed out",
    "the response is too large",
    "the response is not valid HTTP",
    "the TLS handshake or certificate check failed",
    "too many outbound requests in flight",
    "internal error",
    "not a URL to fetch (scheme, host, or a number not a dotted quad)",
    "the deadline of the whole operation passed (tent_outbound_deadline)"
};


const char *
ngx_http_tent_fetch_strerror(ngx_uint_t result)
{
    if (result >= sizeof(ngx_http_tent_fetch_errors) / sizeof(char *)) {
        return "unknown error";
    }

    return ngx_http_tent_fetch_errors[result];
}


ngx_http_tent_fetch_t *
ngx_http_tent_fetch_create(ngx_pool_t *pool, ngx_log_t *log,
    ngx_http_tent_outbound_conf_t *conf)
{
    ngx_http_tent_fetch_t       *f;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_pcalloc(pool, sizeof(ngx_http_tent_fetch_full_t));
    if (ff == NULL) {
        return NULL;
    }

    f = &ff->f;

    ff->pool = pool;
    ff->log = log;
    ff->conf = conf;
    f->max_response = conf->max_response;
    ngx_str_set(&f->method, "GET");
    ngx_str_set(&f->accept, NGX_HTTP_TENT_MEDIA_TYPE);

    ff->timer.handler = ngx_http_tent_fetch_timeout;
    ff->timer.data = f;
    ff->timer.log = log;

    /*
     * Not cancelable: a worker shutting down (reload) waits for fetches
     * in flight, as for proxied requests; each is bounded by its
     * deadline.  With a cancelable timer the worker left at once, with
     * the client's and the remote's sockets open ("open socket left in
     * connection", "aborting") and the pending request dropped.
     */
    ff->timer.cancelable = 0;

    ff->done.handler = ngx_http_tent_fetch_done_event;
    ff->done.data = f;
    ff->done.log = log;

    return f;
}


/*
 * NGX_OK: the fetch runs and f->handler will be called from the event
 * loop (never from inside this call); NGX_ERROR: it could not start.
 */

ngx_int_t
ngx_http_tent_fetch_start(ngx_http_tent_fetch_t *f)
{
    ngx_http_tent_main_conf_t   *mcf;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    mcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                              ngx_http_tent_module);

    ff->mcf = mcf;
    ff->hr = ngx_pcalloc(ff->pool, sizeof(ngx_http_request_t));
    if (ff->hr == NULL) {
        return NGX_ERROR;
    }

    if (mcf->resolver == NULL) {
        mcf->resolver = ngx_http_tent_resolver_create(
                                           (ngx_cycle_t *) ngx_cycle);
        if (mcf->resolver == NULL) {
            return NGX_ERROR;
        }
    }

    ff->started = 1;

    /* a fetch alone is an operation of its own: its redirects included */

    if (!f->has_deadline) {
        f->deadline = ngx_current_msec + ff->conf->deadline;
        f->has_deadline = 1;
    }

    /*
     * Unsigned requests have a share of their own: however many of them
     * hang, the rest is left for deliveries and signed requests
     */

    if (mcf->fetches >= mcf->max_fetches
        || (ff->anonymous && mcf->anonymous >= mcf->max_anonymous))
    {
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_BUSY);
        return NGX_OK;
    }

    mcf->fetches++;
    mcf->anonymous += ff->anonymous;
    ff->counted = 1;

    ngx_http_tent_fetch_hop(f);

    return NGX_OK;
}


/*
 * Whether the next of a profile's servers may be tried after this
 * failure: not after an answer, a guard refusal, a full budget, or the
 * operation's deadline
 */

ngx_uint_t
ngx_http_tent_fetch_next_server(ngx_http_tent_fetch_t *f)
{
    switch (f->result) {

    case NGX_HTTP_TENT_FETCH_OK:
    case NGX_HTTP_TENT_FETCH_REFUSED:
    case NGX_HTTP_TENT_FETCH_BUSY:
    case NGX_HTTP_TENT_FETCH_DEADLINE:
    case NGX_HTTP_TENT_FETCH_ERROR:
        return 0;

    default:
        return 1;
    }
}


/* stop a running fetch: its handler will not be called */

void
ngx_http_tent_fetch_abort(ngx_http_tent_fetch_t *f)
{
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    if (!ff->started || ff->finished) {
        if (ff->done.posted) {
            ngx_delete_posted_event(&ff->done);
        }

        return;
    }

    f->handler = NULL;
    ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_ERROR);

    if (ff->done.posted) {
        ngx_delete_posted_event(&ff->done);
    }
}


/* a response header's value by lowercase name, or NULL */

ngx_str_t *
ngx_http_tent_fetch_header(ngx_http_tent_fetch_t *f, const char *name)
{
    size_t            len;
    ngx_uint_t        i;
    ngx_table_elt_t  *h;

    if (f->headers.elts == NULL) {
        return NULL;
    }

    len = ngx_strlen(name);
    h = f->headers.elts;

    for (i = 0; i < f->headers.nelts; i++) {
        if (h[i].key.len == len
            && ngx_strncmp(h[i].lowcase_key, name, len) == 0)
        {
            return &h[i].value;
        }
    }

    return NULL;
}


/*
 * A host whose last label is a number must be a plain dotted quad:
 * "2130706433", "0x7f.1", "0177.0.0.1" mean different addresses to
 * different programs (c-ares reads the last as 177.0.0.1, browsers as
 * 127.0.0.1), so they are refused rather than guessed.
 */

static ngx_int_t
ngx_http_tent_fetch_numeric(ngx_str_t *name)
{
    u_char      *p, *last, *label;
    ngx_uint_t   parts, digits, value;

    last = name->data + name->len;

    if (last > name->data && last[-1] == '.') {
        last--;
    }

    label = last;
    while (label > name->data && label[-1] != '.') {
        label--;
    }

    if (label == last || !(*label >= '0' && *label <= '9')) {
        return NGX_OK;
    }

    parts = 0;
    digits = 0;
    value = 0;

    for (p = name->data; p <= last; p++) {
        if (p == last || *p == '.') {
            if (digits == 0 || value > 255) {
                return NGX_ERROR;
            }

            parts++;
            digits = 0;
            value = 0;
            continue;
        }

        if (*p < '0' || *p > '9' || (digits == 1 && value == 0)) {
            return NGX_ERROR;
        }

        value = value * 10 + (*p - '0');
        digits++;
    }

    return parts == 4 ? NGX_OK : NGX_ERROR;
}


/* one hop: parse the URL, then resolve its host */

static void
ngx_http_tent_fetch_hop(ngx_http_tent_fetch_t *f)
{
    u_char                      *host;
    ngx_str_t                    rest;
    ngx_url_t                    u;
    ngx_msec_int_t               left;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    left = (ngx_msec_int_t) (f->deadline - ngx_current_msec);

    if (left <= 0) {
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_DEADLINE);
        return;
    }

    rest = f->url;

    if (rest.len > 7 && ngx_strncasecmp(rest.data, (u_char *) "http://", 7)
                        == 0)
    {
        ff->ssl = 0;
        rest.data += 7;
        rest.len -= 7;

    } else if (rest.len > 8
               && ngx_strncasecmp(rest.data, (u_char *) "https://", 8) == 0)
    {
        ff->ssl = 1;
        rest.data += 8;
        rest.len -= 8;

    } else {
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_BAD_URL);
        return;
    }

#if !(NGX_HTTP_SSL)
    if (ff->ssl) {
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_TLS);
        return;
    }
#endif

    ngx_memzero(&u, sizeof(ngx_url_t));

    u.url = rest;
    u.default_port = ff->ssl ? 443 : 80;
    u.uri_part = 1;
    u.no_resolve = 1;

    if (ngx_parse_url(ff->pool, &u) != NGX_OK || u.host.len == 0
        || ngx_strlchr(u.host.data, u.host.data + u.host.len, '@'))
    {
        ngx_log_error(NGX_LOG_INFO, ff->log, 0,
                      "tent: invalid outbound URL \"%V\"", &f->url);
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_BAD_URL);
        return;
    }

    ff->host = u.host;
    ff->port = u.port ? u.port : u.default_port;
    ff->explicit_port = u.port != 0 && u.port != u.default_port;
    ff->uri = u.uri;

    if (ff->uri.len == 0) {
        ngx_str_set(&ff->uri, "/");

    } else if (ff->uri.data[0] == '?') {
        host = ngx_pnalloc(ff->pool, ff->uri.len + 1);
        if (host == NULL) {
            ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_ERROR);
            return;
        }

        host[0] = '/';
        ngx_memcpy(host + 1, ff->uri.data, ff->uri.len);
        ff->uri.data = host;
        ff->uri.len++;
    }

    /* the name for c-ares: no brackets around an IPv6 literal */

    host = ngx_pnalloc(ff->pool, ff->host.len + 1);
    if (host == NULL) {
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_ERROR);
        return;
    }

    if (ff->host.len > 2 && ff->host.data[0] == '[') {
        ngx_memcpy(host, ff->host.data + 1, ff->host.len - 2);
        host[ff->host.len - 2] = '\0';
        ff->name.data = host;
        ff->name.len = ff->host.len - 2;

    } else {
        ngx_memcpy(host, ff->host.data, ff->host.len);
        host[ff->host.len] = '\0';
        ff->name = ff->host;

        if (ngx_http_tent_fetch_numeric(&ff->name) != NGX_OK) {
            ngx_log_error(NGX_LOG_INFO, ff->log, 0,
                          "tent: \"%V\" is not a dotted-quad address",
                          &ff->name);
            ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_BAD_URL);
            return;
        }
    }

    if (ngx_http_tent_fetch_build(f) != NGX_OK) {
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_ERROR);
        return;
    }

    /* the hop's own timeout, or what is left of the operation's */

    ff->cut = (ngx_msec_t) left < ff->conf->timeout;
    ngx_add_timer(&ff->timer, ff->cut ? (ngx_msec_t) left : ff->conf->timeout);

    ff->resolving = ngx_http_tent_resolve(ff->mcf->resolver, host,
                                          ngx_http_tent_fetch_resolved, f);
    if (ff->resolving == NULL) {
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_ERROR);
    }
}


static void
ngx_http_tent_fetch_resolved(void *data, int status, struct ares_addrinfo *ai)
{
    ngx_http_tent_fetch_t *f = data;

    size_t                       n;
    ngx_uint_t                   refused;
    ngx_addr_t                  *addr;
    struct ares_addrinfo_node   *node;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    ff->resolving = NULL;

    if (ai == NULL) {
        ngx_log_error(NGX_LOG_INFO, ff->log, 0,
                      "tent: cannot resolve \"%V\": %s", &ff->name,
                      ngx_http_tent_resolve_strerror(status));
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_DNS);
        return;
    }

    n = 0;
    for (node = ai->nodes; node; node = node->ai_next) {
        n++;
    }

    ff->addrs = ngx_pcalloc(ff->pool, (n + 1) * sizeof(ngx_addr_t));
    if (ff->addrs == NULL) {
        ares_freeaddrinfo(ai);
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_ERROR);
        return;
    }

    ff->naddrs = 0;
    ff->next_addr = 0;
    refused = 0;

    for (node = ai->nodes; node; node = node->ai_next) {

        if (node->ai_family != AF_INET
#if (NGX_HAVE_INET6)
            && node->ai_family != AF_INET6
#endif
           )
        {
            continue;
        }

        if (ngx_http_tent_guard_check(ff->mcf->denied, ff->conf->allow,
                                      node->ai_addr)
            != NGX_OK)
        {
            refused++;
            continue;
        }

        addr = &ff->addrs[ff->naddrs];

        addr->sockaddr = ngx_palloc(ff->pool, node->ai_addrlen);
        if (addr->sockaddr == NULL) {
            ares_freeaddrinfo(ai);
            ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_ERROR);
            return;
        }

        ngx_memcpy(addr->sockaddr, node->ai_addr, node->ai_addrlen);
        addr->socklen = node->ai_addrlen;
        ngx_inet_set_port(addr->sockaddr, (in_port_t) ff->port);

        addr->name.data = ngx_pnalloc(ff->pool, NGX_SOCKADDR_STRLEN);
        if (addr->name.data == NULL) {
            ares_freeaddrinfo(ai);
            ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_ERROR);
            return;
        }

        addr->name.len = ngx_sock_ntop(addr->sockaddr, addr->socklen,
                                       addr->name.data, NGX_SOCKADDR_STRLEN,
                                       1);
        ff->naddrs++;
    }

    ares_freeaddrinfo(ai);

    if (ff->naddrs == 0) {
        if (refused) {
            ngx_log_error(NGX_LOG_WARN, ff->log, 0,
                          "tent: outbound request to \"%V\" refused: its "
                          "addresses are in special-purpose ranges, see "
                          "\"tent_outbound_allow\"", &ff->name);
            ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_REFUSED);

        } else {
            ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_DNS);
        }

        return;
    }

    ngx_http_tent_fetch_connect(f);
}


static void
ngx_http_tent_fetch_connect(ngx_http_tent_fetch_t *f)
{
    ngx_int_t                    rc;
    ngx_addr_t                  *addr;
    ngx_connection_t            *c;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    for ( ;; ) {

        if (ff->next_addr >= ff->naddrs) {
            ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_CONNECT);
            return;
        }

        addr = &ff->addrs[ff->next_addr++];

        ngx_memzero(&ff->peer, sizeof(ngx_peer_connection_t));
        ff->peer.sockaddr = addr->sockaddr;
        ff->peer.socklen = addr->socklen;
        ff->peer.name = &addr->name;
        ff->peer.get = ngx_event_get_peer;
        ff->peer.log = ff->log;
        ff->peer.log_error = NGX_ERROR_INFO;

        rc = ngx_event_connect_peer(&ff->peer);

        if (rc == NGX_ERROR || rc == NGX_BUSY || rc == NGX_DECLINED) {
            if (ff->peer.connection) {
                ngx_close_connection(ff->peer.connection);
                ff->peer.connection = NULL;
            }

            continue;
        }

        break;
    }

    c = ff->peer.connection;
    c->data = f;
    c->pool = ff->pool;
    c->read->handler = ngx_http_tent_fetch_connected;
    c->write->handler = ngx_http_tent_fetch_connected;

    if (rc == NGX_OK) {
        ngx_http_tent_fetch_connected(c->write);
    }
}


static void
ngx_http_tent_fetch_connected(ngx_event_t *ev)
{
    int                           err;
    socklen_t                     len;
    ngx_connection_t             *c;
    ngx_http_tent_fetch_t        *f;
    ngx_http_tent_fetch_full_t   *ff;
#if (NGX_HTTP_SSL)
    ngx_http_tent_ssl_session_t  *ss;
#endif

    c = ev->data;
    f = c->data;
    ff = ngx_http_tent_fetch_full(f);

    err = 0;
    len = sizeof(int);

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, (void *) &err, &len) == -1) {
        err = ngx_socket_errno;
    }

    if (err) {
        ngx_log_error(NGX_LOG_INFO, ff->log, err,
                      "tent: connect() to %V failed", ff->peer.name);
        ngx_close_connection(c);
        ff->peer.connection = NULL;
        ngx_http_tent_fetch_connect(f);
        return;
    }

    /*
     * Nagle would hold a small write (a TLS Finished, then the request)
     * until the peer's delayed ACK, some 40 ms on Linux
     */

    if (ngx_tcp_nodelay(c) != NGX_OK) {
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_CONNECT);
        return;
    }

#if (NGX_HTTP_SSL)

    if (ff->ssl) {
        if (ff->mcf->ssl == NULL
            || ngx_ssl_create_connection(ff->mcf->ssl, c, NGX_SSL_CLIENT)
               != NGX_OK)
        {
            ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_TLS);
            return;
        }

        /* SNI carries names only, never address literals */

        if (ngx_inet_addr(ff->name.data, ff->name.len) == INADDR_NONE
            && ngx_strlchr(ff->name.data, ff->name.data + ff->name.len, ':')
               == NULL)
        {
            (void) SSL_set_tlsext_host_name(c->ssl->connection,
                                            (char *) ff->cname);
        }

        c->sendfile = 0;

        ss = ngx_http_tent_fetch_session(f, 0);

        if (ss && ngx_ssl_set_session(c, ss->session) != NGX_OK) {
            ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_TLS);
            return;
        }

        if (ngx_ssl_handshake(c) == NGX_AGAIN) {
            c->ssl->handler = ngx_http_tent_fetch_handshaked;
            return;
        }

        ngx_http_tent_fetch_handshaked(c);
        return;
    }

#endif

    c->read->handler = ngx_http_tent_fetch_recv;
    c->write->handler = ngx_http_tent_fetch_send;

    ngx_http_tent_fetch_send(c->write);
}


#if (NGX_HTTP_SSL)

static void
ngx_http_tent_fetch_handshaked(ngx_connection_t *c)
{
    long                          rc;
    ngx_http_tent_fetch_t        *f;
    ngx_http_tent_ssl_session_t  *ss;
    ngx_http_tent_fetch_full_t   *ff;

    f = c->data;
    ff = ngx_http_tent_fetch_full(f);

    if (!c->ssl->handshaked) {

        /* a session the server chokes on is not offered again */

        ss = ngx_http_tent_fetch_session(f, 0);

        if (ss) {
            SSL_SESSION_free(ss->session);
            ss->session = NULL;
        }

        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_TLS);
        return;
    }

    if (ff->mcf->ssl_verify) {
        rc = SSL_get_verify_result(c->ssl->connection);

        if (rc != X509_V_OK) {
            ngx_log_error(NGX_LOG_WARN, ff->log, 0,
                          "tent: certificate of \"%V\" not verified: "
                          "(%l:%s)", &ff->name, rc,
                          X509_verify_cert_error_string(rc));
            ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_TLS);
            return;
        }

        if (ngx_ssl_check_host(c, &ff->name) != NGX_OK) {
            ngx_log_error(NGX_LOG_WARN, ff->log, 0,
                          "tent: certificate does not match \"%V\"",
                          &ff->name);
            ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_TLS);
            return;
        }
    }

    ff->tls_verified = 1;

    c->read->handler = ngx_http_tent_fetch_recv;
    c->write->handler = ngx_http_tent_fetch_send;

    ngx_http_tent_fetch_send(c->write);
}


/* the entry of f's "name:port", NULL if none; create: one to fill in */

static ngx_http_tent_ssl_session_t *
ngx_http_tent_fetch_session(ngx_http_tent_fetch_t *f, ngx_uint_t create)
{
    u_char                         key[NGX_HTTP_TENT_SSL_SESSION_KEY];
    size_t                         len;
    ngx_uint_t                     i;
    ngx_pool_cleanup_t            *cln;
    ngx_http_tent_ssl_session_t   *e, *lru;
    ngx_http_tent_ssl_sessions_t  *ss;
    ngx_http_tent_fetch_full_t    *ff;

    ff = ngx_http_tent_fetch_full(f);

    if (ff->name.len > 255) {
        return NULL;
    }

    len = ngx_sprintf(key, "%V:%ui", &ff->name, ff->port) - key;

    ss = ff->mcf->ssl_sessions;

    if (ss == NULL) {
        if (!create) {
            return NULL;
        }

        /* made in the worker, freed with its cycle */

        cln = ngx_pool_cleanup_add(ngx_cycle->pool,
                                   sizeof(ngx_http_tent_ssl_sessions_t));
        if (cln == NULL) {
            return NULL;
        }

        ss = cln->data;
        ngx_memzero(ss, sizeof(ngx_http_tent_ssl_sessions_t));
        cln->handler = ngx_http_tent_ssl_sessions_cleanup;
        ff->mcf->ssl_sessions = ss;
    }

    lru = NULL;

    for (i = 0; i < NGX_HTTP_TENT_SSL_SESSIONS; i++) {
        e = &ss->entries[i];

        if (e->session && e->len == len && ngx_memcmp(e->key, key, len) == 0)
        {
            e->used = ngx_current_msec;
            return e;
        }

        if (lru == NULL || e->session == NULL
            || (lru->session && e->used < lru->used))
        {
            lru = e;
        }
    }

    if (!create) {
        return NULL;
    }

    if (lru->session) {
        SSL_SESSION_free(lru->session);
        lru->session = NULL;
    }

    ngx_memcpy(lru->key, key, len);
    lru->len = len;
    lru->used = ngx_current_msec;

    return lru;
}


/*
 * After the answer, not after the handshake: a TLS 1.3 server sends its
 * ticket after the handshake, and it has been read by now.  Only from a
 * connection whose certificate passed the checks.
 */

static void
ngx_http_tent_fetch_save_session(ngx_http_tent_fetch_t *f,
    ngx_connection_t *c)
{
    SSL_SESSION                  *sess;
    ngx_http_tent_ssl_session_t  *e;
    ngx_http_tent_fetch_full_t   *ff;

    ff = ngx_http_tent_fetch_full(f);

    if (!ff->tls_verified || !c->ssl->handshaked) {
        return;
    }

    sess = SSL_get1_session(c->ssl->connection);
    if (sess == NULL) {
        return;
    }

    if (!SSL_SESSION_is_resumable(sess)) {
        SSL_SESSION_free(sess);
        return;
    }

    e = ngx_http_tent_fetch_session(f, 1);
    if (e == NULL) {
        SSL_SESSION_free(sess);
        return;
    }

    if (e->session) {
        SSL_SESSION_free(e->session);
    }

    e->session = sess;
}


static void
ngx_http_tent_ssl_sessions_cleanup(void *data)
{
    ngx_http_tent_ssl_sessions_t *ss = data;

    ngx_uint_t  i;

    for (i = 0; i < NGX_HTTP_TENT_SSL_SESSIONS; i++) {
        if (ss->entries[i].session) {
            SSL_SESSION_free(ss->entries[i].session);
            ss->entries[i].session = NULL;
        }
    }
}

#endif


static void
ngx_http_tent_fetch_send(ngx_event_t *ev)
{
    ssize_t                      n;
    ngx_connection_t            *c;
    ngx_http_tent_fetch_t       *f;
    ngx_http_tent_fetch_full_t  *ff;

    c = ev->data;
    f = c->data;
    ff = ngx_http_tent_fetch_full(f);

    while (ff->out.pos < ff->out.last) {
        n = c->send(c, ff->out.pos, ff->out.last - ff->out.pos);

        if (n == NGX_AGAIN) {
            if (ngx_handle_write_event(c->write, 0) != NGX_OK) {
                ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_CONNECT);
            }

            return;
        }

        if (n <= 0) {
            ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_CONNECT);
            return;
        }

        ff->out.pos += n;
    }

    c->write->handler = ngx_http_tent_fetch_send;    /* nothing left */

    if (ff->sent) {
        return;
    }

    ff->sent = 1;

    ngx_http_tent_fetch_recv(c->read);
}


static void
ngx_http_tent_fetch_recv(ngx_event_t *ev)
{
    size_t                       size, limit;
    ssize_t                      n;
    u_char                      *p;
    ngx_int_t                    rc;
    ngx_connection_t            *c;
    ngx_http_tent_fetch_t       *f;
    ngx_http_tent_fetch_full_t  *ff;

    c = ev->data;
    f = c->data;
    ff = ngx_http_tent_fetch_full(f);

    if (!ff->sent) {
        return;
    }

    limit = NGX_HTTP_TENT_FETCH_HEADER_MAX + f->max_response + 4096;

    for ( ;; ) {

        if (ff->in.last == ff->in.end) {

            /* grow; offsets, not pointers, survive this */

            size = ff->in.end - ff->in.start;
            size = size ? 2 * size : 4096;

            if (size > limit) {
                size = limit;
            }

            if ((size_t) (ff->in.end - ff->in.start) >= size) {
                ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_TOO_BIG);
                return;
            }

            p = ngx_pnalloc(ff->pool, size);
            if (p == NULL) {
                ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_ERROR);
                return;
            }

            if (ff->in.start == NULL) {
                /* the first buffer: nothing to carry over */
                ff->in.pos = p;
                ff->in.last = p;

            } else {
                ff->in.pos = p + (ff->in.pos - ff->in.start);
                ff->in.last = ngx_cpymem(p, ff->in.start,
                                         ff->in.last - ff->in.start);
            }

            ff->in.start = p;
            ff->in.end = p + size;
        }

        n = c->recv(c, ff->in.last, ff->in.end - ff->in.last);

        if (n == NGX_AGAIN) {
            if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
                ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_CONNECT);
            }

            return;
        }

        if (n == NGX_ERROR) {
            rc = ff->in.last > ff->in.start
                 ? ngx_http_tent_fetch_parse(f, 1) : NGX_ERROR;

            if (rc == NGX_OK) {
                break;
            }

            ngx_http_tent_fetch_finish(f, ff->in.last > ff->in.start
                                          ? NGX_HTTP_TENT_FETCH_INVALID
                                          : NGX_HTTP_TENT_FETCH_CONNECT);
            return;
        }

        if (n > 0) {
            ff->in.last += n;
        }

        rc = ngx_http_tent_fetch_parse(f, n == 0);

        if (rc == NGX_OK) {
            break;
        }

        if (rc == NGX_AGAIN && n > 0) {
            continue;
        }

        ngx_http_tent_fetch_finish(f, rc == NGX_DECLINED
                                      ? NGX_HTTP_TENT_FETCH_TOO_BIG
                                      : NGX_HTTP_TENT_FETCH_INVALID);
        return;
    }

    /* a whole response */

    if (f->status >= 300 && f->status < 400 && f->status != 304
        && f->redirects)
    {
        rc = ngx_http_tent_fetch_redirect(f);

        if (rc == NGX_OK) {
            return;
        }
    }

    ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_OK);
}


/*
 * NGX_OK: the response is complete; NGX_AGAIN: more bytes are needed;
 * NGX_DECLINED: over a size limit; NGX_ERROR: not HTTP.  The status line
 * and headers are parsed again from the start until they are complete,
 * so no parser pointer outlives a buffer that grows.
 */

static ngx_int_t
ngx_http_tent_fetch_parse(ngx_http_tent_fetch_t *f, ngx_uint_t eof)
{
    off_t                        have;
    ngx_int_t                    rc;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    if (!ff->header_done) {
        rc = ngx_http_tent_fetch_headers(f, eof);

        if (rc == NGX_AGAIN) {
            if (ff->in.last - ff->in.start >= NGX_HTTP_TENT_FETCH_HEADER_MAX) {
                return NGX_DECLINED;
            }

            return eof ? NGX_ERROR : NGX_AGAIN;
        }

        if (rc != NGX_OK) {
            return rc;
        }

        if (ff->content_length > (off_t) f->max_response) {
            return NGX_DECLINED;
        }
    }

    if (ff->no_body) {
        return NGX_OK;
    }

    if (ff->chunked) {
        rc = ngx_http_tent_fetch_chunked(f);

        if (rc == NGX_AGAIN && eof) {
            return NGX_ERROR;
        }

        return rc;
    }

    have = ff->in.last - (ff->in.start + ff->body_offset);

    /*
     * With a Content-Length (checked against the limit above) bytes after
     * the body are not the body: whether they came in the same read must
     * not make the answer "too large"
     */

    if (ff->content_length >= 0) {
        if (have < ff->content_length) {
            return eof ? NGX_ERROR : NGX_AGAIN;
        }

        have = ff->content_length;

    } else if (have > (off_t) f->max_response) {
        return NGX_DECLINED;

    } else if (!eof) {
        return NGX_AGAIN;
    }

    f->body.data = ff->in.start + ff->body_offset;
    f->body.len = (size_t) have;

    return NGX_OK;
}


/*
 * Whether a whole header block (up to its empty line) is there after the
 * 1xx blocks already skipped.  Until it is, the block is not parsed: a
 * server that sends its headers a few bytes at a time would otherwise
 * have them parsed, and copied into the pool, once per read: the square
 * of their size in time and memory (1.7 GB for 16 KB sent byte by byte).
 * The bytes are looked at once; a block must start as a status line does.
 */

static ngx_int_t
ngx_http_tent_fetch_block(ngx_http_tent_fetch_t *f)
{
    u_char                      *p, *last, *start;
    size_t                       n;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    start = ff->in.start + ff->interim;
    last = ff->in.last;

    n = ngx_min((size_t) (last - start), sizeof("HTTP/") - 1);

    if (ngx_strncmp(start, "HTTP/", n) != 0) {
        return NGX_ERROR;
    }

    p = ff->in.start + ngx_max(ff->interim, ff->scanned);

    for ( /* void */ ; p < last; p++) {
        if (*p == LF
            && ((p + 1 < last && p[1] == LF)
                || (p + 2 < last && p[1] == CR && p[2] == LF)))
        {
            return NGX_OK;
        }
    }

    /* the last two bytes may begin the empty line */

    n = last - ff->in.start;
    ff->scanned = n > 2 ? n - 2 : 0;

    return NGX_AGAIN;
}


static ngx_int_t
ngx_http_tent_fetch_headers(ngx_http_tent_fetch_t *f, ngx_uint_t eof)
{
    ngx_int_t                    rc;
    ngx_buf_t                    b;
    ngx_table_elt_t             *h;
    ngx_http_status_t            status;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    if (ff->in.start == NULL) {
        return NGX_AGAIN;
    }

    if (!eof) {
        rc = ngx_http_tent_fetch_block(f);

        if (rc != NGX_OK) {
            return rc;
        }
    }

    ngx_memzero(&b, sizeof(ngx_buf_t));
    b.start = ff->in.start;
    b.pos = ff->in.start + ff->interim;
    b.last = ff->in.last;
    b.end = ff->in.end;

again:

    ngx_memzero(ff->hr, sizeof(ngx_http_request_t));
    ff->hr->connection = ff->peer.connection;

    ngx_memzero(&status, sizeof(ngx_http_status_t));

    rc = ngx_http_parse_status_line(ff->hr, &b, &status);

    if (rc != NGX_OK) {
        return rc == NGX_AGAIN ? NGX_AGAIN : NGX_ERROR;
    }

    /* nginx's parser takes any three digits: "000" is not a status */

    if (status.code < 100) {
        return NGX_ERROR;
    }

    f->status = status.code;
    ff->content_length = -1;
    ff->chunked = 0;

    if (ngx_array_init(&f->headers, ff->pool, 8, sizeof(ngx_table_elt_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    for ( ;; ) {
        ff->hr->state = 0;
        ff->hr->invalid_header = 0;

        rc = ngx_http_parse_header_line(ff->hr, &b, 1);

        if (rc == NGX_AGAIN) {
            f->headers.nelts = 0;
            return NGX_AGAIN;
        }

        if (rc == NGX_HTTP_PARSE_HEADER_DONE) {
            break;
        }

        if (rc != NGX_OK || ff->hr->invalid_header) {
            return NGX_ERROR;
        }

        h = ngx_array_push(&f->headers);
        if (h == NULL) {
            return NGX_ERROR;
        }

        h->hash = 1;
        h->key.len = ff->hr->header_name_end - ff->hr->header_name_start;
        h->value.len = ff->hr->header_end - ff->hr->header_start;

        h->key.data = ngx_pnalloc(ff->pool, 2 * h->key.len + h->value.len + 1);
        if (h->key.data == NULL) {
            return NGX_ERROR;
        }

        h->lowcase_key = h->key.data + h->key.len;
        h->value.data = h->lowcase_key + h->key.len;

        ngx_memcpy(h->key.data, ff->hr->header_name_start, h->key.len);
        ngx_strlow(h->lowcase_key, h->key.data, h->key.len);
        ngx_memcpy(h->value.data, ff->hr->header_start, h->value.len);
        h->value.data[h->value.len] = '\0';

        if (h->key.len == sizeof("content-length") - 1
            && ngx_strncmp(h->lowcase_key, "content-length", h->key.len) == 0)
        {
            ff->content_length = ngx_atoof(h->value.data, h->value.len);
            if (ff->content_length == NGX_ERROR) {
                return NGX_ERROR;
            }

        } else if (h->key.len == sizeof("transfer-encoding") - 1
                   && ngx_strncmp(h->lowcase_key, "transfer-encoding",
                                  h->key.len)
                      == 0)
        {
            if (ngx_strlcasestrn(h->value.data,
                                 h->value.data + h->value.len,
                                 (u_char *) "chunked", 7 - 1)
                == NULL)
            {
                return NGX_ERROR;
            }

            ff->chunked = 1;
        }
    }

    if (ff->chunked) {
        ff->content_length = -1;
    }

    /* "100 Continue", "103 Early Hints": the answer comes after them */

    if (f->status < 200) {
        ff->interim = b.pos - ff->in.start;
        goto again;
    }

    ff->header_done = 1;
    ff->body_offset = b.pos - ff->in.start;
    ff->chunk_offset = ff->body_offset;

    ff->no_body = (f->method.len == 4
                   && ngx_strncmp(f->method.data, "HEAD", 4) == 0)
                  || f->status == 204 || f->status == 304;

    return NGX_OK;
}


/*
 * Chunked bodies are decoded into a buffer of their own, from where the
 * parser stopped last time; the parser's state holds no pointers.
 */

static ngx_int_t
ngx_http_tent_fetch_chunked(ngx_http_tent_fetch_t *f)
{
    off_t                        size;
    ngx_int_t                    rc;
    ngx_buf_t                    b;
    u_char                      *p;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    ngx_memzero(&b, sizeof(ngx_buf_t));
    b.start = ff->in.start;
    b.pos = ff->in.start + ff->chunk_offset;
    b.last = ff->in.last;
    b.end = ff->in.end;

    for ( ;; ) {
        rc = ngx_http_parse_chunked(ff->hr, &b, &ff->chunked_state);

        if (rc == NGX_OK) {
            size = ngx_min(ff->chunked_state.size, b.last - b.pos);

            if (f->body.len + size > f->max_response) {
                return NGX_DECLINED;
            }

            if (f->body.data == NULL) {
                f->body.data = ngx_pnalloc(ff->pool, f->max_response + 1);
                if (f->body.data == NULL) {
                    return NGX_ERROR;
                }
            }

            p = f->body.data + f->body.len;
            ngx_memcpy(p, b.pos, (size_t) size);

            f->body.len += size;
            b.pos += size;
            ff->chunked_state.size -= size;

            continue;
        }

        ff->chunk_offset = b.pos - ff->in.start;

        if (rc == NGX_DONE) {
            if (f->body.data == NULL) {
                ngx_str_set(&f->body, "");
            }

            return NGX_OK;
        }

        return rc == NGX_AGAIN ? NGX_AGAIN : NGX_ERROR;
    }
}


/* follow a redirect as a new hop: the guard checks it again */

static ngx_int_t
ngx_http_tent_fetch_redirect(ngx_http_tent_fetch_t *f)
{
    u_char                      *p;
    size_t                       len;
    ngx_str_t                   *location, url;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    location = ngx_http_tent_fetch_header(f, "location");
    if (location == NULL || location->len == 0) {
        return NGX_DECLINED;
    }

    if (location->data[0] == '/' && (location->len == 1
                                     || location->data[1] != '/'))
    {
        /* relative to this origin */

        len = (ff->ssl ? 8 : 7) + ff->host.len + sizeof(":65535") - 1
              + location->len;

        url.data = ngx_pnalloc(ff->pool, len);
        if (url.data == NULL) {
            return NGX_ERROR;
        }

        p = ngx_sprintf(url.data, "%s%V", ff->ssl ? "https://" : "http://",
                        &ff->host);

        if (ff->explicit_port) {
            p = ngx_sprintf(p, ":%ui", ff->port);
        }

        p = ngx_cpymem(p, location->data, location->len);
        url.len = p - url.data;

    } else if ((location->len > 7
                && ngx_strncasecmp(location->data, (u_char *) "http://", 7)
                   == 0)
               || (location->len > 8
                   && ngx_strncasecmp(location->data,
                                      (u_char *) "https://", 8)
                      == 0))
    {
        url = *location;

    } else {
        return NGX_DECLINED;
    }

    f->redirects--;

    if (f->status == 303) {
        ngx_str_set(&f->method, "GET");
        f->request_body.len = 0;
    }

    ngx_http_tent_fetch_close(f);

    f->url = url;
    ff->header_done = 0;
    ff->interim = 0;
    ff->scanned = 0;
    ff->sent = 0;
    f->status = 0;
    f->body.data = NULL;
    f->body.len = 0;
    f->headers.nelts = 0;
    ngx_memzero(&ff->chunked_state, sizeof(ngx_http_chunked_t));
    ngx_memzero(&ff->in, sizeof(ngx_buf_t));

    ngx_http_tent_fetch_hop(f);

    return NGX_OK;
}


/* the request bytes; MAC-signed when the fetch has a credential */

static ngx_int_t
ngx_http_tent_fetch_build(ngx_http_tent_fetch_t *f)
{
    size_t                       len;
    u_char                      *p, port[NGX_INT_T_LEN];
    ngx_str_t                    auth;
    ngx_http_tent_mac_request_t  req;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    ff->cname = ngx_pnalloc(ff->pool, ff->name.len + 1);
    if (ff->cname == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(ff->cname, ff->name.data, ff->name.len);
    ff->cname[ff->name.len] = '\0';

    len = f->method.len + 1 + ff->uri.len + sizeof(" HTTP/1.1\r\n") - 1
          + sizeof("Host: :65535\r\n") - 1 + ff->host.len
          + sizeof("User-Agent: ngx_http_tent_module\r\n") - 1
          + sizeof("Connection: close\r\n") - 1
          + sizeof("Accept: \r\n") - 1 + f->accept.len
          + sizeof("\r\n") - 1;

    if (f->request_body.len || f->content_type.len) {
        len += sizeof("Content-Type: \r\n") - 1 + f->content_type.len
               + sizeof("Content-Length: \r\n") - 1 + NGX_SIZE_T_LEN
               + f->request_body.len;
    }

    if (f->mac_id.len) {
        ngx_memzero(&req, sizeof(ngx_http_tent_mac_request_t));

        if (ngx_http_tent_random_id(ff->pool, NULL, 9, &req.nonce) != NGX_OK) {
            return NGX_ERROR;
        }

        req.ts.data = ngx_pnalloc(ff->pool, NGX_TIME_T_LEN);
        if (req.ts.data == NULL) {
            return NGX_ERROR;
        }

        req.ts.len = ngx_sprintf(req.ts.data, "%T", ngx_time())
                     - req.ts.data;

        /* the port is signed even when the Host header leaves it out */

        req.port.data = port;
        req.port.len = ngx_sprintf(port, "%ui", ff->port) - port;

        req.method = f->method;
        req.uri = ff->uri;
        req.host = ff->name;

        if (ngx_http_tent_mac_sign(ff->pool, &f->mac_algorithm, &f->mac_key,
                                   &f->mac_id, &req, &auth)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        len += sizeof("Authorization: \r\n") - 1 + auth.len;
    }

    p = ngx_pnalloc(ff->pool, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ff->out.start = p;
    ff->out.pos = p;

    p = ngx_sprintf(p, "%V %V HTTP/1.1\r\nHost: %V", &f->method, &ff->uri,
                    &ff->host);

    if (ff->explicit_port) {
        p = ngx_sprintf(p, ":%ui", ff->port);
    }

    p = ngx_sprintf(p, "\r\nUser-Agent: ngx_http_tent_module\r\n"
                    "Connection: close\r\nAccept: %V\r\n", &f->accept);

    if (f->mac_id.len) {
        p = ngx_sprintf(p, "Authorization: %V\r\n", &auth);
    }

    if (f->request_body.len || f->content_type.len) {
        p = ngx_sprintf(p, "Content-Type: %V\r\nContent-Length: %uz\r\n",
                        &f->content_type, f->request_body.len);
    }

    p = ngx_cpymem(p, "\r\n", 2);

    if (f->request_body.len) {
        p = ngx_cpymem(p, f->request_body.data, f->request_body.len);
    }

    ff->out.last = p;
    ff->out.end = p;

    return NGX_OK;
}


static void
ngx_http_tent_fetch_timeout(ngx_event_t *ev)
{
    ngx_http_tent_fetch_t *f = ev->data;

    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    ngx_log_error(NGX_LOG_INFO, ff->log, NGX_ETIMEDOUT,
                  "tent: outbound request to \"%V\" timed out%s", &f->url,
                  ff->cut ? " (the operation's deadline)" : "");

    ngx_http_tent_fetch_finish(f, ff->cut ? NGX_HTTP_TENT_FETCH_DEADLINE
                                         : NGX_HTTP_TENT_FETCH_TIMEOUT);
}


static void
ngx_http_tent_fetch_close(ngx_http_tent_fetch_t *f)
{
    ngx_connection_t            *c;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    if (ff->timer.timer_set) {
        ngx_del_timer(&ff->timer);
    }

    if (ff->resolving) {
        ngx_http_tent_resolve_cancel(ff->resolving);
        ff->resolving = NULL;
    }

    c = ff->peer.connection;

    if (c == NULL) {
        return;
    }

    ff->peer.connection = NULL;

#if (NGX_HTTP_SSL)
    if (c->ssl) {
        ngx_http_tent_fetch_save_session(f, c);

        c->ssl->no_wait_shutdown = 1;
        c->ssl->no_send_shutdown = 1;
        (void) ngx_ssl_shutdown(c);
    }
#endif

    ngx_close_connection(c);
}


/* the outcome is known: release everything, call back from the loop */

static void
ngx_http_tent_fetch_finish(ngx_http_tent_fetch_t *f, ngx_uint_t result)
{
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    if (ff->finished) {
        return;
    }

    ff->finished = 1;
    f->result = result;

    ngx_http_tent_fetch_close(f);

    if (ff->counted) {
        ff->counted = 0;
        ff->mcf->fetches--;
        ff->mcf->anonymous -= ff->anonymous;
    }

    if (result != NGX_HTTP_TENT_FETCH_OK) {
        f->status = 0;
    }

    if (f->handler) {
        ngx_post_event(&ff->done, &ngx_posted_events);
    }
}


static void
ngx_http_tent_fetch_done_event(ngx_event_t *ev)
{
    ngx_http_tent_fetch_t *f = ev->data;

    if (f->handler) {
        f->handler(f);
    }
}


/*
 * A fetch for a client request: the request waits (its count holds it),
 * and "done" returns what the request is finalized with.  If the request
 * goes first (terminated, its pool freed), the fetch is aborted.
 */

ngx_int_t
ngx_http_tent_fetch_request(ngx_http_request_t *r, ngx_http_tent_fetch_t *f,
    ngx_http_tent_fetch_done_pt done)
{
    ngx_pool_cleanup_t          *cln;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /*
     * All the fetches of one client request share one deadline, from the
     * first, and the budget of its kind
     */

    ctx = ngx_http_tent_get_ctx(r);

    if (ctx) {
        if (!ctx->has_deadline) {
            ctx->deadline = ngx_current_msec + ff->conf->deadline;
            ctx->has_deadline = 1;
        }

        f->deadline = ctx->deadline;
        f->has_deadline = 1;
        ff->anonymous = ctx->anonymous;
    }

    ff->request = r;
    ff->request_done = done;
    f->handler = ngx_http_tent_fetch_request_done;

    if (ngx_http_tent_fetch_start(f) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    cln->handler = ngx_http_tent_fetch_request_cleanup;
    cln->data = f;

    r->main->count++;

    return NGX_DONE;
}


static void
ngx_http_tent_fetch_request_cleanup(void *data)
{
    ngx_http_tent_fetch_t *f = data;

    ngx_http_tent_fetch_abort(f);
}


static void
ngx_http_tent_fetch_request_done(ngx_http_tent_fetch_t *f)
{
    ngx_int_t                    rc;
    ngx_connection_t            *c;
    ngx_http_request_t          *r;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    r = ff->request;
    c = r->connection;

    rc = ff->request_done(r, f);

    ngx_http_finalize_request(r, rc);
    ngx_http_run_posted_requests(c);
}
