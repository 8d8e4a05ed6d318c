
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * GET {api}/avatars/:entity: the avatar of an entity the owner follows
 * or is followed by, served from our own origin, so that the page (CSP
 * connect-src 'self') shows faces of other origins without telling
 * their servers who reads it.  Never an open proxy: the URL fetched is
 * only the avatar_url of the basic profile kept with that following or
 * follower (an ActivityPub one's "icon" when its record keeps one).
 * The answer is served only as the image its first bytes say, kept in
 * a small per-worker cache (docs/web.md#avatars-of-other-origins).
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_blocks.h"
#include "ngx_http_tent_domains.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_remote.h"


#define NGX_HTTP_TENT_AVATAR_MAX        (1024 * 1024)   /* one avatar */
#define NGX_HTTP_TENT_AVATAR_URL_MAX    2048
#define NGX_HTTP_TENT_AVATAR_ENTRIES    512             /* a worker's */
#define NGX_HTTP_TENT_AVATAR_BYTES      (16 * 1024 * 1024)
#define NGX_HTTP_TENT_AVATAR_TTL        3600            /* seconds */
#define NGX_HTTP_TENT_AVATAR_FAIL_TTL   60
#define NGX_HTTP_TENT_AVATAR_POLL       100             /* ms */

#define NGX_HTTP_TENT_AVATAR_ACCEPT                                           \
    "image/png, image/jpeg, image/gif, image/webp"
#define NGX_HTTP_TENT_AVATAR_BASIC      "https://tent.io/types/info/basic/"


/* a worker's cached avatar, or a failure to fetch it */
typedef struct {
    ngx_queue_t                     queue;       /* most recent first */
    uint32_t                        hash;
    time_t                          expires;
    ngx_uint_t                      status;      /* 200, or the error's */
    const char                     *type;        /* the sniffed type */
    ngx_str_t                       key;         /* tenant 0x00 url */
    ngx_str_t                       data;        /* the image, the error */
    size_t                          size;        /* all of it, counted */
} ngx_http_tent_avatar_t;


/* a fetch in flight in this worker: others asking for it wait for it */
typedef struct {
    ngx_queue_t                     queue;
    uint32_t                        hash;
    ngx_str_t                       key;
} ngx_http_tent_avatar_pending_t;


typedef struct {
    ngx_str_t                       entity;
    ngx_str_t                       url;
    ngx_str_t                       key;
    uint32_t                        hash;
    ngx_uint_t                      followers;   /* looked there already */
    ngx_http_request_t             *request;
    ngx_http_tent_avatar_pending_t *pending;     /* ours, while fetching */
    ngx_event_t                     wait;        /* for another's fetch */
    ngx_msec_t                      wait_until;
} ngx_http_tent_avatar_state_t;


static ngx_int_t ngx_http_tent_avatar_record(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *record);
static void ngx_http_tent_avatar_no_location(ngx_http_request_t *r);
static ngx_int_t ngx_http_tent_avatar_url(json_t *record, ngx_str_t *url);
static ngx_int_t ngx_http_tent_avatar_fetch(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_avatar_state_t *st);
static ngx_http_tent_avatar_pending_t *ngx_http_tent_avatar_pending_find(
    ngx_http_tent_avatar_state_t *st);
static void ngx_http_tent_avatar_pending_done(void *data);
static void ngx_http_tent_avatar_wait(ngx_event_t *ev);
static ngx_int_t ngx_http_tent_avatar_fetched(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f);
static const char *ngx_http_tent_avatar_sniff(ngx_str_t *body);
static ngx_http_tent_avatar_t *ngx_http_tent_avatar_find(ngx_str_t *key,
    uint32_t hash);
static void ngx_http_tent_avatar_keep(ngx_log_t *log,
    ngx_http_tent_avatar_state_t *st, ngx_uint_t status, const char *type,
    ngx_str_t *data);
static void ngx_http_tent_avatar_drop(ngx_http_tent_avatar_t *a);
static ngx_int_t ngx_http_tent_avatar_send(ngx_http_request_t *r,
    ngx_uint_t status, const char *type, ngx_str_t *data, time_t max_age);


static ngx_queue_t  ngx_http_tent_avatars;
static ngx_queue_t  ngx_http_tent_avatars_pending;
static ngx_uint_t   ngx_http_tent_avatars_n;
static size_t       ngx_http_tent_avatars_bytes;


/* GET and HEAD {api}/avatars/:entity (the entity URL-escaped) */

ngx_int_t
ngx_http_tent_avatar_get(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    u_char                        *dst, *src;
    ngx_int_t                      rc;
    ngx_str_t                      raw;
    ngx_http_tent_avatar_state_t  *st;

    /*
     * The owner's authorizations only, with the scope of the list the
     * entity is in: an app's own key, a follower's or a following's, or
     * no key at all make this server fetch nothing for anyone
     */

    if (ctx->principal.kind != NGX_HTTP_TENT_AUTHORIZATION
        || (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_FOLLOWINGS)
            && !ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_FOLLOWERS)))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_avatar_state_t));
    raw.data = ngx_pnalloc(r->pool, ctx->params[0].len + 1);
    if (st == NULL || raw.data == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the avatar state");
    }

    dst = raw.data;
    src = ctx->params[0].data;
    ngx_unescape_uri(&dst, &src, ctx->params[0].len, 0);
    raw.len = dst - raw.data;

    rc = ngx_http_tent_entity_canonical(r->pool, &raw, &st->entity);

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "spelling the entity");
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                        "Not a known entity");
    }

    /* nothing is read from a blocked entity, even through us */

    if (ngx_http_tent_blocks_has(ctx->blocks, &st->entity)
        || ngx_http_tent_domains_entity(&st->entity))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "The entity is blocked");
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent avatars: the avatar of \"%V\" asked for",
                   &st->entity);

    ctx->state = st;

    if (ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_FOLLOWINGS)) {
        return ngx_http_tent_relation_load_entity(r, ctx,
                                              &ngx_http_tent_followings_rel,
                                              &st->entity,
                                              ngx_http_tent_avatar_record);
    }

    st->followers = 1;

    return ngx_http_tent_relation_load_entity(r, ctx,
                                              &ngx_http_tent_followers_rel,
                                              &st->entity,
                                              ngx_http_tent_avatar_record);
}


/* the following's record, then the follower's, read: its avatar_url */

static ngx_int_t
ngx_http_tent_avatar_record(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    json_t *record)
{
    ngx_http_tent_avatar_t        *a;
    ngx_http_tent_avatar_state_t  *st;

    st = ctx->state;

    ngx_http_tent_avatar_no_location(r);

    if (record && json_is_false(json_object_get(record, "confirmed"))) {
        record = NULL;
    }

    if (record == NULL || ngx_http_tent_avatar_url(record, &st->url)
                          != NGX_OK)
    {
        if (!st->followers
            && ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_FOLLOWERS))
        {
            st->followers = 1;

            return ngx_http_tent_relation_load_entity(r, ctx,
                                              &ngx_http_tent_followers_rel,
                                              &st->entity,
                                              ngx_http_tent_avatar_record);
        }

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent avatars: no avatar kept for \"%V\"",
                       &st->entity);

        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                        "No avatar is known for the entity");
    }

    /* the tenant's own entries: another's fetches are not its business */

    st->key.len = ctx->entity.len + 1 + st->url.len;
    st->key.data = ngx_pnalloc(r->pool, st->key.len);
    if (st->key.data == NULL) {
        return ngx_http_tent_internal_error(r, "making the avatar's key");
    }

    ngx_memcpy(ngx_cpymem(st->key.data, ctx->entity.data, ctx->entity.len)
               + 1, st->url.data, st->url.len);
    st->key.data[ctx->entity.len] = '\0';
    st->hash = ngx_crc32_short(st->key.data, st->key.len);

    a = ngx_http_tent_avatar_find(&st->key, st->hash);

    if (a) {
        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent avatars: %V of \"%V\" from the cache: %ui",
                       &st->url, &st->entity, a->status);

        return ngx_http_tent_avatar_send(r, a->status, a->type, &a->data,
                                         a->expires - ngx_time());
    }

    return ngx_http_tent_avatar_fetch(r, ctx, st);
}


/* the record's Content-Location, which the load by entity adds: no image's */

static void
ngx_http_tent_avatar_no_location(ngx_http_request_t *r)
{
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_out.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                break;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash && h[i].key.len == sizeof("Content-Location") - 1
            && ngx_strncasecmp(h[i].key.data, (u_char *) "Content-Location",
                               h[i].key.len) == 0)
        {
            h[i].hash = 0;
        }
    }
}


/*
 * The avatar URL a record keeps: the basic profile's avatar_url (of any
 * version of the type), or an ActivityPub actor's icon; http(s) only.
 * NGX_DECLINED: none.
 */

static ngx_int_t
ngx_http_tent_avatar_url(json_t *record, ngx_str_t *url)
{
    json_t      *profile, *value, *icon;
    const char  *key;

    icon = NULL;
    profile = json_object_get(record, "profile");

    if (json_is_object(profile)) {
        json_object_foreach(profile, key, value) {
            if (ngx_strncmp(key, NGX_HTTP_TENT_AVATAR_BASIC,
                            sizeof(NGX_HTTP_TENT_AVATAR_BASIC) - 1)
                == 0
                && json_is_object(value))
            {
                icon = json_object_get(value, "avatar_url");
                break;
            }
        }
    }

    if (icon == NULL) {
        icon = json_object_get(json_object_get(record, "activitypub"),
                               "icon");

        if (json_is_object(icon)) {
            icon = json_object_get(icon, "url");
        }
    }

    if (!json_is_string(icon)) {
        return NGX_DECLINED;
    }

    url->data = (u_char *) json_string_value(icon);
    url->len = json_string_length(icon);

    if (url->len > NGX_HTTP_TENT_AVATAR_URL_MAX
        || !((url->len > 7
              && ngx_strncasecmp(url->data, (u_char *) "http://", 7) == 0)
             || (url->len > 8
                 && ngx_strncasecmp(url->data, (u_char *) "https://", 8)
                    == 0)))
    {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/* unsigned, through the guard and the tenant's and host's shares */

static ngx_int_t
ngx_http_tent_avatar_fetch(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_avatar_state_t *st)
{
    ngx_pool_cleanup_t              *cln;
    ngx_http_tent_fetch_t           *f;
    ngx_http_tent_srv_conf_t        *scf;
    ngx_http_tent_avatar_pending_t  *p;

    /*
     * Another request of this worker fetches it now: wait for its answer
     * in the cache (looked at every 100 ms), rather than fetch it twice
     */

    st->request = r;

    if (ngx_http_tent_avatars_pending.next == NULL) {
        ngx_queue_init(&ngx_http_tent_avatars_pending);
    }

    if (ngx_http_tent_avatar_pending_find(st)) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent avatars: waiting for the fetch of %V",
                       &st->url);

        if (st->wait_until == 0) {
            scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);
            st->wait_until = ngx_current_msec + scf->outbound.deadline;
        }

        st->wait.handler = ngx_http_tent_avatar_wait;
        st->wait.data = st;
        st->wait.log = r->connection->log;
        st->wait.cancelable = 0;   /* bounded: the fetch's deadline */

        ngx_add_timer(&st->wait, NGX_HTTP_TENT_AVATAR_POLL);

        r->main->count++;

        return NGX_DONE;
    }

    /* ours: marked until the fetch ends, or the request does */

    cln = ngx_pool_cleanup_add(r->pool, 0);
    p = ngx_alloc(sizeof(ngx_http_tent_avatar_pending_t) + st->key.len,
                  r->connection->log);
    if (cln == NULL || p == NULL) {
        if (p) {
            ngx_free(p);
        }

        return ngx_http_tent_internal_error(r, "marking the avatar's fetch");
    }

    p->hash = st->hash;
    p->key.len = st->key.len;
    p->key.data = (u_char *) (p + 1);
    ngx_memcpy(p->key.data, st->key.data, st->key.len);
    ngx_queue_insert_tail(&ngx_http_tent_avatars_pending, &p->queue);

    st->pending = p;
    cln->handler = ngx_http_tent_avatar_pending_done;
    cln->data = st;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent avatars: fetching %V for \"%V\"",
                   &st->url, &st->entity);

    f = ngx_http_tent_remote_fetch(r, &st->url, "GET");
    if (f == NULL) {
        return ngx_http_tent_internal_error(r, "starting the avatar's GET");
    }

    ngx_str_set(&f->accept, NGX_HTTP_TENT_AVATAR_ACCEPT);
    f->redirects = 3;
    f->max_response = ngx_min(f->max_response, NGX_HTTP_TENT_AVATAR_MAX);
    f->resend = 1;
    f->data = st;

    return ngx_http_tent_fetch_request(r, f, ngx_http_tent_avatar_fetched);
}


static ngx_http_tent_avatar_pending_t *
ngx_http_tent_avatar_pending_find(ngx_http_tent_avatar_state_t *st)
{
    ngx_queue_t                     *q;
    ngx_http_tent_avatar_pending_t  *p;

    if (ngx_http_tent_avatars_pending.next == NULL) {
        ngx_queue_init(&ngx_http_tent_avatars_pending);
        return NULL;
    }

    for (q = ngx_queue_head(&ngx_http_tent_avatars_pending);
         q != ngx_queue_sentinel(&ngx_http_tent_avatars_pending);
         q = ngx_queue_next(q))
    {
        p = ngx_queue_data(q, ngx_http_tent_avatar_pending_t, queue);

        if (p->hash == st->hash && p->key.len == st->key.len
            && ngx_memcmp(p->key.data, st->key.data, st->key.len) == 0)
        {
            return p;
        }
    }

    return NULL;
}


/* the fetch ended (or its request did: the waiters fetch it themselves) */

static void
ngx_http_tent_avatar_pending_done(void *data)
{
    ngx_http_tent_avatar_state_t  *st = data;

    if (st->pending) {
        ngx_queue_remove(&st->pending->queue);
        ngx_free(st->pending);
        st->pending = NULL;
    }
}


static void
ngx_http_tent_avatar_wait(ngx_event_t *ev)
{
    ngx_int_t                      rc;
    ngx_connection_t              *c;
    ngx_http_request_t            *r;
    ngx_http_tent_avatar_t        *a;
    ngx_http_tent_avatar_state_t  *st;

    st = ev->data;
    r = st->request;
    c = r->connection;

    a = ngx_http_tent_avatar_find(&st->key, st->hash);

    if (c->error) {
        rc = NGX_HTTP_CLIENT_CLOSED_REQUEST;

    } else if (a) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                       "tent avatars: %V fetched by another request",
                       &st->url);

        rc = ngx_http_tent_avatar_send(r, a->status, a->type, &a->data,
                                       a->expires - ngx_time());

    } else if (ngx_http_tent_avatar_pending_find(st) == NULL) {

        /* nothing kept of it (no slot then, the request gone): ours now */

        rc = ngx_http_tent_avatar_fetch(r, ngx_http_tent_get_ctx(r), st);

    } else if ((ngx_msec_int_t) (st->wait_until - ngx_current_msec) > 0) {
        ngx_add_timer(ev, NGX_HTTP_TENT_AVATAR_POLL);
        return;

    } else {
        rc = ngx_http_tent_send_error(r, NGX_HTTP_GATEWAY_TIME_OUT,
                 "The avatar's GET: another request's fetch of it took "
                 "too long");
    }

    ngx_http_finalize_request(r, rc);
    ngx_http_run_posted_requests(c);
}


static ngx_int_t
ngx_http_tent_avatar_fetched(ngx_http_request_t *r, ngx_http_tent_fetch_t *f)
{
    u_char                        *p;
    size_t                         len;
    ngx_str_t                      msg;
    ngx_uint_t                     status;
    const char                    *type;
    ngx_http_tent_avatar_state_t  *st;

    st = f->data;
    type = NULL;

    ngx_http_tent_avatar_pending_done(st);

    if (f->result == NGX_HTTP_TENT_FETCH_OK && f->status == NGX_HTTP_OK) {
        type = ngx_http_tent_avatar_sniff(&f->body);

        if (type) {
            ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "tent avatars: %V is %s, %uz bytes",
                           &f->url, type, f->body.len);

            ngx_http_tent_avatar_keep(r->connection->log, st, NGX_HTTP_OK,
                                      type, &f->body);

            return ngx_http_tent_avatar_send(r, NGX_HTTP_OK, type, &f->body,
                                             NGX_HTTP_TENT_AVATAR_TTL);
        }
    }

    /* no slot now, or our own failure: nothing kept, tried again */

    if (ngx_http_tent_fetch_busy(f)
        || f->result == NGX_HTTP_TENT_FETCH_ERROR)
    {
        return ngx_http_tent_remote_error(r, f, "The avatar's GET");
    }

    len = f->url.len + 128;

    msg.data = ngx_pnalloc(r->pool, len);
    if (msg.data == NULL) {
        return ngx_http_tent_internal_error(r, "formatting the avatar error");
    }

    status = NGX_HTTP_BAD_GATEWAY;

    if (f->result != NGX_HTTP_TENT_FETCH_OK) {
        if (f->result == NGX_HTTP_TENT_FETCH_TIMEOUT
            || f->result == NGX_HTTP_TENT_FETCH_DEADLINE)
        {
            status = NGX_HTTP_GATEWAY_TIME_OUT;
        }

        p = ngx_snprintf(msg.data, len, "The avatar's GET %V: %s", &f->url,
                         ngx_http_tent_fetch_strerror(f->result));

    } else if (f->status != NGX_HTTP_OK) {
        p = ngx_snprintf(msg.data, len, "The avatar's GET %V: it answered %ui",
                         &f->url, f->status);

    } else {
        p = ngx_snprintf(msg.data, len, "The avatar's GET %V: it is not a "
                         "PNG, JPEG, GIF or WebP image", &f->url);
    }

    msg.len = p - msg.data;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent avatars: %V", &msg);

    ngx_http_tent_avatar_keep(r->connection->log, st, status, NULL, &msg);

    return ngx_http_tent_avatar_send(r, status, NULL, &msg, 0);
}


/* the image type of the first bytes; never the answer's Content-Type */

static const char *
ngx_http_tent_avatar_sniff(ngx_str_t *body)
{
    u_char  *p;

    p = body->data;

    if (body->len >= 8
        && ngx_memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0)
    {
        return "image/png";
    }

    if (body->len >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff) {
        return "image/jpeg";
    }

    if (body->len >= 6
        && (ngx_memcmp(p, "GIF87a", 6) == 0
            || ngx_memcmp(p, "GIF89a", 6) == 0))
    {
        return "image/gif";
    }

    if (body->len >= 12
        && ngx_memcmp(p, "RIFF", 4) == 0
        && ngx_memcmp(p + 8, "WEBP", 4) == 0)
    {
        return "image/webp";
    }

    return NULL;
}


/* the worker's cache: a list, most recently used first, bounded */

static ngx_http_tent_avatar_t *
ngx_http_tent_avatar_find(ngx_str_t *key, uint32_t hash)
{
    ngx_queue_t             *q;
    ngx_http_tent_avatar_t  *a;

    if (ngx_http_tent_avatars.next == NULL) {
        ngx_queue_init(&ngx_http_tent_avatars);
        return NULL;
    }

    for (q = ngx_queue_head(&ngx_http_tent_avatars);
         q != ngx_queue_sentinel(&ngx_http_tent_avatars);
         q = ngx_queue_next(q))
    {
        a = ngx_queue_data(q, ngx_http_tent_avatar_t, queue);

        if (a->hash != hash || a->key.len != key->len
            || ngx_memcmp(a->key.data, key->data, key->len) != 0)
        {
            continue;
        }

        if (a->expires <= ngx_time()) {
            ngx_http_tent_avatar_drop(a);
            return NULL;
        }

        ngx_queue_remove(q);
        ngx_queue_insert_head(&ngx_http_tent_avatars, q);

        return a;
    }

    return NULL;
}


static void
ngx_http_tent_avatar_keep(ngx_log_t *log, ngx_http_tent_avatar_state_t *st,
    ngx_uint_t status, const char *type, ngx_str_t *data)
{
    size_t                   size;
    ngx_queue_t             *q;
    ngx_http_tent_avatar_t  *a;

    if (ngx_http_tent_avatars.next == NULL) {
        ngx_queue_init(&ngx_http_tent_avatars);
    }

    /* a request that raced ours put it there already */

    a = ngx_http_tent_avatar_find(&st->key, st->hash);
    if (a) {
        ngx_http_tent_avatar_drop(a);
    }

    size = sizeof(ngx_http_tent_avatar_t) + st->key.len + data->len;

    if (size > NGX_HTTP_TENT_AVATAR_BYTES) {
        return;
    }

    while (!ngx_queue_empty(&ngx_http_tent_avatars)
           && (ngx_http_tent_avatars_n >= NGX_HTTP_TENT_AVATAR_ENTRIES
               || ngx_http_tent_avatars_bytes + size
                  > NGX_HTTP_TENT_AVATAR_BYTES))
    {
        q = ngx_queue_last(&ngx_http_tent_avatars);
        ngx_http_tent_avatar_drop(ngx_queue_data(q, ngx_http_tent_avatar_t,
                                                 queue));
    }

    a = ngx_alloc(size, log);
    if (a == NULL) {
        return;     /* not kept: fetched again next time */
    }

    a->hash = st->hash;
    a->status = status;
    a->type = type;
    a->expires = ngx_time() + (status == NGX_HTTP_OK
                               ? NGX_HTTP_TENT_AVATAR_TTL
                               : NGX_HTTP_TENT_AVATAR_FAIL_TTL);
    a->size = size;
    a->key.data = (u_char *) (a + 1);
    a->key.len = st->key.len;
    a->data.data = ngx_cpymem(a->key.data, st->key.data, st->key.len);
    a->data.len = data->len;
    ngx_memcpy(a->data.data, data->data, data->len);

    ngx_queue_insert_head(&ngx_http_tent_avatars, &a->queue);
    ngx_http_tent_avatars_n++;
    ngx_http_tent_avatars_bytes += size;
}


static void
ngx_http_tent_avatar_drop(ngx_http_tent_avatar_t *a)
{
    ngx_queue_remove(&a->queue);
    ngx_http_tent_avatars_n--;
    ngx_http_tent_avatars_bytes -= a->size;
    ngx_free(a);
}


/*
 * The image, or the error as JSON.  The bytes are copied into the
 * request's pool: the cache may drop its entry while a slow client
 * still reads them.
 */

static ngx_int_t
ngx_http_tent_avatar_send(ngx_http_request_t *r, ngx_uint_t status,
    const char *type, ngx_str_t *data, time_t max_age)
{
    u_char           *p;
    ngx_int_t         rc;
    ngx_buf_t        *b;
    ngx_chain_t       out;
    ngx_table_elt_t  *h;

    if (status != NGX_HTTP_OK) {
        p = ngx_pnalloc(r->pool, data->len + 1);
        if (p == NULL) {
            return ngx_http_tent_internal_error(r, "copying the avatar error");
        }

        *ngx_cpymem(p, data->data, data->len) = '\0';

        return ngx_http_tent_send_error(r, status, (char *) p);
    }

    if (max_age < 0) {
        max_age = 0;
    }

    p = ngx_pnalloc(r->pool, ngx_max(data->len, 64));
    if (p == NULL) {
        return ngx_http_tent_internal_error(r, "copying the avatar");
    }

    ngx_memcpy(p, data->data, data->len);

    /* X-Content-Type-Options: every answer under the API root has it */

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return ngx_http_tent_internal_error(r, "adding the avatar's headers");
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Content-Security-Policy");
    ngx_str_set(&h->value, "default-src 'none'");

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return ngx_http_tent_internal_error(r, "adding the avatar's headers");
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Cache-Control");
    h->value.data = ngx_pnalloc(r->pool, sizeof("private, max-age=") - 1
                                         + NGX_TIME_T_LEN);
    if (h->value.data == NULL) {
        h->hash = 0;
        return ngx_http_tent_internal_error(r, "adding the avatar's headers");
    }

    h->value.len = ngx_sprintf(h->value.data, "private, max-age=%T", max_age)
                   - h->value.data;

    ngx_http_tent_get_ctx(r)->own_reply = 1;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = data->len;
    r->headers_out.content_type.data = (u_char *) type;
    r->headers_out.content_type.len = ngx_strlen(type);
    r->headers_out.content_type_len = r->headers_out.content_type.len;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = p;
    b->last = p + data->len;
    b->memory = 1;
    b->last_buf = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}
