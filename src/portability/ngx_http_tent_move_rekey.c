
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Moving an entity (spec 9.5), docs/move.md: the receiving side.  A
 * relationship's profile read again names another entity and lists the
 * relationship's in previous_entities.  The announcement came signed
 * with that relationship's credential; the new entity is discovered at
 * its own URL and must list the old one too (ngx_http_tent_move.c).
 * One re-keying of an entity at a time (ngx_http_tent_move_guard.c).
 * Then the old entity's posts we keep are re-keyed, a batch at a time,
 * and last its relationships (follower, following: record, entity row,
 * credential), each once the new servers answered
 * (ngx_http_tent_move_challenge.c, ngx_http_tent_move_follow.c).
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_move.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_remote.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_MOVE_BATCH   64


typedef struct {
    ngx_str_t                       to;          /* the new entity */
    ngx_str_t                       from;        /* the old one */
    json_t                         *servers;
    json_t                         *profile;
    json_t                         *record;      /* our core, or NULL */
    ngx_str_t                       raw;
    ngx_str_t                       start;       /* the scan's */
    ngx_str_t                       end;
    ngx_uint_t                      versions;    /* scanning table v */
    ngx_uint_t                      table;       /* the relation's */
    ngx_uint_t                      moved;       /* posts, versions */
    ngx_str_t                       rel_raw;
    ngx_http_tent_store_op_t       *wop;         /* a follower's batch */
    ngx_http_tent_move_guard_t     *guard;       /* the entity's lock */
    const char                     *why;         /* 503: why */
} ngx_http_tent_moved_t;



static ngx_int_t ngx_http_tent_moved_verified(ngx_http_request_t *r,
    ngx_http_tent_discover_t *d);
static ngx_int_t ngx_http_tent_moved_free(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_moved_scan(ngx_http_request_t *r,
    ngx_http_tent_moved_t *mv);
static ngx_int_t ngx_http_tent_moved_rows(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_moved_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_moved_mentioned(ngx_http_request_t *r,
    void *data, ngx_int_t rc);
static ngx_int_t ngx_http_tent_moved_relation(ngx_http_request_t *r,
    ngx_http_tent_moved_t *mv);
static ngx_int_t ngx_http_tent_moved_relation_id(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_moved_relation_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_moved_relation_done(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_moved_challenged(ngx_http_request_t *r,
    void *data, ngx_int_t rc);
static ngx_int_t ngx_http_tent_moved_guarded(ngx_http_request_t *r,
    void *data, ngx_int_t rc);
static ngx_int_t ngx_http_tent_moved_end(ngx_http_request_t *r,
    ngx_http_tent_moved_t *mv, ngx_uint_t ended, const char *why);
static ngx_int_t ngx_http_tent_moved_ended(ngx_http_request_t *r,
    void *data, ngx_int_t rc);


static u_char  ngx_http_tent_move_tables[][2] = {
    { NGX_HTTP_TENT_TABLE_FOLLOWING, NGX_HTTP_TENT_TABLE_FOLLOWING_ENTITY },
    { NGX_HTTP_TENT_TABLE_FOLLOWER, NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY }
};


/* --- receiving: a relationship's profile names another entity ---------- */

/*
 * Called when the profile read again, with the relationship's
 * credential, at the relationship's server, names "to" instead of the
 * relationship's entity.  The notification is acknowledged at the end
 * whatever is decided (it was stored already).
 */

ngx_int_t
ngx_http_tent_move_announced(ngx_http_request_t *r, json_t *core,
    ngx_str_t *to)
{
    json_t                *v;
    ngx_int_t              rc;
    json_int_t             at;
    ngx_http_tent_ctx_t   *ctx;
    ngx_http_tent_moved_t *mv;

    ctx = ngx_http_tent_get_ctx(r);

    mv = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_moved_t));
    if (mv == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the move");
    }

    mv->from = ctx->principal.entity;

    rc = ngx_http_tent_entity_canonical(r->pool, to, &mv->to);

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "spelling the entity");
    }

    if (rc != NGX_OK
        || ngx_http_tent_entity_eq(&mv->to, &mv->from)
        || ngx_http_tent_entity_eq(&mv->to, &ctx->entity)
        || !ngx_http_tent_move_lists(core, &mv->from))
    {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent move: \"%V\" names \"%V\" in its profile "
                      "without listing itself in previous_entities, or "
                      "an entity it cannot be: not a move", &mv->from, to);
        return ngx_http_tent_moved_end(r, mv, 0, NULL);
    }

    ctx->state = mv;

    /* the announcement's time: what a replay cannot make newer */

    v = json_object_get(ctx->body, "published_at");
    at = json_is_integer(v) ? json_integer_value(v) : (json_int_t) ngx_time();

    return ngx_http_tent_move_guard_take(r, &mv->guard, &mv->from, at,
                                         ngx_http_tent_moved_guarded, mv);
}


/* one re-keying of an entity at a time, chains bounded (move_guard.c) */

static ngx_int_t
ngx_http_tent_moved_guarded(ngx_http_request_t *r, void *data, ngx_int_t rc)
{
    ngx_http_tent_moved_t *mv;

    mv = data;
    ngx_http_tent_get_ctx(r)->state = mv;

    switch (rc) {

    case NGX_OK:
        break;

    case NGX_BUSY:
        return ngx_http_tent_moved_end(r, mv, 0,
                                  "a re-keying of this entity is under way");

    case NGX_AGAIN:
        return ngx_http_tent_moved_end(r, mv, 0, "the store");

    case NGX_DECLINED:
        return ngx_http_tent_moved_end(r, mv, 0, NULL);

    default:
        return ngx_http_tent_internal_error(r, "taking the move lock");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent move: \"%V\" announces \"%V\": discovering it",
                   &mv->from, &mv->to);

    return ngx_http_tent_discover(r, &mv->to, ngx_http_tent_moved_verified,
                                  mv);
}


/*
 * The new entity's own profile, found at its URL, must list the old one:
 * a server cannot give its relationship's rows to an entity that did
 * not ask for them, nor take another's by claiming to succeed it (its
 * own announcement only ever moves its own rows).
 */

static ngx_int_t
ngx_http_tent_moved_verified(ngx_http_request_t *r,
    ngx_http_tent_discover_t *d)
{
    const char            *why;
    ngx_http_tent_moved_t *mv;

    mv = d->data;

    /* N not reachable now: the sender tries again later (its queue) */

    if (d->status >= NGX_HTTP_INTERNAL_SERVER_ERROR) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent move: \"%V\" announces \"%V\", not reachable "
                      "now (%s)", &mv->from, &mv->to, d->error);
        return ngx_http_tent_moved_end(r, mv, 0,
                                       "the new entity is not reachable");
    }

    why = d->status ? d->error
                    : ngx_http_tent_move_successor(d, &mv->to, &mv->from);

    if (why) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent move: \"%V\" announces \"%V\", whose profile "
                      "does not list it in previous_entities (%s): "
                      "nothing re-keyed", &mv->from, &mv->to, why);
        return ngx_http_tent_moved_end(r, mv, 0, NULL);
    }

    mv->profile = d->profile;
    mv->servers = d->servers;

    /* rows are never merged: the new entity must be new to us */

    return ngx_http_tent_store_get_request(r,
                                       NGX_HTTP_TENT_TABLE_FOLLOWING_ENTITY,
                                       &mv->to, ngx_http_tent_moved_free);
}


static ngx_int_t
ngx_http_tent_moved_free(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_ctx_t   *ctx;
    ngx_http_tent_moved_t *mv;

    ctx = ngx_http_tent_get_ctx(r);
    mv = ctx->state;

    if (ngx_http_tent_store_http_status(op) != NGX_OK) {
        return ngx_http_tent_moved_end(r, mv, 0, "the store");
    }

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent move: \"%V\" moves to \"%V\", with whom we have "
                      "a relationship already: rows are not merged, "
                      "nothing re-keyed", &mv->from, &mv->to);
        return ngx_http_tent_moved_end(r, mv, 0, NULL);
    }

    if (mv->table == 0) {
        mv->table = 1;
        return ngx_http_tent_store_get_request(r,
                                       NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY,
                                       &mv->to, ngx_http_tent_moved_free);
    }

    mv->table = 0;

    ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                  "tent move: \"%V\" moved to \"%V\" (its profile lists "
                  "it): re-keying", &mv->from, &mv->to);

    /* versions first, then posts: a retried announcement resumes */

    mv->versions = 1;

    if (ngx_http_tent_post_entity_range(r->pool, &ctx->entity, &mv->from, 1,
                                        &mv->start, &mv->end)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the range");
    }

    return ngx_http_tent_moved_scan(r, mv);
}


static ngx_int_t
ngx_http_tent_moved_scan(ngx_http_request_t *r, ngx_http_tent_moved_t *mv)
{
    ngx_http_tent_store_op_t  *op;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_scan(op, &mv->start, &mv->end,
                                    NGX_HTTP_TENT_MOVE_BATCH, 0)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "preparing the scan");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_moved_rows);
}


/* a batch of the old entity's rows: each written under the new one */

static ngx_int_t
ngx_http_tent_moved_rows(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                    *post, *copy;
    uint32_t                   version;
    ngx_str_t                  key, value, id, nkey, nvalue, last;
    ngx_uint_t                 rows, writes;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_moved_t     *mv;
    ngx_http_tent_store_op_t  *wop;

    ctx = ngx_http_tent_get_ctx(r);
    mv = ctx->state;

    if (ngx_http_tent_store_http_status(op) != NGX_OK) {
        /* the rest waits for the next announcement: it resumes */
        return ngx_http_tent_moved_end(r, mv, 0, "the store");
    }

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);
    if (wop == NULL || ngx_http_tent_store_write(wop, 1) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "preparing the batch");
    }

    rows = 0;
    writes = 0;
    ngx_str_null(&last);

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        rows++;
        last = key;

        post = ngx_http_tent_json_load(r, &value);

        if (post == NULL
            || ngx_http_tent_json_str(post, "id", &id) != NGX_OK)
        {
            continue;
        }

        copy = ngx_http_tent_json_own(r->pool, json_deep_copy(post));
        if (copy == NULL) {
            return ngx_http_tent_internal_error(r, "copying the post");
        }

        json_object_set_new(copy, "entity",
                            ngx_http_tent_json_string(&mv->to));

        if (mv->versions) {
            if (ngx_http_tent_key_version(&key, &version) != NGX_OK
                || ngx_http_tent_post_key(r->pool, &ctx->entity, &mv->to,
                                          &id, (ngx_int_t) version, &nkey)
                   != NGX_OK)
            {
                continue;
            }

        } else if (ngx_http_tent_post_key(r->pool, &ctx->entity, &mv->to,
                                          &id, -1, &nkey)
                   != NGX_OK
                   || ngx_http_tent_post_index_rows(r->pool, &ctx->entity,
                                                    wop, post, 1)
                      != NGX_OK
                   || ngx_http_tent_post_index_rows(r->pool, &ctx->entity,
                                                    wop, copy, 0)
                      != NGX_OK)
        {
            return ngx_http_tent_internal_error(r, "re-keying the feed");
        }

        if (ngx_http_tent_json_dump(r->pool, copy, &nvalue) != NGX_OK
            || ngx_http_tent_store_write_put(wop, &nkey, &nvalue) != NGX_OK
            || ngx_http_tent_store_write_del(wop, &key) != NGX_OK)
        {
            return ngx_http_tent_internal_error(r, "re-keying a post");
        }

        mv->moved++;
        writes++;
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent move: \"%V\": phase %ui: %ui rows, %ui written",
                   &mv->from, mv->versions, rows, writes);

    if (rows) {
        if (ngx_http_tent_key_after(r->pool, &last, &mv->start) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "preparing the next scan");
        }

        if (writes == 0) {
            return ngx_http_tent_moved_scan(r, mv);
        }

        return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_moved_written);
    }

    if (mv->versions == 1) {
        mv->versions = 0;

        if (ngx_http_tent_post_entity_range(r->pool, &ctx->entity,
                                            &mv->from, 0, &mv->start,
                                            &mv->end)
            != NGX_OK)
        {
            return ngx_http_tent_internal_error(r, "building the range");
        }

        return ngx_http_tent_moved_scan(r, mv);
    }

    /*
     * every post is the new entity's; the mentions of the old one, in
     * every post we keep, go to a pass shared by the moves of the day
     * (ngx_http_tent_move_mentions.c); then the relationships
     */

    return ngx_http_tent_move_mentions(r, &mv->from, &mv->to,
                                       ngx_http_tent_moved_mentioned, mv);
}


static ngx_int_t
ngx_http_tent_moved_mentioned(ngx_http_request_t *r, void *data,
    ngx_int_t rc)
{
    ngx_http_tent_moved_t  *mv;

    mv = data;
    ngx_http_tent_get_ctx(r)->state = mv;

    if (rc == NGX_AGAIN) {
        return ngx_http_tent_moved_end(r, mv, 0, "the store");
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_internal_error(r, "re-keying the mentions");
    }

    return ngx_http_tent_moved_relation(r, mv);
}


static ngx_int_t
ngx_http_tent_moved_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    if (ngx_http_tent_store_http_status(op) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "tent move: a batch of re-keyed posts was not "
                      "written; the next announcement resumes");
        return ngx_http_tent_moved_end(r, ctx->state, 0, "the store");
    }

    return ngx_http_tent_moved_scan(r, ctx->state);
}


/* the following, then the follower, of the old entity, if there */

static ngx_int_t
ngx_http_tent_moved_relation(ngx_http_request_t *r,
    ngx_http_tent_moved_t *mv)
{
    if (mv->table >= 2) {
        ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                      "tent move: \"%V\" is \"%V\" now: %ui rows re-keyed",
                      &mv->from, &mv->to, mv->moved);
        return ngx_http_tent_moved_end(r, mv, 1, NULL);
    }

    return ngx_http_tent_store_get_request(r,
                                     ngx_http_tent_move_tables[mv->table][1],
                                     &mv->from,
                                     ngx_http_tent_moved_relation_id);
}


static ngx_int_t
ngx_http_tent_moved_relation_id(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_str_t              id;
    ngx_http_tent_ctx_t   *ctx;
    ngx_http_tent_moved_t *mv;

    ctx = ngx_http_tent_get_ctx(r);
    mv = ctx->state;

    if (ngx_http_tent_store_http_status(op) != NGX_OK) {
        return ngx_http_tent_moved_end(r, mv, 0, "the store");
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        mv->table++;
        return ngx_http_tent_moved_relation(r, mv);
    }

    ngx_http_tent_store_value(op, &id);

    return ngx_http_tent_store_get_request(r,
                                     ngx_http_tent_move_tables[mv->table][0],
                                     &id,
                                     ngx_http_tent_moved_relation_read);
}


/*
 * One synced batch: the record names the new entity (its profile and
 * servers the new ones), the entity row moves by compare-and-set "must
 * be absent", and the credential row names the new entity, so the posts
 * it signs next are taken as the new entity's.
 */

static ngx_int_t
ngx_http_tent_moved_relation_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                    *record, *servers;
    ngx_str_t                  raw, value, id, key, okey, nkey, ckey, cvalue;
    ngx_uint_t                 same;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_moved_t     *mv;
    ngx_http_tent_store_op_t  *wop;
    ngx_http_tent_srv_conf_t  *scf;

    ctx = ngx_http_tent_get_ctx(r);
    mv = ctx->state;

    if (ngx_http_tent_store_http_status(op) != NGX_OK) {
        return ngx_http_tent_moved_end(r, mv, 0, "the store");
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        mv->table++;
        return ngx_http_tent_moved_relation(r, mv);
    }

    ngx_http_tent_store_value(op, &raw);

    record = ngx_http_tent_json_load(r, &raw);
    if (record == NULL
        || ngx_http_tent_json_str(record, "id", &id) != NGX_OK)
    {
        mv->table++;
        return ngx_http_tent_moved_relation(r, mv);
    }

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    servers = ngx_http_tent_servers_cap(r->pool, mv->servers, &scf->outbound);
    if (servers == NULL) {
        return ngx_http_tent_internal_error(r, "keeping the servers");
    }

    same = json_equal(json_object_get(record, "servers"), servers);

    json_object_set_new(record, "entity", ngx_http_tent_json_string(&mv->to));
    json_object_set(record, "profile", mv->profile);
    json_object_set(record, "servers", servers);
    json_object_set_new(record, "updated_at", json_integer(ngx_time()));

    if (ngx_http_tent_key(r->pool, &ctx->entity,
                          ngx_http_tent_move_tables[mv->table][0], &id, &key)
        != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             ngx_http_tent_move_tables[mv->table][1],
                             &mv->from, &okey)
           != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             ngx_http_tent_move_tables[mv->table][1],
                             &mv->to, &nkey)
           != NGX_OK
        || ngx_http_tent_json_dump(r->pool, record, &value) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the keys");
    }

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (wop == NULL
        || ngx_http_tent_store_cas(wop, &nkey, NULL, &id) != NGX_OK
        || ngx_http_tent_store_write_put(wop, &key, &value) != NGX_OK
        || ngx_http_tent_store_write_del(wop, &okey) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the batch");
    }

    /* an unconfirmed following has no credential yet */

    if (json_is_string(json_object_get(record, "mac_key_id"))) {
        if (ngx_http_tent_credential_row(r, ctx,
                mv->table == 0 ? "following" : "follower", record,
                &ckey, &cvalue)
            != NGX_OK
            || ngx_http_tent_store_write_put(wop, &ckey, &cvalue) != NGX_OK)
        {
            return ngx_http_tent_internal_error(r, "building the credential");
        }
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent move: %s \"%V\" of \"%V\": re-keyed",
                   mv->table == 0 ? "following" : "follower", &id,
                   &mv->from);

    /*
     * A follower: our posts go to its servers, which a follow proves by
     * the challenge answered there (spec 7.1).  New servers answer it
     * too, or the follower is not re-keyed: else a follower could aim
     * our posts at any host by naming it in a successor's profile.
     */

    if (mv->table == 1 && !same) {
        mv->wop = wop;
        return ngx_http_tent_move_challenge(r, record, servers,
                                            ngx_http_tent_moved_challenged,
                                            mv);
    }

    /*
     * A following: we follow the new entity again, signed with the
     * relationship's key (its server confirms the follower it imported
     * pending, and so proves it wants to be the followed one), before
     * the following is re-keyed.
     */

    if (mv->table == 0
        && json_is_string(json_object_get(record, "mac_key_id")))
    {
        mv->wop = wop;
        return ngx_http_tent_move_follow(r, record, servers,
                                         ngx_http_tent_moved_challenged, mv);
    }

    return ngx_http_tent_store_submit_request(r, wop,
                                        ngx_http_tent_moved_relation_done);
}


static ngx_int_t
ngx_http_tent_moved_relation_done(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_ctx_t   *ctx;
    ngx_http_tent_moved_t *mv;

    ctx = ngx_http_tent_get_ctx(r);
    mv = ctx->state;

    if (ngx_http_tent_store_http_status(op) != NGX_OK) {
        return ngx_http_tent_moved_end(r, mv, 0, "the store");
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent move: a relationship of \"%V\" was not "
                      "re-keyed to \"%V\" (store status %ui)",
                      &mv->from, &mv->to, op->status);
    }

    mv->table++;

    return ngx_http_tent_moved_relation(r, mv);
}


static ngx_int_t
ngx_http_tent_moved_challenged(ngx_http_request_t *r, void *data,
    ngx_int_t rc)
{
    ngx_http_tent_moved_t *mv;

    mv = data;
    ngx_http_tent_get_ctx(r)->state = mv;

    switch (rc) {

    case NGX_OK:
        return ngx_http_tent_store_submit_request(r, mv->wop,
                                        ngx_http_tent_moved_relation_done);

    case NGX_AGAIN:
        return ngx_http_tent_moved_end(r, mv, 0,
                                  "the new servers are not reachable now");

    case NGX_DECLINED:
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent move: \"%V\" moves to \"%V\", whose servers "
                      "did not answer the %s's challenge: the %s not "
                      "re-keyed", &mv->from, &mv->to,
                      mv->table ? "follower" : "following",
                      mv->table ? "follower" : "following");
        mv->table++;
        return ngx_http_tent_moved_relation(r, mv);

    default:
        return ngx_http_tent_internal_error(r, "challenging the follower");
    }
}


/*
 * The end of a received announcement: the entity's lock released (the
 * chain's row written when the re-keying ended), then the answer.  Not
 * finished for a reason that passes (the store, the new entity not
 * reachable, another re-keying under way): a 503, so that the sender's
 * queue sends the profile post again and the re-keying resumes from
 * what is left under the old entity.  Else an empty 200, as a refresh
 * ends: the notification was stored.
 */

static ngx_int_t
ngx_http_tent_moved_end(ngx_http_request_t *r, ngx_http_tent_moved_t *mv,
    ngx_uint_t ended, const char *why)
{
    mv->why = why;

    return ngx_http_tent_move_guard_release(r, mv->guard,
                                            ended ? &mv->to : NULL,
                                            ngx_http_tent_moved_ended, mv);
}


static ngx_int_t
ngx_http_tent_moved_ended(ngx_http_request_t *r, void *data, ngx_int_t rc)
{
    u_char                *p;
    ngx_http_tent_ctx_t   *ctx;
    ngx_http_tent_moved_t *mv;

    mv = data;
    ctx = ngx_http_tent_get_ctx(r);
    ctx->state = NULL;

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "releasing the move lock");
    }

    if (mv->why) {
        p = ngx_pnalloc(r->pool, 128);
        if (p == NULL) {
            return ngx_http_tent_internal_error(r, "the move's answer");
        }

        ngx_sprintf(p, "The move could not be taken now (%s); try again%Z",
                    mv->why);

        return ngx_http_tent_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                        (const char *) p);
    }

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = 0;
    r->header_only = 1;
    ctx->own_reply = 1;

    return ngx_http_send_header(r);
}
