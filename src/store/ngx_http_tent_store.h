
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_STORE_H_INCLUDED_
#define _NGX_HTTP_TENT_STORE_H_INCLUDED_


/*
 * The store API of route handlers and background jobs: build an
 * operation, submit it, read its answer.  How it gets to LevelDB (the
 * owner process, the socket, the thread pool) is private to the store.
 */


#include "ngx_http_tent_base.h"


/* store result codes, carried on the wire as one byte */
#define NGX_HTTP_TENT_STORE_OK           0
#define NGX_HTTP_TENT_STORE_NOT_FOUND    1
#define NGX_HTTP_TENT_STORE_CONFLICT     2
#define NGX_HTTP_TENT_STORE_ERROR        3
#define NGX_HTTP_TENT_STORE_UNAVAILABLE  4
#define NGX_HTTP_TENT_STORE_RETRY        5
/* a write refused by the registry fence: "disabled", "gone" (its reply) */
#define NGX_HTTP_TENT_STORE_FENCED       6

/* attachment files: a SHA-256 in hex; a file's name on the wire */
#define NGX_HTTP_TENT_DIGEST_LEN         64
#define NGX_HTTP_TENT_FILE_NAME_LEN      96

typedef struct ngx_http_tent_store_op_s  ngx_http_tent_store_op_t;

typedef void (*ngx_http_tent_store_done_pt)(ngx_http_tent_store_op_t *op);
typedef ngx_int_t (*ngx_http_tent_request_done_pt)(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


/*
 * One store operation.  Callers see these fields only: the store's own
 * state of an operation is in ngx_http_tent_store_private.h, around it.
 */

struct ngx_http_tent_store_op_s {
    ngx_pool_t                     *pool;
    ngx_log_t                      *log;

    ngx_uint_t                      status;      /* NGX_HTTP_TENT_STORE_* */

    ngx_http_tent_store_done_pt     handler;
    void                           *data;
};


/* ngx_http_tent_store.c: build an operation, submit it, read its answer */
ngx_http_tent_store_op_t *ngx_http_tent_store_op_create(ngx_pool_t *pool,
    ngx_log_t *log);
ngx_int_t ngx_http_tent_store_get(ngx_http_tent_store_op_t *op,
    ngx_str_t *key);
ngx_int_t ngx_http_tent_store_cas(ngx_http_tent_store_op_t *op,
    ngx_str_t *key, ngx_str_t *expected, ngx_str_t *value);
ngx_int_t ngx_http_tent_store_write(ngx_http_tent_store_op_t *op,
    ngx_uint_t sync);
ngx_int_t ngx_http_tent_store_write_put(ngx_http_tent_store_op_t *op,
    ngx_str_t *key, ngx_str_t *value);
ngx_int_t ngx_http_tent_store_write_del(ngx_http_tent_store_op_t *op,
    ngx_str_t *key);
ngx_int_t ngx_http_tent_store_write_file(ngx_http_tent_store_op_t *op,
    ngx_str_t *entity, ngx_str_t *digest, ngx_str_t *bytes);
ngx_int_t ngx_http_tent_store_write_unlink(ngx_http_tent_store_op_t *op,
    ngx_str_t *entity, ngx_str_t *digest);
ngx_int_t ngx_http_tent_store_scan(ngx_http_tent_store_op_t *op,
    ngx_str_t *start, ngx_str_t *end, ngx_uint_t limit, ngx_uint_t reverse);
ngx_int_t ngx_http_tent_store_batch_append(ngx_http_tent_store_op_t *op,
    ngx_http_tent_store_op_t *other);
ngx_int_t ngx_http_tent_store_mget(ngx_http_tent_store_op_t *op);
ngx_int_t ngx_http_tent_store_mget_key(ngx_http_tent_store_op_t *op,
    ngx_str_t *key);
ngx_int_t ngx_http_tent_store_next_value(ngx_http_tent_store_op_t *op,
    ngx_uint_t *found, ngx_str_t *value);
ngx_int_t ngx_http_tent_store_submit(ngx_http_tent_store_op_t *op);
void ngx_http_tent_store_for_request(ngx_http_tent_store_op_t *op);
ngx_int_t ngx_http_tent_store_value(ngx_http_tent_store_op_t *op,
    ngx_str_t *value);
ngx_int_t ngx_http_tent_store_next(ngx_http_tent_store_op_t *op,
    ngx_str_t *key, ngx_str_t *value);

/* ngx_http_tent_store_fence.c: a write only into that incarnation */
ngx_int_t ngx_http_tent_store_fence(ngx_http_tent_store_op_t *op,
    ngx_str_t *entity, uint64_t incarnation);
ngx_int_t ngx_http_tent_store_fence_rows(ngx_http_tent_store_op_t *op,
    ngx_str_t *entity, uint64_t incarnation);

ngx_int_t ngx_http_tent_store_rewind(ngx_http_tent_store_op_t *op);
size_t ngx_http_tent_store_op_size(ngx_http_tent_store_op_t *op);

/* ngx_http_tent_store_files.c: where attachment bytes are files */
ngx_int_t ngx_http_tent_store_digest_valid(ngx_str_t *digest);
ngx_int_t ngx_http_tent_store_file_name(ngx_str_t *entity, ngx_str_t *digest,
    u_char *name);
ngx_int_t ngx_http_tent_store_file_path(ngx_pool_t *pool,
    ngx_str_t *store_path, ngx_str_t *entity, ngx_str_t *digest,
    ngx_str_t *path);

/* ngx_http_tent_store_request.c: the store from an HTTP request */
ngx_int_t ngx_http_tent_store_submit_request(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op, ngx_http_tent_request_done_pt handler);
ngx_int_t ngx_http_tent_store_get_request(ngx_http_request_t *r,
    u_char table, ngx_str_t *rest, ngx_http_tent_request_done_pt handler);
ngx_int_t ngx_http_tent_store_http_status(ngx_http_tent_store_op_t *op);
ngx_http_tent_ctx_t *ngx_http_tent_store_request_ctx(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op, ngx_int_t *rc);
json_t *ngx_http_tent_store_request_record(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op, const char *missing, const char *step,
    ngx_str_t *value, ngx_int_t *rc);
ngx_int_t ngx_http_tent_store_fenced(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
ngx_int_t ngx_http_tent_reply_state_json(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);

/* a worker's start and exit: the owner, the socket, the reply cache */
ngx_int_t ngx_http_tent_store_init_process(ngx_cycle_t *cycle,
    ngx_http_tent_main_conf_t *mcf);
void ngx_http_tent_store_exit_process(ngx_http_tent_main_conf_t *mcf);


/*
 * ngx_http_tent_store_check.c, in the master: can the workers' user use
 * the store (nginx -t, start, reload; creates it at start), who holds its
 * lock (0 nobody, -1 unknown, NGX_HTTP_TENT_LOCK_NOT_FILE: LOCK is a
 * link, a FIFO... not opened), and a lock held by another than our nginx
 */
#define NGX_HTTP_TENT_LOCK_NOT_FILE  ((ngx_pid_t) -2)
ngx_int_t ngx_http_tent_store_check(ngx_cycle_t *cycle, ngx_log_t *log,
    ngx_pool_t *pool, ngx_http_tent_main_conf_t *mcf);
ngx_pid_t ngx_http_tent_store_lock_holder(ngx_str_t *db_path);
void ngx_http_tent_store_lock_check(ngx_cycle_t *cycle,
    ngx_http_tent_main_conf_t *mcf);
/* in a worker: PID is a worker of our nginx (reload, binary upgrade) */
ngx_uint_t ngx_http_tent_store_kin(ngx_pid_t pid);


#endif /* _NGX_HTTP_TENT_STORE_H_INCLUDED_ */
