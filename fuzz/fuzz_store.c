
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The store's executor, fed as the owner feeds it
 * (ngx_http_tent_store_owner_exec.c): compare-and-sets in groups, through
 * ngx_http_tent_ldb_cas_group(), the one way they run; every other
 * operation through ngx_http_tent_ldb_exec().  Both decode what the
 * socket delivers with one decoder (docs/store.md: "u8 op, u8 flags,
 * arguments", strings as "u32 length, bytes", integers big-endian) and
 * run it against a real LevelDB, opened in a temporary directory (in
 * /dev/shm when there is one) and destroyed once more than
 * NGX_FUZZ_STORE_BOUND bytes of writes went in since it was opened, so
 * that the database stays small.
 *
 * Input: one or more requests, each "u32 length, request"; bytes that
 * do not frame are run as one last request.  The compare-and-sets the
 * owner would group (op CAS, more than 2 bytes) gather, up to a group,
 * until another request comes (or the input ends): they run as a group
 * then, and those it leaves go first in the next one, as in the owner.
 *
 * Replies are checked: a known status byte; a SCAN's pairs framed
 * exactly, in key order, within [start, end), no more than "limit".  A
 * group's answers are those of running its members one by one: each key
 * is read before the group, an OK found the expected value (or none),
 * a CONFLICT carries the value there was, NOT_FOUND means one was
 * expected; after it, each key the members that held wrote reads back as
 * the last of them wrote it; and the first member left over has a key an
 * earlier one writes.
 */


#include "../src/store/ngx_http_tent_store_leveldb.c"
#include "../src/store/ngx_http_tent_store_codec.c"
/* the file names' hex check (ngx_http_tent_hex_valid) */
#include "../src/base/ngx_http_tent_util.c"

#include "fuzz.h"

#include <dirent.h>
#include <unistd.h>


/*
 * Every 1000 inputs, as before, let some 20 KB of writes pile up, and a
 * SCAN (reverse ones most: each step is a seek in the memtable) walks
 * all of them: the last 100 inputs before a reset ran 5 times slower
 * than the first 100.  A reset costs some 0.5 ms; with 2 KB it comes
 * every 100 inputs or so.
 */
#define NGX_FUZZ_STORE_BOUND  2048


static ngx_pool_t                     *ngx_fuzz_pool;
static ngx_http_tent_ldb_t            *ngx_fuzz_ldb;
static char                            ngx_fuzz_dir[256];
static size_t                          ngx_fuzz_written;
static ngx_uint_t                      ngx_fuzz_verbose;

/* the compare-and-sets waiting for their group, as the owner's queue */
static ngx_http_tent_cas_group_t       ngx_fuzz_group;
static ngx_http_tent_store_op_full_t   ngx_fuzz_ops[NGX_HTTP_TENT_CAS_GROUP];
static ngx_uint_t                      ngx_fuzz_waiting;


static void
ngx_fuzz_store_open(void)
{
    char  *err;

    err = NULL;
    ngx_fuzz_ldb->db = leveldb_open(ngx_fuzz_ldb->options, ngx_fuzz_dir, &err);

    if (ngx_fuzz_ldb->db == NULL) {
        fprintf(stderr, "fuzz_store: leveldb_open(\"%s\"): %s\n",
                ngx_fuzz_dir, err ? err : "?");
        exit(1);
    }
}


static void
ngx_fuzz_store_destroy(void)
{
    char  *err;

    if (ngx_fuzz_ldb->db) {
        leveldb_close(ngx_fuzz_ldb->db);
        ngx_fuzz_ldb->db = NULL;
    }

    /* as ngx_http_tent_owner_reopen_thread() does: a new database */
    ngx_fuzz_ldb->write_failed = 0;
    ngx_fuzz_written = 0;

    err = NULL;
    leveldb_destroy_db(ngx_fuzz_ldb->options, ngx_fuzz_dir, &err);

    if (err) {
        leveldb_free(err);
    }
}


static void
ngx_fuzz_store_exit(void)
{
    ngx_fuzz_store_destroy();
    (void) rmdir(ngx_fuzz_dir);

    ngx_http_tent_ldb_destroy(ngx_fuzz_ldb);
    ngx_destroy_pool(ngx_fuzz_pool);
}


int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char  *tmp;

    tmp = getenv("TENT_FUZZ_TMPDIR");

    if (tmp == NULL) {
        tmp = (access("/dev/shm", W_OK) == 0) ? "/dev/shm" : getenv("TMPDIR");
    }

    if (tmp == NULL) {
        tmp = "/tmp";
    }

    snprintf(ngx_fuzz_dir, sizeof(ngx_fuzz_dir), "%s/tent-fuzz-store.XXXXXX",
             tmp);

    if (mkdtemp(ngx_fuzz_dir) == NULL) {
        perror("fuzz_store: mkdtemp");
        exit(1);
    }

    /*
     * as ngx_http_tent_owner_start() sets it up, but for a smaller write
     * buffer: the database is reset often, and a small one keeps the
     * resets cheap
     */

    ngx_fuzz_pool = ngx_create_pool(4096, &ngx_fuzz_log);

    ngx_fuzz_ldb = (ngx_fuzz_pool == NULL) ? NULL
                   : ngx_http_tent_ldb_create(ngx_fuzz_pool, ngx_fuzz_dir);

    if (ngx_fuzz_ldb == NULL) {
        fprintf(stderr, "fuzz_store: ngx_http_tent_ldb_create() failed\n");
        exit(1);
    }

    leveldb_options_set_write_buffer_size(ngx_fuzz_ldb->options, 1 << 20);

    ngx_fuzz_store_open();

    /* NGX_FUZZ_LOG=1: each request's reply status, e.g. to check seeds */
    ngx_fuzz_verbose = (getenv("NGX_FUZZ_LOG") != NULL);

    atexit(ngx_fuzz_store_exit);

    return 0;
}


static uint32_t
ngx_fuzz_u32(u_char *p)
{
    return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16)
           | ((uint32_t) p[2] << 8) | p[3];
}


static int
ngx_fuzz_cmp(u_char *a, size_t alen, u_char *b, size_t blen)
{
    int  rc;

    rc = memcmp(a, b, ngx_min(alen, blen));

    if (rc != 0) {
        return rc;
    }

    return (alen < blen) ? -1 : (alen > blen);
}


/* a well-formed SCAN request: its arguments, for checking the reply */

static ngx_int_t
ngx_fuzz_scan_args(u_char *req, size_t len, ngx_str_t *start, ngx_str_t *end,
    uint32_t *limit, ngx_uint_t *reverse)
{
    u_char  *p, *last;

    p = req + 2;
    last = req + len;

    if (last - p < 4 || (size_t) (last - p - 4) < ngx_fuzz_u32(p)) {
        return NGX_ERROR;
    }

    start->len = ngx_fuzz_u32(p);
    start->data = p + 4;
    p += 4 + start->len;

    if (last - p < 4 || (size_t) (last - p - 4) < ngx_fuzz_u32(p)) {
        return NGX_ERROR;
    }

    end->len = ngx_fuzz_u32(p);
    end->data = p + 4;
    p += 4 + end->len;

    if (last - p != 5) {
        return NGX_ERROR;
    }

    *limit = ngx_fuzz_u32(p);
    *reverse = p[4];

    return NGX_OK;
}


static void
ngx_fuzz_check_scan(u_char *req, size_t len, u_char *res, size_t res_len)
{
    u_char      *p, *last, *prev;
    size_t       n, prev_len;
    uint32_t     limit, count;
    ngx_str_t    start, end, key;
    ngx_uint_t   reverse;

    if (ngx_fuzz_scan_args(req, len, &start, &end, &limit, &reverse)
        != NGX_OK)
    {
        /* the executor took it: so must we */
        ngx_fuzz_assert(0);
    }

    p = res + 1;
    last = res + res_len;
    prev = NULL;
    prev_len = 0;

    for (count = 0; p < last; count++) {

        /* the key */
        ngx_fuzz_assert(last - p >= 4);
        n = ngx_fuzz_u32(p);
        ngx_fuzz_assert((size_t) (last - p - 4) >= n);
        key.data = p + 4;
        key.len = n;
        p += 4 + n;

        /* the value */
        ngx_fuzz_assert(last - p >= 4);
        n = ngx_fuzz_u32(p);
        ngx_fuzz_assert((size_t) (last - p - 4) >= n);
        p += 4 + n;

        /* either way: start <= key < end (no end: unbounded) */

        ngx_fuzz_assert(ngx_fuzz_cmp(key.data, key.len, start.data,
                                     start.len) >= 0);

        if (end.len) {
            ngx_fuzz_assert(ngx_fuzz_cmp(key.data, key.len, end.data,
                                         end.len) < 0);
        }

        if (prev) {
            if (reverse) {
                ngx_fuzz_assert(ngx_fuzz_cmp(key.data, key.len, prev,
                                             prev_len) < 0);
            } else {
                ngx_fuzz_assert(ngx_fuzz_cmp(key.data, key.len, prev,
                                             prev_len) > 0);
            }
        }

        prev = key.data;
        prev_len = key.len;
    }

    ngx_fuzz_assert(p == last);
    ngx_fuzz_assert(limit == 0 || count <= limit);
}


/* the executor's answer to a GET of "key"; freed by the caller */

static u_char *
ngx_fuzz_get(ngx_str_t *key, size_t *res_len)
{
    u_char     *req, *res;
    ngx_int_t   rc;

    req = malloc(6 + key->len);
    ngx_fuzz_assert(req != NULL);

    req[0] = NGX_HTTP_TENT_OP_GET;
    req[1] = 0;
    req[2] = (u_char) (key->len >> 24);
    req[3] = (u_char) (key->len >> 16);
    req[4] = (u_char) (key->len >> 8);
    req[5] = (u_char) key->len;
    ngx_memcpy(req + 6, key->data, key->len);

    res = NULL;
    rc = ngx_http_tent_ldb_exec(ngx_fuzz_ldb, req, 6 + key->len, &res,
                                res_len);

    ngx_fuzz_assert(rc == NGX_OK && res != NULL);
    ngx_fuzz_assert(res[0] == NGX_HTTP_TENT_STORE_OK
                    || res[0] == NGX_HTTP_TENT_STORE_NOT_FOUND);

    free(req);

    return res;
}


static ngx_int_t
ngx_fuzz_str_eq(ngx_str_t *a, ngx_str_t *b)
{
    return a->len == b->len && ngx_memcmp(a->data, b->data, a->len) == 0;
}


static ngx_int_t
ngx_fuzz_key_in(ngx_str_t *keys, ngx_uint_t n, ngx_str_t *key)
{
    ngx_uint_t  i;

    for (i = 0; i < n; i++) {
        if (ngx_fuzz_str_eq(&keys[i], key)) {
            return 1;
        }
    }

    return 0;
}


/*
 * After a group: "key" reads back as the last write of the members that
 * held left it (members before "upto"), a put of its value or a delete.
 */

static void
ngx_fuzz_check_written(ngx_str_t *key, ngx_uint_t upto, u_char *status)
{
    u_char                   *res;
    size_t                    res_len;
    uint32_t                  j;
    ngx_str_t                 k, v, last;
    ngx_uint_t                i, kind, found;
    ngx_http_tent_in_t        in;
    ngx_http_tent_ldb_req_t   rq;

    found = 0;
    ngx_str_null(&last);

    for (i = 0; i < upto; i++) {
        if (status[i] != NGX_HTTP_TENT_STORE_OK) {
            continue;
        }

        (void) ngx_http_tent_ldb_decode(ngx_fuzz_ops[i].req,
                                        ngx_fuzz_ops[i].req_len, &rq);

        if (ngx_fuzz_str_eq(&rq.key, key)) {
            found = 1;
            last = rq.value;
        }

        in = rq.items;

        for (j = 0; j < rq.n; j++) {
            ngx_fuzz_assert(ngx_http_tent_in_entry(&in, &kind, &k, &v)
                            == NGX_OK);

            if (ngx_fuzz_str_eq(&k, key)) {
                found = (kind == NGX_HTTP_TENT_WRITE_PUT);
                last = v;
            }
        }
    }

    res = ngx_fuzz_get(key, &res_len);

    if (found) {
        ngx_fuzz_assert(res[0] == NGX_HTTP_TENT_STORE_OK);
        ngx_fuzz_assert(res_len - 1 == last.len
                        && ngx_memcmp(res + 1, last.data, last.len) == 0);

    } else {
        ngx_fuzz_assert(res[0] == NGX_HTTP_TENT_STORE_NOT_FOUND);
    }

    free(res);
}


/* the waiting compare-and-sets, one group after another, as the owner */

static void
ngx_fuzz_run_group(void)
{
    u_char                     *before[NGX_HTTP_TENT_CAS_GROUP], *res;
    u_char                      status[NGX_HTTP_TENT_CAS_GROUP];
    size_t                      before_len[NGX_HTTP_TENT_CAS_GROUP], len;
    uint32_t                    j;
    ngx_str_t                   k, v, *keys;
    ngx_uint_t                  i, n, m, kind, nkeys;
    ngx_http_tent_in_t          in;
    ngx_http_tent_ldb_req_t     rq;
    ngx_http_tent_cas_group_t  *g;

    g = &ngx_fuzz_group;

    while (ngx_fuzz_waiting) {
        n = ngx_fuzz_waiting;

        ngx_memzero(g, sizeof(ngx_http_tent_cas_group_t));
        g->n = n;

        /* each member's key as it is before the group */

        for (i = 0; i < n; i++) {
            g->ops[i] = &ngx_fuzz_ops[i].op;
            before[i] = NULL;

            if (ngx_http_tent_ldb_decode(ngx_fuzz_ops[i].req,
                                         ngx_fuzz_ops[i].req_len, &rq)
                == NULL)
            {
                before[i] = ngx_fuzz_get(&rq.key, &before_len[i]);
            }
        }

        ngx_http_tent_ldb_cas_group(ngx_fuzz_ldb, g, &ngx_fuzz_log);

        /* the first member never waits: every group makes progress */
        ngx_fuzz_assert(g->ran >= 1 && g->ran <= n);

        for (i = 0; i < g->ran; i++) {
            res = g->res[i];
            len = g->res_len[i];

            ngx_fuzz_assert(res != NULL && len >= 1);

            status[i] = res[0];

            if (ngx_fuzz_verbose) {
                fprintf(stderr, "store: cas %d of %d, %zu bytes: "
                        "status %d, %zu bytes%s%.*s\n",
                        (int) i + 1, (int) n, ngx_fuzz_ops[i].req_len,
                        res[0], len - 1,
                        res[0] == NGX_HTTP_TENT_STORE_ERROR ? ": " : "",
                        res[0] == NGX_HTTP_TENT_STORE_ERROR
                        ? (int) len - 1 : 0, res + 1);
            }

            if (before[i] == NULL) {
                ngx_fuzz_assert(res[0] == NGX_HTTP_TENT_STORE_ERROR
                                && len > 1);
                continue;
            }

            (void) ngx_http_tent_ldb_decode(ngx_fuzz_ops[i].req,
                                            ngx_fuzz_ops[i].req_len, &rq);

            ngx_fuzz_assert(rq.op == NGX_HTTP_TENT_OP_CAS);

            switch (res[0]) {

            case NGX_HTTP_TENT_STORE_OK:
                ngx_fuzz_assert(len == 1);

                if (rq.has) {
                    ngx_fuzz_assert(before[i][0] == NGX_HTTP_TENT_STORE_OK
                                    && before_len[i] - 1 == rq.expected.len
                                    && ngx_memcmp(before[i] + 1,
                                                  rq.expected.data,
                                                  rq.expected.len) == 0);

                } else {
                    ngx_fuzz_assert(before[i][0]
                                    == NGX_HTTP_TENT_STORE_NOT_FOUND);
                }

                /* what went in: the request's size is a bound of it */
                ngx_fuzz_written += ngx_fuzz_ops[i].req_len;
                break;

            case NGX_HTTP_TENT_STORE_NOT_FOUND:
                ngx_fuzz_assert(len == 1 && rq.has);
                ngx_fuzz_assert(before[i][0]
                                == NGX_HTTP_TENT_STORE_NOT_FOUND);
                break;

            case NGX_HTTP_TENT_STORE_CONFLICT:
                ngx_fuzz_assert(before[i][0] == NGX_HTTP_TENT_STORE_OK);
                ngx_fuzz_assert(len == before_len[i]
                                && ngx_memcmp(res + 1, before[i] + 1,
                                              len - 1) == 0);
                break;

            default:
                /* the database is there, and writes do not fail */
                ngx_fuzz_assert(0);
            }
        }

        /* the keys the members that held wrote: as they left them */

        nkeys = 0;

        for (i = 0; i < g->ran; i++) {
            if (status[i] == NGX_HTTP_TENT_STORE_OK) {
                (void) ngx_http_tent_ldb_decode(ngx_fuzz_ops[i].req,
                                                ngx_fuzz_ops[i].req_len, &rq);
                nkeys += 1 + rq.n;
            }
        }

        keys = malloc(sizeof(ngx_str_t) * (nkeys + 1));
        ngx_fuzz_assert(keys != NULL);

        nkeys = 0;

        for (i = 0; i < g->ran; i++) {
            if (before[i] == NULL) {
                continue;
            }

            (void) ngx_http_tent_ldb_decode(ngx_fuzz_ops[i].req,
                                            ngx_fuzz_ops[i].req_len, &rq);

            /* no member before it wrote its key: what it read was so */
            ngx_fuzz_assert(!ngx_fuzz_key_in(keys, nkeys, &rq.key));

            if (status[i] != NGX_HTTP_TENT_STORE_OK) {
                continue;
            }

            keys[nkeys++] = rq.key;
            in = rq.items;

            for (j = 0; j < rq.n; j++) {
                (void) ngx_http_tent_in_entry(&in, &kind, &k, &v);
                keys[nkeys++] = k;
            }
        }

        for (m = 0; m < nkeys; m++) {
            ngx_fuzz_check_written(&keys[m], g->ran, status);
        }

        /* the first one left has a key one that held writes */

        if (g->ran < n) {
            ngx_fuzz_assert(before[g->ran] != NULL);

            (void) ngx_http_tent_ldb_decode(ngx_fuzz_ops[g->ran].req,
                                            ngx_fuzz_ops[g->ran].req_len, &rq);

            ngx_fuzz_assert(ngx_fuzz_key_in(keys, nkeys, &rq.key));
        }

        free(keys);

        for (i = 0; i < n; i++) {
            if (before[i]) {
                free(before[i]);
            }
        }

        for (i = 0; i < g->ran; i++) {
            free(g->res[i]);
            free(ngx_fuzz_ops[i].req);
        }

        /* those left go first in the next group, in their order */

        ngx_memmove(ngx_fuzz_ops, ngx_fuzz_ops + g->ran,
                    (n - g->ran) * sizeof(ngx_http_tent_store_op_full_t));

        ngx_fuzz_waiting = n - g->ran;
    }
}


/* a compare-and-set waits for its group, as in the owner's queue */

static void
ngx_fuzz_cas(const uint8_t *data, size_t len)
{
    ngx_http_tent_store_op_full_t  *sop;

    if (ngx_fuzz_waiting == NGX_HTTP_TENT_CAS_GROUP) {
        ngx_fuzz_run_group();
    }

    sop = &ngx_fuzz_ops[ngx_fuzz_waiting++];

    ngx_memzero(sop, sizeof(ngx_http_tent_store_op_full_t));
    sop->req = ngx_fuzz_dup(data, len);
    sop->req_len = len;
}


static void
ngx_fuzz_exec(const uint8_t *data, size_t len)
{
    u_char     *req, *res;
    size_t      res_len;
    ngx_int_t   rc;

    /* as ngx_http_tent_owner_exec() tells them apart */

    if (len > 2 && data[0] == NGX_HTTP_TENT_OP_CAS) {
        ngx_fuzz_cas(data, len);
        return;
    }

    /* what came before it has run: the owner had answered it */

    ngx_fuzz_run_group();

    req = ngx_fuzz_dup(data, len);
    res = NULL;
    res_len = 0;

    rc = ngx_http_tent_ldb_exec(ngx_fuzz_ldb, req, len, &res, &res_len);

    ngx_fuzz_assert(rc == NGX_OK);
    ngx_fuzz_assert(res != NULL && res_len >= 1);

    if (ngx_fuzz_verbose) {
        fprintf(stderr, "store: op %d, %zu bytes: status %d, %zu bytes%s%.*s\n",
                len ? req[0] : -1, len, res[0], res_len - 1,
                res[0] == NGX_HTTP_TENT_STORE_ERROR ? ": " : "",
                res[0] == NGX_HTTP_TENT_STORE_ERROR ? (int) res_len - 1 : 0,
                res + 1);
    }

    /* never CONFLICT: a compare-and-set is not run here */
    ngx_fuzz_assert(res[0] == NGX_HTTP_TENT_STORE_OK
                    || res[0] == NGX_HTTP_TENT_STORE_NOT_FOUND
                    || res[0] == NGX_HTTP_TENT_STORE_ERROR);

    /* only a GET and errors carry a payload */

    if (res[0] == NGX_HTTP_TENT_STORE_OK && len >= 2) {
        switch (req[0]) {

        case NGX_HTTP_TENT_OP_SCAN:
            ngx_fuzz_check_scan(req, len, res, res_len);
            break;

        case NGX_HTTP_TENT_OP_WRITE:
            ngx_fuzz_assert(res_len == 1);

            /* what went in: the request's size is a bound of it */
            ngx_fuzz_written += len;
            break;

        case NGX_HTTP_TENT_OP_GET:
        case NGX_HTTP_TENT_OP_MGET:
            break;

        default:
            ngx_fuzz_assert(0);
        }
    }

    if (res[0] == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        ngx_fuzz_assert(res_len == 1);
        ngx_fuzz_assert(req[0] == NGX_HTTP_TENT_OP_GET);
    }

    if (res[0] == NGX_HTTP_TENT_STORE_ERROR) {
        ngx_fuzz_assert(res_len > 1);
    }

    free(res);
    free(req);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t  n;

    if (ngx_fuzz_written > NGX_FUZZ_STORE_BOUND) {
        ngx_fuzz_store_destroy();
        ngx_fuzz_store_open();
    }

    while (size >= 4) {
        n = ngx_fuzz_u32((u_char *) data);

        if (n > size - 4) {
            break;
        }

        ngx_fuzz_exec(data + 4, n);

        data += 4 + n;
        size -= 4 + n;
    }

    if (size) {
        ngx_fuzz_exec(data, size);
    }

    ngx_fuzz_run_group();

    return 0;
}
