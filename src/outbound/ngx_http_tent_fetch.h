
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_FETCH_H_INCLUDED_
#define _NGX_HTTP_TENT_FETCH_H_INCLUDED_


/*
 * The outbound HTTP client, on nginx's events: one request, its
 * redirects, TLS, a deadline, the SSRF guard on every address.
 */


#include "ngx_http_tent_base.h"

#include <openssl/evp.h>


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
#define NGX_HTTP_TENT_FETCH_ENTITY_BUSY  12  /* the tenant's share */
#define NGX_HTTP_TENT_FETCH_HOST_BUSY    13  /* the remote host's */
#define NGX_HTTP_TENT_FETCH_BLOCKED      14  /* the operator blocked it */

/* no slot for it, in the worker or in one of its shares */
#define ngx_http_tent_fetch_busy(f)                                           \
    ((f)->result == NGX_HTTP_TENT_FETCH_BUSY                                  \
     || (f)->result == NGX_HTTP_TENT_FETCH_ENTITY_BUSY                        \
     || (f)->result == NGX_HTTP_TENT_FETCH_HOST_BUSY)

/* a worker's shares of its slots (ngx_http_tent_fetch_share.c) */
#define NGX_HTTP_TENT_SHARE_ENTITY       0   /* fetches for a tenant */
#define NGX_HTTP_TENT_SHARE_HOST         1   /* fetches to a host */
#define NGX_HTTP_TENT_SHARE_ANONYMOUS    2   /* unsigned requests naming it */
#define NGX_HTTP_TENT_SHARES             3


typedef struct ngx_http_tent_fetch_s     ngx_http_tent_fetch_t;

typedef void (*ngx_http_tent_fetch_pt)(ngx_http_tent_fetch_t *f);
typedef ngx_int_t (*ngx_http_tent_fetch_done_pt)(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f);


/*
 * One outbound HTTP request.  Callers fill in the request and read the
 * outcome; the connection, the buffers and the parsers' state are the
 * fetch files' own (ngx_http_tent_fetch_private.h).
 */

struct ngx_http_tent_fetch_s {
    /* the request */
    ngx_str_t                       method;
    ngx_str_t                       url;         /* the last hop's */
    ngx_str_t                       accept;
    ngx_str_t                       content_type;
    ngx_str_t                       request_body;
    ngx_str_t                       mac_id;      /* signs when set */
    ngx_str_t                       mac_key;
    ngx_str_t                       mac_algorithm;
    EVP_PKEY                       *sign_key;    /* cavage when set */
    ngx_str_t                       sign_key_id;
    ngx_uint_t                      redirects;   /* how many to follow */
    size_t                          max_response;
    ngx_msec_t                      deadline;    /* of the operation */
    ngx_http_tent_fetch_pt          handler;
    void                           *data;
    unsigned                        resend:1;    /* may be sent twice */

    /* the outcome */
    ngx_uint_t                      result;
    ngx_uint_t                      status;
    ngx_array_t                     headers;     /* ngx_table_elt_t */
    ngx_str_t                       body;
    unsigned                        has_deadline:1;
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
void ngx_http_tent_fetch_release(ngx_http_tent_fetch_t *f);

/* ngx_http_tent_fetch_share.c */
ngx_int_t ngx_http_tent_share_take(ngx_uint_t share, ngx_str_t *name,
    ngx_uint_t max, void **held);
void ngx_http_tent_share_give(void *held);
ngx_int_t ngx_http_tent_share_host(ngx_pool_t *pool, ngx_str_t *url,
    ngx_str_t *host);


/*
 * The operator's blocked domains, as this worker holds them
 * (ngx_http_tent_fetch_domains.c): every hop's host is matched.
 */
#define NGX_HTTP_TENT_DOMAINS_MAX        1024

ngx_int_t ngx_http_tent_domain_normalize(ngx_pool_t *pool, ngx_str_t *in,
    ngx_str_t *out);
void ngx_http_tent_domains_exit(void);
void ngx_http_tent_domains_set(ngx_pool_t *pool, ngx_array_t *domains,
    ngx_atomic_uint_t generation);
ngx_int_t ngx_http_tent_domains_held_at(ngx_atomic_uint_t *generation);
ngx_str_t *ngx_http_tent_domains_list(ngx_uint_t *n);
ngx_uint_t ngx_http_tent_domain_blocked(ngx_str_t *host);
ngx_uint_t ngx_http_tent_domain_blocked_url(ngx_str_t *url);


#endif /* _NGX_HTTP_TENT_FETCH_H_INCLUDED_ */
