
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * A hop of the outbound client from the addresses c-ares found to the
 * request sent: each address through the SSRF guard, connected in turn
 * until one answers, TLS through nginx's OpenSSL layer (SNI, the
 * certificate checked, the worker's sessions resumed), then the request
 * bytes written.  Reading the answer is ngx_http_tent_fetch_parse.c's.
 */


#define NGX_HTTP_TENT_FETCH_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_fetch_private.h"
#include "ngx_http_tent_guard.h"
#include "ngx_http_tent_resolver.h"
#include "ngx_http_tent_shm.h"


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


static void ngx_http_tent_fetch_reuse(ngx_http_tent_fetch_t *f);
static void ngx_http_tent_fetch_connected(ngx_event_t *ev);
#if (NGX_HTTP_SSL)
static void ngx_http_tent_fetch_handshaked(ngx_connection_t *c);
static ngx_http_tent_ssl_session_t *ngx_http_tent_fetch_session(
    ngx_http_tent_fetch_t *f, ngx_uint_t create);
static void ngx_http_tent_ssl_sessions_cleanup(void *data);
#endif


/* a hop's name resolved: the addresses the guard lets through, in order */

void
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
        ngx_http_tent_fetch_error(f, "keeping the addresses");
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
            ngx_http_tent_fetch_error(f, "copying an address");
            return;
        }

        ngx_memcpy(addr->sockaddr, node->ai_addr, node->ai_addrlen);
        addr->socklen = node->ai_addrlen;
        ngx_inet_set_port(addr->sockaddr, (in_port_t) ff->port);

        addr->name.data = ngx_pnalloc(ff->pool, NGX_SOCKADDR_STRLEN);
        if (addr->name.data == NULL) {
            ares_freeaddrinfo(ai);
            ngx_http_tent_fetch_error(f, "naming an address");
            return;
        }

        addr->name.len = ngx_sock_ntop(addr->sockaddr, addr->socklen,
                                       addr->name.data, NGX_SOCKADDR_STRLEN,
                                       1);
        ff->naddrs++;
    }

    ares_freeaddrinfo(ai);

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ff->log, 0,
                   "tent fetch: \"%V\" resolved: %ui addresses, "
                   "%ui refused by the guard", &ff->name, ff->naddrs, refused);

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

    /* an idle connection to one of these addresses saves a connect */

    if (ngx_http_tent_fetch_idle_get(f) == NGX_OK) {
        ngx_http_tent_fetch_reuse(f);
        return;
    }

    ngx_http_tent_fetch_connect(f);
}


/* a connection kept from an earlier answer: the request goes at once */

static void
ngx_http_tent_fetch_reuse(ngx_http_tent_fetch_t *f)
{
    ngx_connection_t            *c;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    ngx_http_tent_count(NGX_HTTP_TENT_STAT_REUSED, 1);

    c = ff->peer.connection;
    c->requests++;
    c->read->handler = ngx_http_tent_fetch_recv;
    c->write->handler = ngx_http_tent_fetch_send;

    ngx_http_tent_fetch_send(c->write);
}


void
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

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ff->log, 0,
                       "tent fetch: connecting to %V", &addr->name);

        rc = ngx_event_connect_peer(&ff->peer);

        if (rc == NGX_ERROR || rc == NGX_BUSY || rc == NGX_DECLINED) {
            if (ff->peer.connection) {
                ngx_close_connection(ff->peer.connection);
                ff->peer.connection = NULL;
            }

            continue;
        }

        ngx_http_tent_count(NGX_HTTP_TENT_STAT_CONNECTIONS, 1);

        break;
    }

    c = ff->peer.connection;

    /*
     * A pool of the connection's own (its TLS state lives there): a
     * connection kept idle outlives the fetch and its pool
     */

    c->pool = ngx_create_pool(512, ff->log);
    if (c->pool == NULL) {
        ngx_close_connection(c);
        ff->peer.connection = NULL;
        ngx_http_tent_fetch_error(f, "creating the connection's pool");
        return;
    }

    c->data = f;
    c->requests = 1;
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
        ngx_http_tent_fetch_close_connection(c);
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

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ff->log, 0,
                   "tent fetch: TLS with \"%V\" established%s", &ff->name,
                   SSL_session_reused(c->ssl->connection)
                   ? ", session reused" : "");

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

void
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


void
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

            /* an idle connection the server closed meanwhile */

            if (ngx_http_tent_fetch_idle_resend(f) == NGX_OK) {
                return;
            }

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

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ff->log, 0,
                   "tent fetch: sent %uz bytes to %V",
                   (size_t) (ff->out.last - ff->out.start), ff->peer.name);

    ngx_http_tent_fetch_recv(c->read);
}
