
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Talking to other Tent servers: fetches with this server's outbound
 * settings, signed with a relationship's credential, the mapping of
 * outbound failures to the statuses the spec lists, and the bounds on
 * what one operation may cost: the servers of a profile kept and tried,
 * and the share of unsigned requests.  Discovery of an entity is in
 * remote_discover.c.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_remote.h"


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
    case NGX_HTTP_TENT_FETCH_BLOCKED:
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
 * mention to check) uses the anonymous share of the worker's slots, and
 * a place among the unsigned requests naming the entity's host (until
 * the request ends), so a flood naming one silent host leaves room for
 * strangers elsewhere.  NGX_OK: go on; NGX_DECLINED: a share is in use
 * and *rc is the 503 sent at once, before anything is sent anywhere.
 */

ngx_int_t
ngx_http_tent_remote_anonymous(ngx_http_request_t *r, ngx_str_t *entity,
    ngx_int_t *rc)
{
    void                       *held;
    ngx_int_t                   n;
    ngx_str_t                   host;
    ngx_pool_cleanup_t         *cln;
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
        *rc = ngx_http_tent_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                       NGX_HTTP_TENT_ANONYMOUS_BUSY);
        return NGX_DECLINED;
    }

    n = ngx_http_tent_share_host(r->pool, entity, &host);

    if (n == NGX_ERROR) {
        *rc = ngx_http_tent_internal_error(r, "naming the entity's host");
        return NGX_DECLINED;
    }

    if (n == NGX_DECLINED) {
        return NGX_OK;      /* not a URL to fetch: discovery says so */
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        *rc = ngx_http_tent_internal_error(r, "adding the share's cleanup");
        return NGX_DECLINED;
    }

    n = ngx_http_tent_share_take(NGX_HTTP_TENT_SHARE_ANONYMOUS, &host,
                                 mcf->max_anonymous_host, &held);

    if (n == NGX_ERROR) {
        *rc = ngx_http_tent_internal_error(r, "taking the host's share");
        return NGX_DECLINED;
    }

    if (n == NGX_BUSY) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent: %ui unsigned requests naming %V in flight, "
                      "\"tent_outbound_anonymous_host_requests\" reached",
                      mcf->max_anonymous_host, &host);
        *rc = ngx_http_tent_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                       NGX_HTTP_TENT_ANONYMOUS_HOST_BUSY);
        return NGX_DECLINED;
    }

    cln->handler = ngx_http_tent_share_give;
    cln->data = held;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent remote: an unsigned request naming %V", &host);

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
