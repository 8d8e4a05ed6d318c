
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The store executor, ngx_http_tent_ldb_exec(): it decodes what the
 * socket delivers (docs/store.md: "u8 op, u8 flags, arguments", strings
 * as "u32 length, bytes", integers big-endian) and runs it against a
 * real LevelDB, opened in a temporary directory (in /dev/shm when there
 * is one) and destroyed once more than NGX_FUZZ_STORE_BOUND bytes of
 * writes went in since it was opened, so that the database stays small.
 *
 * Input: one or more requests, each "u32 length, request"; bytes that
 * do not frame are run as one last request.  Replies are checked:
 * a known status byte; a SCAN's pairs framed exactly, in key order,
 * within [start, end), no more than "limit".
 */


#include "../src/ngx_http_tent_store_leveldb.c"

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


static ngx_pool_t           *ngx_fuzz_pool;
static ngx_http_tent_ldb_t  *ngx_fuzz_ldb;
static char                  ngx_fuzz_dir[256];
static size_t                ngx_fuzz_written;
static ngx_uint_t            ngx_fuzz_verbose;


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


static void
ngx_fuzz_exec(const uint8_t *data, size_t len)
{
    u_char     *req, *res;
    size_t      res_len;
    ngx_int_t   rc;

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
    ngx_fuzz_assert(res[0] <= NGX_HTTP_TENT_STORE_ERROR);

    /* only a GET, a failed CAS, and errors carry a payload */

    if (res[0] == NGX_HTTP_TENT_STORE_OK && len >= 2) {
        switch (req[0]) {

        case NGX_HTTP_TENT_OP_SCAN:
            ngx_fuzz_check_scan(req, len, res, res_len);
            break;

        case NGX_HTTP_TENT_OP_WRITE:
        case NGX_HTTP_TENT_OP_CAS:
            ngx_fuzz_assert(res_len == 1);

            /* what went in: the request's size is a bound of it */
            ngx_fuzz_written += len;
            break;
        }
    }

    if (res[0] == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        ngx_fuzz_assert(res_len == 1);
        ngx_fuzz_assert(req[0] == NGX_HTTP_TENT_OP_GET
                        || req[0] == NGX_HTTP_TENT_OP_CAS);
    }

    if (res[0] == NGX_HTTP_TENT_STORE_CONFLICT) {
        ngx_fuzz_assert(req[0] == NGX_HTTP_TENT_OP_CAS);
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

    return 0;
}
