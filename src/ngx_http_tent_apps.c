
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Apps (spec 7.10): registration, the app's own record, authorizations
 * and the OAuth code exchange.  Records, by table:
 *
 *   a <app id>                 the app, with its a: credential
 *   A <app id> 0x00 <auth id>  an authorization, with its u: credential
 *   c <key id>                 what a MAC key id is: kind, key, scopes...
 *   k <code>                   an authorization's current OAuth code
 *
 * Every change is one synced write batch of all the records it touches.
 */


#include "ngx_http_tent_module.h"


#define NGX_HTTP_TENT_MAX_APPS       1000
#define NGX_HTTP_TENT_MAX_AUTHS      1000
#define NGX_HTTP_TENT_MAX_URIS       32
#define NGX_HTTP_TENT_MAX_FIELD      2048


typedef struct {
    json_t                         *app;
    json_t                         *auth;
    ngx_str_t                       app_raw;
    ngx_str_t                       auth_raw;
    ngx_str_t                       code;
} ngx_http_tent_apps_state_t;


static ngx_int_t ngx_http_tent_subscription_put(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_store_op_t *op, ngx_str_t *rest,
    json_t *auth);
static ngx_int_t ngx_http_tent_app_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


static ngx_str_t *
ngx_http_tent_param(ngx_http_tent_ctx_t *ctx, ngx_uint_t n)
{
    return (n < ctx->nparams) ? &ctx->params[n] : NULL;
}


static ngx_int_t
ngx_http_tent_want_secrets(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t  v;

    return ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_SECRETS)
           && ngx_http_arg(r, (u_char *) "secrets", 7, &v) == NGX_OK
           && v.len == 4 && ngx_strncmp(v.data, "true", 4) == 0;
}


/* a URL-safe id from the path: nothing that could leave its key range */

static ngx_int_t
ngx_http_tent_valid_id(ngx_str_t *id)
{
    u_char  *p;

    if (id == NULL || id->len == 0 || id->len > 64) {
        return 0;
    }

    for (p = id->data; p < id->data + id->len; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
              || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'
              || *p == ':'))
        {
            return 0;
        }
    }

    return 1;
}


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


/* the writable fields of an app, checked; "app" gets them from "body" */

static ngx_int_t
ngx_http_tent_app_fields(json_t *app, json_t *body, ngx_uint_t create)
{
    const char  *key;
    json_t      *v;

    if (ngx_http_tent_opt_string(body, "name", create) != NGX_OK
        || ngx_http_tent_opt_string(body, "description", 0) != NGX_OK
        || ngx_http_tent_opt_string(body, "url", 0) != NGX_OK
        || ngx_http_tent_opt_string(body, "icon", 0) != NGX_OK
        || ngx_http_tent_check_uri_list(json_object_get(body,
                                                        "redirect_uris"),
                                        create)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    v = json_object_get(body, "scopes");

    if (v) {
        if (!json_is_object(v) || json_object_size(v) > 64) {
            return NGX_ERROR;
        }

        json_object_foreach(v, key, body) {
            if (!json_is_string(body)
                || json_string_length(body) > NGX_HTTP_TENT_MAX_FIELD)
            {
                return NGX_ERROR;
            }
        }
    }

    return NGX_OK;
}


static void
ngx_http_tent_app_copy(json_t *app, json_t *body)
{
    static const char  *fields[] = { "name", "description", "url", "icon",
                                     "redirect_uris", "scopes", NULL };
    const char        **f;
    json_t             *v;

    for (f = fields; *f; f++) {
        v = json_object_get(body, *f);
        if (v) {
            json_object_set(app, *f, v);
        }
    }
}


/* the app as clients see it: secrets only when asked for and allowed */

static json_t *
ngx_http_tent_app_view(json_t *app, ngx_uint_t secrets)
{
    json_t  *out;

    out = json_deep_copy(app);
    if (out == NULL) {
        return NULL;
    }

    if (!secrets) {
        json_object_del(out, "mac_key_id");
        json_object_del(out, "mac_key");
        json_object_del(out, "mac_algorithm");
    }

    return out;
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


static ngx_int_t
ngx_http_tent_put_json(ngx_http_request_t *r, ngx_http_tent_store_op_t *op,
    ngx_str_t *entity, u_char table, ngx_str_t *rest, json_t *json)
{
    ngx_str_t  key, value;

    if (ngx_http_tent_key(r->pool, entity, table, rest, &key) != NGX_OK
        || ngx_http_tent_json_dump(r->pool, json, &value) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_tent_store_write_put(op, &key, &value);
}


/*
 * A new key's credential row, only if its id is free in this entity: an
 * imported id (write_secrets) must not take over another key's row, ours
 * or one a followed server chose.  It begins the op's batch.
 */

static ngx_int_t
ngx_http_tent_credential_new(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op, ngx_str_t *entity, ngx_str_t *key_id,
    json_t *cred)
{
    ngx_str_t  key, value;

    if (ngx_http_tent_key(r->pool, entity, NGX_HTTP_TENT_TABLE_CREDENTIAL,
                          key_id, &key)
        != NGX_OK
        || ngx_http_tent_json_dump(r->pool, cred, &value) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_tent_store_cas(op, &key, NULL, &value);
}


/* the answer to a request that made a key: its id may have been taken */

ngx_int_t
ngx_http_tent_key_created(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    if (op->status == NGX_HTTP_TENT_STORE_CONFLICT) {
        return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                                        "The MAC key id is already in use");
    }

    return ngx_http_tent_reply_state_json(r, op);
}


static ngx_int_t
ngx_http_tent_del_key(ngx_http_request_t *r, ngx_http_tent_store_op_t *op,
    ngx_str_t *entity, u_char table, ngx_str_t *rest)
{
    ngx_str_t  key;

    if (rest == NULL || rest->len == 0) {
        return NGX_OK;
    }

    if (ngx_http_tent_key(r->pool, entity, table, rest, &key) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_tent_store_write_del(op, &key);
}


/* "<app id> 0x00 <auth id>": the rest of an authorization's key */

static ngx_int_t
ngx_http_tent_auth_rest(ngx_pool_t *pool, ngx_str_t *app_id,
    ngx_str_t *auth_id, ngx_str_t *rest)
{
    rest->len = app_id->len + 1 + (auth_id ? auth_id->len : 0);
    rest->data = ngx_pnalloc(pool, rest->len);
    if (rest->data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(rest->data, app_id->data, app_id->len);
    rest->data[app_id->len] = '\0';

    if (auth_id) {
        ngx_memcpy(rest->data + app_id->len + 1, auth_id->data, auth_id->len);
    }

    return NGX_OK;
}


/* the credential record of an authorization: one GET authenticates */

static json_t *
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


/* secrets an importing app (write_secrets) may set, else random ones */

static ngx_int_t
ngx_http_tent_secrets(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    json_t *body, json_t *record, const char *prefix, const char *id_field)
{
    json_t     *v;
    ngx_str_t   s;
    ngx_uint_t  import;

    import = ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_SECRETS);

    v = import ? json_object_get(body, id_field) : NULL;

    if (v) {
        if (!json_is_string(v) || json_string_length(v) == 0) {
            return NGX_ERROR;
        }

        s.data = (u_char *) json_string_value(v);
        s.len = json_string_length(v);

        if (!ngx_http_tent_valid_id(&s)) {
            return NGX_ERROR;
        }

        json_object_set(record, id_field, v);

    } else {
        if (ngx_http_tent_random_id(r->pool, prefix, 16, &s) != NGX_OK) {
            return NGX_ERROR;
        }

        json_object_set_new(record, id_field, ngx_http_tent_json_string(&s));
    }

    v = import ? json_object_get(body, "mac_key") : NULL;

    if (v) {
        if (!json_is_string(v) || json_string_length(v) < 8
            || json_string_length(v) > 256)
        {
            return NGX_ERROR;
        }

        json_object_set(record, "mac_key", v);

    } else {
        if (ngx_http_tent_random_hex(r->pool, 16, &s) != NGX_OK) {
            return NGX_ERROR;
        }

        json_object_set_new(record, "mac_key", ngx_http_tent_json_string(&s));
    }

    v = import ? json_object_get(body, "mac_algorithm") : NULL;

    if (v) {
        if (!json_is_string(v)
            || (strcmp(json_string_value(v), "hmac-sha-256") != 0
                && strcmp(json_string_value(v), "hmac-sha-1") != 0))
        {
            return NGX_ERROR;
        }

        json_object_set(record, "mac_algorithm", v);

    } else {
        json_object_set_new(record, "mac_algorithm",
                            json_string("hmac-sha-256"));
    }

    return NGX_OK;
}


/* POST /apps: anyone may register an app */

static ngx_int_t
ngx_http_tent_apps_create_body(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    json_t                    *app, *cred, *out;
    ngx_int_t                  rc;
    ngx_str_t                  id, key_id;
    ngx_http_tent_store_op_t  *op;

    if (ngx_http_tent_app_fields(NULL, ctx->body, 1) != NGX_OK) {
        return ngx_http_tent_send_error(r, 422, "Invalid Attributes");
    }

    app = ngx_http_tent_json_own(r->pool, json_object());
    if (app == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_SECRETS)
        && json_is_string(json_object_get(ctx->body, "id")))
    {
        ngx_http_tent_json_str(ctx->body, "id", &id);

        if (!ngx_http_tent_valid_id(&id)) {
            return ngx_http_tent_send_error(r, 422, "Invalid Attributes");
        }

    } else if (ngx_http_tent_random_id(r->pool, NULL, 16, &id) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    json_object_set_new(app, "id", ngx_http_tent_json_string(&id));

    ngx_http_tent_app_copy(app, ctx->body);

    if (json_object_get(app, "scopes") == NULL) {
        json_object_set_new(app, "scopes", json_object());
    }

    json_object_set_new(app, "created_at", json_integer(ngx_time()));
    json_object_set_new(app, "updated_at", json_integer(ngx_time()));

    if (ngx_http_tent_secrets(r, ctx, ctx->body, app, "a:", "mac_key_id")
        != NGX_OK)
    {
        return ngx_http_tent_send_error(r, 422, "Invalid Attributes");
    }

    ngx_http_tent_json_str(app, "mac_key_id", &key_id);

    cred = json_pack("{s:s, s:o, s:O, s:O}",
                     "kind", "app",
                     "app", ngx_http_tent_json_string(&id),
                     "key", json_object_get(app, "mac_key"),
                     "algorithm", json_object_get(app, "mac_algorithm"));
    if (cred == NULL || ngx_http_tent_json_cleanup(r->pool, cred) != NGX_OK) {
        json_decref(cred);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_credential_new(r, op, &ctx->entity, &key_id, cred)
           != NGX_OK
        || ngx_http_tent_put_json(r, op, &ctx->entity, NGX_HTTP_TENT_TABLE_APP,
                                  &id, app)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    out = ngx_http_tent_json_own(r->pool, ngx_http_tent_app_view(app, 1));
    if (out == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    json_object_set_new(out, "authorizations", json_array());

    ctx->state = out;

    rc = ngx_http_tent_store_submit_request(r, op,
                                            ngx_http_tent_key_created);
    return rc;
}


ngx_int_t
ngx_http_tent_apps_create(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_read_json(r, ctx, ngx_http_tent_apps_create_body);
}


/* after a write: reply with the JSON prepared in ctx->state */

ngx_int_t
ngx_http_tent_reply_state_json(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t             status;
    ngx_http_tent_ctx_t  *ctx;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        /* a compare-and-set found something else than we read */
        return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                   "The record changed meanwhile: send the request again");
    }

    ctx = ngx_http_tent_get_ctx(r);

    if (ctx->state == NULL) {
        /* a DELETE: 200 with an empty body, as tentd */
        r->headers_out.status = NGX_HTTP_OK;
        r->headers_out.content_length_n = 0;
        r->header_only = 1;
        ctx->own_reply = 1;
        return ngx_http_send_header(r);
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, ctx->state);
}


/* GET /apps (read_apps): every app, without secrets unless asked */

static ngx_int_t
ngx_http_tent_apps_listed(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t               *list, *app, *view;
    ngx_int_t             rc, status;
    ngx_str_t             key, value;
    ngx_uint_t            secrets;
    ngx_http_tent_ctx_t  *ctx;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    secrets = ngx_http_tent_want_secrets(r, ctx);

    list = ngx_http_tent_json_own(r->pool, json_array());
    if (list == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    while ((rc = ngx_http_tent_store_next(op, &key, &value)) == NGX_OK) {
        app = ngx_http_tent_json_parse(&value, r->connection->log);
        if (app == NULL) {
            continue;
        }

        view = ngx_http_tent_app_view(app, secrets);
        json_decref(app);

        if (view) {
            json_array_append_new(list, view);
        }
    }

    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, list);
}


ngx_int_t
ngx_http_tent_apps_list(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                  start, end;
    ngx_http_tent_store_op_t  *op;

    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_APPS)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_key_range(r->pool, &ctx->entity,
                                   NGX_HTTP_TENT_TABLE_APP, &start, &end)
           != NGX_OK
        || ngx_http_tent_store_scan(op, &start, &end, NGX_HTTP_TENT_MAX_APPS,
                                    0)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_apps_listed);
}


/*
 * /apps/:id and below: load the app, check who asks, then run the step
 * for the method.  The app itself (its a: key) or an authorization with
 * read_apps (GET) or write_apps (anything else) may.
 */

static ngx_int_t
ngx_http_tent_app_load(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                 *id;

    id = ngx_http_tent_param(ctx, 0);

    if (!ngx_http_tent_valid_id(id)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    return ngx_http_tent_store_get_request(r, NGX_HTTP_TENT_TABLE_APP, id,
                                           ngx_http_tent_app_loaded);
}


static ngx_int_t
ngx_http_tent_app_scan_auths(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_request_done_pt next)
{
    ngx_str_t                  rest, start, end, *id;
    ngx_http_tent_store_op_t  *op;

    id = ngx_http_tent_param(ctx, 0);

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_auth_rest(r->pool, id, NULL, &rest) != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_AUTHORIZATION, &rest, &start)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the range of "<app id> 0x00 ...": up to "<app id> 0x01" */

    end.len = start.len;
    end.data = ngx_pnalloc(r->pool, end.len);
    if (end.data == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_memcpy(end.data, start.data, start.len);
    end.data[end.len - 1] = '\1';

    if (ngx_http_tent_store_scan(op, &start, &end, NGX_HTTP_TENT_MAX_AUTHS, 0)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_store_submit_request(r, op, next);
}


static json_t *
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


static ngx_int_t
ngx_http_tent_app_get_auths(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                      *out, *list;
    ngx_int_t                    status;
    ngx_uint_t                   secrets;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_apps_state_t  *st;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;
    secrets = ngx_http_tent_want_secrets(r, ctx);

    list = ngx_http_tent_auths_json(r, ctx, op, secrets);
    if (list == NULL || ngx_http_tent_json_cleanup(r->pool, list) != NGX_OK) {
        json_decref(list);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ctx->nparams == 1 && r->method == NGX_HTTP_GET
        && ctx->api_path.len > 15
        && ngx_strncmp(ctx->api_path.data + ctx->api_path.len - 15,
                       "/authorizations", 15) == 0)
    {
        return ngx_http_tent_send_json(r, NGX_HTTP_OK, list);
    }

    out = ngx_http_tent_app_view(st->app, secrets);
    if (out == NULL || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK) {
        json_decref(out);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    json_object_set(out, "authorizations", list);

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
}


static ngx_int_t ngx_http_tent_app_write(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_app_remove(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_authorization_exchange(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_authorization_create(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_authorization_load(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


static ngx_int_t
ngx_http_tent_app_loaded(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                      *app;
    ngx_int_t                    status;
    ngx_str_t                    value, *id;
    ngx_uint_t                   self, need;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_apps_state_t  *st;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    id = ngx_http_tent_param(ctx, 0);

    self = ctx->principal.kind == NGX_HTTP_TENT_APP
           && ctx->principal.app_id.len == id->len
           && ngx_strncmp(ctx->principal.app_id.data, id->data, id->len) == 0;

    need = (r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))
           ? NGX_HTTP_TENT_READ_APPS : NGX_HTTP_TENT_WRITE_APPS;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        if (!self && !ngx_http_tent_has_scopes(ctx, need)) {
            return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                            "Unauthorized");
        }

        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    /*
     * The code exchange is the app's alone; creating an authorization
     * directly takes write_apps and write_secrets.  Otherwise the app
     * itself or the scope.
     */

    if (r->method == NGX_HTTP_POST) {
        if (!self
            && !ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_APPS
                                              |NGX_HTTP_TENT_WRITE_SECRETS))
        {
            return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                            "Unauthorized");
        }

    } else if (r->method == NGX_HTTP_PUT && ctx->nparams == 2) {
        if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_APPS)) {
            return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                            "Unauthorized");
        }

    } else if (!self && !ngx_http_tent_has_scopes(ctx, need)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    ngx_http_tent_store_value(op, &value);

    app = ngx_http_tent_json_load(r, &value);
    if (app == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_apps_state_t));
    if (st == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    st->app = app;
    st->app_raw = value;
    ctx->state = st;

    if (ctx->nparams == 2) {
        return ngx_http_tent_authorization_load(r, ctx);
    }

    switch (r->method) {

    case NGX_HTTP_GET:
    case NGX_HTTP_HEAD:
        return ngx_http_tent_app_scan_auths(r, ctx,
                                            ngx_http_tent_app_get_auths);

    case NGX_HTTP_PUT:
        return ngx_http_tent_read_json(r, ctx, ngx_http_tent_app_write);

    case NGX_HTTP_DELETE:
        return ngx_http_tent_app_scan_auths(r, ctx, ngx_http_tent_app_remove);

    default: /* POST /apps/:id/authorizations */
        if (self) {
            return ngx_http_tent_read_json(r, ctx,
                                        ngx_http_tent_authorization_exchange);
        }

        return ngx_http_tent_read_json(r, ctx,
                                       ngx_http_tent_authorization_create);
    }
}


ngx_int_t
ngx_http_tent_app_get(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_app_load(r, ctx);
}


ngx_int_t
ngx_http_tent_app_update(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_app_load(r, ctx);
}


ngx_int_t
ngx_http_tent_app_delete(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_app_load(r, ctx);
}


ngx_int_t
ngx_http_tent_authorizations_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_app_load(r, ctx);
}


ngx_int_t
ngx_http_tent_authorizations_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_app_load(r, ctx);
}


ngx_int_t
ngx_http_tent_authorization_update(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_app_load(r, ctx);
}


ngx_int_t
ngx_http_tent_authorization_delete(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_app_load(r, ctx);
}


/* PUT /apps/:id */

static ngx_int_t
ngx_http_tent_app_write(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                      *out;
    ngx_str_t                   *id;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_apps_state_t  *st;

    st = ctx->state;
    id = ngx_http_tent_param(ctx, 0);

    if (ngx_http_tent_app_fields(NULL, ctx->body, 0) != NGX_OK) {
        return ngx_http_tent_send_error(r, 422, "Invalid Attributes");
    }

    ngx_http_tent_app_copy(st->app, ctx->body);
    json_object_set_new(st->app, "updated_at", json_integer(ngx_time()));

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_write(op, 1) != NGX_OK
        || ngx_http_tent_put_json(r, op, &ctx->entity, NGX_HTTP_TENT_TABLE_APP,
                                  id, st->app)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    out = ngx_http_tent_json_own(r->pool, ngx_http_tent_app_view(st->app, 0));
    if (out == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->state = out;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_reply_state_json);
}


/* DELETE /apps/:id: the app, its key, its authorizations, their keys */

static ngx_int_t
ngx_http_tent_app_remove(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                      *auth;
    ngx_int_t                    status;
    ngx_str_t                    key, value, s, rest, *id;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_store_op_t    *wop;
    ngx_http_tent_apps_state_t  *st;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;
    id = ngx_http_tent_param(ctx, 0);

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (wop == NULL || ngx_http_tent_store_write(wop, 1) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {

        if (ngx_http_tent_store_write_del(wop, &key) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        auth = ngx_http_tent_json_parse(&value, r->connection->log);
        if (auth == NULL) {
            continue;
        }

        if (ngx_http_tent_json_cleanup(r->pool, auth) != NGX_OK) {
            json_decref(auth);
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        if (ngx_http_tent_json_str(auth, "id", &s) != NGX_OK
            || ngx_http_tent_auth_rest(r->pool, id, &s, &rest) != NGX_OK
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
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    if (ngx_http_tent_del_key(r, wop, &ctx->entity, NGX_HTTP_TENT_TABLE_APP,
                              id)
        != NGX_OK
        || (ngx_http_tent_json_str(st->app, "mac_key_id", &s) == NGX_OK
            && ngx_http_tent_del_key(r, wop, &ctx->entity,
                                     NGX_HTTP_TENT_TABLE_CREDENTIAL, &s)
               != NGX_OK))
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->state = NULL;

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_reply_state_json);
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
 * authorization, its u: credential, its code, if the key id is free.
 */

ngx_int_t
ngx_http_tent_authorization_new(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *app_id, json_t *app, json_t *fields,
    ngx_http_tent_store_op_t *op, json_t **result)
{
    json_t     *auth, *cred;
    ngx_str_t   id, key_id, code, rest;

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

    if (ngx_http_tent_auth_rest(r->pool, app_id, &id, &rest) != NGX_OK
        || ngx_http_tent_credential_new(r, op, &ctx->entity, &key_id, cred)
           != NGX_OK
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

    *result = auth;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_authorization_create(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    json_t                      *auth, *out;
    ngx_int_t                    rc;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_apps_state_t  *st;

    st = ctx->state;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);
    if (op == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_tent_authorization_new(r, ctx, ngx_http_tent_param(ctx, 0),
                                         st->app, ctx->body, op, &auth);

    if (rc == NGX_DECLINED) {
        return ngx_http_tent_send_error(r, 422, "Invalid Attributes");
    }

    if (rc != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    out = ngx_http_tent_auth_view(auth, ctx, 1);
    if (out == NULL || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK) {
        json_decref(out);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->state = out;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_key_created);
}


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


static ngx_int_t
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
    ngx_int_t                  status;
    ngx_str_t                  value, app_id, auth_id, rest, key, *id;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_store_op_t  *get;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    id = ngx_http_tent_param(ctx, 0);

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN, "Unauthorized");
    }

    ngx_http_tent_store_value(op, &value);

    code = ngx_http_tent_json_load(r, &value);
    if (code == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
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
        || ngx_http_tent_auth_rest(r->pool, &app_id, &auth_id, &rest)
           != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_AUTHORIZATION, &rest, &key)
           != NGX_OK
        || ngx_http_tent_store_get(get, &key) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_store_submit_request(r, get,
                                        ngx_http_tent_exchange_auth_loaded);
}


static ngx_int_t
ngx_http_tent_exchange_auth_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                      *auth, *v, *cred, *out;
    ngx_int_t                    status;
    ngx_str_t                    value, code, auth_id, rest, key, key_id,
                                 new_value, *id;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_store_op_t    *cas;
    ngx_http_tent_apps_state_t  *st;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;
    id = ngx_http_tent_param(ctx, 0);

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN, "Unauthorized");
    }

    ngx_http_tent_store_value(op, &value);

    auth = ngx_http_tent_json_load(r, &value);
    if (auth == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ngx_http_tent_json_str(auth, "token_code", &code) != NGX_OK
        || code.len != st->code.len
        || ngx_strncmp(code.data, st->code.data, code.len) != 0)
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN, "Unauthorized");
    }

    /* a new code; the optional expiry of the authorization */

    if (ngx_http_tent_random_hex(r->pool, 16, &code) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
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
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    out = json_pack("{s:O, s:O, s:O, s:s, s:o}",
                    "access_token", json_object_get(auth, "mac_key_id"),
                    "mac_key", json_object_get(auth, "mac_key"),
                    "mac_algorithm", json_object_get(auth, "mac_algorithm"),
                    "token_type", "mac",
                    "refresh_token", ngx_http_tent_json_string(&code));

    if (out == NULL || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK) {
        json_decref(out);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (json_is_integer(v)) {
        json_object_set(out, "tent_expires_at", v);
    }

    /*
     * The authorization record is the point of truth: compare-and-set it
     * from what we read, so one code is exchanged once.
     */

    cas = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (cas == NULL
        || ngx_http_tent_auth_rest(r->pool, id, &auth_id, &rest) != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_AUTHORIZATION, &rest, &key)
           != NGX_OK
        || ngx_http_tent_json_dump(r->pool, auth, &new_value) != NGX_OK
        || ngx_http_tent_store_cas(cas, &key, &value, &new_value) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
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
    ngx_int_t                    status;
    ngx_str_t                    key_id, *id, auth_id;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_store_op_t    *wop;
    ngx_http_tent_apps_state_t  *st;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;
    id = ngx_http_tent_param(ctx, 0);

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        /* someone exchanged this code first */
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN, "Unauthorized");
    }

    ngx_http_tent_json_str(st->auth, "mac_key_id", &key_id);
    ngx_http_tent_json_str(st->auth, "id", &auth_id);

    code = json_pack("{s:o, s:o}", "app", ngx_http_tent_json_string(id),
                     "authorization", ngx_http_tent_json_string(&auth_id));

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (code == NULL || ngx_http_tent_json_cleanup(r->pool, code) != NGX_OK
        || wop == NULL
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
        json_decref(code);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->state = ctx->body;

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_reply_state_json);
}


/* PUT and DELETE /apps/:id/authorizations/:auth_id */

static ngx_int_t ngx_http_tent_authorization_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_authorization_write(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


static ngx_int_t
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
        || ngx_http_tent_auth_rest(r->pool, ngx_http_tent_param(ctx, 0),
                                   auth_id, &rest)
           != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_AUTHORIZATION, &rest, &key)
           != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_store_submit_request(r, op,
                                        ngx_http_tent_authorization_loaded);
}


static ngx_int_t
ngx_http_tent_authorization_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                      *auth;
    ngx_int_t                    status;
    ngx_str_t                    value, s, rest;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_store_op_t    *wop;
    ngx_http_tent_apps_state_t  *st;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    ngx_http_tent_store_value(op, &value);

    auth = ngx_http_tent_json_load(r, &value);
    if (auth == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    st->auth = auth;

    if (r->method == NGX_HTTP_PUT) {
        return ngx_http_tent_read_json(r, ctx,
                                       ngx_http_tent_authorization_write);
    }

    /* DELETE: the authorization, its key, its code */

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (wop == NULL
        || ngx_http_tent_store_write(wop, 1) != NGX_OK
        || ngx_http_tent_auth_rest(r->pool, ngx_http_tent_param(ctx, 0),
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
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
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
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_http_tent_json_str(st->auth, "mac_key_id", &key_id);

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (wop == NULL
        || ngx_http_tent_store_write(wop, 1) != NGX_OK
        || ngx_http_tent_auth_rest(r->pool, ngx_http_tent_param(ctx, 0),
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
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    out = ngx_http_tent_auth_view(st->auth, ctx, 0);
    if (out == NULL || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK) {
        json_decref(out);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->state = out;

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_reply_state_json);
}
