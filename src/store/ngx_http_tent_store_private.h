
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_STORE_PRIVATE_H_INCLUDED_
#define _NGX_HTTP_TENT_STORE_PRIVATE_H_INCLUDED_


/*
 * The store's inside: the per-process store, an operation's private
 * state, the IPC connection, the owner and its LevelDB calls.  Only the
 * store files define NGX_HTTP_TENT_STORE_PRIVATE and include this.
 */


#include "ngx_http_tent_store.h"


#if !(NGX_HTTP_TENT_STORE_PRIVATE)
#error "only the store files include ngx_http_tent_store_private.h"
#endif


/* store operations */
#define NGX_HTTP_TENT_OP_GET             1
#define NGX_HTTP_TENT_OP_WRITE           2
#define NGX_HTTP_TENT_OP_SCAN            3
#define NGX_HTTP_TENT_OP_CAS             4
#define NGX_HTTP_TENT_OP_MGET            5

#define NGX_HTTP_TENT_OP_SYNC            0x01

/*
 * Background work (the delivery engine, the sweeps), not a client waiting
 * for its answer: the owner runs at most tent_store_background_threads of
 * these at once, so a request's operation always finds a free thread.
 * Set on every operation not submitted for a request; an operation
 * without it (an older worker's, during a reload) is a request's.
 */
#define NGX_HTTP_TENT_OP_BACKGROUND      0x02

/*
 * A write with a registry fence behind its bytes: pairs (u32 length,
 * entity, u64 incarnation), then the u32 length of the pairs; the owner
 * takes it off before the write runs (ngx_http_tent_store_fence.c)
 */
#define NGX_HTTP_TENT_OP_FENCE           0x04

#define NGX_HTTP_TENT_WRITE_PUT          1
#define NGX_HTTP_TENT_WRITE_DEL          2

/* CAS only: a file written before the batch, removed after (store.md) */
#define NGX_HTTP_TENT_WRITE_FILE         3
#define NGX_HTTP_TENT_WRITE_UNLINK       4

/* one IPC frame, and so one request or reply, is at most this big */
#define NGX_HTTP_TENT_MAX_FRAME          (64 * 1024 * 1024)


typedef struct ngx_http_tent_ipc_conn_s  ngx_http_tent_ipc_conn_t;
typedef struct ngx_http_tent_ldb_s       ngx_http_tent_ldb_t;
typedef struct ngx_http_tent_fence_s     ngx_http_tent_fence_t;


/* a growable byte buffer on the heap: long-lived IPC connections use it */
/*
 * The entities whose outbox rows one write (or a group of merged writes)
 * adds, by hash: beyond this many, every outbox is marked.
 */
#define NGX_HTTP_TENT_STORE_OUTBOXES  8


typedef struct {
    u_char                         *start;
    u_char                         *pos;
    u_char                         *last;
    u_char                         *end;
} ngx_http_tent_bytes_t;


/* an operation as the store files see it: the caller's part first */
typedef struct {
    ngx_http_tent_store_op_t        op;

    /* the encoded request: op byte, flags byte, arguments */
    u_char                         *req;
    size_t                          req_len;
    size_t                          req_size;
    size_t                          count_pos;

    /* the reply: the payload behind the status byte */
    ngx_str_t                       res;
    u_char                         *cursor;

    ngx_http_tent_request_done_pt   request_done;

    ngx_event_t                     timer;
    ngx_rbtree_node_t               node;
    ngx_queue_t                     queue;
    ngx_uint_t                      where;
    ngx_msec_t                      started;     /* latency, debug log */
    ngx_http_tent_ipc_conn_t       *conn;
    unsigned                        failed_encoding:1;
    unsigned                        credential:1;  /* wrote one */
    unsigned                        replies:1;     /* wrote what is cached */
    unsigned                        request:1;     /* a client waits */
    unsigned                        outboxes:1;    /* of too many to list */
    unsigned                        apps:1;        /* a subscription */
    unsigned                        blocks:1;      /* an owner's block */
    unsigned                        domains:1;     /* a domain's block */
    unsigned                        fence_counted:1;  /* owner: a write */
    unsigned                        fence_registry:1; /* of the registry */
    ngx_uint_t                      outbox_n;      /* outbox rows of */
    ngx_uint_t                      outbox[NGX_HTTP_TENT_STORE_OUTBOXES];
} ngx_http_tent_store_op_full_t;


#define ngx_http_tent_sop(o)  ((ngx_http_tent_store_op_full_t *) (o))

#define ngx_http_tent_store_op_of(q)                                          \
    ((ngx_http_tent_store_op_t *)                                             \
     ngx_queue_data(q, ngx_http_tent_store_op_full_t, queue))


struct ngx_http_tent_ipc_conn_s {
    ngx_connection_t               *connection;
    ngx_http_tent_store_t          *store;
    ngx_http_tent_bytes_t           in;
    ngx_http_tent_bytes_t           out;
    ngx_queue_t                     queue;
    ngx_uint_t                      refs;
    unsigned                        closed:1;
};


/* per-process store state; lives in the cycle pool */
struct ngx_http_tent_store_s {
    ngx_str_t                       path;
    ngx_str_t                       db_path;
    ngx_str_t                       socket_path;
    ngx_thread_pool_t              *thread_pool;
    ngx_msec_t                      timeout;
    ngx_uint_t                      max_waiting;
    ngx_log_t                      *log;

    /* owner side */
    ngx_uint_t                      owner;
    ngx_uint_t                      state;
    ngx_http_tent_ldb_t            *ldb;
    ngx_http_tent_fence_t          *fence;
    ngx_thread_task_t              *open_task;
    ngx_thread_task_t              *close_task;
    ngx_uint_t                      inflight;
    ngx_queue_t                     cas_queue;   /* the next group */
    ngx_uint_t                      cas_running;
    ngx_queue_t                     waiting;
    ngx_uint_t                      nwaiting;

    /* background operations: those running, those waiting for a slot */
    ngx_uint_t                      background_max;
    ngx_uint_t                      thread_nice;
    size_t                          write_buffer;   /* LevelDB's */
    ngx_uint_t                      background_running;
    ngx_queue_t                     background;
    ngx_uint_t                      nbackground;

    /* giving freed memory back after background work (store_memory.c) */
    ngx_thread_task_t              *trim_task;
    ngx_event_t                     trim_timer;
    ngx_int_t                       trimmed;     /* set by the thread */
    ngx_msec_t                      background_ended;
    ngx_msec_t                      trim_posted;
    size_t                          written, flush_written;  /* bytes */
    ngx_uint_t                      flushing;    /* read by the thread */
    ngx_int_t                       flushed;     /* set by the thread */
    unsigned                        trimming:1;
    unsigned                        flush_declined:5;   /* < 32 */
    ngx_event_t                     open_timer;
    ngx_msec_t                      open_backoff;
    ngx_msec_t                      open_started;
    ngx_uint_t                      open_attempts;
    ngx_pid_t                       lock_holder;  /* set by the thread */
    ngx_msec_t                      lock_said;    /* at error, when */

    /* after a failed write: is there room to reopen (see the ldb) */
    ngx_thread_task_t              *probe_task;
    ngx_thread_task_t              *reopen_task;
    ngx_event_t                     reopen_timer;
    ngx_uint_t                      room;        /* set by the probe */
    unsigned                        probing:1;
    unsigned                        reopen_pending:1;

    ngx_connection_t               *listening;
    ngx_queue_t                     conns;
    ngx_event_t                     handover_timer;  /* ipc_resign() */

    /* client side: every worker, the owner too once it has resigned */
    ngx_http_tent_ipc_conn_t       *client;
    ngx_uint_t                      client_state;
    ngx_event_t                     connect_timer;
    ngx_msec_t                      connect_backoff;
    ngx_msec_t                      stranger_said;  /* at error, when */
    ngx_queue_t                     unsent;
    ngx_rbtree_t                    sent;
    ngx_rbtree_node_t               sent_sentinel;
    uint32_t                        next_id;
};

/* ngx_http_tent_store.c, for the other store files */
ngx_http_tent_store_t *ngx_http_tent_store_create(ngx_cycle_t *cycle,
    ngx_http_tent_main_conf_t *mcf);
void ngx_http_tent_store_finish(ngx_http_tent_store_op_t *op,
    ngx_uint_t status, u_char *data, size_t len);
void ngx_http_tent_store_dispatch(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op);
void ngx_http_tent_store_wait(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op, ngx_uint_t where);
void ngx_http_tent_store_unwait(ngx_http_tent_store_op_t *op);
ngx_int_t ngx_http_tent_store_cancel(ngx_http_tent_store_op_t *op);
void ngx_http_tent_store_fail_later(ngx_http_tent_store_op_t *op,
    ngx_uint_t status, const char *message);

/* ngx_http_tent_store_log.c */
const char *ngx_http_tent_store_op_name(ngx_http_tent_store_op_t *op);
#if (NGX_DEBUG)
void ngx_http_tent_store_debug(ngx_http_tent_store_op_t *op,
    const char *what, ngx_uint_t answered);
#endif

#define NGX_HTTP_TENT_WHERE_NONE       0
#define NGX_HTTP_TENT_WHERE_OPENING    1
#define NGX_HTTP_TENT_WHERE_UNSENT     2
#define NGX_HTTP_TENT_WHERE_SENT       3
#define NGX_HTTP_TENT_WHERE_RUNNING    4
#define NGX_HTTP_TENT_WHERE_FAILED     5
#define NGX_HTTP_TENT_WHERE_BACKGROUND 6     /* waits for a background slot */
#define NGX_HTTP_TENT_WHERE_CAS        7     /* waits for a group, not run */

/* ngx_http_tent_store_owner.c: the database opened, handed over, reopened */
#define NGX_HTTP_TENT_OWNER_NONE       0
#define NGX_HTTP_TENT_OWNER_OPENING    1
#define NGX_HTTP_TENT_OWNER_OPEN       2
#define NGX_HTTP_TENT_OWNER_CLOSING    3
#define NGX_HTTP_TENT_OWNER_CLOSED     4

ngx_int_t ngx_http_tent_owner_start(ngx_http_tent_store_t *store);
void ngx_http_tent_owner_submit(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op);
void ngx_http_tent_owner_resign(ngx_http_tent_store_t *store);
void ngx_http_tent_owner_exit(ngx_http_tent_store_t *store);
ngx_int_t ngx_http_tent_owner_accepts(ngx_http_tent_store_t *store);
void ngx_http_tent_owner_after(ngx_http_tent_store_t *store);
void ngx_http_tent_owner_reject(ngx_http_tent_store_op_t *op);

/* ngx_http_tent_store_owner_exec.c: the pool's two classes, cas groups */
void ngx_http_tent_owner_unqueue(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op);
void ngx_http_tent_owner_exec(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op);
void ngx_http_tent_owner_next_background(ngx_http_tent_store_t *store);

/* ngx_http_tent_store_fence.c: the registry fence of writes */
ngx_int_t ngx_http_tent_fence_init(ngx_http_tent_store_t *store);
void ngx_http_tent_fence_exit(ngx_http_tent_store_t *store);
void ngx_http_tent_fence_load_thread(ngx_http_tent_store_t *store);
void ngx_http_tent_fence_loaded(ngx_http_tent_store_t *store);

/* ngx_http_tent_store_fence_admit.c: the fence's admission of writes */
ngx_int_t ngx_http_tent_fence_admit(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op);
void ngx_http_tent_fence_done(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op, ngx_uint_t status);

/* ngx_http_tent_store_memory.c: malloc arenas, free pages given back */
ngx_int_t ngx_http_tent_owner_memory_init(ngx_http_tent_store_t *store);
void ngx_http_tent_owner_memory_used(ngx_http_tent_store_t *store);
void ngx_http_tent_owner_thread_nice(ngx_http_tent_store_t *store,
    ngx_log_t *log);


/*
 * Compare-and-sets go one group at a time: every one queued while the
 * previous group ran is read and compared in turn, and those that hold
 * are written in one synced batch, so one fsync serves them all instead
 * of one each.  An operation whose key an earlier one of the group
 * writes waits for the next group, so every comparison sees all that
 * was written before it.
 */

#define NGX_HTTP_TENT_CAS_GROUP  256

typedef struct {
    ngx_thread_task_t               task;
    ngx_http_tent_store_t          *store;
    ngx_uint_t                      n;
    ngx_uint_t                      ran;        /* the rest go back */
    ngx_http_tent_store_op_t       *ops[NGX_HTTP_TENT_CAS_GROUP];
    u_char                         *res[NGX_HTTP_TENT_CAS_GROUP];
    size_t                          res_len[NGX_HTTP_TENT_CAS_GROUP];
} ngx_http_tent_cas_group_t;


/*
 * ngx_http_tent_store_leveldb.c: the only file that calls LevelDB.  Open,
 * close and run on a pool thread (destroy once the pool has joined its
 * threads); a result is malloc()ed: status byte, then the payload.
 */
ngx_http_tent_ldb_t *ngx_http_tent_ldb_create(ngx_pool_t *pool, char *path);
void ngx_http_tent_ldb_open(ngx_http_tent_ldb_t *ldb);
ngx_uint_t ngx_http_tent_ldb_is_open(ngx_http_tent_ldb_t *ldb);
const char *ngx_http_tent_ldb_error(ngx_http_tent_ldb_t *ldb);
void ngx_http_tent_ldb_forget_error(ngx_http_tent_ldb_t *ldb);
ngx_uint_t ngx_http_tent_ldb_write_failed(ngx_http_tent_ldb_t *ldb);
void ngx_http_tent_ldb_close(ngx_http_tent_ldb_t *ldb);
void ngx_http_tent_ldb_destroy(ngx_http_tent_ldb_t *ldb);
void ngx_http_tent_ldb_files(ngx_http_tent_ldb_t *ldb, char *dir);
void ngx_http_tent_ldb_write_buffer(ngx_http_tent_ldb_t *ldb, size_t size);
ngx_int_t ngx_http_tent_ldb_flush(ngx_http_tent_ldb_t *ldb);
/* ngx_http_tent_store_stats.c: LevelDB's "leveldb.stats", read */
ngx_uint_t ngx_http_tent_ldb_stats_due(const char *stats);
ngx_int_t ngx_http_tent_ldb_exec(ngx_http_tent_ldb_t *ldb, u_char *req,
    size_t len, u_char **res, size_t *res_len);
void ngx_http_tent_ldb_cas_group(ngx_http_tent_ldb_t *ldb,
    ngx_http_tent_cas_group_t *g, ngx_log_t *log);

/* ngx_http_tent_store_files.c: the owner's side, on a pool thread */
ngx_int_t ngx_http_tent_files_write(const char *dir, ngx_str_t *name,
    ngx_str_t *bytes, ngx_log_t *log);
void ngx_http_tent_files_unlink(const char *dir, ngx_str_t *name,
    ngx_log_t *log);

/* ngx_http_tent_store_ipc.c: the socket between workers and the owner */
ngx_int_t ngx_http_tent_ipc_listen(ngx_http_tent_store_t *store);
void ngx_http_tent_ipc_stop_listening(ngx_http_tent_store_t *store);
void ngx_http_tent_ipc_resign(ngx_http_tent_store_t *store);
void ngx_http_tent_ipc_drained(ngx_http_tent_store_t *store);
void ngx_http_tent_ipc_exit(ngx_http_tent_store_t *store);

/* ngx_http_tent_store_ipc_client.c: a worker's side of the socket */
void ngx_http_tent_ipc_submit(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op);
void ngx_http_tent_ipc_cancel(ngx_http_tent_store_op_t *op);
void ngx_http_tent_ipc_init_client(ngx_http_tent_store_t *store);

/* ngx_http_tent_bytes.c helpers live in the IPC file */
ngx_int_t ngx_http_tent_bytes_reserve(ngx_http_tent_bytes_t *b, size_t n);
void ngx_http_tent_bytes_free(ngx_http_tent_bytes_t *b);

/* ngx_http_tent_store_codec.c: the executor's bytes, in and out */
typedef struct {
    u_char                     *data;
    size_t                      len;
    size_t                      size;
    ngx_uint_t                  failed;
} ngx_http_tent_out_t;


typedef struct {
    u_char                     *pos;
    u_char                     *last;
} ngx_http_tent_in_t;


/* a request as ngx_http_tent_ldb_decode() finds it: into its bytes */

typedef struct {
    ngx_uint_t                  op;
    ngx_uint_t                  flags;
    ngx_str_t                   key;        /* GET, CAS */
    ngx_uint_t                  has;        /* CAS: "expected" is given */
    ngx_str_t                   expected;
    ngx_str_t                   value;
    ngx_str_t                   start;      /* SCAN */
    ngx_str_t                   end;
    uint32_t                    limit;
    ngx_uint_t                  reverse;
    uint32_t                    n;          /* WRITE, CAS: entries; MGET */
    ngx_http_tent_in_t          items;      /* the entries, or the keys */
} ngx_http_tent_ldb_req_t;


void ngx_http_tent_out_put(ngx_http_tent_out_t *out, const void *data,
    size_t n);
void ngx_http_tent_out_str(ngx_http_tent_out_t *out, const char *s,
    size_t n);
void ngx_http_tent_out_status(ngx_http_tent_out_t *out,
    ngx_uint_t status);
void ngx_http_tent_out_error(ngx_http_tent_out_t *out,
    const char *message);
ngx_int_t ngx_http_tent_in_str(ngx_http_tent_in_t *in, ngx_str_t *s);
int ngx_http_tent_key_cmp(const char *a, size_t alen, ngx_str_t *b);
ngx_int_t ngx_http_tent_in_entry(ngx_http_tent_in_t *in,
    ngx_uint_t *kind, ngx_str_t *key, ngx_str_t *value);
const char *ngx_http_tent_ldb_decode(u_char *req, size_t len,
    ngx_http_tent_ldb_req_t *rq);


#endif /* _NGX_HTTP_TENT_STORE_PRIVATE_H_INCLUDED_ */
