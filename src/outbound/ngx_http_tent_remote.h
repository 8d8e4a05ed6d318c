
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_REMOTE_H_INCLUDED_
#define _NGX_HTTP_TENT_REMOTE_H_INCLUDED_


/*
 * Other entities: discovery (Link header, profile, servers in order)
 * and requests to their servers, signed or not, on the fetch client.
 */


#include "ngx_http_tent_fetch.h"


/* the answer when unsigned requests have used their outbound share */
#define NGX_HTTP_TENT_ANONYMOUS_BUSY                                          \
    "Too many follow requests and mentions are being checked at other "       \
    "servers; try again later"

/* ... and when those naming one host have used its share */
#define NGX_HTTP_TENT_ANONYMOUS_HOST_BUSY                                     \
    "Too many follow requests and mentions naming this host are being "     \
    "checked; try again later"


typedef struct ngx_http_tent_discover_s  ngx_http_tent_discover_t;
typedef ngx_int_t (*ngx_http_tent_discover_done_pt)(ngx_http_request_t *r,
    ngx_http_tent_discover_t *d);
typedef void (*ngx_http_tent_discovered_pt)(ngx_http_tent_discover_t *d);

struct ngx_http_tent_discover_s {
    ngx_str_t                       entity;
    ngx_uint_t                      status;      /* 0, or why it failed */
    const char                     *error;
    json_t                         *profile;
    ngx_str_t                       canonical;   /* the core "entity" */
    json_t                         *servers;
    ngx_str_t                       api_root;
    void                           *data;

    /* private */
    ngx_http_request_t             *request;     /* or NULL: no request */
    ngx_pool_t                     *pool;
    ngx_log_t                      *log;
    ngx_http_tent_outbound_conf_t  *outbound;
    ngx_http_tent_discover_done_pt  done;
    ngx_http_tent_discovered_pt     discovered;
    void                           *saved_state;
    ngx_array_t                     links;
    ngx_uint_t                      next_link;
    ngx_uint_t                      stage;
    ngx_msec_t                      deadline;
};


/* ngx_http_tent_remote.c */
ngx_http_tent_fetch_t *ngx_http_tent_remote_fetch(ngx_http_request_t *r,
    ngx_str_t *url, const char *method);
ngx_int_t ngx_http_tent_server_url(ngx_pool_t *pool, json_t *server,
    ngx_str_t *path, ngx_str_t *query, ngx_str_t *url);
ngx_int_t ngx_http_tent_remote_sign(ngx_http_tent_fetch_t *f, json_t *cred);
ngx_uint_t ngx_http_tent_remote_status(ngx_http_tent_fetch_t *f);
ngx_int_t ngx_http_tent_remote_error(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f, const char *step);
ngx_int_t ngx_http_tent_entity_valid(ngx_str_t *url);
ngx_int_t ngx_http_tent_discover(ngx_http_request_t *r, ngx_str_t *entity,
    ngx_http_tent_discover_done_pt done, void *data);
ngx_int_t ngx_http_tent_discover_start(ngx_pool_t *pool, ngx_log_t *log,
    ngx_http_tent_outbound_conf_t *outbound, ngx_str_t *entity,
    ngx_msec_t deadline, ngx_http_tent_discovered_pt discovered, void *data);
ngx_int_t ngx_http_tent_remote_anonymous(ngx_http_request_t *r,
    ngx_str_t *entity, ngx_int_t *rc);
ngx_uint_t ngx_http_tent_servers_max(json_t *servers,
    ngx_http_tent_outbound_conf_t *outbound);
json_t *ngx_http_tent_servers_cap(ngx_pool_t *pool, json_t *servers,
    ngx_http_tent_outbound_conf_t *outbound);


#endif /* _NGX_HTTP_TENT_REMOTE_H_INCLUDED_ */
