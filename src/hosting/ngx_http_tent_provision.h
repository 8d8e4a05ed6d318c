
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_PROVISION_H_INCLUDED_
#define _NGX_HTTP_TENT_PROVISION_H_INCLUDED_


/*
 * Provisioning (docs/admin.md): on a server with "tent_provisioning on"
 * an entity exists once the operator created it in the entity registry;
 * the operator's location (tent_admin) creates, disables, deletes them
 * and sets their quotas.
 */


#include "ngx_http_tent_base.h"


#define NGX_HTTP_TENT_QUOTA_POSTS  0
#define NGX_HTTP_TENT_QUOTA_APPS   1
#define NGX_HTTP_TENT_QUOTA_BYTES  2      /* attachment bytes uploaded */
#define NGX_HTTP_TENT_QUOTAS       3


/* an entity's quotas as its registry row sets them; -1: the server's */
typedef struct {
    int64_t                         limit[NGX_HTTP_TENT_QUOTAS];

    /* not a quota: the row's incarnation, what the store fences on */
    uint64_t                        incarnation;

    /* the counts a create read (ngx_http_tent_quota_check()), the new */
    int64_t                         count[NGX_HTTP_TENT_QUOTAS];
    ngx_uint_t                      counted;     /* 1 << what */
    ngx_uint_t                      taken;       /* 1 << what: by CAS */
    ngx_uint_t                      tries;
    ngx_uint_t                      what;
    ngx_str_t                       raw;         /* "what"'s count read */
    ngx_uint_t                      found;
    void                           *next;

    /* the bytes of attachments, taken by compare-and-set (quota.c) */
    ngx_str_t                       braw;        /* their count read */
    ngx_uint_t                      bfound;
    ngx_uint_t                      btries;
    int64_t                         bytes;       /* taken */
    unsigned                        bwritten:1;  /* the create's batch */

    /* n at once (an import: ngx_http_tent_quota_take_n()) */
    int64_t                         want;
    int64_t                         took[NGX_HTTP_TENT_QUOTAS]; /* by CAS */
    ngx_uint_t                      over;        /* 1 << what */
    unsigned                        kept:1;      /* the give-back's */
} ngx_http_tent_quotas_t;


/* ngx_http_tent_provision.c: the registry as requests see it */
ngx_int_t ngx_http_tent_provision_check(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_provision_refuse(ngx_http_request_t *r);
ngx_int_t ngx_http_tent_registry_row(ngx_str_t *value, ngx_uint_t *state,
    ngx_http_tent_quotas_t *q);
ngx_http_tent_srv_conf_t *ngx_http_tent_provision_server(
    ngx_http_tent_main_conf_t *mcf, ngx_str_t *host);
ngx_int_t ngx_http_tent_provision_served(ngx_http_tent_main_conf_t *mcf,
    ngx_str_t *entity, const char **why);

/* ngx_http_tent_quota.c: a create under the entity's quota */
ngx_int_t ngx_http_tent_quota_use_keys(ngx_pool_t *pool, ngx_str_t *entity,
    void *op);
json_t *ngx_http_tent_quota_use(void *op);
ngx_int_t ngx_http_tent_quota_check(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_uint_t what, ngx_http_tent_route_pt next);
ngx_int_t ngx_http_tent_quota_bytes(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_route_pt again, ngx_int_t *rc);
ngx_int_t ngx_http_tent_quota_refuse(ngx_http_request_t *r, ngx_uint_t what);
ngx_uint_t ngx_http_tent_quota_pending(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_uint_t what);
ngx_int_t ngx_http_tent_quota_take_n(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_uint_t what, int64_t n,
    ngx_http_tent_route_pt next);
void ngx_http_tent_quota_return(ngx_http_tent_ctx_t *ctx);
void ngx_http_tent_quota_give(ngx_str_t *entity, ngx_uint_t what,
    int64_t n);
ngx_int_t ngx_http_tent_quota_count(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, void *op);

/* ngx_http_tent_admin.c: the operator's location */
char *ngx_http_tent_admin_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_tent_admin_token_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);


#endif /* _NGX_HTTP_TENT_PROVISION_H_INCLUDED_ */
