
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * ActivityPub's part of a server (tent_activitypub on): its directives
 * checked, which requests are ours (the well-known routes, the entity
 * URL asked for as ActivityStreams), the entity's account name, the
 * actor's URLs, and "Vary: Accept" on the entity URL, whose answer
 * depends on it.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_ap.h"


static ngx_int_t ngx_http_tent_ap_vary(ngx_http_request_t *r);
static ngx_uint_t ngx_http_tent_ap_is_root(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


static ngx_str_t  ngx_http_tent_ap_wellknown[] = {
    ngx_string("/.well-known/webfinger"),
    ngx_string("/.well-known/host-meta"),
    ngx_string("/.well-known/nodeinfo"),
    ngx_string("/.well-known/nodeinfo/2.1"),
    ngx_null_string
};


/* an account name: what RFC 7565 lets a userpart be, less the odd ones */

static ngx_int_t
ngx_http_tent_ap_name_valid(ngx_str_t *name)
{
    size_t  i;
    u_char  c;

    if (name->len == 0 || name->len > NGX_HTTP_TENT_AP_NAME_MAX) {
        return NGX_ERROR;
    }

    for (i = 0; i < name->len; i++) {
        c = name->data[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
              || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'
              || c == '~'))
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_ap_conf(ngx_conf_t *cf, ngx_http_tent_srv_conf_t *scf)
{
    ngx_str_t                   name;
    ngx_http_tent_main_conf_t  *mcf;

    if (scf->ap_name.data) {
        if (scf->provisioning) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"tent_ap_name\" names one entity: a "
                               "server with \"tent_provisioning\" names "
                               "each of its entities from its URL");
            return NGX_ERROR;
        }

        if (ngx_http_tent_ap_name_valid(&scf->ap_name) != NGX_OK) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"tent_ap_name\" must be 1 to %d letters, "
                               "digits, \"-\", \".\", \"_\" or \"~\": "
                               "\"%V\"", NGX_HTTP_TENT_AP_NAME_MAX,
                               &scf->ap_name);
            return NGX_ERROR;
        }
    }

    if (!scf->activitypub) {
        return NGX_OK;
    }

    /*
     * open mode: any Host name is an entity, and an anonymous GET of
     * its actor would make and store a key for each name made up
     */

    if (scf->entity->lengths && !scf->provisioning) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tent_activitypub\" with a variable "
                           "\"tent_entity\" needs \"tent_provisioning "
                           "on\"");
        return NGX_ERROR;
    }

    /* the keys' generation: off the event loop, on nginx's own pool */

    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_tent_module);

    if (mcf->ap_pool == NULL) {
        ngx_str_set(&name, "default");

        mcf->ap_pool = ngx_thread_pool_add(cf, &name);
        if (mcf->ap_pool == NULL) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* in the precontent phase: 1 when the request is ActivityPub's */

ngx_uint_t
ngx_http_tent_ap_claim(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                 *w;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    if (!scf->activitypub || r != r->main) {
        return 0;
    }

    /*
     * The entity URL answers a page or the actor: caches must know.  Set
     * here, on the URI as asked: an index or try_files may move the
     * request to another URI (a static index.html) before a header
     * filter could see it, and headers_out stays across that move.
     */

    if (ngx_http_tent_ap_is_root(r, ctx) && ngx_http_tent_ap_vary(r) != NGX_OK)
    {
        return 0;
    }

    for (w = ngx_http_tent_ap_wellknown; w->len; w++) {
        if (r->uri.len == w->len
            && ngx_strncmp(r->uri.data, w->data, w->len) == 0)
        {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "tent ap: \"%V\" is ours", &r->uri);

            r->content_handler = ngx_http_tent_webfinger_handler;
            return 1;
        }
    }

    if (ngx_http_tent_ap_is_root(r, ctx) && ngx_http_tent_ap_accepts(r)) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent ap: the actor of \"%V\" asked for",
                       &ctx->entity);

        r->content_handler = ngx_http_tent_ap_actor_handler;
        return 1;
    }

    return 0;
}


static ngx_uint_t
ngx_http_tent_ap_is_root(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return (r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))
           && r->uri.len == ctx->root_path.len
           && ngx_strncmp(r->uri.data, ctx->root_path.data, r->uri.len) == 0;
}


/*
 * "Accept: application/activity+json" or "application/ld+json;
 * profile=\"https://www.w3.org/ns/activitystreams\"", anywhere in any
 * Accept field (Mastodon sends both, with q values we do not weigh)
 */

ngx_uint_t
ngx_http_tent_ap_accepts(ngx_http_request_t *r)
{
    u_char           *p, *last;
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    part = &r->headers_in.headers.part;
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

        if (h[i].key.len != sizeof("Accept") - 1
            || ngx_strncasecmp(h[i].key.data, (u_char *) "Accept",
                               sizeof("Accept") - 1) != 0)
        {
            continue;
        }

        last = h[i].value.data + h[i].value.len;

        if (ngx_strlcasestrn(h[i].value.data, last,
                             (u_char *) NGX_HTTP_TENT_AP_TYPE,
                             sizeof(NGX_HTTP_TENT_AP_TYPE) - 2))
        {
            return 1;
        }

        p = ngx_strlcasestrn(h[i].value.data, last,
                             (u_char *) "application/ld+json",
                             sizeof("application/ld+json") - 2);

        if (p && ngx_strlcasestrn(p, last, (u_char *)
                                  "https://www.w3.org/ns/activitystreams",
                                  sizeof("https://www.w3.org/ns/"
                                         "activitystreams") - 2))
        {
            return 1;
        }
    }

    return 0;
}


/*
 * GET or HEAD {api}/posts/:id with the module on: "Vary: Accept" on the
 * answer, whichever it is; NGX_OK when it is ActivityStreams that is
 * asked for (the router answers ngx_http_tent_ap_post()), NGX_DECLINED
 * for Tent's answer
 */

ngx_int_t
ngx_http_tent_ap_post_route(ngx_http_request_t *r)
{
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    if (!scf->activitypub || !(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_DECLINED;
    }

    if (ngx_http_tent_ap_vary(r) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_tent_ap_accepts(r) ? NGX_OK : NGX_DECLINED;
}


/* "Vary: Accept", once: a request moved back to the root comes again */

static ngx_int_t
ngx_http_tent_ap_vary(ngx_http_request_t *r)
{
    ngx_str_t         accept = ngx_string("Accept");
    ngx_table_elt_t  *h;

    h = ngx_http_tent_header_out(r, "Vary");

    if (h && h->value.len == accept.len
        && ngx_strncasecmp(h->value.data, accept.data, accept.len) == 0)
    {
        return NGX_OK;
    }

    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: the entity URL varies by Accept");

    return ngx_http_tent_add_header(r, "Vary", &accept);
}


/*
 * The entity's account name (acct:NAME@HOST): tent_ap_name; else the
 * last segment of the entity URL's path; else its host's first label.
 * NGX_DECLINED: the URL gives no name an account may have.
 */

ngx_int_t
ngx_http_tent_ap_name(ngx_http_request_t *r, ngx_str_t *entity,
    ngx_str_t *name)
{
    return ngx_http_tent_ap_name_conf(
               ngx_http_get_module_srv_conf(r, ngx_http_tent_module),
               entity, name);
}


/* the same with no request: the delivery engine's */

ngx_int_t
ngx_http_tent_ap_name_conf(ngx_http_tent_srv_conf_t *scf, ngx_str_t *entity,
    ngx_str_t *name)
{
    u_char  *p, *host, *last;

    if (scf->ap_name.len) {
        *name = scf->ap_name;
        return NGX_OK;
    }

    last = entity->data + entity->len;

    p = ngx_strlcasestrn(entity->data, last, (u_char *) "://", 3 - 1);
    if (p == NULL) {
        return NGX_DECLINED;
    }

    host = p + 3;

    while (last > host && last[-1] == '/') {
        last--;
    }

    p = ngx_strlchr(host, last, '/');

    if (p) {
        /* a path: its last segment */

        for (p = last; p[-1] != '/'; p--) { /* void */ }

        name->data = p;
        name->len = last - p;

    } else {
        for (p = host; p < last && *p != '.' && *p != ':'; p++) {
            /* void */
        }

        name->data = host;
        name->len = p - host;
    }

    return ngx_http_tent_ap_name_valid(name) == NGX_OK ? NGX_OK
                                                        : NGX_DECLINED;
}


/*
 * The actor's preferredUsername and the name in its URLs: "entity" where
 * the URL gives no valid one (set tent_ap_name there)
 */

void
ngx_http_tent_ap_actor_name(ngx_http_request_t *r, ngx_str_t *entity,
    ngx_str_t *name)
{
    if (ngx_http_tent_ap_name(r, entity, name) != NGX_OK) {
        ngx_str_set(name, "entity");
    }
}


/*
 * An actor's URL of ours: <origin><api root>/activitypub/<name>/<what>,
 * one set an entity, as entities on paths of one host share the API root;
 * the shared inbox, "shared-inbox", is the host's: no name.
 */

ngx_int_t
ngx_http_tent_ap_url(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    const char *what, json_t **url)
{
    u_char                    *p;
    size_t                     len;
    ngx_str_t                  s, name;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    len = ngx_strlen(what);
    ngx_str_null(&name);

    if (ngx_strcmp(what, "shared-inbox") != 0) {
        ngx_http_tent_ap_actor_name(r, &ctx->entity, &name);
    }

    s.len = ctx->origin.len + scf->api_root.len
            + sizeof(NGX_HTTP_TENT_AP_PATH "/") - 1 + name.len + 1 + len;

    s.data = ngx_pnalloc(r->pool, s.len);
    if (s.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(s.data, ctx->origin.data, ctx->origin.len);

    /* "/" as the API root: no "//" */

    if (scf->api_root.len > 1) {
        p = ngx_cpymem(p, scf->api_root.data, scf->api_root.len);
    }

    p = ngx_cpymem(p, NGX_HTTP_TENT_AP_PATH "/",
                   sizeof(NGX_HTTP_TENT_AP_PATH "/") - 1);

    if (name.len) {
        p = ngx_cpymem(p, name.data, name.len);
        *p++ = '/';
    }

    p = ngx_cpymem(p, what, len);

    s.len = p - s.data;

    *url = ngx_http_tent_json_string(&s);

    return *url ? NGX_OK : NGX_ERROR;
}


/*
 * A route of one entity's, {api}/activitypub/:name/...: NGX_OK when
 * ":name" is the request's entity's name, NGX_DECLINED (a 404 for the
 * caller to send) when the module is off or it is another's or none's
 */

ngx_int_t
ngx_http_tent_ap_own_route(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                  name;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    ngx_http_tent_ap_actor_name(r, &ctx->entity, &name);

    if (scf->activitypub
        && ctx->nparams > 0
        && name.len == ctx->params[0].len
        && ngx_strncmp(name.data, ctx->params[0].data, name.len) == 0)
    {
        return NGX_OK;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent activitypub: \"%V\" is not this entity's name",
                   ctx->nparams ? &ctx->params[0] : &scf->ap_name);

    return NGX_DECLINED;
}


ngx_int_t
ngx_http_tent_ap_send(ngx_http_request_t *r, ngx_uint_t status,
    const char *type, ngx_str_t *body)
{
    ngx_int_t             rc;
    ngx_buf_t            *b;
    ngx_str_t             any = ngx_string("*"), one = ngx_string("1");
    ngx_chain_t           out;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);
    if (ctx) {
        ctx->own_reply = 1;
    }

    if (r->request_body == NULL && !r->discard_body
        && ngx_http_discard_request_body(r) != NGX_OK)
    {
        r->keepalive = 0;
    }

    /* discovery documents are public: any page's script may read them */

    if (ngx_http_tent_add_header(r, "Access-Control-Allow-Origin", &any)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (status == NGX_HTTP_SERVICE_UNAVAILABLE
        && ngx_http_tent_add_header(r, "Retry-After", &one) != NGX_OK)
    {
        return NGX_ERROR;
    }

    r->headers_out.status = status;
    r->headers_out.content_length_n = body->len;
    r->headers_out.content_type.data = (u_char *) type;
    r->headers_out.content_type.len = ngx_strlen(type);
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only || body->len == 0) {
        return rc == NGX_OK && body->len == 0 && !r->header_only
               ? ngx_http_send_special(r, NGX_HTTP_LAST) : rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = body->data;
    b->last = body->data + body->len;
    b->memory = 1;
    b->last_buf = 1;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


ngx_int_t
ngx_http_tent_ap_error(ngx_http_request_t *r, ngx_uint_t status,
    const char *message)
{
    ngx_str_t  body;

    if (ngx_http_tent_error_body(r->pool, status, message, &body) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "writing the error reply");
    }

    return ngx_http_tent_ap_send(r, status, "application/json", &body);
}


/* the actor's collections and inboxes: routes to come (issue #29) */

ngx_int_t
ngx_http_tent_ap_not_yet(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    /* the module off, or an entity's own route of another name: 404 */

    if (!scf->activitypub
        || (ctx->nparams > 0 && ngx_http_tent_ap_own_route(r, ctx) != NGX_OK))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    return ngx_http_tent_send_error(r, NGX_HTTP_NOT_IMPLEMENTED,
                                    "Not implemented yet");
}
