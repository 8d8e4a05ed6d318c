
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * POST /apps: what an app may store, each field checked and bounded
 * (PUT /apps/:id checks the same), and the places of the apps no one
 * authorized yet ("u" rows), which bound what anonymous registrations
 * keep per entity.
 */


#define NGX_HTTP_TENT_APPS_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_apps.h"
#include "ngx_http_tent_apps_private.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_store.h"


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


/*
 * The writable fields of an app, checked, each bounded: anyone may
 * register an app, and it may change them with its own key.  "err"
 * says which is wrong: 422 a wrong type, 413 too long or too many, 400
 * a URL that is not http(s).
 */

ngx_int_t
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

ngx_int_t
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


ngx_int_t
ngx_http_tent_send_field_error(ngx_http_request_t *r,
    ngx_http_tent_field_error_t *err)
{
    if (err->status == NGX_HTTP_INTERNAL_SERVER_ERROR) {
        return ngx_http_tent_internal_error(r, "encoding the app's record");
    }

    return ngx_http_tent_send_error(r, err->status, (char *) err->text);
}


void
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
        return ngx_http_tent_internal_error(r, "adding Retry-After");
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

static ngx_int_t ngx_http_tent_apps_create_read(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
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
        return ngx_http_tent_internal_error(r, "making the app record");
    }

    if (ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_SECRETS)
        && json_is_string(json_object_get(ctx->body, "id")))
    {
        ngx_http_tent_json_str(ctx->body, "id", &id);

        if (!ngx_http_tent_valid_id(&id)) {
            return ngx_http_tent_send_error(r, 422, "Invalid Attributes");
        }

    } else if (ngx_http_tent_random_id(r->pool, NULL, 16, &id) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "making the app's id");
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
        return ngx_http_tent_internal_error(r, "making the app's credential");
    }

    out = ngx_http_tent_json_own(r->pool, ngx_http_tent_app_view(app, 1));
    if (out == NULL) {
        return ngx_http_tent_internal_error(r, "making the app's view");
    }

    json_object_set_new(out, "authorizations", json_array());
    json_object_set_new(out, "authorized", json_false());

    /* the owner's apps (write_apps, or write_secrets: imports) skip it */

    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_APPS)
        && !ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_SECRETS))
    {
        nw = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_apps_new_t));
        if (nw == NULL) {
            return ngx_http_tent_internal_error(r,
                                                "allocating the registration");
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
           != NGX_OK
        || ngx_http_tent_quota_count(r, ctx, op) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "preparing the app's write");
    }

    ctx->state = out;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent apps: app \"%V\" of \"%V\" registered by the "
                   "owner's app: no place taken", &id, &ctx->entity);

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
        return ngx_http_tent_internal_error(r, "preparing the places scan");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                        ngx_http_tent_apps_slots_scanned);
}


/* the first free place, if fewer are taken; else the longest wait */

static ngx_int_t
ngx_http_tent_apps_slots_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                    *row;
    uint32_t                   s;
    uint64_t                   at, oldest_at, wait, now;
    ngx_int_t                  rc;
    ngx_str_t                  key, value, app_id, oldest_row, oldest_id;
    ngx_uint_t                 slot, n, gap, oldest_slot, oldest;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_srv_conf_t  *scf;
    ngx_http_tent_store_op_t  *get;
    ngx_http_tent_apps_new_t  *nw;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

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

        if (ngx_http_tent_slot_parse(&ctx->entity, &key, &s) != NGX_OK) {
            continue;
        }

        slot = s;

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
                return ngx_http_tent_internal_error(r,
                                                    "copying the oldest's id");
            }
        }

        json_decref(row);
    }

    /* fewer than N taken: one of 0..N-1 is free, the lowest is "gap" */

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent apps: %ui of %ui places taken in \"%V\"",
                   n, scf->apps_unconfirmed, &ctx->entity);

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
        return ngx_http_tent_internal_error(r,
                                            "preparing the oldest app's read");
    }

    return ngx_http_tent_store_submit_request(r, get,
                                        ngx_http_tent_apps_evict_loaded);
}


static ngx_int_t
ngx_http_tent_apps_evict_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                    *old;
    ngx_int_t                  rc;
    ngx_str_t                  value;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_apps_new_t  *nw;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    nw = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        return ngx_http_tent_apps_slot_take(r, nw, NULL);
    }

    ngx_http_tent_store_value(op, &value);

    old = ngx_http_tent_json_load(r, &value);
    if (old == NULL) {
        return ngx_http_tent_internal_error(r, "reading the oldest app");
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
        return ngx_http_tent_internal_error(r, "making the place's row");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_slot_key(r->pool, &ctx->entity,
                                  NGX_HTTP_TENT_TABLE_UNCONFIRMED,
                                  (uint32_t) nw->slot, &slot_key)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "preparing the place's write");
    }

    if (ngx_http_tent_json_dump(r->pool, row, &value) != NGX_OK
        || ngx_http_tent_json_dump(r->pool, nw->app, &app_value) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                            "encoding the place and the app");
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
            return ngx_http_tent_internal_error(r, "removing the oldest app");
        }

    } else if (ngx_http_tent_store_cas(op, &slot_key,
                                       nw->row.data ? &nw->row : NULL,
                                       &value)
               != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "writing the place's row");
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
        return ngx_http_tent_internal_error(r, "writing the app and its key");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_apps_slot_taken);
}


static ngx_int_t
ngx_http_tent_apps_slot_taken(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                  rc;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_apps_new_t  *nw;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    nw = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent apps: app \"%V\" registered in place %ui, "
                       "key id \"%V\"", &nw->id, nw->slot, &nw->key_id);

        return ngx_http_tent_send_json(r, NGX_HTTP_OK, nw->out);
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent apps: place %ui taken meanwhile, after %ui tries",
                   nw->slot, nw->tries + 1);

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
    /*
     * Provisioning: the owner's registrations count against the entity's
     * quota of apps; anonymous ones are bounded by tent_apps_unconfirmed
     * (a flood of them must not use the owner's quota up).
     */

    if (ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_APPS)
        || ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_SECRETS))
    {
        return ngx_http_tent_quota_check(r, ctx, NGX_HTTP_TENT_QUOTA_APPS,
                                         ngx_http_tent_apps_create_read);
    }

    return ngx_http_tent_read_json(r, ctx, ngx_http_tent_apps_create_body);
}


static ngx_int_t
ngx_http_tent_apps_create_read(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_read_json(r, ctx, ngx_http_tent_apps_create_body);
}


/*
 * The operator's owner app of an entity (ngx_http_tent_admin_write.c,
 * "credential"): a confirmed app registered into OP as the owner's
 * registrations are (its key id's credential, if free, and its record),
 * without a request to the entity's own server.  RAW: its record as
 * written, for the authorization's compare-and-set.
 */

ngx_int_t
ngx_http_tent_apps_owner_app(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_store_op_t *op, json_t **result, ngx_str_t *id,
    ngx_str_t *raw)
{
    u_char                       *p;
    json_t                       *app, *cred;
    ngx_str_t                     key_id, redirect;
    ngx_http_tent_field_error_t   err;

    redirect.len = ctx->entity.len + 1;
    redirect.data = ngx_pnalloc(r->pool, redirect.len);
    if (redirect.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(redirect.data, ctx->entity.data, ctx->entity.len);
    *p = '/';

    if (ngx_http_tent_random_id(r->pool, NULL, 16, id) != NGX_OK) {
        return NGX_ERROR;
    }

    app = ngx_http_tent_json_own(r->pool, json_pack(
        "{s:o, s:s, s:s, s:o, s:[o], s:{s:s}, s:I, s:I}",
        "id", ngx_http_tent_json_string(id),
        "name", "tent-admin owner",
        "description", "an owner credential, made by the operator",
        "url", ngx_http_tent_json_string(&ctx->entity),
        "redirect_uris", ngx_http_tent_json_string(&redirect),
        "scopes", "write_secrets", "the owner's credential",
        "created_at", (json_int_t) ngx_time(),
        "updated_at", (json_int_t) ngx_time()));

    if (app == NULL
        || ngx_http_tent_secrets(r, ctx, NULL, app, "a:", "mac_key_id")
           != NGX_OK
        || ngx_http_tent_app_dump(r, app, raw, &err) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_tent_json_str(app, "mac_key_id", &key_id);

    cred = ngx_http_tent_json_own(r->pool, json_pack(
        "{s:s, s:o, s:O, s:O}",
        "kind", "app",
        "app", ngx_http_tent_json_string(id),
        "key", json_object_get(app, "mac_key"),
        "algorithm", json_object_get(app, "mac_algorithm")));

    if (cred == NULL
        || ngx_http_tent_credential_new(r, op, &ctx->entity, &key_id, cred)
           != NGX_OK
        || ngx_http_tent_put_json(r, op, &ctx->entity, NGX_HTTP_TENT_TABLE_APP,
                                  id, app)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    *result = app;

    return NGX_OK;
}
