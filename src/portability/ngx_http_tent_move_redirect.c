
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Reads of a moved entity's posts (docs/move.md): GET|HEAD /posts and
 * /posts/:id redirected to the new entity's first server for
 * tent_moved_redirect_time after POST /move (ngx_http_tent_move.c).
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_cache.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_move.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_store.h"


/* a read of A's posts while moved: where to, and what comes after */
typedef struct {
    ngx_http_tent_route_pt          next;
    ngx_http_tent_cached_t          cached;
    ngx_uint_t                      cache;
} ngx_http_tent_move_read_t;


static ngx_int_t ngx_http_tent_move_check(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_route_pt next);
static ngx_int_t ngx_http_tent_move_checked(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_move_redirect(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *server);


/* --- reading a moved entity's posts: redirected to the new one -------- */

/*
 * GET|HEAD /posts and /posts/:id of an entity that moved, within
 * tent_moved_redirect_time of the move: 301 to the same path at the new
 * entity's first server (its import kept the ids).  Our own apps (the
 * owner exporting, cleaning up) are answered as before; so is everyone
 * once the time has passed.
 */

ngx_int_t
ngx_http_tent_move_posts_list(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_move_check(r, ctx, ngx_http_tent_posts_list);
}


ngx_int_t
ngx_http_tent_move_post_get(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return ngx_http_tent_post_get(r, ctx);
    }

    return ngx_http_tent_move_check(r, ctx, ngx_http_tent_post_get);
}


static ngx_int_t
ngx_http_tent_move_check(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_route_pt next)
{
    ngx_int_t                   rc;
    ngx_str_t                   what, base;
    ngx_http_tent_srv_conf_t   *scf;
    ngx_http_tent_move_read_t  *rd;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    if (scf->moved_redirect_time == 0
        || ctx->principal.kind == NGX_HTTP_TENT_APP
        || ctx->principal.kind == NGX_HTTP_TENT_AUTHORIZATION)
    {
        return next(r, ctx);
    }

    rd = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_move_read_t));
    if (rd == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the move check");
    }

    rd->next = next;

    /* anonymous readers: "moved?" from the workers' cache, as the feed */

    ngx_str_set(&what, "moved");

    rc = ngx_http_tent_cache_get(r, ctx, &what, &rd->cached);

    /* the line after the cache's own: its entry is this check's */
    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent move: moved? checked in the cache: %i", rc);

    switch (rc) {

    case NGX_OK:
        if (rd->cached.body.len == 0) {
            return next(r, ctx);
        }

        return ngx_http_tent_move_redirect(r, ctx, &rd->cached.body);

    case NGX_DECLINED:
        rd->cache = 1;
        break;

    default:
        break;
    }

    ctx->state = rd;

    ngx_str_set(&base, NGX_HTTP_TENT_CORE_BASE);

    return ngx_http_tent_store_get_request(r, NGX_HTTP_TENT_TABLE_PROFILE,
                                           &base,
                                           ngx_http_tent_move_checked);
}


static ngx_int_t
ngx_http_tent_move_checked(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                     *record, *moved, *server;
    ngx_int_t                   rc;
    ngx_str_t                   value, to;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_srv_conf_t   *scf;
    ngx_http_tent_move_read_t  *rd;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    rd = ctx->state;
    ctx->state = NULL;

    ngx_str_null(&to);

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_store_value(op, &value);

        record = ngx_http_tent_json_load(r, &value);
        moved = json_object_get(record, "moved");
        server = json_array_get(json_object_get(json_object_get(record,
                                                                "content"),
                                                "servers"), 0);

        scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

        if (json_is_object(moved)
            && json_integer_value(json_object_get(moved, "at"))
               + scf->moved_redirect_time > ngx_time()
            && json_is_string(server))
        {
            to.data = (u_char *) json_string_value(server);
            to.len = json_string_length(server);

            /* it goes into a header: visible, an http(s) URL */

            if (ngx_http_tent_visible_valid(&to, 2048) != NGX_OK
                || (ngx_strncmp(to.data, "http://", 7) != 0
                    && ngx_strncmp(to.data, "https://", 8) != 0))
            {
                ngx_str_null(&to);
            }

            while (to.len && to.data[to.len - 1] == '/') {
                to.len--;
            }
        }
    }

    if (rd->cache) {
        /* not moved: an empty body, never a NULL one (memcpy) */
        rd->cached.body.data = to.len ? to.data : (u_char *) "";
        rd->cached.body.len = to.len;
        ngx_http_tent_cache_put(r, &rd->cached);
    }

    if (to.len == 0) {
        return rd->next(r, ctx);
    }

    return ngx_http_tent_move_redirect(r, ctx, &to);
}


static ngx_int_t
ngx_http_tent_move_redirect(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_str_t *server)
{
    u_char           *p;
    size_t            len;
    ngx_table_elt_t  *h;

    /* "/posts" or "/posts/<id>": the route's params, checked as ids */

    if (ctx->nparams
        && ngx_http_tent_token_valid(&ctx->params[0], 256) != NGX_OK)
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    len = server->len + sizeof("/posts/") - 1
          + (ctx->nparams ? ctx->params[0].len : 0)
          + (r->args.len ? 1 + r->args.len : 0);

    p = ngx_pnalloc(r->pool, len);
    h = ngx_list_push(&r->headers_out.headers);

    if (p == NULL || h == NULL) {
        return ngx_http_tent_internal_error(r, "adding Location");
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Location");
    h->value.data = p;

    p = ngx_cpymem(p, server->data, server->len);
    p = ngx_cpymem(p, "/posts", sizeof("/posts") - 1);

    if (ctx->nparams) {
        *p++ = '/';
        p = ngx_cpymem(p, ctx->params[0].data, ctx->params[0].len);
    }

    if (r->args.len) {
        *p++ = '?';
        p = ngx_cpymem(p, r->args.data, r->args.len);
    }

    h->value.len = p - h->value.data;

    ngx_http_clear_location(r);
    r->headers_out.location = h;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent move: moved: redirected to %V", &h->value);

    ctx->own_reply = 1;

    r->headers_out.status = NGX_HTTP_MOVED_PERMANENTLY;
    r->headers_out.content_length_n = 0;
    r->header_only = 1;

    return ngx_http_send_header(r);
}
