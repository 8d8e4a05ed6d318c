
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_STORE_FENCE_H_INCLUDED_
#define _NGX_HTTP_TENT_STORE_FENCE_H_INCLUDED_


/*
 * What the registry fence's table (ngx_http_tent_store_fence.c) and its
 * admission of writes (ngx_http_tent_store_fence_admit.c) share; only
 * they include it, after ngx_http_tent_store_private.h.
 */


#include "ngx_http_tent_store_private.h"


/* registry entities of one owner: at most this many scanned at start */
#define NGX_HTTP_TENT_FENCE_SCAN  1000000

/* a pair's length: its top bit says "rows only" (fence_rows()) */
#define NGX_HTTP_TENT_FENCE_LEN   0x7fffffff


typedef struct {
    ngx_str_node_t                  sn;
    ngx_uint_t                      state;       /* NGX_HTTP_TENT_REG_* */
    uint64_t                        incarnation;
} ngx_http_tent_fence_entry_t;


struct ngx_http_tent_fence_s {
    ngx_pool_t                     *pool;        /* the entries */
    ngx_rbtree_t                    tree;
    ngx_rbtree_node_t               sentinel;
    ngx_uint_t                      n;

    ngx_uint_t                      inflight;    /* writes running */
    ngx_uint_t                      closing;     /* registry writes wait */
    unsigned                        registry:1;  /* one runs */
    unsigned                        loaded:1;

    /* the scan at open, from the pool thread */
    u_char                         *scan;
    size_t                          scan_len;
};


/* ngx_http_tent_store_fence.c: the table */
ngx_http_tent_fence_entry_t *ngx_http_tent_fence_find(
    ngx_http_tent_fence_t *fence, ngx_str_t *entity);
void ngx_http_tent_fence_apply(ngx_http_tent_fence_t *fence,
    ngx_http_tent_store_op_t *op, ngx_log_t *log);
uint32_t ngx_http_tent_fence_u32(u_char *p);


#endif /* _NGX_HTTP_TENT_STORE_FENCE_H_INCLUDED_ */
