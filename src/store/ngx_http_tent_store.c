
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The store API handlers use.  An operation is encoded once into bytes;
 * the owner process executes those bytes on its thread pool, any other
 * worker ships them over the store socket.  Either way the handler is
 * called back later on the event loop, never from inside submit.  Here:
 * submit and its deadline, the answer and its decoding, and the caches
 * and outbox marks a write makes stale once done; the encoding is
 * ngx_http_tent_store_encode.c.  No request: an HTTP handler's side is
 * ngx_http_tent_store_request.c.
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store_private.h"


#if (NGX_HTTP_TENT_OP_MGET - NGX_HTTP_TENT_OP_GET + 1                        \
     != NGX_HTTP_TENT_STORE_KINDS)
#error "shm.h's NGX_HTTP_TENT_STORE_KINDS counts the store's op bytes"
#endif


static void ngx_http_tent_store_timeout_handler(ngx_event_t *ev);
static ngx_int_t ngx_http_tent_store_read_str(ngx_http_tent_store_op_t *op,
    ngx_str_t *s);


ngx_http_tent_store_t *
ngx_http_tent_store_create(ngx_cycle_t *cycle, ngx_http_tent_main_conf_t *mcf)
{
    ngx_http_tent_store_t  *store;

    store = ngx_pcalloc(cycle->pool, sizeof(ngx_http_tent_store_t));
    if (store == NULL) {
        return NULL;
    }

    store->path = mcf->store_path;
    store->socket_path = mcf->socket_path;
    store->db_path = mcf->db_path;
    store->thread_pool = mcf->thread_pool;
    store->timeout = mcf->store_timeout;
    store->max_waiting = mcf->store_max_waiting;
    store->background_max = mcf->store_background;
    store->thread_nice = mcf->store_thread_nice;
    store->write_buffer = mcf->store_write_buffer;
    store->log = cycle->log;

    ngx_queue_init(&store->waiting);
    ngx_queue_init(&store->background);
    ngx_queue_init(&store->cas_queue);
    ngx_queue_init(&store->conns);
    ngx_queue_init(&store->unsent);
    ngx_rbtree_init(&store->sent, &store->sent_sentinel,
                    ngx_rbtree_insert_value);

    ngx_http_tent_ipc_init_client(store);

    return store;
}


/*
 * A worker's store: every worker is a client of the owner's socket;
 * worker 0 is also the owner, which opens LevelDB.
 */

ngx_int_t
ngx_http_tent_store_init_process(ngx_cycle_t *cycle,
    ngx_http_tent_main_conf_t *mcf)
{
    mcf->store = ngx_http_tent_store_create(cycle, mcf);
    if (mcf->store == NULL) {
        return NGX_ERROR;
    }

    if (ngx_worker != 0) {
        return NGX_OK;
    }

    if (ngx_http_tent_owner_start(mcf->store) != NGX_OK) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                      "tent store: cannot start the store owner");
        return NGX_ERROR;
    }

    return NGX_OK;
}


void
ngx_http_tent_store_exit_process(ngx_http_tent_main_conf_t *mcf)
{
    ngx_http_tent_ipc_exit(mcf->store);

    if (mcf->store->owner) {
        ngx_http_tent_owner_exit(mcf->store);
    }
}


/* what the caller read so far is read again from the start */

ngx_int_t
ngx_http_tent_store_rewind(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);
    sop->cursor = sop->res.data;

    return NGX_OK;
}


/*
 * A client waits for this operation's answer, though it is not submitted
 * through ngx_http_tent_store_submit_request() (a stream's next page):
 * it goes ahead of background work.
 */

void
ngx_http_tent_store_for_request(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_sop(op)->request = 1;
}


ngx_int_t
ngx_http_tent_store_submit(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_main_conf_t      *mcf;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    mcf = ngx_http_cycle_get_module_main_conf(ngx_cycle, ngx_http_tent_module);

    if (mcf == NULL || mcf->store == NULL || sop->failed_encoding
        || sop->req_len < 2 || op->handler == NULL)
    {
        return NGX_ERROR;
    }

    /*
     * The deadline bounds every wait: for the database to open, for a
     * connection to the owner, for its reply.  It is not cancelable, so
     * a worker shutting down still answers the requests it holds.
     */

    /*
     * Its class: an operation of ours not submitted for a request (the
     * delivery engine's, the sweeps') is background work; one relayed
     * from a worker keeps the class its worker gave it.
     */

    if (sop->conn == NULL && !sop->request) {
        sop->req[1] |= NGX_HTTP_TENT_OP_BACKGROUND;
    }

    sop->timer.handler = ngx_http_tent_store_timeout_handler;
    sop->timer.data = op;
    sop->timer.log = op->log;

    ngx_add_timer(&sop->timer, mcf->store->timeout);

    sop->started = ngx_current_msec;

#if (NGX_DEBUG)
    /* the owner's relay of another worker's operation: logged there */
    if (sop->conn == NULL) {
        ngx_http_tent_store_debug(op, ngx_http_tent_owner_accepts(mcf->store)
                                      ? "store: sent (here)"
                                      : "store: sent (to the owner)", 0);
    }
#endif

    ngx_http_tent_store_dispatch(mcf->store, op);

    return NGX_OK;
}


void
ngx_http_tent_store_dispatch(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op)
{
    if (ngx_http_tent_owner_accepts(store)) {
        ngx_http_tent_owner_submit(store, op);
        return;
    }

    /*
     * A worker's operation we did not run, as we resigned: back to the
     * worker as "retry" (not executed), as the "handed over" frame that
     * follows promises; the worker sends it to the new owner itself.
     * Relayed by us, its answer would come back under the id of our own
     * connection, which the worker does not know: it would wait for its
     * timeout.
     */

    if (ngx_http_tent_sop(op)->conn) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, store->log, 0,
                       "tent store owner: handing over, a worker's "
                       "operation is sent back to retry");

        ngx_http_tent_store_finish(op, NGX_HTTP_TENT_STORE_RETRY, NULL, 0);
        return;
    }

    ngx_http_tent_ipc_submit(store, op);
}


/*
 * The operation out of wherever it waits (a queue, the sent tree): its
 * handler will not be called.  NGX_BUSY: a thread has it, and its
 * memory must outlive the thread; NGX_DECLINED: a failure is already
 * due (WHERE_FAILED, left as it is).
 */

static ngx_int_t
ngx_http_tent_store_unlink(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_main_conf_t      *mcf;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    switch (sop->where) {

    case NGX_HTTP_TENT_WHERE_RUNNING:
        return NGX_BUSY;

    case NGX_HTTP_TENT_WHERE_OPENING:
    case NGX_HTTP_TENT_WHERE_UNSENT:
        ngx_http_tent_store_unwait(op);
        break;

    case NGX_HTTP_TENT_WHERE_SENT:
        /* its late reply finds no id: dropped */
        ngx_http_tent_ipc_cancel(op);
        break;

    case NGX_HTTP_TENT_WHERE_BACKGROUND:
    case NGX_HTTP_TENT_WHERE_CAS:
        mcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                                  ngx_http_tent_module);
        ngx_http_tent_owner_unqueue(mcf->store, op);
        break;

    case NGX_HTTP_TENT_WHERE_FAILED:
        return NGX_DECLINED;

    default:
        break;
    }

    return NGX_OK;
}


/*
 * Its caller is gone (a request nginx terminated, whose pool holds the
 * operation): out of every queue and tree, its timer removed, never
 * answered.  NGX_BUSY: a thread has it; the caller keeps the memory
 * until the handler is called (docs/store.md, "An operation's life").
 */

ngx_int_t
ngx_http_tent_store_cancel(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (ngx_http_tent_store_unlink(op) == NGX_BUSY) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, op->log, 0,
                       "tent store: %s cancelled while a thread has it",
                       ngx_http_tent_store_op_name(op));
        return NGX_BUSY;
    }

    if (sop->timer.timer_set) {
        ngx_del_timer(&sop->timer);
    }

    sop->where = NGX_HTTP_TENT_WHERE_NONE;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, op->log, 0,
                   "tent store: %s cancelled, its caller is gone",
                   ngx_http_tent_store_op_name(op));

    return NGX_OK;
}


static void
ngx_http_tent_store_timeout_handler(ngx_event_t *ev)
{
    ngx_http_tent_store_op_t       *op;
    ngx_http_tent_store_op_full_t  *sop;

    op = ev->data;
    sop = ngx_http_tent_sop(op);

    switch (ngx_http_tent_store_unlink(op)) {

    case NGX_BUSY:
        /*
         * A thread has it; its answer always comes back.  The timer again,
         * not cancelable: a worker shutting down waits for that answer.
         */
        ngx_add_timer(&sop->timer, 1000);
        return;

    case NGX_DECLINED:
        ngx_log_error(NGX_LOG_WARN, op->log, 0, "tent store: %V", &sop->res);
        ngx_http_tent_store_finish(op, op->status, sop->res.data,
                                   sop->res.len);
        return;

    default:
        break;
    }

    ngx_log_error(NGX_LOG_WARN, op->log, 0,
                  "tent store: no answer within the store timeout");

    ngx_http_tent_store_finish(op, NGX_HTTP_TENT_STORE_UNAVAILABLE, NULL, 0);
}


/*
 * A failure found while the caller may still be inside submit (a queue
 * full, a connection lost while sending): delivered from a 0 ms timer,
 * so that handlers are never called back from within submit.
 */

void
ngx_http_tent_store_fail_later(ngx_http_tent_store_op_t *op,
    ngx_uint_t status, const char *message)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    sop->where = NGX_HTTP_TENT_WHERE_FAILED;
    op->status = status;

    sop->res.data = (u_char *) message;
    sop->res.len = ngx_strlen(message);

    if (sop->timer.timer_set) {
        ngx_del_timer(&sop->timer);
    }

    ngx_add_timer(&sop->timer, 0);
}


void
ngx_http_tent_store_wait(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op, ngx_uint_t where)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    sop->where = where;

    if (where == NGX_HTTP_TENT_WHERE_OPENING) {
        ngx_queue_insert_tail(&store->waiting, &sop->queue);
        store->nwaiting++;

    } else {
        ngx_queue_insert_tail(&store->unsent, &sop->queue);
    }
}


void
ngx_http_tent_store_unwait(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_main_conf_t      *mcf;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (sop->where == NGX_HTTP_TENT_WHERE_OPENING) {
        mcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                                  ngx_http_tent_module);
        mcf->store->nwaiting--;
    }

    ngx_queue_remove(&sop->queue);
    sop->where = NGX_HTTP_TENT_WHERE_NONE;
}


void
ngx_http_tent_store_finish(ngx_http_tent_store_op_t *op, ngx_uint_t status,
    u_char *data, size_t len)
{
    ngx_uint_t                      kind;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

#if (NGX_DEBUG)
    ngx_uint_t  ran;

    ran = (sop->where == NGX_HTTP_TENT_WHERE_RUNNING);
#endif

    if (sop->timer.timer_set) {
        ngx_del_timer(&sop->timer);
    }

    sop->where = NGX_HTTP_TENT_WHERE_NONE;
    op->status = status;
    sop->res.data = data;
    sop->res.len = len;
    sop->cursor = data;

#if (NGX_DEBUG)
    if (sop->conn == NULL) {
        ngx_http_tent_store_debug(op, "store: answered", 1);

    } else if (ran) {
        ngx_http_tent_store_debug(op, "store owner: executed for a worker",
                                  1);
    }
#endif

    /* counted once, where it was submitted, not again by a relay */

    if (sop->conn == NULL && sop->req_len >= 2
        && sop->req[0] >= NGX_HTTP_TENT_OP_GET
        && sop->req[0] < NGX_HTTP_TENT_OP_GET + NGX_HTTP_TENT_STORE_KINDS)
    {
        kind = sop->req[0] - NGX_HTTP_TENT_OP_GET;

        ngx_http_tent_count(NGX_HTTP_TENT_STAT_STORE_OPS + kind, 1);
        ngx_http_tent_count(NGX_HTTP_TENT_STAT_STORE_MS + kind,
                            (ngx_atomic_int_t)
                            (ngx_current_msec - sop->started));
    }

    /* done or not (it may have happened): what it wrote is stale */

    if (sop->credential) {
        ngx_http_tent_credential_bump((ngx_cycle_t *) ngx_cycle);
    }

    if (sop->replies) {
        ngx_http_tent_generation_bump((ngx_cycle_t *) ngx_cycle);
    }

    if (sop->apps) {
        ngx_http_tent_subscription_bump((ngx_cycle_t *) ngx_cycle);
    }

    if (sop->blocks) {
        ngx_http_tent_blocks_bump((ngx_cycle_t *) ngx_cycle);
    }

    if (sop->domains) {
        ngx_http_tent_domains_bump((ngx_cycle_t *) ngx_cycle);
    }

    /* an outbox row: the engine's next pass looks at that entity's */

    if (sop->outboxes) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "tent store: outbox rows of many entities: "
                       "every outbox marked");

        for (kind = 0; kind < NGX_HTTP_TENT_OUTBOX_MARKS; kind++) {
            ngx_http_tent_outbox_mark((ngx_cycle_t *) ngx_cycle, kind);
        }

    } else {
        for (kind = 0; kind < sop->outbox_n; kind++) {
            ngx_http_tent_outbox_mark((ngx_cycle_t *) ngx_cycle,
                                      sop->outbox[kind]);
        }
    }

    op->handler(op);
}


ngx_int_t
ngx_http_tent_store_value(ngx_http_tent_store_op_t *op, ngx_str_t *value)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    *value = sop->res;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_store_read_str(ngx_http_tent_store_op_t *op, ngx_str_t *s)
{
    u_char                         *last;
    uint32_t                        n;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    last = sop->res.data + sop->res.len;

    if (last - sop->cursor < 4) {
        return NGX_ERROR;
    }

    n = ((uint32_t) sop->cursor[0] << 24) | ((uint32_t) sop->cursor[1] << 16)
        | ((uint32_t) sop->cursor[2] << 8) | sop->cursor[3];
    sop->cursor += 4;

    if ((size_t) (last - sop->cursor) < n) {
        return NGX_ERROR;
    }

    s->len = n;
    s->data = sop->cursor;
    sop->cursor += n;

    return NGX_OK;
}


/* scan results one by one: NGX_OK, NGX_DONE at the end, or NGX_ERROR */

ngx_int_t
ngx_http_tent_store_next(ngx_http_tent_store_op_t *op, ngx_str_t *key,
    ngx_str_t *value)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (op->status != NGX_HTTP_TENT_STORE_OK || sop->cursor == NULL
        || sop->cursor == sop->res.data + sop->res.len)
    {
        return NGX_DONE;
    }

    if (ngx_http_tent_store_read_str(op, key) != NGX_OK
        || ngx_http_tent_store_read_str(op, value) != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ALERT, op->log, 0,
                      "tent store: malformed scan reply");
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* the values of a multi-get, in the order of the keys */

ngx_int_t
ngx_http_tent_store_next_value(ngx_http_tent_store_op_t *op,
    ngx_uint_t *found, ngx_str_t *value)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (op->status != NGX_HTTP_TENT_STORE_OK || sop->cursor == NULL
        || sop->cursor == sop->res.data + sop->res.len)
    {
        return NGX_DONE;
    }

    *found = *sop->cursor++;

    if (*found == 0) {
        ngx_str_null(value);
        return NGX_OK;
    }

    if (ngx_http_tent_store_read_str(op, value) != NGX_OK) {
        ngx_log_error(NGX_LOG_ALERT, op->log, 0,
                      "tent store: malformed multi-get reply");
        return NGX_ERROR;
    }

    return NGX_OK;
}

