
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_import_private.h"


/*
 * What an import checks in the store besides the emptiness scans
 * (docs/import.md): the keys its rows would write, looked up before any
 * batch is built (a credential row of this entity is never overwritten;
 * with ?merge=1, a row that exists is kept), and the marker row that
 * makes one import at a time per entity.
 */


static ngx_int_t ngx_http_tent_import_lookup_next(ngx_http_request_t *r,
    ngx_http_tent_import_t *im);
static ngx_int_t ngx_http_tent_import_looked_up(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_import_lock_try(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_str_t *expected);
static ngx_int_t ngx_http_tent_import_locked(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_import_unlocked(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


/*
 * Pass 1 notes a key a row would write: with ?merge=1 every one (but
 * the core's, written "as read"), else the credential rows only (the
 * emptiness scans and the marker cover the others).
 */

ngx_int_t
ngx_http_tent_import_note(ngx_http_request_t *r, ngx_http_tent_import_t *im,
    ngx_str_t *key)
{
    ngx_http_tent_import_check_t  *c;

    if (!im->merge && !im->credential) {
        return NGX_OK;
    }

    if (im->checks == NULL) {
        im->checks = ngx_array_create(r->pool, 64,
                                      sizeof(ngx_http_tent_import_check_t));
        if (im->checks == NULL) {
            return NGX_ERROR;
        }
    }

    c = ngx_array_push(im->checks);
    if (c == NULL) {
        return NGX_ERROR;
    }

    c->key = *key;
    c->section = im->cur;
    c->row = im->row;
    c->credential = im->credential;

    return NGX_OK;
}


/* the noted keys, a multi-get at a time; then "done" */

ngx_int_t
ngx_http_tent_import_lookup(ngx_http_request_t *r, ngx_http_tent_import_t *im,
    ngx_http_tent_request_done_pt done)
{
    im->next = done;
    im->checked = 0;

    return ngx_http_tent_import_lookup_next(r, im);
}


static ngx_int_t
ngx_http_tent_import_lookup_next(ngx_http_request_t *r,
    ngx_http_tent_import_t *im)
{
    ngx_uint_t                     i, n;
    ngx_http_tent_store_op_t      *op;
    ngx_http_tent_import_check_t  *c;

    if (im->checks == NULL || im->checked == im->checks->nelts) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent import: keys looked up");

        return im->next(r, NULL);
    }

    /*
     * merging, a found key brings its value back (a post's is large): a
     * few at a time keep the answer well within a store frame
     */

    c = im->checks->elts;
    n = im->merge ? NGX_HTTP_TENT_IMPORT_MGET_MERGE
                  : NGX_HTTP_TENT_IMPORT_MGET_MAX;
    n = ngx_min(im->checks->nelts - im->checked, n);

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL || ngx_http_tent_store_mget(op) != NGX_OK) {
        return ngx_http_tent_import_fail(r, im, "building the keys' lookup");
    }

    for (i = im->checked; i < im->checked + n; i++) {
        if (ngx_http_tent_store_mget_key(op, &c[i].key) != NGX_OK) {
            return ngx_http_tent_import_fail(r, im,
                       "building the keys' lookup");
        }
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent import: looking up keys %ui+%ui", im->checked, n);

    return ngx_http_tent_store_submit_request(r, op,
                                          ngx_http_tent_import_looked_up);
}


/* a found key marks its row: it exists here, or its key id is taken */

static ngx_int_t
ngx_http_tent_import_looked_up(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    size_t                         n;
    ngx_str_t                      value;
    ngx_uint_t                     found;
    ngx_http_tent_import_t        *im;
    ngx_http_tent_import_check_t  *c;

    im = ngx_http_tent_get_ctx(r)->state;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        im->step = "looking up the keys";
        return ngx_http_tent_import_finish(r, im,
                   ngx_http_tent_store_http_status(op), NULL);
    }

    c = im->checks->elts;

    while (im->checked < im->checks->nelts
           && ngx_http_tent_store_next_value(op, &found, &value) == NGX_OK)
    {
        if (found) {
            c = (ngx_http_tent_import_check_t *) im->checks->elts
                + im->checked;

            if (im->marks[c->section] == NULL) {
                n = json_array_size(json_object_get(im->doc,
                        ngx_http_tent_import_section_name(c->section)));

                im->marks[c->section] = ngx_pcalloc(r->pool, n + 1);
                if (im->marks[c->section] == NULL) {
                    return ngx_http_tent_import_fail(r, im,
                               "marking a row found");
                }
            }

            im->marks[c->section][c->row] |= c->credential
                                             ? NGX_HTTP_TENT_IMPORT_CREDENTIAL
                                             : NGX_HTTP_TENT_IMPORT_EXISTS;

            ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "tent import: section %ui row %uz: a key of "
                           "it exists (credential: %ui)", c->section,
                           c->row, c->credential);
        }

        im->checked++;
    }

    return ngx_http_tent_import_lookup_next(r, im);
}


/*
 * The marker row (META "import"): put "must be absent", so that of two
 * imports into one entity at once one waits for the other (409); one
 * older than NGX_HTTP_TENT_IMPORT_LOCK_TIME (a worker that died in an
 * import) is taken over, compared with what was read.
 */

ngx_int_t
ngx_http_tent_import_lock(ngx_http_request_t *r, ngx_http_tent_import_t *im,
    ngx_http_tent_request_done_pt done)
{
    u_char               *p;
    ngx_str_t             rest, token;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    ngx_str_set(&rest, "import");

    /* a token of this import: only the import that took it releases it */

    if (ngx_http_tent_random_hex(r->pool, 16, &token) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "building the import's marker");
    }

    p = ngx_pnalloc(r->pool, sizeof("{\"at\":,\"by\":\"\"}") + NGX_TIME_T_LEN
                             + token.len);

    if (p == NULL
        || ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_META,
                             &rest, &im->lock_key)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the import's marker");
    }

    im->lock_value.data = p;
    im->lock_value.len = ngx_sprintf(p, "{\"at\":%T,\"by\":\"%V\"}",
                                     ngx_time(), &token)
                         - p;
    im->next = done;

    return ngx_http_tent_import_lock_try(r, im, NULL);
}


static ngx_int_t
ngx_http_tent_import_lock_try(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_str_t *expected)
{
    ngx_http_tent_store_op_t  *op;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_cas(op, &im->lock_key, expected,
                                   &im->lock_value)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the import's marker");
    }

    im->lock_tries++;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_import_locked);
}


static ngx_int_t
ngx_http_tent_import_locked(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                  *other;
    ngx_str_t                value, *held;
    json_int_t               at;
    ngx_http_tent_import_t  *im;

    im = ngx_http_tent_get_ctx(r)->state;

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        im->locked = 1;

        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent import: the entity's import marker is ours");

        return im->next(r, NULL);
    }

    if (op->status != NGX_HTTP_TENT_STORE_CONFLICT
        || ngx_http_tent_store_value(op, &value) != NGX_OK)
    {
        return ngx_http_tent_send_error(r,
                                        ngx_http_tent_store_http_status(op),
                                        NULL);
    }

    other = ngx_http_tent_json_load(r, &value);
    at = json_integer_value(json_object_get(other, "at"));

    if (im->lock_tries == 1
        && at + NGX_HTTP_TENT_IMPORT_LOCK_TIME < (json_int_t) ngx_time())
    {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent import: taking over a stale import marker "
                      "of %L", (int64_t) at);

        held = ngx_palloc(r->pool, sizeof(ngx_str_t));
        if (held == NULL) {
            return ngx_http_tent_internal_error(r, "taking the marker");
        }

        *held = value;

        return ngx_http_tent_import_lock_try(r, im, held);
    }

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "tent import: another import into this entity is in "
                  "progress");

    return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
               "Another import into this entity is in progress");
}


/* a 500 of the import, naming its step once the marker is removed */

ngx_int_t
ngx_http_tent_import_fail(ngx_http_request_t *r, ngx_http_tent_import_t *im,
    const char *step)
{
    im->step = step;

    return ngx_http_tent_import_finish(r, im, NGX_HTTP_INTERNAL_SERVER_ERROR,
                                       NULL);
}


/*
 * The end of an import that holds the marker: the marker removed, then
 * the reply (reply NULL: status's error).  A worker that dies before
 * leaves it, taken over once stale.  Removed by compare-and-set on the
 * value this import wrote (its token): an import that ran past the
 * stale time, its marker taken over by another, leaves the other's.
 */

ngx_int_t
ngx_http_tent_import_finish(ngx_http_request_t *r, ngx_http_tent_import_t *im,
    ngx_uint_t status, json_t *reply)
{
    ngx_http_tent_store_op_t  *op;

    im->status = status;
    im->reply = reply;

    if (!im->locked) {
        return ngx_http_tent_import_unlocked(r, NULL);
    }

    im->locked = 0;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_cas(op, &im->lock_key, &im->lock_value,
                                   &im->lock_value)
           != NGX_OK
        || ngx_http_tent_store_write_del(op, &im->lock_key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "removing the import's marker");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_import_unlocked);
}


static ngx_int_t
ngx_http_tent_import_unlocked(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_import_t  *im;

    im = ngx_http_tent_get_ctx(r)->state;

    if (op && op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent import: the marker not removed (store status "
                      "%ui: another import took it over, or the store): "
                      "left as it is", op->status);
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent import: done, %ui", im->status);

    if (im->reply) {
        return ngx_http_tent_send_json(r, im->status, im->reply);
    }

    if (im->status == NGX_HTTP_INTERNAL_SERVER_ERROR) {
        return ngx_http_tent_internal_error(r, im->step);
    }

    return ngx_http_tent_send_error(r, im->status, NULL);
}
