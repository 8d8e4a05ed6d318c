
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * A post received from another entity, without a request: the rules of
 * spec 7.4 that POST /notifications/:id applies (the post must be the
 * sender's, valid, with a valid id and version), the batch that stores a
 * first copy or a newer version (a duplicate (entity, id, version)
 * changes nothing), and the batch a delete post's target goes in.
 * POST /notifications/:id (ngx_http_tent_notifications.c) submits those
 * batches; same-node delivery (ngx_http_tent_local_write.c) takes the
 * checks and the rows (ngx_http_tent_received_parse(), _value(), _rows(),
 * _delete_rows()) into the one read and write of its batch.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_receive.h"
#include "ngx_http_tent_store.h"


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
