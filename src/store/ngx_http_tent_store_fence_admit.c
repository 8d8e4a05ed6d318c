
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The registry fence's admission of writes (docs/store.md, "The registry
 * fence"): before the owner runs a write, the fence behind its bytes is
 * taken off and checked against the table (ngx_http_tent_store_fence.c).
 * A registry write runs alone: the writes that come meanwhile wait, and
 * once it has committed its new state goes into the table and they run.
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store_private.h"
#include "ngx_http_tent_store_fence.h"


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
static void ngx_http_tent_fence_park(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op);
static void ngx_http_tent_fence_release(ngx_http_tent_store_t *store);


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
    ngx_str_t                      *rows;
    ngx_uint_t                      kind;
    ngx_http_tent_in_t              in;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    /*
     * Only a stale rows-only pair makes a put stale: without one (the
     * pairs walked once), each key need not walk every pair (a batch of
     * the engine has one a recipient, and a put of each of its rows);
     * without one and with no registry entity, nothing can be left out
     * at all.
     */

    rows = ngx_http_tent_fence_stale(fence, pairs, NULL) ? pairs : NULL;

    if (rows == NULL && fence->n == 0) {
        return NGX_OK;
    }

    dropped = 0;
    in = rq->items;

    for (i = 0; i < rq->n; i++) {
        if (ngx_http_tent_in_entry(&in, &kind, &key, &value) != NGX_OK) {
            return NGX_OK;
        }

        if (kind == NGX_HTTP_TENT_WRITE_PUT
            && ngx_http_tent_fence_key(fence, rows, &key))
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
            && ngx_http_tent_fence_key(fence, rows, &key))
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
 * owner started).  Not while the table is unknown.  A NULL entity: is
 * any rows-only pair so.
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

    if (!fence->loaded || pairs->data == NULL) {
        return 0;
    }

    p = pairs->data;
    last = p + pairs->len;

    while (last - p >= 4) {
        n = ngx_http_tent_fence_u32(p) & NGX_HTTP_TENT_FENCE_LEN;

        if ((size_t) (last - p - 4) < (size_t) n + 8) {
            return 0;
        }

        if (!(p[0] & 0x80)
            || (entity
                && (n != entity->len
                    || ngx_memcmp(p + 4, entity->data, n) != 0)))
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
