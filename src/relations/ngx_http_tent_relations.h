
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_RELATIONS_H_INCLUDED_
#define _NGX_HTTP_TENT_RELATIONS_H_INCLUDED_


/*
 * The social graph: followers, followings and what they share, groups.
 */


#include "ngx_http_tent_store.h"


/* ngx_http_tent_relations.c: what followers and followings share */
typedef ngx_int_t (*ngx_http_tent_list_item_pt)(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *record, void *data, json_t **out);

typedef struct {
    ngx_str_t                       name;        /* "followers" */
    const char                     *kind;        /* its posts' type */
    u_char                          table;
    u_char                          entity_table;
    ngx_uint_t                      read_scope;
    ngx_uint_t                      peer_kind;

    /* another table listed the same way (apps); NULL for relations */
    ngx_int_t                     (*id_valid)(ngx_str_t *id);
    ngx_http_tent_list_item_pt      item;
} ngx_http_tent_relation_t;

typedef ngx_int_t (*ngx_http_tent_relation_pt)(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *record);

ngx_int_t ngx_http_tent_relation_id(ngx_pool_t *pool, ngx_str_t *id);
ngx_int_t ngx_http_tent_relation_id_valid(ngx_str_t *id);
ngx_int_t ngx_http_tent_relation_is_peer(ngx_http_tent_ctx_t *ctx,
    json_t *record, ngx_uint_t kind);
json_t *ngx_http_tent_relation_render(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_relation_t *rel, json_t *record);
ngx_int_t ngx_http_tent_relation_visible(ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_relation_t *rel, json_t *record);
ngx_int_t ngx_http_tent_relation_load(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_relation_t *rel,
    ngx_str_t *param, ngx_http_tent_relation_pt next);
ngx_int_t ngx_http_tent_relation_load_entity(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_relation_t *rel,
    ngx_str_t *entity, ngx_http_tent_relation_pt next);
ngx_int_t ngx_http_tent_relation_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_relation_t *rel);
ngx_int_t ngx_http_tent_relations_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_relation_t *rel);
ngx_int_t ngx_http_tent_list_table(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_relation_t *rel, void *data,
    ngx_str_t *args);
ngx_int_t ngx_http_tent_internal_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_store_op_t *op, const char *kind,
    json_t *content, ngx_uint_t public);
ngx_int_t ngx_http_tent_relation_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_store_op_t *op, const char *kind,
    json_t *record, const char *action);
void ngx_http_tent_relation_update(json_t *record, json_t *body);
json_t *ngx_http_tent_following_view(json_t *record);
ngx_int_t ngx_http_tent_relation_remove(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_relation_t *rel, json_t *record);

/* ngx_http_tent_followers.c */
ngx_int_t ngx_http_tent_notification_path_valid(ngx_str_t *path);
ngx_int_t ngx_http_tent_string_list(json_t *body, const char *name,
    const char *dflt, json_t **out);
ngx_int_t ngx_http_tent_credential_row(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, const char *kind, json_t *record,
    ngx_str_t *key, ngx_str_t *value);
/* the followers' tables and kind (ngx_http_tent_followers.c) */
extern ngx_http_tent_relation_t  ngx_http_tent_followers_rel;
extern ngx_http_tent_relation_t  ngx_http_tent_followings_rel;

ngx_int_t ngx_http_tent_followers_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_followers_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_follower(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* ngx_http_tent_followings.c */
ngx_int_t ngx_http_tent_followings_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_followings_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_following(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_following_proxy(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* ngx_http_tent_avatars.c */
ngx_int_t ngx_http_tent_avatar_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* ngx_http_tent_groups.c */
ngx_int_t ngx_http_tent_groups_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_groups_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_group(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


#endif /* _NGX_HTTP_TENT_RELATIONS_H_INCLUDED_ */
