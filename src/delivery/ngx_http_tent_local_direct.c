
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Same-node recipients with no job (tent_same_node_rows index): a
 * fan-out's step (ngx_http_tent_fanout.c, 100 followers) hands here the
 * followers the same-node transport would claim (the claim's own checks,
 * on the record and the post just read), then, before its one write,
 * makes one read as a same-node batch does (each recipient's credential
 * row, its "l" row, a delete's target, its block of us) and judges each
 * by the batch's rules (ngx_http_tent_local_write.c).  A 200 puts the
 * recipient's references and the delivery's record "delivered" into the
 * step's write, beside the other followers' jobs; anything else (no
 * credential of that key id here, a refusal, a retry) gets its job, as
 * before, and the engine carries it.  The outbox row still goes with the
 * fan-out's last write: a kill before it runs the fan-out again, which
 * finds the "l" rows at the post's version and writes nothing twice.
 *
 * The step's keys are among the same-node batches' in flight from the
 * moment a follower is taken to its write's answer: a follower whose
 * reference a batch in flight writes gets a job, and a batch's job
 * whose reference the step writes waits for it.
 *
 * A recipient taken holds its part of the step's pool (its claim, keys,
 * follower record, read answer and rows: about 7 KB) until the step's
 * write is answered; the worker's steps hold at most
 * NGX_HTTP_TENT_LOCAL_DIRECT x tent_delivery_concurrency of them (2,048
 * by default), and a follower beyond gets its job
 * (the engine's batches are bounded by tent_delivery_concurrency), so
 * that fan-outs of many authors at once do not hold a step each of
 * rows (docs/federation.md, "Memory").
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_fanout.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_local.h"
#include "ngx_http_tent_store.h"


/* a fan-out step's recipients with no job */
typedef struct {
    ngx_http_tent_local_batch_t     b;
    ngx_pool_t                     *step;       /* the step's pool */
    ngx_array_t                     jids;       /* ngx_str_t, by item */
    ngx_http_tent_local_jobs_t     *lj;
    ngx_uint_t                      taken;      /* its part of ndirect */
    ngx_http_tent_store_op_t       *wop;        /* the step's write */
    ngx_http_tent_store_done_pt     then;       /* its handler */
    uint64_t                        now;
    unsigned                        queued:1;   /* among those in flight */
} ngx_http_tent_local_direct_t;


static ngx_http_tent_local_direct_t *ngx_http_tent_local_direct_get(
    ngx_http_tent_fanout_t *t);
static void ngx_http_tent_local_direct_cleanup(void *data);
static void ngx_http_tent_local_direct_read(ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_local_direct_jobs(ngx_http_tent_fanout_t *t,
    ngx_http_tent_local_direct_t *d, ngx_uint_t from, ngx_uint_t to);
static void ngx_http_tent_local_direct_written(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_local_direct_end(ngx_http_tent_local_direct_t *d);


/*
 * A follower of the step that gets the post: NGX_OK, taken (no job for
 * now); NGX_DECLINED, it gets its job; NGX_ERROR.
 */

ngx_int_t
ngx_http_tent_local_direct_add(ngx_http_tent_fanout_t *t, ngx_str_t *jid,
    ngx_str_t *fid, json_t *follower)
{
    ngx_str_t                      *sp;
    ngx_uint_t                      i;
    ngx_http_tent_job_t            *j;
    ngx_http_tent_local_t          *l, **lp;
    ngx_http_tent_local_jobs_t     *lj;
    ngx_http_tent_local_direct_t   *d;

    if (t->task.dl->mcf->same_node_rows != NGX_HTTP_TENT_SAME_NODE_INDEX
        || t->stage != NGX_HTTP_TENT_FANOUT_FOLLOWERS
        || t->task.post == NULL
        || t->task.entity.data != t->task.ent->entity.data)
    {
        return NGX_DECLINED;
    }

    /* the steps' recipients in flight: beyond the budget, jobs */

    lj = t->task.dl->local;

    if (lj && lj->ndirect >= NGX_HTTP_TENT_LOCAL_DIRECT
                             * t->task.dl->mcf->delivery_concurrency)
    {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent local: post \"%V\": %ui recipients in the "
                       "steps' writes already: a job", &t->task.post_id,
                       lj->ndirect);
        return NGX_DECLINED;
    }

    /* the job it would be, not written: what the claim and rules read */

    j = ngx_pcalloc(t->step, sizeof(ngx_http_tent_job_t));
    if (j == NULL) {
        return NGX_ERROR;
    }

    j->task.pool = t->step;
    j->task.dl = t->task.dl;
    j->task.ent = t->task.ent;
    j->task.incarnation = t->task.incarnation;
    j->task.post = t->task.post;
    j->task.entity = t->task.entity;
    j->task.post_id = t->task.post_id;
    j->row.kind = NGX_HTTP_TENT_JOB_FOLLOWER;
    j->row.to = *fid;
    j->follower = follower;

    if (ngx_http_tent_transport_local.claim(j) != NGX_OK) {
        return NGX_DECLINED;
    }

    l = j->carried;

    /* its job's key, for its record (never written) */

    if (ngx_http_tent_timed_key(t->step, &t->task.ent->entity,
                                NGX_HTTP_TENT_TABLE_JOB,
                                ngx_http_tent_now_ms(), jid, &j->task.key)
        != NGX_OK
        || ngx_http_tent_local_keys(l) != NGX_OK)
    {
        return NGX_ERROR;
    }

    d = ngx_http_tent_local_direct_get(t);
    if (d == NULL) {
        return NGX_ERROR;
    }

    /* a reference a batch in flight writes (this step's too): a job */

    if (ngx_http_tent_local_writing(d->b.jobs, &l->copy_key)
        || (l->target_key.len
            && ngx_http_tent_local_writing(d->b.jobs, &l->target_key)))
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent local: post \"%V\": a batch in flight writes "
                       "its reference: a job", &t->task.post_id);
        return NGX_DECLINED;
    }

    if (ngx_http_tent_key_set_add(t->step, d->b.keys, &l->copy_key)
        != NGX_OK
        || (l->target_key.len
            && ngx_http_tent_key_set_add(t->step, d->b.keys, &l->target_key)
               != NGX_OK))
    {
        return NGX_ERROR;
    }

    i = ngx_http_tent_local_cred_index(&d->b, l);
    if (i == (ngx_uint_t) NGX_ERROR) {
        return NGX_ERROR;
    }

    l->cred = i;

    lp = ngx_array_push(&d->b.items);
    sp = ngx_array_push(&d->jids);

    if (lp == NULL || sp == NULL) {
        return NGX_ERROR;
    }

    *lp = l;
    *sp = *jid;

    d->taken++;
    d->lj->ndirect++;

    /* the record, beyond the step's loop */

    json_incref(follower);

    if (ngx_http_tent_json_cleanup(t->step, follower) != NGX_OK) {
        json_decref(follower);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* the step's: made with its first follower taken */

static ngx_http_tent_local_direct_t *
ngx_http_tent_local_direct_get(ngx_http_tent_fanout_t *t)
{
    ngx_pool_cleanup_t            *cln;
    ngx_http_tent_local_jobs_t    *lj;
    ngx_http_tent_local_direct_t  *d;

    d = t->direct;

    if (d && d->step == t->step) {
        return d;
    }

    if (ngx_http_tent_local_jobs(t->task.dl) != NGX_OK) {
        return NULL;
    }

    lj = t->task.dl->local;

    d = ngx_pcalloc(t->step, sizeof(ngx_http_tent_local_direct_t));

    if (d == NULL
        || ngx_http_tent_local_batch_init(&d->b, t->step, lj) != NGX_OK
        || (d->b.ended = ngx_array_create(t->step, 16, sizeof(ngx_str_t)))
           == NULL
        || ngx_array_init(&d->jids, t->step, 16, sizeof(ngx_str_t))
           != NGX_OK)
    {
        return NULL;
    }

    /* among the batches in flight while its pool lives, at most */

    cln = ngx_pool_cleanup_add(t->step, 0);
    if (cln == NULL) {
        return NULL;
    }

    cln->handler = ngx_http_tent_local_direct_cleanup;
    cln->data = d;

    d->b.direct = 1;
    d->lj = lj;
    d->step = t->step;
    d->queued = 1;
    ngx_queue_insert_tail(&lj->batches, &d->b.queue);

    t->direct = d;

    return d;
}


static void
ngx_http_tent_local_direct_cleanup(void *data)
{
    ngx_http_tent_local_direct_t *d = data;

    if (d->queued) {
        d->queued = 0;
        ngx_queue_remove(&d->b.queue);
        d->lj->ndirect -= d->taken;
    }
}


/*
 * The step's write: with no recipient taken, as it is; else after the
 * one read that judges them.
 */

void
ngx_http_tent_local_direct_submit(ngx_http_tent_fanout_t *t,
    ngx_http_tent_store_op_t *wop, uint64_t now,
    ngx_http_tent_store_done_pt handler)
{
    ngx_http_tent_store_op_t      *get;
    ngx_http_tent_local_direct_t  *d;

    d = t->direct;

    if (d == NULL || d->step != t->step || d->b.items.nelts == 0) {

        /* none taken: none of its keys in flight */

        if (d) {
            t->direct = NULL;
            ngx_http_tent_local_direct_end(d);
        }

        ngx_http_tent_task_submit(&t->task, wop, handler);
        return;
    }

    d->wop = wop;
    d->then = handler;
    d->now = now;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent local: post \"%V\": %ui followers of this node, "
                   "one read", &t->task.post_id, d->b.items.nelts);

    /*
     * Submitted as it is, not by ngx_http_tent_task_submit(): the jobs
     * the step put hold the due scan's cursor until their write, not
     * until this read, is answered
     */

    get = ngx_http_tent_local_read_op(&d->b);

    if (get == NULL) {
        ngx_http_tent_task_failed(&t->task, "building the same-node read");
        return;
    }

    get->handler = ngx_http_tent_local_direct_read;
    get->data = t;

    if (ngx_http_tent_store_submit(get) != NGX_OK) {
        ngx_http_tent_task_failed(&t->task, "submitting the same-node read");
    }
}


static void
ngx_http_tent_local_direct_read(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_fanout_t *t = op->data;

    ngx_uint_t                      i, n;
    ngx_http_tent_local_t         **items;
    ngx_http_tent_entity_conf_t    *to;
    ngx_http_tent_local_direct_t   *d;

    d = t->direct;
    d->b.wop = d->wop;
    items = d->b.items.elts;
    n = 0;

    if (op->status != NGX_HTTP_TENT_STORE_OK
        || ngx_http_tent_local_answer(&d->b, op) != NGX_OK)
    {
        /* every one of them a job, as before */

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent local: post \"%V\": the read failed (store "
                       "status %ui): jobs", &t->task.post_id, op->status);

        if (ngx_http_tent_local_direct_jobs(t, d, 0, d->b.items.nelts)
            != NGX_OK)
        {
            return;
        }

        goto write;
    }

    for (i = 0; i < d->b.items.nelts; i++) {

        /* a write this big takes jobs for the rest */

        if (ngx_http_tent_store_op_size(d->wop) >= NGX_HTTP_TENT_LOCAL_BYTES
            || ngx_http_tent_local_job(&d->b, items[i])
               != NGX_HTTP_TENT_DELIVERED)
        {
            if (ngx_http_tent_local_direct_jobs(t, d, i, i + 1) != NGX_OK) {
                return;
            }

            continue;
        }

        n++;
    }

write:

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": %ui delivered on this node "
                   "with no job, %ui jobs", &t->task.post_id, n,
                   d->b.items.nelts - n);

    /* one end index row for the step's records, which the prune expands */

    if (n && ngx_http_tent_delivery_status_ended(&t->task, d->wop,
                                                 d->b.ended)
             != NGX_OK)
    {
        d->wop->status = NGX_HTTP_TENT_STORE_ERROR;
    }

    /*
     * Into its recipients only while they are active, as a batch's write
     * (the fences after the last row: a fence is the write's trailer)
     */

    to = NULL;

    for (i = 0; n && i < d->b.items.nelts; i++) {
        if (items[i]->task->status != NGX_HTTP_OK || items[i]->to == to) {
            continue;
        }

        to = items[i]->to;

        if (ngx_http_tent_store_fence(d->wop, &to->entity, 0) != NGX_OK) {
            d->wop->status = NGX_HTTP_TENT_STORE_ERROR;
        }
    }

    if (d->wop->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_task_failed(&t->task, "building the same-node rows");
        return;
    }

    ngx_http_tent_task_submit(&t->task, d->wop,
                              ngx_http_tent_local_direct_written);
}


/* jobs for the items from "from" to "to": their records "pending" too */

static ngx_int_t
ngx_http_tent_local_direct_jobs(ngx_http_tent_fanout_t *t,
    ngx_http_tent_local_direct_t *d, ngx_uint_t from, ngx_uint_t to)
{
    ngx_str_t               *jids;
    ngx_uint_t               i;
    ngx_http_tent_local_t  **items;

    items = d->b.items.elts;
    jids = d->jids.elts;

    for (i = from; i < to; i++) {
        if (ngx_http_tent_fanout_follower_job(t, d->wop, d->now, &jids[i],
                                              &items[i]->task->row.to,
                                              items[i]->task->follower)
            != NGX_OK)
        {
            ngx_http_tent_task_done(&t->task);     /* logged there */
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* the step's write answered: its keys no longer in flight; the step's */

static void
ngx_http_tent_local_direct_written(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_fanout_t *t = op->data;

    ngx_http_tent_local_direct_t  *d;

    d = t->direct;
    t->direct = NULL;

    ngx_http_tent_local_direct_end(d);

    d->then(op);
}


static void
ngx_http_tent_local_direct_end(ngx_http_tent_local_direct_t *d)
{
    ngx_http_tent_local_jobs_t  *lj;

    lj = d->b.jobs;

    ngx_http_tent_local_direct_cleanup(d);

    /* the jobs that waited for its keys */

    if (lj->npending && !lj->flush.posted) {
        ngx_post_event(&lj->flush, &ngx_posted_events);
    }
}
