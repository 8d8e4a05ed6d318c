
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Quotas of provisioned entities (docs/admin.md#quotas): how many posts
 * and apps an entity may create, from its registry row or the server's
 * tent_quota_posts / tent_quota_apps.  Each create of an entity of a
 * provisioning server reads its count ("<entity> 0x00 'Q' posts" or
 * "apps", a decimal number) before it reads the body: at the quota it
 * answers 403 {"error": "quota exceeded: posts"} and writes nothing;
 * below it the create's own batch writes the count plus one, so a
 * create and its count are never apart.  Deleting a post or an app does
 * not lower the count: it counts creates.  Two creates at the same time
 * may read the same count: the quota is then passed by at most the
 * number of creates that raced (the count is not a compare-and-set: the
 * create's one comparison is on its own key).
 */


#include "ngx_http_tent_module.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_store.h"


static ngx_str_t  ngx_http_tent_quota_names[] = {
    ngx_string("posts"),
    ngx_string("apps")
};


static ngx_int_t ngx_http_tent_quota_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


static int64_t
ngx_http_tent_quota_limit(ngx_http_request_t *r, ngx_http_tent_quotas_t *q,
    ngx_uint_t what)
{
    int64_t                    own;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    own = what == NGX_HTTP_TENT_QUOTA_POSTS ? q->posts : q->apps;

    if (own >= 0) {
        return own;
    }

    own = what == NGX_HTTP_TENT_QUOTA_POSTS ? (int64_t) scf->quota_posts
                                            : (int64_t) scf->quota_apps;

    return own ? own : -1;
}


ngx_int_t
ngx_http_tent_quota_check(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_uint_t what, ngx_http_tent_route_pt next)
{
    ngx_str_t                  key;
    ngx_http_tent_quotas_t    *q;
    ngx_http_tent_store_op_t  *op;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);
    q = ctx->quotas;

    /* counted on provisioning servers only */

    if (!scf->provisioning || q == NULL) {
        return next(r, ctx);
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_QUOTA,
                             &ngx_http_tent_quota_names[what], &key)
           != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "reading the quota's count");
    }

    q->next = (void *) next;
    q->what = what;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_quota_loaded);
}


static ngx_int_t
ngx_http_tent_quota_loaded(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    int64_t                  limit;
    ngx_int_t                status, n;
    ngx_str_t                value;
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_quotas_t  *q;
    u_char                   msg[64];

    ctx = ngx_http_tent_get_ctx(r);
    q = ctx->quotas;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    n = 0;

    if (op->status == NGX_HTTP_TENT_STORE_OK
        && ngx_http_tent_store_value(op, &value) == NGX_OK)
    {
        n = ngx_atoi(value.data, value.len);
        if (n == NGX_ERROR) {
            n = 0;
        }
    }

    limit = ngx_http_tent_quota_limit(r, q, q->what);

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent quota: \"%V\" has %i %V, quota %L", &ctx->entity,
                   n, &ngx_http_tent_quota_names[q->what], limit);

    if (limit >= 0 && n >= limit) {
        (void) ngx_http_discard_request_body(r);
        ngx_sprintf(msg, "quota exceeded: %V%Z",
                    &ngx_http_tent_quota_names[q->what]);
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        (const char *) msg);
    }

    q->count = n;
    q->counted = 1;

    return ((ngx_http_tent_route_pt) q->next)(r, ctx);
}


/* in the create's own batch: the count plus one */

ngx_int_t
ngx_http_tent_quota_count(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_uint_t what, void *op)
{
    u_char                  *p;
    ngx_str_t                key, value;
    ngx_http_tent_quotas_t  *q;

    q = ctx->quotas;

    if (q == NULL || !q->counted || q->what != what) {
        return NGX_OK;
    }

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    value.data = p;
    value.len = ngx_sprintf(p, "%L", q->count + 1) - p;

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_QUOTA,
                          &ngx_http_tent_quota_names[what], &key)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_tent_store_write_put(op, &key, &value);
}
