
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The mentions of moved entities (docs/move.md): the one part of a
 * re-keying that reads every post we keep.  Anyone who follows us can
 * announce a move, so that scan is not made once per announcement:
 *
 *   - each announcement records its mapping, a row META "mmap <time>
 *     <old>" ({"to": new}; keyed by when it came), and its rows of
 *     the old entity are re-keyed as before (bounded by them);
 *   - one pass over every post at a time per entity of ours, the row
 *     META "mpass" (a lock: a random token taken by compare-and-set,
 *     stale after NGX_HTTP_TENT_MOVE_PASS_LOCK, refreshed by each batch
 *     the pass writes); an announcement that
 *     finds a pass running is joined to it: the pass, once over, reads
 *     the mappings again and makes one more pass for those that came
 *     meanwhile;
 *   - at most NGX_HTTP_TENT_MOVE_PASSES passes a day per entity of ours
 *     (follow-ups included); beyond, the mapping stays recorded and the
 *     first pass allowed again (the next announcement's) applies it.
 *
 * A pass applies the mappings recorded, the oldest first (at most
 * NGX_HTTP_TENT_MOVE_MAPS at once; the rest wait), resolved once (chains
 * O -> N, N -> M followed, cycles dropped) into a tree keyed by the
 * normalized old entity, then removes the mappings it applied.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_move.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_MOVE_PASS_BATCH  64
#define NGX_HTTP_TENT_MOVE_PASS_LOCK   300
#define NGX_HTTP_TENT_MOVE_PASSES      4
#define NGX_HTTP_TENT_MOVE_PASS_DAY    86400
#define NGX_HTTP_TENT_MOVE_MAPS        64
#define NGX_HTTP_TENT_MOVE_PASS_REFRESH 30


typedef struct {
    ngx_str_t                           from;       /* the move asked */
    ngx_str_t                           to;
    ngx_str_t                           key;        /* META "mpass" */
    ngx_str_t                           held;       /* our lock's value */
    ngx_str_t                           token;
    json_int_t                          day;
    json_int_t                          passes;
    ngx_array_t                        *maps;
    ngx_rbtree_t                        tree;       /* the maps resolved */
    ngx_rbtree_node_t                   sentinel;
    time_t                              refreshed;  /* the lock's time */
    ngx_str_t                           pending;    /* its next value */
    ngx_str_t                           start;
    ngx_str_t                           end;
    ngx_uint_t                          rows;
    ngx_uint_t                          written;
    ngx_int_t                           outcome;    /* once released */
    ngx_uint_t                          followup;   /* maps read again */
    ngx_http_tent_move_challenged_pt    done;
    void                               *data;
} ngx_http_tent_move_pass_t;


static ngx_int_t ngx_http_tent_move_map_key(ngx_pool_t *pool,
    const char *prefix, ngx_str_t *from, ngx_str_t *rest);
static ngx_int_t ngx_http_tent_move_seen(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_move_mapped(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_move_pass_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_move_pass_lock(ngx_http_request_t *r,
    ngx_http_tent_move_pass_t *ps, ngx_str_t *expected,
    ngx_http_tent_request_done_pt handler);
static ngx_int_t ngx_http_tent_move_pass_taken(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_move_pass_maps(ngx_http_request_t *r,
    ngx_http_tent_move_pass_t *ps);
static ngx_int_t ngx_http_tent_move_pass_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_move_pass_again(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_move_pass_start(ngx_http_request_t *r,
    ngx_http_tent_move_pass_t *ps);
static ngx_int_t ngx_http_tent_move_pass_scan(ngx_http_request_t *r,
    ngx_http_tent_move_pass_t *ps);
static ngx_int_t ngx_http_tent_move_pass_rows(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_move_pass_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_move_pass_applied(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_move_pass_release(ngx_http_request_t *r,
    ngx_http_tent_move_pass_t *ps, ngx_int_t rc);
static ngx_int_t ngx_http_tent_move_pass_released(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_move_pass_end(ngx_http_request_t *r,
    ngx_http_tent_move_pass_t *ps, ngx_int_t rc);


/*
 * The mentions of "from" are to name "to": recorded, then applied by a
 * pass of ours, one running, or a later one.  "done" gets NGX_OK (applied
 * or recorded), NGX_AGAIN (the store: the mapping may not be recorded,
 * the sender retries) or NGX_ERROR.
 */

ngx_int_t
ngx_http_tent_move_mentions(ngx_http_request_t *r, ngx_str_t *from,
    ngx_str_t *to, ngx_http_tent_move_challenged_pt done, void *data)
{
    ngx_str_t                   rest;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_move_pass_t  *ps;

    ctx = ngx_http_tent_get_ctx(r);

    ps = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_move_pass_t));
    if (ps == NULL) {
        return done(r, data, NGX_ERROR);
    }

    ps->done = done;
    ps->data = data;
    ps->from = *from;
    ps->to = *to;

    ngx_str_set(&rest, "mpass");

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_META,
                          &rest, &ps->key)
        != NGX_OK
        || ngx_http_tent_move_map_key(r->pool, "mdone ", from, &rest)
           != NGX_OK)
    {
        return done(r, data, NGX_ERROR);
    }

    ctx->state = ps;

    /* the same move applied already (a retried announcement): no pass */

    return ngx_http_tent_store_get_request(r, NGX_HTTP_TENT_TABLE_META,
                                           &rest, ngx_http_tent_move_seen);
}


static ngx_int_t
ngx_http_tent_move_map_key(ngx_pool_t *pool, const char *prefix,
    ngx_str_t *from, ngx_str_t *rest)
{
    size_t  n;

    n = ngx_strlen(prefix);

    rest->len = n + from->len;
    rest->data = ngx_pnalloc(pool, rest->len);
    if (rest->data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(ngx_cpymem(rest->data, prefix, n), from->data, from->len);

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_move_seen(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    u_char                     *p;
    json_t                     *v;
    ngx_str_t                   value, to, rest, key;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_store_op_t   *wop;
    ngx_http_tent_move_pass_t  *ps;

    ctx = ngx_http_tent_get_ctx(r);
    ps = ctx->state;

    if (ngx_http_tent_store_http_status(op) != NGX_OK) {
        return ngx_http_tent_move_pass_end(r, ps, NGX_AGAIN);
    }

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_store_value(op, &value);
        v = ngx_http_tent_json_load(r, &value);

        if (v && ngx_http_tent_json_str(v, "to", &to) == NGX_OK
            && ngx_http_tent_entity_eq(&to, &ps->to))
        {
            ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "tent move: mentions of \"%V\" name \"%V\" "
                           "already: no pass", &ps->from, &ps->to);
            return ngx_http_tent_move_pass_end(r, ps, NGX_OK);
        }
    }

    v = ngx_http_tent_json_own(r->pool,
                               json_pack("{s:s%}", "to", ps->to.data,
                                         ps->to.len));

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    /*
     * keyed by when it came: a pass takes the oldest first, so names
     * sorting first do not keep the others waiting
     */

    p = ngx_pnalloc(r->pool, sizeof("mmap ") - 1 + 17 + 1);
    if (p == NULL) {
        return ngx_http_tent_move_pass_end(r, ps, NGX_ERROR);
    }

    *ngx_sprintf(p, "mmap %016xL ", ngx_http_tent_now_us()) = '\0';

    if (v == NULL || wop == NULL
        || ngx_http_tent_move_map_key(r->pool, (const char *) p, &ps->from,
                                      &rest)
           != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_META,
                             &rest, &key)
           != NGX_OK
        || ngx_http_tent_json_dump(r->pool, v, &value) != NGX_OK
        || ngx_http_tent_store_write(wop, 1) != NGX_OK
        || ngx_http_tent_store_write_put(wop, &key, &value) != NGX_OK)
    {
        return ngx_http_tent_move_pass_end(r, ps, NGX_ERROR);
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent move: mentions of \"%V\" to name \"%V\": recorded",
                   &ps->from, &ps->to);

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_move_mapped);
}


static ngx_int_t
ngx_http_tent_move_mapped(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    ngx_str_t                   rest;
    ngx_http_tent_move_pass_t  *ps;

    ps = ngx_http_tent_get_ctx(r)->state;

    if (ngx_http_tent_store_http_status(op) != NGX_OK) {
        return ngx_http_tent_move_pass_end(r, ps, NGX_AGAIN);
    }

    ngx_str_set(&rest, "mpass");

    return ngx_http_tent_store_get_request(r, NGX_HTTP_TENT_TABLE_META,
                                           &rest,
                                           ngx_http_tent_move_pass_read);
}


/* a pass running: joined; the day's passes spent: deferred; else ours */

static ngx_int_t
ngx_http_tent_move_pass_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                     *row;
    ngx_str_t                   prev;
    json_int_t                  locked;
    ngx_http_tent_move_pass_t  *ps;

    ps = ngx_http_tent_get_ctx(r)->state;

    if (ngx_http_tent_store_http_status(op) != NGX_OK) {
        /* recorded: a later pass applies it */
        return ngx_http_tent_move_pass_end(r, ps, NGX_OK);
    }

    row = NULL;
    ngx_str_null(&prev);

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_store_value(op, &prev);

        row = ngx_http_tent_json_load(r, &prev);
        if (row == NULL) {
            return ngx_http_tent_move_pass_end(r, ps, NGX_ERROR);
        }
    }

    locked = json_integer_value(json_object_get(row, "locked_at"));
    ps->day = json_integer_value(json_object_get(row, "day"));
    ps->passes = json_integer_value(json_object_get(row, "passes"));

    if (json_is_string(json_object_get(row, "lock"))
        && locked + NGX_HTTP_TENT_MOVE_PASS_LOCK >= (json_int_t) ngx_time())
    {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent move: a pass over the mentions is under way: "
                      "this move joined to it");
        return ngx_http_tent_move_pass_end(r, ps, NGX_OK);
    }

    if (ps->day + NGX_HTTP_TENT_MOVE_PASS_DAY <= (json_int_t) ngx_time()) {
        ps->day = ngx_time();
        ps->passes = 0;
    }

    if (ps->passes >= NGX_HTTP_TENT_MOVE_PASSES) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent move: %L passes over the mentions within a "
                      "day: this move's mentions deferred to the next "
                      "pass", (int64_t) ps->passes);
        return ngx_http_tent_move_pass_end(r, ps, NGX_OK);
    }

    if (ngx_http_tent_random_hex(r->pool, 16, &ps->token) != NGX_OK) {
        return ngx_http_tent_move_pass_end(r, ps, NGX_ERROR);
    }

    return ngx_http_tent_move_pass_lock(r, ps, row ? &prev : NULL,
                                        ngx_http_tent_move_pass_taken);
}


/* the lock row: ours, one pass more of the day, compare-and-set */

static ngx_int_t
ngx_http_tent_move_pass_lock(ngx_http_request_t *r,
    ngx_http_tent_move_pass_t *ps, ngx_str_t *expected,
    ngx_http_tent_request_done_pt handler)
{
    u_char                    *p;
    ngx_str_t                  old;
    ngx_http_tent_store_op_t  *cas;

    /* "expected" may be our lock's value, rewritten below */

    if (expected) {
        old = *expected;
        expected = &old;
    }

    p = ngx_pnalloc(r->pool, 96 + ps->token.len + 3 * NGX_INT64_LEN);
    if (p == NULL) {
        return ngx_http_tent_move_pass_end(r, ps, NGX_ERROR);
    }

    ps->passes++;

    ps->held.data = p;
    ps->held.len = ngx_sprintf(p, "{\"day\":%L,\"passes\":%L,\"lock\":\"%V\","
                               "\"locked_at\":%T}", (int64_t) ps->day,
                               (int64_t) ps->passes, &ps->token, ngx_time())
                   - p;

    cas = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (cas == NULL
        || ngx_http_tent_store_cas(cas, &ps->key, expected, &ps->held)
           != NGX_OK)
    {
        return ngx_http_tent_move_pass_end(r, ps, NGX_ERROR);
    }

    return ngx_http_tent_store_submit_request(r, cas, handler);
}


static ngx_int_t
ngx_http_tent_move_pass_taken(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_move_pass_t  *ps;

    ps = ngx_http_tent_get_ctx(r)->state;

    if (ngx_http_tent_store_http_status(op) != NGX_OK
        || op->status != NGX_HTTP_TENT_STORE_OK)
    {
        /* another announcement took it between our read and write */
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent move: a pass over the mentions began "
                      "meanwhile: this move joined to it");
        ngx_str_null(&ps->held);
        return ngx_http_tent_move_pass_end(r, ps, NGX_OK);
    }

    return ngx_http_tent_move_pass_maps(r, ps);
}


/* the mappings recorded, all of them (at most NGX_HTTP_TENT_MOVE_MAPS) */

static ngx_int_t
ngx_http_tent_move_pass_maps(ngx_http_request_t *r,
    ngx_http_tent_move_pass_t *ps)
{
    ngx_str_t                  start, end;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_store_op_t  *op;

    ctx = ngx_http_tent_get_ctx(r);

    ngx_str_set(&start, "mmap ");
    ngx_str_set(&end, "mmap!");

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_META,
                             &start, &ps->start)
           != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_META,
                             &end, &ps->end)
           != NGX_OK
        || ngx_http_tent_store_scan(op, &ps->start, &ps->end,
                                    NGX_HTTP_TENT_MOVE_MAPS, 0)
           != NGX_OK)
    {
        return ngx_http_tent_move_pass_release(r, ps, NGX_ERROR);
    }

    return ngx_http_tent_store_submit_request(r, op,
                                          ngx_http_tent_move_pass_loaded);
}


static ngx_int_t
ngx_http_tent_move_pass_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                     *v;
    ngx_str_t                   key, value, to;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_move_map_t   *m;
    ngx_http_tent_move_pass_t  *ps;

    ctx = ngx_http_tent_get_ctx(r);
    ps = ctx->state;

    if (ngx_http_tent_store_http_status(op) != NGX_OK) {
        return ngx_http_tent_move_pass_release(r, ps, NGX_AGAIN);
    }

    ps->maps = ngx_array_create(r->pool, 4, sizeof(ngx_http_tent_move_map_t));
    if (ps->maps == NULL) {
        return ngx_http_tent_move_pass_release(r, ps, NGX_ERROR);
    }

    /* the key: the entity, '\0', the table, "mmap ", the old entity */

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        v = ngx_http_tent_json_load(r, &value);

        if (v == NULL
            || ngx_http_tent_json_str(v, "to", &to) != NGX_OK
            || key.len <= ctx->entity.len + 2 + sizeof("mmap ") - 1)
        {
            continue;
        }

        m = ngx_array_push(ps->maps);
        if (m == NULL) {
            return ngx_http_tent_move_pass_release(r, ps, NGX_ERROR);
        }

        m->from.data = key.data + ctx->entity.len + 2 + sizeof("mmap ") - 1;
        m->from.len = key.len - (m->from.data - key.data);

        /* "mmap <time> <from>": the time only orders them */

        if (m->from.len > 17 && m->from.data[16] == ' ') {
            m->from.data += 17;
            m->from.len -= 17;
        }
        m->to = to;
        m->key = key;
        m->raw = value;
    }

    if (ps->maps->nelts == 0) {
        return ngx_http_tent_move_pass_release(r, ps, NGX_OK);
    }

    if (ngx_http_tent_move_maps_resolve(r->pool, r->connection->log,
                                        ps->maps, &ps->tree, &ps->sentinel)
        != NGX_OK)
    {
        return ngx_http_tent_move_pass_release(r, ps, NGX_ERROR);
    }

    if (ps->followup) {
        ps->followup = 0;

        if (ps->passes >= NGX_HTTP_TENT_MOVE_PASSES) {
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "tent move: %L passes over the mentions within "
                          "a day: %ui moves deferred to the next pass",
                          (int64_t) ps->passes, ps->maps->nelts);
            return ngx_http_tent_move_pass_release(r, ps, NGX_OK);
        }

        /* one more pass of the day, for the moves joined meanwhile */

        return ngx_http_tent_move_pass_lock(r, ps, &ps->held,
                                            ngx_http_tent_move_pass_again);
    }

    return ngx_http_tent_move_pass_start(r, ps);
}


static ngx_int_t
ngx_http_tent_move_pass_again(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_move_pass_t  *ps;

    ps = ngx_http_tent_get_ctx(r)->state;

    if (ngx_http_tent_store_http_status(op) != NGX_OK
        || op->status != NGX_HTTP_TENT_STORE_OK)
    {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent move: the mentions pass lock was taken over: "
                      "the moves joined wait for the next pass");
        ngx_str_null(&ps->held);
        return ngx_http_tent_move_pass_end(r, ps, NGX_OK);
    }

    return ngx_http_tent_move_pass_start(r, ps);
}


static ngx_int_t
ngx_http_tent_move_pass_start(ngx_http_request_t *r,
    ngx_http_tent_move_pass_t *ps)
{
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                  "tent move: mentions pass %L of the day over every post "
                  "we keep, for %ui moves", (int64_t) ps->passes,
                  ps->maps->nelts);

    if (ngx_http_tent_key_range(r->pool, &ctx->entity,
                                NGX_HTTP_TENT_TABLE_POST, &ps->start,
                                &ps->end)
        != NGX_OK)
    {
        return ngx_http_tent_move_pass_release(r, ps, NGX_ERROR);
    }

    ps->rows = 0;
    ps->written = 0;
    ps->refreshed = ngx_time();

    return ngx_http_tent_move_pass_scan(r, ps);
}


static ngx_int_t
ngx_http_tent_move_pass_scan(ngx_http_request_t *r,
    ngx_http_tent_move_pass_t *ps)
{
    ngx_http_tent_store_op_t  *op;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_scan(op, &ps->start, &ps->end,
                                    NGX_HTTP_TENT_MOVE_PASS_BATCH, 0)
           != NGX_OK)
    {
        return ngx_http_tent_move_pass_release(r, ps, NGX_ERROR);
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_move_pass_rows);
}


/*
 * A post (ours, or received) that mentions a moved entity: the mention
 * names the new one, in the post, its current version and its feed rows
 * (their "m", what ?mentioned_entity= filters by).  Older versions keep
 * what they said.  NGX_DECLINED: no such mention.
 */

static ngx_int_t
ngx_http_tent_move_pass_post(ngx_http_request_t *r,
    ngx_http_tent_move_pass_t *ps, ngx_http_tent_store_op_t *wop,
    json_t *post, ngx_str_t *key)
{
    size_t                i;
    json_t               *copy, *m;
    ngx_str_t             e, id, entity, vkey, value, *to;
    ngx_uint_t            found;
    ngx_http_tent_ctx_t  *ctx;

    copy = NULL;
    found = 0;

    json_array_foreach(json_object_get(post, "mentions"), i, m) {
        if (ngx_http_tent_json_str(m, "entity", &e) != NGX_OK) {
            continue;
        }

        to = ngx_http_tent_move_maps_target(&ps->tree, &e);
        if (to == NULL) {
            continue;
        }

        if (copy == NULL) {
            copy = ngx_http_tent_json_own(r->pool, json_deep_copy(post));
            if (copy == NULL) {
                return NGX_ERROR;
            }
        }

        json_object_set_new(json_array_get(json_object_get(copy,
                                                           "mentions"), i),
                            "entity", ngx_http_tent_json_string(to));
        found = 1;
    }

    if (!found) {
        return NGX_DECLINED;
    }

    ctx = ngx_http_tent_get_ctx(r);

    if (ngx_http_tent_json_str(copy, "entity", &entity) != NGX_OK
        || ngx_http_tent_json_str(copy, "id", &id) != NGX_OK
        || !json_is_integer(json_object_get(copy, "version"))
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &entity, &id,
               (ngx_int_t) json_integer_value(json_object_get(copy,
                                                              "version")),
               &vkey)
           != NGX_OK
        || ngx_http_tent_json_dump(r->pool, copy, &value) != NGX_OK
        || ngx_http_tent_store_write_put(wop, key, &value) != NGX_OK
        || ngx_http_tent_store_write_put(wop, &vkey, &value) != NGX_OK
        || ngx_http_tent_post_index_rows(r->pool, &ctx->entity, wop, copy, 0)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_move_pass_rows(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    u_char                     *p;
    json_t                     *post;
    ngx_str_t                   key, value, last, held;
    ngx_uint_t                  rows, writes;
    ngx_http_tent_store_op_t   *wop;
    ngx_http_tent_move_pass_t  *ps;

    ps = ngx_http_tent_get_ctx(r)->state;

    if (ngx_http_tent_store_http_status(op) != NGX_OK) {
        /* the mappings stay: the next pass applies them */
        return ngx_http_tent_move_pass_release(r, ps, NGX_AGAIN);
    }

    /*
     * The batch's writes go with our lock refreshed (compare-and-set on
     * it): a pass longer than NGX_HTTP_TENT_MOVE_PASS_LOCK keeps it, and
     * one whose lock was taken over writes nothing more
     */

    p = ngx_pnalloc(r->pool, 96 + ps->token.len + 3 * NGX_INT64_LEN);
    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (p == NULL || wop == NULL) {
        return ngx_http_tent_move_pass_release(r, ps, NGX_ERROR);
    }

    held.data = p;
    held.len = ngx_sprintf(p, "{\"day\":%L,\"passes\":%L,\"lock\":\"%V\","
                           "\"locked_at\":%T}", (int64_t) ps->day,
                           (int64_t) ps->passes, &ps->token, ngx_time())
               - p;

    if (ngx_http_tent_store_cas(wop, &ps->key, &ps->held, &held) != NGX_OK) {
        return ngx_http_tent_move_pass_release(r, ps, NGX_ERROR);
    }

    rows = 0;
    writes = 0;
    ngx_str_null(&last);

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        rows++;
        last = key;

        post = ngx_http_tent_json_load(r, &value);
        if (post == NULL) {
            continue;
        }

        switch (ngx_http_tent_move_pass_post(r, ps, wop, post, &key)) {
        case NGX_OK:
            writes++;
            break;
        case NGX_DECLINED:
            break;
        default:
            return ngx_http_tent_move_pass_release(r, ps, NGX_ERROR);
        }
    }

    ps->rows += rows;
    ps->written += writes;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent move: mentions pass: phase 2: %ui rows, "
                   "%ui written", rows, writes);

    if (rows) {
        if (ngx_http_tent_key_after(r->pool, &last, &ps->start) != NGX_OK) {
            return ngx_http_tent_move_pass_release(r, ps, NGX_ERROR);
        }

        if (writes == 0
            && ngx_time() < ps->refreshed + NGX_HTTP_TENT_MOVE_PASS_REFRESH)
        {
            return ngx_http_tent_move_pass_scan(r, ps);
        }

        ps->pending = held;

        return ngx_http_tent_store_submit_request(r, wop,
                                          ngx_http_tent_move_pass_written);
    }

    /* every post read: the mappings applied go, unless changed meanwhile */

    return ngx_http_tent_move_pass_applied(r, NULL);
}


static ngx_int_t
ngx_http_tent_move_pass_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_move_pass_t  *ps;

    ps = ngx_http_tent_get_ctx(r)->state;

    if (ngx_http_tent_store_http_status(op) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "tent move: a batch of re-keyed mentions was not "
                      "written; the next pass applies them");
        return ngx_http_tent_move_pass_release(r, ps, NGX_AGAIN);
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent move: the mentions pass lock was taken over: "
                      "this pass ends, its mappings stay for the next");
        ngx_str_null(&ps->held);
        return ngx_http_tent_move_pass_end(r, ps, NGX_OK);
    }

    ps->held = ps->pending;
    ps->refreshed = ngx_time();

    return ngx_http_tent_move_pass_scan(r, ps);
}


/*
 * op NULL: the mappings applied are removed, one compare-and-set each (a
 * mapping recorded again meanwhile stays for the next pass); then the
 * mappings are read again: those that came while the pass ran get one
 * more, its follow-up, within the day's passes.
 */

static ngx_int_t
ngx_http_tent_move_pass_applied(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_str_t                   rest, key;
    ngx_uint_t                  i;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_store_op_t   *cas;
    ngx_http_tent_move_map_t   *m;
    ngx_http_tent_move_pass_t  *ps;

    ctx = ngx_http_tent_get_ctx(r);
    ps = ctx->state;

    if (op == NULL) {
        ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                      "tent move: mentions pass %L over: %ui posts read, "
                      "%ui re-keyed", (int64_t) ps->passes, ps->rows,
                      ps->written);
    }

    /* one removal at a time, each answer going on to the next */

    m = ps->maps->elts;

    for (i = 0; i < ps->maps->nelts; i++) {
        if (m[i].raw.len == 0) {
            continue;
        }

        /* "mmap .. <from>" becomes "mdone <from>": a retry costs no pass */

        cas = ngx_http_tent_store_op_create(r->pool, r->connection->log);

        if (cas == NULL
            || ngx_http_tent_move_map_key(r->pool, "mdone ", &m[i].from,
                                          &rest)
               != NGX_OK
            || ngx_http_tent_key(r->pool, &ctx->entity,
                                 NGX_HTTP_TENT_TABLE_META, &rest, &key)
               != NGX_OK
            || ngx_http_tent_store_cas(cas, &m[i].key, &m[i].raw, &m[i].raw)
               != NGX_OK
            || ngx_http_tent_store_write_del(cas, &m[i].key) != NGX_OK
            || ngx_http_tent_store_write_put(cas, &key, &m[i].raw) != NGX_OK)
        {
            return ngx_http_tent_move_pass_release(r, ps, NGX_ERROR);
        }

        m[i].raw.len = 0;

        return ngx_http_tent_store_submit_request(r, cas,
                                          ngx_http_tent_move_pass_applied);
    }

    /* a follow-up for the mappings that came meanwhile, if the day allows */

    ps->followup = 1;

    return ngx_http_tent_move_pass_maps(r, ps);
}


/* the lock given back, the day's count kept, by compare-and-set on ours */

static ngx_int_t
ngx_http_tent_move_pass_release(ngx_http_request_t *r,
    ngx_http_tent_move_pass_t *ps, ngx_int_t rc)
{
    u_char                    *p;
    ngx_str_t                  value;
    ngx_http_tent_store_op_t  *cas;

    if (ps->held.len == 0) {
        return ngx_http_tent_move_pass_end(r, ps, rc);
    }

    p = ngx_pnalloc(r->pool, 64 + 2 * NGX_INT64_LEN);
    cas = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (p == NULL || cas == NULL) {
        return ngx_http_tent_move_pass_end(r, ps, NGX_ERROR);
    }

    value.data = p;
    value.len = ngx_sprintf(p, "{\"day\":%L,\"passes\":%L}",
                            (int64_t) ps->day, (int64_t) ps->passes)
                - p;

    if (ngx_http_tent_store_cas(cas, &ps->key, &ps->held, &value) != NGX_OK) {
        return ngx_http_tent_move_pass_end(r, ps, NGX_ERROR);
    }

    ngx_str_null(&ps->held);

    ps->outcome = rc;

    return ngx_http_tent_store_submit_request(r, cas,
                                          ngx_http_tent_move_pass_released);
}


static ngx_int_t
ngx_http_tent_move_pass_released(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_move_pass_t  *ps;

    ps = ngx_http_tent_get_ctx(r)->state;

    if (ngx_http_tent_store_http_status(op) != NGX_OK
        || op->status != NGX_HTTP_TENT_STORE_OK)
    {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent move: the mentions pass lock not released "
                      "(taken over, or the store): it goes stale");
    }

    return ngx_http_tent_move_pass_end(r, ps, ps->outcome);
}


static ngx_int_t
ngx_http_tent_move_pass_end(ngx_http_request_t *r,
    ngx_http_tent_move_pass_t *ps, ngx_int_t rc)
{
    ngx_http_tent_get_ctx(r)->state = ps->data;

    return ps->done(r, ps->data, rc);
}
