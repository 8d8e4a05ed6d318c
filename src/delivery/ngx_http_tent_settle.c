
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Settlements written in batches: a job's removal, its retry or its
 * dead letter, with its status record (ngx_http_tent_send.c), and a job
 * put back for its host (ngx_http_tent_hosts.c), each built into the
 * task's own write, are appended to one store write that goes when
 * NGX_HTTP_TENT_SETTLE_MAX jobs wait in it, NGX_HTTP_TENT_SETTLE_WAIT ms
 * after its first, or at once when every job in flight is in it (none
 * is left to join it): a fan-out to many followers settles in a few writes,
 * not one per job.  A task ends (its slot free, its key kept for the
 * step) only when its batch was answered, as it did after its own write:
 * a job is never removed before its answer, and one whose write failed
 * runs again.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_job.h"
#include "ngx_http_tent_store.h"


struct ngx_http_tent_settle_s {
    ngx_pool_t                     *pool;
    ngx_http_tent_delivery_t       *dl;
    ngx_http_tent_store_op_t       *wop;
    ngx_array_t                     tasks;       /* ngx_http_tent_job_t * */
    ngx_uint_t                      held;        /* of them, with slots */
    ngx_event_t                     free;
};


static ngx_http_tent_settle_t *ngx_http_tent_settle_create(
    ngx_http_tent_delivery_t *dl);
static void ngx_http_tent_settle_written(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_settle_free(ngx_event_t *ev);


void
ngx_http_tent_settle_add(ngx_http_tent_job_t *t,
    ngx_http_tent_store_op_t *wop)
{
    ngx_http_tent_settle_t    *st;
    ngx_http_tent_job_t      **tp;
    ngx_http_tent_delivery_t  *dl;

    dl = t->task.dl;
    tp = NULL;

    if (dl->settle == NULL) {
        dl->settle = ngx_http_tent_settle_create(dl);
    }

    st = dl->settle;

    /* no batch: the job's own write, as before */

    if (st == NULL
        || (tp = ngx_array_push(&st->tasks)) == NULL
        || ngx_http_tent_store_batch_append(st->wop, wop) != NGX_OK)
    {
        if (st && tp) {
            st->tasks.nelts--;
        }

        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                       "tent delivery: a settlement written alone");

        ngx_http_tent_task_submit(&t->task, wop,
                                  ngx_http_tent_delivery_written);
        return;
    }

    *tp = t;

    /* a due job's slot is free for the next one now, not after the write */

    ngx_http_tent_task_settling(t);

    if (!t->task.settling) {
        st->held++;
    }

    /* full, or no job in flight is left to join it: it goes now */

    if (st->tasks.nelts >= NGX_HTTP_TENT_SETTLE_MAX
        || dl->inflight <= st->held)
    {
        if (dl->settle_timer.timer_set) {
            ngx_del_timer(&dl->settle_timer);
        }

        ngx_http_tent_settle_flush(&dl->settle_timer);
        return;
    }

    if (!dl->settle_timer.timer_set) {
        ngx_add_timer(&dl->settle_timer, NGX_HTTP_TENT_SETTLE_WAIT);
    }
}


static ngx_http_tent_settle_t *
ngx_http_tent_settle_create(ngx_http_tent_delivery_t *dl)
{
    ngx_pool_t              *pool;
    ngx_http_tent_settle_t  *st;

    pool = ngx_create_pool(16384, dl->log);
    if (pool == NULL) {
        return NULL;
    }

    st = ngx_pcalloc(pool, sizeof(ngx_http_tent_settle_t));

    if (st == NULL
        || ngx_array_init(&st->tasks, pool, 64,
                          sizeof(ngx_http_tent_job_t *))
           != NGX_OK
        || (st->wop = ngx_http_tent_store_op_create(pool, dl->log)) == NULL
        || ngx_http_tent_store_write(st->wop, 0) != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: creating a settlements' batch failed");
        ngx_destroy_pool(pool);
        return NULL;
    }

    st->pool = pool;
    st->dl = dl;
    st->free.handler = ngx_http_tent_settle_free;
    st->free.data = st;
    st->free.log = dl->log;

    return st;
}


/* the batch goes: full, or its time is up */

void
ngx_http_tent_settle_flush(ngx_event_t *ev)
{
    ngx_http_tent_delivery_t *dl = ev->data;

    ngx_int_t                     rc;
    ngx_uint_t                    i;
    ngx_http_tent_job_t         **tp;
    ngx_http_tent_settle_t       *st;
    ngx_http_tent_entity_conf_t  *ent;

    st = dl->settle;
    dl->settle = NULL;

    if (st == NULL) {
        return;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: settle batch: %ui jobs in one write",
                   st->tasks.nelts);

    st->wop->handler = ngx_http_tent_settle_written;
    st->wop->data = st;

    /*
     * Each job's rows into its entity only while it is the one the job
     * was of: a deleted and re-created name gets no retry put back
     */

    tp = st->tasks.elts;
    ent = NULL;
    rc = NGX_OK;

    for (i = 0; i < st->tasks.nelts && rc == NGX_OK; i++) {
        if (tp[i]->task.ent == ent || tp[i]->task.incarnation == 0) {
            continue;
        }

        ent = tp[i]->task.ent;
        rc = ngx_http_tent_store_fence_rows(st->wop, &ent->entity,
                                            tp[i]->task.incarnation);
    }

    if (rc != NGX_OK || ngx_http_tent_store_submit(st->wop) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: submitting a settlements' batch "
                      "failed");
        st->wop->status = NGX_HTTP_TENT_STORE_ERROR;
        ngx_http_tent_settle_written(st->wop);
    }
}


static void
ngx_http_tent_settle_written(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_settle_t *st = op->data;

    ngx_uint_t              i;
    ngx_http_tent_job_t   **tp;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_error(NGX_LOG_WARN, st->dl->log, 0,
                      "tent delivery: the queue could not be updated; "
                      "%ui jobs run again", st->tasks.nelts);
    }

    tp = st->tasks.elts;

    for (i = 0; i < st->tasks.nelts; i++) {
        if (op->status != NGX_HTTP_TENT_STORE_OK) {
            ngx_http_tent_queue_again(&tp[i]->task);

        } else {
            tp[i]->task.gone = 1;                /* removed, or put again */
        }

        ngx_http_tent_task_done(&tp[i]->task);     /* its job puts answered */
    }

    ngx_post_event(&st->free, &ngx_posted_events);
}


static void
ngx_http_tent_settle_free(ngx_event_t *ev)
{
    ngx_http_tent_settle_t *st = ev->data;

    ngx_destroy_pool(st->pool);
}
