
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_DELIVERY_PRIVATE_H_INCLUDED_
#define _NGX_HTTP_TENT_DELIVERY_PRIVATE_H_INCLUDED_


/*
 * The delivery engine's inside, shared by its files: the engine, its
 * entities and the task both kinds of work begin with
 * (ngx_http_tent_delivery.c, _delivery_entities.c), the outbox
 * (ngx_http_tent_outbox.c), the due jobs' scan (ngx_http_tent_queue.c)
 * and read (ngx_http_tent_delivery_load.c).  The two kinds have their
 * headers: a fan-out, ngx_http_tent_fanout.h; a send job, its transports
 * and its settlement, ngx_http_tent_job.h (and the same-node transport's
 * inside, ngx_http_tent_local.h).  Only the delivery files define
 * NGX_HTTP_TENT_DELIVERY_PRIVATE and include these; others fail to
 * compile.
 */


#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_store.h"


#if !(NGX_HTTP_TENT_DELIVERY_PRIVATE)
#error "only the delivery files include ngx_http_tent_delivery_private.h"
#endif


#define NGX_HTTP_TENT_OUTBOX_SCAN   256

/* settlements written together: at most these many, after at most 2 ms */
#define NGX_HTTP_TENT_SETTLE_MAX    256
#define NGX_HTTP_TENT_SETTLE_WAIT   2



typedef struct ngx_http_tent_settle_s  ngx_http_tent_settle_t;


/*
 * Where an entity's due jobs' scan starts (ngx_http_tent_queue.c): past
 * the rows removed already, which LevelDB would step over one by one.
 */
typedef struct {
    uint64_t                        ms;          /* no live job before */
    uint64_t                        floor;       /* unacknowledged puts' */
    ngx_uint_t                      writing;     /* writes with job puts */
    ngx_uint_t                      lowered;     /* a put's count */
    uint64_t                        next;        /* a job due, not before */
    ngx_uint_t                      moved;       /* next lowered: count */

    /*
     * Where the next scan may resume: the last row of the last scan up
     * to which every due row was started or is on its way; none (len 0)
     * once a row before it may be due and not started.
     */
    u_char                         *resume;
    size_t                          resume_len;
    size_t                          resume_size;
    uint64_t                        resume_ms;   /* its due time */
    uint64_t                        scan_end;    /* of the scan on its way */
    ngx_uint_t                      unsafe;      /* rows left before it */
} ngx_http_tent_cursor_t;


/*
 * One entity of the engine's list (ngx_http_tent_delivery_entities.c) by
 * place, fixed ones first, in chunks that never move (t->ent points at
 * "conf", a due scan at "cursor"); past the end, _delivery_slot(): NULL.
 */
typedef struct {
    ngx_http_tent_entity_conf_t     conf;        /* first: t->ent */
    ngx_str_node_t                  sn;          /* by entity URL */
    ngx_http_tent_cursor_t          cursor;
    ngx_uint_t                      place;
    ngx_uint_t                      hash;        /* its outbox mark */
    ngx_uint_t                      seen;        /* the read found it */
    uint64_t                        incarnation; /* registry: its row's */
    ngx_uint_t                      refs;        /* tasks, local jobs */
    void                           *mem;         /* its conf: ngx_alloc */
    unsigned                        outbox:1;    /* marked: scan it */
    unsigned                        fixed:1;
    unsigned                        active:1;    /* registry: served */
    unsigned                        dropped:1;   /* a free place */
} ngx_http_tent_slot_t;


/*
 * A batch of due jobs (ngx_http_tent_delivery_load.c): one scan, one read
 * of every job's row, record and post; each post parsed and its request
 * body rendered once for its jobs.  The read's answer (records may be 64
 * KB) goes once the jobs parsed theirs; the posts and bodies with the last.
 */
typedef struct {
    ngx_str_t                       key;
    json_t                         *post;        /* NULL: gone */
    ngx_str_t                       body[3];     /* by kind of receiver */
    unsigned                        ref:1;       /* a same-node reference */
} ngx_http_tent_batch_post_t;

typedef struct {
    ngx_pool_t                     *pool;        /* posts and bodies */
    ngx_pool_t                     *read;        /* the read, its answer */
    ngx_uint_t                      refs;        /* its jobs not freed */
    ngx_array_t                     jobs;        /* _batch_job_t, in read */
    ngx_array_t                     posts;       /* _batch_post_t */
    ngx_uint_t                      next;        /* the job to start */
    ngx_event_t                     more;        /* the next jobs' turn */
    ngx_event_t                     free;        /* the read's pool */
    ngx_http_tent_delivery_t       *dl;
    ngx_str_t                       ap_key;      /* "K" row: read with it */
    unsigned                        handing:1;   /* in dl->handing */
    unsigned                        ap_key_asked:1;
    unsigned                        ap_key_read:1;   /* found or not */
} ngx_http_tent_batch_t;


/* the engine: the store owner's only */
struct ngx_http_tent_delivery_s {
    ngx_http_tent_main_conf_t      *mcf;
    ngx_log_t                      *log;
    ngx_event_t                     timer;
    ngx_event_t                     step;
    ngx_pool_t                     *pool;
    ngx_queue_t                     tasks;
    ngx_uint_t                      inflight;
    ngx_uint_t                      settling;    /* slots given back */
    ngx_uint_t                      handing;     /* batches starting jobs */
    ngx_uint_t                      next_entity;
    ngx_array_t                     rows;        /* outbox.c's, listed */
    ngx_rbtree_t                   *done;        /* keys ended this step */
    ngx_uint_t                      census;      /* the table looked at */
    ngx_msec_t                      pruned;      /* dead letters, last */
    ngx_http_tent_slot_t          **chunks;      /* the entities */
    ngx_uint_t                      nchunks;     /* chunks allocated */
    ngx_uint_t                      room;        /* in "chunks" */
    ngx_uint_t                      nentities;
    ngx_array_t                     free;        /* places dropped */
    ngx_rbtree_t                    names;       /* slots by entity URL */
    ngx_rbtree_node_t               names_sentinel;
    ngx_http_tent_settle_t         *settle;      /* being filled */
    void                           *local;       /* same-node batches */
    void                           *local_index; /* fixed ones by origin */
    ngx_atomic_uint_t               census_apps; /* subscriptions' gen. */
    void                           *apps_batch;  /* fanout_apps.c's */

    /* the due jobs' pass, beside the outbox's (ngx_http_tent_queue.c) */
    ngx_pool_t                     *due_pool;
    ngx_rbtree_t                   *due_done;    /* keys ended this step */
    ngx_uint_t                      due_entity;
    ngx_event_t                     due_step;
    unsigned                        due_busy:1;
    unsigned                        due_again:1; /* kicked while busy */

    ngx_event_t                     settle_timer;
    unsigned                        profile_rows:1;
    unsigned                        ours:1;      /* rows maybe not apps' */
    unsigned                        app_rows:1;  /* rows for apps only */
    unsigned                        apps_found:1;
    unsigned                        apps_checked:1;
    unsigned                        followers_checked:1;
    unsigned                        apps_many:1; /* no batch for apps */
    unsigned                        busy:1;
    unsigned                        prune:1;     /* in this pass */
};


/*
 * What the engine runs: a task, the first member of its two kinds, a
 * fan-out (ngx_http_tent_fanout_t) and a send job (ngx_http_tent_job_t),
 * each in its own header; the engine's own calls take the task.
 */
typedef struct {
    ngx_pool_t                       *pool;
    ngx_http_tent_delivery_t         *dl;
    ngx_http_tent_entity_conf_t      *ent;
    uint64_t                          incarnation;  /* ent's, at start */
    ngx_str_t                         key;       /* job or outbox row */
    ngx_str_t                         raw;       /* its value */
    json_t                           *post;
    ngx_str_t                         entity;     /* of a received post */
    ngx_str_t                         post_id;    /* for the debug log */
    ngx_http_tent_store_done_pt       then;       /* after a job put */
    ngx_queue_t                       queue;
    ngx_event_t                       free;
    unsigned                          job:1;      /* a send job */
    unsigned                          writing:1;  /* job puts unanswered */
    unsigned                          settling:1; /* in a settle batch */
    unsigned                          shared_pool:1; /* its batch's */
    unsigned                          gone:1;     /* its row settled */
} ngx_http_tent_task_t;


/* ngx_http_tent_delivery.c: the engine, its tasks, the queue's rows */
uint64_t ngx_http_tent_now_ms(void);
void ngx_http_tent_delivery_next(ngx_http_tent_delivery_t *dl);
ngx_http_tent_task_t *ngx_http_tent_task_create(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent, ngx_str_t *key, ngx_str_t *value,
    ngx_pool_t *shared, size_t size);
ngx_int_t ngx_http_tent_task_running(ngx_http_tent_delivery_t *dl,
    ngx_str_t *key);
void ngx_http_tent_task_submit(ngx_http_tent_task_t *t,
    ngx_http_tent_store_op_t *op, ngx_http_tent_store_done_pt handler);
void ngx_http_tent_task_done(ngx_http_tent_task_t *t);
void ngx_http_tent_task_ended(ngx_http_tent_delivery_t *dl, ngx_str_t *key);

/* a set of strings in a pool, looked up in log time */
ngx_rbtree_t *ngx_http_tent_key_set_create(ngx_pool_t *pool);
ngx_int_t ngx_http_tent_key_set_add(ngx_pool_t *pool, ngx_rbtree_t *set,
    ngx_str_t *key);
ngx_int_t ngx_http_tent_key_set_has(ngx_rbtree_t *set, ngx_str_t *key);
void ngx_http_tent_task_failed(ngx_http_tent_task_t *t, const char *step);
void ngx_http_tent_delivery_written(ngx_http_tent_store_op_t *op);
void ngx_http_tent_delivery_prune(ngx_http_tent_delivery_t *dl);
ngx_int_t ngx_http_tent_delivery_expired_scan(ngx_http_tent_delivery_t *dl,
    ngx_uint_t table, ngx_uint_t limit, ngx_http_tent_store_done_pt handler,
    const char *what);

/* ngx_http_tent_outbox.c */
void ngx_http_tent_delivery_scan_outbox(ngx_http_tent_delivery_t *dl);

/* ngx_http_tent_fanout.c, _fanout_apps.c: who may see a post */
ngx_int_t ngx_http_tent_delivery_permitted(json_t *post, json_t *record);
ngx_int_t ngx_http_tent_delivery_unnamed(json_t *post);
ngx_int_t ngx_http_tent_delivery_wants_app(json_t *post, json_t *sub,
    ngx_uint_t original);
ngx_int_t ngx_http_tent_delivery_scope(json_t *sub, const char *scope);
void ngx_http_tent_delivery_expand(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent, ngx_str_t *key, ngx_str_t *value);
ngx_int_t ngx_http_tent_fanout_apps(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent, ngx_str_t *rows, ngx_uint_t n);
ngx_uint_t ngx_http_tent_fanout_apps_has(ngx_http_tent_delivery_t *dl,
    ngx_str_t *key);

/* ngx_http_tent_delivery_entities.c: the registry's entities */
ngx_int_t ngx_http_tent_delivery_entities_init(ngx_http_tent_delivery_t *dl,
    ngx_cycle_t *cycle);
ngx_http_tent_slot_t *ngx_http_tent_delivery_slot(ngx_http_tent_delivery_t *dl,
    ngx_uint_t i);
ngx_http_tent_slot_t *ngx_http_tent_delivery_slot_of(
    ngx_http_tent_delivery_t *dl, ngx_http_tent_entity_conf_t *ent);
ngx_uint_t ngx_http_tent_delivery_slot_on(ngx_http_tent_slot_t *s);
ngx_int_t ngx_http_tent_delivery_hold(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent, ngx_pool_t *pool);
ngx_http_tent_slot_t *ngx_http_tent_delivery_slot_named(
    ngx_http_tent_delivery_t *dl, ngx_str_t *entity);
ngx_http_tent_entity_conf_t *ngx_http_tent_delivery_conf(
    ngx_http_tent_delivery_t *dl, ngx_uint_t i);
ngx_int_t ngx_http_tent_delivery_entity_active(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent);
void ngx_http_tent_delivery_entities_refresh(ngx_http_tent_delivery_t *dl,
    ngx_uint_t always);
ngx_int_t ngx_http_tent_queue_init(ngx_http_tent_delivery_t *dl,
    ngx_pool_t *pool);
void ngx_http_tent_queue_kick(ngx_http_tent_delivery_t *dl);
void ngx_http_tent_queue_next(ngx_http_tent_delivery_t *dl);
void ngx_http_tent_queue_reset(ngx_http_tent_delivery_t *dl);
void ngx_http_tent_queue_lower(ngx_http_tent_task_t *t, uint64_t ms);
void ngx_http_tent_queue_written(ngx_http_tent_task_t *t);
void ngx_http_tent_queue_again(ngx_http_tent_task_t *t);
void ngx_http_tent_queue_poke(ngx_http_tent_task_t *t);
void ngx_http_tent_queue_wake(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_slot_t *s, uint64_t ms);
ngx_int_t ngx_http_tent_queue_idle(ngx_http_tent_delivery_t *dl,
    ngx_uint_t i, uint64_t now);

/* ngx_http_tent_delivery_load.c: a batch of due jobs read at once */
ngx_uint_t ngx_http_tent_delivery_load(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent, ngx_http_tent_store_op_t *scan,
    ngx_uint_t due, ngx_str_t *last);
json_t *ngx_http_tent_record_parse(ngx_log_t *log, ngx_str_t *key,
    ngx_str_t *value);

/* the same-node transport's engine side (ngx_http_tent_local.h) */
ngx_int_t ngx_http_tent_local_index(ngx_http_tent_delivery_t *dl,
    ngx_pool_t *pool);
ngx_uint_t ngx_http_tent_local_held(ngx_http_tent_delivery_t *dl);
void ngx_http_tent_local_batch_kick(ngx_http_tent_delivery_t *dl);


/* ngx_http_tent_delivery_status.c: the ended ones pruned */
void ngx_http_tent_delivery_status_prune(ngx_http_tent_delivery_t *dl);


#endif /* _NGX_HTTP_TENT_DELIVERY_PRIVATE_H_INCLUDED_ */
