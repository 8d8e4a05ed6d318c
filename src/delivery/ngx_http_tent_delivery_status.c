
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The status of each delivery of our posts, for the author
 * (GET /posts/:id/deliveries, ngx_http_tent_deliveries.c): one record
 * per job, "D <post id> 0x00 <version> <recipient>", put into the very
 * batch that makes the job (pending) or settles it (retrying, delivered,
 * failed), so a record never says more or less than the queue: one put
 * per job event, no read.  A job that ends puts "X <ms><record's rest>"
 * too; the engine's prune removes both once tent_delivery_dead_letter_time
 * has passed, a bounded number per pass.  A fan-out step's same-node
 * recipients delivered with no job share one such row: its key names
 * the first, its value the others' recipient ids, space-separated.
 * Apps subscribed through a notification URL and the posts we received
 * have no record: they are not deliveries of the author's to other
 * entities.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_fanout.h"
#include "ngx_http_tent_job.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"


/* ended records removed per entity and pass: a scan and a batch */
#define NGX_HTTP_TENT_DELIVERY_PRUNE  4096


static ngx_int_t ngx_http_tent_delivery_status_key(ngx_http_tent_task_t *t,
    ngx_pool_t *pool, ngx_str_t *jid, ngx_str_t *key);
static ngx_int_t ngx_http_tent_delivery_status_put(ngx_http_tent_task_t *t,
    ngx_http_tent_store_op_t *wop, ngx_str_t *key, ngx_str_t *value,
    ngx_uint_t ended, ngx_str_t *rest);
static ngx_int_t ngx_http_tent_delivery_status_settle(ngx_http_tent_job_t *t,
    ngx_http_tent_store_op_t *wop, ngx_uint_t outcome, ngx_int_t attempt,
    uint64_t due, ngx_str_t *rest);
static void ngx_http_tent_delivery_status_expired(
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_delivery_status_others(
    ngx_http_tent_delivery_t *dl, ngx_http_tent_entity_conf_t *ent,
    ngx_http_tent_store_op_t *wop, ngx_str_t *rest, ngx_str_t *value,
    ngx_uint_t *n);
static void ngx_http_tent_delivery_status_pruned(ngx_http_tent_store_op_t *op);


/*
 * A job id of one of our posts, "<recipient> <post id> <version>", into
 * the key of its status record.  NGX_DECLINED: not one to keep.  Made in
 * the batch's pool, as what the batch writes.
 */

static ngx_int_t
ngx_http_tent_delivery_status_key(ngx_http_tent_task_t *t, ngx_pool_t *pool,
    ngx_str_t *jid, ngx_str_t *key)
{
    u_char     *p, *v, *last;
    ngx_int_t   version;
    ngx_str_t   rid, pid;

    if (t->entity.data != t->ent->entity.data || jid->len == 0) {
        return NGX_DECLINED;
    }

    last = jid->data + jid->len;

    for (v = last - 1; v > jid->data && *v != ' '; v--) { /* void */ }

    for (p = v - 1; p > jid->data && *p != ' '; p--) { /* void */ }

    if (p <= jid->data || v - p < 2 || last - v < 2) {
        return NGX_DECLINED;
    }

    version = ngx_atoi(v + 1, last - v - 1);
    if (version <= 0 || version > 0x7fffffff) {
        return NGX_DECLINED;
    }

    rid.data = jid->data;
    rid.len = p - jid->data;
    pid.data = p + 1;
    pid.len = v - p - 1;

    return ngx_http_tent_delivery_key(pool, &t->ent->entity, &pid,
                                      (uint32_t) version, &rid, key);
}


/*
 * The record, and for a delivery that ended its end index row; with
 * "shared", none: the record's key after its table goes there, for the
 * one row of its step (ngx_http_tent_delivery_status_ended)
 */

static ngx_int_t
ngx_http_tent_delivery_status_put(ngx_http_tent_task_t *t,
    ngx_http_tent_store_op_t *wop, ngx_str_t *key, ngx_str_t *value,
    ngx_uint_t ended, ngx_str_t *shared)
{
    ngx_str_t  rest, rid, ekey, empty;

    if (ngx_http_tent_store_write_put(wop, key, value) != NGX_OK) {
        return NGX_ERROR;
    }

    if (!ended) {
        return NGX_OK;
    }

    /* the index of ended records, by time: what the prune reads */

    ngx_str_null(&empty);

    if (ngx_http_tent_delivery_key_parse(&t->ent->entity, key, &rest, &rid)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (shared) {
        *shared = rest;
        return NGX_OK;
    }

    if (ngx_http_tent_timed_key(wop->pool, &t->ent->entity,
                                   NGX_HTTP_TENT_TABLE_DELIVERY_ENDED,
                                   ngx_http_tent_now_ms(), &rest, &ekey)
           != NGX_OK
        || ngx_http_tent_store_write_put(wop, &ekey, &empty) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * A job made (fan-out): its record, pending, into the jobs' batch.  The
 * recipient's entity is the record's (a follower, a following) or, for a
 * mention, the one given.
 */

ngx_int_t
ngx_http_tent_delivery_status_made(ngx_http_tent_fanout_t *fo,
    ngx_http_tent_store_op_t *wop, ngx_str_t *jid, json_t *record,
    ngx_str_t *entity)
{
    ngx_int_t              rc;
    ngx_str_t              key, e, value;
    ngx_http_tent_task_t  *t;

    if (fo->stage == NGX_HTTP_TENT_FANOUT_APPS) {
        return NGX_OK;
    }

    t = &fo->task;

    if (entity == NULL) {
        if (ngx_http_tent_json_str(record, "entity", &e) != NGX_OK) {
            return NGX_OK;
        }

        entity = &e;
    }

    rc = ngx_http_tent_delivery_status_key(t, wop->pool, jid, &key);

    if (rc != NGX_OK) {
        return (rc == NGX_DECLINED) ? NGX_OK : NGX_ERROR;
    }

    if (ngx_http_tent_status_row_encode(wop->pool, entity, "pending", 0,
                                           0, NULL, -1, ngx_time(), &value)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_tent_delivery_status_put(t, wop, &key, &value, 0, NULL);
}


/* the answer of an attempt, kept for the job's status */

void
ngx_http_tent_delivery_status_answer(ngx_http_tent_job_t *t,
    ngx_http_tent_fetch_t *f)
{
    t->status = (f->result == NGX_HTTP_TENT_FETCH_OK) ? f->status : 0;
    t->error = (f->result == NGX_HTTP_TENT_FETCH_OK)
               ? NULL : ngx_http_tent_fetch_strerror(f->result);
}


/*
 * A job settled: its record in the settlement's batch.  "attempt" is the
 * attempt just made (from 0), "due" the next one's time (ms) when it is
 * retried.  A job that ends with nothing sent (its receiver or post gone,
 * a mention the entity may no longer read) takes its record with it.
 */

ngx_int_t
ngx_http_tent_delivery_status_settled(ngx_http_tent_job_t *t,
    ngx_http_tent_store_op_t *wop, ngx_uint_t outcome, ngx_int_t attempt,
    uint64_t due)
{
    return ngx_http_tent_delivery_status_settle(t, wop, outcome, attempt, due,
                                                NULL);
}


/*
 * A fan-out step's same-node recipient delivered with no job
 * (ngx_http_tent_local_direct.c): its record "delivered", as a
 * settlement puts it, and its key's rest into "ended" for the step's one
 * end index row, written by ngx_http_tent_delivery_status_ended()
 */

ngx_int_t
ngx_http_tent_delivery_status_direct(ngx_http_tent_job_t *t,
    ngx_http_tent_store_op_t *wop, ngx_array_t *ended)
{
    ngx_str_t  rest, *r;

    ngx_str_null(&rest);

    if (ngx_http_tent_delivery_status_settle(t, wop, NGX_HTTP_TENT_DELIVERED,
                                             0, 0, &rest)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (rest.len == 0) {
        return NGX_OK;                  /* no record kept */
    }

    r = ngx_array_push(ended);
    if (r == NULL) {
        return NGX_ERROR;
    }

    *r = rest;

    return NGX_OK;
}


/*
 * The step's end index row: "X <ms><first record's rest>", valued with
 * the other recipients' ids, space-separated (ids are [0-9A-Za-z_-]:
 * the fan-out takes no other); a record of another post or version, or
 * an id with another byte, gets its own row, as a settlement writes it
 */

ngx_int_t
ngx_http_tent_delivery_status_ended(ngx_http_tent_task_t *t,
    ngx_http_tent_store_op_t *wop, ngx_array_t *ended)
{
    u_char      *p, *z;
    size_t       plen, len;
    uint64_t     now;
    ngx_str_t   *rest, key, value, empty;
    ngx_uint_t   i, j, n, own;

    if (ended->nelts == 0) {
        return NGX_OK;
    }

    rest = ended->elts;
    now = ngx_http_tent_now_ms();
    ngx_str_null(&empty);

    /* "<post id> 0x00 <version: 4 bytes>", then the recipient's id */

    z = ngx_strlchr(rest[0].data, rest[0].data + rest[0].len, '\0');
    if (z == NULL || (size_t) (rest[0].data + rest[0].len - z) < 1 + 4) {
        return NGX_ERROR;
    }

    plen = z + 1 + 4 - rest[0].data;
    len = 0;
    n = 0;

    for (i = 1; i < ended->nelts; i++) {
        own = rest[i].len <= plen
              || ngx_memcmp(rest[i].data, rest[0].data, plen) != 0;

        for (j = plen; !own && j < rest[i].len; j++) {
            p = &rest[i].data[j];
            own = !((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z')
                    || (*p >= 'A' && *p <= 'Z') || *p == '-' || *p == '_');
        }

        if (own) {
            if (ngx_http_tent_timed_key(wop->pool, &t->ent->entity,
                                        NGX_HTTP_TENT_TABLE_DELIVERY_ENDED,
                                        now, &rest[i], &key)
                != NGX_OK
                || ngx_http_tent_store_write_put(wop, &key, &empty) != NGX_OK)
            {
                return NGX_ERROR;
            }

            rest[i].len = 0;
            continue;
        }

        len += 1 + rest[i].len - plen;
        n++;
    }

    value.len = 0;
    value.data = ngx_pnalloc(wop->pool, len + 1);
    if (value.data == NULL) {
        return NGX_ERROR;
    }

    p = value.data;

    for (i = 1; i < ended->nelts; i++) {
        if (rest[i].len == 0) {
            continue;
        }

        if (p != value.data) {
            *p++ = ' ';
        }

        p = ngx_cpymem(p, rest[i].data + plen, rest[i].len - plen);
    }

    value.len = p - value.data;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                   "tent delivery: one end row for %ui same-node records",
                   n + 1);

    if (ngx_http_tent_timed_key(wop->pool, &t->ent->entity,
                                NGX_HTTP_TENT_TABLE_DELIVERY_ENDED, now,
                                &rest[0], &key)
        != NGX_OK
        || ngx_http_tent_store_write_put(wop, &key, &value) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_delivery_status_settle(ngx_http_tent_job_t *t,
    ngx_http_tent_store_op_t *wop, ngx_uint_t outcome, ngx_int_t attempt,
    uint64_t due, ngx_str_t *rest)
{
    ngx_int_t    rc;
    ngx_str_t    key, jid, entity, value;
    uint64_t     time;
    const char  *state;

    if (t->row.kind == 0 || t->row.kind == NGX_HTTP_TENT_JOB_APP
        || t->row.kind == NGX_HTTP_TENT_JOB_ACTIVITY)
    {
        return NGX_OK;
    }

    if (ngx_http_tent_timed_key_parse(&t->task.ent->entity, &t->task.key,
                                      &time, &jid)
        != NGX_OK)
    {
        return NGX_OK;
    }

    rc = ngx_http_tent_delivery_status_key(&t->task, wop->pool, &jid, &key);

    if (rc != NGX_OK) {
        return (rc == NGX_DECLINED) ? NGX_OK : NGX_ERROR;
    }

    if (outcome == NGX_HTTP_TENT_DELIVERED && !t->untold
        && !(t->status >= 200 && t->status <= 299))
    {
        return ngx_http_tent_store_write_del(wop, &key);
    }

    if (t->row.kind == NGX_HTTP_TENT_JOB_ENTITY) {
        entity = t->row.to;

    } else if (ngx_http_tent_json_str(t->follower, "entity", &entity)
               != NGX_OK)
    {
        return ngx_http_tent_store_write_del(wop, &key);
    }

    state = (outcome == NGX_HTTP_TENT_RETRY) ? "retrying"
            : (outcome == NGX_HTTP_TENT_REFUSED) ? "failed" : "delivered";

    if (t->status == 0 && t->error == NULL) {
        t->error = "not sent: no server or notification path to send to";
    }

    if (ngx_http_tent_status_row_encode(wop->pool, &entity, state,
                                           attempt + 1, t->status, t->error,
                                           ngx_time(),
                                           outcome == NGX_HTTP_TENT_RETRY
                                           ? (time_t) (due / 1000) : -1,
                                           &value)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_tent_delivery_status_put(&t->task, wop, &key, &value,
                                             outcome != NGX_HTTP_TENT_RETRY,
                                             rest);
}


/*
 * The records of deliveries that ended tent_delivery_dead_letter_time
 * ago, with the dead letters (once a minute): their index is in time
 * order, so the expired ones are one key range, of which each pass
 * removes up to NGX_HTTP_TENT_DELIVERY_PRUNE, unsynced.  Then the dead
 * letters' own prune.
 */

void
ngx_http_tent_delivery_status_prune(ngx_http_tent_delivery_t *dl)
{
    if (ngx_http_tent_delivery_expired_scan(dl,
                                        NGX_HTTP_TENT_TABLE_DELIVERY_ENDED,
                                        NGX_HTTP_TENT_DELIVERY_PRUNE,
                                        ngx_http_tent_delivery_status_expired,
                                        "ended deliveries")
        != NGX_OK)
    {
        ngx_http_tent_delivery_prune(dl);
    }
}


static void
ngx_http_tent_delivery_status_expired(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_delivery_t *dl = op->data;

    uint64_t                      time;
    ngx_str_t                     key, value, rest, skey;
    ngx_uint_t                    n;
    ngx_http_tent_store_op_t     *wop;
    ngx_http_tent_entity_conf_t  *ent;

    ent = ngx_http_tent_delivery_conf(dl, dl->next_entity);

    if (op->status != NGX_HTTP_TENT_STORE_OK || ent == NULL) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                       "tent delivery: ended deliveries not read (store "
                       "status %ui): later", op->status);
        ngx_http_tent_delivery_prune(dl);
        return;
    }

    wop = ngx_http_tent_store_op_create(dl->pool, dl->log);

    if (wop == NULL || ngx_http_tent_store_write(wop, 0) != NGX_OK) {
        goto failed;
    }

    n = 0;

    /* a step's row, with the others' ids, counts them: a bounded write */

    while (n < NGX_HTTP_TENT_DELIVERY_PRUNE
           && ngx_http_tent_store_next(op, &key, &value) == NGX_OK)
    {
        if (ngx_http_tent_timed_key_parse(&ent->entity, &key, &time, &rest)
            != NGX_OK
            || ngx_http_tent_key(dl->pool, &ent->entity,
                                 NGX_HTTP_TENT_TABLE_DELIVERY, &rest, &skey)
               != NGX_OK
            || ngx_http_tent_store_write_del(wop, &key) != NGX_OK
            || ngx_http_tent_store_write_del(wop, &skey) != NGX_OK
            || (value.len
                && ngx_http_tent_delivery_status_others(dl, ent, wop, &rest,
                                                        &value, &n)
                   != NGX_OK))
        {
            goto failed;
        }

        n++;
    }

    if (n == 0) {
        ngx_http_tent_delivery_prune(dl);
        return;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: %ui ended deliveries' records expired",
                   n);

    wop->handler = ngx_http_tent_delivery_status_pruned;
    wop->data = dl;

    if (ngx_http_tent_store_submit(wop) == NGX_OK) {
        return;
    }

failed:

    ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                  "tent delivery: removing the ended deliveries' records "
                  "failed");

    ngx_http_tent_delivery_prune(dl);
}


/*
 * A step's end row: the records of the others it names, "<post id> 0x00
 * <version>" of its own key's rest followed by each id of its value
 */

static ngx_int_t
ngx_http_tent_delivery_status_others(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent, ngx_http_tent_store_op_t *wop,
    ngx_str_t *rest, ngx_str_t *value, ngx_uint_t *n)
{
    u_char     *p, *q, *z, *last, *id;
    size_t      plen;
    ngx_str_t   other, skey;

    z = ngx_strlchr(rest->data, rest->data + rest->len, '\0');
    if (z == NULL || (size_t) (rest->data + rest->len - z) < 1 + 4) {
        return NGX_OK;                  /* not a record's: its own only */
    }

    plen = z + 1 + 4 - rest->data;
    last = value->data + value->len;

    for (p = value->data; p < last; p = q + 1) {
        q = ngx_strlchr(p, last, ' ');
        if (q == NULL) {
            q = last;
        }

        if (q == p) {
            continue;
        }

        id = ngx_pnalloc(dl->pool, plen + (q - p));
        if (id == NULL) {
            return NGX_ERROR;
        }

        other.data = id;
        other.len = ngx_cpymem(ngx_cpymem(id, rest->data, plen), p, q - p)
                    - id;

        if (ngx_http_tent_key(dl->pool, &ent->entity,
                              NGX_HTTP_TENT_TABLE_DELIVERY, &other, &skey)
            != NGX_OK
            || ngx_http_tent_store_write_del(wop, &skey) != NGX_OK)
        {
            return NGX_ERROR;
        }

        (*n)++;
    }

    return NGX_OK;
}


static void
ngx_http_tent_delivery_status_pruned(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_delivery_prune(op->data);
}
