
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Likes of our posts (issue #29, docs/activitypub.md "Likes"): a signed
 * Like whose object is one of our post ids is one row per (post, actor),
 *
 *     <entity> 0x00 'L' <post id> 0x00 <actor>     {"at": seconds}
 *
 * and the post's count, the row of the empty actor,
 *
 *     <entity> 0x00 'L' <post id> 0x00             "<n>"
 *
 * Every change of a post's likes is a compare-and-set of its count with
 * the actor's row put or deleted in the same batch, so the count is the
 * rows' number: a Like again finds its row (nothing written), two at
 * once conflict and the second reads again.  Undo(Like) removes the row.
 * The count is shown in the post's ActivityPub object (likes) and to
 * the owner's apps in GET {api}/posts/:id (activitypub.likes); the
 * post's DELETE removes the rows.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_ap.h"
#include "ngx_http_tent_ap_map.h"
#include "ngx_http_tent_blocks.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"


/* a post's likes at most (each a verified actor's row), tries of a CAS */
#define NGX_HTTP_TENT_AP_LIKES_MAX     100000
#define NGX_HTTP_TENT_AP_LIKES_TRIES   16

/* a post's rows removed in batches of so many */
#define NGX_HTTP_TENT_AP_LIKES_BATCH   1000


typedef struct {
    ngx_http_tent_ap_verify_t      *verify;
    ngx_str_t                       id;          /* our post's */
    ngx_str_t                       post_key;
    ngx_str_t                       count_key;
    ngx_str_t                       row_key;
    ngx_str_t                       end;         /* after the post's rows */
    json_t                         *out;
    void                           *saved;       /* the caller's state */
    ngx_http_tent_ap_likes_pt       next;
    ngx_uint_t                      undo;
    ngx_uint_t                      tries;
    ngx_uint_t                      object;      /* ActivityStreams */
} ngx_http_tent_ap_like_t;


static ngx_int_t ngx_http_tent_ap_like_read(ngx_http_request_t *r,
    ngx_http_tent_ap_like_t *st);
static ngx_int_t ngx_http_tent_ap_like_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_uint_t ngx_http_tent_ap_like_may(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_like_t *st, ngx_str_t *raw);
static ngx_int_t ngx_http_tent_ap_like_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_like_keys(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_like_t *st);
static ngx_int_t ngx_http_tent_ap_like_202(ngx_http_request_t *r);
static ngx_int_t ngx_http_tent_ap_likes_count_read(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *id, json_t *out, ngx_uint_t object);
static ngx_int_t ngx_http_tent_ap_likes_counted(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_likes_scan(ngx_http_request_t *r,
    ngx_http_tent_ap_like_t *st);
static ngx_int_t ngx_http_tent_ap_likes_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_likes_removed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


static ngx_int_t
ngx_http_tent_ap_like_202(ngx_http_request_t *r)
{
    ngx_str_t  body = ngx_string("{}");

    return ngx_http_tent_send_body(r, NGX_HTTP_ACCEPTED, &body);
}


/* a count as stored: a decimal number, 0 when absent or not one */

static ngx_int_t
ngx_http_tent_ap_likes_n(ngx_uint_t found, ngx_str_t *value)
{
    ngx_int_t  n;

    if (!found || value->len == 0) {
        return 0;
    }

    n = ngx_atoi(value->data, value->len);

    return n == NGX_ERROR ? 0 : n;
}


/*
 * Like (undo 0) of "object", or Undo of a Like whose object it is (undo
 * 1): a string or an object with an "id".  Anything but one of our post
 * ids is ignored (202).
 */

ngx_int_t
ngx_http_tent_ap_inbox_like(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_verify_t *v, json_t *object, ngx_uint_t undo)
{
    u_char                    *p;
    ngx_str_t                  url, origin_api, id;
    ngx_http_tent_ap_like_t   *st;
    ngx_http_tent_srv_conf_t  *scf;

    if (json_is_object(object)) {
        object = json_object_get(object, "id");
    }

    if (ngx_http_tent_ap_url_of(object, &url) != NGX_OK) {
        return ngx_http_tent_ap_like_202(r);
    }

    /* blocked: refused as its Announce is; its Undo is taken */

    if (!undo && ngx_http_tent_blocks_has(ctx->blocks, &v->actor)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "The actor is blocked");
    }

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    origin_api.data = ngx_pnalloc(r->pool,
                                  ctx->origin.len + scf->api_root.len);
    if (origin_api.data == NULL) {
        return ngx_http_tent_internal_error(r, "building our URLs");
    }

    p = ngx_cpymem(origin_api.data, ctx->origin.data, ctx->origin.len);

    if (scf->api_root.len > 1) {
        p = ngx_cpymem(p, scf->api_root.data, scf->api_root.len);
    }

    origin_api.len = p - origin_api.data;

    if (ngx_http_tent_ap_object_post(&origin_api, &url, &id) != NGX_OK) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: a Like by \"%V\" of \"%V\", none of "
                       "ours, ignored", &v->actor, &url);
        return ngx_http_tent_ap_like_202(r);
    }

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_like_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the like");
    }

    st->verify = v;
    st->id = id;
    st->undo = undo;

    if (ngx_http_tent_ap_like_keys(r, ctx, st) != NGX_OK
        || ngx_http_tent_pair_key(r->pool, &ctx->entity,
                                  NGX_HTTP_TENT_TABLE_AP_LIKE, &st->id,
                                  &v->actor, &st->row_key)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the like's keys");
    }

    ctx->state = st;

    return ngx_http_tent_ap_like_read(r, st);
}


/* the post's key, its count's, the end of its rows */

static ngx_int_t
ngx_http_tent_ap_like_keys(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_like_t *st)
{
    if (ngx_http_tent_post_key(r->pool, &ctx->entity, &ctx->entity, &st->id,
                               -1, &st->post_key)
        != NGX_OK
        || ngx_http_tent_pair_key(r->pool, &ctx->entity,
                                  NGX_HTTP_TENT_TABLE_AP_LIKE, &st->id, NULL,
                                  &st->count_key)
           != NGX_OK
        || ngx_http_tent_pair_next(r->pool, &ctx->entity,
                                   NGX_HTTP_TENT_TABLE_AP_LIKE, &st->id,
                                   &st->end)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* the post, its count and the actor's row, in one read */

static ngx_int_t
ngx_http_tent_ap_like_read(ngx_http_request_t *r, ngx_http_tent_ap_like_t *st)
{
    ngx_http_tent_store_op_t  *op;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_mget(op) != NGX_OK
        || ngx_http_tent_store_mget_key(op, &st->post_key) != NGX_OK
        || ngx_http_tent_store_mget_key(op, &st->count_key) != NGX_OK
        || ngx_http_tent_store_mget_key(op, &st->row_key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the like's read");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_like_loaded);
}


static ngx_int_t
ngx_http_tent_ap_like_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    u_char                    *p;
    ngx_int_t                  rc, n;
    ngx_str_t                  post, count, row, next, value;
    ngx_uint_t                 has_post, has_count, has_row;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_ap_like_t   *st;
    ngx_http_tent_store_op_t  *wop;
    u_char                     buf[NGX_INT_T_LEN + sizeof("{\"at\":}")];

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (op->status != NGX_HTTP_TENT_STORE_OK
        || ngx_http_tent_store_next_value(op, &has_post, &post) != NGX_OK
        || ngx_http_tent_store_next_value(op, &has_count, &count) != NGX_OK
        || ngx_http_tent_store_next_value(op, &has_row, &row) != NGX_OK)
    {
        return ngx_http_tent_send_error(r,
                                        ngx_http_tent_store_http_status(op),
                                        NULL);
    }

    n = ngx_http_tent_ap_likes_n(has_count, &count);

    /* a Like again, an Undo of none: nothing to write */

    if (st->undo ? !has_row : has_row) {
        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: %s by \"%V\" of \"%V\": nothing to do",
                       st->undo ? "Undo(Like)" : "Like",
                       &st->verify->actor, &st->id);
        return ngx_http_tent_ap_like_202(r);
    }

    if (!st->undo) {
        if (!has_post || !ngx_http_tent_ap_like_may(r, ctx, st, &post)) {
            ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "tent inbox: a Like by \"%V\" of \"%V\": no post "
                           "of ours it may see, ignored",
                           &st->verify->actor, &st->id);
            return ngx_http_tent_ap_like_202(r);
        }

        if (n >= NGX_HTTP_TENT_AP_LIKES_MAX) {
            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          "tent inbox: post \"%V\" has %i likes, the "
                          "most counted: a Like by \"%V\" not counted",
                          &st->id, n, &st->verify->actor);
            return ngx_http_tent_ap_like_202(r);
        }
    }

    /* the count compared as read, the actor's row with it */

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);
    if (wop == NULL) {
        return ngx_http_tent_internal_error(r, "creating the store operation");
    }

    n += st->undo ? -1 : 1;

    next.data = ngx_pnalloc(r->pool, NGX_INT_T_LEN);
    if (next.data == NULL) {
        return ngx_http_tent_internal_error(r, "writing the count");
    }

    next.len = ngx_sprintf(next.data, "%i", ngx_max(n, 0)) - next.data;

    /* at 0 the count is put, then deleted: later writes of a batch win */

    if (ngx_http_tent_store_cas(wop, &st->count_key,
                                has_count ? &count : NULL, &next)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "adding the count to a batch");
    }

    if (st->undo) {
        if ((n <= 0
             && ngx_http_tent_store_write_del(wop, &st->count_key) != NGX_OK)
            || ngx_http_tent_store_write_del(wop, &st->row_key) != NGX_OK)
        {
            return ngx_http_tent_internal_error(r,
                                       "adding the like's removal to a batch");
        }

    } else {
        p = ngx_sprintf(buf, "{\"at\":%T}", ngx_time());

        value.len = p - buf;
        value.data = ngx_pnalloc(r->pool, value.len);
        if (value.data == NULL) {
            return ngx_http_tent_internal_error(r, "writing the like's row");
        }

        ngx_memcpy(value.data, buf, value.len);

        if (ngx_http_tent_store_write_put(wop, &st->row_key, &value)
            != NGX_OK)
        {
            return ngx_http_tent_internal_error(r,
                                       "adding the like's row to a batch");
        }
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent inbox: %s by \"%V\" of \"%V\": count %i, written",
                   st->undo ? "Undo(Like)" : "Like", &st->verify->actor,
                   &st->id, n);

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_ap_like_written);
}


/*
 * A Like counts on one of our posts (not another entity's we keep) that
 * the actor may see: a public one, or one that mentions it
 */

static ngx_uint_t
ngx_http_tent_ap_like_may(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_like_t *st, ngx_str_t *raw)
{
    size_t      i;
    json_t     *post, *m;
    ngx_str_t   entity;

    post = ngx_http_tent_json_load(r, raw);

    if (post == NULL
        || ngx_http_tent_json_str(post, "entity", &entity) != NGX_OK
        || entity.len != ctx->entity.len
        || ngx_strncmp(entity.data, ctx->entity.data, entity.len) != 0)
    {
        return 0;
    }

    if (json_is_true(json_object_get(json_object_get(post, "permissions"),
                                     "public")))
    {
        return 1;
    }

    json_array_foreach(json_object_get(post, "mentions"), i, m) {
        if (ngx_http_tent_json_str(m, "entity", &entity) == NGX_OK
            && ngx_http_tent_entity_eq(&entity, &st->verify->actor))
        {
            return 1;
        }
    }

    return 0;
}


/* written, or the count moved meanwhile: read again, a few times */

static ngx_int_t
ngx_http_tent_ap_like_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                 rc;
    ngx_http_tent_ctx_t      *ctx;
    ngx_http_tent_ap_like_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_CONFLICT
        && ++st->tries < NGX_HTTP_TENT_AP_LIKES_TRIES)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: the likes of \"%V\" moved, read again",
                       &st->id);
        return ngx_http_tent_ap_like_read(r, st);
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        return ngx_http_tent_send_error(r,
                                        op->status
                                        == NGX_HTTP_TENT_STORE_CONFLICT
                                        ? NGX_HTTP_SERVICE_UNAVAILABLE
                                        : ngx_http_tent_store_http_status(op),
                                        NULL);
    }

    return ngx_http_tent_ap_like_202(r);
}


/*
 * The count shown, when there are any: "out" is the post as the owner's
 * app reads it (activitypub.likes) or its ActivityPub object (object:
 * likes, a Collection's totalItems); then it is sent.
 */

ngx_int_t
ngx_http_tent_ap_likes_post(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_str_t *id, json_t *out)
{
    return ngx_http_tent_ap_likes_count_read(r, ctx, id, out, 0);
}


ngx_int_t
ngx_http_tent_ap_likes_object(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *id, json_t *obj)
{
    return ngx_http_tent_ap_likes_count_read(r, ctx, id, obj, 1);
}


static ngx_int_t
ngx_http_tent_ap_likes_count_read(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *id, json_t *out, ngx_uint_t object)
{
    ngx_http_tent_ap_like_t   *st;
    ngx_http_tent_store_op_t  *op;

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_like_t));
    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (st == NULL || op == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the likes' read");
    }

    st->id = *id;
    st->out = out;
    st->object = object;

    if (ngx_http_tent_ap_like_keys(r, ctx, st) != NGX_OK
        || ngx_http_tent_store_get(op, &st->count_key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the likes' read");
    }

    ctx->state = st;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_likes_counted);
}


static ngx_int_t
ngx_http_tent_ap_likes_counted(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                   *ap, *likes;
    ngx_int_t                 rc, n;
    ngx_str_t                 value, body;
    ngx_http_tent_ctx_t      *ctx;
    ngx_http_tent_ap_like_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (op->status != NGX_HTTP_TENT_STORE_OK
        && op->status != NGX_HTTP_TENT_STORE_NOT_FOUND)
    {
        return ngx_http_tent_send_error(r,
                                        ngx_http_tent_store_http_status(op),
                                        NULL);
    }

    ngx_str_null(&value);

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_store_value(op, &value);
    }

    n = ngx_http_tent_ap_likes_n(op->status == NGX_HTTP_TENT_STORE_OK,
                                 &value);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: post \"%V\": %i likes", &st->id, n);

    if (st->object) {

        /* as the outbox's Create wraps it, when none liked it */

        likes = n > 0 ? json_pack("{s:s, s:I}", "type", "Collection",
                                  "totalItems", (json_int_t) n)
                      : NULL;

        if ((n > 0
             && (likes == NULL
                 || json_object_set_new(st->out, "likes", likes) != 0))
            || json_object_set_new(st->out, "@context",
                                   json_string(NGX_HTTP_TENT_AP_CONTEXT))
               != 0
            || ngx_http_tent_json_dump(r->pool, st->out, &body) != NGX_OK)
        {
            return ngx_http_tent_internal_error(r,
                                                "writing the post's object");
        }

        return ngx_http_tent_ap_send(r, NGX_HTTP_OK, NGX_HTTP_TENT_AP_TYPE,
                                     &body);
    }

    if (n > 0) {
        ap = json_object_get(st->out, "activitypub");

        if (!json_is_object(ap)) {
            ap = json_object();
            if (ap == NULL
                || json_object_set_new(st->out, "activitypub", ap) != 0)
            {
                return ngx_http_tent_internal_error(r,
                                                    "writing the likes");
            }
        }

        if (json_object_set_new(ap, "likes", json_integer(n)) != 0) {
            return ngx_http_tent_internal_error(r, "writing the likes");
        }
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, st->out);
}


/*
 * A post of ours deleted: its count and likes' rows go, in batches,
 * then "next" (the delete's answer).  A Like read before the delete and
 * written after it may leave its row and a count (a few bytes, of an id
 * no post has).
 */

ngx_int_t
ngx_http_tent_ap_likes_forget(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_str_t *id, ngx_http_tent_ap_likes_pt next)
{
    ngx_http_tent_ap_like_t  *st;

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_like_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the likes' removal");
    }

    st->id = *id;
    st->next = next;
    st->saved = ctx->state;     /* the caller's, given back */

    if (ngx_http_tent_ap_like_keys(r, ctx, st) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "building the likes' keys");
    }

    ctx->state = st;

    return ngx_http_tent_ap_likes_scan(r, st);
}


static ngx_int_t
ngx_http_tent_ap_likes_scan(ngx_http_request_t *r, ngx_http_tent_ap_like_t *st)
{
    ngx_http_tent_store_op_t  *op;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_scan(op, &st->count_key, &st->end,
                                    NGX_HTTP_TENT_AP_LIKES_BATCH, 0)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the likes' scan");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_likes_scanned);
}


static ngx_int_t
ngx_http_tent_ap_likes_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                  rc;
    ngx_str_t                  k, v;
    ngx_uint_t                 n;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_ap_like_t   *st;
    ngx_http_tent_store_op_t  *wop;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (wop == NULL || ngx_http_tent_store_write(wop, 1) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "creating the store operation");
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK
        && op->status != NGX_HTTP_TENT_STORE_NOT_FOUND)
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "tent ap: the likes of the deleted post \"%V\" were "
                      "not read, not removed", &st->id);
    }

    n = 0;

    while (op->status == NGX_HTTP_TENT_STORE_OK
           && ngx_http_tent_store_next(op, &k, &v) == NGX_OK)
    {
        if (ngx_http_tent_store_write_del(wop, &k) != NGX_OK) {
            return ngx_http_tent_internal_error(r,
                                       "adding a like's removal to a batch");
        }

        n++;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: post \"%V\" deleted: %ui likes' rows removed",
                   &st->id, n);

    if (n == 0) {
        ctx->state = st->saved;
        return st->next(r, ctx);
    }

    st->tries = n;

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_ap_likes_removed);
}


static ngx_int_t
ngx_http_tent_ap_likes_removed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                 rc;
    ngx_http_tent_ctx_t      *ctx;
    ngx_http_tent_ap_like_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    /* a full batch: there may be more; the post is gone either way */

    if (op->status == NGX_HTTP_TENT_STORE_OK
        && st->tries == NGX_HTTP_TENT_AP_LIKES_BATCH)
    {
        return ngx_http_tent_ap_likes_scan(r, st);
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "tent ap: the likes of the deleted post \"%V\" were "
                      "not all removed", &st->id);
    }

    ctx->state = st->saved;

    return st->next(r, ctx);
}
