
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The store owner's operations on its thread pool (the database's life:
 * ngx_http_tent_store_owner.c): the two classes of operation, a
 * request's posted at once and a background one held to
 * tent_store_background_threads, and the queue of compare-and-sets run
 * in groups, one group at a time.  What runs is
 * ngx_http_tent_store_leveldb.c.
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store_private.h"


typedef struct {
    ngx_http_tent_store_t      *store;
    ngx_http_tent_store_op_t   *op;
    u_char                     *res;
    size_t                      res_len;
    ngx_uint_t                  background;
} ngx_http_tent_exec_ctx_t;


static void ngx_http_tent_owner_run(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op, ngx_uint_t background);
static void ngx_http_tent_owner_exec_thread(void *data, ngx_log_t *log);
static void ngx_http_tent_owner_exec_done(ngx_event_t *ev);
static void ngx_http_tent_owner_cas_start(ngx_http_tent_store_t *store);
static void ngx_http_tent_owner_cas_thread(void *data, ngx_log_t *log);
static void ngx_http_tent_owner_cas_done(ngx_event_t *ev);
static void ngx_http_tent_owner_free_result(void *data);


/*
 * Two classes of operation share the pool.  A request's (a client waits)
 * is posted at once; a background one (the delivery engine's loads,
 * settles and scans, the sweeps) only while fewer than
 * tent_store_background_threads of them run, else it waits here, in its
 * order, for one of them to end.  So however much work a fan-out has
 * queued, a request's operation finds a free thread (the pool has more)
 * and waits for none of it.  Compare-and-sets go in groups, one group at
 * a time, whichever their class.
 */

void
ngx_http_tent_owner_exec(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op)
{
    ngx_uint_t                      background;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    background = (sop->req_len > 1
                  && (sop->req[1] & NGX_HTTP_TENT_OP_BACKGROUND));

    if (sop->req_len > 2 && sop->req[0] == NGX_HTTP_TENT_OP_CAS) {

        /* a write waits for a registry write, or is refused (the fence) */

        if (ngx_http_tent_fence_admit(store, op) != NGX_OK) {
            return;
        }

        /* what may be in the memtable: flushed once the work is over */

        store->written += sop->req_len;

        ngx_http_tent_count(background ? NGX_HTTP_TENT_STAT_STORE_BACKGROUND
                                       : NGX_HTTP_TENT_STAT_STORE_REQUEST, 1);

        ngx_queue_insert_tail(&store->cas_queue, &sop->queue);
        sop->where = NGX_HTTP_TENT_WHERE_CAS;
        store->inflight++;

        if (!store->cas_running) {
            ngx_http_tent_owner_cas_start(store);
        }

        return;
    }

    if (background
        && (store->background_running >= store->background_max
            || !ngx_queue_empty(&store->background)))
    {
        ngx_queue_insert_tail(&store->background, &sop->queue);
        sop->where = NGX_HTTP_TENT_WHERE_BACKGROUND;
        store->nbackground++;

        ngx_http_tent_count(NGX_HTTP_TENT_STAT_STORE_DEFERRED, 1);
        ngx_http_tent_gauge(NGX_HTTP_TENT_STAT_STORE_WAITING,
                            store->nbackground);

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, store->log, 0,
                       "tent store owner: a background operation waits, "
                       "%ui running, %ui waiting",
                       store->background_running, store->nbackground);
        return;
    }

    /* admitted by the fence when it runs, not while it waits for a slot */

    if (ngx_http_tent_fence_admit(store, op) != NGX_OK) {
        return;
    }

    ngx_http_tent_owner_run(store, op, background);
}


static void
ngx_http_tent_owner_run(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op, ngx_uint_t background)
{
    ngx_thread_task_t              *task;
    ngx_http_tent_exec_ctx_t       *ctx;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    task = ngx_thread_task_alloc(op->pool, sizeof(ngx_http_tent_exec_ctx_t));
    if (task == NULL) {
        ngx_http_tent_fence_done(store, op, NGX_HTTP_TENT_STORE_UNAVAILABLE);
        ngx_http_tent_owner_reject(op);
        return;
    }

    ctx = task->ctx;
    ctx->store = store;
    ctx->op = op;
    ctx->background = background;

    task->handler = ngx_http_tent_owner_exec_thread;
    task->event.handler = ngx_http_tent_owner_exec_done;
    task->event.data = task;

    if (ngx_thread_task_post(store->thread_pool, task) != NGX_OK) {
        ngx_http_tent_fence_done(store, op, NGX_HTTP_TENT_STORE_UNAVAILABLE);
        ngx_http_tent_owner_reject(op);
        return;
    }

    sop->where = NGX_HTTP_TENT_WHERE_RUNNING;
    store->inflight++;

    if (sop->req[0] == NGX_HTTP_TENT_OP_WRITE) {
        store->written += sop->req_len;     /* as a compare-and-set's */
    }

    if (background) {
        store->background_running++;
    }

    ngx_http_tent_count(background ? NGX_HTTP_TENT_STAT_STORE_BACKGROUND
                                   : NGX_HTTP_TENT_STAT_STORE_REQUEST, 1);
}


/* a background thread is free: the next background operation takes it */

void
ngx_http_tent_owner_next_background(ngx_http_tent_store_t *store)
{
    ngx_queue_t               *q;
    ngx_http_tent_store_op_t  *op;

    while (store->state == NGX_HTTP_TENT_OWNER_OPEN
           && store->background_running < store->background_max
           && !ngx_queue_empty(&store->background))
    {
        q = ngx_queue_head(&store->background);
        op = ngx_http_tent_store_op_of(q);

        ngx_http_tent_owner_unqueue(store, op);

        if (ngx_http_tent_fence_admit(store, op) == NGX_OK) {
            ngx_http_tent_owner_run(store, op, 1);
        }
    }
}


/* a background operation leaves the queue: its turn, its deadline */

void
ngx_http_tent_owner_unqueue(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    ngx_queue_remove(&sop->queue);

    if (sop->where == NGX_HTTP_TENT_WHERE_CAS) {

        /* its deadline came before its group: not run, in flight no more */

        sop->where = NGX_HTTP_TENT_WHERE_NONE;
        store->inflight--;
        ngx_http_tent_fence_done(store, op, NGX_HTTP_TENT_STORE_UNAVAILABLE);
        ngx_http_tent_owner_after(store);
        return;
    }

    sop->where = NGX_HTTP_TENT_WHERE_NONE;
    store->nbackground--;

    ngx_http_tent_gauge(NGX_HTTP_TENT_STAT_STORE_WAITING, store->nbackground);
}


static void
ngx_http_tent_owner_exec_thread(void *data, ngx_log_t *log)
{
    ngx_http_tent_exec_ctx_t *ctx = data;

    ngx_http_tent_store_op_t       *op;
    ngx_http_tent_store_op_full_t  *sop;

    op = ctx->op;
    sop = ngx_http_tent_sop(op);

    ngx_http_tent_owner_thread_nice(ctx->store, log);

    if (ngx_http_tent_ldb_exec(ctx->store->ldb, sop->req, sop->req_len,
                               &ctx->res, &ctx->res_len)
        != NGX_OK)
    {
        ctx->res = NULL;
    }
}


static void
ngx_http_tent_owner_exec_done(ngx_event_t *ev)
{
    ngx_thread_task_t *task = ev->data;

    ngx_pool_cleanup_t        *cln;
    ngx_http_tent_store_t     *store;
    ngx_http_tent_exec_ctx_t  *ctx;
    ngx_http_tent_store_op_t  *op;

    ctx = task->ctx;
    op = ctx->op;
    store = ctx->store;

    store->inflight--;

    if (ctx->background) {
        store->background_running--;

        /* the next in line first, then what this one's handler submits */

        ngx_http_tent_owner_next_background(store);
        ngx_http_tent_owner_memory_used(store);
    }

    if (ctx->res && ctx->res[0] == NGX_HTTP_TENT_STORE_UNAVAILABLE
        && ctx->res_len > 1)
    {
        /* the write that failed; the ones refused after it say nothing */

        ngx_log_error(NGX_LOG_ERR, store->log, 0,
                      "tent store: a write failed, writes are refused "
                      "until \"%V\" is reopened: %*s", &store->db_path,
                      ctx->res_len - 1, ctx->res + 1);
    }

    ngx_http_tent_fence_done(store, op, ctx->res ? ctx->res[0]
                                              : NGX_HTTP_TENT_STORE_ERROR);

    if (ctx->res == NULL) {
        ngx_http_tent_store_finish(op, NGX_HTTP_TENT_STORE_ERROR,
                                   (u_char *) "out of memory", 13);
        goto done;
    }

    /* the result was malloc()ed by the thread: free it with the pool */

    cln = ngx_pool_cleanup_add(op->pool, 0);
    if (cln == NULL) {
        ngx_free(ctx->res);
        ngx_http_tent_store_finish(op, NGX_HTTP_TENT_STORE_ERROR,
                                   (u_char *) "out of memory", 13);
        goto done;
    }

    cln->handler = ngx_http_tent_owner_free_result;
    cln->data = ctx->res;

    ngx_http_tent_store_finish(op, ctx->res[0], ctx->res + 1,
                               ctx->res_len - 1);

done:

    ngx_http_tent_owner_after(store);
}


/* the queued compare-and-sets, as one group on a pool thread */

static void
ngx_http_tent_owner_cas_start(ngx_http_tent_store_t *store)
{
    ngx_uint_t                  i;
    ngx_queue_t                *q;
    ngx_http_tent_cas_group_t  *g;
    ngx_http_tent_store_op_t   *op;

    g = ngx_calloc(sizeof(ngx_http_tent_cas_group_t), store->log);

    if (g != NULL) {
        g->store = store;
        g->task.ctx = g;
        g->task.handler = ngx_http_tent_owner_cas_thread;
        g->task.event.handler = ngx_http_tent_owner_cas_done;
        g->task.event.data = g;

        while (g->n < NGX_HTTP_TENT_CAS_GROUP
               && !ngx_queue_empty(&store->cas_queue))
        {
            q = ngx_queue_head(&store->cas_queue);
            ngx_queue_remove(q);
            op = ngx_http_tent_store_op_of(q);
            ngx_http_tent_sop(op)->where = NGX_HTTP_TENT_WHERE_RUNNING;
            g->ops[g->n++] = op;
        }

        if (ngx_thread_task_post(store->thread_pool, &g->task) == NGX_OK) {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, store->log, 0,
                           "tent store owner: a group of %ui cas, on the pool",
                           g->n);

            store->cas_running = 1;
            return;
        }

        /* not posted: they wait no more, they fail */

        for (i = 0; i < g->n; i++) {
            ngx_queue_insert_tail(&store->cas_queue,
                                  &ngx_http_tent_sop(g->ops[i])->queue);
            ngx_http_tent_sop(g->ops[i])->where = NGX_HTTP_TENT_WHERE_CAS;
        }

        ngx_free(g);
    }

    while (!ngx_queue_empty(&store->cas_queue)) {
        q = ngx_queue_head(&store->cas_queue);
        ngx_queue_remove(q);
        op = ngx_http_tent_store_op_of(q);

        store->inflight--;
        ngx_http_tent_fence_done(store, op, NGX_HTTP_TENT_STORE_UNAVAILABLE);
        ngx_http_tent_owner_reject(op);
    }
}


static void
ngx_http_tent_owner_cas_thread(void *data, ngx_log_t *log)
{
    ngx_http_tent_cas_group_t *g = data;

    ngx_http_tent_owner_thread_nice(g->store, log);
    ngx_http_tent_ldb_cas_group(g->store->ldb, g, log);
}


static void
ngx_http_tent_owner_cas_done(ngx_event_t *ev)
{
    ngx_http_tent_cas_group_t *g = ev->data;

    ngx_uint_t                 i;
    ngx_pool_cleanup_t        *cln;
    ngx_http_tent_store_t     *store;
    ngx_http_tent_store_op_t  *op;

    store = g->store;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, store->log, 0,
                   "tent store owner: the cas group ran: %ui answered, "
                   "%ui wait for the next", g->ran, g->n - g->ran);

    /*
     * cas_running stays set while the results are delivered: a handler
     * that submits another compare-and-set only queues it, so no second
     * group ever runs beside this one's successor.
     */

    /* those the group left go first in the next one, in their order */

    for (i = g->n; i > g->ran; i--) {
        ngx_queue_insert_head(&store->cas_queue,
                              &ngx_http_tent_sop(g->ops[i - 1])->queue);
        ngx_http_tent_sop(g->ops[i - 1])->where = NGX_HTTP_TENT_WHERE_CAS;
    }

    for (i = 0; i < g->ran; i++) {
        op = g->ops[i];
        store->inflight--;

        ngx_http_tent_fence_done(store, op, g->res[i] ? g->res[i][0]
                                            : NGX_HTTP_TENT_STORE_ERROR);

        if (g->res[i] == NULL) {
            ngx_http_tent_store_finish(op, NGX_HTTP_TENT_STORE_ERROR,
                                       (u_char *) "out of memory", 13);
            continue;
        }

        if (g->res[i][0] == NGX_HTTP_TENT_STORE_UNAVAILABLE
            && g->res_len[i] > 1)
        {
            ngx_log_error(NGX_LOG_ERR, store->log, 0,
                          "tent store: a write failed, writes are refused "
                          "until \"%V\" is reopened: %*s", &store->db_path,
                          g->res_len[i] - 1, g->res[i] + 1);
        }

        cln = ngx_pool_cleanup_add(op->pool, 0);
        if (cln == NULL) {
            ngx_free(g->res[i]);
            ngx_http_tent_store_finish(op, NGX_HTTP_TENT_STORE_ERROR,
                                       (u_char *) "out of memory", 13);
            continue;
        }

        cln->handler = ngx_http_tent_owner_free_result;
        cln->data = g->res[i];

        ngx_http_tent_store_finish(op, g->res[i][0], g->res[i] + 1,
                                   g->res_len[i] - 1);
    }

    ngx_free(g);

    store->cas_running = 0;

    if (!ngx_queue_empty(&store->cas_queue)) {
        ngx_http_tent_owner_cas_start(store);
    }

    ngx_http_tent_owner_after(store);
}


static void
ngx_http_tent_owner_free_result(void *data)
{
    ngx_free(data);
}
