
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The IPC frame parser, ngx_http_tent_ipc_frames(), fed the way
 * ngx_http_tent_ipc_read() feeds it: the stream arrives in pieces into
 * the connection's growable buffer (ngx_http_tent_bytes_reserve()), and
 * after each piece every whole frame ("u32 length, u32 id, payload") is
 * handed on.  The handlers are the module's own:
 *
 *   - the owner's, ngx_http_tent_ipc_server_request(), with the owner
 *     handing over (so it answers RETRY without touching the database):
 *     the replies it writes to conn->out are checked, one per frame,
 *     with the frame's id;
 *   - the client's, ngx_http_tent_ipc_client_frame(), with no request in
 *     flight: every reply is for an operation that timed out already.
 *
 * Input: byte 0 picks the side (bit 0) and the piece sizes (bits 1-7),
 * the rest is the stream.
 */


#include "../src/store/ngx_http_tent_store_ipc.c"
#include "../src/store/ngx_http_tent_store_ipc_client.c"
#include "../src/store/ngx_http_tent_store_owner.c"
#include "../src/store/ngx_http_tent_store_owner_exec.c"

#include "fuzz.h"


static ngx_uint_t  ngx_fuzz_frames;
static uint32_t    ngx_fuzz_ids[4096];


static ngx_int_t
ngx_fuzz_server_frame(ngx_http_tent_ipc_conn_t *conn, uint32_t id,
    u_char *data, size_t len)
{
    /* the frame lies in what was received, and was consumed */

    ngx_fuzz_assert(data >= conn->in.start && data + len <= conn->in.last);
    ngx_fuzz_assert(data + len == conn->in.pos);
    ngx_fuzz_assert(ngx_http_tent_ipc_u32(data - 8) == len + 4);
    ngx_fuzz_assert(ngx_http_tent_ipc_u32(data - 4) == id);

    if (ngx_fuzz_frames < sizeof(ngx_fuzz_ids) / sizeof(uint32_t)) {
        ngx_fuzz_ids[ngx_fuzz_frames] = id;
    }

    ngx_fuzz_frames++;

    return ngx_http_tent_ipc_server_request(conn, id, data, len);
}


static ngx_int_t
ngx_fuzz_client_frame(ngx_http_tent_ipc_conn_t *conn, uint32_t id,
    u_char *data, size_t len)
{
    ngx_fuzz_assert(data >= conn->in.start && data + len <= conn->in.last);
    ngx_fuzz_assert(data + len == conn->in.pos);

    ngx_fuzz_frames++;

    return ngx_http_tent_ipc_client_frame(conn, id, data, len);
}


/* what the owner wrote back: RETRY for each frame, in order */

static void
ngx_fuzz_check_replies(ngx_http_tent_ipc_conn_t *conn, ngx_uint_t first)
{
    u_char      *p;
    ngx_uint_t   i;

    p = conn->out.pos;

    for (i = first; i < ngx_fuzz_frames; i++) {
        ngx_fuzz_assert(conn->out.last - p >= 9);
        ngx_fuzz_assert(ngx_http_tent_ipc_u32(p) == 5);

        if (i < sizeof(ngx_fuzz_ids) / sizeof(uint32_t)) {
            ngx_fuzz_assert(ngx_http_tent_ipc_u32(p + 4) == ngx_fuzz_ids[i]);
        }

        ngx_fuzz_assert(p[8] == NGX_HTTP_TENT_STORE_RETRY);
        p += 9;
    }

    ngx_fuzz_assert(p == conn->out.last);

    /* as if ngx_http_tent_ipc_flush() sent it all */

    conn->out.pos = conn->out.start;
    conn->out.last = conn->out.start;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t                     piece, n, room;
    ngx_int_t                  rc;
    ngx_uint_t                 server, first;
    const uint8_t             *last;
    ngx_http_tent_store_t      store;
    ngx_http_tent_ipc_conn_t   conn;
    ngx_int_t                (*handler)(ngx_http_tent_ipc_conn_t *conn,
                                        uint32_t id, u_char *data,
                                        size_t len);

    if (size < 1) {
        return 0;
    }

    server = data[0] & 1;
    piece = (data[0] >> 1) ? (size_t) (data[0] >> 1) * 97 : (size_t) -1;
    data++;
    size--;
    last = data + size;

    ngx_memzero(&store, sizeof(ngx_http_tent_store_t));
    ngx_memzero(&conn, sizeof(ngx_http_tent_ipc_conn_t));

    /* the owner is handing over: no operation reaches the database */
    store.owner = 1;
    store.state = NGX_HTTP_TENT_OWNER_CLOSING;
    store.log = &ngx_fuzz_log;
    ngx_rbtree_init(&store.sent, &store.sent_sentinel,
                    ngx_rbtree_insert_value);

    conn.store = &store;
    conn.refs = 1;
    ngx_queue_init(&conn.queue);

    handler = server ? ngx_fuzz_server_frame : ngx_fuzz_client_frame;
    ngx_fuzz_frames = 0;
    rc = NGX_OK;

    while (data < last) {

        /* ngx_http_tent_ipc_read(): room for a chunk, then recv() */

        /*
         * What is buffered is less than one frame, and a frame may be
         * NGX_HTTP_TENT_MAX_FRAME long: there must be room for the rest.
         */

        ngx_fuzz_assert(ngx_http_tent_bytes_reserve(&conn.in,
                                                    NGX_HTTP_TENT_READ_CHUNK)
                        == NGX_OK);

        room = conn.in.end - conn.in.last;
        ngx_fuzz_assert(room >= NGX_HTTP_TENT_READ_CHUNK);

        n = ngx_min(ngx_min(piece, room), (size_t) (last - data));
        ngx_memcpy(conn.in.last, data, n);
        conn.in.last += n;
        data += n;

        first = ngx_fuzz_frames;

        rc = ngx_http_tent_ipc_frames(&conn, handler);

        ngx_fuzz_assert(conn.in.start <= conn.in.pos
                        && conn.in.pos <= conn.in.last
                        && conn.in.last <= conn.in.end);

        if (server) {
            ngx_fuzz_check_replies(&conn, first);
        }

        if (rc != NGX_OK) {
            break;
        }

        /* what is left is less than a whole frame */

        n = conn.in.last - conn.in.pos;

        if (n >= 8) {
            ngx_fuzz_assert(n < 4 + (size_t)
                                ngx_http_tent_ipc_u32(conn.in.pos));
        }
    }

    ngx_fuzz_assert(!conn.closed && conn.refs == 1);

    ngx_http_tent_bytes_free(&conn.in);
    ngx_http_tent_bytes_free(&conn.out);

    return 0;
}
