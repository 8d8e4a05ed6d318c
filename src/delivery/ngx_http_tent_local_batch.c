
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Same-node jobs in batches: the local jobs due together (those of one
 * or more due batches, ngx_http_tent_delivery_load.c) go to the store
 * as one read and one write, not as a read and a compare-and-set and a
 * settlement each.  This file collects them: a job joins the jobs
 * waiting, the next batch takes them in order and sends its read, and a
 * batch over gives its memory back and lets the next one go.  The read
 * answered, each job's answer, the write of the copies and the jobs'
 * settlement are ngx_http_tent_local_write.c's.
 *
 * Up to NGX_HTTP_TENT_LOCAL_BATCHES are in flight, never two that
 * write the same copy: a job whose copy or target a batch in flight (its
 * own included) writes waits, with the jobs after it, for a batch that
 * reads once that one is written.  So a job and a later one for the
 * same copy (a post and its update, a post and its delete post) never
 * race.  A batch is bounded (jobs, bytes)
 * so that one write never holds the owner long.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_local.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_receive.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


/* batches in flight at once: their copies never the same */
#define NGX_HTTP_TENT_LOCAL_BATCHES 4

/* local jobs that give their slot back, waiting or in the batch */
#define NGX_HTTP_TENT_LOCAL_HELD    1024

/*
 * Due batches whose end a waiting job sees go by before it goes anyway:
 * other entities' due batches (over HTTP) may follow one another without
 * a gap, and a job does not wait for the bound of jobs indefinitely.
 */
#define NGX_HTTP_TENT_LOCAL_WAITS   16


static void ngx_http_tent_local_flush(ngx_event_t *ev);
static ngx_int_t ngx_http_tent_local_take(ngx_http_tent_local_batch_t *b);
static void ngx_http_tent_local_free(ngx_event_t *ev);


/*
 * A local job joins the next batch, which goes once the event loop has
 * handed out every job due now.
 */

ngx_int_t
ngx_http_tent_local_batch_add(ngx_http_tent_local_t *l)
{
    ngx_http_tent_delivery_t    *dl;
    ngx_http_tent_local_jobs_t  *lj;

    dl = l->task->task.dl;

    if (ngx_http_tent_local_jobs(dl) != NGX_OK) {
        return NGX_ERROR;
    }

    lj = dl->local;

    if (ngx_http_tent_local_keys(l) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_queue_insert_tail(&lj->pending, &l->queue);
    lj->npending++;

    /*
     * Its slot back meanwhile: a slot is for a request in flight, and a
     * local job makes none; so more due jobs are read while a batch is
     * written, and the next batch is bigger.  Bounded: past it, a job
     * keeps its slot, and the due pass stops at tent_delivery_concurrency.
     */

    if (lj->released < NGX_HTTP_TENT_LOCAL_HELD && dl->inflight) {
        l->released = 1;
        lj->released++;
        dl->inflight--;
        ngx_http_tent_queue_kick(dl);
    }

    if (lj->nbatches < NGX_HTTP_TENT_LOCAL_BATCHES && !lj->flush.posted) {
        ngx_post_event(&lj->flush, &ngx_posted_events);
    }

    return NGX_OK;
}


/*
 * The keys of the recipient's copy of the post, and of the copy a
 * delete post names, as ngx_http_tent_received_parse() will spell them
 * (checked again there); with tent_same_node_rows index, of its
 * references ("l" rows) instead.
 */

ngx_int_t
ngx_http_tent_local_keys(ngx_http_tent_local_t *l)
{
    json_t                *post;
    ngx_str_t              entity, id, type, target;
    ngx_http_tent_job_t   *t;

    t = l->task;
    post = t->task.post;

    if (ngx_http_tent_json_str(post, "entity", &entity) != NGX_OK
        || ngx_http_tent_json_str(post, "id", &id) != NGX_OK
        || ngx_http_tent_entity_canonical(t->task.pool, &entity, &entity)
           != NGX_OK
        || (ngx_http_tent_local_refs(l)
            ? ngx_http_tent_ref_key(t->task.pool, &l->to->entity, &entity,
                                    &id, &l->copy_key)
            : ngx_http_tent_post_key(t->task.pool, &l->to->entity, &entity,
                                     &id, -1, &l->copy_key))
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    l->target_key.len = 0;

    if (ngx_http_tent_json_str(post, "type", &type) == NGX_OK
        && ngx_http_tent_post_type_is(&type, "delete")
        && ngx_http_tent_json_str(json_object_get(post, "content"), "id",
                                  &target)
           == NGX_OK
        && ngx_http_tent_token_valid(&target, 64) == NGX_OK
        && (ngx_http_tent_local_refs(l)
            ? ngx_http_tent_ref_key(t->task.pool, &l->to->entity, &entity,
                                    &target, &l->target_key)
            : ngx_http_tent_post_key(t->task.pool, &l->to->entity, &entity,
                                     &target, -1, &l->target_key))
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* the next batch: its jobs taken, its read sent */

static void
ngx_http_tent_local_flush(ngx_event_t *ev)
{
    ngx_http_tent_local_jobs_t *lj = ev->data;

    ngx_uint_t                    j;
    ngx_pool_t                   *pool;
    ngx_queue_t                  *q;
    ngx_http_tent_local_t       **items, *l;
    ngx_http_tent_store_op_t     *get;
    ngx_http_tent_local_batch_t  *b;

    if (lj->nbatches >= NGX_HTTP_TENT_LOCAL_BATCHES || lj->npending == 0) {
        return;
    }

    /*
     * A due batch still read or starting its jobs (16 a turn): their
     * same-node ones join this batch, and its end posts the flush again
     * (ngx_http_tent_local_batch_kick).  One synced write for up to
     * NGX_HTTP_TENT_LOCAL_MAX jobs, not one for each turn's 16.
     */

    if (lj->dl->handing && lj->npending < NGX_HTTP_TENT_LOCAL_MAX
        && lj->waited < NGX_HTTP_TENT_LOCAL_WAITS)
    {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, lj->dl->log, 0,
                       "tent local batch: %ui jobs wait for the %ui due "
                       "batches read or starting theirs", lj->npending,
                       lj->dl->handing);
        return;
    }

    lj->waited = 0;

    pool = ngx_create_pool(16384, lj->dl->log);
    if (pool == NULL) {
        goto failed;
    }

    b = ngx_pcalloc(pool, sizeof(ngx_http_tent_local_batch_t));

    if (b == NULL || ngx_http_tent_local_batch_init(b, pool, lj) != NGX_OK) {
        ngx_destroy_pool(pool);
        goto failed;
    }

    b->free.handler = ngx_http_tent_local_free;
    b->free.data = b;
    b->free.log = lj->dl->log;

    ngx_queue_insert_tail(&lj->batches, &b->queue);
    lj->nbatches++;

    if (ngx_http_tent_local_take(b) != NGX_OK) {
        goto failed_batch;
    }

    get = ngx_http_tent_local_read_op(b);
    if (get == NULL) {
        goto failed_batch;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, lj->dl->log, 0,
                   "tent local batch: %ui jobs, %ui credentials, one read "
                   "(%ui waiting)", b->items.nelts, b->creds.nelts,
                   lj->npending);

    get->handler = ngx_http_tent_local_read;
    get->data = b;

    if (ngx_http_tent_store_submit(get) == NGX_OK) {
        return;
    }

failed_batch:

    ngx_log_error(NGX_LOG_ERR, lj->dl->log, 0,
                  "tent local batch: building the read failed");

    /* the jobs stay where they are: the next pass runs them again */

    items = b->items.elts;

    for (j = 0; j < b->items.nelts; j++) {
        ngx_http_tent_local_done(items[j]);
    }

    b->items.nelts = 0;
    ngx_http_tent_local_end(b);

    return;

failed:

    ngx_log_error(NGX_LOG_ERR, lj->dl->log, 0,
                  "tent local batch: creating a batch failed");

    while (!ngx_queue_empty(&lj->pending)) {
        q = ngx_queue_head(&lj->pending);
        ngx_queue_remove(q);
        lj->npending--;
        l = ngx_queue_data(q, ngx_http_tent_local_t, queue);
        ngx_http_tent_local_done(l);
    }
}


/*
 * The waiting jobs in order, up to the bound, and up to the first one
 * whose copy or target a job taken already writes (it waits for the
 * next batch, which reads what this one wrote).
 */

static ngx_int_t
ngx_http_tent_local_take(ngx_http_tent_local_batch_t *b)
{
    ngx_uint_t                    i;
    ngx_queue_t                  *q;
    ngx_http_tent_local_t        *l, **lp;
    ngx_http_tent_local_jobs_t   *lj;

    lj = b->jobs;

    while (!ngx_queue_empty(&lj->pending)
           && b->items.nelts < NGX_HTTP_TENT_LOCAL_MAX)
    {
        q = ngx_queue_head(&lj->pending);
        l = ngx_queue_data(q, ngx_http_tent_local_t, queue);

        if (ngx_http_tent_local_writing(lj, &l->copy_key)
            || (l->target_key.len
                && ngx_http_tent_local_writing(lj, &l->target_key)))
        {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, lj->dl->log, 0,
                           "tent local batch: post \"%V\": its copy is "
                           "written by a batch in flight: the next one",
                           &l->task->task.post_id);
            break;
        }

        if (ngx_http_tent_key_set_add(b->pool, b->keys, &l->copy_key)
            != NGX_OK
            || (l->target_key.len
                && ngx_http_tent_key_set_add(b->pool, b->keys,
                                             &l->target_key)
                   != NGX_OK))
        {
            return NGX_ERROR;
        }

        i = ngx_http_tent_local_cred_index(b, l);
        if (i == (ngx_uint_t) NGX_ERROR) {
            return NGX_ERROR;
        }

        lp = ngx_array_push(&b->items);
        if (lp == NULL) {
            return NGX_ERROR;
        }

        ngx_queue_remove(q);
        lj->npending--;

        l->cred = i;
        *lp = l;
    }

    return NGX_OK;
}


/* a batch's arrays and its set of keys, in "pool" */

ngx_int_t
ngx_http_tent_local_batch_init(ngx_http_tent_local_batch_t *b,
    ngx_pool_t *pool, ngx_http_tent_local_jobs_t *lj)
{
    if (ngx_array_init(&b->items, pool, 64, sizeof(ngx_http_tent_local_t *))
        != NGX_OK
        || ngx_array_init(&b->creds, pool, 64,
                          sizeof(ngx_http_tent_local_cred_t))
           != NGX_OK
        || ngx_array_init(&b->posts, pool, 4,
                          sizeof(ngx_http_tent_local_post_t))
           != NGX_OK
        || ngx_array_init(&b->settled, pool, 64,
                          sizeof(ngx_http_tent_local_t *))
           != NGX_OK
        || (b->keys = ngx_http_tent_key_set_create(pool)) == NULL)
    {
        return NGX_ERROR;
    }

    b->pool = pool;
    b->jobs = lj;

    return NGX_OK;
}


/* the place of the job's credential row in the batch's read: once each */

ngx_uint_t
ngx_http_tent_local_cred_index(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l)
{
    ngx_uint_t                   i;
    ngx_http_tent_local_cred_t  *cred;

    cred = b->creds.elts;

    for (i = 0; i < b->creds.nelts; i++) {
        if (cred[i].key.len == l->cred_key.len
            && ngx_memcmp(cred[i].key.data, l->cred_key.data,
                          l->cred_key.len)
               == 0)
        {
            return i;
        }
    }

    cred = ngx_array_push(&b->creds);
    if (cred == NULL) {
        return (ngx_uint_t) NGX_ERROR;
    }

    ngx_memzero(cred, sizeof(ngx_http_tent_local_cred_t));
    cred->key = l->cred_key;

    return i;
}


/*
 * The recipients known not to block a sender, by the blocks' generation
 * in the shared zone (moved by any write of a block row, once it is
 * done): a worker's slots, by a hash of the block row's key, each
 * holding that key.  A pair read "not blocked" as of generation g (read
 * before the read was sent) stays so while the generation is g: a block
 * written before the read was seen by it, one written after moved the
 * generation.  So a same-node batch or step reads a recipient's block
 * row once a generation, not once a post (two point reads a recipient
 * are left: its credential and its copy or reference).
 */

#define NGX_HTTP_TENT_UNBLOCKED_SLOTS  4096
#define NGX_HTTP_TENT_UNBLOCKED_KEY    256

typedef struct {
    ngx_atomic_uint_t               generation;
    size_t                          len;        /* 0: empty */
    u_char                          key[NGX_HTTP_TENT_UNBLOCKED_KEY];
} ngx_http_tent_unblocked_t;


static ngx_http_tent_unblocked_t  *ngx_http_tent_unblocked;


static ngx_http_tent_unblocked_t *
ngx_http_tent_unblocked_slot(ngx_http_tent_local_batch_t *b, ngx_str_t *key)
{
    if (key->len > NGX_HTTP_TENT_UNBLOCKED_KEY
        || b->jobs->dl->mcf->nonce_zone == NULL)
    {
        return NULL;            /* no generation to trust: read it */
    }

    if (ngx_http_tent_unblocked == NULL) {
        ngx_http_tent_unblocked = ngx_calloc(
                                   NGX_HTTP_TENT_UNBLOCKED_SLOTS
                                   * sizeof(ngx_http_tent_unblocked_t),
                                   ngx_cycle->log);
        if (ngx_http_tent_unblocked == NULL) {
            return NULL;
        }
    }

    return &ngx_http_tent_unblocked[ngx_crc32_long(key->data, key->len)
                                    % NGX_HTTP_TENT_UNBLOCKED_SLOTS];
}


/* the read found no block row of this job's recipient: kept */

void
ngx_http_tent_local_unblocked(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l)
{
    ngx_str_t                   key;
    ngx_http_tent_unblocked_t  *u;

    if (l->unblocked
        || ngx_http_tent_key(b->pool, &l->to->entity,
                             NGX_HTTP_TENT_TABLE_BLOCK,
                             &l->task->task.ent->entity, &key)
           != NGX_OK)
    {
        return;
    }

    u = ngx_http_tent_unblocked_slot(b, &key);
    if (u == NULL) {
        return;
    }

    u->generation = b->blocks_gen;
    u->len = key.len;
    ngx_memcpy(u->key, key.data, key.len);
}


/*
 * A batch's one read (MGET), not submitted: the credential rows once
 * each, then each job's copy (or reference), its delete's target, and
 * the recipient's block of the sender (unless known as of the blocks'
 * generation now), in the order ngx_http_tent_local_answer() reads
 * them.  NULL: building it failed.
 */

ngx_http_tent_store_op_t *
ngx_http_tent_local_read_op(ngx_http_tent_local_batch_t *b)
{
    ngx_str_t                    bkey;
    ngx_uint_t                   i, known;
    ngx_http_tent_local_t      **items;
    ngx_http_tent_unblocked_t   *u;
    ngx_http_tent_store_op_t    *get;
    ngx_http_tent_local_cred_t  *cred;

    known = 0;

    get = ngx_http_tent_store_op_create(b->pool, b->jobs->dl->log);

    if (get == NULL || ngx_http_tent_store_mget(get) != NGX_OK) {
        return NULL;
    }

    items = b->items.elts;
    cred = b->creds.elts;

    /* before the read is sent: a block written after it moves this */

    b->blocks_gen = ngx_http_tent_blocks_generation((ngx_cycle_t *) ngx_cycle);

    for (i = 0; i < b->creds.nelts; i++) {
        if (ngx_http_tent_store_mget_key(get, &cred[i].key) != NGX_OK) {
            return NULL;
        }
    }

    for (i = 0; i < b->items.nelts; i++) {

        /* and the recipient's block of us, if it made one (blocks.md) */

        if (ngx_http_tent_store_mget_key(get, &items[i]->copy_key) != NGX_OK
            || (items[i]->target_key.len
                && ngx_http_tent_store_mget_key(get, &items[i]->target_key)
                   != NGX_OK)
            || ngx_http_tent_key(b->pool, &items[i]->to->entity,
                                 NGX_HTTP_TENT_TABLE_BLOCK,
                                 &items[i]->task->task.ent->entity, &bkey)
               != NGX_OK)
        {
            return NULL;
        }

        u = ngx_http_tent_unblocked_slot(b, &bkey);

        items[i]->unblocked = u != NULL && u->len == bkey.len
                              && u->generation == b->blocks_gen
                              && ngx_memcmp(u->key, bkey.data, bkey.len) == 0;

        if (items[i]->unblocked) {
            known++;
            continue;
        }

        if (ngx_http_tent_store_mget_key(get, &bkey) != NGX_OK) {
            return NULL;
        }
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, b->jobs->dl->log, 0,
                   "tent local: %ui recipients' blocks read, %ui known",
                   b->items.nelts - known, known);

    return get;
}


/* the batch is over: its memory goes from the event loop; the next one */

void
ngx_http_tent_local_end(ngx_http_tent_local_batch_t *b)
{
    ngx_http_tent_local_jobs_t  *lj;

    lj = b->jobs;
    ngx_queue_remove(&b->queue);
    lj->nbatches--;

    ngx_post_event(&b->free, &ngx_posted_events);

    if (lj->npending && !lj->flush.posted) {
        ngx_post_event(&lj->flush, &ngx_posted_events);
    }
}


static void
ngx_http_tent_local_free(ngx_event_t *ev)
{
    ngx_http_tent_local_batch_t *b = ev->data;

    ngx_destroy_pool(b->pool);
}


/* the same-node jobs whose slots are free: the due scan reads them too */

ngx_uint_t
ngx_http_tent_local_held(ngx_http_tent_delivery_t *dl)
{
    ngx_http_tent_local_jobs_t  *lj;

    lj = dl->local;

    return lj ? lj->released : 0;
}


/* a due batch started its last jobs (or none): the waiting ones go */

void
ngx_http_tent_local_batch_kick(ngx_http_tent_delivery_t *dl)
{
    ngx_http_tent_local_jobs_t  *lj;

    lj = dl->local;

    if (lj == NULL || lj->npending == 0) {
        return;
    }

    lj->waited++;

    if (lj->nbatches < NGX_HTTP_TENT_LOCAL_BATCHES && !lj->flush.posted) {
        ngx_post_event(&lj->flush, &ngx_posted_events);
    }
}


/* the job's slot taken again, as task_done gives one back */

void
ngx_http_tent_local_slot(ngx_http_tent_local_t *l)
{
    ngx_http_tent_local_jobs_t  *lj;

    if (l->released) {
        lj = l->task->task.dl->local;
        l->released = 0;
        lj->released--;
        l->task->task.dl->inflight++;
    }
}


void
ngx_http_tent_local_done(ngx_http_tent_local_t *l)
{
    ngx_http_tent_local_slot(l);
    ngx_http_tent_task_done(&l->task->task);
}


/* the engine's same-node state, made once */

ngx_int_t
ngx_http_tent_local_jobs(ngx_http_tent_delivery_t *dl)
{
    ngx_http_tent_local_jobs_t  *lj;

    if (dl->local) {
        return NGX_OK;
    }

    lj = ngx_pcalloc(ngx_cycle->pool, sizeof(ngx_http_tent_local_jobs_t));
    if (lj == NULL) {
        return NGX_ERROR;
    }

    lj->dl = dl;
    ngx_queue_init(&lj->pending);
    ngx_queue_init(&lj->batches);
    lj->flush.handler = ngx_http_tent_local_flush;
    lj->flush.data = lj;
    lj->flush.log = dl->log;

    dl->local = lj;

    return NGX_OK;
}


/*
 * is "key" a copy (or a target) that a batch in flight writes: its hash
 * made once for all of them (a fan-out's step asks it for each follower,
 * and up to 16 fan-outs' steps may be in flight with the batches)
 */

ngx_int_t
ngx_http_tent_local_writing(ngx_http_tent_local_jobs_t *lj, ngx_str_t *key)
{
    uint32_t                      hash;
    ngx_queue_t                  *q;
    ngx_http_tent_local_batch_t  *b;

    hash = ngx_crc32_long(key->data, key->len);

    for (q = ngx_queue_head(&lj->batches);
         q != ngx_queue_sentinel(&lj->batches);
         q = ngx_queue_next(q))
    {
        b = ngx_queue_data(q, ngx_http_tent_local_batch_t, queue);

        if (ngx_str_rbtree_lookup(b->keys, key, hash) != NULL) {
            return 1;
        }
    }

    return 0;
}
