
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The inbox's HTTP Signatures (issue #29, docs/activitypub.md "The
 * inbox"): which components a signature must cover, the clock, the
 * body's digest, the keyId's actor fetched through the guard and kept by
 * the worker, the activity's actor as the key's owner, replays.  The
 * library (ngx_http_tent_httpsig.h) parses and verifies one signature;
 * this file decides which signature is enough and what it may cost.
 *
 * What an anonymous request may make us fetch is bounded: a keyId's
 * fetch takes the worker's share of unsigned requests (and of those
 * naming its host), a keyId that failed is not fetched again for a
 * while, and a host whose keys failed too often in a minute gets no
 * fetch until the minute ends.  All four sets below are the worker's,
 * bounded in entries, the least recently used going first.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_ap.h"
#include "ngx_http_tent_ap_map.h"
#include "ngx_http_tent_ap_sets.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_httpsig.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_remote.h"

#include <openssl/sha.h>


/* the clock: Date or created, 12 hours back, one hour ahead (Mastodon) */
#define NGX_HTTP_TENT_AP_PAST          (12 * 3600)
#define NGX_HTTP_TENT_AP_FUTURE        3600

static ngx_int_t ngx_http_tent_ap_refuse(ngx_http_request_t *r,
    ngx_http_tent_ap_verify_t *v, ngx_uint_t status, const char *why);
static ngx_int_t ngx_http_tent_ap_covered(ngx_http_tent_httpsig_t *sig,
    const char *a, const char *b, const char *c);
static ngx_int_t ngx_http_tent_ap_key_fetch(ngx_http_request_t *r,
    ngx_http_tent_ap_verify_t *v);
static ngx_int_t ngx_http_tent_ap_key_signed(ngx_http_request_t *r,
    EVP_PKEY *key, void *data);
static ngx_int_t ngx_http_tent_ap_signer_key(ngx_http_request_t *r,
    ngx_http_tent_ap_verify_t *v, ngx_str_t *of, ngx_str_t *key);
static ngx_int_t ngx_http_tent_ap_key_fetched(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f);
static ngx_uint_t ngx_http_tent_ap_own_document(ngx_str_t *id,
    ngx_str_t *url);
static ngx_int_t ngx_http_tent_ap_key_read(ngx_http_request_t *r,
    ngx_http_tent_ap_verify_t *v, ngx_http_tent_fetch_t *f);
static void ngx_http_tent_ap_key_failed(ngx_http_tent_ap_verify_t *v,
    ngx_uint_t key);
static void ngx_http_tent_ap_key_drop(ngx_str_t *key_id);
static void ngx_http_tent_ap_key_refused(ngx_http_request_t *r,
    ngx_http_tent_ap_verify_t *v);
static ngx_int_t ngx_http_tent_ap_check(ngx_http_request_t *r,
    ngx_http_tent_ap_verify_t *v, ngx_http_tent_ap_entry_t *e);


/*
 * Before the body is read: a signature there, parsed.  NGX_OK, or
 * NGX_DECLINED with *rc the 401 (none) or 400 (malformed) sent.
 */

ngx_int_t
ngx_http_tent_ap_verify_init(ngx_http_request_t *r,
    ngx_http_tent_ap_verify_t *v, ngx_int_t *rc)
{
    ngx_int_t   src;
    ngx_str_t   name, input, sig;

    v->req.method = r->method_name;
    v->req.target = r->unparsed_uri;
    v->req.scheme.data = (u_char *) (r->connection->ssl ? "https" : "http");
    v->req.scheme.len = r->connection->ssl ? 5 : 4;
    v->req.headers = &r->headers_in.headers;

    if (r->headers_in.host) {
        v->req.authority = r->headers_in.host->value;

    } else {
        v->req.authority = r->headers_in.server;
    }

    ngx_str_set(&name, "signature-input");

    if (ngx_http_tent_httpsig_header(r->pool, &v->req, &name, &input)
        == NGX_HTTP_TENT_HTTPSIG_OK)
    {
        ngx_str_set(&name, "signature");

        src = ngx_http_tent_httpsig_header(r->pool, &v->req, &name, &sig);
        if (src == NGX_HTTP_TENT_HTTPSIG_OK) {
            src = ngx_http_tent_httpsig_parse_rfc9421(&input, &sig, &v->sig);
        }

    } else {
        ngx_str_set(&name, "signature");

        src = ngx_http_tent_httpsig_header(r->pool, &v->req, &name, &sig);
        if (src == NGX_HTTP_TENT_HTTPSIG_OK) {
            src = ngx_http_tent_httpsig_parse_cavage(&sig, &v->sig);
        }
    }

    if (src == NGX_HTTP_TENT_HTTPSIG_OK) {
        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: %s signature, keyId \"%V\", %ui "
                       "components", v->sig.rfc9421 ? "RFC 9421" : "cavage",
                       &v->sig.key_id, v->sig.ncomponents);
        return NGX_OK;
    }

    *rc = ngx_http_tent_ap_refuse(r, v,
                                  src == NGX_HTTP_TENT_HTTPSIG_ABSENT
                                  ? NGX_HTTP_UNAUTHORIZED
                                  : (src == NGX_HTTP_TENT_HTTPSIG_TOO_LONG
                                     || src == NGX_HTTP_TENT_HTTPSIG_SYNTAX
                                     || src == NGX_HTTP_TENT_HTTPSIG_DUPLICATE
                                     || src == NGX_HTTP_TENT_HTTPSIG_TOO_MANY)
                                    ? NGX_HTTP_BAD_REQUEST
                                    : NGX_HTTP_UNAUTHORIZED,
                                  src == NGX_HTTP_TENT_HTTPSIG_ABSENT
                                  ? "no HTTP signature"
                                  : ngx_http_tent_httpsig_strerror(src));

    return NGX_DECLINED;
}


/*
 * The body read (v->activity, v->body): what is covered, the clock, the
 * digest, the activity's actor, a replay; then the key, kept or fetched.
 */

ngx_int_t
ngx_http_tent_ap_verify(ngx_http_request_t *r, ngx_http_tent_ap_verify_t *v,
    ngx_http_tent_ap_verified_pt done)
{
    u_char                    *p;
    json_t                    *actor;
    ngx_int_t                  src;
    ngx_str_t                  name, value, key;
    ngx_uint_t                 digested;
    ngx_http_tent_ap_entry_t  *e;

    v->done = done;

    if (ngx_http_tent_ap_sets_init() != NGX_OK) {
        return ngx_http_tent_internal_error(r, "making the key cache");
    }

    /* the request, its host, its time and its body must be signed */

    if (v->sig.rfc9421) {
        if (!ngx_http_tent_ap_covered(&v->sig, "@method", NULL, NULL)
            || !ngx_http_tent_ap_covered(&v->sig, "@target-uri", "@path",
                                         "@request-target"))
        {
            return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                       "the signature must cover @method and @target-uri "
                       "or @path");
        }

        if (!ngx_http_tent_ap_covered(&v->sig, "@authority", "host", NULL)) {
            return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                       "the signature must cover @authority");
        }

    } else if (!ngx_http_tent_ap_covered(&v->sig, "(request-target)", NULL,
                                         NULL)
               || !ngx_http_tent_ap_covered(&v->sig, "host", NULL, NULL))
    {
        return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                   "the signature must cover (request-target) and host");
    }

    /* cavage's created counts only when "(created)" is covered */

    if (!v->sig.rfc9421
        && !ngx_http_tent_ap_covered(&v->sig, "(created)", NULL, NULL))
    {
        v->sig.created = -1;
        v->sig.expires = -1;
    }

    if (!ngx_http_tent_ap_covered(&v->sig, "date", NULL, NULL)
        && v->sig.created == -1)
    {
        return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                   "the signature must cover date or created");
    }

    /* the clock: every time given must be in the window */

    if (v->sig.created != -1
        && ngx_http_tent_httpsig_time_check(v->sig.created, ngx_time(),
                                            NGX_HTTP_TENT_AP_PAST,
                                            NGX_HTTP_TENT_AP_FUTURE)
           != NGX_HTTP_TENT_HTTPSIG_OK)
    {
        return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                   "the signature's created is outside the window");
    }

    if (v->sig.expires != -1 && v->sig.expires < ngx_time()) {
        return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                                       "the signature expired");
    }

    if (ngx_http_tent_ap_covered(&v->sig, "date", NULL, NULL)) {
        ngx_str_set(&name, "date");

        if (ngx_http_tent_httpsig_header(r->pool, &v->req, &name, &value)
            != NGX_HTTP_TENT_HTTPSIG_OK
            || ngx_http_tent_httpsig_date_check(&value, ngx_time(),
                                                NGX_HTTP_TENT_AP_PAST,
                                                NGX_HTTP_TENT_AP_FUTURE)
               != NGX_HTTP_TENT_HTTPSIG_OK)
        {
            return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                       "Date is missing or outside the window");
        }
    }

    /* the body: each digest covered must match, and one must be */

    digested = 0;

    if (ngx_http_tent_ap_covered(&v->sig, "digest", NULL, NULL)) {
        ngx_str_set(&name, "digest");

        src = ngx_http_tent_httpsig_header(r->pool, &v->req, &name, &value);
        if (src == NGX_HTTP_TENT_HTTPSIG_OK) {
            src = ngx_http_tent_httpsig_digest_check(&value, 0, &v->body);
        }

        if (src != NGX_HTTP_TENT_HTTPSIG_OK) {
            return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                       "Digest is missing or does not match the body");
        }

        digested = 1;
    }

    if (ngx_http_tent_ap_covered(&v->sig, "content-digest", NULL, NULL)) {
        ngx_str_set(&name, "content-digest");

        src = ngx_http_tent_httpsig_header(r->pool, &v->req, &name, &value);
        if (src == NGX_HTTP_TENT_HTTPSIG_OK) {
            src = ngx_http_tent_httpsig_digest_check(&value, 1, &v->body);
        }

        if (src != NGX_HTTP_TENT_HTTPSIG_OK) {
            return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                       "Content-Digest is missing or does not match the "
                       "body");
        }

        digested = 1;
    }

    if (!digested) {
        return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                   "the signature must cover digest or content-digest");
    }

    /* the activity's actor, a string or an object with its id */

    actor = json_object_get(v->activity, "actor");
    if (json_is_object(actor)) {
        actor = json_object_get(actor, "id");
    }

    if (!json_is_string(actor) || json_string_length(actor) == 0
        || json_string_length(actor) > NGX_HTTP_TENT_AP_URL_MAX)
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                        "The activity has no actor");
    }

    v->actor.data = (u_char *) json_string_value(actor);
    v->actor.len = json_string_length(actor);

    /* the key to fetch: the keyId without its fragment, an http(s) URL */

    p = ngx_strlchr(v->sig.key_id.data,
                    v->sig.key_id.data + v->sig.key_id.len, '#');

    v->key_url.data = v->sig.key_id.data;
    v->key_url.len = p ? (size_t) (p - v->sig.key_id.data)
                       : v->sig.key_id.len;

    if (v->key_url.len > NGX_HTTP_TENT_AP_URL_MAX
        || ngx_http_tent_share_host(r->pool, &v->key_url, &v->key_host)
           != NGX_OK)
    {
        return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                                       "the keyId is no http(s) URL");
    }

    /* a signature seen in the window: a replay */

    key.len = v->sig.key_id.len + 1 + v->sig.signature.len;
    key.data = ngx_pnalloc(r->pool, key.len);
    v->seen.data = ngx_pnalloc(r->pool, SHA256_DIGEST_LENGTH);

    if (key.data == NULL || v->seen.data == NULL) {
        return ngx_http_tent_internal_error(r, "hashing the signature");
    }

    p = ngx_cpymem(key.data, v->sig.key_id.data, v->sig.key_id.len);
    *p++ = '\n';
    ngx_memcpy(p, v->sig.signature.data, v->sig.signature.len);

    if (EVP_Digest(key.data, key.len, v->seen.data, NULL, EVP_sha256(), NULL)
        != 1)
    {
        return ngx_http_tent_internal_error(r, "hashing the signature");
    }

    v->seen.len = SHA256_DIGEST_LENGTH;

    if (ngx_http_tent_ap_set_get(&ngx_http_tent_ap_sets->seen, &v->seen)) {
        return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                                       "the signature was seen before");
    }

    /* the key, kept */

    e = ngx_http_tent_ap_set_get(&ngx_http_tent_ap_sets->keys,
                                 &v->sig.key_id);
    if (e) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: key \"%V\" kept", &v->sig.key_id);
        return ngx_http_tent_ap_check(r, v, e);
    }

    key = v->sig.key_id;

    if (ngx_http_tent_ap_set_get(&ngx_http_tent_ap_sets->failed, &key)) {
        return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                   "the keyId's actor could not be fetched lately");
    }

    return ngx_http_tent_ap_key_fetch(r, v);
}


/* whether the signature covers one of a, b or c */

static ngx_int_t
ngx_http_tent_ap_covered(ngx_http_tent_httpsig_t *sig, const char *a,
    const char *b, const char *c)
{
    size_t       len;
    ngx_uint_t   i, k;
    const char  *names[3];

    names[0] = a;
    names[1] = b;
    names[2] = c;

    for (i = 0; i < sig->ncomponents; i++) {
        for (k = 0; k < 3; k++) {
            if (names[k] == NULL) {
                continue;
            }

            len = ngx_strlen(names[k]);

            if (sig->components[i].len == len
                && ngx_strncasecmp(sig->components[i].data,
                                   (u_char *) names[k], len)
                   == 0)
            {
                return 1;
            }
        }
    }

    return 0;
}


static ngx_int_t
ngx_http_tent_ap_refuse(ngx_http_request_t *r, ngx_http_tent_ap_verify_t *v,
    ngx_uint_t status, const char *why)
{
    u_char  *msg, *p;
    size_t   len;

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "tent inbox: refused, keyId \"%V\": %s",
                  &v->sig.key_id, why);

    len = ngx_strlen(why) + sizeof("Unauthorized: ");

    msg = ngx_pnalloc(r->pool, len);
    if (msg == NULL) {
        return ngx_http_tent_internal_error(r, "writing the refusal");
    }

    p = ngx_sprintf(msg, "%s: %s",
                    status == NGX_HTTP_BAD_REQUEST ? "Malformed"
                                                   : "Unauthorized", why);
    *p = '\0';

    return ngx_http_tent_send_error(r, status, (char *) msg);
}


/*
 * The keyId's actor: through the outbound fetch, so the guard, the
 * operator's blocked domains and the budgets apply; unsigned requests'
 * share (and that of those naming the host) bounds how many are in
 * flight, and a host whose keys keep failing is left alone a while.
 */

static ngx_int_t
ngx_http_tent_ap_key_fetch(ngx_http_request_t *r,
    ngx_http_tent_ap_verify_t *v)
{
    ngx_int_t                  rc;
    ngx_http_tent_ap_entry_t  *h;

    h = ngx_http_tent_ap_set_get(&ngx_http_tent_ap_sets->hosts,
                                 &v->key_host);

    if (h && h->count >= NGX_HTTP_TENT_AP_HOST_FAILS) {
        return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                   "too many of the host's keys failed lately");
    }

    if (!v->anonymous) {
        v->anonymous = 1;

        if (ngx_http_tent_remote_anonymous(r, &v->key_url, &rc) != NGX_OK) {
            return rc;
        }
    }

    v->fetched = 1;

    /* signed with the key of the entity the request is for */

    if (!v->signer) {
        return ngx_http_tent_ap_signer(r, ngx_http_tent_get_ctx(r), v,
                                       ngx_http_tent_ap_key_signed);
    }

    return ngx_http_tent_ap_key_signed(r, v->sign_key, v);
}


/*
 * The fetch, signed as the request's entity (Mastodon's authorized
 * fetch answers only signed GETs).  What the actor's server refused
 * this entity (401, 403: it may block it) is kept for this entity only
 * (ngx_http_tent_ap_key_fetched()): another tenant's fetch of the same
 * key may pass.
 */

static ngx_int_t
ngx_http_tent_ap_key_signed(ngx_http_request_t *r, EVP_PKEY *key,
    void *data)
{
    ngx_http_tent_ap_verify_t *v = data;

    ngx_str_t                  k;
    ngx_http_tent_ap_entry_t  *h;

    v->sign_key = key;
    v->signer = 1;

    if (key) {
        if (ngx_http_tent_ap_signer_key(r, v, &v->sig.key_id, &k) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "keying the failure");
        }

        if (ngx_http_tent_ap_set_get(&ngx_http_tent_ap_sets->failed, &k)) {
            return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                       "the keyId's actor refused our fetch lately");
        }

        if (ngx_http_tent_ap_signer_key(r, v, &v->key_host, &k) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "keying the failure");
        }

        h = ngx_http_tent_ap_set_get(&ngx_http_tent_ap_sets->hosts, &k);

        if (h && h->count >= NGX_HTTP_TENT_AP_HOST_FAILS) {
            return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                       "the host refused too many of our fetches lately");
        }
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent inbox: fetching the key's actor \"%V\"%s",
                   &v->key_url, key ? ", signed" : "");

    return ngx_http_tent_ap_actor_fetch(r, &v->key_url, key, v,
                                        ngx_http_tent_ap_key_fetched);
}


/* "of" for the signing entity alone: "<of> <entity>" */

static ngx_int_t
ngx_http_tent_ap_signer_key(ngx_http_request_t *r,
    ngx_http_tent_ap_verify_t *v, ngx_str_t *of, ngx_str_t *key)
{
    u_char               *p;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    key->len = of->len + 1 + ctx->entity.len;
    key->data = ngx_pnalloc(r->pool, key->len);
    if (key->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(key->data, of->data, of->len);
    *p++ = ' ';
    ngx_memcpy(p, ctx->entity.data, ctx->entity.len);

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_ap_key_fetched(ngx_http_request_t *r, ngx_http_tent_fetch_t *f)
{
    ngx_int_t                   rc;
    ngx_http_tent_ap_verify_t  *v;

    v = f->data;

    if (ngx_http_tent_fetch_busy(f)) {
        return ngx_http_tent_remote_error(r, f, "The key's GET");
    }

    if (f->result != NGX_HTTP_TENT_FETCH_OK || f->status != 200) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent inbox: the key's actor %V: %s, status %ui",
                      &v->key_url, ngx_http_tent_fetch_strerror(f->result),
                      f->status);

        if (v->sign_key && f->result == NGX_HTTP_TENT_FETCH_OK
            && (f->status == NGX_HTTP_UNAUTHORIZED
                || f->status == NGX_HTTP_FORBIDDEN))
        {
            ngx_http_tent_ap_key_refused(r, v);

            return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                                           "the keyId's actor refused our "
                                           "fetch");
        }

        /*
         * A kept key fetched again stays unless its actor is gone: a
         * failure of its host (or of its budget) is no word on the key,
         * and junk signatures naming it must not evict it
         */

        if (v->refetch
            && (f->result != NGX_HTTP_TENT_FETCH_OK
                || (f->status != NGX_HTTP_NOT_FOUND
                    && f->status != 410)))
        {
            ngx_http_tent_ap_key_failed(v, 0);

        } else {
            if (v->refetch) {
                ngx_http_tent_ap_key_drop(&v->sig.key_id);
            }

            ngx_http_tent_ap_key_failed(v, 1);
        }

        return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                                       "the keyId's actor was not fetched");
    }

    rc = ngx_http_tent_ap_key_read(r, v, f);

    if (rc == NGX_DONE && v->refetch) {

        /* no actor document (an error page served 200): the key stays */

        ngx_http_tent_ap_key_failed(v, 0);

        return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                   "the keyId's actor was not fetched");
    }

    if (rc == NGX_DECLINED || rc == NGX_DONE) {

        /* the actor's own document no longer gives the key: it goes */

        if (v->refetch) {
            ngx_http_tent_ap_key_drop(&v->sig.key_id);
        }

        ngx_http_tent_ap_key_failed(v, 1);

        return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                   "the keyId's actor has no such key, or it names "
                   "another owner");
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_internal_error(r, "keeping the key");
    }

    return ngx_http_tent_ap_check(r, v, v->entry);
}


/* a failure of the keyId's host in this minute; with "key", the keyId's */

static void
ngx_http_tent_ap_key_failed(ngx_http_tent_ap_verify_t *v, ngx_uint_t key)
{
    time_t                     now;
    ngx_http_tent_ap_entry_t  *h;

    now = ngx_time();

    if (key) {
        (void) ngx_http_tent_ap_set_add(&ngx_http_tent_ap_sets->failed,
                                        &v->sig.key_id,
                                        now + NGX_HTTP_TENT_AP_FAILED_TTL,
                                        NULL, NULL, NULL);
    }

    h = ngx_http_tent_ap_set_get(&ngx_http_tent_ap_sets->hosts,
                                 &v->key_host);
    if (h == NULL) {
        h = ngx_http_tent_ap_set_add(&ngx_http_tent_ap_sets->hosts,
                                     &v->key_host,
                                     now + NGX_HTTP_TENT_AP_HOST_WINDOW,
                                     NULL, NULL, NULL);
    }

    if (h) {
        h->count++;
    }
}


/*
 * A signed fetch refused (401, 403): a failure of the keyId and of its
 * host for this entity only, as ngx_http_tent_ap_key_failed() counts
 */

static void
ngx_http_tent_ap_key_refused(ngx_http_request_t *r,
    ngx_http_tent_ap_verify_t *v)
{
    time_t                     now;
    ngx_str_t                  k;
    ngx_http_tent_ap_entry_t  *h;

    now = ngx_time();

    if (ngx_http_tent_ap_signer_key(r, v, &v->sig.key_id, &k) == NGX_OK) {
        (void) ngx_http_tent_ap_set_add(&ngx_http_tent_ap_sets->failed, &k,
                                        now + NGX_HTTP_TENT_AP_FAILED_TTL,
                                        NULL, NULL, NULL);
    }

    if (ngx_http_tent_ap_signer_key(r, v, &v->key_host, &k) != NGX_OK) {
        return;
    }

    h = ngx_http_tent_ap_set_get(&ngx_http_tent_ap_sets->hosts, &k);
    if (h == NULL) {
        h = ngx_http_tent_ap_set_add(&ngx_http_tent_ap_sets->hosts, &k,
                                     now + NGX_HTTP_TENT_AP_HOST_WINDOW,
                                     NULL, NULL, NULL);
    }

    if (h) {
        h->count++;
    }
}


/* a string of at most NGX_HTTP_TENT_AP_URL_MAX bytes, or NGX_DECLINED */

ngx_int_t
ngx_http_tent_ap_url_of(json_t *v, ngx_str_t *out)
{
    if (!json_is_string(v) || json_string_length(v) == 0
        || json_string_length(v) > NGX_HTTP_TENT_AP_URL_MAX)
    {
        return NGX_DECLINED;
    }

    out->data = (u_char *) json_string_value(v);
    out->len = json_string_length(v);

    return NGX_OK;
}


/*
 * The actor document: its publicKey (an object or a list) whose id is
 * the keyId and whose owner is the document's id, the actor on the host
 * it was fetched from (else any host could claim another's actor).
 */

/*
 * A document fetched at "url" is the actor "id"'s own: the same URL, or
 * one under the id's path when the id has a path (a bare origin as the
 * id owns no path of its host: anything on it may be an upload)
 */

static ngx_uint_t
ngx_http_tent_ap_own_document(ngx_str_t *id, ngx_str_t *url)
{
    size_t   n;
    u_char  *p, *last;

    /* the same, or but a "/" at the end of one (a bare origin's path) */

    n = ngx_min(url->len, id->len);

    if (ngx_strncmp(url->data, id->data, n) == 0
        && (url->len == id->len
            || (url->len == n + 1 && url->data[n] == '/')
            || (id->len == n + 1 && id->data[n] == '/')))
    {
        return 1;
    }

    last = id->data + id->len;

    p = ngx_strlcasestrn(id->data, last, (u_char *) "://", 3 - 1);
    if (p == NULL) {
        return 0;
    }

    p = ngx_strlchr(p + 3, last, '/');

    if (p == NULL || p + 1 >= last || url->len <= id->len
        || ngx_strncmp(url->data, id->data, id->len) != 0)
    {
        return 0;
    }

    return last[-1] == '/' || url->data[id->len] == '/';
}


static ngx_int_t
ngx_http_tent_ap_key_read(ngx_http_request_t *r,
    ngx_http_tent_ap_verify_t *v, ngx_http_tent_fetch_t *f)
{
    size_t                     i;
    json_t                    *doc, *keys, *k, *found;
    EVP_PKEY                  *pkey;
    ngx_str_t                  id, owner, pem, host, inbox, shared, s;
    ngx_http_tent_ap_entry_t  *e;

    doc = ngx_http_tent_ap_actor_read(r, f, &id);
    if (doc == NULL) {
        return NGX_DONE;
    }

    /*
     * The actor's own document: fetched at its id or under its path (a
     * key document as GoToSocial serves, <actor>/main-key), never one
     * elsewhere on its origin that claims it (an upload, another user's
     * page: anyone who can publish a file there would sign as the actor)
     */

    if (!ngx_http_tent_ap_own_document(&id, &f->url)) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent inbox: the key document at \"%V\" is not the "
                      "actor \"%V\"'s own", &f->url, &id);
        return NGX_DECLINED;
    }

    /* the actor, the last hop and the keyId on one origin */

    if (ngx_http_tent_share_host(r->pool, &id, &host) != NGX_OK
        || host.len != v->key_host.len
        || ngx_strncasecmp(host.data, v->key_host.data, host.len) != 0)
    {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent inbox: the actor \"%V\" is not on the keyId's "
                      "host", &id);
        return NGX_DECLINED;
    }

    keys = json_object_get(doc, "publicKey");
    found = NULL;

    if (json_is_object(keys)) {
        keys = json_pack("[O]", keys);
        if (keys == NULL || ngx_http_tent_json_cleanup(r->pool, keys)
                            != NGX_OK)
        {
            json_decref(keys);
            return NGX_ERROR;
        }
    }

    json_array_foreach(keys, i, k) {
        if (i >= 8) {
            break;
        }

        if (ngx_http_tent_ap_url_of(json_object_get(k, "id"), &s) == NGX_OK
            && s.len == v->sig.key_id.len
            && ngx_strncmp(s.data, v->sig.key_id.data, s.len) == 0)
        {
            found = k;
            break;
        }
    }

    if (found == NULL
        || ngx_http_tent_ap_url_of(json_object_get(found, "owner"), &owner)
           != NGX_OK
        || owner.len != id.len
        || ngx_strncmp(owner.data, id.data, id.len) != 0
        || ngx_http_tent_json_str(found, "publicKeyPem", &pem) != NGX_OK)
    {
        return NGX_DECLINED;
    }

    pkey = ngx_http_tent_httpsig_pem_key(&pem);
    if (pkey == NULL) {
        return NGX_DECLINED;
    }

    /*
     * Its inboxes, on its own origin only: a signed actor must not point
     * our Accept and our posts at a third party's inbox (an Update of
     * its Person is held to the same rule)
     */

    if (ngx_http_tent_ap_url_of(json_object_get(doc, "inbox"), &inbox)
        != NGX_OK
        || ngx_http_tent_ap_same_origin(&inbox, &id) != NGX_OK)
    {
        ngx_str_null(&inbox);
    }

    if (ngx_http_tent_ap_url_of(json_object_get(json_object_get(doc,
                                                               "endpoints"),
                                                "sharedInbox"),
                                &shared)
        != NGX_OK
        || ngx_http_tent_ap_same_origin(&shared, &id) != NGX_OK)
    {
        ngx_str_null(&shared);
    }

    e = ngx_http_tent_ap_set_add(&ngx_http_tent_ap_sets->keys,
                                 &v->sig.key_id,
                                 ngx_time() + NGX_HTTP_TENT_AP_KEY_TTL,
                                 &owner, &inbox, &shared);
    if (e == NULL) {
        EVP_PKEY_free(pkey);
        return NGX_ERROR;
    }

    e->pkey = pkey;
    v->entry = e;

    /* its name and icon, for a Follow's follower record */

    if (ngx_http_tent_ap_face(r->pool, doc, &e->face_name, &e->face_icon)
        != NGX_OK
        || ngx_http_tent_ap_face_alloc(r->connection->log, &e->face_name,
                                       &e->face_icon, &e->face)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent inbox: key \"%V\" of \"%V\" kept",
                   &v->sig.key_id, &owner);

    return NGX_OK;
}


/* the signature against the key; the activity's actor its owner */

static ngx_int_t
ngx_http_tent_ap_check(ngx_http_request_t *r, ngx_http_tent_ap_verify_t *v,
    ngx_http_tent_ap_entry_t *e)
{
    ngx_int_t  src;

    src = ngx_http_tent_httpsig_verify(r->pool, &v->sig, &v->req, e->pkey);

    if (src == NGX_HTTP_TENT_HTTPSIG_NOMEM) {
        return ngx_http_tent_internal_error(r, "verifying the signature");
    }

    /*
     * A key kept a while may have been rotated: the actor fetched again,
     * once for the request and at most once a minute for the keyId (the
     * try counts, whatever comes of it).  The kept key stays until the
     * fetch gives another or finds the actor gone: anyone can send a
     * junk signature naming it, and must not evict it that way.
     */

    if (src == NGX_HTTP_TENT_HTTPSIG_BAD && !v->fetched
        && ngx_time() - e->since >= NGX_HTTP_TENT_AP_KEY_REFETCH)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: key \"%V\" failed, fetched again",
                       &v->sig.key_id);

        e->since = ngx_time();
        v->refetch = 1;

        return ngx_http_tent_ap_key_fetch(r, v);
    }

    if (src != NGX_HTTP_TENT_HTTPSIG_OK) {
        return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                                       ngx_http_tent_httpsig_strerror(src));
    }

    if (e->owner.len != v->actor.len
        || ngx_strncmp(e->owner.data, v->actor.data, v->actor.len) != 0)
    {
        return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                   "the activity's actor is not the key's owner");
    }

    /* copies: the entry may go while the request goes on */

    v->owner.data = ngx_pstrdup(r->pool, &e->owner);
    v->owner.len = e->owner.len;
    v->inbox.data = ngx_pstrdup(r->pool, &e->inbox);
    v->inbox.len = e->inbox.len;
    v->shared_inbox.data = ngx_pstrdup(r->pool, &e->shared_inbox);
    v->shared_inbox.len = e->shared_inbox.len;

    if ((e->owner.len && v->owner.data == NULL)
        || (e->inbox.len && v->inbox.data == NULL)
        || (e->shared_inbox.len && v->shared_inbox.data == NULL)
        || ngx_http_tent_ap_face_copy(r->pool, &e->face_name,
                                      &e->face_icon, &v->name, &v->icon)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "copying the key's actor");
    }

    /*
     * seen: the same signature again in the window is a replay; checked
     * again, as a twin may have verified while this one fetched the key
     */

    if (ngx_http_tent_ap_set_get(&ngx_http_tent_ap_sets->seen, &v->seen)) {
        return ngx_http_tent_ap_refuse(r, v, NGX_HTTP_UNAUTHORIZED,
                                       "the signature was seen before");
    }

    (void) ngx_http_tent_ap_set_add(&ngx_http_tent_ap_sets->seen, &v->seen,
                                    ngx_time() + NGX_HTTP_TENT_AP_PAST
                                    + NGX_HTTP_TENT_AP_FUTURE,
                                    NULL, NULL, NULL);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent inbox: signature of \"%V\" by \"%V\" verified",
                   &v->sig.key_id, &v->actor);

    return v->done(r, v);
}


/*
 * Update(Person): the actor's kept key and URLs dropped in this worker,
 * so its next activity fetches the document again (its new inbox, its
 * new key); the other workers keep theirs until the hour ends.
 */

void
ngx_http_tent_ap_verify_forget(ngx_http_tent_ap_verify_t *v)
{
    ngx_http_tent_ap_key_drop(&v->sig.key_id);
}


/* a kept key dropped, if it is still there (it may have gone meanwhile) */

static void
ngx_http_tent_ap_key_drop(ngx_str_t *key_id)
{
    ngx_http_tent_ap_entry_t  *e;

    if (ngx_http_tent_ap_sets == NULL) {
        return;
    }

    e = ngx_http_tent_ap_set_get(&ngx_http_tent_ap_sets->keys, key_id);
    if (e) {
        ngx_http_tent_ap_set_drop(&ngx_http_tent_ap_sets->keys, e);
    }
}
