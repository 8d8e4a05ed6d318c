
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

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store_private.h"


static void ngx_http_tent_store_request_done(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_store_request_cleanup(void *data);


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
    ngx_http_cleanup_t             *cln;
    ngx_http_tent_ctx_t            *ctx;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    /*
     * A write of a request of a registry entity: only into the
     * incarnation its lookup found, active (the owner checks it with the
     * write, docs/store.md "The registry fence")
     */

    ctx = ngx_http_get_module_ctx(r, ngx_http_tent_module);

    if (ctx && ctx->registry == NGX_HTTP_TENT_REG_ACTIVE
        && ctx->registry_inc && sop->req_len >= 2
        && !(sop->req[1] & NGX_HTTP_TENT_OP_FENCE)
        && ngx_http_tent_store_fence(op, &ctx->entity, ctx->registry_inc)
           != NGX_OK)
    {
        rc = ngx_http_tent_internal_error(r, "fencing the store write");
        return ngx_http_tent_send_error(r, rc, "Internal Server Error");
    }

    /*
     * The operation lives in the request's pool, and r->count does not
     * stop nginx from terminating the request (a body being discarded,
     * then a malformed chunk or silence): its cleanup takes the
     * operation out of the store first (docs/store.md, "An operation's
     * life").
     */

    cln = ngx_http_cleanup_add(r, 0);
    if (cln == NULL) {
        rc = ngx_http_tent_internal_error(r, "adding the store's cleanup");
        return ngx_http_tent_send_error(r, rc, "Internal Server Error");
    }

    op->data = r;
    sop->request_done = handler;
    sop->request = 1;
    op->handler = ngx_http_tent_store_request_done;

    if (ngx_http_tent_store_submit(op) != NGX_OK) {
        /* logged as any 500, and answered with the JSON error as before */
        rc = ngx_http_tent_internal_error(r, "submitting the store operation");
        return ngx_http_tent_send_error(r, rc, "Internal Server Error");
    }

    cln->handler = ngx_http_tent_store_request_cleanup;
    cln->data = op;

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
    ngx_http_cleanup_t             *cln;
    ngx_http_request_t             *r;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    r = op->data;
    c = r->connection;

    /* answered: its cleanup has nothing to take out any more */

    for (cln = r->main->cleanup; cln; cln = cln->next) {
        if (cln->handler == ngx_http_tent_store_request_cleanup
            && cln->data == op)
        {
            cln->handler = NULL;
        }
    }

    if (sop->request_done == NULL) {
        /* nginx ended the request while a thread had this: now it goes */

        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, c->log, 0,
                       "tent store: the answer of an ended request, "
                       "dropped");

        r->main->blocked--;
        ngx_http_finalize_request(r, NGX_ERROR);
        ngx_http_run_posted_requests(c);
        return;
    }

    /*
     * The registry fence refused a write: the entity was disabled,
     * deleted (or made anew) since the request looked it up.  Nothing
     * was written; the route's handler has nothing to add.
     */

    if (op->status == NGX_HTTP_TENT_STORE_FENCED) {
        rc = ngx_http_tent_store_fenced(r, op);

    } else {
        rc = sop->request_done(r, op);
    }

    ngx_http_finalize_request(r, rc);
    ngx_http_run_posted_requests(c);
}


/*
 * nginx terminates the request (its pool goes next) with the operation
 * in flight: out of the store, never answered.  A thread that has it
 * reads and writes its memory: the request is kept (r->blocked, as
 * nginx's own thread I/O does) until the thread's answer ends it.
 */

static void
ngx_http_tent_store_request_cleanup(void *data)
{
    ngx_http_tent_store_op_t *op = data;

    ngx_http_request_t             *r;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);
    r = op->data;

    if (ngx_http_tent_store_cancel(op) == NGX_BUSY) {
        /* no handler of the route's: the request is ended, no answer */
        sop->request_done = NULL;
        r->main->blocked++;
        return;
    }

    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent store: the request ended, its operation dropped");
}


/* a write the registry fence refused, as the request's answer */

ngx_int_t
ngx_http_tent_store_fenced(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "tent registry: a write refused, the entity is \"%V\"",
                  &sop->res);

    if (sop->res.len == 8 && ngx_strncmp(sop->res.data, "disabled", 8) == 0)
    {
        return ngx_http_tent_send_error(r, 410, "This entity is disabled");
    }

    if (sop->res.len == 4 && ngx_strncmp(sop->res.data, "gone", 4) == 0) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                        "No such entity on this server");
    }

    return ngx_http_tent_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE, NULL);
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

    case NGX_HTTP_TENT_STORE_FENCED:
        /* not through a request's handler: "disabled" or "gone" */
        return (sop->res.len && sop->res.data[0] == 'd')
               ? 410 : NGX_HTTP_NOT_FOUND;

    default:
        /* the step that failed, as the owner saw it */
        ngx_log_error(NGX_LOG_ERR, op->log, 0, "tent store: %s failed: \"%V\"",
                      ngx_http_tent_store_op_name(op), &sop->res);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
}


/*
 * The start of a request's store callback, said once: a store failure
 * (ngx_http_tent_store_http_status()) answered with its JSON error, and
 * NULL with what the callback returns in *rc; else the request's ctx.
 */

ngx_http_tent_ctx_t *
ngx_http_tent_store_request_ctx(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op, ngx_int_t *rc)
{
    ngx_int_t             status;
    ngx_http_tent_ctx_t  *ctx;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        *rc = ngx_http_tent_send_error(r, status, NULL);
        return NULL;
    }

    /* the handler made it: the router's, or the operator's (admin.c) */

    ctx = ngx_http_get_module_ctx(r, ngx_http_tent_module);
    if (ctx == NULL) {
        *rc = ngx_http_tent_internal_error(r, "finding the request's ctx");
    }

    return ctx;
}


/*
 * The same for a read of one record: also a record not found answered
 * 404 with "missing", and one that is not JSON a 500 of "step".  Else
 * the record's JSON (the pool releases it) and its bytes in *value.
 */

json_t *
ngx_http_tent_store_request_record(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op, const char *missing, const char *step,
    ngx_str_t *value, ngx_int_t *rc)
{
    json_t  *json;

    if (ngx_http_tent_store_request_ctx(r, op, rc) == NULL) {
        return NULL;
    }

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        *rc = ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, missing);
        return NULL;
    }

    ngx_http_tent_store_value(op, value);

    json = ngx_http_tent_json_load(r, value);
    if (json == NULL) {
        *rc = ngx_http_tent_internal_error(r, step);
        return NULL;
    }

    return json;
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
