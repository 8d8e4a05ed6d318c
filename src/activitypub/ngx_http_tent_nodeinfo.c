
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * NodeInfo 2.1: "/.well-known/nodeinfo" links to the document, at
 * "/.well-known/nodeinfo/2.1".  Its users are the host's entities: the
 * entity the request evaluated to, as the registry said of it; where
 * entities are paths of one host, the registry's active rows under its
 * path, counted by one bounded scan and kept by the worker until the
 * operator's next write (the registry's generation) moves.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_ap.h"


/* debian/changelog's version: the module's, not the protocol's */
#define NGX_HTTP_TENT_AP_SOFTWARE_VERSION  "0.2.0"

#define NGX_HTTP_TENT_NODEINFO_SCHEMA                                         \
    "http://nodeinfo.diaspora.software/ns/schema/2.1"

/* rows a count reads at most; hosts a worker keeps a count of */
#define NGX_HTTP_TENT_NODEINFO_SCAN    1000
#define NGX_HTTP_TENT_NODEINFO_HOSTS   8
#define NGX_HTTP_TENT_NODEINFO_PREFIX  256


typedef struct {
    size_t                          len;
    u_char                          prefix[NGX_HTTP_TENT_NODEINFO_PREFIX];
    ngx_atomic_uint_t               generation;
    ngx_uint_t                      count;
} ngx_http_tent_nodeinfo_count_t;


typedef struct {
    ngx_str_t                       prefix;
    ngx_atomic_uint_t               generation;
} ngx_http_tent_nodeinfo_t;


static ngx_int_t ngx_http_tent_nodeinfo_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_nodeinfo_reply(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_uint_t document, json_int_t users);


/* this worker's counts */
static ngx_http_tent_nodeinfo_count_t
    ngx_http_tent_nodeinfo_counts[NGX_HTTP_TENT_NODEINFO_HOSTS];
static ngx_uint_t  ngx_http_tent_nodeinfo_next;


ngx_int_t
ngx_http_tent_nodeinfo(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_uint_t document)
{
    u_char                          *p;
    ngx_str_t                        dir, start, end;
    ngx_uint_t                       i;
    ngx_atomic_uint_t                gen;
    ngx_http_tent_nodeinfo_t        *ni;
    ngx_http_tent_store_op_t        *op;
    ngx_http_tent_nodeinfo_count_t  *c;

    if (!document || ngx_http_tent_ap_dir(r, &dir) != NGX_OK) {
        return ngx_http_tent_nodeinfo_reply(r, ctx, document,
                   ctx->registry > NGX_HTTP_TENT_REG_ACTIVE ? 0 : 1);
    }

    /* entities on paths: "<origin><dir>" and any name after it */

    ni = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_nodeinfo_t));
    if (ni == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the nodeinfo");
    }

    ni->prefix.len = ctx->origin.len + dir.len;

    if (ni->prefix.len > NGX_HTTP_TENT_NODEINFO_PREFIX) {
        return ngx_http_tent_nodeinfo_reply(r, ctx, document, -1);
    }

    ni->prefix.data = ngx_pnalloc(r->pool, ni->prefix.len);
    if (ni->prefix.data == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the nodeinfo");
    }

    p = ngx_cpymem(ni->prefix.data, ctx->origin.data, ctx->origin.len);
    ngx_memcpy(p, dir.data, dir.len);

    gen = ngx_http_tent_registry_generation((ngx_cycle_t *) ngx_cycle);

    for (i = 0; i < NGX_HTTP_TENT_NODEINFO_HOSTS; i++) {
        c = &ngx_http_tent_nodeinfo_counts[i];

        if (c->len == ni->prefix.len && c->generation == gen
            && ngx_strncmp(c->prefix, ni->prefix.data, c->len) == 0)
        {
            ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "tent nodeinfo: %ui users under \"%V\" (kept)",
                           c->count, &ni->prefix);

            return ngx_http_tent_nodeinfo_reply(r, ctx, document,
                                                (json_int_t) c->count);
        }
    }

    ni->generation = gen;
    ctx->state = ni;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_registry_prefix_range(r->pool, &ni->prefix, &start,
                                               &end)
           != NGX_OK
        || ngx_http_tent_store_scan(op, &start, &end,
                                    NGX_HTTP_TENT_NODEINFO_SCAN, 0)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the users' scan");
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent nodeinfo: counting the users under \"%V\"",
                   &ni->prefix);

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_nodeinfo_scanned);
}


static ngx_int_t
ngx_http_tent_nodeinfo_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                        rc;
    ngx_str_t                        key, value, entity, rest;
    ngx_uint_t                       count, state;
    ngx_http_tent_ctx_t             *ctx;
    ngx_http_tent_quotas_t           q;
    ngx_http_tent_nodeinfo_t        *ni;
    ngx_http_tent_nodeinfo_count_t  *c;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    ni = ctx->state;
    count = 0;

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {

        /* an entity one segment under the prefix, active */

        if (ngx_http_tent_registry_parse(&key, &entity) != NGX_OK
            || entity.len <= ni->prefix.len)
        {
            continue;
        }

        rest.data = entity.data + ni->prefix.len;
        rest.len = entity.len - ni->prefix.len;

        if (ngx_strlchr(rest.data, rest.data + rest.len, '/') == NULL
            && ngx_http_tent_registry_row(&value, &state, &q) == NGX_OK
            && state == NGX_HTTP_TENT_REG_ACTIVE)
        {
            count++;
        }
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent nodeinfo: %ui users under \"%V\"", count,
                   &ni->prefix);

    /*
     * kept if no operator's write came meanwhile; a host with none (a
     * made-up name: its scan found nothing, cheaply) pushes no count out
     */

    if (count
        && ni->generation
           == ngx_http_tent_registry_generation((ngx_cycle_t *) ngx_cycle))
    {
        c = &ngx_http_tent_nodeinfo_counts[ngx_http_tent_nodeinfo_next];
        ngx_http_tent_nodeinfo_next = (ngx_http_tent_nodeinfo_next + 1)
                                      % NGX_HTTP_TENT_NODEINFO_HOSTS;

        ngx_memcpy(c->prefix, ni->prefix.data, ni->prefix.len);
        c->len = ni->prefix.len;
        c->generation = ni->generation;
        c->count = count;
    }

    return ngx_http_tent_nodeinfo_reply(r, ctx, 1, (json_int_t) count);
}


/* users: -1 when not counted */

static ngx_int_t
ngx_http_tent_nodeinfo_reply(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_uint_t document, json_int_t users)
{
    u_char     *p;
    json_t     *doc, *u;
    ngx_str_t   href, body;

    static const char  path[] = "/.well-known/nodeinfo/2.1";

    if (!document) {
        href.len = ctx->origin.len + sizeof(path) - 1;
        href.data = ngx_pnalloc(r->pool, href.len);
        if (href.data == NULL) {
            return ngx_http_tent_internal_error(r, "writing the nodeinfo");
        }

        p = ngx_cpymem(href.data, ctx->origin.data, ctx->origin.len);
        ngx_memcpy(p, path, sizeof(path) - 1);

        doc = json_pack("{s:[{s:s, s:s%}]}", "links",
                        "rel", NGX_HTTP_TENT_NODEINFO_SCHEMA,
                        "href", href.data, href.len);

    } else {
        u = users < 0 ? json_object()
                      : json_pack("{s:I, s:I, s:I}", "total", users,
                                  "activeHalfyear", users,
                                  "activeMonth", users);

        doc = json_pack("{s:s, s:{s:s, s:s}, s:[s],"
                        " s:{s:[], s:[]}, s:b, s:{s:o}, s:{}}",
                        "version", "2.1",
                        "software",
                        "name", "ngx-http-tent-module",
                        "version", NGX_HTTP_TENT_AP_SOFTWARE_VERSION,
                        "protocols", "activitypub",
                        "services", "inbound", "outbound",
                        "openRegistrations", 0,
                        "usage", "users", u,
                        "metadata");
    }

    doc = ngx_http_tent_json_own(r->pool, doc);

    if (doc == NULL || ngx_http_tent_json_dump(r->pool, doc, &body) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "writing the nodeinfo");
    }

    return ngx_http_tent_ap_send(r, NGX_HTTP_OK,
                                 document
                                 ? "application/json; profile=\""
                                   NGX_HTTP_TENT_NODEINFO_SCHEMA "#\""
                                 : "application/json",
                                 &body);
}
