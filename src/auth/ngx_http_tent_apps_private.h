
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_APPS_PRIVATE_H_INCLUDED_
#define _NGX_HTTP_TENT_APPS_PRIVATE_H_INCLUDED_


#if !(NGX_HTTP_TENT_APPS_PRIVATE)
#error "only the apps files include ngx_http_tent_apps_private.h"
#endif


/*
 * What the files of the apps subsystem share and no other file needs:
 * ngx_http_tent_apps.c (the app's record, /apps/:id, GET /apps),
 * ngx_http_tent_apps_register.c (POST /apps, the unconfirmed places),
 * ngx_http_tent_authorizations.c and ngx_http_tent_oauth_exchange.c.
 * Only they include it.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_store.h"


/* what a request under /apps/:id carries from step to step */
typedef struct {
    json_t                         *app;
    json_t                         *auth;
    ngx_str_t                       app_raw;
    ngx_str_t                       auth_raw;
    ngx_str_t                       code;
} ngx_http_tent_apps_state_t;


/* which field of an app is wrong: the status and the message */
typedef struct {
    ngx_uint_t                      status;
    u_char                          text[160];
} ngx_http_tent_field_error_t;


/* ngx_http_tent_apps.c: the app's record, the rows of its keys */
ngx_str_t *ngx_http_tent_param(ngx_http_tent_ctx_t *ctx, ngx_uint_t n);
ngx_int_t ngx_http_tent_valid_id(ngx_str_t *id);
json_t *ngx_http_tent_app_view(json_t *app, ngx_uint_t secrets);
ngx_int_t ngx_http_tent_put_json(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op, ngx_str_t *entity, u_char table,
    ngx_str_t *rest, json_t *json);
ngx_int_t ngx_http_tent_credential_new(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op, ngx_str_t *entity, ngx_str_t *key_id,
    json_t *cred);
ngx_int_t ngx_http_tent_del_key(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op, ngx_str_t *entity, u_char table,
    ngx_str_t *rest);
ngx_int_t ngx_http_tent_secrets(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *body, json_t *record,
    const char *prefix, const char *id_field);

/* ngx_http_tent_apps_register.c: an app's fields, its place */
ngx_int_t ngx_http_tent_app_fields(json_t *body, ngx_uint_t create,
    ngx_http_tent_field_error_t *err);
ngx_int_t ngx_http_tent_app_dump(ngx_http_request_t *r, json_t *app,
    ngx_str_t *value, ngx_http_tent_field_error_t *err);
ngx_int_t ngx_http_tent_send_field_error(ngx_http_request_t *r,
    ngx_http_tent_field_error_t *err);
void ngx_http_tent_app_copy(json_t *app, json_t *body);

/* ngx_http_tent_authorizations.c */
json_t *ngx_http_tent_auth_credential(json_t *auth);
json_t *ngx_http_tent_auths_json(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_store_op_t *op,
    ngx_uint_t secrets);
ngx_int_t ngx_http_tent_authorization_create(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_authorization_load(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* ngx_http_tent_oauth_exchange.c */
ngx_int_t ngx_http_tent_authorization_exchange(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


#endif /* _NGX_HTTP_TENT_APPS_PRIVATE_H_INCLUDED_ */
