
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The store owner's memory (docs/store.md, "Memory of the owner"): LevelDB
 * allocates on the pool's threads, and glibc gives each thread that
 * allocates at once an arena of its own (up to 8 a core), whose freed
 * chunks stay in the worker's RSS.  The owner caps the arenas, and once
 * background work (a fan-out's loads and settlements) has run, gives
 * the free pages back to the kernel with malloc_trim(), on a pool
 * thread, at most once a second.  Without glibc both do nothing.  Once
 * the work is over (no background operation for a second) the memtable
 * it filled is written to a table first, if a quarter of the write
 * buffer or more went since the last time and LevelDB has no compaction
 * due: up to two write buffers (16 MB each) would stay in the RSS until
 * the next writes filled them.
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_store_private.h"

#if (__GLIBC__)
#include <malloc.h>
#endif


/* arenas for the event loop and the pool's threads: fewer, denser */
#define NGX_HTTP_TENT_ARENAS      2

/* after background work, the trim waits this long, and so at most once */
#define NGX_HTTP_TENT_TRIM_AFTER  1000

/* a flush put off while LevelDB compacts: asked again this many times */
#define NGX_HTTP_TENT_FLUSH_TRIES  30


static void ngx_http_tent_memory_timer(ngx_event_t *ev);
static void ngx_http_tent_memory_trim_thread(void *data, ngx_log_t *log);
static void ngx_http_tent_memory_trimmed(ngx_event_t *ev);


ngx_int_t
ngx_http_tent_owner_memory_init(ngx_http_tent_store_t *store)
{
    ngx_thread_task_t  *task;

#if (__GLIBC__)
    /*
     * Set before the pool's threads allocate: a thread takes its arena at
     * its first malloc().  The workers that are not the owner keep
     * glibc's default (their one thread uses the main arena).
     */

    if (mallopt(M_ARENA_MAX, NGX_HTTP_TENT_ARENAS) != 1) {
        /* another allocator (a sanitizer's): it keeps its own arenas */
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, store->log, 0,
                       "tent store: mallopt(M_ARENA_MAX) not taken");
    }
#endif

    task = ngx_thread_task_alloc(ngx_cycle->pool, 0);
    if (task == NULL) {
        return NGX_ERROR;
    }

    task->ctx = store;
    task->handler = ngx_http_tent_memory_trim_thread;
    task->event.handler = ngx_http_tent_memory_trimmed;
    task->event.data = task;
    store->trim_task = task;

    store->trim_timer.handler = ngx_http_tent_memory_timer;
    store->trim_timer.data = store;
    store->trim_timer.log = store->log;
    store->trim_timer.cancelable = 1;

    return NGX_OK;
}


/* a background operation ended: a trim within a second */

void
ngx_http_tent_owner_memory_used(ngx_http_tent_store_t *store)
{
    store->background_ended = ngx_current_msec;
    store->flush_declined = 0;

    if (store->trim_task == NULL || store->trimming
        || store->trim_timer.timer_set)
    {
        return;
    }

    ngx_add_timer(&store->trim_timer, NGX_HTTP_TENT_TRIM_AFTER);
}


static void
ngx_http_tent_memory_timer(ngx_event_t *ev)
{
    ngx_uint_t              idle;
    ngx_http_tent_store_t  *store;

    store = ev->data;

    if (store->state != NGX_HTTP_TENT_OWNER_OPEN) {
        return;
    }

    if (store->trimming) {
        ngx_add_timer(&store->trim_timer, NGX_HTTP_TENT_TRIM_AFTER);
        return;
    }

    idle = (ngx_current_msec - store->background_ended
            >= NGX_HTTP_TENT_TRIM_AFTER);

    /*
     * A quarter of the write buffer at least (LevelDB's own default
     * buffer for our 16 MB): no more tables than that default would
     * make, however the writes and the pauses come.  Not after a failed
     * write: the disk is full, the owner reopens.
     */

    store->flushing = (idle
                       && store->written >= store->write_buffer / 4
                       && !ngx_http_tent_ldb_write_failed(store->ldb));

    /* a busy pool: the next background operation to end tries again */

    if (ngx_thread_task_post(store->thread_pool, store->trim_task) != NGX_OK)
    {
        store->flushing = 0;
        return;
    }

    /*
     * A trim alone is not in "inflight": a close or a reopen need not
     * wait for it.  A flush uses the database: they do.
     */

    store->trimming = 1;
    store->trim_posted = ngx_current_msec;

    if (store->flushing) {
        store->flush_written = store->written;
        store->inflight++;
    }

    /* work goes on: look again a second later, for its end */

    if (!idle) {
        ngx_add_timer(&store->trim_timer, NGX_HTTP_TENT_TRIM_AFTER);
    }
}


static void
ngx_http_tent_memory_trim_thread(void *data, ngx_log_t *log)
{
    ngx_http_tent_store_t *store = data;

    store->flushed = store->flushing ? ngx_http_tent_ldb_flush(store->ldb)
                                     : NGX_DECLINED;

#if (__GLIBC__)
    store->trimmed = malloc_trim(0);
#else
    store->trimmed = 0;
#endif
}


static void
ngx_http_tent_memory_trimmed(ngx_event_t *ev)
{
    ngx_thread_task_t *task = ev->data;

    ngx_http_tent_store_t  *store;

    store = task->ctx;

    store->trimming = 0;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, store->log, 0,
                   "tent store owner: malloc_trim() after background work: "
                   "%s", store->trimmed ? "memory given back"
                                        : "nothing to give");

    if (store->flushing) {
        store->flushing = 0;
        store->inflight--;

        if (store->flushed == NGX_OK) {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, store->log, 0,
                           "tent store owner: background work over, %uz "
                           "bytes written: the memtable to a table",
                           store->flush_written);

            /* what came during the flush is in the next memtable */

            store->written -= ngx_min(store->written, store->flush_written);

        } else if (++store->flush_declined < NGX_HTTP_TENT_FLUSH_TRIES) {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, store->log, 0,
                           "tent store owner: background work over, %uz "
                           "bytes written: a compaction is due, the "
                           "memtable's flush later", store->written);

            /* idle still (it was at the post), asked again in a second */

            ngx_add_timer(&store->trim_timer, NGX_HTTP_TENT_TRIM_AFTER);
        }

        /* a close waiting for it */

        ngx_http_tent_owner_after(store);
    }

    /* background work that ended meanwhile: its trim, its flush */

    if (!store->trim_timer.timer_set
        && (ngx_msec_int_t) (store->background_ended - store->trim_posted)
           >= 0)
    {
        ngx_add_timer(&store->trim_timer, NGX_HTTP_TENT_TRIM_AFTER);
    }
}
