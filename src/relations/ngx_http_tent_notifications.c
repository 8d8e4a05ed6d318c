
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The follower side of federation (spec 7.4): /notifications/<following
 * id> answers the challenge of a server we asked to follow, and takes
 * the posts it pushes, signed with the credential it gave us.  A post
 * received is stored as the sender made it, under its entity and id, in
 * our feed indexes; a duplicate (entity, id, version) changes nothing.
 * Those rules, without the request, are ngx_http_tent_receive.c's:
 * same-node delivery (ngx_http_tent_local.c) applies them too.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_move.h"
#include "ngx_http_tent_notifications.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_receive.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_remote.h"
#include "ngx_http_tent_store.h"


static ngx_int_t ngx_http_tent_notification_challenged(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_notification_body(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_notification_stored(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_notification_write(ngx_http_request_t *r,
    ngx_http_tent_received_t *st, json_t *current, ngx_str_t *raw);
static ngx_int_t ngx_http_tent_notification_target(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_notification_following(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_notification_profile(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f);
static ngx_int_t ngx_http_tent_notification_refreshed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


/* the sender's relationship: a server we follow, or one that follows us */

static u_char
ngx_http_tent_notification_table(ngx_http_tent_ctx_t *ctx)
{
    return ctx->principal.kind == NGX_HTTP_TENT_FOLLOWER
           ? NGX_HTTP_TENT_TABLE_FOLLOWER : NGX_HTTP_TENT_TABLE_FOLLOWING;
}


/* GET /notifications/:id?challenge=X: X back if the following exists */

ngx_int_t
ngx_http_tent_notification_challenge(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t  challenge, *state;

    if (ngx_http_arg(r, (u_char *) "challenge", 9, &challenge) != NGX_OK
        || ngx_http_tent_token_valid(&challenge, 256) != NGX_OK)
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                        "Invalid challenge");
    }

    if (ngx_http_tent_relation_id_valid(&ctx->params[0]) != NGX_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    state = ngx_palloc(r->pool, sizeof(ngx_str_t));
    if (state == NULL) {
        return ngx_http_tent_internal_error(r, "keeping the challenge");
    }

    *state = challenge;
    ctx->state = state;

    return ngx_http_tent_store_get_request(r, NGX_HTTP_TENT_TABLE_FOLLOWING,
                                       &ctx->params[0],
                                       ngx_http_tent_notification_challenged);
}


static ngx_int_t
ngx_http_tent_notification_challenged(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t               *record;
    ngx_int_t             rc;
    ngx_str_t            *challenge, value;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }


    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent notifications: challenge for following "
                       "\"%V\": no such following", &ctx->params[0]);

        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    /*
     * Only a following being set up (our POST /followers on its way)
     * answers.  A confirmed one would let anyone who knows its id (the
     * followed server, from our follow request) follow another server
     * "as us" there: that server's credential reset (spec 7.1) would
     * give them a new key of our relationship.
     */

    ngx_http_tent_store_value(op, &value);

    record = ngx_http_tent_json_load(r, &value);
    if (record == NULL) {
        return ngx_http_tent_internal_error(r, "reading the following");
    }

    /*
     * ... or one signed with the relationship's own key and marked
     * "move=1": the followed server re-keying its follower to us (a
     * move, docs/move.md) asks whether we want its posts; only it holds
     * that key, and no follow handshake sends the mark (a server that
     * signs its spec 7.1 challenges with its relationship's key is not
     * to be answered: that is the credential reset above).
     */

    if (!json_is_false(json_object_get(record, "confirmed"))
        && !(ngx_http_arg(r, (u_char *) "move", 4, &value) == NGX_OK
             && value.len == 1 && value.data[0] == '1'
             && ctx->principal.kind == NGX_HTTP_TENT_FOLLOWING
             && ctx->principal.auth_id.len == ctx->params[0].len
             && ngx_strncmp(ctx->principal.auth_id.data,
                            ctx->params[0].data, ctx->params[0].len) == 0))
    {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent notifications: a challenge for the confirmed "
                      "following \"%V\" refused (only a follow being set "
                      "up answers)", &ctx->params[0]);

        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent notifications: challenge for following \"%V\": "
                   "answered", &ctx->params[0]);

    challenge = ctx->state;

    ngx_str_set(&r->headers_out.content_type, "text/plain");
    r->headers_out.content_type_len = r->headers_out.content_type.len;

    return ngx_http_tent_send_body(r, NGX_HTTP_OK, challenge);
}


/* POST /notifications/:id, signed by the followed server */

ngx_int_t
ngx_http_tent_notification_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    if (ctx->principal.kind != NGX_HTTP_TENT_FOLLOWING) {
        return ngx_http_tent_send_error(r, NGX_HTTP_UNAUTHORIZED,
                   "A notification must be signed with the credential of "
                   "the following");
    }

    if (ctx->params[0].len != ctx->principal.auth_id.len
        || ngx_strncmp(ctx->params[0].data, ctx->principal.auth_id.data,
                       ctx->params[0].len) != 0)
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                   "The credential is not this following's");
    }

    return ngx_http_tent_read_json(r, ctx, ngx_http_tent_notification_body);
}


/*
 * POST /posts signed with a relationship's credential (spec 9.3, 9.4):
 * tentd sends a following's posts there, and a follower's profile
 * changes.  Taken as a notification from that entity.
 */

ngx_int_t
ngx_http_tent_notification_relayed(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    /* anyone can follow us: a follower's post is kept only that big */

    if (ctx->principal.kind == NGX_HTTP_TENT_FOLLOWER) {
        if (r->headers_in.content_length_n > NGX_HTTP_TENT_RECEIVED_MAX) {
            return ngx_http_tent_notification_too_large(r);
        }

        /* chunked: no length to refuse it by, bounded as it arrives */

        ctx->body_max = NGX_HTTP_TENT_RECEIVED_MAX;
    }

    return ngx_http_tent_read_json(r, ctx, ngx_http_tent_notification_body);
}


/* 413: a post over NGX_HTTP_TENT_RECEIVED_MAX from anyone (docs/posts.md) */

ngx_int_t
ngx_http_tent_notification_too_large(ngx_http_request_t *r)
{
    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "tent notifications: a post over %uz bytes from a "
                  "follower or a mention refused",
                  (size_t) NGX_HTTP_TENT_RECEIVED_MAX);

    return ngx_http_tent_send_error(r, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                    "The post is too large (over 65536 "
                                    "bytes from a follower or a mention)");
}


static ngx_int_t
ngx_http_tent_notification_body(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent notifications: from \"%V\", relationship \"%V\": "
                   "signature verified", &ctx->principal.entity,
                   &ctx->principal.auth_id);

    /*
     * An imported following stays pending whatever it sends: its key came
     * with the import document, so its importer can sign with it too.
     * Only our own follow (POST /followings, the followed server's
     * answer) confirms it (docs/import.md, "Followings are pending").
     */

    return ngx_http_tent_notification_store(r, ctx, ctx->body,
                                            &ctx->principal.entity, 0);
}


/*
 * Stores a post of "entity" received from elsewhere, as in
 * POST /notifications/:id.  A mention (spec 9.3, an entity with no
 * relationship) is a post we fetched ourselves: it has no effect beyond
 * the copy (no delete, no profile refresh: there is no relationship to
 * refresh) and is answered {}.
 */

ngx_int_t
ngx_http_tent_notification_store(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *body, ngx_str_t *entity,
    ngx_uint_t mention)
{
    ngx_int_t                  status;
    const char                *error;
    ngx_http_tent_received_t  *st;

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_received_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r,
                                       "allocating the notification state");
    }

    if (mention) {
        st->reply = ngx_http_tent_json_own(r->pool, json_object());
        if (st->reply == NULL) {
            return ngx_http_tent_internal_error(r,
                                       "building the mention's answer");
        }
    }

    /* the rules are ngx_http_tent_receive.c's, same-node delivery's too */

    status = ngx_http_tent_received_parse(r->pool, body, entity, mention, st,
                                          &error);

    if (status == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, error);
    }

    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, error);
    }

    /*
     * What a mention or a follower (a credential anyone can get) makes
     * us keep is bounded as stored, whatever client_max_body_size is
     */

    if ((mention || ctx->principal.kind == NGX_HTTP_TENT_FOLLOWER)
        && json_dumpb(st->post, NULL, 0, JSON_COMPACT)
           > NGX_HTTP_TENT_RECEIVED_MAX)
    {
        return ngx_http_tent_notification_too_large(r);
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent notifications: post \"%V\" version %L of \"%V\" "
                   "valid%s", &st->id, (int64_t) st->version, &st->entity,
                   mention ? ", a mention" : "");

    ctx->state = st;

    return ngx_http_tent_notification_write(r, st, NULL, NULL);
}


/*
 * A first copy: the post row only if absent.  A newer version of a copy
 * we have keeps the first copy's times, so its index keys stay the same.
 */

static ngx_int_t
ngx_http_tent_notification_write(ngx_http_request_t *r,
    ngx_http_tent_received_t *st, json_t *current, ngx_str_t *raw)
{
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_store_op_t  *op;

    ctx = ngx_http_tent_get_ctx(r);

    op = ngx_http_tent_received_batch(r->pool, r->connection->log,
                                      &ctx->entity, st, current, raw);
    if (op == NULL) {
        return ngx_http_tent_internal_error(r, "building the post's batch");
    }

    /* its outbox row tells the apps subscribed (spec 7.4, 9.2) */

    return ngx_http_tent_store_submit_request(r, op,
                                          ngx_http_tent_notification_stored);
}


static ngx_int_t
ngx_http_tent_notification_stored(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                    *current;
    ngx_int_t                  rc;
    ngx_str_t                  value, key;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_store_op_t  *get;
    ngx_http_tent_received_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent notifications: post \"%V\" of \"%V\": %s",
                   &st->id, &st->entity,
                   op->status == NGX_HTTP_TENT_STORE_OK
                   ? "stored" : "a copy is there");

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        if (st->deletes.len) {
            if (ngx_http_tent_post_key(r->pool, &ctx->entity, &st->entity,
                                       &st->deletes, -1, &key)
                != NGX_OK)
            {
                return ngx_http_tent_internal_error(r,
                                       "building the deleted post's key");
            }

            get = ngx_http_tent_store_op_create(r->pool, r->connection->log);

            if (get == NULL || ngx_http_tent_store_get(get, &key) != NGX_OK) {
                return ngx_http_tent_internal_error(r,
                                       "building the deleted post's read");
            }

            return ngx_http_tent_store_submit_request(r, get,
                                        ngx_http_tent_notification_target);
        }

        /* a profile post: read the sender's profile again (spec 9.4) */

        if (st->profile) {
            return ngx_http_tent_store_get_request(r,
                                        ngx_http_tent_notification_table(ctx),
                                        &ctx->principal.auth_id,
                                        ngx_http_tent_notification_following);
        }

        ctx->state = st->reply;
        return ngx_http_tent_reply_state_json(r, op);
    }

    /* we have a copy: only a newer version replaces it */

    ngx_http_tent_store_value(op, &value);

    current = ngx_http_tent_json_load(r, &value);
    if (current == NULL) {
        return ngx_http_tent_internal_error(r, "reading our copy of the post");
    }

    if (json_integer_value(json_object_get(current, "version"))
        >= st->version)
    {
        ctx->state = st->reply;
        op->status = NGX_HTTP_TENT_STORE_OK;
        return ngx_http_tent_reply_state_json(r, op);
    }

    return ngx_http_tent_notification_write(r, st, current, &value);
}


/* the copy a delete post names: it and its feed rows go, its versions too */

static ngx_int_t
ngx_http_tent_notification_target(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                    *copy;
    ngx_int_t                  rc;
    ngx_str_t                  value;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_store_op_t  *wop;
    ngx_http_tent_received_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;
    ctx->state = NULL;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        op->status = NGX_HTTP_TENT_STORE_OK;
        return ngx_http_tent_reply_state_json(r, op);
    }

    ngx_http_tent_store_value(op, &value);

    copy = ngx_http_tent_json_load(r, &value);
    if (copy == NULL) {
        return ngx_http_tent_internal_error(r, "reading the deleted copy");
    }

    wop = ngx_http_tent_received_delete(r->pool, r->connection->log,
                                        &ctx->entity, st, copy, &value);
    if (wop == NULL) {
        return ngx_http_tent_internal_error(r,
                                            "building the delete's batch");
    }

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_reply_state_json);
}


static ngx_int_t
ngx_http_tent_notification_following(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                  rc;
    ngx_str_t                  path, url;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_fetch_t     *f;
    ngx_http_tent_received_t  *st;

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    if (ngx_http_tent_store_http_status(op) != NGX_OK
        || op->status != NGX_HTTP_TENT_STORE_OK)
    {
        goto done;
    }

    ngx_http_tent_store_value(op, &st->raw);

    st->following = ngx_http_tent_json_load(r, &st->raw);
    if (st->following == NULL) {
        goto done;
    }

    ngx_str_set(&path, "profile");

    rc = ngx_http_tent_server_url(r->pool,
                                  json_array_get(json_object_get(st->following,
                                                                 "servers"),
                                                 0),
                                  &path, NULL, &url);

    if (rc == NGX_DECLINED) {
        goto done;
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_internal_error(r, "building the profile's URL");
    }

    f = ngx_http_tent_remote_fetch(r, &url, "GET");
    if (f == NULL) {
        return ngx_http_tent_internal_error(r,
                                            "starting the profile refresh");
    }

    if (ngx_http_tent_remote_sign(f, st->following) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "signing the profile refresh");
    }

    f->max_response = NGX_HTTP_TENT_PROFILE_MAX;

    return ngx_http_tent_fetch_request(r, f,
                                       ngx_http_tent_notification_profile);

done:

    ctx->state = NULL;
    op->status = NGX_HTTP_TENT_STORE_OK;
    return ngx_http_tent_reply_state_json(r, op);
}


/*
 * The profile read again replaces the one kept with the following, if it
 * is still this entity's; the notification is acknowledged either way.
 */

static ngx_int_t
ngx_http_tent_notification_profile(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f)
{
    json_t                    *profile, *core, *servers, *v;
    ngx_str_t                  type, base, entity, id, key, value, *ct;
    const char                *name;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_store_op_t  *wop;
    ngx_http_tent_received_t  *st;
    ngx_http_tent_srv_conf_t  *scf;

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;
    ctx->state = NULL;

    ct = ngx_http_tent_fetch_header(f, "content-type");

    if (f->result != NGX_HTTP_TENT_FETCH_OK || f->status != 200
        || ct == NULL || ct->len < sizeof(NGX_HTTP_TENT_MEDIA_TYPE) - 1
        || ngx_strncasecmp(ct->data, (u_char *) NGX_HTTP_TENT_MEDIA_TYPE,
                           sizeof(NGX_HTTP_TENT_MEDIA_TYPE) - 1) != 0)
    {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent: profile refresh GET %V: %s, status %ui",
                      &f->url, ngx_http_tent_fetch_strerror(f->result),
                      f->status);
        goto done;
    }

    profile = ngx_http_tent_json_parse(&f->body, r->connection->log);
    if (profile == NULL
        || ngx_http_tent_json_cleanup(r->pool, profile) != NGX_OK)
    {
        json_decref(profile);
        goto done;
    }

    core = NULL;

    json_object_foreach(profile, name, v) {
        type.data = (u_char *) name;
        type.len = ngx_strlen(name);

        if (ngx_http_tent_type_base(&type, &base) == NGX_OK
            && base.len == sizeof(NGX_HTTP_TENT_CORE_BASE) - 1
            && ngx_strncmp(base.data, NGX_HTTP_TENT_CORE_BASE, base.len) == 0
            && json_is_object(v))
        {
            core = v;
        }
    }

    /* another entity: a move (spec 9.5), checked in the move file */

    if (core != NULL
        && ngx_http_tent_json_str(core, "entity", &entity) == NGX_OK
        && !ngx_http_tent_entity_eq(&entity, &ctx->principal.entity))
    {
        return ngx_http_tent_move_announced(r, core, &entity);
    }

    servers = json_object_get(core, "servers");

    if (core == NULL
        || ngx_http_tent_json_str(core, "entity", &entity) != NGX_OK
        || !ngx_http_tent_entity_eq(&entity, &ctx->principal.entity)
        || !json_is_array(servers) || json_array_size(servers) == 0
        || !json_is_string(json_array_get(servers, 0)))
    {
        goto done;
    }

    /* kept as discovery keeps them: the first few */

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    servers = ngx_http_tent_servers_cap(r->pool, servers, &scf->outbound);
    if (servers == NULL) {
        return ngx_http_tent_internal_error(r,
                                            "keeping the profile's servers");
    }

    json_object_set(st->following, "profile", profile);
    json_object_set(st->following, "servers", servers);
    json_object_set_new(st->following, "updated_at", json_integer(ngx_time()));

    if (ngx_http_tent_json_str(st->following, "id", &id) != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             ngx_http_tent_notification_table(ctx), &id,
                             &key)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                       "building the relationship's key");
    }

    if (ngx_http_tent_json_dump(r->pool, st->following, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "encoding the relationship");
    }

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (wop == NULL
        || ngx_http_tent_store_cas(wop, &key, &st->raw, &value) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                       "adding the relationship to the batch");
    }

    /* a concurrent change of the following wins: this is only a refresh */

    return ngx_http_tent_store_submit_request(r, wop,
                                        ngx_http_tent_notification_refreshed);

done:

    return ngx_http_tent_notification_refreshed(r, NULL);
}


static ngx_int_t
ngx_http_tent_notification_refreshed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = 0;
    r->header_only = 1;
    ctx->own_reply = 1;

    return ngx_http_send_header(r);
}
