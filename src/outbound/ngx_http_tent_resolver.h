
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_RESOLVER_H_INCLUDED_
#define _NGX_HTTP_TENT_RESOLVER_H_INCLUDED_


/*
 * Names to addresses with c-ares, on nginx's event loop: the outbound
 * client's only resolver.
 */


#include "ngx_http_tent_base.h"
#include <ares.h>


typedef struct ngx_http_tent_resolve_s   ngx_http_tent_resolve_t;

typedef void (*ngx_http_tent_resolved_pt)(void *data, int status,
    struct ares_addrinfo *ai);


/* ngx_http_tent_resolver.c */
ngx_http_tent_resolver_t *ngx_http_tent_resolver_create(ngx_cycle_t *cycle);
void ngx_http_tent_resolver_destroy(ngx_http_tent_resolver_t *res);
ngx_http_tent_resolve_t *ngx_http_tent_resolve(ngx_http_tent_resolver_t *res,
    u_char *host, ngx_http_tent_resolved_pt handler, void *data);
void ngx_http_tent_resolve_cancel(ngx_http_tent_resolve_t *q);
const char *ngx_http_tent_resolve_strerror(int status);


#endif /* _NGX_HTTP_TENT_RESOLVER_H_INCLUDED_ */
