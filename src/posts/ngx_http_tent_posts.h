
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_POSTS_H_INCLUDED_
#define _NGX_HTTP_TENT_POSTS_H_INCLUDED_


/*
 * Posts: types and validation, creation and versions, who may see a
 * post and how it is rendered, attachments, queries.  What the router
 * and other subsystems call; what only the posts files share is in
 * ngx_http_tent_posts_private.h.
 */


#include "ngx_http_tent_store.h"


/* ngx_http_tent_post_types.c */
json_t *ngx_http_tent_post_validate(json_t *post, ngx_uint_t import,
    const char **error);
ngx_int_t ngx_http_tent_post_type_is(ngx_str_t *type, const char *name);
json_int_t ngx_http_tent_post_published_at(json_t *v, time_t now);

/* ngx_http_tent_posts.c */
ngx_int_t ngx_http_tent_posts_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_post_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_post_versions(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* references a change adds to (or drops from) one digest's bytes */
typedef struct {
    ngx_str_t                       digest;
    ngx_str_t                       bytes;       /* uploaded, or null */
    ngx_int_t                       count;
} ngx_http_tent_blob_ref_t;

/*
 * ngx_http_tent_attachments.c: another subsystem (the import) takes
 * (sign 1) or gives back (-1) references by the posts' own path; "load"
 * gives the bytes of a digest whose count is created (freed once its
 * count is set), "done" is called with NGX_OK or the HTTP status of the
 * failure and how many references were taken.
 */
typedef ngx_int_t (*ngx_http_tent_blob_load_pt)(ngx_http_request_t *r,
    void *data, ngx_str_t *digest, ngx_str_t *bytes);
typedef ngx_int_t (*ngx_http_tent_blob_done_pt)(ngx_http_request_t *r,
    void *data, ngx_int_t status, ngx_uint_t taken);

ngx_int_t ngx_http_tent_blob_ref_add(ngx_pool_t *pool, ngx_array_t *refs,
    ngx_str_t *digest, ngx_str_t *bytes);
ngx_int_t ngx_http_tent_blobs_run(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_array_t *refs, ngx_int_t sign,
    ngx_http_tent_blob_load_pt load, ngx_http_tent_blob_done_pt done,
    void *data);

/* ngx_http_tent_attachment_serve.c */
ngx_int_t ngx_http_tent_post_attachment(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* ngx_http_tent_posts_query.c */
ngx_int_t ngx_http_tent_posts_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_posts_count(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_post_mentions_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* ngx_http_tent_deliveries.c */
ngx_int_t ngx_http_tent_post_deliveries(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* ngx_http_tent_posts_feed.c */
ngx_int_t ngx_http_tent_post_index(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_store_op_t *op, json_t *post,
    ngx_uint_t del);
ngx_int_t ngx_http_tent_post_index_rows(ngx_pool_t *pool, ngx_str_t *owner,
    ngx_http_tent_store_op_t *op, json_t *post, ngx_uint_t del);
/* the same for a same-node reference: its value given */
ngx_int_t ngx_http_tent_post_index_ref_rows(ngx_pool_t *pool,
    ngx_str_t *owner, ngx_http_tent_store_op_t *op, json_t *post,
    ngx_str_t *given, ngx_uint_t del);
ngx_int_t ngx_http_tent_post_index_dump(ngx_pool_t *pool, json_t *post,
    ngx_str_t *v);


#endif /* _NGX_HTTP_TENT_POSTS_H_INCLUDED_ */
