
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The router: the route table, a path matched to a route, the methods
 * it allows, and the content handler that runs the route on the
 * request's ctx (ngx_http_tent_ctx.c).  Tent routes are answered in the
 * content phase, after nginx's own access phase, so auth_basic,
 * allow/deny or limit_req work on any Tent location.
 */


#define NGX_HTTP_TENT_MODULE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_domains.h"
#include "ngx_http_tent_module_private.h"
#include "ngx_http_tent_ap.h"
#include "ngx_http_tent_apps.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_blocks.h"
#include "ngx_http_tent_export.h"
#include "ngx_http_tent_import.h"
#include "ngx_http_tent_move.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_notifications.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_profile.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_relations.h"


typedef struct {
    ngx_str_t                       path;
    ngx_uint_t                      methods;
    ngx_http_tent_route_pt          handler;
    ngx_uint_t                      blocks;   /* reads the owner's blocks */
} ngx_http_tent_route_t;


static ngx_int_t ngx_http_tent_api_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_tent_ap_anonymous(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static void ngx_http_tent_raw_api_path(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_fresh(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_dispatch(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


/* paths are relative to the API root; ":x" matches one segment */

static ngx_http_tent_route_t  ngx_http_tent_routes[] = {

    { ngx_string("/profile"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_profile_get,
      0 },

    { ngx_string("/profile/:type"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_profile_type_get,
      0 },

    { ngx_string("/profile/:type"),
      NGX_HTTP_PUT|NGX_HTTP_DELETE,
      ngx_http_tent_profile_change,
      0 },

    { ngx_string("/apps"),
      NGX_HTTP_POST,
      ngx_http_tent_apps_create,
      0 },

    { ngx_string("/apps"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_apps_list,
      0 },

    { ngx_string("/apps/:id"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_app_get,
      0 },

    { ngx_string("/apps/:id"),
      NGX_HTTP_PUT,
      ngx_http_tent_app_update,
      0 },

    { ngx_string("/apps/:id"),
      NGX_HTTP_DELETE,
      ngx_http_tent_app_delete,
      0 },

    { ngx_string("/apps/:id/authorizations"),
      NGX_HTTP_POST,
      ngx_http_tent_authorizations_post,
      0 },

    { ngx_string("/apps/:id/authorizations"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_authorizations_list,
      0 },

    { ngx_string("/apps/:id/authorizations/:auth"),
      NGX_HTTP_PUT,
      ngx_http_tent_authorization_update,
      0 },

    { ngx_string("/apps/:id/authorizations/:auth"),
      NGX_HTTP_DELETE,
      ngx_http_tent_authorization_delete,
      0 },

    { ngx_string("/posts"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_move_posts_list,
      1 },

    { ngx_string("/posts"),
      NGX_HTTP_POST,
      ngx_http_tent_posts_post,
      1 },

    { ngx_string("/posts/count"),
      NGX_HTTP_GET,
      ngx_http_tent_posts_count,
      1 },

    { ngx_string("/posts/:id"),
      NGX_HTTP_GET|NGX_HTTP_HEAD|NGX_HTTP_PUT|NGX_HTTP_DELETE,
      ngx_http_tent_move_post_get,
      0 },

    { ngx_string("/posts/:id/mentions"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_post_mentions_list,
      0 },

    { ngx_string("/posts/:id/versions"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_post_versions,
      0 },

    { ngx_string("/posts/:id/deliveries"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_post_deliveries,
      0 },

    { ngx_string("/posts/:entity/:id"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_post_get,
      0 },

    { ngx_string("/posts/:id/attachments/:name"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_post_attachment,
      0 },

    { ngx_string("/posts/:entity/:id/attachments/:name"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_post_attachment,
      0 },

    { ngx_string("/groups"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_groups_list,
      0 },

    { ngx_string("/groups"),
      NGX_HTTP_POST,
      ngx_http_tent_groups_post,
      0 },

    { ngx_string("/groups/count"),
      NGX_HTTP_GET,
      ngx_http_tent_groups_list,
      0 },

    { ngx_string("/groups/:id"),
      NGX_HTTP_GET|NGX_HTTP_HEAD|NGX_HTTP_PUT|NGX_HTTP_DELETE,
      ngx_http_tent_group,
      0 },

    { ngx_string("/followers"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_followers_list,
      0 },

    { ngx_string("/followers"),
      NGX_HTTP_POST,
      ngx_http_tent_followers_post,
      1 },

    { ngx_string("/followers/count"),
      NGX_HTTP_GET,
      ngx_http_tent_followers_list,
      0 },

    { ngx_string("/followers/:id"),
      NGX_HTTP_GET|NGX_HTTP_HEAD|NGX_HTTP_PUT|NGX_HTTP_DELETE,
      ngx_http_tent_follower,
      0 },

    { ngx_string("/followings"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_followings_list,
      0 },

    { ngx_string("/followings"),
      NGX_HTTP_POST,
      ngx_http_tent_followings_post,
      1 },

    { ngx_string("/followings/count"),
      NGX_HTTP_GET,
      ngx_http_tent_followings_list,
      0 },

    { ngx_string("/followings/:id"),
      NGX_HTTP_GET|NGX_HTTP_HEAD|NGX_HTTP_PUT|NGX_HTTP_DELETE,
      ngx_http_tent_following,
      0 },

    { ngx_string("/followings/:id/*"),
      NGX_HTTP_GET,
      ngx_http_tent_following_proxy,
      1 },

    { ngx_string("/avatars/:entity"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_avatar_get,
      1 },

    { ngx_string("/notifications/:id"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_notification_challenge,
      0 },

    { ngx_string("/notifications/:id"),
      NGX_HTTP_POST,
      ngx_http_tent_notification_post,
      1 },

    { ngx_string("/blocks"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_blocks_list,
      1 },

    { ngx_string("/blocks"),
      NGX_HTTP_POST,
      ngx_http_tent_blocks_post,
      1 },

    { ngx_string("/blocks/:entity"),
      NGX_HTTP_DELETE,
      ngx_http_tent_block_delete,
      1 },

    { ngx_string("/export"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_export_get,
      0 },

    { ngx_string("/import"),
      NGX_HTTP_POST,
      ngx_http_tent_import_post_route,
      1 },

    { ngx_string("/move"),
      NGX_HTTP_POST,
      ngx_http_tent_move_post,
      0 },

    { ngx_string("/oauth/authorize"),
      NGX_HTTP_GET|NGX_HTTP_HEAD|NGX_HTTP_POST,
      ngx_http_tent_oauth_authorize,
      0 },

    /*
     * the actor's inboxes and collections, one set an entity (":name" its
     * ActivityPub name): the inboxes need the owner's blocks; the
     * collections are anonymous documents (ngx_http_tent_ap_anonymous())
     */

    { ngx_string("/activitypub/:name/inbox"),
      NGX_HTTP_GET|NGX_HTTP_HEAD|NGX_HTTP_POST,
      ngx_http_tent_ap_inbox,
      1 },

    { ngx_string("/activitypub/shared-inbox"),
      NGX_HTTP_POST,
      ngx_http_tent_ap_inbox,
      1 },

    { ngx_string("/activitypub/key"),
      NGX_HTTP_POST,
      ngx_http_tent_ap_key_rotate,
      0 },

    { ngx_string("/activitypub/:name/outbox"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_ap_outbox,
      0 },

    { ngx_string("/activitypub/:name/followers"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_ap_followers,
      0 },

    { ngx_string("/activitypub/:name/following"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_ap_following,
      0 },

    /* follow requests the owner approves: authenticated, Tent's own */

    { ngx_string("/activitypub/:name/requests"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_ap_requests,
      0 },

    { ngx_string("/activitypub/:name/requests/:id/accept"),
      NGX_HTTP_POST,
      ngx_http_tent_ap_request_accept,
      0 },

    { ngx_string("/activitypub/:name/requests/:id/reject"),
      NGX_HTTP_POST,
      ngx_http_tent_ap_request_reject,
      0 },

    { ngx_null_string, 0, NULL, 0 }
};


/*
 * The root of an entity with a path ("https://example.org/~alice") would
 * be a 404 from the static module: answer it unless a file or directory
 * is there.  A root ending in "/" is left to the index module, and to
 * ngx_http_tent_root_handler() after it.
 */

static ngx_int_t
ngx_http_tent_claim_root(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    size_t           root;
    ngx_str_t        path;
    ngx_file_info_t  fi;

    if (r->content_handler
        || !(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))
        || ctx->root_path.data[ctx->root_path.len - 1] == '/'
        || r->uri.len != ctx->root_path.len
        || ngx_strncmp(r->uri.data, ctx->root_path.data, r->uri.len) != 0)
    {
        return NGX_DECLINED;
    }

    if (ngx_http_map_uri_to_path(r, &path, &root, 0) == NULL) {
        return NGX_ERROR;
    }

    if (ngx_file_info(path.data, &fi) == NGX_FILE_ERROR) {
        r->content_handler = ngx_http_tent_root_handler;
    }

    return NGX_DECLINED;
}


ngx_int_t
ngx_http_tent_precontent_handler(ngx_http_request_t *r)
{
    ngx_int_t             rc;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    if (ctx == NULL || ctx->invalid) {
        return NGX_DECLINED;
    }

    /* provisioning: an entity not created, or disabled, has no routes */

    rc = ngx_http_tent_provision_check(r, ctx);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    /* ActivityPub's (tent_activitypub on): its handlers read the state */

    if (ngx_http_tent_ap_claim(r, ctx)) {
        return NGX_DECLINED;
    }

    if (ctx->registry > NGX_HTTP_TENT_REG_ACTIVE) {
        if (ngx_http_tent_is_api_request(r, ctx)) {
            r->content_handler = ngx_http_tent_provision_refuse;
        }

        return NGX_DECLINED;
    }

    if (!ngx_http_tent_is_api_request(r, ctx)) {
        return ngx_http_tent_claim_root(r, ctx);
    }

    /* the API root is ours even inside a location with its own handler */

    r->content_handler = ngx_http_tent_api_handler;

    return NGX_DECLINED;
}


static ngx_int_t
ngx_http_tent_match(ngx_str_t *pattern, ngx_str_t *path,
    ngx_http_tent_ctx_t *ctx)
{
    u_char  *p, *q, *pe, *qe, *seg;

    p = pattern->data;
    pe = p + pattern->len;
    q = path->data;
    qe = q + path->len;

    ctx->nparams = 0;

    while (p < pe && q < qe) {

        /* "*" last: the rest of the path, one parameter */

        if (*p == '*' && p > pattern->data && p[-1] == '/') {
            if (ctx->nparams == NGX_HTTP_TENT_MAX_PARAMS) {
                return 0;
            }

            ctx->params[ctx->nparams].data = q;
            ctx->params[ctx->nparams].len = qe - q;
            ctx->nparams++;

            return p + 1 == pe;
        }

        if (*p == ':' && p > pattern->data && p[-1] == '/') {
            seg = q;

            while (q < qe && *q != '/') {
                q++;
            }

            if (q == seg || ctx->nparams == NGX_HTTP_TENT_MAX_PARAMS) {
                return 0;
            }

            ctx->params[ctx->nparams].data = seg;
            ctx->params[ctx->nparams].len = q - seg;
            ctx->nparams++;

            while (p < pe && *p != '/') {
                p++;
            }

            continue;
        }

        if (*p != *q) {
            return 0;
        }

        p++;
        q++;
    }

    return p == pe && q == qe;
}


static ngx_int_t
ngx_http_tent_allow(ngx_http_request_t *r, ngx_uint_t methods,
    ngx_str_t *value)
{
    u_char  *p;

    static struct {
        ngx_uint_t   method;
        const char  *name;
    } *m, names[] = {
        { NGX_HTTP_GET, "GET" },
        { NGX_HTTP_HEAD, "HEAD" },
        { NGX_HTTP_POST, "POST" },
        { NGX_HTTP_PUT, "PUT" },
        { NGX_HTTP_DELETE, "DELETE" },
        { 0, NULL }
    };

    p = ngx_pnalloc(r->pool, sizeof("GET, HEAD, POST, PUT, DELETE"));
    if (p == NULL) {
        return NGX_ERROR;
    }

    value->data = p;

    for (m = names; m->name; m++) {
        if (methods & m->method) {
            if (p != value->data) {
                *p++ = ',';
                *p++ = ' ';
            }

            p = ngx_cpymem(p, m->name, ngx_strlen(m->name));
        }
    }

    value->len = p - value->data;

    return NGX_OK;
}


/*
 * Route on the path as sent: parameters such as a type URI or an entity
 * arrive percent-encoded ("https%3A%2F%2F...") and must stay one segment;
 * nginx's r->uri has them decoded, and its slashes merged.
 */

static void
ngx_http_tent_raw_api_path(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    u_char                    *q;
    ngx_str_t                  raw;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    raw = r->unparsed_uri;

    q = ngx_strlchr(raw.data, raw.data + raw.len, '?');
    if (q) {
        raw.len = q - raw.data;
    }

    if (raw.len >= scf->api_root.len
        && ngx_strncmp(raw.data, scf->api_root.data, scf->api_root.len) == 0
        && (raw.len == scf->api_root.len
            || raw.data[scf->api_root.len] == '/'))
    {
        ctx->api_path.data = raw.data + scf->api_root.len;
        ctx->api_path.len = raw.len - scf->api_root.len;
    }
}


/*
 * The collections of the actor, and a post of ours asked for as
 * ActivityStreams (the handler changed for it), are documents for the
 * fediverse, which is anonymous: NGX_OK runs them with no credential
 * read, so that an app's, another entity's or a broken one makes no
 * other answer.  NGX_DECLINED: Tent's route, authenticated.
 */

static ngx_int_t
ngx_http_tent_ap_anonymous(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_int_t                  rc;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    if (!scf->activitypub || ctx->handler == NULL) {
        return NGX_DECLINED;
    }

    if (ctx->handler == (void *) ngx_http_tent_ap_outbox
        || ctx->handler == (void *) ngx_http_tent_ap_followers
        || ctx->handler == (void *) ngx_http_tent_ap_following)
    {
        return NGX_OK;
    }

    if (ctx->handler != (void *) ngx_http_tent_move_post_get) {
        return NGX_DECLINED;
    }

    rc = ngx_http_tent_ap_post_route(r);

    if (rc == NGX_OK) {
        ctx->handler = (void *) ngx_http_tent_ap_post;
    }

    return rc;
}


static ngx_int_t
ngx_http_tent_api_handler(ngx_http_request_t *r)
{
    ngx_int_t               rc;
    ngx_http_tent_ctx_t    *ctx;
    ngx_http_tent_route_t  *route;

    ctx = ngx_http_tent_get_ctx(r);

    if (ctx == NULL || ctx->invalid) {
        return ngx_http_tent_send_error(r, NGX_HTTP_INTERNAL_SERVER_ERROR,
                                        "Invalid entity configuration");
    }

    ctx->handler = NULL;
    ctx->allowed = 0;

    ngx_http_tent_raw_api_path(r, ctx);

    for (route = ngx_http_tent_routes; route->handler; route++) {
        if (!ngx_http_tent_match(&route->path, &ctx->api_path, ctx)) {
            continue;
        }

        ctx->allowed |= route->methods;

        if (route->methods & r->method) {
            ctx->handler = (void *) route->handler;
            ctx->route_blocks = route->blocks ? 1 : 0;

            /* the parameters of this route: matching others reset them */
            (void) ngx_http_tent_match(&route->path, &ctx->api_path, ctx);
            break;
        }
    }

#if (NGX_DEBUG)
    if (ctx->handler) {
        ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent route: %V \"%V\" is route \"%V\", "
                       "entity \"%V\"", &r->method_name, &ctx->api_path,
                       &route->path, &ctx->entity);

    } else {
        ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent route: %V \"%V\" has no route%s, "
                       "entity \"%V\"", &r->method_name, &ctx->api_path,
                       ctx->allowed ? " for the method" : "", &ctx->entity);
    }
#endif

    if (ctx->handler == NULL
        || (r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD|NGX_HTTP_DELETE)))
    {
        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    /* ActivityPub's documents: the same answer whoever asks */

    rc = ngx_http_tent_ap_anonymous(r, ctx);

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "adding the Vary header");
    }

    if (rc == NGX_OK) {
        return ((ngx_http_tent_route_pt) ctx->handler)(r, ctx);
    }

    /* a signed request is verified whatever it asks for, as tentd did */

    return ngx_http_tent_authenticate(r, ctx, ngx_http_tent_fresh);
}


/*
 * The operator's blocked domains, as of every block acknowledged before
 * this request: read again when their generation moved (one scan in a
 * worker, once), so an inbound check or a fetch of this request sees them
 */

static ngx_int_t
ngx_http_tent_fresh(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_domains_request(r, ctx, ngx_http_tent_dispatch);
}


static ngx_int_t
ngx_http_tent_dispatch(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_uint_t        peer;
    ngx_table_elt_t  *h;

    /*
     * The owner's blocks: read (from the worker's list, most often) for
     * the routes that name another entity, and for any request signed
     * with a relationship's credential, which a blocked entity may not use
     */

    peer = ctx->principal.kind == NGX_HTTP_TENT_FOLLOWER
           || ctx->principal.kind == NGX_HTTP_TENT_FOLLOWING;

    if (ctx->handler && ctx->blocks == NULL && (ctx->route_blocks || peer)) {
        return ngx_http_tent_blocks_request(r, ctx, ngx_http_tent_dispatch);
    }

    if (ctx->handler && peer
        && ngx_http_tent_domains_entity(&ctx->principal.entity))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                   "The entity's domain is blocked on this host");
    }

    if (ctx->handler && peer
        && ngx_http_tent_blocks_has(ctx->blocks, &ctx->principal.entity))
    {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent blocks: \"%V\" refused: blocked by \"%V\"",
                       &ctx->principal.entity, &ctx->entity);

        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "The entity is blocked");
    }

    if (ctx->handler) {
        return ((ngx_http_tent_route_pt) ctx->handler)(r, ctx);
    }

    if (ctx->allowed == 0) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return ngx_http_tent_internal_error(r, "adding the Allow header");
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Allow");

    if (ngx_http_tent_allow(r, ctx->allowed, &h->value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "listing the allowed methods");
    }

    return ngx_http_tent_send_error(r, NGX_HTTP_NOT_ALLOWED,
                                    "Method Not Allowed");
}
