
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Mentions from entities we have no relationship with (spec 9.3): the
 * publisher discovers us and sends its public post to POST /posts,
 * unsigned.  tentd stored that body as sent, so anyone could make any
 * entity say anything to us.  Here the body only points at a post: the
 * claimed entity is discovered, the post read again from that entity's
 * own servers, and that copy, never the pushed one, is stored as a post
 * received from a following is.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_domains.h"
#include "ngx_http_tent_blocks.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_notifications.h"
#include "ngx_http_tent_remote.h"


typedef struct {
    ngx_str_t                       entity;
    ngx_str_t                       id;
    ngx_str_t                       path;       /* "posts/<escaped id>" */
    ngx_http_tent_discover_t       *found;
    ngx_uint_t                      server;
} ngx_http_tent_mention_t;


static void ngx_http_tent_mention_read(ngx_http_request_t *r);
static ngx_int_t ngx_http_tent_mention_body(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_uint_t ngx_http_tent_mentions_us(ngx_http_tent_ctx_t *ctx,
    json_t *post);
static ngx_int_t ngx_http_tent_mention_discovered(ngx_http_request_t *r,
    ngx_http_tent_discover_t *d);
static ngx_int_t ngx_http_tent_mention_fetch(ngx_http_request_t *r,
    ngx_http_tent_mention_t *st);
static ngx_int_t ngx_http_tent_mention_fetched(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f);
static ngx_int_t ngx_http_tent_mention_unverified(ngx_http_request_t *r,
    ngx_str_t *url, const char *why, ngx_uint_t status);


/*
 * POST /posts with no credential.  Only a post JSON can be a mention;
 * anything else gets the answer an unsigned POST always got, with no
 * request to anyone.
 */

ngx_int_t
ngx_http_tent_mention_post(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    size_t            len;
    ngx_int_t         rc;
    ngx_table_elt_t  *ct;

    ct = r->headers_in.content_type;
    len = sizeof(NGX_HTTP_TENT_MEDIA_TYPE) - 1;

    if (r->headers_in.authorization != NULL
        || ct == NULL || ct->value.len < len
        || ngx_strncasecmp(ct->value.data, (u_char *) NGX_HTTP_TENT_MEDIA_TYPE,
                           len)
           != 0
        || (ct->value.len > len && ct->value.data[len] != ';'
            && ct->value.data[len] != ' '))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    /*
     * The body within client_max_body_size, as for any POST; a post
     * we would not keep (NGX_HTTP_TENT_RECEIVED_MAX) is not read
     */

    if (r->headers_in.content_length_n > NGX_HTTP_TENT_RECEIVED_MAX) {
        return ngx_http_tent_notification_too_large(r);
    }

    /* chunked: no length to refuse it by, bounded as it arrives */

    ngx_http_tent_get_ctx(r)->body_max = NGX_HTTP_TENT_RECEIVED_MAX;

    rc = ngx_http_read_client_request_body(r, ngx_http_tent_mention_read);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


static void
ngx_http_tent_mention_read(ngx_http_request_t *r)
{
    json_t               *json;
    ngx_int_t             rc;
    ngx_str_t             body;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    if (r->request_body == NULL || r->request_body->bufs == NULL) {
        rc = ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN, "Unauthorized");
        goto done;
    }

    if (ngx_http_tent_body_bytes(r, &body) != NGX_OK) {
        rc = ngx_http_tent_internal_error(r, "reading the mention's body");
        goto done;
    }

    json = ngx_http_tent_json_parse(&body, NULL);

    if (json == NULL || !json_is_object(json)) {
        json_decref(json);
        rc = ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN, "Unauthorized");
        goto done;
    }

    if (ngx_http_tent_json_cleanup(r->pool, json) != NGX_OK) {
        json_decref(json);
        rc = ngx_http_tent_internal_error(r, "keeping the mention's body");
        goto done;
    }

    ctx->body = json;

    rc = ngx_http_tent_mention_body(r, ctx);

done:

    ngx_http_finalize_request(r, rc);
}


/* another entity's public post that mentions us, or not a mention at all */

static ngx_int_t
ngx_http_tent_mention_body(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    u_char                   *p;
    uintptr_t                 n;
    ngx_int_t                 rc;
    ngx_str_t                 entity;
    ngx_http_tent_mention_t  *st;

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_mention_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the mention state");
    }

    /* the entity in its one spelling: discovered, compared, kept so */

    rc = NGX_DECLINED;

    if (ngx_http_tent_json_str(ctx->body, "entity", &entity) == NGX_OK) {
        rc = ngx_http_tent_entity_canonical(r->pool, &entity, &st->entity);
    }

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r,
                                            "spelling the mention's entity");
    }

    /* refused before it is read again at its server */

    if (rc == NGX_OK && ngx_http_tent_blocks_has(ctx->blocks, &st->entity)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "The entity is blocked");
    }

    if (rc == NGX_OK && ngx_http_tent_domains_entity(&st->entity)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                   "The entity's domain is blocked on this host");
    }

    if (rc != NGX_OK
        || ngx_http_tent_entity_eq(&st->entity, &ctx->entity)
        || ngx_http_tent_json_str(ctx->body, "id", &st->id) != NGX_OK
        || ngx_http_tent_token_valid(&st->id, 64) != NGX_OK
        || !json_is_true(json_object_get(json_object_get(ctx->body,
                                                         "permissions"),
                                         "public"))
        || !ngx_http_tent_mentions_us(ctx, ctx->body))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    /* the ids we take need no escaping; escaped all the same */

    n = ngx_escape_uri(NULL, st->id.data, st->id.len,
                       NGX_ESCAPE_URI_COMPONENT);

    st->path.len = sizeof("posts/") - 1 + st->id.len + 2 * n;
    st->path.data = ngx_pnalloc(r->pool, st->path.len);
    if (st->path.data == NULL) {
        return ngx_http_tent_internal_error(r, "building the post's path");
    }

    p = ngx_cpymem(st->path.data, "posts/", sizeof("posts/") - 1);
    (void) ngx_escape_uri(p, st->id.data, st->id.len,
                          NGX_ESCAPE_URI_COMPONENT);

    /* anyone may push one: what it makes us send comes out of a share */

    if (ngx_http_tent_remote_anonymous(r, &st->entity, &rc) != NGX_OK) {
        return rc;
    }

    return ngx_http_tent_discover(r, &st->entity,
                                  ngx_http_tent_mention_discovered, st);
}


static ngx_uint_t
ngx_http_tent_mentions_us(ngx_http_tent_ctx_t *ctx, json_t *post)
{
    size_t      i;
    json_t     *m;
    ngx_str_t   entity;

    json_array_foreach(json_object_get(post, "mentions"), i, m) {
        if (ngx_http_tent_json_str(m, "entity", &entity) == NGX_OK
            && ngx_http_tent_entity_eq(&entity, &ctx->entity))
        {
            return 1;
        }
    }

    return 0;
}


static ngx_int_t
ngx_http_tent_mention_discovered(ngx_http_request_t *r,
    ngx_http_tent_discover_t *d)
{
    ngx_http_tent_mention_t  *st;

    st = d->data;

    if (d->status) {
        return ngx_http_tent_send_error(r, d->status, d->error);
    }

    /* a page that links to another entity's profile speaks for no one */

    if (!ngx_http_tent_entity_eq(&d->canonical, &st->entity)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                   "Entity mismatch: the profile found names another "
                   "entity");
    }

    st->found = d;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent mentions: \"%V\" discovered, reading post \"%V\" "
                   "at its servers", &st->entity, &st->id);

    return ngx_http_tent_mention_fetch(r, st);
}


/* GET {server}/posts/<id>, unsigned, server by server */

static ngx_int_t
ngx_http_tent_mention_fetch(ngx_http_request_t *r,
    ngx_http_tent_mention_t *st)
{
    ngx_int_t                  rc;
    ngx_str_t                  url;
    ngx_http_tent_fetch_t     *f;
    ngx_http_core_loc_conf_t  *clcf;

    for ( ;; ) {
        if (st->server >= json_array_size(st->found->servers)) {
            return ngx_http_tent_mention_unverified(r, NULL,
                                       "no server of its profile is a URL",
                                       0);
        }

        rc = ngx_http_tent_server_url(r->pool,
                                      json_array_get(st->found->servers,
                                                     st->server),
                                      &st->path, NULL, &url);
        if (rc == NGX_OK) {
            break;
        }

        if (rc == NGX_ERROR) {
            return ngx_http_tent_internal_error(r, "building the post's URL");
        }

        st->server++;
    }

    f = ngx_http_tent_remote_fetch(r, &url, "GET");
    if (f == NULL) {
        return ngx_http_tent_internal_error(r, "starting the post's GET");
    }

    /*
     * No bigger than a post pushed to us may be, nor than what we keep
     * of a mention (NGX_HTTP_TENT_RECEIVED_MAX): more is not read
     */

    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    if (clcf->client_max_body_size > 0
        && (off_t) f->max_response > clcf->client_max_body_size)
    {
        f->max_response = (size_t) clcf->client_max_body_size;
    }

    f->max_response = ngx_min(f->max_response, NGX_HTTP_TENT_RECEIVED_MAX);

    f->data = st;

    return ngx_http_tent_fetch_request(r, f, ngx_http_tent_mention_fetched);
}


static ngx_int_t
ngx_http_tent_mention_fetched(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f)
{
    json_t                   *post;
    ngx_str_t                 entity, id;
    ngx_http_tent_ctx_t      *ctx;
    ngx_http_tent_mention_t  *st;

    st = f->data;
    ctx = ngx_http_tent_get_ctx(r);

    if (f->result != NGX_HTTP_TENT_FETCH_OK) {

        /* a server that cannot be reached: the next one may, of a few */

        if (ngx_http_tent_fetch_next_server(f)
            && ++st->server < json_array_size(st->found->servers))
        {
            return ngx_http_tent_mention_fetch(r, st);
        }

        return ngx_http_tent_remote_error(r, f, "Verification of the "
                                          "mention: GET");
    }

    if (f->status != 200) {
        return ngx_http_tent_mention_unverified(r, &f->url, "it answered",
                                                f->status);
    }

    post = ngx_http_tent_json_own(r->pool,
                                  ngx_http_tent_json_parse(&f->body,
                                                         r->connection->log));

    if (post == NULL || !json_is_object(post)) {
        return ngx_http_tent_mention_unverified(r, &f->url,
                                                "not a post JSON", 0);
    }

    if (ngx_http_tent_json_str(post, "entity", &entity) != NGX_OK
        || !ngx_http_tent_entity_eq(&entity, &st->entity)
        || ngx_http_tent_json_str(post, "id", &id) != NGX_OK
        || id.len != st->id.len
        || ngx_strncmp(id.data, st->id.data, id.len) != 0)
    {
        return ngx_http_tent_mention_unverified(r, &f->url,
                                         "another entity's or another post",
                                         0);
    }

    if (!json_is_true(json_object_get(json_object_get(post, "permissions"),
                                      "public")))
    {
        return ngx_http_tent_mention_unverified(r, &f->url, "not public",
                                                0);
    }

    if (!ngx_http_tent_mentions_us(ctx, post)) {
        return ngx_http_tent_mention_unverified(r, &f->url,
                                                "it does not mention us", 0);
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent mentions: post \"%V\" verified at %V",
                   &st->id, &f->url);

    /* the copy its server serves is the one kept, as a notification */

    return ngx_http_tent_notification_store(r, ctx, post, &st->entity, 1);
}


static ngx_int_t
ngx_http_tent_mention_unverified(ngx_http_request_t *r, ngx_str_t *url,
    const char *why, ngx_uint_t status)
{
    u_char  *msg, *p;
    size_t   len;

    len = (url ? url->len : 0) + 256;

    msg = ngx_pnalloc(r->pool, len);
    if (msg == NULL) {
        return ngx_http_tent_internal_error(r,
                                       "writing why the mention is refused");
    }

    p = ngx_cpymem(msg, "Unauthorized: the post could not be verified at "
                   "its entity's server", sizeof("Unauthorized: the post "
                   "could not be verified at its entity's server") - 1);

    if (url == NULL) {
        p = ngx_snprintf(p, len - 1 - (p - msg), " (%s)", why);

    } else if (status) {
        p = ngx_snprintf(p, len - 1 - (p - msg), " (GET %V: %s %ui)", url,
                         why, status);

    } else {
        p = ngx_snprintf(p, len - 1 - (p - msg), " (GET %V: %s)", url, why);
    }

    *p = '\0';

    return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN, (char *) msg);
}
