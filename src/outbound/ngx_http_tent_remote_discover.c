
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Discovery of an entity (spec 2.2): HEAD, then GET, of the entity URL;
 * the profile links of its Link headers (or of its HTML <link> tags);
 * the profile fetched and checked to name the entity.  For a request
 * (the status goes to the client) or for the delivery engine (no
 * request: a handler runs when it ends).
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_remote.h"


#define NGX_HTTP_TENT_MAX_LINKS     8


static ngx_http_tent_discover_t *ngx_http_tent_discover_create(
    ngx_pool_t *pool, ngx_log_t *log,
    ngx_http_tent_outbound_conf_t *outbound, ngx_str_t *entity,
    ngx_msec_t deadline, void *data);
static ngx_int_t ngx_http_tent_discover_step(ngx_http_tent_discover_t *d);
static ngx_int_t ngx_http_tent_discover_request_fetched(
    ngx_http_request_t *r, ngx_http_tent_fetch_t *f);
static void ngx_http_tent_discover_event_fetched(ngx_http_tent_fetch_t *f);
static ngx_int_t ngx_http_tent_discover_fetched(ngx_http_tent_discover_t *d,
    ngx_http_tent_fetch_t *f);
static ngx_int_t ngx_http_tent_discover_profile(ngx_http_tent_discover_t *d,
    ngx_http_tent_fetch_t *f);
static void ngx_http_tent_links_html(ngx_http_tent_discover_t *d,
    ngx_str_t *html);
static ngx_int_t ngx_http_tent_discover_error(ngx_http_tent_discover_t *d,
    const char *step);


#define NGX_HTTP_TENT_DISCOVER_HEAD     0
#define NGX_HTTP_TENT_DISCOVER_GET      1
#define NGX_HTTP_TENT_DISCOVER_PROFILE  2


/*
 * Discovery: the handler "done" runs with d->status 0 and the profile,
 * or d->status an HTTP status and d->error what failed.
 */

ngx_int_t
ngx_http_tent_discover(ngx_http_request_t *r, ngx_str_t *entity,
    ngx_http_tent_discover_done_pt done, void *data)
{
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_discover_t  *d;
    ngx_http_tent_srv_conf_t  *scf;

    ctx = ngx_http_tent_get_ctx(r);
    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    d = ngx_http_tent_discover_create(r->pool, r->connection->log,
                                      &scf->outbound, entity, 0, data);
    if (d == NULL) {
        return ngx_http_tent_internal_error(r, "starting discovery");
    }

    d->request = r;
    d->done = done;
    d->saved_state = ctx->state;
    ctx->state = d;

    return ngx_http_tent_discover_step(d);
}


/*
 * The same without a request, for the delivery engine: "discovered"
 * runs from the event loop, never before this returns NGX_OK.
 */

ngx_int_t
ngx_http_tent_discover_start(ngx_pool_t *pool, ngx_log_t *log,
    ngx_http_tent_outbound_conf_t *outbound, ngx_str_t *entity,
    ngx_msec_t deadline, ngx_http_tent_discovered_pt discovered, void *data)
{
    ngx_http_tent_discover_t  *d;

    d = ngx_http_tent_discover_create(pool, log, outbound, entity, deadline,
                                      data);
    if (d == NULL) {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "tent discovery: starting discovery of \"%V\" failed",
                      entity);
        return NGX_ERROR;
    }

    d->discovered = discovered;

    return ngx_http_tent_discover_step(d) == NGX_OK ? NGX_OK : NGX_ERROR;
}


static ngx_http_tent_discover_t *
ngx_http_tent_discover_create(ngx_pool_t *pool, ngx_log_t *log,
    ngx_http_tent_outbound_conf_t *outbound, ngx_str_t *entity,
    ngx_msec_t deadline, void *data)
{
    ngx_http_tent_discover_t  *d;

    d = ngx_pcalloc(pool, sizeof(ngx_http_tent_discover_t));
    if (d == NULL) {
        return NULL;
    }

    if (ngx_array_init(&d->links, pool, 2, sizeof(ngx_str_t)) != NGX_OK) {
        return NULL;
    }

    d->entity = *entity;
    d->data = data;
    d->pool = pool;
    d->log = log;
    d->outbound = outbound;
    d->deadline = deadline;

    return d;
}


/* NGX_OK or NGX_DONE when a fetch is on its way; with a request, a status */

static ngx_int_t
ngx_http_tent_discover_step(ngx_http_tent_discover_t *d)
{
    ngx_str_t              *url;
    ngx_http_tent_fetch_t  *f;

    f = ngx_http_tent_fetch_create(d->pool, d->log, d->outbound);
    if (f == NULL) {
        return ngx_http_tent_discover_error(d, "creating discovery's fetch");
    }

    switch (d->stage) {

    case NGX_HTTP_TENT_DISCOVER_HEAD:
    case NGX_HTTP_TENT_DISCOVER_GET:
        f->url = d->entity;

        if (d->stage == NGX_HTTP_TENT_DISCOVER_HEAD) {
            ngx_str_set(&f->method, "HEAD");

        } else {
            ngx_str_set(&f->method, "GET");
        }

        ngx_str_set(&f->accept, "*/*");
        f->redirects = 3;
        f->max_response = ngx_min(f->max_response, 256 * 1024);
        break;

    default:
        url = d->links.elts;

        f->url = url[d->next_link];
        ngx_str_set(&f->method, "GET");
        f->redirects = 3;

        /* kept with the relationship and listed with it: keep it small */
        f->max_response = ngx_min(f->max_response,
                                  NGX_HTTP_TENT_PROFILE_MAX);
        break;
    }

    f->data = d;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, d->log, 0,
                   "tent discovery: \"%V\": %V %V", &d->entity, &f->method,
                   &f->url);

    /* with a request, the request's deadline (ngx_http_tent_fetch_request) */

    if (d->request) {
        return ngx_http_tent_fetch_request(d->request, f,
                                      ngx_http_tent_discover_request_fetched);
    }

    f->deadline = d->deadline;
    f->has_deadline = 1;

    f->handler = ngx_http_tent_discover_event_fetched;

    if (ngx_http_tent_fetch_start(f) != NGX_OK) {
        return ngx_http_tent_discover_error(d, "starting discovery's fetch");
    }

    return NGX_OK;
}


/*
 * A failure of ours: with a request its 500, without one NGX_ERROR;
 * either way logged once, at error
 */

static ngx_int_t
ngx_http_tent_discover_error(ngx_http_tent_discover_t *d, const char *step)
{
    if (d->request) {
        return ngx_http_tent_internal_error(d->request, step);
    }

    ngx_log_error(NGX_LOG_ERR, d->log, 0, "tent discovery: %s failed", step);

    return NGX_ERROR;
}


static ngx_int_t
ngx_http_tent_discover_request_fetched(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f)
{
    return ngx_http_tent_discover_fetched(f->data, f);
}


/* without a request a step that cannot start ends the discovery */

static void
ngx_http_tent_discover_event_fetched(ngx_http_tent_fetch_t *f)
{
    ngx_http_tent_discover_t *d = f->data;

    if (ngx_http_tent_discover_fetched(d, f) == NGX_ERROR) {
        d->status = NGX_HTTP_INTERNAL_SERVER_ERROR;
        d->error = "discovery failed";
        d->discovered(d);
    }
}


static ngx_int_t
ngx_http_tent_discover_finish(ngx_http_tent_discover_t *d,
    ngx_uint_t status, const char *error, ngx_http_tent_fetch_t *f)
{
    u_char               *msg, *p;
    size_t                len;
    ngx_http_tent_ctx_t  *ctx;

    d->status = status;

    if (status && f) {
        len = d->entity.len + f->url.len + 256;

        msg = ngx_pnalloc(d->pool, len);
        if (msg == NULL) {
            return ngx_http_tent_discover_error(d,
                                                "formatting discovery's error");
        }

        if (f->result == NGX_HTTP_TENT_FETCH_OK) {
            p = ngx_snprintf(msg, len - 1, "Discovery of %V failed: %s "
                             "(%V answered %ui)", &d->entity, error,
                             &f->url, f->status);

        } else {
            p = ngx_snprintf(msg, len - 1, "Discovery of %V failed: %V: %s",
                             &d->entity, &f->url,
                             ngx_http_tent_fetch_strerror(f->result));
        }

        *p = '\0';
        d->error = (char *) msg;

    } else {
        d->error = error;
    }

    if (status) {
        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, d->log, 0,
                       "tent discovery: \"%V\" failed, %ui: %s",
                       &d->entity, status, d->error);

    } else {
        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, d->log, 0,
                       "tent discovery: \"%V\" is \"%V\", API root %V",
                       &d->entity, &d->canonical, &d->api_root);
    }

    if (d->request == NULL) {
        d->discovered(d);
        return NGX_OK;
    }

    ctx = ngx_http_tent_get_ctx(d->request);
    ctx->state = d->saved_state;

    return d->done(d->request, d);
}


/* the profile URLs of Link headers with rel="https://tent.io/rels/profile" */

static void
ngx_http_tent_links_header(ngx_http_tent_discover_t *d, ngx_str_t *value)
{
    u_char     *p, *last, *url, *url_end, *rel, *rel_end;
    ngx_str_t  *link;

    p = value->data;
    last = p + value->len;

    while (p < last && d->links.nelts < NGX_HTTP_TENT_MAX_LINKS) {

        while (p < last && (*p == ' ' || *p == ',' || *p == '\t')) {
            p++;
        }

        if (p == last || *p != '<') {
            return;
        }

        url = ++p;
        url_end = ngx_strlchr(p, last, '>');
        if (url_end == NULL) {
            return;
        }

        p = url_end + 1;
        rel = NULL;
        rel_end = NULL;

        /* parameters up to the next link: ; name="value" or name=token */

        while (p < last && *p != ',') {
            if (*p == ';' || *p == ' ' || *p == '\t') {
                p++;
                continue;
            }

            if (last - p > 4 && ngx_strncasecmp(p, (u_char *) "rel=", 4) == 0)
            {
                p += 4;

                if (p < last && *p == '"') {
                    rel = ++p;
                    rel_end = ngx_strlchr(p, last, '"');
                    if (rel_end == NULL) {
                        return;
                    }

                    p = rel_end + 1;

                } else {
                    rel = p;
                    while (p < last && *p != ';' && *p != ',') {
                        p++;
                    }

                    rel_end = p;
                }

                continue;
            }

            /* another parameter: skip it, quoted strings whole */

            while (p < last && *p != ';' && *p != ',') {
                if (*p == '"') {
                    p = ngx_strlchr(p + 1, last, '"');
                    if (p == NULL) {
                        return;
                    }
                }

                p++;
            }
        }

        if (rel && ngx_strlcasestrn(rel, rel_end,
                                    (u_char *) NGX_HTTP_TENT_PROFILE_REL,
                                    sizeof(NGX_HTTP_TENT_PROFILE_REL) - 2)
                   != NULL
            && url_end > url)
        {
            link = ngx_array_push(&d->links);
            if (link == NULL) {
                return;
            }

            link->data = url;
            link->len = url_end - url;
        }
    }
}


/* absolute links as they are; "/x" on the entity's origin */

static ngx_int_t
ngx_http_tent_links_resolve(ngx_pool_t *pool, ngx_http_tent_discover_t *d)
{
    u_char      *p, *host, *end;
    ngx_str_t   *link, url;
    ngx_uint_t   i, n;

    link = d->links.elts;
    n = 0;

    for (i = 0; i < d->links.nelts; i++) {

        if ((link[i].len > 7
             && ngx_strncasecmp(link[i].data, (u_char *) "http://", 7) == 0)
            || (link[i].len > 8
                && ngx_strncasecmp(link[i].data, (u_char *) "https://", 8)
                   == 0))
        {
            link[n++] = link[i];
            continue;
        }

        if (link[i].data[0] != '/' || (link[i].len > 1
                                       && link[i].data[1] == '/'))
        {
            continue;
        }

        host = ngx_strlchr(d->entity.data, d->entity.data + d->entity.len,
                           ':');
        if (host == NULL || d->entity.data + d->entity.len - host < 3) {
            continue;
        }

        end = ngx_strlchr(host + 3, d->entity.data + d->entity.len, '/');
        if (end == NULL) {
            end = d->entity.data + d->entity.len;
        }

        url.len = (end - d->entity.data) + link[i].len;
        url.data = ngx_pnalloc(pool, url.len);
        if (url.data == NULL) {
            return NGX_ERROR;
        }

        p = ngx_cpymem(url.data, d->entity.data, end - d->entity.data);
        ngx_memcpy(p, link[i].data, link[i].len);

        link[n++] = url;
    }

    d->links.nelts = n;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_discover_fetched(ngx_http_tent_discover_t *d,
    ngx_http_tent_fetch_t *f)
{
    ngx_str_t                 *ct;
    ngx_uint_t                 i;
    ngx_table_elt_t           *h;

    if (d->stage == NGX_HTTP_TENT_DISCOVER_PROFILE) {
        return ngx_http_tent_discover_profile(d, f);
    }

    if (f->result != NGX_HTTP_TENT_FETCH_OK) {
        return ngx_http_tent_discover_finish(d,
                                             ngx_http_tent_remote_status(f),
                                             NULL, f);
    }

    if (f->status >= 200 && f->status < 300) {
        h = f->headers.elts;

        for (i = 0; i < f->headers.nelts; i++) {
            if (h[i].key.len == 4
                && ngx_strncmp(h[i].lowcase_key, "link", 4) == 0)
            {
                ngx_http_tent_links_header(d, &h[i].value);
            }
        }

        ct = ngx_http_tent_fetch_header(f, "content-type");

        if (d->links.nelts == 0 && d->stage == NGX_HTTP_TENT_DISCOVER_GET
            && ct && ct->len >= 9
            && ngx_strncasecmp(ct->data, (u_char *) "text/html", 9) == 0)
        {
            ngx_http_tent_links_html(d, &f->body);
        }

        if (ngx_http_tent_links_resolve(d->pool, d) != NGX_OK) {
            return ngx_http_tent_discover_error(d, "making profile links "
                                                   "absolute");
        }
    }

    if (d->links.nelts) {
        d->stage = NGX_HTTP_TENT_DISCOVER_PROFILE;
        d->next_link = 0;
        return ngx_http_tent_discover_step(d);
    }

    if (d->stage == NGX_HTTP_TENT_DISCOVER_HEAD) {
        d->stage = NGX_HTTP_TENT_DISCOVER_GET;
        return ngx_http_tent_discover_step(d);
    }

    return ngx_http_tent_discover_finish(d, NGX_HTTP_NOT_FOUND,
                                         "no profile link", f);
}


static ngx_int_t
ngx_http_tent_discover_profile(ngx_http_tent_discover_t *d,
    ngx_http_tent_fetch_t *f)
{
    json_t     *profile, *core, *servers, *v;
    size_t      i;
    ngx_str_t  *ct, *url, type, base;
    const char *key;
    ngx_uint_t  status;
    const char *error;

    status = NGX_HTTP_NOT_FOUND;
    error = "no usable profile";

    if (f->result != NGX_HTTP_TENT_FETCH_OK) {
        status = ngx_http_tent_remote_status(f);
        goto next;
    }

    ct = ngx_http_tent_fetch_header(f, "content-type");

    if (f->status != 200 || ct == NULL
        || ct->len < sizeof(NGX_HTTP_TENT_MEDIA_TYPE) - 1
        || ngx_strncasecmp(ct->data, (u_char *) NGX_HTTP_TENT_MEDIA_TYPE,
                           sizeof(NGX_HTTP_TENT_MEDIA_TYPE) - 1)
           != 0)
    {
        error = "the profile is not application/vnd.tent.v0+json";
        goto next;
    }

    profile = ngx_http_tent_json_parse(&f->body, d->log);

    if (profile == NULL || ngx_http_tent_json_cleanup(d->pool, profile)
                           != NGX_OK)
    {
        json_decref(profile);
        error = "the profile is not JSON";
        goto next;
    }

    /* the core section, by base: any version of info/core */

    core = NULL;

    json_object_foreach(profile, key, v) {
        type.data = (u_char *) key;
        type.len = ngx_strlen(key);

        if (ngx_http_tent_type_base(&type, &base) == NGX_OK
            && base.len == sizeof(NGX_HTTP_TENT_CORE_BASE) - 1
            && ngx_strncmp(base.data, NGX_HTTP_TENT_CORE_BASE, base.len) == 0
            && json_is_object(v))
        {
            core = v;
            break;
        }
    }

    if (core == NULL
        || ngx_http_tent_json_str(core, "entity", &d->canonical) != NGX_OK
        || ngx_http_tent_entity_valid(&d->canonical) != NGX_OK)
    {
        error = "the profile has no core section with an entity";
        goto next;
    }

    servers = json_object_get(core, "servers");

    if (!json_is_array(servers) || json_array_size(servers) == 0) {
        error = "the profile lists no servers";
        goto next;
    }

    json_array_foreach(servers, i, v) {
        if (!json_is_string(v) || json_string_length(v) > 2048) {
            error = "the profile lists an invalid server";
            goto next;
        }
    }

    d->profile = profile;

    /* the relationship keeps, and every operation tries, the first few */

    d->servers = ngx_http_tent_servers_cap(d->pool, servers, d->outbound);
    if (d->servers == NULL) {
        return ngx_http_tent_discover_error(d, "keeping the profile's servers");
    }

    /* the API root: the profile URL without "/profile" (spec 2.2) */

    url = &f->url;
    d->api_root = *url;

    if (d->api_root.len > 8
        && ngx_strncmp(d->api_root.data + d->api_root.len - 8, "/profile", 8)
           == 0)
    {
        d->api_root.len -= 8;

    } else {
        d->api_root.data = (u_char *) json_string_value(
                                          json_array_get(servers, 0));
        d->api_root.len = json_string_length(json_array_get(servers, 0));
    }

    return ngx_http_tent_discover_finish(d, 0, NULL, NULL);

next:

    /*
     * The next profile link: as many as servers are tried, and none after
     * a failure that the next cannot mend (our budget, the deadline)
     */

    if (++d->next_link < ngx_min(d->links.nelts, d->outbound->servers)
        && !ngx_http_tent_fetch_busy(f)
        && f->result != NGX_HTTP_TENT_FETCH_DEADLINE
        && f->result != NGX_HTTP_TENT_FETCH_ERROR)
    {
        return ngx_http_tent_discover_step(d);
    }

    return ngx_http_tent_discover_finish(d, status, error, f);
}


/*
 * <link rel="https://tent.io/rels/profile" href="..."> in an HTML page:
 * a scan for link tags and their two attributes, enough for what
 * publishing tools write; no HTML parser is among our dependencies.
 */

static ngx_int_t
ngx_http_tent_html_attr(u_char *tag, u_char *end, const char *name,
    ngx_str_t *value)
{
    u_char  *p, q;
    size_t   n;

    n = ngx_strlen(name);

    for (p = tag; p + n + 1 < end; p++) {
        if ((p[-1] != ' ' && p[-1] != '\t' && p[-1] != '\n'
             && p[-1] != '\r')
            || ngx_strncasecmp(p, (u_char *) name, n) != 0
            || p[n] != '=')
        {
            continue;
        }

        p += n + 1;
        q = *p;

        if (q != '"' && q != '\'') {
            value->data = p;
            while (p < end && *p != ' ' && *p != '>' && *p != '/') {
                p++;
            }

            value->len = p - value->data;
            return NGX_OK;
        }

        value->data = ++p;

        while (p < end && *p != q) {
            p++;
        }

        if (p == end) {
            return NGX_ERROR;
        }

        value->len = p - value->data;
        return NGX_OK;
    }

    return NGX_ERROR;
}


static void
ngx_http_tent_links_html(ngx_http_tent_discover_t *d, ngx_str_t *html)
{
    u_char     *p, *last, *end;
    ngx_str_t   rel, href, *link;

    p = html->data;
    last = p + html->len;

    while (p && p < last && d->links.nelts < NGX_HTTP_TENT_MAX_LINKS) {
        p = ngx_strlcasestrn(p, last, (u_char *) "<link", 5 - 1);
        if (p == NULL) {
            return;
        }

        p += 5;

        end = ngx_strlchr(p, last, '>');
        if (end == NULL) {
            return;
        }

        if (ngx_http_tent_html_attr(p, end, "rel", &rel) == NGX_OK
            && ngx_http_tent_html_attr(p, end, "href", &href) == NGX_OK
            && rel.len == sizeof(NGX_HTTP_TENT_PROFILE_REL) - 1
            && ngx_strncmp(rel.data, NGX_HTTP_TENT_PROFILE_REL, rel.len) == 0
            && href.len)
        {
            link = ngx_array_push(&d->links);
            if (link == NULL) {
                return;
            }

            *link = href;
        }

        p = end + 1;
    }
}
