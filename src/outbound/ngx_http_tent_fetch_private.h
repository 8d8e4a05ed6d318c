
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_FETCH_PRIVATE_H_INCLUDED_
#define _NGX_HTTP_TENT_FETCH_PRIVATE_H_INCLUDED_


/*
 * A fetch's inside: its connection, buffers, the fake request nginx's
 * parsers need, the resolution under way and its flags.  Only the fetch
 * files define NGX_HTTP_TENT_FETCH_PRIVATE and include this; any other
 * file that does fails to compile.
 */


#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_resolver.h"


#if !(NGX_HTTP_TENT_FETCH_PRIVATE)
#error "only the fetch files include ngx_http_tent_fetch_private.h"
#endif


/* a fetch as the fetch files see it: the caller's part first */
typedef struct {
    ngx_http_tent_fetch_t           f;

    ngx_pool_t                     *pool;
    ngx_log_t                      *log;
    ngx_http_tent_outbound_conf_t  *conf;
    ngx_http_tent_main_conf_t      *mcf;
    ngx_http_request_t             *request;
    ngx_http_tent_fetch_done_pt     request_done;
    ngx_str_t                       host;        /* as in the URL */
    ngx_str_t                       name;        /* without brackets */
    u_char                         *cname;
    ngx_uint_t                      port;
    ngx_str_t                       uri;
    ngx_http_tent_resolve_t        *resolving;
    void                           *entity_share; /* held, or NULL */
    void                           *host_share;
    ngx_addr_t                     *addrs;
    ngx_uint_t                      naddrs;
    ngx_uint_t                      next_addr;
    ngx_peer_connection_t           peer;
    ngx_buf_t                       out;
    ngx_buf_t                       in;
    ngx_http_request_t             *hr;          /* for nginx's parsers */
    off_t                           content_length;
    size_t                          interim;     /* 1xx blocks skipped */
    size_t                          scanned;     /* no header end before */
    size_t                          body_offset;
    size_t                          chunk_offset;
    ngx_http_chunked_t              chunked_state;
    ngx_event_t                     timer;
    ngx_event_t                     done;
    unsigned                        ssl:1;
    unsigned                        tls_verified:1;
    unsigned                        explicit_port:1;
    unsigned                        started:1;
    unsigned                        counted:1;
    unsigned                        finished:1;
    unsigned                        sent:1;
    unsigned                        header_done:1;
    unsigned                        chunked:1;
    unsigned                        no_body:1;
    unsigned                        anonymous:1; /* its own budget */
    unsigned                        cut:1;       /* hop cut by deadline */
    unsigned                        http11:1;    /* the answer's version */
    unsigned                        conn_close:1; /* Connection: close */
    unsigned                        keepalive:1; /* may be parked */
    unsigned                        reused:1;    /* an idle connection */
    unsigned                        retried:1;   /* resent once already */
} ngx_http_tent_fetch_full_t;


#define ngx_http_tent_fetch_full(f)  ((ngx_http_tent_fetch_full_t *) (f))


/* ngx_http_tent_fetch.c */
ngx_int_t ngx_http_tent_fetch_redirect(ngx_http_tent_fetch_t *f);
void ngx_http_tent_fetch_finish(ngx_http_tent_fetch_t *f, ngx_uint_t result);
void ngx_http_tent_fetch_error(ngx_http_tent_fetch_t *f, const char *step);
ngx_int_t ngx_http_tent_fetch_build(ngx_http_tent_fetch_t *f);

/* ngx_http_tent_fetch_connect.c */
void ngx_http_tent_fetch_resolved(void *data, int status,
    struct ares_addrinfo *ai);
void ngx_http_tent_fetch_connect(ngx_http_tent_fetch_t *f);
void ngx_http_tent_fetch_send(ngx_event_t *ev);
#if (NGX_HTTP_SSL)
void ngx_http_tent_fetch_save_session(ngx_http_tent_fetch_t *f,
    ngx_connection_t *c);
#endif

/* ngx_http_tent_fetch_parse.c */
void ngx_http_tent_fetch_recv(ngx_event_t *ev);

/* ngx_http_tent_fetch_idle.c */
ngx_int_t ngx_http_tent_fetch_idle_get(ngx_http_tent_fetch_t *f);
ngx_int_t ngx_http_tent_fetch_idle_put(ngx_http_tent_fetch_t *f,
    ngx_connection_t *c);
ngx_int_t ngx_http_tent_fetch_idle_resend(ngx_http_tent_fetch_t *f);
void ngx_http_tent_fetch_close_connection(ngx_connection_t *c);


#endif /* _NGX_HTTP_TENT_FETCH_PRIVATE_H_INCLUDED_ */
