
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_FETCH_H_INCLUDED_
#define _NGX_HTTP_TENT_FETCH_H_INCLUDED_


/*
 * The outbound HTTP client, on nginx's events: one request, its
 * redirects, TLS, a deadline, the SSRF guard on every address.
 */


#include "ngx_http_tent_module.h"


/* outbound requests: results of a fetch */
#define NGX_HTTP_TENT_FETCH_OK           0
#define NGX_HTTP_TENT_FETCH_REFUSED      1
#define NGX_HTTP_TENT_FETCH_DNS          2
#define NGX_HTTP_TENT_FETCH_CONNECT      3
#define NGX_HTTP_TENT_FETCH_TIMEOUT      4
#define NGX_HTTP_TENT_FETCH_TOO_BIG      5
#define NGX_HTTP_TENT_FETCH_INVALID      6
#define NGX_HTTP_TENT_FETCH_TLS          7
#define NGX_HTTP_TENT_FETCH_BUSY         8
#define NGX_HTTP_TENT_FETCH_ERROR        9
#define NGX_HTTP_TENT_FETCH_BAD_URL      10
#define NGX_HTTP_TENT_FETCH_DEADLINE     11


typedef struct ngx_http_tent_fetch_s     ngx_http_tent_fetch_t;
typedef struct ngx_http_tent_resolve_s   ngx_http_tent_resolve_t;

typedef void (*ngx_http_tent_fetch_pt)(ngx_http_tent_fetch_t *f);
typedef ngx_int_t (*ngx_http_tent_fetch_done_pt)(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f);


/*
 * One outbound HTTP request.  Callers fill in the request and read the
 * outcome.
 */

struct ngx_http_tent_fetch_s {
    ngx_pool_t                     *pool;
    ngx_log_t                      *log;
    ngx_http_tent_outbound_conf_t  *conf;

    /* the request */
    ngx_str_t                       method;
    ngx_str_t                       url;
    ngx_str_t                       accept;
    ngx_str_t                       content_type;
    ngx_str_t                       request_body;
    ngx_str_t                       mac_id;      /* signs when set */
    ngx_str_t                       mac_key;
    ngx_str_t                       mac_algorithm;
    ngx_uint_t                      redirects;   /* how many to follow */
    size_t                          max_response;
    ngx_msec_t                      deadline;    /* of the operation */
    ngx_http_tent_fetch_pt          handler;
    void                           *data;

    /* the outcome */
    ngx_uint_t                      result;
    ngx_uint_t                      status;
    ngx_array_t                     headers;     /* ngx_table_elt_t */
    ngx_str_t                       body;
    unsigned                        has_deadline:1;

    /* private to ngx_http_tent_fetch.c */
    ngx_http_tent_main_conf_t      *mcf;
    ngx_http_request_t             *request;
    ngx_http_tent_fetch_done_pt     request_done;
    ngx_str_t                       host;        /* as in the URL */
    ngx_str_t                       name;        /* without brackets */
    u_char                         *cname;
    ngx_uint_t                      port;
    ngx_str_t                       uri;
    ngx_http_tent_resolve_t        *resolving;
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
};


/* ngx_http_tent_fetch.c */
ngx_http_tent_fetch_t *ngx_http_tent_fetch_create(ngx_pool_t *pool,
    ngx_log_t *log, ngx_http_tent_outbound_conf_t *conf);
ngx_int_t ngx_http_tent_fetch_start(ngx_http_tent_fetch_t *f);
void ngx_http_tent_fetch_abort(ngx_http_tent_fetch_t *f);
ngx_int_t ngx_http_tent_fetch_request(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f, ngx_http_tent_fetch_done_pt done);
ngx_str_t *ngx_http_tent_fetch_header(ngx_http_tent_fetch_t *f,
    const char *name);
const char *ngx_http_tent_fetch_strerror(ngx_uint_t result);
ngx_uint_t ngx_http_tent_fetch_next_server(ngx_http_tent_fetch_t *f);


#endif /* _NGX_HTTP_TENT_FETCH_H_INCLUDED_ */
