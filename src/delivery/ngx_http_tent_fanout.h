
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_FANOUT_H_INCLUDED_
#define _NGX_HTTP_TENT_FANOUT_H_INCLUDED_


/*
 * The fan-out: an outbox row turned into send jobs
 * (ngx_http_tent_fanout.c), its profile post's followers told
 * (_fanout_told.c), its mentioned entities looked up (_fanout_mentions.c),
 * the rows for apps only (_fanout_apps.c).  Only the delivery files
 * include it.
 */


#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_job.h"      /* a fan-out makes jobs */


/* the fan-out of a row, stage by stage: whom its jobs are for */
typedef enum {
    NGX_HTTP_TENT_FANOUT_FOLLOWERS = 0,
    NGX_HTTP_TENT_FANOUT_FOLLOWINGS,         /* a profile post's */
    NGX_HTTP_TENT_FANOUT_APPS,               /* subscribed through a URL */
    NGX_HTTP_TENT_FANOUT_MENTIONS            /* a new post's, not told yet */
} ngx_http_tent_fanout_stage_e;


/* a fan-out task: an outbox row into jobs, stage by stage */
typedef struct {
    ngx_http_tent_task_t              task;       /* first */
    json_t                           *row;        /* the outbox row's */
    ngx_str_t                         start;     /* followers left */
    ngx_str_t                         end;
    ngx_http_tent_fanout_stage_e      stage;
    ngx_array_t                      *mentioned;  /* entities to look up */
    void                             *blocks;     /* the owner's, held */
    ngx_atomic_uint_t                 blocks_gen; /* before their read */
    ngx_rbtree_t                     *told;       /* a profile post's */
    ngx_pool_t                       *step;       /* a fan-out batch's */
    ngx_pool_t                       *step_old;   /* the one before */
    void                             *direct;     /* the step's local */
    void                             *shared;     /* the step's shared */
                                                  /* inboxes */
} ngx_http_tent_fanout_t;


/* ngx_http_tent_fanout.c: a follower's job and its record */
ngx_int_t ngx_http_tent_fanout_follower_job(ngx_http_tent_fanout_t *t,
    ngx_http_tent_store_op_t *wop, uint64_t now, ngx_str_t *jid,
    ngx_str_t *fid, json_t *follower);

/* ngx_http_tent_local_direct.c: this node's followers with no job */
ngx_int_t ngx_http_tent_local_direct_add(ngx_http_tent_fanout_t *t,
    ngx_str_t *jid, ngx_str_t *fid, json_t *follower);
void ngx_http_tent_local_direct_submit(ngx_http_tent_fanout_t *t,
    ngx_http_tent_store_op_t *wop, uint64_t now,
    ngx_http_tent_store_done_pt handler);


/* ngx_http_tent_fanout_shared.c: a public post once per shared inbox */
ngx_int_t ngx_http_tent_fanout_shared_add(ngx_http_tent_fanout_t *t,
    json_t *follower);
void ngx_http_tent_fanout_shared_submit(ngx_http_tent_fanout_t *t,
    ngx_http_tent_store_op_t *wop, uint64_t now,
    ngx_http_tent_store_done_pt handler);


/* ngx_http_tent_fanout_mentions.c: a new post's mentioned entities */
ngx_int_t ngx_http_tent_delivery_mentions(ngx_http_tent_fanout_t *t);
void ngx_http_tent_delivery_got(ngx_http_tent_fanout_t *t, json_t *record);
void ngx_http_tent_delivery_lookup(ngx_http_tent_store_op_t *op);

/* ngx_http_tent_fanout_told.c: a profile post's followers told */
ngx_int_t ngx_http_tent_delivery_told_init(ngx_http_tent_fanout_t *t);
ngx_int_t ngx_http_tent_delivery_tell(ngx_http_tent_fanout_t *t,
    json_t *follower);
ngx_int_t ngx_http_tent_delivery_was_told(ngx_http_tent_fanout_t *t,
    json_t *following);

/* ngx_http_tent_delivery_status.c: a new job's status record */
ngx_int_t ngx_http_tent_delivery_status_made(ngx_http_tent_fanout_t *t,
    ngx_http_tent_store_op_t *wop, ngx_str_t *jid, json_t *record,
    ngx_str_t *entity);


#endif /* _NGX_HTTP_TENT_FANOUT_H_INCLUDED_ */
