
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Same-node references read (docs/federation.md, "Index rows, not
 * copies"): a post an entity of this store received from another of it
 * with tent_same_node_rows index is kept once, in its author's rows; the
 * recipient has feed rows and an "l" row naming where it is and the
 * author's follower row the delivery went by.  Every read of it reads
 * the author's current post and that follower row, and shows the post
 * only if it is still the recipient's to see: there, public or naming
 * the follower (or one of its groups) that still names the recipient.
 * GET /posts/:entity/:id comes here when the recipient has no copy; the
 * feed (ngx_http_tent_posts_feed.c) keeps its rows and reads its page
 * here, so that a reference's row reads its author's post and follower
 * row, and a count counts a reference only once its post is read.
 */


#define NGX_HTTP_TENT_POSTS_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_posts_private.h"
#include "ngx_http_tent_store.h"


static ngx_int_t ngx_http_tent_post_ref_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_post_ref_fetched(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_post_ref_names(ngx_http_tent_ctx_t *ctx,
    json_t *perms, json_t *follower);


/*
 * The keys a reference's read needs: the author's post row and its
 * follower row.  "ref" is an "l" row, or a feed row's value: both have
 * "l" (the author, as configured) and "f" (the follower id there).
 * NGX_DECLINED: not a reference.
 */

ngx_int_t
ngx_http_tent_post_ref_keys(ngx_pool_t *pool, json_t *ref, ngx_str_t *id,
    ngx_str_t *pkey, ngx_str_t *fkey)
{
    ngx_str_t  author, fid;

    if (ngx_http_tent_json_str(ref, "l", &author) != NGX_OK) {
        return NGX_DECLINED;
    }

    if (ngx_http_tent_json_str(ref, "f", &fid) != NGX_OK
        || author.len == 0 || fid.len == 0
        || ngx_http_tent_post_key(pool, &author, &author, id, -1, pkey)
           != NGX_OK
        || ngx_http_tent_key(pool, &author, NGX_HTTP_TENT_TABLE_FOLLOWER,
                             &fid, fkey)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * The author's post (its row as read) as the recipient sees it, or NULL:
 * gone, or no longer the recipient's to see.  "follower" is the
 * author's follower row as read (NULL: none).  The post is rendered as a
 * copy would hold it (what a follower may see, ngx_http_tent_delivery_body)
 * with the recipient's received_at, then checked as any received post.
 */

json_t *
ngx_http_tent_post_ref_post(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_str_t *raw, ngx_str_t *follower, json_int_t received_at)
{
    size_t   i;
    json_t  *post, *frow, *perms, *a;

    post = ngx_http_tent_json_parse(raw, r->connection->log);
    if (post == NULL) {
        return NULL;
    }

    frow = NULL;

    if (follower) {
        frow = ngx_http_tent_json_parse(follower, r->connection->log);
    }

    perms = json_object_get(post, "permissions");

    if (!json_is_true(json_object_get(perms, "public"))
        && !ngx_http_tent_post_ref_names(ctx, perms, frow))
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent posts: reference of \"%V\": not the "
                       "recipient's to see any more", &ctx->entity);
        json_decref(frow);
        json_decref(post);
        return NULL;
    }

    json_decref(frow);

    /* what a copy holds: no internal field, public or not, ours received */

    json_object_del(post, "rus");
    json_object_set_new(post, "received_at", json_integer(received_at));

    json_array_foreach(json_object_get(post, "attachments"), i, a) {
        json_object_del(a, "digest");
    }

    json_object_set_new(post, "permissions",
                        json_pack("{s:b}", "public",
                                  json_is_true(json_object_get(perms,
                                                               "public"))));

    if (!ngx_http_tent_post_record_visible(ctx, post)) {
        json_decref(post);
        return NULL;
    }

    return post;
}


/*
 * A private post is the recipient's while the author's follower row the
 * delivery went by still names it, and the post's permissions name it or
 * one of that row's groups: a follower removed, or out of the group, sees
 * it no more.
 */

static ngx_int_t
ngx_http_tent_post_ref_names(ngx_http_tent_ctx_t *ctx, json_t *perms,
    json_t *follower)
{
    size_t       i, j;
    json_t      *v, *g, *mine, *entities;
    ngx_str_t    name;
    const char  *key;

    if (follower == NULL
        || ngx_http_tent_json_str(follower, "entity", &name) != NGX_OK
        || !ngx_http_tent_entity_eq(&name, &ctx->entity))
    {
        return 0;
    }

    entities = json_object_get(perms, "entities");

    json_object_foreach(entities, key, v) {
        name.data = (u_char *) key;
        name.len = ngx_strlen(key);

        if (json_is_true(v) && ngx_http_tent_entity_eq(&name, &ctx->entity)) {
            return 1;
        }
    }

    mine = json_object_get(follower, "groups");

    json_array_foreach(json_object_get(perms, "groups"), i, g) {
        if (json_is_object(g)) {
            g = json_object_get(g, "id");
        }

        json_array_foreach(mine, j, v) {
            if (json_is_object(v)) {
                v = json_object_get(v, "id");
            }

            if (json_is_string(g) && json_equal(g, v)) {
                return 1;
            }
        }
    }

    return 0;
}


/* GET /posts/:entity/:id with no copy: the recipient's "l" row, if any */

ngx_int_t
ngx_http_tent_post_ref_read(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                    key;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_ref_key(r->pool, &ctx->entity, &st->post_entity,
                                 &st->id, &key)
           != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "building the read of the post's reference");
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent posts: post \"%V\": no copy, its reference read",
                   &st->id);

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_post_ref_loaded);
}


static ngx_int_t
ngx_http_tent_post_ref_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                      *ref;
    ngx_int_t                    rc;
    ngx_str_t                    value, pkey, fkey;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_store_op_t    *get;
    ngx_http_tent_post_state_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    ngx_http_tent_store_value(op, &value);

    ref = ngx_http_tent_json_load(r, &value);
    if (ref == NULL) {
        return ngx_http_tent_internal_error(r, "reading the post's reference");
    }

    st->post = ref;

    get = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (get == NULL
        || ngx_http_tent_post_ref_keys(r->pool, ref, &st->id, &pkey, &fkey)
           != NGX_OK
        || ngx_http_tent_store_mget(get) != NGX_OK
        || ngx_http_tent_store_mget_key(get, &pkey) != NGX_OK
        || ngx_http_tent_store_mget_key(get, &fkey) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "building the read of the referenced post");
    }

    return ngx_http_tent_store_submit_request(r, get,
                                              ngx_http_tent_post_ref_fetched);
}


static ngx_int_t
ngx_http_tent_post_ref_fetched(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                      *post, *out;
    ngx_int_t                    rc;
    ngx_str_t                    raw, follower;
    ngx_uint_t                   found, ffound;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_post_state_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (ngx_http_tent_store_next_value(op, &found, &raw) != NGX_OK
        || ngx_http_tent_store_next_value(op, &ffound, &follower) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "reading the referenced post");
    }

    /* deleted by its author: gone, whether the delete reached us or not */

    if (!found) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    post = ngx_http_tent_post_ref_post(r, ctx, &raw, ffound ? &follower : NULL,
                                       json_integer_value(
                                           json_object_get(st->post,
                                                           "received_at")));

    if (post == NULL) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    out = ngx_http_tent_post_render_view(r, ctx, post);
    json_decref(post);

    if (out == NULL || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK) {
        json_decref(out);
        return ngx_http_tent_internal_error(r,
                   "rendering the referenced post");
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
}


/*
 * A row of the page (of a count: a reference): the key of the post to
 * read, ours or a copy; for a same-node reference the author's post
 * and follower row
 */

ngx_int_t
ngx_http_tent_query_keep(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_query_t *q, json_t *value, ngx_str_t *entity, ngx_str_t *id)
{
    ngx_int_t                   rc;
    ngx_str_t                  *pk, fkey;
    ngx_http_tent_query_ref_t  *ref;

    pk = ngx_array_push(&q->found);
    if (pk == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_tent_post_ref_keys(r->pool, value, id, pk, &fkey);

    if (rc == NGX_DECLINED) {
        return ngx_http_tent_post_key(r->pool, &ctx->entity, entity, id, -1,
                                      pk);
    }

    if (rc != NGX_OK) {
        return NGX_ERROR;
    }

    if (q->refs.elts == NULL
        && ngx_array_init(&q->refs, r->pool, 16,
                          sizeof(ngx_http_tent_query_ref_t))
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    ref = ngx_array_push(&q->refs);
    if (ref == NULL) {
        return NGX_ERROR;
    }

    ref->at = q->found.nelts - 1;
    ref->fkey = fkey;
    ref->received_at = json_integer_value(json_object_get(value, "ra"));

    return NGX_OK;
}


/* the posts kept, in one read: a reference's follower row after its post */

ngx_int_t
ngx_http_tent_query_read(ngx_http_request_t *r, ngx_http_tent_query_t *q,
    ngx_http_tent_request_done_pt handler)
{
    ngx_str_t                  *pk;
    ngx_uint_t                  n, j;
    ngx_http_tent_query_ref_t  *ref;
    ngx_http_tent_store_op_t   *mget;

    mget = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (mget == NULL || ngx_http_tent_store_mget(mget) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "building the read of the page");
    }

    pk = q->found.elts;
    ref = q->refs.elts;
    j = 0;

    for (n = 0; n < q->found.nelts; n++) {
        if (ngx_http_tent_store_mget_key(mget, &pk[n]) != NGX_OK
            || (j < q->refs.nelts && ref[j].at == n
                && ngx_http_tent_store_mget_key(mget, &ref[j++].fkey)
                   != NGX_OK))
        {
            return ngx_http_tent_internal_error(r,
                       "adding a post to the read of the page");
        }
    }

    return ngx_http_tent_store_submit_request(r, mget, handler);
}


/*
 * The n-th post of the read, parsed; a reference's checked against the
 * author's post and follower row (NULL: gone, or not ours to see).  *ref
 * walks the references.  *rc: NGX_ERROR when the read's answer is bad.
 */

json_t *
ngx_http_tent_query_post(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_store_op_t *op, ngx_uint_t n, ngx_uint_t *ref,
    ngx_int_t *rc)
{
    ngx_str_t                   value, follower;
    ngx_uint_t                  found, ffound;
    ngx_http_tent_query_t      *q;
    ngx_http_tent_query_ref_t  *refs;

    q = ctx->state;
    refs = q->refs.elts;

    *rc = ngx_http_tent_store_next_value(op, &found, &value);
    if (*rc != NGX_OK) {
        return NULL;
    }

    if (*ref < q->refs.nelts && refs[*ref].at == n) {
        *rc = ngx_http_tent_store_next_value(op, &ffound, &follower);
        if (*rc != NGX_OK || !found) {
            (*ref)++;
            return NULL;
        }

        return ngx_http_tent_post_ref_post(r, ctx, &value,
                                           ffound ? &follower : NULL,
                                           refs[(*ref)++].received_at);
    }

    if (!found) {
        /* deleted between the scan and now */
        return NULL;
    }

    return ngx_http_tent_json_parse(&value, r->connection->log);
}


/* a count's references read: those still ours to see count, then on */

ngx_int_t
ngx_http_tent_query_counted(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                 *post;
    ngx_int_t               rc;
    ngx_uint_t              n, ref;
    ngx_http_tent_ctx_t    *ctx;
    ngx_http_tent_query_t  *q;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    q = ctx->state;
    ref = 0;

    for (n = 0; n < q->found.nelts; n++) {
        post = ngx_http_tent_query_post(r, ctx, op, n, &ref, &rc);

        if (rc != NGX_OK) {
            return ngx_http_tent_internal_error(r,
                       "reading the references counted");
        }

        if (post) {
            q->count++;
            json_decref(post);
        }
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent feed: %ui references read, %ui counted in all",
                   q->found.nelts, q->count);

    q->found.nelts = 0;
    q->refs.nelts = 0;

    return q->more ? ngx_http_tent_query_scan(r, ctx)
                   : ngx_http_tent_query_reply(r, ctx, NULL);
}
