
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Keep-alive to other servers: a worker's idle HTTP/1.1 connections,
 * kept after a whole answer that allows it and taken by the next fetch
 * to the same (scheme, host, port, address).  A fan-out to followers
 * that live on a few hosts then costs a request each, not a connection
 * (and a TLS handshake) each.
 *
 * Bounded: idle connections per host (tent_outbound_keepalive), per
 * worker (tent_outbound_keepalive_total), their idle time
 * (tent_outbound_keepalive_timeout) and the requests one connection
 * carries (tent_outbound_keepalive_requests).  A parked connection is
 * watched: the server closing it, or sending anything, closes it here.
 * The SSRF guard checked the address when the connection was made, and
 * a connection is only taken for an address the guard lets through now.
 */


#define NGX_HTTP_TENT_FETCH_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_fetch_private.h"


#define NGX_HTTP_TENT_IDLE_NAME  255


typedef struct ngx_http_tent_idle_pool_s  ngx_http_tent_idle_pool_t;


/* one parked connection and what it is for */

typedef struct {
    ngx_queue_t                     queue;
    ngx_http_tent_idle_pool_t      *pool;
    ngx_connection_t               *connection;
    ngx_uint_t                      ssl;
    ngx_uint_t                      port;
    socklen_t                       socklen;
    ngx_sockaddr_t                  sockaddr;
    size_t                          len;
    u_char                          name[NGX_HTTP_TENT_IDLE_NAME];
} ngx_http_tent_idle_t;


/* a worker's: parked connections, most recently parked first */

struct ngx_http_tent_idle_pool_s {
    ngx_queue_t                     idle;
    ngx_queue_t                     free;
};


static ngx_http_tent_idle_pool_t *ngx_http_tent_fetch_idle_pool(
    ngx_http_tent_main_conf_t *mcf);
static ngx_uint_t ngx_http_tent_fetch_idle_host(ngx_http_tent_idle_t *e,
    ngx_http_tent_fetch_full_t *ff);
static void ngx_http_tent_fetch_idle_drop(ngx_http_tent_idle_t *e);
static void ngx_http_tent_fetch_idle_handler(ngx_event_t *ev);
static void ngx_http_tent_fetch_idle_dummy(ngx_event_t *ev);


/* made on first use in the worker, from the cycle's pool */

static ngx_http_tent_idle_pool_t *
ngx_http_tent_fetch_idle_pool(ngx_http_tent_main_conf_t *mcf)
{
    ngx_uint_t                  i;
    ngx_http_tent_idle_t       *e;
    ngx_http_tent_idle_pool_t  *ip;

    if (mcf->idle) {
        return mcf->idle;
    }

    ip = ngx_palloc(ngx_cycle->pool, sizeof(ngx_http_tent_idle_pool_t));
    e = ngx_pcalloc(ngx_cycle->pool,
                    mcf->keepalive_total * sizeof(ngx_http_tent_idle_t));

    if (ip == NULL || e == NULL) {
        return NULL;
    }

    ngx_queue_init(&ip->idle);
    ngx_queue_init(&ip->free);

    for (i = 0; i < mcf->keepalive_total; i++) {
        e[i].pool = ip;
        ngx_queue_insert_tail(&ip->free, &e[i].queue);
    }

    mcf->idle = ip;

    return ip;
}


/* whether e is a connection to the fetch's scheme, host and port */

static ngx_uint_t
ngx_http_tent_fetch_idle_host(ngx_http_tent_idle_t *e,
    ngx_http_tent_fetch_full_t *ff)
{
    return e->ssl == ff->ssl && e->port == ff->port
           && e->len == ff->name.len
           && ngx_strncasecmp(e->name, ff->name.data, e->len) == 0;
}


/*
 * Whether the request may go twice: GET, HEAD, and what the caller says
 * may (a delivery: the queue is at-least-once anyway).
 */

static ngx_uint_t
ngx_http_tent_fetch_idle_resendable(ngx_http_tent_fetch_t *f)
{
    return f->resend
           || (f->method.len == 3
               && ngx_strncmp(f->method.data, "GET", 3) == 0)
           || (f->method.len == 4
               && ngx_strncmp(f->method.data, "HEAD", 4) == 0);
}


/*
 * Whether a parked connection still looks open: nothing to read, no end
 * of stream.  The idle handler closes such connections, but a FIN may
 * be waiting in this very round of the event loop, not handled yet.
 */

static ngx_uint_t
ngx_http_tent_fetch_idle_alive(ngx_connection_t *c)
{
    char     buf[1];
    ssize_t  n;

    n = recv(c->fd, buf, 1, MSG_PEEK);

    return n == -1 && ngx_socket_errno == NGX_EAGAIN;
}


/*
 * An idle connection to one of the addresses the guard let through for
 * this hop, in their order: NGX_OK, with ff->peer filled in and the
 * connection handed to the fetch; NGX_DECLINED when there is none.
 */

ngx_int_t
ngx_http_tent_fetch_idle_get(ngx_http_tent_fetch_t *f)
{
    ngx_uint_t                   i;
    ngx_addr_t                  *addr;
    ngx_queue_t                 *q;
    ngx_connection_t            *c;
    ngx_http_tent_idle_t        *e;
    ngx_http_tent_main_conf_t   *mcf;
    ngx_http_tent_idle_pool_t   *ip;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);
    mcf = ff->mcf;
    ip = mcf->idle;

    if (ip == NULL || ff->retried) {
        return NGX_DECLINED;
    }

    /*
     * A request that must not go twice (a follow, a proxied POST) gets a
     * new connection: a kept one may be closed by the server as the
     * request goes, and then nobody knows whether it was done.
     */

    if (!ngx_http_tent_fetch_idle_resendable(f)) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, ff->log, 0,
                       "tent fetch: not resendable, on a new connection");
        return NGX_DECLINED;
    }

    for (i = 0; i < ff->naddrs; i++) {
        addr = &ff->addrs[i];

    again:

        for (q = ngx_queue_head(&ip->idle);
             q != ngx_queue_sentinel(&ip->idle);
             q = ngx_queue_next(q))
        {
            e = ngx_queue_data(q, ngx_http_tent_idle_t, queue);

            if (!ngx_http_tent_fetch_idle_host(e, ff)
                || ngx_cmp_sockaddr(&e->sockaddr.sockaddr, e->socklen,
                                    addr->sockaddr, addr->socklen, 1)
                   != NGX_OK)
            {
                continue;
            }

            c = e->connection;

            if (!ngx_http_tent_fetch_idle_alive(c)) {
                ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ff->log, 0,
                               "tent fetch: idle connection to %V closed "
                               "meanwhile", &addr->name);
                ngx_http_tent_fetch_idle_drop(e);
                goto again;
            }

            ngx_queue_remove(&e->queue);
            ngx_queue_insert_head(&ip->free, &e->queue);
            e->connection = NULL;

            if (c->read->timer_set) {
                ngx_del_timer(c->read);
            }

            c->idle = 0;
            c->data = f;
            c->log = ff->log;
            c->read->log = ff->log;
            c->write->log = ff->log;
            c->pool->log = ff->log;

            ngx_memzero(&ff->peer, sizeof(ngx_peer_connection_t));
            ff->peer.sockaddr = addr->sockaddr;
            ff->peer.socklen = addr->socklen;
            ff->peer.name = &addr->name;
            ff->peer.log = ff->log;
            ff->peer.log_error = NGX_ERROR_INFO;
            ff->peer.connection = c;
            ff->next_addr = i + 1;
            ff->reused = 1;
            ff->tls_verified = ff->ssl;

            ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ff->log, 0,
                           "tent fetch: reusing the connection to %V, "
                           "%ui requests on it so far, fd:%d",
                           &addr->name, c->requests, c->fd);

            return NGX_OK;
        }
    }

    return NGX_DECLINED;
}


/*
 * After a whole answer that allows it: park the connection.  NGX_OK: it
 * is the pool's now; NGX_DECLINED: the caller closes it (keep-alive off,
 * its requests used up, the worker exiting, no room).
 */

ngx_int_t
ngx_http_tent_fetch_idle_put(ngx_http_tent_fetch_t *f, ngx_connection_t *c)
{
    ngx_uint_t                   host;
    ngx_queue_t                 *q, *oldest;
    ngx_http_tent_idle_t        *e;
    ngx_http_tent_main_conf_t   *mcf;
    ngx_http_tent_idle_pool_t   *ip;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);
    mcf = ff->mcf;

    if (mcf->keepalive == 0 || mcf->keepalive_total == 0
        || ngx_exiting || ngx_terminate || ngx_quit
        || c->requests >= mcf->keepalive_requests
        || ff->name.len > NGX_HTTP_TENT_IDLE_NAME
        || c->read->eof || c->read->error || c->write->error
        || (ff->ssl && !ff->tls_verified))
    {
        return NGX_DECLINED;
    }

#if (NGX_HTTP_SSL)
    if (c->ssl && SSL_pending(c->ssl->connection)) {
        return NGX_DECLINED;
    }
#endif

    ip = ngx_http_tent_fetch_idle_pool(mcf);
    if (ip == NULL) {
        return NGX_DECLINED;
    }

    /* the host's oldest goes when the host has its share already */

    host = 0;
    oldest = NULL;

    for (q = ngx_queue_head(&ip->idle);
         q != ngx_queue_sentinel(&ip->idle);
         q = ngx_queue_next(q))
    {
        e = ngx_queue_data(q, ngx_http_tent_idle_t, queue);

        if (ngx_http_tent_fetch_idle_host(e, ff)) {
            host++;
            oldest = q;
        }
    }

    if (host >= mcf->keepalive && oldest) {
        ngx_http_tent_fetch_idle_drop(
                             ngx_queue_data(oldest, ngx_http_tent_idle_t,
                                            queue));
    }

    /* and the worker's oldest when the worker has its share */

    if (ngx_queue_empty(&ip->free)) {
        ngx_http_tent_fetch_idle_drop(
                   ngx_queue_data(ngx_queue_last(&ip->idle),
                                  ngx_http_tent_idle_t, queue));
    }

    q = ngx_queue_head(&ip->free);
    ngx_queue_remove(q);
    ngx_queue_insert_head(&ip->idle, q);

    e = ngx_queue_data(q, ngx_http_tent_idle_t, queue);

    e->connection = c;
    e->ssl = ff->ssl;
    e->port = ff->port;
    e->len = ff->name.len;
    ngx_memcpy(e->name, ff->name.data, e->len);
    e->socklen = ff->peer.socklen;
    ngx_memcpy(&e->sockaddr, ff->peer.sockaddr, ff->peer.socklen);

    if (c->read->timer_set) {
        ngx_del_timer(c->read);
    }

    if (c->write->timer_set) {
        ngx_del_timer(c->write);
    }

    /* the fetch, its pool and its log go: nothing of theirs is kept */

    c->data = e;
    c->idle = 1;
    c->log = ngx_cycle->log;
    c->read->log = ngx_cycle->log;
    c->write->log = ngx_cycle->log;
    c->pool->log = ngx_cycle->log;
    c->read->handler = ngx_http_tent_fetch_idle_handler;
    c->write->handler = ngx_http_tent_fetch_idle_dummy;

    ngx_add_timer(c->read, mcf->keepalive_timeout);

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ff->log, 0,
                   "tent fetch: keeping the connection to %V idle, "
                   "%ui requests on it, fd:%d", ff->peer.name, c->requests,
                   c->fd);

    if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
        ngx_http_tent_fetch_idle_drop(e);
        return NGX_OK;
    }

    /* bytes that came after the answer: not a connection to keep */

    if (c->read->ready) {
        ngx_http_tent_fetch_idle_handler(c->read);
    }

    return NGX_OK;
}


static void
ngx_http_tent_fetch_idle_drop(ngx_http_tent_idle_t *e)
{
    ngx_connection_t  *c;

    c = e->connection;
    e->connection = NULL;

    ngx_queue_remove(&e->queue);
    ngx_queue_insert_head(&e->pool->free, &e->queue);

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "tent fetch: closing an idle connection, fd:%d", c->fd);

    ngx_http_tent_fetch_close_connection(c);
}


/*
 * A parked connection readable: the server closed it (or reset it), or
 * sent what nobody asked for; either way it is closed.  Also the idle
 * timer, and nginx closing idle connections when the worker exits.
 */

static void
ngx_http_tent_fetch_idle_handler(ngx_event_t *ev)
{
    char               buf[1];
    ssize_t            n;
    ngx_connection_t  *c;

    c = ev->data;

    if (c->close || ev->timedout) {
        goto close;
    }

    n = recv(c->fd, buf, 1, MSG_PEEK);

    if (n == -1 && ngx_socket_errno == NGX_EAGAIN) {
        ev->ready = 0;

        if (ngx_handle_read_event(ev, 0) != NGX_OK) {
            goto close;
        }

        return;
    }

close:

    ngx_http_tent_fetch_idle_drop(c->data);
}


static void
ngx_http_tent_fetch_idle_dummy(ngx_event_t *ev)
{
    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, ev->log, 0,
                   "tent fetch: idle connection writable");
}


/* a connection of the fetch's, with its own pool, closed */

void
ngx_http_tent_fetch_close_connection(ngx_connection_t *c)
{
    ngx_pool_t  *pool;

#if (NGX_HTTP_SSL)
    if (c->ssl) {
        c->ssl->no_wait_shutdown = 1;
        c->ssl->no_send_shutdown = 1;
        (void) ngx_ssl_shutdown(c);
    }
#endif

    pool = c->pool;

    ngx_close_connection(c);

    if (pool) {
        ngx_destroy_pool(pool);
    }
}


/*
 * A reused connection failed before any byte of the answer: the server
 * closed it while it was idle, as it may.  A request that may be sent
 * twice (GET, HEAD, a delivery) goes again, once, on a new connection,
 * signed again (a new nonce: the first one may have been seen).
 * NGX_OK: it is under way; NGX_DECLINED: the failure stands.
 */

ngx_int_t
ngx_http_tent_fetch_idle_resend(ngx_http_tent_fetch_t *f)
{
    ngx_connection_t            *c;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    if (!ff->reused || ff->retried || ff->in.last != ff->in.start) {
        return NGX_DECLINED;
    }

    if (!ngx_http_tent_fetch_idle_resendable(f)) {
        return NGX_DECLINED;
    }

    ngx_log_error(NGX_LOG_INFO, ff->log, 0,
                  "tent: reused connection to %V closed before an answer, "
                  "sending \"%V\" again on a new one", ff->peer.name,
                  &f->url);

    c = ff->peer.connection;
    ff->peer.connection = NULL;
    ff->reused = 0;
    ff->retried = 1;
    ff->keepalive = 0;

    /* the new connection's certificate is checked anew */
    ff->tls_verified = 0;

    if (c) {
        ngx_http_tent_fetch_close_connection(c);
    }

    ff->sent = 0;
    ff->scanned = 0;
    ff->interim = 0;
    ngx_memzero(&ff->in, sizeof(ngx_buf_t));

    if (ngx_http_tent_fetch_build(f) != NGX_OK) {
        ngx_http_tent_fetch_error(f, "building the request again");
        return NGX_OK;
    }

    ff->next_addr = 0;

    ngx_http_tent_fetch_connect(f);

    return NGX_OK;
}
