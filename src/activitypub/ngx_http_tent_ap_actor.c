
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The actor: the entity URL asked for as ActivityStreams answers a
 * Person.  Its name, summary and icon come from the profile's basic
 * section when it is public (a section only some may read is not shown
 * to the fediverse); its key from ngx_http_tent_ap_keys.c, the public
 * part only.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_ap.h"


static ngx_int_t ngx_http_tent_ap_actor_keyed(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_key_t *key);
static ngx_int_t ngx_http_tent_ap_actor_basic(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_actor_reply(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *basic, ngx_uint_t approves);
static json_t *ngx_http_tent_ap_actor_summary(ngx_http_request_t *r,
    json_t *basic);
static json_t *ngx_http_tent_ap_actor_link(json_t *basic, const char *name);


ngx_int_t
ngx_http_tent_ap_actor_handler(ngx_http_request_t *r)
{
    ngx_int_t             rc;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    if (ctx == NULL || ctx->invalid) {
        return ngx_http_tent_internal_error(r, "evaluating the entity");
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    switch (ctx->registry) {

    case NGX_HTTP_TENT_REG_ABSENT:
        return ngx_http_tent_ap_error(r, NGX_HTTP_NOT_FOUND, "Not Found");

    case NGX_HTTP_TENT_REG_DISABLED:
        return ngx_http_tent_ap_error(r, 410, "The entity is disabled");

    case NGX_HTTP_TENT_REG_FAILED:
        return ngx_http_tent_ap_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                      "The entity registry is unavailable");

    default:
        break;
    }

    return ngx_http_tent_ap_key(r, ctx, ngx_http_tent_ap_actor_keyed);
}


/* the key known: the basic section next */

static ngx_int_t
ngx_http_tent_ap_actor_keyed(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_key_t *key)
{
    ngx_str_t                  k, sk, base;
    ngx_http_tent_store_op_t  *op;

    /* from now on, the state is the public key alone */

    ctx->state = &key->public_pem;

    ngx_str_set(&base, NGX_HTTP_TENT_AP_BASIC);

    /* the basic section and the owner's choices (approving follows) */

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_PROFILE, &base, &k)
           != NGX_OK
        || ngx_http_tent_ap_settings_key(r->pool, &ctx->entity, &sk)
           != NGX_OK
        || ngx_http_tent_store_mget(op) != NGX_OK
        || ngx_http_tent_store_mget_key(op, &k) != NGX_OK
        || ngx_http_tent_store_mget_key(op, &sk) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the profile's read");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_actor_basic);
}


static ngx_int_t
ngx_http_tent_ap_actor_basic(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t               *record, *content;
    ngx_int_t             rc;
    ngx_str_t             value;
    ngx_uint_t            found;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    content = NULL;

    if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "reading the profile");
    }

    if (found) {
        record = ngx_http_tent_json_own(r->pool,
                     ngx_http_tent_json_parse(&value, r->connection->log));

        content = ngx_http_tent_ap_basic_shown(record);
    }

    /* the owner's choice, whoever may read its section: the actor says it */

    if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "reading the owner's choice");
    }

    return ngx_http_tent_ap_actor_reply(r, ctx, content,
                                        found
                                        && ngx_http_tent_ap_approves(&value,
                                               r->connection->log));
}


/* what of a basic section the fediverse sees: its content when public */

json_t *
ngx_http_tent_ap_basic_shown(json_t *record)
{
    json_t  *content;

    if (record == NULL
        || !json_is_true(json_object_get(json_object_get(record,
                                                         "permissions"),
                                         "public")))
    {
        return NULL;
    }

    content = json_object_get(record, "content");

    return json_is_object(content) ? content : NULL;
}


/*
 * The actor's fields a basic section gives (name, summary, icon), set
 * on "actor": the document served and the Update(Person) sent
 */

ngx_int_t
ngx_http_tent_ap_actor_profile(ngx_http_request_t *r, json_t *actor,
    json_t *basic)
{
    json_t  *v;

    if (basic == NULL) {
        return NGX_OK;
    }

    v = json_object_get(basic, "name");
    if (json_is_string(v) && json_object_set(actor, "name", v) != 0) {
        return NGX_ERROR;
    }

    v = ngx_http_tent_ap_actor_summary(r, basic);
    if (v && json_object_set_new(actor, "summary", v) != 0) {
        return NGX_ERROR;
    }

    v = ngx_http_tent_ap_actor_link(basic, "avatar_url");
    if (v
        && json_object_set_new(actor, "icon",
                               json_pack("{s:s, s:o}", "type", "Image",
                                         "url", v))
           != 0)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* an http(s) URL of the profile, or NULL */

static json_t *
ngx_http_tent_ap_actor_link(json_t *basic, const char *name)
{
    ngx_str_t  s, origin, path;

    if (basic == NULL
        || ngx_http_tent_json_str(basic, name, &s) != NGX_OK
        || ngx_http_tent_check_url(&s, &origin, &path) != NGX_OK)
    {
        return NULL;
    }

    return json_stringn((char *) s.data, s.len);
}


/* the bio as the summary: HTML, so its text is escaped */

static json_t *
ngx_http_tent_ap_actor_summary(ngx_http_request_t *r, json_t *basic)
{
    u_char     *p;
    size_t      len;
    ngx_str_t   s;
    uintptr_t   n;

    if (basic == NULL || ngx_http_tent_json_str(basic, "bio", &s) != NGX_OK) {
        return NULL;
    }

    n = ngx_escape_html(NULL, s.data, s.len);
    len = s.len + n;

    p = ngx_pnalloc(r->pool, len + 1);
    if (p == NULL) {
        return NULL;
    }

    if (n) {
        (void) ngx_escape_html(p, s.data, s.len);

    } else {
        ngx_memcpy(p, s.data, s.len);
    }

    return json_stringn((char *) p, len);
}


static ngx_int_t
ngx_http_tent_ap_actor_reply(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    json_t *basic, ngx_uint_t approves)
{
    json_t     *actor;
    ngx_str_t   body;

    actor = ngx_http_tent_ap_actor_doc(r, ctx, ctx->state, basic, approves);

    if (actor == NULL
        || ngx_http_tent_json_dump(r->pool, actor, &body) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "writing the actor");
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: the actor of \"%V\"", &ctx->entity);

    return ngx_http_tent_ap_send(r, NGX_HTTP_OK, NGX_HTTP_TENT_AP_TYPE, &body);
}


/*
 * The actor's document (owned by the request's pool), from the key's
 * public part and the basic section's shown content (or NULL): what GET
 * of the entity URL answers and what an Update(Person) carries
 */

json_t *
ngx_http_tent_ap_actor_doc(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_str_t *pem, json_t *basic, ngx_uint_t approves)
{
    u_char     *p;
    json_t     *actor, *inbox, *outbox, *followers, *following, *shared;
    ngx_str_t   name, key_id;

    ngx_http_tent_ap_actor_name(r, &ctx->entity, &name);

    key_id.len = ctx->entity.len + sizeof("#main-key") - 1;
    key_id.data = ngx_pnalloc(r->pool, key_id.len);
    if (key_id.data == NULL) {
        return NULL;
    }

    p = ngx_cpymem(key_id.data, ctx->entity.data, ctx->entity.len);
    ngx_memcpy(p, "#main-key", sizeof("#main-key") - 1);

    inbox = NULL;
    outbox = NULL;
    followers = NULL;
    following = NULL;
    shared = NULL;

    if (ngx_http_tent_ap_url(r, ctx, "inbox", &inbox) != NGX_OK
        || ngx_http_tent_ap_url(r, ctx, "outbox", &outbox) != NGX_OK
        || ngx_http_tent_ap_url(r, ctx, "followers", &followers) != NGX_OK
        || ngx_http_tent_ap_url(r, ctx, "following", &following) != NGX_OK
        || ngx_http_tent_ap_url(r, ctx, "shared-inbox", &shared) != NGX_OK)
    {
        json_decref(inbox);
        json_decref(outbox);
        json_decref(followers);
        json_decref(following);
        json_decref(shared);
        return NULL;
    }

    actor = ngx_http_tent_json_own(r->pool, json_pack(
        "{s:[s, s], s:s%, s:s, s:s%, s:s%, s:o, s:o, s:o, s:o,"
        " s:{s:o}, s:{s:s%, s:s%, s:s%}, s:b}",
        "@context", "https://www.w3.org/ns/activitystreams",
                    "https://w3id.org/security/v1",
        "id", ctx->entity.data, ctx->entity.len,
        "type", "Person",
        "preferredUsername", name.data, name.len,
        "url", ctx->entity.data, ctx->entity.len,
        "inbox", inbox,
        "outbox", outbox,
        "followers", followers,
        "following", following,
        "endpoints", "sharedInbox", shared,
        "publicKey",
            "id", key_id.data, key_id.len,
            "owner", ctx->entity.data, ctx->entity.len,
            "publicKeyPem", pem->data, pem->len,
        "manuallyApprovesFollowers", approves ? 1 : 0));

    if (actor == NULL
        || ngx_http_tent_ap_actor_profile(r, actor, basic) != NGX_OK)
    {
        return NULL;
    }

    return actor;
}
