
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_DOMAINS_H_INCLUDED_
#define _NGX_HTTP_TENT_DOMAINS_H_INCLUDED_


/*
 * The operator's blocked domains (docs/blocks.md): the store's rows
 * ("0x00 'Y' <domain>"), read into each worker's list when the blocks'
 * generation moves; the operator's actions on them (tent_admin).  The
 * list and its match are the fetch's (ngx_http_tent_fetch_domains.c).
 */


#include "ngx_http_tent_base.h"


/* the worker's list made fresh for a request, then "next" */
ngx_int_t ngx_http_tent_domains_request(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_route_pt next);

/* the same without a request (the delivery engine), in the background */
ngx_int_t ngx_http_tent_domains_refresh(ngx_log_t *log);

/* an entity URL whose host the operator blocked */
ngx_uint_t ngx_http_tent_domains_entity(ngx_str_t *entity);

/* tent_admin: {"action": "block" | "unblock", "domain": D}, and the list */
ngx_int_t ngx_http_tent_domains_admin(ngx_http_request_t *r, json_t *body,
    ngx_str_t *action);
ngx_int_t ngx_http_tent_domains_admin_list(ngx_http_request_t *r);


#endif /* _NGX_HTTP_TENT_DOMAINS_H_INCLUDED_ */
