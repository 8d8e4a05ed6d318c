
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

#include "ngx_http_tent_module.h"
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


static void ngx_http_tent_delivery_outbox(ngx_http_tent_store_op_t *op);
static ngx_uint_t ngx_http_tent_delivery_row(ngx_str_t *value);
static void ngx_http_tent_delivery_census(ngx_http_tent_delivery_t *dl,
    ngx_uint_t table);
static void ngx_http_tent_delivery_counted(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_delivery_cleared(ngx_http_tent_store_op_t *op);


/*
 * The outbox row of a post, into the post's own batch: the key orders
 * rows by creation, the value names the post.
 */

ngx_int_t
ngx_http_tent_delivery_mark(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_store_op_t *op, json_t *post)
{
    return ngx_http_tent_delivery_mark_rows(r->pool, &ctx->entity, op, post);
}


/* the same without a request: same-node delivery marks received posts */

ngx_int_t
ngx_http_tent_delivery_mark_rows(ngx_pool_t *pool, ngx_str_t *owner,
    ngx_http_tent_store_op_t *op, json_t *post)
{
    json_t     *row;
    ngx_str_t   id, key, value, entity;

    if (ngx_http_tent_json_str(post, "id", &id) != NGX_OK) {
        return NGX_ERROR;
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

    if (ngx_http_tent_json_str(post, "entity", &entity) == NGX_OK
        && !ngx_http_tent_entity_eq(&entity, owner))
    {
        json_object_set(row, "entity", json_object_get(post, "entity"));

    } else if (json_integer_value(json_object_get(post, "version")) == 1
               && json_array_size(json_object_get(post, "mentions")))
    {
        json_object_set_new(row, "mentions", json_true());
    }

    if (ngx_http_tent_timed_key(pool, owner,
                                NGX_HTTP_TENT_TABLE_OUTBOX,
                                ngx_http_tent_now_us(), &id, &key)
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
 * follower yet): one scan, limited to a row, tells, and then all the rows
 * of this pass go in one write, without reading a post or starting a task
 * for each.  A follower whose row is there when we look was there when
 * the post was made, or came later: it misses nothing it would have got.
 */

static void
ngx_http_tent_delivery_outbox(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_delivery_t *dl = op->data;

    ngx_str_t              key, value, *row;
    ngx_uint_t             flags, ours;
    ngx_http_tent_slot_t  *s;

    ours = 0;

    if (ngx_array_init(&dl->rows, dl->pool, 16, 2 * sizeof(ngx_str_t))
        != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: listing the outbox rows failed");
        ngx_http_tent_delivery_next(dl);
        return;
    }

    dl->profile_rows = 0;

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
            if (ngx_http_tent_task_running(dl, &key)) {
                continue;
            }

            row = ngx_array_push(&dl->rows);
            if (row == NULL) {
                ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                              "tent delivery: listing the outbox rows "
                              "failed");
                break;
            }

            row[0] = key;
            row[1] = value;

            flags = ngx_http_tent_delivery_row(&value);

            if (flags & NGX_HTTP_TENT_ROW_PROFILE) {
                dl->profile_rows = 1;
            }

            if (!(flags & NGX_HTTP_TENT_ROW_RECEIVED)) {
                ours = 1;
            }
        }

    } else {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                       "tent delivery: outbox not read (store status "
                       "%ui): later", op->status);
    }

    if (dl->rows.nelts == 0) {
        ngx_http_tent_delivery_next(dl);
        return;
    }

    /*
     * Posts received from others (a same-node delivery's copy) go to
     * apps only: no look at the followers for them.
     */

    ngx_http_tent_delivery_census(dl, ours ? NGX_HTTP_TENT_TABLE_FOLLOWER
                                           : NGX_HTTP_TENT_TABLE_SUBSCRIPTION);
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

    if (json_object_get(row, "entity") != NULL) {
        flags |= NGX_HTTP_TENT_ROW_RECEIVED;
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

    ent = ngx_http_tent_delivery_conf(dl, dl->next_entity);

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

    ngx_str_t                     key, value, *row;
    ngx_uint_t                    i, n, found;
    ngx_http_tent_store_op_t     *wop;
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

    row = dl->rows.elts;

    found = ngx_http_tent_store_next(op, &key, &value) == NGX_OK;

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: outbox of \"%V\": %ui rows; %s: %s",
                   &ent->entity, dl->rows.nelts,
                   dl->census == NGX_HTTP_TENT_TABLE_FOLLOWER
                   ? "followers"
                   : dl->census == NGX_HTTP_TENT_TABLE_SUBSCRIPTION
                   ? "app subscriptions" : "followings",
                   found ? "some" : "none");

    if (found) {

        /* someone may get these posts: each row becomes a task */

        for (i = 0; i < dl->rows.nelts && i < NGX_HTTP_TENT_OUTBOX_EXPAND;
             i++)
        {
            ngx_http_tent_delivery_expand(dl, ent, &row[2 * i],
                                          &row[2 * i + 1]);
        }

        ngx_http_tent_delivery_next(dl);
        return;
    }

    /* no app: same-node copies need not tell its apps (local_batch.c) */

    if (dl->census == NGX_HTTP_TENT_TABLE_SUBSCRIPTION) {
        ngx_http_tent_local_no_apps(dl, dl->next_entity, dl->census_apps);
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
        ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                      "tent delivery: building the outbox's removal failed");
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
            ngx_log_error(NGX_LOG_ERR, dl->log, 0,
                          "tent delivery: building the outbox's removal "
                          "failed");
            ngx_http_tent_delivery_next(dl);
            return;
        }
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: %ui posts for no one", dl->rows.nelts - n);

    if (n == dl->rows.nelts) {
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
