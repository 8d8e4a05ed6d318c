
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The actor's key: RSA-2048, one per entity, made on first use and kept
 * in the entity's "K" row ({"public", "private": PEM, "created_at"}).
 * Making one takes 50 to 200 ms, so it runs on a thread of nginx's
 * "default" pool, and the requests of one worker that want the key of
 * one entity meanwhile wait for that one generation.  The row is put
 * "must be absent": of two workers (or two nginx) making a key at once
 * the first write wins, and the other reads it back, so an entity never
 * shows two keys.  Generations in flight are bounded per worker; over
 * it, 503.  The private part stays in the row: no reply carries it.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_ap.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/err.h>


#define NGX_HTTP_TENT_AP_KEY_BITS    2048
#define NGX_HTTP_TENT_AP_KEYGENS     4       /* in flight, a worker */
#define NGX_HTTP_TENT_AP_KEY_TRIES   3       /* reads, a request */
#define NGX_HTTP_TENT_AP_ROTATE_EVERY  60    /* s: a new key at most */


/* one generation in flight: the entity, its waiting requests, the PEMs */
typedef struct {
    ngx_queue_t                     queue;
    ngx_queue_t                     waiters;
    ngx_pool_t                     *pool;
    ngx_str_t                       entity;
    uint64_t                        registry_inc;    /* its fence, or 0 */
    ngx_uint_t                      ok;
    ngx_uint_t                      taken;       /* a waiter stores it */
    size_t                          public_len;
    size_t                          private_len;
    u_char                          public_pem[1024];
    u_char                          private_pem[4096];
} ngx_http_tent_ap_keygen_t;


/* a request's side */
typedef struct {
    ngx_queue_t                     queue;       /* in a keygen's waiters */
    ngx_http_request_t             *request;
    ngx_http_tent_ap_key_pt         done;
    ngx_uint_t                      tries;
    ngx_uint_t                      rotate;      /* the owner's new key */
    ngx_http_tent_ap_key_t          key;
    ngx_http_tent_ap_person_t      *person;      /* its Update(Person) */
} ngx_http_tent_ap_keyreq_t;


static ngx_int_t ngx_http_tent_ap_key_read(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_ap_key_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_key_make(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_ap_key_rotate_now(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_store_op_t *op);
static void ngx_http_tent_ap_keygen_thread(void *data, ngx_log_t *log);
static void ngx_http_tent_ap_keygen_done(ngx_event_t *ev);
static ngx_int_t ngx_http_tent_ap_key_keep(ngx_http_tent_ap_keygen_t *kg);
static void ngx_http_tent_ap_key_kept(ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_key_store(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_ap_key_stored(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_key_rotated(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_key_t *key);


/* this worker's generations in flight */
static ngx_queue_t  ngx_http_tent_ap_keygens;
static ngx_uint_t   ngx_http_tent_ap_nkeygens;


ngx_int_t
ngx_http_tent_ap_key_row(ngx_pool_t *pool, ngx_str_t *entity, ngx_str_t *key)
{
    ngx_str_t  rest;

    ngx_str_set(&rest, "main");

    return ngx_http_tent_key(pool, entity, NGX_HTTP_TENT_TABLE_AP_KEY, &rest,
                             key);
}


/* the entity's key to done(), read or made; NGX_DONE while it waits */

ngx_int_t
ngx_http_tent_ap_key(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_key_pt done)
{
    ngx_http_tent_ap_keyreq_t  *kr;

    kr = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_keyreq_t));
    if (kr == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the key's state");
    }

    kr->request = r;
    kr->done = done;
    ctx->state = kr;

    return ngx_http_tent_ap_key_read(r, ctx);
}


static ngx_int_t
ngx_http_tent_ap_key_read(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                   key;
    ngx_http_tent_store_op_t   *op;
    ngx_http_tent_ap_keyreq_t  *kr;

    kr = ctx->state;

    if (kr->tries++ >= NGX_HTTP_TENT_AP_KEY_TRIES) {
        return ngx_http_tent_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                        "The actor's key is being made");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_ap_key_row(r->pool, &ctx->entity, &key) != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the key's read");
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: reading the key of \"%V\"", &ctx->entity);

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_key_loaded);
}


static ngx_int_t
ngx_http_tent_ap_key_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                     *row;
    ngx_int_t                   rc;
    ngx_str_t                   value;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_ap_keyreq_t  *kr;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    kr = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        return ngx_http_tent_ap_key_make(r, ctx);
    }

    if (kr->rotate) {
        return ngx_http_tent_ap_key_rotate_now(r, ctx, op);
    }

    if (ngx_http_tent_store_value(op, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "reading the key's row");
    }

    row = ngx_http_tent_json_own(r->pool,
                                 ngx_http_tent_json_parse(&value,
                                                          r->connection->log));

    if (row == NULL
        || ngx_http_tent_json_str(row, "public", &kr->key.public_pem)
           != NGX_OK
        || ngx_http_tent_json_str(row, "private", &kr->key.private_pem)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "parsing the key's row");
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: the key of \"%V\" read", &ctx->entity);

    return kr->done(r, ctx, &kr->key);
}


/* no key yet: wait for this worker's generation of it, or start one */

static ngx_int_t
ngx_http_tent_ap_key_make(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_pool_t                 *pool;
    ngx_queue_t                *q;
    ngx_thread_task_t          *task;
    ngx_http_tent_ap_keygen_t  *kg;
    ngx_http_tent_ap_keyreq_t  *kr;
    ngx_http_tent_main_conf_t  *mcf;

    kr = ctx->state;

    if (ngx_http_tent_ap_keygens.next == NULL) {
        ngx_queue_init(&ngx_http_tent_ap_keygens);
    }

    kg = NULL;

    for (q = ngx_queue_head(&ngx_http_tent_ap_keygens);
         q != ngx_queue_sentinel(&ngx_http_tent_ap_keygens);
         q = ngx_queue_next(q))
    {
        kg = ngx_queue_data(q, ngx_http_tent_ap_keygen_t, queue);

        if (kg->entity.len == ctx->entity.len
            && ngx_strncmp(kg->entity.data, ctx->entity.data,
                           ctx->entity.len) == 0)
        {
            break;
        }

        kg = NULL;
    }

    if (kg == NULL) {
        if (ngx_http_tent_ap_nkeygens >= NGX_HTTP_TENT_AP_KEYGENS) {
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "tent ap: %ui keys being made already: \"%V\" "
                          "waits", ngx_http_tent_ap_nkeygens, &ctx->entity);

            return ngx_http_tent_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                            "Too many keys being made");
        }

        mcf = ngx_http_get_module_main_conf(r, ngx_http_tent_module);

        pool = ngx_create_pool(1024, ngx_cycle->log);
        if (pool == NULL) {
            return ngx_http_tent_internal_error(r, "allocating a key's pool");
        }

        task = ngx_thread_task_alloc(pool, sizeof(ngx_http_tent_ap_keygen_t));
        if (task == NULL) {
            ngx_destroy_pool(pool);
            return ngx_http_tent_internal_error(r, "allocating a key's task");
        }

        kg = task->ctx;
        kg->pool = pool;
        kg->registry_inc = (ctx->registry == NGX_HTTP_TENT_REG_ACTIVE)
                           ? ctx->registry_inc : 0;
        ngx_queue_init(&kg->waiters);

        kg->entity.len = ctx->entity.len;
        kg->entity.data = ngx_pstrdup(pool, &ctx->entity);
        if (kg->entity.data == NULL) {
            ngx_destroy_pool(pool);
            return ngx_http_tent_internal_error(r, "allocating a key's task");
        }

        task->handler = ngx_http_tent_ap_keygen_thread;
        task->event.handler = ngx_http_tent_ap_keygen_done;
        task->event.data = kg;

        if (ngx_thread_task_post(mcf->ap_pool, task) != NGX_OK) {
            ngx_destroy_pool(pool);
            return ngx_http_tent_internal_error(r, "posting a key's task");
        }

        ngx_queue_insert_tail(&ngx_http_tent_ap_keygens, &kg->queue);
        ngx_http_tent_ap_nkeygens++;

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent ap: making the key of \"%V\"", &ctx->entity);

    } else {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent ap: waiting for the key of \"%V\" being made",
                       &ctx->entity);
    }

    ngx_queue_insert_tail(&kg->waiters, &kr->queue);

    /* the request waits: its pool is not freed under the generation */

    r->main->blocked++;
    r->main->count++;

    return NGX_DONE;
}


static void
ngx_http_tent_ap_keygen_thread(void *data, ngx_log_t *log)
{
    ngx_http_tent_ap_keygen_t *kg = data;

    BIO           *pub, *priv;
    char          *p;
    long           n;
    EVP_PKEY      *pkey;
    EVP_PKEY_CTX  *pctx;

    pkey = NULL;
    pub = NULL;
    priv = NULL;

    pctx = EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, NULL);

    if (pctx == NULL
        || EVP_PKEY_keygen_init(pctx) <= 0
        || EVP_PKEY_CTX_set_rsa_keygen_bits(pctx, NGX_HTTP_TENT_AP_KEY_BITS)
           <= 0
        || EVP_PKEY_keygen(pctx, &pkey) <= 0)
    {
        goto done;
    }

    pub = BIO_new(BIO_s_mem());
    priv = BIO_new(BIO_s_mem());

    if (pub == NULL || priv == NULL
        || PEM_write_bio_PUBKEY(pub, pkey) != 1
        || PEM_write_bio_PrivateKey(priv, pkey, NULL, NULL, 0, NULL, NULL)
           != 1)
    {
        goto done;
    }

    n = BIO_get_mem_data(pub, &p);
    if (n <= 0 || (size_t) n > sizeof(kg->public_pem)) {
        goto done;
    }

    ngx_memcpy(kg->public_pem, p, n);
    kg->public_len = n;

    n = BIO_get_mem_data(priv, &p);
    if (n <= 0 || (size_t) n > sizeof(kg->private_pem)) {
        goto done;
    }

    ngx_memcpy(kg->private_pem, p, n);
    kg->private_len = n;

    kg->ok = 1;

done:

    /* the private key's bytes do not stay in freed memory */

    if (priv) {
        n = BIO_get_mem_data(priv, &p);
        if (n > 0) {
            OPENSSL_cleanse(p, n);
        }
    }

    BIO_free(pub);
    BIO_free(priv);
    EVP_PKEY_free(pkey);
    EVP_PKEY_CTX_free(pctx);
}


/* back on the event loop: each waiting request stores or reads the key */

static void
ngx_http_tent_ap_keygen_done(ngx_event_t *ev)
{
    ngx_int_t                   rc;
    ngx_queue_t                *q;
    ngx_connection_t           *c;
    ngx_http_request_t         *r;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_ap_keygen_t  *kg;
    ngx_http_tent_ap_keyreq_t  *kr;

    kg = ev->data;

    ngx_queue_remove(&kg->queue);
    ngx_http_tent_ap_nkeygens--;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "tent ap: the key of \"%V\" %s", &kg->entity,
                   kg->ok ? "made" : "not made");

    while (!ngx_queue_empty(&kg->waiters)) {
        q = ngx_queue_head(&kg->waiters);
        ngx_queue_remove(q);

        kr = ngx_queue_data(q, ngx_http_tent_ap_keyreq_t, queue);
        r = kr->request;
        c = r->connection;

        r->main->blocked--;

        ctx = ngx_http_get_module_ctx(r, ngx_http_tent_module);

        if (c->error) {
            rc = NGX_HTTP_CLIENT_CLOSED_REQUEST;

        } else if (!kg->ok) {
            ngx_log_error(NGX_LOG_ERR, c->log, 0,
                          "tent ap: making an RSA key failed");
            rc = ngx_http_tent_internal_error(r, "making the actor's key");

        } else {
            kr->key.public_pem.len = kg->public_len;
            kr->key.public_pem.data = ngx_pnalloc(r->pool, kg->public_len);
            kr->key.private_pem.len = kg->private_len;
            kr->key.private_pem.data = ngx_pnalloc(r->pool,
                                                   kg->private_len);

            if (kr->key.public_pem.data == NULL
                || kr->key.private_pem.data == NULL)
            {
                rc = ngx_http_tent_internal_error(r, "copying the key");

            } else {
                ngx_memcpy(kr->key.public_pem.data, kg->public_pem,
                           kg->public_len);
                ngx_memcpy(kr->key.private_pem.data, kg->private_pem,
                           kg->private_len);

                kg->taken = 1;
                rc = ngx_http_tent_ap_key_store(r, ctx);
            }
        }

        ngx_http_finalize_request(r, rc);
        ngx_http_run_posted_requests(c);
    }

    /*
     * Every waiter gone (each one's connection broken meanwhile): the key
     * is written all the same, or the next request would make another,
     * and an anonymous client breaking its requests would keep the
     * threads making keys for ever
     */

    if (kg->ok && !kg->taken && ngx_http_tent_ap_key_keep(kg) == NGX_OK) {
        return;
    }

    ngx_explicit_memzero(kg->private_pem, sizeof(kg->private_pem));
    ngx_destroy_pool(kg->pool);
}


/* a key no request is left to write: written if the entity has none */

static ngx_int_t
ngx_http_tent_ap_key_keep(ngx_http_tent_ap_keygen_t *kg)
{
    json_t                    *row;
    ngx_str_t                  key, value;
    ngx_http_tent_store_op_t  *op;

    row = ngx_http_tent_json_own(kg->pool, json_pack(
              "{s:s%, s:s%, s:I}",
              "public", kg->public_pem, kg->public_len,
              "private", kg->private_pem, kg->private_len,
              "created_at", (json_int_t) ngx_time()));

    op = ngx_http_tent_store_op_create(kg->pool, ngx_cycle->log);

    if (row == NULL || op == NULL
        || ngx_http_tent_json_dump(kg->pool, row, &value) != NGX_OK
        || ngx_http_tent_ap_key_row(kg->pool, &kg->entity, &key) != NGX_OK
        || ngx_http_tent_store_cas(op, &key, NULL, &value) != NGX_OK
        || (kg->registry_inc
            && ngx_http_tent_store_fence(op, &kg->entity, kg->registry_inc)
               != NGX_OK))
    {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "tent ap: building the write of the key of \"%V\" "
                      "failed", &kg->entity);
        return NGX_ERROR;
    }

    op->handler = ngx_http_tent_ap_key_kept;
    op->data = kg;

    if (ngx_http_tent_store_submit(op) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, ngx_cycle->log, 0,
                      "tent ap: submitting the key of \"%V\" failed",
                      &kg->entity);
        return NGX_ERROR;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "tent ap: the key of \"%V\" written with no request "
                   "left", &kg->entity);

    return NGX_OK;
}


static void
ngx_http_tent_ap_key_kept(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_ap_keygen_t *kg = op->data;

    if (op->status != NGX_HTTP_TENT_STORE_OK
        && op->status != NGX_HTTP_TENT_STORE_CONFLICT)
    {
        ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                      "tent ap: the key of \"%V\" not written (%ui)",
                      &kg->entity, op->status);

    } else {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "tent ap: the key of \"%V\" kept: %s", &kg->entity,
                       op->status == NGX_HTTP_TENT_STORE_OK
                       ? "written" : "another was there first");
    }

    ngx_explicit_memzero(kg->private_pem, sizeof(kg->private_pem));
    ngx_destroy_pool(kg->pool);
}


/*
 * POST {api}/activitypub/key: the owner's new key (write_secrets), made
 * as a first one is, written over the old one.  Servers that cached the
 * old key fetch the actor again when a signature fails.
 */

ngx_int_t
ngx_http_tent_ap_key_rotate(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_int_t                   rc;
    ngx_http_tent_ap_keyreq_t  *kr;
    ngx_http_tent_srv_conf_t   *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    /* nothing of the body is read: it goes before the wait */

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    if (!scf->activitypub) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_SECRETS)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    kr = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_keyreq_t));
    if (kr == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the key's state");
    }

    kr->request = r;
    kr->done = ngx_http_tent_ap_key_rotated;
    kr->rotate = 1;
    ctx->state = kr;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: a new key of \"%V\" asked for", &ctx->entity);

    /* the current key's age first (key_loaded: rotate_now) */

    return ngx_http_tent_ap_key_read(r, ctx);
}


/*
 * A new key at most once a minute (an owner's credential in a loop
 * would keep a thread making keys, and the 4 a worker makes at once
 * from the other tenants): 429 while the current one is younger
 */

static ngx_int_t
ngx_http_tent_ap_key_rotate_now(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_store_op_t *op)
{
    json_t     *row;
    time_t      age;
    ngx_str_t   value, wait;

    if (ngx_http_tent_store_value(op, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "reading the key's row");
    }

    row = ngx_http_tent_json_own(r->pool,
                                 ngx_http_tent_json_parse(&value,
                                                          r->connection->log));
    if (row == NULL) {
        return ngx_http_tent_internal_error(r, "parsing the key's row");
    }

    age = ngx_time()
          - (time_t) json_integer_value(json_object_get(row, "created_at"));

    if (age >= 0 && age < NGX_HTTP_TENT_AP_ROTATE_EVERY) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent ap: the key of \"%V\" is %T s old: not "
                       "rotated", &ctx->entity, age);

        wait.data = ngx_pnalloc(r->pool, NGX_TIME_T_LEN);
        if (wait.data == NULL) {
            return ngx_http_tent_internal_error(r, "refusing a new key");
        }

        wait.len = ngx_sprintf(wait.data, "%T",
                               NGX_HTTP_TENT_AP_ROTATE_EVERY - age)
                   - wait.data;

        if (ngx_http_tent_add_header(r, "Retry-After", &wait) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "refusing a new key");
        }

        return ngx_http_tent_send_error(r, NGX_HTTP_TOO_MANY_REQUESTS,
                                        "The key is less than a minute "
                                        "old");
    }

    return ngx_http_tent_ap_key_make(r, ctx);
}


static ngx_int_t
ngx_http_tent_ap_key_rotated(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_key_t *key)
{
    json_t  *reply;

    reply = ngx_http_tent_json_own(r->pool, json_pack(
                "{s:s%}", "public", key->public_pem.data,
                key->public_pem.len));

    if (reply == NULL) {
        return ngx_http_tent_internal_error(r, "writing the new key");
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, reply);
}


/*
 * The first write wins: put if absent, else read the one written.  The
 * owner's new key is put whatever was there.
 */

static ngx_int_t
ngx_http_tent_ap_key_store(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                     *row;
    ngx_str_t                   key, value;
    ngx_http_tent_store_op_t   *op;
    ngx_http_tent_ap_keyreq_t  *kr;

    kr = ctx->state;

    /*
     * A new key: the followers' servers are sent the actor with it, in
     * the key's own write (the section and the followers read first;
     * then this function again)
     */

    if (kr->rotate && kr->person == NULL) {
        kr->person = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_person_t));
        if (kr->person == NULL) {
            return ngx_http_tent_internal_error(r, "allocating the "
                                                "Update(Person)");
        }

        kr->person->pem = kr->key.public_pem;

        return ngx_http_tent_ap_person_prepare(r, ctx, kr->person,
                                               ngx_http_tent_ap_key_store);
    }

    row = ngx_http_tent_json_own(r->pool, json_pack(
              "{s:s%, s:s%, s:I}",
              "public", kr->key.public_pem.data, kr->key.public_pem.len,
              "private", kr->key.private_pem.data, kr->key.private_pem.len,
              "created_at", (json_int_t) ngx_time()));

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (row == NULL || op == NULL
        || ngx_http_tent_json_dump(r->pool, row, &value) != NGX_OK
        || ngx_http_tent_ap_key_row(r->pool, &ctx->entity, &key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the key's write");
    }

    if (kr->rotate) {
        if (ngx_http_tent_store_write(op, 1) != NGX_OK
            || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK
            || ngx_http_tent_ap_person_queue(r, ctx, kr->person, op)
               != NGX_OK)
        {
            return ngx_http_tent_internal_error(r, "building the key's write");
        }

    } else if (ngx_http_tent_store_cas(op, &key, NULL, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "building the key's write");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_key_stored);
}


static ngx_int_t
ngx_http_tent_ap_key_stored(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                   rc;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_ap_keyreq_t  *kr;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    kr = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_CONFLICT && !kr->rotate) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent ap: another key of \"%V\" was written first",
                       &ctx->entity);

        return ngx_http_tent_ap_key_read(r, ctx);
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: the key of \"%V\" written", &ctx->entity);

    return kr->done(r, ctx, &kr->key);
}


/*
 * An imported key (ngx_http_tent_import_rows.c): a PEM private key, RSA
 * of 2048 to 4096 bits, and its public part as the actor shows it.  An
 * encrypted PEM is refused without trying a password (its PBKDF2 count
 * is the document's: millions of rounds would hold the worker), and what
 * is kept is OpenSSL's own unencrypted PKCS#8 of the key, not the bytes
 * given (nothing around them, no cost at each later read).
 */

static int
ngx_http_tent_ap_key_no_password(char *buf, int size, int rwflag, void *u)
{
    return -1;
}


ngx_int_t
ngx_http_tent_ap_key_check(ngx_pool_t *pool, ngx_str_t *private_pem,
    ngx_str_t *public_pem, const char **error)
{
    BIO       *in, *out;
    char      *p;
    long       n;
    ngx_int_t  rc;
    EVP_PKEY  *pkey;

    *error = "private must be a PEM RSA key of 2048 to 4096 bits";

    if (private_pem->len == 0 || private_pem->len > 8192) {
        return NGX_DECLINED;
    }

    rc = NGX_DECLINED;
    pkey = NULL;
    out = NULL;

    in = BIO_new_mem_buf(private_pem->data, (int) private_pem->len);
    if (in == NULL) {
        return NGX_ERROR;
    }

    pkey = PEM_read_bio_PrivateKey(in, NULL,
                                   ngx_http_tent_ap_key_no_password, NULL);

    if (pkey == NULL || EVP_PKEY_base_id(pkey) != EVP_PKEY_RSA
        || EVP_PKEY_bits(pkey) < 2048 || EVP_PKEY_bits(pkey) > 4096)
    {
        goto done;
    }

    out = BIO_new(BIO_s_mem());

    if (out == NULL || PEM_write_bio_PUBKEY(out, pkey) != 1) {
        rc = NGX_ERROR;
        goto done;
    }

    n = BIO_get_mem_data(out, &p);

    public_pem->data = ngx_pnalloc(pool, n);
    if (n <= 0 || public_pem->data == NULL) {
        rc = NGX_ERROR;
        goto done;
    }

    ngx_memcpy(public_pem->data, p, n);
    public_pem->len = n;

    /* the private key as we write it: the public part's BIO again */

    (void) BIO_reset(out);

    if (PEM_write_bio_PrivateKey(out, pkey, NULL, NULL, 0, NULL, NULL) != 1)
    {
        rc = NGX_ERROR;
        goto done;
    }

    n = BIO_get_mem_data(out, &p);

    private_pem->data = ngx_pnalloc(pool, n);
    if (n <= 0 || private_pem->data == NULL) {
        rc = NGX_ERROR;
        goto done;
    }

    ngx_memcpy(private_pem->data, p, n);
    private_pem->len = n;
    OPENSSL_cleanse(p, n);

    rc = NGX_OK;

done:

    ERR_clear_error();
    BIO_free(in);
    BIO_free(out);
    EVP_PKEY_free(pkey);

    return rc;
}
