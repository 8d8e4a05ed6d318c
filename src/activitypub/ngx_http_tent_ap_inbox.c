
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The inbox (issue #29, docs/activitypub.md "The inbox"): POST
 * {api}/activitypub/NAME/inbox and {api}/activitypub/shared-inbox, for
 * the request's entity.  A bounded JSON object, signed by its actor
 * (ngx_http_tent_ap_verify.c); then a Follow of the entity makes an
 * ActivityPub follower (an "f" row and its "e" index, AP.md item 3) and
 * queues an Accept in the same write, or, the owner approving follows, a
 * request (ngx_http_tent_ap_requests.c); an Undo of it removes the
 * follower or the request; a Create of a Note, an Article or a Question
 * by a following of the entity, or addressed to it, is kept as a
 * received post of the actor (AP.md item 4); Update and Delete of such
 * a post are ngx_http_tent_ap_inbox_posts.c's, of the actor itself
 * here.  Every verified activity is answered 202, handled or not.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_ap.h"
#include "ngx_http_tent_ap_map.h"
#include "ngx_http_tent_blocks.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_domains.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_receive.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_store.h"


typedef struct {
    ngx_http_tent_ap_verify_t       verify;
    ngx_str_t                       follow_id;   /* Undo: the Follow's */
    ngx_uint_t                      embedded;    /* Undo: of us, embedded */
    ngx_str_t                       record_id;
    ngx_uint_t                      kind;        /* which of the three */
} ngx_http_tent_ap_inbox_t;


/* what answers a Follow: ours undone, or theirs accepted or rejected */
#define NGX_HTTP_TENT_AP_UNDO    0
#define NGX_HTTP_TENT_AP_ACCEPT  1
#define NGX_HTTP_TENT_AP_REJECT  2


static ngx_int_t ngx_http_tent_ap_inbox_body(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_ap_inbox_verified(ngx_http_request_t *r,
    ngx_http_tent_ap_verify_t *v);
static ngx_int_t ngx_http_tent_ap_accepted(ngx_http_request_t *r);
static ngx_int_t ngx_http_tent_ap_object_is(json_t *object,
    ngx_str_t *entity);
static ngx_int_t ngx_http_tent_ap_follow(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_inbox_t *st);
static ngx_int_t ngx_http_tent_ap_follow_existing(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_follow_stored(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_undo(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_inbox_t *st);
static ngx_int_t ngx_http_tent_ap_undo_existing(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_undo_record(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_create(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_inbox_t *st);
static ngx_int_t ngx_http_tent_ap_create_following(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_create_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_inbox_t *st);


ngx_int_t
ngx_http_tent_ap_inbox(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_int_t                  rc;
    ngx_http_tent_ap_inbox_t  *st;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    /* the module off, or an entity's own route of another name: 404 */

    if (!scf->activitypub
        || (ctx->nparams > 0 && ngx_http_tent_ap_own_route(r, ctx) != NGX_OK))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    if (r->method != NGX_HTTP_POST) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_ALLOWED,
                                        "Method Not Allowed");
    }

    if (r->headers_in.content_length_n > NGX_HTTP_TENT_AP_INBOX_MAX) {
        return ngx_http_tent_send_error(r, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                        "The activity is too large (over "
                                        "262144 bytes)");
    }

    /* chunked: no length to refuse it by, bounded as it arrives */

    ctx->body_max = NGX_HTTP_TENT_AP_INBOX_MAX;

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_inbox_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the inbox state");
    }

    /* no signature, or a malformed one: refused before the body is read */

    if (ngx_http_tent_ap_verify_init(r, &st->verify, &rc) != NGX_OK) {
        return rc;
    }

    ctx->state = st;

    return ngx_http_tent_read_json(r, ctx, ngx_http_tent_ap_inbox_body);
}


static ngx_int_t
ngx_http_tent_ap_inbox_body(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_http_tent_ap_inbox_t  *st;

    st = ctx->state;

    st->verify.activity = ctx->body;

    if (ngx_http_tent_body_bytes(r, &st->verify.body) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "reading the activity");
    }

    return ngx_http_tent_ap_verify(r, &st->verify,
                                   ngx_http_tent_ap_inbox_verified);
}


/* 202: verified, whatever was done with it */

static ngx_int_t
ngx_http_tent_ap_accepted(ngx_http_request_t *r)
{
    ngx_str_t  body = ngx_string("{}");

    return ngx_http_tent_send_body(r, NGX_HTTP_ACCEPTED, &body);
}


/* an object, a string or an object with an "id", that is the entity */

static ngx_int_t
ngx_http_tent_ap_object_is(json_t *object, ngx_str_t *entity)
{
    ngx_str_t  id;

    if (json_is_object(object)) {
        object = json_object_get(object, "id");
    }

    if (!json_is_string(object)) {
        return 0;
    }

    id.data = (u_char *) json_string_value(object);
    id.len = json_string_length(object);

    return ngx_http_tent_entity_eq(&id, entity);
}


static ngx_int_t
ngx_http_tent_ap_inbox_verified(ngx_http_request_t *r,
    ngx_http_tent_ap_verify_t *v)
{
    ngx_str_t                  type;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_ap_inbox_t  *st;

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    if (ngx_http_tent_json_str(v->activity, "type", &type) != NGX_OK) {
        ngx_str_set(&type, "");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent inbox: \"%V\" from \"%V\"", &type, &v->actor);

    if (type.len == 6 && ngx_strncmp(type.data, "Follow", 6) == 0) {
        return ngx_http_tent_ap_follow(r, ctx, st);
    }

    if (type.len == 4 && ngx_strncmp(type.data, "Undo", 4) == 0) {
        st->kind = NGX_HTTP_TENT_AP_UNDO;
        return ngx_http_tent_ap_undo(r, ctx, st);
    }

    if (type.len == 6 && ngx_strncmp(type.data, "Accept", 6) == 0) {
        st->kind = NGX_HTTP_TENT_AP_ACCEPT;
        return ngx_http_tent_ap_undo(r, ctx, st);
    }

    if (type.len == 6 && ngx_strncmp(type.data, "Reject", 6) == 0) {
        st->kind = NGX_HTTP_TENT_AP_REJECT;
        return ngx_http_tent_ap_undo(r, ctx, st);
    }

    /*
     * What keeps or changes a post here: not from a domain the operator
     * blocked, though the actor's key was kept before the block (a key
     * lives an hour); undoing and deleting stay open (they only remove)
     */

    if (((type.len == 6
          && (ngx_strncmp(type.data, "Create", 6) == 0
              || ngx_strncmp(type.data, "Update", 6) == 0))
         || (type.len == 8 && ngx_strncmp(type.data, "Announce", 8) == 0))
        && ngx_http_tent_domains_entity(&v->actor))
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: \"%V\": domain blocked", &v->actor);

        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                   "The actor's domain is blocked on this host");
    }

    if (type.len == 6 && ngx_strncmp(type.data, "Create", 6) == 0) {
        return ngx_http_tent_ap_create(r, ctx, st);
    }

    /* Update(Person), Delete of the actor: its own; else of a post */

    if (type.len == 6 && ngx_strncmp(type.data, "Update", 6) == 0) {
        if (ngx_http_tent_ap_object_is(json_object_get(v->activity, "object"),
                                       &v->actor))
        {
            ngx_http_tent_ap_verify_forget(v);
            return ngx_http_tent_ap_inbox_person(r, ctx, v);
        }

        return ngx_http_tent_ap_inbox_update(r, ctx, v);
    }

    if (type.len == 6 && ngx_strncmp(type.data, "Delete", 6) == 0) {
        if (ngx_http_tent_ap_object_is(json_object_get(v->activity, "object"),
                                       &v->actor))
        {
            /* the account gone: its follower record with it, as an Undo */

            ngx_http_tent_ap_verify_forget(v);
            st->kind = NGX_HTTP_TENT_AP_UNDO;
            st->embedded = 1;

            return ngx_http_tent_store_get_request(r,
                                        NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY,
                                        &v->actor,
                                        ngx_http_tent_ap_undo_existing);
        }

        return ngx_http_tent_ap_inbox_delete(r, ctx, v);
    }

    if (type.len == 8 && ngx_strncmp(type.data, "Announce", 8) == 0) {
        return ngx_http_tent_ap_inbox_announce(r, ctx, v);
    }

    /* Like of one of our posts: counted (docs/activitypub.md "Likes") */

    if (type.len == 4 && ngx_strncmp(type.data, "Like", 4) == 0) {
        return ngx_http_tent_ap_inbox_like(r, ctx, v,
                                           json_object_get(v->activity,
                                                           "object"),
                                           0);
    }

    return ngx_http_tent_ap_accepted(r);
}


/*
 * Follow of the entity: a follower, unless the owner blocked the actor
 * or the operator its domain; a follower already (the same actor): no
 * second record.  A Follow of anyone else is ignored.
 */

static ngx_int_t
ngx_http_tent_ap_follow(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_inbox_t *st)
{
    ngx_str_t                   ekey, skey;
    ngx_http_tent_ap_verify_t  *v;
    ngx_http_tent_store_op_t   *op;

    v = &st->verify;

    if (!ngx_http_tent_ap_object_is(json_object_get(v->activity, "object"),
                                    &ctx->entity))
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: a Follow of another actor than \"%V\", "
                       "ignored", &ctx->entity);
        return ngx_http_tent_ap_accepted(r);
    }

    if (ngx_http_tent_blocks_has(ctx->blocks, &v->actor)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "The actor is blocked");
    }

    if (ngx_http_tent_domains_entity(&v->actor)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                   "The actor's domain is blocked on this host");
    }

    if (v->inbox.len == 0
        || (ngx_strncasecmp(v->inbox.data, (u_char *) "https://", 8) != 0
            && ngx_strncasecmp(v->inbox.data, (u_char *) "http://", 7) != 0))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                        "The actor has no inbox");
    }

    /* a follower already, and the owner's choice: one read */

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY, &v->actor,
                             &ekey)
           != NGX_OK
        || ngx_http_tent_ap_settings_key(r->pool, &ctx->entity, &skey)
           != NGX_OK
        || ngx_http_tent_store_mget(op) != NGX_OK
        || ngx_http_tent_store_mget_key(op, &ekey) != NGX_OK
        || ngx_http_tent_store_mget_key(op, &skey) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the follower's read");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_follow_existing);
}


static ngx_int_t
ngx_http_tent_ap_follow_existing(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                   rc;
    ngx_str_t                   id, value;
    ngx_uint_t                  found;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_ap_inbox_t   *st;
    ngx_http_tent_ap_verify_t  *v;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;
    v = &st->verify;

    if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "reading the follower");
    }

    if (found) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: \"%V\" follows already", &v->actor);
        return ngx_http_tent_ap_accepted(r);
    }

    /* the owner approves follows: a request, no follower, no Accept */

    if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "reading the owner's choice");
    }

    if (found && ngx_http_tent_ap_approves(&value, r->connection->log)) {
        return ngx_http_tent_ap_request_hold(r, ctx, v);
    }

    /* AP.md item 3: the follower, the Accept embedding the Follow */

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_ap_follower_add(r, ctx, op, &v->actor, &v->inbox,
                                         &v->shared_inbox, &v->name,
                                         &v->icon, v->activity, 1, &id)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "adding the follower");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_follow_stored);
}


static ngx_int_t
ngx_http_tent_ap_follow_stored(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t  status;

    /* a conflict: another Follow of the actor wrote it first */

    if (op->status != NGX_HTTP_TENT_STORE_OK
        && op->status != NGX_HTTP_TENT_STORE_CONFLICT)
    {
        status = ngx_http_tent_store_http_status(op);
        return ngx_http_tent_send_error(r, status, NULL);
    }

    return ngx_http_tent_ap_accepted(r);
}


/*
 * Undo of a Follow by its actor: the follower record goes when the
 * Follow is the one it was made by (its id), or is embedded and of the
 * entity.  Accept or Reject of the entity's Follow by the followed
 * actor: its ActivityPub following ("activitypub" in the F record) is
 * confirmed, or goes; the Follow named by the id the record keeps, or
 * embedded and by the entity.  Anything else is ignored.
 */

static ngx_int_t
ngx_http_tent_ap_undo(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_inbox_t *st)
{
    json_t                     *object;
    ngx_str_t                   type;
    ngx_http_tent_ap_verify_t  *v;

    v = &st->verify;

    object = json_object_get(v->activity, "object");

    if (json_is_object(object)) {

        /* Undo of a Like, embedded (the actor's own row, whoever's id) */

        if (st->kind == NGX_HTTP_TENT_AP_UNDO
            && ngx_http_tent_json_str(object, "type", &type) == NGX_OK
            && type.len == 4 && ngx_strncmp(type.data, "Like", 4) == 0)
        {
            return ngx_http_tent_ap_inbox_like(r, ctx, v,
                                               json_object_get(object,
                                                               "object"),
                                               1);
        }

        if (ngx_http_tent_json_str(object, "type", &type) != NGX_OK
            || type.len != 6 || ngx_strncmp(type.data, "Follow", 6) != 0)
        {
            return ngx_http_tent_ap_accepted(r);
        }

        (void) ngx_http_tent_json_str(object, "id", &st->follow_id);

        st->embedded = ngx_http_tent_ap_object_is(
                           json_object_get(object,
                                           st->kind == NGX_HTTP_TENT_AP_UNDO
                                           ? "object" : "actor"),
                           &ctx->entity);

    } else if (json_is_string(object)) {
        st->follow_id.data = (u_char *) json_string_value(object);
        st->follow_id.len = json_string_length(object);

    } else {
        return ngx_http_tent_ap_accepted(r);
    }

    return ngx_http_tent_store_get_request(r,
                                        st->kind == NGX_HTTP_TENT_AP_UNDO
                                        ? NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY
                                        : NGX_HTTP_TENT_TABLE_FOLLOWING_ENTITY,
                                        &v->actor,
                                        ngx_http_tent_ap_undo_existing);
}


static ngx_int_t
ngx_http_tent_ap_undo_existing(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                  rc;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_ap_inbox_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {

        /* no follower: a request the owner has not answered, if any */

        if (st->kind == NGX_HTTP_TENT_AP_UNDO) {
            return ngx_http_tent_ap_request_undo(r, ctx, &st->verify,
                                                 &st->follow_id,
                                                 st->embedded);
        }

        return ngx_http_tent_ap_accepted(r);
    }

    ngx_http_tent_store_value(op, &st->record_id);

    return ngx_http_tent_store_get_request(r,
                                           st->kind == NGX_HTTP_TENT_AP_UNDO
                                           ? NGX_HTTP_TENT_TABLE_FOLLOWER
                                           : NGX_HTTP_TENT_TABLE_FOLLOWING,
                                           &st->record_id,
                                           ngx_http_tent_ap_undo_record);
}


static ngx_int_t
ngx_http_tent_ap_undo_record(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    u_char                      table, etable;
    json_t                     *record, *follow;
    ngx_int_t                   rc;
    ngx_str_t                   value, key, ekey, key_id, ckey;
    const char                 *kind;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_ap_inbox_t   *st;
    ngx_http_tent_ap_verify_t  *v;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;
    v = &st->verify;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        return ngx_http_tent_ap_accepted(r);
    }

    ngx_http_tent_store_value(op, &value);

    record = ngx_http_tent_json_load(r, &value);
    if (record == NULL) {
        return ngx_http_tent_internal_error(r, "reading the relationship");
    }

    if (st->kind == NGX_HTTP_TENT_AP_UNDO) {
        table = NGX_HTTP_TENT_TABLE_FOLLOWER;
        etable = NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY;
        kind = "follower";

    } else {
        table = NGX_HTTP_TENT_TABLE_FOLLOWING;
        etable = NGX_HTTP_TENT_TABLE_FOLLOWING_ENTITY;
        kind = "following";
    }

    /* a Tent relationship of the same URL is no ActivityPub actor's */

    follow = json_object_get(json_object_get(record, "activitypub"),
                             "follow");

    if (json_object_get(record, "activitypub") == NULL
        || !(st->embedded
             || (json_is_string(follow) && st->follow_id.len
                 && st->follow_id.len == json_string_length(follow)
                 && ngx_strncmp(st->follow_id.data, json_string_value(follow),
                                st->follow_id.len)
                    == 0)))
    {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: an answer by \"%V\" to no Follow of "
                       "its %s, ignored", &v->actor, kind);
        return ngx_http_tent_ap_accepted(r);
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_key(r->pool, &ctx->entity, table, &st->record_id,
                             &key)
           != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity, etable, &v->actor, &ekey)
           != NGX_OK
        || ngx_http_tent_store_write(op, 1) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                       "building the relationship's keys");
    }

    /* Accept: the following confirmed, once */

    if (st->kind == NGX_HTTP_TENT_AP_ACCEPT) {
        if (json_is_true(json_object_get(record, "confirmed"))) {
            return ngx_http_tent_ap_accepted(r);
        }

        json_object_set_new(record, "confirmed", json_true());
        json_object_set_new(record, "updated_at", json_integer(ngx_time()));

        if (ngx_http_tent_json_dump(r->pool, record, &value) != NGX_OK
            || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK)
        {
            return ngx_http_tent_internal_error(r,
                                       "adding the following to the batch");
        }

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: following \"%V\" accepted", &v->actor);

        return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_follow_stored);
    }

    /* Undo, Reject: the relationship goes, with a credential if any */

    if (ngx_http_tent_store_write_del(op, &key) != NGX_OK
        || ngx_http_tent_store_write_del(op, &ekey) != NGX_OK
        || (ngx_http_tent_json_str(record, "mac_key_id", &key_id) == NGX_OK
            && (ngx_http_tent_key(r->pool, &ctx->entity,
                                  NGX_HTTP_TENT_TABLE_CREDENTIAL, &key_id,
                                  &ckey)
                != NGX_OK
                || ngx_http_tent_store_write_del(op, &ckey) != NGX_OK))
        || ngx_http_tent_relation_post(r, ctx, op, kind, record, "delete")
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                       "adding the removal to the batch");
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent inbox: %s \"%V\" (%V) removed", kind, &v->actor,
                   &st->record_id);

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_follow_stored);
}


/*
 * Create: the object embedded (a reference is not fetched), attributed
 * to the actor, kept when the actor is one of the entity's followings or
 * the object is addressed to the entity (to, cc, a Mention); else
 * ignored, as the feed keeps only what its owner follows or is told.
 */

static ngx_int_t
ngx_http_tent_ap_create(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_inbox_t *st)
{
    size_t                      i;
    json_t                     *object, *by, *v, *tag;
    ngx_uint_t                  k, addressed;
    const char                 *lists[] = { "to", "cc" };
    ngx_http_tent_ap_verify_t  *verify;

    verify = &st->verify;
    object = json_object_get(verify->activity, "object");

    if (!json_is_object(object)
        || !json_is_string(json_object_get(object, "id")))
    {
        return ngx_http_tent_ap_accepted(r);
    }

    by = json_object_get(object, "attributedTo");
    if (json_is_array(by)) {
        by = json_array_get(by, 0);
    }

    if (json_is_object(by)) {
        by = json_object_get(by, "id");
    }

    if (!json_is_string(by)
        || json_string_length(by) != verify->actor.len
        || ngx_strncmp(json_string_value(by), verify->actor.data,
                       verify->actor.len)
           != 0)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: a Create by \"%V\" of an object not "
                       "its own, ignored", &verify->actor);
        return ngx_http_tent_ap_accepted(r);
    }

    if (ngx_http_tent_blocks_has(ctx->blocks, &verify->actor)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "The actor is blocked");
    }

    addressed = 0;

    for (k = 0; k < 2 && !addressed; k++) {
        v = json_object_get(object, lists[k]);

        if (json_is_string(v)) {
            addressed = ngx_http_tent_ap_object_is(v, &ctx->entity);
            continue;
        }

        json_array_foreach(v, i, tag) {
            if (i >= 100 || addressed) {
                break;
            }

            addressed = ngx_http_tent_ap_object_is(tag, &ctx->entity);
        }
    }

    json_array_foreach(json_object_get(object, "tag"), i, tag) {
        if (i >= 100 || addressed) {
            break;
        }

        addressed = ngx_http_tent_ap_object_is(json_object_get(tag, "href"),
                                               &ctx->entity);
    }

    if (addressed) {
        return ngx_http_tent_ap_create_post(r, ctx, st);
    }

    return ngx_http_tent_store_get_request(r,
                                        NGX_HTTP_TENT_TABLE_FOLLOWING_ENTITY,
                                        &verify->actor,
                                        ngx_http_tent_ap_create_following);
}


static ngx_int_t
ngx_http_tent_ap_create_following(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t             rc;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: a Create of no following, not addressed "
                       "to the entity, ignored");
        return ngx_http_tent_ap_accepted(r);
    }

    return ngx_http_tent_ap_create_post(r, ctx, ctx->state);
}


/* the post: its id a hash of the object's, so a second Create is a copy */

static ngx_int_t
ngx_http_tent_ap_create_post(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_inbox_t *st)
{
    u_char                      pid[NGX_HTTP_TENT_AP_POST_ID_LEN + 2];
    json_t                     *object, *post;
    ngx_str_t                   oid;
    ngx_int_t                   status;
    const char                 *error;
    ngx_http_tent_ap_verify_t  *v;
    ngx_http_tent_received_t   *rst;
    ngx_http_tent_store_op_t   *op;

    v = &st->verify;
    object = json_object_get(v->activity, "object");

    post = ngx_http_tent_json_own(r->pool,
                                  ngx_http_tent_ap_to_post(r->pool, object,
                                                           &v->actor,
                                                           &error));
    if (post == NULL) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: a Create by \"%V\" not kept: %s",
                       &v->actor, error ? error : "no memory");
        return ngx_http_tent_ap_accepted(r);
    }

    /* ngx_http_tent_ap_post_id(): where an Update or a Delete finds it */

    oid.data = (u_char *) json_string_value(json_object_get(object, "id"));
    oid.len = json_string_length(json_object_get(object, "id"));

    if (ngx_http_tent_ap_post_id(&oid, pid) != NGX_OK
        || ngx_http_tent_ap_inbox_reply(r, ctx, post) != NGX_OK)
    {
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

    rst = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_received_t));
    if (rst == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the post state");
    }

    status = ngx_http_tent_received_parse(r->pool, post, &v->actor, 0, rst,
                                          &error);

    if (status == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, error);
    }

    /* the validation keeps Tent's fields: the object's id etc. put back */

    if (status == NGX_OK
        && json_object_get(post, "activitypub")
        && json_object_set(rst->post, "activitypub",
                           json_object_get(post, "activitypub"))
           != 0)
    {
        return ngx_http_tent_internal_error(r, "keeping the object's id");
    }

    /*
     * A post the feed would refuse, or larger than any post a stranger
     * may make us keep: not kept, and the activity answered as any other
     * verified one (its sender would only send it again)
     */

    if (status == NGX_OK
        && json_dumpb(rst->post, NULL, 0, JSON_COMPACT)
           > NGX_HTTP_TENT_RECEIVED_MAX)
    {
        status = NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
        error = "over 65536 bytes";
    }

    if (status != NGX_OK) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent inbox: a Create by \"%V\" not kept: %s",
                      &v->actor, error);
        return ngx_http_tent_ap_accepted(r);
    }

    op = ngx_http_tent_received_batch(r->pool, r->connection->log,
                                      &ctx->entity, rst, NULL, NULL);
    if (op == NULL) {
        return ngx_http_tent_internal_error(r, "building the post's batch");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent inbox: post \"%V\" of \"%V\"", &rst->id, &v->actor);

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_follow_stored);
}
