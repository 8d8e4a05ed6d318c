
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * DNS for outbound requests: c-ares driven by nginx's event loop.  c-ares
 * tells us which sockets it wants watched (the socket state callback);
 * each gets an nginx connection whose events call ares_process_fd(), and
 * one timer follows ares_timeout().  Unlike nginx's own resolver this
 * reads /etc/hosts and resolv.conf, as every other program on the host.
 * One channel per worker, made on first use.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_resolver.h"
#include <ares.h>


struct ngx_http_tent_resolver_s {
    ares_channel                    channel;
    ngx_log_t                      *log;
    ngx_event_t                     timer;
    ngx_array_t                     conns;      /* ngx_connection_t * */
    unsigned                        exiting:1;
};


struct ngx_http_tent_resolve_s {
    ngx_http_tent_resolver_t       *resolver;
    ngx_http_tent_resolved_pt       handler;
    void                           *data;
    int                             status;
    struct ares_addrinfo           *result;
    ngx_event_t                     done;
    unsigned                        cancelled:1;
    unsigned                        answered:1;
};


static void ngx_http_tent_resolver_sock_state(void *data, ares_socket_t fd,
    int readable, int writable);
static void ngx_http_tent_resolver_io(ngx_event_t *ev);
static void ngx_http_tent_resolver_timeout(ngx_event_t *ev);
static void ngx_http_tent_resolver_arm(ngx_http_tent_resolver_t *res);
static void ngx_http_tent_resolved(void *arg, int status, int timeouts,
    struct ares_addrinfo *result);
static void ngx_http_tent_resolve_done(ngx_event_t *ev);


ngx_http_tent_resolver_t *
ngx_http_tent_resolver_create(ngx_cycle_t *cycle)
{
    int                        rc;
    struct ares_options        opts;
    ngx_http_tent_resolver_t  *res;

    rc = ares_library_init(ARES_LIB_INIT_ALL);
    if (rc != ARES_SUCCESS) {
        ngx_log_error(NGX_LOG_ALERT, cycle->log, 0,
                      "ares_library_init() failed: %s", ares_strerror(rc));
        return NULL;
    }

    res = ngx_pcalloc(cycle->pool, sizeof(ngx_http_tent_resolver_t));
    if (res == NULL) {
        return NULL;
    }

    if (ngx_array_init(&res->conns, cycle->pool, 4,
                       sizeof(ngx_connection_t *))
        != NGX_OK)
    {
        return NULL;
    }

    res->log = cycle->log;

    res->timer.handler = ngx_http_tent_resolver_timeout;
    res->timer.data = res;
    res->timer.log = cycle->log;
    res->timer.cancelable = 1;

    ngx_memzero(&opts, sizeof(struct ares_options));
    opts.sock_state_cb = ngx_http_tent_resolver_sock_state;
    opts.sock_state_cb_data = res;
    opts.timeout = 2000;
    opts.tries = 2;

    rc = ares_init_options(&res->channel, &opts,
                           ARES_OPT_SOCK_STATE_CB|ARES_OPT_TIMEOUTMS
                           |ARES_OPT_TRIES);
    if (rc != ARES_SUCCESS) {
        ngx_log_error(NGX_LOG_ALERT, cycle->log, 0,
                      "ares_init_options() failed: %s", ares_strerror(rc));
        return NULL;
    }

    return res;
}


void
ngx_http_tent_resolver_destroy(ngx_http_tent_resolver_t *res)
{
    if (res == NULL) {
        return;
    }

    /* pending queries are answered ARES_EDESTRUCTION and freed */

    res->exiting = 1;

    ares_destroy(res->channel);
    ares_library_cleanup();

    if (res->timer.timer_set) {
        ngx_del_timer(&res->timer);
    }
}


/*
 * Resolve "host" (a NUL-terminated name or address literal).  The
 * handler runs later from the event loop, never from inside this call,
 * and owns the ares_addrinfo it is given.
 */

ngx_http_tent_resolve_t *
ngx_http_tent_resolve(ngx_http_tent_resolver_t *res, u_char *host,
    ngx_http_tent_resolved_pt handler, void *data)
{
    struct in_addr              a4;
#if (NGX_HAVE_INET6)
    struct in6_addr             a6;
#endif
    struct ares_addrinfo_hints  hints;
    ngx_http_tent_resolve_t    *q;

    q = ngx_calloc(sizeof(ngx_http_tent_resolve_t), res->log);
    if (q == NULL) {
        return NULL;
    }

    q->resolver = res;
    q->handler = handler;
    q->data = data;

    q->done.handler = ngx_http_tent_resolve_done;
    q->done.data = q;
    q->done.log = res->log;

    ngx_memzero(&hints, sizeof(struct ares_addrinfo_hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;

    /*
     * An address literal is no name: c-ares 1.18 given AF_UNSPEC asks the
     * DNS servers about "127.0.0.1" before it answers, so a slow or
     * unreachable server stalled requests to literals (and told it every
     * address we were about to connect).  With the family and
     * ARES_AI_NUMERICHOST it answers at once, without a query.
     */

    if (inet_pton(AF_INET, (char *) host, &a4) == 1) {
        hints.ai_family = AF_INET;
        hints.ai_flags = ARES_AI_NUMERICHOST;

#if (NGX_HAVE_INET6)
    } else if (inet_pton(AF_INET6, (char *) host, &a6) == 1) {
        hints.ai_family = AF_INET6;
        hints.ai_flags = ARES_AI_NUMERICHOST;
#endif
    }

    ares_getaddrinfo(res->channel, (char *) host, NULL, &hints,
                     ngx_http_tent_resolved, q);

    ngx_http_tent_resolver_arm(res);

    return q;
}


/* the handler will not run; the query is freed when c-ares is done */

void
ngx_http_tent_resolve_cancel(ngx_http_tent_resolve_t *q)
{
    if (!q->answered) {
        q->cancelled = 1;
        return;
    }

    if (q->done.posted) {
        ngx_delete_posted_event(&q->done);
    }

    if (q->result) {
        ares_freeaddrinfo(q->result);
    }

    ngx_free(q);
}


const char *
ngx_http_tent_resolve_strerror(int status)
{
    return ares_strerror(status);
}


static void
ngx_http_tent_resolved(void *arg, int status, int timeouts,
    struct ares_addrinfo *result)
{
    ngx_http_tent_resolve_t *q = arg;

    if (q->cancelled || q->resolver->exiting) {
        if (result) {
            ares_freeaddrinfo(result);
        }

        ngx_free(q);
        return;
    }

    q->answered = 1;
    q->status = status;
    q->result = result;

    /* ares_getaddrinfo() may answer at once: never call back inline */

    ngx_post_event(&q->done, &ngx_posted_events);
}


static void
ngx_http_tent_resolve_done(ngx_event_t *ev)
{
    ngx_http_tent_resolve_t *q = ev->data;

    struct ares_addrinfo  *result;

    result = q->status == ARES_SUCCESS ? q->result : NULL;

    if (result == NULL && q->result) {
        ares_freeaddrinfo(q->result);
    }

    q->handler(q->data, q->status, result);

    ngx_free(q);
}


static ngx_connection_t *
ngx_http_tent_resolver_conn(ngx_http_tent_resolver_t *res, ares_socket_t fd,
    ngx_uint_t *index)
{
    ngx_uint_t          i;
    ngx_connection_t  **c;

    c = res->conns.elts;

    for (i = 0; i < res->conns.nelts; i++) {
        if (c[i]->fd == fd) {
            *index = i;
            return c[i];
        }
    }

    return NULL;
}


static void
ngx_http_tent_resolver_sock_state(void *data, ares_socket_t fd, int readable,
    int writable)
{
    ngx_http_tent_resolver_t *res = data;

    ngx_uint_t          i;
    ngx_connection_t   *c, **slot;

    c = ngx_http_tent_resolver_conn(res, fd, &i);

    if (!readable && !writable) {
        if (c == NULL) {
            return;
        }

        /* c-ares closes the socket itself, right after this */

        if (c->read->active) {
            ngx_del_event(c->read, NGX_READ_EVENT, 0);
        }

        if (c->write->active) {
            ngx_del_event(c->write, NGX_WRITE_EVENT, 0);
        }

        if (c->read->posted) {
            ngx_delete_posted_event(c->read);
        }

        if (c->write->posted) {
            ngx_delete_posted_event(c->write);
        }

        ngx_free_connection(c);
        c->fd = (ngx_socket_t) -1;

        slot = res->conns.elts;
        slot[i] = slot[res->conns.nelts - 1];
        res->conns.nelts--;

        return;
    }

    if (c == NULL) {
        c = ngx_get_connection(fd, res->log);
        if (c == NULL) {
            return;
        }

        slot = ngx_array_push(&res->conns);
        if (slot == NULL) {
            ngx_free_connection(c);
            return;
        }

        *slot = c;

        c->data = res;
        c->read->handler = ngx_http_tent_resolver_io;
        c->write->handler = ngx_http_tent_resolver_io;
        c->read->log = res->log;
        c->write->log = res->log;
    }

    /* level-triggered: c-ares reads one datagram per call */

    if (readable && !c->read->active) {
        (void) ngx_add_event(c->read, NGX_READ_EVENT, NGX_LEVEL_EVENT);

    } else if (!readable && c->read->active) {
        (void) ngx_del_event(c->read, NGX_READ_EVENT, 0);
    }

    if (writable && !c->write->active) {
        (void) ngx_add_event(c->write, NGX_WRITE_EVENT, NGX_LEVEL_EVENT);

    } else if (!writable && c->write->active) {
        (void) ngx_del_event(c->write, NGX_WRITE_EVENT, 0);
    }
}


static void
ngx_http_tent_resolver_io(ngx_event_t *ev)
{
    ngx_socket_t               fd;
    ngx_connection_t          *c;
    ngx_http_tent_resolver_t  *res;

    c = ev->data;
    res = c->data;
    fd = c->fd;

    /* c may be freed inside ares_process_fd() */

    if (ev->write) {
        ares_process_fd(res->channel, ARES_SOCKET_BAD, fd);

    } else {
        ares_process_fd(res->channel, fd, ARES_SOCKET_BAD);
    }

    ngx_http_tent_resolver_arm(res);
}


static void
ngx_http_tent_resolver_timeout(ngx_event_t *ev)
{
    ngx_http_tent_resolver_t *res = ev->data;

    ares_process_fd(res->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);

    ngx_http_tent_resolver_arm(res);
}


static void
ngx_http_tent_resolver_arm(ngx_http_tent_resolver_t *res)
{
    ngx_msec_t       ms;
    struct timeval   tv, *tvp;

    tvp = ares_timeout(res->channel, NULL, &tv);

    if (tvp == NULL) {
        if (res->timer.timer_set) {
            ngx_del_timer(&res->timer);
        }

        return;
    }

    ms = tvp->tv_sec * 1000 + tvp->tv_usec / 1000;

    ngx_add_timer(&res->timer, ms ? ms : 1);
}
