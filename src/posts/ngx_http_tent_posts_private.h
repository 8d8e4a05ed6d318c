
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_POSTS_PRIVATE_H_INCLUDED_
#define _NGX_HTTP_TENT_POSTS_PRIVATE_H_INCLUDED_


#if !(NGX_HTTP_TENT_POSTS_PRIVATE)
#error "only the posts files include ngx_http_tent_posts_private.h"
#endif


/*
 * What the posts files share and no other subsystem uses: a post
 * request's state, a feed query, and the steps one file hands to
 * another.  Only the posts files include it; what other subsystems call
 * is in ngx_http_tent_posts.h.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_cache.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_LIMIT_DEFAULT   50
#define NGX_HTTP_TENT_LIMIT_MAX       200


/* a request on one post: GET, PUT, DELETE, its versions, an attachment */
typedef struct {
    json_t                         *post;
    ngx_str_t                       raw;
    ngx_str_t                       post_entity;
    ngx_str_t                       id;
    json_t                         *made;
    ngx_uint_t                      versions;
    ngx_str_t                       attachment;
    ngx_str_t                       attachment_type;
    ngx_str_t                       attachment_digest;
    ngx_uint_t                      attachment_public;

    /* the post's write, sent once its references are taken */
    ngx_http_tent_store_op_t       *write;
    ngx_http_tent_request_done_pt   write_done;

    /* references being taken (sign 1) or given back (-1), one by one */
    ngx_array_t                    *refs;
    ngx_uint_t                      ref;
    ngx_int_t                       sign;
    ngx_uint_t                      tries;
    ngx_http_tent_route_pt          after;
    unsigned                        conflict:1;
    unsigned                        gone:1;      /* the whole post deleted */

    /* another subsystem's run (ngx_http_tent_blobs_run), or NULL */
    void                           *run;
} ngx_http_tent_post_state_t;


/* a same-node reference of a feed's read: its follower row's key */
typedef struct {
    ngx_uint_t                      at;          /* in "found" */
    ngx_str_t                       fkey;
    json_int_t                      received_at;
} ngx_http_tent_query_ref_t;


/* a feed query: GET and HEAD /posts, /posts/count, a post's mentions */
typedef struct {
    ngx_uint_t                      column;      /* INDEX_* */
    ngx_uint_t                      limit;
    ngx_uint_t                      count_only;
    ngx_uint_t                      asc;
    ngx_uint_t                      desc_scan;
    ngx_uint_t                      reverse_result;
    ngx_str_t                       start;
    ngx_str_t                       end;
    ngx_array_t                     bases;
    ngx_array_t                     entities;
    ngx_str_t                       mentioned_entity;
    ngx_str_t                       mentioned_post;
    ngx_str_t                       mentions_of;     /* our post's id */
    ngx_uint_t                      cursor;
    ngx_str_t                       cursor_entity;
    ngx_str_t                       cursor_id;
    ngx_int_t                       since_time;      /* or -1 */
    ngx_int_t                       before_time;     /* or -1 */
    ngx_str_t                       view;
    ngx_uint_t                      count;
    ngx_uint_t                      scanned;
    ngx_array_t                     found;
    ngx_array_t                     refs;        /* _query_ref_t */
    ngx_uint_t                      more;        /* a count's scan */
    ngx_http_tent_cached_t          cached;
    ngx_uint_t                      cache;
} ngx_http_tent_query_t;


/* ngx_http_tent_posts.c */
ngx_int_t ngx_http_tent_post_submit(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_post_versions_scan(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_request_done_pt next);

/* ngx_http_tent_post_change.c */
ngx_int_t ngx_http_tent_post_update(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_post_remove(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);

/* ngx_http_tent_post_view.c */
ngx_int_t ngx_http_tent_post_original(ngx_http_tent_ctx_t *ctx,
    ngx_str_t *entity);
ngx_int_t ngx_http_tent_post_entity(ngx_pool_t *pool,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *entity, ngx_str_t *out);
ngx_int_t ngx_http_tent_post_visible(ngx_http_tent_ctx_t *ctx,
    ngx_str_t *type, ngx_uint_t public, ngx_uint_t original,
    json_t *entities, json_t *groups);
ngx_int_t ngx_http_tent_post_record_visible(ngx_http_tent_ctx_t *ctx,
    json_t *post);
json_t *ngx_http_tent_post_render(ngx_http_tent_ctx_t *ctx, json_t *post);
json_t *ngx_http_tent_post_render_view(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *post);

/* ngx_http_tent_post_ref.c: same-node references */
ngx_int_t ngx_http_tent_post_ref_keys(ngx_pool_t *pool, json_t *ref,
    ngx_str_t *id, ngx_str_t *pkey, ngx_str_t *fkey);
json_t *ngx_http_tent_post_ref_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *raw, ngx_str_t *follower,
    json_int_t received_at);
ngx_int_t ngx_http_tent_post_ref_read(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_query_keep(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_query_t *q, json_t *value,
    ngx_str_t *entity, ngx_str_t *id);
ngx_int_t ngx_http_tent_query_read(ngx_http_request_t *r,
    ngx_http_tent_query_t *q, ngx_http_tent_request_done_pt handler);
json_t *ngx_http_tent_query_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_store_op_t *op, ngx_uint_t n,
    ngx_uint_t *ref, ngx_int_t *rc);
ngx_int_t ngx_http_tent_query_counted(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);

/* ngx_http_tent_attachments.c */
ngx_int_t ngx_http_tent_post_attachments(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *post, ngx_array_t *refs);
ngx_int_t ngx_http_tent_blob_refs(ngx_pool_t *pool, ngx_array_t *refs,
    json_t *post);
ngx_int_t ngx_http_tent_blob_refs_raw(ngx_http_request_t *r,
    ngx_array_t *refs, ngx_str_t *raw);
ngx_int_t ngx_http_tent_blobs_adjust(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_int_t sign, ngx_http_tent_route_pt after);

/* ngx_http_tent_attachment_serve.c */
ngx_int_t ngx_http_tent_post_blob(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *post);

/* ngx_http_tent_posts_feed.c */
ngx_int_t ngx_http_tent_query_scan(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_query_reply(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *list);
ngx_int_t ngx_http_tent_query_link_header(ngx_http_request_t *r,
    ngx_str_t *tails, ngx_str_t **link);
ngx_int_t ngx_http_tent_versions_list(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


#endif /* _NGX_HTTP_TENT_POSTS_PRIVATE_H_INCLUDED_ */
