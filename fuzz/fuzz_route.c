
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * API routing: the module's own content handler,
 * ngx_http_tent_api_handler(), on a request line.  It takes the path as
 * sent (ngx_http_tent_raw_api_path()), matches it against the route
 * table with ":param" segments (ngx_http_tent_match()), and dispatches:
 * a handler, 404, or 405 with an Allow header (ngx_http_tent_allow()).
 * The handlers (all of the table's, replaced at start), authentication
 * and the error reply are test doubles here that check what routing
 * produced: the parameters put back into the route's pattern give the
 * path again, and Allow lists exactly the methods of the routes that
 * matched.
 *
 * Input: byte 0 the method, byte 1 the API root and the entity, the
 * rest the request URI as sent (path and query).
 */


#include "../src/module/ngx_http_tent_router.c"
#include "../src/base/ngx_http_tent_ctx.c"
#include "../src/relations/ngx_http_tent_blocks.h"

#include "fuzz.h"


static ngx_str_t  ngx_fuzz_roots[] = {
    ngx_string("/tent"),
    ngx_string(""),
    ngx_string("/api/v0")
};

static ngx_str_t  ngx_fuzz_entities[] = {
    ngx_string("https://alice.example"),
    ngx_string("https://example.org/~alice"),
    ngx_string("http://bob.example:8080/")
};

static ngx_uint_t  ngx_fuzz_methods[] = {
    NGX_HTTP_GET, NGX_HTTP_HEAD, NGX_HTTP_POST, NGX_HTTP_PUT,
    NGX_HTTP_DELETE, NGX_HTTP_OPTIONS
};

/* as nginx sets r->method_name: the router's debug line prints it */
static ngx_str_t  ngx_fuzz_method_names[] = {
    ngx_string("GET"), ngx_string("HEAD"), ngx_string("POST"),
    ngx_string("PUT"), ngx_string("DELETE"), ngx_string("OPTIONS")
};


static ngx_str_t          ngx_fuzz_entity;
static ngx_uint_t         ngx_fuzz_status;
static ngx_uint_t         ngx_fuzz_routed;
static ngx_table_elt_t    ngx_fuzz_header;
static ngx_uint_t         ngx_fuzz_headers;


/* the pattern with the parameters put in: the routed path again */

static ngx_int_t
ngx_fuzz_route_fits(ngx_http_tent_route_t *route, ngx_http_tent_ctx_t *ctx)
{
    u_char      *p, *pe, *q, *qe;
    ngx_uint_t   n;

    p = route->path.data;
    pe = p + route->path.len;
    q = ctx->api_path.data;
    qe = q + ctx->api_path.len;
    n = 0;

    while (p < pe) {
        if (*p == ':') {
            if (n == ctx->nparams
                || ctx->params[n].data != q
                || ctx->params[n].len == 0
                || ctx->params[n].len > (size_t) (qe - q)
                || ngx_strlchr(q, q + ctx->params[n].len, '/'))
            {
                return 0;
            }

            q += ctx->params[n].len;
            n++;

            while (p < pe && *p != '/') {
                p++;
            }

            continue;
        }

        if (q == qe || *p != *q) {
            return 0;
        }

        p++;
        q++;
    }

    return q == qe && n == ctx->nparams;
}


/*
 * The one test double of every route's handler: the table's handlers are
 * replaced with it before the first request, whatever routes there are.
 */

static ngx_int_t
ngx_fuzz_handler(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_http_tent_route_t  *route;

    ngx_fuzz_assert(ctx->handler == (void *) ngx_fuzz_handler);
    ngx_fuzz_assert(ctx->nparams <= NGX_HTTP_TENT_MAX_PARAMS);

    for (route = ngx_http_tent_routes; route->handler; route++) {
        if ((route->methods & r->method) && ngx_fuzz_route_fits(route, ctx))
        {
            ngx_fuzz_routed++;
            return NGX_OK;
        }
    }

    /* no route of this method fits the path and the parameters */
    ngx_fuzz_assert(0);

    return NGX_ERROR;
}


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    ngx_http_tent_route_t  *route;

    for (route = ngx_http_tent_routes; route->handler; route++) {
        route->handler = ngx_fuzz_handler;
    }

    return 0;
}


/* no Authorization header: anonymous, straight on */

ngx_int_t
ngx_http_tent_authenticate(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_route_pt next)
{
    return next(r, ctx);
}


/* no operator's blocked domains on the fuzzed server: the route goes on */

ngx_int_t
ngx_http_tent_domains_request(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_route_pt next)
{
    return next(r, ctx);
}


/* the owner's blocks: none on the fuzzed server (an empty list) */

ngx_int_t
ngx_http_tent_blocks_request(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_route_pt next)
{
    ctx->blocks = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_blocks_t));
    if (ctx->blocks == NULL) {
        return NGX_ERROR;
    }

    return next(r, ctx);
}


/* no tent_provisioning on the fuzzed server: every entity goes on */

ngx_int_t
ngx_http_tent_provision_check(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return NGX_DECLINED;
}


/* no tent_activitypub on the fuzzed server: nothing is ActivityPub's */

ngx_uint_t
ngx_http_tent_ap_claim(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return 0;
}


ngx_int_t
ngx_http_tent_send_error(ngx_http_request_t *r, ngx_uint_t status,
    const char *message)
{
    ngx_fuzz_status = status;
    return NGX_OK;
}


ngx_int_t
ngx_http_complex_value(ngx_http_request_t *r, ngx_http_complex_value_t *val,
    ngx_str_t *value)
{
    *value = ngx_fuzz_entity;
    return NGX_OK;
}


ngx_int_t
ngx_http_discard_request_body(ngx_http_request_t *r)
{
    return NGX_OK;
}


u_char *
ngx_http_map_uri_to_path(ngx_http_request_t *r, ngx_str_t *name,
    size_t *root_length, size_t reserved)
{
    return NULL;
}


void *
ngx_list_push(ngx_list_t *list)
{
    ngx_fuzz_headers++;
    return &ngx_fuzz_header;
}


/* "GET, HEAD, ..." in the order ngx_http_tent_allow() lists them */

static void
ngx_fuzz_check_allow(ngx_uint_t allowed, ngx_str_t *value)
{
    u_char  buf[64], *p;

    p = buf;

    if (allowed & NGX_HTTP_GET) {
        p = ngx_cpymem(p, "GET, ", 5);
    }

    if (allowed & NGX_HTTP_HEAD) {
        p = ngx_cpymem(p, "HEAD, ", 6);
    }

    if (allowed & NGX_HTTP_POST) {
        p = ngx_cpymem(p, "POST, ", 6);
    }

    if (allowed & NGX_HTTP_PUT) {
        p = ngx_cpymem(p, "PUT, ", 5);
    }

    if (allowed & NGX_HTTP_DELETE) {
        p = ngx_cpymem(p, "DELETE, ", 8);
    }

    ngx_fuzz_assert(p - buf >= 2);
    ngx_fuzz_assert(value->len == (size_t) (p - buf - 2));
    ngx_fuzz_assert(ngx_memcmp(value->data, buf, value->len) == 0);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char                    *uri, *q, *dst, *src;
    void                      *ctxs[1], *srv_conf[1];
    ngx_int_t                  rc;
    ngx_pool_t                *pool;
    ngx_http_request_t        *r;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_complex_value_t   cv;
    ngx_http_tent_srv_conf_t   scf;

    if (size < 2) {
        return 0;
    }

    pool = ngx_create_pool(1024, &ngx_fuzz_log);
    ngx_fuzz_assert(pool != NULL);

    r = ngx_fuzz_request(pool);

    ngx_http_tent_module.ctx_index = 0;

    ngx_memzero(&scf, sizeof(ngx_http_tent_srv_conf_t));
    ngx_memzero(&cv, sizeof(ngx_http_complex_value_t));
    scf.entity = &cv;
    scf.api_root = ngx_fuzz_roots[data[1] % 3];
    ngx_fuzz_entity = ngx_fuzz_entities[(data[1] / 3) % 3];

    srv_conf[0] = &scf;
    ctxs[0] = NULL;
    r->srv_conf = srv_conf;
    r->ctx = ctxs;

    r->method = ngx_fuzz_methods[data[0] % 6];
    r->method_name = ngx_fuzz_method_names[data[0] % 6];

    /* the URI as sent; r->uri is its path, decoded, as nginx makes it */

    uri = ngx_fuzz_dup(data + 2, size - 2);
    r->unparsed_uri.data = uri;
    r->unparsed_uri.len = size - 2;

    q = ngx_strlchr(uri, uri + size - 2, '?');

    r->uri.data = ngx_pnalloc(pool, size - 2 + 1);
    ngx_fuzz_assert(r->uri.data != NULL);
    dst = r->uri.data;
    src = uri;
    ngx_unescape_uri(&dst, &src, q ? (size_t) (q - uri) : size - 2,
                     NGX_UNESCAPE_URI);
    r->uri.len = dst - r->uri.data;

    ngx_fuzz_status = 0;
    ngx_fuzz_routed = 0;
    ngx_fuzz_headers = 0;
    ngx_memzero(&ngx_fuzz_header, sizeof(ngx_table_elt_t));

    rc = ngx_http_tent_precontent_handler(r);

    ctx = ngx_http_get_module_ctx(r, ngx_http_tent_module);
    ngx_fuzz_assert(ctx != NULL && !ctx->invalid);

    if (r->content_handler == ngx_http_tent_api_handler) {
        ngx_fuzz_assert(rc == NGX_DECLINED && ctx->api);

        rc = ngx_http_tent_api_handler(r);
        ngx_fuzz_assert(rc == NGX_OK);

        if (ctx->handler) {
            ngx_fuzz_assert(ngx_fuzz_routed == 1 && ngx_fuzz_status == 0);

        } else if (ctx->allowed) {
            ngx_fuzz_assert(ngx_fuzz_status == NGX_HTTP_NOT_ALLOWED);
            ngx_fuzz_assert(ngx_fuzz_headers == 1);
            ngx_fuzz_assert(ngx_fuzz_header.key.len == 5);
            ngx_fuzz_check_allow(ctx->allowed, &ngx_fuzz_header.value);

        } else {
            ngx_fuzz_assert(ngx_fuzz_status == NGX_HTTP_NOT_FOUND);
        }

    } else {
        ngx_fuzz_assert(!ctx->api);
    }

    ngx_destroy_pool(pool);
    free(uri);

    return 0;
}
