
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * An operation encoded (docs/store.md, "Operations"): once, into the
 * bytes the owner executes or a worker ships over the store socket.
 * get, mget, scan, compare-and-set, a write's batch of puts, deletes,
 * attachment files and unlinks, one batch appended to another; and, as
 * each key goes in, what a write makes stale: the caches its key names
 * and the entities whose outbox rows it adds (their marks are set once
 * it is done, ngx_http_tent_store.c).
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store_private.h"


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
static void ngx_http_tent_store_write_count(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_store_outbox_add(ngx_http_tent_store_op_full_t *sop,
    ngx_uint_t hash);


/*
 * A fence is appended last, behind the entries (ngx_http_tent_store_fence.c):
 * an entry after it would be read as its trailer, so none is taken.
 */

static ngx_inline ngx_uint_t
ngx_http_tent_store_fenced_op(ngx_http_tent_store_op_full_t *sop)
{
    return sop->req_len >= 2 && (sop->req[1] & NGX_HTTP_TENT_OP_FENCE);
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

    if (caches & NGX_HTTP_TENT_CACHE_BLOCKS) {
        sop->blocks = 1;
    }

    if (caches & NGX_HTTP_TENT_CACHE_DOMAINS) {
        sop->domains = 1;
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


/* the bytes of an operation's request so far (a batch's size) */

size_t
ngx_http_tent_store_op_size(ngx_http_tent_store_op_t *op)
{
    return ngx_http_tent_sop(op)->req_len;
}
