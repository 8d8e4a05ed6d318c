
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_RECEIVE_H_INCLUDED_
#define _NGX_HTTP_TENT_RECEIVE_H_INCLUDED_


/*
 * A post another entity sends us, without a request: its checks and the
 * batches that store it, shared by POST /notifications/:id
 * (ngx_http_tent_notifications.c) and same-node delivery
 * (ngx_http_tent_local_write.c), so that both apply the same rules.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_store.h"


typedef struct {
    json_t                         *post;
    ngx_str_t                       entity;
    ngx_str_t                       id;
    json_int_t                      version;
    ngx_str_t                       deletes;    /* a delete post's target */
    ngx_uint_t                      profile;    /* a profile post */
    json_t                         *following;
    ngx_str_t                       raw;
    json_t                         *reply;      /* NULL: an empty 200 */
} ngx_http_tent_received_t;


ngx_int_t ngx_http_tent_received_parse(ngx_pool_t *pool, json_t *body,
    ngx_str_t *entity, ngx_uint_t mention, ngx_http_tent_received_t *st,
    const char **error);
ngx_http_tent_store_op_t *ngx_http_tent_received_batch(ngx_pool_t *pool,
    ngx_log_t *log, ngx_str_t *owner, ngx_http_tent_received_t *st,
    json_t *current, ngx_str_t *raw);
ngx_http_tent_store_op_t *ngx_http_tent_received_delete(ngx_pool_t *pool,
    ngx_log_t *log, ngx_str_t *owner, ngx_http_tent_received_t *st,
    json_t *copy, ngx_str_t *value);
ngx_int_t ngx_http_tent_received_value(ngx_pool_t *pool,
    ngx_http_tent_received_t *st, json_t *current, ngx_str_t *value);
/* ngx_http_tent_received_rows(): the post row too; no outbox row */
#define NGX_HTTP_TENT_RECEIVED_ROW      0x01
#define NGX_HTTP_TENT_RECEIVED_NO_APPS  0x02

ngx_int_t ngx_http_tent_received_rows(ngx_pool_t *pool, ngx_str_t *owner,
    ngx_http_tent_store_op_t *op, ngx_http_tent_received_t *st,
    ngx_str_t *value, ngx_uint_t flags);
ngx_int_t ngx_http_tent_received_delete_rows(ngx_pool_t *pool,
    ngx_str_t *owner, ngx_http_tent_store_op_t *wop,
    ngx_http_tent_received_t *st, json_t *copy);


#endif /* _NGX_HTTP_TENT_RECEIVE_H_INCLUDED_ */
