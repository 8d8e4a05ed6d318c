
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_LOCAL_BATCH_H_INCLUDED_
#define _NGX_HTTP_TENT_LOCAL_BATCH_H_INCLUDED_


/*
 * What the same-node batches (ngx_http_tent_local_batch.c: the jobs
 * collected, a batch's read sent, its end) and a batch's write
 * (ngx_http_tent_local_write.c: its read answered, its copies written,
 * its jobs settled) share; only they include it, after
 * ngx_http_tent_delivery_private.h.
 */


#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_receive.h"


/* a batch: at most these many jobs, and a write of at most these bytes */
#define NGX_HTTP_TENT_LOCAL_MAX     256
#define NGX_HTTP_TENT_LOCAL_BYTES   (4 * 1024 * 1024)


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
    ngx_rbtree_t                   *keys;       /* copies it writes */
    ngx_queue_t                     queue;      /* in flight */
    ngx_http_tent_store_op_t       *wop;
    ngx_event_t                     free;
} ngx_http_tent_local_batch_t;


/* does a job write references (tent_same_node_rows index), not copies */
#define ngx_http_tent_local_refs(l)                                          \
    ((l)->task->dl->mcf->same_node_rows == NGX_HTTP_TENT_SAME_NODE_INDEX)


/* ngx_http_tent_local_batch.c */
void ngx_http_tent_local_end(ngx_http_tent_local_batch_t *b);
void ngx_http_tent_local_slot(ngx_http_tent_local_t *l);
void ngx_http_tent_local_done(ngx_http_tent_local_t *l);

/* ngx_http_tent_local_write.c */
void ngx_http_tent_local_read(ngx_http_tent_store_op_t *op);


#endif /* _NGX_HTTP_TENT_LOCAL_BATCH_H_INCLUDED_ */
