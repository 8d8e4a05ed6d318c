
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The executor's bytes: an operation as the store socket carries it
 * decoded into a request (ngx_http_tent_ldb_decode(), every length and
 * count checked against the buffer), and the answer's bytes written.
 * No LevelDB here: ngx_http_tent_store_leveldb.c runs what this decodes.
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_store_private.h"


static void ngx_http_tent_out_u32(ngx_http_tent_out_t *out, uint32_t v);
static ngx_int_t ngx_http_tent_in_u8(ngx_http_tent_in_t *in, ngx_uint_t *v);
static ngx_int_t ngx_http_tent_in_u32(ngx_http_tent_in_t *in, uint32_t *v);
static ngx_int_t ngx_http_tent_file_name_ok(ngx_str_t *name);
static ngx_int_t ngx_http_tent_in_batch(ngx_http_tent_in_t *in,
    ngx_http_tent_ldb_req_t *rq, ngx_uint_t files);


void
ngx_http_tent_out_put(ngx_http_tent_out_t *out, const void *data, size_t n)
{
    size_t   size;
    u_char  *p;

    if (out->failed) {
        return;
    }

    if (out->len + n > out->size) {
        size = ngx_max(out->size * 2, out->len + n);
        size = ngx_max(size, 4096);      /* a batch's answer: few reallocs */

        p = realloc(out->data, size);
        if (p == NULL) {
            out->failed = 1;
            return;
        }

        out->data = p;
        out->size = size;
    }

    if (n) {
        ngx_memcpy(out->data + out->len, data, n);
        out->len += n;
    }
}


static void
ngx_http_tent_out_u32(ngx_http_tent_out_t *out, uint32_t v)
{
    u_char  b[4];

    b[0] = (u_char) (v >> 24);
    b[1] = (u_char) (v >> 16);
    b[2] = (u_char) (v >> 8);
    b[3] = (u_char) v;

    ngx_http_tent_out_put(out, b, 4);
}


void
ngx_http_tent_out_str(ngx_http_tent_out_t *out, const char *s, size_t n)
{
    ngx_http_tent_out_u32(out, (uint32_t) n);
    ngx_http_tent_out_put(out, s, n);
}


void
ngx_http_tent_out_status(ngx_http_tent_out_t *out, ngx_uint_t status)
{
    out->len = 0;
    out->data[0] = (u_char) status;
    out->len = 1;
}


void
ngx_http_tent_out_error(ngx_http_tent_out_t *out, const char *message)
{
    ngx_http_tent_out_status(out, NGX_HTTP_TENT_STORE_ERROR);
    ngx_http_tent_out_put(out, message, ngx_strlen(message));
}


static ngx_int_t
ngx_http_tent_in_u8(ngx_http_tent_in_t *in, ngx_uint_t *v)
{
    if (in->last - in->pos < 1) {
        return NGX_ERROR;
    }

    *v = *in->pos++;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_in_u32(ngx_http_tent_in_t *in, uint32_t *v)
{
    u_char  *p;

    if (in->last - in->pos < 4) {
        return NGX_ERROR;
    }

    p = in->pos;
    *v = ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16)
         | ((uint32_t) p[2] << 8) | p[3];
    in->pos += 4;

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_in_str(ngx_http_tent_in_t *in, ngx_str_t *s)
{
    uint32_t  n;

    if (ngx_http_tent_in_u32(in, &n) != NGX_OK
        || (size_t) (in->last - in->pos) < n)
    {
        return NGX_ERROR;
    }

    s->len = n;
    s->data = in->pos;
    in->pos += n;

    return NGX_OK;
}


int
ngx_http_tent_key_cmp(const char *a, size_t alen, ngx_str_t *b)
{
    int  rc;

    rc = memcmp(a, b->data, ngx_min(alen, b->len));

    if (rc != 0) {
        return rc;
    }

    return (alen < b->len) ? -1 : (alen > b->len);
}


/*
 * An attachment file's name: the entity's hash and the digest, 96
 * lowercase hex digits (ngx_http_tent_store_file_name()); nothing else
 * may reach a path.
 */

static ngx_int_t
ngx_http_tent_file_name_ok(ngx_str_t *name)
{
    return ngx_http_tent_hex_valid(name, NGX_HTTP_TENT_FILE_NAME_LEN);
}


/* one put or delete of a batch, or an attachment file's */

ngx_int_t
ngx_http_tent_in_entry(ngx_http_tent_in_t *in, ngx_uint_t *kind,
    ngx_str_t *key, ngx_str_t *value)
{
    if (ngx_http_tent_in_u8(in, kind) != NGX_OK
        || ngx_http_tent_in_str(in, key) != NGX_OK)
    {
        return NGX_ERROR;
    }

    switch (*kind) {

    case NGX_HTTP_TENT_WRITE_PUT:
        return ngx_http_tent_in_str(in, value);

    case NGX_HTTP_TENT_WRITE_DEL:
        return NGX_OK;

    case NGX_HTTP_TENT_WRITE_FILE:
        return (ngx_http_tent_file_name_ok(key) == NGX_OK)
               ? ngx_http_tent_in_str(in, value) : NGX_ERROR;

    case NGX_HTTP_TENT_WRITE_UNLINK:
        return ngx_http_tent_file_name_ok(key);

    default:
        return NGX_ERROR;
    }
}


/*
 * "u32 n, n x (PUT key value | DEL key)" to the end of the input; a
 * compare-and-set's ("files") may also write or remove attachment files
 */

static ngx_int_t
ngx_http_tent_in_batch(ngx_http_tent_in_t *in, ngx_http_tent_ldb_req_t *rq,
    ngx_uint_t files)
{
    uint32_t    i;
    ngx_str_t   key, value;
    ngx_uint_t  kind;

    if (ngx_http_tent_in_u32(in, &rq->n) != NGX_OK) {
        return NGX_ERROR;
    }

    rq->items = *in;

    for (i = 0; i < rq->n; i++) {
        if (ngx_http_tent_in_entry(in, &kind, &key, &value) != NGX_OK) {
            return NGX_ERROR;
        }

        if (!files && kind != NGX_HTTP_TENT_WRITE_PUT
            && kind != NGX_HTTP_TENT_WRITE_DEL)
        {
            return NGX_ERROR;
        }
    }

    return (in->pos == in->last) ? NGX_OK : NGX_ERROR;
}


/*
 * The one decoder of a request, "u8 op, u8 flags, arguments", for the
 * executor and the compare-and-set groups alike: the whole request is
 * checked before any of it runs.  NULL when it is well formed, else what
 * the reply says.
 */

const char *
ngx_http_tent_ldb_decode(u_char *req, size_t len, ngx_http_tent_ldb_req_t *rq)
{
    uint32_t            i;
    ngx_str_t           key;
    ngx_http_tent_in_t  in;

    ngx_memzero(rq, sizeof(ngx_http_tent_ldb_req_t));

    in.pos = req;
    in.last = req + len;

    if (ngx_http_tent_in_u8(&in, &rq->op) != NGX_OK
        || ngx_http_tent_in_u8(&in, &rq->flags) != NGX_OK)
    {
        return "malformed request";
    }

    switch (rq->op) {

    case NGX_HTTP_TENT_OP_GET:
        if (ngx_http_tent_in_str(&in, &rq->key) != NGX_OK
            || in.pos != in.last)
        {
            return "malformed get";
        }

        return NULL;

    case NGX_HTTP_TENT_OP_CAS:
        if (ngx_http_tent_in_str(&in, &rq->key) != NGX_OK
            || ngx_http_tent_in_u8(&in, &rq->has) != NGX_OK
            || (rq->has && ngx_http_tent_in_str(&in, &rq->expected) != NGX_OK)
            || ngx_http_tent_in_str(&in, &rq->value) != NGX_OK
            || ngx_http_tent_in_batch(&in, rq, 1) != NGX_OK)
        {
            return "malformed cas";
        }

        return NULL;

    case NGX_HTTP_TENT_OP_WRITE:
        if (ngx_http_tent_in_batch(&in, rq, 0) != NGX_OK) {
            return "malformed write";
        }

        return NULL;

    case NGX_HTTP_TENT_OP_SCAN:
        if (ngx_http_tent_in_str(&in, &rq->start) != NGX_OK
            || ngx_http_tent_in_str(&in, &rq->end) != NGX_OK
            || ngx_http_tent_in_u32(&in, &rq->limit) != NGX_OK
            || ngx_http_tent_in_u8(&in, &rq->reverse) != NGX_OK
            || in.pos != in.last)
        {
            return "malformed scan";
        }

        return NULL;

    case NGX_HTTP_TENT_OP_MGET:
        if (ngx_http_tent_in_u32(&in, &rq->n) != NGX_OK || rq->n > 100000) {
            return "malformed mget";
        }

        rq->items = in;

        for (i = 0; i < rq->n; i++) {
            if (ngx_http_tent_in_str(&in, &key) != NGX_OK) {
                return "malformed mget";
            }
        }

        return (in.pos == in.last) ? NULL : "malformed mget";

    default:
        return "unknown operation";
    }
}
