
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_APPS_H_INCLUDED_
#define _NGX_HTTP_TENT_APPS_H_INCLUDED_


/*
 * Apps, their authorizations, the OAuth page and the code exchange.
 */


#include "ngx_http_tent_store.h"


/* ngx_http_tent_apps_register.c: POST /apps */
#define NGX_HTTP_TENT_APPS_UNCONFIRMED_MAX  10000

ngx_int_t ngx_http_tent_apps_create(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_apps_owner_app(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_store_op_t *op, json_t **result,
    ngx_str_t *id, ngx_str_t *raw);

/*
 * ngx_http_tent_apps.c: GET /apps, and every route under /apps/:id (each
 * loads the app, then goes on in its file)
 */
ngx_int_t ngx_http_tent_apps_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_app_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_app_update(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_app_delete(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_authorizations_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_authorizations_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_authorization_update(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_authorization_delete(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_redirect_uri_valid(u_char *p, size_t len);

/* ngx_http_tent_authorizations.c */
ngx_int_t ngx_http_tent_authorization_new(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *app_id, json_t *app,
    ngx_str_t *app_raw, json_t *fields, ngx_http_tent_store_op_t *op,
    json_t **result);
ngx_int_t ngx_http_tent_key_created(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
ngx_int_t ngx_http_tent_authorization_quota(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *app, ngx_http_tent_route_pt next);

/* ngx_http_tent_oauth.c */
ngx_int_t ngx_http_tent_oauth_authorize(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


#endif /* _NGX_HTTP_TENT_APPS_H_INCLUDED_ */
