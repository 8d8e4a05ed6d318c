
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Authorizations of an app (spec 7.10): made by the owner's approval
 * (ngx_http_tent_oauth.c) or by an app with write_apps and
 * write_secrets, listed with their app, changed and revoked.  Each has
 * a u: credential, its current OAuth code and, with a notification URL,
 * a subscription of its app to posts; they are written and removed in
 * one batch.
 */


#define NGX_HTTP_TENT_APPS_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_apps.h"
#include "ngx_http_tent_apps_private.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_remote.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_MAX_URIS       32
#define NGX_HTTP_TENT_MAX_FIELD      2048


static ngx_int_t ngx_http_tent_subscription_put(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_store_op_t *op, ngx_str_t *rest,
    json_t *auth);


static ngx_int_t
ngx_http_tent_opt_string(json_t *body, const char *name, ngx_uint_t required)
{
    json_t  *v;

    v = json_object_get(body, name);

    if (v == NULL) {
        return required ? NGX_ERROR : NGX_OK;
    }

    if (!json_is_string(v) || json_string_length(v) > NGX_HTTP_TENT_MAX_FIELD
        || (required && json_string_length(v) == 0))
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_check_uri_list(json_t *list, ngx_uint_t required)
{
    size_t   i;
    u_char  *p;
    json_t  *v;

    if (list == NULL) {
        return required ? NGX_ERROR : NGX_OK;
    }

    if (!json_is_array(list) || json_array_size(list) > NGX_HTTP_TENT_MAX_URIS)
    {
        return NGX_ERROR;
    }

    json_array_foreach(list, i, v) {
        if (!json_is_string(v) || json_string_length(v) == 0
            || json_string_length(v) > NGX_HTTP_TENT_MAX_FIELD)
        {
            return NGX_ERROR;
        }

        /* URIs end up in headers (Location): no control characters */

        for (p = (u_char *) json_string_value(v); *p; p++) {
            if (*p < 0x20 || *p == 0x7f) {
                return NGX_ERROR;
            }
        }

        if (p - (u_char *) json_string_value(v)
            != (ptrdiff_t) json_string_length(v))
        {
            /* a NUL inside */
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static json_t *
ngx_http_tent_auth_view(json_t *auth, ngx_http_tent_ctx_t *ctx,
    ngx_uint_t secrets)
{
    json_t  *out;

    out = json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?}",
                    "id", json_object_get(auth, "id"),
                    "post_types", json_object_get(auth, "post_types"),
                    "profile_info_types",
                        json_object_get(auth, "profile_info_types"),
                    "scopes", json_object_get(auth, "scopes"),
                    "notification_url",
                        json_object_get(auth, "notification_url"));
    if (out == NULL) {
        return NULL;
    }

    if (ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_APPS)) {
        json_object_set(out, "token_code", json_object_get(auth,
                                                           "token_code"));
    }

    if (secrets) {
        json_object_set(out, "mac_key_id", json_object_get(auth,
                                                           "mac_key_id"));
        json_object_set(out, "mac_key", json_object_get(auth, "mac_key"));
        json_object_set(out, "mac_algorithm",
                        json_object_get(auth, "mac_algorithm"));
    }

    return out;
}


/* the answer to a request that made a key: its id may have been taken */

ngx_int_t
ngx_http_tent_key_created(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    if (op->status == NGX_HTTP_TENT_STORE_CONFLICT) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent apps: key not created: its id is in use");

        return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                                        "The MAC key id is already in use");
    }

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent apps: key created");
    }

    return ngx_http_tent_reply_state_json(r, op);
}


/* the credential record of an authorization: one GET authenticates */

json_t *
ngx_http_tent_auth_credential(json_t *auth)
{
    return json_pack("{s:s, s:O, s:O?, s:O?, s:O, s:O, s:O, s:O, s:O, s:O, "
                     "s:O?}",
                     "kind", "authorization",
                     "app", json_object_get(auth, "app_id"),
                     "app_name", json_object_get(auth, "app_name"),
                     "app_url", json_object_get(auth, "app_url"),
                     "authorization", json_object_get(auth, "id"),
                     "key", json_object_get(auth, "mac_key"),
                     "algorithm", json_object_get(auth, "mac_algorithm"),
                     "scopes", json_object_get(auth, "scopes"),
                     "post_types", json_object_get(auth, "post_types"),
                     "profile_info_types",
                         json_object_get(auth, "profile_info_types"),
                     "expires_at", json_object_get(auth, "expires_at"));
}


/*
 * An authorization with a notification URL subscribes its app to posts
 * (spec 9.2): an "n" row, written and removed in the authorization's own
 * batches, holds what the delivery engine needs to choose and sign.
 */

static ngx_int_t
ngx_http_tent_subscription_put(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_store_op_t *op, ngx_str_t *rest,
    json_t *auth)
{
    json_t     *sub;
    ngx_str_t   url;

    if (ngx_http_tent_json_str(auth, "notification_url", &url) != NGX_OK
        || ngx_http_tent_entity_valid(&url) != NGX_OK)
    {
        return ngx_http_tent_del_key(r, op, &ctx->entity,
                                     NGX_HTTP_TENT_TABLE_SUBSCRIPTION, rest);
    }

    sub = json_pack("{s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O?}",
                    "app", json_object_get(auth, "app_id"),
                    "authorization", json_object_get(auth, "id"),
                    "notification_url",
                        json_object_get(auth, "notification_url"),
                    "scopes", json_object_get(auth, "scopes"),
                    "post_types", json_object_get(auth, "post_types"),
                    "mac_key_id", json_object_get(auth, "mac_key_id"),
                    "mac_key", json_object_get(auth, "mac_key"),
                    "mac_algorithm", json_object_get(auth, "mac_algorithm"),
                    "expires_at", json_object_get(auth, "expires_at"));

    if (sub == NULL || ngx_http_tent_json_cleanup(r->pool, sub) != NGX_OK) {
        json_decref(sub);
        return NGX_ERROR;
    }

    return ngx_http_tent_put_json(r, op, &ctx->entity,
                                  NGX_HTTP_TENT_TABLE_SUBSCRIPTION, rest, sub);
}


json_t *
ngx_http_tent_auths_json(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_store_op_t *op, ngx_uint_t secrets)
{
    json_t     *list, *auth, *view;
    ngx_str_t   key, value;

    list = json_array();
    if (list == NULL) {
        return NULL;
    }

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        auth = ngx_http_tent_json_parse(&value, r->connection->log);
        if (auth == NULL) {
            continue;
        }

        view = ngx_http_tent_auth_view(auth, ctx, secrets);
        json_decref(auth);

        if (view) {
            json_array_append_new(list, view);
        }
    }

    return list;
}


/* scopes and types of an authorization, from a request body */

static ngx_int_t
ngx_http_tent_auth_fields(json_t *auth, json_t *body)
{
    size_t      i;
    json_t     *v, *list;
    ngx_str_t   s;

    list = json_object_get(body, "scopes");

    if (list) {
        if (!json_is_array(list) || json_array_size(list) > 64) {
            return NGX_ERROR;
        }

        json_array_foreach(list, i, v) {
            if (!json_is_string(v)) {
                return NGX_ERROR;
            }

            s.data = (u_char *) json_string_value(v);
            s.len = json_string_length(v);

            if (ngx_http_tent_scope_bit(&s) == 0) {
                return NGX_ERROR;
            }
        }

        json_object_set(auth, "scopes", list);
    }

    if (ngx_http_tent_check_uri_list(json_object_get(body, "post_types"), 0)
        != NGX_OK
        || ngx_http_tent_check_uri_list(json_object_get(body,
                                                        "profile_info_types"),
                                        0)
           != NGX_OK
        || ngx_http_tent_opt_string(body, "notification_url", 0) != NGX_OK)
    {
        return NGX_ERROR;
    }

    v = json_object_get(body, "post_types");
    if (v) {
        json_object_set(auth, "post_types", v);
    }

    v = json_object_get(body, "profile_info_types");
    if (v) {
        json_object_set(auth, "profile_info_types", v);
    }

    v = json_object_get(body, "notification_url");
    if (v) {
        json_object_set(auth, "notification_url", v);
    }

    return NGX_OK;
}


/*
 * A new authorization of an app: the owner approving it on the authorize
 * page, or an app with write_apps and write_secrets.  One batch: the
 * authorization, its u: credential, its code.  A generated key id is a
 * compare-and-set on the app's record ("app_raw", as the caller read it:
 * an app deleted or replaced meanwhile gets no authorization); an
 * imported one (write_secrets) is a compare-and-set "must be absent" on
 * the credential row, so it never replaces another key.
 */

ngx_int_t
ngx_http_tent_authorization_new(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *app_id, json_t *app,
    ngx_str_t *app_raw, json_t *fields, ngx_http_tent_store_op_t *op,
    json_t **result)
{
    json_t      *auth, *cred, *confirmed, *slot;
    ngx_str_t    id, key_id, code, rest, key, value;
    ngx_uint_t   imported;

    /* the app's name and url go with it: posts it makes carry them */

    auth = json_pack("{s:o, s:O?, s:O?, s:[], s:[], s:[], s:n, s:I}",
                     "app_id", ngx_http_tent_json_string(app_id),
                     "app_name", json_object_get(app, "name"),
                     "app_url", json_object_get(app, "url"),
                     "scopes", "post_types", "profile_info_types",
                     "notification_url",
                     "created_at", (json_int_t) ngx_time());

    if (auth == NULL || ngx_http_tent_json_cleanup(r->pool, auth) != NGX_OK) {
        json_decref(auth);
        return NGX_ERROR;
    }

    if (ngx_http_tent_auth_fields(auth, fields) != NGX_OK) {
        return NGX_DECLINED;
    }

    if (ngx_http_tent_random_id(r->pool, NULL, 16, &id) != NGX_OK
        || ngx_http_tent_random_hex(r->pool, 16, &code) != NGX_OK
        || ngx_http_tent_secrets(r, ctx, fields, auth, "u:", "mac_key_id")
           != NGX_OK)
    {
        return NGX_DECLINED;
    }

    json_object_set_new(auth, "id", ngx_http_tent_json_string(&id));
    json_object_set_new(auth, "token_code", ngx_http_tent_json_string(&code));

    cred = ngx_http_tent_json_own(r->pool, ngx_http_tent_auth_credential(auth));
    if (cred == NULL) {
        return NGX_ERROR;
    }

    ngx_http_tent_json_str(auth, "mac_key_id", &key_id);

    /*
     * A compare-and-set on the app as read: confirmed by this first
     * authorization, its place among the unconfirmed ones is free; and
     * an app deleted or replaced meanwhile gets no authorization.
     */

    confirmed = ngx_http_tent_json_own(r->pool, json_copy(app));
    if (confirmed == NULL) {
        return NGX_ERROR;
    }

    slot = json_object_get(app, "unconfirmed_slot");
    json_object_del(confirmed, "unconfirmed_slot");

    imported = ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_SECRETS)
               && json_object_get(fields, "mac_key_id") != NULL;

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_APP,
                          app_id, &key)
        != NGX_OK
        || ngx_http_tent_json_dump(r->pool, confirmed, &value) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (imported) {
        if (ngx_http_tent_credential_new(r, op, &ctx->entity, &key_id, cred)
            != NGX_OK
            || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK)
        {
            return NGX_ERROR;
        }

    } else if (ngx_http_tent_store_cas(op, &key, app_raw, &value) != NGX_OK
               || ngx_http_tent_put_json(r, op, &ctx->entity,
                                         NGX_HTTP_TENT_TABLE_CREDENTIAL,
                                         &key_id, cred)
                  != NGX_OK)
    {
        return NGX_ERROR;
    }

    /*
     * and it becomes one of the entity's apps: the place its caller took
     * (ngx_http_tent_authorization_quota()) is this batch's
     */

    if (json_is_integer(slot)
        && (ngx_http_tent_slot_key(r->pool, &ctx->entity,
                                   NGX_HTTP_TENT_TABLE_UNCONFIRMED,
                                   (uint32_t) json_integer_value(slot), &key)
            != NGX_OK
            || ngx_http_tent_store_write_del(op, &key) != NGX_OK
            || ngx_http_tent_quota_count(r, ctx, op) != NGX_OK))
    {
        return NGX_ERROR;
    }

    if (ngx_http_tent_pair_rest(r->pool, app_id, &id, &rest) != NGX_OK
        || ngx_http_tent_put_json(r, op, &ctx->entity,
                                  NGX_HTTP_TENT_TABLE_AUTHORIZATION, &rest,
                                  auth)
           != NGX_OK
        || ngx_http_tent_subscription_put(r, ctx, op, &rest, auth) != NGX_OK)
    {
        return NGX_ERROR;
    }

    cred = json_pack("{s:o, s:o}", "app", ngx_http_tent_json_string(app_id),
                     "authorization", ngx_http_tent_json_string(&id));

    if (cred == NULL || ngx_http_tent_json_cleanup(r->pool, cred) != NGX_OK
        || ngx_http_tent_put_json(r, op, &ctx->entity,
                                  NGX_HTTP_TENT_TABLE_CODE, &code, cred)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent apps: authorization \"%V\" of app \"%V\" made, "
                   "key id \"%V\"%s", &id, app_id, &key_id,
                   imported ? ", imported" : "");

    *result = auth;

    return NGX_OK;
}


/*
 * An app that no one authorized yet (registered unsigned: it holds an
 * "unconfirmed_slot") becomes one of the entity's apps by its first
 * authorization, however it comes (the owner's page, an owner's app):
 * on a provisioning server it takes its place in the quota of apps
 * first (403 at the quota), then "next" runs again.  NGX_DECLINED:
 * nothing to take, go on.  The unconfirmed apps themselves are bounded
 * by tent_apps_unconfirmed, not by the quota.
 */

ngx_int_t
ngx_http_tent_authorization_quota(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *app, ngx_http_tent_route_pt next)
{
    if (!json_is_integer(json_object_get(app, "unconfirmed_slot"))
        || !ngx_http_tent_quota_pending(r, ctx, NGX_HTTP_TENT_QUOTA_APPS))
    {
        return NGX_DECLINED;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent apps: an unconfirmed app of \"%V\" authorized: "
                   "counted against its apps", &ctx->entity);

    return ngx_http_tent_quota_check(r, ctx, NGX_HTTP_TENT_QUOTA_APPS, next);
}


ngx_int_t
ngx_http_tent_authorization_create(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    json_t                      *auth, *out;
    ngx_int_t                    rc;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_apps_state_t  *st;

    st = ctx->state;

    rc = ngx_http_tent_authorization_quota(r, ctx, st->app,
                                           ngx_http_tent_authorization_create);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);
    if (op == NULL) {
        return ngx_http_tent_internal_error(r, "preparing the authorization");
    }

    rc = ngx_http_tent_authorization_new(r, ctx, ngx_http_tent_param(ctx, 0),
                                         st->app, &st->app_raw, ctx->body, op,
                                         &auth);

    if (rc == NGX_DECLINED) {
        return ngx_http_tent_send_error(r, 422, "Invalid Attributes");
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_internal_error(r, "making the authorization");
    }

    out = ngx_http_tent_auth_view(auth, ctx, 1);
    if (out == NULL || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK) {
        json_decref(out);
        return ngx_http_tent_internal_error(r,
                                            "making the authorization's view");
    }

    ctx->state = out;

    /* a compare-and-set on the credential only when the key was imported */

    return ngx_http_tent_store_submit_request(r, op,
               ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_SECRETS)
               && json_object_get(ctx->body, "mac_key_id")
               ? ngx_http_tent_key_created : ngx_http_tent_reply_state_json);
}


/* PUT and DELETE /apps/:id/authorizations/:auth_id */

static ngx_int_t ngx_http_tent_authorization_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_authorization_write(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


ngx_int_t
ngx_http_tent_authorization_load(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                  rest, key, *auth_id;
    ngx_http_tent_store_op_t  *op;

    auth_id = ngx_http_tent_param(ctx, 1);

    if (!ngx_http_tent_valid_id(auth_id)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_pair_rest(r->pool, ngx_http_tent_param(ctx, 0),
                                   auth_id, &rest)
           != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_AUTHORIZATION, &rest, &key)
           != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                            "preparing the authorization read");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                        ngx_http_tent_authorization_loaded);
}


static ngx_int_t
ngx_http_tent_authorization_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                      *auth;
    ngx_int_t                    rc;
    ngx_str_t                    value, s, rest;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_store_op_t    *wop;
    ngx_http_tent_apps_state_t  *st;

    auth = ngx_http_tent_store_request_record(r, op, "Not Found",
                                              "reading the authorization",
                                              &value, &rc);
    if (auth == NULL) {
        return rc;
    }

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    st->auth = auth;

    if (r->method == NGX_HTTP_PUT) {
        return ngx_http_tent_read_json(r, ctx,
                                       ngx_http_tent_authorization_write);
    }

    /* DELETE: the authorization, its key, its code */

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent apps: authorization \"%V\" of app \"%V\" revoked",
                   ngx_http_tent_param(ctx, 1), ngx_http_tent_param(ctx, 0));

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (wop == NULL
        || ngx_http_tent_store_write(wop, 1) != NGX_OK
        || ngx_http_tent_pair_rest(r->pool, ngx_http_tent_param(ctx, 0),
                                   ngx_http_tent_param(ctx, 1), &rest)
           != NGX_OK
        || ngx_http_tent_del_key(r, wop, &ctx->entity,
                                 NGX_HTTP_TENT_TABLE_AUTHORIZATION, &rest)
           != NGX_OK
        || ngx_http_tent_del_key(r, wop, &ctx->entity,
                                 NGX_HTTP_TENT_TABLE_SUBSCRIPTION, &rest)
           != NGX_OK
        || (ngx_http_tent_json_str(auth, "mac_key_id", &s) == NGX_OK
            && ngx_http_tent_del_key(r, wop, &ctx->entity,
                                     NGX_HTTP_TENT_TABLE_CREDENTIAL, &s)
               != NGX_OK)
        || (ngx_http_tent_json_str(auth, "token_code", &s) == NGX_OK
            && ngx_http_tent_del_key(r, wop, &ctx->entity,
                                     NGX_HTTP_TENT_TABLE_CODE, &s)
               != NGX_OK))
    {
        return ngx_http_tent_internal_error(r, "deleting the authorization");
    }

    ctx->state = NULL;

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_reply_state_json);
}


static ngx_int_t
ngx_http_tent_authorization_write(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    json_t                      *cred, *out;
    ngx_str_t                    rest, key_id;
    ngx_http_tent_store_op_t    *wop;
    ngx_http_tent_apps_state_t  *st;

    st = ctx->state;

    if (ngx_http_tent_auth_fields(st->auth, ctx->body) != NGX_OK) {
        return ngx_http_tent_send_error(r, 422, "Invalid Attributes");
    }

    cred = ngx_http_tent_auth_credential(st->auth);
    if (cred == NULL || ngx_http_tent_json_cleanup(r->pool, cred) != NGX_OK) {
        json_decref(cred);
        return ngx_http_tent_internal_error(r, "making the credential");
    }

    ngx_http_tent_json_str(st->auth, "mac_key_id", &key_id);

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (wop == NULL
        || ngx_http_tent_store_write(wop, 1) != NGX_OK
        || ngx_http_tent_pair_rest(r->pool, ngx_http_tent_param(ctx, 0),
                                   ngx_http_tent_param(ctx, 1), &rest)
           != NGX_OK
        || ngx_http_tent_put_json(r, wop, &ctx->entity,
                                  NGX_HTTP_TENT_TABLE_AUTHORIZATION, &rest,
                                  st->auth)
           != NGX_OK
        || ngx_http_tent_put_json(r, wop, &ctx->entity,
                                  NGX_HTTP_TENT_TABLE_CREDENTIAL, &key_id,
                                  cred)
           != NGX_OK
        || ngx_http_tent_subscription_put(r, ctx, wop, &rest, st->auth)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "writing the authorization");
    }

    out = ngx_http_tent_auth_view(st->auth, ctx, 0);
    if (out == NULL || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK) {
        json_decref(out);
        return ngx_http_tent_internal_error(r,
                                            "making the authorization's view");
    }

    ctx->state = out;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent apps: authorization \"%V\" of app \"%V\" changed",
                   ngx_http_tent_param(ctx, 1), ngx_http_tent_param(ctx, 0));

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_reply_state_json);
}
