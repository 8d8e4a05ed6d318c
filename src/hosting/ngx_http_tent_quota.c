
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Quotas of provisioned entities (docs/admin.md#quotas): how many posts
 * and apps an entity may create and how many attachment bytes it may
 * upload, from its registry row or the server's tent_quota_* directives.
 * Every way in counts: a post's create, its new versions and PUT
 * /profile's profile post count as posts; an app registered by the
 * owner's apps, or unsigned and then authorized (the authorize page, an
 * owner's app: ngx_http_tent_authorization_quota()), as an app.
 * A create of an entity of a provisioning server reads its counts
 * ("<entity> 0x00 'Q' posts", "apps", "attachment_bytes": decimal
 * numbers; a post's create or new version reads "posts" and
 * "attachment_bytes" in one MGET) before it reads the body: at a quota
 * it answers 403 {"error": "quota exceeded: posts"} and writes nothing.
 * Below it, the create takes its one first, by a compare-and-set of the
 * count as read (read again and retried when another create moved it),
 * so that creates at the same time cannot both pass the last one, and
 * no count is lost where no quota is set (one set later finds it
 * whole).  The bytes, known only once the body is read, are taken the
 * same way then (ngx_http_tent_quota_bytes()), an import's n at once
 * (ngx_http_tent_quota_take_n()).  What a request took and did not
 * write goes back when it ends (ngx_http_tent_quota_return()).
 * Deleting does not lower a count: it counts creates and uploads.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_store.h"


/* a count taken and not written, given back in the background */
typedef struct {
    ngx_str_t                       key;
    int64_t                         bytes;       /* or posts, apps */
    ngx_uint_t                      what;
    ngx_uint_t                      tries;
    ngx_pool_t                     *pool;
    ngx_log_t                       log;
} ngx_http_tent_quota_back_t;


static ngx_str_t  ngx_http_tent_quota_names[] = {
    ngx_string("posts"),
    ngx_string("apps"),
    ngx_string("attachment_bytes")
};


static ngx_int_t ngx_http_tent_quota_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_quota_take(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_quotas_t *q);
static ngx_int_t ngx_http_tent_quota_taken(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_quota_bytes_taken(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_quota_bytes_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_quota_keep(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static void ngx_http_tent_quota_cleanup(void *data);
static void ngx_http_tent_quota_back_read(ngx_http_tent_quota_back_t *b);
static void ngx_http_tent_quota_back_write(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_quota_back_done(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_quota_back_send(ngx_http_tent_quota_back_t *b,
    ngx_http_tent_store_op_t *op, ngx_http_tent_store_done_pt handler);
static void ngx_http_tent_quota_back_failed(ngx_http_tent_quota_back_t *b,
    ngx_uint_t status);
static ngx_int_t ngx_http_tent_quota_n_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_quota_n_taken(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_http_tent_store_op_t *ngx_http_tent_quota_cas(ngx_pool_t *pool,
    ngx_log_t *log, ngx_str_t *key, ngx_str_t *old, int64_t n);


/* a count taken by compare-and-set: tries before a 503 */
#define NGX_HTTP_TENT_QUOTA_TRIES  32


static int64_t
ngx_http_tent_quota_limit(ngx_http_request_t *r, ngx_http_tent_quotas_t *q,
    ngx_uint_t what)
{
    int64_t                    own;
    ngx_http_tent_srv_conf_t  *scf;

    if (q->limit[what] >= 0) {
        return q->limit[what];
    }

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    switch (what) {
    case NGX_HTTP_TENT_QUOTA_POSTS:
        own = (int64_t) scf->quota_posts;
        break;
    case NGX_HTTP_TENT_QUOTA_APPS:
        own = (int64_t) scf->quota_apps;
        break;
    default:
        own = (int64_t) scf->quota_bytes;
    }

    return own ? own : -1;
}


/*
 * Before the body: the counts of "what" (a post's create: its bytes
 * too), then "next"; 403 at a quota of posts or apps.
 */

ngx_int_t
ngx_http_tent_quota_check(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_uint_t what, ngx_http_tent_route_pt next)
{
    ngx_str_t                  key;
    ngx_uint_t                 i;
    ngx_http_tent_quotas_t    *q;
    ngx_http_tent_store_op_t  *op;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);
    q = ctx->quotas;

    /* counted on provisioning servers only */

    if (!scf->provisioning || q == NULL) {
        return next(r, ctx);
    }

    q->counted = (1 << what);
    q->what = what;
    q->taken = 0;

    if (what == NGX_HTTP_TENT_QUOTA_POSTS) {
        q->counted |= (1 << NGX_HTTP_TENT_QUOTA_BYTES);
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL || ngx_http_tent_store_mget(op) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "reading the quota's count");
    }

    for (i = 0; i < NGX_HTTP_TENT_QUOTAS; i++) {
        if (!(q->counted & (1 << i))) {
            continue;
        }

        if (ngx_http_tent_key(r->pool, &ctx->entity,
                              NGX_HTTP_TENT_TABLE_QUOTA,
                              &ngx_http_tent_quota_names[i], &key)
            != NGX_OK
            || ngx_http_tent_store_mget_key(op, &key) != NGX_OK)
        {
            return ngx_http_tent_internal_error(r,
                                                "reading the quota's count");
        }
    }

    q->next = (void *) next;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_quota_loaded);
}


static ngx_int_t
ngx_http_tent_quota_loaded(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    int64_t                  limit;
    ngx_int_t                rc, n;
    ngx_str_t                value;
    ngx_uint_t               i, found;
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_quotas_t  *q;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    q = ctx->quotas;

    for (i = 0; i < NGX_HTTP_TENT_QUOTAS; i++) {
        if (!(q->counted & (1 << i))) {
            continue;
        }

        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "reading the counts");
        }

        n = found ? ngx_atoi(value.data, value.len) : 0;
        q->count[i] = n == NGX_ERROR ? 0 : n;

        if (i == q->what) {
            q->found = found;
            q->raw = value;
        }

        if (i == NGX_HTTP_TENT_QUOTA_BYTES) {
            q->bfound = found;
            q->braw = value;
        }

        limit = ngx_http_tent_quota_limit(r, q, i);

        ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent quota: \"%V\" has %L %V, quota %L",
                       &ctx->entity, q->count[i],
                       &ngx_http_tent_quota_names[i], limit);

        /* bytes: the upload's own size decides (quota_bytes) */

        if (i != NGX_HTTP_TENT_QUOTA_BYTES && limit >= 0
            && q->count[i] >= limit)
        {
            (void) ngx_http_discard_request_body(r);
            return ngx_http_tent_quota_refuse(r, i);
        }
    }

    /* a quota set or not: the count is taken at the store, exact */

    if (q->what != NGX_HTTP_TENT_QUOTA_BYTES) {
        return ngx_http_tent_quota_take(r, ctx, q);
    }

    return ((ngx_http_tent_route_pt) q->next)(r, ctx);
}


/*
 * Below a quota of posts or apps (or none set): the count as read, plus
 * one, by compare-and-set (absent: must still be absent), so that of
 * two creates at the same moment only one gets the last place.
 */

static ngx_int_t
ngx_http_tent_quota_take(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_quotas_t *q)
{
    ngx_str_t                  key;
    ngx_http_tent_store_op_t  *op;

    op = NULL;

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_QUOTA,
                          &ngx_http_tent_quota_names[q->what], &key)
        == NGX_OK)
    {
        op = ngx_http_tent_quota_cas(r->pool, r->connection->log, &key,
                                     q->found ? &q->raw : NULL,
                                     q->count[q->what] + 1);
    }

    if (op == NULL) {
        return ngx_http_tent_internal_error(r, "taking the quota's count");
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent quota: \"%V\" takes %L %V", &ctx->entity,
                   q->count[q->what] + 1,
                   &ngx_http_tent_quota_names[q->what]);

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_quota_taken);
}


static ngx_int_t
ngx_http_tent_quota_taken(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    ngx_int_t                status;
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_quotas_t  *q;

    ctx = ngx_http_tent_get_ctx(r);
    q = ctx->quotas;

    status = ngx_http_tent_store_http_status(op);

    if (status == NGX_OK && op->status == NGX_HTTP_TENT_STORE_CONFLICT) {

        /* another create moved the count: read it again */

        if (++q->tries < NGX_HTTP_TENT_QUOTA_TRIES) {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "tent quota: \"%V\" count moved, read again",
                           &ctx->entity);
            return ngx_http_tent_quota_check(r, ctx, q->what,
                                   (ngx_http_tent_route_pt) q->next);
        }

        return ngx_http_tent_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                        "the quota's count is busy: "
                                        "send the request again");
    }

    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    if (ngx_http_tent_quota_keep(r, ctx) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "keeping the place taken");
    }

    q->taken = 1 << q->what;
    q->took[q->what] = 1;

    return ((ngx_http_tent_route_pt) q->next)(r, ctx);
}


ngx_int_t
ngx_http_tent_quota_refuse(ngx_http_request_t *r, ngx_uint_t what)
{
    u_char  msg[64];

    ngx_sprintf(msg, "quota exceeded: %V%Z", &ngx_http_tent_quota_names[what]);

    return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN, (const char *) msg);
}


/*
 * Must a check of "what" run first (ngx_http_tent_quota_check())?  On a
 * provisioning server, once a request: a write that is not a route of
 * its own (the first authorization of an app) calls the check with
 * itself as "next", and is called again with this answering 0.
 */

ngx_uint_t
ngx_http_tent_quota_pending(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_uint_t what)
{
    ngx_http_tent_quotas_t    *q;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);
    q = ctx->quotas;

    if (!scf->provisioning || q == NULL) {
        return 0;
    }

    return !(q->counted & (1 << what));
}


/*
 * Once the body is read: the bytes this create or change uploads (its
 * files, as received) against the quota.  They are taken before
 * anything is written, by a compare-and-set of the count as read (read
 * again when another upload moved it), so that uploads at the same time
 * cannot together pass the quota (nor lose a count where none is set);
 * then "again" runs once more, and finds them taken.  Given back when
 * the request ends before its create's batch (quota_count()).
 * NGX_OK: go on; NGX_DONE: the caller returns *rc (the 403 sent, or the
 * compare-and-set submitted).
 */

ngx_int_t
ngx_http_tent_quota_bytes(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_route_pt again, ngx_int_t *rc)
{
    int64_t                    limit, bytes;
    ngx_str_t                  key;
    ngx_uint_t                 i;
    ngx_http_tent_part_t      *part;
    ngx_http_tent_quotas_t    *q;
    ngx_http_tent_store_op_t  *op;

    q = ctx->quotas;

    if (q == NULL || !(q->counted & (1 << NGX_HTTP_TENT_QUOTA_BYTES))
        || (q->taken & (1 << NGX_HTTP_TENT_QUOTA_BYTES))
        || ctx->parts == NULL || ctx->parts->nelts == 0)
    {
        return NGX_OK;
    }

    bytes = 0;
    part = ctx->parts->elts;

    for (i = 0; i < ctx->parts->nelts; i++) {
        bytes += part[i].data.len;
    }

    limit = ngx_http_tent_quota_limit(r, q, NGX_HTTP_TENT_QUOTA_BYTES);

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent quota: %L attachment bytes uploaded, %L before, "
                   "quota %L", bytes, q->count[NGX_HTTP_TENT_QUOTA_BYTES],
                   limit);

    if (limit >= 0 && q->count[NGX_HTTP_TENT_QUOTA_BYTES] + bytes > limit) {
        *rc = ngx_http_tent_quota_refuse(r, NGX_HTTP_TENT_QUOTA_BYTES);
        return NGX_DONE;
    }

    op = NULL;

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_QUOTA,
                          &ngx_http_tent_quota_names[NGX_HTTP_TENT_QUOTA_BYTES],
                          &key)
        == NGX_OK)
    {
        op = ngx_http_tent_quota_cas(r->pool, r->connection->log, &key,
                                     q->bfound ? &q->braw : NULL,
                                     q->count[NGX_HTTP_TENT_QUOTA_BYTES]
                                     + bytes);
    }

    if (op == NULL) {
        *rc = ngx_http_tent_internal_error(r, "taking the bytes' count");
        return NGX_DONE;
    }

    q->bytes = bytes;
    q->next = (void *) again;

    *rc = ngx_http_tent_store_submit_request(r, op,
                                             ngx_http_tent_quota_bytes_taken);
    return NGX_DONE;
}


static ngx_int_t
ngx_http_tent_quota_bytes_taken(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                rc;
    ngx_str_t                key;
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_quotas_t  *q;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    q = ctx->quotas;

    if (op->status == NGX_HTTP_TENT_STORE_CONFLICT) {

        /* another upload moved the count: read it again */

        if (++q->btries >= NGX_HTTP_TENT_QUOTA_TRIES) {
            return ngx_http_tent_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                            "the quota's count is busy: "
                                            "send the request again");
        }

        op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

        if (op == NULL
            || ngx_http_tent_key(r->pool, &ctx->entity,
                                 NGX_HTTP_TENT_TABLE_QUOTA,
                                 &ngx_http_tent_quota_names[
                                     NGX_HTTP_TENT_QUOTA_BYTES], &key)
               != NGX_OK
            || ngx_http_tent_store_get(op, &key) != NGX_OK)
        {
            return ngx_http_tent_internal_error(r, "reading the bytes' count");
        }

        return ngx_http_tent_store_submit_request(r, op,
                                            ngx_http_tent_quota_bytes_read);
    }

    /* taken: given back if the request ends before the create's batch */

    if (ngx_http_tent_quota_keep(r, ctx) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "keeping the bytes taken");
    }

    q->took[NGX_HTTP_TENT_QUOTA_BYTES] += q->bytes;
    q->taken |= 1 << NGX_HTTP_TENT_QUOTA_BYTES;
    q->count[NGX_HTTP_TENT_QUOTA_BYTES] += q->bytes;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent quota: \"%V\" took %L attachment bytes",
                   &ctx->entity, q->bytes);

    return ((ngx_http_tent_route_pt) q->next)(r, ctx);
}


static ngx_int_t
ngx_http_tent_quota_bytes_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                n, rc;
    ngx_str_t                value;
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_quotas_t  *q;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    q = ctx->quotas;

    q->bfound = (op->status == NGX_HTTP_TENT_STORE_OK);
    ngx_str_null(&q->braw);
    n = 0;

    if (q->bfound) {
        if (ngx_http_tent_store_value(op, &value) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "reading the bytes' count");
        }

        q->braw = value;
        n = ngx_atoi(value.data, value.len);
    }

    q->count[NGX_HTTP_TENT_QUOTA_BYTES] = (n == NGX_ERROR) ? 0 : n;

    if (ngx_http_tent_quota_bytes(r, ctx, (ngx_http_tent_route_pt) q->next,
                                  &rc)
        == NGX_DONE)
    {
        return rc;
    }

    return ((ngx_http_tent_route_pt) q->next)(r, ctx);
}


/*
 * What a request took by compare-and-set (a post's or an app's place,
 * bytes, an import's n) goes back when it ends before its write's batch
 * (refused after, failed, the client gone): ngx_http_tent_quota_return().
 */

static ngx_int_t
ngx_http_tent_quota_keep(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_pool_cleanup_t      *cln;
    ngx_http_tent_quotas_t  *q;

    q = ctx->quotas;

    if (q->kept) {
        return NGX_OK;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_tent_quota_cleanup;
    cln->data = ctx;
    q->kept = 1;

    return NGX_OK;
}


static void
ngx_http_tent_quota_cleanup(void *data)
{
    ngx_http_tent_ctx_t *ctx = data;

    ngx_http_tent_quotas_t  *q;

    q = ctx->quotas;

    if (q != NULL && !q->bwritten) {
        ngx_http_tent_quota_return(ctx);
    }
}


/*
 * n of "what" taken for a write that was not made go back, in the
 * background (the request may be gone): a read and a compare-and-set of
 * the count, again while it moves; a failure keeps them counted.
 */

void
ngx_http_tent_quota_give(ngx_str_t *entity, ngx_uint_t what, int64_t n)
{
    ngx_pool_t                  *pool;
    ngx_http_tent_quota_back_t  *b;

    pool = ngx_create_pool(1024, ngx_cycle->log);
    if (pool == NULL) {
        return;
    }

    b = ngx_pcalloc(pool, sizeof(ngx_http_tent_quota_back_t));

    if (b == NULL
        || ngx_http_tent_key(pool, entity, NGX_HTTP_TENT_TABLE_QUOTA,
                             &ngx_http_tent_quota_names[what], &b->key)
           != NGX_OK)
    {
        ngx_destroy_pool(pool);
        return;
    }

    b->pool = pool;
    b->bytes = n;
    b->what = what;
    b->log = *ngx_cycle->log;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "tent quota: %L %V of \"%V\" given back", n,
                   &ngx_http_tent_quota_names[what], entity);

    ngx_http_tent_quota_back_read(b);
}


static void
ngx_http_tent_quota_back_read(ngx_http_tent_quota_back_t *b)
{
    ngx_http_tent_store_op_t  *op;

    op = ngx_http_tent_store_op_create(b->pool, &b->log);

    if (op != NULL && ngx_http_tent_store_get(op, &b->key) != NGX_OK) {
        op = NULL;
    }

    ngx_http_tent_quota_back_send(b, op, ngx_http_tent_quota_back_write);
}


static void
ngx_http_tent_quota_back_write(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_quota_back_t *b = op->data;

    int64_t     n;
    ngx_str_t   value;

    if (op->status != NGX_HTTP_TENT_STORE_OK
        || ngx_http_tent_store_value(op, &value) != NGX_OK)
    {
        ngx_http_tent_quota_back_failed(b, op->status);
        return;
    }

    n = ngx_atoi(value.data, value.len);
    n = (n == NGX_ERROR || n < b->bytes) ? 0 : n - b->bytes;

    ngx_http_tent_quota_back_send(b, ngx_http_tent_quota_cas(b->pool, &b->log,
                                                             &b->key, &value,
                                                             n),
                                  ngx_http_tent_quota_back_done);
}


static void
ngx_http_tent_quota_back_done(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_quota_back_t *b = op->data;

    if (op->status == NGX_HTTP_TENT_STORE_CONFLICT
        && ++b->tries < NGX_HTTP_TENT_QUOTA_TRIES)
    {
        ngx_http_tent_quota_back_read(b);
        return;
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_quota_back_failed(b, op->status);
        return;
    }

    ngx_destroy_pool(b->pool);
}


/* the give-back's next operation; none (NULL) or not sent: it ends */

static void
ngx_http_tent_quota_back_send(ngx_http_tent_quota_back_t *b,
    ngx_http_tent_store_op_t *op, ngx_http_tent_store_done_pt handler)
{
    if (op != NULL) {
        op->handler = handler;
        op->data = b;

        if (ngx_http_tent_store_submit(op) == NGX_OK) {
            return;
        }
    }

    ngx_http_tent_quota_back_failed(b, NGX_HTTP_TENT_STORE_ERROR);
}


static void
ngx_http_tent_quota_back_failed(ngx_http_tent_quota_back_t *b,
    ngx_uint_t status)
{
    ngx_log_error(NGX_LOG_WARN, &b->log, 0,
                  "tent quota: giving back %L %V failed "
                  "(store status %ui): the count keeps them", b->bytes,
                  &ngx_http_tent_quota_names[b->what], status);
    ngx_destroy_pool(b->pool);
}


/*
 * n of "what" at once (an import's post versions, its attachment bytes),
 * then "next": the count read, and n taken by compare-and-set of it as
 * read (read again while another write moves it); over a quota nothing
 * is taken and q->over says so (the caller refuses and writes nothing).
 * What was taken is in q->took[], for ngx_http_tent_quota_return().
 */

ngx_int_t
ngx_http_tent_quota_take_n(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_uint_t what, int64_t n, ngx_http_tent_route_pt next)
{
    ngx_str_t                  key;
    ngx_http_tent_quotas_t    *q;
    ngx_http_tent_store_op_t  *op;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);
    q = ctx->quotas;

    if (!scf->provisioning || q == NULL || n <= 0) {
        return next(r, ctx);
    }

    q->what = what;
    q->want = n;
    q->next = (void *) next;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_QUOTA,
                             &ngx_http_tent_quota_names[what], &key)
           != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "reading the quota's count");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_quota_n_read);
}


static ngx_int_t
ngx_http_tent_quota_n_read(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    int64_t                    limit, n;
    ngx_int_t                  rc, c;
    ngx_str_t                  key, value;
    ngx_uint_t                 what;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_quotas_t    *q;
    ngx_http_tent_store_op_t  *cas;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    q = ctx->quotas;
    what = q->what;
    n = q->want;

    ngx_str_null(&value);
    c = 0;

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        if (ngx_http_tent_store_value(op, &value) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "reading the count");
        }

        c = ngx_atoi(value.data, value.len);
        c = (c == NGX_ERROR) ? 0 : c;
    }

    limit = ngx_http_tent_quota_limit(r, q, what);

    ngx_log_debug5(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent quota: \"%V\" has %L %V, takes %L, quota %L",
                   &ctx->entity, (int64_t) c,
                   &ngx_http_tent_quota_names[what], n, limit);

    if (limit >= 0 && c + n > limit) {
        q->over |= 1 << what;
        return ((ngx_http_tent_route_pt) q->next)(r, ctx);
    }

    cas = NULL;

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_QUOTA,
                          &ngx_http_tent_quota_names[what], &key)
        == NGX_OK)
    {
        cas = ngx_http_tent_quota_cas(r->pool, r->connection->log, &key,
                                      value.data ? &value : NULL, c + n);
    }

    if (cas == NULL) {
        return ngx_http_tent_internal_error(r, "taking the quota's count");
    }

    return ngx_http_tent_store_submit_request(r, cas,
                                              ngx_http_tent_quota_n_taken);
}


static ngx_int_t
ngx_http_tent_quota_n_taken(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                rc;
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_quotas_t  *q;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    q = ctx->quotas;

    if (op->status == NGX_HTTP_TENT_STORE_CONFLICT) {

        /* another write moved the count: read it again */

        if (++q->tries >= NGX_HTTP_TENT_QUOTA_TRIES) {
            return ngx_http_tent_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                            "the quota's count is busy: "
                                            "send the request again");
        }

        return ngx_http_tent_quota_take_n(r, ctx, q->what, q->want,
                                          (ngx_http_tent_route_pt) q->next);
    }

    if (ngx_http_tent_quota_keep(r, ctx) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "keeping the count taken");
    }

    q->taken |= 1 << q->what;
    q->counted |= 1 << q->what;
    q->took[q->what] = q->want;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent quota: \"%V\" took %L %V", &ctx->entity, q->want,
                   &ngx_http_tent_quota_names[q->what]);

    return ((ngx_http_tent_route_pt) q->next)(r, ctx);
}


/* what quota_take_n() took goes back: the write it was for not made */

void
ngx_http_tent_quota_return(ngx_http_tent_ctx_t *ctx)
{
    ngx_uint_t               i;
    ngx_http_tent_quotas_t  *q;

    q = ctx->quotas;

    if (q == NULL) {
        return;
    }

    for (i = 0; i < NGX_HTTP_TENT_QUOTAS; i++) {
        if (q->took[i]) {
            ngx_http_tent_quota_give(&ctx->entity, i, q->took[i]);
            q->took[i] = 0;
            q->taken &= ~(1 << i);
        }
    }
}


/*
 * The write's batch is built: what was taken is its from now on, not
 * given back (a batch the store then refuses keeps it: the count errs
 * on the side of the quota).
 */

ngx_int_t
ngx_http_tent_quota_count(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    void *op)
{
    ngx_http_tent_quotas_t  *q;

    q = ctx->quotas;

    if (q != NULL) {
        q->bwritten = 1;
    }

    return NGX_OK;
}


/*
 * The compare-and-set of a count: "old" as read (NULL: it must still be
 * absent) becomes n, both written into the operation at once.
 */

static ngx_http_tent_store_op_t *
ngx_http_tent_quota_cas(ngx_pool_t *pool, ngx_log_t *log, ngx_str_t *key,
    ngx_str_t *old, int64_t n)
{
    u_char                    *p;
    ngx_str_t                  value;
    ngx_http_tent_store_op_t  *op;

    p = ngx_pnalloc(pool, NGX_INT64_LEN);
    op = ngx_http_tent_store_op_create(pool, log);

    if (p == NULL || op == NULL) {
        return NULL;
    }

    value.data = p;
    value.len = ngx_sprintf(p, "%L", n) - p;

    if (ngx_http_tent_store_cas(op, key, old, &value) != NGX_OK) {
        return NULL;
    }

    return op;
}


/*
 * The operator's list (ngx_http_tent_admin.c): an entity's counts, its
 * use beside its quotas, read with the registry's other entities' in
 * one mget: the keys added to OP, then the values read in that order.
 */

ngx_int_t
ngx_http_tent_quota_use_keys(ngx_pool_t *pool, ngx_str_t *entity,
    void *op)
{
    ngx_str_t   key;
    ngx_uint_t  i;

    for (i = 0; i < NGX_HTTP_TENT_QUOTAS; i++) {
        if (ngx_http_tent_key(pool, entity, NGX_HTTP_TENT_TABLE_QUOTA,
                              &ngx_http_tent_quota_names[i], &key)
            != NGX_OK
            || ngx_http_tent_store_mget_key(op, &key) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


json_t *
ngx_http_tent_quota_use(void *op)
{
    json_t      *use;
    ngx_int_t    n;
    ngx_str_t    value;
    ngx_uint_t   i, found;

    use = json_object();
    if (use == NULL) {
        return NULL;
    }

    for (i = 0; i < NGX_HTTP_TENT_QUOTAS; i++) {
        if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
            json_decref(use);
            return NULL;
        }

        n = found ? ngx_atoi(value.data, value.len) : 0;

        json_object_set_new(use, (char *) ngx_http_tent_quota_names[i].data,
                            json_integer(n == NGX_ERROR ? 0 : n));
    }

    return use;
}
