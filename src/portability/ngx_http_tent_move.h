
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_MOVE_H_INCLUDED_
#define _NGX_HTTP_TENT_MOVE_H_INCLUDED_


/*
 * Moving an entity (spec 9.5): POST /move on the old entity, and the
 * re-keying of a relationship whose profile announces a new entity.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_remote.h"


ngx_int_t ngx_http_tent_move_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_move_announced(ngx_http_request_t *r, json_t *core,
    ngx_str_t *to);
json_t *ngx_http_tent_move_core(json_t *profile);
ngx_uint_t ngx_http_tent_move_lists(json_t *core, ngx_str_t *entity);
const char *ngx_http_tent_move_successor(ngx_http_tent_discover_t *d,
    ngx_str_t *to, ngx_str_t *from);
ngx_int_t ngx_http_tent_move_posts_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_move_post_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* ngx_http_tent_move_challenge.c: NGX_OK answered, NGX_DECLINED refused,
 * NGX_AGAIN not reachable now */
typedef ngx_int_t (*ngx_http_tent_move_challenged_pt)(ngx_http_request_t *r,
    void *data, ngx_int_t rc);
ngx_int_t ngx_http_tent_move_challenge(ngx_http_request_t *r, json_t *record,
    json_t *servers, ngx_http_tent_move_challenged_pt done, void *data);

/* ngx_http_tent_move_guard.c: one re-keying of an entity at a time */
typedef struct ngx_http_tent_move_guard_s  ngx_http_tent_move_guard_t;
ngx_int_t ngx_http_tent_move_guard_take(ngx_http_request_t *r,
    ngx_http_tent_move_guard_t **gp, ngx_str_t *from, json_int_t at,
    ngx_http_tent_move_challenged_pt done, void *data);
ngx_int_t ngx_http_tent_move_guard_release(ngx_http_request_t *r,
    ngx_http_tent_move_guard_t *g, ngx_str_t *to,
    ngx_http_tent_move_challenged_pt done, void *data);

/* ngx_http_tent_move_mentions.c: NGX_OK applied or recorded, NGX_AGAIN
 * the store */
ngx_int_t ngx_http_tent_move_mentions(ngx_http_request_t *r, ngx_str_t *from,
    ngx_str_t *to, ngx_http_tent_move_challenged_pt done, void *data);

/* ngx_http_tent_move_follow.c: the same answers */
ngx_int_t ngx_http_tent_move_follow(ngx_http_request_t *r, json_t *record,
    json_t *servers, ngx_http_tent_move_challenged_pt done, void *data);


/* a move's mapping as a mentions pass loads it (META "mmap ...") */

typedef struct {
    ngx_str_t                           from;
    ngx_str_t                           to;
    ngx_str_t                           key;
    ngx_str_t                           raw;
} ngx_http_tent_move_map_t;


ngx_int_t ngx_http_tent_move_maps_resolve(ngx_pool_t *pool, ngx_log_t *log,
    ngx_array_t *maps, ngx_rbtree_t *tree, ngx_rbtree_node_t *sentinel);
ngx_str_t *ngx_http_tent_move_maps_target(ngx_rbtree_t *tree, ngx_str_t *e);


#endif /* _NGX_HTTP_TENT_MOVE_H_INCLUDED_ */
