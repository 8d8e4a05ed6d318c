
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The store socket: a UNIX stream socket in the store directory.  The
 * owner listens; every worker keeps one connection to whoever listens on
 * the path now.  A frame is "u32 length, u32 id, bytes"; requests carry
 * an encoded operation, replies a status byte and the payload.  On a
 * reload the new owner binds the path anew; the old one answers RETRY to
 * what it can no longer serve, and clients reconnect to the new one.
 *
 * Here: a connection (its buffers, reads, writes and frames) and the
 * owner's side; a worker's client is ngx_http_tent_store_ipc_client.c.
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_store_private.h"
#include "ngx_http_tent_store_ipc.h"


#define NGX_HTTP_TENT_READ_CHUNK       16384
/* a connection's buffer bigger than this is freed once it is empty */
#define NGX_HTTP_TENT_IPC_KEEP         (1024 * 1024)


static void ngx_http_tent_ipc_accept(ngx_event_t *ev);
static void ngx_http_tent_ipc_accept_all(ngx_http_tent_store_t *store);
static void ngx_http_tent_ipc_server_read(ngx_event_t *ev);
static void ngx_http_tent_ipc_server_write(ngx_event_t *ev);
static ngx_int_t ngx_http_tent_ipc_server_request(
    ngx_http_tent_ipc_conn_t *conn, uint32_t id, u_char *data, size_t len);
static void ngx_http_tent_ipc_reply(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_ipc_handover_timer(ngx_event_t *ev);
static void ngx_http_tent_ipc_handover_check(ngx_http_tent_store_t *store);
static void ngx_http_tent_ipc_close_workers(ngx_http_tent_store_t *store);


static uint32_t
ngx_http_tent_ipc_u32(u_char *p)
{
    return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16)
           | ((uint32_t) p[2] << 8) | p[3];
}


static void
ngx_http_tent_ipc_put_u32(u_char *p, uint32_t v)
{
    p[0] = (u_char) (v >> 24);
    p[1] = (u_char) (v >> 16);
    p[2] = (u_char) (v >> 8);
    p[3] = (u_char) v;
}


ngx_int_t
ngx_http_tent_bytes_reserve(ngx_http_tent_bytes_t *b, size_t n)
{
    size_t   used, size;
    u_char  *p;

    if ((size_t) (b->end - b->last) >= n) {
        return NGX_OK;
    }

    used = b->last - b->pos;

    if (b->pos != b->start && (size_t) (b->end - b->start) >= used + n) {
        ngx_memmove(b->start, b->pos, used);
        b->pos = b->start;
        b->last = b->start + used;
        return NGX_OK;
    }

    /* the bounds are the callers': a frame, and a frame's worth read */

    size = ngx_max((size_t) (b->end - b->start) * 2, used + n);
    size = ngx_max(size, NGX_HTTP_TENT_READ_CHUNK);

    p = ngx_alloc(size, ngx_cycle->log);
    if (p == NULL) {
        return NGX_ERROR;
    }

    if (used) {
        ngx_memcpy(p, b->pos, used);
    }

    ngx_free(b->start);

    b->start = p;
    b->pos = p;
    b->last = p + used;
    b->end = p + size;

    return NGX_OK;
}


void
ngx_http_tent_bytes_free(ngx_http_tent_bytes_t *b)
{
    ngx_free(b->start);
    ngx_memzero(b, sizeof(ngx_http_tent_bytes_t));
}


ngx_int_t
ngx_http_tent_ipc_sockaddr(ngx_http_tent_store_t *store,
    struct sockaddr_un *sun)
{
    ngx_memzero(sun, sizeof(struct sockaddr_un));

    sun->sun_family = AF_UNIX;

    if (store->socket_path.len >= sizeof(sun->sun_path)) {
        return NGX_ERROR;
    }

    ngx_memcpy(sun->sun_path, store->socket_path.data,
               store->socket_path.len);

    return NGX_OK;
}


/*
 * Who listens on the path now, if it is not our nginx: another nginx on
 * the same store, whose owner serves its workers there.  0: nobody (a
 * stale file, no file), or one of ours (a reload, a binary upgrade);
 * -1: someone whose queue of connections is full (EAGAIN: a listener
 * that does not accept now, whose pid a refused connection cannot
 * tell): not ours to take while another holds the database.
 */

static ngx_pid_t
ngx_http_tent_ipc_stranger_listens(ngx_http_tent_store_t *store,
    struct sockaddr_un *sun)
{
    socklen_t      len;
    ngx_pid_t      pid;
    ngx_socket_t   s;
    struct ucred   cred;

    s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s == (ngx_socket_t) -1) {
        return 0;
    }

    pid = 0;
    len = sizeof(struct ucred);

    if (connect(s, (struct sockaddr *) sun, sizeof(struct sockaddr_un)) == 0)
    {
        if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0
            && !ngx_http_tent_store_kin(cred.pid))
        {
            pid = (cred.pid > 0) ? (ngx_pid_t) cred.pid : -1;
        }

    } else if (ngx_socket_errno == NGX_EAGAIN) {
        pid = -1;
    }

    (void) ngx_close_socket(s);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, store->log, 0,
                   "tent store: a stranger at \"%V\": %P",
                   &store->socket_path, pid);

    return pid;
}


/*
 * The owner side.  NGX_DECLINED: another nginx's owner listens on the
 * path (a second nginx on a store in use); its workers use it, so it is
 * left alone until we open the database ourselves
 * (ngx_http_tent_owner_opened() listens then).
 */

ngx_int_t
ngx_http_tent_ipc_listen(ngx_http_tent_store_t *store)
{
    ngx_pid_t            pid;
    ngx_socket_t         s;
    ngx_connection_t    *c;
    struct sockaddr_un   sun;

    if (ngx_http_tent_ipc_sockaddr(store, &sun) != NGX_OK) {
        ngx_log_error(NGX_LOG_EMERG, store->log, 0,
                      "tent store socket path \"%V\" is too long",
                      &store->socket_path);
        return NGX_ERROR;
    }

    /* once we hold the database, whoever listens has no store behind */

    if ((ngx_process == NGX_PROCESS_WORKER
         || ngx_process == NGX_PROCESS_SINGLE)
        && store->state != NGX_HTTP_TENT_OWNER_OPEN)
    {
        pid = ngx_http_tent_ipc_stranger_listens(store, &sun);

        if (pid > 0) {
            ngx_log_error(NGX_LOG_ERR, store->log, 0,
                          "tent store: another nginx (pid %P) listens on "
                          "\"%V\": the socket is left to it until we open "
                          "the store", pid, &store->socket_path);
            return NGX_DECLINED;
        }

        if (pid) {
            ngx_log_error(NGX_LOG_ERR, store->log, 0,
                          "tent store: another process listens on \"%V\" "
                          "and accepts nothing now (its queue is full): "
                          "the socket is left to it until we open the "
                          "store", &store->socket_path);
            return NGX_DECLINED;
        }
    }

    s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s == (ngx_socket_t) -1) {
        ngx_log_error(NGX_LOG_ALERT, store->log, ngx_socket_errno,
                      "tent store: socket() failed");
        return NGX_ERROR;
    }

    /*
     * a stale file, or the previous owner's (our nginx's, or nobody's
     * once we hold the database): the path is ours from now
     */

    (void) unlink(sun.sun_path);

    if (bind(s, (struct sockaddr *) &sun, sizeof(struct sockaddr_un)) == -1
        || chmod(sun.sun_path, 0600) == -1
        || listen(s, 511) == -1)
    {
        ngx_log_error(NGX_LOG_ALERT, store->log, ngx_socket_errno,
                      "tent store: cannot listen on \"%V\"",
                      &store->socket_path);
        (void) ngx_close_socket(s);
        return NGX_ERROR;
    }

    c = ngx_get_connection(s, store->log);
    if (c == NULL) {
        (void) ngx_close_socket(s);
        return NGX_ERROR;
    }

    c->data = store;
    c->read->handler = ngx_http_tent_ipc_accept;
    c->read->log = store->log;
    c->write->log = store->log;

    /*
     * "idle" makes ngx_close_idle_connections() call us with c->close set
     * the moment graceful shutdown begins: that is when the owner resigns.
     */

    c->idle = 1;

    if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
        ngx_close_connection(c);
        return NGX_ERROR;
    }

    store->listening = c;

    return NGX_OK;
}


void
ngx_http_tent_ipc_stop_listening(ngx_http_tent_store_t *store)
{
    if (store->listening) {
        /* closes the socket only: the path may be the new owner's now */
        ngx_close_connection(store->listening);
        store->listening = NULL;
    }
}


static void
ngx_http_tent_ipc_accept(ngx_event_t *ev)
{
    ngx_connection_t       *c;
    ngx_http_tent_store_t  *store;

    c = ev->data;
    store = c->data;

    if (c->close) {
        ngx_http_tent_owner_resign(store);
        return;
    }

    ngx_http_tent_ipc_accept_all(store);
}


/* every connection waiting in the backlog */

static void
ngx_http_tent_ipc_accept_all(ngx_http_tent_store_t *store)
{
    ngx_err_t                  err;
    ngx_socket_t               s;
    ngx_connection_t          *c;
    ngx_http_tent_ipc_conn_t  *conn;

    c = store->listening;

    for ( ;; ) {
        s = accept4(c->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (s == (ngx_socket_t) -1) {
            err = ngx_socket_errno;

            if (err == NGX_EAGAIN) {
                return;
            }

            if (err == NGX_ECONNABORTED || err == NGX_EINTR) {
                continue;
            }

            ngx_log_error(NGX_LOG_ALERT, store->log, err,
                          "tent store: accept() failed");
            return;
        }

        conn = ngx_http_tent_ipc_conn_create(store, s);
        if (conn == NULL) {
            (void) ngx_close_socket(s);
            continue;
        }

        conn->connection->read->handler = ngx_http_tent_ipc_server_read;
        conn->connection->write->handler = ngx_http_tent_ipc_server_write;

        ngx_queue_insert_tail(&store->conns, &conn->queue);

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, store->log, 0,
                       "tent store owner: a worker connected, fd:%d", s);

        if (ngx_handle_read_event(conn->connection->read, 0) != NGX_OK) {
            ngx_http_tent_ipc_conn_close(conn);
            continue;
        }

        ngx_http_tent_ipc_server_read(conn->connection->read);
    }
}


ngx_http_tent_ipc_conn_t *
ngx_http_tent_ipc_conn_create(ngx_http_tent_store_t *store, ngx_socket_t s)
{
    ngx_connection_t          *c;
    ngx_http_tent_ipc_conn_t  *conn;

    conn = ngx_calloc(sizeof(ngx_http_tent_ipc_conn_t), store->log);
    if (conn == NULL) {
        return NULL;
    }

    c = ngx_get_connection(s, store->log);
    if (c == NULL) {
        ngx_free(conn);
        return NULL;
    }

    c->recv = ngx_recv;
    c->send = ngx_send;
    c->data = conn;
    c->read->log = store->log;
    c->write->log = store->log;
    c->number = ngx_atomic_fetch_add(ngx_connection_counter, 1);

    conn->connection = c;
    conn->store = store;
    conn->refs = 1;
    ngx_queue_init(&conn->queue);

    return conn;
}


void
ngx_http_tent_ipc_conn_close(ngx_http_tent_ipc_conn_t *conn)
{
    if (conn->closed) {
        return;
    }

    conn->closed = 1;

    ngx_close_connection(conn->connection);
    conn->connection = NULL;

    ngx_http_tent_bytes_free(&conn->in);
    ngx_http_tent_bytes_free(&conn->out);

    if (!ngx_queue_empty(&conn->queue)) {
        /* a worker's connection to us, the owner */
        ngx_queue_remove(&conn->queue);
        ngx_queue_init(&conn->queue);

        ngx_http_tent_ipc_handover_check(conn->store);
    }

    ngx_http_tent_ipc_conn_release(conn);
}


/* operations still running hold the connection's memory, not its socket */

void
ngx_http_tent_ipc_conn_release(ngx_http_tent_ipc_conn_t *conn)
{
    if (--conn->refs == 0) {
        ngx_free(conn);
    }
}


/* NGX_OK: read what there is; NGX_DONE: the peer closed; NGX_ERROR */

ngx_int_t
ngx_http_tent_ipc_read(ngx_http_tent_ipc_conn_t *conn)
{
    ssize_t            n;
    ngx_connection_t  *c;

    c = conn->connection;

    for ( ;; ) {

        /*
         * More than a frame's worth (a frame is at most MAX_FRAME): the
         * frames read so far are parsed first, and we come back for the
         * rest.  The bound is on one frame, not on what the peer sent
         * behind it: big answers to many operations at once are no
         * reason to drop the connection with all of them.
         */

        if ((size_t) (conn->in.last - conn->in.pos)
            > NGX_HTTP_TENT_MAX_FRAME + 8)
        {
            ngx_log_debug0(NGX_LOG_DEBUG_HTTP, conn->store->log, 0,
                           "tent store: a frame's worth read, parsed first");

            ngx_post_event(c->read, &ngx_posted_events);
            return NGX_OK;
        }

        if (ngx_http_tent_bytes_reserve(&conn->in, NGX_HTTP_TENT_READ_CHUNK)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        n = c->recv(c, conn->in.last, conn->in.end - conn->in.last);

        if (n == NGX_AGAIN) {
            if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
                return NGX_ERROR;
            }

            return NGX_OK;
        }

        if (n == 0) {
            return NGX_DONE;
        }

        if (n == NGX_ERROR) {
            return NGX_ERROR;
        }

        conn->in.last += n;
    }
}


ngx_int_t
ngx_http_tent_ipc_flush(ngx_http_tent_ipc_conn_t *conn)
{
    ssize_t            n;
    ngx_connection_t  *c;

    c = conn->connection;

    while (conn->out.pos < conn->out.last) {
        n = c->send(c, conn->out.pos, conn->out.last - conn->out.pos);

        if (n == NGX_AGAIN) {
            if (ngx_handle_write_event(c->write, 0) != NGX_OK) {
                return NGX_ERROR;
            }

            return NGX_AGAIN;
        }

        if (n == NGX_ERROR) {
            return NGX_ERROR;
        }

        conn->out.pos += n;
    }

    /* a burst of big answers does not keep its buffer for good */

    if ((size_t) (conn->out.end - conn->out.start)
        > NGX_HTTP_TENT_IPC_KEEP)
    {
        ngx_http_tent_bytes_free(&conn->out);
        return NGX_OK;
    }

    conn->out.pos = conn->out.start;
    conn->out.last = conn->out.start;

    return NGX_OK;
}


/* a frame: u32 length of the rest, u32 id, [status byte], data */

ngx_int_t
ngx_http_tent_ipc_frame(ngx_http_tent_ipc_conn_t *conn, uint32_t id,
    ngx_int_t status, u_char *data, size_t len)
{
    size_t   n;
    u_char  *p;

    n = 4 + (status >= 0 ? 1 : 0) + len;

    /*
     * One frame is bounded; what waits to be sent behind it is not here:
     * it is the answers of operations in flight, each bounded.
     */

    if (n > NGX_HTTP_TENT_MAX_FRAME
        || ngx_http_tent_bytes_reserve(&conn->out, 4 + n) != NGX_OK)
    {
        return NGX_ERROR;
    }

    p = conn->out.last;

    ngx_http_tent_ipc_put_u32(p, (uint32_t) n);
    ngx_http_tent_ipc_put_u32(p + 4, id);
    p += 8;

    if (status >= 0) {
        *p++ = (u_char) status;
    }

    if (len) {
        p = ngx_cpymem(p, data, len);
    }

    conn->out.last = p;

    return NGX_OK;
}


/*
 * Parse whole frames out of conn->in and hand each one to "handler".
 * NGX_ERROR means the peer does not speak our protocol.
 */

ngx_int_t
ngx_http_tent_ipc_frames(ngx_http_tent_ipc_conn_t *conn,
    ngx_int_t (*handler)(ngx_http_tent_ipc_conn_t *conn, uint32_t id,
    u_char *data, size_t len))
{
    u_char    *p;
    uint32_t   len;

    while (!conn->closed && conn->in.last - conn->in.pos >= 8) {
        p = conn->in.pos;
        len = ngx_http_tent_ipc_u32(p);

        if (len < 4 || len > NGX_HTTP_TENT_MAX_FRAME) {
            ngx_log_error(NGX_LOG_ALERT, conn->store->log, 0,
                          "tent store: bad frame of %uD bytes", len);
            return NGX_ERROR;
        }

        if ((size_t) (conn->in.last - p) < 4 + (size_t) len) {
            break;
        }

        conn->in.pos += 4 + len;

        if (handler(conn, ngx_http_tent_ipc_u32(p + 4), p + 8, len - 4)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (!conn->closed && conn->in.pos == conn->in.last) {
        if ((size_t) (conn->in.end - conn->in.start)
            > NGX_HTTP_TENT_IPC_KEEP)
        {
            ngx_http_tent_bytes_free(&conn->in);

        } else {
            conn->in.pos = conn->in.start;
            conn->in.last = conn->in.start;
        }
    }

    return NGX_OK;
}


static void
ngx_http_tent_ipc_server_read(ngx_event_t *ev)
{
    ngx_int_t                  rc;
    ngx_connection_t          *c;
    ngx_http_tent_ipc_conn_t  *conn;

    c = ev->data;
    conn = c->data;

    rc = ngx_http_tent_ipc_read(conn);

    /* whatever arrived before a close is still answered if it can be */

    if (ngx_http_tent_ipc_frames(conn, ngx_http_tent_ipc_server_request)
        != NGX_OK
        || rc != NGX_OK)
    {
        ngx_http_tent_ipc_conn_close(conn);
        return;
    }

    if (conn->out.last > conn->out.pos
        && ngx_http_tent_ipc_flush(conn) == NGX_ERROR)
    {
        ngx_http_tent_ipc_conn_close(conn);
    }
}


static void
ngx_http_tent_ipc_server_write(ngx_event_t *ev)
{
    ngx_connection_t          *c;
    ngx_http_tent_ipc_conn_t  *conn;

    c = ev->data;
    conn = c->data;

    if (ngx_http_tent_ipc_flush(conn) == NGX_ERROR) {
        ngx_http_tent_ipc_conn_close(conn);
    }
}


static ngx_int_t
ngx_http_tent_ipc_server_request(ngx_http_tent_ipc_conn_t *conn, uint32_t id,
    u_char *data, size_t len)
{
    ngx_pool_t                     *pool;
    ngx_http_tent_store_t          *store;
    ngx_http_tent_store_op_t       *op;
    ngx_http_tent_store_op_full_t  *sop;

    store = conn->store;

    if (!ngx_http_tent_owner_accepts(store)) {
        /* resigning: the client goes to the new owner */

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, store->log, 0,
                       "tent store owner: handing over, operation %uD "
                       "is sent back to retry", id);

        return ngx_http_tent_ipc_frame(conn, id, NGX_HTTP_TENT_STORE_RETRY,
                                       NULL, 0);
    }

    pool = ngx_create_pool(1024, store->log);
    if (pool == NULL) {
        return NGX_ERROR;
    }

    op = ngx_http_tent_store_op_create(pool, store->log);
    sop = ngx_http_tent_sop(op);
    if (op == NULL) {
        goto failed;
    }

    sop->req = ngx_pnalloc(pool, len ? len : 1);
    if (sop->req == NULL) {
        goto failed;
    }

    ngx_memcpy(sop->req, data, len);
    sop->req_len = len;
    sop->req_size = len;
    sop->node.key = id;
    sop->conn = conn;
    op->handler = ngx_http_tent_ipc_reply;

    conn->refs++;

    /* the client has its own deadline; this one bounds our queue */

    if (ngx_http_tent_store_submit(op) != NGX_OK) {
        conn->refs--;
        goto failed;
    }

    return NGX_OK;

failed:

    ngx_destroy_pool(pool);

    return ngx_http_tent_ipc_frame(conn, id, NGX_HTTP_TENT_STORE_ERROR,
                                   (u_char *) "out of memory", 13);
}


static void
ngx_http_tent_ipc_reply(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_ipc_conn_t       *conn;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    conn = sop->conn;

    if (!conn->closed) {
        if (ngx_http_tent_ipc_frame(conn, (uint32_t) sop->node.key,
                                    op->status, sop->res.data, sop->res.len)
            != NGX_OK
            || ngx_http_tent_ipc_flush(conn) == NGX_ERROR)
        {
            ngx_http_tent_ipc_conn_close(conn);
        }
    }

    ngx_http_tent_ipc_conn_release(conn);
    ngx_destroy_pool(op->pool);
}


/*
 * Graceful shutdown began and we own the database: no new connection;
 * stay alive (a timer that is not cancelable) until every worker left
 * ours, so that an operation one sent just now is read and answered
 * "retry" rather than lost with the socket when this process exits.
 */

void
ngx_http_tent_ipc_resign(ngx_http_tent_store_t *store)
{
    /* a worker that connected a moment ago is told as well */

    if (store->listening) {
        ngx_http_tent_ipc_accept_all(store);
    }

    ngx_http_tent_ipc_stop_listening(store);

    store->handover_timer.handler = ngx_http_tent_ipc_handover_timer;
    store->handover_timer.data = store;
    store->handover_timer.log = store->log;

    ngx_add_timer(&store->handover_timer, store->timeout);
}


/*
 * The owner closed its database: every operation it read is answered.
 * Each worker is told so with a "retry" of id 0 (no operation has it):
 * what it sent and has no answer for was not executed, and is answered
 * "retry" too as it arrives; the worker then goes to the new owner and
 * closes this connection.
 */

void
ngx_http_tent_ipc_drained(ngx_http_tent_store_t *store)
{
    ngx_queue_t               *q, *next;
    ngx_http_tent_ipc_conn_t  *conn;

    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, store->log, 0,
                   "tent store owner: handed over, telling the workers");

    for (q = ngx_queue_head(&store->conns);
         q != ngx_queue_sentinel(&store->conns);
         q = next)
    {
        next = ngx_queue_next(q);
        conn = ngx_queue_data(q, ngx_http_tent_ipc_conn_t, queue);

        if (ngx_http_tent_ipc_frame(conn, 0, NGX_HTTP_TENT_STORE_RETRY,
                                    NULL, 0)
            != NGX_OK
            || ngx_http_tent_ipc_flush(conn) == NGX_ERROR)
        {
            ngx_http_tent_ipc_conn_close(conn);
        }
    }

    ngx_http_tent_ipc_handover_check(store);
}


/* handed over and every worker gone: this process may exit */

static void
ngx_http_tent_ipc_handover_check(ngx_http_tent_store_t *store)
{
    if (store->handover_timer.timer_set
        && store->state == NGX_HTTP_TENT_OWNER_CLOSED
        && ngx_queue_empty(&store->conns))
    {
        ngx_log_error(NGX_LOG_NOTICE, store->log, 0,
                      "tent store: handed \"%V\" over, every worker went "
                      "to the new owner", &store->db_path);

        ngx_del_timer(&store->handover_timer);
    }
}


/* a worker that never left (an older module's): close as before */

static void
ngx_http_tent_ipc_handover_timer(ngx_event_t *ev)
{
    ngx_http_tent_store_t  *store;

    store = ev->data;

    ngx_log_error(NGX_LOG_INFO, store->log, 0,
                  "tent store: workers still connected at the end of the "
                  "handover, closing their connections");

    ngx_http_tent_ipc_close_workers(store);
}


static void
ngx_http_tent_ipc_close_workers(ngx_http_tent_store_t *store)
{
    ngx_queue_t               *q;
    ngx_http_tent_ipc_conn_t  *conn;

    while (!ngx_queue_empty(&store->conns)) {
        q = ngx_queue_head(&store->conns);
        conn = ngx_queue_data(q, ngx_http_tent_ipc_conn_t, queue);

        ngx_http_tent_ipc_conn_close(conn);
    }
}


/* before nginx checks for sockets left open at exit */

void
ngx_http_tent_ipc_exit(ngx_http_tent_store_t *store)
{
    ngx_http_tent_ipc_stop_listening(store);
    ngx_http_tent_ipc_close_workers(store);
    ngx_http_tent_ipc_client_close(store);
}
