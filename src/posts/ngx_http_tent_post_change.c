
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * PUT and DELETE /posts/:id (spec 7.5): a new version written in place
 * of exactly the post that was read (a compare-and-set on it), a version
 * or the whole post removed, the feed index moved along and the
 * attachments' references taken or given back around the write.
 */


#define NGX_HTTP_TENT_POSTS_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_ap.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_posts_private.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_store.h"


/*
 * PUT /posts/:id: content, licenses, mentions and views replace the old
 * ones as a new version; {"version": n} alone makes a new version from n.
 */

static ngx_int_t ngx_http_tent_post_revert(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_post_write_version(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *post);
static ngx_int_t ngx_http_tent_post_changed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_post_likes_forget(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_post_reply(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


ngx_int_t
ngx_http_tent_post_update(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                      *v, *valid, *post, *probe;
    ngx_int_t                    rc;
    json_int_t                   n;
    ngx_str_t                    key;
    const char                  *error;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    v = json_object_get(ctx->body, "version");

    if (json_object_size(ctx->body) == 1 && json_is_integer(v)
        && (ctx->parts == NULL || ctx->parts->nelts == 0))
    {
        n = json_integer_value(v);

        if (n <= 0 || n > 0x7fffffff) {
            return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                            "Not Found");
        }

        op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

        if (op == NULL
            || ngx_http_tent_post_key(r->pool, &ctx->entity,
                                      &st->post_entity, &st->id,
                                      (ngx_int_t) n, &key)
               != NGX_OK
            || ngx_http_tent_store_get(op, &key) != NGX_OK)
        {
            return ngx_http_tent_internal_error(r,
                       "building the read of the version");
        }

        return ngx_http_tent_store_submit_request(r, op,
                                                  ngx_http_tent_post_revert);
    }

    /* the type stays: check the new fields as a post of that type */

    probe = ngx_http_tent_json_own(r->pool, json_deep_copy(ctx->body));
    if (probe == NULL) {
        return ngx_http_tent_internal_error(r, "copying the new fields");
    }

    json_object_set(probe, "type", json_object_get(st->post, "type"));

    if (json_object_get(probe, "content") == NULL) {
        json_object_set(probe, "content", json_object_get(st->post,
                                                          "content"));
    }

    json_object_set(probe, "permissions",
                    json_object_get(st->post, "permissions"));

    error = NULL;
    valid = ngx_http_tent_post_validate(probe, 0, &error);

    if (valid == NULL) {
        if (error == NULL) {
            return ngx_http_tent_internal_error(r, "validating the new fields");
        }

        return ngx_http_tent_send_error(r, 422, error);
    }

    if (ngx_http_tent_json_cleanup(r->pool, valid) != NGX_OK) {
        json_decref(valid);
        return ngx_http_tent_internal_error(r, "keeping the validated fields");
    }

    post = ngx_http_tent_json_own(r->pool, json_deep_copy(st->post));
    if (post == NULL) {
        return ngx_http_tent_internal_error(r, "copying the post");
    }

    json_object_set(post, "content", json_object_get(valid, "content"));

    if (json_object_get(ctx->body, "licenses")) {
        json_object_set(post, "licenses", json_object_get(valid, "licenses"));
    }

    if (json_object_get(ctx->body, "mentions")) {
        json_object_set(post, "mentions", json_object_get(valid, "mentions"));
    }

    if (json_object_get(valid, "views")) {
        json_object_set(post, "views", json_object_get(valid, "views"));
    }

    /* uploaded files replace the attachments; otherwise they stay */

    if (ctx->parts && ctx->parts->nelts) {

        /* provisioning: its files under the entity's quota of bytes */

        if (ngx_http_tent_quota_bytes(r, ctx, ngx_http_tent_post_update, &rc)
            != NGX_OK)
        {
            return rc;
        }

        st->refs = ngx_array_create(r->pool, 2,
                                    sizeof(ngx_http_tent_blob_ref_t));
        if (st->refs == NULL) {
            return ngx_http_tent_internal_error(r,
                       "allocating the attachment references");
        }

        rc = ngx_http_tent_post_attachments(r, ctx, post, st->refs);

        if (rc == NGX_HTTP_REQUEST_ENTITY_TOO_LARGE) {
            return ngx_http_tent_send_error(r, rc,
                                            "An attachment is too large");
        }

        if (rc == NGX_DECLINED) {
            return ngx_http_tent_send_error(r, 422, "Invalid attachment");
        }

        if (rc != NGX_OK) {
            return ngx_http_tent_internal_error(r,
                       "making the attachment list");
        }
    }

    return ngx_http_tent_post_write_version(r, ctx, post);
}


static ngx_int_t
ngx_http_tent_post_revert(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                      *old, *post;
    ngx_int_t                    rc;
    ngx_str_t                    value;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_post_state_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }
    st = ctx->state;

    ngx_http_tent_store_value(op, &value);

    old = ngx_http_tent_json_load(r, &value);
    if (old == NULL) {
        return ngx_http_tent_internal_error(r, "reading the stored version");
    }

    post = ngx_http_tent_json_own(r->pool, json_deep_copy(st->post));
    if (post == NULL) {
        return ngx_http_tent_internal_error(r, "copying the post");
    }

    json_object_set(post, "content", json_object_get(old, "content"));
    json_object_set(post, "licenses", json_object_get(old, "licenses"));
    json_object_set(post, "mentions", json_object_get(old, "mentions"));

    if (json_object_get(old, "views")) {
        json_object_set(post, "views", json_object_get(old, "views"));
    }

    /* and its attachments: version n's bytes are still referenced */

    if (json_is_array(json_object_get(old, "attachments"))) {
        json_object_set(post, "attachments",
                        json_object_get(old, "attachments"));
    }

    return ngx_http_tent_post_write_version(r, ctx, post);
}


/* the new version: it replaces exactly what we read, indexes move along */

static ngx_int_t
ngx_http_tent_post_write_version(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *post)
{
    json_int_t                   version;
    ngx_str_t                    key, value, vkey;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    version = json_integer_value(json_object_get(st->post, "version")) + 1;

    json_object_set_new(post, "version", json_integer(version));
    json_object_set_new(post, "updated_at", json_integer(ngx_time()));

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &st->post_entity,
                                  &st->id, -1, &key)
           != NGX_OK
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &st->post_entity,
                                  &st->id, (ngx_int_t) version, &vkey)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "building the keys of the new version");
    }

    if (ngx_http_tent_json_dump(r->pool, post, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r,
                   "writing the new version as JSON");
    }

    if (ngx_http_tent_store_cas(op, &key, &st->raw, &value) != NGX_OK
        || ngx_http_tent_store_write_put(op, &vkey, &value) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "adding the new version to the batch");
    }

    if (ngx_http_tent_post_index(r, ctx, op, st->post, 1) != NGX_OK
        || ngx_http_tent_post_index(r, ctx, op, post, 0) != NGX_OK
        || ngx_http_tent_quota_count(r, ctx, op) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "moving the post's index rows in the batch");
    }

    if (ngx_http_tent_post_original(ctx, &st->post_entity)
        && ngx_http_tent_delivery_mark(r->pool, &ctx->entity, op, post)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "adding the new version's outbox row to the batch");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent posts: post \"%V\": version %L: batch built",
                   &st->id, (int64_t) version);

    st->made = post;
    st->write = op;
    st->write_done = ngx_http_tent_post_changed;

    /* the new version's references: its uploads, or the ones it keeps */

    if (st->refs == NULL) {
        st->refs = ngx_array_create(r->pool, 2,
                                    sizeof(ngx_http_tent_blob_ref_t));
        if (st->refs == NULL) {
            return ngx_http_tent_internal_error(r,
                       "allocating the attachment references");
        }

        if (ngx_http_tent_blob_refs(r->pool, st->refs, post) != NGX_OK) {
            return ngx_http_tent_internal_error(r,
                       "listing the new version's references");
        }
    }

    return ngx_http_tent_blobs_adjust(r, ctx, 1, ngx_http_tent_post_submit);
}


/*
 * A change written: a new version's references stay taken, a deleted
 * version's are given back.  Refused: the new version's are given back.
 */

static ngx_int_t
ngx_http_tent_post_changed(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    ngx_int_t                    rc;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_post_state_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent posts: post \"%V\": not changed, "
                       "it changed meanwhile", &st->id);

        st->conflict = 1;

        return st->made ? ngx_http_tent_blobs_adjust(r, ctx, -1,
                                                     ngx_http_tent_post_reply)
                        : ngx_http_tent_post_reply(r, ctx);
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent posts: post \"%V\": %s stored", &st->id,
                   st->made ? "new version" : "removal");

    if (st->made == NULL) {
        return ngx_http_tent_blobs_adjust(r, ctx, -1,
                                          st->gone
                                          ? ngx_http_tent_post_likes_forget
                                          : ngx_http_tent_post_reply);
    }

    return ngx_http_tent_post_reply(r, ctx);
}


/* the whole post gone: its ActivityPub likes' rows with it */

static ngx_int_t
ngx_http_tent_post_likes_forget(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    return ngx_http_tent_ap_likes_forget(r, ctx, &st->id,
                                         ngx_http_tent_post_reply);
}


static ngx_int_t
ngx_http_tent_post_reply(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                      *out;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    if (st->conflict) {
        return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                   "The post changed meanwhile: send the request again");
    }

    if (st->made == NULL) {
        /* a DELETE */
        r->headers_out.status = NGX_HTTP_OK;
        r->headers_out.content_length_n = 0;
        r->header_only = 1;
        ctx->own_reply = 1;
        return ngx_http_send_header(r);
    }

    out = ngx_http_tent_post_render(ctx, st->made);
    if (out == NULL || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK) {
        json_decref(out);
        return ngx_http_tent_internal_error(r, "rendering the new version");
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
}


/*
 * DELETE /posts/:id: the post, its versions and index entries go, and a
 * delete post {"id": ...} with the same permissions takes their place.
 * ?version=n deletes that version; the current one gives way to the
 * newest other; the only one takes the post with it.
 */

ngx_int_t
ngx_http_tent_post_remove(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                      *del, *prev, *newest;
    uint32_t                     kv;
    uint64_t                     ms;
    ngx_int_t                    rc, version, current, n, count;
    ngx_str_t                    key, value, k, v, id, cur, newest_key,
                                 newest_raw, gone;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_store_op_t    *wop;
    ngx_http_tent_post_state_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    version = -1;

    if (ngx_http_arg(r, (u_char *) "version", 7, &v) == NGX_OK) {
        version = ngx_atoi(v.data, v.len);
        if (version <= 0) {
            return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                            "Not Found");
        }
    }

    current = (ngx_int_t) json_integer_value(json_object_get(st->post,
                                                             "version"));

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (wop == NULL
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &st->post_entity,
                                  &st->id, -1, &cur)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the post's key");
    }

    /* which versions there are */

    count = 0;
    ngx_str_null(&newest_key);
    ngx_str_null(&newest_raw);
    ngx_str_null(&key);
    ngx_str_null(&gone);

    /* the references the deleted versions give back once they are gone */

    st->refs = ngx_array_create(r->pool, 2, sizeof(ngx_http_tent_blob_ref_t));
    if (st->refs == NULL) {
        return ngx_http_tent_internal_error(r,
                   "allocating the attachment references");
    }

    while (ngx_http_tent_store_next(op, &k, &v) == NGX_OK) {
        if (ngx_http_tent_key_version(&k, &kv) != NGX_OK) {
            continue;
        }

        n = kv;
        count++;

        if (n == version) {
            key = k;
            gone = v;

        } else if (newest_key.data == NULL) {
            newest_key = k;
            newest_raw = v;
        }
    }

    if (version > 0 && key.data == NULL) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    if (version > 0 && count > 1) {

        /* one version of several: the post stays */

        if (ngx_http_tent_blob_refs_raw(r, st->refs, &gone) != NGX_OK) {
            return ngx_http_tent_internal_error(r,
                       "listing the references of the version removed");
        }

        if (ngx_http_tent_store_cas(wop, &cur, &st->raw,
                                    version == current ? &newest_raw
                                                       : &st->raw)
            != NGX_OK
            || ngx_http_tent_store_write_del(wop, &key) != NGX_OK)
        {
            return ngx_http_tent_internal_error(r,
                       "adding the version's removal to the batch");
        }

        if (version == current) {
            newest = ngx_http_tent_json_parse(&newest_raw,
                                              r->connection->log);
            if (newest == NULL
                || ngx_http_tent_json_cleanup(r->pool, newest) != NGX_OK)
            {
                json_decref(newest);
                return ngx_http_tent_internal_error(r,
                           "reading the newest other version");
            }

            if (ngx_http_tent_post_index(r, ctx, wop, st->post, 1)
                != NGX_OK
                || ngx_http_tent_post_index(r, ctx, wop, newest, 0) != NGX_OK)
            {
                return ngx_http_tent_internal_error(r,
                           "moving the post's index rows in the batch");
            }
        }

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent posts: post \"%V\": removal of version %i: "
                       "batch built, submitted", &st->id, version);

        return ngx_http_tent_store_submit_request(r, wop,
                                                  ngx_http_tent_post_changed);
    }

    /* the whole post: a delete post takes its place in the feed */

    st->gone = 1;

    if (ngx_http_tent_random_id(r->pool, NULL, 16, &id) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "making the delete post's id");
    }

    ms = ngx_http_tent_now_us();

    /*
     * content.type: what was deleted (its readers had it already), so
     * that the ActivityPub transport undoes a repost's Announce
     */

    del = json_pack("{s:o, s:O, s:s, s:{s:O, s:O}, s:I, s:I, s:I, s:O, "
                    "s:[], s:[], s:[], s:i, s:I}",
                    "id", ngx_http_tent_json_string(&id),
                    "entity", json_object_get(st->post, "entity"),
                    "type", "https://tent.io/types/post/delete/v0.1.0",
                    "content", "id", json_object_get(st->post, "id"),
                    "type", json_object_get(st->post, "type"),
                    "published_at", (json_int_t) ngx_time(),
                    "received_at", (json_int_t) ngx_time(),
                    "updated_at", (json_int_t) ngx_time(),
                    "permissions", json_object_get(st->post, "permissions"),
                    "licenses", "mentions", "attachments",
                    "version", 1,
                    "rus", (json_int_t) ms);

    if (del == NULL || ngx_http_tent_json_cleanup(r->pool, del) != NGX_OK) {
        json_decref(del);
        return ngx_http_tent_internal_error(r, "making the delete post");
    }

    prev = json_object_get(st->post, "app");
    if (prev) {
        json_object_set(del, "app", prev);
    }

    /*
     * Compare on the post itself (put back as it was, then deleted by the
     * batch: later operations in a batch win), so a concurrent change
     * makes this fail rather than be lost.
     */

    if (ngx_http_tent_json_dump(r->pool, del, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r,
                   "writing the delete post as JSON");
    }

    if (ngx_http_tent_store_cas(wop, &cur, &st->raw, &st->raw) != NGX_OK
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &st->post_entity,
                                  &id, -1, &key)
           != NGX_OK
        || ngx_http_tent_store_write_put(wop, &key, &value) != NGX_OK
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &st->post_entity,
                                  &id, 1, &key)
           != NGX_OK
        || ngx_http_tent_store_write_put(wop, &key, &value) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "adding the delete post to the batch");
    }

    if (ngx_http_tent_post_index(r, ctx, wop, del, 0) != NGX_OK) {
        return ngx_http_tent_internal_error(r,
                   "adding the delete post's index rows to the batch");
    }

    if (ngx_http_tent_delivery_mark(r->pool, &ctx->entity, wop, del)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "adding the delete post's outbox row to the batch");
    }

    if (ngx_http_tent_store_write_del(wop, &cur) != NGX_OK) {
        return ngx_http_tent_internal_error(r,
                   "adding the post's removal to the batch");
    }

    if (ngx_http_tent_post_index(r, ctx, wop, st->post, 1) != NGX_OK) {
        return ngx_http_tent_internal_error(r,
                   "removing the post's index rows in the batch");
    }

    /* every version of the deleted post */

    ngx_http_tent_store_rewind(op);

    while (ngx_http_tent_store_next(op, &k, &v) == NGX_OK) {
        if (ngx_http_tent_store_write_del(wop, &k) != NGX_OK) {
            return ngx_http_tent_internal_error(r,
                       "adding a version's removal to the batch");
        }

        if (ngx_http_tent_blob_refs_raw(r, st->refs, &v) != NGX_OK) {
            return ngx_http_tent_internal_error(r,
                       "listing the references of a version removed");
        }
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent posts: post \"%V\": removal of the post and its "
                   "%i versions, delete post \"%V\": batch built, submitted",
                   &st->id, count, &id);

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_post_changed);
}
