
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_CACHE_H_INCLUDED_
#define _NGX_HTTP_TENT_CACHE_H_INCLUDED_


/*
 * Anonymous replies kept per worker, by what they depend on.
 */


#include "ngx_http_tent_base.h"


/* ngx_http_tent_cache.c: anonymous replies, by what they depend on */
typedef struct {
    ngx_str_t                       key;
    ngx_atomic_uint_t               generation;
    ngx_str_t                       body;
    ngx_str_t                       extra;       /* the route's own */
} ngx_http_tent_cached_t;

ngx_int_t ngx_http_tent_cache_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *what, ngx_http_tent_cached_t *c);
void ngx_http_tent_cache_put(ngx_http_request_t *r, ngx_http_tent_cached_t *c);
void ngx_http_tent_cache_exit(ngx_http_tent_main_conf_t *mcf);


#endif /* _NGX_HTTP_TENT_CACHE_H_INCLUDED_ */
