
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Same-node jobs in batches: the local jobs due together (those of one
 * or more due batches, ngx_http_tent_delivery_load.c) go to the store
 * as one read and one write, not as a read and a compare-and-set and a
 * settlement each.
 *
 * The read (MGET) brings every recipient's credential row (each once a
 * batch, however many of its jobs name it), each recipient's copy of
 * the post, and a delete post's target copy.  Then each job gets what
 * POST /notifications/:id would answer (ngx_http_tent_local.c checks
 * the credential, ngx_http_tent_receive.c the post: the same rules),
 * and the one write (synced) holds every copy written or replaced,
 * every target removed, and every job's settlement with its status
 * record: a lost write loses both, the job runs again and finds what
 * the write left.  A job whose recipient has no credential row of its
 * key id here goes over HTTP after all, as before.
 *
 * Up to NGX_HTTP_TENT_LOCAL_BATCHES are in flight, never two that
 * write the same copy: a job whose copy or target a batch in flight (its
 * own included) writes waits, with the jobs after it, for a batch that
 * reads once that one is written.  So a job and a later one for the
 * same copy (a post and its update, a post and its delete post) never
 * race.  A batch is bounded (jobs, bytes)
 * so that one write never holds the owner long; each post is rendered
 * and checked once a batch for each sender.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_module.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_receive.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


/* a batch: at most these many jobs, and a write of at most these bytes */
#define NGX_HTTP_TENT_LOCAL_MAX     256
#define NGX_HTTP_TENT_LOCAL_BYTES   (4 * 1024 * 1024)

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


/* the engine's same-node jobs: those waiting, and the batch in flight */
typedef struct {
    ngx_http_tent_delivery_t       *dl;
    ngx_queue_t                     pending;
    ngx_uint_t                      npending;
    ngx_uint_t                      released;   /* slots given back */
    ngx_uint_t                      waited;     /* due batches ended */
    ngx_event_t                     flush;
    ngx_queue_t                     batches;    /* in flight */
    ngx_uint_t                      nbatches;
} ngx_http_tent_local_jobs_t;


/* a credential row of the batch's read, parsed once */
typedef struct {
    ngx_str_t                       key;
    json_t                         *row;        /* NULL: none, or bad */
    ngx_uint_t                      status;     /* the read's */
} ngx_http_tent_local_cred_t;


/* a post of the batch as a sender's, checked and rendered once */
typedef struct {
    json_t                         *post;       /* the due batch's */
    ngx_str_t                       sender;
    ngx_int_t                       rc;         /* received_parse's */
    ngx_http_tent_received_t        st;
    ngx_str_t                       value;      /* a first copy's */
} ngx_http_tent_local_post_t;


typedef struct {
    ngx_pool_t                     *pool;
    ngx_http_tent_local_jobs_t     *jobs;
    ngx_array_t                     items;      /* ngx_http_tent_local_t * */
    ngx_array_t                     creds;      /* _local_cred_t */
    ngx_array_t                     posts;      /* _local_post_t */
    ngx_array_t                     settled;    /* jobs in the write */
    ngx_rbtree_t                   *keys;       /* copies it writes */
    ngx_queue_t                     queue;      /* in flight */
    ngx_http_tent_store_op_t       *wop;
    ngx_event_t                     free;
} ngx_http_tent_local_batch_t;


static ngx_int_t ngx_http_tent_local_keys(ngx_http_tent_local_t *l);
static void ngx_http_tent_local_flush(ngx_event_t *ev);
static ngx_int_t ngx_http_tent_local_take(ngx_http_tent_local_batch_t *b);
static void ngx_http_tent_local_read(ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_local_answer(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_store_op_t *op);
static ngx_uint_t ngx_http_tent_local_job(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l);
static ngx_http_tent_local_post_t *ngx_http_tent_local_post(
    ngx_http_tent_local_batch_t *b, ngx_http_tent_task_t *t,
    ngx_str_t *sender);
static void ngx_http_tent_local_written(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_local_end(ngx_http_tent_local_batch_t *b);
static void ngx_http_tent_local_free(ngx_event_t *ev);
static void ngx_http_tent_local_done(ngx_http_tent_local_t *l);
static ngx_int_t ngx_http_tent_local_jobs(ngx_http_tent_delivery_t *dl);
static ngx_int_t ngx_http_tent_local_writing(ngx_http_tent_local_jobs_t *lj,
    ngx_str_t *key);
static ngx_uint_t ngx_http_tent_local_apps(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l);
static void ngx_http_tent_local_slot(ngx_http_tent_local_t *l);


/*
 * A local job joins the next batch, which goes once the event loop has
 * handed out every job due now.
 */

ngx_int_t
ngx_http_tent_local_batch_add(ngx_http_tent_local_t *l)
{
    ngx_http_tent_delivery_t    *dl;
    ngx_http_tent_local_jobs_t  *lj;

    dl = l->task->dl;

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
 * (checked again there).
 */

static ngx_int_t
ngx_http_tent_local_keys(ngx_http_tent_local_t *l)
{
    json_t                *post;
    ngx_str_t              entity, id, type, target;
    ngx_http_tent_task_t  *t;

    t = l->task;
    post = t->post;

    if (ngx_http_tent_json_str(post, "entity", &entity) != NGX_OK
        || ngx_http_tent_json_str(post, "id", &id) != NGX_OK
        || ngx_http_tent_entity_canonical(t->pool, &entity, &entity)
           != NGX_OK
        || ngx_http_tent_post_key(t->pool, &l->to->entity, &entity, &id, -1,
                                  &l->copy_key)
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
        && ngx_http_tent_post_key(t->pool, &l->to->entity, &entity, &target,
                                  -1, &l->target_key)
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

    ngx_uint_t                    i, j;
    ngx_pool_t                   *pool;
    ngx_queue_t                  *q;
    ngx_http_tent_local_t       **items, *l;
    ngx_http_tent_store_op_t     *get;
    ngx_http_tent_local_cred_t   *cred;
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

    if (b == NULL
        || ngx_array_init(&b->items, pool, 64,
                          sizeof(ngx_http_tent_local_t *))
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
        ngx_destroy_pool(pool);
        goto failed;
    }

    b->pool = pool;
    b->jobs = lj;
    b->free.handler = ngx_http_tent_local_free;
    b->free.data = b;
    b->free.log = lj->dl->log;

    ngx_queue_insert_tail(&lj->batches, &b->queue);
    lj->nbatches++;

    if (ngx_http_tent_local_take(b) != NGX_OK) {
        goto failed_batch;
    }

    /* one read: the credential rows once each, then each job's copies */

    get = ngx_http_tent_store_op_create(pool, lj->dl->log);

    if (get == NULL || ngx_http_tent_store_mget(get) != NGX_OK) {
        goto failed_batch;
    }

    items = b->items.elts;
    cred = b->creds.elts;

    for (i = 0; i < b->creds.nelts; i++) {
        if (ngx_http_tent_store_mget_key(get, &cred[i].key) != NGX_OK) {
            goto failed_batch;
        }
    }

    for (i = 0; i < b->items.nelts; i++) {
        if (ngx_http_tent_store_mget_key(get, &items[i]->copy_key) != NGX_OK
            || (items[i]->target_key.len
                && ngx_http_tent_store_mget_key(get, &items[i]->target_key)
                   != NGX_OK))
        {
            goto failed_batch;
        }
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
    ngx_http_tent_local_cred_t   *cred;
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
                           &l->task->post_id);
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

        /* each credential row read once a batch */

        cred = b->creds.elts;

        for (i = 0; i < b->creds.nelts; i++) {
            if (cred[i].key.len == l->cred_key.len
                && ngx_memcmp(cred[i].key.data, l->cred_key.data,
                              l->cred_key.len)
                   == 0)
            {
                break;
            }
        }

        if (i == b->creds.nelts) {
            cred = ngx_array_push(&b->creds);
            if (cred == NULL) {
                return NGX_ERROR;
            }

            ngx_memzero(cred, sizeof(ngx_http_tent_local_cred_t));
            cred->key = l->cred_key;
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


static void
ngx_http_tent_local_read(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_local_batch_t *b = op->data;

    ngx_uint_t                    i, j, outcome;
    ngx_http_tent_local_t       **items, **tp;
    ngx_http_tent_entity_conf_t  *to;

    items = b->items.elts;

    if (op->status != NGX_HTTP_TENT_STORE_OK
        || ngx_http_tent_local_answer(b, op) != NGX_OK)
    {
        ngx_log_error(NGX_LOG_WARN, op->log, 0,
                      "tent local batch: the read failed (store status "
                      "%ui): %ui jobs later", op->status, b->items.nelts);
        goto again;
    }

    b->wop = ngx_http_tent_store_op_create(b->pool, op->log);

    if (b->wop == NULL || ngx_http_tent_store_write(b->wop, 1) != NGX_OK) {
        goto again;
    }

    for (i = 0; i < b->items.nelts; i++) {

        /*
         * A write this big goes as it is: the jobs left wait, in their
         * order, for the next batch (its read sees what this one wrote)
         */

        if (ngx_http_tent_store_op_size(b->wop) >= NGX_HTTP_TENT_LOCAL_BYTES)
        {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, op->log, 0,
                           "tent local batch: the write is full: %ui jobs "
                           "for the next batch", b->items.nelts - i);

            for (j = b->items.nelts; j > i; j--) {
                ngx_queue_insert_head(&b->jobs->pending,
                                      &items[j - 1]->queue);
                b->jobs->npending++;
            }

            break;
        }

        outcome = ngx_http_tent_local_job(b, items[i]);

        if (outcome == (ngx_uint_t) NGX_DECLINED) {
            continue;               /* over HTTP, or over already */
        }

        tp = ngx_array_push(&b->settled);
        if (tp == NULL) {
            ngx_http_tent_local_done(items[i]);
            continue;
        }

        *tp = items[i];
    }

    if (b->settled.nelts == 0) {
        ngx_http_tent_local_end(b);
        return;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, op->log, 0,
                   "tent local batch: %ui jobs settled in one write, "
                   "%uz bytes", b->settled.nelts,
                   ngx_http_tent_store_op_size(b->wop));

    /*
     * Into its recipients only while they are active: an operator's
     * disable or delete since the engine chose this way is checked by
     * the store with the write (docs/store.md, "The registry fence")
     */

    tp = b->settled.elts;
    to = NULL;

    for (i = 0; i < b->settled.nelts; i++) {
        if (tp[i]->to == to) {
            continue;
        }

        to = tp[i]->to;

        if (ngx_http_tent_store_fence(b->wop, &to->entity, 0) != NGX_OK) {
            b->wop->status = NGX_HTTP_TENT_STORE_ERROR;
        }
    }

    /* and the senders' settlements: only into the sender a job was of */

    for (i = 0; i < b->settled.nelts; i++) {
        if (ngx_http_tent_store_fence_rows(b->wop,
                                           &tp[i]->task->ent->entity,
                                           tp[i]->task->incarnation)
            != NGX_OK)
        {
            b->wop->status = NGX_HTTP_TENT_STORE_ERROR;
        }
    }

    b->wop->handler = ngx_http_tent_local_written;
    b->wop->data = b;

    /* spoilt while it was built: none of it goes */

    if (b->wop->status != NGX_HTTP_TENT_STORE_OK
        || ngx_http_tent_store_submit(b->wop) != NGX_OK)
    {
        b->wop->status = NGX_HTTP_TENT_STORE_ERROR;
        ngx_http_tent_local_written(b->wop);
    }

    return;

again:

    for (i = 0; i < b->items.nelts; i++) {
        ngx_http_tent_local_done(items[i]);
    }

    ngx_http_tent_local_end(b);
}


/* the read's answer: the credential rows parsed, the copies kept */

static ngx_int_t
ngx_http_tent_local_answer(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_store_op_t *op)
{
    ngx_str_t                    value;
    ngx_uint_t                   i, found;
    ngx_http_tent_local_t      **items;
    ngx_http_tent_local_cred_t  *cred;

    cred = b->creds.elts;

    for (i = 0; i < b->creds.nelts; i++) {
        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            return NGX_ERROR;
        }

        if (!found) {
            cred[i].status = NGX_HTTP_TENT_STORE_NOT_FOUND;
            continue;
        }

        cred[i].row = ngx_http_tent_json_parse(&value, op->log);

        if (cred[i].row == NULL
            || ngx_http_tent_json_cleanup(b->pool, cred[i].row) != NGX_OK)
        {
            json_decref(cred[i].row);
            cred[i].row = NULL;
            cred[i].status = NGX_HTTP_TENT_STORE_ERROR;
        }
    }

    items = b->items.elts;

    for (i = 0; i < b->items.nelts; i++) {
        items[i]->found = 0;

        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            return NGX_ERROR;
        }

        if (found) {
            items[i]->found |= 1;
            items[i]->copy = value;
        }

        if (items[i]->target_key.len == 0) {
            continue;
        }

        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            return NGX_ERROR;
        }

        if (found) {
            items[i]->found |= 2;
            items[i]->target = value;
        }
    }

    return NGX_OK;
}


/*
 * One job: what POST /notifications/:id would answer, its rows and its
 * settlement into the batch's write.  NGX_DECLINED: not in the write
 * (over HTTP after all, or the task is over).
 */

static ngx_uint_t
ngx_http_tent_local_job(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l)
{
    json_t                      *current, *copy;
    ngx_str_t                    sender, key, value;
    ngx_uint_t                   status, outcome, write, i;
    ngx_http_tent_task_t        *t;
    ngx_http_tent_received_t     st;
    ngx_http_tent_store_op_t    *wop;
    ngx_http_tent_local_post_t  *lp;
    ngx_http_tent_local_cred_t  *cred;

    t = l->task;
    cred = &((ngx_http_tent_local_cred_t *) b->creds.elts)[l->cred];

    write = 0;
    current = NULL;
    copy = NULL;
    lp = NULL;
    ngx_str_null(&value);
    ngx_memzero(&st, sizeof(ngx_http_tent_received_t));

    if (cred->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {

        /*
         * Not this store's to say: the entity may be served elsewhere (a
         * node behind a front that routes names has a block for every
         * name).  HTTP asks whoever serves the URL; if that is us, its
         * MAC check answers the 401 this would have.
         */

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                       "tent local: \"%V\" has no credential of that key "
                       "id here: over HTTP", &l->to->entity);
        ngx_http_tent_local_slot(l);
        ngx_http_tent_delivery_over_http(t);
        return (ngx_uint_t) NGX_DECLINED;
    }

    if (cred->row == NULL) {
        status = NGX_HTTP_INTERNAL_SERVER_ERROR;
        goto settle;
    }

    status = ngx_http_tent_local_credential(l, cred->row, &sender);
    if (status != NGX_HTTP_OK) {
        goto settle;
    }

    /* the post as it would go over HTTP, checked as the route checks it */

    lp = ngx_http_tent_local_post(b, t, &sender);

    if (lp == NULL) {
        status = NGX_HTTP_INTERNAL_SERVER_ERROR;
        goto settle;
    }

    if (lp->rc != NGX_OK) {
        status = (lp->rc == NGX_ERROR) ? NGX_HTTP_INTERNAL_SERVER_ERROR
                                       : (ngx_uint_t) lp->rc;
        goto settle;
    }

    st = lp->st;

    /* the keys read are the keys the rules name, or it is tried again */

    if (ngx_http_tent_post_key(b->pool, &l->to->entity, &st.entity, &st.id,
                               -1, &key)
        != NGX_OK
        || key.len != l->copy_key.len
        || ngx_memcmp(key.data, l->copy_key.data, key.len) != 0
        || (st.deletes.len != 0) != (l->target_key.len != 0))
    {
        status = NGX_HTTP_INTERNAL_SERVER_ERROR;
        goto settle;
    }

    status = NGX_HTTP_OK;

    if (!(l->found & 1)) {

        /* a first copy: the one rendering of the batch */

        if (lp->value.data == NULL
            && ngx_http_tent_received_value(b->pool, &lp->st, NULL,
                                            &lp->value)
               != NGX_OK)
        {
            status = NGX_HTTP_INTERNAL_SERVER_ERROR;
            goto settle;
        }

        value = lp->value;
        write = 1;

    } else {
        current = ngx_http_tent_json_parse(&l->copy, t->dl->log);

        if (current == NULL
            || ngx_http_tent_json_cleanup(b->pool, current) != NGX_OK)
        {
            json_decref(current);
            status = NGX_HTTP_INTERNAL_SERVER_ERROR;
            goto settle;
        }

        /* only a newer version replaces it, keeping its times */

        if (json_integer_value(json_object_get(current, "version"))
            < st.version)
        {
            st.post = json_deep_copy(lp->st.post);

            if (st.post == NULL
                || ngx_http_tent_json_cleanup(b->pool, st.post) != NGX_OK
                || ngx_http_tent_received_value(b->pool, &st, current,
                                                &value)
                   != NGX_OK)
            {
                json_decref(st.post);
                status = NGX_HTTP_INTERNAL_SERVER_ERROR;
                goto settle;
            }

            write = 1;
        }
    }

    /* a delete post's target, as the route removes it after storing */

    if (write && (l->found & 2)) {
        copy = ngx_http_tent_json_parse(&l->target, t->dl->log);

        if (copy == NULL
            || ngx_http_tent_json_cleanup(b->pool, copy) != NGX_OK)
        {
            json_decref(copy);
            copy = NULL;
            status = NGX_HTTP_INTERNAL_SERVER_ERROR;
            goto settle;
        }
    }

settle:

    outcome = ngx_http_tent_local_outcome(l, status);

    ngx_http_tent_local_slot(l);

    wop = ngx_http_tent_delivery_settlement(t, outcome);
    if (wop == NULL) {
        return (ngx_uint_t) NGX_DECLINED;       /* over, logged */
    }

    i = 0;

    if (write
        && (ngx_http_tent_received_rows(b->pool, &l->to->entity, b->wop, &st,
                                        &value,
                                        NGX_HTTP_TENT_RECEIVED_ROW
                                        | (ngx_http_tent_local_apps(b, l)
                                           ? 0
                                           : NGX_HTTP_TENT_RECEIVED_NO_APPS))
            != NGX_OK
            || (copy
                && ngx_http_tent_received_delete_rows(b->pool,
                                                      &l->to->entity,
                                                      b->wop, &st, copy)
                   != NGX_OK)))
    {
        i = 1;
    }

    if (i || ngx_http_tent_store_batch_append(b->wop, wop) != NGX_OK) {

        /* the batch's write is spoilt: none of it goes, all run again */

        ngx_log_error(NGX_LOG_ERR, t->dl->log, 0,
                      "tent local batch: building the write failed");
        b->wop->status = NGX_HTTP_TENT_STORE_ERROR;
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                   "tent local batch: post \"%V\" to \"%V\": %ui, %s",
                   &t->post_id, &l->to->entity, status,
                   write ? (copy ? "stored, its target removed" : "stored")
                         : "nothing written");

    return outcome;
}


/* the post of a due batch as "sender"'s: checked and rendered once */

static ngx_http_tent_local_post_t *
ngx_http_tent_local_post(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_task_t *t, ngx_str_t *sender)
{
    json_t                      *body;
    ngx_uint_t                   i;
    const char                  *error;
    ngx_http_tent_local_post_t  *lp;

    lp = b->posts.elts;

    for (i = 0; i < b->posts.nelts; i++) {
        if (lp[i].post == t->post
            && lp[i].sender.len == sender->len
            && ngx_strncmp(lp[i].sender.data, sender->data, sender->len) == 0)
        {
            return &lp[i];
        }
    }

    lp = ngx_array_push(&b->posts);
    if (lp == NULL) {
        return NULL;
    }

    ngx_memzero(lp, sizeof(ngx_http_tent_local_post_t));
    lp->post = t->post;
    lp->sender = *sender;

    /* what a follower may see (ngx_http_tent_delivery_body) */

    body = ngx_http_tent_delivery_body(t->post, NULL);

    if (body == NULL || ngx_http_tent_json_cleanup(b->pool, body) != NGX_OK) {
        json_decref(body);
        lp->rc = NGX_ERROR;
        return lp;
    }

    lp->rc = ngx_http_tent_received_parse(b->pool, body, sender, 0, &lp->st,
                                          &error);

    if (lp->rc != NGX_OK) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                       "tent local batch: post \"%V\": %s", &t->post_id,
                       error);

        if (lp->rc == NGX_ERROR) {
            ngx_log_error(NGX_LOG_ERR, t->dl->log, 0,
                          "tent receive: %s failed", error);
        }
    }

    return lp;
}


/* the write answered: every job settled, or every job runs again */

static void
ngx_http_tent_local_written(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_local_batch_t *b = op->data;

    ngx_uint_t               i;
    ngx_http_tent_local_t  **tp;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_error(NGX_LOG_WARN, op->log, 0,
                      "tent local batch: the write failed (store status "
                      "%ui); %ui jobs run again", op->status,
                      b->settled.nelts);
    }

    tp = b->settled.elts;

    for (i = 0; i < b->settled.nelts; i++) {
        if (op->status != NGX_HTTP_TENT_STORE_OK) {
            ngx_http_tent_queue_again(tp[i]->task);

        } else {
            tp[i]->task->gone = 1;          /* removed, or put again */
        }

        ngx_http_tent_local_done(tp[i]);
    }

    ngx_http_tent_local_end(b);
}


/* the batch is over: its memory goes from the event loop; the next one */

static void
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

static void
ngx_http_tent_local_slot(ngx_http_tent_local_t *l)
{
    ngx_http_tent_local_jobs_t  *lj;

    if (l->released) {
        lj = l->task->dl->local;
        l->released = 0;
        lj->released--;
        l->task->dl->inflight++;
    }
}


static void
ngx_http_tent_local_done(ngx_http_tent_local_t *l)
{
    ngx_http_tent_local_slot(l);
    ngx_http_tent_task_done(l->task);
}


/* the engine's same-node state, made once */

static ngx_int_t
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


/* may an app of the recipient be subscribed: as far as the engine knows */

static ngx_uint_t
ngx_http_tent_local_apps(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l)
{
    /* the outbox pass's census, in the shared zone (ngx_http_tent_shm.h) */

    if (!ngx_http_tent_apps_none((ngx_cycle_t *) ngx_cycle, &l->to->entity))
    {
        return 1;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, b->jobs->dl->log, 0,
                   "tent local batch: no app of \"%V\" subscribed: its copy "
                   "has no outbox row", &l->to->entity);

    return 0;
}


/* is "key" a copy (or a target) that a batch in flight writes */

static ngx_int_t
ngx_http_tent_local_writing(ngx_http_tent_local_jobs_t *lj, ngx_str_t *key)
{
    ngx_queue_t                  *q;
    ngx_http_tent_local_batch_t  *b;

    for (q = ngx_queue_head(&lj->batches);
         q != ngx_queue_sentinel(&lj->batches);
         q = ngx_queue_next(q))
    {
        b = ngx_queue_data(q, ngx_http_tent_local_batch_t, queue);

        if (ngx_http_tent_key_set_has(b->keys, key)) {
            return 1;
        }
    }

    return 0;
}
