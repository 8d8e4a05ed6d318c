
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * A post received from another entity, without a request: the rules of
 * spec 7.4 that POST /notifications/:id applies (the post must be the
 * sender's, valid, with a valid id and version), the batch that stores a
 * first copy or a newer version (a duplicate (entity, id, version)
 * changes nothing), and the batch a delete post's target goes in.  Same-
 * node delivery runs the whole of it here, in the store owner, through
 * ngx_http_tent_notification_receive().
 */


#include "ngx_http_tent_module.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_receive.h"
#include "ngx_http_tent_store.h"


typedef struct {
    ngx_http_tent_received_t        st;
    ngx_pool_t                     *pool;
    ngx_log_t                      *log;
    ngx_str_t                       owner;
    ngx_http_tent_receive_pt        handler;
    void                           *data;
} ngx_http_tent_receive_t;


static ngx_int_t ngx_http_tent_receive_write(ngx_http_tent_receive_t *rc,
    json_t *current, ngx_str_t *raw);
static void ngx_http_tent_receive_stored(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_receive_target(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_receive_deleted(ngx_http_tent_store_op_t *op);
static ngx_uint_t ngx_http_tent_receive_status(ngx_http_tent_store_op_t *op);


/*
 * The checks of a received post of "entity", and the fields that are
 * ours to set.  NGX_OK; or the HTTP status of a refusal (403, 422) with
 * its message; or NGX_ERROR with what failed.
 */

ngx_int_t
ngx_http_tent_received_parse(ngx_pool_t *pool, json_t *body,
    ngx_str_t *entity, ngx_uint_t mention, ngx_http_tent_received_t *st,
    const char **error)
{
    json_t     *post, *v;
    ngx_int_t   rc;
    ngx_str_t   type;

    *error = NULL;
    post = ngx_http_tent_post_validate(body, 1, error);

    if (post == NULL) {
        if (*error == NULL) {
            *error = "copying the received post";
            return NGX_ERROR;
        }

        return 422;
    }

    if (ngx_http_tent_json_cleanup(pool, post) != NGX_OK) {
        json_decref(post);
        *error = "keeping the received post";
        return NGX_ERROR;
    }

    if (ngx_http_tent_json_str(post, "entity", &st->entity) != NGX_OK
        || !ngx_http_tent_entity_eq(&st->entity, entity))
    {
        *error = "The post's entity is not the followed entity";
        return NGX_HTTP_FORBIDDEN;
    }

    /*
     * Kept under the entity's one spelling, whatever the sender wrote:
     * "http://H/" and "http://h" must not make two copies of a post
     */

    rc = ngx_http_tent_entity_canonical(pool, &st->entity, &st->entity);

    if (rc == NGX_DECLINED) {
        *error = "The post's entity is not the followed entity";
        return NGX_HTTP_FORBIDDEN;
    }

    if (rc != NGX_OK) {
        *error = "spelling the post's entity";
        return NGX_ERROR;
    }

    if (json_object_set_new(post, "entity",
                            ngx_http_tent_json_string(&st->entity))
        != 0)
    {
        *error = "setting the post's entity";
        return NGX_ERROR;
    }

    if (ngx_http_tent_json_str(post, "id", &st->id) != NGX_OK
        || ngx_http_tent_token_valid(&st->id, 64) != NGX_OK)
    {
        *error = "Invalid post id";
        return 422;
    }

    /* validation keeps what a client may send: the version is the body's */

    v = json_object_get(body, "version");
    st->version = json_is_integer(v) ? json_integer_value(v) : 1;

    if (st->version < 1 || st->version > 0x7fffffff) {
        *error = "Invalid post version";
        return 422;
    }

    /* ours to set: when we received it, and the feed's tie-breaker */

    json_object_set_new(post, "version", json_integer(st->version));
    json_object_set_new(post, "received_at", json_integer(ngx_time()));
    json_object_set_new(post, "rus",
                        json_integer((json_int_t) ngx_http_tent_now_us()));
    json_object_set_new(post, "published_at",
                        json_integer(ngx_http_tent_post_published_at(
                            json_object_get(post, "published_at"),
                            ngx_time())));

    if (!json_is_integer(json_object_get(post, "updated_at"))) {
        json_object_set(post, "updated_at",
                        json_object_get(post, "published_at"));
    }

    if (json_object_get(post, "attachments") == NULL) {
        json_object_set_new(post, "attachments", json_array());
    }

    /* a delete post: our copy of the post it deletes goes (spec 7.4) */

    if (ngx_http_tent_json_str(post, "type", &type) == NGX_OK
        && ngx_http_tent_post_type_is(&type, "delete")
        && ngx_http_tent_json_str(json_object_get(post, "content"), "id",
                                  &st->deletes)
           == NGX_OK
        && ngx_http_tent_token_valid(&st->deletes, 64) != NGX_OK)
    {
        st->deletes.len = 0;
    }

    st->profile = ngx_http_tent_post_type_is(&type, "profile");

    if (mention) {
        st->deletes.len = 0;
        st->profile = 0;
    }

    st->post = post;

    return NGX_OK;
}


/*
 * A first copy: the post row only if absent.  A newer version of a copy
 * we have keeps the first copy's times, so its index keys stay the same.
 */

ngx_http_tent_store_op_t *
ngx_http_tent_received_batch(ngx_pool_t *pool, ngx_log_t *log,
    ngx_str_t *owner, ngx_http_tent_received_t *st, json_t *current,
    ngx_str_t *raw)
{
    ngx_str_t                  key, value;
    ngx_http_tent_store_op_t  *op;

    if (ngx_http_tent_received_value(pool, st, current, &value) != NGX_OK
        || ngx_http_tent_post_key(pool, owner, &st->entity, &st->id, -1,
                                  &key)
           != NGX_OK)
    {
        return NULL;
    }

    op = ngx_http_tent_store_op_create(pool, log);

    if (op == NULL
        || ngx_http_tent_store_cas(op, &key, raw, &value) != NGX_OK
        || ngx_http_tent_received_rows(pool, owner, op, st, &value, 0)
           != NGX_OK)
    {
        return NULL;
    }

    return op;
}


/*
 * The copy as it is stored: a newer version of a copy we have keeps the
 * first copy's times, so its index keys stay the same.
 */

ngx_int_t
ngx_http_tent_received_value(ngx_pool_t *pool, ngx_http_tent_received_t *st,
    json_t *current, ngx_str_t *value)
{
    static const char  *kept[] = { "received_at", "published_at",
                                   "updated_at", "rus", NULL };
    const char        **k;

    if (current) {
        for (k = kept; *k; k++) {
            json_object_set(st->post, *k, json_object_get(current, *k));
        }
    }

    return ngx_http_tent_json_dump(pool, st->post, value);
}


/*
 * The copy's rows into a write "op": the post row itself (with
 * NGX_HTTP_TENT_RECEIVED_ROW; else "op" is its compare-and-set), its
 * version, its feed rows, and the outbox row that tells the apps
 * subscribed (spec 7.4, 9.2), unless the caller knows none is
 * (NGX_HTTP_TENT_RECEIVED_NO_APPS).
 */

ngx_int_t
ngx_http_tent_received_rows(ngx_pool_t *pool, ngx_str_t *owner,
    ngx_http_tent_store_op_t *op, ngx_http_tent_received_t *st,
    ngx_str_t *value, ngx_uint_t flags)
{
    ngx_str_t  key, vkey;

    if ((flags & NGX_HTTP_TENT_RECEIVED_ROW)
        && (ngx_http_tent_post_key(pool, owner, &st->entity, &st->id, -1,
                                   &key)
            != NGX_OK
            || ngx_http_tent_store_write_put(op, &key, value) != NGX_OK))
    {
        return NGX_ERROR;
    }

    if (ngx_http_tent_post_key(pool, owner, &st->entity, &st->id,
                               st->version, &vkey)
        != NGX_OK
        || ngx_http_tent_store_write_put(op, &vkey, value) != NGX_OK
        || ngx_http_tent_post_index_rows(pool, owner, op, st->post, 0)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (flags & NGX_HTTP_TENT_RECEIVED_NO_APPS) {
        return NGX_OK;
    }

    return ngx_http_tent_delivery_mark(pool, owner, op, st->post);
}


/* the copy a delete post names: it and its feed rows go, its versions too */

ngx_http_tent_store_op_t *
ngx_http_tent_received_delete(ngx_pool_t *pool, ngx_log_t *log,
    ngx_str_t *owner, ngx_http_tent_received_t *st, json_t *copy,
    ngx_str_t *value)
{
    ngx_str_t                  key;
    ngx_http_tent_store_op_t  *wop;

    if (ngx_http_tent_post_key(pool, owner, &st->entity, &st->deletes, -1,
                               &key)
        != NGX_OK)
    {
        return NULL;
    }

    wop = ngx_http_tent_store_op_create(pool, log);

    if (wop == NULL
        || ngx_http_tent_store_cas(wop, &key, value, value) != NGX_OK
        || ngx_http_tent_received_delete_rows(pool, owner, wop, st, copy)
           != NGX_OK)
    {
        return NULL;
    }

    return wop;
}


/* the deleted copy's rows into a write: it, its feed rows, its versions */

ngx_int_t
ngx_http_tent_received_delete_rows(ngx_pool_t *pool, ngx_str_t *owner,
    ngx_http_tent_store_op_t *wop, ngx_http_tent_received_t *st,
    json_t *copy)
{
    ngx_int_t  v;
    ngx_str_t  key;

    if (ngx_http_tent_post_key(pool, owner, &st->entity, &st->deletes, -1,
                               &key)
        != NGX_OK
        || ngx_http_tent_store_write_del(wop, &key) != NGX_OK
        || ngx_http_tent_post_index_rows(pool, owner, wop, copy, 1) != NGX_OK)
    {
        return NGX_ERROR;
    }

    for (v = 1; v <= json_integer_value(json_object_get(copy, "version"))
                && v <= 1000; v++)
    {
        if (ngx_http_tent_post_key(pool, owner, &st->entity, &st->deletes, v,
                                   &key)
            != NGX_OK
            || ngx_http_tent_store_write_del(wop, &key) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * The whole of a notification of "sender" to "owner" without a request:
 * checked, stored, a delete's target removed; "handler" gets the status
 * the HTTP route would have answered (200, 403, 409, 422, 500, 503),
 * once, maybe before this returns.  A profile post is stored, but its
 * sender's profile is not read again: that is the HTTP route's.
 */

ngx_int_t
ngx_http_tent_notification_receive(ngx_pool_t *pool, ngx_log_t *log,
    ngx_str_t *owner, json_t *body, ngx_str_t *sender,
    ngx_http_tent_receive_pt handler, void *data)
{
    ngx_int_t                 status;
    const char               *error;
    ngx_http_tent_receive_t  *rc;

    rc = ngx_pcalloc(pool, sizeof(ngx_http_tent_receive_t));
    if (rc == NULL) {
        return NGX_ERROR;
    }

    rc->pool = pool;
    rc->log = log;
    rc->owner = *owner;
    rc->handler = handler;
    rc->data = data;

    status = ngx_http_tent_received_parse(pool, body, sender, 0, &rc->st,
                                          &error);

    if (status != NGX_OK) {
        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, log, 0,
                       "tent receive: from \"%V\" to \"%V\": %s",
                       sender, owner, error);

        if (status == NGX_ERROR) {
            ngx_log_error(NGX_LOG_ERR, log, 0, "tent receive: %s failed",
                          error);
            status = NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        handler(data, status);
        return NGX_OK;
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, log, 0,
                   "tent receive: post \"%V\" version %L of \"%V\" to "
                   "\"%V\": valid", &rc->st.id, (int64_t) rc->st.version,
                   &rc->st.entity, owner);

    if (ngx_http_tent_receive_write(rc, NULL, NULL) != NGX_OK) {
        handler(data, NGX_HTTP_INTERNAL_SERVER_ERROR);
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_receive_write(ngx_http_tent_receive_t *rc, json_t *current,
    ngx_str_t *raw)
{
    ngx_http_tent_store_op_t  *op;

    op = ngx_http_tent_received_batch(rc->pool, rc->log, &rc->owner, &rc->st,
                                      current, raw);
    if (op == NULL) {
        ngx_log_error(NGX_LOG_ERR, rc->log, 0,
                      "tent receive: building the post's batch failed");
        return NGX_ERROR;
    }

    op->handler = ngx_http_tent_receive_stored;
    op->data = rc;

    /* into its owner only while active (docs/store.md, the fence) */

    if (ngx_http_tent_store_fence(op, &rc->owner, 0) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_tent_store_submit(op);
}


static void
ngx_http_tent_receive_stored(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_receive_t *rc = op->data;

    json_t                    *current;
    ngx_str_t                  key, value;
    ngx_uint_t                 status;
    ngx_http_tent_store_op_t  *get;

    status = ngx_http_tent_receive_status(op);
    if (status != NGX_HTTP_OK) {
        rc->handler(rc->data, status);
        return;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, rc->log, 0,
                   "tent receive: post \"%V\" of \"%V\": %s",
                   &rc->st.id, &rc->st.entity,
                   op->status == NGX_HTTP_TENT_STORE_OK
                   ? "stored" : "a copy is there");

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        if (rc->st.deletes.len == 0) {
            rc->handler(rc->data, NGX_HTTP_OK);
            return;
        }

        get = ngx_http_tent_store_op_create(rc->pool, rc->log);

        if (get == NULL
            || ngx_http_tent_post_key(rc->pool, &rc->owner, &rc->st.entity,
                                      &rc->st.deletes, -1, &key)
               != NGX_OK
            || ngx_http_tent_store_get(get, &key) != NGX_OK)
        {
            goto failed;
        }

        get->handler = ngx_http_tent_receive_target;
        get->data = rc;

        if (ngx_http_tent_store_submit(get) != NGX_OK) {
            goto failed;
        }

        return;
    }

    /* we have a copy: only a newer version replaces it */

    ngx_http_tent_store_value(op, &value);

    current = ngx_http_tent_json_parse(&value, rc->log);

    if (current == NULL
        || ngx_http_tent_json_cleanup(rc->pool, current) != NGX_OK)
    {
        json_decref(current);
        goto failed;
    }

    if (json_integer_value(json_object_get(current, "version"))
        >= rc->st.version)
    {
        rc->handler(rc->data, NGX_HTTP_OK);
        return;
    }

    if (ngx_http_tent_receive_write(rc, current, &value) == NGX_OK) {
        return;
    }

failed:

    ngx_log_error(NGX_LOG_ERR, rc->log, 0,
                  "tent receive: post \"%V\" of \"%V\": a step failed",
                  &rc->st.id, &rc->st.entity);
    rc->handler(rc->data, NGX_HTTP_INTERNAL_SERVER_ERROR);
}


static void
ngx_http_tent_receive_target(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_receive_t *rc = op->data;

    json_t                    *copy;
    ngx_str_t                  value;
    ngx_uint_t                 status;
    ngx_http_tent_store_op_t  *wop;

    status = ngx_http_tent_receive_status(op);
    if (status != NGX_HTTP_OK || op->status == NGX_HTTP_TENT_STORE_NOT_FOUND)
    {
        rc->handler(rc->data, status);
        return;
    }

    ngx_http_tent_store_value(op, &value);

    copy = ngx_http_tent_json_parse(&value, rc->log);

    if (copy == NULL || ngx_http_tent_json_cleanup(rc->pool, copy) != NGX_OK)
    {
        json_decref(copy);
        goto failed;
    }

    wop = ngx_http_tent_received_delete(rc->pool, rc->log, &rc->owner,
                                        &rc->st, copy, &value);
    if (wop == NULL) {
        goto failed;
    }

    wop->handler = ngx_http_tent_receive_deleted;
    wop->data = rc;

    if (ngx_http_tent_store_fence(wop, &rc->owner, 0) == NGX_OK
        && ngx_http_tent_store_submit(wop) == NGX_OK)
    {
        return;
    }

failed:

    ngx_log_error(NGX_LOG_ERR, rc->log, 0,
                  "tent receive: the post \"%V\" deletes: a step failed",
                  &rc->st.deletes);
    rc->handler(rc->data, NGX_HTTP_INTERNAL_SERVER_ERROR);
}


/* the copy went; one changed meanwhile is 409, as the route answers */

static void
ngx_http_tent_receive_deleted(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_receive_t *rc = op->data;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, rc->log, 0,
                   "tent receive: the post \"%V\" deletes: store status "
                   "%ui", &rc->st.deletes, op->status);

    rc->handler(rc->data, op->status == NGX_HTTP_TENT_STORE_CONFLICT
                          ? NGX_HTTP_CONFLICT
                          : ngx_http_tent_receive_status(op));
}


/* a store answer as the route's status: 200 goes on (found, or not) */

static ngx_uint_t
ngx_http_tent_receive_status(ngx_http_tent_store_op_t *op)
{
    switch (op->status) {

    case NGX_HTTP_TENT_STORE_OK:
    case NGX_HTTP_TENT_STORE_NOT_FOUND:
    case NGX_HTTP_TENT_STORE_CONFLICT:
        return NGX_HTTP_OK;

    case NGX_HTTP_TENT_STORE_UNAVAILABLE:
    case NGX_HTTP_TENT_STORE_RETRY:
        return NGX_HTTP_SERVICE_UNAVAILABLE;

    case NGX_HTTP_TENT_STORE_FENCED:
        /* disabled or deleted since the request looked it up */
        return ngx_http_tent_store_http_status(op);

    default:
        ngx_log_error(NGX_LOG_ERR, op->log, 0,
                      "tent receive: a store step failed (status %ui)",
                      op->status);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
}
