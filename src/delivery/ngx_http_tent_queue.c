
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The due jobs' scan, and where it starts.  Jobs are "j <due ms><job
 * id>": the due ones are a key range up to now.  A settled job is
 * removed, and LevelDB steps over a removed key one by one until a
 * compaction drops it, so a scan from the table's start would cost more
 * with every job finished (100,000 after a big fan-out).  So each entity
 * has a cursor: the due time of the first row the last scan found alive;
 * nothing before it was.  A job put earlier than the cursor (the fan-out,
 * a retry, a job put back for its host: every job row is written by this
 * engine, through ngx_http_tent_job_put()) lowers it at once; a scan only
 * moves it up when no such put happened since the scan was sent, and
 * never past a put that was not answered yet (its write may land after
 * the scan read).  Once a minute the scan starts from the beginning
 * again, whatever was missed.
 *
 * And the due index: each entity's "next", the time before which none of
 * its jobs is due, so that a pass scans only the entities with a job due
 * (1,000 entities of one nginx, one of them posting: one scan, not
 * 1,000).  A scan reads one row past the due ones: when every due row it
 * found is on its way, "next" is the due time of that row (none: never,
 * until a put).  Every job put lowers it (ngx_http_tent_queue_lower), as
 * does a due job's task that ends (its row may stay: a failure), a
 * settlement that failed, and the reset once a minute; a scan's answer
 * never raises it past a put made while the scan ran, or not answered
 * when it was sent, as for the cursor.
 *
 * And where a scan resumes: the jobs in flight are the first due rows, so
 * a scan from the cursor would read them all again for each batch (64 in
 * flight, 16 slots free: 80 rows read for 16 jobs, and a scan's cost
 * grows with the slots).  So each entity keeps the last row of its last
 * scan up to which every due row was started or already on its way, and
 * the next scan starts past it, with room for the free slots only.  It is
 * forgotten (the next scan from the cursor again, reading every row) as
 * soon as a row before it may be due and not on its way: a job put due no
 * later than it, a task that ends with its row left (a failure, a write
 * of its settlement that failed), the reset once a minute, and a resumed
 * scan that found fewer due rows than it had room for or started none
 * (rows waiting for their host, say: those a full scan looks past).
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_job.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"


/* what a scan in flight knew when it was sent */
typedef struct {
    ngx_http_tent_delivery_t       *dl;
    ngx_http_tent_cursor_t         *cursor;
    uint64_t                        end;         /* the scan's, in ms */
    uint64_t                        floor;
    ngx_uint_t                      lowered;
    ngx_uint_t                      moved;
    ngx_uint_t                      limit;       /* rows asked for */
    ngx_uint_t                      unsafe;
    unsigned                        resumed:1;   /* past the last rows */
} ngx_http_tent_queue_scan_t;


static void ngx_http_tent_queue_step(ngx_event_t *ev);
static void ngx_http_tent_delivery_due(ngx_http_tent_delivery_t *dl);
static void ngx_http_tent_queue_scanned(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_queue_resume_at(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent, ngx_http_tent_cursor_t *c,
    ngx_str_t *key);


/* the cursors are the entities' slots' (ngx_http_tent_delivery_entities.c) */

ngx_int_t
ngx_http_tent_queue_init(ngx_http_tent_delivery_t *dl, ngx_pool_t *pool)
{
    dl->due_step.handler = ngx_http_tent_queue_step;
    dl->due_step.data = dl;
    dl->due_step.log = dl->log;

    return NGX_OK;
}


/* every entity's next scan from its table's start */

void
ngx_http_tent_queue_reset(ngx_http_tent_delivery_t *dl)
{
    ngx_uint_t             i;
    ngx_http_tent_slot_t  *s;

    for (i = 0; (s = ngx_http_tent_delivery_slot(dl, i)) != NULL; i++) {
        s->cursor.ms = 0;
        s->cursor.next = 0;
        s->cursor.moved++;
        s->cursor.resume_len = 0;
        s->cursor.unsafe++;
    }

    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: due scans from the start again");
}


/* a task's entity's cursor; a task not of the list: one of no effect */

static ngx_http_tent_cursor_t *
ngx_http_tent_queue_cursor(ngx_http_tent_task_t *t)
{
    ngx_http_tent_slot_t           *s;
    static ngx_http_tent_cursor_t   none;

    s = ngx_http_tent_delivery_slot_of(t->dl, t->ent);

    return s ? &s->cursor : &none;
}


/* a job row put, due at "ms": the cursor is not past it */

void
ngx_http_tent_queue_lower(ngx_http_tent_task_t *t, uint64_t ms)
{
    ngx_http_tent_cursor_t  *c;

    c = ngx_http_tent_queue_cursor(t);

    if (ms < c->ms) {
        c->ms = ms;
    }

    if (ms < c->floor) {
        c->floor = ms;
    }

    if (ms < c->next) {
        c->next = ms;
    }

    c->lowered++;
    c->moved++;

    /*
     * A put after the resumed rows and after the scan on its way (a
     * fan-out's, a retry's) keeps it.
     */

    if (ms <= c->resume_ms || ms < c->scan_end) {
        c->resume_len = 0;
        c->unsafe++;
    }

    if (!t->writing) {
        t->writing = 1;
        c->writing++;
    }
}


/* the write with the task's job puts answered, or never sent */

void
ngx_http_tent_queue_written(ngx_http_tent_task_t *t)
{
    ngx_http_tent_cursor_t  *c;

    if (!t->writing) {
        return;
    }

    t->writing = 0;

    c = ngx_http_tent_queue_cursor(t);

    if (--c->writing == 0) {
        c->floor = (uint64_t) -1;
    }

    /* new jobs: sent now, not at the next tick */

    ngx_http_tent_queue_kick(t->dl);
}


/* a job whose removal failed: it runs again, the scan must see it */

void
ngx_http_tent_queue_again(ngx_http_tent_task_t *t)
{
    uint64_t                 due;
    ngx_str_t                id;
    ngx_http_tent_cursor_t  *c;

    c = ngx_http_tent_queue_cursor(t);

    if (ngx_http_tent_timed_key_parse(&t->ent->entity, &t->key, &due, &id)
        != NGX_OK)
    {
        due = 0;
    }

    if (due < c->ms) {
        c->ms = due;
    }

    if (due < c->next) {
        c->next = due;
    }

    c->lowered++;
    c->moved++;
    c->resume_len = 0;
    c->unsafe++;
}


/*
 * A job put by a request, not by the engine (an activity's,
 * ngx_http_tent_activity.c), due at "ms": its wake-up row found by the
 * outbox pass.  The scans see it from now on, as after a failed removal.
 */

void
ngx_http_tent_queue_wake(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_slot_t *s, uint64_t ms)
{
    ngx_http_tent_cursor_t  *c;

    c = &s->cursor;

    if (ms < c->ms) {
        c->ms = ms;
    }

    if (ms < c->next) {
        c->next = ms;
    }

    c->lowered++;
    c->moved++;
    c->resume_len = 0;
    c->unsafe++;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: \"%V\": an activity's job due at %uL",
                   &s->conf.entity, ms);

    ngx_http_tent_queue_kick(dl);
}


/*
 * A due job's task ended: settled, or failed with its row left where it
 * was; the entity's next pass scans it again either way.
 */

void
ngx_http_tent_queue_poke(ngx_http_tent_task_t *t)
{
    ngx_http_tent_cursor_t  *c;

    c = ngx_http_tent_queue_cursor(t);

    c->next = 0;
    c->moved++;

    /* its row may still be there, due: the next scan from the cursor */

    if (!t->gone) {
        c->resume_len = 0;
        c->unsafe++;
    }
}


/* the entity "i" has no job due by "now": its scan need not be sent */

ngx_int_t
ngx_http_tent_queue_idle(ngx_http_tent_delivery_t *dl, ngx_uint_t i,
    uint64_t now)
{
    ngx_http_tent_slot_t  *s;

    s = ngx_http_tent_delivery_slot(dl, i);

    /* a registry entity disabled or deleted: its jobs wait in the store */

    return !ngx_http_tent_delivery_slot_on(s) || s->cursor.next > now;
}


/*
 * The due jobs' pass: its own, beside the outbox's (ngx_http_tent_delivery.c),
 * so that a sender's next batch never waits behind the outbox rows of
 * the entities it just wrote to (same-node delivery gives each recipient
 * a row for its apps: several store operations each).  Kicked by the
 * tick and by a job that ends with a quarter of the slots free; a kick
 * while it runs makes it run again from the first entity.
 */

void
ngx_http_tent_queue_kick(ngx_http_tent_delivery_t *dl)
{
    if (dl->due_busy) {
        dl->due_again = 1;
        return;
    }

    dl->due_busy = 1;
    dl->due_entity = 0;

    ngx_post_event(&dl->due_step, &ngx_posted_events);
}


static void
ngx_http_tent_queue_step(ngx_event_t *ev)
{
    ngx_http_tent_delivery_t *dl = ev->data;

    uint64_t     now;
    ngx_pool_t  *pool;

    if (dl->due_pool) {
        ngx_destroy_pool(dl->due_pool);
        dl->due_pool = NULL;
    }

    dl->due_done = NULL;

    if (ngx_exiting || ngx_quit || ngx_terminate) {
        dl->due_busy = 0;
        return;
    }

    /* only the entities with a job due: the others cost nothing */

    now = ngx_http_tent_now_ms();

    while (dl->due_entity < dl->nentities
           && ngx_http_tent_queue_idle(dl, dl->due_entity, now))
    {
        dl->due_entity++;
    }

    if (dl->due_entity >= dl->nentities) {
        dl->due_busy = 0;

        if (dl->due_again) {
            dl->due_again = 0;
            ngx_http_tent_queue_kick(dl);
        }

        return;
    }

    pool = ngx_create_pool(4096, dl->log);
    if (pool == NULL) {
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: creating the due pass's pool failed");
        dl->due_busy = 0;
        return;
    }

    dl->due_pool = pool;

    ngx_http_tent_delivery_due(dl);
}


/* the next entity's due jobs, from the event loop (the pool may be held) */

void
ngx_http_tent_queue_next(ngx_http_tent_delivery_t *dl)
{
    dl->due_entity++;
    ngx_post_event(&dl->due_step, &ngx_posted_events);
}


/* the due jobs, as many as there is room for, from the cursor on */

static void
ngx_http_tent_delivery_due(ngx_http_tent_delivery_t *dl)
{
    uint64_t                      now;
    ngx_str_t                     start, end;
    ngx_uint_t                    room, limit;
    ngx_http_tent_slot_t         *s;
    ngx_http_tent_cursor_t       *c;
    ngx_http_tent_store_op_t     *scan;
    ngx_http_tent_queue_scan_t   *qs;
    ngx_http_tent_entity_conf_t  *ent;

    s = ngx_http_tent_delivery_slot(dl, dl->due_entity);

    if (!ngx_http_tent_delivery_slot_on(s)) {
        ngx_http_tent_queue_next(dl);
        return;
    }

    ent = &s->conf;
    c = &s->cursor;

    room = dl->mcf->delivery_concurrency > dl->inflight
           ? dl->mcf->delivery_concurrency - dl->inflight : 0;

    if (room == 0) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                       "tent delivery: %ui jobs on their way: no room for "
                       "more", dl->inflight);
        ngx_http_tent_queue_next(dl);
        return;
    }

    now = ngx_http_tent_now_ms();

    if (c->next > now) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                       "tent delivery: \"%V\": no job due before %uL",
                       &ent->entity, c->next);
        ngx_http_tent_queue_next(dl);
        return;
    }

    scan = ngx_http_tent_store_op_create(dl->due_pool, dl->log);
    qs = ngx_palloc(dl->due_pool, sizeof(ngx_http_tent_queue_scan_t));

    /*
     * The jobs in flight and those waiting for a host are read again
     * (they are still there): room for them as well as for new ones,
     * and for one row more, the first not due yet (the due index); the
     * jobs settling and the same-node jobs waiting for their batch too
     * (their slots are free).
     */

    limit = room + dl->inflight + dl->settling
            + ngx_http_tent_hosts_deferred() + ngx_http_tent_local_held(dl)
            + 1;

    if (scan == NULL || qs == NULL
        || ngx_http_tent_key_range(dl->due_pool, &ent->entity,
                                   NGX_HTTP_TENT_TABLE_JOB, &start, &end)
           != NGX_OK)
    {
        goto failed;
    }

    qs->resumed = 0;

    if (c->resume_len && c->resume_ms < now + 1) {

        /* past the rows on their way: room for the free slots only */

        start.len = c->resume_len + 1;
        start.data = ngx_pnalloc(dl->due_pool, start.len);
        if (start.data == NULL) {
            goto failed;
        }

        ngx_memcpy(start.data, c->resume, c->resume_len);
        start.data[c->resume_len] = '\0';       /* the next key after it */

        limit = room + ngx_http_tent_hosts_deferred() + 1;
        qs->resumed = 1;

    } else if (c->ms
               && ngx_http_tent_timed_key(dl->due_pool, &ent->entity,
                                          NGX_HTTP_TENT_TABLE_JOB, c->ms,
                                          NULL, &start)
                  != NGX_OK)
    {
        goto failed;
    }

    if (ngx_http_tent_store_scan(scan, &start, &end, limit, 0) != NGX_OK) {
        goto failed;
    }

    qs->dl = dl;
    qs->cursor = c;
    qs->end = now + 1;
    qs->floor = c->floor;
    qs->lowered = c->lowered;
    qs->moved = c->moved;
    qs->unsafe = c->unsafe;
    c->scan_end = now + 1;
    qs->limit = limit;

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: \"%V\": due scan from %uL to %uL%s",
                   &ent->entity, qs->resumed ? c->resume_ms : c->ms,
                   now + 1, qs->resumed ? ", past the rows on their way"
                                        : "");

    scan->handler = ngx_http_tent_queue_scanned;
    scan->data = qs;

    if (ngx_http_tent_store_submit(scan) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: submitting the due jobs' scan failed");
        ngx_http_tent_queue_next(dl);
    }

    return;

failed:

    ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                  "tent delivery: building the due jobs' scan failed");
    ngx_http_tent_queue_next(dl);
}


/*
 * The scan's answer: the cursor moves up to its first row (or its end
 * when it found none), then the rows become one batch.
 */

static void
ngx_http_tent_queue_scanned(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_queue_scan_t *qs = op->data;

    uint64_t                      ms, t, next;
    ngx_str_t                     key, value, id, last;
    ngx_uint_t                    rows, due;
    ngx_http_tent_cursor_t       *c;
    ngx_http_tent_delivery_t     *dl;
    ngx_http_tent_entity_conf_t  *ent;

    dl = qs->dl;
    c = qs->cursor;
    ent = ngx_http_tent_delivery_conf(dl, dl->due_entity);

    /* a registry entity disabled meanwhile: none of its jobs starts */

    if (op->status != NGX_HTTP_TENT_STORE_OK
        || !ngx_http_tent_delivery_slot_on(
                ngx_http_tent_delivery_slot(dl, dl->due_entity)))
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                       "tent delivery: due jobs not read (store status "
                       "%ui): later", op->status);
        c->scan_end = 0;
        ngx_http_tent_queue_next(dl);
        return;
    }

    /* the due rows come first: the one after them says when next */

    ms = qs->end;
    rows = 0;
    due = 0;
    next = (uint64_t) -1;

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        if (ngx_http_tent_timed_key_parse(&ent->entity, &key, &t, &id)
            != NGX_OK)
        {
            t = 0;
        }

        if (rows++ == 0) {
            ms = t;
        }

        if (t < qs->end) {
            due++;
            continue;
        }

        next = t;
        break;
    }

    (void) ngx_http_tent_store_rewind(op);

    if (rows == 0 || ms > qs->end) {
        ms = qs->end;       /* the cursor stays at what was due */
    }

    /* not past a put that was not answered when the scan was sent */

    ms = ngx_min(ms, qs->floor);

    if (qs->resumed) {
        /* its first row is not the table's first: the cursor stays */

    } else if (c->lowered == qs->lowered) {
        c->ms = ms;

    } else if (ms < c->ms) {
        c->ms = ms;     /* puts since: the lower of theirs and the scan's */
    }

    last.len = 0;

    if (!ngx_http_tent_delivery_load(dl, ent, op, due, &last)
        || (due == rows && rows >= qs->limit))
    {
        next = 0;       /* more due than it took: scanned again */

    } else if (qs->resumed) {
        /* the end of the due rows: the next scan sees every row again */
        last.len = 0;
        c->resume_len = 0;
    }

    /*
     * Resumed next time past the rows started, unless something put or
     * left a row before them while this scan ran.
     */

    c->scan_end = 0;

    if (last.len && c->unsafe == qs->unsafe) {
        ngx_http_tent_queue_resume_at(dl, ent, c, &last);

    } else if (qs->resumed) {
        c->resume_len = 0;  /* nothing started past it: all rows again */
    }

    next = ngx_min(next, qs->floor);

    if (c->moved != qs->moved) {
        next = ngx_min(next, c->next);
    }

    c->next = next;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: \"%V\": %ui jobs due, next scan at "
                   "%uL", &ent->entity, due, next);
}


/* the key the entity's next scan starts past, kept for the cycle */

static void
ngx_http_tent_queue_resume_at(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent, ngx_http_tent_cursor_t *c,
    ngx_str_t *key)
{
    u_char     *p;
    uint64_t    ms;
    ngx_str_t   id;

    if (ngx_http_tent_timed_key_parse(&ent->entity, key, &ms, &id) != NGX_OK)
    {
        c->resume_len = 0;
        return;
    }

    if (c->resume_size < key->len) {
        /* the cycle's: the engine's own pools go with each pass */
        p = ngx_pnalloc(ngx_cycle->pool, ngx_max(key->len, 128));
        if (p == NULL) {
            c->resume_len = 0;
            return;
        }

        c->resume = p;
        c->resume_size = ngx_max(key->len, 128);
    }

    ngx_memcpy(c->resume, key->data, key->len);
    c->resume_len = key->len;
    c->resume_ms = ms;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: next due scan past the rows due at %uL",
                   ms);
}
