
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
 */


#include "ngx_http_tent_module.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_remote.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_OUTBOX_SCAN   256
#define NGX_HTTP_TENT_OUTBOX_EXPAND 16
#define NGX_HTTP_TENT_FOLLOWER_SCAN 500
#define NGX_HTTP_TENT_MENTION_MAX   32

/* what an outbox row says of its post, before the post is read */
#define NGX_HTTP_TENT_ROW_PROFILE   1   /* maybe for the followings too */
#define NGX_HTTP_TENT_ROW_MENTIONS  2   /* maybe for entities it names */


/* the engine: the store owner's only */
struct ngx_http_tent_delivery_s {
    ngx_http_tent_main_conf_t      *mcf;
    ngx_log_t                      *log;
    ngx_event_t                     timer;
    ngx_event_t                     step;
    ngx_pool_t                     *pool;
    ngx_queue_t                     tasks;
    ngx_uint_t                      inflight;
    ngx_uint_t                      next_entity;
    ngx_array_t                     rows;        /* key, value: outbox */
    ngx_uint_t                      census;      /* the table looked at */
    ngx_msec_t                      pruned;      /* dead letters, last */
    unsigned                        profile_rows:1;
    unsigned                        busy:1;
    unsigned                        prune:1;     /* in this pass */
};


typedef struct {
    ngx_pool_t                       *pool;
    ngx_http_tent_delivery_t         *dl;
    ngx_http_tent_entity_conf_t      *ent;
    ngx_str_t                         key;       /* job or outbox row */
    ngx_str_t                         raw;
    json_t                           *job;
    json_t                           *post;
    json_t                           *follower;
    ngx_uint_t                        server;
    ngx_msec_t                        deadline;  /* of this attempt */
    ngx_uint_t                        status;
    ngx_str_t                         start;     /* followers left */
    ngx_str_t                         end;
    ngx_uint_t                        followings; /* then followings */
    ngx_uint_t                        apps;       /* then app subscribers */
    ngx_uint_t                        mentions;   /* then mentions */
    ngx_uint_t                        stranger;   /* no relationship */
    ngx_str_t                         entity;     /* of a received post */
    ngx_str_t                         post_id;    /* for the debug log */
    ngx_array_t                      *mentioned;  /* entities to look up */
    ngx_queue_t                       queue;
    ngx_event_t                       free;
} ngx_http_tent_task_t;


static void ngx_http_tent_delivery_tick(ngx_event_t *ev);
static void ngx_http_tent_delivery_entity(ngx_http_tent_delivery_t *dl);
static void ngx_http_tent_delivery_step(ngx_event_t *ev);
static void ngx_http_tent_delivery_scan_outbox(ngx_http_tent_delivery_t *dl);
static void ngx_http_tent_delivery_prune(ngx_http_tent_delivery_t *dl);
static void ngx_http_tent_delivery_expired(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_delivery_pruned(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_delivery_outbox(ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_task_running(ngx_http_tent_delivery_t *dl,
    ngx_str_t *key);
static ngx_uint_t ngx_http_tent_delivery_row(ngx_str_t *value);
static void ngx_http_tent_delivery_census(ngx_http_tent_delivery_t *dl,
    ngx_uint_t table);
static void ngx_http_tent_delivery_counted(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_delivery_cleared(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_delivery_due(ngx_http_tent_delivery_t *dl);
static void ngx_http_tent_delivery_expand(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent, ngx_str_t *key, ngx_str_t *value);
static void ngx_http_tent_delivery_expand_post(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_delivery_expand_followers(
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_delivery_unnamed(json_t *post);
static void ngx_http_tent_delivery_followers(ngx_http_tent_task_t *t);
static void ngx_http_tent_delivery_next_followers(
    ngx_http_tent_store_op_t *op);
static void ngx_http_tent_delivery_got(ngx_http_tent_task_t *t,
    json_t *record);
static ngx_int_t ngx_http_tent_delivery_mentions(ngx_http_tent_task_t *t);
static void ngx_http_tent_delivery_lookup(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_delivery_mentioned(ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_delivery_scope(json_t *sub, const char *scope);
static ngx_int_t ngx_http_tent_delivery_record_key(ngx_http_tent_task_t *t,
    json_t *job, ngx_str_t *key);
static void ngx_http_tent_delivery_jobs(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_delivery_loaded(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_delivery_stranger(ngx_http_tent_task_t *t,
    ngx_http_tent_store_op_t *op);
static void ngx_http_tent_delivery_discovered(ngx_http_tent_discover_t *d);
static void ngx_http_tent_delivery_send(ngx_http_tent_task_t *t);
static void ngx_http_tent_delivery_sent(ngx_http_tent_fetch_t *f);
static void ngx_http_tent_delivery_settle(ngx_http_tent_task_t *t,
    ngx_uint_t outcome);
static void ngx_http_tent_delivery_written(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_task_submit(ngx_http_tent_task_t *t,
    ngx_http_tent_store_op_t *op, ngx_http_tent_store_done_pt handler);
static void ngx_http_tent_task_done(ngx_http_tent_task_t *t);
static void ngx_http_tent_task_free(ngx_event_t *ev);


static ngx_str_t  ngx_http_tent_empty = ngx_null_string;


#define NGX_HTTP_TENT_DELIVERED    0
#define NGX_HTTP_TENT_REFUSED      1
#define NGX_HTTP_TENT_RETRY        2


static uint64_t
ngx_http_tent_now_ms(void)
{
    ngx_time_t  *tp;

    tp = ngx_timeofday();

    return (uint64_t) tp->sec * 1000 + tp->msec;
}


/*
 * The outbox row of a post, into the post's own batch: the key orders
 * rows by creation, the value names the post.
 */

ngx_int_t
ngx_http_tent_delivery_mark(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_store_op_t *op, json_t *post)
{
    u_char     *p;
    json_t     *row;
    ngx_str_t   id, rest, key, value, entity;

    if (ngx_http_tent_json_str(post, "id", &id) != NGX_OK) {
        return NGX_ERROR;
    }

    rest.len = 8 + id.len;
    rest.data = ngx_pnalloc(r->pool, rest.len);
    if (rest.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_http_tent_put_u64(rest.data, ngx_http_tent_now_us());
    ngx_memcpy(p, id.data, id.len);

    /*
     * The type tells the engine whether followings get it too, and
     * "mentions" whether a new post names someone to tell, whoever
     * follows us.
     */

    row = json_pack("{s:O, s:O, s:O}", "id", json_object_get(post, "id"),
                    "version", json_object_get(post, "version"),
                    "type", json_object_get(post, "type"));

    if (row == NULL || ngx_http_tent_json_cleanup(r->pool, row) != NGX_OK) {
        json_decref(row);
        return NGX_ERROR;
    }

    /* a post received from another entity goes to apps only */

    if (ngx_http_tent_json_str(post, "entity", &entity) == NGX_OK
        && !ngx_http_tent_entity_eq(&entity, &ctx->entity))
    {
        json_object_set(row, "entity", json_object_get(post, "entity"));

    } else if (json_integer_value(json_object_get(post, "version")) == 1
               && json_array_size(json_object_get(post, "mentions")))
    {
        json_object_set_new(row, "mentions", json_true());
    }

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_OUTBOX,
                          &rest, &key)
        != NGX_OK
        || ngx_http_tent_json_dump(r->pool, row, &value) != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* in the store owner, at start: the timer that drives everything */

ngx_int_t
ngx_http_tent_delivery_start(ngx_cycle_t *cycle,
    ngx_http_tent_main_conf_t *mcf)
{
    ngx_http_tent_delivery_t  *dl;

    if (!mcf->delivery_on || mcf->entity_confs.nelts == 0) {
        return NGX_OK;
    }

    dl = ngx_pcalloc(cycle->pool, sizeof(ngx_http_tent_delivery_t));
    if (dl == NULL) {
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

    mcf->delivery = dl;

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
    }

    ngx_http_tent_delivery_entity(dl);
}


/*
 * The next entity, from the event loop: the current one's scan results
 * live in dl->pool, which must not go while the store still holds them.
 */

static void
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
    ngx_pool_t  *pool;

    if (dl->pool) {
        ngx_destroy_pool(dl->pool);
        dl->pool = NULL;
    }

    if (dl->next_entity >= dl->mcf->entity_confs.nelts
        || ngx_exiting || ngx_quit || ngx_terminate)
    {
        dl->busy = 0;

        if (!(ngx_exiting || ngx_quit || ngx_terminate)) {
            ngx_add_timer(&dl->timer, dl->mcf->delivery_interval);
        }

        return;
    }

    pool = ngx_create_pool(4096, dl->log);
    if (pool == NULL) {
        dl->busy = 0;
        ngx_add_timer(&dl->timer, dl->mcf->delivery_interval);
        return;
    }

    dl->pool = pool;

    if (dl->prune) {
        ngx_http_tent_delivery_prune(dl);
        return;
    }

    ngx_http_tent_delivery_scan_outbox(dl);
}


static void
ngx_http_tent_delivery_scan_outbox(ngx_http_tent_delivery_t *dl)
{
    ngx_str_t                     start, end;
    ngx_http_tent_store_op_t     *op;
    ngx_http_tent_entity_conf_t  *ent;

    ent = (ngx_http_tent_entity_conf_t *) dl->mcf->entity_confs.elts
          + dl->next_entity;

    op = ngx_http_tent_store_op_create(dl->pool, dl->log);

    if (op == NULL
        || ngx_http_tent_key_range(dl->pool, &ent->entity,
                                   NGX_HTTP_TENT_TABLE_OUTBOX, &start, &end)
           != NGX_OK
        || ngx_http_tent_store_scan(op, &start, &end,
                                    NGX_HTTP_TENT_OUTBOX_SCAN, 0)
           != NGX_OK)
    {
        ngx_http_tent_delivery_next(dl);
        return;
    }

    op->handler = ngx_http_tent_delivery_outbox;
    op->data = dl;

    if (ngx_http_tent_store_submit(op) != NGX_OK) {
        ngx_http_tent_delivery_next(dl);
    }
}


/*
 * Dead letters are kept for the operator, not forever: their keys begin
 * with the time of failure, so the expired ones are one key range, of
 * which each pass removes up to a scan's worth, unsynced.
 */

static void
ngx_http_tent_delivery_prune(ngx_http_tent_delivery_t *dl)
{
    uint64_t                      now;
    ngx_str_t                     start, end, until;
    ngx_http_tent_store_op_t     *scan;
    ngx_http_tent_entity_conf_t  *ent;

    ent = (ngx_http_tent_entity_conf_t *) dl->mcf->entity_confs.elts
          + dl->next_entity;

    now = ngx_http_tent_now_ms();

    until.data = ngx_pnalloc(dl->pool, 8);
    if (until.data == NULL
        || (uint64_t) dl->mcf->dead_letter_time * 1000 >= now)
    {
        ngx_http_tent_delivery_scan_outbox(dl);
        return;
    }

    until.len = ngx_http_tent_put_u64(until.data,
                                      now - (uint64_t) dl->mcf->dead_letter_time
                                            * 1000)
                - until.data;

    scan = ngx_http_tent_store_op_create(dl->pool, dl->log);

    if (scan == NULL
        || ngx_http_tent_key_range(dl->pool, &ent->entity,
                                   NGX_HTTP_TENT_TABLE_DEAD, &start, &end)
           != NGX_OK
        || ngx_http_tent_key(dl->pool, &ent->entity, NGX_HTTP_TENT_TABLE_DEAD,
                             &until, &end)
           != NGX_OK
        || ngx_http_tent_store_scan(scan, &start, &end,
                                    NGX_HTTP_TENT_OUTBOX_SCAN, 0)
           != NGX_OK)
    {
        ngx_http_tent_delivery_scan_outbox(dl);
        return;
    }

    scan->handler = ngx_http_tent_delivery_expired;
    scan->data = dl;

    if (ngx_http_tent_store_submit(scan) != NGX_OK) {
        ngx_http_tent_delivery_scan_outbox(dl);
    }
}


static void
ngx_http_tent_delivery_expired(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_delivery_t *dl = op->data;

    ngx_str_t                  key, value;
    ngx_uint_t                 n;
    ngx_http_tent_store_op_t  *wop;

    wop = ngx_http_tent_store_op_create(dl->pool, dl->log);

    if (op->status != NGX_HTTP_TENT_STORE_OK
        || wop == NULL
        || ngx_http_tent_store_write(wop, 0) != NGX_OK)
    {
        ngx_http_tent_delivery_scan_outbox(dl);
        return;
    }

    n = 0;

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        if (ngx_http_tent_store_write_del(wop, &key) != NGX_OK) {
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
        ngx_http_tent_delivery_scan_outbox(dl);
    }
}


static void
ngx_http_tent_delivery_pruned(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_delivery_scan_outbox(op->data);
}


/*
 * The outbox rows of an entity.  Most posts of a server go to no one (no
 * follower yet): one scan, limited to a row, tells, and then all the rows
 * of this pass go in one write, without reading a post or starting a task
 * for each.  A follower whose row is there when we look was there when
 * the post was made, or came later: it misses nothing it would have got.
 */

static void
ngx_http_tent_delivery_outbox(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_delivery_t *dl = op->data;

    ngx_str_t  key, value, *row;

    if (ngx_array_init(&dl->rows, dl->pool, 16, 2 * sizeof(ngx_str_t))
        != NGX_OK)
    {
        ngx_http_tent_delivery_next(dl);
        return;
    }

    dl->profile_rows = 0;

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
            if (ngx_http_tent_task_running(dl, &key)) {
                continue;
            }

            row = ngx_array_push(&dl->rows);
            if (row == NULL) {
                break;
            }

            row[0] = key;
            row[1] = value;

            if (ngx_http_tent_delivery_row(&value)
                & NGX_HTTP_TENT_ROW_PROFILE)
            {
                dl->profile_rows = 1;
            }
        }
    }

    if (dl->rows.nelts == 0) {
        ngx_http_tent_delivery_due(dl);
        return;
    }

    ngx_http_tent_delivery_census(dl, NGX_HTTP_TENT_TABLE_FOLLOWER);
}


/*
 * What an outbox row says: rows written before the type was kept in them
 * count as maybe profile posts.
 */

static ngx_uint_t
ngx_http_tent_delivery_row(ngx_str_t *value)
{
    json_t      *row;
    ngx_str_t    type;
    ngx_uint_t   flags;

    row = ngx_http_tent_json_parse(value, NULL);
    if (row == NULL) {
        return NGX_HTTP_TENT_ROW_PROFILE;
    }

    flags = 0;

    if (ngx_http_tent_json_str(row, "type", &type) != NGX_OK
        || ngx_http_tent_post_type_is(&type, "profile"))
    {
        flags |= NGX_HTTP_TENT_ROW_PROFILE;
    }

    if (json_is_true(json_object_get(row, "mentions"))) {
        flags |= NGX_HTTP_TENT_ROW_MENTIONS;
    }

    json_decref(row);

    return flags;
}


/* is there anyone at all in the followers (or another) table? */

static void
ngx_http_tent_delivery_census(ngx_http_tent_delivery_t *dl, ngx_uint_t table)
{
    ngx_str_t                     start, end;
    ngx_http_tent_store_op_t     *scan;
    ngx_http_tent_entity_conf_t  *ent;

    ent = (ngx_http_tent_entity_conf_t *) dl->mcf->entity_confs.elts
          + dl->next_entity;

    dl->census = table;

    scan = ngx_http_tent_store_op_create(dl->pool, dl->log);

    if (scan == NULL
        || ngx_http_tent_key_range(dl->pool, &ent->entity, table, &start,
                                   &end)
           != NGX_OK
        || ngx_http_tent_store_scan(scan, &start, &end, 1, 0) != NGX_OK)
    {
        ngx_http_tent_delivery_next(dl);
        return;
    }

    scan->handler = ngx_http_tent_delivery_counted;
    scan->data = dl;

    if (ngx_http_tent_store_submit(scan) != NGX_OK) {
        ngx_http_tent_delivery_next(dl);
    }
}


static void
ngx_http_tent_delivery_counted(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_delivery_t *dl = op->data;

    ngx_str_t                     key, value, *row;
    ngx_uint_t                    i, n;
    ngx_http_tent_store_op_t     *wop;
    ngx_http_tent_entity_conf_t  *ent;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_delivery_next(dl);    /* the rows stay: later */
        return;
    }

    ent = (ngx_http_tent_entity_conf_t *) dl->mcf->entity_confs.elts
          + dl->next_entity;

    row = dl->rows.elts;

    if (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {

        /* someone may get these posts: each row becomes a task */

        for (i = 0; i < dl->rows.nelts && i < NGX_HTTP_TENT_OUTBOX_EXPAND;
             i++)
        {
            ngx_http_tent_delivery_expand(dl, ent, &row[2 * i],
                                          &row[2 * i + 1]);
        }

        ngx_http_tent_delivery_due(dl);
        return;
    }

    /* no follower: an app subscribed?  For a profile post, a following? */

    if (dl->census == NGX_HTTP_TENT_TABLE_FOLLOWER) {
        ngx_http_tent_delivery_census(dl, NGX_HTTP_TENT_TABLE_SUBSCRIPTION);
        return;
    }

    if (dl->census == NGX_HTTP_TENT_TABLE_SUBSCRIPTION && dl->profile_rows) {
        ngx_http_tent_delivery_census(dl, NGX_HTTP_TENT_TABLE_FOLLOWING);
        return;
    }

    /*
     * No one to send them to: the rows go, unsynced (see the top), but
     * those of new posts that mention someone, who may be told anyway.
     */

    wop = ngx_http_tent_store_op_create(dl->pool, dl->log);

    if (wop == NULL || ngx_http_tent_store_write(wop, 0) != NGX_OK) {
        ngx_http_tent_delivery_next(dl);
        return;
    }

    n = 0;

    for (i = 0; i < dl->rows.nelts; i++) {
        if (ngx_http_tent_delivery_row(&row[2 * i + 1])
            & NGX_HTTP_TENT_ROW_MENTIONS)
        {
            if (n++ < NGX_HTTP_TENT_OUTBOX_EXPAND) {
                ngx_http_tent_delivery_expand(dl, ent, &row[2 * i],
                                              &row[2 * i + 1]);
            }

            continue;
        }

        if (ngx_http_tent_store_write_del(wop, &row[2 * i]) != NGX_OK) {
            ngx_http_tent_delivery_next(dl);
            return;
        }
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: %ui posts for no one", dl->rows.nelts - n);

    if (n == dl->rows.nelts) {
        ngx_http_tent_delivery_due(dl);
        return;
    }

    wop->handler = ngx_http_tent_delivery_cleared;
    wop->data = dl;

    if (ngx_http_tent_store_submit(wop) != NGX_OK) {
        ngx_http_tent_delivery_next(dl);
    }
}


static void
ngx_http_tent_delivery_cleared(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_delivery_t *dl = op->data;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_error(NGX_LOG_WARN, dl->log, 0,
                      "tent delivery: the outbox could not be cleared; "
                      "its rows are looked at again");
    }

    ngx_http_tent_delivery_due(dl);
}


/* the due jobs, as many as there is room for */

static void
ngx_http_tent_delivery_due(ngx_http_tent_delivery_t *dl)
{
    uint64_t                      now;
    ngx_str_t                     start, end, due;
    ngx_uint_t                    room;
    ngx_http_tent_store_op_t     *scan;
    ngx_http_tent_entity_conf_t  *ent;

    ent = (ngx_http_tent_entity_conf_t *) dl->mcf->entity_confs.elts
          + dl->next_entity;

    room = dl->mcf->delivery_concurrency > dl->inflight
           ? dl->mcf->delivery_concurrency - dl->inflight : 0;

    if (room == 0) {
        ngx_http_tent_delivery_next(dl);
        return;
    }

    now = ngx_http_tent_now_ms();

    due.data = ngx_pnalloc(dl->pool, 8);
    if (due.data == NULL) {
        ngx_http_tent_delivery_next(dl);
        return;
    }

    due.len = ngx_http_tent_put_u64(due.data, now + 1) - due.data;

    scan = ngx_http_tent_store_op_create(dl->pool, dl->log);

    if (scan == NULL
        || ngx_http_tent_key_range(dl->pool, &ent->entity,
                                   NGX_HTTP_TENT_TABLE_JOB, &start, &end)
           != NGX_OK
        || ngx_http_tent_key(dl->pool, &ent->entity, NGX_HTTP_TENT_TABLE_JOB,
                             &due, &end)
           != NGX_OK
        || ngx_http_tent_store_scan(scan, &start, &end,
                                    room + dl->inflight, 0)
           != NGX_OK)
    {
        ngx_http_tent_delivery_next(dl);
        return;
    }

    scan->handler = ngx_http_tent_delivery_jobs;
    scan->data = dl;

    if (ngx_http_tent_store_submit(scan) != NGX_OK) {
        ngx_http_tent_delivery_next(dl);
    }
}


static ngx_http_tent_task_t *
ngx_http_tent_task_create(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent, ngx_str_t *key, ngx_str_t *value)
{
    ngx_pool_t            *pool;
    ngx_http_tent_task_t  *t;

    pool = ngx_create_pool(4096, dl->log);
    if (pool == NULL) {
        return NULL;
    }

    t = ngx_pcalloc(pool, sizeof(ngx_http_tent_task_t));
    if (t == NULL) {
        ngx_destroy_pool(pool);
        return NULL;
    }

    t->pool = pool;
    t->dl = dl;
    t->ent = ent;

    t->key.data = ngx_pstrdup(pool, key);
    t->raw.data = ngx_pstrdup(pool, value);

    if (t->key.data == NULL || t->raw.data == NULL) {
        ngx_destroy_pool(pool);
        return NULL;
    }

    t->key.len = key->len;
    t->raw.len = value->len;

    t->free.handler = ngx_http_tent_task_free;
    t->free.data = t;
    t->free.log = dl->log;

    dl->inflight++;
    ngx_queue_insert_tail(&dl->tasks, &t->queue);

    return t;
}


/* a job already on its way is not started twice */

static ngx_int_t
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

    return 0;
}


/* a store operation of a task: its handler runs, or the task ends */

static void
ngx_http_tent_task_submit(ngx_http_tent_task_t *t,
    ngx_http_tent_store_op_t *op, ngx_http_tent_store_done_pt handler)
{
    op->handler = handler;
    op->data = t;

    if (ngx_http_tent_store_submit(op) != NGX_OK) {
        ngx_http_tent_task_done(t);
    }
}


/* an outbox row: read the post and every follower, then write the jobs */

static void
ngx_http_tent_delivery_expand(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent, ngx_str_t *key, ngx_str_t *value)
{
    ngx_str_t                  id, pkey;
    ngx_http_tent_task_t      *t;
    ngx_http_tent_store_op_t  *op;

    if (ngx_http_tent_task_running(dl, key)) {
        return;
    }

    t = ngx_http_tent_task_create(dl, ent, key, value);
    if (t == NULL) {
        return;
    }

    t->job = ngx_http_tent_json_parse(&t->raw, dl->log);

    if (t->job == NULL
        || ngx_http_tent_json_cleanup(t->pool, t->job) != NGX_OK
        || ngx_http_tent_json_str(t->job, "id", &id) != NGX_OK)
    {
        json_decref(t->job);
        ngx_http_tent_task_done(t);
        return;
    }

    if (ngx_http_tent_json_str(t->job, "entity", &t->entity) != NGX_OK) {
        t->entity = ent->entity;
    }

    t->post_id = id;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: outbox row: post \"%V\" of \"%V\"",
                   &id, &t->entity);

    op = ngx_http_tent_store_op_create(t->pool, dl->log);

    if (op == NULL
        || ngx_http_tent_post_key(t->pool, &ent->entity, &t->entity, &id,
                                  -1, &pkey)
           != NGX_OK
        || ngx_http_tent_store_get(op, &pkey) != NGX_OK)
    {
        ngx_http_tent_task_done(t);
        return;
    }

    ngx_http_tent_task_submit(t, op, ngx_http_tent_delivery_expand_post);
}


static void
ngx_http_tent_delivery_expand_post(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_task_t *t = op->data;

    ngx_str_t                  value;

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_store_value(op, &value);

        t->post = ngx_http_tent_json_parse(&value, t->dl->log);
        if (t->post == NULL
            || ngx_http_tent_json_cleanup(t->pool, t->post) != NGX_OK)
        {
            json_decref(t->post);
            ngx_http_tent_task_done(t);
            return;
        }

    } else if (op->status != NGX_HTTP_TENT_STORE_NOT_FOUND) {
        ngx_http_tent_task_done(t);   /* the store: later */
        return;
    }

    /*
     * A received post: to the apps, not to our followers (spec 9.2).  Nor
     * is a post of ours that no follower may see (private, naming no one:
     * a follower post), which saves reading every follower for nothing.
     */

    if (t->entity.data != t->ent->entity.data
        || (t->post && ngx_http_tent_delivery_unnamed(t->post)))
    {
        t->followings = 1;
        t->apps = 1;
    }

    if (ngx_http_tent_delivery_mentions(t) != NGX_OK
        || ngx_http_tent_key_range(t->pool, &t->ent->entity,
                                   t->apps ? NGX_HTTP_TENT_TABLE_SUBSCRIPTION
                                           : NGX_HTTP_TENT_TABLE_FOLLOWER,
                                   &t->start, &t->end)
           != NGX_OK)
    {
        ngx_http_tent_task_done(t);
        return;
    }

    ngx_http_tent_delivery_followers(t);
}


/* a post no relationship may see: not public, naming no entity or group */

static ngx_int_t
ngx_http_tent_delivery_unnamed(json_t *post)
{
    json_t  *perms;

    perms = json_object_get(post, "permissions");

    return !json_is_true(json_object_get(perms, "public"))
           && json_object_size(json_object_get(perms, "entities")) == 0
           && json_array_size(json_object_get(perms, "groups")) == 0;
}


/* the followers, a batch at a time: a row may hold a 64 KB profile */

static void
ngx_http_tent_delivery_followers(ngx_http_tent_task_t *t)
{
    ngx_http_tent_store_op_t  *scan;

    scan = ngx_http_tent_store_op_create(t->pool, t->dl->log);

    if (scan == NULL
        || ngx_http_tent_store_scan(scan, &t->start, &t->end,
                                    NGX_HTTP_TENT_FOLLOWER_SCAN, 0)
           != NGX_OK)
    {
        ngx_http_tent_task_done(t);
        return;
    }

    ngx_http_tent_task_submit(t, scan, ngx_http_tent_delivery_expand_followers);
}


/*
 * Whether a post is for a relationship: public, or naming its entity or
 * one of its groups (tentd forgot group members, spec 14.22).
 */

static ngx_int_t
ngx_http_tent_delivery_permitted(json_t *post, json_t *record)
{
    size_t       i, j;
    json_t      *perms, *g, *mine, *v;
    ngx_str_t    entity, name;
    const char  *key;

    if (ngx_http_tent_json_str(record, "entity", &entity) != NGX_OK) {
        return 0;
    }

    perms = json_object_get(post, "permissions");

    if (json_is_true(json_object_get(perms, "public"))) {
        return 1;
    }

    /* the post may name the entity in any of its spellings */

    json_object_foreach(json_object_get(perms, "entities"), key, v) {
        name.data = (u_char *) key;
        name.len = ngx_strlen(key);

        if (ngx_http_tent_entity_eq(&name, &entity)) {
            return 1;
        }
    }

    mine = json_object_get(record, "groups");

    json_array_foreach(json_object_get(perms, "groups"), i, g) {
        json_array_foreach(mine, j, v) {
            if (json_equal(json_object_get(g, "id"), json_object_get(v, "id")))
            {
                return 1;
            }
        }
    }

    return 0;
}


/* who gets a post: followers subscribed to its type, and permitted */

static ngx_int_t
ngx_http_tent_delivery_wants(json_t *post, json_t *follower)
{
    ngx_str_t  type;

    return ngx_http_tent_json_str(post, "type", &type) == NGX_OK
           && ngx_http_tent_type_allowed(json_object_get(follower, "types"),
                                         &type)
           && ngx_http_tent_delivery_permitted(post, follower);
}


/*
 * A following hears of our public profile changes only (spec 9.4: tentd
 * sent profile posts to every following, at its "posts").
 */

static ngx_int_t
ngx_http_tent_delivery_wants_following(json_t *post, json_t *following)
{
    ngx_str_t  type;

    return ngx_http_tent_json_str(post, "type", &type) == NGX_OK
           && ngx_http_tent_post_type_is(&type, "profile")
           && json_is_true(json_object_get(json_object_get(post,
                                                           "permissions"),
                                           "public"))
           && json_is_true(json_object_get(following, "confirmed"));
}


/*
 * An app subscribed through an authorization's notification URL: posts
 * of its types, our public ones, or any with read_posts (spec 9.2).
 */

static ngx_int_t
ngx_http_tent_delivery_wants_app(json_t *post, json_t *sub,
    ngx_uint_t original)
{
    ngx_str_t  type;

    if (ngx_http_tent_json_str(post, "type", &type) != NGX_OK
        || !ngx_http_tent_type_allowed(json_object_get(sub, "post_types"),
                                       &type))
    {
        return 0;
    }

    if (original
        && json_is_true(json_object_get(json_object_get(post, "permissions"),
                                        "public")))
    {
        return 1;
    }

    return ngx_http_tent_delivery_scope(sub, "read_posts");
}


static ngx_int_t
ngx_http_tent_delivery_scope(json_t *sub, const char *scope)
{
    size_t   i;
    json_t  *v;

    json_array_foreach(json_object_get(sub, "scopes"), i, v) {
        if (json_is_string(v) && ngx_strcmp(json_string_value(v), scope) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/*
 * A job into a write batch: "<ms><job id>" in the jobs (when due) or the
 * dead letters (when failed), the job's JSON as the value.
 */

static ngx_int_t
ngx_http_tent_job_put(ngx_http_tent_task_t *t, ngx_http_tent_store_op_t *wop,
    u_char table, uint64_t ms, ngx_str_t *id, json_t *job)
{
    u_char     *p;
    ngx_str_t   rest, key, value;

    rest.len = 8 + id->len;
    rest.data = ngx_pnalloc(t->pool, rest.len);
    if (rest.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_http_tent_put_u64(rest.data, ms);
    ngx_memcpy(p, id->data, id->len);

    if (ngx_http_tent_key(t->pool, &t->ent->entity, table, &rest, &key)
        != NGX_OK
        || ngx_http_tent_json_dump(t->pool, job, &value) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_tent_store_write_put(wop, &key, &value);
}


static void
ngx_http_tent_delivery_expand_followers(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_task_t *t = op->data;

    json_t                       *follower, *job;
    uint64_t                      now;
    ngx_str_t                     key, value, fid, pid, jid, last;
    ngx_uint_t                    n, rows;
    ngx_http_tent_store_op_t     *wop;
    ngx_http_tent_store_done_pt   handler;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_task_done(t);
        return;
    }

    wop = ngx_http_tent_store_op_create(t->pool, t->dl->log);

    if (wop == NULL || ngx_http_tent_store_write(wop, 0) != NGX_OK) {
        ngx_http_tent_task_done(t);
        return;
    }

    now = ngx_http_tent_now_ms();
    n = 0;
    rows = 0;
    last.len = 0;

    /* a post deleted meanwhile goes to no one */

    while (t->post && ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {

        rows++;
        last = key;

        follower = ngx_http_tent_json_parse(&value, t->dl->log);
        if (follower == NULL) {
            continue;
        }

        if (!(t->apps
              ? ngx_http_tent_delivery_wants_app(t->post, follower,
                                        t->entity.data == t->ent->entity.data)
              : t->followings
              ? ngx_http_tent_delivery_wants_following(t->post, follower)
              : ngx_http_tent_delivery_wants(t->post, follower))
            || ngx_http_tent_json_str(follower,
                                      t->apps ? "authorization" : "id",
                                      &fid)
               != NGX_OK
            || ngx_http_tent_json_str(t->post, "id", &pid) != NGX_OK)
        {
            json_decref(follower);
            continue;
        }

        ngx_http_tent_delivery_got(t, follower);

        jid.len = 1 + fid.len + 1 + t->entity.len + 1 + pid.len + 1
                  + NGX_INT_T_LEN;
        jid.data = ngx_pnalloc(t->pool, jid.len);
        if (jid.data == NULL) {
            json_decref(follower);
            break;
        }

        /* "<kind><record id> [<post entity> ]<post id> <version>" */

        jid.len = ngx_sprintf(jid.data, "%s%V %V%s%V %L",
                              t->apps ? "A" : (t->followings ? "F" : ""),
                              &fid,
                              t->entity.data == t->ent->entity.data
                              ? &ngx_http_tent_empty : &t->entity,
                              t->entity.data == t->ent->entity.data
                              ? "" : " ",
                              &pid,
                              (int64_t) json_integer_value(
                                  json_object_get(t->job, "version")))
                  - jid.data;

        if (t->apps) {
            job = json_pack("{s:O, s:O, s:O, s:O, s:i, s:I, s:O?}",
                            "subscription",
                            json_object_get(follower, "authorization"),
                            "app", json_object_get(follower, "app"),
                            "id", json_object_get(t->job, "id"),
                            "version", json_object_get(t->job, "version"),
                            "attempt", 0,
                            "first", (json_int_t) (now / 1000),
                            "post_entity", json_object_get(t->job, "entity"));

        } else {
            job = json_pack("{s:O, s:O, s:O, s:i, s:I}",
                            t->followings ? "following" : "follower",
                            json_object_get(follower, "id"),
                            "id", json_object_get(t->job, "id"),
                            "version", json_object_get(t->job, "version"),
                            "attempt", 0,
                            "first", (json_int_t) (now / 1000));
        }

        json_decref(follower);

        if (job == NULL
            || ngx_http_tent_json_cleanup(t->pool, job) != NGX_OK
            || ngx_http_tent_job_put(t, wop, NGX_HTTP_TENT_TABLE_JOB, now,
                                     &jid, job)
               != NGX_OK)
        {
            ngx_http_tent_task_done(t);
            return;
        }

        n++;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                   "tent delivery: post \"%V\": %ui jobs made for %s",
                   &t->post_id, n,
                   t->apps ? "apps" : t->followings ? "followings"
                                                    : "followers");

    /*
     * More followers: these jobs now, the rest after them; the outbox row
     * goes with the last batch (a crash between makes some jobs twice).
     */

    if (rows == NGX_HTTP_TENT_FOLLOWER_SCAN) {
        t->start.data = ngx_pnalloc(t->pool, last.len + 1);
        if (t->start.data == NULL) {
            ngx_http_tent_task_done(t);
            return;
        }

        ngx_memcpy(t->start.data, last.data, last.len);
        t->start.data[last.len] = '\0';
        t->start.len = last.len + 1;

        handler = ngx_http_tent_delivery_next_followers;

    } else if (!t->followings && !t->apps && t->post
               && ngx_http_tent_json_str(t->post, "type", &pid) == NGX_OK
               && ngx_http_tent_post_type_is(&pid, "profile"))
    {
        /* a profile post: the followings next */

        t->followings = 1;

        if (ngx_http_tent_key_range(t->pool, &t->ent->entity,
                                    NGX_HTTP_TENT_TABLE_FOLLOWING, &t->start,
                                    &t->end)
            != NGX_OK)
        {
            ngx_http_tent_task_done(t);
            return;
        }

        handler = ngx_http_tent_delivery_next_followers;

    } else if (!t->apps) {

        /* the apps subscribed through a notification URL next */

        t->apps = 1;

        if (ngx_http_tent_key_range(t->pool, &t->ent->entity,
                                    NGX_HTTP_TENT_TABLE_SUBSCRIPTION,
                                    &t->start, &t->end)
            != NGX_OK)
        {
            ngx_http_tent_task_done(t);
            return;
        }

        handler = ngx_http_tent_delivery_next_followers;

    } else if (!t->mentions && t->mentioned && t->mentioned->nelts) {

        /* the mentioned entities that got nothing yet */

        t->mentions = 1;
        handler = ngx_http_tent_delivery_lookup;

    } else {
        if (ngx_http_tent_store_write_del(wop, &t->key) != NGX_OK) {
            ngx_http_tent_task_done(t);
            return;
        }

        handler = ngx_http_tent_delivery_written;
    }

    ngx_http_tent_task_submit(t, wop, handler);
}


/*
 * A new post's mentions (spec 9.2 step 4): the entities it names, but
 * ours, each once, at most NGX_HTTP_TENT_MENTION_MAX of them.  A later
 * version notifies no one again, as in tentd.
 */

static ngx_int_t
ngx_http_tent_delivery_mentions(ngx_http_tent_task_t *t)
{
    size_t       i;
    json_t      *m;
    ngx_int_t    rc;
    ngx_str_t    entity, *e;
    ngx_uint_t   j;

    if (t->post == NULL
        || t->entity.data != t->ent->entity.data
        || json_integer_value(json_object_get(t->job, "version")) != 1
        || json_array_size(json_object_get(t->post, "mentions")) == 0)
    {
        return NGX_OK;
    }

    t->mentioned = ngx_array_create(t->pool, 4, sizeof(ngx_str_t));
    if (t->mentioned == NULL) {
        return NGX_ERROR;
    }

    json_array_foreach(json_object_get(t->post, "mentions"), i, m) {

        if (ngx_http_tent_json_str(m, "entity", &entity) != NGX_OK
            || ngx_http_tent_entity_eq(&entity, &t->ent->entity))
        {
            continue;
        }

        /* looked up by its one spelling, as relationships are kept */

        rc = ngx_http_tent_entity_canonical(t->pool, &entity, &entity);
        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }

        e = t->mentioned->elts;

        for (j = 0; j < t->mentioned->nelts; j++) {
            if (ngx_http_tent_entity_eq(&entity, &e[j])) {
                break;
            }
        }

        if (j < t->mentioned->nelts) {
            continue;
        }

        if (t->mentioned->nelts == NGX_HTTP_TENT_MENTION_MAX) {
            ngx_log_error(NGX_LOG_INFO, t->dl->log, 0,
                          "tent delivery: a post mentions more than "
                          ngx_value(NGX_HTTP_TENT_MENTION_MAX)
                          " entities; the others are not told");
            break;
        }

        e = ngx_array_push(t->mentioned);
        if (e == NULL) {
            return NGX_ERROR;
        }

        *e = entity;    /* in t->pool, or t->post's, as long as the task */
    }

    return NGX_OK;
}


/* a relationship got the post as a subscriber: its mention is void */

static void
ngx_http_tent_delivery_got(ngx_http_tent_task_t *t, json_t *record)
{
    ngx_str_t   entity, *e;
    ngx_uint_t  i;

    if (t->mentioned == NULL
        || ngx_http_tent_json_str(record, "entity", &entity) != NGX_OK)
    {
        return;
    }

    e = t->mentioned->elts;

    for (i = 0; i < t->mentioned->nelts; i++) {
        if (ngx_http_tent_entity_eq(&entity, &e[i])) {
            e[i] = e[t->mentioned->nelts - 1];
            t->mentioned->nelts--;
            return;
        }
    }
}


/* the mentioned entities: a follower of ours, or one we follow? */

static void
ngx_http_tent_delivery_lookup(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_task_t *t = op->data;

    ngx_str_t                 *e, key;
    ngx_uint_t                 i;
    ngx_http_tent_store_op_t  *get;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_task_done(t);     /* the row stays: again later */
        return;
    }

    get = ngx_http_tent_store_op_create(t->pool, t->dl->log);

    if (get == NULL || ngx_http_tent_store_mget(get) != NGX_OK) {
        ngx_http_tent_task_done(t);
        return;
    }

    e = t->mentioned->elts;

    for (i = 0; i < t->mentioned->nelts; i++) {
        if (ngx_http_tent_key(t->pool, &t->ent->entity,
                              NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY, &e[i],
                              &key)
            != NGX_OK
            || ngx_http_tent_store_mget_key(get, &key) != NGX_OK
            || ngx_http_tent_key(t->pool, &t->ent->entity,
                                 NGX_HTTP_TENT_TABLE_FOLLOWING_ENTITY, &e[i],
                                 &key)
               != NGX_OK
            || ngx_http_tent_store_mget_key(get, &key) != NGX_OK)
        {
            ngx_http_tent_task_done(t);
            return;
        }
    }

    ngx_http_tent_task_submit(t, get, ngx_http_tent_delivery_mentioned);
}


/*
 * A job per mentioned entity (spec 9.3): to the follower, else to the
 * following, whose permissions are checked when it is sent; with no
 * relationship, for a public post only, to the entity's discovered
 * servers, unsigned.
 */

static void
ngx_http_tent_delivery_mentioned(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_task_t *t = op->data;

    json_t                    *job;
    uint64_t                   now;
    ngx_str_t                  value, id, pid, jid, *e;
    ngx_uint_t                 i, found, n, kind;
    ngx_http_tent_store_op_t  *wop;

    wop = ngx_http_tent_store_op_create(t->pool, t->dl->log);

    if (op->status != NGX_HTTP_TENT_STORE_OK
        || wop == NULL
        || ngx_http_tent_store_write(wop, 0) != NGX_OK
        || ngx_http_tent_json_str(t->post, "id", &pid) != NGX_OK)
    {
        ngx_http_tent_task_done(t);
        return;
    }

    now = ngx_http_tent_now_ms();
    e = t->mentioned->elts;
    n = 0;

    for (i = 0; i < t->mentioned->nelts; i++) {

        /* 0: no one, 1: a follower, 2: a following */

        kind = 0;

        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            ngx_http_tent_task_done(t);
            return;
        }

        if (found) {
            id = value;
            kind = 1;
        }

        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            ngx_http_tent_task_done(t);
            return;
        }

        if (found && kind == 0) {
            id = value;
            kind = 2;
        }

        /* no relationship: a public post only, to a discovered server */

        if (kind == 0) {
            if (!json_is_true(json_object_get(json_object_get(t->post,
                                                              "permissions"),
                                              "public"))
                || ngx_http_tent_entity_valid(&e[i]) != NGX_OK)
            {
                continue;
            }

            id = e[i];
        }

        jid.len = 2 + id.len + 1 + pid.len + 1 + NGX_INT_T_LEN;
        jid.data = ngx_pnalloc(t->pool, jid.len);
        if (jid.data == NULL) {
            ngx_http_tent_task_done(t);
            return;
        }

        jid.len = ngx_sprintf(jid.data, "m%s%V %V %L",
                              kind == 2 ? "F" : (kind == 0 ? "E" : ""),
                              &id, &pid,
                              (int64_t) json_integer_value(
                                  json_object_get(t->job, "version")))
                  - jid.data;

        job = json_pack("{s:o, s:b, s:O, s:O, s:i, s:I}",
                        kind == 2 ? "following"
                                  : (kind == 0 ? "entity" : "follower"),
                        ngx_http_tent_json_string(&id),
                        "mention", 1,
                        "id", json_object_get(t->job, "id"),
                        "version", json_object_get(t->job, "version"),
                        "attempt", 0,
                        "first", (json_int_t) (now / 1000));

        if (job == NULL
            || ngx_http_tent_json_cleanup(t->pool, job) != NGX_OK
            || ngx_http_tent_job_put(t, wop, NGX_HTTP_TENT_TABLE_JOB, now,
                                     &jid, job)
               != NGX_OK)
        {
            ngx_http_tent_task_done(t);
            return;
        }

        n++;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                   "tent delivery: post \"%V\": %ui jobs for mentions",
                   &t->post_id, n);

    if (ngx_http_tent_store_write_del(wop, &t->key) != NGX_OK) {
        ngx_http_tent_task_done(t);
        return;
    }

    ngx_http_tent_task_submit(t, wop, ngx_http_tent_delivery_written);
}


static void
ngx_http_tent_delivery_next_followers(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_task_t *t = op->data;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_task_done(t);     /* the row stays: again later */
        return;
    }

    ngx_http_tent_delivery_followers(t);
}


/* the key of the record a job goes to; none for a stranger */

static ngx_int_t
ngx_http_tent_delivery_record_key(ngx_http_tent_task_t *t, json_t *job,
    ngx_str_t *key)
{
    ngx_str_t  id, app, rest;

    if (t->stranger) {
        return NGX_OK;
    }

    if (ngx_http_tent_json_str(job, "following", &id) == NGX_OK) {
        return ngx_http_tent_key(t->pool, &t->ent->entity,
                                 NGX_HTTP_TENT_TABLE_FOLLOWING, &id, key);
    }

    if (ngx_http_tent_json_str(job, "follower", &id) == NGX_OK) {
        return ngx_http_tent_key(t->pool, &t->ent->entity,
                                 NGX_HTTP_TENT_TABLE_FOLLOWER, &id, key);
    }

    /* "<app id> 0x00 <authorization id>", as the authorization's own */

    if (ngx_http_tent_json_str(job, "subscription", &id) != NGX_OK
        || ngx_http_tent_json_str(job, "app", &app) != NGX_OK)
    {
        return NGX_ERROR;
    }

    rest.len = app.len + 1 + id.len;
    rest.data = ngx_pnalloc(t->pool, rest.len);
    if (rest.data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(rest.data, app.data, app.len);
    rest.data[app.len] = '\0';
    ngx_memcpy(rest.data + app.len + 1, id.data, id.len);

    return ngx_http_tent_key(t->pool, &t->ent->entity,
                             NGX_HTTP_TENT_TABLE_SUBSCRIPTION, &rest, key);
}


/* the due jobs of the entity: each loads its follower and post, then goes */

static void
ngx_http_tent_delivery_jobs(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_delivery_t *dl = op->data;

    json_t                       *job;
    ngx_str_t                     key, value, pid, fkey, pkey;
    ngx_http_tent_task_t         *t;
    ngx_http_tent_store_op_t     *get;
    ngx_http_tent_entity_conf_t  *ent;

    ent = (ngx_http_tent_entity_conf_t *) dl->mcf->entity_confs.elts
          + dl->next_entity;

    while (op->status == NGX_HTTP_TENT_STORE_OK
           && dl->inflight < dl->mcf->delivery_concurrency
           && ngx_http_tent_store_next(op, &key, &value) == NGX_OK)
    {
        if (ngx_http_tent_task_running(dl, &key)) {
            continue;
        }

        t = ngx_http_tent_task_create(dl, ent, &key, &value);
        if (t == NULL) {
            break;
        }

        job = ngx_http_tent_json_parse(&t->raw, dl->log);

        if (job == NULL || ngx_http_tent_json_cleanup(t->pool, job) != NGX_OK)
        {
            json_decref(job);
            ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_REFUSED);
            continue;
        }

        t->job = job;

        get = ngx_http_tent_store_op_create(t->pool, dl->log);

        t->stranger = json_object_get(job, "entity") != NULL;

        /*
         * The job row again, the record it goes to (a follower, a
         * following, an app's subscription) and the post; a stranger's:
         * the job and the post.
         */

        if (ngx_http_tent_json_str(job, "post_entity", &t->entity)
            != NGX_OK)
        {
            t->entity = ent->entity;
        }

        if (get == NULL
            || ngx_http_tent_delivery_record_key(t, job, &fkey) != NGX_OK
            || ngx_http_tent_json_str(job, "id", &pid) != NGX_OK
            || ngx_http_tent_post_key(t->pool, &ent->entity, &t->entity,
                                      &pid, -1, &pkey)
               != NGX_OK
            || ngx_http_tent_store_mget(get) != NGX_OK
            || ngx_http_tent_store_mget_key(get, &t->key) != NGX_OK
            || (!t->stranger
                && ngx_http_tent_store_mget_key(get, &fkey) != NGX_OK)
            || ngx_http_tent_store_mget_key(get, &pkey) != NGX_OK)
        {
            ngx_http_tent_task_done(t);
            continue;
        }

        t->post_id = pid;

        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                       "tent delivery: job due: post \"%V\" of \"%V\", "
                       "attempt %i", &pid, &t->entity,
                       (ngx_int_t) json_integer_value(
                                       json_object_get(job, "attempt")));

        ngx_http_tent_task_submit(t, get, ngx_http_tent_delivery_loaded);
    }

    ngx_http_tent_delivery_next(dl);
}


static void
ngx_http_tent_delivery_loaded(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_task_t *t = op->data;

    ngx_str_t   value;
    ngx_uint_t  found;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_task_done(t);
        return;
    }

    /*
     * The job itself first: a scan that listed it may have been answered
     * while an earlier task for it settled it; then it is gone, and not
     * sent twice.
     */

    if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK
        || !found)
    {
        ngx_http_tent_task_done(t);
        return;
    }

    /* one attempt, discovery and every server tried, has one deadline */

    t->deadline = ngx_current_msec + t->ent->scf->outbound.deadline;

    if (t->stranger) {
        ngx_http_tent_delivery_stranger(t, op);
        return;
    }

    /* a follower gone, or a post deleted: nothing to send */

    if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK
        || !found
        || (t->follower = ngx_http_tent_json_parse(&value, t->dl->log))
           == NULL
        || ngx_http_tent_json_cleanup(t->pool, t->follower) != NGX_OK
        || ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK
        || !found
        || (t->post = ngx_http_tent_json_parse(&value, t->dl->log)) == NULL
        || ngx_http_tent_json_cleanup(t->pool, t->post) != NGX_OK)
    {
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_DELIVERED);
        return;
    }

    /* an app's authorization that has expired is told nothing more */

    if (json_is_integer(json_object_get(t->follower, "expires_at"))
        && json_integer_value(json_object_get(t->follower, "expires_at"))
           <= ngx_time())
    {
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_DELIVERED);
        return;
    }

    /* a mention goes only where the post may be read, as it is now */

    if (json_is_true(json_object_get(t->job, "mention"))
        && (!ngx_http_tent_delivery_permitted(t->post, t->follower)
            || (json_object_get(t->job, "following")
                && !json_is_true(json_object_get(t->follower, "confirmed")))))
    {
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_DELIVERED);
        return;
    }

    t->server = 0;

    ngx_http_tent_delivery_send(t);
}


/*
 * A mentioned entity with no relationship: the post, if it is still
 * public, goes to the servers its profile lists, found again for every
 * attempt (they may move).
 */

static void
ngx_http_tent_delivery_stranger(ngx_http_tent_task_t *t,
    ngx_http_tent_store_op_t *op)
{
    ngx_str_t   value, entity;
    ngx_uint_t  found;

    if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK
        || !found
        || (t->post = ngx_http_tent_json_parse(&value, t->dl->log)) == NULL
        || ngx_http_tent_json_cleanup(t->pool, t->post) != NGX_OK
        || !json_is_true(json_object_get(json_object_get(t->post,
                                                         "permissions"),
                                         "public"))
        || ngx_http_tent_json_str(t->job, "entity", &entity) != NGX_OK)
    {
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_DELIVERED);
        return;
    }

    if (ngx_http_tent_discover_start(t->pool, t->dl->log,
                                     &t->ent->scf->outbound, &entity,
                                     t->deadline,
                                     ngx_http_tent_delivery_discovered, t)
        != NGX_OK)
    {
        ngx_http_tent_task_done(t);
    }
}


static void
ngx_http_tent_delivery_discovered(ngx_http_tent_discover_t *d)
{
    ngx_http_tent_task_t *t = d->data;

    ngx_str_t  entity;

    if (d->status) {
        ngx_log_error(NGX_LOG_INFO, t->dl->log, 0,
                      "tent delivery: a mention: %s", d->error);

        /* no profile there, or one our guard refuses: not again */

        t->status = d->status;
        ngx_http_tent_delivery_settle(t, d->status == NGX_HTTP_NOT_FOUND
                                         || d->status == NGX_HTTP_FORBIDDEN
                                         || d->status == NGX_HTTP_BAD_REQUEST
                                         ? NGX_HTTP_TENT_REFUSED
                                         : NGX_HTTP_TENT_RETRY);
        return;
    }

    /* a URL that leads to another entity's profile: not its servers */

    if (ngx_http_tent_json_str(t->job, "entity", &entity) != NGX_OK
        || !ngx_http_tent_entity_eq(&d->canonical, &entity))
    {
        ngx_log_error(NGX_LOG_INFO, t->dl->log, 0,
                      "tent delivery: a mention: the profile of \"%V\" "
                      "names another entity", &entity);

        t->status = NGX_HTTP_BAD_REQUEST;
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_REFUSED);
        return;
    }

    t->follower = json_pack("{s:O}", "servers", d->servers);

    if (t->follower == NULL
        || ngx_http_tent_json_cleanup(t->pool, t->follower) != NGX_OK)
    {
        json_decref(t->follower);
        ngx_http_tent_task_done(t);
        return;
    }

    t->server = 0;

    ngx_http_tent_delivery_send(t);
}


/*
 * The post as a follower sees it; an app (a subscription) sees when we
 * received it too, and with read_permissions whom it is for, as on
 * GET /posts.
 */

static json_t *
ngx_http_tent_delivery_body(json_t *post, json_t *sub)
{
    size_t   i;
    json_t  *out, *a;

    out = json_deep_copy(post);
    if (out == NULL) {
        return NULL;
    }

    json_object_del(out, "rus");

    if (sub == NULL) {
        json_object_del(out, "received_at");
    }

    json_array_foreach(json_object_get(out, "attachments"), i, a) {
        json_object_del(a, "digest");
    }

    if (sub == NULL || !ngx_http_tent_delivery_scope(sub, "read_permissions"))
    {
        json_object_set_new(out, "permissions",
                            json_pack("{s:b}", "public",
                                      json_is_true(json_object_get(
                                          json_object_get(post,
                                                          "permissions"),
                                          "public"))));
    }

    return out;
}


static void
ngx_http_tent_delivery_send(ngx_http_tent_task_t *t)
{
    json_t                 *server, *body;
    ngx_str_t               path, url;
    ngx_http_tent_fetch_t  *f;

    /* an app: its absolute notification URL, signed with its u: key */

    if (json_object_get(t->job, "subscription")) {
        if (ngx_http_tent_json_str(t->follower, "notification_url", &url)
            != NGX_OK)
        {
            ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_REFUSED);
            return;
        }

        goto send;
    }

    server = json_array_get(json_object_get(t->follower, "servers"),
                            t->server);

    /*
     * A follower's notification path; "posts" for a following, signed,
     * and for an entity with no relationship, unsigned (spec 9.3).
     */

    if (json_object_get(t->job, "following") || t->stranger) {
        ngx_str_set(&path, "posts");

    } else if (ngx_http_tent_json_str(t->follower, "notification_path",
                                      &path)
               != NGX_OK)
    {
        path.len = 0;
    }

    if (!json_is_string(server) || path.len == 0) {
        ngx_http_tent_delivery_settle(t, t->server ? NGX_HTTP_TENT_RETRY
                                                   : NGX_HTTP_TENT_REFUSED);
        return;
    }

    if (ngx_http_tent_server_url(t->pool, server, &path, NULL, &url)
        != NGX_OK)
    {
        ngx_http_tent_task_done(t);
        return;
    }

send:

    f = ngx_http_tent_fetch_create(t->pool, t->dl->log, &t->ent->scf->outbound);
    body = ngx_http_tent_delivery_body(t->post,
                                       json_object_get(t->job, "subscription")
                                       ? t->follower : NULL);

    if (f == NULL || body == NULL
        || ngx_http_tent_json_cleanup(t->pool, body) != NGX_OK
        || ngx_http_tent_json_dump(t->pool, body, &f->request_body) != NGX_OK
        || (!t->stranger
            && ngx_http_tent_remote_sign(f, t->follower) != NGX_OK))
    {
        ngx_http_tent_task_done(t);
        return;
    }

    f->url = url;
    ngx_str_set(&f->method, "POST");
    ngx_str_set(&f->content_type, NGX_HTTP_TENT_MEDIA_TYPE);
    f->max_response = 64 * 1024;
    f->deadline = t->deadline;
    f->has_deadline = 1;
    f->handler = ngx_http_tent_delivery_sent;
    f->data = t;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                   "tent delivery: job sent: post \"%V\" to %V",
                   &t->post_id, &url);

    if (ngx_http_tent_fetch_start(f) != NGX_OK) {
        ngx_http_tent_task_done(t);
    }
}


static void
ngx_http_tent_delivery_sent(ngx_http_tent_fetch_t *f)
{
    ngx_http_tent_task_t *t = f->data;

    json_t  *servers;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                   "tent delivery: answer from %V: %s, status %ui",
                   &f->url, ngx_http_tent_fetch_strerror(f->result),
                   f->status);

    if (f->result == NGX_HTTP_TENT_FETCH_OK
        && f->status >= 200 && f->status <= 299)
    {
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_DELIVERED);
        return;
    }

    if (f->result == NGX_HTTP_TENT_FETCH_OK
        && (f->status == 400 || f->status == 401 || f->status == 403
            || f->status == 404 || f->status == 410))
    {
        ngx_log_error(NGX_LOG_WARN, t->dl->log, 0,
                      "tent delivery: %V refused the post (%ui): "
                      "not retried", &f->url, f->status);
        t->status = f->status;
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_REFUSED);
        return;
    }

    ngx_log_error(NGX_LOG_INFO, t->dl->log, 0,
                  "tent delivery: POST %V: %s, status %ui", &f->url,
                  ngx_http_tent_fetch_strerror(f->result), f->status);

    /*
     * The follower's next server, at once, of the first few only (a row
     * may be older than the cap); after the last, later
     */

    servers = json_object_get(t->follower, "servers");

    if (ngx_http_tent_fetch_next_server(f)
        && t->server + 1 < ngx_http_tent_servers_max(servers,
                                                     &t->ent->scf->outbound)
        && json_is_string(json_array_get(servers, t->server + 1)))
    {
        t->server++;
        ngx_http_tent_delivery_send(t);
        return;
    }

    ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_RETRY);
}


/*
 * The job leaves the queue, or comes back later: base * 2^attempt, at
 * most the cap, half of it random so that failed jobs spread out.
 */

static void
ngx_http_tent_delivery_settle(ngx_http_tent_task_t *t, ngx_uint_t outcome)
{
    uint64_t                    delay, due;
    ngx_int_t                   attempt;
    ngx_str_t                   id;
    ngx_http_tent_store_op_t   *wop;
    ngx_http_tent_main_conf_t  *mcf;

    mcf = t->dl->mcf;

    wop = ngx_http_tent_store_op_create(t->pool, t->dl->log);

    if (wop == NULL
        || ngx_http_tent_store_write(wop, 0) != NGX_OK
        || ngx_http_tent_store_write_del(wop, &t->key) != NGX_OK)
    {
        ngx_http_tent_task_done(t);
        return;
    }

    attempt = t->job ? json_integer_value(json_object_get(t->job, "attempt"))
                     : 0;

    if (outcome == NGX_HTTP_TENT_RETRY
        && (ngx_uint_t) attempt + 1 >= mcf->delivery_attempts)
    {
        ngx_log_error(NGX_LOG_WARN, t->dl->log, 0,
                      "tent delivery: giving up after %i attempts",
                      attempt + 1);
        outcome = NGX_HTTP_TENT_REFUSED;
    }

    /* the job's id: the key without its entity, table and due time */

    id.data = t->key.data + t->ent->entity.len + 2 + 8;
    id.len = t->key.len - (t->ent->entity.len + 2 + 8);

    if (outcome == NGX_HTTP_TENT_RETRY) {
        delay = (uint64_t) mcf->delivery_retry << ngx_min(attempt, 30);
        if (delay > mcf->delivery_retry_max) {
            delay = mcf->delivery_retry_max;
        }

        delay = delay / 2 + (uint64_t) ngx_random() % (delay / 2 + 1);
        due = ngx_http_tent_now_ms() + delay;

        json_object_set_new(t->job, "attempt", json_integer(attempt + 1));

        if (ngx_http_tent_job_put(t, wop, NGX_HTTP_TENT_TABLE_JOB, due, &id,
                                  t->job)
            != NGX_OK)
        {
            ngx_http_tent_task_done(t);
            return;
        }

        ngx_log_debug4(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                       "tent delivery: settled: post \"%V\": retry at "
                       "%uL, in %uL ms, attempt %i", &t->post_id, due,
                       delay, attempt + 1);

    } else if (outcome == NGX_HTTP_TENT_REFUSED && t->job) {

        /* a dead letter, for the operator */

        json_object_set_new(t->job, "status", json_integer(t->status));
        json_object_set_new(t->job, "failed_at", json_integer(ngx_time()));

        if (ngx_http_tent_job_put(t, wop, NGX_HTTP_TENT_TABLE_DEAD,
                                  ngx_http_tent_now_ms(), &id, t->job)
            != NGX_OK)
        {
            ngx_http_tent_task_done(t);
            return;
        }

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                       "tent delivery: settled: post \"%V\": dead letter, "
                       "status %ui", &t->post_id, t->status);

    } else {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                       "tent delivery: settled: post \"%V\": %s",
                       &t->post_id, outcome == NGX_HTTP_TENT_DELIVERED
                                    ? "delivered" : "dropped");
    }

    ngx_http_tent_task_submit(t, wop, ngx_http_tent_delivery_written);
}


static void
ngx_http_tent_delivery_written(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_task_t *t = op->data;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_error(NGX_LOG_WARN, t->dl->log, 0,
                      "tent delivery: the queue could not be updated; "
                      "the job runs again");
    }

    ngx_http_tent_task_done(t);
}


/*
 * A task is over: it leaves the running list now, its memory soon; and
 * its place goes to the next due job at once, not at the next tick.
 */

static void
ngx_http_tent_task_done(ngx_http_tent_task_t *t)
{
    ngx_http_tent_delivery_t  *dl;

    dl = t->dl;

    ngx_queue_remove(&t->queue);
    dl->inflight--;

    ngx_post_event(&t->free, &ngx_posted_events);

    /* ngx_add_timer() alone ignores a change of less than 300 ms */

    if (!dl->busy && dl->timer.timer_set
        && !(ngx_exiting || ngx_quit || ngx_terminate))
    {
        ngx_del_timer(&dl->timer);
        ngx_add_timer(&dl->timer, 1);
    }
}


static void
ngx_http_tent_task_free(ngx_event_t *ev)
{
    ngx_http_tent_task_t *t = ev->data;

    ngx_destroy_pool(t->pool);
}
