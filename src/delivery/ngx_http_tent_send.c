
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Sending a delivery job: a due job, with its record (a follower, a
 * following, an app's subscription, or a mentioned entity discovered
 * anew) and its post read again with its batch
 * (ngx_http_tent_delivery_load.c), POSTed as the receiver may see it (the
 * body rendered once a batch), signed, to its servers in order; then
 * settled: removed on 2xx, a dead letter on a final refusal or after the
 * last attempt, else put back with an exponential, jittered delay, in a
 * batch of settlements (ngx_http_tent_settle.c).
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_module.h"
#include "ngx_http_tent_domains.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_remote.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


static void ngx_http_tent_delivery_stranger(ngx_http_tent_task_t *t);
static void ngx_http_tent_delivery_discovered(ngx_http_tent_discover_t *d);
static void ngx_http_tent_delivery_send(ngx_http_tent_task_t *t);
static void ngx_http_tent_delivery_sent(ngx_http_tent_fetch_t *f);
static void ngx_http_tent_delivery_answer(ngx_http_tent_fetch_t *f);
static ngx_int_t ngx_http_tent_delivery_request_body(ngx_http_tent_task_t *t,
    json_t *sub, ngx_str_t *out);


/* the key of the record a job goes to; none for a stranger */

ngx_int_t
ngx_http_tent_delivery_record_key(ngx_http_tent_task_t *t, json_t *job,
    ngx_str_t *key)
{
    ngx_str_t  id, app;

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

    return ngx_http_tent_pair_key(t->pool, &t->ent->entity,
                                  NGX_HTTP_TENT_TABLE_SUBSCRIPTION, &app, &id,
                                  key);
}


/*
 * A due job read with its batch (ngx_http_tent_delivery_load.c): its
 * post in t->post (NULL: deleted), shared with the batch's other jobs,
 * and its record's row (NULL: gone; none for a stranger).
 */

void
ngx_http_tent_delivery_loaded(ngx_http_tent_task_t *t, ngx_str_t *record)
{
    /* one attempt, discovery and every server tried, has one deadline */

    t->deadline = ngx_current_msec + t->ent->scf->outbound.deadline;

    if (t->stranger) {
        ngx_http_tent_delivery_stranger(t);
        return;
    }

    /* a follower gone, or a post deleted: nothing to send */

    if (record == NULL
        || t->post == NULL
        || (t->follower = ngx_http_tent_record_parse(t->dl->log,
                                                     &t->record_key, record))
           == NULL
        || ngx_http_tent_json_cleanup(t->pool, t->follower) != NGX_OK)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                       "tent delivery: post \"%V\": its receiver or the "
                       "post is gone: nothing to send", &t->post_id);
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_DELIVERED);
        return;
    }

    /* an app's authorization that has expired is told nothing more */

    if (json_is_integer(json_object_get(t->follower, "expires_at"))
        && json_integer_value(json_object_get(t->follower, "expires_at"))
           <= ngx_time())
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                       "tent delivery: post \"%V\": the app's "
                       "authorization has expired", &t->post_id);
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_DELIVERED);
        return;
    }

    /*
     * A relationship's job goes only where the post may be read as it is
     * now: the job reads the post's latest version, and a post made
     * private, or a group left, after its fan-out is not sent to an
     * entity it no longer names.  (An app's subscription sees what its
     * authorization lets it.)
     */

    if (json_object_get(t->job, "subscription") == NULL
        && (!ngx_http_tent_delivery_permitted(t->post, t->follower)
            || (json_is_true(json_object_get(t->job, "mention"))
                && json_object_get(t->job, "following")
                && !json_is_true(json_object_get(t->follower,
                                                 "confirmed")))))
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                       "tent delivery: post \"%V\": not for this entity "
                       "as it is now: nothing sent", &t->post_id);
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
ngx_http_tent_delivery_stranger(ngx_http_tent_task_t *t)
{
    ngx_str_t  entity;

    if (t->post == NULL
        || !json_is_true(json_object_get(json_object_get(t->post,
                                                         "permissions"),
                                         "public"))
        || ngx_http_tent_json_str(t->job, "entity", &entity) != NGX_OK)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                       "tent delivery: post \"%V\": gone or no longer "
                       "public: no mention", &t->post_id);
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_DELIVERED);
        return;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                   "tent delivery: post \"%V\": discovering \"%V\" for "
                   "a mention", &t->post_id, &entity);

    if (ngx_http_tent_discover_start(t->pool, t->dl->log,
                                     &t->ent->scf->outbound, &entity,
                                     t->deadline,
                                     ngx_http_tent_delivery_discovered, t)
        != NGX_OK)
    {
        ngx_http_tent_task_done(t);     /* discovery logs its failure */
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
        ngx_http_tent_task_failed(t, "keeping the discovered servers");
        return;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                   "tent delivery: post \"%V\": \"%V\" discovered, "
                   "%uz servers", &t->post_id, &entity,
                   json_array_size(d->servers));

    t->server = 0;

    ngx_http_tent_delivery_send(t);
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
ngx_http_tent_delivery_request_body(ngx_http_tent_task_t *t, json_t *sub,
    ngx_str_t *out)
{
    json_t      *body;
    ngx_str_t   *cached;
    ngx_pool_t  *pool;

    cached = NULL;
    pool = t->pool;

    if (t->bpost) {
        cached = &t->bpost->body[sub == NULL
                                 ? 0
                                 : (ngx_http_tent_delivery_scope(sub,
                                                        "read_permissions")
                                    ? 2 : 1)];

        if (cached->data) {
            *out = *cached;
            return NGX_OK;
        }

        pool = t->batch->pool;
    }

    body = ngx_http_tent_delivery_body(t->post, sub);

    if (body == NULL
        || ngx_http_tent_json_cleanup(pool, body) != NGX_OK
        || ngx_http_tent_json_dump(pool, body, out) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                   "tent delivery: post \"%V\": rendered, %uz bytes",
                   &t->post_id, out->len);

    if (cached) {
        *cached = *out;
    }

    return NGX_OK;
}


/*
 * The same job over HTTP after all: a URL of a fixed entity of this
 * nginx whose rows are not in this store (a node behind a front that
 * routes names to nodes has blocks for names other nodes serve).
 */

void
ngx_http_tent_delivery_over_http(ngx_http_tent_task_t *t)
{
    t->no_local = 1;
    ngx_http_tent_delivery_send(t);
}


static void
ngx_http_tent_delivery_send(ngx_http_tent_task_t *t)
{
    json_t                 *server, *servers;
    ngx_str_t               path, url, entity;
    ngx_http_tent_fetch_t  *f;

    /* an app: its absolute notification URL, signed with its u: key */

    if (json_object_get(t->job, "subscription")) {
        if (ngx_http_tent_json_str(t->follower, "notification_url", &url)
            != NGX_OK)
        {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                           "tent delivery: post \"%V\": the app has no "
                           "notification URL", &t->post_id);
            ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_REFUSED);
            return;
        }

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                       "tent delivery: post \"%V\": attempt %i, to the "
                       "app's notification URL", &t->post_id,
                       (ngx_int_t) json_integer_value(
                                       json_object_get(t->job, "attempt")));

        goto send;
    }

    /*
     * An entity of a domain the operator blocked, wherever its servers
     * are: a dead letter, never retried (the fetch refuses its hosts)
     */

    if ((ngx_http_tent_json_str(t->follower, "entity", &entity) == NGX_OK
         && ngx_http_tent_domains_entity(&entity))
        || (ngx_http_tent_json_str(t->job, "entity", &entity) == NGX_OK
            && ngx_http_tent_domains_entity(&entity)))
    {
        ngx_log_error(NGX_LOG_INFO, t->dl->log, 0,
                      "tent delivery: \"%V\" is of a blocked domain: "
                      "not sent", &entity);
        t->status = NGX_HTTP_FORBIDDEN;
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_REFUSED);
        return;
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
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                       "tent delivery: post \"%V\": no server %ui or no "
                       "path to send to", &t->post_id, t->server + 1);
        ngx_http_tent_delivery_settle(t, t->server ? NGX_HTTP_TENT_RETRY
                                                   : NGX_HTTP_TENT_REFUSED);
        return;
    }

    if (ngx_http_tent_server_url(t->pool, server, &path, NULL, &url)
        != NGX_OK)
    {
        ngx_http_tent_task_failed(t, "building the server's URL");
        return;
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                   "tent delivery: post \"%V\": attempt %i, to server %ui "
                   "of %uz", &t->post_id,
                   (ngx_int_t) json_integer_value(
                                   json_object_get(t->job, "attempt")),
                   t->server + 1,
                   json_array_size(json_object_get(t->follower, "servers")));

    /* a receiver of this nginx and its store: written, no HTTP */

    if (ngx_http_tent_local_send(t, &url) != NGX_DECLINED) {
        return;
    }

send:

    /* its host may be full (later) or paused (its next server, or later) */

    switch (ngx_http_tent_host_gate(t, &url)) {

    case NGX_OK:
        break;

    case NGX_DECLINED:
        servers = json_object_get(t->follower, "servers");

        if (t->server + 1 < ngx_http_tent_servers_max(servers,
                                                      &t->ent->scf->outbound)
            && json_is_string(json_array_get(servers, t->server + 1)))
        {
            t->server++;
            ngx_http_tent_delivery_send(t);
            return;
        }

        ngx_http_tent_host_wait(t);
        return;

    default:
        return;
    }

    f = ngx_http_tent_fetch_create(t->pool, t->dl->log, &t->ent->scf->outbound);

    if (f == NULL
        || ngx_http_tent_delivery_request_body(t,
                                       json_object_get(t->job, "subscription")
                                       ? t->follower : NULL,
                                       &f->request_body)
           != NGX_OK)
    {
        ngx_http_tent_task_failed(t, "building the request");
        return;
    }

    if (!t->stranger && ngx_http_tent_remote_sign(f, t->follower) != NGX_OK) {
        ngx_http_tent_task_failed(t, "signing the request");
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
    f->resend = 1;                 /* deliveries are at-least-once */

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                   "tent delivery: job sent: post \"%V\" to %V",
                   &t->post_id, &url);

    if (ngx_http_tent_fetch_start(f) != NGX_OK) {
        ngx_http_tent_task_failed(t, "starting the request");
    }
}


/*
 * The answer, then its buffers given back: the task's pool is its
 * batch's, which lives until the batch's last job ends.
 */

static void
ngx_http_tent_delivery_sent(ngx_http_tent_fetch_t *f)
{
    ngx_http_tent_delivery_answer(f);
    ngx_http_tent_fetch_release(f);
}


static void
ngx_http_tent_delivery_answer(ngx_http_tent_fetch_t *f)
{
    ngx_http_tent_task_t *t = f->data;

    json_t  *servers;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
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

void
ngx_http_tent_delivery_settle(ngx_http_tent_task_t *t, ngx_uint_t outcome)
{
    ngx_http_tent_store_op_t  *wop;

    wop = ngx_http_tent_delivery_settlement(t, outcome);

    if (wop) {
        ngx_http_tent_settle_add(t, wop);
    }
}


/*
 * The job's settlement as a write, not submitted: NULL when building it
 * failed (the task is over then, logged).  Same-node batches append it
 * to their own write (ngx_http_tent_local_write.c).
 */

ngx_http_tent_store_op_t *
ngx_http_tent_delivery_settlement(ngx_http_tent_task_t *t,
    ngx_uint_t outcome)
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
        ngx_http_tent_task_failed(t, "building the job's settlement");
        return NULL;
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

    /* the job's id: the key without its due time */

    if (ngx_http_tent_timed_key_parse(&t->ent->entity, &t->key, &due, &id)
        != NGX_OK)
    {
        ngx_http_tent_task_failed(t, "reading the job's key");
        return NULL;
    }

    /*
     * Counted as decided (tent_status): a queue write that fails runs
     * the job again, and it is counted again.
     */

    if (outcome == NGX_HTTP_TENT_RETRY) {
        ngx_http_tent_count(NGX_HTTP_TENT_STAT_RETRIED, 1);

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
            ngx_http_tent_task_done(t);     /* logged there */
            return NULL;
        }

        ngx_log_debug4(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                       "tent delivery: settled: post \"%V\": retry at "
                       "%uL, in %uL ms, attempt %i", &t->post_id, due,
                       delay, attempt + 1);

    } else if (outcome == NGX_HTTP_TENT_REFUSED && t->job) {

        /* a dead letter, for the operator */

        ngx_http_tent_count(NGX_HTTP_TENT_STAT_DEAD, 1);

        json_object_set_new(t->job, "status", json_integer(t->status));
        json_object_set_new(t->job, "failed_at", json_integer(ngx_time()));

        if (ngx_http_tent_job_put(t, wop, NGX_HTTP_TENT_TABLE_DEAD,
                                  ngx_http_tent_now_ms(), &id, t->job)
            != NGX_OK)
        {
            ngx_http_tent_task_done(t);     /* logged there */
            return NULL;
        }

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                       "tent delivery: settled: post \"%V\": dead letter, "
                       "status %ui", &t->post_id, t->status);

    } else {
        if (outcome == NGX_HTTP_TENT_DELIVERED) {
            ngx_http_tent_count(NGX_HTTP_TENT_STAT_DELIVERED, 1);
        }

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->dl->log, 0,
                       "tent delivery: settled: post \"%V\": %s",
                       &t->post_id, outcome == NGX_HTTP_TENT_DELIVERED
                                    ? "delivered" : "dropped");
    }

    if (ngx_http_tent_delivery_status_settled(t, wop, outcome, attempt, due)
        != NGX_OK)
    {
        ngx_http_tent_task_failed(t, "writing the delivery's status");
        return NULL;
    }

    return wop;
}


void
ngx_http_tent_delivery_written(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_task_t *t = op->data;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_error(NGX_LOG_WARN, t->dl->log, 0,
                      "tent delivery: the queue could not be updated; "
                      "the job runs again");

        if (t->batch) {
            ngx_http_tent_queue_again(t);
        }
    }

    ngx_http_tent_task_done(t);
}
