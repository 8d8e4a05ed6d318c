
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

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_domains.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_job.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_remote.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


static void ngx_http_tent_delivery_stranger(ngx_http_tent_job_t *t);
static void ngx_http_tent_delivery_discovered(ngx_http_tent_discover_t *d);
static ngx_int_t ngx_http_tent_delivery_blocked(ngx_http_tent_job_t *t);


/*
 * The transports, asked in order which carries a job: ActivityPub (a
 * follower record with "activitypub": never one of this node's, never
 * Tent), same-node, then HTTP, which carries any.
 */

static ngx_http_tent_transport_t  *ngx_http_tent_transports[] = {
    &ngx_http_tent_transport_ap,
    &ngx_http_tent_transport_local,
    &ngx_http_tent_transport_http,
    NULL
};


/* the key of the record a job goes to; none for a stranger */

ngx_int_t
ngx_http_tent_delivery_record_key(ngx_http_tent_job_t *t, ngx_str_t *key)
{
    switch (t->row.kind) {

    case NGX_HTTP_TENT_JOB_FOLLOWING:
        return ngx_http_tent_key(t->task.pool, &t->task.ent->entity,
                                 NGX_HTTP_TENT_TABLE_FOLLOWING, &t->row.to,
                                 key);

    case NGX_HTTP_TENT_JOB_FOLLOWER:
        return ngx_http_tent_key(t->task.pool, &t->task.ent->entity,
                                 NGX_HTTP_TENT_TABLE_FOLLOWER, &t->row.to,
                                 key);

    case NGX_HTTP_TENT_JOB_ACTIVITY:
        return ngx_http_tent_key(t->task.pool, &t->task.ent->entity,
                                 NGX_HTTP_TENT_TABLE_AP_ACTIVITY, &t->row.to,
                                 key);

    case NGX_HTTP_TENT_JOB_APP:

        /* "<app id> 0x00 <authorization id>", as the authorization's own */

        return ngx_http_tent_pair_key(t->task.pool, &t->task.ent->entity,
                                      NGX_HTTP_TENT_TABLE_SUBSCRIPTION,
                                      &t->row.app, &t->row.to, key);

    default:
        return NGX_OK;      /* a stranger: none */
    }
}


/*
 * A due job read with its batch (ngx_http_tent_delivery_load.c): its
 * post in t->post (NULL: deleted), shared with the batch's other jobs,
 * and its record's row (NULL: gone; none for a stranger).
 */

void
ngx_http_tent_delivery_loaded(ngx_http_tent_job_t *t, ngx_str_t *record)
{
    /* one attempt, discovery and every server tried, has one deadline */

    t->deadline = ngx_current_msec + t->task.ent->scf->outbound.deadline;

    if (t->stranger) {
        ngx_http_tent_delivery_stranger(t);
        return;
    }

    /* an activity: its "w" row, no post (gone: settled already) */

    if (t->row.kind == NGX_HTTP_TENT_JOB_ACTIVITY) {
        if (record == NULL
            || (t->follower = ngx_http_tent_record_parse(t->task.dl->log,
                                                         &t->record_key,
                                                         record))
               == NULL
            || ngx_http_tent_json_cleanup(t->task.pool, t->follower)
               != NGX_OK)
        {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                           "tent delivery: activity \"%V\": its row is "
                           "gone: nothing to send", &t->row.to);
            ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_DELIVERED);
            return;
        }

        ngx_http_tent_transport_claim(t);
        return;
    }

    /*
     * A shared inbox (ngx_http_tent_fanout_shared.c): its URL is the
     * job's, no record; only while the post is public, as it is now (a
     * version made private goes to each recipient's own inbox)
     */

    if (t->row.kind == NGX_HTTP_TENT_JOB_SHARED) {
        if (t->task.post == NULL
            || !json_is_true(json_object_get(json_object_get(t->task.post,
                                                             "permissions"),
                                             "public")))
        {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                           "tent delivery: post \"%V\": gone or no longer "
                           "public: not to a shared inbox",
                           &t->task.post_id);
            ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_DELIVERED);
            return;
        }

        t->follower = json_pack("{s:s%, s:{s:s%}}",
                                "entity", t->row.to.data, t->row.to.len,
                                "activitypub",
                                "inbox", t->row.to.data, t->row.to.len);

        if (t->follower == NULL
            || ngx_http_tent_json_cleanup(t->task.pool, t->follower)
               != NGX_OK)
        {
            json_decref(t->follower);
            t->follower = NULL;
            ngx_http_tent_task_failed(&t->task, "building a shared inbox's "
                                      "record");
            return;
        }

        ngx_http_tent_transport_claim(t);
        return;
    }

    /* a follower gone, or a post deleted: nothing to send */

    if (record == NULL
        || t->task.post == NULL
        || (t->follower = ngx_http_tent_record_parse(t->task.dl->log,
                                                     &t->record_key, record))
           == NULL
        || ngx_http_tent_json_cleanup(t->task.pool, t->follower) != NGX_OK)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": its receiver or the "
                       "post is gone: nothing to send", &t->task.post_id);
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_DELIVERED);
        return;
    }

    /* an app's authorization that has expired is told nothing more */

    if (json_is_integer(json_object_get(t->follower, "expires_at"))
        && json_integer_value(json_object_get(t->follower, "expires_at"))
           <= ngx_time())
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": the app's "
                       "authorization has expired", &t->task.post_id);
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

    if (t->row.kind != NGX_HTTP_TENT_JOB_APP
        && (!ngx_http_tent_delivery_permitted(t->task.post, t->follower)
            || (t->row.mention
                && t->row.kind == NGX_HTTP_TENT_JOB_FOLLOWING
                && !json_is_true(json_object_get(t->follower,
                                                 "confirmed")))))
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": not for this entity "
                       "as it is now: nothing sent", &t->task.post_id);
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_DELIVERED);
        return;
    }

    ngx_http_tent_transport_claim(t);
}


/*
 * A mentioned entity with no relationship: the post, if it is still
 * public, goes to the servers its profile lists, found again for every
 * attempt (they may move).
 */

static void
ngx_http_tent_delivery_stranger(ngx_http_tent_job_t *t)
{
    ngx_str_t  entity;

    if (t->task.post == NULL
        || !json_is_true(json_object_get(json_object_get(t->task.post,
                                                         "permissions"),
                                         "public")))
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": gone or no longer "
                       "public: no mention", &t->task.post_id);
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_DELIVERED);
        return;
    }

    entity = t->row.to;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": discovering \"%V\" for "
                   "a mention", &t->task.post_id, &entity);

    if (ngx_http_tent_discover_start(t->task.pool, t->task.dl->log,
                                     &t->task.ent->scf->outbound, &entity,
                                     t->deadline,
                                     ngx_http_tent_delivery_discovered, t)
        != NGX_OK)
    {
        ngx_http_tent_task_done(&t->task);     /* discovery logs its failure */
    }
}


static void
ngx_http_tent_delivery_discovered(ngx_http_tent_discover_t *d)
{
    ngx_http_tent_job_t *t = d->data;

    ngx_str_t  entity;

    if (d->status) {
        ngx_log_error(NGX_LOG_INFO, t->task.dl->log, 0,
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

    entity = t->row.to;

    if (!ngx_http_tent_entity_eq(&d->canonical, &entity))
    {
        ngx_log_error(NGX_LOG_INFO, t->task.dl->log, 0,
                      "tent delivery: a mention: the profile of \"%V\" "
                      "names another entity", &entity);

        t->status = NGX_HTTP_BAD_REQUEST;
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_REFUSED);
        return;
    }

    t->follower = json_pack("{s:O}", "servers", d->servers);

    if (t->follower == NULL
        || ngx_http_tent_json_cleanup(t->task.pool, t->follower) != NGX_OK)
    {
        json_decref(t->follower);
        ngx_http_tent_task_failed(&t->task, "keeping the discovered servers");
        return;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": \"%V\" discovered, "
                   "%uz servers", &t->task.post_id, &entity,
                   json_array_size(d->servers));

    ngx_http_tent_transport_claim(t);
}



/*
 * A job read and still wanted goes to the first transport that claims
 * it, asked once each.  One that finds, once it has read what it needs,
 * that the job is not its own after all settles it "passed": the next
 * transport is asked, never the ones before (same-node hands HTTP a
 * recipient whose rows are not in this store).
 */

void
ngx_http_tent_transport_claim(ngx_http_tent_job_t *t)
{
    ngx_uint_t                  i;
    ngx_http_tent_transport_t  *tr;

    i = 0;

    if (t->transport) {
        while (ngx_http_tent_transports[i] != t->transport) {
            i++;
        }

        i++;

    } else if (ngx_http_tent_delivery_blocked(t)) {
        t->status = NGX_HTTP_FORBIDDEN;
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_REFUSED);
        return;
    }

    for ( /* void */ ; ngx_http_tent_transports[i]; i++) {
        tr = ngx_http_tent_transports[i];

        if (tr->claim(t) != NGX_OK) {
            continue;
        }

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": carried by %s",
                       &t->task.post_id, tr->name);

        t->transport = tr;
        tr->send(t);
        return;
    }

    ngx_http_tent_task_failed(&t->task, "finding a transport");
}


/*
 * An entity of a domain the operator blocked, wherever its servers are:
 * a dead letter, never retried, on any transport (the fetch refuses its
 * hosts too).  An app is not an entity: never blocked here.
 */

static ngx_int_t
ngx_http_tent_delivery_blocked(ngx_http_tent_job_t *t)
{
    ngx_str_t  entity;

    if (t->row.kind == NGX_HTTP_TENT_JOB_APP) {
        return 0;
    }

    if ((ngx_http_tent_json_str(t->follower, "entity", &entity) == NGX_OK
         && ngx_http_tent_domains_entity(&entity))
        || (t->row.kind == NGX_HTTP_TENT_JOB_ENTITY
            && ngx_http_tent_domains_entity(&t->row.to)
            && (entity = t->row.to).len))
    {
        ngx_log_error(NGX_LOG_INFO, t->task.dl->log, 0,
                      "tent delivery: \"%V\" is of a blocked domain: "
                      "not sent", &entity);
        return 1;
    }

    return 0;
}


/*
 * The URL of a relationship's or a mentioned entity's server "n": a
 * follower's notification path; "posts" for a following, signed, and
 * for an entity with no relationship, unsigned (spec 9.3).  NGX_DECLINED:
 * no such server, or no path.
 */

ngx_int_t
ngx_http_tent_delivery_url(ngx_http_tent_job_t *t, ngx_uint_t n,
    ngx_str_t *url)
{
    json_t     *server;
    ngx_str_t   path;

    server = json_array_get(json_object_get(t->follower, "servers"), n);

    if (t->row.kind == NGX_HTTP_TENT_JOB_FOLLOWING || t->stranger) {
        ngx_str_set(&path, "posts");

    } else if (ngx_http_tent_json_str(t->follower, "notification_path",
                                      &path)
               != NGX_OK)
    {
        path.len = 0;
    }

    if (!json_is_string(server) || path.len == 0) {
        return NGX_DECLINED;
    }

    if (ngx_http_tent_server_url(t->task.pool, server, &path, NULL, url)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * A transport's request, its body (and signature) set: POSTed to "url"
 * with the job's deadline, at least once; any failure to start settles
 * the task as failed, so the caller only returns.
 */

void
ngx_http_tent_delivery_post(ngx_http_tent_job_t *t, ngx_http_tent_fetch_t *f,
    ngx_str_t *url, const char *content_type, ngx_http_tent_fetch_pt handler)
{
    f->url = *url;
    ngx_str_set(&f->method, "POST");
    f->content_type.data = (u_char *) content_type;
    f->content_type.len = ngx_strlen(content_type);
    f->max_response = 64 * 1024;
    f->deadline = t->deadline;
    f->has_deadline = 1;
    f->handler = handler;
    f->data = t;
    f->resend = 1;                 /* deliveries are at-least-once */

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: job sent: post \"%V\" to %V",
                   &t->task.post_id, url);

    if (ngx_http_tent_fetch_start(f) != NGX_OK) {
        ngx_http_tent_task_failed(&t->task, "starting the request");
    }
}


/*
 * The job leaves the queue, or comes back later: base * 2^attempt, at
 * most the cap, half of it random so that failed jobs spread out.
 */

void
ngx_http_tent_delivery_settle(ngx_http_tent_job_t *t,
    ngx_http_tent_outcome_e outcome)
{
    ngx_http_tent_store_op_t  *wop;

    if (outcome == NGX_HTTP_TENT_PASSED) {
        ngx_http_tent_transport_claim(t);
        return;
    }

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
ngx_http_tent_delivery_settlement(ngx_http_tent_job_t *t,
    ngx_http_tent_outcome_e outcome)
{
    uint64_t                    delay, due;
    ngx_int_t                   attempt;
    ngx_str_t                   id;
    ngx_http_tent_store_op_t   *wop;
    ngx_http_tent_main_conf_t  *mcf;

    mcf = t->task.dl->mcf;

    wop = ngx_http_tent_store_op_create(t->task.pool, t->task.dl->log);

    if (wop == NULL
        || ngx_http_tent_store_write(wop, 0) != NGX_OK
        || ngx_http_tent_store_write_del(wop, &t->task.key) != NGX_OK)
    {
        ngx_http_tent_task_failed(&t->task, "building the job's settlement");
        return NULL;
    }

    attempt = t->row.kind ? t->row.attempt : 0;

    if (outcome == NGX_HTTP_TENT_RETRY
        && (ngx_uint_t) attempt + 1 >= mcf->delivery_attempts)
    {
        ngx_log_error(NGX_LOG_WARN, t->task.dl->log, 0,
                      "tent delivery: giving up after %i attempts",
                      attempt + 1);
        outcome = NGX_HTTP_TENT_REFUSED;
    }

    /* the job's id: the key without its due time */

    if (ngx_http_tent_timed_key_parse(&t->task.ent->entity, &t->task.key,
                                      &due, &id)
        != NGX_OK)
    {
        ngx_http_tent_task_failed(&t->task, "reading the job's key");
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

        t->row.attempt = attempt + 1;

        if (ngx_http_tent_job_put(&t->task, wop, NGX_HTTP_TENT_TABLE_JOB,
                                  due, &id, &t->row)
            != NGX_OK)
        {
            ngx_http_tent_task_done(&t->task);     /* logged there */
            return NULL;
        }

        ngx_log_debug4(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: settled: post \"%V\": retry at "
                       "%uL, in %uL ms, attempt %i", &t->task.post_id, due,
                       delay, attempt + 1);

    } else if (outcome == NGX_HTTP_TENT_REFUSED && t->row.kind) {

        /* a dead letter, for the operator */

        ngx_http_tent_count(NGX_HTTP_TENT_STAT_DEAD, 1);

        t->row.status = t->status;
        t->row.failed_at = ngx_time();

        if (ngx_http_tent_job_put(&t->task, wop, NGX_HTTP_TENT_TABLE_DEAD,
                                  ngx_http_tent_now_ms(), &id, &t->row)
            != NGX_OK)
        {
            ngx_http_tent_task_done(&t->task);     /* logged there */
            return NULL;
        }

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: settled: post \"%V\": dead letter, "
                       "status %ui", &t->task.post_id, t->status);

    } else {
        if (outcome == NGX_HTTP_TENT_DELIVERED) {
            ngx_http_tent_count(NGX_HTTP_TENT_STAT_DELIVERED, 1);
        }

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: settled: post \"%V\": %s",
                       &t->task.post_id, outcome == NGX_HTTP_TENT_DELIVERED
                                    ? "delivered" : "dropped");
    }

    /* an activity's row goes with its job, settled for good */

    if (t->row.kind == NGX_HTTP_TENT_JOB_ACTIVITY
        && outcome != NGX_HTTP_TENT_RETRY
        && t->record_key.len
        && ngx_http_tent_store_write_del(wop, &t->record_key) != NGX_OK)
    {
        ngx_http_tent_task_failed(&t->task, "removing the activity's row");
        return NULL;
    }

    if (ngx_http_tent_delivery_status_settled(t, wop, outcome, attempt, due)
        != NGX_OK)
    {
        ngx_http_tent_task_failed(&t->task, "writing the delivery's status");
        return NULL;
    }

    return wop;
}

