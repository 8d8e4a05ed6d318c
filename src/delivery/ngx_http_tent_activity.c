
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * ActivityPub activities that are no post of ours (issue #29): an
 * Accept, a Follow, an Undo, an Update of the actor, queued by the inbox
 * and the followings into their own write, sent by the engine's
 * ActivityPub transport (ngx_http_tent_transport_ap.c) and retried as
 * any job.  Three rows in the caller's write:
 *
 *   w <id>                  {"activity", "inbox", "created_at"}
 *   j <due ms> w<id>        a job of kind "activity" (its recipient <id>)
 *   o <µs> w<id>            {"activity": true}: a wake-up
 *
 * The job row is put by a request, not by the engine, so the engine's
 * due index (ngx_http_tent_queue.c) does not know it: the outbox row's
 * write marks the entity's outbox as any post's does, and the outbox
 * pass, finding a wake-up, lowers the entity's due cursor to it, kicks
 * the due pass and removes the row.  The "w" row goes when the job
 * settles for good (ngx_http_tent_send.c).
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_job.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"


/* what one activity may hold: the inbox will take what peers send */
#define NGX_HTTP_TENT_ACTIVITY_MAX   (64 * 1024)
#define NGX_HTTP_TENT_INBOX_MAX      2048


ngx_int_t
ngx_http_tent_delivery_activity(ngx_pool_t *pool, ngx_str_t *owner,
    ngx_http_tent_store_op_t *op, json_t *activity, ngx_str_t *inbox)
{
    u_char                   *p;
    json_t                   *row;
    uint64_t                  us;
    ngx_str_t                 id, jid, key, value, wake;
    ngx_http_tent_job_row_t   jr;

    if (!json_is_object(activity)
        || inbox->len == 0 || inbox->len > NGX_HTTP_TENT_INBOX_MAX
        || !((inbox->len > 7
              && ngx_strncasecmp(inbox->data, (u_char *) "http://", 7) == 0)
             || (inbox->len > 8
                 && ngx_strncasecmp(inbox->data, (u_char *) "https://", 8)
                    == 0)))
    {
        return NGX_DECLINED;
    }

    /* an id that sorts by creation: µs, then random */

    us = ngx_http_tent_now_us();

    if (ngx_http_tent_random_hex(pool, 8, &id) != NGX_OK) {
        return NGX_ERROR;
    }

    p = ngx_pnalloc(pool, 16 + id.len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    id.len = ngx_sprintf(p, "%016xL%V", us, &id) - p;
    id.data = p;

    jid.len = 1 + id.len;
    jid.data = ngx_pnalloc(pool, jid.len);
    if (jid.data == NULL) {
        return NGX_ERROR;
    }

    jid.data[0] = 'w';
    ngx_memcpy(jid.data + 1, id.data, id.len);

    /* the activity and its inbox */

    row = json_pack("{s:O, s:o, s:I}", "activity", activity,
                    "inbox", ngx_http_tent_json_string(inbox),
                    "created_at", (json_int_t) ngx_time());

    if (row == NULL || ngx_http_tent_json_cleanup(pool, row) != NGX_OK) {
        json_decref(row);
        return NGX_ERROR;
    }

    if (ngx_http_tent_json_dump(pool, row, &value) != NGX_OK) {
        return NGX_ERROR;
    }

    if (value.len > NGX_HTTP_TENT_ACTIVITY_MAX) {
        return NGX_DECLINED;
    }

    if (ngx_http_tent_key(pool, owner, NGX_HTTP_TENT_TABLE_AP_ACTIVITY, &id,
                          &key)
        != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* its job, due now */

    ngx_memzero(&jr, sizeof(ngx_http_tent_job_row_t));
    jr.kind = NGX_HTTP_TENT_JOB_ACTIVITY;
    jr.to = id;
    jr.id = jid;
    jr.first = ngx_time();

    if (ngx_http_tent_timed_key(pool, owner, NGX_HTTP_TENT_TABLE_JOB,
                                us / 1000, &jid, &key)
        != NGX_OK
        || ngx_http_tent_job_row_encode(pool, &jr, &value) != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* the wake-up: its write marks the outbox, the engine comes */

    ngx_str_set(&wake, "{\"activity\":true}");

    if (ngx_http_tent_timed_key(pool, owner, NGX_HTTP_TENT_TABLE_OUTBOX, us,
                                &jid, &key)
        != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &wake) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, pool->log, 0,
                   "tent activity \"%V\" of \"%V\" queued for %V",
                   &id, owner, inbox);

    return NGX_OK;
}
