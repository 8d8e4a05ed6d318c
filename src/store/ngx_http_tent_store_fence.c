
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
 *
 * Here: a request's side (the pairs appended to its bytes) and the
 * owner's table; the admission of writes (the check, the waiting) is
 * ngx_http_tent_store_fence_admit.c's.
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store_private.h"
#include "ngx_http_tent_store_fence.h"


static ngx_int_t ngx_http_tent_fence_pair(ngx_http_tent_store_op_t *op,
    ngx_str_t *entity, uint64_t incarnation, ngx_uint_t rows);
static ngx_int_t ngx_http_tent_fence_reset(ngx_http_tent_fence_t *fence);
static void ngx_http_tent_fence_set(ngx_http_tent_fence_t *fence,
    ngx_str_t *entity, ngx_str_t *value, ngx_log_t *log);


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
    ngx_pool_t  *pool;

    /* the new pool first: a failure keeps the old table whole */

    pool = ngx_create_pool(4096, ngx_cycle->log);
    if (pool == NULL) {
        return NGX_ERROR;
    }

    if (fence->pool) {
        ngx_destroy_pool(fence->pool);
    }

    fence->pool = pool;

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


ngx_http_tent_fence_entry_t *
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


void
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


uint32_t
ngx_http_tent_fence_u32(u_char *p)
{
    return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16)
           | ((uint32_t) p[2] << 8) | p[3];
}
