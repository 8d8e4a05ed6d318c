
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Delivery of our posts to followers (spec 9.2), from a queue in the
 * store.  A post's create writes an outbox row "o" in its own synced
 * batch, so no acknowledged post is ever without one.  The store owner
 * (worker 0) runs this engine on a timer: it turns each outbox row into
 * one job per follower that may see the post ("j <due ms><job id>"), in
 * one batch that also deletes the row, then sends the due jobs through
 * the outbound client, signed with each follower's credential.  A job
 * leaves the queue when a follower's server takes it (2xx) or refuses it
 * for good (400, 401, 403, 404, 410: then a dead letter "x" keeps it);
 * otherwise it is put back with an exponential, jittered delay.  A crash
 * or reload loses nothing: a job sent but not yet removed is sent again
 * (receivers drop duplicates by entity, id and version).  So the queue's
 * own writes need no fsync: one lost in a crash leaves the row or job it
 * would have removed, which runs again; only the post's batch is synced.
 * A new post's mentions (spec 9.2 step 4, 9.3) become jobs too, and so do
 * apps subscribed through a notification URL, which also hear of the
 * posts we receive.
 *
 * This file is the engine: its timer, the pass over the entities (the
 * expired dead letters, then the outbox, ngx_http_tent_outbox.c, then the
 * due jobs, ngx_http_tent_queue.c, read a batch at a time by
 * ngx_http_tent_delivery_load.c, sent by ngx_http_tent_send.c and settled
 * in batches by ngx_http_tent_settle.c) and the tasks;
 * ngx_http_tent_fanout.c turns an outbox row into jobs.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_domains.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_fanout.h"
#include "ngx_http_tent_job.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


static void ngx_http_tent_delivery_tick(ngx_event_t *ev);
static void ngx_http_tent_delivery_marks(ngx_http_tent_delivery_t *dl);
static void ngx_http_tent_delivery_entity(ngx_http_tent_delivery_t *dl);
static void ngx_http_tent_delivery_step(ngx_event_t *ev);
static void ngx_http_tent_delivery_expired(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_delivery_pruned(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_task_written(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_task_free(ngx_event_t *ev);
static void ngx_http_tent_task_refill(ngx_http_tent_delivery_t *dl);
static void ngx_http_tent_task_ended_in(ngx_pool_t *pool, ngx_rbtree_t **done,
    ngx_str_t *key);


uint64_t
ngx_http_tent_now_ms(void)
{
    ngx_time_t  *tp;

    tp = ngx_timeofday();

    return (uint64_t) tp->sec * 1000 + tp->msec;
}


/* in the store owner, at start: the timer that drives everything */

ngx_int_t
ngx_http_tent_delivery_start(ngx_cycle_t *cycle,
    ngx_http_tent_main_conf_t *mcf)
{
    ngx_http_tent_delivery_t  *dl;

    if (!mcf->delivery_on
        || (mcf->entity_confs.nelts == 0 && !mcf->provisioning))
    {
        return NGX_OK;
    }

    dl = ngx_pcalloc(cycle->pool, sizeof(ngx_http_tent_delivery_t));
    if (dl == NULL) {
        ngx_log_error(NGX_LOG_ERR, cycle->log, 0,
                      "tent delivery: allocating the engine failed");
        return NGX_ERROR;
    }

    dl->mcf = mcf;
    dl->log = cycle->log;
    ngx_queue_init(&dl->tasks);

    dl->timer.handler = ngx_http_tent_delivery_tick;
    dl->timer.data = dl;
    dl->timer.log = cycle->log;
    dl->timer.cancelable = 1;

    dl->step.handler = ngx_http_tent_delivery_step;
    dl->step.data = dl;
    dl->step.log = cycle->log;

    dl->settle_timer.handler = ngx_http_tent_settle_flush;
    dl->settle_timer.data = dl;
    dl->settle_timer.log = cycle->log;
    dl->settle_timer.cancelable = 1;

    /* the fixed entities' slots: every outbox is looked at once */

    if (ngx_http_tent_delivery_entities_init(dl, cycle) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, cycle->log, 0,
                      "tent delivery: allocating the entities failed");
        return NGX_ERROR;
    }

    if (ngx_http_tent_queue_init(dl, cycle->pool) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, cycle->log, 0,
                      "tent delivery: allocating the queue's cursors failed");
        return NGX_ERROR;
    }

    mcf->delivery = dl;

    /* a new owner's breakers are all closed */

    ngx_http_tent_gauge(NGX_HTTP_TENT_STAT_BREAKERS, 0);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, cycle->log, 0,
                   "tent delivery: started for %ui entities, every %M ms",
                   dl->nentities, mcf->delivery_interval);

    ngx_add_timer(&dl->timer, 100);

    return NGX_OK;
}


static void
ngx_http_tent_delivery_tick(ngx_event_t *ev)
{
    ngx_http_tent_delivery_t *dl = ev->data;

    if (ngx_exiting || ngx_quit || ngx_terminate) {
        return;
    }

    /* the operator's blocked domains, read again first when they moved */

    if (ngx_http_tent_domains_refresh(dl->log) != NGX_OK) {
        ngx_add_timer(&dl->timer, dl->mcf->delivery_interval);
        return;
    }

    /* the due jobs' pass runs on its own (ngx_http_tent_queue.c) */

    ngx_http_tent_queue_kick(dl);

    /* provisioning: the registry's entities, when it moved */

    ngx_http_tent_delivery_entities_refresh(dl, 0);

    if (dl->busy) {
        ngx_add_timer(&dl->timer, dl->mcf->delivery_interval);
        return;
    }

    dl->busy = 1;
    dl->next_entity = 0;

    /* dead letters past tent_delivery_dead_letter_time: once a minute */

    dl->prune = dl->pruned == 0
                || ngx_current_msec - dl->pruned
                   >= (ngx_msec_t) ngx_min(60, dl->mcf->dead_letter_time)
                      * 1000;

    if (dl->prune) {
        dl->pruned = ngx_current_msec;

        /* an entity with 100 subscriptions or more: batches tried again */

        dl->apps_many = 0;

        /* and the due scans from the start: whatever a cursor missed */

        ngx_http_tent_queue_reset(dl);
        ngx_http_tent_delivery_entities_refresh(dl, 1);
    }

    ngx_http_tent_delivery_marks(dl);

    ngx_http_tent_delivery_entity(dl);
}


/*
 * The outbox marks written since the last pass (ngx_http_tent_shm.h):
 * the entities whose outbox is scanned in this one.  A mark is set once
 * its row's write is done, and taken before this pass's scans are sent:
 * they see the row.  An entity keeps its own mark until a scan of its
 * outbox finds it empty (ngx_http_tent_outbox.c).  Without the zone, or
 * once a minute, every outbox is scanned.
 */

static void
ngx_http_tent_delivery_marks(ngx_http_tent_delivery_t *dl)
{
    ngx_uint_t             i, h, bits, all;
    ngx_atomic_uint_t      marks[NGX_HTTP_TENT_OUTBOX_WORDS];
    ngx_http_tent_slot_t  *s;

    all = ngx_http_tent_outbox_take((ngx_cycle_t *) ngx_cycle, marks)
          != NGX_OK
          || dl->prune;

    bits = 8 * sizeof(ngx_atomic_uint_t);

    for (i = 0; (s = ngx_http_tent_delivery_slot(dl, i)) != NULL; i++) {
        h = s->hash;

        if (all || (marks[h / bits] & ((ngx_atomic_uint_t) 1 << (h % bits))))
        {
            s->outbox = 1;
        }
    }
}


/*
 * The next entity, from the event loop: the current one's scan results
 * live in dl->pool, which must not go while the store still holds them.
 */

void
ngx_http_tent_delivery_next(ngx_http_tent_delivery_t *dl)
{
    dl->next_entity++;
    ngx_post_event(&dl->step, &ngx_posted_events);
}


static void
ngx_http_tent_delivery_step(ngx_event_t *ev)
{
    ngx_http_tent_delivery_entity(ev->data);
}


/*
 * One entity after the other: its expired dead letters (once a minute),
 * its outbox, then its due jobs.
 */

static void
ngx_http_tent_delivery_entity(ngx_http_tent_delivery_t *dl)
{
    ngx_pool_t            *pool;
    ngx_http_tent_slot_t  *s;

    if (dl->pool) {
        ngx_destroy_pool(dl->pool);
        dl->pool = NULL;
    }

    dl->done = NULL;

    /*
     * Only the entities with an outbox marked, or all of them for the
     * prune once a minute; the others cost no store operation.  Their
     * due jobs have a pass of their own (ngx_http_tent_queue.c).
     */

    for ( ;; ) {
        s = ngx_http_tent_delivery_slot(dl, dl->next_entity);

        /* a registry entity disabled or deleted: no work of it at all */

        if (s == NULL
            || (ngx_http_tent_delivery_slot_on(s) && (dl->prune || s->outbox)))
        {
            break;
        }

        dl->next_entity++;
    }

    if (s == NULL || ngx_exiting || ngx_quit || ngx_terminate)
    {
        dl->busy = 0;

        if (!(ngx_exiting || ngx_quit || ngx_terminate)) {
            ngx_add_timer(&dl->timer, dl->mcf->delivery_interval);
        }

        return;
    }

    pool = ngx_create_pool(4096, dl->log);
    if (pool == NULL) {
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: creating the pass's pool failed");
        dl->busy = 0;
        ngx_add_timer(&dl->timer, dl->mcf->delivery_interval);
        return;
    }

    dl->pool = pool;

    if (dl->prune) {
        ngx_http_tent_delivery_status_prune(dl);
        return;
    }

    ngx_http_tent_delivery_scan_outbox(dl);
}


/*
 * Dead letters are kept for the operator, not forever: their keys begin
 * with the time of failure, so the expired ones are one key range, of
 * which each pass removes up to a scan's worth, unsynced.
 */

void
ngx_http_tent_delivery_prune(ngx_http_tent_delivery_t *dl)
{
    if (ngx_http_tent_delivery_expired_scan(dl, NGX_HTTP_TENT_TABLE_DEAD,
                                            NGX_HTTP_TENT_OUTBOX_SCAN,
                                            ngx_http_tent_delivery_expired,
                                            "dead letters")
        != NGX_OK)
    {
        ngx_http_tent_delivery_scan_outbox(dl);
    }
}


/*
 * A scan of the rows of a timed table of the entity (dead letters, ended
 * deliveries' index) older than tent_delivery_dead_letter_time, up to
 * "limit" of them; NGX_DECLINED when none can be that old yet, NGX_ERROR
 * (logged) when the scan could not be sent: the caller goes on.
 */

ngx_int_t
ngx_http_tent_delivery_expired_scan(ngx_http_tent_delivery_t *dl,
    ngx_uint_t table, ngx_uint_t limit, ngx_http_tent_store_done_pt handler,
    const char *what)
{
    uint64_t                      now;
    ngx_str_t                     start, end;
    ngx_http_tent_store_op_t     *scan;
    ngx_http_tent_entity_conf_t  *ent;

    ent = ngx_http_tent_delivery_conf(dl, dl->next_entity);
    now = ngx_http_tent_now_ms();

    if (ent == NULL
        || (uint64_t) dl->mcf->dead_letter_time * 1000 >= now)
    {
        return NGX_DECLINED;
    }

    scan = ngx_http_tent_store_op_create(dl->pool, dl->log);

    if (scan == NULL
        || ngx_http_tent_key_range(dl->pool, &ent->entity, table, &start,
                                   &end)
           != NGX_OK
        || ngx_http_tent_timed_key(dl->pool, &ent->entity, table,
                                   now - (uint64_t) dl->mcf->dead_letter_time
                                         * 1000,
                                   NULL, &end)
           != NGX_OK
        || ngx_http_tent_store_scan(scan, &start, &end, limit, 0) != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: building the %s' scan failed", what);
        return NGX_ERROR;
    }

    scan->handler = handler;
    scan->data = dl;

    if (ngx_http_tent_store_submit(scan) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: submitting the %s' scan failed", what);
        return NGX_ERROR;
    }

    return NGX_OK;
}


static void
ngx_http_tent_delivery_expired(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_delivery_t *dl = op->data;

    ngx_str_t                  key, value;
    ngx_uint_t                 n;
    ngx_http_tent_store_op_t  *wop;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                       "tent delivery: dead letters not read (store "
                       "status %ui): later", op->status);
        ngx_http_tent_delivery_scan_outbox(dl);
        return;
    }

    wop = ngx_http_tent_store_op_create(dl->pool, dl->log);

    if (wop == NULL || ngx_http_tent_store_write(wop, 0) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: building the dead letters' removal "
                      "failed");
        ngx_http_tent_delivery_scan_outbox(dl);
        return;
    }

    n = 0;

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        if (ngx_http_tent_store_write_del(wop, &key) != NGX_OK) {
            ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                          "tent delivery: building the dead letters' "
                          "removal failed");
            ngx_http_tent_delivery_scan_outbox(dl);
            return;
        }

        n++;
    }

    if (n == 0) {
        ngx_http_tent_delivery_scan_outbox(dl);
        return;
    }

    ngx_log_error(NGX_LOG_INFO, dl->log, 0,
                  "tent delivery: %ui dead letters expired", n);

    wop->handler = ngx_http_tent_delivery_pruned;
    wop->data = dl;

    if (ngx_http_tent_store_submit(wop) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: submitting the dead letters' removal "
                      "failed");
        ngx_http_tent_delivery_scan_outbox(dl);
    }
}


static void
ngx_http_tent_delivery_pruned(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_delivery_scan_outbox(op->data);
}


/*
 * A task of "size" bytes (a fan-out's or a job's, the task first) in a
 * pool of its own, or (a due job's) in its batch's, which outlives it:
 * one pool for a batch's jobs, not a pool and its blocks allocated and
 * freed for each.
 */

ngx_http_tent_task_t *
ngx_http_tent_task_create(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent, ngx_str_t *key, ngx_str_t *value,
    ngx_pool_t *shared, size_t size)
{
    ngx_pool_t            *pool;
    ngx_http_tent_slot_t  *s;
    ngx_http_tent_task_t  *t;

    pool = shared ? shared : ngx_create_pool(4096, dl->log);
    if (pool == NULL) {
        goto failed;
    }

    t = ngx_pcalloc(pool, size);
    if (t == NULL) {
        goto failed_pool;
    }

    t->pool = pool;
    t->shared_pool = (shared != NULL);
    t->dl = dl;
    t->ent = ent;

    /*
     * A registry entity's: its writes land only while it is this one
     * (deleted and made anew for somebody else meanwhile: left out).
     * Known only while the list is the registry's current one; else
     * none (a new tenant's rows must not be taken for an old one's).
     */

    s = ngx_http_tent_delivery_slot_of(dl, ent);
    t->incarnation = (s && !s->fixed && ngx_http_tent_delivery_slot_on(s))
                     ? s->incarnation : 0;

    /* its slot stays in the list while the task lives */

    if (s && ngx_http_tent_delivery_hold(dl, ent, pool) != NGX_OK) {
        goto failed_pool;
    }

    t->key.data = ngx_pstrdup(pool, key);
    t->raw.data = ngx_pstrdup(pool, value);

    if (t->key.data == NULL || t->raw.data == NULL) {
        goto failed_pool;
    }

    t->key.len = key->len;
    t->raw.len = value->len;

    t->free.handler = ngx_http_tent_task_free;
    t->free.data = t;
    t->free.log = dl->log;

    dl->inflight++;
    ngx_http_tent_gauge(NGX_HTTP_TENT_STAT_IN_FLIGHT, dl->inflight);
    ngx_queue_insert_tail(&dl->tasks, &t->queue);

    return t;

failed_pool:

    if (shared == NULL) {
        ngx_destroy_pool(pool);
    }

failed:

    ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                  "tent delivery: creating a task failed");

    return NULL;
}


/* a job already on its way is not started twice */

ngx_int_t
ngx_http_tent_task_running(ngx_http_tent_delivery_t *dl, ngx_str_t *key)
{
    ngx_queue_t           *q;
    ngx_http_tent_task_t  *t;

    for (q = ngx_queue_head(&dl->tasks);
         q != ngx_queue_sentinel(&dl->tasks);
         q = ngx_queue_next(q))
    {
        t = ngx_queue_data(q, ngx_http_tent_task_t, queue);

        if (t->key.len == key->len
            && ngx_memcmp(t->key.data, key->data, key->len) == 0)
        {
            return 1;
        }
    }

    if ((dl->done == NULL || !ngx_http_tent_key_set_has(dl->done, key))
        && (dl->due_done == NULL
            || !ngx_http_tent_key_set_has(dl->due_done, key)))
    {
        return 0;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: a row ended while this step's scan ran: "
                   "\"%V\" not started again", key);

    return 1;
}


/*
 * A scan of the outbox or of the due jobs may have been read before the
 * write that removed a row it lists was done (the owner runs them on
 * several threads): the row would start again and its post go twice.
 * So the keys of tasks that end while an entity's step runs are kept
 * for that step, in its pool; a scan of the next step is submitted after
 * the removal was answered and no longer lists them.
 */

void
ngx_http_tent_task_ended(ngx_http_tent_delivery_t *dl, ngx_str_t *key)
{
    /* for each of the two passes' step: the outbox's, the due jobs' */

    ngx_http_tent_task_ended_in(dl->pool, &dl->done, key);
    ngx_http_tent_task_ended_in(dl->due_pool, &dl->due_done, key);
}


static void
ngx_http_tent_task_ended_in(ngx_pool_t *pool, ngx_rbtree_t **done,
    ngx_str_t *key)
{
    if (pool == NULL) {
        return;         /* between passes: no scan outstanding */
    }

    if (*done == NULL) {
        *done = ngx_http_tent_key_set_create(pool);
        if (*done == NULL) {
            return;     /* at least once: at worst the row goes again */
        }
    }

    (void) ngx_http_tent_key_set_add(pool, *done, key);
}


ngx_rbtree_t *
ngx_http_tent_key_set_create(ngx_pool_t *pool)
{
    ngx_rbtree_t       *set;
    ngx_rbtree_node_t  *sentinel;

    set = ngx_palloc(pool, sizeof(ngx_rbtree_t));
    sentinel = ngx_palloc(pool, sizeof(ngx_rbtree_node_t));

    if (set == NULL || sentinel == NULL) {
        return NULL;
    }

    ngx_rbtree_init(set, sentinel, ngx_str_rbtree_insert_value);

    return set;
}


/* the copy in the pool, exactly sized: 100k followers may be kept */

ngx_int_t
ngx_http_tent_key_set_add(ngx_pool_t *pool, ngx_rbtree_t *set,
    ngx_str_t *key)
{
    ngx_str_node_t  *sn;

    sn = ngx_palloc(pool, sizeof(ngx_str_node_t));
    if (sn == NULL) {
        return NGX_ERROR;
    }

    sn->str.data = ngx_pstrdup(pool, key);
    if (sn->str.data == NULL) {
        return NGX_ERROR;
    }

    sn->str.len = key->len;
    sn->node.key = ngx_crc32_long(key->data, key->len);

    ngx_rbtree_insert(set, &sn->node);

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_key_set_has(ngx_rbtree_t *set, ngx_str_t *key)
{
    return ngx_str_rbtree_lookup(set, key, ngx_crc32_long(key->data, key->len))
           != NULL;
}


/* a store operation of a task: its handler runs, or the task ends */

void
ngx_http_tent_task_submit(ngx_http_tent_task_t *t,
    ngx_http_tent_store_op_t *op, ngx_http_tent_store_done_pt handler)
{
    /* a write that puts jobs holds the due scan's cursor until answered */

    if (t->writing) {
        t->then = handler;
        handler = ngx_http_tent_task_written;
    }

    op->handler = handler;
    op->data = t;

    /* its rows into its entity only while it is the one it was */

    if (ngx_http_tent_store_fence_rows(op, &t->ent->entity, t->incarnation)
        != NGX_OK
        || ngx_http_tent_store_submit(op) != NGX_OK)
    {
        ngx_http_tent_task_failed(t, "submitting a store operation");
    }
}


static void
ngx_http_tent_task_written(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_task_t *t = op->data;

    ngx_http_tent_queue_written(t);

    t->then(op);
}


/* a task ends on a failure of its own: logged once, where it is seen */

void
ngx_http_tent_task_failed(ngx_http_tent_task_t *t, const char *step)
{
    ngx_log_error(NGX_LOG_ERR, t->dl->log, 0, "tent delivery: %s failed",
                  step);

    ngx_http_tent_task_done(t);
}


/*
 * A write of the queue answered (a fan-out's jobs, a settlement): the
 * task ends; a due job whose removal failed runs again.
 */

void
ngx_http_tent_delivery_written(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_task_t *t = op->data;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_error(NGX_LOG_WARN, t->dl->log, 0,
                      "tent delivery: the queue could not be updated; "
                      "the job runs again");

        if (t->job && ((ngx_http_tent_job_t *) t)->batch) {
            ngx_http_tent_queue_again(t);
        }
    }

    ngx_http_tent_task_done(t);
}


/*
 * A job into a write batch: "<ms><job id>" in the jobs (when due) or the
 * dead letters (when failed), its binary row as the value.
 */

ngx_int_t
ngx_http_tent_job_put(ngx_http_tent_task_t *t, ngx_http_tent_store_op_t *wop,
    u_char table, uint64_t ms, ngx_str_t *id, ngx_http_tent_job_row_t *jr)
{
    ngx_str_t  key, value;

    /* in the write's pool: a fan-out's batch goes with its write */

    if (ngx_http_tent_timed_key(wop->pool, &t->ent->entity, table, ms, id,
                                &key)
        != NGX_OK
        || ngx_http_tent_job_row_encode(wop->pool, jr, &value) != NGX_OK
        || ngx_http_tent_store_write_put(wop, &key, &value) != NGX_OK)
    {
        goto failed;
    }

    if (table == NGX_HTTP_TENT_TABLE_JOB) {
        ngx_http_tent_queue_lower(t, ms);
    }

    return NGX_OK;

failed:

    ngx_log_error(NGX_LOG_ERR, t->dl->log, 0,
                  "tent delivery: writing a job row failed");

    return NGX_ERROR;
}


/* a fan-out's new job: into the batch, counted as queued (NGX_ERROR logged) */

ngx_int_t
ngx_http_tent_job_new(ngx_http_tent_task_t *t, ngx_http_tent_store_op_t *wop,
    uint64_t ms, ngx_str_t *id, ngx_http_tent_job_row_t *jr)
{
    if (ngx_http_tent_job_put(t, wop, NGX_HTTP_TENT_TABLE_JOB, ms, id, jr)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_tent_count(NGX_HTTP_TENT_STAT_QUEUED, 1);

    return NGX_OK;
}


/*
 * A task is over: it leaves the running list now, its memory soon; and
 * its place goes to the next due job at once, not at the next tick.
 */

void
ngx_http_tent_task_done(ngx_http_tent_task_t *t)
{
    ngx_http_tent_delivery_t  *dl;

    dl = t->dl;

    if (t->job) {
        ngx_http_tent_host_release((ngx_http_tent_job_t *) t);
    }

    ngx_http_tent_queue_written(t);     /* puts never submitted */

    if (t->job && ((ngx_http_tent_job_t *) t)->batch) {
        ngx_http_tent_queue_poke(t);    /* a due job's: scanned again */
    }

    ngx_queue_remove(&t->queue);

    if (t->settling) {
        dl->settling--;             /* its slot went with its settlement */

    } else {
        dl->inflight--;
        ngx_http_tent_gauge(NGX_HTTP_TENT_STAT_IN_FLIGHT, dl->inflight);
    }

    ngx_http_tent_task_ended(dl, &t->key);

    ngx_post_event(&t->free, &ngx_posted_events);

    ngx_http_tent_task_refill(dl);
}


/*
 * A job whose settlement joined a settle batch (ngx_http_tent_settle.c)
 * gives its slot (and its host's) back at once: the next due jobs need
 * not wait for the batch's write.  The task stays in the running list,
 * so its row, still in the queue until the write is answered, is not
 * started again; it ends, as before, with that answer.
 */

void
ngx_http_tent_task_settling(ngx_http_tent_job_t *j)
{
    ngx_http_tent_task_t      *t;
    ngx_http_tent_delivery_t  *dl;

    t = &j->task;
    dl = t->dl;

    /*
     * Bounded: a store slow to answer would have every finished job wait
     * in memory, and every due scan read them all again; past a full
     * batch of them, a job keeps its slot until its write is answered.
     */

    if (t->settling || j->batch == NULL
        || dl->settling >= NGX_HTTP_TENT_SETTLE_MAX)
    {
        return;
    }

    t->settling = 1;
    dl->settling++;
    dl->inflight--;
    ngx_http_tent_gauge(NGX_HTTP_TENT_STAT_IN_FLIGHT, dl->inflight);

    ngx_http_tent_host_release(j);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: a job settling: its slot free, "
                   "%ui in flight, %ui settling", dl->inflight,
                   dl->settling);

    ngx_http_tent_task_refill(dl);
}


/*
 * A due jobs' pass at once, not at the next tick, when a quarter of the
 * slots are free (or all): a scan and a read for a batch of jobs, not
 * for every job that ends.
 */

static void
ngx_http_tent_task_refill(ngx_http_tent_delivery_t *dl)
{
    if ((dl->inflight == 0
         || dl->mcf->delivery_concurrency - ngx_min(dl->inflight,
                                            dl->mcf->delivery_concurrency)
            >= ngx_max(dl->mcf->delivery_concurrency / 4, 1))
        && !(ngx_exiting || ngx_quit || ngx_terminate))
    {
        ngx_http_tent_queue_kick(dl);
    }
}


static void
ngx_http_tent_task_free(ngx_event_t *ev)
{
    ngx_http_tent_task_t *t = ev->data;

    ngx_http_tent_batch_t   *batch;
    ngx_http_tent_fanout_t  *fo;

    /* the batch's pool holds the job's post: it goes after the task's */

    batch = t->job ? ((ngx_http_tent_job_t *) t)->batch : NULL;

    if (batch && --batch->refs == 0) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, ev->log, 0,
                       "tent delivery: a batch's last job done: its pool "
                       "goes");
    } else {
        batch = NULL;
    }

    fo = t->job ? NULL : (ngx_http_tent_fanout_t *) t;

    if (fo && fo->step_old) {
        ngx_destroy_pool(fo->step_old);
    }

    if (fo && fo->step) {
        ngx_destroy_pool(fo->step);
    }

    if (!t->shared_pool) {
        ngx_destroy_pool(t->pool);
    }

    if (batch) {
        ngx_destroy_pool(batch->pool);
    }
}
