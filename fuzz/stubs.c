
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The nginx core symbols the fuzz targets link against besides nginx's
 * own .c files that fuzz/build.sh compiles from nginx's sources
 * (fuzz/nginx-src.sh: ngx_string.c, ngx_array.c, ngx_inet.c,
 * ngx_http_parse.c).  Written for the fuzz targets, none of it nginx's:
 *
 *   - what the code under test runs from the rest of nginx, implemented
 *     for the fuzzer: a pool that is one malloc() per allocation, so
 *     that ASan sees every overflow; logging, formatted with nginx's
 *     ngx_vslprintf() and dropped;
 *   - the globals the headers and nginx's files reference;
 *
 * Every other function a target's module files or those nginx files
 * refer to (request I/O, configuration, timers, the other module files,
 * name resolution) gets a definition that aborts with its name,
 * generated per target by fuzz/gen-unreached.py: reaching one is a
 * harness bug.
 */


#include "fuzz.h"



/* globals */

ngx_log_t                 ngx_fuzz_log;

static ngx_cycle_t        ngx_fuzz_cycle;
static ngx_time_t         ngx_fuzz_time;
static ngx_uint_t         ngx_fuzz_log_print;

volatile ngx_cycle_t     *ngx_cycle = &ngx_fuzz_cycle;
volatile ngx_time_t      *ngx_cached_time = &ngx_fuzz_time;
volatile ngx_msec_t       ngx_current_msec;

ngx_uint_t                ngx_pagesize = 4096;
ngx_uint_t                ngx_process;
ngx_uint_t                ngx_worker;
ngx_uint_t                ngx_test_config;

ngx_rbtree_t              ngx_event_timer_rbtree;
ngx_os_io_t               ngx_io;
static ngx_atomic_t       ngx_fuzz_connection_counter;
ngx_atomic_t             *ngx_connection_counter =
                              &ngx_fuzz_connection_counter;
static uint32_t           ngx_fuzz_crc32_table[16];
uint32_t                 *ngx_crc32_table_short = ngx_fuzz_crc32_table;

ngx_module_t              ngx_core_module;
ngx_module_t              ngx_http_module;
ngx_module_t              ngx_http_core_module;


static void ngx_fuzz_init(void) __attribute__((constructor));

static void
ngx_fuzz_init(void)
{
    /* every level, debug too: each log call's format is exercised */
    ngx_fuzz_log.log_level = NGX_LOG_DEBUG_ALL | NGX_LOG_DEBUG;

    ngx_fuzz_cycle.log = &ngx_fuzz_log;
    ngx_fuzz_time.sec = NGX_FUZZ_NOW;
    ngx_current_msec = (ngx_msec_t) NGX_FUZZ_NOW * 1000;

    /* read once: getenv() on every message was a cost of its own */
    ngx_fuzz_log_print = (getenv("NGX_FUZZ_LOG") != NULL);
}


u_char *
ngx_fuzz_dup(const uint8_t *data, size_t size)
{
    u_char  *p;

    /* malloc(0) may return NULL: one byte then, never read */

    p = malloc(size ? size : 1);
    if (p == NULL) {
        abort();
    }

    if (size) {
        memcpy(p, data, size);
    }

    return p;
}


ngx_http_request_t *
ngx_fuzz_request(ngx_pool_t *pool)
{
    ngx_connection_t    *c;
    ngx_http_request_t  *r;

    r = ngx_pcalloc(pool, sizeof(ngx_http_request_t));
    c = ngx_pcalloc(pool, sizeof(ngx_connection_t));

    if (r == NULL || c == NULL) {
        abort();
    }

    c->log = &ngx_fuzz_log;
    c->pool = pool;

    r->pool = pool;
    r->connection = c;
    r->main = r;

    return r;
}


/*
 * Pools: every allocation is its own malloc(), chained on pool->large,
 * so that ASan reports an overflow of any one of them at its exact end.
 * The chain's links are the harness's, never seen by the code under
 * test: they are kept on a free list and reused, not malloc()ed each
 * time: one call into ASan's allocator per allocation, not two.
 */

static ngx_pool_large_t  *ngx_fuzz_free_links;


static ngx_pool_large_t *
ngx_fuzz_link(void)
{
    ngx_pool_large_t  *l;

    l = ngx_fuzz_free_links;

    if (l) {
        ngx_fuzz_free_links = l->next;
        return l;
    }

    return malloc(sizeof(ngx_pool_large_t));
}


static void
ngx_fuzz_free_large(ngx_pool_large_t *l)
{
    ngx_pool_large_t  *next;

    for ( /* void */ ; l; l = next) {
        next = l->next;
        free(l->alloc);

        l->alloc = NULL;
        l->next = ngx_fuzz_free_links;
        ngx_fuzz_free_links = l;
    }
}


ngx_pool_t *
ngx_create_pool(size_t size, ngx_log_t *log)
{
    ngx_pool_t  *p;

    p = calloc(1, sizeof(ngx_pool_t));
    if (p == NULL) {
        return NULL;
    }

    p->log = log;

    return p;
}


void
ngx_destroy_pool(ngx_pool_t *pool)
{
    ngx_pool_cleanup_t  *c;

    for (c = pool->cleanup; c; c = c->next) {
        if (c->handler) {
            c->handler(c->data);
        }
    }

    ngx_fuzz_free_large(pool->large);

    free(pool);
}


void
ngx_reset_pool(ngx_pool_t *pool)
{
    ngx_fuzz_free_large(pool->large);

    pool->large = NULL;
}


void *
ngx_palloc(ngx_pool_t *pool, size_t size)
{
    void              *p;
    ngx_pool_large_t  *l;

    l = ngx_fuzz_link();
    if (l == NULL) {
        return NULL;
    }

    p = malloc(size ? size : 1);
    if (p == NULL) {
        l->next = ngx_fuzz_free_links;
        ngx_fuzz_free_links = l;
        return NULL;
    }

    l->alloc = p;
    l->next = pool->large;
    pool->large = l;

    return p;
}


void *
ngx_pnalloc(ngx_pool_t *pool, size_t size)
{
    return ngx_palloc(pool, size);
}


void *
ngx_pcalloc(ngx_pool_t *pool, size_t size)
{
    void  *p;

    p = ngx_palloc(pool, size);
    if (p) {
        ngx_memzero(p, size);
    }

    return p;
}


/* as nginx's: a large allocation (here, every one) goes back at once */

ngx_int_t
ngx_pfree(ngx_pool_t *pool, void *p)
{
    ngx_pool_large_t  *l;

    for (l = pool->large; l; l = l->next) {
        if (p == l->alloc) {
            free(l->alloc);
            l->alloc = NULL;

            return NGX_OK;
        }
    }

    return NGX_DECLINED;
}


ngx_pool_cleanup_t *
ngx_pool_cleanup_add(ngx_pool_t *p, size_t size)
{
    ngx_pool_cleanup_t  *cln;

    /* the handler is the caller's to set; data of "size" bytes, if any */

    cln = ngx_pcalloc(p, sizeof(ngx_pool_cleanup_t));
    if (cln == NULL) {
        return NULL;
    }

    if (size > 0) {
        cln->data = ngx_palloc(p, size);
        if (cln->data == NULL) {
            return NULL;
        }
    }

    cln->next = p->cleanup;
    p->cleanup = cln;

    return cln;
}


void *
ngx_alloc(size_t size, ngx_log_t *log)
{
    return malloc(size);
}


void *
ngx_calloc(size_t size, ngx_log_t *log)
{
    return calloc(1, size);
}


/* logging: formatted (so a bad format or argument shows), then dropped */

void ngx_cdecl
ngx_log_error_core(ngx_uint_t level, ngx_log_t *log, ngx_err_t err,
    const char *fmt, ...)
{
    u_char   *p, errstr[NGX_MAX_ERROR_STR];
    va_list   args;

    va_start(args, fmt);
    p = ngx_vslprintf(errstr, errstr + sizeof(errstr), fmt, args);
    va_end(args);

    if (ngx_fuzz_log_print) {
        fprintf(stderr, "log[%u]: %.*s\n", (unsigned) level,
                (int) (p - errstr), errstr);
    }
}
