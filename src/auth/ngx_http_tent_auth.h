
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_AUTH_H_INCLUDED_
#define _NGX_HTTP_TENT_AUTH_H_INCLUDED_


/*
 * Who signed a request: HTTP MAC verification, the nonce zone, scopes,
 * the per-worker credential cache and the generations that move it.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_mac.h"
#include "ngx_http_tent_shm.h"


/* ngx_http_tent_auth.c: the principal, scopes */
ngx_int_t ngx_http_tent_authenticate(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_route_pt next);
ngx_int_t ngx_http_tent_has_scopes(ngx_http_tent_ctx_t *ctx,
    ngx_uint_t scopes);
ngx_uint_t ngx_http_tent_scope_bits(json_t *list);
ngx_int_t ngx_http_tent_scope_bit(ngx_str_t *name);
ngx_int_t ngx_http_tent_type_allowed(json_t *list, ngx_str_t *type);

/*
 * ngx_http_tent_nonce.c: the zone tent_mac_nonce_cache, its data ("share",
 * the percent of it one entity may hold); the nonce cache's fill
 */
void *ngx_http_tent_nonce_zone_ctx(ngx_pool_t *pool, ngx_uint_t share);
void ngx_http_tent_nonce_zone_share(ngx_shm_zone_t *zone, ngx_uint_t share);
ngx_int_t ngx_http_tent_nonce_zone_init(ngx_shm_zone_t *zone, void *data);
void ngx_http_tent_nonce_stats(ngx_cycle_t *cycle, ngx_http_tent_stats_t *st);

/* ngx_http_tent_credentials.c: the worker's cache of credentials */
void ngx_http_tent_credential_cache_exit(ngx_http_tent_main_conf_t *mcf);


#endif /* _NGX_HTTP_TENT_AUTH_H_INCLUDED_ */
