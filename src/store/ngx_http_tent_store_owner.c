
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The store owner: worker 0 opens LevelDB (one process per database is
 * all LevelDB allows) and runs every LevelDB call on an nginx thread pool,
 * never on the event loop.  On a reload the new worker 0 starts before the
 * old one lets go, so opening retries with backoff, and the old owner
 * closes the database as soon as graceful shutdown begins.  This file is
 * the database's life: opening, the waiting queue, handing over, closing,
 * reopening after a failed write once a probe finds room.  Where an
 * operation runs (the two classes on the thread pool, the groups of
 * compare-and-sets) is ngx_http_tent_store_owner_exec.c; what runs is
 * ngx_http_tent_store_leveldb.c.
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store_private.h"

#include <sys/statvfs.h>


static void ngx_http_tent_owner_open(ngx_http_tent_store_t *store);
static void ngx_http_tent_owner_open_thread(void *data, ngx_log_t *log);
static void ngx_http_tent_owner_opened(ngx_event_t *ev);
static void ngx_http_tent_owner_locked(ngx_http_tent_store_t *store,
    ngx_msec_t elapsed);
static void ngx_http_tent_owner_open_timer(ngx_event_t *ev);
static void ngx_http_tent_owner_close(ngx_http_tent_store_t *store);
static void ngx_http_tent_owner_close_thread(void *data, ngx_log_t *log);
static void ngx_http_tent_owner_closed(ngx_event_t *ev);
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
    ngx_http_tent_ldb_write_buffer(ldb, store->write_buffer);

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, store->log, 0,
                   "tent store owner: write buffer %uz", store->write_buffer);

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

    if (ngx_http_tent_ipc_listen(store) == NGX_ERROR) {
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
        return;
    }

    /* who holds the lock: we do not, so F_GETLK drops nothing of ours */

    store->lock_holder = 0;

    if (ngx_strstr(ngx_http_tent_ldb_error(store->ldb), "lock") != NULL) {
        store->lock_holder = ngx_http_tent_store_lock_holder(&store->db_path);
    }
}


static void
ngx_http_tent_owner_opened(ngx_event_t *ev)
{
    ngx_thread_task_t *task = ev->data;

    ngx_uint_t                 n, lock, level;
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
        level = lock ? NGX_LOG_NOTICE : NGX_LOG_ERR;

        if (lock) {
            ngx_http_tent_owner_locked(store, elapsed);
        }

        if ((store->open_attempts == 1 || store->open_attempts % 30 == 0
             || lock)
            && (!lock || elapsed < 5000))
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

    /* the socket, left to another nginx while it had the database */

    if (store->listening == NULL
        && ngx_http_tent_ipc_listen(store) != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ALERT, store->log, 0,
                      "tent store: the other workers cannot reach the "
                      "store at \"%V\"", &store->socket_path);
    }

    /* ours now, whoever had it (tent_status) */

    store->lock_said = 0;
    store->lock_holder = 0;
    ngx_http_tent_gauge(NGX_HTTP_TENT_STAT_STORE_LOCKED, 0);
    ngx_http_tent_gauge(NGX_HTTP_TENT_STAT_STORE_LOCK_PID, 0);

    /*
     * Those there now, once each: a write the registry fence parks goes
     * back to the tail (behind a registry write that runs), and waits
     * for the fence's release, not for this loop to take it again.
     */

    for (n = store->nwaiting; n && !ngx_queue_empty(&store->waiting); n--) {
        q = ngx_queue_head(&store->waiting);
        op = ngx_http_tent_store_op_of(q);

        ngx_http_tent_store_unwait(op);
        ngx_http_tent_owner_exec(store, op);
    }

    /* those that waited for a thread while the database was reopened */

    ngx_http_tent_owner_next_background(store);
}


/*
 * The lock is another's: for a moment on a reload or a binary upgrade
 * (the old owner hands over; notice lines), else a second nginx, or any
 * process, on our store.  Past 5 s: one error line a minute, and the
 * holder in tent_status, until we open it.
 */

static void
ngx_http_tent_owner_locked(ngx_http_tent_store_t *store, ngx_msec_t elapsed)
{
    ngx_http_tent_gauge(NGX_HTTP_TENT_STAT_STORE_LOCKED, 1);
    ngx_http_tent_gauge(NGX_HTTP_TENT_STAT_STORE_LOCK_PID,
                        (store->lock_holder > 0) ? store->lock_holder : 0);

    if (elapsed < 5000
        || (store->lock_said
            && ngx_current_msec - store->lock_said < 60000))
    {
        return;
    }

    store->lock_said = ngx_current_msec;

    if (store->lock_said == 0) {
        store->lock_said = 1;
    }

    if (store->lock_holder > 0) {
        ngx_log_error(NGX_LOG_ERR, store->log, 0,
                      "tent store \"%V\" is locked by another process "
                      "(pid %P) for %M s: requests needing the store get "
                      "503", &store->path, store->lock_holder,
                      elapsed / 1000);
        return;
    }

    ngx_log_error(NGX_LOG_ERR, store->log, 0,
                  "tent store \"%V\" is locked by another process "
                  "(pid unknown) for %M s: requests needing the store get "
                  "503", &store->path, elapsed / 1000);
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

    ngx_http_tent_ipc_resign(store);

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
        /*
         * Again shortly, while the handover holds the process (else the
         * workers would wait for its timer, and the next owner with
         * them); exit_process closes it at the latest.
         */

        store->inflight--;
        ngx_add_timer(&store->reopen_timer, 100);
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


/* after operations came back: close, reopen, or watch for room */

void
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

    if (store->state == NGX_HTTP_TENT_OWNER_CLOSING) {

        /* a close the pool refused */

        if (store->inflight == 0) {
            ngx_http_tent_owner_close(store);
        }

        return;
    }

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


/* fail an operation soon, never from inside submit */

void
ngx_http_tent_owner_reject(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_store_fail_later(op, NGX_HTTP_TENT_STORE_UNAVAILABLE,
                                   "too many operations waiting");
}
