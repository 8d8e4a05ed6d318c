
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The store API handlers use.  An operation is encoded once into bytes;
 * the owner process executes those bytes on its thread pool, any other
 * worker ships them over the store socket.  Either way the handler is
 * called back later on the event loop, never from inside submit.  Here:
 * encoding, submit and its deadline, the answer and its decoding, and
 * the caches a write makes stale.  No request: an HTTP handler's side
 * is ngx_http_tent_store_request.c.
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_module.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store_private.h"


#if (NGX_HTTP_TENT_OP_MGET - NGX_HTTP_TENT_OP_GET + 1                        \
     != NGX_HTTP_TENT_STORE_KINDS)
#error "shm.h's NGX_HTTP_TENT_STORE_KINDS counts the store's op bytes"
#endif


static ngx_int_t ngx_http_tent_store_reserve(ngx_http_tent_store_op_t *op,
    size_t n);
static void ngx_http_tent_store_put_u8(ngx_http_tent_store_op_t *op,
    ngx_uint_t v);
static void ngx_http_tent_store_put_u32(ngx_http_tent_store_op_t *op,
    uint32_t v);
static void ngx_http_tent_store_put_str(ngx_http_tent_store_op_t *op,
    ngx_str_t *s);
static ngx_int_t ngx_http_tent_store_begin(ngx_http_tent_store_op_t *op,
    ngx_uint_t type, ngx_uint_t flags, size_t size);
static void ngx_http_tent_store_timeout_handler(ngx_event_t *ev);
static void ngx_http_tent_store_write_count(ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_store_read_str(ngx_http_tent_store_op_t *op,
    ngx_str_t *s);
static void ngx_http_tent_store_outbox_add(ngx_http_tent_store_op_full_t *sop,
    ngx_uint_t hash);


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

/*
 * A fence is appended last, behind the entries (ngx_http_tent_store_fence.c):
 * an entry after it would be read as its trailer, so none is taken.
 */

static ngx_inline ngx_uint_t
ngx_http_tent_store_fenced_op(ngx_http_tent_store_op_full_t *sop)
{
    return sop->req_len >= 2 && (sop->req[1] & NGX_HTTP_TENT_OP_FENCE);
}


ngx_int_t
ngx_http_tent_store_rewind(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);
    sop->cursor = sop->res.data;

    return NGX_OK;
}


ngx_http_tent_store_op_t *
ngx_http_tent_store_op_create(ngx_pool_t *pool, ngx_log_t *log)
{
    ngx_http_tent_store_op_t  *op;

    op = ngx_pcalloc(pool, sizeof(ngx_http_tent_store_op_full_t));
    if (op == NULL) {
        return NULL;
    }

    op->pool = pool;
    op->log = log;

    return op;
}


static ngx_int_t
ngx_http_tent_store_reserve(ngx_http_tent_store_op_t *op, size_t n)
{
    size_t                          size;
    u_char                         *p;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (sop->req_len + n <= sop->req_size) {
        return NGX_OK;
    }

    if (sop->req_len + n > NGX_HTTP_TENT_MAX_FRAME - 64) {
        sop->failed_encoding = 1;
        return NGX_ERROR;
    }

    size = ngx_max(sop->req_size * 2, sop->req_len + n);
    size = ngx_max(size, 256);

    p = ngx_palloc(op->pool, size);
    if (p == NULL) {
        sop->failed_encoding = 1;
        return NGX_ERROR;
    }

    if (sop->req_len) {
        ngx_memcpy(p, sop->req, sop->req_len);
    }

    sop->req = p;
    sop->req_size = size;

    return NGX_OK;
}


static void
ngx_http_tent_store_put_u8(ngx_http_tent_store_op_t *op, ngx_uint_t v)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (ngx_http_tent_store_reserve(op, 1) == NGX_OK) {
        sop->req[sop->req_len++] = (u_char) v;
    }
}


static void
ngx_http_tent_store_put_u32(ngx_http_tent_store_op_t *op, uint32_t v)
{
    u_char                         *p;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (ngx_http_tent_store_reserve(op, 4) != NGX_OK) {
        return;
    }

    p = sop->req + sop->req_len;

    p[0] = (u_char) (v >> 24);
    p[1] = (u_char) (v >> 16);
    p[2] = (u_char) (v >> 8);
    p[3] = (u_char) v;

    sop->req_len += 4;
}


static void
ngx_http_tent_store_put_str(ngx_http_tent_store_op_t *op, ngx_str_t *s)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (ngx_http_tent_store_reserve(op, 4 + s->len) != NGX_OK) {
        return;
    }

    ngx_http_tent_store_put_u32(op, (uint32_t) s->len);

    if (s->len) {
        ngx_memcpy(sop->req + sop->req_len, s->data, s->len);
        sop->req_len += s->len;
    }
}


static ngx_int_t
ngx_http_tent_store_begin(ngx_http_tent_store_op_t *op, ngx_uint_t type,
    ngx_uint_t flags, size_t size)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    sop->req_len = 0;
    sop->count_pos = 0;
    sop->failed_encoding = 0;

    if (ngx_http_tent_store_reserve(op, 2 + size) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_http_tent_store_put_u8(op, type);
    ngx_http_tent_store_put_u8(op, flags);

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_store_get(ngx_http_tent_store_op_t *op, ngx_str_t *key)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (ngx_http_tent_store_begin(op, NGX_HTTP_TENT_OP_GET, 0, 4 + key->len)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_tent_store_put_str(op, key);

    return sop->failed_encoding ? NGX_ERROR : NGX_OK;
}


/*
 * Compare and set: store "value" under "key" only if the key now holds
 * "expected" (NULL: only if the key is absent), together with whatever
 * write_put and write_del add after it, in one batch.  The owner
 * serializes these, so two workers creating the same record cannot both
 * win.
 */

/*
 * What a write makes stale, the key says (ngx_http_tent_key_caches()):
 * the workers' cached credentials, their cached anonymous replies.  Both
 * are moved here, once the operation is done, never by its caller.
 */

static void
ngx_http_tent_store_note_key(ngx_http_tent_store_op_t *op, ngx_str_t *key)
{
    ngx_uint_t                      caches, hash;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    caches = ngx_http_tent_key_caches(key);

    if (caches & NGX_HTTP_TENT_CACHE_CREDENTIALS) {
        sop->credential = 1;
    }

    if (caches & NGX_HTTP_TENT_CACHE_REPLIES) {
        sop->replies = 1;
    }

    if (caches & NGX_HTTP_TENT_CACHE_APPS) {
        sop->apps = 1;
    }

    /* the delivery engine's outbox mark of the entity: one, or all */

    if (caches & NGX_HTTP_TENT_CACHE_OUTBOX) {
        hash = ngx_http_tent_key_entity_hash(key);
        ngx_http_tent_store_outbox_add(sop, hash);
    }
}


/*
 * One more entity whose outbox this write adds a row to: a write of a
 * few entities' rows (a merged group, a same-node batch) marks those
 * few, not all (every idle outbox of the host would be scanned).
 */

static void
ngx_http_tent_store_outbox_add(ngx_http_tent_store_op_full_t *sop,
    ngx_uint_t hash)
{
    ngx_uint_t  i;

    if (sop->outboxes) {
        return;
    }

    for (i = 0; i < sop->outbox_n; i++) {
        if (sop->outbox[i] == hash) {
            return;
        }
    }

    if (sop->outbox_n == NGX_HTTP_TENT_STORE_OUTBOXES) {
        sop->outboxes = 1;
        return;
    }

    sop->outbox[sop->outbox_n++] = hash;
}


ngx_int_t
ngx_http_tent_store_cas(ngx_http_tent_store_op_t *op, ngx_str_t *key,
    ngx_str_t *expected, ngx_str_t *value)
{
    size_t                          size;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    ngx_http_tent_store_note_key(op, key);

    size = 4 + key->len + 1 + 4 + value->len
           + (expected ? 4 + expected->len : 0);

    if (ngx_http_tent_store_begin(op, NGX_HTTP_TENT_OP_CAS,
                                  NGX_HTTP_TENT_OP_SYNC, size)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_tent_store_put_str(op, key);
    ngx_http_tent_store_put_u8(op, expected ? 1 : 0);

    if (expected) {
        ngx_http_tent_store_put_str(op, expected);
    }

    ngx_http_tent_store_put_str(op, value);

    /* more puts and deletes may follow: applied with it, or not at all */

    sop->count_pos = sop->req_len;
    ngx_http_tent_store_put_u32(op, 0);

    return sop->failed_encoding ? NGX_ERROR : NGX_OK;
}


ngx_int_t
ngx_http_tent_store_write(ngx_http_tent_store_op_t *op, ngx_uint_t sync)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (ngx_http_tent_store_begin(op, NGX_HTTP_TENT_OP_WRITE,
                                  sync ? NGX_HTTP_TENT_OP_SYNC : 0, 256)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* the number of entries, counted up by put and del */
    sop->count_pos = sop->req_len;
    ngx_http_tent_store_put_u32(op, 0);

    return sop->failed_encoding ? NGX_ERROR : NGX_OK;
}


static void
ngx_http_tent_store_write_count(ngx_http_tent_store_op_t *op)
{
    u_char                         *p;
    uint32_t                        n;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    p = sop->req + sop->count_pos;
    n = ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16)
        | ((uint32_t) p[2] << 8) | p[3];
    n++;

    p[0] = (u_char) (n >> 24);
    p[1] = (u_char) (n >> 16);
    p[2] = (u_char) (n >> 8);
    p[3] = (u_char) n;
}


ngx_int_t
ngx_http_tent_store_write_put(ngx_http_tent_store_op_t *op, ngx_str_t *key,
    ngx_str_t *value)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (sop->count_pos == 0 || ngx_http_tent_store_fenced_op(sop)
        || sop->req_len < sop->count_pos + 4
        || ngx_http_tent_store_reserve(op, 9 + key->len + value->len)
           != NGX_OK)
    {
        sop->failed_encoding = 1;
        return NGX_ERROR;
    }

    ngx_http_tent_store_note_key(op, key);

    ngx_http_tent_store_put_u8(op, NGX_HTTP_TENT_WRITE_PUT);
    ngx_http_tent_store_put_str(op, key);
    ngx_http_tent_store_put_str(op, value);
    ngx_http_tent_store_write_count(op);

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_store_write_del(ngx_http_tent_store_op_t *op, ngx_str_t *key)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (sop->count_pos == 0 || ngx_http_tent_store_fenced_op(sop)
        || sop->req_len < sop->count_pos + 4
        || ngx_http_tent_store_reserve(op, 5 + key->len) != NGX_OK)
    {
        sop->failed_encoding = 1;
        return NGX_ERROR;
    }

    ngx_http_tent_store_note_key(op, key);

    ngx_http_tent_store_put_u8(op, NGX_HTTP_TENT_WRITE_DEL);
    ngx_http_tent_store_put_str(op, key);
    ngx_http_tent_store_write_count(op);

    return NGX_OK;
}


/*
 * An attachment's bytes as a file, with the compare-and-set that creates
 * its count: the owner writes the file before the batch, so the count is
 * never there without it.  A CAS only (the decoder refuses them in a
 * plain write).
 */

ngx_int_t
ngx_http_tent_store_write_file(ngx_http_tent_store_op_t *op,
    ngx_str_t *entity, ngx_str_t *digest, ngx_str_t *bytes)
{
    u_char                          name[NGX_HTTP_TENT_FILE_NAME_LEN];
    ngx_str_t                       n;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (sop->count_pos == 0 || ngx_http_tent_store_fenced_op(sop)
        || sop->req[0] != NGX_HTTP_TENT_OP_CAS
        || ngx_http_tent_store_file_name(entity, digest, name) != NGX_OK
        || ngx_http_tent_store_reserve(op, 9 + sizeof(name) + bytes->len)
           != NGX_OK)
    {
        sop->failed_encoding = 1;
        return NGX_ERROR;
    }

    n.data = name;
    n.len = sizeof(name);

    ngx_http_tent_store_put_u8(op, NGX_HTTP_TENT_WRITE_FILE);
    ngx_http_tent_store_put_str(op, &n);
    ngx_http_tent_store_put_str(op, bytes);
    ngx_http_tent_store_write_count(op);

    return NGX_OK;
}


/* the file goes once the batch that deletes its count is written */

ngx_int_t
ngx_http_tent_store_write_unlink(ngx_http_tent_store_op_t *op,
    ngx_str_t *entity, ngx_str_t *digest)
{
    u_char                          name[NGX_HTTP_TENT_FILE_NAME_LEN];
    ngx_str_t                       n;
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (sop->count_pos == 0 || ngx_http_tent_store_fenced_op(sop)
        || sop->req[0] != NGX_HTTP_TENT_OP_CAS
        || ngx_http_tent_store_file_name(entity, digest, name) != NGX_OK
        || ngx_http_tent_store_reserve(op, 5 + sizeof(name)) != NGX_OK)
    {
        sop->failed_encoding = 1;
        return NGX_ERROR;
    }

    n.data = name;
    n.len = sizeof(name);

    ngx_http_tent_store_put_u8(op, NGX_HTTP_TENT_WRITE_UNLINK);
    ngx_http_tent_store_put_str(op, &n);
    ngx_http_tent_store_write_count(op);

    return NGX_OK;
}


/* the puts and deletes of one batch (write or CAS) added to another's */

ngx_int_t
ngx_http_tent_store_batch_append(ngx_http_tent_store_op_t *op,
    ngx_http_tent_store_op_t *other)
{
    u_char                         *p;
    size_t                          start, len;
    uint32_t                        n, m;
    ngx_uint_t                      i;
    ngx_http_tent_store_op_full_t  *sop;
    ngx_http_tent_store_op_full_t  *sother;

    sop = ngx_http_tent_sop(op);
    sother = ngx_http_tent_sop(other);

    if (sop->count_pos == 0 || sother->count_pos == 0
        || ngx_http_tent_store_fenced_op(sop)
        || ngx_http_tent_store_fenced_op(sother)
        || sop->req[0] == NGX_HTTP_TENT_OP_MGET
        || sother->req[0] == NGX_HTTP_TENT_OP_MGET)
    {
        return NGX_ERROR;
    }

    sop->credential |= sother->credential;
    sop->replies |= sother->replies;
    sop->apps |= sother->apps;

    sop->outboxes |= sother->outboxes;

    for (i = 0; i < sother->outbox_n; i++) {
        ngx_http_tent_store_outbox_add(sop, sother->outbox[i]);
    }

    start = sother->count_pos + 4;
    len = sother->req_len - start;

    if (len == 0) {
        return NGX_OK;
    }

    if (ngx_http_tent_store_reserve(op, len) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_memcpy(sop->req + sop->req_len, sother->req + start, len);
    sop->req_len += len;

    p = sother->req + sother->count_pos;
    m = ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16)
        | ((uint32_t) p[2] << 8) | p[3];

    p = sop->req + sop->count_pos;
    n = ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16)
        | ((uint32_t) p[2] << 8) | p[3];
    n += m;

    p[0] = (u_char) (n >> 24);
    p[1] = (u_char) (n >> 16);
    p[2] = (u_char) (n >> 8);
    p[3] = (u_char) n;

    return NGX_OK;
}


/* several keys at once: the reply has, per key, found or not and value */

ngx_int_t
ngx_http_tent_store_mget(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (ngx_http_tent_store_begin(op, NGX_HTTP_TENT_OP_MGET, 0, 256)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    sop->count_pos = sop->req_len;
    ngx_http_tent_store_put_u32(op, 0);

    return sop->failed_encoding ? NGX_ERROR : NGX_OK;
}


ngx_int_t
ngx_http_tent_store_mget_key(ngx_http_tent_store_op_t *op, ngx_str_t *key)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (sop->count_pos == 0 || sop->req[0] != NGX_HTTP_TENT_OP_MGET
        || ngx_http_tent_store_reserve(op, 4 + key->len) != NGX_OK)
    {
        sop->failed_encoding = 1;
        return NGX_ERROR;
    }

    ngx_http_tent_store_put_str(op, key);
    ngx_http_tent_store_write_count(op);

    return NGX_OK;
}


/* keys in [start, end), at most "limit" of them, newest first if reverse */

ngx_int_t
ngx_http_tent_store_scan(ngx_http_tent_store_op_t *op, ngx_str_t *start,
    ngx_str_t *end, ngx_uint_t limit, ngx_uint_t reverse)
{
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    if (ngx_http_tent_store_begin(op, NGX_HTTP_TENT_OP_SCAN, 0,
                                  13 + start->len + end->len)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_tent_store_put_str(op, start);
    ngx_http_tent_store_put_str(op, end);
    ngx_http_tent_store_put_u32(op, (uint32_t) limit);
    ngx_http_tent_store_put_u8(op, reverse ? 1 : 0);

    return sop->failed_encoding ? NGX_ERROR : NGX_OK;
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

    ngx_http_tent_ipc_submit(store, op);
}


static void
ngx_http_tent_store_timeout_handler(ngx_event_t *ev)
{
    ngx_http_tent_main_conf_t      *mcf;
    ngx_http_tent_store_op_t       *op;
    ngx_http_tent_store_op_full_t  *sop;

    op = ev->data;
    sop = ngx_http_tent_sop(op);

    switch (sop->where) {

    case NGX_HTTP_TENT_WHERE_RUNNING:
        /* a thread has it; its answer always comes back */
        return;

    case NGX_HTTP_TENT_WHERE_OPENING:
    case NGX_HTTP_TENT_WHERE_UNSENT:
        ngx_http_tent_store_unwait(op);
        break;

    case NGX_HTTP_TENT_WHERE_SENT:
        ngx_http_tent_ipc_cancel(op);
        break;

    case NGX_HTTP_TENT_WHERE_BACKGROUND:
        mcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                                  ngx_http_tent_module);
        ngx_http_tent_owner_unqueue(mcf->store, op);
        break;

    case NGX_HTTP_TENT_WHERE_FAILED:
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


/* the bytes of an operation's request so far (a batch's size) */

size_t
ngx_http_tent_store_op_size(ngx_http_tent_store_op_t *op)
{
    return ngx_http_tent_sop(op)->req_len;
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

