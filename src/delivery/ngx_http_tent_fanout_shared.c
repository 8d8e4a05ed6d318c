
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * A public post once per ActivityPub shared inbox (issue #29,
 * docs/activitypub.md#shared-inboxes): the followers' step keeps, in its
 * pool, the distinct shared inboxes of its ActivityPub followers instead
 * of a job each; before the step's write one read asks, for each, the
 * status record of a delivery of this post and version to that inbox
 * ("D <post> 0x00 <version> S<hash>"), which is written in the same
 * batch as its job: found, an earlier step (or a run before a kill) made
 * the inbox's job already; else its job and record go into this step's
 * write.  The followers are read a step at a time and each step's write
 * is answered before the next step's read, so no inbox gets two jobs of
 * one version, whatever the steps and the restarts.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_fanout.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"

#include <openssl/sha.h>


/* a shared inbox's URL, at most (the inbox keeps longer ones out) */
#define NGX_HTTP_TENT_SHARED_URL_MAX  2048

/* "S" and 16 bytes of the URL's SHA-256 in hex */
#define NGX_HTTP_TENT_SHARED_RID_LEN  (1 + 32)


typedef struct {
    ngx_str_t                         url;
    ngx_str_t                         rid;        /* "S<hex>" */
    ngx_str_t                         key;        /* its status record */
    ngx_uint_t                        followers;  /* of this step */
} ngx_http_tent_shared_inbox_t;


typedef struct {
    ngx_pool_t                       *step;       /* whose list */
    ngx_array_t                       inboxes;
    ngx_http_tent_store_op_t         *wop;
    ngx_http_tent_store_done_pt       then;
    uint64_t                          now;
} ngx_http_tent_shared_t;


static void ngx_http_tent_fanout_shared_read(ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_fanout_shared_job(ngx_http_tent_fanout_t *t,
    ngx_http_tent_shared_t *sh, ngx_http_tent_shared_inbox_t *in);


/*
 * A follower of the step: NGX_OK, carried by its shared inbox (no job of
 * its own); NGX_DECLINED, its own job as before: no shared inbox, or a
 * post that is not public (a private one is narrowed to each recipient,
 * ngx_http_tent_ap_narrow(), and goes to its own inbox).
 */

ngx_int_t
ngx_http_tent_fanout_shared_add(ngx_http_tent_fanout_t *t, json_t *follower)
{
    u_char                         md[SHA256_DIGEST_LENGTH];
    ngx_str_t                      url;
    ngx_uint_t                     i;
    ngx_http_tent_shared_t        *sh;
    ngx_http_tent_shared_inbox_t  *in;

    if (t->stage != NGX_HTTP_TENT_FANOUT_FOLLOWERS
        || t->task.post == NULL
        || t->task.entity.data != t->task.ent->entity.data
        || !json_is_true(json_object_get(json_object_get(t->task.post,
                                                         "permissions"),
                                         "public"))
        || ngx_http_tent_json_str(json_object_get(follower, "activitypub"),
                                  "shared_inbox", &url)
           != NGX_OK
        || url.len == 0
        || url.len > NGX_HTTP_TENT_SHARED_URL_MAX
        || !(ngx_strncmp(url.data, "https://", 8) == 0
             || ngx_strncmp(url.data, "http://", 7) == 0))
    {
        return NGX_DECLINED;
    }

    /* the step's list, in the step's pool: gone with the step */

    sh = t->shared;

    if (sh == NULL || sh->step != t->step) {
        sh = ngx_pcalloc(t->step, sizeof(ngx_http_tent_shared_t));

        if (sh == NULL
            || ngx_array_init(&sh->inboxes, t->step, 8,
                              sizeof(ngx_http_tent_shared_inbox_t))
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        sh->step = t->step;
        t->shared = sh;
    }

    /* at most 100 followers a step: a walk of the list is cheap */

    in = sh->inboxes.elts;

    for (i = 0; i < sh->inboxes.nelts; i++) {
        if (in[i].url.len == url.len
            && ngx_memcmp(in[i].url.data, url.data, url.len) == 0)
        {
            in[i].followers++;
            return NGX_OK;
        }
    }

    in = ngx_array_push(&sh->inboxes);
    if (in == NULL) {
        return NGX_ERROR;
    }

    ngx_memzero(in, sizeof(ngx_http_tent_shared_inbox_t));

    in->followers = 1;
    in->url.len = url.len;
    in->url.data = ngx_pstrdup(t->step, &url);
    in->rid.data = ngx_pnalloc(t->step, NGX_HTTP_TENT_SHARED_RID_LEN);

    if (in->url.data == NULL || in->rid.data == NULL) {
        return NGX_ERROR;
    }

    /* the recipient's id: a follower's is 32 hex, so never this */

    SHA256(url.data, url.len, md);

    in->rid.data[0] = 'S';
    ngx_hex_dump(in->rid.data + 1, md, 16);
    in->rid.len = NGX_HTTP_TENT_SHARED_RID_LEN;

    if (ngx_http_tent_delivery_key(t->step, &t->task.ent->entity,
                                   &t->task.post_id,
                                   (uint32_t) json_integer_value(
                                       json_object_get(t->row, "version")),
                                   &in->rid, &in->key)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": shared inbox %V",
                   &t->task.post_id, &url);

    return NGX_OK;
}


/*
 * The step's write: with no shared inbox, on to the same-node followers
 * and the write; else after the read of their status records.
 */

void
ngx_http_tent_fanout_shared_submit(ngx_http_tent_fanout_t *t,
    ngx_http_tent_store_op_t *wop, uint64_t now,
    ngx_http_tent_store_done_pt handler)
{
    ngx_uint_t                     i;
    ngx_http_tent_shared_t        *sh;
    ngx_http_tent_store_op_t      *get;
    ngx_http_tent_shared_inbox_t  *in;

    sh = t->shared;

    if (sh == NULL || sh->step != t->step || sh->inboxes.nelts == 0) {
        t->shared = NULL;
        ngx_http_tent_local_direct_submit(t, wop, now, handler);
        return;
    }

    sh->wop = wop;
    sh->then = handler;
    sh->now = now;

    get = ngx_http_tent_store_op_create(t->step, t->task.dl->log);

    if (get == NULL || ngx_http_tent_store_mget(get) != NGX_OK) {
        ngx_http_tent_task_failed(&t->task, "building the shared inboxes' "
                                  "read");
        return;
    }

    in = sh->inboxes.elts;

    for (i = 0; i < sh->inboxes.nelts; i++) {
        if (ngx_http_tent_store_mget_key(get, &in[i].key) != NGX_OK) {
            ngx_http_tent_task_failed(&t->task, "building the shared "
                                      "inboxes' read");
            return;
        }
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": %ui shared inboxes, "
                   "one read", &t->task.post_id, sh->inboxes.nelts);

    /*
     * Submitted as it is, not by ngx_http_tent_task_submit(): the jobs
     * the step put hold the due scan's cursor until their write, not
     * until this read, is answered (as the same-node read)
     */

    get->handler = ngx_http_tent_fanout_shared_read;
    get->data = t;

    if (ngx_http_tent_store_submit(get) != NGX_OK) {
        ngx_http_tent_task_failed(&t->task, "submitting the shared "
                                  "inboxes' read");
    }
}


static void
ngx_http_tent_fanout_shared_read(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_fanout_t *t = op->data;

    ngx_str_t                      value;
    ngx_uint_t                     i, found, made, carried;
    ngx_http_tent_shared_t        *sh;
    ngx_http_tent_shared_inbox_t  *in;

    sh = t->shared;
    t->shared = NULL;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {

        /*
         * Not read: no job is made blind (one might be there); the
         * step's write does not go, the outbox row stays, the fan-out
         * runs again later
         */

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": shared inboxes not "
                       "read (store status %ui): later",
                       &t->task.post_id, op->status);
        ngx_http_tent_task_done(&t->task);
        return;
    }

    in = sh->inboxes.elts;
    made = 0;
    carried = 0;

    for (i = 0; i < sh->inboxes.nelts; i++) {
        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            ngx_http_tent_task_failed(&t->task, "reading the shared "
                                      "inboxes");
            return;
        }

        carried += in[i].followers;

        if (found) {
            ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                           "tent delivery: post \"%V\": shared inbox %V "
                           "has its job already (%ui followers more)",
                           &t->task.post_id, &in[i].url, in[i].followers);
            continue;
        }

        if (ngx_http_tent_fanout_shared_job(t, sh, &in[i]) != NGX_OK) {
            ngx_http_tent_task_failed(&t->task, "making a shared inbox's "
                                      "job");
            return;
        }

        made++;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": %ui shared inbox jobs "
                   "made for %ui followers", &t->task.post_id, made,
                   carried);

    /* counted as the step decides (a write that fails: again) */

    ngx_http_tent_count(NGX_HTTP_TENT_STAT_SHARED_INBOX, made);
    ngx_http_tent_count(NGX_HTTP_TENT_STAT_SHARED_FOLLOWERS, carried);

    ngx_http_tent_local_direct_submit(t, sh->wop, sh->now, sh->then);
}


/* "S<hash> <post id> <version>": its job, and its record "pending" */

static ngx_int_t
ngx_http_tent_fanout_shared_job(ngx_http_tent_fanout_t *t,
    ngx_http_tent_shared_t *sh, ngx_http_tent_shared_inbox_t *in)
{
    ngx_str_t                 jid;
    ngx_http_tent_job_row_t   jr;

    ngx_memzero(&jr, sizeof(ngx_http_tent_job_row_t));

    jr.kind = NGX_HTTP_TENT_JOB_SHARED;
    jr.to = in->url;
    jr.id = t->task.post_id;
    jr.version = json_integer_value(json_object_get(t->row, "version"));
    jr.first = sh->now / 1000;

    jid.len = in->rid.len + 1 + t->task.post_id.len + 1 + NGX_INT_T_LEN;
    jid.data = ngx_pnalloc(sh->wop->pool, jid.len);
    if (jid.data == NULL) {
        return NGX_ERROR;
    }

    jid.len = ngx_sprintf(jid.data, "%V %V %L", &in->rid, &t->task.post_id,
                          jr.version)
              - jid.data;

    if (ngx_http_tent_delivery_status_made(t, sh->wop, &jid, NULL, &in->url)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_tent_job_new(&t->task, sh->wop, sh->now, &jid, &jr);
}
