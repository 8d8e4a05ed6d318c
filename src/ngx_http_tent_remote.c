
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Talking to other Tent servers: discovery of an entity (spec 2.2: HEAD,
 * then GET, the profile Link, the profile), for a request or for the
 * delivery engine, the mapping of outbound failures to the statuses
 * the spec lists, and the bounds on what one operation may cost: the
 * servers of a profile kept and tried, and the share of unsigned
 * requests.
 */


#include "ngx_http_tent_module.h"
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


/* a fetch made with this server's outbound settings */

ngx_http_tent_fetch_t *
ngx_http_tent_remote_fetch(ngx_http_request_t *r, ngx_str_t *url,
    const char *method)
{
    ngx_http_tent_fetch_t     *f;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    f = ngx_http_tent_fetch_create(r->pool, r->connection->log,
                                   &scf->outbound);
    if (f == NULL) {
        return NULL;
    }

    f->url = *url;
    f->method.data = (u_char *) method;
    f->method.len = ngx_strlen(method);

    return f;
}


/*
 * "{server}/{path}[?{query}]" for a server URL out of a profile, one
 * slash between whatever the server ends with; the query joins a query
 * the path may already have.  NGX_DECLINED: the server is no string.
 */

ngx_int_t
ngx_http_tent_server_url(ngx_pool_t *pool, json_t *server, ngx_str_t *path,
    ngx_str_t *query, ngx_str_t *url)
{
    u_char     *p;
    ngx_str_t   base;

    if (!json_is_string(server)) {
        return NGX_DECLINED;
    }

    base.data = (u_char *) json_string_value(server);
    base.len = json_string_length(server);

    while (base.len && base.data[base.len - 1] == '/') {
        base.len--;
    }

    url->data = ngx_pnalloc(pool, base.len + path->len + 2
                                  + (query ? query->len : 0));
    if (url->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(url->data, "%V/%V", &base, path);

    if (query && query->len) {
        *p++ = ngx_strlchr(path->data, path->data + path->len, '?')
               ? '&' : '?';
        p = ngx_cpymem(p, query->data, query->len);
    }

    url->len = p - url->data;

    return NGX_OK;
}


/* sign a fetch with a relationship's credential record */

ngx_int_t
ngx_http_tent_remote_sign(ngx_http_tent_fetch_t *f, json_t *cred)
{
    if (ngx_http_tent_json_str(cred, "mac_key_id", &f->mac_id) != NGX_OK
        || ngx_http_tent_json_str(cred, "mac_key", &f->mac_key) != NGX_OK
        || ngx_http_tent_json_str(cred, "mac_algorithm", &f->mac_algorithm)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * The HTTP status for a failed step towards another server: 403 when our
 * own guard refused it, 504 for a timeout, 503 when it could not be
 * reached, 502 when it answered something that is not usable HTTP.
 */

ngx_uint_t
ngx_http_tent_remote_status(ngx_http_tent_fetch_t *f)
{
    switch (f->result) {

    case NGX_HTTP_TENT_FETCH_REFUSED:
        return NGX_HTTP_FORBIDDEN;

    case NGX_HTTP_TENT_FETCH_TIMEOUT:
    case NGX_HTTP_TENT_FETCH_DEADLINE:
        return NGX_HTTP_GATEWAY_TIME_OUT;

    case NGX_HTTP_TENT_FETCH_TOO_BIG:
    case NGX_HTTP_TENT_FETCH_INVALID:
        return NGX_HTTP_BAD_GATEWAY;

    case NGX_HTTP_TENT_FETCH_BAD_URL:
        return NGX_HTTP_BAD_REQUEST;

    case NGX_HTTP_TENT_FETCH_ERROR:
        return NGX_HTTP_INTERNAL_SERVER_ERROR;

    default:
        return NGX_HTTP_SERVICE_UNAVAILABLE;
    }
}


/* "<step> <url>: <why>" as a JSON error with the mapped status */

ngx_int_t
ngx_http_tent_remote_error(ngx_http_request_t *r, ngx_http_tent_fetch_t *f,
    const char *step)
{
    u_char  *msg, *p;
    size_t   len;

    len = ngx_strlen(step) + f->url.len + 128;

    msg = ngx_pnalloc(r->pool, len);
    if (msg == NULL) {
        return ngx_http_tent_internal_error(r, "formatting an outbound error");
    }

    if (f->result == NGX_HTTP_TENT_FETCH_OK) {
        p = ngx_snprintf(msg, len - 1, "%s %V: it answered %ui", step,
                         &f->url, f->status);

    } else {
        p = ngx_snprintf(msg, len - 1, "%s %V: %s", step, &f->url,
                         ngx_http_tent_fetch_strerror(f->result));
    }

    *p = '\0';

    return ngx_http_tent_send_error(r,
                                    f->result == NGX_HTTP_TENT_FETCH_OK
                                    ? NGX_HTTP_NOT_FOUND
                                    : ngx_http_tent_remote_status(f),
                                    (char *) msg);
}


/*
 * A client request that makes unsigned outbound requests (a follow, a
 * mention to check) uses the anonymous share of the worker's slots.
 * NGX_DECLINED: that share is in use; the caller answers 503 at once,
 * before anything is sent anywhere.
 */

ngx_int_t
ngx_http_tent_remote_anonymous(ngx_http_request_t *r)
{
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_main_conf_t  *mcf;

    ctx = ngx_http_tent_get_ctx(r);
    mcf = ngx_http_get_module_main_conf(r, ngx_http_tent_module);

    ctx->anonymous = 1;

    if (mcf->anonymous >= mcf->max_anonymous) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent: %ui outbound requests for unsigned requests "
                      "in flight, \"tent_outbound_anonymous_requests\" "
                      "reached", mcf->anonymous);
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/* how many of a profile's servers one operation tries */

ngx_uint_t
ngx_http_tent_servers_max(json_t *servers,
    ngx_http_tent_outbound_conf_t *outbound)
{
    return ngx_min(json_array_size(servers), outbound->servers);
}


/*
 * The servers kept with a relationship: the first ones only, whatever a
 * profile lists (2,000 fit in 64k), as no more are ever tried.  The same
 * array when it is short enough; NULL on failure.
 */

json_t *
ngx_http_tent_servers_cap(ngx_pool_t *pool, json_t *servers,
    ngx_http_tent_outbound_conf_t *outbound)
{
    size_t   i;
    json_t  *capped;

    if (json_array_size(servers) <= outbound->servers) {
        return servers;
    }

    capped = json_array();

    if (capped == NULL || ngx_http_tent_json_cleanup(pool, capped) != NGX_OK)
    {
        json_decref(capped);
        return NULL;
    }

    for (i = 0; i < outbound->servers; i++) {
        if (json_array_append(capped, json_array_get(servers, i)) != 0) {
            return NULL;
        }
    }

    return capped;
}


/* an entity URL as the protocol accepts it: http(s), a host, no junk */

ngx_int_t
ngx_http_tent_entity_valid(ngx_str_t *url)
{
    u_char  *p, *host;

    if (url->len > 2048) {
        return NGX_ERROR;
    }

    if (url->len > 7 && ngx_strncmp(url->data, "http://", 7) == 0) {
        host = url->data + 7;

    } else if (url->len > 8 && ngx_strncmp(url->data, "https://", 8) == 0) {
        host = url->data + 8;

    } else {
        return NGX_ERROR;
    }

    if (host == url->data + url->len || *host == '/') {
        return NGX_ERROR;
    }

    for (p = url->data; p < url->data + url->len; p++) {
        if (*p <= ' ' || *p >= 0x7f || *p == '"' || *p == '<' || *p == '>'
            || *p == '\\' || *p == '`' || *p == '{' || *p == '}'
            || *p == '|' || *p == '^' || *p == '#')
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


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
        && f->result != NGX_HTTP_TENT_FETCH_BUSY
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
