
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The inbox's activities on a post it keeps (docs/activitypub.md "The
 * inbox", "Activities"): Update of a Note, an Article or a Question by
 * its author makes a new version of the received post a Create made;
 * Delete of it removes our copy, its versions and feed rows, as a Tent
 * delete post removes a received copy.  The post is found under its
 * author (the verified actor) and ngx_http_tent_ap_post_id() of the
 * object's id: an actor can only ever name its own posts, never another
 * actor's nor ours.  Anything not held: 202, ignored.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_ap.h"
#include "ngx_http_tent_ap_map.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_receive.h"
#include "ngx_http_tent_store.h"


typedef struct {
    ngx_http_tent_ap_verify_t      *verify;
    ngx_http_tent_received_t        received;
    ngx_uint_t                      update;
} ngx_http_tent_ap_held_t;


static ngx_int_t ngx_http_tent_ap_held_202(ngx_http_request_t *r);
static ngx_int_t ngx_http_tent_ap_held_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_held_t *st);
static ngx_int_t ngx_http_tent_ap_held_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_held_done(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


static ngx_int_t
ngx_http_tent_ap_held_202(ngx_http_request_t *r)
{
    ngx_str_t  body = ngx_string("{}");

    return ngx_http_tent_send_body(r, NGX_HTTP_ACCEPTED, &body);
}


/*
 * Update of an object: mapped again as a Create's is (the allow-list
 * again, the same refusals: an object not attributed to the actor or
 * whose id is on another origin is refused by the mapping), then a new
 * version of the post we hold, if we hold it.
 */

ngx_int_t
ngx_http_tent_ap_inbox_update(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_verify_t *v)
{
    u_char                    pid[NGX_HTTP_TENT_AP_POST_ID_LEN + 2];
    json_t                   *object, *post;
    ngx_str_t                 oid;
    ngx_int_t                 status;
    const char               *error;
    ngx_http_tent_ap_held_t  *st;

    object = json_object_get(v->activity, "object");

    if (!json_is_object(object)
        || ngx_http_tent_json_str(object, "id", &oid) != NGX_OK)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: an Update by \"%V\" of no embedded "
                       "object, ignored", &v->actor);
        return ngx_http_tent_ap_held_202(r);
    }

    post = ngx_http_tent_json_own(r->pool,
                                  ngx_http_tent_ap_to_post(r->pool, object,
                                                           &v->actor,
                                                           &error));
    if (post == NULL) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: an Update by \"%V\" not kept: %s",
                       &v->actor, error ? error : "no memory");
        return ngx_http_tent_ap_held_202(r);
    }

    if (ngx_http_tent_ap_post_id(&oid, pid) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "making the post's id");
    }

    if (json_object_set_new(post, "id",
                            json_stringn((char *) pid,
                                         NGX_HTTP_TENT_AP_POST_ID_LEN))
        != 0
        || json_object_set_new(post, "entity",
                               ngx_http_tent_json_string(&v->actor))
           != 0)
    {
        return ngx_http_tent_internal_error(r, "building the post");
    }

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_held_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the post state");
    }

    st->verify = v;
    st->update = 1;

    /* the version is set once the copy is read: 1 until then */

    status = ngx_http_tent_received_parse(r->pool, post, &v->actor, 0,
                                          &st->received, &error);

    if (status == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, error);
    }

    /* the validation keeps Tent's fields: the object's id etc. put back */

    if (status == NGX_OK
        && json_object_get(post, "activitypub")
        && json_object_set(st->received.post, "activitypub",
                           json_object_get(post, "activitypub"))
           != 0)
    {
        return ngx_http_tent_internal_error(r, "keeping the object's id");
    }

    if (status == NGX_OK
        && json_dumpb(st->received.post, NULL, 0, JSON_COMPACT)
           > NGX_HTTP_TENT_RECEIVED_MAX)
    {
        status = NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
        error = "over 65536 bytes";
    }

    if (status != NGX_OK) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent inbox: an Update by \"%V\" not kept: %s",
                      &v->actor, error);
        return ngx_http_tent_ap_held_202(r);
    }

    /* no delete post nor profile here: a mapped post is neither */

    st->received.deletes.len = 0;
    st->received.profile = 0;

    return ngx_http_tent_ap_held_get(r, ctx, st);
}


/* Delete of an object: its id as a string, or an object with an "id" */

ngx_int_t
ngx_http_tent_ap_inbox_delete(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_verify_t *v)
{
    u_char                   *pid;
    json_t                   *object;
    ngx_int_t                 rc;
    ngx_str_t                 oid;
    ngx_http_tent_ap_held_t  *st;

    object = json_object_get(v->activity, "object");

    if (json_is_object(object)) {
        object = json_object_get(object, "id");
    }

    if (!json_is_string(object) || json_string_length(object) == 0) {
        return ngx_http_tent_ap_held_202(r);
    }

    oid.data = (u_char *) json_string_value(object);
    oid.len = json_string_length(object);

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_held_t));
    pid = ngx_pnalloc(r->pool, NGX_HTTP_TENT_AP_POST_ID_LEN + 2);

    if (st == NULL || pid == NULL
        || ngx_http_tent_ap_post_id(&oid, pid) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "making the post's id");
    }

    st->verify = v;
    st->received.deletes.data = pid;
    st->received.deletes.len = NGX_HTTP_TENT_AP_POST_ID_LEN;

    /* the actor under the one spelling its posts are kept by */

    rc = ngx_http_tent_entity_canonical(r->pool, &v->actor,
                                        &st->received.entity);
    if (rc == NGX_DECLINED) {
        return ngx_http_tent_ap_held_202(r);
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_internal_error(r, "spelling the actor");
    }

    return ngx_http_tent_ap_held_get(r, ctx, st);
}


/* the copy we hold: the post row of (the actor, the object's post id) */

static ngx_int_t
ngx_http_tent_ap_held_get(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_held_t *st)
{
    ngx_str_t                  key, *id;
    ngx_http_tent_store_op_t  *op;

    id = st->update ? &st->received.id : &st->received.deletes;

    if (ngx_http_tent_post_key(r->pool, &ctx->entity, &st->received.entity,
                               id, -1, &key)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the post's key");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL || ngx_http_tent_store_get(op, &key) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "building the post's read");
    }

    ctx->state = st;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent inbox: %s of post \"%V\" of \"%V\"",
                   st->update ? "Update" : "Delete", id,
                   &st->received.entity);

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_held_read);
}


static ngx_int_t
ngx_http_tent_ap_held_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                    *copy;
    ngx_int_t                  rc;
    json_int_t                 version;
    ngx_str_t                  value;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_ap_held_t   *st;
    ngx_http_tent_store_op_t  *wop;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: a post we do not hold, ignored");
        return ngx_http_tent_ap_held_202(r);
    }

    ngx_http_tent_store_value(op, &value);

    copy = ngx_http_tent_json_load(r, &value);
    if (copy == NULL) {
        return ngx_http_tent_internal_error(r, "reading our copy");
    }

    if (!st->update) {
        wop = ngx_http_tent_received_delete(r->pool, r->connection->log,
                                            &ctx->entity, &st->received,
                                            copy, &value);
        if (wop == NULL) {
            return ngx_http_tent_internal_error(r,
                                           "building the delete's batch");
        }

        return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_ap_held_done);
    }

    /* the next version; the copy's times kept (its feed rows' keys) */

    version = json_integer_value(json_object_get(copy, "version"));

    if (version < 1 || version >= 1000) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent inbox: an Update of a post at version %L, "
                      "not kept", (int64_t) version);
        return ngx_http_tent_ap_held_202(r);
    }

    st->received.version = version + 1;

    if (json_object_set_new(st->received.post, "version",
                            json_integer(st->received.version))
        != 0)
    {
        return ngx_http_tent_internal_error(r, "setting the version");
    }

    /* compared with the copy read: a concurrent Update wins, this is 202 */

    wop = ngx_http_tent_received_batch(r->pool, r->connection->log,
                                       &ctx->entity, &st->received, copy,
                                       &value);
    if (wop == NULL) {
        return ngx_http_tent_internal_error(r, "building the post's batch");
    }

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_ap_held_done);
}


static ngx_int_t
ngx_http_tent_ap_held_done(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t  status;

    if (op->status != NGX_HTTP_TENT_STORE_OK
        && op->status != NGX_HTTP_TENT_STORE_CONFLICT)
    {
        status = ngx_http_tent_store_http_status(op);
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent inbox: post %s",
                   op->status == NGX_HTTP_TENT_STORE_OK
                   ? "written" : "changed meanwhile, left");

    return ngx_http_tent_ap_held_202(r);
}
