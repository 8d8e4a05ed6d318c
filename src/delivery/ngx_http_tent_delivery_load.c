
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * A batch of due jobs, from one scan (ngx_http_tent_queue.c): each job's
 * row again, its record (a follower, a following, an app's subscription)
 * and its post, every one in one store read (MGET); each post once,
 * however many of the batch's jobs it goes with, parsed once, and its
 * request body rendered once (ngx_http_tent_send.c).  The read's answer
 * (the records: a follower's row may hold a 64 KB profile) goes once each
 * job parsed its own; the batch's pool, with the posts and their bodies,
 * when the last of its jobs is done: a fan-out to 100,000 followers
 * holds the batches of the jobs in flight, never the queue.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_job.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_ap.h"


/*
 * Jobs of a batch started in one turn of the event loop: the rest wait
 * for the next turn (ngx_posted_next_events), after the requests that
 * arrived meanwhile.
 */
#define NGX_HTTP_TENT_BATCH_TURN  16


/*
 * The records (a follower's row, a following's) parsed once, not for
 * each post's fan-out and each job: the engine keeps the last parses in
 * NGX_HTTP_TENT_RECORDS slots, NGX_HTTP_TENT_RECORD_WAYS to a set (by
 * the key's hash; a newer row of a key takes its slot, a new key the
 * set's least recently used), so that 1,000 followers stay parsed where
 * one slot a hash left six in ten of them parsed for every job.  A hit
 * is a row whose bytes are those parsed, so an update of the row is
 * never missed; rows above NGX_HTTP_TENT_RECORD_MAX bytes (a big
 * profile) are parsed each time.  The batches' posts go through it too
 * (ngx_http_tent_batch_loaded): a post's key and bytes are a row's, and
 * a same-node batch's credential rows (ngx_http_tent_local_write.c).  At
 * most 4096 x 2 KB of rows (8 MB), and their parses.
 */
#define NGX_HTTP_TENT_RECORDS      4096
#define NGX_HTTP_TENT_RECORD_WAYS  4
#define NGX_HTTP_TENT_RECORD_MAX   2048

typedef struct {
    u_char                         *bytes;       /* key, then value */
    size_t                          key_len;
    size_t                          value_len;
    json_t                         *json;
    ngx_uint_t                      used;        /* last hit, a count */
} ngx_http_tent_record_slot_t;

static ngx_http_tent_record_slot_t  *ngx_http_tent_records;
static ngx_uint_t                    ngx_http_tent_records_used;


/* a job of the batch, and what its read brought */
typedef struct {
    ngx_http_tent_job_t            *task;
    ngx_str_t                       record_key;
    ngx_uint_t                      post;        /* in batch->posts */
    ngx_str_t                       record;
    unsigned                        found:1;     /* the job's row */
    unsigned                        has_record:1;
} ngx_http_tent_batch_job_t;


static ngx_http_tent_batch_t *ngx_http_tent_batch_create(
    ngx_http_tent_delivery_t *dl);
static ngx_int_t ngx_http_tent_batch_add(ngx_http_tent_batch_t *batch,
    ngx_http_tent_job_t *t);
static void ngx_http_tent_batch_loaded(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_batch_run(ngx_event_t *ev);
static void ngx_http_tent_batch_unref(ngx_http_tent_batch_t *batch);
static void ngx_http_tent_batch_free(ngx_event_t *ev);
static void ngx_http_tent_records_free(void *data);


/* a batch, made for the first job a scan starts: none when idle */

static ngx_http_tent_batch_t *
ngx_http_tent_batch_create(ngx_http_tent_delivery_t *dl)
{
    ngx_pool_t             *pool, *read;
    ngx_http_tent_batch_t  *batch;

    pool = ngx_create_pool(4096, dl->log);
    read = ngx_create_pool(16384, dl->log);

    if (pool == NULL || read == NULL) {
        goto failed;
    }

    batch = ngx_pcalloc(pool, sizeof(ngx_http_tent_batch_t));

    if (batch == NULL
        || ngx_array_init(&batch->jobs, read, 16,
                          sizeof(ngx_http_tent_batch_job_t))
           != NGX_OK
        || ngx_array_init(&batch->posts, pool, 4,
                          sizeof(ngx_http_tent_batch_post_t))
           != NGX_OK)
    {
        goto failed;
    }

    batch->pool = pool;
    batch->read = read;
    batch->dl = dl;
    batch->refs = 1;            /* the read, until its answer */
    batch->free.handler = ngx_http_tent_batch_free;
    batch->free.data = batch;
    batch->free.log = dl->log;
    batch->more.handler = ngx_http_tent_batch_run;
    batch->more.data = batch;
    batch->more.log = dl->log;

    /*
     * Counted until its read is answered and its jobs started (16 a
     * turn): the same-node jobs wait for the rest of them, so that one
     * synced write takes a due batch's, or several, not a turn's 16
     * (ngx_http_tent_local_batch.c).
     */

    batch->handing = 1;
    dl->handing++;

    return batch;

failed:

    ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                  "tent delivery: creating a batch failed");

    if (pool) {
        ngx_destroy_pool(pool);
    }

    if (read) {
        ngx_destroy_pool(read);
    }

    return NULL;
}


/*
 * The first "due" rows of the scan into a batch; 1 when every one of
 * them is on its way (or was already): the entity need not be scanned
 * again before a job of it is put, ends or is due (ngx_http_tent_queue.c).
 * "last": the last row up to which every one is on its way or settled,
 * where the next scan may resume.
 */

ngx_uint_t
ngx_http_tent_delivery_load(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent, ngx_http_tent_store_op_t *scan,
    ngx_uint_t due, ngx_str_t *last)
{
    ngx_str_t                   key, value;
    ngx_uint_t                  i, seen, complete, started;
    ngx_http_tent_job_t        *t;
    ngx_http_tent_batch_t      *batch;
    ngx_http_tent_store_op_t   *get;
    ngx_http_tent_batch_job_t  *bj;
    ngx_http_tent_batch_post_t *bp;

    batch = NULL;
    seen = 0;
    complete = 1;
    started = 1;        /* every row so far on its way */

    while (seen < due
           && ngx_http_tent_store_next(scan, &key, &value) == NGX_OK)
    {
        seen++;

        if (ngx_http_tent_task_running(dl, &key)) {
            if (started) {
                *last = key;
            }

            continue;
        }

        /* one left for its host, or for room: due still */

        if (ngx_http_tent_host_deferred(&key)
            || dl->inflight >= dl->mcf->delivery_concurrency)
        {
            complete = 0;
            started = 0;
            continue;
        }

        if (batch == NULL) {
            batch = ngx_http_tent_batch_create(dl);
            if (batch == NULL) {
                complete = 0;
                break;
            }
        }

        t = (ngx_http_tent_job_t *) ngx_http_tent_task_create(dl, ent, &key,
                                   &value, batch->pool,
                                   sizeof(ngx_http_tent_job_t));
        if (t == NULL) {
            complete = 0;
            break;
        }

        t->task.job = 1;

        if (started) {
            *last = key;    /* settled or on its way from here on */
        }

        t->batch = batch;
        batch->refs++;

        /* its row: binary, or JSON of a version before */

        if (ngx_http_tent_job_row_decode(t->task.pool, &t->task.raw, &t->row)
            != NGX_OK)
        {
            ngx_log_debug0(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                           "tent delivery: a job row not understood: "
                           "dropped");
            t->row.kind = 0;
            ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_REFUSED);
            continue;
        }

        if (ngx_http_tent_batch_add(batch, t) != NGX_OK) {
            ngx_http_tent_task_failed(&t->task, "building a job's reads");
            started = 0;    /* its row is left: the task's end says so */
            continue;
        }

        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                       "tent delivery: job due: post \"%V\" of \"%V\", "
                       "attempt %i", &t->task.post_id, &t->task.entity,
                       t->row.attempt);
    }

    if (seen < due) {
        complete = 0;
    }

    ngx_http_tent_queue_next(dl);

    if (batch == NULL) {
        return complete;
    }

    if (batch->jobs.nelts == 0) {
        ngx_http_tent_batch_unref(batch);
        return complete;
    }

    /*
     * One read: each job's row and record, in the jobs' order, then each
     * post once.
     */

    get = ngx_http_tent_store_op_create(batch->read, dl->log);

    if (get == NULL || ngx_http_tent_store_mget(get) != NGX_OK) {
        goto failed_read;
    }

    bj = batch->jobs.elts;

    for (i = 0; i < batch->jobs.nelts; i++) {
        if (ngx_http_tent_store_mget_key(get, &bj[i].task->task.key) != NGX_OK
            || (bj[i].record_key.len
                && ngx_http_tent_store_mget_key(get, &bj[i].record_key)
                   != NGX_OK))
        {
            goto failed_read;
        }
    }

    bp = batch->posts.elts;

    for (i = 0; i < batch->posts.nelts; i++) {
        if (ngx_http_tent_store_mget_key(get, &bp[i].key) != NGX_OK) {
            goto failed_read;
        }
    }

    /*
     * An ActivityPub entity's key, last: its followers' jobs sign with
     * it (ngx_http_tent_transport_ap.c), one read a batch, not a job
     */

    if (ent->scf->activitypub) {
        if (ngx_http_tent_ap_key_row(batch->read, &ent->entity, &key)
            != NGX_OK
            || ngx_http_tent_store_mget_key(get, &key) != NGX_OK)
        {
            goto failed_read;
        }

        batch->ap_key_asked = 1;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: batch load: %ui jobs, %ui posts, "
                   "one read", batch->jobs.nelts, batch->posts.nelts);

    get->handler = ngx_http_tent_batch_loaded;
    get->data = batch;

    if (ngx_http_tent_store_submit(get) == NGX_OK) {
        return complete;
    }

failed_read:

    ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                  "tent delivery: building a batch's read failed");

    bj = batch->jobs.elts;

    for (i = 0; i < batch->jobs.nelts; i++) {
        ngx_http_tent_task_done(&bj[i].task->task);
    }

    ngx_http_tent_batch_unref(batch);

    return complete;
}


/* a job into the batch: its record's key, its post's place */

static ngx_int_t
ngx_http_tent_batch_add(ngx_http_tent_batch_t *batch, ngx_http_tent_job_t *t)
{
    ngx_str_t                    pid, pkey, owner;
    ngx_uint_t                   i;
    ngx_http_tent_batch_job_t   *bj;
    ngx_http_tent_batch_post_t  *bp;

    t->stranger = (t->row.kind == NGX_HTTP_TENT_JOB_ENTITY);

    t->task.entity = t->row.post_entity.len ? t->row.post_entity
                                            : t->task.ent->entity;
    pid = t->row.id;

    /* a same-node reference's post is in its author's rows */

    owner = t->row.ref_owner.len ? t->row.ref_owner : t->task.ent->entity;

    if (ngx_http_tent_post_key(batch->read, &owner, &t->task.entity, &pid,
                               -1, &pkey)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    t->task.post_id = pid;

    bj = ngx_array_push(&batch->jobs);
    if (bj == NULL) {
        return NGX_ERROR;
    }

    ngx_memzero(bj, sizeof(ngx_http_tent_batch_job_t));

    if (!t->stranger
        && ngx_http_tent_delivery_record_key(t, &bj->record_key)
           != NGX_OK)
    {
        batch->jobs.nelts--;
        return NGX_ERROR;
    }

    bj->task = t;

    /* the posts of a batch are few: most often one */

    bp = batch->posts.elts;

    for (i = 0; i < batch->posts.nelts; i++) {
        if (bp[i].key.len == pkey.len
            && ngx_memcmp(bp[i].key.data, pkey.data, pkey.len) == 0)
        {
            bj->post = i;
            return NGX_OK;
        }
    }

    bp = ngx_array_push(&batch->posts);
    if (bp == NULL) {
        batch->jobs.nelts--;
        return NGX_ERROR;
    }

    ngx_memzero(bp, sizeof(ngx_http_tent_batch_post_t));
    bp->key = pkey;
    bp->ref = (t->row.ref_owner.len != 0);
    bj->post = batch->posts.nelts - 1;

    return NGX_OK;
}


static void
ngx_http_tent_batch_loaded(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_batch_t *batch = op->data;

    ngx_str_t                    value;
    ngx_uint_t                   i, found;
    ngx_http_tent_batch_job_t   *bj;
    ngx_http_tent_batch_post_t  *bp;

    bj = batch->jobs.elts;
    bp = batch->posts.elts;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, op->log, 0,
                       "tent delivery: a batch not read (store status "
                       "%ui): later", op->status);
        goto done;
    }

    for (i = 0; i < batch->jobs.nelts; i++) {
        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            goto failed;
        }

        bj[i].found = found;

        if (bj[i].record_key.len == 0) {
            continue;
        }

        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            goto failed;
        }

        bj[i].has_record = found;
        bj[i].record = value;
    }

    /* each post parsed once, kept by the batch's pool */

    for (i = 0; i < batch->posts.nelts; i++) {
        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            goto failed;
        }

        if (!found) {
            continue;
        }

        /*
         * a post's parse is shared by the batches that send it (a
         * reference's is changed below: its own)
         */

        bp[i].post = bp[i].ref
                     ? ngx_http_tent_json_parse(&value, op->log)
                     : ngx_http_tent_record_parse(op->log, &bp[i].key,
                                                  &value);

        if (bp[i].post != NULL
            && ngx_http_tent_json_cleanup(batch->pool, bp[i].post) != NGX_OK)
        {
            json_decref(bp[i].post);
            goto failed;
        }

        /*
         * A same-node reference's post, read in its author's rows: whom
         * it is for stays the author's, as it would in a copy
         */

        if (bp[i].ref && bp[i].post
            && json_object_set_new(bp[i].post, "permissions",
                   json_pack("{s:b}", "public",
                             json_is_true(json_object_get(
                                 json_object_get(bp[i].post, "permissions"),
                                 "public"))))
               != 0)
        {
            goto failed;
        }
    }

    if (batch->ap_key_asked) {
        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            goto failed;
        }

        if (found) {
            batch->ap_key.data = ngx_pnalloc(batch->pool, value.len);
            if (batch->ap_key.data == NULL) {
                goto failed;
            }

            ngx_memcpy(batch->ap_key.data, value.data, value.len);
            batch->ap_key.len = value.len;
        }

        batch->ap_key_read = 1;
    }

    batch->next = 0;
    ngx_http_tent_batch_run(&batch->more);

    return;

failed:

    ngx_log_error(NGX_LOG_ERR, op->log, 0,
                  "tent delivery: reading a batch failed");

done:

    for (i = 0; i < batch->jobs.nelts; i++) {
        ngx_http_tent_task_done(&bj[i].task->task);
    }

    ngx_http_tent_batch_unref(batch);
}


/*
 * The batch's jobs started, NGX_HTTP_TENT_BATCH_TURN a turn of the event
 * loop: each parses its record and builds, signs and starts its request,
 * and a request that arrived meanwhile is not held behind all of them.
 */

static void
ngx_http_tent_batch_run(ngx_event_t *ev)
{
    ngx_http_tent_batch_t *batch = ev->data;

    ngx_uint_t                   n;
    ngx_http_tent_job_t         *t;
    ngx_http_tent_batch_job_t   *bj;
    ngx_http_tent_batch_post_t  *bp;

    bp = batch->posts.elts;

    for (n = 0;
         batch->next < batch->jobs.nelts && n < NGX_HTTP_TENT_BATCH_TURN;
         n++)
    {
        bj = (ngx_http_tent_batch_job_t *) batch->jobs.elts + batch->next++;
        t = bj->task;

        /*
         * The job itself first: the scan that listed it may have been
         * answered while an earlier task for it settled it; then it is
         * gone, and not sent twice.
         */

        if (!bj->found) {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ev->log, 0,
                           "tent delivery: post \"%V\": job settled already",
                           &t->task.post_id);
            t->task.gone = 1;
            ngx_http_tent_task_done(&t->task);
            continue;
        }

        t->bpost = &bp[bj->post];
        t->task.post = t->bpost->post;
        t->record_key = bj->record_key;

        ngx_http_tent_delivery_loaded(t, bj->has_record ? &bj->record : NULL);
    }

    if (batch->next < batch->jobs.nelts) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ev->log, 0,
                       "tent delivery: batch: %ui of %ui jobs started, the "
                       "rest next turn", batch->next, batch->jobs.nelts);

        ngx_post_event(&batch->more, &ngx_posted_next_events);
        return;
    }

    ngx_http_tent_batch_unref(batch);
}


/*
 * The read is over: its answer goes from the event loop, not from the
 * store's handler, and with it the read's hold on the batch.
 */

static void
ngx_http_tent_batch_unref(ngx_http_tent_batch_t *batch)
{
    if (batch->handing) {
        batch->handing = 0;
        batch->dl->handing--;
        ngx_http_tent_local_batch_kick(batch->dl);
    }

    ngx_post_event(&batch->free, &ngx_posted_events);
}


static void
ngx_http_tent_batch_free(ngx_event_t *ev)
{
    ngx_http_tent_batch_t *batch = ev->data;

    ngx_destroy_pool(batch->read);
    batch->read = NULL;

    if (--batch->refs == 0) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, ev->log, 0,
                       "tent delivery: a batch's jobs all done: its pool "
                       "goes");
        ngx_destroy_pool(batch->pool);
    }
}


/*
 * A record's row, parsed: a new reference the caller releases, or NULL
 * (not JSON).  From the slot of its key when the row is the one parsed.
 */

json_t *
ngx_http_tent_record_parse(ngx_log_t *log, ngx_str_t *key, ngx_str_t *value)
{
    json_t                       *json;
    u_char                       *bytes;
    ngx_uint_t                    i;
    ngx_pool_cleanup_t           *cln;
    ngx_http_tent_record_slot_t  *slot, *set;

    if (ngx_http_tent_records == NULL) {
        cln = ngx_pool_cleanup_add(ngx_cycle->pool, 0);
        if (cln == NULL) {
            return ngx_http_tent_json_parse(value, log);
        }

        ngx_http_tent_records =
            ngx_calloc(NGX_HTTP_TENT_RECORDS
                       * sizeof(ngx_http_tent_record_slot_t), log);
        if (ngx_http_tent_records == NULL) {
            return ngx_http_tent_json_parse(value, log);
        }

        cln->handler = ngx_http_tent_records_free;
        cln->data = NULL;
    }

    set = &ngx_http_tent_records[ngx_hash_key(key->data, key->len)
                                 % (NGX_HTTP_TENT_RECORDS
                                    / NGX_HTTP_TENT_RECORD_WAYS)
                                 * NGX_HTTP_TENT_RECORD_WAYS];

    /* the key's slot, else an empty one, else the least recently used */

    slot = NULL;

    for (i = 0; i < NGX_HTTP_TENT_RECORD_WAYS; i++) {
        if (set[i].json == NULL) {
            if (slot == NULL || slot->json) {
                slot = &set[i];
            }

            continue;
        }

        if (set[i].key_len == key->len
            && ngx_memcmp(set[i].bytes, key->data, key->len) == 0)
        {
            slot = &set[i];
            break;
        }

        if (slot == NULL || (slot->json && set[i].used < slot->used)) {
            slot = &set[i];
        }
    }

    if (slot->json
        && slot->key_len == key->len
        && slot->value_len == value->len
        && ngx_memcmp(slot->bytes, key->data, key->len) == 0
        && ngx_memcmp(slot->bytes + key->len, value->data, value->len) == 0)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, log, 0,
                       "tent delivery: record \"%V\" parsed already", key);

        slot->used = ++ngx_http_tent_records_used;

        return json_incref(slot->json);
    }

    json = ngx_http_tent_json_parse(value, log);

    if (json == NULL
        || key->len + value->len > NGX_HTTP_TENT_RECORD_MAX)
    {
        return json;
    }

    bytes = ngx_alloc(key->len + value->len, log);
    if (bytes == NULL) {
        return json;
    }

    ngx_memcpy(bytes, key->data, key->len);
    ngx_memcpy(bytes + key->len, value->data, value->len);

    if (slot->json) {
        json_decref(slot->json);
        ngx_free(slot->bytes);
    }

    slot->bytes = bytes;
    slot->key_len = key->len;
    slot->value_len = value->len;
    slot->json = json_incref(json);
    slot->used = ++ngx_http_tent_records_used;

    return json;
}


static void
ngx_http_tent_records_free(void *data)
{
    ngx_uint_t  i;

    if (ngx_http_tent_records == NULL) {
        return;
    }

    for (i = 0; i < NGX_HTTP_TENT_RECORDS; i++) {
        if (ngx_http_tent_records[i].json) {
            json_decref(ngx_http_tent_records[i].json);
            ngx_free(ngx_http_tent_records[i].bytes);
        }
    }

    ngx_free(ngx_http_tent_records);
    ngx_http_tent_records = NULL;
}
