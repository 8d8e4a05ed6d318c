
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_JOB_H_INCLUDED_
#define _NGX_HTTP_TENT_JOB_H_INCLUDED_


/*
 * A send job's life: read with its batch (ngx_http_tent_delivery_load.c),
 * claimed by a transport and settled (ngx_http_tent_send.c), carried
 * over HTTP (_transport_http.c, its hosts _hosts.c) or on this node
 * (_local.c), its settlement written (_settle.c).  Only the delivery
 * files include it.
 */


#include "ngx_http_tent_delivery_private.h"


/* how a job settles: what a transport reports */
typedef enum {
    NGX_HTTP_TENT_DELIVERED = 0,
    NGX_HTTP_TENT_REFUSED,                  /* for good: a dead letter */
    NGX_HTTP_TENT_RETRY,                    /* later, attempt counted */
    NGX_HTTP_TENT_PASSED                    /* not its own: the next's */
} ngx_http_tent_outcome_e;


/* whom a job is for: its row says (ngx_http_tent_job_row.c) */
typedef enum {
    NGX_HTTP_TENT_JOB_FOLLOWER = 1,
    NGX_HTTP_TENT_JOB_FOLLOWING,
    NGX_HTTP_TENT_JOB_APP,                  /* an app's subscription */
    NGX_HTTP_TENT_JOB_ENTITY,               /* a mention, no relationship */
    NGX_HTTP_TENT_JOB_ACTIVITY,             /* an ActivityPub "w" row's */
    NGX_HTTP_TENT_JOB_SHARED                /* a public post, "to" a */
                                            /* shared inbox's URL */
} ngx_http_tent_job_kind_e;


/* a job's row as read: its strings point into the row's bytes */
typedef struct {
    ngx_http_tent_job_kind_e          kind;       /* 0: none read */
    ngx_str_t                         to;         /* its recipient */
    ngx_str_t                         app;        /* an app's */
    ngx_str_t                         id;         /* the post's */
    ngx_str_t                         post_entity; /* a received post's */
    ngx_str_t                         ref_owner;  /* "l": whose rows */
    int64_t                           version;
    int64_t                           first;      /* made, s */
    int64_t                           failed_at;  /* a dead letter's, s */
    ngx_int_t                         attempt;
    ngx_uint_t                        status;     /* a dead letter's */
    unsigned                          mention:1;
} ngx_http_tent_job_row_t;


typedef struct ngx_http_tent_host_s  ngx_http_tent_host_t;
typedef struct ngx_http_tent_transport_s  ngx_http_tent_transport_t;


/* a send job: a due job row, read with its batch, carried, settled */
typedef struct {
    ngx_http_tent_task_t              task;       /* first */
    ngx_http_tent_job_row_t           row;
    json_t                           *follower;   /* its record's */
    ngx_uint_t                        server;
    ngx_msec_t                        deadline;  /* of this attempt */
    ngx_uint_t                        status;
    const char                       *error;     /* no answer: why */
    ngx_http_tent_host_t             *host;       /* a slot taken */
    ngx_http_tent_host_t             *failed;     /* a failure counted */
    uint64_t                          resume;     /* its paused hosts' */
    ngx_http_tent_batch_t            *batch;
    ngx_http_tent_batch_post_t       *bpost;      /* its post, shared */
    ngx_str_t                         record_key;
    ngx_http_tent_transport_t        *transport;  /* that claimed it */
    void                             *carried;    /* the transport's */
    unsigned                          stranger:1; /* no relationship */
    unsigned                          tried:1;    /* a request made */
    unsigned                          probe:1;    /* of a paused host */
    unsigned                          untold:1;   /* settled, unsent: */
                                                  /* t->error says why */
} ngx_http_tent_job_t;


/*
 * A transport carries the jobs it claims (ngx_http_tent_send.c asks
 * each in turn, once, after the batch read): "claim" says NGX_OK and
 * keeps what it found in t->carried; "send" carries the job and reports
 * its outcome to ngx_http_tent_delivery_settle(), once.
 */
struct ngx_http_tent_transport_s {
    const char                       *name;
    ngx_int_t                       (*claim)(ngx_http_tent_job_t *t);
    void                            (*send)(ngx_http_tent_job_t *t);
};

extern ngx_http_tent_transport_t  ngx_http_tent_transport_local;
extern ngx_http_tent_transport_t  ngx_http_tent_transport_http;
extern ngx_http_tent_transport_t  ngx_http_tent_transport_ap;


/* ngx_http_tent_job_row.c; ngx_http_tent_delivery.c: rows put */
ngx_int_t ngx_http_tent_job_row_encode(ngx_pool_t *pool,
    ngx_http_tent_job_row_t *jr, ngx_str_t *out);
ngx_int_t ngx_http_tent_job_row_decode(ngx_pool_t *pool, ngx_str_t *value,
    ngx_http_tent_job_row_t *jr);
ngx_int_t ngx_http_tent_status_row_encode(ngx_pool_t *pool,
    ngx_str_t *entity, const char *state, ngx_int_t attempts,
    ngx_uint_t status, const char *error, time_t last, time_t next,
    ngx_str_t *out);
ngx_int_t ngx_http_tent_job_put(ngx_http_tent_task_t *t,
    ngx_http_tent_store_op_t *wop, u_char table, uint64_t ms, ngx_str_t *id,
    ngx_http_tent_job_row_t *jr);
ngx_int_t ngx_http_tent_job_new(ngx_http_tent_task_t *t,
    ngx_http_tent_store_op_t *wop, uint64_t ms, ngx_str_t *id,
    ngx_http_tent_job_row_t *jr);

/* ngx_http_tent_settle.c: settlements written in batches */
void ngx_http_tent_settle_add(ngx_http_tent_job_t *t,
    ngx_http_tent_store_op_t *wop);
void ngx_http_tent_settle_flush(ngx_event_t *ev);

/* ngx_http_tent_hosts.c: per-host caps and breakers */
ngx_int_t ngx_http_tent_host_gate(ngx_http_tent_job_t *t, ngx_str_t *url);
void ngx_http_tent_host_wait(ngx_http_tent_job_t *t);
void ngx_http_tent_host_outcome(ngx_http_tent_job_t *t,
    ngx_http_tent_fetch_t *f);
void ngx_http_tent_host_release(ngx_http_tent_job_t *t);
ngx_int_t ngx_http_tent_host_deferred(ngx_str_t *key);
ngx_uint_t ngx_http_tent_hosts_deferred(void);

/* ngx_http_tent_send.c: a job read, claimed by a transport, settled */
ngx_int_t ngx_http_tent_delivery_record_key(ngx_http_tent_job_t *t,
    ngx_str_t *key);
void ngx_http_tent_delivery_loaded(ngx_http_tent_job_t *t,
    ngx_str_t *record);
void ngx_http_tent_transport_claim(ngx_http_tent_job_t *t);
ngx_int_t ngx_http_tent_delivery_url(ngx_http_tent_job_t *t, ngx_uint_t n,
    ngx_str_t *url);
void ngx_http_tent_delivery_post(ngx_http_tent_job_t *t,
    ngx_http_tent_fetch_t *f, ngx_str_t *url, const char *content_type,
    ngx_http_tent_fetch_pt handler);
void ngx_http_tent_delivery_settle(ngx_http_tent_job_t *t,
    ngx_http_tent_outcome_e outcome);
ngx_http_tent_store_op_t *ngx_http_tent_delivery_settlement(
    ngx_http_tent_job_t *t, ngx_http_tent_outcome_e outcome);

/* ngx_http_tent_transport_http.c */
json_t *ngx_http_tent_delivery_body(json_t *post, json_t *sub);

/* ngx_http_tent_delivery.c: a job's slot given back as it settles */
void ngx_http_tent_task_settling(ngx_http_tent_job_t *t);

/* ngx_http_tent_transport_ap_repost.c: a repost's Announce, its Undo */
typedef void (*ngx_http_tent_apt_resume_pt)(ngx_http_tent_job_t *t,
    EVP_PKEY *key);

ngx_int_t ngx_http_tent_apt_repost_read(ngx_http_tent_job_t *t,
    EVP_PKEY *key, ngx_http_tent_apt_resume_pt resume);
ngx_int_t ngx_http_tent_apt_repost_activity(ngx_http_tent_job_t *t,
    ngx_str_t *origin_api, ngx_str_t *name, json_t **activity);

/* ngx_http_tent_delivery_status.c: a job's status record, settled */
void ngx_http_tent_delivery_status_answer(ngx_http_tent_job_t *t,
    ngx_http_tent_fetch_t *f);
ngx_int_t ngx_http_tent_delivery_status_settled(ngx_http_tent_job_t *t,
    ngx_http_tent_store_op_t *wop, ngx_uint_t outcome, ngx_int_t attempt,
    uint64_t due);
ngx_int_t ngx_http_tent_delivery_status_direct(ngx_http_tent_job_t *t,
    ngx_http_tent_store_op_t *wop, ngx_array_t *ended);
ngx_int_t ngx_http_tent_delivery_status_ended(ngx_http_tent_task_t *t,
    ngx_http_tent_store_op_t *wop, ngx_array_t *ended);


#endif /* _NGX_HTTP_TENT_JOB_H_INCLUDED_ */
