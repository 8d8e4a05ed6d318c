
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The ActivityPub transport (issue #29, docs/activitypub.md#delivery):
 * it claims the jobs whose follower record has "activitypub" (an actor
 * that followed us through the inbox).  The post becomes an activity
 * (Create, Update, Delete of a Tombstone), addressed to the Public and
 * the followers collection when public, to the recipient's actor alone
 * otherwise, POSTed to the recipient's inbox through the same fetch as
 * the HTTP transport (guard, resolver, budgets, per-host caps and
 * breakers), signed draft-cavage-12 rsa-sha256 by the entity's key ("K"
 * row, read for the job, its parse kept per worker).  2xx delivered;
 * a 4xx but 408 and 429, a guard refusal or a blocked domain refused (a
 * dead letter); else retried.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_job.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_ap.h"
#include "ngx_http_tent_ap_map.h"

#include <openssl/pem.h>
#include <openssl/err.h>


#define NGX_HTTP_TENT_APT_DELETE  "https://tent.io/types/post/delete/"

/* the parsed keys kept by a worker, by entity and PEM */
#define NGX_HTTP_TENT_AP_KEYS    16


typedef struct {
    u_char                           *entity;
    size_t                            entity_len;
    uint32_t                          crc;        /* of the private PEM */
    EVP_PKEY                         *key;
} ngx_http_tent_ap_key_slot_t;


static ngx_int_t ngx_http_tent_apt_claim(ngx_http_tent_job_t *t);
static void ngx_http_tent_apt_send(ngx_http_tent_job_t *t);
static void ngx_http_tent_ap_key_read(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_ap_key_row_value(ngx_http_tent_job_t *t,
    ngx_str_t *value);
static EVP_PKEY *ngx_http_tent_ap_key_get(ngx_http_tent_job_t *t,
    ngx_str_t *pem);
static void ngx_http_tent_ap_key_free(void *data);
static void ngx_http_tent_ap_keys_free(void *data);
static ngx_int_t ngx_http_tent_apt_activity(ngx_http_tent_job_t *t,
    ngx_str_t *body);
static void ngx_http_tent_apt_post(ngx_http_tent_job_t *t, EVP_PKEY *key);
static void ngx_http_tent_ap_sent(ngx_http_tent_fetch_t *f);
static void ngx_http_tent_ap_answer(ngx_http_tent_fetch_t *f);


static ngx_http_tent_ap_key_slot_t  *ngx_http_tent_ap_keys;
static ngx_uint_t                    ngx_http_tent_ap_keys_next;


ngx_http_tent_transport_t  ngx_http_tent_transport_ap = {
    "activitypub",
    ngx_http_tent_apt_claim,
    ngx_http_tent_apt_send
};


/*
 * A follower that came through the inbox (its record says where), or an
 * activity queued with ngx_http_tent_delivery_activity() (its "w" row)
 */

static ngx_int_t
ngx_http_tent_apt_claim(ngx_http_tent_job_t *t)
{
    if (t->row.kind == NGX_HTTP_TENT_JOB_ACTIVITY
        || t->row.kind == NGX_HTTP_TENT_JOB_SHARED)
    {
        return NGX_OK;
    }

    if (t->row.kind != NGX_HTTP_TENT_JOB_FOLLOWER
        || !json_is_object(json_object_get(t->follower, "activitypub")))
    {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * First the entity's key: its row, read with the job's batch (when the
 * server has tent_activitypub on), or for this job alone
 */

static void
ngx_http_tent_apt_send(ngx_http_tent_job_t *t)
{
    ngx_str_t                  key;
    ngx_http_tent_store_op_t  *op;

    /*
     * ActivityPub turned off: no actor, no key served, so no inbox could
     * verify a request: nothing sent, the status says why
     */

    if (!t->task.ent->scf->activitypub) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": activitypub is off: "
                       "nothing sent", &t->task.post_id);
        t->error = "ActivityPub is off";
        t->untold = 1;
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_DELIVERED);
        return;
    }

    if (t->batch && t->batch->ap_key_read) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": activitypub: the "
                       "actor's key read with the batch", &t->task.post_id);

        ngx_http_tent_ap_key_row_value(t, t->batch->ap_key.len
                                          ? &t->batch->ap_key : NULL);
        return;
    }

    op = ngx_http_tent_store_op_create(t->task.pool, t->task.dl->log);

    if (op == NULL
        || ngx_http_tent_ap_key_row(t->task.pool, &t->task.ent->entity, &key)
           != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        ngx_http_tent_task_failed(&t->task, "reading the actor's key");
        return;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": activitypub: reading the "
                   "actor's key", &t->task.post_id);

    ngx_http_tent_task_submit(&t->task, op, ngx_http_tent_ap_key_read);
}


static void
ngx_http_tent_ap_key_read(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_job_t *t = op->data;

    ngx_str_t  value;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        ngx_http_tent_ap_key_row_value(t, NULL);
        return;
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK
        || ngx_http_tent_store_value(op, &value) != NGX_OK)
    {
        t->error = "the actor's key could not be read";
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_RETRY);
        return;
    }

    ngx_http_tent_ap_key_row_value(t, &value);
}


/* the key row's value (NULL: none), its private key parsed, then sent */

static void
ngx_http_tent_ap_key_row_value(ngx_http_tent_job_t *t, ngx_str_t *value)
{
    json_t     *row;
    EVP_PKEY   *key;
    ngx_str_t   pem;

    if (value == NULL) {

        /*
         * No key yet: made on the actor's first fetch, which a follower
         * made before it followed (or an import brings it); until then
         * the job waits, as for a server down.
         */

        ngx_log_error(NGX_LOG_INFO, t->task.dl->log, 0,
                      "tent delivery: \"%V\" has no ActivityPub key yet: "
                      "retried later", &t->task.ent->entity);
        t->error = "the actor has no key yet";
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_RETRY);
        return;
    }

    row = ngx_http_tent_json_parse(value, t->task.dl->log);

    if (row == NULL
        || ngx_http_tent_json_str(row, "private", &pem) != NGX_OK
        || (key = ngx_http_tent_ap_key_get(t, &pem)) == NULL)
    {
        json_decref(row);
        ngx_log_error(NGX_LOG_ERR, t->task.dl->log, 0,
                      "tent delivery: the ActivityPub key of \"%V\" is "
                      "not usable", &t->task.ent->entity);
        t->error = "the actor's key is not usable";
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_RETRY);
        return;
    }

    json_decref(row);

    ngx_http_tent_apt_post(t, key);
}


/*
 * The parsed key of the entity's PEM: kept per worker (the last
 * NGX_HTTP_TENT_AP_KEYS), a new PEM (a rotation) parsed again.  A
 * reference goes with the job (its pool's cleanup), so a slot reused
 * never frees a key a request in flight signs with.
 */

static EVP_PKEY *
ngx_http_tent_ap_key_get(ngx_http_tent_job_t *t, ngx_str_t *pem)
{
    BIO                          *in;
    uint32_t                      crc;
    EVP_PKEY                     *key;
    ngx_str_t                    *entity;
    ngx_pool_cleanup_t           *cln, *jcln;
    ngx_http_tent_ap_key_slot_t  *s;
    ngx_uint_t                    i;

    entity = &t->task.ent->entity;
    crc = ngx_crc32_long(pem->data, pem->len);

    jcln = ngx_pool_cleanup_add(t->task.pool, 0);
    if (jcln == NULL) {
        return NULL;
    }

    if (ngx_http_tent_ap_keys == NULL) {
        cln = ngx_pool_cleanup_add(ngx_cycle->pool, 0);
        if (cln == NULL) {
            return NULL;
        }

        ngx_http_tent_ap_keys = ngx_calloc(NGX_HTTP_TENT_AP_KEYS
                                        * sizeof(ngx_http_tent_ap_key_slot_t),
                                           t->task.dl->log);
        if (ngx_http_tent_ap_keys == NULL) {
            return NULL;
        }

        cln->handler = ngx_http_tent_ap_keys_free;
        cln->data = NULL;
    }

    for (i = 0; i < NGX_HTTP_TENT_AP_KEYS; i++) {
        s = &ngx_http_tent_ap_keys[i];

        if (s->key && s->crc == crc && s->entity_len == entity->len
            && ngx_memcmp(s->entity, entity->data, entity->len) == 0)
        {
            key = s->key;
            goto found;
        }
    }

    in = BIO_new_mem_buf(pem->data, (int) pem->len);
    if (in == NULL) {
        ERR_clear_error();
        return NULL;
    }

    key = PEM_read_bio_PrivateKey(in, NULL, NULL, (void *) "");
    BIO_free(in);

    if (key == NULL) {
        ERR_clear_error();
        return NULL;
    }

    s = &ngx_http_tent_ap_keys[ngx_http_tent_ap_keys_next++
                               % NGX_HTTP_TENT_AP_KEYS];

    if (s->key) {
        EVP_PKEY_free(s->key);
        ngx_free(s->entity);
        ngx_memzero(s, sizeof(ngx_http_tent_ap_key_slot_t));
    }

    s->entity = ngx_alloc(entity->len, t->task.dl->log);
    if (s->entity) {
        ngx_memcpy(s->entity, entity->data, entity->len);
        s->entity_len = entity->len;
        s->crc = crc;
        s->key = key;

    } else {
        jcln->handler = ngx_http_tent_ap_key_free;
        jcln->data = key;
        return key;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: the ActivityPub key of \"%V\" parsed",
                   entity);

found:

    if (EVP_PKEY_up_ref(key) != 1) {
        return NULL;
    }

    jcln->handler = ngx_http_tent_ap_key_free;
    jcln->data = key;

    return key;
}


static void
ngx_http_tent_ap_key_free(void *data)
{
    EVP_PKEY_free(data);
}


static void
ngx_http_tent_ap_keys_free(void *data)
{
    ngx_uint_t  i;

    if (ngx_http_tent_ap_keys == NULL) {
        return;
    }

    for (i = 0; i < NGX_HTTP_TENT_AP_KEYS; i++) {
        if (ngx_http_tent_ap_keys[i].key) {
            EVP_PKEY_free(ngx_http_tent_ap_keys[i].key);
            ngx_free(ngx_http_tent_ap_keys[i].entity);
        }
    }

    ngx_free(ngx_http_tent_ap_keys);
    ngx_http_tent_ap_keys = NULL;
}


/*
 * The activity of the job's post: Create (version 1), Update (a later
 * one) of its object, Delete of a Tombstone (a delete post: the object
 * it names).  NGX_DECLINED: the post has no ActivityPub form.
 */

static ngx_int_t
ngx_http_tent_apt_activity(ngx_http_tent_job_t *t, ngx_str_t *body)
{
    u_char                    *p;
    json_t                    *post, *activity, *one;
    ngx_str_t                 *entity, origin_api, type, name, recip;
    ngx_uint_t                 kind;
    ngx_pool_t                *pool;
    ngx_http_tent_srv_conf_t  *scf;

    pool = t->task.pool;
    post = t->task.post;
    entity = &t->task.ent->entity;
    scf = t->task.ent->scf;

    /* {origin}{api}: the entity URL's origin, the API root ("/": none) */

    p = ngx_strlcasestrn(entity->data, entity->data + entity->len,
                         (u_char *) "://", 3 - 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    for (p += 3; p < entity->data + entity->len && *p != '/'; p++) {
        /* void */
    }

    origin_api.len = (p - entity->data) + scf->api_root.len;
    origin_api.data = ngx_pnalloc(pool, origin_api.len);
    if (origin_api.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(origin_api.data, entity->data, p - entity->data);

    if (scf->api_root.len > 1) {
        p = ngx_cpymem(p, scf->api_root.data, scf->api_root.len);
    }

    origin_api.len = p - origin_api.data;

    if (ngx_http_tent_json_str(post, "type", &type) != NGX_OK
        || ngx_http_tent_ap_name_conf(scf, entity, &name) != NGX_OK)
    {
        return NGX_DECLINED;
    }

    /* a delete post: Delete; a new version: Update; else Create */

    if (type.len > sizeof(NGX_HTTP_TENT_APT_DELETE) - 1
        && ngx_strncmp(type.data, NGX_HTTP_TENT_APT_DELETE,
                       sizeof(NGX_HTTP_TENT_APT_DELETE) - 1) == 0)
    {
        kind = NGX_HTTP_TENT_AP_DELETE;

    } else if (json_integer_value(json_object_get(post, "version")) > 1) {
        kind = NGX_HTTP_TENT_AP_UPDATE;

    } else {
        kind = NGX_HTTP_TENT_AP_CREATE;
    }

    /* a repost: Announce; the delete post of one: Undo(Announce) */

    switch (ngx_http_tent_apt_repost_activity(t, &origin_api, &name,
                                              &activity))
    {
    case NGX_OK:
        break;

    case NGX_DECLINED:
        activity = ngx_http_tent_ap_activity_named(pool, &origin_api, entity,
                                                   &name, post, kind);
        break;

    default:
        return NGX_ERROR;
    }

    if (activity == NULL) {
        return NGX_DECLINED;
    }

    /*
     * Public: as it is (to the Public, cc our followers); else this
     * recipient's own copy, so that no list of recipients leaks
     */

    if (ngx_http_tent_json_str(t->follower, "entity", &recip) != NGX_OK) {
        json_decref(activity);
        return NGX_DECLINED;
    }

    one = ngx_http_tent_ap_narrow(activity, &recip);
    json_decref(activity);

    if (one == NULL
        || ngx_http_tent_json_cleanup(pool, one) != NGX_OK
        || ngx_http_tent_json_dump(pool, one, body) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": activitypub: kind %ui, "
                   "%uz bytes", &t->task.post_id, kind, body->len);

    return NGX_OK;
}


/* the signed POST to the recipient's inbox */

static void
ngx_http_tent_apt_post(ngx_http_tent_job_t *t, EVP_PKEY *key)
{
    u_char                 *p;
    ngx_str_t               url, body, key_id;
    ngx_http_tent_fetch_t  *f;

    /* an activity's row holds it, whole, and its inbox */

    if (t->row.kind == NGX_HTTP_TENT_JOB_ACTIVITY) {
        if (ngx_http_tent_json_str(t->follower, "inbox", &url) != NGX_OK
            || !json_is_object(json_object_get(t->follower, "activity")))
        {
            t->error = "the activity's row is not understood";
            ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_REFUSED);
            return;
        }

        if (ngx_http_tent_json_dump(t->task.pool,
                                    json_object_get(t->follower, "activity"),
                                    &body)
            != NGX_OK)
        {
            ngx_http_tent_task_failed(&t->task, "building the activity");
            return;
        }

        goto send;
    }

    /* a repost of another's post: that post, as we keep it, read first */

    switch (ngx_http_tent_apt_repost_read(t, key, ngx_http_tent_apt_post)) {

    case NGX_OK:
        break;

    case NGX_AGAIN:
        return;

    default:
        ngx_http_tent_task_failed(&t->task, "reading the reposted post");
        return;
    }

    switch (ngx_http_tent_apt_activity(t, &body)) {

    case NGX_OK:
        break;

    case NGX_DECLINED:
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": no ActivityPub form: "
                       "nothing sent", &t->task.post_id);
        t->error = "no ActivityPub form";
        t->untold = 1;
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_DELIVERED);
        return;

    default:
        ngx_http_tent_task_failed(&t->task, "building the activity");
        return;
    }

    if (ngx_http_tent_json_str(json_object_get(t->follower, "activitypub"),
                               "inbox", &url)
        != NGX_OK)
    {
        t->error = "the follower has no inbox";
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_REFUSED);
        return;
    }

send:

    switch (ngx_http_tent_host_gate(t, &url)) {

    case NGX_OK:
        break;

    case NGX_DECLINED:
        ngx_http_tent_host_wait(t);
        return;

    default:
        return;
    }

    key_id.len = t->task.ent->entity.len + sizeof("#main-key") - 1;
    key_id.data = ngx_pnalloc(t->task.pool, key_id.len);
    f = ngx_http_tent_fetch_create(t->task.pool, t->task.dl->log,
                                   &t->task.ent->scf->outbound);

    if (key_id.data == NULL || f == NULL) {
        ngx_http_tent_task_failed(&t->task, "building the request");
        return;
    }

    p = ngx_cpymem(key_id.data, t->task.ent->entity.data,
                   t->task.ent->entity.len);
    ngx_memcpy(p, "#main-key", sizeof("#main-key") - 1);

    f->request_body = body;
    f->sign_key = key;
    f->sign_key_id = key_id;
    ngx_str_set(&f->accept, NGX_HTTP_TENT_AP_TYPE);

    ngx_http_tent_delivery_post(t, f, &url, NGX_HTTP_TENT_AP_TYPE,
                                ngx_http_tent_ap_sent);
}


static void
ngx_http_tent_ap_sent(ngx_http_tent_fetch_t *f)
{
    ngx_http_tent_ap_answer(f);
    ngx_http_tent_fetch_release(f);
}


static void
ngx_http_tent_ap_answer(ngx_http_tent_fetch_t *f)
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
        ngx_http_tent_count(NGX_HTTP_TENT_STAT_ACTIVITYPUB, 1);
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_DELIVERED);
        return;
    }

    /*
     * A blocked domain, an inbox our guard refuses or no http(s) URL:
     * the URL is the follower's, fixed in its record, so never again.
     */

    if (f->result == NGX_HTTP_TENT_FETCH_BLOCKED
        || f->result == NGX_HTTP_TENT_FETCH_REFUSED
        || f->result == NGX_HTTP_TENT_FETCH_BAD_URL)
    {
        ngx_log_error(NGX_LOG_WARN, t->task.dl->log, 0,
                      "tent delivery: inbox %V: %s: not retried", &f->url,
                      ngx_http_tent_fetch_strerror(f->result));
        t->status = NGX_HTTP_FORBIDDEN;
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_REFUSED);
        return;
    }

    if (f->result == NGX_HTTP_TENT_FETCH_OK
        && f->status >= 400 && f->status <= 499
        && f->status != 408 && f->status != 429)
    {
        ngx_log_error(NGX_LOG_WARN, t->task.dl->log, 0,
                      "tent delivery: inbox %V refused the activity (%ui): "
                      "not retried", &f->url, f->status);
        t->status = f->status;
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_REFUSED);
        return;
    }

    ngx_log_error(NGX_LOG_INFO, t->task.dl->log, 0,
                  "tent delivery: POST %V: %s, status %ui", &f->url,
                  ngx_http_tent_fetch_strerror(f->result), f->status);

    ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_RETRY);
}
