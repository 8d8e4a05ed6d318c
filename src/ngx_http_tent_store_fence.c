
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The registry fence (docs/store.md, "The registry fence"): the store
 * owner executes every write, so it is where "this entity is still the
 * one the request looked up" can be checked atomically with the write.
 *
 * The owner keeps, in memory, each registry entity's state and
 * incarnation (its row's "incarnation", or "created_at" for rows made
 * before it), loaded by a scan of "0x00 'R'" when the database opens and
 * updated by the owner itself when a write of a registry row commits.
 * A write (a batch or a compare-and-set) may carry a fence: pairs
 * (entity, incarnation) appended behind its request, flag
 * NGX_HTTP_TENT_OP_FENCE.  The owner runs it only if each entity is
 * active at that incarnation (0: at any); else it answers
 * NGX_HTTP_TENT_STORE_FENCED, "disabled" or "gone", and writes nothing.
 * Whatever the fence, no write may put a row into an entity being
 * deleted or deleted (the engine's settles, a delete's leftovers).
 *
 * A registry write runs alone: it waits until the fenced writes running
 * have ended, and the writes that come meanwhile wait (in the owner's
 * waiting queue) until it has committed and its new state is known.
 * So a write is either before the operator's change (and a delete's
 * sweep, which follows it, finds its rows) or after it, checked
 * against it.
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_module.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store_private.h"


/* registry entities of one owner: at most this many scanned at start */
#define NGX_HTTP_TENT_FENCE_SCAN  1000000

/* a pair's length: its top bit says "rows only" (fence_rows()) */
#define NGX_HTTP_TENT_FENCE_LEN   0x7fffffff


typedef struct {
    ngx_str_node_t                  sn;
    ngx_uint_t                      state;       /* NGX_HTTP_TENT_REG_* */
    uint64_t                        incarnation;
} ngx_http_tent_fence_entry_t;


struct ngx_http_tent_fence_s {
    ngx_pool_t                     *pool;        /* the entries */
    ngx_rbtree_t                    tree;
    ngx_rbtree_node_t               sentinel;
    ngx_uint_t                      n;

    ngx_uint_t                      inflight;    /* writes running */
    ngx_uint_t                      closing;     /* registry writes wait */
    unsigned                        registry:1;  /* one runs */
    unsigned                        loaded:1;

    /* the scan at open, from the pool thread */
    u_char                         *scan;
    size_t                          scan_len;
};


static ngx_int_t ngx_http_tent_fence_pair(ngx_http_tent_store_op_t *op,
    ngx_str_t *entity, uint64_t incarnation, ngx_uint_t rows);
static ngx_int_t ngx_http_tent_fence_reset(ngx_http_tent_fence_t *fence);
static ngx_http_tent_fence_entry_t *ngx_http_tent_fence_find(
    ngx_http_tent_fence_t *fence, ngx_str_t *entity);
static void ngx_http_tent_fence_set(ngx_http_tent_fence_t *fence,
    ngx_str_t *entity, ngx_str_t *value, ngx_log_t *log);
static ngx_int_t ngx_http_tent_fence_trailer(ngx_http_tent_store_op_t *op,
    ngx_str_t *pairs);
static const char *ngx_http_tent_fence_check(ngx_http_tent_fence_t *fence,
    ngx_str_t *pairs, ngx_http_tent_ldb_req_t *rq);
static const char *ngx_http_tent_fence_key(ngx_http_tent_fence_t *fence,
    ngx_str_t *pairs, ngx_str_t *key);
static ngx_uint_t ngx_http_tent_fence_stale(ngx_http_tent_fence_t *fence,
    ngx_str_t *pairs, ngx_str_t *entity);
static ngx_int_t ngx_http_tent_fence_drop(ngx_http_tent_fence_t *fence,
    ngx_http_tent_store_op_t *op, ngx_http_tent_ldb_req_t *rq,
    ngx_str_t *pairs);
static ngx_uint_t ngx_http_tent_fence_registry_op(
    ngx_http_tent_ldb_req_t *rq);
static void ngx_http_tent_fence_apply(ngx_http_tent_fence_t *fence,
    ngx_http_tent_store_op_t *op, ngx_log_t *log);
static void ngx_http_tent_fence_park(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op);
static void ngx_http_tent_fence_release(ngx_http_tent_store_t *store);
static uint32_t ngx_http_tent_fence_u32(u_char *p);


/* a request's side: the fence of an operation, appended to its bytes */

ngx_int_t
ngx_http_tent_store_fence(ngx_http_tent_store_op_t *op, ngx_str_t *entity,
    uint64_t incarnation)
{
    return ngx_http_tent_fence_pair(op, entity, incarnation, 0);
}


/*
 * A pair that refuses nothing: the batch's puts into "entity" are left
 * out unless it is still at that incarnation (the delivery engine's
 * writes of many entities' jobs: one entity deleted, or deleted and made
 * anew, must not fail the others', nor plant the old one's rows, its
 * jobs put back for a retry, in the new one).
 */

ngx_int_t
ngx_http_tent_store_fence_rows(ngx_http_tent_store_op_t *op,
    ngx_str_t *entity, uint64_t incarnation)
{
    if (incarnation == 0) {
        return NGX_OK;
    }

    return ngx_http_tent_fence_pair(op, entity, incarnation, 1);
}


static ngx_int_t
ngx_http_tent_fence_pair(ngx_http_tent_store_op_t *op, ngx_str_t *entity,
    uint64_t incarnation, ngx_uint_t rows)
{
    size_t                          size, need;
    u_char                         *p;
    uint32_t                        old;
    ngx_uint_t                      i;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (sop->failed_encoding || sop->req_len < 2 || entity->len == 0
        || entity->len > NGX_HTTP_TENT_FENCE_LEN)
    {
        return NGX_ERROR;
    }

    /* reads plant nothing */

    if (sop->req[0] != NGX_HTTP_TENT_OP_WRITE
        && sop->req[0] != NGX_HTTP_TENT_OP_CAS)
    {
        return NGX_OK;
    }

    old = 0;

    if (sop->req[1] & NGX_HTTP_TENT_OP_FENCE) {
        /* another pair: the trailer's length is rewritten at its end */
        old = ngx_http_tent_fence_u32(sop->req + sop->req_len - 4);
        sop->req_len -= 4;
    }

    need = 4 + entity->len + 8 + 4;

    if (sop->req_len + need > sop->req_size) {
        size = ngx_max(sop->req_size * 2, sop->req_len + need);

        p = ngx_palloc(op->pool, size);
        if (p == NULL) {
            sop->failed_encoding = 1;
            return NGX_ERROR;
        }

        ngx_memcpy(p, sop->req, sop->req_len);
        sop->req = p;
        sop->req_size = size;
    }

    p = sop->req + sop->req_len;

    p = ngx_cpymem(p, "\0\0\0\0", 4);
    p[-4] = (u_char) ((entity->len >> 24) | (rows ? 0x80 : 0));
    p[-3] = (u_char) (entity->len >> 16);
    p[-2] = (u_char) (entity->len >> 8);
    p[-1] = (u_char) entity->len;
    p = ngx_cpymem(p, entity->data, entity->len);

    for (i = 0; i < 8; i++) {
        *p++ = (u_char) (incarnation >> (56 - 8 * i));
    }

    old += 4 + entity->len + 8;

    *p++ = (u_char) (old >> 24);
    *p++ = (u_char) (old >> 16);
    *p++ = (u_char) (old >> 8);
    *p++ = (u_char) old;

    sop->req_len += need;
    sop->req[1] |= NGX_HTTP_TENT_OP_FENCE;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, op->log, 0,
                   "tent store: fenced to \"%V\" at %uL", entity,
                   incarnation);

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_fence_init(ngx_http_tent_store_t *store)
{
    store->fence = ngx_pcalloc(ngx_cycle->pool,
                               sizeof(ngx_http_tent_fence_t));
    if (store->fence == NULL) {
        return NGX_ERROR;
    }

    return ngx_http_tent_fence_reset(store->fence);
}


/*
 * The owner's exit: the table's pool, and a scan read on the open's
 * thread whose answer the event loop never took (an exit right after
 * the open).
 */

void
ngx_http_tent_fence_exit(ngx_http_tent_store_t *store)
{
    ngx_http_tent_fence_t  *fence;

    fence = store->fence;

    if (fence == NULL) {
        return;
    }

    if (fence->scan) {
        ngx_free(fence->scan);
        fence->scan = NULL;
    }

    if (fence->pool) {
        ngx_destroy_pool(fence->pool);
        fence->pool = NULL;
    }

    store->fence = NULL;
}


static ngx_int_t
ngx_http_tent_fence_reset(ngx_http_tent_fence_t *fence)
{
    if (fence->pool) {
        ngx_destroy_pool(fence->pool);
    }

    fence->pool = ngx_create_pool(4096, ngx_cycle->log);
    if (fence->pool == NULL) {
        return NGX_ERROR;
    }

    ngx_rbtree_init(&fence->tree, &fence->sentinel,
                    ngx_str_rbtree_insert_value);
    fence->n = 0;

    return NGX_OK;
}


/* on the pool thread that opened the database: the registry's rows */

void
ngx_http_tent_fence_load_thread(ngx_http_tent_store_t *store)
{
    u_char                  req[2 + 4 + 2 + 4 + 2 + 4 + 1], *p;
    ngx_http_tent_fence_t  *fence;

    fence = store->fence;

    if (fence == NULL || fence->scan) {
        return;
    }

    /* a scan of [0x00 'R', 0x00 'S'), as ngx_http_tent_store_scan() */

    p = req;
    *p++ = NGX_HTTP_TENT_OP_SCAN;
    *p++ = 0;
    p = ngx_cpymem(p, "\0\0\0\2\0R", 6);
    p = ngx_cpymem(p, "\0\0\0\2\0S", 6);
    *p++ = (u_char) (NGX_HTTP_TENT_FENCE_SCAN >> 24);
    *p++ = (u_char) (NGX_HTTP_TENT_FENCE_SCAN >> 16);
    *p++ = (u_char) (NGX_HTTP_TENT_FENCE_SCAN >> 8);
    *p++ = (u_char) NGX_HTTP_TENT_FENCE_SCAN;
    *p++ = 0;

    if (ngx_http_tent_ldb_exec(store->ldb, req, p - req, &fence->scan,
                               &fence->scan_len)
        != NGX_OK)
    {
        fence->scan = NULL;
    }
}


/* back on the event loop, the database open: the table from the scan */

void
ngx_http_tent_fence_loaded(ngx_http_tent_store_t *store)
{
    u_char                 *p, *last;
    uint32_t                n;
    ngx_str_t               key, value, entity;
    ngx_http_tent_fence_t  *fence;

    fence = store->fence;

    if (fence == NULL) {
        return;
    }

    fence->loaded = 0;

    if (fence->scan == NULL || fence->scan_len < 1
        || fence->scan[0] != NGX_HTTP_TENT_STORE_OK
        || ngx_http_tent_fence_reset(fence) != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ALERT, store->log, 0,
                      "tent store: reading the entity registry failed: "
                      "fenced writes are refused");
        goto done;
    }

    p = fence->scan + 1;
    last = fence->scan + fence->scan_len;

    while (p < last) {
        if (last - p < 4 || (n = ngx_http_tent_fence_u32(p),
                             (size_t) (last - p - 4) < n))
        {
            goto malformed;
        }

        key.len = n;
        key.data = p + 4;
        p += 4 + n;

        if (last - p < 4 || (n = ngx_http_tent_fence_u32(p),
                             (size_t) (last - p - 4) < n))
        {
            goto malformed;
        }

        value.len = n;
        value.data = p + 4;
        p += 4 + n;

        if (ngx_http_tent_registry_parse(&key, &entity) == NGX_OK) {
            ngx_http_tent_fence_set(fence, &entity, &value, store->log);
        }
    }

    fence->loaded = 1;

    if (fence->n) {
        ngx_log_error(NGX_LOG_NOTICE, store->log, 0,
                      "tent store: %ui entities of the registry fenced",
                      fence->n);
    }

    goto done;

malformed:

    ngx_log_error(NGX_LOG_ALERT, store->log, 0,
                  "tent store: a malformed registry scan: fenced writes "
                  "are refused");

done:

    if (fence->scan) {
        ngx_free(fence->scan);
        fence->scan = NULL;
    }
}


static ngx_http_tent_fence_entry_t *
ngx_http_tent_fence_find(ngx_http_tent_fence_t *fence, ngx_str_t *entity)
{
    return (ngx_http_tent_fence_entry_t *)
           ngx_str_rbtree_lookup(&fence->tree, entity,
                                 ngx_crc32_long(entity->data, entity->len));
}


/* a registry row's value (NULL: removed) into the table */

static void
ngx_http_tent_fence_set(ngx_http_tent_fence_t *fence, ngx_str_t *entity,
    ngx_str_t *value, ngx_log_t *log)
{
    json_t                       *row, *v;
    uint64_t                      incarnation;
    ngx_uint_t                    state;
    const char                   *s;
    ngx_http_tent_fence_entry_t  *e;

    state = NGX_HTTP_TENT_REG_ABSENT;
    incarnation = 0;

    row = value ? json_loadb((char *) value->data, value->len, 0, NULL)
                : NULL;

    if (row) {
        s = json_string_value(json_object_get(row, "state"));

        if (s && ngx_strcmp(s, "active") == 0) {
            state = NGX_HTTP_TENT_REG_ACTIVE;

        } else if (s && ngx_strcmp(s, "disabled") == 0) {
            state = NGX_HTTP_TENT_REG_DISABLED;
        }

        v = json_object_get(row, "incarnation");
        if (!json_is_integer(v)) {
            v = json_object_get(row, "created_at");
        }

        if (json_is_integer(v) && json_integer_value(v) > 0) {
            incarnation = (uint64_t) json_integer_value(v);
        }

        json_decref(row);
    }

    e = ngx_http_tent_fence_find(fence, entity);

    if (e == NULL) {
        e = ngx_palloc(fence->pool,
                       sizeof(ngx_http_tent_fence_entry_t) + entity->len);
        if (e == NULL) {
            return;
        }

        e->sn.str.len = entity->len;
        e->sn.str.data = (u_char *) (e + 1);
        ngx_memcpy(e->sn.str.data, entity->data, entity->len);
        e->sn.node.key = ngx_crc32_long(entity->data, entity->len);

        ngx_rbtree_insert(&fence->tree, &e->sn.node);
        fence->n++;
    }

    /* a row removed stays as gone: writes into the name stay refused */

    e->state = state;
    e->incarnation = incarnation;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, log, 0,
                   "tent store fence: \"%V\" is %ui at %uL", entity, state,
                   incarnation);
}


/*
 * Before the owner runs an operation.  NGX_OK: run it (its fence taken
 * off its bytes); NGX_DECLINED: it waits for a registry write, or was
 * refused (answered later, never from within submit).
 */

ngx_int_t
ngx_http_tent_fence_admit(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op)
{
    ngx_str_t                       pairs;
    const char                     *refused;
    ngx_http_tent_fence_t          *fence;
    ngx_http_tent_ldb_req_t         rq;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);
    fence = store->fence;

    if (fence == NULL || sop->req_len < 2
        || (sop->req[0] != NGX_HTTP_TENT_OP_WRITE
            && sop->req[0] != NGX_HTTP_TENT_OP_CAS))
    {
        return NGX_OK;
    }

    ngx_str_null(&pairs);

    if (ngx_http_tent_fence_trailer(op, &pairs) != NGX_OK) {
        ngx_http_tent_store_fail_later(op, NGX_HTTP_TENT_STORE_ERROR,
                                       "malformed fence");
        return NGX_DECLINED;
    }

    /* malformed: the executor answers so, it writes nothing */

    if (ngx_http_tent_ldb_decode(sop->req, sop->req_len - (pairs.data
                                     ? pairs.len + 4 : 0), &rq)
        != NULL)
    {
        goto run;
    }

    if (ngx_http_tent_fence_registry_op(&rq)) {
        if (fence->registry || fence->inflight) {
            fence->closing++;
            ngx_http_tent_fence_park(store, op);
            return NGX_DECLINED;
        }

        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, store->log, 0,
                       "tent store fence: a registry write runs");

        fence->registry = 1;
        sop->fence_registry = 1;
        goto run;
    }

    /* a registry write that waited timed out: nothing holds the others */

    if (fence->closing && !fence->registry && fence->inflight == 0) {
        fence->closing = 0;
    }

    if (fence->registry || fence->closing) {
        ngx_http_tent_fence_park(store, op);
        return NGX_DECLINED;
    }

    refused = ngx_http_tent_fence_check(fence, &pairs, &rq);

    if (refused) {
        ngx_log_error(NGX_LOG_INFO, store->log, 0,
                      "tent store: a write refused by the registry fence: "
                      "the entity is %s", refused);

        ngx_http_tent_store_fail_later(op, NGX_HTTP_TENT_STORE_FENCED,
                                       refused);
        return NGX_DECLINED;
    }

    if ((fence->n || pairs.data) && rq.op == NGX_HTTP_TENT_OP_WRITE
        && ngx_http_tent_fence_drop(fence, op, &rq, &pairs) != NGX_OK)
    {
        ngx_http_tent_store_fail_later(op, NGX_HTTP_TENT_STORE_ERROR,
                                       "out of memory");
        return NGX_DECLINED;
    }

    fence->inflight++;
    sop->fence_counted = 1;

run:

    /* the executor sees the operation as it was before its fence */

    if (pairs.data) {
        sop->req_len -= pairs.len + 4;
        sop->req[1] &= ~NGX_HTTP_TENT_OP_FENCE;
    }

    return NGX_OK;
}


/* the pairs behind an operation's bytes, if it has any */

static ngx_int_t
ngx_http_tent_fence_trailer(ngx_http_tent_store_op_t *op, ngx_str_t *pairs)
{
    uint32_t                        n;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (!(sop->req[1] & NGX_HTTP_TENT_OP_FENCE)) {
        return NGX_OK;
    }

    if (sop->req_len < 2 + 4) {
        return NGX_ERROR;
    }

    n = ngx_http_tent_fence_u32(sop->req + sop->req_len - 4);

    if (n > sop->req_len - 2 - 4) {
        return NGX_ERROR;
    }

    pairs->len = n;
    pairs->data = sop->req + sop->req_len - 4 - n;

    return NGX_OK;
}


/* NULL: the write may run; else why not ("disabled", "gone") */

static const char *
ngx_http_tent_fence_check(ngx_http_tent_fence_t *fence, ngx_str_t *pairs,
    ngx_http_tent_ldb_req_t *rq)
{
    u_char                       *p, *last;
    uint32_t                      n, i;
    uint64_t                      incarnation;
    ngx_str_t                     entity, key, value;
    ngx_uint_t                    kind, rows;
    const char                   *refused;
    ngx_http_tent_in_t            in;
    ngx_http_tent_fence_entry_t  *e;

    p = pairs->data;
    last = p ? p + pairs->len : NULL;

    while (p && p < last) {
        if (last - p < 4
            || (n = ngx_http_tent_fence_u32(p) & NGX_HTTP_TENT_FENCE_LEN,
                (size_t) (last - p - 4) < (size_t) n + 8))
        {
            return "gone";
        }

        rows = p[0] & 0x80;
        entity.len = n;
        entity.data = p + 4;
        p += 4 + n;

        incarnation = 0;

        for (i = 0; i < 8; i++) {
            incarnation = (incarnation << 8) | *p++;
        }

        if (rows) {
            /* only its rows left out (ngx_http_tent_fence_key()) */
            continue;
        }

        if (!fence->loaded) {
            return "unknown";
        }

        e = ngx_http_tent_fence_find(fence, &entity);

        if (e == NULL) {
            /* 0: only if it is a registry entity; else it must be one */
            if (incarnation == 0) {
                continue;
            }

            return "gone";
        }

        if (e->state == NGX_HTTP_TENT_REG_DISABLED) {
            return "disabled";
        }

        if (e->state != NGX_HTTP_TENT_REG_ACTIVE
            || (incarnation && e->incarnation != incarnation))
        {
            return "gone";
        }
    }

    /*
     * Whatever the fence: no row into a name being or already deleted.
     * A compare-and-set is refused; a batch loses those rows only
     * (ngx_http_tent_fence_drop()): the engine's settlements of many
     * entities in one batch, one of them deleted meanwhile, must not make
     * the others' deliveries run again.
     */

    if (fence->n == 0 || rq->op != NGX_HTTP_TENT_OP_CAS) {
        return NULL;
    }

    refused = ngx_http_tent_fence_key(fence, pairs, &rq->key);
    if (refused) {
        return refused;
    }

    in = rq->items;

    for (i = 0; i < rq->n; i++) {
        if (ngx_http_tent_in_entry(&in, &kind, &key, &value) != NGX_OK) {
            return NULL;
        }

        if (kind != NGX_HTTP_TENT_WRITE_PUT) {
            continue;
        }

        refused = ngx_http_tent_fence_key(fence, pairs, &key);
        if (refused) {
            return refused;
        }
    }

    return NULL;
}


/*
 * A batch's rows put into names being or already deleted are taken out
 * of it (the batch written anew without them, its fence off); its
 * removals stay.
 */

static ngx_int_t
ngx_http_tent_fence_drop(ngx_http_tent_fence_t *fence,
    ngx_http_tent_store_op_t *op, ngx_http_tent_ldb_req_t *rq,
    ngx_str_t *pairs)
{
    u_char                         *req, *p, *start;
    uint32_t                        i, n, dropped;
    ngx_str_t                       key, value;
    ngx_uint_t                      kind;
    ngx_http_tent_in_t              in;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    dropped = 0;
    in = rq->items;

    for (i = 0; i < rq->n; i++) {
        if (ngx_http_tent_in_entry(&in, &kind, &key, &value) != NGX_OK) {
            return NGX_OK;
        }

        if (kind == NGX_HTTP_TENT_WRITE_PUT
            && ngx_http_tent_fence_key(fence, pairs, &key))
        {
            dropped++;
        }
    }

    if (dropped == 0) {
        return NGX_OK;
    }

    /* op, flags, u32 count, then the entries kept */

    req = ngx_palloc(op->pool, sop->req_len);
    if (req == NULL) {
        return NGX_ERROR;
    }

    req[0] = sop->req[0];
    req[1] = (u_char) (sop->req[1] & ~NGX_HTTP_TENT_OP_FENCE);
    p = req + 6;
    n = 0;

    in = rq->items;

    for (i = 0; i < rq->n; i++) {
        start = in.pos;

        (void) ngx_http_tent_in_entry(&in, &kind, &key, &value);

        if (kind == NGX_HTTP_TENT_WRITE_PUT
            && ngx_http_tent_fence_key(fence, pairs, &key))
        {
            continue;
        }

        p = ngx_cpymem(p, start, in.pos - start);
        n++;
    }

    req[2] = (u_char) (n >> 24);
    req[3] = (u_char) (n >> 16);
    req[4] = (u_char) (n >> 8);
    req[5] = (u_char) n;

    ngx_log_error(NGX_LOG_INFO, op->log, 0,
                  "tent store: %uD row(s) of a batch into a deleted entity "
                  "left out (the registry fence)", dropped);

    sop->req = req;
    sop->req_len = p - req;
    sop->req_size = sop->req_len;
    ngx_str_null(pairs);

    return NGX_OK;
}


static const char *
ngx_http_tent_fence_key(ngx_http_tent_fence_t *fence, ngx_str_t *pairs,
    ngx_str_t *key)
{
    u_char                       *z;
    ngx_str_t                     entity;
    ngx_http_tent_fence_entry_t  *e;

    z = ngx_strlchr(key->data, key->data + key->len, '\0');

    if (z == NULL || z == key->data) {
        return NULL;
    }

    entity.data = key->data;
    entity.len = z - key->data;

    e = ngx_http_tent_fence_find(fence, &entity);

    if (e && e->state == NGX_HTTP_TENT_REG_ABSENT) {
        return "gone";
    }

    if (pairs && pairs->data
        && ngx_http_tent_fence_stale(fence, pairs, &entity))
    {
        return "gone";
    }

    return NULL;
}


/*
 * Is "entity" named by a rows-only pair at an incarnation it no longer
 * is: deleted, or made anew since (an unknown name: deleted before this
 * owner started).  Not while the table is unknown.
 */

static ngx_uint_t
ngx_http_tent_fence_stale(ngx_http_tent_fence_t *fence, ngx_str_t *pairs,
    ngx_str_t *entity)
{
    u_char                       *p, *last;
    uint32_t                      n, i;
    uint64_t                      incarnation;
    ngx_str_t                     name;
    ngx_http_tent_fence_entry_t  *e;

    if (!fence->loaded) {
        return 0;
    }

    p = pairs->data;
    last = p + pairs->len;

    while (last - p >= 4) {
        n = ngx_http_tent_fence_u32(p) & NGX_HTTP_TENT_FENCE_LEN;

        if ((size_t) (last - p - 4) < (size_t) n + 8) {
            return 0;
        }

        if (!(p[0] & 0x80) || n != entity->len
            || ngx_memcmp(p + 4, entity->data, n) != 0)
        {
            p += 4 + n + 8;
            continue;
        }

        name.len = n;
        name.data = p + 4;
        p += 4 + n;

        incarnation = 0;

        for (i = 0; i < 8; i++) {
            incarnation = (incarnation << 8) | *p++;
        }

        e = ngx_http_tent_fence_find(fence, &name);

        if (e == NULL || e->state == NGX_HTTP_TENT_REG_ABSENT
            || e->incarnation != incarnation)
        {
            ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                           "tent store fence: rows of \"%V\" at %uL left "
                           "out", &name, incarnation);
            return 1;
        }
    }

    return 0;
}


/* does it write a registry row */

static ngx_uint_t
ngx_http_tent_fence_registry_op(ngx_http_tent_ldb_req_t *rq)
{
    uint32_t            i;
    ngx_str_t           key, value, entity;
    ngx_uint_t          kind;
    ngx_http_tent_in_t  in;

    if (rq->op == NGX_HTTP_TENT_OP_CAS
        && ngx_http_tent_registry_parse(&rq->key, &entity) == NGX_OK)
    {
        return 1;
    }

    in = rq->items;

    for (i = 0; i < rq->n; i++) {
        if (ngx_http_tent_in_entry(&in, &kind, &key, &value) != NGX_OK) {
            return 0;
        }

        if ((kind == NGX_HTTP_TENT_WRITE_PUT
             || kind == NGX_HTTP_TENT_WRITE_DEL)
            && ngx_http_tent_registry_parse(&key, &entity) == NGX_OK)
        {
            return 1;
        }
    }

    return 0;
}


/*
 * After an operation the owner ran, before its answer is delivered:
 * a registry write's new state into the table, and the writes that
 * waited for it go on.
 */

void
ngx_http_tent_fence_done(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op, ngx_uint_t status)
{
    ngx_http_tent_fence_t          *fence;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);
    fence = store->fence;

    if (fence == NULL || !(sop->fence_counted || sop->fence_registry)) {
        return;
    }

    if (sop->fence_counted) {
        sop->fence_counted = 0;
        fence->inflight--;
    }

    if (sop->fence_registry) {
        sop->fence_registry = 0;
        fence->registry = 0;

        /*
         * Applied when it committed; when it failed (the store refuses
         * writes after a failed one) it may still have been written:
         * the table is read again when the database is reopened.
         */

        if (status == NGX_HTTP_TENT_STORE_OK) {
            ngx_http_tent_fence_apply(fence, op, store->log);
        }
    }

    if (!fence->registry && fence->inflight == 0) {
        ngx_http_tent_fence_release(store);
    }
}


static void
ngx_http_tent_fence_apply(ngx_http_tent_fence_t *fence,
    ngx_http_tent_store_op_t *op, ngx_log_t *log)
{
    uint32_t                        i;
    ngx_str_t                       key, value, entity;
    ngx_uint_t                      kind;
    ngx_http_tent_in_t              in;
    ngx_http_tent_ldb_req_t         rq;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (ngx_http_tent_ldb_decode(sop->req, sop->req_len, &rq) != NULL) {
        return;
    }

    if (rq.op == NGX_HTTP_TENT_OP_CAS
        && ngx_http_tent_registry_parse(&rq.key, &entity) == NGX_OK)
    {
        ngx_http_tent_fence_set(fence, &entity, &rq.value, log);
    }

    in = rq.items;

    for (i = 0; i < rq.n; i++) {
        if (ngx_http_tent_in_entry(&in, &kind, &key, &value) != NGX_OK) {
            return;
        }

        if (ngx_http_tent_registry_parse(&key, &entity) != NGX_OK) {
            continue;
        }

        if (kind == NGX_HTTP_TENT_WRITE_PUT) {
            ngx_http_tent_fence_set(fence, &entity, &value, log);

        } else if (kind == NGX_HTTP_TENT_WRITE_DEL) {
            ngx_http_tent_fence_set(fence, &entity, NULL, log);
        }
    }
}


/* it waits in the owner's queue: a timeout or a handover takes it out */

static void
ngx_http_tent_fence_park(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op)
{
    if (store->nwaiting >= store->max_waiting) {
        ngx_http_tent_store_fail_later(op, NGX_HTTP_TENT_STORE_UNAVAILABLE,
                                       "too many operations waiting");
        return;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, store->log, 0,
                   "tent store fence: a write waits for the registry "
                   "(%ui running, %ui waiting)", store->fence->inflight,
                   store->nwaiting);

    ngx_http_tent_store_wait(store, op, NGX_HTTP_TENT_WHERE_OPENING);
}


/*
 * Nothing runs that the waiting ones waited for: each of them is
 * admitted again, in its order (the first registry write runs, those
 * behind it wait again, behind it).
 */

static void
ngx_http_tent_fence_release(ngx_http_tent_store_t *store)
{
    ngx_uint_t                 n;
    ngx_queue_t               *q;
    ngx_http_tent_store_op_t  *op;

    if (store->state != NGX_HTTP_TENT_OWNER_OPEN) {
        /* the open drains the queue */
        return;
    }

    store->fence->closing = 0;

    for (n = store->nwaiting; n && !ngx_queue_empty(&store->waiting); n--) {
        q = ngx_queue_head(&store->waiting);
        op = ngx_http_tent_store_op_of(q);

        ngx_http_tent_store_unwait(op);
        ngx_http_tent_owner_exec(store, op);
    }
}


static uint32_t
ngx_http_tent_fence_u32(u_char *p)
{
    return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16)
           | ((uint32_t) p[2] << 8) | p[3];
}
