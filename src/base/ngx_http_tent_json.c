
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * JSON replies and the {"error": "..."} body every failure carries;
 * the reply a handler ends with after a store write.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_shm.h"


#define NGX_HTTP_TENT_JSON_FLAGS                                             \
    (JSON_COMPACT|JSON_PRESERVE_ORDER|JSON_ENCODE_ANY)


typedef struct {
    ngx_uint_t                      status;
    const char                     *text;
} ngx_http_tent_status_text_t;


static ngx_http_tent_status_text_t  ngx_http_tent_status_texts[] = {
    { NGX_HTTP_BAD_REQUEST, "Bad Request" },
    { NGX_HTTP_UNAUTHORIZED, "Unauthorized" },
    { NGX_HTTP_FORBIDDEN, "Forbidden" },
    { NGX_HTTP_NOT_FOUND, "Not Found" },
    { NGX_HTTP_NOT_ALLOWED, "Method Not Allowed" },
    { 406, "Not Acceptable" },
    { NGX_HTTP_REQUEST_TIME_OUT, "Request Timeout" },
    { NGX_HTTP_CONFLICT, "Conflict" },
    { NGX_HTTP_LENGTH_REQUIRED, "Length Required" },
    { NGX_HTTP_PRECONDITION_FAILED, "Precondition Failed" },
    { NGX_HTTP_REQUEST_ENTITY_TOO_LARGE, "Request Entity Too Large" },
    { NGX_HTTP_REQUEST_URI_TOO_LARGE, "Request-URI Too Large" },
    { NGX_HTTP_UNSUPPORTED_MEDIA_TYPE, "Unsupported Media Type" },
    { 422, "Unprocessable Entity" },
    { 429, "Too Many Requests" },
    { NGX_HTTP_INTERNAL_SERVER_ERROR, "Internal Server Error" },
    { NGX_HTTP_NOT_IMPLEMENTED, "Not Implemented" },
    { NGX_HTTP_BAD_GATEWAY, "Bad Gateway" },
    { NGX_HTTP_SERVICE_UNAVAILABLE, "Service Unavailable" },
    { NGX_HTTP_GATEWAY_TIME_OUT, "Gateway Timeout" },
    { 0, NULL }
};


const char *
ngx_http_tent_status_text(ngx_uint_t status)
{
    ngx_http_tent_status_text_t  *st;

    for (st = ngx_http_tent_status_texts; st->text; st++) {
        if (st->status == status) {
            return st->text;
        }
    }

    return (status >= 500) ? "Server Error" : "Client Error";
}


/*
 * One pass of the encoder into a buffer that grows: json_dumpb() would
 * need two, one to learn the size and one to write, and encoding is a
 * large part of what a write costs.
 */

typedef struct {
    ngx_pool_t  *pool;
    u_char      *start;
    u_char      *pos;
    u_char      *end;
} ngx_http_tent_dump_t;


static int
ngx_http_tent_json_dump_piece(const char *buf, size_t size, void *data)
{
    ngx_http_tent_dump_t *d = data;

    size_t   n, used;
    u_char  *p;

    if ((size_t) (d->end - d->pos) < size) {
        used = d->pos - d->start;
        n = ngx_max(2 * (size_t) (d->end - d->start), used + size);

        p = ngx_pnalloc(d->pool, n);
        if (p == NULL) {
            return -1;
        }

        ngx_memcpy(p, d->start, used);
        (void) ngx_pfree(d->pool, d->start);

        d->start = p;
        d->pos = p + used;
        d->end = p + n;
    }

    d->pos = ngx_cpymem(d->pos, buf, size);

    return 0;
}


ngx_int_t
ngx_http_tent_json_dump(ngx_pool_t *pool, json_t *json, ngx_str_t *out)
{
    ngx_http_tent_dump_t  d;

    d.pool = pool;
    d.start = ngx_pnalloc(pool, 1024);
    if (d.start == NULL) {
        return NGX_ERROR;
    }

    d.pos = d.start;
    d.end = d.start + 1024;

    if (json_dump_callback(json, ngx_http_tent_json_dump_piece, &d,
                           NGX_HTTP_TENT_JSON_FLAGS)
        != 0
        || d.pos == d.start)
    {
        return NGX_ERROR;
    }

    out->data = d.start;
    out->len = d.pos - d.start;

    return NGX_OK;
}


json_t *
ngx_http_tent_json_parse(ngx_str_t *s, ngx_log_t *log)
{
    json_t        *json;
    json_error_t   err;

    json = json_loadb((const char *) s->data, s->len, JSON_REJECT_DUPLICATES,
                      &err);

    if (json == NULL && log) {
        ngx_log_error(NGX_LOG_INFO, log, 0, "tent: invalid JSON: %s at %d",
                      err.text, err.position);
    }

    return json;
}


json_t *
ngx_http_tent_json_string(ngx_str_t *s)
{
    return json_stringn_nocheck((const char *) s->data, s->len);
}


ngx_int_t
ngx_http_tent_error_body(ngx_pool_t *pool, ngx_uint_t status,
    const char *message, ngx_str_t *out)
{
    json_t     *json;
    ngx_int_t   rc;

    if (message == NULL) {
        message = ngx_http_tent_status_text(status);
    }

    json = json_pack("{s:s}", "error", message);
    if (json == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_tent_json_dump(pool, json, out);

    json_decref(json);

    return rc;
}




ngx_int_t
ngx_http_tent_send_body(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *body)
{
    ngx_int_t             rc;
    ngx_buf_t            *b;
    ngx_chain_t           out;
    ngx_str_t             one = ngx_string("1");
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);
    if (ctx) {
        ctx->own_reply = 1;
    }

    /*
     * A reply before the body was read (a POST refused for its signature,
     * a PUT of an unknown id): the body goes, or on a kept-alive
     * connection it would be read as the next request.
     */

    if (r == r->main && r->request_body == NULL && !r->discard_body
        && ngx_http_discard_request_body(r) != NGX_OK)
    {
        r->keepalive = 0;
    }

    /* a handler that knows better set its own Retry-After before */

    if (status == NGX_HTTP_SERVICE_UNAVAILABLE
        && ngx_http_tent_header_out(r, "Retry-After") == NULL
        && ngx_http_tent_add_header(r, "Retry-After", &one) != NGX_OK)
    {
        return NGX_ERROR;
    }

    r->headers_out.status = status;
    r->headers_out.content_length_n = body->len;
    ngx_str_set(&r->headers_out.content_type, NGX_HTTP_TENT_MEDIA_TYPE);
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = body->data;
    b->last = body->data + body->len;
    b->memory = 1;
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


ngx_int_t
ngx_http_tent_send_json(ngx_http_request_t *r, ngx_uint_t status,
    json_t *json)
{
    ngx_str_t  body;

    if (ngx_http_tent_json_dump(r->pool, json, &body) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "writing the JSON reply");
    }

    return ngx_http_tent_send_body(r, status, &body);
}


ngx_int_t
ngx_http_tent_send_error(ngx_http_request_t *r, ngx_uint_t status,
    const char *message)
{
    ngx_str_t  body;

    if (ngx_http_tent_error_body(r->pool, status, message, &body) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "writing the error reply");
    }

    return ngx_http_tent_send_body(r, status, &body);
}


/*
 * Every 500 of the module goes through here: the error log says, once and
 * at "error", which step of which request failed.  The caller returns
 * what this returns; callers up the chain pass it on without logging.
 */

ngx_int_t
ngx_http_tent_internal_error(ngx_http_request_t *r, const char *step)
{
    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "tent: %s failed", step);

    return NGX_HTTP_INTERNAL_SERVER_ERROR;
}


/* a string member, pointing into the JSON value's own memory */

ngx_int_t
ngx_http_tent_json_str(json_t *obj, const char *name, ngx_str_t *out)
{
    json_t  *v;

    v = json_object_get(obj, name);

    if (!json_is_string(v)) {
        ngx_str_null(out);
        return NGX_DECLINED;
    }

    out->data = (u_char *) json_string_value(v);
    out->len = json_string_length(v);

    return NGX_OK;
}


static void
ngx_http_tent_json_decref(void *data)
{
    json_decref(data);
}


/* release a JSON value with the pool */

ngx_int_t
ngx_http_tent_json_cleanup(ngx_pool_t *pool, json_t *json)
{
    ngx_pool_cleanup_t  *cln;

    cln = ngx_pool_cleanup_add(pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_tent_json_decref;
    cln->data = json;

    return NGX_OK;
}


/* a JSON value the pool releases; NULL (and nothing leaked) on failure */

json_t *
ngx_http_tent_json_own(ngx_pool_t *pool, json_t *json)
{
    if (json == NULL) {
        return NULL;
    }

    if (ngx_http_tent_json_cleanup(pool, json) != NGX_OK) {
        json_decref(json);
        return NULL;
    }

    return json;
}


/* a stored record, parsed and owned by the request */

json_t *
ngx_http_tent_json_load(ngx_http_request_t *r, ngx_str_t *value)
{
    return ngx_http_tent_json_own(r->pool,
                                  ngx_http_tent_json_parse(value,
                                                         r->connection->log));
}


static void ngx_http_tent_body_read(ngx_http_request_t *r);
static void ngx_http_tent_form_read(ngx_http_request_t *r);


/*
 * Read a JSON object body into ctx->body, then run "next".  The body's
 * size is bounded by client_max_body_size (a JSON 413 beyond it).
 */

/*
 * A bound of ours on a body as it arrives (ctx->body_max): a chunked
 * body has no length to refuse it by before it is read, and a route
 * anyone reaches (a mention, a follower's push) keeps far less than
 * client_max_body_size.  Over it: 413, as nginx's own chunked filter
 * answers client_max_body_size, and nothing more is kept.
 */

static ngx_http_request_body_filter_pt  ngx_http_tent_next_request_body_filter;


static ngx_int_t
ngx_http_tent_request_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_chain_t          *cl;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_tent_module);

    if (ctx == NULL || ctx->body_max == 0) {
        return ngx_http_tent_next_request_body_filter(r, in);
    }

    for (cl = in; cl; cl = cl->next) {
        ctx->body_seen += ngx_buf_size(cl->buf);
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent body: %O bytes of at most %O", ctx->body_seen,
                   ctx->body_max);

    if (ctx->body_seen > ctx->body_max) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent body: over %O bytes on a route that keeps no "
                      "more: refused as it arrives", ctx->body_max);
        return NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
    }

    return ngx_http_tent_next_request_body_filter(r, in);
}


ngx_int_t
ngx_http_tent_body_limit_init(ngx_conf_t *cf)
{
    ngx_http_tent_next_request_body_filter = ngx_http_top_request_body_filter;
    ngx_http_top_request_body_filter = ngx_http_tent_request_body_filter;

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_read_json(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_route_pt next)
{
    ngx_int_t  rc;

    ctx->route = (void *) next;

    rc = ngx_http_read_client_request_body(r, ngx_http_tent_body_read);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


/*
 * The request body in one piece, NUL-terminated, in the request's pool;
 * never NULL, "" when there is none.  An empty body (Content-Length: 0,
 * a chunked body of one last chunk) still comes as a buffer, of size 0
 * and with no memory behind it: such buffers are skipped, not copied
 * from (memcpy from NULL is undefined even for 0 bytes).
 */

ngx_int_t
ngx_http_tent_body_bytes(ngx_http_request_t *r, ngx_str_t *body)
{
    u_char       *p;
    off_t         len;
    ssize_t       n;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    len = 0;

    for (cl = r->request_body ? r->request_body->bufs : NULL; cl;
         cl = cl->next)
    {
        len += ngx_buf_size(cl->buf);
    }

    body->len = (size_t) len;
    body->data = ngx_pnalloc(r->pool, body->len + 1);
    if (body->data == NULL) {
        return NGX_ERROR;
    }

    p = body->data;

    for (cl = r->request_body ? r->request_body->bufs : NULL; cl;
         cl = cl->next)
    {
        b = cl->buf;

        if (ngx_buf_size(b) == 0) {
            continue;
        }

        /* as ngx_buf_size() counted it */

        if (ngx_buf_in_memory(b)) {
            p = ngx_cpymem(p, b->pos, b->last - b->pos);
            continue;
        }

        n = ngx_read_file(b->file, p, (size_t) (b->file_last - b->file_pos),
                          b->file_pos);
        if (n != b->file_last - b->file_pos) {
            return NGX_ERROR;
        }

        p += n;
    }

    *p = '\0';

    return NGX_OK;
}


/*
 * Split a multipart body: "body" becomes the JSON part (typed ...json, or
 * named "post"), ctx->parts the others.
 */

/* no body at all, or only JSON white space */

ngx_int_t
ngx_http_tent_body_blank(ngx_str_t *body)
{
    u_char  *p;

    for (p = body->data; p < body->data + body->len; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
            return 0;
        }
    }

    return 1;
}


static ngx_int_t
ngx_http_tent_body_parts(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_str_t *body, const char **error)
{
    ngx_int_t              rc;
    ngx_uint_t             i, found;
    ngx_array_t           *all;
    ngx_http_tent_part_t  *part, *file;

    all = ngx_array_create(r->pool, 4, sizeof(ngx_http_tent_part_t));
    ctx->parts = ngx_array_create(r->pool, 4, sizeof(ngx_http_tent_part_t));

    if (all == NULL || ctx->parts == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the form's parts");
    }

    rc = ngx_http_tent_multipart_parse(r->pool,
                                       &r->headers_in.content_type->value,
                                       body, all);

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "parsing the multipart body");
    }

    if (rc != NGX_OK) {
        *error = "Invalid multipart body";
        return NGX_HTTP_BAD_REQUEST;
    }

    found = 0;
    part = all->elts;

    for (i = 0; i < all->nelts; i++) {
        if (!found
            && ((part[i].type.len >= 4
                 && ngx_strncasecmp(part[i].type.data + part[i].type.len - 4,
                                    (u_char *) "json", 4) == 0)
                || (part[i].name.len == 4
                    && ngx_strncmp(part[i].name.data, "post", 4) == 0)))
        {
            *body = part[i].data;
            found = 1;
            continue;
        }

        file = ngx_array_push(ctx->parts);
        if (file == NULL) {
            return ngx_http_tent_internal_error(r, "keeping an attachment");
        }

        *file = part[i];
    }

    if (!found) {
        *error = "The multipart body has no post";
        return NGX_HTTP_BAD_REQUEST;
    }

    return NGX_OK;
}


static void
ngx_http_tent_body_read(ngx_http_request_t *r)
{
    json_t                  *json;
    ngx_int_t                rc;
    ngx_str_t                body;
    const char              *error;
    json_error_t             err;
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_route_pt   next;

    ctx = ngx_http_tent_get_ctx(r);
    next = (ngx_http_tent_route_pt) ctx->route;

    if (ngx_http_tent_body_bytes(r, &body) != NGX_OK) {
        rc = ngx_http_tent_internal_error(r, "reading the request body");
        goto done;
    }

    if (ngx_http_tent_body_blank(&body)) {
        rc = ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                      "Request body required");
        goto done;
    }

    /* a post with attachments: the JSON is one part, the files the rest */

    if (ctx->multipart && r->headers_in.content_type
        && r->headers_in.content_type->value.len > 10
        && ngx_strncasecmp(r->headers_in.content_type->value.data,
                           (u_char *) "multipart/", 10) == 0)
    {
        error = NULL;
        rc = ngx_http_tent_body_parts(r, ctx, &body, &error);

        if (rc == NGX_HTTP_BAD_REQUEST) {
            rc = ngx_http_tent_send_error(r, rc, error);
            goto done;
        }

        if (rc != NGX_OK) {
            goto done;
        }
    }

    json = json_loadb((char *) body.data, body.len, JSON_REJECT_DUPLICATES,
                      &err);

    if (json == NULL || !json_is_object(json)) {
        json_decref(json);
        rc = ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                      "Invalid JSON body");
        goto done;
    }

    if (ngx_http_tent_json_cleanup(r->pool, json) != NGX_OK) {
        json_decref(json);
        rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
        goto done;
    }

    ctx->body = json;

    rc = next(r, ctx);

done:

    ngx_http_finalize_request(r, rc);
}


/* a form body (application/x-www-form-urlencoded) into ctx->form */

ngx_int_t
ngx_http_tent_read_form(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_route_pt next)
{
    ngx_int_t  rc;

    ctx->route = (void *) next;

    rc = ngx_http_read_client_request_body(r, ngx_http_tent_form_read);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


static void
ngx_http_tent_form_read(ngx_http_request_t *r)
{
    ngx_int_t                rc;
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_route_pt   next;

    ctx = ngx_http_tent_get_ctx(r);
    next = (ngx_http_tent_route_pt) ctx->route;

    if (ngx_http_tent_body_bytes(r, &ctx->form) != NGX_OK) {
        ngx_http_finalize_request(r,
                                  ngx_http_tent_internal_error(r,
                                                      "reading the form"));
        return;
    }

    rc = next(r, ctx);

    ngx_http_finalize_request(r, rc);
}
