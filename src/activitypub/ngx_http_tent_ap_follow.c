
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * POST {api}/followings of an ActivityPub actor (issue #29,
 * docs/activitypub.md "Following an actor"): "acct:NAME@HOST",
 * "@NAME@HOST", or an actor URL where Tent discovery found no profile.
 * WebFinger at HOST names the actor (its "self" link); the actor
 * document gives its id, inbox and shared inbox; the actor's
 * preferredUsername at its id's host must resolve back to it by
 * WebFinger (Mastodon's check: a WebFinger answer of one host cannot
 * make another's actor pass for one of its accounts).  Every GET goes
 * through the outbound fetch, its guard and budgets, bounded.  Then the
 * following ("F" and its "E" index, keyed by the actor id as the inbox
 * looks it up, "activitypub" with the inbox and our Follow's id),
 * unconfirmed until the actor's Accept, and our Follow queued to its
 * inbox, in one write.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_ap.h"
#include "ngx_http_tent_blocks.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_domains.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_remote.h"
#include "ngx_http_tent_store.h"


/* a handle: NAME at most 64 bytes, HOST[:PORT] at most 255 */
#define NGX_HTTP_TENT_AP_HANDLE_NAME   64
#define NGX_HTTP_TENT_AP_HANDLE_HOST   255

/* a WebFinger answer (Mastodon's are under 2 KB), its links looked at */
#define NGX_HTTP_TENT_AP_JRD_MAX       (64 * 1024)
#define NGX_HTTP_TENT_AP_JRD_LINKS     32


typedef struct {
    ngx_str_t                       name;        /* of the handle asked */
    ngx_str_t                       host;
    ngx_str_t                       url;         /* the actor's, to fetch */
    ngx_str_t                       id;          /* the actor's own */
    ngx_str_t                       inbox;
    ngx_str_t                       shared_inbox;
    ngx_str_t                       face_name;   /* the Person's, kept */
    ngx_str_t                       face_icon;
    ngx_str_t                       record_id;
    EVP_PKEY                       *sign_key;    /* our GETs signed */
    json_t                         *body;
    json_t                         *types;
    json_t                         *licenses;
    json_t                         *record;
    unsigned                        back:1;      /* WebFinger back */
    unsigned                        again:1;     /* a conflict, once */
} ngx_http_tent_ap_follow_t;


static ngx_int_t ngx_http_tent_ap_following_keyed(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_key_t *key);
static ngx_int_t ngx_http_tent_ap_handle_parse(ngx_str_t *entity,
    ngx_str_t *name, ngx_str_t *host);
static ngx_int_t ngx_http_tent_ap_handle_check(ngx_str_t *name,
    ngx_str_t *host);
static ngx_int_t ngx_http_tent_ap_webfinger(ngx_http_request_t *r,
    ngx_http_tent_ap_follow_t *st, ngx_str_t *name, ngx_str_t *host);
static ngx_int_t ngx_http_tent_ap_webfingered(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f);
static ngx_int_t ngx_http_tent_ap_followed_actor(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f);
static ngx_int_t ngx_http_tent_ap_follow_load(ngx_http_request_t *r,
    ngx_http_tent_ap_follow_t *st);
static ngx_int_t ngx_http_tent_ap_follow_existing(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *record);
static ngx_int_t ngx_http_tent_ap_follow_write(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_follow_t *st);
static ngx_int_t ngx_http_tent_ap_follow_stored(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_authority(ngx_str_t *url,
    ngx_str_t *authority);


#define ngx_http_tent_ap_alnum(c)                                             \
    (((c) >= '0' && (c) <= '9')                                              \
     || (((c) | 0x20) >= 'a' && ((c) | 0x20) <= 'z'))

#define ngx_http_tent_ap_hex(c)                                               \
    (((c) >= '0' && (c) <= '9')                                              \
     || (((c) | 0x20) >= 'a' && ((c) | 0x20) <= 'f'))


ngx_uint_t
ngx_http_tent_ap_enabled(ngx_http_request_t *r)
{
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    return scf->activitypub ? 1 : 0;
}


/* "acct:..." or "@...", with the module on: a handle for this file */

ngx_uint_t
ngx_http_tent_ap_following_handle(ngx_http_request_t *r, ngx_str_t *entity)
{
    if (!ngx_http_tent_ap_enabled(r)) {
        return 0;
    }

    return (entity->len >= 1 && entity->data[0] == '@')
           || (entity->len >= 5
               && ngx_strncasecmp(entity->data, (u_char *) "acct:", 5) == 0);
}


/* an app's answer: the record as Tent's POST gives it, no state kept */

ngx_int_t
ngx_http_tent_ap_following_answer(ngx_http_request_t *r, json_t *record)
{
    json_t  *out;

    out = ngx_http_tent_json_own(r->pool,
                                 ngx_http_tent_following_view(record));
    if (out == NULL) {
        return ngx_http_tent_internal_error(r, "rendering the following");
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
}


/*
 * The start, the body's "entity" a handle, or a URL where Tent discovery
 * found no profile: our key first (made now if the entity has none: the
 * transport signs the Follow with it, and waits, unsent, without one).
 */

ngx_int_t
ngx_http_tent_ap_following_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_ap_key(r, ctx, ngx_http_tent_ap_following_keyed);
}


/*
 * The entity again, from the body: a handle, or a URL in its one
 * spelling (the Tent path's); the body's lists checked as the Tent path
 * checks them; then WebFinger for a handle, the actor itself for a URL.
 */

static ngx_int_t
ngx_http_tent_ap_following_keyed(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_key_t *key)
{
    ngx_int_t                   rc;
    ngx_str_t                   raw, canonical, *entity;
    ngx_http_tent_ap_follow_t  *st;

    if (ngx_http_tent_json_str(ctx->body, "entity", &raw) != NGX_OK) {
        return ngx_http_tent_send_error(r, 422, "Invalid Request Body");
    }

    entity = &raw;

    if (!ngx_http_tent_ap_following_handle(r, &raw)) {
        rc = ngx_http_tent_entity_canonical(r->pool, &raw, &canonical);

        if (rc == NGX_ERROR) {
            return ngx_http_tent_internal_error(r,
                                                "spelling the followed actor");
        }

        if (rc != NGX_OK) {
            return ngx_http_tent_send_error(r, 422, "Invalid Request Body");
        }

        entity = &canonical;
    }

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_follow_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the follow state");
    }

    st->body = ctx->body;

    /* our GETs signed with the entity's key (Mastodon's authorized fetch) */

    st->sign_key = ngx_http_tent_ap_sign_key(r->pool, r->connection->log,
                                             &ctx->entity, &key->private_pem);
    if (st->sign_key == NULL) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "tent ap follow: the key of \"%V\" is not usable: "
                      "unsigned", &ctx->entity);
    }

    if (ngx_http_tent_string_list(st->body, "types", "all", &st->types)
        != NGX_OK
        || ngx_http_tent_json_own(r->pool, st->types) == NULL
        || ngx_http_tent_string_list(st->body, "licenses", NULL,
                                     &st->licenses)
           != NGX_OK
        || ngx_http_tent_json_own(r->pool, st->licenses) == NULL)
    {
        return ngx_http_tent_send_error(r, 422, "Invalid types or licenses");
    }

    ctx->state = st;

    if (!ngx_http_tent_ap_following_handle(r, entity)) {

        /* an actor URL: Tent discovery found no profile there */

        st->url = *entity;

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent ap follow: the actor \"%V\"", &st->url);

        return ngx_http_tent_ap_actor_fetch(r, &st->url, st->sign_key, st,
                                            ngx_http_tent_ap_followed_actor);
    }

    if (ngx_http_tent_ap_handle_parse(entity, &st->name, &st->host)
        != NGX_OK)
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                   "Malformed handle: acct:NAME@HOST or @NAME@HOST");
    }

    return ngx_http_tent_ap_webfinger(r, st, &st->name, &st->host);
}


/*
 * NAME@HOST after "acct:" or "@": NAME of RFC 3986's unreserved bytes;
 * HOST a DNS name or an IPv4 address, or an IPv6 one in brackets, with
 * a port or not.  Nothing else (no "@", "/", "?", "%", space) gets
 * into the URL we build.
 */

static ngx_int_t
ngx_http_tent_ap_handle_parse(ngx_str_t *entity, ngx_str_t *name,
    ngx_str_t *host)
{
    u_char  *p, *end, *at;

    p = entity->data;
    end = entity->data + entity->len;

    p += (*p == '@') ? 1 : 5;

    at = ngx_strlchr(p, end, '@');
    if (at == NULL) {
        return NGX_DECLINED;
    }

    name->data = p;
    name->len = at - p;
    host->data = at + 1;
    host->len = end - (at + 1);

    return ngx_http_tent_ap_handle_check(name, host);
}


static ngx_int_t
ngx_http_tent_ap_handle_check(ngx_str_t *name, ngx_str_t *host)
{
    u_char  *p, *end;
    size_t   digits;

    end = host->data + host->len;

    if (name->len == 0 || name->len > NGX_HTTP_TENT_AP_HANDLE_NAME
        || host->len == 0 || host->len > NGX_HTTP_TENT_AP_HANDLE_HOST)
    {
        return NGX_DECLINED;
    }

    for (p = name->data; p < name->data + name->len; p++) {
        if (!(ngx_http_tent_ap_alnum(*p) || *p == '_' || *p == '.' || *p == '-'
              || *p == '~'))
        {
            return NGX_DECLINED;
        }
    }

    p = host->data;

    if (*p == '[') {
        for (p++; p < end && *p != ']'; p++) {
            if (!(ngx_http_tent_ap_hex(*p) || *p == ':' || *p == '.')) {
                return NGX_DECLINED;
            }
        }

        if (p == end || p == host->data + 1) {
            return NGX_DECLINED;
        }

        p++;

    } else {
        for ( /* void */ ; p < end && *p != ':'; p++) {
            if (!(ngx_http_tent_ap_alnum(*p) || *p == '-' || *p == '.')) {
                return NGX_DECLINED;
            }
        }

        if (p == host->data || *host->data == '.' || *host->data == '-') {
            return NGX_DECLINED;
        }
    }

    if (p == end) {
        return NGX_OK;
    }

    if (*p++ != ':') {
        return NGX_DECLINED;
    }

    for (digits = 0; p < end; p++, digits++) {
        if (*p < '0' || *p > '9') {
            return NGX_DECLINED;
        }
    }

    return (digits >= 1 && digits <= 5) ? NGX_OK : NGX_DECLINED;
}


/*
 * GET {scheme}://HOST/.well-known/webfinger?resource=acct:NAME@HOST.
 * https, as the fediverse serves WebFinger; http for a loopback address
 * written as such (127.0.0.0/8, [::1]), where no server has a
 * certificate (a test's peer; reaching it at all takes the operator's
 * tent_outbound_allow).
 */

static ngx_int_t
ngx_http_tent_ap_webfinger(ngx_http_request_t *r,
    ngx_http_tent_ap_follow_t *st, ngx_str_t *name, ngx_str_t *host)
{
    u_char                 *p;
    ngx_str_t               url;
    ngx_uint_t              loopback;
    ngx_http_tent_ctx_t    *ctx;
    ngx_http_tent_fetch_t  *f;

    ctx = ngx_http_tent_get_ctx(r);

    /* an address, not a name: "127.evil.example" is https */

    loopback = (host->len >= 5
                && ngx_strncmp(host->data, "[::1]", 5) == 0);

    if (host->len >= 4 && ngx_strncmp(host->data, "127.", 4) == 0) {
        for (p = host->data; p < host->data + host->len && *p != ':'; p++)
        {
            if (*p != '.' && (*p < '0' || *p > '9')) {
                break;
            }
        }

        loopback = (p == host->data + host->len || *p == ':');
    }

    url.len = sizeof("https://") - 1 + host->len
              + sizeof("/.well-known/webfinger?resource=acct:") - 1
              + name->len + 1 + host->len;

    url.data = ngx_pnalloc(r->pool, url.len);
    if (url.data == NULL) {
        return ngx_http_tent_internal_error(r, "building the WebFinger URL");
    }

    p = ngx_sprintf(url.data, "%s://%V/.well-known/webfinger"
                    "?resource=acct:%V@%V", loopback ? "http" : "https",
                    host, name, host);
    url.len = p - url.data;

    if (ngx_http_tent_domains_entity(&url)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                   "The entity's domain is blocked on this host");
    }

    f = ngx_http_tent_remote_fetch(r, &url, "GET");

    if (f == NULL
        || ngx_http_tent_ap_sign_fetch(r->pool, f, &ctx->entity,
                                       st->sign_key)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "starting the WebFinger GET");
    }

    ngx_str_set(&f->accept, "application/jrd+json, application/json");
    f->max_response = NGX_HTTP_TENT_AP_JRD_MAX;
    f->redirects = 2;
    f->data = st;

    ctx->state = st;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap follow: WebFinger %V", &url);

    return ngx_http_tent_fetch_request(r, f, ngx_http_tent_ap_webfingered);
}


/* the JRD's "self" link of an ActivityStreams type: the actor */

static ngx_int_t
ngx_http_tent_ap_webfingered(ngx_http_request_t *r, ngx_http_tent_fetch_t *f)
{
    size_t                      i;
    json_t                     *jrd, *link;
    ngx_str_t                   rel, type, href;
    ngx_http_tent_ap_follow_t  *st;

    st = f->data;

    if (st->back && f->result == NGX_HTTP_TENT_FETCH_OK && f->status != 200) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_GATEWAY,
                   "The actor's preferredUsername at its host does not "
                   "resolve back to it (WebFinger answered no account)");
    }

    if (f->result != NGX_HTTP_TENT_FETCH_OK || f->status != 200) {
        return ngx_http_tent_remote_error(r, f, "The WebFinger GET");
    }

    jrd = ngx_http_tent_json_own(r->pool,
                                 ngx_http_tent_json_parse(&f->body,
                                                          r->connection->log));
    ngx_str_null(&href);

    json_array_foreach(json_object_get(jrd, "links"), i, link) {
        if (i >= NGX_HTTP_TENT_AP_JRD_LINKS) {
            break;
        }

        if (ngx_http_tent_json_str(link, "rel", &rel) != NGX_OK
            || rel.len != 4 || ngx_strncmp(rel.data, "self", 4) != 0
            || ngx_http_tent_json_str(link, "type", &type) != NGX_OK
            || !(ngx_strlcasestrn(type.data, type.data + type.len,
                                  (u_char *) "activity+json", 13 - 1)
                 || ngx_strlcasestrn(type.data, type.data + type.len,
                                     (u_char *) "ld+json", 7 - 1))
            || ngx_http_tent_ap_url_of(json_object_get(link, "href"), &href)
               != NGX_OK
            || ngx_http_tent_entity_valid(&href) != NGX_OK)
        {
            ngx_str_null(&href);
            continue;
        }

        break;
    }

    if (href.len == 0) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_GATEWAY,
                   st->back ? "The actor's preferredUsername at its host "
                              "does not resolve back to it"
                            : "The WebFinger answer names no ActivityPub "
                              "actor");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap follow: WebFinger %V names \"%V\"",
                   &f->url, &href);

    if (st->back) {

        /* the actor's own handle resolves to it: the actor is checked */

        if (href.len != st->id.len
            || ngx_strncmp(href.data, st->id.data, href.len) != 0)
        {
            return ngx_http_tent_send_error(r, NGX_HTTP_BAD_GATEWAY,
                       "The actor's preferredUsername at its host does "
                       "not resolve back to it");
        }

        return ngx_http_tent_ap_follow_load(r, st);
    }

    st->url = href;

    return ngx_http_tent_ap_actor_fetch(r, &st->url, st->sign_key, st,
                                        ngx_http_tent_ap_followed_actor);
}


/*
 * The actor: its id the URL fetched (or its last hop), an inbox; the
 * owner's blocks and the operator's; then its handle, WebFinger back.
 */

static ngx_int_t
ngx_http_tent_ap_followed_actor(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f)
{
    json_t                     *doc;
    ngx_str_t                   authority, username;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_ap_follow_t  *st;

    st = f->data;
    ctx = ngx_http_tent_get_ctx(r);

    if (f->result != NGX_HTTP_TENT_FETCH_OK || f->status != 200) {
        return ngx_http_tent_remote_error(r, f, "The actor's GET");
    }

    doc = ngx_http_tent_ap_actor_read(r, f, &st->id);

    /* a URL the app gave, neither a Tent entity nor an actor: 404 still */

    if (doc == NULL) {
        return ngx_http_tent_send_error(r,
                   st->host.len ? NGX_HTTP_BAD_GATEWAY : NGX_HTTP_NOT_FOUND,
                   st->host.len ? "The actor is no JSON object with its "
                                  "id on its own host"
                                : "Neither a Tent profile nor an "
                                  "ActivityPub actor there");
    }

    if (!(ngx_http_tent_entity_eq(&st->id, &st->url)
          || ngx_http_tent_entity_eq(&st->id, &f->url)))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_GATEWAY,
                   "The actor's id is not the URL it was fetched from");
    }

    if (ngx_http_tent_ap_url_of(json_object_get(doc, "inbox"), &st->inbox)
        != NGX_OK
        || ngx_http_tent_entity_valid(&st->inbox) != NGX_OK)
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_GATEWAY,
                                        "The actor has no inbox");
    }

    if (ngx_http_tent_ap_url_of(json_object_get(json_object_get(doc,
                                                               "endpoints"),
                                                "sharedInbox"),
                                &st->shared_inbox)
        != NGX_OK
        || ngx_http_tent_entity_valid(&st->shared_inbox) != NGX_OK)
    {
        ngx_str_null(&st->shared_inbox);
    }

    if (ngx_http_tent_ap_face(r->pool, doc, &st->face_name, &st->face_icon)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "reading the actor's name");
    }

    if (ngx_http_tent_entity_eq(&st->id, &ctx->entity)) {
        return ngx_http_tent_send_error(r, 406, "Can not follow self");
    }

    if (ngx_http_tent_blocks_has(ctx->blocks, &st->id)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "The entity is blocked: unblock it "
                                        "first");
    }

    if (ngx_http_tent_domains_entity(&st->id)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                   "The entity's domain is blocked on this host");
    }

    /* its handle: preferredUsername at the host of its id */

    if (ngx_http_tent_json_str(doc, "preferredUsername", &username) != NGX_OK
        || ngx_http_tent_ap_authority(&st->id, &authority) != NGX_OK)
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_GATEWAY,
                   "The actor has no preferredUsername");
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap follow: actor \"%V\", inbox %V, handle %V",
                   &st->id, &st->inbox, &username);

    /* the handle asked is its own: the first WebFinger resolved it */

    if (st->name.len
        && username.len == st->name.len
        && ngx_strncasecmp(username.data, st->name.data, username.len) == 0
        && authority.len == st->host.len
        && ngx_strncasecmp(authority.data, st->host.data, authority.len)
           == 0)
    {
        return ngx_http_tent_ap_follow_load(r, st);
    }

    if (ngx_http_tent_ap_handle_check(&username, &authority) != NGX_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_GATEWAY,
                   "The actor has no usable preferredUsername");
    }

    st->name = username;
    st->host = authority;
    st->back = 1;

    return ngx_http_tent_ap_webfinger(r, st, &st->name, &st->host);
}


/* already following the actor?  keyed by its id, as the inbox reads it */

static ngx_int_t
ngx_http_tent_ap_follow_load(ngx_http_request_t *r,
    ngx_http_tent_ap_follow_t *st)
{
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);
    ctx->state = st;

    return ngx_http_tent_relation_load_entity(r, ctx,
                                            &ngx_http_tent_followings_rel,
                                            &st->id,
                                            ngx_http_tent_ap_follow_existing);
}


/*
 * The actor followed already: its record is the answer (a second POST
 * sends no second Follow).  A Tent following of the same URL: 409, as
 * the Tent path answers.
 */

static ngx_int_t
ngx_http_tent_ap_follow_existing(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *record)
{
    ngx_http_tent_ap_follow_t  *st;

    st = ctx->state;

    if (record && json_is_object(json_object_get(record, "activitypub"))) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent ap follow: \"%V\" followed already", &st->id);
        return ngx_http_tent_ap_following_answer(r, record);
    }

    if (record) {
        return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                                        "Already following");
    }

    return ngx_http_tent_ap_follow_write(r, ctx, st);
}


/*
 * One write: the "E" row "must be absent" (two follows at once make one
 * following), the "F" record unconfirmed, the following's post, the
 * quota's count, and the Follow for the transport (AP.md item 5).
 */

static ngx_int_t
ngx_http_tent_ap_follow_write(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_follow_t *st)
{
    json_t                    *ap, *record, *follow, *v;
    ngx_str_t                  hex, follow_id, key, ekey, value;
    ngx_http_tent_store_op_t  *op;

    if (ngx_http_tent_relation_id(r->pool, &st->record_id) != NGX_OK
        || ngx_http_tent_random_hex(r->pool, 16, &hex) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "making the following's ids");
    }

    follow_id.len = ctx->entity.len + sizeof("#follow-") - 1 + hex.len;
    follow_id.data = ngx_pnalloc(r->pool, follow_id.len);
    if (follow_id.data == NULL) {
        return ngx_http_tent_internal_error(r, "making the Follow's id");
    }

    ngx_sprintf(follow_id.data, "%V#follow-%V", &ctx->entity, &hex);

    ap = json_pack("{s:o, s:o}",
                   "inbox", ngx_http_tent_json_string(&st->inbox),
                   "follow", ngx_http_tent_json_string(&follow_id));

    if (ap && st->shared_inbox.len) {
        json_object_set_new(ap, "shared_inbox",
                            ngx_http_tent_json_string(&st->shared_inbox));
    }

    if (ap) {
        (void) ngx_http_tent_ap_face_set(ap, &st->face_name, &st->face_icon);
    }

    v = json_object_get(json_object_get(st->body, "permissions"), "public");

    record = json_pack("{s:o, s:o, s:I, s:I, s:b, s:O, s:O, s:{s:b}, s:o}",
                       "id", ngx_http_tent_json_string(&st->record_id),
                       "entity", ngx_http_tent_json_string(&st->id),
                       "created_at", (json_int_t) ngx_time(),
                       "updated_at", (json_int_t) ngx_time(),
                       "confirmed", 0,
                       "types", st->types,
                       "licenses", st->licenses,
                       "permissions", "public",
                           v == NULL || json_is_true(v),
                       "activitypub", ap);

    if (record == NULL
        || ngx_http_tent_json_cleanup(r->pool, record) != NGX_OK)
    {
        json_decref(record);
        return ngx_http_tent_internal_error(r,
                                            "building the following record");
    }

    v = json_object_get(st->body, "groups");
    json_object_set_new(record, "groups",
                        json_is_array(v) && json_array_size(v) <= 100
                        ? json_incref(v) : json_array());

    follow = json_pack("{s:s, s:o, s:s, s:o, s:o}",
                       "@context", "https://www.w3.org/ns/activitystreams",
                       "id", ngx_http_tent_json_string(&follow_id),
                       "type", "Follow",
                       "actor", ngx_http_tent_json_string(&ctx->entity),
                       "object", ngx_http_tent_json_string(&st->id));

    if (follow == NULL
        || ngx_http_tent_json_cleanup(r->pool, follow) != NGX_OK)
    {
        json_decref(follow);
        return ngx_http_tent_internal_error(r, "building the Follow");
    }

    if (ngx_http_tent_key(r->pool, &ctx->entity,
                          NGX_HTTP_TENT_TABLE_FOLLOWING, &st->record_id, &key)
        != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_FOLLOWING_ENTITY, &st->id,
                             &ekey)
           != NGX_OK
        || ngx_http_tent_json_dump(r->pool, record, &value) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                            "building the following's rows");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_cas(op, &ekey, NULL, &st->record_id) != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK
        || ngx_http_tent_relation_post(r, ctx, op, "following", record,
                                       "create")
           != NGX_OK
        || ngx_http_tent_quota_count(r, ctx, op) != NGX_OK
        || ngx_http_tent_delivery_activity(r->pool, &ctx->entity, op, follow,
                                           &st->inbox)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                       "adding the following to the batch");
    }

    st->record = record;
    ctx->state = st;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap follow: following \"%V\" as %V, Follow %V "
                   "queued", &st->id, &st->record_id, &follow_id);

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_follow_stored);
}


static ngx_int_t
ngx_http_tent_ap_follow_stored(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                   rc;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_ap_follow_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    /* a conflict: another follow of the actor wrote first, read it */

    if (op->status == NGX_HTTP_TENT_STORE_CONFLICT && !st->again) {
        st->again = 1;
        return ngx_http_tent_ap_follow_load(r, st);
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        return ngx_http_tent_send_error(r,
                                        ngx_http_tent_store_http_status(op),
                                        NULL);
    }

    return ngx_http_tent_ap_following_answer(r, st->record);
}


/* "host[:port]" of an http(s) URL, as written; no userinfo */

static ngx_int_t
ngx_http_tent_ap_authority(ngx_str_t *url, ngx_str_t *authority)
{
    u_char  *p, *end;

    p = url->data;
    end = url->data + url->len;

    if (url->len > 7 && ngx_strncasecmp(p, (u_char *) "http://", 7) == 0) {
        p += 7;

    } else if (url->len > 8
               && ngx_strncasecmp(p, (u_char *) "https://", 8) == 0)
    {
        p += 8;

    } else {
        return NGX_DECLINED;
    }

    authority->data = p;

    while (p < end && *p != '/' && *p != '?' && *p != '#') {
        if (*p == '@') {
            return NGX_DECLINED;
        }

        p++;
    }

    authority->len = p - authority->data;

    return authority->len ? NGX_OK : NGX_DECLINED;
}
