
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * GET and HEAD /posts/:id/attachments/:name, as nginx serves a file:
 * the post is read and its permissions checked on every request, then
 * the bytes are the file the store keeps for the digest
 * (ngx_http_tent_store_files.c), opened here and sent with sendfile, not
 * copied through the store socket.  ETag is the digest, so If-None-Match
 * answers 304 and nginx's range filter answers Range.  Bytes stored
 * before files (a "b" row) are read through the store as before.
 */


#define NGX_HTTP_TENT_POSTS_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_posts_private.h"
#include "ngx_http_tent_store.h"


/* images and media may show themselves; nothing else loads or runs */
#define NGX_HTTP_TENT_ATTACHMENT_CSP                                          \
    "default-src 'none'; img-src 'self'; media-src 'self'; "                  \
    "style-src 'unsafe-inline'; sandbox"

/*
 * A public post's attachment may be cached by anyone, and revalidated
 * cheaply (the ETag is the digest) once this is over; a day bounds how
 * long a cache keeps one whose post was made private or deleted, or
 * whose name a new version gave other bytes.
 */
#define NGX_HTTP_TENT_ATTACHMENT_PUBLIC                                       \
    "public, max-age=86400, immutable"


static ngx_int_t ngx_http_tent_attachment_file(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *digest);
static ngx_int_t ngx_http_tent_post_blob_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


/*
 * GET /posts/:id/attachments/:name: the post first (it must be visible),
 * then the bytes, with the attachment's type; an Accept other than "any"
 * must name that type exactly, as tentd did.
 */

ngx_int_t
ngx_http_tent_post_attachment(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    u_char                      *dst, *src;
    ngx_int_t                    rc;
    ngx_str_t                    name;
    ngx_http_tent_post_state_t  *st;

    name = ctx->params[ctx->nparams - 1];
    ctx->nparams--;

    rc = ngx_http_tent_post_get(r, ctx);

    if (rc != NGX_DONE) {
        return rc;
    }

    st = ctx->state;

    st->attachment.data = ngx_pnalloc(r->pool, name.len);
    if (st->attachment.data == NULL) {
        return ngx_http_tent_internal_error(r,
                   "decoding the attachment's name");
    }

    dst = st->attachment.data;
    src = name.data;
    ngx_unescape_uri(&dst, &src, name.len, 0);
    st->attachment.len = dst - st->attachment.data;

    return rc;
}


/*
 * Any app with write_posts uploads attachments, and they are served from
 * the entity's origin, next to the authorize page: none may run there.
 * All are sandboxed (no script, an opaque origin, nothing loaded), and
 * only types a browser shows as inert images, sound, video or text are
 * shown inline; the others (HTML, SVG, XML, scripts, PDF, unknown) are
 * downloads.
 */

static ngx_str_t  ngx_http_tent_inline_types[] = {
    ngx_string("image/png"),
    ngx_string("image/jpeg"),
    ngx_string("image/gif"),
    ngx_string("image/webp"),
    ngx_string("image/avif"),
    ngx_string("image/bmp"),
    ngx_string("audio/mpeg"),
    ngx_string("audio/mp4"),
    ngx_string("audio/aac"),
    ngx_string("audio/ogg"),
    ngx_string("audio/wav"),
    ngx_string("audio/webm"),
    ngx_string("audio/flac"),
    ngx_string("video/mp4"),
    ngx_string("video/webm"),
    ngx_string("video/ogg"),
    ngx_string("text/plain"),
    ngx_null_string
};


static ngx_uint_t
ngx_http_tent_attachment_inline(ngx_str_t *type)
{
    u_char     *p, *last;
    ngx_str_t  *t;

    p = type->data;
    last = p + type->len;

    /* of "image/png, text/html" a browser takes the last type */

    if (ngx_strlchr(p, last, ',')) {
        return 0;
    }

    while (p < last && (*p == ' ' || *p == '\t')) {
        p++;
    }

    last = ngx_strlchr(p, last, ';');
    if (last == NULL) {
        last = type->data + type->len;
    }

    while (last > p && (last[-1] == ' ' || last[-1] == '\t')) {
        last--;
    }

    for (t = ngx_http_tent_inline_types; t->len; t++) {
        if ((size_t) (last - p) == t->len
            && ngx_strncasecmp(p, t->data, t->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


static ngx_int_t
ngx_http_tent_attachment_headers(ngx_http_request_t *r, ngx_str_t *type,
    ngx_str_t *name)
{
    u_char           *p, *s;
    ngx_table_elt_t  *h;

    static u_char  hex[] = "0123456789ABCDEF";

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Content-Security-Policy");
    ngx_str_set(&h->value, NGX_HTTP_TENT_ATTACHMENT_CSP);

    if (ngx_http_tent_attachment_inline(type)) {
        return NGX_OK;
    }

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    /* the name as RFC 6266's filename*: anything but a few bytes escaped */

    p = ngx_pnalloc(r->pool, sizeof("attachment; filename*=UTF-8''") - 1
                             + 3 * name->len);
    if (p == NULL) {
        h->hash = 0;
        return NGX_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Content-Disposition");
    h->value.data = p;

    p = ngx_cpymem(p, "attachment; filename*=UTF-8''",
                   sizeof("attachment; filename*=UTF-8''") - 1);

    for (s = name->data; s < name->data + name->len; s++) {
        if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')
            || (*s >= '0' && *s <= '9') || *s == '.' || *s == '-'
            || *s == '_' || *s == '~')
        {
            *p++ = *s;
            continue;
        }

        *p++ = '%';
        *p++ = hex[*s >> 4];
        *p++ = hex[*s & 0x0f];
    }

    h->value.len = p - h->value.data;

    return NGX_OK;
}



/* ETag: the digest; Cache-Control: public for a public post, else private */

static ngx_int_t
ngx_http_tent_attachment_cache_headers(ngx_http_request_t *r,
    ngx_str_t *digest, ngx_uint_t public)
{
    u_char           *p;
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    p = ngx_pnalloc(r->pool, digest->len + 2);
    if (p == NULL) {
        h->hash = 0;
        return NGX_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "ETag");
    h->value.data = p;
    h->value.len = ngx_sprintf(p, "\"%V\"", digest) - p;

    /* nginx's not_modified filter answers If-None-Match with it */
    r->headers_out.etag = h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Cache-Control");

    if (public) {
        ngx_str_set(&h->value, NGX_HTTP_TENT_ATTACHMENT_PUBLIC);

    } else {
        ngx_str_set(&h->value, "private");
    }

    return NGX_OK;
}


/* the headers every attachment answer has, the bytes' length apart */

static ngx_int_t
ngx_http_tent_attachment_start(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, off_t length)
{
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    if (ngx_http_tent_attachment_headers(r, &st->attachment_type,
                                         &st->attachment)
        != NGX_OK
        || ngx_http_tent_attachment_cache_headers(r, &st->attachment_digest,
                                                  st->attachment_public)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    ctx->own_reply = 1;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = length;
    r->headers_out.content_type = st->attachment_type;
    r->headers_out.content_type_len = st->attachment_type.len;

    /*
     * Range, through nginx's range filter: one range or several
     * (multipart/byteranges), at most max_ranges of them, and none when
     * they add up to more than the file (the whole file is sent then)
     */
    r->allow_ranges = 1;

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_post_blob(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    json_t *post)
{
    u_char                      *comma;
    size_t                       i;
    json_t                      *a;
    ngx_int_t                    rc;
    ngx_str_t                    name, type, accept, digest;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    ngx_str_null(&accept);

#if (NGX_HTTP_HEADERS)
    if (r->headers_in.accept) {
        accept = r->headers_in.accept->value;
    }
#endif

    comma = ngx_strlchr(accept.data, accept.data + accept.len, ',');
    if (comma) {
        accept.len = comma - accept.data;
    }

    if (accept.len == 3 && ngx_strncmp(accept.data, "*/*", 3) == 0) {
        accept.len = 0;
    }

    json_array_foreach(json_object_get(post, "attachments"), i, a) {
        if (ngx_http_tent_json_str(a, "name", &name) != NGX_OK
            || ngx_http_tent_json_str(a, "type", &type) != NGX_OK
            || ngx_http_tent_json_str(a, "digest", &digest) != NGX_OK
            || name.len != st->attachment.len
            || ngx_strncmp(name.data, st->attachment.data, name.len) != 0
            || (accept.len
                && (accept.len != type.len
                    || ngx_strncasecmp(accept.data, type.data, type.len)
                       != 0)))
        {
            continue;
        }

        /* a digest is 64 hex digits before it is a path, or a key */

        if (ngx_http_tent_store_digest_valid(&digest) != NGX_OK) {
            break;
        }

        st->attachment_type.data = ngx_pstrdup(r->pool, &type);
        st->attachment_digest.data = ngx_pstrdup(r->pool, &digest);

        if (st->attachment_type.data == NULL
            || st->attachment_digest.data == NULL)
        {
            return ngx_http_tent_internal_error(r,
                       "keeping the attachment's type");
        }

        st->attachment_type.len = type.len;
        st->attachment_digest.len = digest.len;
        st->attachment_public =
            json_is_true(json_object_get(json_object_get(post, "permissions"),
                                         "public"));

        rc = ngx_http_tent_attachment_file(r, ctx, &st->attachment_digest);

        if (rc != NGX_DECLINED) {
            return rc;
        }

        /* no file: bytes stored before files, in a "b" row */

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent posts: attachment %V: no file, "
                       "reading its bytes from the store", &digest);

        return ngx_http_tent_store_get_request(r, NGX_HTTP_TENT_TABLE_BLOB,
                                               &st->attachment_digest,
                                               ngx_http_tent_post_blob_loaded);
    }

    return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
}


/*
 * The file, as ngx_http_static_module sends one (open_file_cache
 * applies); NGX_DECLINED when there is none.  A file removed once it is
 * open is still read to its end; one removed before is a miss, then the
 * store says 404.
 */

static ngx_int_t
ngx_http_tent_attachment_file(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *digest)
{
    ngx_int_t                   rc;
    ngx_buf_t                  *b;
    ngx_str_t                   path;
    ngx_chain_t                 out;
    ngx_open_file_info_t        of;
    ngx_http_core_loc_conf_t   *clcf;
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_tent_module);
    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    if (ngx_http_tent_store_file_path(r->pool, &mcf->store_path,
                                      &ctx->entity, digest, &path)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "building the attachment's path");
    }

    ngx_memzero(&of, sizeof(ngx_open_file_info_t));

    of.read_ahead = clcf->read_ahead;
    of.directio = clcf->directio;
    of.valid = clcf->open_file_cache_valid;
    of.min_uses = clcf->open_file_cache_min_uses;
    of.errors = clcf->open_file_cache_errors;
    of.events = clcf->open_file_cache_events;

    if (ngx_open_cached_file(clcf->open_file_cache, &path, &of, r->pool)
        != NGX_OK)
    {
        if (of.err == NGX_ENOENT || of.err == NGX_ENOTDIR) {
            return NGX_DECLINED;
        }

        if (of.err) {
            ngx_log_error(NGX_LOG_CRIT, r->connection->log, of.err,
                          "%s \"%V\" failed", of.failed, &path);
        }

        return ngx_http_tent_internal_error(r, "opening the attachment");
    }

    if (!of.is_file) {
        ngx_log_error(NGX_LOG_CRIT, r->connection->log, 0,
                      "tent: \"%V\" is not a file", &path);
        return ngx_http_tent_internal_error(r, "opening the attachment");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent posts: attachment %V: file, %O bytes",
                   digest, of.size);

    if (ngx_http_tent_attachment_start(r, ctx, of.size) != NGX_OK) {
        return ngx_http_tent_internal_error(r,
                   "setting the attachment's headers");
    }

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->file = ngx_pcalloc(r->pool, sizeof(ngx_file_t));
    if (b->file == NULL) {
        return NGX_ERROR;
    }

    b->file_pos = 0;
    b->file_last = of.size;
    b->in_file = b->file_last ? 1 : 0;
    b->last_buf = 1;
    b->last_in_chain = 1;

    b->file->fd = of.fd;
    b->file->name = path;
    b->file->log = r->connection->log;
    b->file->directio = of.is_directio;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


static ngx_int_t
ngx_http_tent_post_blob_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t             rc;
    ngx_buf_t            *b;
    ngx_str_t             bytes;
    ngx_chain_t           out;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    ngx_http_tent_store_value(op, &bytes);

    if (ngx_http_tent_attachment_start(r, ctx, bytes.len) != NGX_OK) {
        return ngx_http_tent_internal_error(r,
                   "setting the attachment's headers");
    }

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = bytes.data;
    b->last = bytes.data + bytes.len;
    b->memory = bytes.len ? 1 : 0;
    b->last_buf = 1;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}
