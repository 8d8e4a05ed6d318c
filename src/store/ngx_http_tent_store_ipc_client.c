
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The store socket's client side: every worker keeps one connection to
 * whoever listens on the path now (ngx_http_tent_store_ipc.c), sends the
 * operations it has not sent yet, matches each reply to its operation by
 * id, and reconnects quietly while no owner listens or an old one
 * drains.
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_store_private.h"
#include "ngx_http_tent_store_ipc.h"


#define NGX_HTTP_TENT_CLIENT_NONE      0
#define NGX_HTTP_TENT_CLIENT_READY     1
#define NGX_HTTP_TENT_CLIENT_DRAINING  2


static void ngx_http_tent_ipc_connect(ngx_http_tent_store_t *store);
static ngx_int_t ngx_http_tent_ipc_stranger(ngx_http_tent_store_t *store,
    ngx_socket_t s);
static void ngx_http_tent_ipc_connect_timer(ngx_event_t *ev);
static void ngx_http_tent_ipc_send_unsent(ngx_http_tent_store_t *store);
static void ngx_http_tent_ipc_client_read(ngx_event_t *ev);
static void ngx_http_tent_ipc_client_write(ngx_event_t *ev);
static void ngx_http_tent_ipc_client_reply(ngx_http_tent_store_t *store,
    uint32_t id, u_char *data, size_t len);
static void ngx_http_tent_ipc_client_lost(ngx_http_tent_store_t *store);
static void ngx_http_tent_ipc_client_reconnect(ngx_http_tent_store_t *store);


/* the client side */

void
ngx_http_tent_ipc_submit(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_store_wait(store, op, NGX_HTTP_TENT_WHERE_UNSENT);

    switch (store->client_state) {

    case NGX_HTTP_TENT_CLIENT_READY:
        ngx_http_tent_ipc_send_unsent(store);
        break;

    case NGX_HTTP_TENT_CLIENT_NONE:
        if (!store->connect_timer.timer_set) {
            ngx_http_tent_ipc_connect(store);
        }
        break;

    default:
        /* draining: sent once the old owner has answered everything */
        break;
    }
}


static void
ngx_http_tent_ipc_connect(ngx_http_tent_store_t *store)
{
    ngx_err_t                  err;
    ngx_socket_t               s;
    struct sockaddr_un         sun;
    ngx_http_tent_ipc_conn_t  *conn;

    if (ngx_queue_empty(&store->unsent)) {
        return;
    }

    if (ngx_http_tent_ipc_sockaddr(store, &sun) != NGX_OK) {
        return;
    }

    s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s == (ngx_socket_t) -1) {
        goto retry;
    }

    /*
     * A UNIX socket connects at once or not at all; ENOENT, ECONNREFUSED
     * and EAGAIN just mean no owner listens right now (a reload or a
     * respawn is under way): try again shortly, quietly.
     */

    if (connect(s, (struct sockaddr *) &sun, sizeof(struct sockaddr_un))
        == -1)
    {
        err = ngx_socket_errno;

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, store->log, err,
                       "tent store: connect to \"%V\" failed",
                       &store->socket_path);

        (void) ngx_close_socket(s);
        goto retry;
    }

    if (ngx_http_tent_ipc_stranger(store, s)) {
        (void) ngx_close_socket(s);
        goto retry;
    }

    conn = ngx_http_tent_ipc_conn_create(store, s);
    if (conn == NULL) {
        (void) ngx_close_socket(s);
        goto retry;
    }

    conn->connection->read->handler = ngx_http_tent_ipc_client_read;
    conn->connection->write->handler = ngx_http_tent_ipc_client_write;

    if (ngx_handle_read_event(conn->connection->read, 0) != NGX_OK) {
        ngx_http_tent_ipc_conn_close(conn);
        goto retry;
    }

    store->client = conn;
    store->client_state = NGX_HTTP_TENT_CLIENT_READY;
    store->connect_backoff = 0;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, store->log, 0,
                   "tent store: connected to the owner at \"%V\"",
                   &store->socket_path);

    ngx_http_tent_ipc_send_unsent(store);

    return;

retry:

    store->connect_backoff = store->connect_backoff
                             ? ngx_min(store->connect_backoff * 2, 250) : 10;

    ngx_add_timer(&store->connect_timer, store->connect_backoff);
}


/*
 * Who listens on the path is our nginx's owner, or another nginx's on
 * the same store (whose owner kept its socket): that one does not move
 * our generations, so our caches would not see its writes.  Its store
 * is not ours to use: our requests wait, and get 503, as for an owner
 * that cannot open the database.
 */

static ngx_int_t
ngx_http_tent_ipc_stranger(ngx_http_tent_store_t *store, ngx_socket_t s)
{
    socklen_t      len;
    struct ucred   cred;

    if (ngx_process != NGX_PROCESS_WORKER) {
        return 0;
    }

    len = sizeof(struct ucred);

    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1) {
        ngx_log_error(NGX_LOG_ALERT, store->log, ngx_socket_errno,
                      "tent store: getsockopt(SO_PEERCRED) failed");
        return 1;
    }

    if (ngx_http_tent_store_kin(cred.pid)) {
        return 0;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, store->log, 0,
                   "tent store: pid %P at the socket is a stranger",
                   (ngx_pid_t) cred.pid);

    if (store->stranger_said == 0
        || ngx_current_msec - store->stranger_said >= 60000)
    {
        store->stranger_said = ngx_current_msec ? ngx_current_msec : 1;

        ngx_log_error(NGX_LOG_ERR, store->log, 0,
                      "tent store: \"%V\" is another nginx's (pid %P), "
                      "not used: requests needing the store get 503",
                      &store->socket_path, (ngx_pid_t) cred.pid);
    }

    return 1;
}


static void
ngx_http_tent_ipc_connect_timer(ngx_event_t *ev)
{
    ngx_http_tent_store_t  *store;

    store = ev->data;

    if (store->client_state == NGX_HTTP_TENT_CLIENT_NONE) {
        ngx_http_tent_ipc_connect(store);
    }
}


void
ngx_http_tent_ipc_init_client(ngx_http_tent_store_t *store)
{
    store->connect_timer.handler = ngx_http_tent_ipc_connect_timer;
    store->connect_timer.data = store;
    store->connect_timer.log = store->log;
    store->connect_timer.cancelable = 1;
}


static void
ngx_http_tent_ipc_send_unsent(ngx_http_tent_store_t *store)
{
    ngx_queue_t                    *q;
    ngx_http_tent_ipc_conn_t       *conn;
    ngx_http_tent_store_op_t       *op;
    ngx_http_tent_store_op_full_t  *sop;

    conn = store->client;

    while (!ngx_queue_empty(&store->unsent)) {
        q = ngx_queue_head(&store->unsent);
        op = ngx_http_tent_store_op_of(q);
        sop = ngx_http_tent_sop(op);

        ngx_http_tent_store_unwait(op);

        if (++store->next_id == 0) {
            store->next_id = 1;
        }

        if (ngx_http_tent_ipc_frame(conn, store->next_id, -1, sop->req,
                                    sop->req_len)
            != NGX_OK)
        {
            ngx_http_tent_store_fail_later(op, NGX_HTTP_TENT_STORE_ERROR,
                                           "request too large");
            continue;
        }

        sop->node.key = store->next_id;
        sop->where = NGX_HTTP_TENT_WHERE_SENT;
        ngx_rbtree_insert(&store->sent, &sop->node);
    }

    if (ngx_http_tent_ipc_flush(conn) == NGX_ERROR) {
        ngx_http_tent_ipc_client_lost(store);
    }
}


static void
ngx_http_tent_ipc_client_write(ngx_event_t *ev)
{
    ngx_connection_t          *c;
    ngx_http_tent_ipc_conn_t  *conn;

    c = ev->data;
    conn = c->data;

    if (ngx_http_tent_ipc_flush(conn) == NGX_ERROR) {
        ngx_http_tent_ipc_client_lost(conn->store);
    }
}


static ngx_int_t
ngx_http_tent_ipc_client_frame(ngx_http_tent_ipc_conn_t *conn, uint32_t id,
    u_char *data, size_t len)
{
    if (len < 1) {
        return NGX_ERROR;
    }

    ngx_http_tent_ipc_client_reply(conn->store, id, data, len);

    return NGX_OK;
}


static void
ngx_http_tent_ipc_client_read(ngx_event_t *ev)
{
    ngx_int_t                  rc;
    ngx_connection_t          *c;
    ngx_http_tent_store_t     *store;
    ngx_http_tent_ipc_conn_t  *conn;

    c = ev->data;
    conn = c->data;
    store = conn->store;

    rc = ngx_http_tent_ipc_read(conn);

    /* a reply's handler may lose this connection: hold its memory */

    conn->refs++;

    if (ngx_http_tent_ipc_frames(conn, ngx_http_tent_ipc_client_frame)
        != NGX_OK
        || rc != NGX_OK)
    {
        if (!conn->closed) {
            ngx_http_tent_ipc_client_lost(store);
        }

        ngx_http_tent_ipc_conn_release(conn);
        return;
    }

    ngx_http_tent_ipc_conn_release(conn);

    if (store->client_state == NGX_HTTP_TENT_CLIENT_DRAINING
        && store->sent.root == store->sent.sentinel)
    {
        /* the old owner answered all it had: go find the new one */
        ngx_http_tent_ipc_client_reconnect(store);
    }
}


static ngx_http_tent_store_op_t *
ngx_http_tent_ipc_lookup(ngx_http_tent_store_t *store, uint32_t id)
{
    ngx_rbtree_node_t  *node, *sentinel;

    node = store->sent.root;
    sentinel = store->sent.sentinel;

    while (node != sentinel) {
        if (id == node->key) {
            return (ngx_http_tent_store_op_t *)
                       ((u_char *) node
                        - offsetof(ngx_http_tent_store_op_full_t, node));
        }

        node = (id < node->key) ? node->left : node->right;
    }

    return NULL;
}


static void
ngx_http_tent_ipc_client_reply(ngx_http_tent_store_t *store, uint32_t id,
    u_char *data, size_t len)
{
    u_char                         *copy;
    ngx_uint_t                      status;
    ngx_http_tent_store_op_t       *op;
    ngx_http_tent_store_op_full_t  *sop;

    if (id == 0) {
        /*
         * The old owner handed the database over: whatever we sent it
         * and have no answer for was not executed and comes back as
         * "retry"; then we go to the new owner.
         */

        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, store->log, 0,
                       "tent store: the owner handed over");

        store->client_state = NGX_HTTP_TENT_CLIENT_DRAINING;
        return;
    }

    op = ngx_http_tent_ipc_lookup(store, id);
    sop = ngx_http_tent_sop(op);

    if (op == NULL) {
        /* it timed out already */
        return;
    }

    ngx_rbtree_delete(&store->sent, &sop->node);
    sop->where = NGX_HTTP_TENT_WHERE_NONE;

    status = data[0];

    if (status == NGX_HTTP_TENT_STORE_RETRY) {
        /* not executed: the owner is handing over; send it again later */
        ngx_http_tent_store_wait(store, op, NGX_HTTP_TENT_WHERE_UNSENT);
        store->client_state = NGX_HTTP_TENT_CLIENT_DRAINING;
        return;
    }

    copy = NULL;

    if (len > 1) {
        copy = ngx_pnalloc(op->pool, len - 1);
        if (copy == NULL) {
            ngx_http_tent_store_finish(op, NGX_HTTP_TENT_STORE_ERROR,
                                       (u_char *) "out of memory", 13);
            return;
        }

        ngx_memcpy(copy, data + 1, len - 1);
    }

    ngx_http_tent_store_finish(op, status, copy, len - 1);
}


void
ngx_http_tent_ipc_cancel(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_store_t          *store;
    ngx_http_tent_main_conf_t      *mcf;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    mcf = ngx_http_cycle_get_module_main_conf(ngx_cycle, ngx_http_tent_module);
    store = mcf->store;

    ngx_rbtree_delete(&store->sent, &sop->node);
    sop->where = NGX_HTTP_TENT_WHERE_NONE;

    /*
     * The last answer a resigned owner owed us timed out: the new owner
     * now, rather than when the old one closes our connection.
     */

    if (store->client_state == NGX_HTTP_TENT_CLIENT_DRAINING
        && store->sent.root == store->sent.sentinel)
    {
        ngx_http_tent_ipc_client_reconnect(store);
    }
}


void
ngx_http_tent_ipc_client_close(ngx_http_tent_store_t *store)
{
    if (store->client) {
        ngx_http_tent_ipc_conn_close(store->client);
        store->client = NULL;
    }

    store->client_state = NGX_HTTP_TENT_CLIENT_NONE;
}


/*
 * The owner went away with our operations in flight: they may or may not
 * have been executed, so they fail (503) rather than run twice.
 */

static void
ngx_http_tent_ipc_client_lost(ngx_http_tent_store_t *store)
{
    ngx_rbtree_node_t         *node;
    ngx_http_tent_store_op_t  *op;

    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, store->log, 0,
                   "tent store: lost the connection to the owner");

    ngx_http_tent_ipc_client_close(store);

    while (store->sent.root != store->sent.sentinel) {
        node = ngx_rbtree_min(store->sent.root, store->sent.sentinel);
        op = (ngx_http_tent_store_op_t *)
                 ((u_char *) node
                  - offsetof(ngx_http_tent_store_op_full_t, node));

        ngx_rbtree_delete(&store->sent, node);

        /* we may be inside submit: answer from the event loop */

        ngx_http_tent_store_fail_later(op, NGX_HTTP_TENT_STORE_UNAVAILABLE,
                                     "lost the connection to the store owner");
    }

    if (!ngx_queue_empty(&store->unsent) && !store->connect_timer.timer_set) {
        ngx_add_timer(&store->connect_timer, 10);
    }
}


static void
ngx_http_tent_ipc_client_reconnect(ngx_http_tent_store_t *store)
{
    ngx_http_tent_ipc_client_close(store);

    if (!store->connect_timer.timer_set) {
        ngx_http_tent_ipc_connect(store);
    }
}
