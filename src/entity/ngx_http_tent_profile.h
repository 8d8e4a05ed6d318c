
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_PROFILE_H_INCLUDED_
#define _NGX_HTTP_TENT_PROFILE_H_INCLUDED_


/*
 * Discovery (the Link header, the entity page) and the profile.
 */


#include "ngx_http_tent_base.h"


/* ngx_http_tent_discovery.c */
ngx_int_t ngx_http_tent_discovery_init(ngx_conf_t *cf);
ngx_int_t ngx_http_tent_add_variables(ngx_conf_t *cf);
ngx_int_t ngx_http_tent_root_handler(ngx_http_request_t *r);

/* ngx_http_tent_profile.c */
ngx_int_t ngx_http_tent_profile_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_profile_type_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_profile_change(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


#endif /* _NGX_HTTP_TENT_PROFILE_H_INCLUDED_ */
