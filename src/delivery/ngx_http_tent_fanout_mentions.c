
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The fan-out's last stage (ngx_http_tent_fanout.c): a new post's
 * mentions (spec 9.2 step 4, 9.3).  The entities it names that got
 * nothing as subscribers are looked up among the followers, then the
 * followings; each gets a job, and one with no relationship a job to its
 * discovered servers for a public post.  The outbox row goes with them.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_domains.h"
#include "ngx_http_tent_blocks.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_fanout.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_remote.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_MENTION_MAX   32


static void ngx_http_tent_delivery_mentioned(ngx_http_tent_store_op_t *op);


/*
 * A new post's mentions (spec 9.2 step 4): the entities it names, but
 * ours, each once, at most NGX_HTTP_TENT_MENTION_MAX of them.  A later
 * version notifies no one again, as in tentd.
 */

ngx_int_t
ngx_http_tent_delivery_mentions(ngx_http_tent_fanout_t *t)
{
    size_t       i;
    json_t      *m;
    ngx_int_t    rc;
    ngx_str_t    entity, *e;
    ngx_uint_t   j;

    if (t->task.post == NULL
        || t->task.entity.data != t->task.ent->entity.data
        || json_integer_value(json_object_get(t->row, "version")) != 1
        || json_array_size(json_object_get(t->task.post, "mentions")) == 0)
    {
        return NGX_OK;
    }

    t->mentioned = ngx_array_create(t->task.pool, 4, sizeof(ngx_str_t));
    if (t->mentioned == NULL) {
        return NGX_ERROR;
    }

    json_array_foreach(json_object_get(t->task.post, "mentions"), i, m) {

        if (ngx_http_tent_json_str(m, "entity", &entity) != NGX_OK
            || ngx_http_tent_entity_eq(&entity, &t->task.ent->entity))
        {
            continue;
        }

        /* looked up by its one spelling, as relationships are kept */

        rc = ngx_http_tent_entity_canonical(t->task.pool, &entity, &entity);
        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }

        /* a blocked entity is not told, even when named */

        if (ngx_http_tent_blocks_has(t->blocks, &entity)
            || ngx_http_tent_domains_entity(&entity))
        {
            continue;
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
            ngx_log_error(NGX_LOG_INFO, t->task.dl->log, 0,
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

void
ngx_http_tent_delivery_got(ngx_http_tent_fanout_t *t, json_t *record)
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

void
ngx_http_tent_delivery_lookup(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_fanout_t *t = op->data;

    ngx_str_t                 *e, key;
    ngx_uint_t                 i;
    ngx_http_tent_store_op_t  *get;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": jobs not written "
                       "(store status %ui): later", &t->task.post_id,
                       op->status);
        ngx_http_tent_task_done(&t->task);     /* the row stays: again later */
        return;
    }

    get = ngx_http_tent_store_op_create(t->task.pool, t->task.dl->log);

    if (get == NULL || ngx_http_tent_store_mget(get) != NGX_OK) {
        ngx_http_tent_task_failed(&t->task, "building the mentions' lookup");
        return;
    }

    e = t->mentioned->elts;

    for (i = 0; i < t->mentioned->nelts; i++) {
        if (ngx_http_tent_key(t->task.pool, &t->task.ent->entity,
                              NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY, &e[i],
                              &key)
            != NGX_OK
            || ngx_http_tent_store_mget_key(get, &key) != NGX_OK
            || ngx_http_tent_key(t->task.pool, &t->task.ent->entity,
                                 NGX_HTTP_TENT_TABLE_FOLLOWING_ENTITY, &e[i],
                                 &key)
               != NGX_OK
            || ngx_http_tent_store_mget_key(get, &key) != NGX_OK)
        {
            ngx_http_tent_task_failed(&t->task,
                                      "building the mentions' lookup");
            return;
        }
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": %ui mentioned entities "
                   "looked up", &t->task.post_id, t->mentioned->nelts);

    ngx_http_tent_task_submit(&t->task, get, ngx_http_tent_delivery_mentioned);
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
    ngx_http_tent_fanout_t *t = op->data;

    ngx_http_tent_job_row_t    jr;
    uint64_t                   now;
    ngx_str_t                  value, id, pid, jid, *e;
    ngx_uint_t                 i, found, n, kind;
    ngx_http_tent_store_op_t  *wop;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": mentions not looked "
                       "up (store status %ui): later", &t->task.post_id,
                       op->status);
        ngx_http_tent_task_done(&t->task);
        return;
    }

    wop = ngx_http_tent_store_op_create(t->task.pool, t->task.dl->log);

    if (wop == NULL
        || ngx_http_tent_store_write(wop, 0) != NGX_OK
        || ngx_http_tent_json_str(t->task.post, "id", &pid) != NGX_OK)
    {
        ngx_http_tent_task_failed(&t->task, "building the mentions' jobs");
        return;
    }

    now = ngx_http_tent_now_ms();
    e = t->mentioned->elts;
    n = 0;

    for (i = 0; i < t->mentioned->nelts; i++) {

        /* 0: no one, 1: a follower, 2: a following */

        kind = 0;

        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            ngx_http_tent_task_failed(&t->task, "reading a mentioned entity's "
                                         "records");
            return;
        }

        if (found) {
            id = value;
            kind = 1;
        }

        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            ngx_http_tent_task_failed(&t->task, "reading a mentioned entity's "
                                         "records");
            return;
        }

        if (found && kind == 0) {
            id = value;
            kind = 2;
        }

        /* no relationship: a public post only, to a discovered server */

        if (kind == 0) {
            if (!json_is_true(json_object_get(json_object_get(t->task.post,
                                                              "permissions"),
                                              "public"))
                || ngx_http_tent_entity_valid(&e[i]) != NGX_OK)
            {
                continue;
            }

            id = e[i];
        }

        jid.len = 2 + id.len + 1 + pid.len + 1 + NGX_INT_T_LEN;
        jid.data = ngx_pnalloc(wop->pool, jid.len);
        if (jid.data == NULL) {
            ngx_http_tent_task_failed(&t->task, "building a job id");
            return;
        }

        jid.len = ngx_sprintf(jid.data, "m%s%V %V %L",
                              kind == 2 ? "F" : (kind == 0 ? "E" : ""),
                              &id, &pid,
                              (int64_t) json_integer_value(
                                  json_object_get(t->row, "version")))
                  - jid.data;

        if (ngx_http_tent_delivery_status_made(t, wop, &jid, NULL, &e[i])
            != NGX_OK)
        {
            ngx_http_tent_task_failed(&t->task, "writing a delivery's status");
            return;
        }

        ngx_memzero(&jr, sizeof(ngx_http_tent_job_row_t));

        jr.kind = (kind == 2) ? NGX_HTTP_TENT_JOB_FOLLOWING
                  : (kind == 0 ? NGX_HTTP_TENT_JOB_ENTITY
                               : NGX_HTTP_TENT_JOB_FOLLOWER);
        jr.mention = 1;
        jr.to = id;
        jr.id = pid;
        jr.version = json_integer_value(json_object_get(t->row, "version"));
        jr.first = now / 1000;

        if (ngx_http_tent_job_new(&t->task, wop, now, &jid, &jr) != NGX_OK) {
            ngx_http_tent_task_done(&t->task);     /* logged there */
            return;
        }

        n++;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": %ui jobs for mentions",
                   &t->task.post_id, n);

    if (ngx_http_tent_store_write_del(wop, &t->task.key) != NGX_OK) {
        ngx_http_tent_task_failed(&t->task,
                                  "building the outbox row's removal");
        return;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": fan-out done, the outbox "
                   "row goes", &t->task.post_id);

    ngx_http_tent_task_submit(&t->task, wop, ngx_http_tent_delivery_written);
}
