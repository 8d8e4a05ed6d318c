
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The outbound HTTP client: one request to another Tent server, run on
 * nginx's event loop.  Names go through c-ares, every address through
 * the SSRF guard before it is connected, TLS through nginx's OpenSSL
 * layer with the peer verified, and the answer through nginx's own
 * status line, header and chunked parsers.  A fetch has a deadline per
 * hop and the deadline of the operation it is part of, caps on header and
 * body sizes, and per-worker caps on fetches in flight: all of them, and
 * those made for unsigned requests.  It needs no client request and no
 * configured location, so background work (deliveries) uses it as
 * handlers do.
 *
 * This file is a fetch's life: made, started within the worker's
 * budgets, aborted, tied to a client request; each hop (its URL, the
 * request bytes, signed when the fetch has a credential, its deadline)
 * and its redirects; the outcome, handed back from the event loop.
 * ngx_http_tent_fetch_connect.c takes a hop from the addresses resolved
 * to the request sent, ngx_http_tent_fetch_parse.c reads the answer.
 */


#define NGX_HTTP_TENT_FETCH_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_fetch_private.h"
#include "ngx_http_tent_httpsig.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_mac.h"
#include "ngx_http_tent_resolver.h"


static ngx_int_t ngx_http_tent_fetch_shares(ngx_http_tent_fetch_t *f);
static void ngx_http_tent_fetch_hop(ngx_http_tent_fetch_t *f);
static ngx_int_t ngx_http_tent_fetch_httpsig(ngx_http_tent_fetch_t *f,
    ngx_str_t *out);
static void ngx_http_tent_fetch_timeout(ngx_event_t *ev);
static void ngx_http_tent_fetch_close(ngx_http_tent_fetch_t *f);
static void ngx_http_tent_fetch_done_event(ngx_event_t *ev);
static void ngx_http_tent_fetch_request_cleanup(void *data);
static void ngx_http_tent_fetch_request_done(ngx_http_tent_fetch_t *f);


static char  *ngx_http_tent_fetch_errors[] = {
    "ok",
    "the address is not allowed (tent_outbound_allow)",
    "the name could not be resolved",
    "could not connect",
    "timed out",
    "the response is too large",
    "the response is not valid HTTP",
    "the TLS handshake or certificate check failed",
    "too many outbound requests in flight",
    "internal error",
    "not a URL to fetch (scheme, host, or a number not a dotted quad)",
    "the deadline of the whole operation passed (tent_outbound_deadline)",
    "too many outbound requests in flight for this entity "
        "(tent_outbound_entity_requests)",
    "too many outbound requests in flight to this host "
        "(tent_outbound_host_requests)",
    "the host's domain is blocked by the operator (tent-admin block)"
};


const char *
ngx_http_tent_fetch_strerror(ngx_uint_t result)
{
    if (result >= sizeof(ngx_http_tent_fetch_errors) / sizeof(char *)) {
        return "unknown error";
    }

    return ngx_http_tent_fetch_errors[result];
}


ngx_http_tent_fetch_t *
ngx_http_tent_fetch_create(ngx_pool_t *pool, ngx_log_t *log,
    ngx_http_tent_outbound_conf_t *conf)
{
    ngx_http_tent_fetch_t       *f;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_pcalloc(pool, sizeof(ngx_http_tent_fetch_full_t));
    if (ff == NULL) {
        return NULL;
    }

    f = &ff->f;

    ff->pool = pool;
    ff->log = log;
    ff->conf = conf;
    f->max_response = conf->max_response;
    ngx_str_set(&f->method, "GET");
    ngx_str_set(&f->accept, NGX_HTTP_TENT_MEDIA_TYPE);

    ff->timer.handler = ngx_http_tent_fetch_timeout;
    ff->timer.data = f;
    ff->timer.log = log;

    /*
     * Not cancelable: a worker shutting down (reload) waits for fetches
     * in flight, as for proxied requests; each is bounded by its
     * deadline.  With a cancelable timer the worker left at once, with
     * the client's and the remote's sockets open ("open socket left in
     * connection", "aborting") and the pending request dropped.
     */
    ff->timer.cancelable = 0;

    ff->done.handler = ngx_http_tent_fetch_done_event;
    ff->done.data = f;
    ff->done.log = log;

    return f;
}


/*
 * NGX_OK: the fetch runs and f->handler will be called from the event
 * loop (never from inside this call); NGX_ERROR: it could not start.
 */

ngx_int_t
ngx_http_tent_fetch_start(ngx_http_tent_fetch_t *f)
{
    ngx_http_tent_main_conf_t   *mcf;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    mcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                              ngx_http_tent_module);

    ff->mcf = mcf;
    ff->hr = ngx_pcalloc(ff->pool, sizeof(ngx_http_request_t));
    if (ff->hr == NULL) {
        return NGX_ERROR;
    }

    if (mcf->resolver == NULL) {
        mcf->resolver = ngx_http_tent_resolver_create(
                                           (ngx_cycle_t *) ngx_cycle);
        if (mcf->resolver == NULL) {
            return NGX_ERROR;
        }
    }

    ff->started = 1;

    /* a fetch alone is an operation of its own: its redirects included */

    if (!f->has_deadline) {
        f->deadline = ngx_current_msec + ff->conf->deadline;
        f->has_deadline = 1;
    }

    /*
     * Unsigned requests have a share of their own: however many of them
     * hang, the rest is left for deliveries and signed requests
     */

    if (mcf->fetches >= mcf->max_fetches
        || (ff->anonymous && mcf->anonymous >= mcf->max_anonymous))
    {
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_BUSY);
        return NGX_OK;
    }

    /* a client request's: within its tenant's and its host's shares */

    if (ff->request) {
        switch (ngx_http_tent_fetch_shares(f)) {

        case NGX_OK:
            break;

        case NGX_ERROR:
            return NGX_ERROR;

        default:
            return NGX_OK;
        }
    }

    mcf->fetches++;
    mcf->anonymous += ff->anonymous;
    ff->counted = 1;

    ngx_http_tent_fetch_hop(f);

    return NGX_OK;
}


/*
 * A fetch of a client request takes a place in the share of the entity
 * the request is for and in the share of the host its URL names (the
 * first hop's: a redirect keeps it).  NGX_OK; NGX_BUSY: finished with
 * the share that is full; NGX_ERROR.
 */

static ngx_int_t
ngx_http_tent_fetch_shares(ngx_http_tent_fetch_t *f)
{
    u_char                      *p;
    ngx_int_t                    rc;
    ngx_str_t                    host, name;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_main_conf_t   *mcf;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);
    mcf = ff->mcf;

    ngx_str_null(&host);

    ctx = ngx_http_tent_get_ctx(ff->request);

    /* unsigned requests' fetches are strangers', in a share of their own */

    if (ctx && ctx->entity.len && !ff->anonymous) {
        name = ctx->entity;

        /*
         * what its followers and followings make it send (a move's
         * challenge, a notification's read) is a share of its own: anyone
         * can be a follower, and must not use up the owner's
         */

        if (ctx->principal.kind == NGX_HTTP_TENT_FOLLOWER
            || ctx->principal.kind == NGX_HTTP_TENT_FOLLOWING)
        {
            name.len = ctx->entity.len + sizeof(" (others)") - 1;
            name.data = ngx_pnalloc(ff->pool, name.len);
            if (name.data == NULL) {
                return NGX_ERROR;
            }

            p = ngx_cpymem(name.data, ctx->entity.data, ctx->entity.len);
            ngx_memcpy(p, " (others)", sizeof(" (others)") - 1);
        }

        rc = ngx_http_tent_share_take(NGX_HTTP_TENT_SHARE_ENTITY, &name,
                                      mcf->max_entity_fetches,
                                      &ff->entity_share);
        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }

        if (rc == NGX_BUSY) {
            ngx_log_error(NGX_LOG_WARN, ff->log, 0,
                          "tent: %ui outbound requests in flight for "
                          "\"%V\", \"tent_outbound_entity_requests\" "
                          "reached", mcf->max_entity_fetches, &name);
            ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_ENTITY_BUSY);
            return NGX_BUSY;
        }
    }

    rc = ngx_http_tent_share_host(ff->pool, &f->url, &host);

    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    if (rc == NGX_OK) {
        rc = ngx_http_tent_share_take(NGX_HTTP_TENT_SHARE_HOST, &host,
                                      mcf->max_host_fetches,
                                      &ff->host_share);
        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }

        if (rc == NGX_BUSY) {
            ngx_log_error(NGX_LOG_WARN, ff->log, 0,
                          "tent: %ui outbound requests in flight to %V, "
                          "\"tent_outbound_host_requests\" reached",
                          mcf->max_host_fetches, &host);
            ngx_http_tent_share_give(ff->entity_share);
            ff->entity_share = NULL;
            ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_HOST_BUSY);
            return NGX_BUSY;
        }
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ff->log, 0,
                   "tent fetch: shares of \"%V\" and %V taken for %V",
                   ctx ? &ctx->entity : &f->url, &host, &f->url);

    return NGX_OK;
}


/*
 * Whether the next of a profile's servers may be tried after this
 * failure: not after an answer, a guard refusal, a full budget, or the
 * operation's deadline
 */

ngx_uint_t
ngx_http_tent_fetch_next_server(ngx_http_tent_fetch_t *f)
{
    switch (f->result) {

    case NGX_HTTP_TENT_FETCH_OK:
    case NGX_HTTP_TENT_FETCH_REFUSED:
    case NGX_HTTP_TENT_FETCH_BUSY:
    case NGX_HTTP_TENT_FETCH_ENTITY_BUSY:
    case NGX_HTTP_TENT_FETCH_HOST_BUSY:
    case NGX_HTTP_TENT_FETCH_DEADLINE:
    case NGX_HTTP_TENT_FETCH_ERROR:
        return 0;

    default:
        return 1;
    }
}


/* stop a running fetch: its handler will not be called */

void
ngx_http_tent_fetch_abort(ngx_http_tent_fetch_t *f)
{
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    if (!ff->started || ff->finished) {
        if (ff->done.posted) {
            ngx_delete_posted_event(&ff->done);
        }

        return;
    }

    f->handler = NULL;
    ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_ERROR);

    if (ff->done.posted) {
        ngx_delete_posted_event(&ff->done);
    }
}


/* a response header's value by lowercase name, or NULL */

ngx_str_t *
ngx_http_tent_fetch_header(ngx_http_tent_fetch_t *f, const char *name)
{
    size_t            len;
    ngx_uint_t        i;
    ngx_table_elt_t  *h;

    if (f->headers.elts == NULL) {
        return NULL;
    }

    len = ngx_strlen(name);
    h = f->headers.elts;

    for (i = 0; i < f->headers.nelts; i++) {
        if (h[i].key.len == len
            && ngx_strncmp(h[i].lowcase_key, name, len) == 0)
        {
            return &h[i].value;
        }
    }

    return NULL;
}


/*
 * A host whose last label is a number must be a plain dotted quad:
 * "2130706433", "0x7f.1", "0177.0.0.1" mean different addresses to
 * different programs (c-ares reads the last as 177.0.0.1, browsers as
 * 127.0.0.1), so they are refused rather than guessed.
 */

static ngx_int_t
ngx_http_tent_fetch_numeric(ngx_str_t *name)
{
    u_char      *p, *last, *label;
    ngx_uint_t   parts, digits, value;

    last = name->data + name->len;

    if (last > name->data && last[-1] == '.') {
        last--;
    }

    label = last;
    while (label > name->data && label[-1] != '.') {
        label--;
    }

    if (label == last || !(*label >= '0' && *label <= '9')) {
        return NGX_OK;
    }

    parts = 0;
    digits = 0;
    value = 0;

    for (p = name->data; p <= last; p++) {
        if (p == last || *p == '.') {
            if (digits == 0 || value > 255) {
                return NGX_ERROR;
            }

            parts++;
            digits = 0;
            value = 0;
            continue;
        }

        if (*p < '0' || *p > '9' || (digits == 1 && value == 0)) {
            return NGX_ERROR;
        }

        value = value * 10 + (*p - '0');
        digits++;
    }

    return parts == 4 ? NGX_OK : NGX_ERROR;
}


/* one hop: parse the URL, then resolve its host */

static void
ngx_http_tent_fetch_hop(ngx_http_tent_fetch_t *f)
{
    u_char                      *host;
    ngx_str_t                    rest;
    ngx_url_t                    u;
    ngx_msec_int_t               left;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    left = (ngx_msec_int_t) (f->deadline - ngx_current_msec);

    if (left <= 0) {
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_DEADLINE);
        return;
    }

    rest = f->url;

    /*
     * Whatever gave the URL (a profile's servers, a follower's path, a
     * relationship's id), nothing in it may end our request line
     */

    if (ngx_http_tent_visible_valid(&rest, 8192) != NGX_OK) {
        ngx_log_error(NGX_LOG_INFO, ff->log, 0,
                      "tent: an outbound URL with a control character, a "
                      "space or a quote refused");
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_BAD_URL);
        return;
    }

    if (rest.len > 7 && ngx_strncasecmp(rest.data, (u_char *) "http://", 7)
                        == 0)
    {
        ff->ssl = 0;
        rest.data += 7;
        rest.len -= 7;

    } else if (rest.len > 8
               && ngx_strncasecmp(rest.data, (u_char *) "https://", 8) == 0)
    {
        ff->ssl = 1;
        rest.data += 8;
        rest.len -= 8;

    } else {
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_BAD_URL);
        return;
    }

#if !(NGX_HTTP_SSL)
    if (ff->ssl) {
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_TLS);
        return;
    }
#endif

    /*
     * A fragment is the client's own (RFC 3986, 3.5): never sent, and no
     * part of the host, as ngx_http_tent_fetch_share.c reads the origin
     * ("http://a#@b/" is a, both ways)
     */

    host = ngx_strlchr(rest.data, rest.data + rest.len, '#');

    if (host) {
        rest.len = host - rest.data;
    }

    ngx_memzero(&u, sizeof(ngx_url_t));

    u.url = rest;
    u.default_port = ff->ssl ? 443 : 80;
    u.uri_part = 1;
    u.no_resolve = 1;

    if (ngx_parse_url(ff->pool, &u) != NGX_OK || u.host.len == 0
        || ngx_strlchr(u.host.data, u.host.data + u.host.len, '@'))
    {
        ngx_log_error(NGX_LOG_INFO, ff->log, 0,
                      "tent: invalid outbound URL \"%V\"", &f->url);
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_BAD_URL);
        return;
    }

    ff->host = u.host;
    ff->port = u.port ? u.port : u.default_port;
    ff->explicit_port = u.port != 0 && u.port != u.default_port;
    ff->uri = u.uri;

    if (ff->uri.len == 0) {
        ngx_str_set(&ff->uri, "/");

    } else if (ff->uri.data[0] == '?') {
        host = ngx_pnalloc(ff->pool, ff->uri.len + 1);
        if (host == NULL) {
            ngx_http_tent_fetch_error(f, "copying the URI");
            return;
        }

        host[0] = '/';
        ngx_memcpy(host + 1, ff->uri.data, ff->uri.len);
        ff->uri.data = host;
        ff->uri.len++;
    }

    /* nothing is sent to a domain the operator blocked, on any hop */

    if (ngx_http_tent_domain_blocked(&ff->host)) {
        ngx_log_error(NGX_LOG_INFO, ff->log, 0,
                      "tent: \"%V\" is blocked by the operator: not "
                      "fetched", &ff->host);
        ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_BLOCKED);
        return;
    }

    /* the name for c-ares: no brackets around an IPv6 literal */

    host = ngx_pnalloc(ff->pool, ff->host.len + 1);
    if (host == NULL) {
        ngx_http_tent_fetch_error(f, "copying the host name");
        return;
    }

    if (ff->host.len > 2 && ff->host.data[0] == '[') {
        ngx_memcpy(host, ff->host.data + 1, ff->host.len - 2);
        host[ff->host.len - 2] = '\0';
        ff->name.data = host;
        ff->name.len = ff->host.len - 2;

    } else {
        ngx_memcpy(host, ff->host.data, ff->host.len);
        host[ff->host.len] = '\0';
        ff->name = ff->host;

        if (ngx_http_tent_fetch_numeric(&ff->name) != NGX_OK) {
            ngx_log_error(NGX_LOG_INFO, ff->log, 0,
                          "tent: \"%V\" is not a dotted-quad address",
                          &ff->name);
            ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_BAD_URL);
            return;
        }
    }

    if (ngx_http_tent_fetch_build(f) != NGX_OK) {
        ngx_http_tent_fetch_error(f, "building the request");
        return;
    }

    /* the hop's own timeout, or what is left of the operation's */

    ff->cut = (ngx_msec_t) left < ff->conf->timeout;
    ngx_add_timer(&ff->timer, ff->cut ? (ngx_msec_t) left : ff->conf->timeout);

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, ff->log, 0,
                   "tent fetch: %V %V: resolving \"%V\", %M ms left",
                   &f->method, &f->url, &ff->name, (ngx_msec_t) left);

    ff->resolving = ngx_http_tent_resolve(ff->mcf->resolver, host,
                                          ngx_http_tent_fetch_resolved, f);
    if (ff->resolving == NULL) {
        ngx_http_tent_fetch_error(f, "starting the resolution");
    }
}


/* follow a redirect as a new hop: the guard checks it again */

ngx_int_t
ngx_http_tent_fetch_redirect(ngx_http_tent_fetch_t *f)
{
    u_char                      *p;
    size_t                       len;
    ngx_str_t                   *location, url;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    location = ngx_http_tent_fetch_header(f, "location");
    if (location == NULL || location->len == 0) {
        return NGX_DECLINED;
    }

    if (location->data[0] == '/' && (location->len == 1
                                     || location->data[1] != '/'))
    {
        /* relative to this origin */

        len = (ff->ssl ? 8 : 7) + ff->host.len + sizeof(":65535") - 1
              + location->len;

        url.data = ngx_pnalloc(ff->pool, len);
        if (url.data == NULL) {
            return NGX_ERROR;
        }

        p = ngx_sprintf(url.data, "%s%V", ff->ssl ? "https://" : "http://",
                        &ff->host);

        if (ff->explicit_port) {
            p = ngx_sprintf(p, ":%ui", ff->port);
        }

        p = ngx_cpymem(p, location->data, location->len);
        url.len = p - url.data;

    } else if ((location->len > 7
                && ngx_strncasecmp(location->data, (u_char *) "http://", 7)
                   == 0)
               || (location->len > 8
                   && ngx_strncasecmp(location->data,
                                      (u_char *) "https://", 8)
                      == 0))
    {
        url = *location;

    } else {
        return NGX_DECLINED;
    }

    f->redirects--;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ff->log, 0,
                   "tent fetch: redirect %ui to %V, %ui more followed",
                   f->status, &url, f->redirects);

    if (f->status == 303) {
        ngx_str_set(&f->method, "GET");
        f->request_body.len = 0;
    }

    ngx_http_tent_fetch_close(f);

    f->url = url;
    ff->header_done = 0;
    ff->interim = 0;
    ff->scanned = 0;
    ff->sent = 0;
    ff->reused = 0;
    ff->retried = 0;
    ff->http11 = 0;
    ff->conn_close = 0;
    f->status = 0;
    f->body.data = NULL;
    f->body.len = 0;
    f->headers.nelts = 0;
    ngx_memzero(&ff->chunked_state, sizeof(ngx_http_chunked_t));
    ngx_memzero(&ff->in, sizeof(ngx_buf_t));

    ngx_http_tent_fetch_hop(f);

    return NGX_OK;
}


/*
 * The request bytes; MAC-signed when the fetch has a credential.  With
 * keep-alive on, no "Connection: close": HTTP/1.1 keeps the connection.
 */

ngx_int_t
ngx_http_tent_fetch_build(ngx_http_tent_fetch_t *f)
{
    size_t                       len;
    u_char                      *p, port[NGX_INT_T_LEN];
    ngx_str_t                    auth, httpsig;
    ngx_http_tent_mac_request_t  req;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    ngx_str_null(&httpsig);

    ff->cname = ngx_pnalloc(ff->pool, ff->name.len + 1);
    if (ff->cname == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(ff->cname, ff->name.data, ff->name.len);
    ff->cname[ff->name.len] = '\0';

    len = f->method.len + 1 + ff->uri.len + sizeof(" HTTP/1.1\r\n") - 1
          + sizeof("Host: :65535\r\n") - 1 + ff->host.len
          + sizeof("User-Agent: ngx_http_tent_module\r\n") - 1
          + sizeof("Connection: close\r\n") - 1
          + sizeof("Accept: \r\n") - 1 + f->accept.len
          + sizeof("\r\n") - 1;

    if (f->request_body.len || f->content_type.len) {
        len += sizeof("Content-Type: \r\n") - 1 + f->content_type.len
               + sizeof("Content-Length: \r\n") - 1 + NGX_SIZE_T_LEN
               + f->request_body.len;
    }

    if (f->mac_id.len) {
        ngx_memzero(&req, sizeof(ngx_http_tent_mac_request_t));

        if (ngx_http_tent_random_id(ff->pool, NULL, 9, &req.nonce) != NGX_OK) {
            return NGX_ERROR;
        }

        req.ts.data = ngx_pnalloc(ff->pool, NGX_TIME_T_LEN);
        if (req.ts.data == NULL) {
            return NGX_ERROR;
        }

        req.ts.len = ngx_sprintf(req.ts.data, "%T", ngx_time())
                     - req.ts.data;

        /* the port is signed even when the Host header leaves it out */

        req.port.data = port;
        req.port.len = ngx_sprintf(port, "%ui", ff->port) - port;

        req.method = f->method;
        req.uri = ff->uri;
        req.host = ff->name;

        if (ngx_http_tent_mac_sign(ff->pool, &f->mac_algorithm, &f->mac_key,
                                   &f->mac_id, &req, &auth)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        len += sizeof("Authorization: \r\n") - 1 + auth.len;
    }

    if (f->sign_key) {
        if (ngx_http_tent_fetch_httpsig(f, &httpsig) != NGX_OK) {
            return NGX_ERROR;
        }

        len += httpsig.len;
    }

    p = ngx_pnalloc(ff->pool, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ff->out.start = p;
    ff->out.pos = p;

    p = ngx_sprintf(p, "%V %V HTTP/1.1\r\nHost: %V", &f->method, &ff->uri,
                    &ff->host);

    if (ff->explicit_port) {
        p = ngx_sprintf(p, ":%ui", ff->port);
    }

    p = ngx_cpymem(p, "\r\nUser-Agent: ngx_http_tent_module\r\n",
                   sizeof("\r\nUser-Agent: ngx_http_tent_module\r\n") - 1);

    if (ff->mcf->keepalive == 0 || ff->mcf->keepalive_total == 0) {
        p = ngx_cpymem(p, "Connection: close\r\n",
                       sizeof("Connection: close\r\n") - 1);
    }

    p = ngx_sprintf(p, "Accept: %V\r\n", &f->accept);

    if (f->mac_id.len) {
        p = ngx_sprintf(p, "Authorization: %V\r\n", &auth);
    }

    if (httpsig.len) {
        p = ngx_cpymem(p, httpsig.data, httpsig.len);
    }

    if (f->request_body.len || f->content_type.len) {
        p = ngx_sprintf(p, "Content-Type: %V\r\nContent-Length: %uz\r\n",
                        &f->content_type, f->request_body.len);
    }

    p = ngx_cpymem(p, "\r\n", 2);

    if (f->request_body.len) {
        p = ngx_cpymem(p, f->request_body.data, f->request_body.len);
    }

    ff->out.last = p;
    ff->out.end = p;

    return NGX_OK;
}


/*
 * ActivityPub's signature (draft-cavage-12, rsa-sha256): Date, Digest of
 * the body and Signature over "(request-target) host date digest", as
 * header lines; a GET or HEAD has no body, so no Digest: "(request-target)
 * host date", as Mastodon signs its fetches.  Made for each hop's
 * request bytes: the Host and the target are this hop's, the Date now.
 */

static ngx_int_t
ngx_http_tent_fetch_httpsig(ngx_http_tent_fetch_t *f, ngx_str_t *out)
{
    u_char                           *p;
    ngx_int_t                         rc;
    ngx_str_t                         digest, signature, date;
    ngx_uint_t                        bodyless;
    ngx_list_t                        headers;
    ngx_table_elt_t                  *h;
    ngx_http_tent_fetch_full_t       *ff;
    ngx_http_tent_httpsig_request_t   req;

    ff = ngx_http_tent_fetch_full(f);

    date.len = ngx_cached_http_time.len;
    date.data = ngx_pnalloc(ff->pool, date.len);
    if (date.data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(date.data, ngx_cached_http_time.data, date.len);

    bodyless = (f->method.len == 3
                && ngx_strncmp(f->method.data, "GET", 3) == 0)
               || (f->method.len == 4
                   && ngx_strncmp(f->method.data, "HEAD", 4) == 0);

    ngx_str_null(&digest);

    if ((!bodyless
         && ngx_http_tent_httpsig_digest(ff->pool, 0, &f->request_body,
                                         &digest)
            != NGX_HTTP_TENT_HTTPSIG_OK)
        || ngx_list_init(&headers, ff->pool, 2, sizeof(ngx_table_elt_t))
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    h = ngx_list_push(&headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    ngx_memzero(h, sizeof(ngx_table_elt_t));
    h->hash = 1;
    ngx_str_set(&h->key, "Date");
    h->value = date;

    if (!bodyless) {
        h = ngx_list_push(&headers);
        if (h == NULL) {
            return NGX_ERROR;
        }

        ngx_memzero(h, sizeof(ngx_table_elt_t));
        h->hash = 1;
        ngx_str_set(&h->key, "Digest");
        h->value = digest;
    }

    /* the host as the Host header sends it */

    ngx_memzero(&req, sizeof(ngx_http_tent_httpsig_request_t));

    req.authority.data = ngx_pnalloc(ff->pool, ff->host.len + NGX_INT_T_LEN
                                               + 1);
    if (req.authority.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(req.authority.data, ff->host.data, ff->host.len);

    if (ff->explicit_port) {
        p = ngx_sprintf(p, ":%ui", ff->port);
    }

    req.authority.len = p - req.authority.data;
    req.method = f->method;
    req.target = ff->uri;
    req.headers = &headers;

    rc = ngx_http_tent_httpsig_sign_cavage(ff->pool, &req, &f->sign_key_id,
                                           f->sign_key, &signature);
    if (rc != NGX_HTTP_TENT_HTTPSIG_OK) {
        ngx_log_error(NGX_LOG_ERR, ff->log, 0,
                      "tent: signing the request to \"%V\": %s", &f->url,
                      ngx_http_tent_httpsig_strerror(rc));
        return NGX_ERROR;
    }

    out->len = sizeof("Date: \r\nDigest: \r\nSignature: \r\n") - 1
               + date.len + digest.len + signature.len;
    out->data = ngx_pnalloc(ff->pool, out->len);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(out->data, "Date: %V\r\n", &date);

    if (!bodyless) {
        p = ngx_sprintf(p, "Digest: %V\r\n", &digest);
    }

    p = ngx_sprintf(p, "Signature: %V\r\n", &signature);
    out->len = p - out->data;

    return NGX_OK;
}


static void
ngx_http_tent_fetch_timeout(ngx_event_t *ev)
{
    ngx_http_tent_fetch_t *f = ev->data;

    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    ngx_log_error(NGX_LOG_INFO, ff->log, NGX_ETIMEDOUT,
                  "tent: outbound request to \"%V\" timed out%s", &f->url,
                  ff->cut ? " (the operation's deadline)" : "");

    ngx_http_tent_fetch_finish(f, ff->cut ? NGX_HTTP_TENT_FETCH_DEADLINE
                                         : NGX_HTTP_TENT_FETCH_TIMEOUT);
}


static void
ngx_http_tent_fetch_close(ngx_http_tent_fetch_t *f)
{
    ngx_connection_t            *c;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    if (ff->timer.timer_set) {
        ngx_del_timer(&ff->timer);
    }

    if (ff->resolving) {
        ngx_http_tent_resolve_cancel(ff->resolving);
        ff->resolving = NULL;
    }

    c = ff->peer.connection;

    if (c == NULL) {
        return;
    }

    ff->peer.connection = NULL;

#if (NGX_HTTP_SSL)
    if (c->ssl) {
        ngx_http_tent_fetch_save_session(f, c);
    }
#endif

    /* after a whole answer that allows it, kept for the next fetch */

    if (ff->keepalive) {
        ff->keepalive = 0;

        if (ngx_http_tent_fetch_idle_put(f, c) == NGX_OK) {
            return;
        }
    }

    ngx_http_tent_fetch_close_connection(c);
}


/* the outcome is known: release everything, call back from the loop */

void
ngx_http_tent_fetch_finish(ngx_http_tent_fetch_t *f, ngx_uint_t result)
{
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    if (ff->finished) {
        return;
    }

    ff->finished = 1;
    f->result = result;

    ngx_http_tent_fetch_close(f);

    if (ff->counted) {
        ff->counted = 0;
        ff->mcf->fetches--;
        ff->mcf->anonymous -= ff->anonymous;

        ngx_http_tent_share_give(ff->entity_share);
        ngx_http_tent_share_give(ff->host_share);
        ff->entity_share = NULL;
        ff->host_share = NULL;
    }

    if (result != NGX_HTTP_TENT_FETCH_OK) {
        f->status = 0;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ff->log, 0,
                   "tent fetch: done %V: %s, status %ui", &f->url,
                   f->handler ? ngx_http_tent_fetch_strerror(result)
                              : "aborted",
                   f->status);

    if (f->handler) {
        ngx_post_event(&ff->done, &ngx_posted_events);
    }
}


/*
 * A finished request's answer (its receive buffer, a chunked body) given
 * back now, by a caller done with f->body and the headers whose pool
 * lives on (the delivery engine's batch holds its jobs' requests).
 */

void
ngx_http_tent_fetch_release(ngx_http_tent_fetch_t *f)
{
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    if (!ff->finished) {
        return;
    }

    if (f->body.data
        && !(ff->in.start && f->body.data >= ff->in.start
             && f->body.data < ff->in.end))
    {
        (void) ngx_pfree(ff->pool, f->body.data);
    }

    if (ff->in.start) {
        (void) ngx_pfree(ff->pool, ff->in.start);
    }

    ngx_memzero(&ff->in, sizeof(ngx_buf_t));
    ngx_str_null(&f->body);
}


/* a failure of ours, not the remote's: logged once, at error */

void
ngx_http_tent_fetch_error(ngx_http_tent_fetch_t *f, const char *step)
{
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    ngx_log_error(NGX_LOG_ERR, ff->log, 0, "tent fetch: %s failed", step);

    ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_ERROR);
}


static void
ngx_http_tent_fetch_done_event(ngx_event_t *ev)
{
    ngx_http_tent_fetch_t *f = ev->data;

    if (f->handler) {
        f->handler(f);
    }
}


/*
 * A fetch for a client request: the request waits (its count holds it),
 * and "done" returns what the request is finalized with.  If the request
 * goes first (terminated, its pool freed), the fetch is aborted.
 */

ngx_int_t
ngx_http_tent_fetch_request(ngx_http_request_t *r, ngx_http_tent_fetch_t *f,
    ngx_http_tent_fetch_done_pt done)
{
    ngx_pool_cleanup_t          *cln;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return ngx_http_tent_internal_error(r, "adding the fetch's cleanup");
    }

    /*
     * All the fetches of one client request share one deadline, from the
     * first, and the budget of its kind
     */

    ctx = ngx_http_tent_get_ctx(r);

    if (ctx) {
        if (!ctx->has_deadline) {
            ctx->deadline = ngx_current_msec + ff->conf->deadline;
            ctx->has_deadline = 1;
        }

        f->deadline = ctx->deadline;
        f->has_deadline = 1;
        ff->anonymous = ctx->anonymous;
    }

    ff->request = r;
    ff->request_done = done;
    f->handler = ngx_http_tent_fetch_request_done;

    if (ngx_http_tent_fetch_start(f) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "starting a fetch");
    }

    cln->handler = ngx_http_tent_fetch_request_cleanup;
    cln->data = f;

    r->main->count++;

    return NGX_DONE;
}


static void
ngx_http_tent_fetch_request_cleanup(void *data)
{
    ngx_http_tent_fetch_t *f = data;

    ngx_http_tent_fetch_abort(f);
}


static void
ngx_http_tent_fetch_request_done(ngx_http_tent_fetch_t *f)
{
    ngx_int_t                    rc;
    ngx_connection_t            *c;
    ngx_http_request_t          *r;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    r = ff->request;
    c = r->connection;

    rc = ff->request_done(r, f);

    ngx_http_finalize_request(r, rc);
    ngx_http_run_posted_requests(c);
}
