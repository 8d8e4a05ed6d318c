
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The store as an HTTP handler uses it: an operation that keeps its
 * request alive and finalizes it with what the handler's callback
 * returns, one read of the request's entity, and the HTTP status of a
 * store failure.  The store itself (ngx_http_tent_store.c) knows no
 * request.
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_module.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store_private.h"


static void ngx_http_tent_store_request_done(ngx_http_tent_store_op_t *op);


/*
 * For HTTP handlers: keep the request alive while the store works, then
 * run "handler" and finalize with what it returns.  NGX_DONE from the
 * handler means it submitted another operation.
 */

ngx_int_t
ngx_http_tent_store_submit_request(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op, ngx_http_tent_request_done_pt handler)
{
    ngx_int_t                       rc;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    op->data = r;
    sop->request_done = handler;
    sop->request = 1;
    op->handler = ngx_http_tent_store_request_done;

    if (ngx_http_tent_store_submit(op) != NGX_OK) {
        /* logged as any 500, and answered with the JSON error as before */
        rc = ngx_http_tent_internal_error(r, "submitting the store operation");
        return ngx_http_tent_send_error(r, rc, "Internal Server Error");
    }

    r->main->count++;

    return NGX_DONE;
}


/* read one record of the request's entity, then run "handler" */

ngx_int_t
ngx_http_tent_store_get_request(ngx_http_request_t *r, u_char table,
    ngx_str_t *rest, ngx_http_tent_request_done_pt handler)
{
    ngx_str_t                  key;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_store_op_t  *op;

    ctx = ngx_http_tent_get_ctx(r);

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);
    if (op == NULL) {
        return ngx_http_tent_internal_error(r, "creating the store read");
    }

    if (ngx_http_tent_key(r->pool, &ctx->entity, table, rest, &key)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the record's key");
    }

    if (ngx_http_tent_store_get(op, &key) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "encoding the store read");
    }

    return ngx_http_tent_store_submit_request(r, op, handler);
}


static void
ngx_http_tent_store_request_done(ngx_http_tent_store_op_t *op)
{
    ngx_int_t                       rc;
    ngx_connection_t               *c;
    ngx_http_request_t             *r;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    r = op->data;
    c = r->connection;

    rc = sop->request_done(r, op);

    ngx_http_finalize_request(r, rc);
    ngx_http_run_posted_requests(c);
}


/* the HTTP answer for a store failure, or NGX_OK when there is none */

ngx_int_t
ngx_http_tent_store_http_status(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    switch (op->status) {

    case NGX_HTTP_TENT_STORE_OK:
    case NGX_HTTP_TENT_STORE_NOT_FOUND:
    case NGX_HTTP_TENT_STORE_CONFLICT:
        return NGX_OK;

    case NGX_HTTP_TENT_STORE_UNAVAILABLE:
    case NGX_HTTP_TENT_STORE_RETRY:
        return NGX_HTTP_SERVICE_UNAVAILABLE;

    default:
        /* the step that failed, as the owner saw it */
        ngx_log_error(NGX_LOG_ERR, op->log, 0, "tent store: %s failed: \"%V\"",
                      ngx_http_tent_store_op_name(op), &sop->res);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
}


/*
 * After a store write, the JSON prepared in ctx->state: the handlers of
 * apps, groups, followers, followings, notifications and the profile
 * end with it.  A compare-and-set that found another value is 409; no
 * JSON prepared (a DELETE) is 200 with an empty body.
 */

ngx_int_t
ngx_http_tent_reply_state_json(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t             status;
    ngx_http_tent_ctx_t  *ctx;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        /* a compare-and-set found something else than we read */
        return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                   "The record changed meanwhile: send the request again");
    }

    ctx = ngx_http_tent_get_ctx(r);

    if (ctx->state == NULL) {
        /* a DELETE: 200 with an empty body, as tentd */
        r->headers_out.status = NGX_HTTP_OK;
        r->headers_out.content_length_n = 0;
        r->header_only = 1;
        ctx->own_reply = 1;
        return ngx_http_send_header(r);
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, ctx->state);
}
