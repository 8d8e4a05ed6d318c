
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Moving an entity (spec 9.5), docs/move.md: the sending side, and what
 * both sides check of a profile.
 *
 * POST {api_root}/move {"entity": B}, by the owner's app (write_secrets
 * and write_profile), once B has imported our export: B's discovered
 * profile must list us in previous_entities.  Our core section then
 * names B, B's servers, and us in previous_entities; its profile post
 * goes out through the delivery queue to every follower and following,
 * which read our profile again.  The receiving side is
 * ngx_http_tent_move_rekey.c.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_move.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_remote.h"
#include "ngx_http_tent_store.h"


typedef struct {
    ngx_str_t                       to;          /* the new entity */
    ngx_str_t                       from;        /* the old one: us */
    json_t                         *servers;
    json_t                         *record;      /* our core, moved */
    ngx_str_t                       raw;
} ngx_http_tent_move_t;


static ngx_int_t ngx_http_tent_move_read(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_move_parsed(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_move_discovered(ngx_http_request_t *r,
    ngx_http_tent_discover_t *d);
static ngx_int_t ngx_http_tent_move_core_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_move_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


/* the core section's content of a profile ({type: content, ...}) */

json_t *
ngx_http_tent_move_core(json_t *profile)
{
    json_t      *v, *core;
    ngx_str_t    type, base;
    const char  *name;

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

    return core;
}


/* does a core content list "entity" in previous_entities (any spelling)? */

ngx_uint_t
ngx_http_tent_move_lists(json_t *core, ngx_str_t *entity)
{
    size_t     i;
    json_t    *v;
    ngx_str_t  s;

    json_array_foreach(json_object_get(core, "previous_entities"), i, v) {
        if (!json_is_string(v)) {
            continue;
        }

        s.data = (u_char *) json_string_value(v);
        s.len = json_string_length(v);

        if (ngx_http_tent_entity_eq(&s, entity)) {
            return 1;
        }
    }

    return 0;
}


/*
 * What both sides check of the new entity, discovered at its own URL:
 * its profile is its own (names "to") and lists "from" in
 * previous_entities: it says itself that it succeeds "from".  NULL if
 * so, else why not (for a message).
 */

const char *
ngx_http_tent_move_successor(ngx_http_tent_discover_t *d, ngx_str_t *to,
    ngx_str_t *from)
{
    if (!ngx_http_tent_entity_eq(&d->canonical, to)) {
        return "names another entity";
    }

    if (!ngx_http_tent_move_lists(ngx_http_tent_move_core(d->profile), from))
    {
        return "does not list it in previous_entities";
    }

    return NULL;
}


/* --- sending: POST /move ------------------------------------------------ */

ngx_int_t
ngx_http_tent_move_post(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_SECRETS
                                       |NGX_HTTP_TENT_WRITE_PROFILE))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    /*
     * Provisioning: a move writes a profile post of ours (and keeps the
     * core's version), as a PUT /profile does: one of the quota of
     * posts, first (a second move replaces the first: uncounted, moves
     * again and again would add rows without bound)
     */

    return ngx_http_tent_quota_check(r, ctx, NGX_HTTP_TENT_QUOTA_POSTS,
                                     ngx_http_tent_move_read);
}


static ngx_int_t
ngx_http_tent_move_read(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent move: reading the body");

    return ngx_http_tent_read_json(r, ctx, ngx_http_tent_move_parsed);
}


static ngx_int_t
ngx_http_tent_move_parsed(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_int_t              rc;
    ngx_str_t              to;
    ngx_http_tent_move_t  *mv;

    if (!json_is_object(ctx->body)
        || ngx_http_tent_json_str(ctx->body, "entity", &to) != NGX_OK)
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                   "The body must be {\"entity\": the new entity's URL}");
    }

    mv = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_move_t));
    if (mv == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the move");
    }

    rc = ngx_http_tent_entity_canonical(r->pool, &to, &mv->to);

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "spelling the entity");
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_send_error(r, 422, "Invalid entity");
    }

    if (ngx_http_tent_entity_eq(&mv->to, &ctx->entity)) {
        return ngx_http_tent_send_error(r, 422,
                                        "An entity cannot move to itself");
    }

    mv->from = ctx->entity;
    ctx->state = mv;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent move: \"%V\" to \"%V\": discovering it",
                   &ctx->entity, &mv->to);

    return ngx_http_tent_discover(r, &mv->to, ngx_http_tent_move_discovered,
                                  mv);
}


/*
 * The new entity must say so itself: its own profile, found at its URL,
 * names it and lists us in previous_entities (its import did that).
 * Without it, an owner's app could point our followers at any entity.
 */

static ngx_int_t
ngx_http_tent_move_discovered(ngx_http_request_t *r,
    ngx_http_tent_discover_t *d)
{
    u_char                *p;
    ngx_str_t              base;
    const char            *why;
    ngx_http_tent_move_t  *mv;

    mv = d->data;

    if (d->status) {
        return ngx_http_tent_send_error(r, d->status, d->error);
    }

    why = ngx_http_tent_move_successor(d, &mv->to, &mv->from);

    if (why) {
        p = ngx_pnalloc(r->pool, 128);
        if (p == NULL) {
            return ngx_http_tent_internal_error(r, "the move's answer");
        }

        ngx_sprintf(p, "The new entity's profile %s (import the export "
                    "there first)%Z", why);

        return ngx_http_tent_send_error(r, 422, (const char *) p);
    }

    mv->servers = d->servers;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent move: \"%V\" lists us: reading our core",
                   &mv->to);

    ngx_str_set(&base, NGX_HTTP_TENT_CORE_BASE);

    return ngx_http_tent_store_get_request(r, NGX_HTTP_TENT_TABLE_PROFILE,
                                           &base,
                                           ngx_http_tent_move_core_read);
}


static ngx_int_t
ngx_http_tent_move_core_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                    *content, *prev, *record, *post, *old, *servers,
                          *type;
    ngx_int_t                  rc;
    ngx_str_t                  value, key, old_key, base;
    json_int_t                 v;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_move_t      *mv;
    ngx_http_tent_store_op_t  *cas;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    mv = ctx->state;
    old = NULL;

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_store_value(op, &mv->raw);

        old = ngx_http_tent_json_load(r, &mv->raw);
        if (old == NULL) {
            return ngx_http_tent_internal_error(r, "reading our core");
        }
    }

    content = json_is_object(json_object_get(old, "content"))
              ? json_deep_copy(json_object_get(old, "content"))
              : json_object();

    if (content == NULL || ngx_http_tent_json_cleanup(r->pool, content)
                           != NGX_OK)
    {
        json_decref(content);
        return ngx_http_tent_internal_error(r, "building the core");
    }

    servers = json_deep_copy(mv->servers);

    /* tentd: the old value goes into previous_entities (spec 9.5) */

    prev = json_object_get(content, "previous_entities");
    if (!json_is_array(prev)) {
        prev = json_array();
        json_object_set_new(content, "previous_entities", prev);
    }

    if (prev == NULL || servers == NULL
        || json_object_set_new(content, "entity",
                               ngx_http_tent_json_string(&mv->to)) != 0
        || json_object_set_new(content, "servers", servers) != 0
        || (!ngx_http_tent_move_lists(content, &mv->from)
            && json_array_insert_new(prev, 0,
                                     ngx_http_tent_json_string(&mv->from))
               != 0))
    {
        return ngx_http_tent_internal_error(r, "building the core");
    }

    if (!json_is_array(json_object_get(content, "licenses"))) {
        json_object_set_new(content, "licenses", json_array());
    }

    v = old ? json_integer_value(json_object_get(old, "version")) : 0;

    type = json_is_string(json_object_get(old, "type"))
           ? json_incref(json_object_get(old, "type"))
           : json_string(NGX_HTTP_TENT_CORE_TYPE);

    record = json_pack("{s:o, s:O, s:{s:b}, s:I, s:I, s:{s:o, s:I}}",
                       "type", type,
                       "content", content,
                       "permissions", "public", 1,
                       "version", v + 1,
                       "updated_at", (json_int_t) ngx_time(),
                       "moved",
                           "entity", ngx_http_tent_json_string(&mv->to),
                           "at", (json_int_t) ngx_time());

    if (record == NULL
        || ngx_http_tent_json_cleanup(r->pool, record) != NGX_OK)
    {
        json_decref(record);
        return ngx_http_tent_internal_error(r, "building the core");
    }

    mv->record = record;

    ngx_str_set(&base, NGX_HTTP_TENT_CORE_BASE);

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_PROFILE,
                          &base, &key)
        != NGX_OK
        || ngx_http_tent_json_dump(r->pool, record, &value) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "encoding the core");
    }

    cas = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (cas == NULL
        || ngx_http_tent_store_cas(cas, &key, old ? &mv->raw : NULL, &value)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "adding the core");
    }

    /* the version replaced is kept, as a PUT keeps it */

    if (old
        && (ngx_http_tent_history_key(r->pool, &ctx->entity, &base,
                                      (ngx_int_t) v, &old_key)
            != NGX_OK
            || ngx_http_tent_store_write_put(cas, &old_key, &mv->raw)
               != NGX_OK))
    {
        return ngx_http_tent_internal_error(r, "adding the old core");
    }

    /* the profile post: every follower and following reads us again */

    post = json_pack("{s:[o], s:s}",
                     "types",
                     json_is_string(json_object_get(record, "type"))
                     ? json_copy(json_object_get(record, "type"))
                     : json_string(NGX_HTTP_TENT_CORE_TYPE),
                     "action", "update");

    if (post == NULL || ngx_http_tent_json_cleanup(r->pool, post) != NGX_OK) {
        json_decref(post);
        return ngx_http_tent_internal_error(r, "building the profile post");
    }

    if (ngx_http_tent_internal_post(r, ctx, cas, "profile", post, 1)
        != NGX_OK
        || ngx_http_tent_quota_count(r, ctx, cas) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "adding the profile post");
    }

    ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                  "tent move: \"%V\" moves to \"%V\" (core version %L)",
                  &ctx->entity, &mv->to, (int64_t) (v + 1));

    return ngx_http_tent_store_submit_request(r, cas,
                                              ngx_http_tent_move_written);
}


static ngx_int_t
ngx_http_tent_move_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                *reply, *content;
    ngx_int_t              status;
    ngx_http_tent_ctx_t   *ctx;
    ngx_http_tent_move_t  *mv;

    status = ngx_http_tent_store_http_status(op);

    if (status == NGX_OK && op->status == NGX_HTTP_TENT_STORE_CONFLICT) {
        status = NGX_HTTP_CONFLICT;
    }

    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status,
                   status == NGX_HTTP_CONFLICT
                   ? "The core section changed meanwhile; try again" : NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    mv = ctx->state;

    content = json_object_get(mv->record, "content");

    reply = json_pack("{s:O, s:O, s:O, s:O}",
                      "entity", json_object_get(content, "entity"),
                      "previous_entities",
                      json_object_get(content, "previous_entities"),
                      "servers", json_object_get(content, "servers"),
                      "moved_at",
                      json_object_get(json_object_get(mv->record, "moved"),
                                      "at"));

    if (reply == NULL || ngx_http_tent_json_cleanup(r->pool, reply) != NGX_OK)
    {
        json_decref(reply);
        return ngx_http_tent_internal_error(r, "building the answer");
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, reply);
}
