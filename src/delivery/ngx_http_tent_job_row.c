
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * A job's row ("j", and a dead letter's "x") and its status row ("D"),
 * binary.  A job's: read and written
 * with no parser and no allocation but the row's own bytes, its kind an
 * enum, not guessed from which JSON keys are there.  Big-endian:
 *
 *   0   1  0x01, the format (a JSON row, of an older version, begins
 *          with "{": still read, ngx_http_tent_job_row_json())
 *   1   1  kind: 1 follower, 2 following, 3 app, 4 an entity with no
 *          relationship (a mention's), 5 an ActivityPub activity (its
 *          "w" row's id the recipient and the post's id)
 *   2   1  flags: 1 a mention
 *   3   1  0
 *   4   4  attempt (the attempts made)
 *   8   4  the last status (a dead letter's; else 0)
 *   12  8  the post's version
 *   20  8  first made (s)
 *   28  8  failed at (s; a dead letter's, else 0)
 *   36     five strings, each a 2-byte length and its bytes: the
 *          recipient (a follower's or a following's id, an
 *          authorization's id, an entity URL), the app (an app's, else
 *          empty), the post's id, the post's entity (a received post's;
 *          empty: ours), the entity whose rows hold the post (a
 *          same-node reference's, tent_same_node_rows index; empty:
 *          ours; a row of four strings, written before, has none)
 *
 * A status row, written for every job made and settled, read by
 * GET /posts/:id/deliveries (ngx_http_tent_delivery_status_record()):
 *
 *   0   1  0x01, the format (a JSON row of the version before: "{")
 *   1   1  state: 0 pending, 1 retrying, 2 failed, 3 delivered
 *   2   1  flags: 1 an error is there
 *   3   1  0
 *   4   4  attempts
 *   8   4  the last status (0: none)
 *   12  8  the last attempt's time (s; -1: none)
 *   20  8  the next attempt's time (s; -1: none)
 *   28     two strings, each a 2-byte length and its bytes: the
 *          recipient's entity, the last error
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_job.h"
#include "ngx_http_tent_json.h"


#define NGX_HTTP_TENT_JOB_ROW_FORMAT  0x01
#define NGX_HTTP_TENT_JOB_ROW_FIXED   36
#define NGX_HTTP_TENT_JOB_ROW_STRMAX  0xffff


static ngx_str_t  ngx_http_tent_status_states[] = {
    ngx_string("pending"),
    ngx_string("retrying"),
    ngx_string("failed"),
    ngx_string("delivered")
};


static ngx_int_t ngx_http_tent_job_row_json(ngx_pool_t *pool,
    ngx_str_t *value, ngx_http_tent_job_row_t *jr);
static u_char *ngx_http_tent_job_row_u64(u_char *p, uint64_t v);
static uint64_t ngx_http_tent_job_row_get64(u_char *p);
static u_char *ngx_http_tent_job_row_str(u_char *p, ngx_str_t *s);


/* the row's bytes, in "pool" (a write's) */

ngx_int_t
ngx_http_tent_job_row_encode(ngx_pool_t *pool, ngx_http_tent_job_row_t *jr,
    ngx_str_t *out)
{
    u_char  *p;

    if (jr->to.len > NGX_HTTP_TENT_JOB_ROW_STRMAX
        || jr->app.len > NGX_HTTP_TENT_JOB_ROW_STRMAX
        || jr->id.len > NGX_HTTP_TENT_JOB_ROW_STRMAX
        || jr->post_entity.len > NGX_HTTP_TENT_JOB_ROW_STRMAX
        || jr->ref_owner.len > NGX_HTTP_TENT_JOB_ROW_STRMAX)
    {
        return NGX_ERROR;
    }

    out->len = NGX_HTTP_TENT_JOB_ROW_FIXED + 10 + jr->to.len + jr->app.len
               + jr->id.len + jr->post_entity.len + jr->ref_owner.len;

    out->data = ngx_pnalloc(pool, out->len);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    p = out->data;

    *p++ = NGX_HTTP_TENT_JOB_ROW_FORMAT;
    *p++ = (u_char) jr->kind;
    *p++ = jr->mention ? 1 : 0;
    *p++ = 0;

    p = ngx_http_tent_job_row_u64(p, ((uint64_t) jr->attempt << 32)
                                     | (uint32_t) jr->status);
    p = ngx_http_tent_job_row_u64(p, (uint64_t) jr->version);
    p = ngx_http_tent_job_row_u64(p, (uint64_t) jr->first);
    p = ngx_http_tent_job_row_u64(p, (uint64_t) jr->failed_at);

    p = ngx_http_tent_job_row_str(p, &jr->to);
    p = ngx_http_tent_job_row_str(p, &jr->app);
    p = ngx_http_tent_job_row_str(p, &jr->id);
    p = ngx_http_tent_job_row_str(p, &jr->post_entity);
    (void) ngx_http_tent_job_row_str(p, &jr->ref_owner);

    return NGX_OK;
}


/*
 * A row read: its strings point into "value", which must outlive "jr".
 * A JSON row of an older version is parsed into "pool", which keeps it.
 * NGX_DECLINED: not a job row (a dead letter, then).
 */

ngx_int_t
ngx_http_tent_job_row_decode(ngx_pool_t *pool, ngx_str_t *value,
    ngx_http_tent_job_row_t *jr)
{
    u_char      *p, *last;
    uint64_t     v;
    ngx_uint_t   i;
    ngx_str_t   *s[5];

    ngx_memzero(jr, sizeof(ngx_http_tent_job_row_t));

    if (value->len && value->data[0] == '{') {
        return ngx_http_tent_job_row_json(pool, value, jr);
    }

    if (value->len < NGX_HTTP_TENT_JOB_ROW_FIXED
        || value->data[0] != NGX_HTTP_TENT_JOB_ROW_FORMAT
        || value->data[1] < NGX_HTTP_TENT_JOB_FOLLOWER
        || value->data[1] > NGX_HTTP_TENT_JOB_SHARED)
    {
        return NGX_DECLINED;
    }

    p = value->data;
    last = p + value->len;

    jr->kind = p[1];
    jr->mention = (p[2] & 1);

    v = ngx_http_tent_job_row_get64(p + 4);
    jr->attempt = (ngx_int_t) (v >> 32);
    jr->status = (ngx_uint_t) (v & 0xffffffff);
    jr->version = (int64_t) ngx_http_tent_job_row_get64(p + 12);
    jr->first = (int64_t) ngx_http_tent_job_row_get64(p + 20);
    jr->failed_at = (int64_t) ngx_http_tent_job_row_get64(p + 28);

    p += NGX_HTTP_TENT_JOB_ROW_FIXED;

    s[0] = &jr->to;
    s[1] = &jr->app;
    s[2] = &jr->id;
    s[3] = &jr->post_entity;
    s[4] = &jr->ref_owner;

    for (i = 0; i < 5; i++) {

        /* a row written before the reference's owner: none */

        if (i == 4 && p == last) {
            break;
        }

        if (last - p < 2) {
            return NGX_DECLINED;
        }

        s[i]->len = ((size_t) p[0] << 8) | p[1];
        p += 2;

        if ((size_t) (last - p) < s[i]->len) {
            return NGX_DECLINED;
        }

        s[i]->data = p;
        p += s[i]->len;
    }

    if (jr->to.len == 0 || jr->id.len == 0
        || (jr->kind == NGX_HTTP_TENT_JOB_APP && jr->app.len == 0))
    {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * A row of the version before (JSON): {"follower"|"following"|"entity"
 * |"subscription" and "app", "id", "version", "attempt", "first",
 * "mention", "post_entity", "l" (a same-node reference's)}, so a store
 * written before the upgrade still delivers.  Never written now.
 */

static ngx_int_t
ngx_http_tent_job_row_json(ngx_pool_t *pool, ngx_str_t *value,
    ngx_http_tent_job_row_t *jr)
{
    json_t  *job;

    job = ngx_http_tent_json_parse(value, ngx_cycle->log);

    if (job == NULL || ngx_http_tent_json_cleanup(pool, job) != NGX_OK) {
        json_decref(job);
        return NGX_DECLINED;
    }

    if (ngx_http_tent_json_str(job, "subscription", &jr->to) == NGX_OK) {
        jr->kind = NGX_HTTP_TENT_JOB_APP;

        if (ngx_http_tent_json_str(job, "app", &jr->app) != NGX_OK) {
            return NGX_DECLINED;
        }

    } else if (ngx_http_tent_json_str(job, "following", &jr->to) == NGX_OK) {
        jr->kind = NGX_HTTP_TENT_JOB_FOLLOWING;

    } else if (ngx_http_tent_json_str(job, "follower", &jr->to) == NGX_OK) {
        jr->kind = NGX_HTTP_TENT_JOB_FOLLOWER;

    } else if (ngx_http_tent_json_str(job, "entity", &jr->to) == NGX_OK) {
        jr->kind = NGX_HTTP_TENT_JOB_ENTITY;

    } else {
        return NGX_DECLINED;
    }

    if (ngx_http_tent_json_str(job, "id", &jr->id) != NGX_OK) {
        return NGX_DECLINED;
    }

    (void) ngx_http_tent_json_str(job, "post_entity", &jr->post_entity);
    (void) ngx_http_tent_json_str(job, "l", &jr->ref_owner);

    jr->mention = json_is_true(json_object_get(job, "mention"));
    jr->version = json_integer_value(json_object_get(job, "version"));
    jr->attempt = json_integer_value(json_object_get(job, "attempt"));
    jr->first = json_integer_value(json_object_get(job, "first"));

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "tent delivery: a JSON job row of \"%V\" read", &jr->id);

    return NGX_OK;
}


/*
 * A status row's bytes: "last" and "next" -1 for none, "status" 0, and
 * "error" NULL.
 */

ngx_int_t
ngx_http_tent_status_row_encode(ngx_pool_t *pool, ngx_str_t *entity,
    const char *state, ngx_int_t attempts, ngx_uint_t status,
    const char *error, time_t last, time_t next, ngx_str_t *out)
{
    u_char      *p;
    ngx_str_t    e;
    ngx_uint_t   i;

    for (i = 0; i < 4; i++) {
        if (ngx_strcmp(ngx_http_tent_status_states[i].data, state) == 0) {
            break;
        }
    }

    e.data = (u_char *) error;
    e.len = error ? ngx_min(ngx_strlen(error), NGX_HTTP_TENT_JOB_ROW_STRMAX)
                  : 0;

    if (i == 4 || entity->len > NGX_HTTP_TENT_JOB_ROW_STRMAX) {
        return NGX_ERROR;
    }

    out->len = 28 + 4 + entity->len + e.len;
    out->data = ngx_pnalloc(pool, out->len);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    p = out->data;

    *p++ = NGX_HTTP_TENT_JOB_ROW_FORMAT;
    *p++ = (u_char) i;
    *p++ = error ? 1 : 0;
    *p++ = 0;

    p = ngx_http_tent_job_row_u64(p, ((uint64_t) attempts << 32)
                                     | (uint32_t) status);
    p = ngx_http_tent_job_row_u64(p, (uint64_t) (int64_t) last);
    p = ngx_http_tent_job_row_u64(p, (uint64_t) (int64_t) next);
    p = ngx_http_tent_job_row_str(p, entity);
    (void) ngx_http_tent_job_row_str(p, &e);

    return NGX_OK;
}


/*
 * A status row as the route shows it: {"entity", "state", "attempts",
 * "last_status", "last_error", "last_attempt_at", "next_attempt_at"},
 * nulls for none; a JSON row of the version before as it is.  NULL: not
 * one (logged).
 */

json_t *
ngx_http_tent_delivery_status_record(ngx_str_t *value, ngx_log_t *log)
{
    u_char      *p, *last;
    int64_t      at, next;
    uint64_t     v;
    ngx_str_t    s[2];
    ngx_uint_t   i;

    if (value->len && value->data[0] == '{') {
        return ngx_http_tent_json_parse(value, log);
    }

    if (value->len < 28
        || value->data[0] != NGX_HTTP_TENT_JOB_ROW_FORMAT
        || value->data[1] > 3)
    {
        goto bad;
    }

    p = value->data + 28;
    last = value->data + value->len;

    for (i = 0; i < 2; i++) {
        if (last - p < 2) {
            goto bad;
        }

        s[i].len = ((size_t) p[0] << 8) | p[1];
        p += 2;

        if ((size_t) (last - p) < s[i].len) {
            goto bad;
        }

        s[i].data = p;
        p += s[i].len;
    }

    v = ngx_http_tent_job_row_get64(value->data + 4);
    at = (int64_t) ngx_http_tent_job_row_get64(value->data + 12);
    next = (int64_t) ngx_http_tent_job_row_get64(value->data + 20);

    return json_pack("{s:s%, s:s, s:I, s:o, s:o, s:o, s:o}",
                     "entity", (char *) s[0].data, s[0].len,
                     "state",
                     ngx_http_tent_status_states[value->data[1]].data,
                     "attempts", (json_int_t) (v >> 32),
                     "last_status", (v & 0xffffffff)
                                    ? json_integer(v & 0xffffffff)
                                    : json_null(),
                     "last_error", (value->data[2] & 1)
                                   ? json_stringn(
                                         (char *) s[1].data, s[1].len)
                                   : json_null(),
                     "last_attempt_at", at >= 0 ? json_integer(at)
                                                : json_null(),
                     "next_attempt_at", next >= 0 ? json_integer(next)
                                                  : json_null());

bad:

    ngx_log_error(NGX_LOG_WARN, log, 0,
                  "tent deliveries: a status row not understood");

    return NULL;
}


static u_char *
ngx_http_tent_job_row_u64(u_char *p, uint64_t v)
{
    ngx_uint_t  i;

    for (i = 0; i < 8; i++) {
        p[i] = (u_char) (v >> (56 - 8 * i));
    }

    return p + 8;
}


static uint64_t
ngx_http_tent_job_row_get64(u_char *p)
{
    uint64_t    v;
    ngx_uint_t  i;

    v = 0;

    for (i = 0; i < 8; i++) {
        v = (v << 8) | p[i];
    }

    return v;
}


static u_char *
ngx_http_tent_job_row_str(u_char *p, ngx_str_t *s)
{
    *p++ = (u_char) (s->len >> 8);
    *p++ = (u_char) (s->len & 0xff);

    /* an empty string may have no bytes at all: memcpy takes no NULL */

    return s->len ? ngx_cpymem(p, s->data, s->len) : p;
}
