
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The operator's blocked domains (docs/blocks.md): host-wide, in the
 * store's registry space ("0x00 'Y' <domain>": {"domain",
 * "created_at"}).  Each worker holds the list (the fetch's,
 * ngx_http_tent_fetch_domains.c) as of a generation of the blocks; a
 * request reads it again first when the generation moved, so an inbound
 * route and the request's outbound fetches see every block acknowledged
 * before it; the delivery engine reads it again at each tick and sends
 * nothing until it has.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_domains.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


static ngx_int_t ngx_http_tent_domains_stored_name(ngx_pool_t *pool,
    ngx_str_t *given, ngx_str_t *name);
static ngx_int_t ngx_http_tent_domains_scan(ngx_http_tent_store_op_t *op,
    ngx_atomic_uint_t *generation);
static ngx_int_t ngx_http_tent_domains_take(ngx_http_tent_store_op_t *op,
    ngx_atomic_uint_t generation);
static ngx_int_t ngx_http_tent_domains_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static void ngx_http_tent_domains_refreshed(ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_domains_refused(ngx_http_request_t *r,
    ngx_str_t *given);
static ngx_int_t ngx_http_tent_domains_act(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_domains_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_domains_listed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


typedef struct {
    ngx_str_t                       domain;
    ngx_uint_t                      block;
    json_t                         *row;
} ngx_http_tent_domain_act_t;


static ngx_uint_t         ngx_http_tent_domains_refreshing;
static ngx_atomic_uint_t  ngx_http_tent_domains_refresh_gen;


static ngx_uint_t
ngx_http_tent_domains_stale(void)
{
    ngx_atomic_uint_t  held;

    return ngx_http_tent_domains_held_at(&held) != NGX_OK
           || held != ngx_http_tent_domains_generation(
                          (ngx_cycle_t *) ngx_cycle);
}


static ngx_int_t
ngx_http_tent_domains_scan(ngx_http_tent_store_op_t *op,
    ngx_atomic_uint_t *generation)
{
    ngx_str_t  start, end;

    *generation = ngx_http_tent_domains_generation((ngx_cycle_t *) ngx_cycle);

    if (ngx_http_tent_domain_range(op->pool, &start, &end) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_tent_store_scan(op, &start, &end,
                                    NGX_HTTP_TENT_DOMAINS_MAX, 0);
}


/* the scan's answer as the worker's list, in a pool of its own */

static ngx_int_t
ngx_http_tent_domains_take(ngx_http_tent_store_op_t *op,
    ngx_atomic_uint_t generation)
{
    ngx_int_t     rc;
    ngx_str_t     key, value, domain, *d;
    ngx_pool_t   *pool;
    ngx_array_t  *list;

    if (op->status != NGX_HTTP_TENT_STORE_OK
        && op->status != NGX_HTTP_TENT_STORE_NOT_FOUND)
    {
        return NGX_ERROR;
    }

    pool = ngx_create_pool(1024, ngx_cycle->log);
    if (pool == NULL) {
        return NGX_ERROR;
    }

    list = ngx_array_create(pool, 8, sizeof(ngx_str_t));
    if (list == NULL) {
        goto failed;
    }

    while ((rc = ngx_http_tent_store_next(op, &key, &value)) == NGX_OK) {
        if (ngx_http_tent_domain_parse(&key, &domain) != NGX_OK) {
            continue;
        }

        d = ngx_array_push(list);
        if (d == NULL) {
            goto failed;
        }

        d->len = domain.len;
        d->data = ngx_pstrdup(pool, &domain);
        if (d->data == NULL) {
            goto failed;
        }
    }

    if (rc == NGX_ERROR) {
        goto failed;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, op->log, 0,
                   "tent domains: %ui blocked, generation %uA",
                   list->nelts, generation);

    ngx_http_tent_domains_set(pool, list, generation);

    return NGX_OK;

failed:

    ngx_destroy_pool(pool);
    return NGX_ERROR;
}


ngx_int_t
ngx_http_tent_domains_request(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_route_pt next)
{
    ngx_http_tent_store_op_t  *op;

    if (!ngx_http_tent_domains_stale()) {
        return next(r, ctx);
    }

    ctx->domains_next = (void *) next;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_domains_scan(op, &ctx->domains_gen) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the domains' scan");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_domains_read);
}


static ngx_int_t
ngx_http_tent_domains_read(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    ngx_int_t             rc;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    if (ngx_http_tent_domains_take(op, ctx->domains_gen) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "reading the domains");
    }

    return ((ngx_http_tent_route_pt) ctx->domains_next)(r, ctx);
}


/* background: one read at a time, its pool its own */

ngx_int_t
ngx_http_tent_domains_refresh(ngx_log_t *log)
{
    ngx_pool_t                *pool;
    ngx_http_tent_store_op_t  *op;

    if (!ngx_http_tent_domains_stale()) {
        return NGX_OK;
    }

    if (ngx_http_tent_domains_refreshing) {
        return NGX_AGAIN;
    }

    pool = ngx_create_pool(1024, log);
    if (pool == NULL) {
        return NGX_AGAIN;
    }

    op = ngx_http_tent_store_op_create(pool, log);

    if (op == NULL
        || ngx_http_tent_domains_scan(op, &ngx_http_tent_domains_refresh_gen)
           != NGX_OK)
    {
        ngx_destroy_pool(pool);
        return NGX_AGAIN;
    }

    op->handler = ngx_http_tent_domains_refreshed;
    op->data = pool;

    if (ngx_http_tent_store_submit(op) != NGX_OK) {
        ngx_destroy_pool(pool);
        return NGX_AGAIN;
    }

    ngx_http_tent_domains_refreshing = 1;

    return NGX_AGAIN;
}


static void
ngx_http_tent_domains_refreshed(ngx_http_tent_store_op_t *op)
{
    ngx_pool_t *pool = op->data;

    ngx_http_tent_domains_refreshing = 0;

    if (ngx_http_tent_domains_take(op, ngx_http_tent_domains_refresh_gen)
        != NGX_OK)
    {
        ngx_log_error(NGX_LOG_WARN, op->log, 0,
                      "tent domains: the blocked domains could not be "
                      "read (store status %ui): next tick", op->status);
    }

    ngx_destroy_pool(pool);
}


ngx_uint_t
ngx_http_tent_domains_entity(ngx_str_t *entity)
{
    return ngx_http_tent_domain_blocked_url(entity);
}


/* tent_admin: {"action": "block" | "unblock", "domain": D} */

ngx_int_t
ngx_http_tent_domains_admin(ngx_http_request_t *r, json_t *body,
    ngx_str_t *action)
{
    ngx_int_t                    rc;
    ngx_str_t                    given;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_domain_act_t  *act;

    act = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_domain_act_t));
    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ctx_t));

    if (act == NULL || ctx == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the action");
    }

    act->block = (action->len == 5);

    rc = NGX_DECLINED;

    if (ngx_http_tent_json_str(body, "domain", &given) == NGX_OK) {

        /*
         * An unblock names a row that is stored: those written before
         * names not in ASCII and IP addresses were refused stay
         * removable (a name not stored is 404 in act())
         */

        if (!act->block) {
            rc = ngx_http_tent_domains_stored_name(r->pool, &given,
                                                   &act->domain);

        } else {
            rc = ngx_http_tent_domains_refused(r, &given);
            if (rc != NGX_DECLINED) {
                return rc;
            }

            rc = ngx_http_tent_domain_normalize(r->pool, &given,
                                                &act->domain);
        }
    }

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "spelling the domain");
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                   "\"domain\" must be a host name (labels of 1 to 63 "
                   "bytes, 253 at most)");
    }

    /* as the admin's own actions: an invalid ctx, our state in it */

    ctx->evaluated = 1;
    ctx->invalid = 1;
    ctx->state = act;
    ngx_http_set_ctx(r, ctx, ngx_http_tent_module);

    return ngx_http_tent_domains_request(r, ctx, ngx_http_tent_domains_act);
}


/*
 * A name as an unblock gives it: in the spelling rows were stored in,
 * by any version (ASCII letters in lower case, one trailing dot
 * dropped), but not checked against the rules of today's blocks.
 */

static ngx_int_t
ngx_http_tent_domains_stored_name(ngx_pool_t *pool, ngx_str_t *given,
    ngx_str_t *name)
{
    size_t   len;
    u_char  *p;

    len = given->len;

    if (len && given->data[len - 1] == '.') {
        len--;
    }

    if (len == 0 || len > 253 || !ngx_http_tent_utf8_valid(given->data, len))
    {
        return NGX_DECLINED;
    }

    p = ngx_pnalloc(pool, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ngx_strlow(p, given->data, len);

    name->data = p;
    name->len = len;

    return NGX_OK;
}


/*
 * A name that would be stored and never match: an IDN in UTF-8 (a
 * URL's host is in its A-label form, and we have no IDNA library to
 * make one from the other), an IP address (domain blocks match names
 * only).  NGX_DECLINED: neither.
 */

static ngx_int_t
ngx_http_tent_domains_refused(ngx_http_request_t *r, ngx_str_t *given)
{
    u_char  *p, *last;

    last = given->data + given->len;

    for (p = given->data; p < last; p++) {
        if (*p >= 0x80) {
            return ngx_http_tent_send_error(r, 422,
                       "\"domain\" must be ASCII: give an internationalized "
                       "domain name in its A-label (xn--...) form");
        }
    }

    if (last > given->data && last[-1] == '.') {
        last--;
    }

    for (p = last; p > given->data && p[-1] >= '0' && p[-1] <= '9'; p--) {
        /* void */
    }

    if (p < last && (p == given->data || p[-1] == '.')) {
        return ngx_http_tent_send_error(r, 422,
                   "\"domain\" is an IP address: domain blocks match host "
                   "names only");
    }

    return NGX_DECLINED;
}


static ngx_int_t
ngx_http_tent_domains_act(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                    key, value, *list;
    ngx_uint_t                   n, i, found;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_domain_act_t  *act;

    act = ctx->state;

    list = ngx_http_tent_domains_list(&n);
    found = 0;

    for (i = 0; i < n; i++) {
        if (list[i].len == act->domain.len
            && ngx_memcmp(list[i].data, act->domain.data, act->domain.len)
               == 0)
        {
            found = 1;
            break;
        }
    }

    if (act->block && found) {
        return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                                        "The domain is blocked already");
    }

    if (!act->block && !found) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                        "The domain is not blocked");
    }

    if (act->block && n >= NGX_HTTP_TENT_DOMAINS_MAX) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Too many blocked domains");
    }

    act->row = ngx_http_tent_json_own(r->pool,
                   json_pack("{s:o, s:b, s:I}",
                             "domain", ngx_http_tent_json_string(&act->domain),
                             "blocked", (int) act->block,
                             "created_at",
                             (json_int_t) ngx_time()));

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (act->row == NULL || op == NULL
        || ngx_http_tent_domain_key(r->pool, &act->domain, &key) != NGX_OK
        || ngx_http_tent_store_write(op, 1) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the domain's write");
    }

    if (act->block) {
        if (ngx_http_tent_json_dump(r->pool, act->row, &value) != NGX_OK
            || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK)
        {
            return ngx_http_tent_internal_error(r, "adding the domain");
        }

    } else if (ngx_http_tent_store_write_del(op, &key) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "removing the domain");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_domains_written);
}


static ngx_int_t
ngx_http_tent_domains_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                    rc;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_domain_act_t  *act;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    act = ctx->state;

    ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                  "tent admin: domain \"%V\" %s for the whole host",
                  &act->domain, act->block ? "blocked" : "unblocked");

    if (!act->block) {
        json_object_del(act->row, "created_at");
    }

    return ngx_http_tent_send_json(r, act->block ? NGX_HTTP_CREATED
                                                 : NGX_HTTP_OK,
                                   act->row);
}


/* GET {admin}?domains: the blocked domains as stored, in their order */

ngx_int_t
ngx_http_tent_domains_admin_list(ngx_http_request_t *r)
{
    ngx_str_t                  start, end;
    ngx_http_tent_store_op_t  *op;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_domain_range(r->pool, &start, &end) != NGX_OK
        || ngx_http_tent_store_scan(op, &start, &end,
                                    NGX_HTTP_TENT_DOMAINS_MAX, 0)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "listing the domains");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_domains_listed);
}


static ngx_int_t
ngx_http_tent_domains_listed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t     *list, *row;
    ngx_int_t   status;
    ngx_str_t   key, value, domain;

    /* the operator's list has no ctx: not ngx_http_tent_store_request_ctx() */

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    list = ngx_http_tent_json_own(r->pool, json_array());
    if (list == NULL) {
        return ngx_http_tent_internal_error(r, "listing the domains");
    }

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        if (ngx_http_tent_domain_parse(&key, &domain) != NGX_OK) {
            continue;
        }

        row = json_loadb((char *) value.data, value.len, 0, NULL);
        if (!json_is_object(row)) {
            json_decref(row);
            continue;
        }

        json_object_del(row, "blocked");
        json_object_set_new(row, "domain", ngx_http_tent_json_string(&domain));
        json_array_append_new(list, row);
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, list);
}
