
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The outbound client reading an answer: the receive buffer, grown up
 * to the limits (16k of headers, the fetch's max_response of body), and
 * nginx's own status line, header and chunked parsers run over it with
 * a zeroed request that only holds their state.  The parsers keep no
 * pointer into a buffer that grows: headers are parsed from the start
 * once their block is whole, chunks from an offset.  A whole answer is
 * handed back to ngx_http_tent_fetch.c: a redirect, or the outcome.
 */


#define NGX_HTTP_TENT_FETCH_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_fetch_private.h"


#define NGX_HTTP_TENT_FETCH_HEADER_MAX  16384


static ngx_int_t ngx_http_tent_fetch_parse(ngx_http_tent_fetch_t *f,
    ngx_uint_t eof);
static ngx_int_t ngx_http_tent_fetch_block(ngx_http_tent_fetch_t *f);
static ngx_int_t ngx_http_tent_fetch_headers(ngx_http_tent_fetch_t *f,
    ngx_uint_t eof);
static ngx_int_t ngx_http_tent_fetch_chunked(ngx_http_tent_fetch_t *f);
static ngx_uint_t ngx_http_tent_fetch_reusable(ngx_http_tent_fetch_t *f);


void
ngx_http_tent_fetch_recv(ngx_event_t *ev)
{
    size_t                       size, limit;
    ssize_t                      n;
    u_char                      *p;
    ngx_int_t                    rc;
    ngx_connection_t            *c;
    ngx_http_tent_fetch_t       *f;
    ngx_http_tent_fetch_full_t  *ff;

    c = ev->data;
    f = c->data;
    ff = ngx_http_tent_fetch_full(f);

    if (!ff->sent) {
        return;
    }

    limit = NGX_HTTP_TENT_FETCH_HEADER_MAX + f->max_response + 4096;

    for ( ;; ) {

        if (ff->in.last == ff->in.end) {

            /* grow; offsets, not pointers, survive this */

            size = ff->in.end - ff->in.start;
            size = size ? 2 * size : 4096;

            if (size > limit) {
                size = limit;
            }

            if ((size_t) (ff->in.end - ff->in.start) >= size) {
                ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_TOO_BIG);
                return;
            }

            p = ngx_pnalloc(ff->pool, size);
            if (p == NULL) {
                ngx_http_tent_fetch_error(f, "growing the receive buffer");
                return;
            }

            if (ff->in.start == NULL) {
                /* the first buffer: nothing to carry over */
                ff->in.pos = p;
                ff->in.last = p;

            } else {
                ff->in.pos = p + (ff->in.pos - ff->in.start);
                ff->in.last = ngx_cpymem(p, ff->in.start,
                                         ff->in.last - ff->in.start);
            }

            ff->in.start = p;
            ff->in.end = p + size;
        }

        n = c->recv(c, ff->in.last, ff->in.end - ff->in.last);

        if (n == NGX_AGAIN) {
            if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
                ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_CONNECT);
            }

            return;
        }

        /* a reused connection closed before any byte of the answer */

        if ((n == NGX_ERROR || n == 0) && ff->in.last == ff->in.start
            && ngx_http_tent_fetch_idle_resend(f) == NGX_OK)
        {
            return;
        }

        if (n == NGX_ERROR) {
            rc = ff->in.last > ff->in.start
                 ? ngx_http_tent_fetch_parse(f, 1) : NGX_ERROR;

            if (rc == NGX_OK) {
                break;
            }

            ngx_http_tent_fetch_finish(f, ff->in.last > ff->in.start
                                          ? NGX_HTTP_TENT_FETCH_INVALID
                                          : NGX_HTTP_TENT_FETCH_CONNECT);
            return;
        }

        if (n > 0) {
            ff->in.last += n;
        }

        rc = ngx_http_tent_fetch_parse(f, n == 0);

        if (rc == NGX_OK) {
            ff->keepalive = n > 0 && ngx_http_tent_fetch_reusable(f);
            break;
        }

        if (rc == NGX_AGAIN && n > 0) {
            continue;
        }

        ngx_http_tent_fetch_finish(f, rc == NGX_DECLINED
                                      ? NGX_HTTP_TENT_FETCH_TOO_BIG
                                      : NGX_HTTP_TENT_FETCH_INVALID);
        return;
    }

    /* a whole response */

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, ff->log, 0,
                   "tent fetch: answer from %V: status %ui, body %uz bytes",
                   ff->peer.name, f->status, f->body.len);

    if (f->status >= 300 && f->status < 400 && f->status != 304
        && f->redirects)
    {
        rc = ngx_http_tent_fetch_redirect(f);

        if (rc == NGX_OK) {
            return;
        }
    }

    ngx_http_tent_fetch_finish(f, NGX_HTTP_TENT_FETCH_OK);
}


/*
 * NGX_OK: the response is complete; NGX_AGAIN: more bytes are needed;
 * NGX_DECLINED: over a size limit; NGX_ERROR: not HTTP.  The status line
 * and headers are parsed again from the start until they are complete,
 * so no parser pointer outlives a buffer that grows.
 */

static ngx_int_t
ngx_http_tent_fetch_parse(ngx_http_tent_fetch_t *f, ngx_uint_t eof)
{
    off_t                        have;
    ngx_int_t                    rc;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    if (!ff->header_done) {
        rc = ngx_http_tent_fetch_headers(f, eof);

        if (rc == NGX_AGAIN) {
            if (ff->in.last - ff->in.start >= NGX_HTTP_TENT_FETCH_HEADER_MAX) {
                return NGX_DECLINED;
            }

            return eof ? NGX_ERROR : NGX_AGAIN;
        }

        if (rc != NGX_OK) {
            return rc;
        }

        if (ff->content_length > (off_t) f->max_response) {
            return NGX_DECLINED;
        }
    }

    if (ff->no_body) {
        return NGX_OK;
    }

    if (ff->chunked) {
        rc = ngx_http_tent_fetch_chunked(f);

        if (rc == NGX_AGAIN && eof) {
            return NGX_ERROR;
        }

        return rc;
    }

    have = ff->in.last - (ff->in.start + ff->body_offset);

    /*
     * With a Content-Length (checked against the limit above) bytes after
     * the body are not the body: whether they came in the same read must
     * not make the answer "too large"
     */

    if (ff->content_length >= 0) {
        if (have < ff->content_length) {
            return eof ? NGX_ERROR : NGX_AGAIN;
        }

        have = ff->content_length;

    } else if (have > (off_t) f->max_response) {
        return NGX_DECLINED;

    } else if (!eof) {
        return NGX_AGAIN;
    }

    f->body.data = ff->in.start + ff->body_offset;
    f->body.len = (size_t) have;

    return NGX_OK;
}


/*
 * Whether a whole header block (up to its empty line) is there after the
 * 1xx blocks already skipped.  Until it is, the block is not parsed: a
 * server that sends its headers a few bytes at a time would otherwise
 * have them parsed, and copied into the pool, once per read: the square
 * of their size in time and memory (1.7 GB for 16 KB sent byte by byte).
 * The bytes are looked at once; a block must start as a status line does.
 */

static ngx_int_t
ngx_http_tent_fetch_block(ngx_http_tent_fetch_t *f)
{
    u_char                      *p, *last, *start;
    size_t                       n;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    start = ff->in.start + ff->interim;
    last = ff->in.last;

    n = ngx_min((size_t) (last - start), sizeof("HTTP/") - 1);

    if (ngx_strncmp(start, "HTTP/", n) != 0) {
        return NGX_ERROR;
    }

    p = ff->in.start + ngx_max(ff->interim, ff->scanned);

    for ( /* void */ ; p < last; p++) {
        if (*p == LF
            && ((p + 1 < last && p[1] == LF)
                || (p + 2 < last && p[1] == CR && p[2] == LF)))
        {
            return NGX_OK;
        }
    }

    /* the last two bytes may begin the empty line */

    n = last - ff->in.start;
    ff->scanned = n > 2 ? n - 2 : 0;

    return NGX_AGAIN;
}


static ngx_int_t
ngx_http_tent_fetch_headers(ngx_http_tent_fetch_t *f, ngx_uint_t eof)
{
    ngx_int_t                    rc;
    ngx_buf_t                    b;
    ngx_table_elt_t             *h;
    ngx_http_status_t            status;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    if (ff->in.start == NULL) {
        return NGX_AGAIN;
    }

    if (!eof) {
        rc = ngx_http_tent_fetch_block(f);

        if (rc != NGX_OK) {
            return rc;
        }
    }

    ngx_memzero(&b, sizeof(ngx_buf_t));
    b.start = ff->in.start;
    b.pos = ff->in.start + ff->interim;
    b.last = ff->in.last;
    b.end = ff->in.end;

again:

    ngx_memzero(ff->hr, sizeof(ngx_http_request_t));
    ff->hr->connection = ff->peer.connection;

    ngx_memzero(&status, sizeof(ngx_http_status_t));

    rc = ngx_http_parse_status_line(ff->hr, &b, &status);

    if (rc != NGX_OK) {
        return rc == NGX_AGAIN ? NGX_AGAIN : NGX_ERROR;
    }

    /* nginx's parser takes any three digits: "000" is not a status */

    if (status.code < 100) {
        return NGX_ERROR;
    }

    f->status = status.code;
    ff->http11 = status.http_version >= NGX_HTTP_VERSION_11;
    ff->conn_close = 0;
    ff->content_length = -1;
    ff->chunked = 0;

    if (ngx_array_init(&f->headers, ff->pool, 8, sizeof(ngx_table_elt_t))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    for ( ;; ) {
        ff->hr->state = 0;
        ff->hr->invalid_header = 0;

        rc = ngx_http_parse_header_line(ff->hr, &b, 1);

        if (rc == NGX_AGAIN) {
            f->headers.nelts = 0;
            return NGX_AGAIN;
        }

        if (rc == NGX_HTTP_PARSE_HEADER_DONE) {
            break;
        }

        if (rc != NGX_OK || ff->hr->invalid_header) {
            return NGX_ERROR;
        }

        h = ngx_array_push(&f->headers);
        if (h == NULL) {
            return NGX_ERROR;
        }

        h->hash = 1;
        h->key.len = ff->hr->header_name_end - ff->hr->header_name_start;
        h->value.len = ff->hr->header_end - ff->hr->header_start;

        h->key.data = ngx_pnalloc(ff->pool, 2 * h->key.len + h->value.len + 1);
        if (h->key.data == NULL) {
            return NGX_ERROR;
        }

        h->lowcase_key = h->key.data + h->key.len;
        h->value.data = h->lowcase_key + h->key.len;

        ngx_memcpy(h->key.data, ff->hr->header_name_start, h->key.len);
        ngx_strlow(h->lowcase_key, h->key.data, h->key.len);
        ngx_memcpy(h->value.data, ff->hr->header_start, h->value.len);
        h->value.data[h->value.len] = '\0';

        if (h->key.len == sizeof("content-length") - 1
            && ngx_strncmp(h->lowcase_key, "content-length", h->key.len) == 0)
        {
            ff->content_length = ngx_atoof(h->value.data, h->value.len);
            if (ff->content_length == NGX_ERROR) {
                return NGX_ERROR;
            }

        } else if (h->key.len == sizeof("transfer-encoding") - 1
                   && ngx_strncmp(h->lowcase_key, "transfer-encoding",
                                  h->key.len)
                      == 0)
        {
            if (ngx_strlcasestrn(h->value.data,
                                 h->value.data + h->value.len,
                                 (u_char *) "chunked", 7 - 1)
                == NULL)
            {
                return NGX_ERROR;
            }

            ff->chunked = 1;

        } else if (h->key.len == sizeof("connection") - 1
                   && ngx_strncmp(h->lowcase_key, "connection", h->key.len)
                      == 0
                   && ngx_strlcasestrn(h->value.data,
                                       h->value.data + h->value.len,
                                       (u_char *) "close", 5 - 1)
                      != NULL)
        {
            ff->conn_close = 1;
        }
    }

    if (ff->chunked) {
        ff->content_length = -1;
    }

    /* "100 Continue", "103 Early Hints": the answer comes after them */

    if (f->status < 200) {
        ff->interim = b.pos - ff->in.start;
        goto again;
    }

    ff->header_done = 1;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ff->log, 0,
                   "tent fetch: status %ui, %ui headers", f->status,
                   f->headers.nelts);
    ff->body_offset = b.pos - ff->in.start;
    ff->chunk_offset = ff->body_offset;

    ff->no_body = (f->method.len == 4
                   && ngx_strncmp(f->method.data, "HEAD", 4) == 0)
                  || f->status == 204 || f->status == 304;

    return NGX_OK;
}


/*
 * Chunked bodies are decoded into a buffer of their own, from where the
 * parser stopped last time; the parser's state holds no pointers.
 */

static ngx_int_t
ngx_http_tent_fetch_chunked(ngx_http_tent_fetch_t *f)
{
    off_t                        size;
    ngx_int_t                    rc;
    ngx_buf_t                    b;
    u_char                      *p;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    ngx_memzero(&b, sizeof(ngx_buf_t));
    b.start = ff->in.start;
    b.pos = ff->in.start + ff->chunk_offset;
    b.last = ff->in.last;
    b.end = ff->in.end;

    for ( ;; ) {
        rc = ngx_http_parse_chunked(ff->hr, &b, &ff->chunked_state);

        if (rc == NGX_OK) {
            size = ngx_min(ff->chunked_state.size, b.last - b.pos);

            if (f->body.len + size > f->max_response) {
                return NGX_DECLINED;
            }

            if (f->body.data == NULL) {
                f->body.data = ngx_pnalloc(ff->pool, f->max_response + 1);
                if (f->body.data == NULL) {
                    return NGX_ERROR;
                }
            }

            p = f->body.data + f->body.len;
            ngx_memcpy(p, b.pos, (size_t) size);

            f->body.len += size;
            b.pos += size;
            ff->chunked_state.size -= size;

            continue;
        }

        ff->chunk_offset = b.pos - ff->in.start;

        if (rc == NGX_DONE) {
            if (f->body.data == NULL) {
                ngx_str_set(&f->body, "");
            }

            return NGX_OK;
        }

        return rc == NGX_AGAIN ? NGX_AGAIN : NGX_ERROR;
    }
}


/*
 * Whether the connection may carry another request after this answer:
 * HTTP/1.1 without "Connection: close", a body whose end was known
 * (none, Content-Length, the last chunk) and not a byte after it.
 */

static ngx_uint_t
ngx_http_tent_fetch_reusable(ngx_http_tent_fetch_t *f)
{
    size_t                       used;
    ngx_http_tent_fetch_full_t  *ff;

    ff = ngx_http_tent_fetch_full(f);

    if (!ff->http11 || ff->conn_close) {
        return 0;
    }

    if (ff->no_body) {
        used = ff->body_offset;

    } else if (ff->chunked) {
        used = ff->chunk_offset;

    } else if (ff->content_length >= 0) {
        used = ff->body_offset + (size_t) ff->content_length;

    } else {
        return 0;
    }

    return used == (size_t) (ff->in.last - ff->in.start);
}
