
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_BLOCKS_H_INCLUDED_
#define _NGX_HTTP_TENT_BLOCKS_H_INCLUDED_


/*
 * The entities an owner blocked ([blocks](../docs/blocks.md)): its rows
 * "<owner> 0x00 'z' <entity>", read once per worker into a sorted list
 * that the blocks' generation in the shared zone keeps fresh, so a check
 * costs no store read.  A request's list is held by its pool, the
 * delivery task's by the task's: a later write never frees it under them.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_store.h"


/* the most blocks an owner keeps: each one is a few hundred bytes */
#define NGX_HTTP_TENT_BLOCKS_MAX  4096

/*
 * the longest entity URL blocked: 4,096 of them stay far below the
 * store scan's bytes, so the list is cut by its count, never by bytes
 */
#define NGX_HTTP_TENT_BLOCK_ENTITY_MAX  512


typedef struct {
    ngx_uint_t                      refs;
    ngx_pool_t                     *pool;       /* the list's own */
    ngx_str_t                       owner;
    ngx_atomic_uint_t               generation;  /* when it was read */
    ngx_uint_t                      n;
    ngx_str_t                      *entities;   /* in the store's order */
    ngx_str_t                      *rows;       /* their JSON */
} ngx_http_tent_blocks_t;


/* the owner's list, if this worker holds it fresh; held by "pool" */
void ngx_http_tent_blocks_exit(void);
ngx_http_tent_blocks_t *ngx_http_tent_blocks_cached(ngx_pool_t *pool,
    ngx_str_t *owner);

/* the scan of an owner's rows, and the list made of its answer */
ngx_int_t ngx_http_tent_blocks_scan(ngx_http_tent_store_op_t *op,
    ngx_str_t *owner, ngx_atomic_uint_t *generation);
ngx_http_tent_blocks_t *ngx_http_tent_blocks_loaded(ngx_pool_t *pool,
    ngx_str_t *owner, ngx_atomic_uint_t generation,
    ngx_http_tent_store_op_t *op);

/* whether "entity" (in its one spelling) is in the list; NULL: none */
ngx_uint_t ngx_http_tent_blocks_has(ngx_http_tent_blocks_t *b,
    ngx_str_t *entity);

/* the request's entity's list into ctx->blocks, then "next" */
ngx_int_t ngx_http_tent_blocks_request(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_route_pt next);

/* the routes: POST, GET /blocks, DELETE /blocks/:entity */
ngx_int_t ngx_http_tent_blocks_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_blocks_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_block_delete(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


#endif /* _NGX_HTTP_TENT_BLOCKS_H_INCLUDED_ */
