
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The owner's blocks (docs/blocks.md): an entity blocked is refused at
 * every route it signs or names (follow, notification, mention), its
 * follower relationship ends when it is blocked, its posts leave the
 * feed and ours are not sent to it.  One row each, "<owner> 0x00 'z'
 * <entity>": {"entity", "created_at"}.  Each worker keeps an owner's list
 * while the blocks' generation in the shared zone has not moved.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_blocks.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


/* owners' lists a worker keeps, by a hash of the owner's name */
#define NGX_HTTP_TENT_BLOCKS_SLOTS  64


static ngx_int_t ngx_http_tent_blocks_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static void ngx_http_tent_blocks_wake(ngx_http_request_t *r,
    ngx_http_tent_blocks_t *b, ngx_int_t status);
static void ngx_http_tent_blocks_load_cleanup(void *data);
static void ngx_http_tent_blocks_waiter_cleanup(void *data);
static void ngx_http_tent_blocks_release(void *data);
static ngx_int_t ngx_http_tent_blocks_cmp(ngx_str_t *a, ngx_str_t *b);
static ngx_int_t ngx_http_tent_block_create(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_block_follower(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *record);
static ngx_int_t ngx_http_tent_block_added(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_block_removed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_block_entity(ngx_http_request_t *r,
    ngx_str_t *param, ngx_str_t *entity);


static ngx_http_tent_blocks_t  *ngx_http_tent_blocks_slots[
                                                NGX_HTTP_TENT_BLOCKS_SLOTS];


/*
 * A list being read, by slot: requests of the same owner that need it
 * as of the same generation wait for that one scan instead of making
 * their own (a burst after each block write would make one each).
 * The reader's request holds the owner's name; its store operation
 * always answers (at worst after tent_store_timeout), and wakes them;
 * a reader nginx terminates wakes them as its pool goes.  A waiter
 * nginx terminates (its body being discarded, then a malformed chunk)
 * leaves the queue in its request's cleanup: its node is in its pool.
 */

typedef struct {
    ngx_http_request_t             *r;          /* the reader, or NULL */
    ngx_str_t                       owner;
    ngx_atomic_uint_t               generation;
    ngx_queue_t                     waiters;
} ngx_http_tent_blocks_load_t;

typedef struct {
    ngx_queue_t                     queue;
    ngx_http_request_t             *r;
    ngx_http_cleanup_t             *cleanup;
} ngx_http_tent_blocks_waiter_t;


static ngx_http_tent_blocks_load_t  ngx_http_tent_blocks_loads[
                                                NGX_HTTP_TENT_BLOCKS_SLOTS];


typedef struct {
    ngx_str_t                       entity;
    json_t                         *row;
    ngx_str_t                       value;
} ngx_http_tent_block_t;


/* the store's order: bytes, a prefix first */

static ngx_int_t
ngx_http_tent_blocks_cmp(ngx_str_t *a, ngx_str_t *b)
{
    ngx_int_t  rc;

    rc = ngx_memcmp(a->data, b->data, ngx_min(a->len, b->len));

    if (rc != 0) {
        return rc;
    }

    return (a->len < b->len) ? -1 : (a->len > b->len);
}


static void
ngx_http_tent_blocks_unref(ngx_http_tent_blocks_t *b)
{
    if (--b->refs == 0) {
        ngx_destroy_pool(b->pool);
    }
}


static void
ngx_http_tent_blocks_release(void *data)
{
    ngx_http_tent_blocks_unref(data);
}


static ngx_int_t
ngx_http_tent_blocks_hold(ngx_pool_t *pool, ngx_http_tent_blocks_t *b)
{
    ngx_pool_cleanup_t  *cln;

    cln = ngx_pool_cleanup_add(pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    b->refs++;
    cln->handler = ngx_http_tent_blocks_release;
    cln->data = b;

    return NGX_OK;
}


/* the worker's lists let go as the process exits (requests hold theirs) */

void
ngx_http_tent_blocks_exit(void)
{
    ngx_uint_t  i;

    for (i = 0; i < NGX_HTTP_TENT_BLOCKS_SLOTS; i++) {
        if (ngx_http_tent_blocks_slots[i]) {
            ngx_http_tent_blocks_unref(ngx_http_tent_blocks_slots[i]);
            ngx_http_tent_blocks_slots[i] = NULL;
        }
    }
}


static ngx_uint_t
ngx_http_tent_blocks_slot(ngx_str_t *owner)
{
    return ngx_crc32_short(owner->data, owner->len)
           % NGX_HTTP_TENT_BLOCKS_SLOTS;
}


ngx_http_tent_blocks_t *
ngx_http_tent_blocks_cached(ngx_pool_t *pool, ngx_str_t *owner)
{
    ngx_http_tent_blocks_t  *b;

    b = ngx_http_tent_blocks_slots[ngx_http_tent_blocks_slot(owner)];

    if (b == NULL
        || b->generation
           != ngx_http_tent_blocks_generation((ngx_cycle_t *) ngx_cycle)
        || b->owner.len != owner->len
        || ngx_memcmp(b->owner.data, owner->data, owner->len) != 0)
    {
        return NULL;
    }

    if (ngx_http_tent_blocks_hold(pool, b) != NGX_OK) {
        return NULL;
    }

    return b;
}


/* the generation is read before the scan: a write meanwhile makes it old */

ngx_int_t
ngx_http_tent_blocks_scan(ngx_http_tent_store_op_t *op, ngx_str_t *owner,
    ngx_atomic_uint_t *generation)
{
    ngx_str_t  start, end;

    *generation = ngx_http_tent_blocks_generation((ngx_cycle_t *) ngx_cycle);

    if (ngx_http_tent_key_range(op->pool, owner, NGX_HTTP_TENT_TABLE_BLOCK,
                                &start, &end)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* one row more than kept: a list past the cap is seen, not cut */

    return ngx_http_tent_store_scan(op, &start, &end,
                                    NGX_HTTP_TENT_BLOCKS_MAX + 1, 0);
}


ngx_http_tent_blocks_t *
ngx_http_tent_blocks_loaded(ngx_pool_t *pool, ngx_str_t *owner,
    ngx_atomic_uint_t generation, ngx_http_tent_store_op_t *op)
{
    ngx_int_t                rc;
    ngx_str_t                key, value, *e, *v;
    ngx_uint_t               slot, skip;
    ngx_array_t              entities, rows;
    ngx_pool_t              *own;
    ngx_http_tent_blocks_t  *b, **old;

    if (op->status != NGX_HTTP_TENT_STORE_OK
        && op->status != NGX_HTTP_TENT_STORE_NOT_FOUND)
    {
        return NULL;
    }

    own = ngx_create_pool(4096, ngx_cycle->log);
    if (own == NULL) {
        return NULL;
    }

    b = ngx_pcalloc(own, sizeof(ngx_http_tent_blocks_t));

    if (b == NULL
        || ngx_array_init(&entities, own, 16, sizeof(ngx_str_t)) != NGX_OK
        || ngx_array_init(&rows, own, 16, sizeof(ngx_str_t)) != NGX_OK)
    {
        goto failed;
    }

    b->pool = own;
    b->refs = 1;
    b->generation = generation;
    b->owner.len = owner->len;
    b->owner.data = ngx_pstrdup(own, owner);

    if (b->owner.data == NULL) {
        goto failed;
    }

    skip = owner->len + 2;

    while ((rc = ngx_http_tent_store_next(op, &key, &value)) == NGX_OK) {
        if (key.len <= skip) {
            continue;
        }

        e = ngx_array_push(&entities);
        v = ngx_array_push(&rows);

        if (e == NULL || v == NULL) {
            goto failed;
        }

        e->len = key.len - skip;
        e->data = ngx_pnalloc(own, e->len);
        v->len = value.len;
        v->data = ngx_pnalloc(own, value.len + 1);

        if (e->data == NULL || v->data == NULL) {
            goto failed;
        }

        ngx_memcpy(e->data, key.data + skip, e->len);
        ngx_memcpy(v->data, value.data, value.len);
    }

    if (rc == NGX_ERROR) {
        goto failed;
    }

    if (entities.nelts > NGX_HTTP_TENT_BLOCKS_MAX) {
        ngx_log_error(NGX_LOG_ERR, op->log, 0,
                      "tent blocks: \"%V\" holds more than %d blocks: "
                      "those past them are not read",
                      owner, NGX_HTTP_TENT_BLOCKS_MAX);
    }

    b->n = entities.nelts;
    b->entities = entities.elts;
    b->rows = rows.elts;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, op->log, 0,
                   "tent blocks: %ui of \"%V\" read", b->n, owner);

    /* the worker's slot holds one reference, the caller's pool another */

    slot = ngx_http_tent_blocks_slot(owner);
    old = &ngx_http_tent_blocks_slots[slot];

    if (*old) {
        ngx_http_tent_blocks_unref(*old);
    }

    *old = b;

    if (ngx_http_tent_blocks_hold(pool, b) != NGX_OK) {
        return NULL;
    }

    return b;

failed:

    ngx_destroy_pool(own);
    return NULL;
}


ngx_uint_t
ngx_http_tent_blocks_has(ngx_http_tent_blocks_t *b, ngx_str_t *entity)
{
    ngx_int_t   rc;
    ngx_uint_t  lo, hi, mid;

    if (b == NULL || entity == NULL || entity->len == 0) {
        return 0;
    }

    lo = 0;
    hi = b->n;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        rc = ngx_http_tent_blocks_cmp(&b->entities[mid], entity);

        if (rc == 0) {
            return 1;
        }

        if (rc < 0) {
            lo = mid + 1;

        } else {
            hi = mid;
        }
    }

    return 0;
}


/* the list of the request's entity, then the route */

ngx_int_t
ngx_http_tent_blocks_request(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_route_pt next)
{
    ngx_http_tent_store_op_t  *op;

    ngx_int_t                       rc;
    ngx_pool_cleanup_t             *cln;
    ngx_http_cleanup_t             *hcln;
    ngx_http_tent_blocks_load_t    *load;
    ngx_http_tent_blocks_waiter_t  *w;

    ctx->blocks = ngx_http_tent_blocks_cached(r->pool, &ctx->entity);

    if (ctx->blocks) {
        return next(r, ctx);
    }

    ctx->blocks_next = (void *) next;

    load = &ngx_http_tent_blocks_loads[
                                ngx_http_tent_blocks_slot(&ctx->entity)];

    /* the same owner's list, read as of this generation: wait for it */

    if (load->r
        && load->generation
           == ngx_http_tent_blocks_generation((ngx_cycle_t *) ngx_cycle)
        && load->owner.len == ctx->entity.len
        && ngx_memcmp(load->owner.data, ctx->entity.data,
                      ctx->entity.len) == 0)
    {
        w = ngx_palloc(r->pool, sizeof(ngx_http_tent_blocks_waiter_t));
        hcln = ngx_http_cleanup_add(r, 0);

        if (w == NULL || hcln == NULL) {
            return ngx_http_tent_internal_error(r, "waiting for the blocks");
        }

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent blocks: waiting for the list of \"%V\" "
                       "being read", &ctx->entity);

        w->r = r;
        w->cleanup = hcln;
        hcln->handler = ngx_http_tent_blocks_waiter_cleanup;
        hcln->data = w;

        ngx_queue_insert_tail(&load->waiters, &w->queue);
        r->main->count++;

        return NGX_DONE;
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_blocks_scan(op, &ctx->entity, &ctx->blocks_gen)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the blocks' scan");
    }

    /* a slot another owner's read holds is left to it */

    if (load->r == NULL) {
        cln = ngx_pool_cleanup_add(r->pool, 0);
        if (cln == NULL) {
            return ngx_http_tent_internal_error(r, "reading the blocks");
        }

        cln->handler = ngx_http_tent_blocks_load_cleanup;
        cln->data = r;

        load->r = r;
        load->owner = ctx->entity;
        load->generation = ctx->blocks_gen;
        ngx_queue_init(&load->waiters);
    }

    rc = ngx_http_tent_store_submit_request(r, op, ngx_http_tent_blocks_read);

    if (rc != NGX_DONE) {
        ngx_http_tent_blocks_wake(r, NULL, NGX_HTTP_SERVICE_UNAVAILABLE);
    }

    return rc;
}


/* the reader gone without its answer (never, but for a fenced reply) */

static void
ngx_http_tent_blocks_load_cleanup(void *data)
{
    ngx_http_tent_blocks_wake(data, NULL, NGX_HTTP_SERVICE_UNAVAILABLE);
}


/*
 * nginx terminates a waiter (its pool goes next): out of the queue, the
 * reader's or wake()'s own, whichever holds it now
 */

static void
ngx_http_tent_blocks_waiter_cleanup(void *data)
{
    ngx_http_tent_blocks_waiter_t *w = data;

    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, w->r->connection->log, 0,
                   "tent blocks: a waiter ended before the list came");

    ngx_queue_remove(&w->queue);
    w->cleanup = NULL;
}


/* the read is answered: each request that waited for it goes on */

static void
ngx_http_tent_blocks_wake(ngx_http_request_t *r, ngx_http_tent_blocks_t *b,
    ngx_int_t status)
{
    ngx_int_t                       rc;
    ngx_queue_t                     waiters, *q;
    ngx_connection_t               *c;
    ngx_http_tent_ctx_t            *wctx;
    ngx_http_tent_blocks_load_t    *load;
    ngx_http_tent_blocks_waiter_t  *w;

    for (load = ngx_http_tent_blocks_loads;
         load < ngx_http_tent_blocks_loads + NGX_HTTP_TENT_BLOCKS_SLOTS;
         load++)
    {
        if (load->r == r) {
            break;
        }
    }

    if (load == ngx_http_tent_blocks_loads + NGX_HTTP_TENT_BLOCKS_SLOTS) {
        return;
    }

    /* the slot is free again before any waiter runs (it may read) */

    load->r = NULL;
    ngx_queue_init(&waiters);
    ngx_queue_add(&waiters, &load->waiters);
    ngx_queue_init(&load->waiters);

    while (!ngx_queue_empty(&waiters)) {
        q = ngx_queue_head(&waiters);
        ngx_queue_remove(q);

        w = ngx_queue_data(q, ngx_http_tent_blocks_waiter_t, queue);
        w->cleanup->handler = NULL;
        w->cleanup = NULL;

        c = w->r->connection;
        wctx = ngx_http_tent_get_ctx(w->r);

        if (b == NULL) {
            rc = ngx_http_tent_send_error(w->r, status, NULL);

        } else if (ngx_http_tent_blocks_hold(w->r->pool, b) != NGX_OK) {
            rc = ngx_http_tent_internal_error(w->r, "holding the blocks");

        } else {
            wctx->blocks = b;
            rc = ((ngx_http_tent_route_pt) wctx->blocks_next)(w->r, wctx);
        }

        ngx_http_finalize_request(w->r, rc);
        ngx_http_run_posted_requests(c);
    }
}


static ngx_int_t
ngx_http_tent_blocks_read(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    ngx_int_t             status;
    ngx_http_tent_ctx_t  *ctx;

    /* not ngx_http_tent_store_request_ctx(): a failure wakes the waiters */
    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        ngx_http_tent_blocks_wake(r, NULL, status);
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);

    ctx->blocks = ngx_http_tent_blocks_loaded(r->pool, &ctx->entity,
                                              ctx->blocks_gen, op);

    ngx_http_tent_blocks_wake(r, ctx->blocks,
                              NGX_HTTP_INTERNAL_SERVER_ERROR);

    if (ctx->blocks == NULL) {
        return ngx_http_tent_internal_error(r, "reading the blocks");
    }

    return ((ngx_http_tent_route_pt) ctx->blocks_next)(r, ctx);
}


/* an entity of a path segment, url-encoded, in its one spelling */

static ngx_int_t
ngx_http_tent_block_entity(ngx_http_request_t *r, ngx_str_t *param,
    ngx_str_t *entity)
{
    u_char     *dst, *src;
    ngx_str_t   raw;

    raw.data = ngx_pnalloc(r->pool, param->len);
    if (raw.data == NULL) {
        return NGX_ERROR;
    }

    dst = raw.data;
    src = param->data;
    ngx_unescape_uri(&dst, &src, param->len, 0);
    raw.len = dst - raw.data;

    return ngx_http_tent_entity_canonical(r->pool, &raw, entity);
}


/* POST /blocks {"entity": URL} */

ngx_int_t
ngx_http_tent_blocks_post(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_BLOCKS)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    return ngx_http_tent_read_json(r, ctx, ngx_http_tent_block_create);
}


static ngx_int_t
ngx_http_tent_block_create(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_int_t               rc;
    ngx_str_t               entity;
    ngx_http_tent_block_t  *bl;

    bl = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_block_t));
    if (bl == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the block");
    }

    rc = NGX_DECLINED;

    if (ngx_http_tent_json_str(ctx->body, "entity", &entity) == NGX_OK) {
        rc = ngx_http_tent_entity_canonical(r->pool, &entity, &bl->entity);
    }

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "spelling the entity");
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_send_error(r, 422, "Invalid entity");
    }

    if (bl->entity.len > NGX_HTTP_TENT_BLOCK_ENTITY_MAX) {
        return ngx_http_tent_send_error(r, 422,
                   "Entity URL too long (512 bytes at most)");
    }

    if (ngx_http_tent_entity_eq(&bl->entity, &ctx->entity)) {
        return ngx_http_tent_send_error(r, 422, "Can not block self");
    }

    if (ngx_http_tent_blocks_has(ctx->blocks, &bl->entity)) {
        return ngx_http_tent_send_error(r, 409, "Already blocked");
    }

    if (((ngx_http_tent_blocks_t *) ctx->blocks)->n
        >= NGX_HTTP_TENT_BLOCKS_MAX)
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Too many blocks");
    }

    bl->row = ngx_http_tent_json_own(r->pool,
                  json_pack("{s:o, s:I}",
                            "entity", ngx_http_tent_json_string(&bl->entity),
                            "created_at",
                            (json_int_t) ngx_time()));

    if (bl->row == NULL
        || ngx_http_tent_json_dump(r->pool, bl->row, &bl->value) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the block");
    }

    /* its follower relationship ends in the same batch */

    ctx->state = bl;

    return ngx_http_tent_relation_load_entity(r, ctx,
                                              &ngx_http_tent_followers_rel,
                                              &bl->entity,
                                              ngx_http_tent_block_follower);
}


static ngx_int_t
ngx_http_tent_block_follower(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    json_t *record)
{
    ngx_str_t                  key, id, entity, key_id, fkey, ekey, ckey;
    ngx_http_tent_block_t     *bl;
    ngx_http_tent_store_op_t  *op;

    bl = ctx->state;

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_BLOCK,
                          &bl->entity, &key)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the block's key");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    /* two blocks of one entity at once write one row twice: one row */

    if (op == NULL
        || ngx_http_tent_store_write(op, 1) != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &bl->value) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "adding the block to a batch");
    }

    if (record
        && ngx_http_tent_json_str(record, "id", &id) == NGX_OK
        && ngx_http_tent_json_str(record, "entity", &entity) == NGX_OK
        && ngx_http_tent_json_str(record, "mac_key_id", &key_id) == NGX_OK)
    {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent blocks: follower \"%V\" of \"%V\" removed",
                       &id, &entity);

        if (ngx_http_tent_key(r->pool, &ctx->entity,
                              NGX_HTTP_TENT_TABLE_FOLLOWER, &id, &fkey)
            != NGX_OK
            || ngx_http_tent_key(r->pool, &ctx->entity,
                                 NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY,
                                 &entity, &ekey)
               != NGX_OK
            || ngx_http_tent_key(r->pool, &ctx->entity,
                                 NGX_HTTP_TENT_TABLE_CREDENTIAL, &key_id,
                                 &ckey)
               != NGX_OK
            || ngx_http_tent_store_write_del(op, &fkey) != NGX_OK
            || ngx_http_tent_store_write_del(op, &ekey) != NGX_OK
            || ngx_http_tent_store_write_del(op, &ckey) != NGX_OK
            || ngx_http_tent_relation_post(r, ctx, op, "follower", record,
                                           "delete")
               != NGX_OK)
        {
            return ngx_http_tent_internal_error(r,
                                       "adding the follower's removal");
        }
    }

    ctx->state = bl;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_block_added);
}


static ngx_int_t
ngx_http_tent_block_added(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    ngx_int_t               rc;
    ngx_http_tent_ctx_t    *ctx;
    ngx_http_tent_block_t  *bl;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    bl = ctx->state;

    ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                  "tent blocks: \"%V\" blocked \"%V\"", &ctx->entity,
                  &bl->entity);

    return ngx_http_tent_send_json(r, NGX_HTTP_CREATED, bl->row);
}


/* GET /blocks?limit=N&after=<entity>: from the worker's list, in order */

ngx_int_t
ngx_http_tent_blocks_list(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                    *list, *row;
    u_char                    *p;
    uintptr_t                  esc;
    ngx_str_t                  v, after;
    ngx_int_t                  limit;
    ngx_uint_t                 i, n;
    ngx_table_elt_t           *h;
    ngx_http_tent_blocks_t    *b;
    ngx_http_tent_srv_conf_t  *scf;

    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_BLOCKS)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    b = ctx->blocks;
    limit = 50;

    if (ngx_http_arg(r, (u_char *) "limit", 5, &v) == NGX_OK) {
        limit = ngx_atoi(v.data, v.len);

        if (limit <= 0) {
            return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                            "Invalid limit");
        }

        limit = ngx_min(limit, 200);
    }

    i = 0;

    if (ngx_http_arg(r, (u_char *) "after", 5, &v) == NGX_OK) {
        if (v.len == 0 || v.len > 3 * NGX_HTTP_TENT_ENTITY_MAX
            || ngx_http_tent_block_entity(r, &v, &after) != NGX_OK)
        {
            return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                            "Invalid after");
        }

        while (i < b->n
               && ngx_http_tent_blocks_cmp(&b->entities[i], &after) <= 0)
        {
            i++;
        }
    }

    list = ngx_http_tent_json_own(r->pool, json_array());
    if (list == NULL) {
        return ngx_http_tent_internal_error(r, "building the blocks' list");
    }

    for (n = 0; i < b->n && n < (ngx_uint_t) limit; i++, n++) {
        row = ngx_http_tent_json_parse(&b->rows[i], r->connection->log);
        if (row == NULL || json_array_append_new(list, row) != 0) {
            return ngx_http_tent_internal_error(r, "listing the blocks");
        }
    }

    if (i < b->n && n > 0) {
        scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

        v = b->entities[i - 1];
        esc = ngx_escape_uri(NULL, v.data, v.len, NGX_ESCAPE_ARGS);

        h = ngx_list_push(&r->headers_out.headers);
        p = ngx_pnalloc(r->pool, scf->api_root.len + v.len + 2 * esc
                                 + sizeof("<" "/blocks?after=" "&limit=>; "
                                          "rel=\"next\"")
                                 + NGX_INT_T_LEN);
        if (h == NULL || p == NULL) {
            return ngx_http_tent_internal_error(r, "adding the Link header");
        }

        h->hash = 1;
        ngx_str_set(&h->key, "Link");
        h->value.data = p;
        p = ngx_sprintf(p, "<%V/blocks?after=", &scf->api_root);
        p = (u_char *) ngx_escape_uri(p, v.data, v.len, NGX_ESCAPE_ARGS);
        p = ngx_sprintf(p, "&limit=%i>; rel=\"next\"", limit);
        h->value.len = p - h->value.data;
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, list);
}


/* DELETE /blocks/:entity (url-encoded) */

ngx_int_t
ngx_http_tent_block_delete(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_int_t                  rc;
    ngx_str_t                  key, *entity;
    ngx_http_tent_store_op_t  *op;

    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_BLOCKS)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    entity = ngx_palloc(r->pool, sizeof(ngx_str_t));
    if (entity == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the entity");
    }

    rc = ngx_http_tent_block_entity(r, &ctx->params[0], entity);

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "spelling the entity");
    }

    if (rc != NGX_OK || !ngx_http_tent_blocks_has(ctx->blocks, entity)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_BLOCK,
                             entity, &key)
           != NGX_OK
        || ngx_http_tent_store_write(op, 1) != NGX_OK
        || ngx_http_tent_store_write_del(op, &key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the unblock");
    }

    ctx->state = entity;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_block_removed);
}


static ngx_int_t
ngx_http_tent_block_removed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t               *out;
    ngx_int_t             rc;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }


    ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                  "tent blocks: \"%V\" unblocked \"%V\"", &ctx->entity,
                  (ngx_str_t *) ctx->state);

    out = ngx_http_tent_json_own(r->pool, json_object());
    if (out == NULL) {
        return ngx_http_tent_internal_error(r, "building the answer");
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
}
