
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The OAuth code exchange, POST /apps/:id/authorizations signed by the
 * app itself: the code the authorize page (ngx_http_tent_oauth.c) gave
 * becomes the authorization's u: credentials, and a new code replaces
 * it.
 */


#define NGX_HTTP_TENT_APPS_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_apps_private.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"


/*
 * The OAuth code exchange, signed by the app: the code names an
 * authorization of this app; the reply carries its u: credentials, and a
 * new code replaces the old one (tentd's refresh_token).
 */

static ngx_int_t ngx_http_tent_exchange_code_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_exchange_auth_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_exchange_swapped(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


ngx_int_t
ngx_http_tent_authorization_exchange(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    ngx_http_tent_apps_state_t  *st;

    st = ctx->state;

    if (ngx_http_tent_json_str(ctx->body, "code", &st->code) != NGX_OK
        || !ngx_http_tent_valid_id(&st->code))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN, "Unauthorized");
    }

    return ngx_http_tent_store_get_request(r, NGX_HTTP_TENT_TABLE_CODE,
                                           &st->code,
                                           ngx_http_tent_exchange_code_loaded);
}


static ngx_int_t
ngx_http_tent_exchange_code_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                    *code;
    ngx_int_t                  rc;
    ngx_str_t                  value, app_id, auth_id, rest, key, *id;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_store_op_t  *get;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    id = ngx_http_tent_param(ctx, 0);

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN, "Unauthorized");
    }

    ngx_http_tent_store_value(op, &value);

    code = ngx_http_tent_json_load(r, &value);
    if (code == NULL) {
        return ngx_http_tent_internal_error(r, "reading the code's record");
    }

    if (ngx_http_tent_json_str(code, "app", &app_id) != NGX_OK
        || ngx_http_tent_json_str(code, "authorization", &auth_id) != NGX_OK
        || app_id.len != id->len
        || ngx_strncmp(app_id.data, id->data, id->len) != 0)
    {
        /* another app's code */
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN, "Unauthorized");
    }

    get = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (get == NULL
        || ngx_http_tent_pair_rest(r->pool, &app_id, &auth_id, &rest)
           != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_AUTHORIZATION, &rest, &key)
           != NGX_OK
        || ngx_http_tent_store_get(get, &key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                            "preparing the authorization read");
    }

    return ngx_http_tent_store_submit_request(r, get,
                                        ngx_http_tent_exchange_auth_loaded);
}


static ngx_int_t
ngx_http_tent_exchange_auth_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                      *auth, *v, *cred, *out;
    ngx_int_t                    rc;
    ngx_str_t                    value, code, auth_id, rest, key, key_id,
                                 new_value, *id;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_store_op_t    *cas;
    ngx_http_tent_apps_state_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;
    id = ngx_http_tent_param(ctx, 0);

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN, "Unauthorized");
    }

    ngx_http_tent_store_value(op, &value);

    auth = ngx_http_tent_json_load(r, &value);
    if (auth == NULL) {
        return ngx_http_tent_internal_error(r, "reading the authorization");
    }

    if (ngx_http_tent_json_str(auth, "token_code", &code) != NGX_OK
        || code.len != st->code.len
        || ngx_strncmp(code.data, st->code.data, code.len) != 0)
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN, "Unauthorized");
    }

    /* a new code; the optional expiry of the authorization */

    if (ngx_http_tent_random_hex(r->pool, 16, &code) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "making a new code");
    }

    json_object_set_new(auth, "token_code", ngx_http_tent_json_string(&code));

    v = json_object_get(ctx->body, "tent_expires_at");
    if (json_is_integer(v)) {
        json_object_set(auth, "expires_at", v);
    }

    ngx_http_tent_json_str(auth, "id", &auth_id);
    ngx_http_tent_json_str(auth, "mac_key_id", &key_id);

    cred = ngx_http_tent_json_own(r->pool, ngx_http_tent_auth_credential(auth));
    if (cred == NULL) {
        return ngx_http_tent_internal_error(r, "making the credential");
    }

    out = json_pack("{s:O, s:O, s:O, s:s, s:o}",
                    "access_token", json_object_get(auth, "mac_key_id"),
                    "mac_key", json_object_get(auth, "mac_key"),
                    "mac_algorithm", json_object_get(auth, "mac_algorithm"),
                    "token_type", "mac",
                    "refresh_token", ngx_http_tent_json_string(&code));

    if (out == NULL || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK) {
        json_decref(out);
        return ngx_http_tent_internal_error(r, "making the token reply");
    }

    if (json_is_integer(v)) {
        json_object_set(out, "tent_expires_at", v);
    }

    /*
     * The authorization record is the point of truth: compare-and-set it
     * from what we read, so one code is exchanged once.
     */

    if (ngx_http_tent_json_dump(r->pool, auth, &new_value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "encoding the authorization");
    }

    cas = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (cas == NULL
        || ngx_http_tent_pair_rest(r->pool, id, &auth_id, &rest) != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_AUTHORIZATION, &rest, &key)
           != NGX_OK
        || ngx_http_tent_store_cas(cas, &key, &value, &new_value) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "preparing the code's swap");
    }

    st->auth = auth;
    st->auth_raw = code;
    st->app = cred;
    ctx->body = out;

    return ngx_http_tent_store_submit_request(r, cas,
                                              ngx_http_tent_exchange_swapped);
}


static ngx_int_t
ngx_http_tent_exchange_swapped(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                      *code;
    ngx_int_t                    rc;
    ngx_str_t                    key_id, *id, auth_id;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_store_op_t    *wop;
    ngx_http_tent_apps_state_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;
    id = ngx_http_tent_param(ctx, 0);

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        /* someone exchanged this code first */
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent apps: code of app \"%V\" exchanged by another "
                       "request first", id);

        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN, "Unauthorized");
    }

    ngx_http_tent_json_str(st->auth, "mac_key_id", &key_id);
    ngx_http_tent_json_str(st->auth, "id", &auth_id);

    code = json_pack("{s:o, s:o}", "app", ngx_http_tent_json_string(id),
                     "authorization", ngx_http_tent_json_string(&auth_id));

    if (code == NULL || ngx_http_tent_json_cleanup(r->pool, code) != NGX_OK) {
        json_decref(code);
        return ngx_http_tent_internal_error(r, "making the new code's row");
    }

    /* the pool holds the code's record now: no json_decref() below */

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (wop == NULL
        || ngx_http_tent_store_write(wop, 1) != NGX_OK
        || ngx_http_tent_del_key(r, wop, &ctx->entity,
                                 NGX_HTTP_TENT_TABLE_CODE, &st->code)
           != NGX_OK
        || ngx_http_tent_put_json(r, wop, &ctx->entity,
                                  NGX_HTTP_TENT_TABLE_CODE, &st->auth_raw,
                                  code)
           != NGX_OK
        || ngx_http_tent_put_json(r, wop, &ctx->entity,
                                  NGX_HTTP_TENT_TABLE_CREDENTIAL, &key_id,
                                  st->app)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "writing the new code");
    }

    ctx->state = ctx->body;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent apps: code exchanged for authorization \"%V\" "
                   "of app \"%V\", key id \"%V\"", &auth_id, id, &key_id);

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_reply_state_json);
}
