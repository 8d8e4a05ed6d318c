
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * What one relationship's announcements may cost us (docs/move.md,
 * receiving a move).  Anyone we follow or who follows us can announce a
 * move, and each re-keying scans every post we keep (the mentions).  So,
 * per entity, a row META "move <entity>":
 *
 *   - one re-keying of it at a time: the row holds a lock (a random
 *     token, taken by compare-and-set), released only by its owner, taken
 *     over once older than NGX_HTTP_TENT_MOVE_LOCK_TIME (a worker that
 *     died); a copy that finds it held is answered 503 (the sender
 *     retries, nothing scanned);
 *   - the announcement's time ("published_at" of the profile post) must
 *     be newer than the one of the move that made this entity (a replay
 *     of an older announcement is refused);
 *   - a chain O -> N -> M ... is bounded: the move that made N writes
 *     N's row (and O's) with the chain's length, and more than
 *     NGX_HTTP_TENT_MOVE_CHAIN_MAX moves within NGX_HTTP_TENT_MOVE_CHAIN
 *     seconds of one another are refused.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_move.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_MOVE_LOCK_TIME   300
#define NGX_HTTP_TENT_MOVE_CHAIN_MAX   3
#define NGX_HTTP_TENT_MOVE_CHAIN       86400


struct ngx_http_tent_move_guard_s {
    ngx_str_t                           key;       /* META "move <from>" */
    ngx_str_t                           held;      /* our locked value */
    ngx_str_t                           prev;      /* the row before, or
                                                      null */
    json_int_t                          at;
    json_int_t                          chain;
    ngx_uint_t                          locked;
    ngx_http_tent_move_challenged_pt    done;
    void                               *data;
};


static ngx_int_t ngx_http_tent_move_guard_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_move_guard_taken(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_move_guard_released(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


static ngx_int_t
ngx_http_tent_move_guard_row(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *rest)
{
    rest->len = sizeof("move ") - 1 + entity->len;
    rest->data = ngx_pnalloc(pool, rest->len);
    if (rest->data == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(rest->data, "move %V", entity);

    return NGX_OK;
}


/*
 * NGX_OK: ours, the re-keying may go on; NGX_BUSY: another one runs;
 * NGX_DECLINED: refused (an older announcement, a chain too long);
 * NGX_AGAIN: the store.  "at": the announcement's time.
 */

ngx_int_t
ngx_http_tent_move_guard_take(ngx_http_request_t *r,
    ngx_http_tent_move_guard_t **gp, ngx_str_t *from, json_int_t at,
    ngx_http_tent_move_challenged_pt done, void *data)
{
    ngx_str_t                    rest;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_move_guard_t  *g;

    ctx = ngx_http_tent_get_ctx(r);

    g = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_move_guard_t));
    if (g == NULL
        || ngx_http_tent_move_guard_row(r->pool, from, &rest) != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_META,
                             &rest, &g->key)
           != NGX_OK)
    {
        return done(r, data, NGX_ERROR);
    }

    g->at = at;
    g->done = done;
    g->data = data;
    *gp = g;

    ctx->state = g;

    return ngx_http_tent_store_get_request(r, NGX_HTTP_TENT_TABLE_META,
                                           &rest,
                                           ngx_http_tent_move_guard_read);
}


static ngx_int_t
ngx_http_tent_move_guard_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    u_char                      *p;
    json_t                      *row;
    ngx_str_t                    token, *expected;
    json_int_t                   last, done, locked;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_move_guard_t  *g;
    ngx_http_tent_store_op_t    *cas;

    ctx = ngx_http_tent_get_ctx(r);
    g = ctx->state;
    ctx->state = g->data;

    if (ngx_http_tent_store_http_status(op) != NGX_OK) {
        return g->done(r, g->data, NGX_AGAIN);
    }

    row = NULL;
    expected = NULL;

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_store_value(op, &g->prev);
        expected = &g->prev;

        row = ngx_http_tent_json_load(r, &g->prev);
        if (row == NULL) {
            return g->done(r, g->data, NGX_ERROR);
        }
    }

    last = json_integer_value(json_object_get(row, "at"));
    done = json_integer_value(json_object_get(row, "done"));
    locked = json_integer_value(json_object_get(row, "locked_at"));
    g->chain = json_integer_value(json_object_get(row, "chain"));

    if (json_is_string(json_object_get(row, "lock"))
        && locked + NGX_HTTP_TENT_MOVE_LOCK_TIME >= (json_int_t) ngx_time())
    {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent move: a re-keying of this entity is under "
                      "way (since %L)", (int64_t) locked);
        return g->done(r, g->data, NGX_BUSY);
    }

    if (row && g->at <= last) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent move: an announcement of %L, not newer than "
                      "the move handled last (%L): refused",
                      (int64_t) g->at, (int64_t) last);
        return g->done(r, g->data, NGX_DECLINED);
    }

    if (done + NGX_HTTP_TENT_MOVE_CHAIN < (json_int_t) ngx_time()) {
        g->chain = 0;
    }

    if (g->chain >= NGX_HTTP_TENT_MOVE_CHAIN_MAX) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent move: %L moves in a chain within %d s: "
                      "refused", (int64_t) g->chain,
                      NGX_HTTP_TENT_MOVE_CHAIN);
        return g->done(r, g->data, NGX_DECLINED);
    }

    if (ngx_http_tent_random_hex(r->pool, 16, &token) != NGX_OK) {
        return g->done(r, g->data, NGX_ERROR);
    }

    p = ngx_pnalloc(r->pool, 128 + token.len + 3 * NGX_INT64_LEN);
    if (p == NULL) {
        return g->done(r, g->data, NGX_ERROR);
    }

    g->held.data = p;
    g->held.len = ngx_sprintf(p, "{\"at\":%L,\"done\":%L,\"chain\":%L,"
                              "\"lock\":\"%V\",\"locked_at\":%T}",
                              (int64_t) last, (int64_t) done,
                              (int64_t) g->chain, &token, ngx_time())
                  - p;

    cas = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (cas == NULL
        || ngx_http_tent_store_cas(cas, &g->key, expected, &g->held)
           != NGX_OK)
    {
        return g->done(r, g->data, NGX_ERROR);
    }

    ctx->state = g;

    return ngx_http_tent_store_submit_request(r, cas,
                                              ngx_http_tent_move_guard_taken);
}


static ngx_int_t
ngx_http_tent_move_guard_taken(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_move_guard_t  *g;

    ctx = ngx_http_tent_get_ctx(r);
    g = ctx->state;
    ctx->state = g->data;

    if (ngx_http_tent_store_http_status(op) != NGX_OK) {
        return g->done(r, g->data, NGX_AGAIN);
    }

    /* another copy took it between our read and write */

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        return g->done(r, g->data, NGX_BUSY);
    }

    g->locked = 1;

    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent move: the entity's move lock is ours");

    return g->done(r, g->data, NGX_OK);
}


/*
 * The lock released, by compare-and-set on the value we wrote: a lock
 * taken over meanwhile (ours was stale) is not ours to release.  "to"
 * not NULL: the re-keying ended, and both rows, the old entity's and the
 * new one's, carry the chain on (the old one's too: a relationship not
 * re-keyed, its new servers refused, stays the old entity's and could
 * announce again).
 */

ngx_int_t
ngx_http_tent_move_guard_release(ngx_http_request_t *r,
    ngx_http_tent_move_guard_t *g, ngx_str_t *to,
    ngx_http_tent_move_challenged_pt done, void *data)
{
    u_char                    *p;
    ngx_str_t                  rest, key, value;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_store_op_t  *cas;

    if (g == NULL || !g->locked) {
        return done(r, data, NGX_OK);
    }

    ctx = ngx_http_tent_get_ctx(r);

    g->locked = 0;
    g->done = done;
    g->data = data;

    cas = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (cas == NULL
        || ngx_http_tent_store_cas(cas, &g->key, &g->held,
                                   g->prev.len ? &g->prev : &g->held)
           != NGX_OK
        || (g->prev.len == 0 && to == NULL
            && ngx_http_tent_store_write_del(cas, &g->key) != NGX_OK))
    {
        return done(r, data, NGX_ERROR);
    }

    if (to) {
        p = ngx_pnalloc(r->pool, 64 + 3 * NGX_INT64_LEN);

        if (p == NULL
            || ngx_http_tent_move_guard_row(r->pool, to, &rest) != NGX_OK
            || ngx_http_tent_key(r->pool, &ctx->entity,
                                 NGX_HTTP_TENT_TABLE_META, &rest, &key)
               != NGX_OK)
        {
            return done(r, data, NGX_ERROR);
        }

        value.data = p;
        value.len = ngx_sprintf(p, "{\"at\":%L,\"done\":%T,\"chain\":%L}",
                                (int64_t) g->at, ngx_time(),
                                (int64_t) (g->chain + 1))
                    - p;

        if (ngx_http_tent_store_write_put(cas, &key, &value) != NGX_OK
            || ngx_http_tent_store_write_put(cas, &g->key, &value) != NGX_OK)
        {
            return done(r, data, NGX_ERROR);
        }
    }

    ctx->state = g;

    return ngx_http_tent_store_submit_request(r, cas,
                                          ngx_http_tent_move_guard_released);
}


static ngx_int_t
ngx_http_tent_move_guard_released(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_move_guard_t  *g;

    ctx = ngx_http_tent_get_ctx(r);
    g = ctx->state;
    ctx->state = g->data;

    if (ngx_http_tent_store_http_status(op) != NGX_OK
        || op->status != NGX_HTTP_TENT_STORE_OK)
    {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent move: the move lock not released (taken over, "
                      "or the store): it goes stale");
    }

    return g->done(r, g->data, NGX_OK);
}
