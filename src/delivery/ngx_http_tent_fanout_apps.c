
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The outbox rows of posts for apps only (a post we received, one of
 * ours that no follower may see: the follower post of each follow), a
 * batch at a time: up to 256 rows are one read of their posts, one scan
 * of the subscriptions and one write of every job and every row's
 * removal, not three operations and a task a row.  One batch in flight
 * at a time; the rows it holds are not listed again meanwhile.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_fanout.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_store.h"


/* subscriptions read at once: more, and the rows go one by one */
#define NGX_HTTP_TENT_APPS_SCAN  100


typedef struct {
    ngx_str_t                       key;
    ngx_str_t                       value;
    json_t                         *row;
    json_t                         *post;
    ngx_str_t                       entity;      /* the post's */
} ngx_http_tent_apps_row_t;


typedef struct {
    ngx_http_tent_fanout_t         *task;
    ngx_array_t                     rows;        /* _apps_row_t */
    ngx_rbtree_t                   *keys;
} ngx_http_tent_apps_batch_t;


static ngx_str_t  ngx_http_tent_apps_empty = ngx_null_string;


static void ngx_http_tent_fanout_apps_posts(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_fanout_apps_subs(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_fanout_apps_written(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_fanout_apps_end(ngx_http_tent_apps_batch_t *b);


/* is "key" a row of the batch in flight */

ngx_uint_t
ngx_http_tent_fanout_apps_has(ngx_http_tent_delivery_t *dl, ngx_str_t *key)
{
    ngx_http_tent_apps_batch_t  *b;

    b = dl->apps_batch;

    return b != NULL && ngx_http_tent_key_set_has(b->keys, key);
}


/*
 * A batch of "n" rows ("rows": key, value pairs, in the pass's pool, so
 * copied): NGX_DECLINED when one is in flight already (the rows wait for
 * the next pass), NGX_ERROR logged.
 */

ngx_int_t
ngx_http_tent_fanout_apps(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent, ngx_str_t *rows, ngx_uint_t n)
{
    ngx_str_t                    id, pkey, owner;
    ngx_uint_t                   i;
    ngx_http_tent_fanout_t      *t;
    ngx_http_tent_apps_row_t    *r;
    ngx_http_tent_store_op_t    *get;
    ngx_http_tent_apps_batch_t  *b;

    if (dl->apps_batch != NULL) {
        return NGX_DECLINED;
    }

    /* one task: it holds a slot, and the due scan's cursor while writing */

    t = (ngx_http_tent_fanout_t *) ngx_http_tent_task_create(dl, ent,
                                      &rows[0], &rows[1], NULL,
                                      sizeof(ngx_http_tent_fanout_t));
    if (t == NULL) {
        return NGX_ERROR;
    }

    t->stage = NGX_HTTP_TENT_FANOUT_APPS;

    b = ngx_pcalloc(t->task.pool, sizeof(ngx_http_tent_apps_batch_t));
    if (b == NULL
        || ngx_array_init(&b->rows, t->task.pool, n,
                          sizeof(ngx_http_tent_apps_row_t))
           != NGX_OK
        || (b->keys = ngx_http_tent_key_set_create(t->task.pool)) == NULL)
    {
        goto failed;
    }

    b->task = t;

    get = ngx_http_tent_store_op_create(t->task.pool, dl->log);
    if (get == NULL || ngx_http_tent_store_mget(get) != NGX_OK) {
        goto failed;
    }

    for (i = 0; i < n; i++) {
        r = ngx_array_push(&b->rows);
        if (r == NULL) {
            goto failed;
        }

        ngx_memzero(r, sizeof(ngx_http_tent_apps_row_t));

        r->key.data = ngx_pstrdup(t->task.pool, &rows[2 * i]);
        r->value.data = ngx_pstrdup(t->task.pool, &rows[2 * i + 1]);

        if (r->key.data == NULL || r->value.data == NULL) {
            goto failed;
        }

        r->key.len = rows[2 * i].len;
        r->value.len = rows[2 * i + 1].len;

        if (ngx_http_tent_key_set_add(t->task.pool, b->keys, &r->key)
            != NGX_OK)
        {
            goto failed;
        }

        r->row = ngx_http_tent_json_parse(&r->value, dl->log);

        if (r->row == NULL
            || ngx_http_tent_json_cleanup(t->task.pool, r->row) != NGX_OK)
        {
            json_decref(r->row);
            goto failed;
        }

        if (ngx_http_tent_json_str(r->row, "entity", &r->entity) != NGX_OK) {
            r->entity = ent->entity;
        }

        /* a same-node reference's post is in its author's rows */

        if (ngx_http_tent_json_str(r->row, "l", &owner) != NGX_OK) {
            owner = ent->entity;
        }

        if (ngx_http_tent_json_str(r->row, "id", &id) != NGX_OK
            || ngx_http_tent_post_key(t->task.pool, &owner, &r->entity, &id,
                                      -1, &pkey)
               != NGX_OK
            || ngx_http_tent_store_mget_key(get, &pkey) != NGX_OK)
        {
            goto failed;
        }
    }

    dl->apps_batch = b;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: outbox of \"%V\": %ui rows for apps in "
                   "one batch", &ent->entity, n);

    ngx_http_tent_task_submit(&t->task, get, ngx_http_tent_fanout_apps_posts);

    return NGX_OK;

failed:

    ngx_http_tent_task_failed(&t->task, "building a batch of rows for apps");

    return NGX_ERROR;
}


/* the posts, in the rows' order; then the subscriptions */

static void
ngx_http_tent_fanout_apps_posts(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_fanout_t *t = op->data;

    ngx_str_t                    value, start, end;
    ngx_uint_t                   i, found;
    ngx_http_tent_apps_row_t    *r;
    ngx_http_tent_store_op_t    *scan;
    ngx_http_tent_apps_batch_t  *b;

    b = t->task.dl->apps_batch;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: the posts of a batch for apps not "
                       "read (store status %ui): later", op->status);
        ngx_http_tent_fanout_apps_end(b);
        return;
    }

    r = b->rows.elts;

    for (i = 0; i < b->rows.nelts; i++) {
        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            ngx_http_tent_fanout_apps_end(b);
            return;
        }

        if (!found) {
            continue;       /* deleted meanwhile: to no one */
        }

        r[i].post = ngx_http_tent_json_parse(&value, t->task.dl->log);

        if (r[i].post == NULL
            || ngx_http_tent_json_cleanup(t->task.pool, r[i].post) != NGX_OK)
        {
            json_decref(r[i].post);
            r[i].post = NULL;
        }
    }

    scan = ngx_http_tent_store_op_create(t->task.pool, t->task.dl->log);

    if (scan == NULL
        || ngx_http_tent_key_range(t->task.pool, &t->task.ent->entity,
                                   NGX_HTTP_TENT_TABLE_SUBSCRIPTION, &start,
                                   &end)
           != NGX_OK
        || ngx_http_tent_store_scan(scan, &start, &end,
                                    NGX_HTTP_TENT_APPS_SCAN, 0)
           != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, t->task.dl->log, 0,
                      "tent delivery: building the subscriptions' scan "
                      "failed");
        ngx_http_tent_fanout_apps_end(b);
        return;
    }

    ngx_http_tent_task_submit(&t->task, scan, ngx_http_tent_fanout_apps_subs);
}


/* every row's jobs, one for each subscription that wants its post */

static void
ngx_http_tent_fanout_apps_subs(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_fanout_t *t = op->data;

    json_t                      *sub, **slot;
    uint64_t                     now;
    ngx_str_t                    key, value, fid, pid, jid;
    ngx_uint_t                   i, j, n, original;
    ngx_array_t                  subs;
    ngx_http_tent_apps_row_t    *r;
    ngx_http_tent_store_op_t    *wop;
    ngx_http_tent_apps_batch_t  *b;
    ngx_http_tent_job_row_t      jr;

    b = t->task.dl->apps_batch;

    if (op->status != NGX_HTTP_TENT_STORE_OK
        || ngx_array_init(&subs, t->task.pool, 4, sizeof(json_t *)) != NGX_OK)
    {
        ngx_http_tent_fanout_apps_end(b);
        return;
    }

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        sub = ngx_http_tent_record_parse(t->task.dl->log, &key, &value);

        if (sub == NULL) {
            continue;
        }

        if (ngx_http_tent_json_cleanup(t->task.pool, sub) != NGX_OK) {
            json_decref(sub);
            ngx_http_tent_fanout_apps_end(b);
            return;
        }

        slot = ngx_array_push(&subs);
        if (slot == NULL) {
            ngx_http_tent_fanout_apps_end(b);
            return;
        }

        *slot = sub;
    }

    /* a full scan may not be all: these rows go one by one (outbox.c) */

    if (subs.nelts >= NGX_HTTP_TENT_APPS_SCAN) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: too many subscriptions for a batch: "
                       "the rows go one by one");
        t->task.dl->apps_many = 1;
        ngx_http_tent_fanout_apps_end(b);
        return;
    }

    wop = ngx_http_tent_store_op_create(t->task.pool, t->task.dl->log);

    if (wop == NULL || ngx_http_tent_store_write(wop, 0) != NGX_OK) {
        ngx_http_tent_fanout_apps_end(b);
        return;
    }

    now = ngx_http_tent_now_ms();
    n = 0;
    r = b->rows.elts;

    for (i = 0; i < b->rows.nelts; i++) {

        original = (r[i].entity.data == t->task.ent->entity.data);

        for (j = 0; r[i].post && j < subs.nelts; j++) {
            sub = ((json_t **) subs.elts)[j];

            if (!ngx_http_tent_delivery_wants_app(r[i].post, sub, original)
                || ngx_http_tent_json_str(sub, "authorization", &fid)
                   != NGX_OK
                || ngx_http_tent_json_str(r[i].post, "id", &pid) != NGX_OK)
            {
                continue;
            }

            /* "A<authorization> [<post entity> ]<post id> <version>" */

            jid.len = 1 + fid.len + 1 + r[i].entity.len + 1 + pid.len + 1
                      + NGX_INT64_LEN;
            jid.data = ngx_pnalloc(wop->pool, jid.len);
            if (jid.data == NULL) {
                ngx_http_tent_fanout_apps_end(b);
                return;
            }

            jid.len = ngx_sprintf(jid.data, "A%V %V%s%V %L", &fid,
                                  original ? &ngx_http_tent_apps_empty
                                           : &r[i].entity,
                                  original ? "" : " ", &pid,
                                  (int64_t) json_integer_value(
                                      json_object_get(r[i].row, "version")))
                      - jid.data;

            ngx_memzero(&jr, sizeof(ngx_http_tent_job_row_t));

            jr.kind = NGX_HTTP_TENT_JOB_APP;
            jr.to = fid;
            jr.id = pid;
            jr.version = json_integer_value(json_object_get(r[i].row,
                                                            "version"));
            jr.first = now / 1000;
            (void) ngx_http_tent_json_str(r[i].row, "entity",
                                          &jr.post_entity);

            /* a same-node reference's: the post is in its author's rows */

            (void) ngx_http_tent_json_str(r[i].row, "l", &jr.ref_owner);

            if (ngx_http_tent_json_str(sub, "app", &jr.app) != NGX_OK
                || ngx_http_tent_job_new(&t->task, wop, now, &jid, &jr)
                != NGX_OK)
            {
                ngx_http_tent_fanout_apps_end(b);    /* logged there */
                return;
            }

            n++;
        }

        if (ngx_http_tent_store_write_del(wop, &r[i].key) != NGX_OK) {
            ngx_http_tent_fanout_apps_end(b);
            return;
        }
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: a batch of %ui rows for apps: %ui jobs "
                   "for %ui subscriptions, one write", b->rows.nelts, n,
                   subs.nelts);

    ngx_http_tent_task_submit(&t->task, wop, ngx_http_tent_fanout_apps_written);
}


static void
ngx_http_tent_fanout_apps_written(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_fanout_t *t = op->data;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_error(NGX_LOG_WARN, t->task.dl->log, 0,
                      "tent delivery: a batch of rows for apps could not be "
                      "written; its rows are looked at again");
    }

    ngx_http_tent_fanout_apps_end(t->task.dl->apps_batch);
}


/*
 * The batch is over: its task ends, and its rows' keys are kept as
 * ended for the passes whose scans may have listed them before the
 * write that removed them (ngx_http_tent_task_running()).
 */

static void
ngx_http_tent_fanout_apps_end(ngx_http_tent_apps_batch_t *b)
{
    ngx_uint_t                 i;
    ngx_http_tent_fanout_t    *t;
    ngx_http_tent_apps_row_t  *r;

    t = b->task;

    if (t->task.dl->apps_batch == b) {
        t->task.dl->apps_batch = NULL;
    }

    r = b->rows.elts;

    for (i = 1; i < b->rows.nelts; i++) {
        ngx_http_tent_task_ended(t->task.dl, &r[i].key);
    }

    ngx_http_tent_task_done(&t->task);
}
