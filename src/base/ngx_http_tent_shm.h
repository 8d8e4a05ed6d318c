
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_SHM_H_INCLUDED_
#define _NGX_HTTP_TENT_SHM_H_INCLUDED_


/*
 * The module's shared memory zone, as the layers below auth see it: the
 * generation counters every worker reads (the store moves them from the
 * keys a write touched; the caches compare them), the delivery engine's
 * census and outbox marks, and the operator's counters that tent_status
 * answers, moved where the events happen (ngx_http_tent_shm.c).  The
 * zone and its nonces are ngx_http_tent_nonce.c's (auth.h).
 */


#include "ngx_http_tent_base.h"


/* anonymous replies: moved by a write of a post or a profile section */
ngx_atomic_uint_t ngx_http_tent_generation(ngx_cycle_t *cycle);
void ngx_http_tent_generation_bump(ngx_cycle_t *cycle);

/* credentials: moved by a write of a credential row */
ngx_atomic_uint_t ngx_http_tent_credential_generation(ngx_cycle_t *cycle);
void ngx_http_tent_credential_bump(ngx_cycle_t *cycle);

/* the entity registry: moved by the operator's writes (tent_admin) */
ngx_atomic_uint_t ngx_http_tent_registry_generation(ngx_cycle_t *cycle);
void ngx_http_tent_registry_bump(ngx_cycle_t *cycle);

/* app subscriptions: moved by a write of a subscription row */
ngx_atomic_uint_t ngx_http_tent_subscription_generation(ngx_cycle_t *cycle);
void ngx_http_tent_subscription_bump(ngx_cycle_t *cycle);

/* the owners' blocks: by their writes */
ngx_atomic_uint_t ngx_http_tent_blocks_generation(ngx_cycle_t *cycle);
void ngx_http_tent_blocks_bump(ngx_cycle_t *cycle);

/* the operator's domain blocks: by their writes (0x00 'Y' rows) only */
ngx_atomic_uint_t ngx_http_tent_domains_generation(ngx_cycle_t *cycle);
void ngx_http_tent_domains_bump(ngx_cycle_t *cycle);

/*
 * The delivery engine's census of an entity's app subscriptions, kept
 * where every worker sees it: "none", as of the subscriptions'
 * generation read before the census's scan, for at most a minute.  A
 * write of a post only its apps could get skips its outbox row while
 * it holds (ngx_http_tent_outbox.c).  A slot by a hash of the name,
 * tagged with two more: another entity's census only takes the slot.
 * The slots are the zone's size / 1 KB, a power of two from 256 to
 * 16,384 (32 bytes each: 128 KB of the default 4m): with fewer slots
 * than the entities a fan-out reaches, their censuses take each other's
 * slots and every copy gets an outbox row again.
 */
#define NGX_HTTP_TENT_CENSUS_MIN        256
#define NGX_HTTP_TENT_CENSUS_MAX        16384
#define NGX_HTTP_TENT_CENSUS_TIME       60

void ngx_http_tent_apps_census(ngx_cycle_t *cycle, ngx_str_t *entity,
    ngx_atomic_uint_t generation, ngx_uint_t none);
ngx_uint_t ngx_http_tent_apps_none(ngx_cycle_t *cycle, ngx_str_t *entity);


/*
 * Outbox marks: a bit by a hash of the entity (ngx_crc32_short of its
 * name) that a write of an outbox row sets once it is done; the delivery
 * engine takes them all at a pass (ngx_http_tent_delivery.c).
 */
#define NGX_HTTP_TENT_OUTBOX_MARKS      4096
#define NGX_HTTP_TENT_OUTBOX_WORDS                                            \
    (NGX_HTTP_TENT_OUTBOX_MARKS / (8 * sizeof(ngx_atomic_uint_t)))

void ngx_http_tent_outbox_mark(ngx_cycle_t *cycle, ngx_uint_t hash);
ngx_int_t ngx_http_tent_outbox_take(ngx_cycle_t *cycle,
    ngx_atomic_uint_t *marks);


/*
 * The counters of tent_status: the whole nginx, every worker.  Each is
 * an ngx_atomic_t of the zone, only added to, except the gauges of the
 * delivery tasks running and of the breakers open, which the one
 * delivery engine sets.
 */

/* the store's kinds of operation, in the order of its op bytes */
#define NGX_HTTP_TENT_STORE_KINDS       5

/* the budgets of the nonce cache, auth's NGX_HTTP_TENT_NONCE_* */
#define NGX_HTTP_TENT_STAT_BUDGETS      4


typedef enum {
    NGX_HTTP_TENT_STAT_QUEUED = 0,     /* jobs written by the fan-out */
    NGX_HTTP_TENT_STAT_DELIVERED,
    NGX_HTTP_TENT_STAT_RETRIED,
    NGX_HTTP_TENT_STAT_DEAD,
    NGX_HTTP_TENT_STAT_CONNECTIONS,    /* outbound, opened */
    NGX_HTTP_TENT_STAT_REUSED,         /* outbound, requests on kept ones */
    NGX_HTTP_TENT_STAT_STORE_OPS,      /* + op byte - 1: get ... mget */
    NGX_HTTP_TENT_STAT_STORE_MS = NGX_HTTP_TENT_STAT_STORE_OPS
                                  + NGX_HTTP_TENT_STORE_KINDS,
    NGX_HTTP_TENT_STAT_CACHE_HITS = NGX_HTTP_TENT_STAT_STORE_MS
                                    + NGX_HTTP_TENT_STORE_KINDS,
    NGX_HTTP_TENT_STAT_CACHE_MISSES,
    NGX_HTTP_TENT_STAT_IN_FLIGHT,      /* a gauge */
    NGX_HTTP_TENT_STAT_BREAKERS,       /* a gauge: hosts paused */
    NGX_HTTP_TENT_STAT_LOCAL,          /* delivered on this node, no HTTP */
    NGX_HTTP_TENT_STAT_STORE_REQUEST,  /* ops the owner ran for requests */
    NGX_HTTP_TENT_STAT_STORE_BACKGROUND,  /* ... for background work */
    NGX_HTTP_TENT_STAT_STORE_DEFERRED, /* background ops that waited a slot */
    NGX_HTTP_TENT_STAT_STORE_WAITING,  /* a gauge: those waiting now */
    NGX_HTTP_TENT_STAT_STORE_LOCKED,   /* a gauge: another has the lock */
    NGX_HTTP_TENT_STAT_STORE_LOCK_PID, /* a gauge: that process, or 0 */
    NGX_HTTP_TENT_STAT_ACTIVITYPUB,    /* delivered to an ActivityPub inbox */
    NGX_HTTP_TENT_STAT_SHARED_INBOX,   /* jobs for a shared inbox */
    NGX_HTTP_TENT_STAT_SHARED_FOLLOWERS,  /* followers carried by them */
    NGX_HTTP_TENT_STATS
} ngx_http_tent_stat_e;


/* the counters; the nonce cache's fill is auth's (nonce_stats) */
typedef struct {
    ngx_atomic_uint_t               value[NGX_HTTP_TENT_STATS];
    ngx_uint_t                      used[NGX_HTTP_TENT_STAT_BUDGETS];
    ngx_uint_t                      limit[NGX_HTTP_TENT_STAT_BUDGETS];
    ngx_uint_t                      capacity;
} ngx_http_tent_stats_t;


typedef struct ngx_http_tent_census_s  ngx_http_tent_census_t;

/*
 * The counters in the zone.  Their fields are ngx_http_tent_shm.c's (the
 * others use the functions below); the type is whole here so that the
 * zone's owner holds them in its first allocation, where they always
 * were: the nonces get the rest of the zone, as many as before.
 */
typedef struct {
    ngx_atomic_t                    generation;
    ngx_atomic_t                    credentials; /* their generation */
    ngx_atomic_t                    stats[NGX_HTTP_TENT_STATS];
    ngx_atomic_t                    outbox[NGX_HTTP_TENT_OUTBOX_WORDS];
    ngx_atomic_t                    registry;    /* its generation */
    ngx_atomic_t                    subscriptions; /* their generation */
    ngx_atomic_t                    blocks;      /* their generation */
    ngx_atomic_t                    domains;     /* the operator's */
    ngx_http_tent_census_t         *census;
    ngx_uint_t                      ncensus;     /* a power of two */
} ngx_http_tent_shm_t;

/*
 * The zone's data (zone->data) begins with this: where in the zone the
 * counters are, set by the zone's init after ngx_http_tent_shm_init() in
 * a new zone (which logs why it failed) or from the old zone's data.
 */
typedef struct {
    ngx_http_tent_shm_t            *shm;
} ngx_http_tent_shm_ctx_t;

ngx_int_t ngx_http_tent_shm_init(ngx_shm_zone_t *zone,
    ngx_slab_pool_t *shpool, ngx_http_tent_shm_t *shm);


/* tent_status: a counter added to, a gauge set */
void ngx_http_tent_count(ngx_uint_t stat, ngx_atomic_int_t n);
void ngx_http_tent_gauge(ngx_uint_t stat, ngx_atomic_uint_t v);

/* a copy of the counters, the rest 0; no zone: DECLINED */
ngx_int_t ngx_http_tent_stats(ngx_cycle_t *cycle, ngx_http_tent_stats_t *st);


#endif /* _NGX_HTTP_TENT_SHM_H_INCLUDED_ */
