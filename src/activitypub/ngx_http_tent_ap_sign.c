
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Our GETs to ActivityPub servers: an actor fetched and read (the
 * inbox's keyIds, the actors an app follows), signed (docs/activitypub.md
 * "Signed GETs"): draft-cavage-12 rsa-sha256 over "(request-target) host date"
 * with the key of the entity the request is for, keyId
 * "{entity}#main-key", so a server that answers only signed GETs
 * (Mastodon's authorized fetch) answers ours.  The entity's "K" row is
 * read for each signing request (a rotated key signs at once; one
 * tenant's key never signs another's request), its parse kept per
 * worker by entity and PEM.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_remote.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_ap.h"

#include <openssl/pem.h>
#include <openssl/err.h>


/* an actor document */
#define NGX_HTTP_TENT_AP_ACTOR_MAX  (128 * 1024)

/* the parsed keys a worker keeps, by entity and PEM */
#define NGX_HTTP_TENT_AP_SIGN_KEYS  16


typedef struct {
    u_char                         *entity;
    size_t                          entity_len;
    uint32_t                        crc;          /* of the PEM */
    EVP_PKEY                       *key;
} ngx_http_tent_ap_sign_slot_t;


/* a read of the key row in flight: the request's state put back after */
typedef struct {
    void                           *saved;
    void                           *data;
    ngx_http_tent_ap_signer_pt      done;
} ngx_http_tent_ap_signer_t;


static ngx_int_t ngx_http_tent_ap_signer_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static void ngx_http_tent_ap_sign_unref(void *data);
static void ngx_http_tent_ap_sign_free(void *data);


static ngx_http_tent_ap_sign_slot_t  *ngx_http_tent_ap_sign_slots;
static ngx_uint_t                     ngx_http_tent_ap_sign_next;


/*
 * The request's entity's key to done(r, key, data): NULL when it has
 * none (its GETs go unsigned; the key is made by the actor's first
 * fetch, not here).  ctx->state is the caller's again when done() runs.
 */

ngx_int_t
ngx_http_tent_ap_signer(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    void *data, ngx_http_tent_ap_signer_pt done)
{
    ngx_str_t                   key;
    ngx_http_tent_store_op_t   *op;
    ngx_http_tent_ap_signer_t  *s;

    s = ngx_palloc(r->pool, sizeof(ngx_http_tent_ap_signer_t));
    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (s == NULL || op == NULL
        || ngx_http_tent_ap_key_row(r->pool, &ctx->entity, &key) != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "reading the signing key");
    }

    s->saved = ctx->state;
    s->data = data;
    s->done = done;
    ctx->state = s;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: reading the signing key of \"%V\"",
                   &ctx->entity);

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_signer_read);
}


static ngx_int_t
ngx_http_tent_ap_signer_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                     *row;
    EVP_PKEY                   *key;
    ngx_int_t                   rc;
    ngx_str_t                   value, pem;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_ap_signer_t  *s;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    s = ctx->state;
    ctx->state = s->saved;
    key = NULL;

    if (op->status != NGX_HTTP_TENT_STORE_NOT_FOUND) {
        if (ngx_http_tent_store_value(op, &value) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "reading the key's row");
        }

        row = ngx_http_tent_json_own(r->pool,
                  ngx_http_tent_json_parse(&value, r->connection->log));

        if (row == NULL
            || ngx_http_tent_json_str(row, "private", &pem) != NGX_OK)
        {
            return ngx_http_tent_internal_error(r, "parsing the key's row");
        }

        key = ngx_http_tent_ap_sign_key(r->pool, r->connection->log,
                                        &ctx->entity, &pem);
        if (key == NULL) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "tent ap: the key of \"%V\" is not usable: "
                          "unsigned", &ctx->entity);
        }
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: the GETs of \"%V\" are %s", &ctx->entity,
                   key ? "signed" : "unsigned (no key)");

    return s->done(r, key, s->data);
}


/*
 * The entity's private PEM parsed: kept per worker (the last
 * NGX_HTTP_TENT_AP_SIGN_KEYS), a rotated PEM parsed again.  A reference
 * goes with the pool, so a slot reused never frees a key a request in
 * flight signs with.
 */

EVP_PKEY *
ngx_http_tent_ap_sign_key(ngx_pool_t *pool, ngx_log_t *log,
    ngx_str_t *entity, ngx_str_t *pem)
{
    BIO                           *in;
    uint32_t                       crc;
    EVP_PKEY                      *key;
    ngx_uint_t                     i;
    ngx_pool_cleanup_t            *cln, *pcln;
    ngx_http_tent_ap_sign_slot_t  *s;

    crc = ngx_crc32_long(pem->data, pem->len);

    pcln = ngx_pool_cleanup_add(pool, 0);
    if (pcln == NULL) {
        return NULL;
    }

    if (ngx_http_tent_ap_sign_slots == NULL) {
        cln = ngx_pool_cleanup_add(ngx_cycle->pool, 0);
        if (cln == NULL) {
            return NULL;
        }

        ngx_http_tent_ap_sign_slots = ngx_calloc(NGX_HTTP_TENT_AP_SIGN_KEYS
                                        * sizeof(ngx_http_tent_ap_sign_slot_t),
                                                 log);
        if (ngx_http_tent_ap_sign_slots == NULL) {
            return NULL;
        }

        cln->handler = ngx_http_tent_ap_sign_free;
        cln->data = NULL;
    }

    for (i = 0; i < NGX_HTTP_TENT_AP_SIGN_KEYS; i++) {
        s = &ngx_http_tent_ap_sign_slots[i];

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

    s = &ngx_http_tent_ap_sign_slots[ngx_http_tent_ap_sign_next++
                                     % NGX_HTTP_TENT_AP_SIGN_KEYS];

    if (s->key) {
        EVP_PKEY_free(s->key);
        ngx_free(s->entity);
        ngx_memzero(s, sizeof(ngx_http_tent_ap_sign_slot_t));
    }

    s->entity = ngx_alloc(entity->len, log);
    if (s->entity == NULL) {
        pcln->handler = ngx_http_tent_ap_sign_unref;
        pcln->data = key;
        return key;
    }

    ngx_memcpy(s->entity, entity->data, entity->len);
    s->entity_len = entity->len;
    s->crc = crc;
    s->key = key;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, log, 0,
                   "tent ap: the signing key of \"%V\" parsed", entity);

found:

    if (EVP_PKEY_up_ref(key) != 1) {
        return NULL;
    }

    pcln->handler = ngx_http_tent_ap_sign_unref;
    pcln->data = key;

    return key;
}


/*
 * An actor document, through the outbound fetch: the guard, the
 * operator's blocked domains, the budgets and the request's deadline
 * apply; the ActivityStreams Accept, 128 KB, two redirects.  The inbox's
 * keyIds and the actors an app follows (ngx_http_tent_ap_follow.c).
 */

ngx_int_t
ngx_http_tent_ap_actor_fetch(ngx_http_request_t *r, ngx_str_t *url,
    EVP_PKEY *key, void *data, ngx_http_tent_fetch_done_pt done)
{
    ngx_http_tent_fetch_t  *f;

    f = ngx_http_tent_remote_fetch(r, url, "GET");

    if (f == NULL
        || ngx_http_tent_ap_sign_fetch(r->pool, f,
                                       &ngx_http_tent_get_ctx(r)->entity, key)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "starting the actor's fetch");
    }

    ngx_str_set(&f->accept, "application/activity+json, application/ld+json;"
                " profile=\"https://www.w3.org/ns/activitystreams\"");
    f->max_response = NGX_HTTP_TENT_AP_ACTOR_MAX;
    f->redirects = 2;
    f->data = data;

    return ngx_http_tent_fetch_request(r, f, done);
}


/*
 * The fetched actor: a JSON object (owned by the request's pool) with an
 * "id" that is a URL on the origin of the last hop (else any host could
 * serve another's actor).  NULL: not so.
 */

json_t *
ngx_http_tent_ap_actor_read(ngx_http_request_t *r, ngx_http_tent_fetch_t *f,
    ngx_str_t *id)
{
    json_t     *doc;
    ngx_str_t   a, b;

    doc = ngx_http_tent_json_own(r->pool,
                                 ngx_http_tent_json_parse(&f->body,
                                                          r->connection->log));
    if (!json_is_object(doc)
        || ngx_http_tent_ap_url_of(json_object_get(doc, "id"), id) != NGX_OK
        || ngx_http_tent_share_host(r->pool, id, &a) != NGX_OK
        || ngx_http_tent_share_host(r->pool, &f->url, &b) != NGX_OK
        || a.len != b.len
        || ngx_strncasecmp(a.data, b.data, a.len) != 0)
    {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent: the actor fetched at \"%V\" has no id on its "
                      "origin", &f->url);
        return NULL;
    }

    return doc;
}


/* a fetch signed as the entity, when it has a key */

ngx_int_t
ngx_http_tent_ap_sign_fetch(ngx_pool_t *pool, ngx_http_tent_fetch_t *f,
    ngx_str_t *entity, EVP_PKEY *key)
{
    u_char  *p;

    if (key == NULL) {
        return NGX_OK;
    }

    f->sign_key_id.len = entity->len + sizeof("#main-key") - 1;
    f->sign_key_id.data = ngx_pnalloc(pool, f->sign_key_id.len);
    if (f->sign_key_id.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(f->sign_key_id.data, entity->data, entity->len);
    ngx_memcpy(p, "#main-key", sizeof("#main-key") - 1);

    f->sign_key = key;

    return NGX_OK;
}


static void
ngx_http_tent_ap_sign_unref(void *data)
{
    EVP_PKEY_free(data);
}


static void
ngx_http_tent_ap_sign_free(void *data)
{
    ngx_uint_t  i;

    if (ngx_http_tent_ap_sign_slots == NULL) {
        return;
    }

    for (i = 0; i < NGX_HTTP_TENT_AP_SIGN_KEYS; i++) {
        if (ngx_http_tent_ap_sign_slots[i].key) {
            EVP_PKEY_free(ngx_http_tent_ap_sign_slots[i].key);
            ngx_free(ngx_http_tent_ap_sign_slots[i].entity);
        }
    }

    ngx_free(ngx_http_tent_ap_sign_slots);
    ngx_http_tent_ap_sign_slots = NULL;
}
