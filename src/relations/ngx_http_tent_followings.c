
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Followings (spec 7.3, 9.1, 9.6): an app asks us to follow an entity.
 * We discover it, keep an unconfirmed following so that our
 * /notifications/<id> can answer its challenge, POST /followers to it,
 * and store the "s:" credential it returns.  Records: "F <id>", "E
 * <entity>" its id, and "c <key id>" the credential; the key id was
 * chosen by the other server, so its row is written only if absent:
 * a remote can never overwrite a credential of ours.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_ap.h"
#include "ngx_http_tent_domains.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_blocks.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_remote.h"
#include "ngx_http_tent_store.h"


typedef struct {
    ngx_str_t                       entity;
    json_t                          *body;
    ngx_str_t                       id;
    ngx_http_tent_discover_t       *found;
    json_t                         *record;
    json_t                         *replaces;    /* imported, pending */
    ngx_uint_t                      err_status;   /* once the row is gone */
    char                           *err_msg;
} ngx_http_tent_following_t;


ngx_http_tent_relation_t  ngx_http_tent_followings_rel = {
    ngx_string("followings"),
    "following",
    NGX_HTTP_TENT_TABLE_FOLLOWING,
    NGX_HTTP_TENT_TABLE_FOLLOWING_ENTITY,
    NGX_HTTP_TENT_READ_FOLLOWINGS,
    NGX_HTTP_TENT_FOLLOWING,
    NULL,
    NULL
};


static ngx_int_t ngx_http_tent_following_read(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_following_requested(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_following_existing(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *record);
static ngx_int_t ngx_http_tent_following_replace(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_following_t *st,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_following_discovered(ngx_http_request_t *r,
    ngx_http_tent_discover_t *d);
static ngx_int_t ngx_http_tent_following_start(ngx_http_request_t *r,
    ngx_http_tent_following_t *st);
static ngx_int_t ngx_http_tent_following_pending(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_following_answered(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f);
static ngx_int_t ngx_http_tent_following_stored(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_following_abandon(ngx_http_request_t *r,
    ngx_http_tent_following_t *st, ngx_uint_t status, char *msg);
static ngx_int_t ngx_http_tent_following_abandoned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_following_change(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *record);
static ngx_int_t ngx_http_tent_following_update(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_following_unfollowed(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f);
static ngx_int_t ngx_http_tent_following_proxied(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f);
static ngx_int_t ngx_http_tent_following_proxy_loaded(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *record);


/* POST /followings (write_followings) */

ngx_int_t
ngx_http_tent_followings_post(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_FOLLOWINGS)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    /* provisioning: its following post is one of the quota of posts */

    return ngx_http_tent_quota_check(r, ctx, NGX_HTTP_TENT_QUOTA_POSTS,
                                     ngx_http_tent_following_read);
}


static ngx_int_t
ngx_http_tent_following_read(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_read_json(r, ctx,
                                   ngx_http_tent_following_requested);
}


static ngx_int_t
ngx_http_tent_following_requested(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    ngx_int_t                   rc;
    ngx_str_t                   entity;
    ngx_http_tent_following_t  *st;

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_following_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r,
                                            "allocating the following state");
    }

    /*
     * One spelling per entity: a trailing slash (tent-client-ruby strips
     * one), case, a default port... make no second following.
     */

    rc = NGX_DECLINED;

    if (ngx_http_tent_json_str(ctx->body, "entity", &entity) == NGX_OK) {

        /* an ActivityPub handle: ngx_http_tent_ap_follow.c */

        if (ngx_http_tent_ap_following_handle(r, &entity)) {
            return ngx_http_tent_ap_following_post(r, ctx);
        }

        rc = ngx_http_tent_entity_canonical(r->pool, &entity, &st->entity);
    }

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r,
                                            "spelling the followed entity");
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_send_error(r, 422, "Invalid Request Body");
    }

    if (ngx_http_tent_entity_eq(&st->entity, &ctx->entity)) {
        return ngx_http_tent_send_error(r, 406,
                                        "Can not follow self");
    }

    if (ngx_http_tent_blocks_has(ctx->blocks, &st->entity)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "The entity is blocked: unblock it "
                                        "first");
    }

    if (ngx_http_tent_domains_entity(&st->entity)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                   "The entity's domain is blocked on this host");
    }

    st->body = ctx->body;
    ctx->state = st;

    /* already following? find it by entity */

    return ngx_http_tent_relation_load_entity(r, ctx,
                                            &ngx_http_tent_followings_rel,
                                            &st->entity,
                                            ngx_http_tent_following_existing);
}


static ngx_int_t
ngx_http_tent_following_existing(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *record)
{
    ngx_http_tent_following_t  *st;

    st = ctx->state;

    /*
     * An imported following still pending is followed again: the
     * followed server's answer, to our own request, is what confirms it;
     * the new record replaces it once that answer came
     */

    if (record && json_is_object(json_object_get(record, "activitypub"))) {
        return ngx_http_tent_ap_following_answer(r, record);
    }

    if (record && json_is_true(json_object_get(record, "import_pending"))) {
        st->replaces = record;

    } else if (record && json_is_true(json_object_get(record, "confirmed")))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                                        "Already following");
    }

    if (st->found) {
        return ngx_http_tent_following_start(r, st);
    }

    return ngx_http_tent_discover(r, &st->entity,
                                  ngx_http_tent_following_discovered, st);
}


static ngx_int_t
ngx_http_tent_following_discovered(ngx_http_request_t *r,
    ngx_http_tent_discover_t *d)
{
    ngx_int_t                   rc;
    ngx_str_t                   entity;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_following_t  *st;

    st = d->data;
    ctx = ngx_http_tent_get_ctx(r);

    /* no Tent profile there: an ActivityPub actor, perhaps */

    if (d->status == NGX_HTTP_NOT_FOUND && ngx_http_tent_ap_enabled(r)) {
        return ngx_http_tent_ap_following_post(r, ctx);
    }

    if (d->status) {
        return ngx_http_tent_send_error(r, d->status, d->error);
    }

    st->found = d;

    /*
     * The entity is the profile's (tentd, spec 7.3), in its one spelling:
     * the rows are keyed by it.  A URL that led to another entity's
     * profile is looked for again under that entity, or it would be
     * followed twice.
     */

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent followings: \"%V\" discovered, API root %V",
                   &st->entity, &d->api_root);

    rc = ngx_http_tent_entity_canonical(r->pool, &d->canonical, &entity);

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r,
                                       "spelling the discovered entity");
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_GATEWAY,
                   "The profile found names an entity that is not a URL");
    }

    if (entity.len == st->entity.len
        && ngx_strncmp(entity.data, st->entity.data, entity.len) == 0)
    {
        return ngx_http_tent_following_start(r, st);
    }

    st->entity = entity;

    if (ngx_http_tent_entity_eq(&st->entity, &ctx->entity)) {
        return ngx_http_tent_send_error(r, 406, "Can not follow self");
    }

    return ngx_http_tent_relation_load_entity(r, ctx,
                                            &ngx_http_tent_followings_rel,
                                            &st->entity,
                                            ngx_http_tent_following_existing);
}


static ngx_int_t
ngx_http_tent_following_start(ngx_http_request_t *r,
    ngx_http_tent_following_t *st)
{
    json_t                    *pending;
    ngx_str_t                  key, value;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_store_op_t  *op;

    ctx = ngx_http_tent_get_ctx(r);

    /* unconfirmed, so that our notifications path answers the challenge */

    if (ngx_http_tent_relation_id(r->pool, &st->id) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "making the following's id");
    }

    pending = json_pack("{s:o, s:o, s:b, s:I}",
                        "id", ngx_http_tent_json_string(&st->id),
                        "entity", ngx_http_tent_json_string(&st->entity),
                        "confirmed", 0,
                        "created_at", (json_int_t) ngx_time());

    if (pending == NULL
        || ngx_http_tent_json_cleanup(r->pool, pending) != NGX_OK)
    {
        json_decref(pending);
        return ngx_http_tent_internal_error(r,
                                       "building the unconfirmed following");
    }

    if (ngx_http_tent_key(r->pool, &ctx->entity,
                          NGX_HTTP_TENT_TABLE_FOLLOWING, &st->id, &key)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                            "building the following's key");
    }

    if (ngx_http_tent_json_dump(r->pool, pending, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r,
                                       "encoding the unconfirmed following");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_write(op, 0) != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                       "adding the following to the batch");
    }

    ctx->state = st;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_following_pending);
}


/* POST {their API root}/followers (spec 7.1), unsigned */

static ngx_int_t
ngx_http_tent_following_pending(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    u_char                     *p;
    json_t                     *req, *types, *licenses;
    ngx_int_t                   rc;
    ngx_str_t                   url, path;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_fetch_t      *f;
    ngx_http_tent_following_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (ngx_http_tent_string_list(st->body, "types", "all", &types) != NGX_OK
        || ngx_http_tent_string_list(st->body, "licenses", NULL, &licenses)
           != NGX_OK)
    {
        return ngx_http_tent_send_error(r, 422, "Invalid types or licenses");
    }

    path.len = sizeof("notifications/") - 1 + st->id.len;
    path.data = ngx_pnalloc(r->pool, path.len);
    if (path.data == NULL) {
        json_decref(types);
        json_decref(licenses);
        return ngx_http_tent_internal_error(r,
                                            "building the notification path");
    }

    ngx_sprintf(path.data, "notifications/%V", &st->id);

    req = json_pack("{s:o, s:o, s:o, s:o, s:{s:b}}",
                    "entity", ngx_http_tent_json_string(&ctx->entity),
                    "types", types,
                    "licenses", licenses,
                    "notification_path", ngx_http_tent_json_string(&path),
                    "permissions", "public", 1);

    if (req == NULL || ngx_http_tent_json_cleanup(r->pool, req) != NGX_OK) {
        json_decref(req);
        return ngx_http_tent_internal_error(r, "building the follow request");
    }

    url.len = st->found->api_root.len + sizeof("/followers") - 1;
    url.data = ngx_pnalloc(r->pool, url.len);
    if (url.data == NULL) {
        return ngx_http_tent_internal_error(r,
                                            "building the follow request URL");
    }

    p = ngx_cpymem(url.data, st->found->api_root.data,
                   st->found->api_root.len);
    if (p > url.data && p[-1] == '/') {
        p--;
    }

    p = ngx_cpymem(p, "/followers", sizeof("/followers") - 1);
    url.len = p - url.data;

    f = ngx_http_tent_remote_fetch(r, &url, "POST");
    if (f == NULL) {
        return ngx_http_tent_internal_error(r, "starting the follow request");
    }

    if (ngx_http_tent_json_dump(r->pool, req, &f->request_body) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "encoding the follow request");
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent followings: \"%V\" notified: POST %V, "
                   "unconfirmed following \"%V\"", &st->entity, &url,
                   &st->id);

    ngx_str_set(&f->content_type, NGX_HTTP_TENT_MEDIA_TYPE);
    f->max_response = 64 * 1024;
    f->data = st;

    return ngx_http_tent_fetch_request(r, f,
                                       ngx_http_tent_following_answered);
}


static ngx_int_t
ngx_http_tent_following_answered(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f)
{
    u_char                     *msg, *p;
    size_t                      len;
    json_t                     *res, *record, *v;
    ngx_str_t                   remote_id, key_id, mac_key, algorithm, key,
                                value, ekey, ckey, cvalue, error;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_following_t  *st;
    ngx_http_tent_store_op_t   *op;

    st = f->data;
    ctx = ngx_http_tent_get_ctx(r);
    ctx->state = st;

    /* on failure the unconfirmed row goes before the error is sent */

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent followings: the follow request to %V: %s, "
                   "status %ui", &f->url,
                   ngx_http_tent_fetch_strerror(f->result), f->status);

    if (f->result != NGX_HTTP_TENT_FETCH_OK) {
        len = f->url.len + 128;
        msg = ngx_pnalloc(r->pool, len);
        if (msg == NULL) {
            return ngx_http_tent_internal_error(r,
                                       "writing the follow request's error");
        }

        p = ngx_snprintf(msg, len - 1, "The follow request to %V: %s",
                         &f->url, ngx_http_tent_fetch_strerror(f->result));
        *p = '\0';

        return ngx_http_tent_following_abandon(r, st,
                                             ngx_http_tent_remote_status(f),
                                             (char *) msg);
    }

    res = NULL;

    if (f->body.len) {
        res = ngx_http_tent_json_parse(&f->body, r->connection->log);
        if (res && ngx_http_tent_json_cleanup(r->pool, res) != NGX_OK) {
            json_decref(res);
            return ngx_http_tent_internal_error(r,
                                       "keeping the follow request's answer");
        }
    }

    if (f->status < 200 || f->status > 299) {

        /* the remote's refusal, passed on (spec 7.3) */

        ngx_str_set(&error, "");
        (void) ngx_http_tent_json_str(res, "error", &error);

        len = f->url.len + ngx_min(error.len, 512) + 128;
        msg = ngx_pnalloc(r->pool, len);
        if (msg == NULL) {
            return ngx_http_tent_internal_error(r,
                                       "writing the follow request's refusal");
        }

        p = ngx_snprintf(msg, len - 1, "The follow request to %V was "
                         "refused (%ui) %*s", &f->url, f->status,
                         ngx_min(error.len, 512), error.data);
        *p = '\0';

        return ngx_http_tent_following_abandon(r, st,
                                        f->status >= 400 && f->status < 600
                                        ? f->status : NGX_HTTP_BAD_GATEWAY,
                                        (char *) msg);
    }

    if (res == NULL
        || ngx_http_tent_json_str(res, "id", &remote_id) != NGX_OK
        || ngx_http_tent_json_str(res, "mac_key_id", &key_id) != NGX_OK
        || ngx_http_tent_json_str(res, "mac_key", &mac_key) != NGX_OK
        || ngx_http_tent_json_str(res, "mac_algorithm", &algorithm)
           != NGX_OK
        || ngx_http_tent_visible_valid(&remote_id, 256) != NGX_OK
        || ngx_http_tent_visible_valid(&key_id, 256) != NGX_OK
        || mac_key.len == 0 || mac_key.len > 1024
        || !((algorithm.len == 12
              && ngx_strncmp(algorithm.data, "hmac-sha-256", 12) == 0)
             || (algorithm.len == 10
                 && ngx_strncmp(algorithm.data, "hmac-sha-1", 10) == 0)))
    {
        return ngx_http_tent_following_abandon(r, st, NGX_HTTP_BAD_GATEWAY,
                   "The follow request was accepted, but the answer holds "
                   "no usable credentials");
    }

    record = json_pack("{s:o, s:o, s:I, s:I, s:b, s:o, s:O, s:O, s:o, s:o,"
                       " s:o}",
                       "id", ngx_http_tent_json_string(&st->id),
                       "entity", ngx_http_tent_json_string(&st->entity),
                       "created_at", (json_int_t) ngx_time(),
                       "updated_at", (json_int_t) ngx_time(),
                       "confirmed", 1,
                       "remote_id", ngx_http_tent_json_string(&remote_id),
                       "profile", st->found->profile,
                       "servers", st->found->servers,
                       "mac_key_id", ngx_http_tent_json_string(&key_id),
                       "mac_key", ngx_http_tent_json_string(&mac_key),
                       "mac_algorithm", ngx_http_tent_json_string(&algorithm));

    if (record == NULL
        || ngx_http_tent_json_cleanup(r->pool, record) != NGX_OK)
    {
        json_decref(record);
        return ngx_http_tent_internal_error(r,
                                            "building the following record");
    }

    v = json_object_get(st->body, "types");
    json_object_set_new(record, "types",
                        json_is_array(v) ? json_incref(v)
                                         : json_pack("[s]", "all"));
    v = json_object_get(st->body, "licenses");
    json_object_set_new(record, "licenses",
                        json_is_array(v) ? json_incref(v) : json_array());
    v = json_object_get(st->body, "groups");
    json_object_set_new(record, "groups",
                        json_is_array(v) ? json_incref(v) : json_array());
    v = json_object_get(json_object_get(st->body, "permissions"), "public");
    json_object_set_new(record, "permissions",
                        json_pack("{s:b}", "public",
                                  v == NULL || json_is_true(v)));

    st->record = record;

    if (ngx_http_tent_credential_row(r, ctx, "following", record, &ckey,
                                     &cvalue)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                       "building the following's credential");
    }

    if (ngx_http_tent_key(r->pool, &ctx->entity,
                          NGX_HTTP_TENT_TABLE_FOLLOWING, &st->id, &key)
        != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_FOLLOWING_ENTITY,
                             &st->entity, &ekey)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                            "building the following's keys");
    }

    if (ngx_http_tent_json_dump(r->pool, record, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r,
                                            "encoding the following record");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_cas(op, &ckey, NULL, &cvalue) != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK
        || ngx_http_tent_store_write_put(op, &ekey, &st->id) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                       "adding the following to the batch");
    }

    if (st->replaces
        && ngx_http_tent_following_replace(r, ctx, st, op) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                       "replacing the imported following");
    }

    if (ngx_http_tent_relation_post(r, ctx, op, "following", record,
                                    "create")
        != NGX_OK
        || ngx_http_tent_quota_count(r, ctx, op) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "adding the following post");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_following_stored);
}


/* the imported record and its credential row go with the new ones */

static ngx_int_t
ngx_http_tent_following_replace(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_following_t *st,
    ngx_http_tent_store_op_t *op)
{
    ngx_str_t  id, key, ckey, cvalue;

    if (ngx_http_tent_json_str(st->replaces, "id", &id) != NGX_OK) {
        return NGX_OK;
    }

    if (ngx_http_tent_key(r->pool, &ctx->entity,
                          NGX_HTTP_TENT_TABLE_FOLLOWING, &id, &key)
        != NGX_OK
        || ngx_http_tent_store_write_del(op, &key) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (json_object_get(st->replaces, "mac_key_id") != NULL) {
        if (ngx_http_tent_credential_row(r, ctx, "following", st->replaces,
                                         &ckey, &cvalue)
            != NGX_OK
            || ngx_http_tent_store_write_del(op, &ckey) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent followings: imported following \"%V\" replaced "
                   "by \"%V\", confirmed by its server", &id, &st->id);

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_following_stored(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                     *out;
    ngx_int_t                   rc;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_following_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent followings: following \"%V\" of \"%V\": %s",
                   &st->id, &st->entity,
                   op->status == NGX_HTTP_TENT_STORE_OK
                   ? "credential stored"
                   : "not stored, its credential id is in use");

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_GATEWAY,
                   "The remote's credential id is already in use here");
    }

    out = ngx_http_tent_json_own(r->pool,
                                 ngx_http_tent_following_view(st->record));
    if (out == NULL) {
        return ngx_http_tent_internal_error(r, "rendering the following");
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
}


static ngx_int_t
ngx_http_tent_following_abandon(ngx_http_request_t *r,
    ngx_http_tent_following_t *st, ngx_uint_t status, char *msg)
{
    ngx_str_t                  key;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_store_op_t  *op;

    ctx = ngx_http_tent_get_ctx(r);

    st->err_status = status;
    st->err_msg = msg;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_FOLLOWING, &st->id, &key)
           != NGX_OK
        || ngx_http_tent_store_write(op, 0) != NGX_OK
        || ngx_http_tent_store_write_del(op, &key) != NGX_OK)
    {
        return ngx_http_tent_send_error(r, status, msg);
    }

    return ngx_http_tent_store_submit_request(r, op,
                                        ngx_http_tent_following_abandoned);
}


static ngx_int_t
ngx_http_tent_following_abandoned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_following_t  *st;

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    return ngx_http_tent_send_error(r, st->err_status, st->err_msg);
}


/* GET and HEAD /followings, /followings/count */

ngx_int_t
ngx_http_tent_followings_list(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_relations_list(r, ctx,
                                        &ngx_http_tent_followings_rel);
}


/* GET, PUT, DELETE /followings/:id (or :entity) */

ngx_int_t
ngx_http_tent_following(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    if (r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD)) {
        return ngx_http_tent_relation_get(r, ctx,
                                          &ngx_http_tent_followings_rel);
    }

    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_FOLLOWINGS)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    ctx->state = NULL;

    return ngx_http_tent_relation_load(r, ctx, &ngx_http_tent_followings_rel,
                                       &ctx->params[0],
                                       ngx_http_tent_following_change);
}


static ngx_int_t
ngx_http_tent_following_change(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *record)
{
    u_char                 *p;
    json_t                 *servers;
    ngx_str_t               remote_id, path, url;
    ngx_http_tent_fetch_t  *f;

    /* an ActivityPub following not accepted yet may be given up */

    if (record == NULL
        || !(json_is_true(json_object_get(record, "confirmed"))
             || (r->method == NGX_HTTP_DELETE
                 && json_is_object(json_object_get(record, "activitypub")))))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    if (r->method == NGX_HTTP_PUT) {
        ctx->state = record;
        return ngx_http_tent_read_json(r, ctx,
                                       ngx_http_tent_following_update);
    }

    /* DELETE: tell them first, signed (spec 9.6), then forget */

    ctx->state = record;

    servers = json_object_get(record, "servers");

    if (ngx_http_tent_json_str(record, "remote_id", &remote_id) != NGX_OK
        || !json_is_string(json_array_get(servers, 0)))
    {
        return ngx_http_tent_following_unfollowed(r, NULL);
    }

    path.data = ngx_pnalloc(r->pool, sizeof("followers/") - 1
                                     + 3 * remote_id.len);
    if (path.data == NULL) {
        return ngx_http_tent_internal_error(r, "building the unfollow path");
    }

    p = ngx_cpymem(path.data, "followers/", sizeof("followers/") - 1);
    p = (u_char *) ngx_escape_uri(p, remote_id.data, remote_id.len,
                                  NGX_ESCAPE_URI_COMPONENT);
    path.len = p - path.data;

    if (ngx_http_tent_server_url(r->pool, json_array_get(servers, 0), &path,
                                 NULL, &url)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the unfollow URL");
    }

    f = ngx_http_tent_remote_fetch(r, &url, "DELETE");
    if (f == NULL) {
        return ngx_http_tent_internal_error(r, "starting the unfollow DELETE");
    }

    if (ngx_http_tent_remote_sign(f, record) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "signing the unfollow DELETE");
    }

    f->max_response = 64 * 1024;

    return ngx_http_tent_fetch_request(r, f,
                                       ngx_http_tent_following_unfollowed);
}


static ngx_int_t
ngx_http_tent_following_unfollowed(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f)
{
    json_t               *record;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);
    record = ctx->state;

    /* the remote's answer does not keep us following: log it, go on */

    if (f && (f->result != NGX_HTTP_TENT_FETCH_OK || f->status > 299)) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent: unfollow DELETE %V: %s, status %ui", &f->url,
                      ngx_http_tent_fetch_strerror(f->result), f->status);
    }

    return ngx_http_tent_relation_remove(r, ctx,
                                         &ngx_http_tent_followings_rel,
                                         record);
}


/* PUT /followings/:id: groups and permissions */

static ngx_int_t
ngx_http_tent_following_update(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    json_t                    *record, *out;
    ngx_str_t                  id, key, value;
    ngx_http_tent_store_op_t  *op;

    record = ctx->state;

    ngx_http_tent_relation_update(record, ctx->body);

    json_object_set_new(record, "updated_at", json_integer(ngx_time()));

    if (ngx_http_tent_json_str(record, "id", &id) != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_FOLLOWING, &id, &key)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                            "building the following's key");
    }

    if (ngx_http_tent_json_dump(r->pool, record, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r,
                                            "encoding the following record");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_write(op, 1) != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                       "adding the following to the batch");
    }

    out = ngx_http_tent_json_own(r->pool,
                                 ngx_http_tent_following_view(record));
    if (out == NULL) {
        return ngx_http_tent_internal_error(r, "rendering the following");
    }

    ctx->state = out;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_reply_state_json);
}


/*
 * GET /followings/:id/<path> (tentd): a GET to the followed server,
 * signed with the relationship's credential, so an app reads what that
 * entity lets us see.  Only Accept is passed on; the answer comes back
 * with its status and content type.
 */

ngx_int_t
ngx_http_tent_following_proxy(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_FOLLOWINGS)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    ctx->state = NULL;

    return ngx_http_tent_relation_load(r, ctx, &ngx_http_tent_followings_rel,
                                       &ctx->params[0],
                                       ngx_http_tent_following_proxy_loaded);
}


static ngx_int_t
ngx_http_tent_following_proxy_loaded(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *record)
{
    ngx_int_t               rc;
    ngx_str_t               url;
    ngx_http_tent_fetch_t  *f;

    if (record == NULL || !json_is_true(json_object_get(record, "confirmed")))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    /* nothing is read from a blocked entity, even through us */

    if (ngx_http_tent_json_str(record, "entity", &url) != NGX_OK
        || ngx_http_tent_blocks_has(ctx->blocks, &url)
        || ngx_http_tent_domains_entity(&url))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "The entity is blocked");
    }

    rc = ngx_http_tent_server_url(r->pool,
                                  json_array_get(json_object_get(record,
                                                                 "servers"),
                                                 0),
                                  &ctx->params[1], &r->args, &url);

    if (rc == NGX_DECLINED) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                        "The following has no server");
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_internal_error(r, "building the proxied URL");
    }

    f = ngx_http_tent_remote_fetch(r, &url, "GET");
    if (f == NULL) {
        return ngx_http_tent_internal_error(r, "starting the proxied GET");
    }

    if (ngx_http_tent_remote_sign(f, record) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "signing the proxied GET");
    }

    if (r->headers_in.accept && r->headers_in.accept->value.len < 512
        && ngx_strlchr(r->headers_in.accept->value.data,
                       r->headers_in.accept->value.data
                       + r->headers_in.accept->value.len, '\r') == NULL)
    {
        f->accept = r->headers_in.accept->value;
    }

    return ngx_http_tent_fetch_request(r, f,
                                       ngx_http_tent_following_proxied);
}


static ngx_int_t
ngx_http_tent_following_proxied(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f)
{
    ngx_int_t   rc;
    ngx_str_t  *ct;
    ngx_buf_t  *b;
    ngx_chain_t out;

    if (f->result != NGX_HTTP_TENT_FETCH_OK) {
        return ngx_http_tent_remote_error(r, f, "The proxied GET");
    }

    ct = ngx_http_tent_fetch_header(f, "content-type");

    r->headers_out.status = f->status;
    r->headers_out.content_length_n = f->body.len;

    if (ct && ct->len < 256) {
        r->headers_out.content_type = *ct;
        r->headers_out.content_type_len = ct->len;
    }

    ngx_http_tent_get_ctx(r)->own_reply = 1;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only
        || f->body.len == 0)
    {
        return rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = f->body.data;
    b->last = f->body.data + f->body.len;
    b->memory = 1;
    b->last_buf = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}
