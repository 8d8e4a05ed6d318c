
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
 *   u <slot, u32>              an app no one authorized yet: {app, at},
 *                              "at" its registration in milliseconds
 *
 * Every change is one synced write batch of all the records it touches.
 * Whatever can change whether an app is unconfirmed (an authorization,
 * PUT, DELETE, its removal for a new registration) is a compare-and-set
 * on the app's record, so those never cross: an authorization never
 * outlives its app.
 */


#include "ngx_http_tent_module.h"
#include "ngx_http_tent_apps.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_remote.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_MAX_AUTHS      1000
#define NGX_HTTP_TENT_MAX_URIS       32
#define NGX_HTTP_TENT_MAX_FIELD      2048

/* what anyone may store with POST /apps, or an app with its a: key */
#define NGX_HTTP_TENT_APP_NAME       256
#define NGX_HTTP_TENT_APP_TEXT       1024
#define NGX_HTTP_TENT_APP_URL        2048
#define NGX_HTTP_TENT_APP_URIS       8
#define NGX_HTTP_TENT_APP_SCOPES     32
#define NGX_HTTP_TENT_APP_SCOPE_KEY  64
#define NGX_HTTP_TENT_APP_REASON     512
#define NGX_HTTP_TENT_APP_RECORD     32768

/* a registration that lost its slot to another one scans again */
#define NGX_HTTP_TENT_SLOT_TRIES     4


typedef struct {
    json_t                         *app;
    json_t                         *auth;
    ngx_str_t                       app_raw;
    ngx_str_t                       auth_raw;
    ngx_str_t                       code;
} ngx_http_tent_apps_state_t;


typedef struct {
    ngx_uint_t                      status;
    u_char                          text[160];
} ngx_http_tent_field_error_t;


/* a registration that takes a place among the unconfirmed apps */
typedef struct {
    json_t                         *app;
    json_t                         *cred;
    json_t                         *out;
    ngx_str_t                       id;
    ngx_str_t                       key_id;
    ngx_uint_t                      tries;
    ngx_uint_t                      slot;
    ngx_str_t                       row;        /* the slot's row, if any */
    ngx_str_t                       old_id;     /* the app it names */
    ngx_str_t                       old_key_id;
} ngx_http_tent_apps_new_t;


/* GET /apps */
typedef struct {
    json_t                         *authorized; /* app ids: true */
    ngx_int_t                       filter;     /* -1, or 0 or 1 */
    ngx_uint_t                      secrets;
    ngx_str_t                       start;      /* authorizations to scan */
    ngx_str_t                       end;
    ngx_str_t                       args;
} ngx_http_tent_apps_list_t;


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
ngx_http_tent_field_error(ngx_http_tent_field_error_t *err, ngx_uint_t status,
    const char *fmt, ...)
{
    u_char   *p;
    va_list   args;

    va_start(args, fmt);
    p = ngx_vslprintf(err->text, err->text + sizeof(err->text) - 1, fmt,
                      args);
    va_end(args);

    *p = '\0';
    err->status = status;

    return NGX_ERROR;
}


#define ngx_http_tent_invalid(err)                                           \
    ngx_http_tent_field_error(err, 422, "Invalid Attributes")


/*
 * An absolute http(s) URL with a host.  Never javascript:, data: and
 * the like; nor blanks or control characters anywhere, which browsers
 * drop before they read the scheme (" JavaScript:", "java\tscript:");
 * a redirect URI has no fragment either (RFC 6749, 3.1.2).
 */

ngx_int_t
ngx_http_tent_redirect_uri_valid(u_char *p, size_t len)
{
    size_t   n;
    u_char  *last;

    last = p + len;

    if (len > 7 && ngx_strncasecmp(p, (u_char *) "http://", 7) == 0) {
        n = 7;

    } else if (len > 8 && ngx_strncasecmp(p, (u_char *) "https://", 8) == 0) {
        n = 8;

    } else {
        return 0;
    }

    switch (p[n]) {
    case '/': case '\\': case '?': case '#': case ':': case '@':
        return 0;
    }

    for ( /* void */ ; p < last; p++) {
        if (*p <= 0x20 || *p == 0x7f || *p == '#') {
            return 0;
        }
    }

    return 1;
}


/*
 * A string field of an app: 422 when not a string, 413 when too long.
 * Its url and icon are shown, never followed by the server: any text.
 */

static ngx_int_t
ngx_http_tent_app_string(json_t *body, const char *name, size_t max,
    ngx_uint_t required, ngx_http_tent_field_error_t *err)
{
    json_t  *v;

    v = json_object_get(body, name);

    if (v == NULL) {
        return required ? ngx_http_tent_invalid(err) : NGX_OK;
    }

    if (!json_is_string(v) || (required && json_string_length(v) == 0)) {
        return ngx_http_tent_invalid(err);
    }

    if (json_string_length(v) > max) {
        return ngx_http_tent_field_error(err, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                         "%s is longer than %uz bytes",
                                         name, max);
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_app_redirect_uris(json_t *list, ngx_uint_t required,
    ngx_http_tent_field_error_t *err)
{
    size_t   i;
    json_t  *v;

    if (list == NULL) {
        return required ? ngx_http_tent_invalid(err) : NGX_OK;
    }

    if (!json_is_array(list)) {
        return ngx_http_tent_invalid(err);
    }

    if (json_array_size(list) > NGX_HTTP_TENT_APP_URIS) {
        return ngx_http_tent_field_error(err, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                         "redirect_uris has more than %d "
                                         "entries", NGX_HTTP_TENT_APP_URIS);
    }

    json_array_foreach(list, i, v) {
        if (!json_is_string(v) || json_string_length(v) == 0) {
            return ngx_http_tent_invalid(err);
        }

        if (json_string_length(v) > NGX_HTTP_TENT_APP_URL) {
            return ngx_http_tent_field_error(err,
                                             NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                             "redirect_uris[%uz] is longer "
                                             "than %d bytes", i,
                                             NGX_HTTP_TENT_APP_URL);
        }

        /* they end up in the Location of the authorize page's answer */

        if (!ngx_http_tent_redirect_uri_valid((u_char *) json_string_value(v),
                                              json_string_length(v)))
        {
            return ngx_http_tent_field_error(err, NGX_HTTP_BAD_REQUEST,
                                             "redirect_uris[%uz] must be an "
                                             "http or https URL without a "
                                             "fragment", i);
        }
    }

    return NGX_OK;
}


/* the scopes an app asks for: {"name": "the reason"} */

static ngx_int_t
ngx_http_tent_app_scopes(json_t *scopes, ngx_http_tent_field_error_t *err)
{
    size_t       n;
    json_t      *v;
    const char  *key, *p;

    if (scopes == NULL) {
        return NGX_OK;
    }

    if (!json_is_object(scopes)) {
        return ngx_http_tent_invalid(err);
    }

    if (json_object_size(scopes) > NGX_HTTP_TENT_APP_SCOPES) {
        return ngx_http_tent_field_error(err, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                         "scopes has more than %d entries",
                                         NGX_HTTP_TENT_APP_SCOPES);
    }

    json_object_keylen_foreach(scopes, key, n, v) {
        if (!json_is_string(v)) {
            return ngx_http_tent_invalid(err);
        }

        if (n > NGX_HTTP_TENT_APP_SCOPE_KEY) {
            return ngx_http_tent_field_error(err,
                                             NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                             "a name in scopes is longer "
                                             "than %d bytes",
                                             NGX_HTTP_TENT_APP_SCOPE_KEY);
        }

        for (p = key; p < key + n; p++) {
            if (*p <= 0x20 || *p >= 0x7f) {
                return ngx_http_tent_field_error(err, NGX_HTTP_BAD_REQUEST,
                                                 "a name in scopes is not "
                                                 "a scope name");
            }
        }

        if (n == 0) {
            return ngx_http_tent_field_error(err, NGX_HTTP_BAD_REQUEST,
                                             "a name in scopes is empty");
        }

        if (json_string_length(v) > NGX_HTTP_TENT_APP_REASON) {
            return ngx_http_tent_field_error(err,
                                             NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                             "scopes.%s is longer than %d "
                                             "bytes", key,
                                             NGX_HTTP_TENT_APP_REASON);
        }
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


/*
 * The writable fields of an app, checked, each bounded: anyone may
 * register an app, and it may change them with its own key.  "err"
 * says which is wrong: 422 a wrong type, 413 too long or too many, 400
 * a URL that is not http(s).
 */

static ngx_int_t
ngx_http_tent_app_fields(json_t *body, ngx_uint_t create,
    ngx_http_tent_field_error_t *err)
{
    if (ngx_http_tent_app_string(body, "name", NGX_HTTP_TENT_APP_NAME, create,
                                 err)
        != NGX_OK
        || ngx_http_tent_app_string(body, "description", NGX_HTTP_TENT_APP_TEXT,
                                    0, err)
           != NGX_OK
        || ngx_http_tent_app_string(body, "url", NGX_HTTP_TENT_APP_URL, 0, err)
           != NGX_OK
        || ngx_http_tent_app_string(body, "icon", NGX_HTTP_TENT_APP_URL, 0,
                                    err)
           != NGX_OK
        || ngx_http_tent_app_redirect_uris(json_object_get(body,
                                                           "redirect_uris"),
                                           create, err)
           != NGX_OK
        || ngx_http_tent_app_scopes(json_object_get(body, "scopes"), err)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* the record as stored, bounded as a whole: JSON escapes grow strings */

static ngx_int_t
ngx_http_tent_app_dump(ngx_http_request_t *r, json_t *app, ngx_str_t *value,
    ngx_http_tent_field_error_t *err)
{
    if (ngx_http_tent_json_dump(r->pool, app, value) != NGX_OK) {
        err->status = NGX_HTTP_INTERNAL_SERVER_ERROR;
        return NGX_ERROR;
    }

    if (value->len > NGX_HTTP_TENT_APP_RECORD) {
        return ngx_http_tent_field_error(err, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                         "the app's fields together are "
                                         "longer than %d bytes",
                                         NGX_HTTP_TENT_APP_RECORD);
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_send_field_error(ngx_http_request_t *r,
    ngx_http_tent_field_error_t *err)
{
    if (err->status == NGX_HTTP_INTERNAL_SERVER_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_send_error(r, err->status, (char *) err->text);
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

    json_object_del(out, "unconfirmed_slot");

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


/* "u <slot>": the row of an unconfirmed app */

static ngx_int_t
ngx_http_tent_slot_key(ngx_pool_t *pool, ngx_str_t *entity, ngx_uint_t slot,
    ngx_str_t *key)
{
    u_char     b[4];
    ngx_str_t  rest;

    b[0] = (u_char) (slot >> 24);
    b[1] = (u_char) (slot >> 16);
    b[2] = (u_char) (slot >> 8);
    b[3] = (u_char) slot;

    rest.data = b;
    rest.len = 4;

    return ngx_http_tent_key(pool, entity, NGX_HTTP_TENT_TABLE_UNCONFIRMED,
                             &rest, key);
}


/* 429 with the seconds until a place may be free */

static ngx_int_t
ngx_http_tent_apps_busy(ngx_http_request_t *r, time_t retry,
    const char *message)
{
    u_char           *p;
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    p = ngx_pnalloc(r->pool, NGX_TIME_T_LEN);
    if (h == NULL || p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Retry-After");
    h->value.data = p;
    h->value.len = ngx_sprintf(p, "%T", ngx_max(retry, 1)) - p;

    return ngx_http_tent_send_error(r, 429, message);
}


/*
 * POST /apps: anyone may register an app.  Unless an authorization with
 * write_apps asks, the app takes one of tent_apps_unconfirmed places
 * ("u" rows, slots 0..N-1) until it is first authorized, in the same
 * compare-and-set as its record: so at most N apps no one authorized
 * are stored per entity.  When every place is taken, the oldest app that
 * has waited longer than tent_apps_unconfirmed_time gives its place up
 * (it is deleted); otherwise the answer is 429 and when to try again.
 */

static ngx_int_t ngx_http_tent_apps_slots_scan(ngx_http_request_t *r,
    ngx_http_tent_apps_new_t *nw);
static ngx_int_t ngx_http_tent_apps_slots_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_apps_evict_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_apps_slot_take(ngx_http_request_t *r,
    ngx_http_tent_apps_new_t *nw, ngx_str_t *old_app);
static ngx_int_t ngx_http_tent_apps_slot_taken(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


static ngx_int_t
ngx_http_tent_apps_create_body(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    json_t                       *app, *cred, *out;
    ngx_str_t                     id, key_id, value;
    ngx_http_tent_store_op_t     *op;
    ngx_http_tent_apps_new_t     *nw;
    ngx_http_tent_field_error_t   err;

    if (ngx_http_tent_app_fields(ctx->body, 1, &err) != NGX_OK) {
        return ngx_http_tent_send_field_error(r, &err);
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

    /* with the place it may take: the record's largest form */

    json_object_set_new(app, "unconfirmed_slot", json_integer(0x7fffffff));

    if (ngx_http_tent_app_dump(r, app, &value, &err) != NGX_OK) {
        return ngx_http_tent_send_field_error(r, &err);
    }

    json_object_del(app, "unconfirmed_slot");

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

    out = ngx_http_tent_json_own(r->pool, ngx_http_tent_app_view(app, 1));
    if (out == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    json_object_set_new(out, "authorizations", json_array());
    json_object_set_new(out, "authorized", json_false());

    /* the owner's apps (write_apps, or write_secrets: imports) skip it */

    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_APPS)
        && !ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_SECRETS))
    {
        nw = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_apps_new_t));
        if (nw == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        nw->app = app;
        nw->cred = cred;
        nw->out = out;
        nw->id = id;
        nw->key_id = key_id;
        ctx->state = nw;

        return ngx_http_tent_apps_slots_scan(r, nw);
    }

    /* the owner's apps (write_apps) register confirmed apps */

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

    ctx->state = out;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_key_created);
}


static ngx_int_t
ngx_http_tent_apps_slots_scan(ngx_http_request_t *r,
    ngx_http_tent_apps_new_t *nw)
{
    ngx_str_t                  start, end;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_store_op_t  *op;

    ctx = ngx_http_tent_get_ctx(r);

    /* all of them: places above a lowered tent_apps_unconfirmed count */

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_key_range(r->pool, &ctx->entity,
                                   NGX_HTTP_TENT_TABLE_UNCONFIRMED, &start,
                                   &end)
           != NGX_OK
        || ngx_http_tent_store_scan(op, &start, &end,
                                    NGX_HTTP_TENT_APPS_UNCONFIRMED_MAX, 0)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_store_submit_request(r, op,
                                        ngx_http_tent_apps_slots_scanned);
}


/* the first free place, if fewer are taken; else the longest wait */

static ngx_int_t
ngx_http_tent_apps_slots_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    u_char                    *k;
    json_t                    *row;
    uint64_t                   at, oldest_at, wait, now;
    ngx_int_t                  status;
    ngx_str_t                  key, value, app_id, oldest_row, oldest_id;
    ngx_uint_t                 slot, n, gap, oldest_slot, oldest;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_srv_conf_t  *scf;
    ngx_http_tent_store_op_t  *get;
    ngx_http_tent_apps_new_t  *nw;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    nw = ctx->state;
    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    n = 0;
    gap = 0;
    oldest = 0;
    oldest_at = 0;
    oldest_slot = 0;
    ngx_str_null(&oldest_row);
    ngx_str_null(&oldest_id);

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {

        if (key.len != ctx->entity.len + 2 + 4) {
            continue;
        }

        k = key.data + key.len - 4;
        slot = ((ngx_uint_t) k[0] << 24) | ((ngx_uint_t) k[1] << 16)
               | ((ngx_uint_t) k[2] << 8) | k[3];

        if (slot == gap) {
            gap++;
        }

        n++;

        row = ngx_http_tent_json_parse(&value, r->connection->log);

        at = (uint64_t) json_integer_value(json_object_get(row, "at"));

        if (ngx_http_tent_json_str(row, "app", &app_id) != NGX_OK) {
            ngx_str_null(&app_id);
        }

        if (!oldest || at < oldest_at) {
            oldest = 1;
            oldest_at = at;
            oldest_slot = slot;
            oldest_row = value;

            oldest_id.len = app_id.len;
            oldest_id.data = app_id.len ? ngx_pstrdup(r->pool, &app_id)
                                        : NULL;

            if (app_id.len && oldest_id.data == NULL) {
                json_decref(row);
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }
        }

        json_decref(row);
    }

    /* fewer than N taken: one of 0..N-1 is free, the lowest is "gap" */

    if (n < scf->apps_unconfirmed) {
        nw->slot = gap;
        ngx_str_null(&nw->row);
        return ngx_http_tent_apps_slot_take(r, nw, NULL);
    }

    now = ngx_http_tent_now_us() / 1000;
    wait = (uint64_t) scf->apps_unconfirmed_time * 1000;

    if (oldest_at + wait > now) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent: %ui apps of %V wait for authorization, "
                      "a registration is refused", n, &ctx->entity);

        return ngx_http_tent_apps_busy(r,
                   (time_t) ((oldest_at + wait - now + 999) / 1000),
                   "Too many apps wait for the owner's authorization: "
                   "try again later");
    }

    nw->slot = oldest_slot;
    nw->row = oldest_row;
    nw->old_id = oldest_id;

    if (!ngx_http_tent_valid_id(&oldest_id)) {
        /* a row that names no app: its place is free */
        return ngx_http_tent_apps_slot_take(r, nw, NULL);
    }

    get = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (get == NULL
        || ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_APP,
                             &oldest_id, &key)
           != NGX_OK
        || ngx_http_tent_store_get(get, &key) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_store_submit_request(r, get,
                                        ngx_http_tent_apps_evict_loaded);
}


static ngx_int_t
ngx_http_tent_apps_evict_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                    *old;
    ngx_int_t                  status;
    ngx_str_t                  value;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_apps_new_t  *nw;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    nw = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        return ngx_http_tent_apps_slot_take(r, nw, NULL);
    }

    ngx_http_tent_store_value(op, &value);

    old = ngx_http_tent_json_load(r, &value);
    if (old == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (!json_is_integer(json_object_get(old, "unconfirmed_slot"))
        || (ngx_uint_t) json_integer_value(json_object_get(old,
                                                       "unconfirmed_slot"))
           != nw->slot)
    {
        /* the row outlived its app's wait: only the row goes */
        return ngx_http_tent_apps_slot_take(r, nw, NULL);
    }

    if (ngx_http_tent_json_str(old, "mac_key_id", &nw->old_key_id)
        != NGX_OK)
    {
        ngx_str_null(&nw->old_key_id);
    }

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "tent: app \"%V\" of %V was not authorized in time, "
                  "it gives its place to a new one", &nw->old_id,
                  &ctx->entity);

    return ngx_http_tent_apps_slot_take(r, nw, &value);
}


/*
 * Take place nw->slot: a compare-and-set on the place's row (absent, or
 * as read), or, when an unconfirmed app leaves it, on that app's record
 * (as read: no authorization came meanwhile), which is deleted.
 */

static ngx_int_t
ngx_http_tent_apps_slot_take(ngx_http_request_t *r,
    ngx_http_tent_apps_new_t *nw, ngx_str_t *old_app)
{
    json_t                    *row;
    ngx_str_t                  slot_key, key, value, app_value;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_store_op_t  *op;

    ctx = ngx_http_tent_get_ctx(r);

    json_object_set_new(nw->app, "unconfirmed_slot",
                        json_integer((json_int_t) nw->slot));

    row = json_pack("{s:o, s:I}", "app", ngx_http_tent_json_string(&nw->id),
                    "at", (json_int_t) (ngx_http_tent_now_us() / 1000));

    if (row == NULL || ngx_http_tent_json_cleanup(r->pool, row) != NGX_OK) {
        json_decref(row);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_slot_key(r->pool, &ctx->entity, nw->slot, &slot_key)
           != NGX_OK
        || ngx_http_tent_json_dump(r->pool, row, &value) != NGX_OK
        || ngx_http_tent_json_dump(r->pool, nw->app, &app_value) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (old_app) {
        if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_APP,
                              &nw->old_id, &key)
            != NGX_OK
            || ngx_http_tent_store_cas(op, &key, old_app, old_app) != NGX_OK
            || ngx_http_tent_store_write_del(op, &key) != NGX_OK
            || ngx_http_tent_del_key(r, op, &ctx->entity,
                                     NGX_HTTP_TENT_TABLE_CREDENTIAL,
                                     &nw->old_key_id)
               != NGX_OK
            || ngx_http_tent_store_write_put(op, &slot_key, &value) != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

    } else if (ngx_http_tent_store_cas(op, &slot_key,
                                       nw->row.data ? &nw->row : NULL,
                                       &value)
               != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_APP,
                          &nw->id, &key)
        != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &app_value) != NGX_OK
        || ngx_http_tent_put_json(r, op, &ctx->entity,
                                  NGX_HTTP_TENT_TABLE_CREDENTIAL, &nw->key_id,
                                  nw->cred)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_apps_slot_taken);
}


static ngx_int_t
ngx_http_tent_apps_slot_taken(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                  status;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_apps_new_t  *nw;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    nw = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        return ngx_http_tent_send_json(r, NGX_HTTP_OK, nw->out);
    }

    /* another registration or an authorization came first */

    if (++nw->tries < NGX_HTTP_TENT_SLOT_TRIES) {
        return ngx_http_tent_apps_slots_scan(r, nw);
    }

    return ngx_http_tent_apps_busy(r, 1, "Too many registrations at once: "
                                         "try again");
}


ngx_int_t
ngx_http_tent_apps_create(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_read_json(r, ctx, ngx_http_tent_apps_create_body);
}


/*
 * GET /apps (read_apps): a page of apps (ngx_http_tent_list_table(), as
 * followers: limit, since_id, before_id, until_id, order, Link), in the
 * order of their ids, without secrets unless asked.  Each says whether
 * it has an authorization ("authorized"), which ?authorized=true|false
 * filters on: the entity's authorizations are read first, their keys
 * begin with their app's id.
 */

static ngx_int_t ngx_http_tent_apps_auths_scan(ngx_http_request_t *r,
    ngx_http_tent_apps_list_t *lst);
static ngx_int_t ngx_http_tent_apps_auths_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_apps_id_valid(ngx_str_t *id);
static ngx_int_t ngx_http_tent_apps_item(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *record, void *data, json_t **out);


static ngx_http_tent_relation_t  ngx_http_tent_apps_rel = {
    ngx_string("apps"),
    NULL,
    NGX_HTTP_TENT_TABLE_APP,
    0,
    NGX_HTTP_TENT_READ_APPS,
    0,
    ngx_http_tent_apps_id_valid,
    ngx_http_tent_apps_item
};


ngx_int_t
ngx_http_tent_apps_list(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                   v;
    ngx_http_tent_apps_list_t  *lst;

    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_APPS)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    lst = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_apps_list_t));
    if (lst == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    lst->filter = -1;
    lst->secrets = ngx_http_tent_want_secrets(r, ctx);

    if (ngx_http_arg(r, (u_char *) "authorized", 10, &v) == NGX_OK) {
        if (v.len == 4 && ngx_strncmp(v.data, "true", 4) == 0) {
            lst->filter = 1;

        } else if (v.len == 5 && ngx_strncmp(v.data, "false", 5) == 0) {
            lst->filter = 0;

        } else {
            return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                            "authorized must be true or "
                                            "false");
        }
    }

    /* the links keep the filter, and secrets for who may see them */

    lst->args.data = ngx_pnalloc(r->pool, sizeof("&authorized=false"
                                                 "&secrets=true") - 1);
    if (lst->args.data == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    lst->args.len = ngx_sprintf(lst->args.data, "%s%s",
                                lst->filter == -1 ? ""
                                : lst->filter ? "&authorized=true"
                                              : "&authorized=false",
                                lst->secrets ? "&secrets=true" : "")
                    - lst->args.data;

    lst->authorized = ngx_http_tent_json_own(r->pool, json_object());

    if (lst->authorized == NULL
        || ngx_http_tent_key_range(r->pool, &ctx->entity,
                                   NGX_HTTP_TENT_TABLE_AUTHORIZATION,
                                   &lst->start, &lst->end)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->state = lst;

    return ngx_http_tent_apps_auths_scan(r, lst);
}


static ngx_int_t
ngx_http_tent_apps_auths_scan(ngx_http_request_t *r,
    ngx_http_tent_apps_list_t *lst)
{
    ngx_http_tent_store_op_t  *op;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_scan(op, &lst->start, &lst->end,
                                    NGX_HTTP_TENT_MAX_AUTHS, 0)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_store_submit_request(r, op,
                                        ngx_http_tent_apps_auths_scanned);
}


static ngx_int_t
ngx_http_tent_apps_auths_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    u_char                     *p, *z;
    size_t                      prefix;
    ngx_int_t                   status;
    ngx_str_t                   key, value, last;
    ngx_uint_t                  rows;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_apps_list_t  *lst;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    lst = ctx->state;

    prefix = ctx->entity.len + 2;
    rows = 0;
    ngx_str_null(&last);

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        rows++;

        p = key.data + prefix;
        z = (key.len > prefix) ? ngx_strlchr(p, key.data + key.len, '\0')
                               : NULL;

        if (z == NULL || z == p) {
            continue;
        }

        last.data = key.data;
        last.len = z - key.data;

        (void) json_object_setn_new(lst->authorized, (char *) p, z - p,
                                    json_true());
    }

    if (rows == NGX_HTTP_TENT_MAX_AUTHS && last.len) {
        /* more: from the next app's, "<app id> 0x01" */

        lst->start.data = ngx_pnalloc(r->pool, last.len + 1);
        if (lst->start.data == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        ngx_memcpy(lst->start.data, last.data, last.len);
        lst->start.data[last.len] = '\1';
        lst->start.len = last.len + 1;

        return ngx_http_tent_apps_auths_scan(r, lst);
    }

    return ngx_http_tent_list_table(r, ctx, &ngx_http_tent_apps_rel, lst,
                                    &lst->args);
}


static ngx_int_t
ngx_http_tent_apps_id_valid(ngx_str_t *id)
{
    return ngx_http_tent_valid_id(id) ? NGX_OK : NGX_ERROR;
}


static ngx_int_t
ngx_http_tent_apps_item(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    json_t *record, void *data, json_t **out)
{
    ngx_http_tent_apps_list_t *lst = data;

    json_t      *view;
    ngx_str_t    id;
    ngx_uint_t   authorized;

    if (ngx_http_tent_json_str(record, "id", &id) != NGX_OK) {
        return NGX_DECLINED;
    }

    authorized = json_object_getn(lst->authorized, (char *) id.data, id.len)
                 != NULL;

    if (lst->filter != -1 && (ngx_int_t) authorized != lst->filter) {
        return NGX_DECLINED;
    }

    if (out == NULL) {
        /* counted only */
        return NGX_OK;
    }

    view = ngx_http_tent_app_view(record, lst->secrets);
    if (view == NULL) {
        return NGX_ERROR;
    }

    json_object_set_new(view, "authorized", json_boolean(authorized));

    *out = view;

    return NGX_OK;
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
    json_object_set_new(out, "authorized",
                        json_boolean(json_array_size(list) > 0));

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


/*
 * PUT /apps/:id: the app itself may, so its fields are bounded as at
 * registration; a compare-and-set on the record as read keeps an
 * authorization that came meanwhile (it cleared "unconfirmed_slot").
 */

static ngx_int_t
ngx_http_tent_app_write(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                       *out;
    ngx_str_t                    *id, key, value;
    ngx_http_tent_store_op_t     *op;
    ngx_http_tent_apps_state_t   *st;
    ngx_http_tent_field_error_t   err;

    st = ctx->state;
    id = ngx_http_tent_param(ctx, 0);

    if (ngx_http_tent_app_fields(ctx->body, 0, &err) != NGX_OK) {
        return ngx_http_tent_send_field_error(r, &err);
    }

    ngx_http_tent_app_copy(st->app, ctx->body);
    json_object_set_new(st->app, "updated_at", json_integer(ngx_time()));

    if (ngx_http_tent_app_dump(r, st->app, &value, &err) != NGX_OK) {
        return ngx_http_tent_send_field_error(r, &err);
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_APP,
                             id, &key)
           != NGX_OK
        || ngx_http_tent_store_cas(op, &key, &st->app_raw, &value) != NGX_OK)
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


/*
 * DELETE /apps/:id: the app, its key, its place if unconfirmed, its
 * authorizations, their keys; behind a compare-and-set on the app as
 * read, so an authorization made since the scan fails instead of
 * staying without its app.
 */

static ngx_int_t
ngx_http_tent_app_remove(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                      *auth, *v;
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

    if (wop == NULL
        || ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_APP,
                             id, &key)
           != NGX_OK
        || ngx_http_tent_store_cas(wop, &key, &st->app_raw, &st->app_raw)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    v = json_object_get(st->app, "unconfirmed_slot");

    if (json_is_integer(v)
        && (ngx_http_tent_slot_key(r->pool, &ctx->entity,
                                   (ngx_uint_t) json_integer_value(v), &key)
            != NGX_OK
            || ngx_http_tent_store_write_del(wop, &key) != NGX_OK))
    {
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

    if (json_is_integer(slot)
        && (ngx_http_tent_slot_key(r->pool, &ctx->entity,
                                   (ngx_uint_t) json_integer_value(slot),
                                   &key)
            != NGX_OK
            || ngx_http_tent_store_write_del(op, &key) != NGX_OK))
    {
        return NGX_ERROR;
    }

    if (ngx_http_tent_auth_rest(r->pool, app_id, &id, &rest) != NGX_OK
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
                                         st->app, &st->app_raw, ctx->body, op,
                                         &auth);

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

    /* a compare-and-set on the credential only when the key was imported */

    return ngx_http_tent_store_submit_request(r, op,
               ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_SECRETS)
               && json_object_get(ctx->body, "mac_key_id")
               ? ngx_http_tent_key_created : ngx_http_tent_reply_state_json);
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
