
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Followers (spec 7.1, 7.2): another server asks to follow us with an
 * unsigned POST /followers; we discover its entity, check it controls
 * the notification path with a challenge, and hand it an "s:" MAC
 * credential.  Records: "f <id>" the follower, "e <entity>" its id, and
 * "c <s:key id>" the credential, written in one synced batch behind a
 * compare-and-set on the entity row, so two requests of one entity never
 * make two followers.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_domains.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_blocks.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_remote.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_LIST_MAX        100
#define NGX_HTTP_TENT_PATH_MAX        512


typedef struct {
    ngx_str_t                       entity;
    ngx_str_t                       path;
    json_t                         *types;
    json_t                         *licenses;
    ngx_uint_t                      public;
    ngx_http_tent_discover_t       *found;
    ngx_uint_t                      server;
    ngx_str_t                       challenge;
    json_t                         *old;
    ngx_str_t                       old_id;
    json_t                         *record;
    json_t                         *own;      /* signed by its credential */
} ngx_http_tent_follow_t;


ngx_http_tent_relation_t  ngx_http_tent_followers_rel = {
    ngx_string("followers"),
    "follower",
    NGX_HTTP_TENT_TABLE_FOLLOWER,
    NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY,
    NGX_HTTP_TENT_READ_FOLLOWERS,
    NGX_HTTP_TENT_FOLLOWER,
    NULL,
    NULL
};


static ngx_int_t ngx_http_tent_follow_requested(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_follow_discovered(ngx_http_request_t *r,
    ngx_http_tent_discover_t *d);
static ngx_int_t ngx_http_tent_follow_challenge(ngx_http_request_t *r,
    ngx_http_tent_follow_t *st);
static ngx_int_t ngx_http_tent_follow_challenged(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f);
static ngx_int_t ngx_http_tent_follow_existing(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_follow_old(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_follow_store(ngx_http_request_t *r,
    ngx_http_tent_follow_t *st);
static ngx_int_t ngx_http_tent_follow_stored(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_follower_change(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *record);
static ngx_int_t ngx_http_tent_follower_update(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


/* a JSON list of at most 100 strings, or the default when absent */

ngx_int_t
ngx_http_tent_string_list(json_t *body, const char *name, const char *dflt,
    json_t **out)
{
    size_t   i;
    json_t  *v, *e;

    v = json_object_get(body, name);

    if (v == NULL || json_is_null(v)) {
        *out = dflt ? json_pack("[s]", dflt) : json_array();
        return *out ? NGX_OK : NGX_ERROR;
    }

    if (!json_is_array(v) || json_array_size(v) > NGX_HTTP_TENT_LIST_MAX) {
        return NGX_DECLINED;
    }

    json_array_foreach(v, i, e) {
        if (!json_is_string(e) || json_string_length(e) == 0
            || json_string_length(e) > 2048)
        {
            return NGX_DECLINED;
        }
    }

    *out = json_incref(v);

    return NGX_OK;
}


/* POST /followers: anyone may ask, as in tentd */

ngx_int_t
ngx_http_tent_followers_post(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_read_json(r, ctx, ngx_http_tent_follow_requested);
}


static ngx_int_t
ngx_http_tent_follow_requested(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    json_t                  *v;
    ngx_int_t                rc;
    ngx_str_t                entity;
    ngx_http_tent_follow_t  *st;

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_follow_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the follow state");
    }

    /* one spelling per entity: "http://H:80/" follows as "http://h" */

    rc = NGX_DECLINED;

    if (ngx_http_tent_json_str(ctx->body, "entity", &entity) == NGX_OK) {
        rc = ngx_http_tent_entity_canonical(r->pool, &entity, &st->entity);
    }

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r,
                                            "spelling the follower's entity");
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_send_error(r, 422, "Invalid entity");
    }

    if (ngx_http_tent_entity_eq(&st->entity, &ctx->entity)) {
        return ngx_http_tent_send_error(r, 406,
                                        "Can not follow self");
    }

    /* refused before any discovery: nothing is fetched for it */

    if (ngx_http_tent_blocks_has(ctx->blocks, &st->entity)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "The entity is blocked");
    }

    if (ngx_http_tent_domains_entity(&st->entity)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                   "The entity's domain is blocked on this host");
    }

    /* a path relative to each of the follower's servers */

    if (ngx_http_tent_json_str(ctx->body, "notification_path", &st->path)
        != NGX_OK
        || ngx_http_tent_notification_path_valid(&st->path) != NGX_OK)
    {
        return ngx_http_tent_send_error(r, 422, "Invalid notification path");
    }

    while (st->path.len && st->path.data[0] == '/') {
        st->path.data++;
        st->path.len--;
    }

    rc = ngx_http_tent_string_list(ctx->body, "types", "all", &st->types);
    if (rc == NGX_OK) {
        (void) ngx_http_tent_json_cleanup(r->pool, st->types);
        rc = ngx_http_tent_string_list(ctx->body, "licenses", NULL,
                                       &st->licenses);
        if (rc == NGX_OK) {
            (void) ngx_http_tent_json_cleanup(r->pool, st->licenses);
        }
    }

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r,
                                            "reading the types and licenses");
    }

    if (rc == NGX_DECLINED) {
        return ngx_http_tent_send_error(r, 422, "Invalid types or licenses");
    }

    v = json_object_get(json_object_get(ctx->body, "permissions"), "public");
    st->public = v == NULL || json_is_true(v);

    /* anyone may ask: what it makes us send comes out of a small share */

    if (ngx_http_tent_remote_anonymous(r, &st->entity, &rc) != NGX_OK) {
        return rc;
    }

    return ngx_http_tent_discover(r, &st->entity,
                                  ngx_http_tent_follow_discovered, st);
}


static ngx_int_t
ngx_http_tent_follow_discovered(ngx_http_request_t *r,
    ngx_http_tent_discover_t *d)
{
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_follow_t  *st;

    st = d->data;
    ctx = ngx_http_tent_get_ctx(r);

    if (d->status) {
        return ngx_http_tent_send_error(r, d->status, d->error);
    }

    /* the profile found must be the claimed entity's own */

    if (!ngx_http_tent_entity_eq(&d->canonical, &st->entity)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                   "Entity mismatch: the profile found names another entity");
    }

    st->found = d;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent followers: \"%V\" discovered, %uz servers",
                   &st->entity, json_array_size(d->servers));

    if (ngx_http_tent_random_hex(r->pool, 32, &st->challenge) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "making the challenge");
    }

    /*
     * Signed with this follower's own credential (a follower that moved
     * to us, following again: docs/move.md): the challenge is signed
     * with it and marked "move=1", the only one its server answers for
     * a confirmed following, and the key is kept.  A spec 7.1 follow
     * (unsigned) of an existing follower resets the key as before.
     */

    if (ctx->principal.kind == NGX_HTTP_TENT_FOLLOWER
        && ngx_http_tent_entity_eq(&ctx->principal.entity, &st->entity))
    {
        st->own = json_pack("{s:O, s:O, s:O}",
                    "mac_key_id",
                    json_object_get(ctx->principal.credential, "mac_key_id"),
                    "mac_key",
                    json_object_get(ctx->principal.credential, "key"),
                    "mac_algorithm",
                    json_object_get(ctx->principal.credential, "algorithm"));

        if (st->own == NULL
            || ngx_http_tent_json_cleanup(r->pool, st->own) != NGX_OK)
        {
            json_decref(st->own);
            return ngx_http_tent_internal_error(r, "keeping the credential");
        }
    }

    return ngx_http_tent_follow_challenge(r, st);
}


/* GET {server}/{notification_path}?challenge=<64 hex>, server by server */

static ngx_int_t
ngx_http_tent_follow_challenge(ngx_http_request_t *r,
    ngx_http_tent_follow_t *st)
{
    ngx_str_t               url, query;
    ngx_http_tent_fetch_t  *f;

    query.len = sizeof("move=1&challenge=") - 1 + st->challenge.len;
    query.data = ngx_pnalloc(r->pool, query.len);
    if (query.data == NULL) {
        return ngx_http_tent_internal_error(r, "building the challenge query");
    }

    query.len = ngx_sprintf(query.data, "%s%V",
                            st->own ? "move=1&challenge=" : "challenge=",
                            &st->challenge)
                - query.data;

    if (ngx_http_tent_server_url(r->pool,
                                 json_array_get(st->found->servers,
                                                st->server),
                                 &st->path, &query, &url)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the challenge URL");
    }

    f = ngx_http_tent_remote_fetch(r, &url, "GET");
    if (f == NULL
        || (st->own && ngx_http_tent_remote_sign(f, st->own) != NGX_OK))
    {
        return ngx_http_tent_internal_error(r, "starting the challenge GET");
    }

    /* the URL without its query: the challenge stays out of the log */

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent followers: \"%V\" challenged at %*s",
                   &st->entity, url.len - query.len - 1, url.data);

    ngx_str_set(&f->accept, "text/plain");
    f->max_response = 4096;
    f->data = st;

    return ngx_http_tent_fetch_request(r, f, ngx_http_tent_follow_challenged);
}


static ngx_int_t
ngx_http_tent_follow_challenged(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f)
{
    u_char                  *msg, *p;
    size_t                   len;
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_follow_t  *st;

    st = f->data;
    ctx = ngx_http_tent_get_ctx(r);

    if (f->result == NGX_HTTP_TENT_FETCH_OK && f->status == 200
        && f->body.len >= st->challenge.len
        && ngx_strncmp(f->body.data, st->challenge.data, st->challenge.len)
           == 0)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent followers: \"%V\" answered the challenge",
                       &st->entity);

        ctx->state = st;

        return ngx_http_tent_store_get_request(r,
                                        NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY,
                                        &st->entity,
                                        ngx_http_tent_follow_existing);
    }

    /* a server that cannot be reached: the next one may, of the first few */

    if (ngx_http_tent_fetch_next_server(f)
        && ++st->server < json_array_size(st->found->servers))
    {
        return ngx_http_tent_follow_challenge(r, st);
    }

    /* no slot for it: not a failed challenge, a retry later may pass */

    if (ngx_http_tent_fetch_busy(f)) {
        return ngx_http_tent_remote_error(r, f, "The challenge GET");
    }

    len = f->url.len + 128;
    msg = ngx_pnalloc(r->pool, len);
    if (msg == NULL) {
        return ngx_http_tent_internal_error(r,
                                            "writing the challenge's failure");
    }

    if (f->result == NGX_HTTP_TENT_FETCH_OK) {
        p = ngx_snprintf(msg, len - 1, "Unauthorized: the challenge GET %V "
                         "was not answered (status %ui)", &f->url,
                         f->status);
    } else {
        p = ngx_snprintf(msg, len - 1, "Unauthorized: the challenge GET %V "
                         "failed: %s", &f->url,
                         ngx_http_tent_fetch_strerror(f->result));
    }

    *p = '\0';

    return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN, (char *) msg);
}


static ngx_int_t
ngx_http_tent_follow_existing(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                rc;
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_follow_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        return ngx_http_tent_follow_store(r, st);
    }

    /* a follower again: the same id and key id, a new key (spec 7.1) */

    ngx_http_tent_store_value(op, &st->old_id);

    return ngx_http_tent_store_get_request(r, NGX_HTTP_TENT_TABLE_FOLLOWER,
                                           &st->old_id,
                                           ngx_http_tent_follow_old);
}


static ngx_int_t
ngx_http_tent_follow_old(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    ngx_int_t                rc;
    ngx_str_t                value;
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_follow_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_store_value(op, &value);

        st->old = ngx_http_tent_json_load(r, &value);
        if (st->old == NULL) {
            return ngx_http_tent_internal_error(r,
                                       "reading the former follower record");
        }
    }

    return ngx_http_tent_follow_store(r, st);
}


/* the credential row that makes the follower's MAC requests its own */

ngx_int_t
ngx_http_tent_credential_row(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    const char *kind, json_t *record, ngx_str_t *key, ngx_str_t *value)
{
    size_t      i;
    json_t     *cred, *groups, *g;
    ngx_str_t   key_id;

    if (ngx_http_tent_json_str(record, "mac_key_id", &key_id) != NGX_OK) {
        return NGX_ERROR;
    }

    cred = json_pack("{s:s, s:O, s:O, s:O, s:O, s:O}",
                     "kind", kind,
                     "relation", json_object_get(record, "id"),
                     "entity", json_object_get(record, "entity"),
                     "key", json_object_get(record, "mac_key"),
                     "algorithm", json_object_get(record, "mac_algorithm"),
                     "mac_key_id", json_object_get(record, "mac_key_id"));

    if (cred == NULL || ngx_http_tent_json_cleanup(r->pool, cred) != NGX_OK)
    {
        json_decref(cred);
        return NGX_ERROR;
    }

    /*
     * an imported following's key, until its server delivers with it
     * (docs/import.md): the notification that does confirms it
     */

    if (ngx_strcmp(kind, "following") == 0
        && json_is_true(json_object_get(record, "import_pending")))
    {
        json_object_set_new(cred, "import_pending", json_true());
    }

    /* its groups' ids: one read authenticates and gives what it may see */

    groups = json_array();
    json_object_set_new(cred, "groups", groups);

    json_array_foreach(json_object_get(record, "groups"), i, g) {
        if (json_is_string(json_object_get(g, "id"))) {
            json_array_append(groups, json_object_get(g, "id"));
        }
    }

    if (ngx_http_tent_key(r->pool, &ctx->entity,
                          NGX_HTTP_TENT_TABLE_CREDENTIAL, &key_id, key)
        != NGX_OK
        || ngx_http_tent_json_dump(r->pool, cred, value) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_follow_store(ngx_http_request_t *r, ngx_http_tent_follow_t *st)
{
    json_t                    *record, *out;
    ngx_str_t                  id, key_id, mac_key, key, value, ekey,
                               ckey, cvalue, *expected;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_store_op_t  *op;

    ctx = ngx_http_tent_get_ctx(r);

    if (st->old) {
        if (ngx_http_tent_json_str(st->old, "id", &id) != NGX_OK
            || ngx_http_tent_json_str(st->old, "mac_key_id", &key_id)
               != NGX_OK)
        {
            return ngx_http_tent_internal_error(r,
                                       "reading the former follower's ids");
        }

    } else if (ngx_http_tent_relation_id(r->pool, &id) != NGX_OK
               || ngx_http_tent_random_id(r->pool, "s:", 16, &key_id)
                  != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "making the follower's ids");
    }

    if (st->old && st->own
        && json_equal(json_object_get(st->old, "mac_key_id"),
                      json_object_get(st->own, "mac_key_id"))
        && ngx_http_tent_json_str(st->old, "mac_key", &mac_key) == NGX_OK)
    {
        /* it proved the key it holds: kept */

    } else if (ngx_http_tent_random_hex(r->pool, 16, &mac_key) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "making the follower's key");
    }

    record = json_pack("{s:o, s:o, s:I, s:I, s:{s:b}, s:O, s:O, s:o, s:O,"
                       " s:O, s:o, s:o, s:s}",
                       "id", ngx_http_tent_json_string(&id),
                       "entity", ngx_http_tent_json_string(&st->entity),
                       "created_at", st->old
                           ? json_integer_value(json_object_get(st->old,
                                                               "created_at"))
                           : (json_int_t) ngx_time(),
                       "updated_at", (json_int_t) ngx_time(),
                       "permissions", "public", (int) st->public,
                       "licenses", st->licenses,
                       "types", st->types,
                       "notification_path",
                           ngx_http_tent_json_string(&st->path),
                       "profile", st->found->profile,
                       "servers", st->found->servers,
                       "mac_key_id", ngx_http_tent_json_string(&key_id),
                       "mac_key", ngx_http_tent_json_string(&mac_key),
                       "mac_algorithm", "hmac-sha-256");

    if (record == NULL
        || ngx_http_tent_json_cleanup(r->pool, record) != NGX_OK)
    {
        json_decref(record);
        return ngx_http_tent_internal_error(r, "building the follower record");
    }

    if (st->old && json_object_get(st->old, "groups")) {
        json_object_set(record, "groups", json_object_get(st->old, "groups"));

    } else {
        json_object_set_new(record, "groups", json_array());
    }

    st->record = record;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);
    if (op == NULL) {
        return ngx_http_tent_internal_error(r, "creating the store operation");
    }

    expected = st->old ? &st->old_id : NULL;

    if (ngx_http_tent_key(r->pool, &ctx->entity,
                          NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY, &st->entity,
                          &ekey)
        != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_FOLLOWER, &id, &key)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the follower's keys");
    }

    if (ngx_http_tent_json_dump(r->pool, record, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "encoding the follower record");
    }

    if (ngx_http_tent_credential_row(r, ctx, "follower", record, &ckey,
                                     &cvalue)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                       "building the follower's credential");
    }

    if (ngx_http_tent_store_cas(op, &ekey, expected, &id) != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK
        || ngx_http_tent_store_write_put(op, &ckey, &cvalue) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                       "adding the follower to the batch");
    }

    if (st->old == NULL
        && ngx_http_tent_relation_post(r, ctx, op, "follower", record,
                                       "create")
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "adding the follower post");
    }

    /* the answer is the follower's own view, with its new secrets */

    out = json_pack("{s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O}",
                    "id", json_object_get(record, "id"),
                    "entity", json_object_get(record, "entity"),
                    "created_at", json_object_get(record, "created_at"),
                    "permissions", json_object_get(record, "permissions"),
                    "licenses", json_object_get(record, "licenses"),
                    "types", json_object_get(record, "types"),
                    "notification_path",
                        json_object_get(record, "notification_path"),
                    "mac_key_id", json_object_get(record, "mac_key_id"),
                    "mac_key", json_object_get(record, "mac_key"),
                    "mac_algorithm", json_object_get(record,
                                                     "mac_algorithm"));

    if (out == NULL || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK) {
        json_decref(out);
        return ngx_http_tent_internal_error(r, "building the follower's view");
    }

    ctx->state = out;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_follow_stored);
}


/* the follower and its credential written: the answer, as for any write */

static ngx_int_t
ngx_http_tent_follow_stored(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
#if (NGX_DEBUG)
    json_t  *out;

    out = ngx_http_tent_get_ctx(r)->state;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent followers: \"%s\", key id \"%s\": %s",
                   json_string_value(json_object_get(out, "entity")),
                   json_string_value(json_object_get(out, "mac_key_id")),
                   op->status == NGX_HTTP_TENT_STORE_OK
                   ? "follower and credential stored" : "not stored");
#endif

    return ngx_http_tent_reply_state_json(r, op);
}


/* GET and HEAD /followers, /followers/count */

ngx_int_t
ngx_http_tent_followers_list(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_relations_list(r, ctx, &ngx_http_tent_followers_rel);
}


/* GET, PUT, DELETE /followers/:id (or :entity) */

ngx_int_t
ngx_http_tent_follower(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    if (r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD)) {
        return ngx_http_tent_relation_get(r, ctx,
                                          &ngx_http_tent_followers_rel);
    }

    return ngx_http_tent_relation_load(r, ctx, &ngx_http_tent_followers_rel,
                                       &ctx->params[0],
                                       ngx_http_tent_follower_change);
}


static ngx_int_t
ngx_http_tent_follower_change(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    json_t *record)
{
    ngx_int_t  self;

    if (record == NULL) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    self = ngx_http_tent_relation_is_peer(ctx, record,
                                          NGX_HTTP_TENT_FOLLOWER);

    if (!self && !ngx_http_tent_has_scopes(ctx,
                                           NGX_HTTP_TENT_WRITE_FOLLOWERS))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    if (r->method == NGX_HTTP_PUT) {
        ctx->state = record;
        return ngx_http_tent_read_json(r, ctx,
                                       ngx_http_tent_follower_update);
    }

    /* DELETE: an unfollow (the follower) or a block (an app) */

    return ngx_http_tent_relation_remove(r, ctx,
                                         &ngx_http_tent_followers_rel,
                                         record);
}


/*
 * PUT: the follower may change its licenses and types; an app with
 * write_followers also the public flag and groups.
 */

static ngx_int_t
ngx_http_tent_follower_update(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                    *record, *list, *out;
    ngx_int_t                  rc;
    ngx_str_t                  id, key, value, ckey, cvalue;
    ngx_http_tent_store_op_t  *op;

    record = ctx->state;

    if (json_object_get(ctx->body, "licenses")) {
        rc = ngx_http_tent_string_list(ctx->body, "licenses", NULL, &list);
        if (rc != NGX_OK) {
            return ngx_http_tent_send_error(r, 422, "Invalid licenses");
        }

        json_object_set_new(record, "licenses", list);
    }

    if (json_object_get(ctx->body, "types")) {
        rc = ngx_http_tent_string_list(ctx->body, "types", "all", &list);
        if (rc != NGX_OK) {
            return ngx_http_tent_send_error(r, 422, "Invalid types");
        }

        json_object_set_new(record, "types", list);
    }

    if (ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_FOLLOWERS)) {
        ngx_http_tent_relation_update(record, ctx->body);
    }

    json_object_set_new(record, "updated_at", json_integer(ngx_time()));

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL) {
        return ngx_http_tent_internal_error(r, "creating the store operation");
    }

    if (ngx_http_tent_json_str(record, "id", &id) != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_FOLLOWER, &id, &key)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the follower's key");
    }

    if (ngx_http_tent_json_dump(r->pool, record, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "encoding the follower record");
    }

    /* the credential row carries the groups: rewritten with the record */

    if (ngx_http_tent_credential_row(r, ctx, "follower", record, &ckey,
                                     &cvalue)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                       "building the follower's credential");
    }

    if (ngx_http_tent_store_write(op, 1) != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK
        || ngx_http_tent_store_write_put(op, &ckey, &cvalue) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                       "adding the follower to the batch");
    }

    out = ngx_http_tent_json_own(r->pool,
                                 ngx_http_tent_relation_render(r, ctx,
                                     &ngx_http_tent_followers_rel, record));
    if (out == NULL) {
        return ngx_http_tent_internal_error(r, "rendering the follower");
    }

    ctx->state = out;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_reply_state_json);
}


/*
 * A follower's notification path, which goes into the request line of
 * every delivery to it: no scheme, no "..", visible ASCII only, no '#'
 * or '\\'.  Nor their escapes: the server decodes "%2e%2e/" into a
 * segment that climbs out of the follower's path (to another entity's
 * under the same origin, whose unconfirmed following would answer the
 * challenge).  For POST /followers and for an imported follower.
 */

static ngx_str_t  ngx_http_tent_path_refused[] = {
    ngx_string("://"), ngx_string(".."), ngx_string("%2e"),
    ngx_string("%2f"), ngx_string("%5c"), ngx_string("%23"),
    ngx_string("%00")
};


ngx_int_t
ngx_http_tent_notification_path_valid(ngx_str_t *path)
{
    u_char      *p;
    ngx_uint_t   i;

    if (path->len == 0 || path->len > NGX_HTTP_TENT_PATH_MAX) {
        return NGX_ERROR;
    }

    for (p = path->data; p < path->data + path->len; p++) {
        if (*p <= ' ' || *p >= 0x7f || *p == '#' || *p == '\\') {
            return NGX_ERROR;
        }
    }

    for (i = 0; i < sizeof(ngx_http_tent_path_refused) / sizeof(ngx_str_t);
         i++)
    {
        if (ngx_strlcasestrn(path->data, path->data + path->len,
                             ngx_http_tent_path_refused[i].data,
                             ngx_http_tent_path_refused[i].len - 1))
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}
