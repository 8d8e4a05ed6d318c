
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Apps (spec 7.10): the app's record and the rows of its keys, GET /apps,
 * and /apps/:id: the app loaded, who may, then GET, PUT or DELETE, or the
 * step of an authorization route (ngx_http_tent_authorizations.c, the
 * code exchange in ngx_http_tent_oauth_exchange.c).  POST /apps and the
 * unconfirmed places are in ngx_http_tent_apps_register.c.  Records, by
 * table:
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


#define NGX_HTTP_TENT_APPS_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_apps.h"
#include "ngx_http_tent_apps_private.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_MAX_AUTHS      1000


/* GET /apps */
typedef struct {
    json_t                         *authorized; /* app ids: true */
    ngx_int_t                       filter;     /* -1, or 0 or 1 */
    ngx_uint_t                      secrets;
    ngx_str_t                       start;      /* authorizations to scan */
    ngx_str_t                       end;
    ngx_str_t                       args;
} ngx_http_tent_apps_list_t;


static ngx_int_t ngx_http_tent_app_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


ngx_str_t *
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

ngx_int_t
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


/* the app as clients see it: secrets only when asked for and allowed */

json_t *
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


ngx_int_t
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

ngx_int_t
ngx_http_tent_credential_new(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op, ngx_str_t *entity, ngx_str_t *key_id,
    json_t *cred)
{
    ngx_str_t  key, value;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent apps: new key id \"%V\" of \"%V\", if free",
                   key_id, entity);

    if (ngx_http_tent_key(r->pool, entity, NGX_HTTP_TENT_TABLE_CREDENTIAL,
                          key_id, &key)
        != NGX_OK
        || ngx_http_tent_json_dump(r->pool, cred, &value) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_tent_store_cas(op, &key, NULL, &value);
}


ngx_int_t
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


/* secrets an importing app (write_secrets) may set, else random ones */

ngx_int_t
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
        return ngx_http_tent_internal_error(r, "allocating the apps list");
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
        return ngx_http_tent_internal_error(r, "allocating the list's links");
    }

    lst->args.len = ngx_sprintf(lst->args.data, "%s%s",
                                lst->filter == -1 ? ""
                                : lst->filter ? "&authorized=true"
                                              : "&authorized=false",
                                lst->secrets ? "&secrets=true" : "")
                    - lst->args.data;

    lst->authorized = ngx_http_tent_json_own(r->pool, json_object());
    if (lst->authorized == NULL) {
        return ngx_http_tent_internal_error(r, "making the list's JSON");
    }

    if (ngx_http_tent_key_range(r->pool, &ctx->entity,
                                NGX_HTTP_TENT_TABLE_AUTHORIZATION,
                                &lst->start, &lst->end)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "making the scan's key range");
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
        return ngx_http_tent_internal_error(r, "preparing the auths scan");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                        ngx_http_tent_apps_auths_scanned);
}


static ngx_int_t
ngx_http_tent_apps_auths_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                   rc;
    ngx_str_t                   key, value, app, auth, last;
    ngx_uint_t                  rows;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_apps_list_t  *lst;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    lst = ctx->state;

    rows = 0;
    ngx_str_null(&last);

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        rows++;

        if (ngx_http_tent_pair_parse(&ctx->entity, &key, &app, &auth)
            != NGX_OK)
        {
            continue;
        }

        last = app;

        (void) json_object_setn_new(lst->authorized, (char *) app.data,
                                    app.len, json_true());
    }

    if (rows && last.len) {
        /* more (a scan also ends at the store's byte budget): next app's */

        if (ngx_http_tent_pair_next(r->pool, &ctx->entity,
                                    NGX_HTTP_TENT_TABLE_AUTHORIZATION, &last,
                                    &lst->start)
            != NGX_OK)
        {
            return ngx_http_tent_internal_error(r, "preparing the next scan");
        }

        return ngx_http_tent_apps_auths_scan(r, lst);
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent apps: list of \"%V\": %ui apps authorized, "
                   "filter %i", &ctx->entity,
                   (ngx_uint_t) json_object_size(lst->authorized),
                   lst->filter);

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
    ngx_str_t                  start, end, *id;
    ngx_http_tent_store_op_t  *op;

    id = ngx_http_tent_param(ctx, 0);

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_pair_key(r->pool, &ctx->entity,
                                  NGX_HTTP_TENT_TABLE_AUTHORIZATION, id, NULL,
                                  &start)
           != NGX_OK
        || ngx_http_tent_pair_next(r->pool, &ctx->entity,
                                   NGX_HTTP_TENT_TABLE_AUTHORIZATION, id, &end)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "preparing the app's scan");
    }

    /* the range of "<app id> 0x00 ...": up to "<app id> 0x01" */

    if (ngx_http_tent_store_scan(op, &start, &end, NGX_HTTP_TENT_MAX_AUTHS, 0)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "preparing the app's scan");
    }

    return ngx_http_tent_store_submit_request(r, op, next);
}


static ngx_int_t
ngx_http_tent_app_get_auths(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                      *out, *list;
    ngx_int_t                    rc;
    ngx_uint_t                   secrets;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_apps_state_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;
    secrets = ngx_http_tent_want_secrets(r, ctx);

    list = ngx_http_tent_auths_json(r, ctx, op, secrets);
    if (list == NULL || ngx_http_tent_json_cleanup(r->pool, list) != NGX_OK) {
        json_decref(list);
        return ngx_http_tent_internal_error(r, "listing the authorizations");
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
        return ngx_http_tent_internal_error(r, "making the app's view");
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


static ngx_int_t
ngx_http_tent_app_loaded(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                      *app;
    ngx_int_t                    rc;
    ngx_str_t                    value, *id;
    ngx_uint_t                   self, need;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_apps_state_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

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

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent apps: app \"%V\" of \"%V\", asked by %s",
                   id, &ctx->entity, self ? "itself" : "an authorization");

    ngx_http_tent_store_value(op, &value);

    app = ngx_http_tent_json_load(r, &value);
    if (app == NULL) {
        return ngx_http_tent_internal_error(r, "reading the app record");
    }

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_apps_state_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the app's state");
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
        return ngx_http_tent_internal_error(r, "preparing the app's write");
    }

    out = ngx_http_tent_json_own(r->pool, ngx_http_tent_app_view(st->app, 0));
    if (out == NULL) {
        return ngx_http_tent_internal_error(r, "making the app's view");
    }

    ctx->state = out;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent apps: app \"%V\" updated, if unchanged meanwhile",
                   id);

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
    ngx_int_t                    rc;
    ngx_str_t                    key, value, s, rest, *id;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_store_op_t    *wop;
    ngx_http_tent_apps_state_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

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
        return ngx_http_tent_internal_error(r, "preparing the app's delete");
    }

    v = json_object_get(st->app, "unconfirmed_slot");

    if (json_is_integer(v)
        && (ngx_http_tent_slot_key(r->pool, &ctx->entity,
                                   NGX_HTTP_TENT_TABLE_UNCONFIRMED,
                                   (uint32_t) json_integer_value(v), &key)
            != NGX_OK
            || ngx_http_tent_store_write_del(wop, &key) != NGX_OK))
    {
        return ngx_http_tent_internal_error(r, "deleting the app's place");
    }

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {

        if (ngx_http_tent_store_write_del(wop, &key) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "deleting an authorization");
        }

        auth = ngx_http_tent_json_parse(&value, r->connection->log);
        if (auth == NULL) {
            continue;
        }

        if (ngx_http_tent_json_cleanup(r->pool, auth) != NGX_OK) {
            json_decref(auth);
            return ngx_http_tent_internal_error(r, "copying an authorization");
        }

        if (ngx_http_tent_json_str(auth, "id", &s) != NGX_OK) {
            return ngx_http_tent_internal_error(r,
                                                "reading an authorization id");
        }

        if (ngx_http_tent_pair_rest(r->pool, id, &s, &rest) != NGX_OK
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
            return ngx_http_tent_internal_error(r,
                                                "deleting an auth's key rows");
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
        return ngx_http_tent_internal_error(r, "deleting the app and its key");
    }

    ctx->state = NULL;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent apps: app \"%V\" deleted with its authorizations, "
                   "if unchanged meanwhile", id);

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_reply_state_json);
}
