
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The store owner: worker 0 opens LevelDB (one process per database is
 * all LevelDB allows) and runs every LevelDB call on an nginx thread pool,
 * never on the event loop.  On a reload the new worker 0 starts before the
 * old one lets go, so opening retries with backoff, and the old owner
 * closes the database as soon as graceful shutdown begins.
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_module.h"
#include "ngx_http_tent_store_private.h"

#include <leveldb/c.h>
#include <pthread.h>
#include <sys/statvfs.h>


/*
 * Compare-and-set holds a lock from its read to its write; one lock per
 * stripe of keys, so that sets of different keys run at once and LevelDB
 * can group their synced writes into one fsync.
 */

#define NGX_HTTP_TENT_CAS_STRIPES  64


typedef struct {
    leveldb_t                  *db;
    leveldb_options_t          *options;
    leveldb_filterpolicy_t     *bloom;
    leveldb_readoptions_t      *read;
    leveldb_writeoptions_t     *write_sync;
    leveldb_writeoptions_t     *write_async;
    pthread_mutex_t             cas_lock[NGX_HTTP_TENT_CAS_STRIPES];
    char                       *path;
    char                       *error;

    /*
     * A failed write (a full disk, a read-only file system) may leave
     * half a record at the end of LevelDB's log, and records written
     * after it could not be read back when the log is replayed.  So once
     * a write fails no other write is tried: the database is reopened
     * (the replay drops the half record) as soon as there is room.
     * write_failed is set by pool threads.
     */
    volatile ngx_atomic_t       write_failed;
    ngx_thread_task_t          *probe_task;
    ngx_thread_task_t          *reopen_task;
    ngx_event_t                 reopen_timer;
    ngx_uint_t                  room;
    unsigned                    probing:1;
    unsigned                    reopen_pending:1;
} ngx_http_tent_ldb_t;


typedef struct {
    ngx_http_tent_store_t      *store;
    ngx_http_tent_store_op_t   *op;
    u_char                     *res;
    size_t                      res_len;
} ngx_http_tent_exec_ctx_t;


/*
 * Compare-and-sets go one group at a time: every one queued while the
 * previous group ran is read and compared in turn, and those that hold
 * are written in one synced batch, so one fsync serves them all instead
 * of one each.  An operation whose key an earlier one of the group
 * writes waits for the next group, so every comparison sees all that
 * was written before it.
 */

#define NGX_HTTP_TENT_CAS_GROUP  256

typedef struct {
    ngx_thread_task_t           task;
    ngx_http_tent_store_t      *store;
    ngx_uint_t                  n;
    ngx_uint_t                  ran;        /* the rest go back */
    ngx_http_tent_store_op_t   *ops[NGX_HTTP_TENT_CAS_GROUP];
    u_char                     *res[NGX_HTTP_TENT_CAS_GROUP];
    size_t                      res_len[NGX_HTTP_TENT_CAS_GROUP];
} ngx_http_tent_cas_group_t;


typedef struct {
    u_char                     *data;
    size_t                      len;
    size_t                      size;
    ngx_uint_t                  failed;
} ngx_http_tent_out_t;


typedef struct {
    u_char                     *pos;
    u_char                     *last;
} ngx_http_tent_in_t;


static void ngx_http_tent_owner_open(ngx_http_tent_store_t *store);
static void ngx_http_tent_owner_open_thread(void *data, ngx_log_t *log);
static void ngx_http_tent_owner_opened(ngx_event_t *ev);
static void ngx_http_tent_owner_open_timer(ngx_event_t *ev);
static void ngx_http_tent_owner_close(ngx_http_tent_store_t *store);
static void ngx_http_tent_owner_close_thread(void *data, ngx_log_t *log);
static void ngx_http_tent_owner_closed(ngx_event_t *ev);
static void ngx_http_tent_owner_exec(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op);
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
    ngx_uint_t            i;
    ngx_thread_task_t    *task;
    ngx_http_tent_ldb_t  *ldb;

    ldb = ngx_pcalloc(ngx_cycle->pool, sizeof(ngx_http_tent_ldb_t));
    if (ldb == NULL) {
        return NGX_ERROR;
    }

    ldb->path = (char *) store->db_path.data;
    ldb->options = leveldb_options_create();
    ldb->bloom = leveldb_filterpolicy_create_bloom(10);
    ldb->read = leveldb_readoptions_create();
    ldb->write_sync = leveldb_writeoptions_create();
    ldb->write_async = leveldb_writeoptions_create();

    if (ldb->options == NULL || ldb->bloom == NULL || ldb->read == NULL
        || ldb->write_sync == NULL || ldb->write_async == NULL)
    {
        return NGX_ERROR;
    }

    leveldb_options_set_create_if_missing(ldb->options, 1);

    /*
     * Most reads of a write look for a key that is not there (a new
     * post's id, an idempotency key): a bloom filter answers those
     * without reading a block of each table.
     */

    leveldb_options_set_filter_policy(ldb->options, ldb->bloom);
    leveldb_writeoptions_set_sync(ldb->write_sync, 1);
    leveldb_writeoptions_set_sync(ldb->write_async, 0);

    for (i = 0; i < NGX_HTTP_TENT_CAS_STRIPES; i++) {
        if (pthread_mutex_init(&ldb->cas_lock[i], NULL) != 0) {
            return NGX_ERROR;
        }
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
    ldb->probe_task = task;

    /* a reopen ends as an open does */

    task = ngx_thread_task_alloc(ngx_cycle->pool, 0);
    if (task == NULL) {
        return NGX_ERROR;
    }

    task->ctx = store;
    task->handler = ngx_http_tent_owner_reopen_thread;
    task->event.handler = ngx_http_tent_owner_opened;
    task->event.data = task;
    ldb->reopen_task = task;

    ldb->reopen_timer.handler = ngx_http_tent_owner_reopen_timer;
    ldb->reopen_timer.data = store;
    ldb->reopen_timer.log = store->log;
    ldb->reopen_timer.cancelable = 1;

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

    char                 *err;
    ngx_http_tent_ldb_t  *ldb;

    ldb = store->ldb;
    err = NULL;

    ldb->db = leveldb_open(ldb->options, ldb->path, &err);

    if (ldb->db == NULL) {
        ldb->error = err;

    } else if (err) {
        leveldb_free(err);
    }
}


static void
ngx_http_tent_owner_opened(ngx_event_t *ev)
{
    ngx_thread_task_t *task = ev->data;

    ngx_uint_t                 lock, level;
    ngx_msec_t                 elapsed;
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

        if (ldb->error) {
            leveldb_free(ldb->error);
            ldb->error = NULL;
        }

        ngx_http_tent_owner_close(store);
        return;
    }

    if (ldb->db == NULL) {

        /*
         * A lock error is the reload handoff: the old owner still has the
         * database for a moment.  Anything else (permissions, corruption)
         * is worth an error, though we still keep trying.
         */

        lock = (ngx_strstr(ldb->error, "lock") != NULL);

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
                          &store->db_path, store->open_attempts, ldb->error);
        }

        leveldb_free(ldb->error);
        ldb->error = NULL;

        ngx_add_timer(&store->open_timer, store->open_backoff);

        store->open_backoff = ngx_min(store->open_backoff * 2, 1000);

        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, store->log, 0,
                  "tent store: opened \"%V\" after %ui attempt(s) in %M ms",
                  &store->db_path, store->open_attempts, elapsed);

    store->state = NGX_HTTP_TENT_OWNER_OPEN;

    while (!ngx_queue_empty(&store->waiting)) {
        q = ngx_queue_head(&store->waiting);
        op = ngx_http_tent_store_op_of(q);

        ngx_http_tent_store_unwait(op);
        ngx_http_tent_owner_exec(store, op);
    }
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

    if (((ngx_http_tent_ldb_t *) store->ldb)->reopen_timer.timer_set) {
        ngx_del_timer(&((ngx_http_tent_ldb_t *) store->ldb)->reopen_timer);
    }

    ngx_http_tent_ipc_stop_listening(store);

    while (!ngx_queue_empty(&store->waiting)) {
        q = ngx_queue_head(&store->waiting);
        op = ngx_http_tent_store_op_of(q);

        ngx_http_tent_store_unwait(op);
        ngx_http_tent_store_dispatch(store, op);
    }

    if (store->inflight == 0) {
        ngx_http_tent_owner_close(store);
    }
}


static void
ngx_http_tent_owner_close(ngx_http_tent_store_t *store)
{
    ngx_http_tent_ldb_t  *ldb;

    ldb = store->ldb;

    if (ldb->db == NULL) {
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

    ngx_http_tent_ldb_t  *ldb;

    ldb = store->ldb;

    leveldb_close(ldb->db);
    ldb->db = NULL;
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
    ngx_uint_t            i;
    ngx_http_tent_ldb_t  *ldb;

    ldb = store->ldb;

    if (ldb == NULL) {
        return;
    }

    /* the thread pool has joined its threads by now */

    if (ldb->error) {
        /* an open that failed and was never looked at */
        leveldb_free(ldb->error);
        ldb->error = NULL;
    }

    if (ldb->db) {
        leveldb_close(ldb->db);
        ldb->db = NULL;

        ngx_log_error(NGX_LOG_NOTICE, store->log, 0,
                      "tent store: closed \"%V\" on exit", &store->db_path);
    }

    leveldb_options_destroy(ldb->options);
    leveldb_filterpolicy_destroy(ldb->bloom);
    leveldb_readoptions_destroy(ldb->read);
    leveldb_writeoptions_destroy(ldb->write_sync);
    leveldb_writeoptions_destroy(ldb->write_async);
    for (i = 0; i < NGX_HTTP_TENT_CAS_STRIPES; i++) {
        (void) pthread_mutex_destroy(&ldb->cas_lock[i]);
    }

    store->ldb = NULL;
}


static void
ngx_http_tent_owner_exec(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op)
{
    ngx_thread_task_t              *task;
    ngx_http_tent_exec_ctx_t       *ctx;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (sop->req_len > 2 && sop->req[0] == NGX_HTTP_TENT_OP_CAS) {
        ngx_queue_insert_tail(&store->cas_queue, &sop->queue);
        sop->where = NGX_HTTP_TENT_WHERE_RUNNING;
        store->inflight++;

        if (!store->cas_running) {
            ngx_http_tent_owner_cas_start(store);
        }

        return;
    }

    task = ngx_thread_task_alloc(op->pool, sizeof(ngx_http_tent_exec_ctx_t));
    if (task == NULL) {
        ngx_http_tent_owner_reject(op);
        return;
    }

    ctx = task->ctx;
    ctx->store = store;
    ctx->op = op;

    task->handler = ngx_http_tent_owner_exec_thread;
    task->event.handler = ngx_http_tent_owner_exec_done;
    task->event.data = task;

    if (ngx_thread_task_post(store->thread_pool, task) != NGX_OK) {
        ngx_http_tent_owner_reject(op);
        return;
    }

    sop->where = NGX_HTTP_TENT_WHERE_RUNNING;
    store->inflight++;
}


static void
ngx_http_tent_owner_exec_thread(void *data, ngx_log_t *log)
{
    ngx_http_tent_exec_ctx_t *ctx = data;

    ngx_http_tent_store_op_t       *op;
    ngx_http_tent_store_op_full_t  *sop;

    op = ctx->op;
    sop = ngx_http_tent_sop(op);

    if (ngx_http_tent_store_exec(ctx->store->ldb, sop->req, sop->req_len,
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

    if (ctx->res && ctx->res[0] == NGX_HTTP_TENT_STORE_UNAVAILABLE
        && ctx->res_len > 1)
    {
        /* the write that failed; the ones refused after it say nothing */

        ngx_log_error(NGX_LOG_ERR, store->log, 0,
                      "tent store: a write failed, writes are refused "
                      "until \"%V\" is reopened: %*s", &store->db_path,
                      ctx->res_len - 1, ctx->res + 1);
    }

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
    ngx_http_tent_ldb_t  *ldb;

    ldb = store->ldb;

    if (store->state == NGX_HTTP_TENT_OWNER_CLOSING && store->inflight == 0) {
        ngx_http_tent_owner_close(store);
        return;
    }

    if (ldb->write_failed && store->state == NGX_HTTP_TENT_OWNER_OPEN
        && !ldb->probing && !ldb->reopen_timer.timer_set)
    {
        ngx_add_timer(&ldb->reopen_timer, 100);
    }

    if (ldb->reopen_pending && store->state == NGX_HTTP_TENT_OWNER_OPENING
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
        ngx_http_tent_owner_reject(op);
    }
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
    ngx_http_tent_ldb_t    *ldb;
    ngx_http_tent_store_t  *store;

    store = ev->data;
    ldb = store->ldb;

    if (store->state == NGX_HTTP_TENT_OWNER_OPENING && ldb->reopen_pending) {
        if (store->inflight == 0) {
            ngx_http_tent_owner_reopen(store);
        }

        return;
    }

    if (store->state != NGX_HTTP_TENT_OWNER_OPEN || !ldb->write_failed
        || ldb->probing)
    {
        return;
    }

    if (ngx_thread_task_post(store->thread_pool, ldb->probe_task) != NGX_OK) {
        ngx_add_timer(&ldb->reopen_timer, 1000);
        return;
    }

    ldb->probing = 1;
}


static void
ngx_http_tent_owner_probe_thread(void *data, ngx_log_t *log)
{
    ngx_http_tent_store_t *store = data;

    DIR                  *dir;
    off_t                 need;
    size_t                len;
    u_char                file[NGX_MAX_PATH];
    struct stat           st;
    struct statvfs        vfs;
    struct dirent        *de;
    ngx_http_tent_ldb_t  *ldb;

    ldb = store->ldb;
    ldb->room = 0;

    /* the logs are replayed into a table file: room for them, and 1 MB */

    need = 1024 * 1024;

    dir = opendir(ldb->path);
    if (dir == NULL) {
        return;
    }

    while ((de = readdir(dir)) != NULL) {
        len = ngx_strlen(de->d_name);

        if (len < 4 || ngx_strcmp(de->d_name + len - 4, ".log") != 0) {
            continue;
        }

        ngx_snprintf(file, sizeof(file), "%s/%s%Z", ldb->path, de->d_name);

        if (stat((char *) file, &st) == 0) {
            need += st.st_size;
        }
    }

    (void) closedir(dir);

    /* and the directory must take new files (read-only, immutable) */

    if (access(ldb->path, W_OK) == 0
        && statvfs(ldb->path, &vfs) == 0
        && (off_t) vfs.f_bavail * (off_t) vfs.f_frsize >= need)
    {
        ldb->room = 1;
    }
}


static void
ngx_http_tent_owner_probed(ngx_event_t *ev)
{
    ngx_thread_task_t *task = ev->data;

    ngx_http_tent_ldb_t    *ldb;
    ngx_http_tent_store_t  *store;

    store = task->ctx;
    ldb = store->ldb;

    ldb->probing = 0;

    if (store->state != NGX_HTTP_TENT_OWNER_OPEN || !ldb->write_failed) {
        return;
    }

    if (!ldb->room) {
        ngx_add_timer(&ldb->reopen_timer, 1000);
        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, store->log, 0,
                  "tent store: reopening \"%V\" after a failed write",
                  &store->db_path);

    store->state = NGX_HTTP_TENT_OWNER_OPENING;
    store->open_started = ngx_current_msec;
    store->open_attempts = 0;
    store->open_backoff = 25;
    ldb->reopen_pending = 1;

    if (store->inflight == 0) {
        ngx_http_tent_owner_reopen(store);
    }
}


static void
ngx_http_tent_owner_reopen(ngx_http_tent_store_t *store)
{
    ngx_http_tent_ldb_t  *ldb;

    ldb = store->ldb;

    if (ngx_thread_task_post(store->thread_pool, ldb->reopen_task) != NGX_OK)
    {
        if (!ldb->reopen_timer.timer_set) {
            ngx_add_timer(&ldb->reopen_timer, 1000);
        }

        return;
    }

    ldb->reopen_pending = 0;
    store->open_attempts++;
    store->inflight++;
}


static void
ngx_http_tent_owner_reopen_thread(void *data, ngx_log_t *log)
{
    ngx_http_tent_store_t *store = data;

    ngx_http_tent_ldb_t  *ldb;

    ldb = store->ldb;

    if (ldb->db) {
        leveldb_close(ldb->db);
        ldb->db = NULL;
    }

    ldb->write_failed = 0;

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


/* the executor: runs on a pool thread, parses the bytes it is given */

static void
ngx_http_tent_out_put(ngx_http_tent_out_t *out, const void *data, size_t n)
{
    size_t   size;
    u_char  *p;

    if (out->failed) {
        return;
    }

    if (out->len + n > out->size) {
        size = ngx_max(out->size * 2, out->len + n);
        size = ngx_max(size, 64);

        p = realloc(out->data, size);
        if (p == NULL) {
            out->failed = 1;
            return;
        }

        out->data = p;
        out->size = size;
    }

    if (n) {
        ngx_memcpy(out->data + out->len, data, n);
        out->len += n;
    }
}


static void
ngx_http_tent_out_u32(ngx_http_tent_out_t *out, uint32_t v)
{
    u_char  b[4];

    b[0] = (u_char) (v >> 24);
    b[1] = (u_char) (v >> 16);
    b[2] = (u_char) (v >> 8);
    b[3] = (u_char) v;

    ngx_http_tent_out_put(out, b, 4);
}


static void
ngx_http_tent_out_str(ngx_http_tent_out_t *out, const char *s, size_t n)
{
    ngx_http_tent_out_u32(out, (uint32_t) n);
    ngx_http_tent_out_put(out, s, n);
}


static void
ngx_http_tent_out_status(ngx_http_tent_out_t *out, ngx_uint_t status)
{
    out->len = 0;
    out->data[0] = (u_char) status;
    out->len = 1;
}


static void
ngx_http_tent_out_error(ngx_http_tent_out_t *out, const char *message)
{
    ngx_http_tent_out_status(out, NGX_HTTP_TENT_STORE_ERROR);
    ngx_http_tent_out_put(out, message, ngx_strlen(message));
}


/* a write that failed answers 503, and no other is tried (see the ldb) */

static void
ngx_http_tent_out_write_failed(ngx_http_tent_ldb_t *ldb,
    ngx_http_tent_out_t *out, const char *message)
{
    ldb->write_failed = 1;

    ngx_http_tent_out_status(out, NGX_HTTP_TENT_STORE_UNAVAILABLE);
    ngx_http_tent_out_put(out, message, ngx_strlen(message));
}


static ngx_int_t
ngx_http_tent_in_u8(ngx_http_tent_in_t *in, ngx_uint_t *v)
{
    if (in->last - in->pos < 1) {
        return NGX_ERROR;
    }

    *v = *in->pos++;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_in_u32(ngx_http_tent_in_t *in, uint32_t *v)
{
    u_char  *p;

    if (in->last - in->pos < 4) {
        return NGX_ERROR;
    }

    p = in->pos;
    *v = ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16)
         | ((uint32_t) p[2] << 8) | p[3];
    in->pos += 4;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_in_str(ngx_http_tent_in_t *in, ngx_str_t *s)
{
    uint32_t  n;

    if (ngx_http_tent_in_u32(in, &n) != NGX_OK
        || (size_t) (in->last - in->pos) < n)
    {
        return NGX_ERROR;
    }

    s->len = n;
    s->data = in->pos;
    in->pos += n;

    return NGX_OK;
}


static int
ngx_http_tent_key_cmp(const char *a, size_t alen, ngx_str_t *b)
{
    int  rc;

    rc = memcmp(a, b->data, ngx_min(alen, b->len));

    if (rc != 0) {
        return rc;
    }

    return (alen < b->len) ? -1 : (alen > b->len);
}


static void
ngx_http_tent_exec_get(ngx_http_tent_ldb_t *ldb, ngx_http_tent_in_t *in,
    ngx_http_tent_out_t *out)
{
    char       *err, *v;
    size_t      vlen;
    ngx_str_t   key;

    if (ngx_http_tent_in_str(in, &key) != NGX_OK || in->pos != in->last) {
        ngx_http_tent_out_error(out, "malformed get");
        return;
    }

    err = NULL;
    v = leveldb_get(ldb->db, ldb->read, (char *) key.data, key.len, &vlen,
                    &err);

    if (err) {
        ngx_http_tent_out_error(out, err);
        leveldb_free(err);
        return;
    }

    if (v == NULL) {
        ngx_http_tent_out_status(out, NGX_HTTP_TENT_STORE_NOT_FOUND);
        return;
    }

    ngx_http_tent_out_put(out, v, vlen);
    leveldb_free(v);
}


/* "u32 n, n x (PUT key value | DEL key)" to the end of the input */

static ngx_int_t
ngx_http_tent_in_batch(ngx_http_tent_in_t *in, leveldb_writebatch_t *batch)
{
    uint32_t    n, i;
    ngx_str_t   key, value;
    ngx_uint_t  kind;

    if (ngx_http_tent_in_u32(in, &n) != NGX_OK) {
        return NGX_ERROR;
    }

    for (i = 0; i < n; i++) {

        if (ngx_http_tent_in_u8(in, &kind) != NGX_OK
            || ngx_http_tent_in_str(in, &key) != NGX_OK)
        {
            return NGX_ERROR;
        }

        if (kind == NGX_HTTP_TENT_WRITE_PUT) {
            if (ngx_http_tent_in_str(in, &value) != NGX_OK) {
                return NGX_ERROR;
            }

            leveldb_writebatch_put(batch, (char *) key.data, key.len,
                                   (char *) value.data, value.len);

        } else if (kind == NGX_HTTP_TENT_WRITE_DEL) {
            leveldb_writebatch_delete(batch, (char *) key.data, key.len);

        } else {
            return NGX_ERROR;
        }
    }

    return (in->pos == in->last) ? NGX_OK : NGX_ERROR;
}


static void
ngx_http_tent_exec_cas(ngx_http_tent_ldb_t *ldb, ngx_uint_t flags,
    ngx_http_tent_in_t *in, ngx_http_tent_out_t *out)
{
    char                  *err, *v;
    size_t                 vlen;
    ngx_str_t              key, expected, value;
    ngx_uint_t             has;
    pthread_mutex_t       *lock;
    leveldb_writebatch_t  *batch;

    batch = leveldb_writebatch_create();
    if (batch == NULL) {
        ngx_http_tent_out_error(out, "out of memory");
        return;
    }

    if (ngx_http_tent_in_str(in, &key) != NGX_OK
        || ngx_http_tent_in_u8(in, &has) != NGX_OK
        || (has && ngx_http_tent_in_str(in, &expected) != NGX_OK)
        || ngx_http_tent_in_str(in, &value) != NGX_OK)
    {
        leveldb_writebatch_destroy(batch);
        ngx_http_tent_out_error(out, "malformed cas");
        return;
    }

    leveldb_writebatch_put(batch, (char *) key.data, key.len,
                           (char *) value.data, value.len);

    if (ngx_http_tent_in_batch(in, batch) != NGX_OK) {
        leveldb_writebatch_destroy(batch);
        ngx_http_tent_out_error(out, "malformed cas");
        return;
    }

    lock = &ldb->cas_lock[ngx_crc32_short(key.data, key.len)
                          % NGX_HTTP_TENT_CAS_STRIPES];

    (void) pthread_mutex_lock(lock);

    err = NULL;
    v = leveldb_get(ldb->db, ldb->read, (char *) key.data, key.len, &vlen,
                    &err);

    if (err) {
        ngx_http_tent_out_error(out, err);
        leveldb_free(err);
        goto done;
    }

    if (v == NULL && has) {
        ngx_http_tent_out_status(out, NGX_HTTP_TENT_STORE_NOT_FOUND);
        goto done;
    }

    if (v && (!has || ngx_http_tent_key_cmp(v, vlen, &expected) != 0)) {
        ngx_http_tent_out_status(out, NGX_HTTP_TENT_STORE_CONFLICT);
        ngx_http_tent_out_put(out, v, vlen);
        goto done;
    }

    leveldb_write(ldb->db, (flags & NGX_HTTP_TENT_OP_SYNC) ? ldb->write_sync
                                                           : ldb->write_async,
                  batch, &err);

    if (err) {
        ngx_http_tent_out_write_failed(ldb, out, err);
        leveldb_free(err);
    }

done:

    (void) pthread_mutex_unlock(lock);

    leveldb_writebatch_destroy(batch);

    if (v) {
        leveldb_free(v);
    }
}


/* has an earlier member of the group written this key */

static ngx_int_t
ngx_http_tent_cas_written(ngx_str_t *keys, ngx_uint_t n, ngx_str_t *key)
{
    ngx_uint_t  i;

    for (i = 0; i < n; i++) {
        if (keys[i].len == key->len
            && ngx_memcmp(keys[i].data, key->data, key->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* a batch's keys, for the check above (NULL: not a batch we can read) */

static ngx_int_t
ngx_http_tent_cas_keys(ngx_http_tent_in_t *in, ngx_array_t *keys)
{
    ngx_str_t            key, value, *k;
    uint32_t             n, i;
    ngx_uint_t           kind;
    ngx_http_tent_in_t   copy;

    copy = *in;

    if (ngx_http_tent_in_u32(&copy, &n) != NGX_OK) {
        return NGX_ERROR;
    }

    for (i = 0; i < n; i++) {
        if (ngx_http_tent_in_u8(&copy, &kind) != NGX_OK
            || ngx_http_tent_in_str(&copy, &key) != NGX_OK
            || (kind == NGX_HTTP_TENT_WRITE_PUT
                && ngx_http_tent_in_str(&copy, &value) != NGX_OK))
        {
            return NGX_ERROR;
        }

        k = ngx_array_push(keys);
        if (k == NULL) {
            return NGX_ERROR;
        }

        *k = key;
    }

    return NGX_OK;
}


static void
ngx_http_tent_owner_cas_thread(void *data, ngx_log_t *log)
{
    ngx_http_tent_cas_group_t *g = data;

    char                      *err, *v;
    size_t                     vlen;
    ngx_str_t                  key, expected, value;
    ngx_uint_t                 i, j, op, flags, has, first, accepted;
    ngx_pool_t                *pool;
    ngx_array_t                keys;
    ngx_http_tent_in_t         in;
    ngx_http_tent_out_t        out[NGX_HTTP_TENT_CAS_GROUP];
    ngx_http_tent_ldb_t       *ldb;
    leveldb_writebatch_t      *batch, *one;

    ldb = g->store->ldb;
    accepted = 0;
    batch = NULL;

    ngx_memzero(out, sizeof(out));

    pool = ngx_create_pool(4096, log);
    if (pool == NULL
        || ngx_array_init(&keys, pool, 64, sizeof(ngx_str_t)) != NGX_OK
        || (batch = leveldb_writebatch_create()) == NULL)
    {
        goto failed;
    }

    for (i = 0; i < g->n; i++) {
        ngx_http_tent_out_put(&out[i], "\0", 1);

        in.pos = ngx_http_tent_sop(g->ops[i])->req;
        in.last = in.pos + ngx_http_tent_sop(g->ops[i])->req_len;

        if (out[i].failed
            || ngx_http_tent_in_u8(&in, &op) != NGX_OK
            || ngx_http_tent_in_u8(&in, &flags) != NGX_OK
            || ngx_http_tent_in_str(&in, &key) != NGX_OK
            || ngx_http_tent_in_u8(&in, &has) != NGX_OK
            || (has && ngx_http_tent_in_str(&in, &expected) != NGX_OK)
            || ngx_http_tent_in_str(&in, &value) != NGX_OK)
        {
            ngx_http_tent_out_error(&out[i], "malformed cas");
            continue;
        }

        /* an earlier member writes this key: the next group reads it */

        if (ngx_http_tent_cas_written(keys.elts, keys.nelts, &key)) {
            break;
        }

        if (ldb == NULL || ldb->db == NULL || ldb->write_failed) {
            ngx_http_tent_out_status(&out[i],
                                     NGX_HTTP_TENT_STORE_UNAVAILABLE);
            continue;
        }

        err = NULL;
        v = leveldb_get(ldb->db, ldb->read, (char *) key.data, key.len,
                        &vlen, &err);

        if (err) {
            ngx_http_tent_out_error(&out[i], err);
            leveldb_free(err);
            continue;
        }

        if (v == NULL && has) {
            ngx_http_tent_out_status(&out[i], NGX_HTTP_TENT_STORE_NOT_FOUND);
            continue;
        }

        if (v && (!has || ngx_http_tent_key_cmp(v, vlen, &expected) != 0)) {
            ngx_http_tent_out_status(&out[i], NGX_HTTP_TENT_STORE_CONFLICT);
            ngx_http_tent_out_put(&out[i], v, vlen);
            leveldb_free(v);
            continue;
        }

        if (v) {
            leveldb_free(v);
        }

        /* it holds: its value and batch join the group's write */

        first = keys.nelts;

        one = leveldb_writebatch_create();

        if (one == NULL
            || ngx_http_tent_cas_keys(&in, &keys) != NGX_OK)
        {
            if (one) {
                leveldb_writebatch_destroy(one);
            }

            keys.nelts = first;
            ngx_http_tent_out_error(&out[i], "malformed cas");
            continue;
        }

        leveldb_writebatch_put(one, (char *) key.data, key.len,
                               (char *) value.data, value.len);

        if (ngx_http_tent_in_batch(&in, one) != NGX_OK) {
            leveldb_writebatch_destroy(one);
            keys.nelts = first;
            ngx_http_tent_out_error(&out[i], "malformed cas");
            continue;
        }

        if (ngx_array_push(&keys) == NULL) {
            leveldb_writebatch_destroy(one);
            goto failed;
        }

        ((ngx_str_t *) keys.elts)[keys.nelts - 1] = key;

        leveldb_writebatch_append(batch, one);
        leveldb_writebatch_destroy(one);

        ngx_http_tent_out_status(&out[i], NGX_HTTP_TENT_STORE_OK);
        accepted++;
    }

    g->ran = i;

    if (accepted) {
        err = NULL;
        leveldb_write(ldb->db, ldb->write_sync, batch, &err);

        if (err) {
            for (j = 0; j < g->ran; j++) {
                if (out[j].len == 1 && out[j].data[0] == NGX_HTTP_TENT_STORE_OK)
                {
                    ngx_http_tent_out_write_failed(ldb, &out[j], err);
                }
            }

            leveldb_free(err);
        }
    }

    for (j = 0; j < g->ran; j++) {
        g->res[j] = out[j].failed ? NULL : out[j].data;
        g->res_len[j] = out[j].len;

        if (out[j].failed) {
            free(out[j].data);
        }
    }

    for (j = g->ran; j < g->n; j++) {
        free(out[j].data);
    }

    leveldb_writebatch_destroy(batch);
    ngx_destroy_pool(pool);

    return;

failed:

    /* no memory for the group: each gets an error, none is written */

    for (j = 0; j < g->n; j++) {
        free(out[j].data);
        g->res[j] = NULL;
    }

    g->ran = g->n;

    if (batch) {
        leveldb_writebatch_destroy(batch);
    }

    if (pool) {
        ngx_destroy_pool(pool);
    }
}


static void
ngx_http_tent_exec_write(ngx_http_tent_ldb_t *ldb, ngx_uint_t flags,
    ngx_http_tent_in_t *in, ngx_http_tent_out_t *out)
{
    char                  *err;
    leveldb_writebatch_t  *batch;

    batch = leveldb_writebatch_create();
    if (batch == NULL) {
        ngx_http_tent_out_error(out, "out of memory");
        return;
    }

    if (ngx_http_tent_in_batch(in, batch) != NGX_OK) {
        leveldb_writebatch_destroy(batch);
        ngx_http_tent_out_error(out, "malformed write");
        return;
    }

    /*
     * Concurrent synced writes from several pool threads are grouped by
     * LevelDB into one log write and one fsync.
     */

    err = NULL;
    leveldb_write(ldb->db, (flags & NGX_HTTP_TENT_OP_SYNC) ? ldb->write_sync
                                                           : ldb->write_async,
                  batch, &err);

    if (err) {
        ngx_http_tent_out_write_failed(ldb, out, err);
        leveldb_free(err);
    }

    leveldb_writebatch_destroy(batch);
}


static void
ngx_http_tent_exec_mget(ngx_http_tent_ldb_t *ldb, ngx_http_tent_in_t *in,
    ngx_http_tent_out_t *out)
{
    char       *err, *v;
    size_t      vlen;
    uint32_t    n, i;
    ngx_str_t   key;
    u_char     *save;

    if (ngx_http_tent_in_u32(in, &n) != NGX_OK || n > 100000) {
        ngx_http_tent_out_error(out, "malformed mget");
        return;
    }

    /* check the whole request before answering any of it */

    save = in->pos;

    for (i = 0; i < n; i++) {
        if (ngx_http_tent_in_str(in, &key) != NGX_OK) {
            ngx_http_tent_out_error(out, "malformed mget");
            return;
        }
    }

    if (in->pos != in->last) {
        ngx_http_tent_out_error(out, "malformed mget");
        return;
    }

    in->pos = save;

    for (i = 0; i < n; i++) {
        (void) ngx_http_tent_in_str(in, &key);

        err = NULL;
        v = leveldb_get(ldb->db, ldb->read, (char *) key.data, key.len,
                        &vlen, &err);

        if (err) {
            ngx_http_tent_out_error(out, err);
            leveldb_free(err);
            return;
        }

        if (v == NULL) {
            ngx_http_tent_out_put(out, "\0", 1);
            continue;
        }

        ngx_http_tent_out_put(out, "\1", 1);
        ngx_http_tent_out_str(out, v, vlen);
        leveldb_free(v);
    }
}


static void
ngx_http_tent_exec_scan(ngx_http_tent_ldb_t *ldb, ngx_http_tent_in_t *in,
    ngx_http_tent_out_t *out)
{
    size_t             klen, vlen;
    uint32_t           limit, count;
    ngx_str_t          start, end;
    ngx_uint_t         reverse;
    const char        *k, *v;
    leveldb_iterator_t  *it;

    if (ngx_http_tent_in_str(in, &start) != NGX_OK
        || ngx_http_tent_in_str(in, &end) != NGX_OK
        || ngx_http_tent_in_u32(in, &limit) != NGX_OK
        || ngx_http_tent_in_u8(in, &reverse) != NGX_OK
        || in->pos != in->last)
    {
        ngx_http_tent_out_error(out, "malformed scan");
        return;
    }

    it = leveldb_create_iterator(ldb->db, ldb->read);
    if (it == NULL) {
        ngx_http_tent_out_error(out, "out of memory");
        return;
    }

    if (!reverse) {
        leveldb_iter_seek(it, (char *) start.data, start.len);

    } else if (end.len) {
        leveldb_iter_seek(it, (char *) end.data, end.len);

        if (leveldb_iter_valid(it)) {
            leveldb_iter_prev(it);

        } else {
            leveldb_iter_seek_to_last(it);
        }

    } else {
        leveldb_iter_seek_to_last(it);
    }

    /* a reply stays well inside one IPC frame */

    for (count = 0;
         leveldb_iter_valid(it) && (limit == 0 || count < limit)
         && out->len < NGX_HTTP_TENT_MAX_FRAME / 4;
         count++)
    {
        k = leveldb_iter_key(it, &klen);

        if (reverse) {
            if (ngx_http_tent_key_cmp(k, klen, &start) < 0) {
                break;
            }

        } else if (end.len && ngx_http_tent_key_cmp(k, klen, &end) >= 0) {
            break;
        }

        v = leveldb_iter_value(it, &vlen);

        ngx_http_tent_out_str(out, k, klen);
        ngx_http_tent_out_str(out, v, vlen);

        if (reverse) {
            leveldb_iter_prev(it);

        } else {
            leveldb_iter_next(it);
        }
    }

    leveldb_iter_destroy(it);
}


ngx_int_t
ngx_http_tent_store_exec(void *data, u_char *req, size_t len, u_char **res,
    size_t *res_len)
{
    ngx_http_tent_ldb_t *ldb = data;

    ngx_uint_t           op, flags;
    ngx_http_tent_in_t   in;
    ngx_http_tent_out_t  out;

    ngx_memzero(&out, sizeof(ngx_http_tent_out_t));

    ngx_http_tent_out_put(&out, "\0", 1);

    if (out.failed) {
        return NGX_ERROR;
    }

    in.pos = req;
    in.last = req + len;

    if (ngx_http_tent_in_u8(&in, &op) != NGX_OK
        || ngx_http_tent_in_u8(&in, &flags) != NGX_OK)
    {
        ngx_http_tent_out_error(&out, "malformed request");
        goto done;
    }

    if (ldb == NULL || ldb->db == NULL
        || (ldb->write_failed
            && (op == NGX_HTTP_TENT_OP_CAS || op == NGX_HTTP_TENT_OP_WRITE)))
    {
        ngx_http_tent_out_status(&out, NGX_HTTP_TENT_STORE_UNAVAILABLE);
        goto done;
    }

    switch (op) {

    case NGX_HTTP_TENT_OP_GET:
        ngx_http_tent_exec_get(ldb, &in, &out);
        break;

    case NGX_HTTP_TENT_OP_CAS:
        ngx_http_tent_exec_cas(ldb, flags, &in, &out);
        break;

    case NGX_HTTP_TENT_OP_WRITE:
        ngx_http_tent_exec_write(ldb, flags, &in, &out);
        break;

    case NGX_HTTP_TENT_OP_SCAN:
        ngx_http_tent_exec_scan(ldb, &in, &out);
        break;

    case NGX_HTTP_TENT_OP_MGET:
        ngx_http_tent_exec_mget(ldb, &in, &out);
        break;

    default:
        ngx_http_tent_out_error(&out, "unknown operation");
        break;
    }

done:

    if (out.failed) {
        free(out.data);
        return NGX_ERROR;
    }

    *res = out.data;
    *res_len = out.len;

    return NGX_OK;
}
