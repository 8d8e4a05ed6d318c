
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The outbox: the row a post write adds to its own batch, and the
 * engine's look at an entity's rows on each pass: whether anyone may get
 * them at all (a census of followers, app subscriptions, followings),
 * then each row to the fan-out, or all of them away in one write.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_OUTBOX_EXPAND 16

/* what an outbox row says of its post, before the post is read */
#define NGX_HTTP_TENT_ROW_PROFILE   1   /* maybe for the followings too */
#define NGX_HTTP_TENT_ROW_MENTIONS  2   /* maybe for entities it names */
#define NGX_HTTP_TENT_ROW_RECEIVED  4   /* another's post: for apps only */
#define NGX_HTTP_TENT_ROW_APPS      8   /* ours, for apps only */
#define NGX_HTTP_TENT_ROW_ACTIVITY  16  /* an activity's wake-up */

/* an app-only row's time: its key sorts after every other row's */
#define NGX_HTTP_TENT_OUTBOX_APPS   ((uint64_t) 1 << 63)


static void ngx_http_tent_delivery_outbox(ngx_http_tent_store_op_t *op);
static ngx_uint_t ngx_http_tent_delivery_row(ngx_str_t *value);
static void ngx_http_tent_delivery_woken(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_delivery_listed(ngx_http_tent_delivery_t *dl);


/* a row listed: what it says read once, for the listing and the pass */
typedef struct {
    ngx_str_t                       key;
    ngx_str_t                       value;
    ngx_uint_t                      flags;
} ngx_http_tent_outbox_row_t;
static void ngx_http_tent_delivery_census(ngx_http_tent_delivery_t *dl,
    ngx_uint_t table);
static void ngx_http_tent_delivery_counted(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_delivery_decide(ngx_http_tent_delivery_t *dl,
    ngx_uint_t others);
static void ngx_http_tent_delivery_cleared(ngx_http_tent_store_op_t *op);


/*
 * The outbox row of a post, into the post's own batch: the key orders
 * rows by creation, the value names the post.  A post only the entity's
 * apps could get (received from another, or ours, private, naming no one
 * and mentioning no one: a follower post) has no row while the engine's
 * census says no app is subscribed; else its row sorts after every other
 * (the top bit of its time), so that the rows of posts for followers
 * never wait behind thousands of these.
 */

ngx_int_t
ngx_http_tent_delivery_mark(ngx_pool_t *pool, ngx_str_t *owner,
    ngx_http_tent_store_op_t *op, json_t *post)
{
    json_t      *row;
    uint64_t     time;
    ngx_str_t    id, key, value, entity;
    ngx_uint_t   received, mentions, apps;

    if (ngx_http_tent_json_str(post, "id", &id) != NGX_OK) {
        return NGX_ERROR;
    }

    received = ngx_http_tent_json_str(post, "entity", &entity) == NGX_OK
               && !ngx_http_tent_entity_eq(&entity, owner);

    mentions = !received
               && json_integer_value(json_object_get(post, "version")) == 1
               && json_array_size(json_object_get(post, "mentions"));

    apps = received || (!mentions && ngx_http_tent_delivery_unnamed(post));

    /*
     * Read after the census's generation: an app whose subscription was
     * acknowledged before this write was built moved the generation, or
     * was seen by the census (docs/federation.md, "The census of apps").
     */

    if (apps && ngx_http_tent_apps_none((ngx_cycle_t *) ngx_cycle, owner)) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "tent delivery: no app of \"%V\" subscribed: post "
                       "\"%V\" has no outbox row", owner, &id);
        return NGX_OK;
    }

    /*
     * The type tells the engine whether followings get it too, and
     * "mentions" whether a new post names someone to tell, whoever
     * follows us.
     */

    row = json_pack("{s:O, s:O, s:O}", "id", json_object_get(post, "id"),
                    "version", json_object_get(post, "version"),
                    "type", json_object_get(post, "type"));

    if (row == NULL || ngx_http_tent_json_cleanup(pool, row) != NGX_OK) {
        json_decref(row);
        return NGX_ERROR;
    }

    /* a post received from another entity goes to apps only */

    if (received) {
        json_object_set(row, "entity", json_object_get(post, "entity"));

        /* a same-node reference: the post is in its author's rows */

        if (json_is_string(json_object_get(post, "l"))) {
            json_object_set(row, "l", json_object_get(post, "l"));
        }

    } else if (mentions) {
        json_object_set_new(row, "mentions", json_true());

    } else if (apps) {
        json_object_set_new(row, "apps", json_true());
    }

    time = ngx_http_tent_now_us();

    if (apps) {
        time |= NGX_HTTP_TENT_OUTBOX_APPS;
    }

    if (ngx_http_tent_timed_key(pool, owner, NGX_HTTP_TENT_TABLE_OUTBOX,
                                time, &id, &key)
        != NGX_OK
        || ngx_http_tent_json_dump(pool, row, &value) != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


void
ngx_http_tent_delivery_scan_outbox(ngx_http_tent_delivery_t *dl)
{
    ngx_str_t                     start, end;
    ngx_http_tent_slot_t         *s;
    ngx_http_tent_store_op_t     *op;
    ngx_http_tent_entity_conf_t  *ent;

    s = ngx_http_tent_delivery_slot(dl, dl->next_entity);

    /* no row written since its outbox was found empty */

    if (s == NULL || !s->outbox) {
        ngx_http_tent_delivery_next(dl);
        return;
    }

    ent = &s->conf;

    op = ngx_http_tent_store_op_create(dl->pool, dl->log);

    if (op == NULL
        || ngx_http_tent_key_range(dl->pool, &ent->entity,
                                   NGX_HTTP_TENT_TABLE_OUTBOX, &start, &end)
           != NGX_OK
        || ngx_http_tent_store_scan(op, &start, &end,
                                    NGX_HTTP_TENT_OUTBOX_SCAN, 0)
           != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: building the outbox scan failed");
        ngx_http_tent_delivery_next(dl);
        return;
    }

    op->handler = ngx_http_tent_delivery_outbox;
    op->data = dl;

    if (ngx_http_tent_store_submit(op) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: submitting the outbox scan failed");
        ngx_http_tent_delivery_next(dl);
    }
}


/*
 * The outbox rows of an entity.  Most posts of a server go to no one (no
 * follower yet, no app): one scan, limited to a row, tells, and then all
 * the rows of this pass go in one write, without reading a post or
 * starting a task for each.  A follower whose row is there when we look
 * was there when the post was made, or came later: it misses nothing it
 * would have got.  When a row is for apps only, the apps are counted
 * first: that census is what spares the next such posts their rows
 * (ngx_http_tent_delivery_mark above).
 */

static void
ngx_http_tent_delivery_outbox(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_delivery_t *dl = op->data;

    uint64_t                     us, wake;
    ngx_str_t                    key, value, id;
    ngx_uint_t                   flags;
    ngx_http_tent_slot_t        *s;
    ngx_http_tent_store_op_t    *wop;
    ngx_http_tent_outbox_row_t  *row;

    s = NULL;
    wop = NULL;
    wake = (uint64_t) -1;

    if (ngx_array_init(&dl->rows, dl->pool, 16,
                       sizeof(ngx_http_tent_outbox_row_t))
        != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: listing the outbox rows failed");
        ngx_http_tent_delivery_next(dl);
        return;
    }

    dl->profile_rows = 0;
    dl->ours = 0;
    dl->app_rows = 0;
    dl->apps_found = 0;
    dl->apps_checked = 0;
    dl->followers_checked = 0;

    if (op->status == NGX_HTTP_TENT_STORE_OK) {

        /* empty: not scanned again until a row's mark (delivery.c) */

        s = ngx_http_tent_delivery_slot(dl, dl->next_entity);

        if (ngx_http_tent_store_next(op, &key, &value) != NGX_OK && s) {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                           "tent delivery: \"%V\": outbox empty",
                           &s->conf.entity);
            s->outbox = 0;
        }

        (void) ngx_http_tent_store_rewind(op);

        while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
            if (ngx_http_tent_task_running(dl, &key)
                || ngx_http_tent_fanout_apps_has(dl, &key))
            {
                continue;
            }

            row = ngx_array_push(&dl->rows);
            if (row == NULL) {
                ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                              "tent delivery: listing the outbox rows "
                              "failed");
                break;
            }

            row->key = key;
            row->value = value;

            flags = ngx_http_tent_delivery_row(&value);
            row->flags = flags;

            /*
             * An activity's wake-up: its job, put by a request, is due
             * from its time on; the row goes, no post, no census.
             */

            if (flags & NGX_HTTP_TENT_ROW_ACTIVITY) {
                dl->rows.nelts--;

                if (s
                    && ngx_http_tent_timed_key_parse(&s->conf.entity, &key,
                                                     &us, &id)
                       == NGX_OK)
                {
                    wake = ngx_min(wake, us / 1000);
                }

                if (wop == NULL) {
                    wop = ngx_http_tent_store_op_create(dl->pool, dl->log);

                    if (wop == NULL
                        || ngx_http_tent_store_write(wop, 0) != NGX_OK)
                    {
                        wop = NULL;
                        continue;
                    }
                }

                (void) ngx_http_tent_store_write_del(wop, &key);
                continue;
            }

            if (flags & NGX_HTTP_TENT_ROW_PROFILE) {
                dl->profile_rows = 1;
            }

            if (flags & (NGX_HTTP_TENT_ROW_RECEIVED | NGX_HTTP_TENT_ROW_APPS))
            {
                dl->app_rows = 1;

            } else {
                dl->ours = 1;
            }
        }

    } else {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                       "tent delivery: outbox not read (store status "
                       "%ui): later", op->status);
    }

    if (s && wake != (uint64_t) -1) {
        ngx_http_tent_queue_wake(dl, s, wake);
    }

    /* the pass's pool lives until the write is answered */

    if (wop) {
        wop->handler = ngx_http_tent_delivery_woken;
        wop->data = dl;

        if (ngx_http_tent_store_submit(wop) == NGX_OK) {
            return;
        }

        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: removing the wake-up rows failed");
    }

    ngx_http_tent_delivery_listed(dl);
}


/* the rows listed, the wake-ups gone: anyone to send them to? */

static void
ngx_http_tent_delivery_listed(ngx_http_tent_delivery_t *dl)
{
    if (dl->rows.nelts == 0) {
        ngx_http_tent_delivery_next(dl);
        return;
    }

    /*
     * Rows for apps only: the apps first (that census is also what
     * spares the next such posts their rows); then, for posts that may go
     * to others, the followers.  Only others' rows: the followers first,
     * the apps only if there are none, as a fan-out's stages go.
     */

    ngx_http_tent_delivery_census(dl, dl->app_rows
                                      ? NGX_HTTP_TENT_TABLE_SUBSCRIPTION
                                      : NGX_HTTP_TENT_TABLE_FOLLOWER);
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

    if (json_is_true(json_object_get(row, "activity"))) {
        json_decref(row);
        return NGX_HTTP_TENT_ROW_ACTIVITY;
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

    if (json_object_get(row, "entity") != NULL) {
        flags |= NGX_HTTP_TENT_ROW_RECEIVED;
    }

    if (json_is_true(json_object_get(row, "apps"))) {
        flags |= NGX_HTTP_TENT_ROW_APPS;
    }

    json_decref(row);

    return flags;
}


/* the wake-up rows removed: a failure leaves them for the next pass */

static void
ngx_http_tent_delivery_woken(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_delivery_t *dl = op->data;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_error(NGX_LOG_ERR, op->log, 0,
                      "tent delivery: removing the wake-up rows failed "
                      "(store status %ui)", op->status);
    }

    ngx_http_tent_delivery_listed(dl);
}


/* is there anyone at all in the followers (or another) table? */

static void
ngx_http_tent_delivery_census(ngx_http_tent_delivery_t *dl, ngx_uint_t table)
{
    ngx_str_t                     start, end;
    ngx_http_tent_store_op_t     *scan;
    ngx_http_tent_entity_conf_t  *ent;

    ent = ngx_http_tent_delivery_conf(dl, dl->next_entity);

    /*
     * Before the scan: a subscription written after this read moves the
     * generation, one written before it is in the scan.
     */

    dl->census = table;
    dl->census_apps = ngx_http_tent_subscription_generation(
                                              (ngx_cycle_t *) ngx_cycle);

    scan = ngx_http_tent_store_op_create(dl->pool, dl->log);

    if (scan == NULL || ent == NULL
        || ngx_http_tent_key_range(dl->pool, &ent->entity, table, &start,
                                   &end)
           != NGX_OK
        || ngx_http_tent_store_scan(scan, &start, &end, 1, 0) != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: building the census scan failed");
        ngx_http_tent_delivery_next(dl);
        return;
    }

    scan->handler = ngx_http_tent_delivery_counted;
    scan->data = dl;

    if (ngx_http_tent_store_submit(scan) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: submitting the census scan failed");
        ngx_http_tent_delivery_next(dl);
    }
}


static void
ngx_http_tent_delivery_counted(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_delivery_t *dl = op->data;

    ngx_str_t                     key, value;
    ngx_uint_t                    found;
    ngx_http_tent_entity_conf_t  *ent;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                       "tent delivery: census not read (store status "
                       "%ui): later", op->status);
        ngx_http_tent_delivery_next(dl);    /* the rows stay: later */
        return;
    }

    ent = ngx_http_tent_delivery_conf(dl, dl->next_entity);
    if (ent == NULL) {
        ngx_http_tent_delivery_next(dl);
        return;
    }

    found = ngx_http_tent_store_next(op, &key, &value) == NGX_OK;

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: outbox of \"%V\": %ui rows; %s: %s",
                   &ent->entity, dl->rows.nelts,
                   dl->census == NGX_HTTP_TENT_TABLE_FOLLOWER
                   ? "followers"
                   : dl->census == NGX_HTTP_TENT_TABLE_SUBSCRIPTION
                   ? "app subscriptions" : "followings",
                   found ? "some" : "none");

    if (dl->census == NGX_HTTP_TENT_TABLE_SUBSCRIPTION) {

        /* for every worker: the rows of posts for apps only, or none */

        ngx_http_tent_apps_census((ngx_cycle_t *) ngx_cycle, &ent->entity,
                                  dl->census_apps, !found);

        dl->apps_found = found;
        dl->apps_checked = 1;

        if (dl->ours && !dl->followers_checked) {
            ngx_http_tent_delivery_census(dl, NGX_HTTP_TENT_TABLE_FOLLOWER);
            return;
        }

    } else if (dl->census == NGX_HTTP_TENT_TABLE_FOLLOWER) {
        dl->followers_checked = 1;

        if (found) {
            ngx_http_tent_delivery_decide(dl, 1);
            return;
        }

        if (!dl->apps_checked) {
            ngx_http_tent_delivery_census(dl,
                                          NGX_HTTP_TENT_TABLE_SUBSCRIPTION);
            return;
        }

    } else {    /* the followings */
        ngx_http_tent_delivery_decide(dl, found);
        return;
    }

    /* no follower, no app: for a profile post, a following? */

    if (dl->ours && !dl->apps_found && dl->profile_rows) {
        ngx_http_tent_delivery_census(dl, NGX_HTTP_TENT_TABLE_FOLLOWING);
        return;
    }

    ngx_http_tent_delivery_decide(dl, 0);
}


/*
 * Each row to its fan-out (16 a pass, in their order: the rows for apps
 * only sort last), or away: a row for apps only when no app is
 * subscribed, any row when no one at all may get it, but those of new
 * posts that mention someone, who may be told anyway.  The removals are
 * one write, unsynced (see the top of ngx_http_tent_delivery.c).
 */

static void
ngx_http_tent_delivery_decide(ngx_http_tent_delivery_t *dl,
    ngx_uint_t others)
{
    ngx_str_t                    *a;
    ngx_uint_t                    i, n, gone, flags, someone, apps;
    ngx_array_t                   batch;
    ngx_http_tent_store_op_t     *wop;
    ngx_http_tent_outbox_row_t   *row;
    ngx_http_tent_entity_conf_t  *ent;

    ent = ngx_http_tent_delivery_conf(dl, dl->next_entity);
    if (ent == NULL) {
        ngx_http_tent_delivery_next(dl);
        return;
    }

    row = dl->rows.elts;

    wop = ngx_http_tent_store_op_create(dl->pool, dl->log);

    if (wop == NULL || ngx_http_tent_store_write(wop, 0) != NGX_OK
        || ngx_array_init(&batch, dl->pool, 16, 2 * sizeof(ngx_str_t))
           != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: building the outbox's removal failed");
        ngx_http_tent_delivery_next(dl);
        return;
    }

    n = 0;
    gone = 0;

    for (i = 0; i < dl->rows.nelts; i++) {
        flags = row[i].flags;

        apps = flags & (NGX_HTTP_TENT_ROW_RECEIVED | NGX_HTTP_TENT_ROW_APPS);

        if (apps) {
            someone = dl->apps_found || !dl->apps_checked;

        } else {
            someone = dl->apps_found || others
                      || (flags & NGX_HTTP_TENT_ROW_MENTIONS);
        }

        /* the rows for apps only: one batch (ngx_http_tent_fanout_apps.c) */

        if (someone && apps && !dl->apps_many) {
            a = ngx_array_push(&batch);
            if (a == NULL) {
                break;
            }

            a[0] = row[i].key;
            a[1] = row[i].value;
            continue;
        }

        if (someone) {
            if (n++ < NGX_HTTP_TENT_OUTBOX_EXPAND) {
                ngx_http_tent_delivery_expand(dl, ent, &row[i].key,
                                              &row[i].value);
            }

            continue;
        }

        if (ngx_http_tent_store_write_del(wop, &row[i].key) != NGX_OK) {
            ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                          "tent delivery: building the outbox's removal "
                          "failed");
            ngx_http_tent_delivery_next(dl);
            return;
        }

        gone++;
    }

    if (batch.nelts) {
        (void) ngx_http_tent_fanout_apps(dl, ent, batch.elts, batch.nelts);
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: outbox of \"%V\": %ui posts for no one, "
                   "%ui to send", &ent->entity, gone, n);

    if (gone == 0) {
        ngx_http_tent_delivery_next(dl);
        return;
    }

    wop->handler = ngx_http_tent_delivery_cleared;
    wop->data = dl;

    if (ngx_http_tent_store_submit(wop) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: submitting the outbox's removal "
                      "failed");
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

    ngx_http_tent_delivery_next(dl);
}
