
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_LOCAL_H_INCLUDED_
#define _NGX_HTTP_TENT_LOCAL_H_INCLUDED_


/*
 * The same-node transport's inside: what its claim
 * (ngx_http_tent_local.c), its batches (ngx_http_tent_local_batch.c: the
 * jobs collected, a batch's read sent, its end) and a batch's write
 * (ngx_http_tent_local_write.c: its read answered, its copies written,
 * its jobs settled) share; only they include it, after
 * ngx_http_tent_delivery_private.h.
 */


#include "ngx_http_tent_job.h"
#include "ngx_http_tent_receive.h"


/* ngx_http_tent_local.c: same-node delivery */
typedef struct {
    ngx_http_tent_job_t           *task;
    ngx_http_tent_entity_conf_t    *to;
    ngx_str_t                       relation;   /* the following's id */
    ngx_str_t                       key_id;
    ngx_str_t                       key;
    ngx_str_t                       algorithm;
    ngx_str_t                       cred_key;   /* the recipient's row */
    ngx_str_t                       copy_key;   /* its copy of the post */
    ngx_str_t                       target_key; /* a delete's target */
    ngx_uint_t                      cred;       /* in the batch's read */
    ngx_uint_t                      found;      /* copy 1, target 2, block 4 */
    ngx_str_t                       copy;       /* as read */
    ngx_str_t                       target;
    ngx_queue_t                     queue;
    unsigned                        released:1; /* its slot given back */
    unsigned                        unblocked:1; /* known: no block read */
} ngx_http_tent_local_t;

ngx_uint_t ngx_http_tent_local_credential(ngx_http_tent_local_t *l,
    json_t *cred, ngx_str_t *sender);
ngx_http_tent_outcome_e ngx_http_tent_local_outcome(
    ngx_http_tent_local_t *l, ngx_uint_t status);

/* ngx_http_tent_local_batch.c: same-node jobs, a batch a store write */
ngx_int_t ngx_http_tent_local_batch_add(ngx_http_tent_local_t *l);


/* a batch: at most these many jobs, and a write of at most these bytes */
#define NGX_HTTP_TENT_LOCAL_MAX     256
#define NGX_HTTP_TENT_LOCAL_BYTES   (4 * 1024 * 1024)

/*
 * the fan-out steps' recipients with no job, taken and not yet written,
 * at most this many times tent_delivery_concurrency in a worker (2,048
 * at its default 16; about 7 KB each in their step's pool until its
 * write: ngx_http_tent_local_direct.c); the next ones get their job
 */
#define NGX_HTTP_TENT_LOCAL_DIRECT  128


/* the engine's same-node jobs: those waiting, and the batch in flight */
typedef struct {
    ngx_http_tent_delivery_t       *dl;
    ngx_queue_t                     pending;
    ngx_uint_t                      npending;
    ngx_uint_t                      released;   /* slots given back */
    ngx_uint_t                      waited;     /* due batches ended */
    ngx_event_t                     flush;
    ngx_queue_t                     batches;    /* in flight */
    ngx_uint_t                      nbatches;
    ngx_uint_t                      ndirect;    /* fan-outs' recipients */
} ngx_http_tent_local_jobs_t;


/* a credential row of the batch's read, parsed once */
typedef struct {
    ngx_str_t                       key;
    json_t                         *row;        /* NULL: none, or bad */
    ngx_uint_t                      status;     /* the read's */
} ngx_http_tent_local_cred_t;


/* a post of the batch as a sender's, checked and rendered once */
typedef struct {
    json_t                         *post;       /* the due batch's */
    ngx_str_t                       sender;
    ngx_int_t                       rc;         /* received_parse's */
    ngx_http_tent_received_t        st;
    ngx_str_t                       value;      /* a first copy's */
    ngx_str_t                       index;      /* a reference's feed rows' */
    ngx_str_t                       author;     /* "l":"<author>" */
    json_t                         *told;       /* for its outbox rows */
} ngx_http_tent_local_post_t;


typedef struct {
    ngx_pool_t                     *pool;
    ngx_http_tent_local_jobs_t     *jobs;
    ngx_array_t                     items;      /* ngx_http_tent_local_t * */
    ngx_array_t                     creds;      /* _local_cred_t */
    ngx_array_t                     posts;      /* _local_post_t */
    ngx_array_t                     settled;    /* jobs in the write */
    ngx_array_t                    *ended;      /* direct: records' rests */
    ngx_rbtree_t                   *keys;       /* copies it writes */
    ngx_queue_t                     queue;      /* in flight */
    ngx_http_tent_store_op_t       *wop;
    ngx_event_t                     free;
    ngx_atomic_uint_t               blocks_gen; /* as the read was made */
    unsigned                        direct:1;   /* a fan-out's: no jobs */
} ngx_http_tent_local_batch_t;


/* does a job write references (tent_same_node_rows index), not copies */
#define ngx_http_tent_local_refs(l)                                          \
    ((l)->task->task.dl->mcf->same_node_rows == NGX_HTTP_TENT_SAME_NODE_INDEX)


/* ngx_http_tent_local_batch.c */
void ngx_http_tent_local_end(ngx_http_tent_local_batch_t *b);
void ngx_http_tent_local_slot(ngx_http_tent_local_t *l);
void ngx_http_tent_local_done(ngx_http_tent_local_t *l);
ngx_int_t ngx_http_tent_local_jobs(ngx_http_tent_delivery_t *dl);
ngx_int_t ngx_http_tent_local_keys(ngx_http_tent_local_t *l);
ngx_int_t ngx_http_tent_local_writing(ngx_http_tent_local_jobs_t *lj,
    ngx_str_t *key);
ngx_int_t ngx_http_tent_local_batch_init(ngx_http_tent_local_batch_t *b,
    ngx_pool_t *pool, ngx_http_tent_local_jobs_t *lj);
ngx_uint_t ngx_http_tent_local_cred_index(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l);
ngx_http_tent_store_op_t *ngx_http_tent_local_read_op(
    ngx_http_tent_local_batch_t *b);
void ngx_http_tent_local_unblocked(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l);

/* ngx_http_tent_local_write.c */
void ngx_http_tent_local_read(ngx_http_tent_store_op_t *op);
ngx_int_t ngx_http_tent_local_answer(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_store_op_t *op);
ngx_uint_t ngx_http_tent_local_job(ngx_http_tent_local_batch_t *b,
    ngx_http_tent_local_t *l);


#endif /* _NGX_HTTP_TENT_LOCAL_H_INCLUDED_ */
