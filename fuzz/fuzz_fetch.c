
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The outbound client's response parsing
 * (src/outbound/ngx_http_tent_fetch_parse.c): ngx_http_tent_fetch_parse() with
 * _headers() and _chunked(), over arbitrary bytes that arrive in pieces,
 * each piece moving the receive buffer to a new exact-size allocation as
 * ngx_http_tent_fetch_recv() does when it grows it (so a pointer kept
 * across pieces is a use-after-free ASan sees), then the end of the
 * stream.  The outcome and the body must not depend on where the pieces
 * were cut: the same bytes in one piece give the same.  A body found is
 * no larger than the limit, lies in the buffer or the chunked copy, and
 * has the Content-Length's size when there is one.  The fetch itself
 * comes from ngx_http_tent_fetch_create() (src/outbound/ngx_http_tent_fetch.c).
 * Input: byte 0 method (bit 0: HEAD) and limit (bits 1-3); byte 1 the
 * seed of the cut points; then the response bytes.
 */


#include "../src/outbound/ngx_http_tent_fetch.c"
#include "../src/outbound/ngx_http_tent_fetch_parse.c"

#include "fuzz.h"


static ngx_log_t  ngx_fuzz_quiet_log;


typedef struct {
    ngx_int_t   rc;
    ngx_uint_t  status;
    ngx_str_t   body;
    ngx_uint_t  nheaders;
} ngx_fuzz_outcome_t;


static void
ngx_fuzz_fetch_run(const uint8_t *data, size_t size, ngx_uint_t head,
    size_t limit, ngx_uint_t seed, ngx_uint_t split,
    ngx_fuzz_outcome_t *out)
{
    u_char                         *p;
    size_t                          have, piece, cap, span;
    ngx_int_t                       rc;
    ngx_pool_t                     *pool;
    ngx_http_request_t             *r;
    ngx_http_tent_fetch_t          *f;
    ngx_http_tent_fetch_full_t     *ff;
    ngx_http_tent_outbound_conf_t   conf;

    pool = ngx_create_pool(1024, &ngx_fuzz_log);
    if (pool == NULL) {
        abort();
    }

    ngx_memzero(&conf, sizeof(ngx_http_tent_outbound_conf_t));
    conf.max_response = limit;
    conf.timeout = 1000;

    f = ngx_http_tent_fetch_create(pool, &ngx_fuzz_log, &conf);
    if (f == NULL) {
        abort();
    }

    ff = ngx_http_tent_fetch_full(f);

    if (head) {
        ngx_str_set(&f->method, "HEAD");
    }

    r = ngx_fuzz_request(pool);
    ff->hr = ngx_pcalloc(pool, sizeof(ngx_http_request_t));
    if (ff->hr == NULL) {
        abort();
    }

    ff->peer.connection = r->connection;

    /*
     * nginx's parsers log to the connection's log: ngx_http_parse_chunked()
     * a debug message for every byte outside chunk data, formatted and
     * dropped, a quarter of the time.  The whole run formats them; the
     * run in pieces would format the same messages again, so there it
     * logs errors only.  The module's own messages go to f->log,
     * formatted in both runs.
     */

    if (split) {
        ngx_fuzz_quiet_log.log_level = NGX_LOG_DEBUG;
        r->connection->log = &ngx_fuzz_quiet_log;
    }

    /*
     * Pieces of 1 to 61 bytes for up to 976 bytes of input, as always;
     * beyond, of up to a sixteenth of it, some 32 pieces in all.  Each
     * piece copies the buffer and parses the status line and headers
     * again from the start, so pieces of at most 61 bytes made an input
     * cost the square of its length: inputs of 4 KB ran 3 times slower,
     * and a long run's corpus fills with them.
     */

    span = ngx_max(size / 16, 61);

    have = 0;
    rc = NGX_AGAIN;

    while (have < size) {
        piece = split ? 1 + (seed * 7 + have * 13) % span : size;
        seed = seed * 1103515245 + 12345;

        if (piece > size - have) {
            piece = size - have;
        }

        /* a new buffer of exactly what arrived so far, the old one freed */

        cap = have + piece;
        p = malloc(cap);
        if (p == NULL) {
            abort();
        }

        if (have) {
            ngx_memcpy(p, ff->in.start, have);
            free(ff->in.start);
        }

        ngx_memcpy(p + have, data + have, piece);
        ff->in.start = p;
        ff->in.pos = p;
        ff->in.last = p + cap;
        ff->in.end = p + cap;
        have = cap;

        rc = ngx_http_tent_fetch_parse(f, 0);

        if (rc != NGX_AGAIN) {
            break;
        }
    }

    if (rc == NGX_AGAIN) {
        rc = ngx_http_tent_fetch_parse(f, 1);
        ngx_fuzz_assert(rc != NGX_AGAIN);
    }

    ngx_fuzz_assert(rc == NGX_OK || rc == NGX_ERROR || rc == NGX_DECLINED);

    out->rc = rc;
    out->status = f->status;
    out->nheaders = ff->header_done ? f->headers.nelts : 0;
    out->body.len = 0;
    out->body.data = NULL;

    if (rc == NGX_OK) {
        ngx_fuzz_assert(ff->header_done);
        ngx_fuzz_assert(f->status >= 100 && f->status <= 999);
        ngx_fuzz_assert(f->body.len <= limit);

        if (ff->no_body) {
            ngx_fuzz_assert(f->body.len == 0);

        } else if (!ff->chunked) {
            ngx_fuzz_assert(f->body.data >= ff->in.start
                            && f->body.data + f->body.len <= ff->in.last);

            if (ff->content_length >= 0) {
                ngx_fuzz_assert((off_t) f->body.len == ff->content_length);
            }
        }

        if (f->body.len) {
            out->body.data = malloc(f->body.len);
            if (out->body.data == NULL) {
                abort();
            }

            ngx_memcpy(out->body.data, f->body.data, f->body.len);
            out->body.len = f->body.len;
        }
    }

    free(ff->in.start);
    ngx_destroy_pool(pool);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t              limit;
    ngx_uint_t          head, seed;
    ngx_fuzz_outcome_t  whole, pieces;

    static size_t  limits[8] = { 0, 1, 16, 100, 1000, 4096, 65536, 1048576 };

    if (size < 2) {
        return 0;
    }

    head = data[0] & 1;
    limit = limits[(data[0] >> 1) & 7];
    seed = data[1];
    data += 2;
    size -= 2;

    ngx_fuzz_fetch_run(data, size, head, limit, seed, 0, &whole);
    ngx_fuzz_fetch_run(data, size, head, limit, seed, 1, &pieces);

    ngx_fuzz_assert(whole.rc == pieces.rc);

    if (whole.rc == NGX_OK) {
        ngx_fuzz_assert(whole.status == pieces.status);
        ngx_fuzz_assert(whole.nheaders == pieces.nheaders);
        ngx_fuzz_assert(whole.body.len == pieces.body.len);
        ngx_fuzz_assert(whole.body.len == 0
                        || ngx_memcmp(whole.body.data, pieces.body.data,
                                      whole.body.len) == 0);
    }

    free(whole.body.data);
    free(pieces.body.data);

    return 0;
}
