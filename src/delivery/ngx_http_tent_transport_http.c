
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The HTTP transport (Tent, spec 9.2-9.3): it carries every job no other
 * transport claimed.  The post as the receiver may see it (the body
 * rendered once a batch), POSTed to the receiver's servers in order: a
 * follower's notification path, signed with the follower row's
 * credential; "posts" for a following, signed, and for a mentioned
 * entity with no relationship, unsigned; an app's notification URL,
 * signed with its u: key.  A host full or paused takes the next server,
 * or puts the job back (ngx_http_tent_hosts.c).  The answer settles it
 * (ngx_http_tent_send.c): 2xx delivered; 400, 401, 403, 404, 410 or a
 * blocked domain refused; else the next server, after the last retried.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_job.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_remote.h"
#include "ngx_http_tent_store.h"


static ngx_int_t ngx_http_tent_http_claim(ngx_http_tent_job_t *t);
static void ngx_http_tent_http_send(ngx_http_tent_job_t *t);
static void ngx_http_tent_http_sent(ngx_http_tent_fetch_t *f);
static void ngx_http_tent_http_answer(ngx_http_tent_fetch_t *f);
static ngx_uint_t ngx_http_tent_http_more(ngx_http_tent_job_t *t);
static ngx_int_t ngx_http_tent_http_request_body(ngx_http_tent_job_t *t,
    json_t *sub, ngx_str_t *out);
static ngx_int_t ngx_http_tent_http_body_cached(ngx_http_tent_job_t *t,
    ngx_uint_t kind, ngx_pool_t *pool, ngx_str_t *out);
static void ngx_http_tent_http_body_keep(ngx_http_tent_job_t *t,
    ngx_uint_t kind, ngx_str_t *body);
static void ngx_http_tent_http_bodies_free(void *data);


/*
 * The bodies rendered, kept past their batch: a fan-out's batches share
 * the post's parse (ngx_http_tent_record_parse), so a body rendered by
 * one batch is copied by the next, not rendered again (a deep copy and
 * a dump a batch: 3% of a delivery's CPU).  By the parse itself, a
 * reference held (its address is not reused while kept), the last
 * NGX_HTTP_TENT_BODIES of them, each of at most NGX_HTTP_TENT_BODY_MAX
 * bytes: at most 8 x 3 x 16 KB.
 */
#define NGX_HTTP_TENT_BODIES     8
#define NGX_HTTP_TENT_BODY_MAX   16384

typedef struct {
    json_t                           *post;
    ngx_str_t                         body[3];    /* by kind of receiver */
} ngx_http_tent_body_slot_t;

static ngx_http_tent_body_slot_t  *ngx_http_tent_bodies;
static ngx_uint_t                  ngx_http_tent_bodies_next;


ngx_http_tent_transport_t  ngx_http_tent_transport_http = {
    "http",
    ngx_http_tent_http_claim,
    ngx_http_tent_http_send
};


/* any job: the last transport asked, and one that carries all */

static ngx_int_t
ngx_http_tent_http_claim(ngx_http_tent_job_t *t)
{
    t->server = 0;

    return NGX_OK;
}


/*
 * The post as a follower sees it; an app (a subscription) sees when we
 * received it too, and with read_permissions whom it is for, as on
 * GET /posts.
 */

json_t *
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


/*
 * The request's body: rendered once a batch for each kind of receiver
 * (a relationship; an app; an app with read_permissions), in the
 * batch's pool, and shared by the batch's jobs of that post.
 */

static ngx_int_t
ngx_http_tent_http_request_body(ngx_http_tent_job_t *t, json_t *sub,
    ngx_str_t *out)
{
    json_t      *body;
    ngx_str_t   *cached;
    ngx_uint_t   kind;
    ngx_pool_t  *pool;

    cached = NULL;
    pool = t->task.pool;
    kind = sub == NULL
           ? 0
           : (ngx_http_tent_delivery_scope(sub, "read_permissions") ? 2 : 1);

    if (t->bpost) {
        cached = &t->bpost->body[kind];

        if (cached->data) {
            *out = *cached;
            return NGX_OK;
        }

        pool = t->batch->pool;

        if (ngx_http_tent_http_body_cached(t, kind, pool, out) == NGX_OK) {
            *cached = *out;
            return NGX_OK;
        }
    }

    body = ngx_http_tent_delivery_body(t->task.post, sub);

    if (body == NULL
        || ngx_http_tent_json_cleanup(pool, body) != NGX_OK
        || ngx_http_tent_json_dump(pool, body, out) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": rendered, %uz bytes",
                   &t->task.post_id, out->len);

    if (cached) {
        *cached = *out;
        ngx_http_tent_http_body_keep(t, kind, out);
    }

    return NGX_OK;
}


/* the body of this parse of the post, kept by an earlier batch: copied */

static ngx_int_t
ngx_http_tent_http_body_cached(ngx_http_tent_job_t *t, ngx_uint_t kind,
    ngx_pool_t *pool, ngx_str_t *out)
{
    ngx_uint_t                  i;
    ngx_http_tent_body_slot_t  *b;

    if (ngx_http_tent_bodies == NULL) {
        return NGX_DECLINED;
    }

    for (i = 0; i < NGX_HTTP_TENT_BODIES; i++) {
        b = &ngx_http_tent_bodies[i];

        if (b->post != t->task.post || b->body[kind].data == NULL) {
            continue;
        }

        out->data = ngx_pnalloc(pool, b->body[kind].len);
        if (out->data == NULL) {
            return NGX_ERROR;
        }

        out->len = b->body[kind].len;
        ngx_memcpy(out->data, b->body[kind].data, out->len);

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": rendered already, "
                       "%uz bytes", &t->task.post_id, out->len);

        return NGX_OK;
    }

    return NGX_DECLINED;
}


/* a body rendered, kept for the next batches of the same parse */

static void
ngx_http_tent_http_body_keep(ngx_http_tent_job_t *t, ngx_uint_t kind,
    ngx_str_t *body)
{
    u_char                     *p;
    ngx_uint_t                  i, k;
    ngx_pool_cleanup_t         *cln;
    ngx_http_tent_body_slot_t  *b;

    if (body->len == 0 || body->len > NGX_HTTP_TENT_BODY_MAX) {
        return;
    }

    if (ngx_http_tent_bodies == NULL) {
        cln = ngx_pool_cleanup_add(ngx_cycle->pool, 0);
        if (cln == NULL) {
            return;
        }

        ngx_http_tent_bodies = ngx_calloc(NGX_HTTP_TENT_BODIES
                                          * sizeof(ngx_http_tent_body_slot_t),
                                          t->task.dl->log);
        if (ngx_http_tent_bodies == NULL) {
            return;
        }

        cln->handler = ngx_http_tent_http_bodies_free;
        cln->data = NULL;
    }

    b = NULL;

    for (i = 0; i < NGX_HTTP_TENT_BODIES; i++) {
        if (ngx_http_tent_bodies[i].post == t->task.post) {
            b = &ngx_http_tent_bodies[i];
            break;
        }
    }

    if (b == NULL) {
        b = &ngx_http_tent_bodies[ngx_http_tent_bodies_next++
                                  % NGX_HTTP_TENT_BODIES];

        if (b->post) {
            json_decref(b->post);

            for (k = 0; k < 3; k++) {
                ngx_free(b->body[k].data);
            }
        }

        ngx_memzero(b, sizeof(ngx_http_tent_body_slot_t));
        b->post = json_incref(t->task.post);
    }

    if (b->body[kind].data) {
        return;
    }

    p = ngx_alloc(body->len, t->task.dl->log);
    if (p == NULL) {
        return;
    }

    ngx_memcpy(p, body->data, body->len);
    b->body[kind].data = p;
    b->body[kind].len = body->len;
}


static void
ngx_http_tent_http_bodies_free(void *data)
{
    ngx_uint_t  i, k;

    if (ngx_http_tent_bodies == NULL) {
        return;
    }

    for (i = 0; i < NGX_HTTP_TENT_BODIES; i++) {
        if (ngx_http_tent_bodies[i].post) {
            json_decref(ngx_http_tent_bodies[i].post);

            for (k = 0; k < 3; k++) {
                ngx_free(ngx_http_tent_bodies[i].body[k].data);
            }
        }
    }

    ngx_free(ngx_http_tent_bodies);
    ngx_http_tent_bodies = NULL;
}


static void
ngx_http_tent_http_send(ngx_http_tent_job_t *t)
{
    ngx_str_t               url;
    ngx_http_tent_fetch_t  *f;

    /* an app: its absolute notification URL, signed with its u: key */

    if (t->row.kind == NGX_HTTP_TENT_JOB_APP) {
        if (ngx_http_tent_json_str(t->follower, "notification_url", &url)
            != NGX_OK)
        {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                           "tent delivery: post \"%V\": the app has no "
                           "notification URL", &t->task.post_id);
            ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_REFUSED);
            return;
        }

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": attempt %i, to the "
                       "app's notification URL", &t->task.post_id,
                       t->row.attempt);

        goto send;
    }

    switch (ngx_http_tent_delivery_url(t, t->server, &url)) {

    case NGX_OK:
        break;

    case NGX_DECLINED:
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": no server %ui or no "
                       "path to send to", &t->task.post_id, t->server + 1);
        ngx_http_tent_delivery_settle(t, t->server ? NGX_HTTP_TENT_RETRY
                                                   : NGX_HTTP_TENT_REFUSED);
        return;

    default:
        ngx_http_tent_task_failed(&t->task, "building the server's URL");
        return;
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": attempt %i, to server %ui "
                   "of %uz", &t->task.post_id,
                   t->row.attempt,
                   t->server + 1,
                   json_array_size(json_object_get(t->follower, "servers")));

send:

    /* its host may be full (later) or paused (its next server, or later) */

    switch (ngx_http_tent_host_gate(t, &url)) {

    case NGX_OK:
        break;

    case NGX_DECLINED:
        if (ngx_http_tent_http_more(t)) {
            t->server++;
            ngx_http_tent_http_send(t);
            return;
        }

        ngx_http_tent_host_wait(t);
        return;

    default:
        return;
    }

    f = ngx_http_tent_fetch_create(t->task.pool, t->task.dl->log,
                                   &t->task.ent->scf->outbound);

    if (f == NULL
        || ngx_http_tent_http_request_body(t,
                                       t->row.kind == NGX_HTTP_TENT_JOB_APP
                                       ? t->follower : NULL,
                                       &f->request_body)
           != NGX_OK)
    {
        ngx_http_tent_task_failed(&t->task, "building the request");
        return;
    }

    if (!t->stranger && ngx_http_tent_remote_sign(f, t->follower) != NGX_OK) {
        ngx_http_tent_task_failed(&t->task, "signing the request");
        return;
    }

    ngx_http_tent_delivery_post(t, f, &url, NGX_HTTP_TENT_MEDIA_TYPE,
                                ngx_http_tent_http_sent);
}


/* a next server, of the first few only (a row may be older than the cap) */

static ngx_uint_t
ngx_http_tent_http_more(ngx_http_tent_job_t *t)
{
    json_t  *servers;

    servers = json_object_get(t->follower, "servers");

    return t->server + 1 < ngx_http_tent_servers_max(servers,
                                               &t->task.ent->scf->outbound)
           && json_is_string(json_array_get(servers, t->server + 1));
}


/*
 * The answer, then its buffers given back: the task's pool is its
 * batch's, which lives until the batch's last job ends.
 */

static void
ngx_http_tent_http_sent(ngx_http_tent_fetch_t *f)
{
    ngx_http_tent_http_answer(f);
    ngx_http_tent_fetch_release(f);
}


static void
ngx_http_tent_http_answer(ngx_http_tent_fetch_t *f)
{
    ngx_http_tent_job_t *t = f->data;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: answer from %V: %s, status %ui",
                   &f->url, ngx_http_tent_fetch_strerror(f->result),
                   f->status);

    ngx_http_tent_host_outcome(t, f);
    ngx_http_tent_delivery_status_answer(t, f);

    if (f->result == NGX_HTTP_TENT_FETCH_OK
        && f->status >= 200 && f->status <= 299)
    {
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_DELIVERED);
        return;
    }

    /* a domain the operator blocked: a dead letter, never retried */

    if (f->result == NGX_HTTP_TENT_FETCH_BLOCKED) {
        t->status = NGX_HTTP_FORBIDDEN;
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_REFUSED);
        return;
    }

    if (f->result == NGX_HTTP_TENT_FETCH_OK
        && (f->status == 400 || f->status == 401 || f->status == 403
            || f->status == 404 || f->status == 410))
    {
        ngx_log_error(NGX_LOG_WARN, t->task.dl->log, 0,
                      "tent delivery: %V refused the post (%ui): "
                      "not retried", &f->url, f->status);
        t->status = f->status;
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_REFUSED);
        return;
    }

    ngx_log_error(NGX_LOG_INFO, t->task.dl->log, 0,
                  "tent delivery: POST %V: %s, status %ui", &f->url,
                  ngx_http_tent_fetch_strerror(f->result), f->status);

    /*
     * The follower's next server, at once, of the first few only (a row
     * may be older than the cap); after the last, later
     */

    if (ngx_http_tent_fetch_next_server(f) && ngx_http_tent_http_more(t)) {
        t->server++;
        ngx_http_tent_http_send(t);
        return;
    }

    ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_RETRY);
}
