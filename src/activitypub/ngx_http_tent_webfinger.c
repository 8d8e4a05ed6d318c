
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The well-known routes of an ActivityPub server: WebFinger (RFC 7033),
 * host-meta (RFC 6415, its lrdd template) and NodeInfo's link.
 * "acct:NAME@HOST" and the entity URL both resolve to the entity.  A
 * server of one entity (a fixed tent_entity, or https://$host) has one
 * name; a provisioning server whose tent_entity has a variable in its
 * path (https://example.org/~$tenant) has an entity per path: NAME is
 * that segment, looked up in the registry.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_ap.h"


typedef struct {
    ngx_str_t                       entity;      /* the candidate */
    ngx_str_t                       name;
} ngx_http_tent_webfinger_t;


static ngx_int_t ngx_http_tent_webfinger(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_webfinger_acct(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *res, ngx_http_tent_webfinger_t *wf);
static ngx_int_t ngx_http_tent_webfinger_url(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *res, ngx_http_tent_webfinger_t *wf);
static ngx_int_t ngx_http_tent_webfinger_lookup(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_webfinger_t *wf);
static ngx_int_t ngx_http_tent_webfinger_looked(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_webfinger_reply(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_webfinger_t *wf);
static ngx_int_t ngx_http_tent_host_meta(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static void ngx_http_tent_webfinger_authority(ngx_str_t *origin,
    ngx_str_t *auth);


ngx_int_t
ngx_http_tent_webfinger_handler(ngx_http_request_t *r)
{
    ngx_int_t             rc;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    if (ctx == NULL || ctx->invalid) {
        return ngx_http_tent_internal_error(r, "evaluating the entity");
    }

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return ngx_http_tent_ap_error(r, NGX_HTTP_NOT_ALLOWED,
                                      "Method Not Allowed");
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    if (ctx->registry == NGX_HTTP_TENT_REG_FAILED) {
        return ngx_http_tent_ap_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                      "The entity registry is unavailable");
    }

    /* "/.well-known/" is 13 bytes; the claim matched the whole URI */

    switch (r->uri.data[13]) {

    case 'w':
        return ngx_http_tent_webfinger(r, ctx);

    case 'h':
        return ngx_http_tent_host_meta(r, ctx);

    default:
        return ngx_http_tent_nodeinfo(r, ctx,
                                      r->uri.len > sizeof("/.well-known/"
                                                          "nodeinfo") - 1);
    }
}


static ngx_int_t
ngx_http_tent_webfinger(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    u_char                     *p, *dst;
    ngx_int_t                   rc;
    ngx_str_t                   raw, res;
    ngx_http_tent_webfinger_t  *wf;

    if (ngx_http_arg(r, (u_char *) "resource", sizeof("resource") - 1, &raw)
        != NGX_OK || raw.len == 0)
    {
        return ngx_http_tent_ap_error(r, NGX_HTTP_BAD_REQUEST,
                                      "The resource parameter is missing");
    }

    /* bounded before it is decoded */

    if (raw.len > NGX_HTTP_TENT_AP_RESOURCE_MAX) {
        return ngx_http_tent_ap_error(r, NGX_HTTP_BAD_REQUEST,
                                      "The resource is too long");
    }

    dst = ngx_pnalloc(r->pool, raw.len);
    if (dst == NULL) {
        return ngx_http_tent_internal_error(r, "decoding the resource");
    }

    res.data = dst;
    p = raw.data;
    ngx_unescape_uri(&dst, &p, raw.len, 0);
    res.len = dst - res.data;

    for (p = res.data; p < res.data + res.len; p++) {
        if (*p <= ' ' || *p >= 0x7f) {
            return ngx_http_tent_ap_error(r, NGX_HTTP_BAD_REQUEST,
                                          "The resource is malformed");
        }
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent webfinger: resource \"%V\"", &res);

    wf = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_webfinger_t));
    if (wf == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the webfinger");
    }

    if (res.len > 5 && ngx_strncasecmp(res.data, (u_char *) "acct:", 5) == 0)
    {
        rc = ngx_http_tent_webfinger_acct(r, ctx, &res, wf);

    } else if ((res.len > 7
                && ngx_strncasecmp(res.data, (u_char *) "http://", 7) == 0)
               || (res.len > 8
                   && ngx_strncasecmp(res.data, (u_char *) "https://", 8)
                      == 0))
    {
        rc = ngx_http_tent_webfinger_url(r, ctx, &res, wf);

    } else {
        return ngx_http_tent_ap_error(r, NGX_HTTP_BAD_REQUEST,
                   "The resource must be an acct: URI or an http(s) URL");
    }

    switch (rc) {

    case NGX_OK:
        return ngx_http_tent_webfinger_reply(r, ctx, wf);

    case NGX_AGAIN:
        return ngx_http_tent_webfinger_lookup(r, ctx, wf);

    case NGX_DECLINED:
        return ngx_http_tent_ap_error(r, NGX_HTTP_NOT_FOUND, "Not Found");

    case NGX_ABORT:
        return ngx_http_tent_ap_error(r, NGX_HTTP_BAD_REQUEST,
                                      "The resource is malformed");

    default:
        return ngx_http_tent_internal_error(r, "reading the resource");
    }
}


/*
 * "acct:NAME@HOST".  NGX_OK: the request's entity; NGX_AGAIN: a
 * candidate of the registry; NGX_DECLINED: none of ours; NGX_ABORT:
 * malformed; NGX_ERROR: no memory.  Nothing is sent here.
 */

static ngx_int_t
ngx_http_tent_webfinger_acct(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_str_t *res, ngx_http_tent_webfinger_t *wf)
{
    u_char     *p, *at, *last;
    ngx_str_t   name, host, auth, own, dir;

    last = res->data + res->len;
    at = NULL;

    for (p = res->data + 5; p < last; p++) {
        if (*p == '@') {
            at = p;
        }
    }

    if (at == NULL || at == res->data + 5 || at + 1 == last) {
        return NGX_ABORT;
    }

    name.data = res->data + 5;
    name.len = at - name.data;
    host.data = at + 1;
    host.len = last - host.data;

    /* the entity's host, with its port or without */

    ngx_http_tent_webfinger_authority(&ctx->origin, &auth);

    p = ngx_strlchr(auth.data, auth.data + auth.len, ':');
    if (auth.len && auth.data[0] == '[') {
        p = ngx_strlchr(auth.data, auth.data + auth.len, ']');
        p = (p && p + 1 < auth.data + auth.len) ? p + 1 : NULL;
    }

    if (!(host.len == auth.len
          && ngx_strncasecmp(host.data, auth.data, auth.len) == 0)
        && !(p && host.len == (size_t) (p - auth.data)
             && ngx_strncasecmp(host.data, auth.data, host.len) == 0))
    {
        return NGX_DECLINED;
    }

    if (name.len > NGX_HTTP_TENT_AP_NAME_MAX) {
        return NGX_DECLINED;
    }

    /* an entity per path: "<origin><dir><name>", if the registry has it */

    if (ngx_http_tent_ap_dir(r, &dir) == NGX_OK) {
        for (p = name.data; p < name.data + name.len; p++) {
            if (*p == '/' || *p == '%' || *p == '?' || *p == '#') {
                return NGX_DECLINED;
            }
        }

        wf->entity.len = ctx->origin.len + dir.len + name.len;
        wf->entity.data = ngx_pnalloc(r->pool, wf->entity.len);
        if (wf->entity.data == NULL) {
            return NGX_ERROR;
        }

        p = ngx_cpymem(wf->entity.data, ctx->origin.data, ctx->origin.len);
        p = ngx_cpymem(p, dir.data, dir.len);
        ngx_memcpy(p, name.data, name.len);

        wf->name = name;

        return NGX_AGAIN;
    }

    if (ngx_http_tent_ap_name(r, &ctx->entity, &own) != NGX_OK
        || own.len != name.len
        || ngx_strncmp(own.data, name.data, name.len) != 0)
    {
        return NGX_DECLINED;
    }

    if (ctx->registry > NGX_HTTP_TENT_REG_ACTIVE) {
        return NGX_DECLINED;
    }

    wf->entity = ctx->entity;
    wf->name = own;

    return NGX_OK;
}


/* the entity URL itself, in any of its spellings; as the acct: one */

static ngx_int_t
ngx_http_tent_webfinger_url(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_str_t *res, ngx_http_tent_webfinger_t *wf)
{
    u_char     *p;
    ngx_int_t   rc;
    ngx_str_t   url, rest, dir;

    rc = ngx_http_tent_entity_canonical(r->pool, res, &url);

    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (rc != NGX_OK) {
        return NGX_ABORT;
    }

    if (ngx_http_tent_entity_eq(&url, &ctx->entity)) {
        if (ctx->registry > NGX_HTTP_TENT_REG_ACTIVE
            || ngx_http_tent_ap_name(r, &ctx->entity, &wf->name) != NGX_OK)
        {
            return NGX_DECLINED;
        }

        wf->entity = ctx->entity;
        return NGX_OK;
    }

    /* another path of this origin: one segment under the template's */

    if (ngx_http_tent_ap_dir(r, &dir) != NGX_OK
        || url.len <= ctx->origin.len + dir.len
        || ngx_strncasecmp(url.data, ctx->origin.data, ctx->origin.len) != 0
        || ngx_strncmp(url.data + ctx->origin.len, dir.data, dir.len) != 0)
    {
        return NGX_DECLINED;
    }

    rest.data = url.data + ctx->origin.len + dir.len;
    rest.len = url.len - ctx->origin.len - dir.len;

    for (p = rest.data; p < rest.data + rest.len; p++) {
        if (*p == '/' || *p == '%') {
            return NGX_DECLINED;
        }
    }

    if (ngx_http_tent_ap_name(r, &url, &wf->name) != NGX_OK) {
        return NGX_DECLINED;
    }

    wf->entity = url;

    return NGX_AGAIN;
}


/*
 * A provisioning server whose tent_entity has a variable in its path
 * ("http://$host/~$tenant"): the path before the variable's segment
 * ("/").  NGX_DECLINED: entities are named by their host.
 */

ngx_int_t
ngx_http_tent_ap_dir(ngx_http_request_t *r, ngx_str_t *dir)
{
    u_char                    *p, *path, *var, *last;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    if (!scf->provisioning || scf->entity == NULL) {
        return NGX_DECLINED;
    }

    last = scf->entity->value.data + scf->entity->value.len;

    p = ngx_strlcasestrn(scf->entity->value.data, last, (u_char *) "://",
                         3 - 1);
    if (p == NULL) {
        return NGX_DECLINED;
    }

    path = ngx_strlchr(p + 3, last, '/');
    if (path == NULL) {
        return NGX_DECLINED;
    }

    var = ngx_strlchr(path, last, '$');
    if (var == NULL || ngx_strlchr(var, last, '/')) {
        return NGX_DECLINED;
    }

    for (p = var; p[-1] != '/'; p--) { /* void */ }

    dir->data = path;
    dir->len = p - path;

    return NGX_OK;
}


/* a candidate's registry row: one store read, bounded by the request */

static ngx_int_t
ngx_http_tent_webfinger_lookup(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_webfinger_t *wf)
{
    ngx_str_t                  key;
    ngx_http_tent_store_op_t  *op;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent webfinger: is \"%V\" in the registry",
                   &wf->entity);

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_registry_key(r->pool, &wf->entity, &key) != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "reading the registry");
    }

    ctx->state = wf;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_webfinger_looked);
}


static ngx_int_t
ngx_http_tent_webfinger_looked(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_str_t                   value;
    ngx_uint_t                  state;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_quotas_t      q;
    ngx_http_tent_webfinger_t  *wf;

    ctx = ngx_http_get_module_ctx(r, ngx_http_tent_module);
    wf = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        return ngx_http_tent_ap_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK
        || ngx_http_tent_store_value(op, &value) != NGX_OK
        || ngx_http_tent_registry_row(&value, &state, &q) != NGX_OK)
    {
        return ngx_http_tent_ap_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                      "The entity registry is unavailable");
    }

    if (state != NGX_HTTP_TENT_REG_ACTIVE) {
        return ngx_http_tent_ap_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    return ngx_http_tent_webfinger_reply(r, ctx, wf);
}


/* "scheme://host[:port]" -> "host[:port]" */

static void
ngx_http_tent_webfinger_authority(ngx_str_t *origin, ngx_str_t *auth)
{
    u_char  *p;

    p = ngx_strlcasestrn(origin->data, origin->data + origin->len,
                         (u_char *) "://", 3 - 1);

    auth->data = p ? p + 3 : origin->data;
    auth->len = origin->data + origin->len - auth->data;
}


static ngx_int_t
ngx_http_tent_webfinger_reply(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_webfinger_t *wf)
{
    u_char     *p;
    json_t     *jrd;
    ngx_str_t   auth, subject, body;

    ngx_http_tent_webfinger_authority(&ctx->origin, &auth);

    subject.len = sizeof("acct:@") - 1 + wf->name.len + auth.len;
    subject.data = ngx_pnalloc(r->pool, subject.len);
    if (subject.data == NULL) {
        return ngx_http_tent_internal_error(r, "writing the subject");
    }

    p = ngx_cpymem(subject.data, "acct:", 5);
    p = ngx_cpymem(p, wf->name.data, wf->name.len);
    *p++ = '@';
    ngx_memcpy(p, auth.data, auth.len);

    jrd = ngx_http_tent_json_own(r->pool, json_pack(
              "{s:s%, s:[s%], s:[{s:s, s:s, s:s%}, {s:s, s:s, s:s%}]}",
              "subject", subject.data, subject.len,
              "aliases", wf->entity.data, wf->entity.len,
              "links",
              "rel", "self", "type", NGX_HTTP_TENT_AP_TYPE,
              "href", wf->entity.data, wf->entity.len,
              "rel", "http://webfinger.net/rel/profile-page",
              "type", "text/html",
              "href", wf->entity.data, wf->entity.len));

    if (jrd == NULL || ngx_http_tent_json_dump(r->pool, jrd, &body) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "writing the JRD");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent webfinger: \"%V\" is \"%V\"", &subject,
                   &wf->entity);

    return ngx_http_tent_ap_send(r, NGX_HTTP_OK, "application/jrd+json",
                                 &body);
}


/* RFC 6415: where WebFinger is, as an XRD (the origin escaped for XML) */

static ngx_int_t
ngx_http_tent_host_meta(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    u_char     *p;
    size_t      i;
    ngx_str_t   body;

    static const char  head[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<XRD xmlns=\"http://docs.oasis-open.org/ns/xri/xrd-1.0\">\n"
        "  <Link rel=\"lrdd\" type=\"application/jrd+json\" template=\"";
    static const char  tail[] =
        "/.well-known/webfinger?resource={uri}\"/>\n"
        "</XRD>\n";

    body.data = ngx_pnalloc(r->pool, sizeof(head) + sizeof(tail)
                                     + ctx->origin.len * 5);
    if (body.data == NULL) {
        return ngx_http_tent_internal_error(r, "writing the host-meta");
    }

    p = ngx_cpymem(body.data, head, sizeof(head) - 1);

    for (i = 0; i < ctx->origin.len; i++) {
        if (ctx->origin.data[i] == '&') {
            p = ngx_cpymem(p, "&amp;", 5);

        } else if (ctx->origin.data[i] == '\'') {
            p = ngx_cpymem(p, "&#39;", 5);

        } else {
            *p++ = ctx->origin.data[i];
        }
    }

    p = ngx_cpymem(p, tail, sizeof(tail) - 1);
    body.len = p - body.data;

    return ngx_http_tent_ap_send(r, NGX_HTTP_OK, "application/xrd+xml",
                                 &body);
}
