
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_ADMIN_PRIVATE_H_INCLUDED_
#define _NGX_HTTP_TENT_ADMIN_PRIVATE_H_INCLUDED_


/*
 * What ngx_http_tent_admin.c (the operator's location: the token, the
 * request's body, the list, a create) and ngx_http_tent_admin_write.c
 * (the actions on a registry row read: disable, enable, quotas, a
 * delete's batches, the owner authorization, an owner credential)
 * share; only they include
 * it.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_store.h"


/* an operator's request */
typedef struct {
    json_t                         *body;
    ngx_str_t                       entity;
    ngx_str_t                       key;
    ngx_str_t                       action;
    json_t                         *row;
    ngx_uint_t                      deleted;
    ngx_str_t                       app;
    ngx_str_t                       app_key;
    json_t                         *auth;
    json_t                         *app_rec;    /* "credential"'s app */
    ngx_str_t                       app_raw;
    ngx_str_t                       raw;        /* the row as read */
    ngx_str_t                       hash;       /* a password's */
    unsigned                        password_given:1;
    unsigned                        finished:1;
    unsigned                        cas:1;
    unsigned                        no_row:1;
} ngx_http_tent_admin_t;


/* ngx_http_tent_admin.c */
ngx_http_tent_admin_t *ngx_http_tent_admin_get(ngx_http_request_t *r);
ngx_int_t ngx_http_tent_admin_quotas(json_t *row, json_t *quotas);
void ngx_http_tent_admin_hide(json_t *row);

/* ngx_http_tent_admin_write.c */
ngx_int_t ngx_http_tent_admin_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
ngx_int_t ngx_http_tent_admin_app_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
ngx_int_t ngx_http_tent_admin_cred_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


#endif /* _NGX_HTTP_TENT_ADMIN_PRIVATE_H_INCLUDED_ */
