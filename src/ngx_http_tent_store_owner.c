
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The store owner: worker 0 opens LevelDB (one process per database is
 * all LevelDB allows) and runs every LevelDB call on an nginx thread pool,
 * never on the event loop.  On a reload the new worker 0 starts before the
 * old one lets go, so opening retries with backoff, and the old owner
 * closes the database as soon as graceful shutdown begins.  This file is
 * when and where an operation runs: opening, the waiting queue, the
 * thread pool, the groups of compare-and-sets, handing over, reopening
 * after a failed write.  What runs is ngx_http_tent_store_leveldb.c.
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_module.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store_private.h"

#include <sys/statvfs.h>


typedef struct {
    ngx_http_tent_store_t      *store;
    ngx_http_tent_store_op_t   *op;
    u_char                     *res;
    size_t                      res_len;
    ngx_uint_t                  background;
} ngx_http_tent_exec_ctx_t;


static void ngx_http_tent_owner_open(ngx_http_tent_store_t *store);
static void ngx_http_tent_owner_open_thread(void *data, ngx_log_t *log);
static void ngx_http_tent_owner_opened(ngx_event_t *ev);
static void ngx_http_tent_owner_open_timer(ngx_event_t *ev);
static void ngx_http_tent_owner_close(ngx_http_tent_store_t *store);
static void ngx_http_tent_owner_close_thread(void *data, ngx_log_t *log);
static void ngx_http_tent_owner_closed(ngx_event_t *ev);
static void ngx_http_tent_owner_run(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op, ngx_uint_t background);
static void ngx_http_tent_owner_next_background(ngx_http_tent_store_t *store);
static void ngx_http_tent_owner_exec_thread(void *data, ngx_log_t *log);
static void ngx_http_tent_owner_exec_done(ngx_event_t *ev);
static void ngx_http_tent_owner_cas_start(ngx_http_tent_store_t *store);
static void ngx_http_tent_owner_cas_thread(void *data, ngx_log_t *log);
static void ngx_http_tent_owner_cas_done(ngx_event_t *ev);
static void ngx_http_tent_owner_after(ngx_http_tent_store_t *store);
static void ngx_http_tent_owner_reject(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_owner_free_result(void *data);
static void ngx_http_tent_owner_reopen_timer(ngx_event_t *ev);
static void ngx_http_tent_owner_probe_thread(void *data, ngx_log_t *log);
static void ngx_http_tent_owner_probed(ngx_event_t *ev);
static void ngx_http_tent_owner_reopen(ngx_http_tent_store_t *store);
static void ngx_http_tent_owner_reopen_thread(void *data, ngx_log_t *log);


ngx_int_t
ngx_http_tent_owner_start(ngx_http_tent_store_t *store)
{
    u_char               *files;
    ngx_thread_task_t    *task;
    ngx_http_tent_ldb_t  *ldb;

    ldb = ngx_http_tent_ldb_create(ngx_cycle->pool,
                                   (char *) store->db_path.data);
    if (ldb == NULL) {
        return NGX_ERROR;
    }

    /* attachment bytes: files beside the database (docs/store.md) */

    files = ngx_pnalloc(ngx_cycle->pool,
                        store->path.len + sizeof("/attachments"));
    if (files == NULL) {
        return NGX_ERROR;
    }

    (void) ngx_sprintf(files, "%V/attachments%Z", &store->path);

    ngx_http_tent_ldb_files(ldb, (char *) files);

    if (ngx_http_tent_owner_memory_init(store) != NGX_OK
        || ngx_http_tent_fence_init(store) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* open and close reuse one task each: retries allocate nothing */

    task = ngx_thread_task_alloc(ngx_cycle->pool, 0);
    if (task == NULL) {
        return NGX_ERROR;
    }

    task->ctx = store;
    task->handler = ngx_http_tent_owner_open_thread;
    task->event.handler = ngx_http_tent_owner_opened;
    task->event.data = task;
    store->open_task = task;

    task = ngx_thread_task_alloc(ngx_cycle->pool, 0);
    if (task == NULL) {
        return NGX_ERROR;
    }

    task->ctx = store;
    task->handler = ngx_http_tent_owner_close_thread;
    task->event.handler = ngx_http_tent_owner_closed;
    task->event.data = task;
    store->close_task = task;

    task = ngx_thread_task_alloc(ngx_cycle->pool, 0);
    if (task == NULL) {
        return NGX_ERROR;
    }

    task->ctx = store;
    task->handler = ngx_http_tent_owner_probe_thread;
    task->event.handler = ngx_http_tent_owner_probed;
    task->event.data = task;
    store->probe_task = task;

    /* a reopen ends as an open does */

    task = ngx_thread_task_alloc(ngx_cycle->pool, 0);
    if (task == NULL) {
        return NGX_ERROR;
    }

    task->ctx = store;
    task->handler = ngx_http_tent_owner_reopen_thread;
    task->event.handler = ngx_http_tent_owner_opened;
    task->event.data = task;
    store->reopen_task = task;

    store->reopen_timer.handler = ngx_http_tent_owner_reopen_timer;
    store->reopen_timer.data = store;
    store->reopen_timer.log = store->log;
    store->reopen_timer.cancelable = 1;

    store->ldb = ldb;
    store->owner = 1;
    store->state = NGX_HTTP_TENT_OWNER_OPENING;
    store->open_started = ngx_current_msec;
    store->open_backoff = 25;

    store->open_timer.handler = ngx_http_tent_owner_open_timer;
    store->open_timer.data = store;
    store->open_timer.log = store->log;
    store->open_timer.cancelable = 1;

    if (ngx_http_tent_ipc_listen(store) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_http_tent_owner_open(store);

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_owner_accepts(ngx_http_tent_store_t *store)
{
    return store->owner
           && (store->state == NGX_HTTP_TENT_OWNER_OPENING
               || store->state == NGX_HTTP_TENT_OWNER_OPEN);
}


static void
ngx_http_tent_owner_open(ngx_http_tent_store_t *store)
{
    store->open_attempts++;
    store->inflight++;

    if (ngx_thread_task_post(store->thread_pool, store->open_task) != NGX_OK)
    {
        store->inflight--;
        ngx_add_timer(&store->open_timer, 1000);
    }
}


static void
ngx_http_tent_owner_open_thread(void *data, ngx_log_t *log)
{
    ngx_http_tent_store_t *store = data;

    ngx_http_tent_ldb_open(store->ldb);

    /* the registry's state, for the fence, before any write runs */

    if (ngx_http_tent_ldb_is_open(store->ldb)) {
        ngx_http_tent_fence_load_thread(store);
    }
}


static void
ngx_http_tent_owner_opened(ngx_event_t *ev)
{
    ngx_thread_task_t *task = ev->data;

    ngx_uint_t                 lock, level;
    ngx_msec_t                 elapsed;
    const char                *error;
    ngx_queue_t               *q;
    ngx_http_tent_ldb_t       *ldb;
    ngx_http_tent_store_t     *store;
    ngx_http_tent_store_op_t  *op;

    store = task->ctx;
    ldb = store->ldb;

    store->inflight--;

    elapsed = ngx_current_msec - store->open_started;

    if (store->state != NGX_HTTP_TENT_OWNER_OPENING) {

        /* resigned while opening: hand the database straight back */

        ngx_http_tent_ldb_forget_error(ldb);

        ngx_http_tent_owner_close(store);
        return;
    }

    if (!ngx_http_tent_ldb_is_open(ldb)) {

        /*
         * A lock error is the reload handoff: the old owner still has the
         * database for a moment.  Anything else (permissions, corruption)
         * is worth an error, though we still keep trying.
         */

        error = ngx_http_tent_ldb_error(ldb);
        lock = (ngx_strstr(error, "lock") != NULL);

        if (lock) {
            level = (elapsed < 5000) ? NGX_LOG_NOTICE : NGX_LOG_WARN;

        } else {
            level = NGX_LOG_ERR;
        }

        if (store->open_attempts == 1 || store->open_attempts % 30 == 0
            || (lock && level == NGX_LOG_WARN
                && store->open_attempts % 10 == 0)
            || (lock && elapsed < 5000))
        {
            ngx_log_error(level, store->log, 0,
                          "tent store: opening \"%V\" failed "
                          "(attempt %ui): %s",
                          &store->db_path, store->open_attempts, error);
        }

        ngx_http_tent_ldb_forget_error(ldb);

        ngx_add_timer(&store->open_timer, store->open_backoff);

        store->open_backoff = ngx_min(store->open_backoff * 2, 1000);

        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, store->log, 0,
                  "tent store: opened \"%V\" after %ui attempt(s) in %M ms",
                  &store->db_path, store->open_attempts, elapsed);

    ngx_http_tent_fence_loaded(store);

    store->state = NGX_HTTP_TENT_OWNER_OPEN;

    while (!ngx_queue_empty(&store->waiting)) {
        q = ngx_queue_head(&store->waiting);
        op = ngx_http_tent_store_op_of(q);

        ngx_http_tent_store_unwait(op);
        ngx_http_tent_owner_exec(store, op);
    }

    /* those that waited for a thread while the database was reopened */

    ngx_http_tent_owner_next_background(store);
}


static void
ngx_http_tent_owner_open_timer(ngx_event_t *ev)
{
    ngx_http_tent_store_t  *store;

    store = ev->data;

    if (store->state == NGX_HTTP_TENT_OWNER_OPENING) {
        ngx_http_tent_owner_open(store);
    }
}


void
ngx_http_tent_owner_submit(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

#if (NGX_DEBUG)
    /* our own operations were logged as sent */
    if (sop->conn) {
        ngx_http_tent_store_debug(op, "store owner: received from a worker",
                                  0);
    }
#endif

    if (store->state == NGX_HTTP_TENT_OWNER_OPEN) {
        ngx_http_tent_owner_exec(store, op);
        return;
    }

    if (store->nwaiting >= store->max_waiting) {
        ngx_http_tent_owner_reject(op);
        return;
    }

    ngx_http_tent_store_wait(store, op, NGX_HTTP_TENT_WHERE_OPENING);

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, store->log, 0,
                   "tent store owner: %ui operation(s) wait for the database",
                   store->nwaiting);
}


/*
 * Graceful shutdown began: stop taking operations, let the running ones
 * finish, then close so that the new owner can open.  Our own later
 * requests go to the new owner through the socket like any worker's.
 */

void
ngx_http_tent_owner_resign(ngx_http_tent_store_t *store)
{
    ngx_queue_t               *q;
    ngx_http_tent_store_op_t  *op;

    if (!ngx_http_tent_owner_accepts(store)) {
        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, store->log, 0,
                  "tent store: shutting down, handing \"%V\" over",
                  &store->db_path);

    store->state = NGX_HTTP_TENT_OWNER_CLOSING;

    if (store->open_timer.timer_set) {
        ngx_del_timer(&store->open_timer);
    }

    if (store->reopen_timer.timer_set) {
        ngx_del_timer(&store->reopen_timer);
    }

    ngx_http_tent_ipc_stop_listening(store);

    while (!ngx_queue_empty(&store->waiting)) {
        q = ngx_queue_head(&store->waiting);
        op = ngx_http_tent_store_op_of(q);

        ngx_http_tent_store_unwait(op);
        ngx_http_tent_store_dispatch(store, op);
    }

    /* and the background ones not yet run: to the next owner as well */

    while (!ngx_queue_empty(&store->background)) {
        q = ngx_queue_head(&store->background);
        op = ngx_http_tent_store_op_of(q);

        ngx_http_tent_owner_unqueue(store, op);
        ngx_http_tent_store_dispatch(store, op);
    }

    if (store->inflight == 0) {
        ngx_http_tent_owner_close(store);
    }
}


static void
ngx_http_tent_owner_close(ngx_http_tent_store_t *store)
{
    if (!ngx_http_tent_ldb_is_open(store->ldb)) {
        store->state = NGX_HTTP_TENT_OWNER_CLOSED;
        ngx_http_tent_ipc_drained(store);
        return;
    }

    store->inflight++;

    if (ngx_thread_task_post(store->thread_pool, store->close_task) != NGX_OK)
    {
        /* exit_process closes it then */
        store->inflight--;
    }
}


static void
ngx_http_tent_owner_close_thread(void *data, ngx_log_t *log)
{
    ngx_http_tent_store_t *store = data;

    ngx_http_tent_ldb_close(store->ldb);
}


static void
ngx_http_tent_owner_closed(ngx_event_t *ev)
{
    ngx_thread_task_t *task = ev->data;

    ngx_http_tent_store_t  *store;

    store = task->ctx;

    store->inflight--;
    store->state = NGX_HTTP_TENT_OWNER_CLOSED;

    ngx_log_error(NGX_LOG_NOTICE, store->log, 0,
                  "tent store: closed \"%V\" for the next owner",
                  &store->db_path);

    ngx_http_tent_ipc_drained(store);
}


void
ngx_http_tent_owner_exit(ngx_http_tent_store_t *store)
{
    ngx_http_tent_ldb_t  *ldb;

    ldb = store->ldb;

    /* the thread pool has joined its threads by now */

    ngx_http_tent_fence_exit(store);

    if (ldb == NULL) {
        return;
    }

    if (ngx_http_tent_ldb_is_open(ldb)) {
        ngx_http_tent_ldb_close(ldb);

        ngx_log_error(NGX_LOG_NOTICE, store->log, 0,
                      "tent store: closed \"%V\" on exit", &store->db_path);
    }

    ngx_http_tent_ldb_destroy(ldb);

    store->ldb = NULL;
}


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

        ngx_http_tent_count(background ? NGX_HTTP_TENT_STAT_STORE_BACKGROUND
                                       : NGX_HTTP_TENT_STAT_STORE_REQUEST, 1);

        ngx_queue_insert_tail(&store->cas_queue, &sop->queue);
        sop->where = NGX_HTTP_TENT_WHERE_RUNNING;
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

    if (background) {
        store->background_running++;
    }

    ngx_http_tent_count(background ? NGX_HTTP_TENT_STAT_STORE_BACKGROUND
                                   : NGX_HTTP_TENT_STAT_STORE_REQUEST, 1);
}


/* a background thread is free: the next background operation takes it */

static void
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


/* after operations came back: close, reopen, or watch for room */

static void
ngx_http_tent_owner_after(ngx_http_tent_store_t *store)
{
    if (store->state == NGX_HTTP_TENT_OWNER_CLOSING && store->inflight == 0) {
        ngx_http_tent_owner_close(store);
        return;
    }

    if (ngx_http_tent_ldb_write_failed(store->ldb)
        && store->state == NGX_HTTP_TENT_OWNER_OPEN
        && !store->probing && !store->reopen_timer.timer_set)
    {
        ngx_add_timer(&store->reopen_timer, 100);
    }

    if (store->reopen_pending && store->state == NGX_HTTP_TENT_OWNER_OPENING
        && store->inflight == 0)
    {
        ngx_http_tent_owner_reopen(store);
    }
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
            g->ops[g->n++] = ngx_http_tent_store_op_of(q);
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


/*
 * After a failed write: reads go on, writes are refused (503), and every
 * second a pool thread looks whether the directory takes files again and
 * the file system has room for what a reopen writes (the memtable,
 * replayed from the log, as a table file).
 * Then operations wait while the running ones finish, and the database
 * is closed and opened again on the pool; ngx_http_tent_owner_opened()
 * takes it from there, with its backoff if the open fails.
 */

static void
ngx_http_tent_owner_reopen_timer(ngx_event_t *ev)
{
    ngx_http_tent_store_t  *store;

    store = ev->data;

    if (store->state == NGX_HTTP_TENT_OWNER_OPENING && store->reopen_pending)
    {
        if (store->inflight == 0) {
            ngx_http_tent_owner_reopen(store);
        }

        return;
    }

    if (store->state != NGX_HTTP_TENT_OWNER_OPEN
        || !ngx_http_tent_ldb_write_failed(store->ldb) || store->probing)
    {
        return;
    }

    if (ngx_thread_task_post(store->thread_pool, store->probe_task) != NGX_OK)
    {
        ngx_add_timer(&store->reopen_timer, 1000);
        return;
    }

    store->probing = 1;
}


static void
ngx_http_tent_owner_probe_thread(void *data, ngx_log_t *log)
{
    ngx_http_tent_store_t *store = data;

    DIR             *dir;
    off_t            need;
    size_t           len;
    char            *path;
    u_char           file[NGX_MAX_PATH];
    struct stat      st;
    struct statvfs   vfs;
    struct dirent   *de;

    path = (char *) store->db_path.data;
    store->room = 0;

    /* the logs are replayed into a table file: room for them, and 1 MB */

    need = 1024 * 1024;

    dir = opendir(path);
    if (dir == NULL) {
        return;
    }

    while ((de = readdir(dir)) != NULL) {
        len = ngx_strlen(de->d_name);

        if (len < 4 || ngx_strcmp(de->d_name + len - 4, ".log") != 0) {
            continue;
        }

        ngx_snprintf(file, sizeof(file), "%s/%s%Z", path, de->d_name);

        if (stat((char *) file, &st) == 0) {
            need += st.st_size;
        }
    }

    (void) closedir(dir);

    /* and the directory must take new files (read-only, immutable) */

    if (access(path, W_OK) == 0
        && statvfs(path, &vfs) == 0
        && (off_t) vfs.f_bavail * (off_t) vfs.f_frsize >= need)
    {
        store->room = 1;
    }
}


static void
ngx_http_tent_owner_probed(ngx_event_t *ev)
{
    ngx_thread_task_t *task = ev->data;

    ngx_http_tent_store_t  *store;

    store = task->ctx;

    store->probing = 0;

    if (store->state != NGX_HTTP_TENT_OWNER_OPEN
        || !ngx_http_tent_ldb_write_failed(store->ldb))
    {
        return;
    }

    if (!store->room) {
        ngx_add_timer(&store->reopen_timer, 1000);
        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, store->log, 0,
                  "tent store: reopening \"%V\" after a failed write",
                  &store->db_path);

    store->state = NGX_HTTP_TENT_OWNER_OPENING;
    store->open_started = ngx_current_msec;
    store->open_attempts = 0;
    store->open_backoff = 25;
    store->reopen_pending = 1;

    if (store->inflight == 0) {
        ngx_http_tent_owner_reopen(store);
    }
}


static void
ngx_http_tent_owner_reopen(ngx_http_tent_store_t *store)
{
    if (ngx_thread_task_post(store->thread_pool, store->reopen_task)
        != NGX_OK)
    {
        if (!store->reopen_timer.timer_set) {
            ngx_add_timer(&store->reopen_timer, 1000);
        }

        return;
    }

    store->reopen_pending = 0;
    store->open_attempts++;
    store->inflight++;
}


static void
ngx_http_tent_owner_reopen_thread(void *data, ngx_log_t *log)
{
    ngx_http_tent_store_t *store = data;

    /* opening again allows writes: the replay drops the half record */

    ngx_http_tent_ldb_close(store->ldb);

    ngx_http_tent_owner_open_thread(data, log);
}


static void
ngx_http_tent_owner_free_result(void *data)
{
    ngx_free(data);
}


/* fail an operation soon, never from inside submit */

static void
ngx_http_tent_owner_reject(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_store_fail_later(op, NGX_HTTP_TENT_STORE_UNAVAILABLE,
                                   "too many operations waiting");
}
