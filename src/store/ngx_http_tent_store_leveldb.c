
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * LevelDB, and nothing else: the only file that calls it.  Opening and
 * closing the database, and the executor: every operation decoded from
 * its bytes and run (a read, a write batch, a scan, a multi-get), and the
 * compare-and-sets of a group.  All of it runs on a pool thread; when it
 * runs is the owner's business (ngx_http_tent_store_owner.c, _exec.c).
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_store_private.h"

#include <leveldb/c.h>


struct ngx_http_tent_ldb_s {
    leveldb_t                  *db;
    leveldb_options_t          *options;
    leveldb_filterpolicy_t     *bloom;
    leveldb_readoptions_t      *read;
    leveldb_writeoptions_t     *write_sync;
    leveldb_writeoptions_t     *write_async;
    char                       *path;
    char                       *error;
    char                       *files;      /* attachments, or NULL */

    /*
     * A failed write (a full disk, a read-only file system) may leave
     * half a record at the end of LevelDB's log, and records written
     * after it could not be read back when the log is replayed.  So once
     * a write fails no other write is tried: the database is reopened
     * (the replay drops the half record) as soon as there is room.
     * write_failed is set by pool threads.
     */
    volatile ngx_atomic_t       write_failed;
};


static void ngx_http_tent_out_write_failed(ngx_http_tent_ldb_t *ldb,
    ngx_http_tent_out_t *out, const char *message);
static ngx_int_t ngx_http_tent_ldb_batch(ngx_http_tent_ldb_req_t *rq,
    leveldb_writebatch_t *batch, ngx_array_t *keys);
static void ngx_http_tent_exec_get(ngx_http_tent_ldb_t *ldb,
    ngx_http_tent_ldb_req_t *rq, ngx_http_tent_out_t *out);
static void ngx_http_tent_exec_write(ngx_http_tent_ldb_t *ldb,
    ngx_http_tent_ldb_req_t *rq, ngx_http_tent_out_t *out);
static void ngx_http_tent_exec_mget(ngx_http_tent_ldb_t *ldb,
    ngx_http_tent_ldb_req_t *rq, ngx_http_tent_out_t *out);
static void ngx_http_tent_exec_scan(ngx_http_tent_ldb_t *ldb,
    ngx_http_tent_ldb_req_t *rq, ngx_http_tent_out_t *out);
static ngx_int_t ngx_http_tent_cas_written(ngx_str_t *keys, ngx_uint_t n,
    ngx_str_t *key);
static ngx_int_t ngx_http_tent_cas_files(ngx_http_tent_ldb_t *ldb,
    ngx_http_tent_ldb_req_t *rq, ngx_uint_t kind, ngx_log_t *log);


ngx_http_tent_ldb_t *
ngx_http_tent_ldb_create(ngx_pool_t *pool, char *path)
{
    ngx_http_tent_ldb_t  *ldb;

    ldb = ngx_pcalloc(pool, sizeof(ngx_http_tent_ldb_t));
    if (ldb == NULL) {
        return NULL;
    }

    ldb->path = path;
    ldb->options = leveldb_options_create();
    ldb->bloom = leveldb_filterpolicy_create_bloom(10);
    ldb->read = leveldb_readoptions_create();
    ldb->write_sync = leveldb_writeoptions_create();
    ldb->write_async = leveldb_writeoptions_create();

    if (ldb->options == NULL || ldb->bloom == NULL || ldb->read == NULL
        || ldb->write_sync == NULL || ldb->write_async == NULL)
    {
        return NULL;
    }

    leveldb_options_set_create_if_missing(ldb->options, 1);

    /*
     * Most reads of a write look for a key that is not there (a new
     * post's id, an idempotency key): a bloom filter answers those
     * without reading a block of each table.
     */

    leveldb_options_set_filter_policy(ldb->options, ldb->bloom);
    leveldb_writeoptions_set_sync(ldb->write_sync, 1);
    leveldb_writeoptions_set_sync(ldb->write_async, 0);

    return ldb;
}


/*
 * On a pool thread.  A database opened again after a failed write starts
 * with writes allowed: the replay of its log dropped the half record.
 */

void
ngx_http_tent_ldb_open(ngx_http_tent_ldb_t *ldb)
{
    char  *err;

    err = NULL;
    ldb->write_failed = 0;

    ldb->db = leveldb_open(ldb->options, ldb->path, &err);

    if (ldb->db == NULL) {
        ldb->error = err;

    } else if (err) {
        leveldb_free(err);
    }
}


/* where the owner keeps attachment files; without it a CAS naming one fails */

void
ngx_http_tent_ldb_files(ngx_http_tent_ldb_t *ldb, char *dir)
{
    ldb->files = dir;
}


/*
 * tent_store_write_buffer: the bytes of a memtable, before open.  A
 * fan-out's rows are spread over the whole key space (each recipient's
 * keys start with its entity), so every table flushed from a memtable
 * overlaps all of level 1, and each compaction of level 0 rewrites that
 * level: the bigger the memtable, the fewer of them (docs/store.md).
 */

void
ngx_http_tent_ldb_write_buffer(ngx_http_tent_ldb_t *ldb, size_t size)
{
    leveldb_options_set_write_buffer_size(ldb->options, size);
}


/*
 * The memtable to a table now, the work that filled it being over: its
 * memory goes back, and the next open (a reload, a restart) replays a
 * short log.  LevelDB's C API has no flush; compacting a range that no
 * key of ours is in does it (CompactRange() writes the memtable first)
 * and compacts nothing else, but it waits for a compaction LevelDB has
 * under way or due, which a close (a reload) would have cut short: so
 * none is done while one is due (NGX_DECLINED: later).  On a pool
 * thread: it waits for the write.
 */

ngx_int_t
ngx_http_tent_ldb_flush(ngx_http_tent_ldb_t *ldb)
{
    static const char  from[] = "\xff\xff\xff\xff\xff\xff\xff\xfe";
    static const char  to[] = "\xff\xff\xff\xff\xff\xff\xff\xff";

    char        *stats;
    ngx_uint_t   due;

    if (ldb->db == NULL) {
        return NGX_DECLINED;
    }

    /* would LevelDB compact now (ngx_http_tent_store_stats.c) */

    stats = leveldb_property_value(ldb->db, "leveldb.stats");
    due = (stats == NULL || ngx_http_tent_ldb_stats_due(stats));
    leveldb_free(stats);

    if (due) {
        return NGX_DECLINED;
    }

    leveldb_compact_range(ldb->db, from, sizeof(from) - 1, to, sizeof(to) - 1);

    return NGX_OK;
}


ngx_uint_t
ngx_http_tent_ldb_is_open(ngx_http_tent_ldb_t *ldb)
{
    return ldb->db != NULL;
}


/* why the last open failed, until ngx_http_tent_ldb_forget_error() */

const char *
ngx_http_tent_ldb_error(ngx_http_tent_ldb_t *ldb)
{
    return ldb->error;
}


void
ngx_http_tent_ldb_forget_error(ngx_http_tent_ldb_t *ldb)
{
    if (ldb->error) {
        leveldb_free(ldb->error);
        ldb->error = NULL;
    }
}


ngx_uint_t
ngx_http_tent_ldb_write_failed(ngx_http_tent_ldb_t *ldb)
{
    return ldb->write_failed;
}


/* on a pool thread, or at exit once the pool has joined its threads */

void
ngx_http_tent_ldb_close(ngx_http_tent_ldb_t *ldb)
{
    if (ldb->db) {
        leveldb_close(ldb->db);
        ldb->db = NULL;
    }
}


void
ngx_http_tent_ldb_destroy(ngx_http_tent_ldb_t *ldb)
{
    /* an open that failed and was never looked at */
    ngx_http_tent_ldb_forget_error(ldb);

    ngx_http_tent_ldb_close(ldb);

    leveldb_options_destroy(ldb->options);
    leveldb_filterpolicy_destroy(ldb->bloom);
    leveldb_readoptions_destroy(ldb->read);
    leveldb_writeoptions_destroy(ldb->write_sync);
    leveldb_writeoptions_destroy(ldb->write_async);
}


/* the executor: runs on a pool thread, parses the bytes it is given */

/* a write that failed answers 503, and no other is tried (see the ldb) */

static void
ngx_http_tent_out_write_failed(ngx_http_tent_ldb_t *ldb,
    ngx_http_tent_out_t *out, const char *message)
{
    ldb->write_failed = 1;

    ngx_http_tent_out_status(out, NGX_HTTP_TENT_STORE_UNAVAILABLE);
    ngx_http_tent_out_put(out, message, ngx_strlen(message));
}


/*
 * A decoded batch's puts and deletes into a LevelDB one, and their keys
 * into "keys" when given.  The decoder checked the entries: NGX_ERROR is
 * "keys" out of memory.
 */

static ngx_int_t
ngx_http_tent_ldb_batch(ngx_http_tent_ldb_req_t *rq,
    leveldb_writebatch_t *batch, ngx_array_t *keys)
{
    uint32_t             i;
    ngx_str_t            key, value, *k;
    ngx_uint_t           kind;
    ngx_http_tent_in_t   in;

    in = rq->items;

    for (i = 0; i < rq->n; i++) {
        if (ngx_http_tent_in_entry(&in, &kind, &key, &value) != NGX_OK) {
            return NGX_ERROR;
        }

        if (kind == NGX_HTTP_TENT_WRITE_PUT) {
            leveldb_writebatch_put(batch, (char *) key.data, key.len,
                                   (char *) value.data, value.len);

        } else if (kind == NGX_HTTP_TENT_WRITE_DEL) {
            leveldb_writebatch_delete(batch, (char *) key.data, key.len);

        } else {
            /* a file: ngx_http_tent_cas_files() */
            continue;
        }

        if (keys) {
            k = ngx_array_push(keys);
            if (k == NULL) {
                return NGX_ERROR;
            }

            *k = key;
        }
    }

    return NGX_OK;
}


static void
ngx_http_tent_exec_get(ngx_http_tent_ldb_t *ldb, ngx_http_tent_ldb_req_t *rq,
    ngx_http_tent_out_t *out)
{
    char    *err, *v;
    size_t   vlen;

    err = NULL;
    v = leveldb_get(ldb->db, ldb->read, (char *) rq->key.data, rq->key.len,
                    &vlen, &err);

    if (err) {
        ngx_http_tent_out_error(out, err);
        leveldb_free(err);
        return;
    }

    if (v == NULL) {
        ngx_http_tent_out_status(out, NGX_HTTP_TENT_STORE_NOT_FOUND);
        return;
    }

    ngx_http_tent_out_put(out, v, vlen);
    leveldb_free(v);
}


static void
ngx_http_tent_exec_write(ngx_http_tent_ldb_t *ldb,
    ngx_http_tent_ldb_req_t *rq, ngx_http_tent_out_t *out)
{
    char                  *err;
    leveldb_writebatch_t  *batch;

    batch = leveldb_writebatch_create();
    if (batch == NULL) {
        ngx_http_tent_out_error(out, "out of memory");
        return;
    }

    (void) ngx_http_tent_ldb_batch(rq, batch, NULL);

    /*
     * Concurrent synced writes from several pool threads are grouped by
     * LevelDB into one log write and one fsync.
     */

    err = NULL;
    leveldb_write(ldb->db, (rq->flags & NGX_HTTP_TENT_OP_SYNC)
                           ? ldb->write_sync : ldb->write_async,
                  batch, &err);

    if (err) {
        ngx_http_tent_out_write_failed(ldb, out, err);
        leveldb_free(err);
    }

    leveldb_writebatch_destroy(batch);
}


static void
ngx_http_tent_exec_mget(ngx_http_tent_ldb_t *ldb,
    ngx_http_tent_ldb_req_t *rq, ngx_http_tent_out_t *out)
{
    char                *err, *v;
    size_t               vlen;
    uint32_t             i;
    ngx_str_t            key;
    ngx_http_tent_in_t   in;

    in = rq->items;

    for (i = 0; i < rq->n; i++) {
        (void) ngx_http_tent_in_str(&in, &key);

        err = NULL;
        v = leveldb_get(ldb->db, ldb->read, (char *) key.data, key.len,
                        &vlen, &err);

        if (err) {
            ngx_http_tent_out_error(out, err);
            leveldb_free(err);
            return;
        }

        if (v == NULL) {
            ngx_http_tent_out_put(out, "\0", 1);
            continue;
        }

        ngx_http_tent_out_put(out, "\1", 1);
        ngx_http_tent_out_str(out, v, vlen);
        leveldb_free(v);
    }
}


static void
ngx_http_tent_exec_scan(ngx_http_tent_ldb_t *ldb,
    ngx_http_tent_ldb_req_t *rq, ngx_http_tent_out_t *out)
{
    size_t               klen, vlen;
    uint32_t             count;
    const char          *k, *v;
    leveldb_iterator_t  *it;

    it = leveldb_create_iterator(ldb->db, ldb->read);
    if (it == NULL) {
        ngx_http_tent_out_error(out, "out of memory");
        return;
    }

    if (!rq->reverse) {
        leveldb_iter_seek(it, (char *) rq->start.data, rq->start.len);

    } else if (rq->end.len) {
        leveldb_iter_seek(it, (char *) rq->end.data, rq->end.len);

        if (leveldb_iter_valid(it)) {
            leveldb_iter_prev(it);

        } else {
            leveldb_iter_seek_to_last(it);
        }

    } else {
        leveldb_iter_seek_to_last(it);
    }

    /* a reply stays well inside one IPC frame */

    for (count = 0;
         leveldb_iter_valid(it) && (rq->limit == 0 || count < rq->limit)
         && out->len < NGX_HTTP_TENT_MAX_FRAME / 4;
         count++)
    {
        k = leveldb_iter_key(it, &klen);

        if (rq->reverse) {
            if (ngx_http_tent_key_cmp(k, klen, &rq->start) < 0) {
                break;
            }

        } else if (rq->end.len
                   && ngx_http_tent_key_cmp(k, klen, &rq->end) >= 0)
        {
            break;
        }

        v = leveldb_iter_value(it, &vlen);

        ngx_http_tent_out_str(out, k, klen);
        ngx_http_tent_out_str(out, v, vlen);

        if (rq->reverse) {
            leveldb_iter_prev(it);

        } else {
            leveldb_iter_next(it);
        }
    }

    leveldb_iter_destroy(it);
}


/*
 * Every operation but a compare-and-set: those run in groups, below.
 * The result, malloc()ed, is the status byte and the payload; NGX_ERROR
 * when there was no memory for it.
 */

ngx_int_t
ngx_http_tent_ldb_exec(ngx_http_tent_ldb_t *ldb, u_char *req, size_t len,
    u_char **res, size_t *res_len)
{
    const char               *malformed;
    ngx_http_tent_out_t       out;
    ngx_http_tent_ldb_req_t   rq;

    ngx_memzero(&out, sizeof(ngx_http_tent_out_t));

    ngx_http_tent_out_put(&out, "\0", 1);

    if (out.failed) {
        return NGX_ERROR;
    }

    malformed = ngx_http_tent_ldb_decode(req, len, &rq);

    /* once op and flags are read: a closed database says so first */

    if (len >= 2
        && (ldb == NULL || ldb->db == NULL
            || (ldb->write_failed && (rq.op == NGX_HTTP_TENT_OP_CAS
                                      || rq.op == NGX_HTTP_TENT_OP_WRITE))))
    {
        ngx_http_tent_out_status(&out, NGX_HTTP_TENT_STORE_UNAVAILABLE);
        goto done;
    }

    if (malformed) {
        ngx_http_tent_out_error(&out, malformed);
        goto done;
    }

    switch (rq.op) {

    case NGX_HTTP_TENT_OP_GET:
        ngx_http_tent_exec_get(ldb, &rq, &out);
        break;

    case NGX_HTTP_TENT_OP_WRITE:
        ngx_http_tent_exec_write(ldb, &rq, &out);
        break;

    case NGX_HTTP_TENT_OP_SCAN:
        ngx_http_tent_exec_scan(ldb, &rq, &out);
        break;

    case NGX_HTTP_TENT_OP_MGET:
        ngx_http_tent_exec_mget(ldb, &rq, &out);
        break;

    default:
        /* NGX_HTTP_TENT_OP_CAS: the owner sends those to a group */
        ngx_http_tent_out_error(&out, "a compare-and-set runs in a group");
        break;
    }

done:

    if (out.failed) {
        free(out.data);
        return NGX_ERROR;
    }

    *res = out.data;
    *res_len = out.len;

    return NGX_OK;
}


/* has an earlier member of the group written this key */

static ngx_int_t
ngx_http_tent_cas_written(ngx_str_t *keys, ngx_uint_t n, ngx_str_t *key)
{
    ngx_uint_t  i;

    for (i = 0; i < n; i++) {
        if (keys[i].len == key->len
            && ngx_memcmp(keys[i].data, key->data, key->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/*
 * A compare-and-set's attachment files of one kind: FILE, written
 * before the group's batch (NGX_ERROR: the file system refused one, it
 * does not hold; NGX_DECLINED: no directory), or UNLINK, removed once
 * the batch is written.
 */

static ngx_int_t
ngx_http_tent_cas_files(ngx_http_tent_ldb_t *ldb, ngx_http_tent_ldb_req_t *rq,
    ngx_uint_t kind, ngx_log_t *log)
{
    uint32_t            i;
    ngx_str_t           name, bytes;
    ngx_uint_t          k;
    ngx_http_tent_in_t  in;

    in = rq->items;

    for (i = 0; i < rq->n; i++) {
        (void) ngx_http_tent_in_entry(&in, &k, &name, &bytes);

        if (k != NGX_HTTP_TENT_WRITE_FILE && k != NGX_HTTP_TENT_WRITE_UNLINK) {
            continue;
        }

        /* no directory (fuzz_store): a CAS naming files does not hold */

        if (ldb->files == NULL) {
            return NGX_DECLINED;
        }

        if (k != kind) {
            continue;
        }

        if (kind == NGX_HTTP_TENT_WRITE_UNLINK) {
            ngx_http_tent_files_unlink(ldb->files, &name, log);

        } else if (ngx_http_tent_files_write(ldb->files, &name, &bytes, log)
                   != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * The compare-and-sets of a group (docs/store.md), the only way one
 * runs: each is read and compared in turn, those that hold go into one
 * synced write.  g->ran of them are answered in g->res (NULL: no memory),
 * the rest wait for the next group.
 */

void
ngx_http_tent_ldb_cas_group(ngx_http_tent_ldb_t *ldb,
    ngx_http_tent_cas_group_t *g, ngx_log_t *log)
{
    char                           *err, *v;
    size_t                          vlen;
    ngx_int_t                       rc;
    ngx_str_t                      *k;
    ngx_uint_t                      i, j, accepted;
    ngx_pool_t                     *pool;
    const char                     *malformed;
    ngx_array_t                     keys;
    ngx_http_tent_out_t             out[NGX_HTTP_TENT_CAS_GROUP];
    leveldb_writebatch_t           *batch;
    ngx_http_tent_ldb_req_t         rq;
    ngx_http_tent_store_op_full_t  *sop;

    accepted = 0;
    batch = NULL;

    ngx_memzero(out, sizeof(out));

    pool = ngx_create_pool(4096, log);
    if (pool == NULL
        || ngx_array_init(&keys, pool, 64, sizeof(ngx_str_t)) != NGX_OK
        || (batch = leveldb_writebatch_create()) == NULL)
    {
        goto failed;
    }

    for (i = 0; i < g->n; i++) {
        ngx_http_tent_out_put(&out[i], "\0", 1);

        if (out[i].failed) {
            /* answered "out of memory" */
            continue;
        }

        sop = ngx_http_tent_sop(g->ops[i]);

        malformed = ngx_http_tent_ldb_decode(sop->req, sop->req_len, &rq);

        if (malformed || rq.op != NGX_HTTP_TENT_OP_CAS) {
            ngx_http_tent_out_error(&out[i], "malformed cas");
            continue;
        }

        /* an earlier member writes this key: the next group reads it */

        if (ngx_http_tent_cas_written(keys.elts, keys.nelts, &rq.key)) {
            break;
        }

        if (ldb == NULL || ldb->db == NULL || ldb->write_failed) {
            ngx_http_tent_out_status(&out[i],
                                     NGX_HTTP_TENT_STORE_UNAVAILABLE);
            continue;
        }

        err = NULL;
        v = leveldb_get(ldb->db, ldb->read, (char *) rq.key.data, rq.key.len,
                        &vlen, &err);

        if (err) {
            ngx_http_tent_out_error(&out[i], err);
            leveldb_free(err);
            continue;
        }

        if (v == NULL && rq.has) {
            ngx_http_tent_out_status(&out[i], NGX_HTTP_TENT_STORE_NOT_FOUND);
            continue;
        }

        if (v && (!rq.has || ngx_http_tent_key_cmp(v, vlen, &rq.expected) != 0))
        {
            ngx_http_tent_out_status(&out[i], NGX_HTTP_TENT_STORE_CONFLICT);
            ngx_http_tent_out_put(&out[i], v, vlen);
            leveldb_free(v);
            continue;
        }

        if (v) {
            leveldb_free(v);
        }

        /*
         * it holds: its attachment files first (a count is never written
         * without its file), then its value and batch join the write
         */

        rc = ngx_http_tent_cas_files(ldb, &rq, NGX_HTTP_TENT_WRITE_FILE,
                                     log);

        if (rc == NGX_ERROR) {

            /*
             * A full or read-only disk, as when LevelDB's own write
             * fails: writes are refused until the owner's probe finds
             * room and reopens the store
             */

            ngx_http_tent_out_write_failed(ldb, &out[i],
                                           "writing an attachment file "
                                           "failed (see the error log)");
            continue;
        }

        if (rc != NGX_OK) {
            ngx_http_tent_out_status(&out[i],
                                     NGX_HTTP_TENT_STORE_UNAVAILABLE);
            continue;
        }

        leveldb_writebatch_put(batch, (char *) rq.key.data, rq.key.len,
                               (char *) rq.value.data, rq.value.len);

        k = ngx_array_push(&keys);
        if (k == NULL) {
            goto failed;
        }

        *k = rq.key;

        if (ngx_http_tent_ldb_batch(&rq, batch, &keys) != NGX_OK) {
            goto failed;
        }

        ngx_http_tent_out_status(&out[i], NGX_HTTP_TENT_STORE_OK);
        accepted++;
    }

    g->ran = i;

    if (accepted) {
        err = NULL;
        leveldb_write(ldb->db, ldb->write_sync, batch, &err);

        if (err) {
            for (j = 0; j < g->ran; j++) {
                if (out[j].len == 1 && out[j].data[0] == NGX_HTTP_TENT_STORE_OK)
                {
                    ngx_http_tent_out_write_failed(ldb, &out[j], err);
                }
            }

            leveldb_free(err);

        } else {
            /* the counts that went are written: their files go now */

            for (j = 0; j < g->ran; j++) {
                if (out[j].len == 1 && out[j].data[0] == NGX_HTTP_TENT_STORE_OK)
                {
                    sop = ngx_http_tent_sop(g->ops[j]);
                    (void) ngx_http_tent_ldb_decode(sop->req, sop->req_len,
                                                    &rq);
                    (void) ngx_http_tent_cas_files(ldb, &rq,
                                                   NGX_HTTP_TENT_WRITE_UNLINK,
                                                   log);
                }
            }
        }
    }

    for (j = 0; j < g->ran; j++) {
        g->res[j] = out[j].failed ? NULL : out[j].data;
        g->res_len[j] = out[j].len;

        if (out[j].failed) {
            free(out[j].data);
        }
    }

    for (j = g->ran; j < g->n; j++) {
        free(out[j].data);
    }

    leveldb_writebatch_destroy(batch);
    ngx_destroy_pool(pool);

    return;

failed:

    /* no memory for the group: each gets an error, none is written */

    for (j = 0; j < g->n; j++) {
        free(out[j].data);
        g->res[j] = NULL;
    }

    g->ran = g->n;

    if (batch) {
        leveldb_writebatch_destroy(batch);
    }

    if (pool) {
        ngx_destroy_pool(pool);
    }
}
