
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_PROFILE_PRIVATE_H_INCLUDED_
#define _NGX_HTTP_TENT_PROFILE_PRIVATE_H_INCLUDED_


#if !(NGX_HTTP_TENT_PROFILE_PRIVATE)
#error "only the profile files include ngx_http_tent_profile_private.h"
#endif


/*
 * What the profile's reads (ngx_http_tent_profile.c) and writes
 * (ngx_http_tent_profile_write.c) share and no other file needs.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_cache.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_PROFILE_SECTIONS  1024


typedef struct {
    ngx_str_t                       type;       /* from the URL, decoded */
    ngx_str_t                       base;
    ngx_int_t                       version;    /* ?version=, or -1 */
    ngx_uint_t                      one;        /* GET /profile/:type */
    json_t                         *record;
    ngx_str_t                       raw;
    ngx_http_tent_cached_t          cached;
    ngx_uint_t                      cache;
    void                           *person;     /* our Update(Person) */
} ngx_http_tent_profile_t;


ngx_int_t ngx_http_tent_is_core(ngx_str_t *base);
ngx_http_tent_profile_t *ngx_http_tent_profile_state(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_profile_type(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_profile_t *pr);
json_t *ngx_http_tent_profile_core(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *old, json_t *content);
ngx_int_t ngx_http_tent_profile_history(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_request_done_pt next);
ngx_int_t ngx_http_tent_profile_scan(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


#endif /* _NGX_HTTP_TENT_PROFILE_PRIVATE_H_INCLUDED_ */
