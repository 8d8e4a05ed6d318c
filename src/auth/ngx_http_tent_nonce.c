
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The shared memory zone tent_mac_nonce_cache: the nonces of signed
 * requests, each kept until its timestamp is too old to be accepted,
 * within budgets by the entity and by the kind of key, so a replay
 * through any worker is caught, a flood of one kind never crowds out
 * the owner's and one entity never crowds out another's.  The zone every
 * worker maps holds the counters of shm.h too (ngx_http_tent_shm.c): its
 * init gives them their part first.
 */


#define NGX_HTTP_TENT_AUTH_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_auth_private.h"
#include "ngx_http_tent_shm.h"

#include <openssl/evp.h>


#if (NGX_HTTP_TENT_STAT_BUDGETS != NGX_HTTP_TENT_NONCE_BUDGETS)
#error "shm.h's NGX_HTTP_TENT_STAT_BUDGETS is auth's count of budgets"
#endif


/*
 * An entity's share: the nonces it holds by budget, in a slot found by
 * a hash of its name and told from another's by a tag; a slot whose
 * counts are all 0 is free.  A nonce remembers its slot.
 */
typedef struct {
    uint64_t                        tag;
    uint32_t                        used[NGX_HTTP_TENT_NONCE_BUDGETS];
    uint32_t                        warned[NGX_HTTP_TENT_NONCE_BUDGETS];
} ngx_http_tent_nonce_entity_t;


typedef struct {
    ngx_rbtree_t                    rbtree;
    ngx_rbtree_node_t               sentinel;
    ngx_queue_t                     queue[NGX_HTTP_TENT_NONCE_BUDGETS];
    ngx_uint_t                      used[NGX_HTTP_TENT_NONCE_BUDGETS];
    ngx_queue_t                     free;
    ngx_uint_t                      capacity;
    time_t                          warned[NGX_HTTP_TENT_NONCE_BUDGETS];
    ngx_http_tent_shm_t             shm;         /* shm.c's counters */
    ngx_http_tent_nonce_entity_t   *entities;
    ngx_uint_t                      nentities;   /* a power of two */
} ngx_http_tent_nonce_sh_t;


/* the zone's data: shm.h's part first, where the counters are */
typedef struct {
    ngx_http_tent_shm_ctx_t         zone;
    ngx_http_tent_nonce_sh_t       *sh;
    ngx_slab_pool_t                *shpool;
    ngx_uint_t                      share;       /* percent, an entity */
} ngx_http_tent_nonce_ctx_t;


/* an entity's slot: looked for among so many after its hash's */
#define NGX_HTTP_TENT_NONCE_PROBES     8
#define NGX_HTTP_TENT_NONCE_SLOTS_MIN  64
#define NGX_HTTP_TENT_NONCE_SLOTS_MAX  16384


/*
 * A seen nonce: a SHA-256 digest of (row key, ts, nonce), its first
 * bits in the node's key, the next 64 here; 64 bytes in all on 64-bit
 * systems, whatever the lengths of the entity, id and nonce.
 */

typedef struct {
    u_char                          color;
    u_char                          dummy;
    u_short                         entity;      /* its slot */
    uint32_t                        expires;
    ngx_queue_t                     queue;
    uint64_t                        digest;
} ngx_http_tent_nonce_t;


/*
 * The nonce cache: an rbtree by digest and, per budget, a queue oldest
 * first, in shared memory.  A node is an ngx_rbtree_node_t whose bytes
 * from "color" on are an ngx_http_tent_nonce_t, as in
 * ngx_http_limit_req_module.  Every node is allocated when the zone is
 * made, so "full" is a count, the same in every worker.
 */

static void
ngx_http_tent_nonce_insert(ngx_rbtree_node_t *temp, ngx_rbtree_node_t *node,
    ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t      **p;
    ngx_http_tent_nonce_t   *n, *t;

    for ( ;; ) {

        if (node->key < temp->key) {
            p = &temp->left;

        } else if (node->key > temp->key) {
            p = &temp->right;

        } else {
            n = (ngx_http_tent_nonce_t *) &node->color;
            t = (ngx_http_tent_nonce_t *) &temp->color;

            p = (n->digest < t->digest) ? &temp->left : &temp->right;
        }

        if (*p == sentinel) {
            break;
        }

        temp = *p;
    }

    *p = node;
    node->parent = temp;
    node->left = sentinel;
    node->right = sentinel;
    ngx_rbt_red(node);
}


void *
ngx_http_tent_nonce_zone_ctx(ngx_pool_t *pool, ngx_uint_t share)
{
    ngx_http_tent_nonce_ctx_t  *ctx;

    ctx = ngx_pcalloc(pool, sizeof(ngx_http_tent_nonce_ctx_t));
    if (ctx == NULL) {
        return NULL;
    }

    ctx->share = share;

    return ctx;
}


/* the share decided once every server is known (postconfiguration) */

void
ngx_http_tent_nonce_zone_share(ngx_shm_zone_t *zone, ngx_uint_t share)
{
    ngx_http_tent_nonce_ctx_t  *ctx = zone->data;

    ctx->share = share;
}


/* the nonces one entity may hold: 4 at least, so each kind has one */

static ngx_uint_t
ngx_http_tent_nonce_share(ngx_http_tent_nonce_sh_t *sh, ngx_uint_t share)
{
    return ngx_max(sh->capacity * share / 100, 4);
}


/* what one kind of key may hold, of the whole zone or of one share */

static ngx_uint_t
ngx_http_tent_nonce_limit(ngx_uint_t budget, ngx_uint_t of)
{
    return (budget == NGX_HTTP_TENT_NONCE_OWNER) ? of : of / 4;
}


ngx_int_t
ngx_http_tent_nonce_zone_init(ngx_shm_zone_t *zone, void *data)
{
    ngx_http_tent_nonce_ctx_t *octx = data;

    size_t                      size;
    ngx_uint_t                  i;
    ngx_rbtree_node_t          *node;
    ngx_http_tent_nonce_t      *nc;
    ngx_http_tent_nonce_sh_t   *sh;
    ngx_http_tent_nonce_ctx_t  *ctx;

    ctx = zone->data;

    if (octx) {
        ctx->zone.shm = octx->zone.shm;
        ctx->sh = octx->sh;
        ctx->shpool = octx->shpool;
        return NGX_OK;
    }

    ctx->shpool = (ngx_slab_pool_t *) zone->shm.addr;

    if (zone->shm.exists) {
        ctx->sh = ctx->shpool->data;
        ctx->zone.shm = &ctx->sh->shm;
        return NGX_OK;
    }

    sh = ngx_slab_calloc(ctx->shpool, sizeof(ngx_http_tent_nonce_sh_t));
    if (sh == NULL) {
        return NGX_ERROR;
    }

    ctx->sh = sh;
    ctx->shpool->data = sh;

    /* the counters and the census (shm.c), before the nonces take it */

    if (ngx_http_tent_shm_init(zone, ctx->shpool, &sh->shm) != NGX_OK) {
        return NGX_ERROR;
    }

    ctx->zone.shm = &sh->shm;

    /* the entities' shares: a slot a KB too, from 64 to 16,384 */

    sh->nentities = NGX_HTTP_TENT_NONCE_SLOTS_MIN;

    while (sh->nentities < NGX_HTTP_TENT_NONCE_SLOTS_MAX
           && sh->nentities * 2 * 1024 <= zone->shm.size)
    {
        sh->nentities *= 2;
    }

    sh->entities = ngx_slab_calloc(ctx->shpool, sh->nentities
                                   * sizeof(ngx_http_tent_nonce_entity_t));
    if (sh->entities == NULL) {
        ngx_log_error(NGX_LOG_EMERG, zone->shm.log, 0,
                      "tent: tent_mac_nonce_cache of %uzk has no room for "
                      "the entities' shares", zone->shm.size >> 10);
        return NGX_ERROR;
    }

    ngx_rbtree_init(&sh->rbtree, &sh->sentinel, ngx_http_tent_nonce_insert);

    for (i = 0; i < NGX_HTTP_TENT_NONCE_BUDGETS; i++) {
        ngx_queue_init(&sh->queue[i]);
    }

    ngx_queue_init(&sh->free);

    ctx->shpool->log_nomem = 0;

    /* every node now: the zone holds nothing else */

    size = offsetof(ngx_rbtree_node_t, color)
           + sizeof(ngx_http_tent_nonce_t);

    for ( ;; ) {
        node = ngx_slab_alloc(ctx->shpool, size);
        if (node == NULL) {
            break;
        }

        nc = (ngx_http_tent_nonce_t *) &node->color;
        ngx_queue_insert_tail(&sh->free, &nc->queue);
        sh->capacity++;
    }

    if (sh->capacity < 16) {
        ngx_log_error(NGX_LOG_EMERG, zone->shm.log, 0,
                      "tent: tent_mac_nonce_cache of %uzk holds %ui nonces, "
                      "16 at least are needed", zone->shm.size >> 10,
                      sh->capacity);
        return NGX_ERROR;
    }

    ngx_log_error(NGX_LOG_NOTICE, zone->shm.log, 0,
                  "tent: tent_mac_nonce_cache of %uzk holds %ui nonces, "
                  "%ui each for app and for follower keys, %ui for one "
                  "entity (tent_mac_nonce_share %ui%%), %ui entity slots "
                  "and %ui census slots", zone->shm.size >> 10,
                  sh->capacity, sh->capacity / 4,
                  ngx_http_tent_nonce_share(sh, ctx->share), ctx->share,
                  sh->nentities, sh->shm.ncensus);

    return NGX_OK;
}


/*
 * Drop the expired nonces at the heads of the queues: at most "max" of
 * each (bounded work under the lock), or all of them with 0.
 */

static void
ngx_http_tent_nonce_expire(ngx_http_tent_nonce_ctx_t *ctx, time_t now,
    ngx_uint_t max)
{
    ngx_uint_t              b, n;
    ngx_queue_t            *q;
    ngx_rbtree_node_t      *node;
    ngx_http_tent_nonce_t  *nc;

    for (b = 0; b < NGX_HTTP_TENT_NONCE_BUDGETS; b++) {

        for (n = 0; max == 0 || n < max; n++) {

            if (ngx_queue_empty(&ctx->sh->queue[b])) {
                break;
            }

            q = ngx_queue_head(&ctx->sh->queue[b]);
            nc = ngx_queue_data(q, ngx_http_tent_nonce_t, queue);

            if ((time_t) nc->expires > now) {
                break;
            }

            node = (ngx_rbtree_node_t *)
                       ((u_char *) nc - offsetof(ngx_rbtree_node_t, color));

            ngx_queue_remove(q);
            ngx_rbtree_delete(&ctx->sh->rbtree, node);
            ngx_queue_insert_head(&ctx->sh->free, q);
            ctx->sh->used[b]--;
            ctx->sh->entities[nc->entity].used[b]--;
        }
    }
}


/* the seconds until the first of these queues has a nonce expire */

static time_t
ngx_http_tent_nonce_wait(ngx_http_tent_nonce_sh_t *sh, ngx_uint_t budget,
    time_t now, time_t lifetime)
{
    time_t                  wait;
    ngx_uint_t              b;
    ngx_queue_t            *q;
    ngx_http_tent_nonce_t  *nc;

    wait = lifetime;

    for (b = 0; b < NGX_HTTP_TENT_NONCE_BUDGETS; b++) {

        if ((budget != NGX_HTTP_TENT_NONCE_BUDGETS && b != budget)
            || ngx_queue_empty(&sh->queue[b]))
        {
            continue;
        }

        q = ngx_queue_head(&sh->queue[b]);
        nc = ngx_queue_data(q, ngx_http_tent_nonce_t, queue);

        wait = ngx_min(wait, (time_t) nc->expires - now);
    }

    return ngx_max(wait, 1);
}


static const char *
ngx_http_tent_nonce_kind(ngx_uint_t budget)
{
    return budget == NGX_HTTP_TENT_NONCE_APP ? "app"
           : budget == NGX_HTTP_TENT_NONCE_FOLLOWER ? "follower"
           : budget == NGX_HTTP_TENT_NONCE_FOLLOWING ? "following"
           : "owner";
}


/* no room: the entity's share, its kind's in it or in the zone, or all */

static ngx_uint_t
ngx_http_tent_nonce_full(ngx_http_tent_nonce_entity_t *e, ngx_uint_t budget,
    ngx_uint_t limit, ngx_uint_t share, ngx_http_tent_nonce_sh_t *sh)
{
    ngx_uint_t  b, total;

    total = 0;

    for (b = 0; b < NGX_HTTP_TENT_NONCE_BUDGETS; b++) {
        total += e->used[b];
    }

    return total >= share
           || e->used[budget] >= ngx_http_tent_nonce_limit(budget, share)
           || sh->used[budget] >= limit
           || ngx_queue_empty(&sh->free);
}


/*
 * The slot of an entity's share: its own among the probes after its
 * hash's, else the first free one.  With every probe another entity's,
 * it shares its hash's slot (and its share) with that one: more
 * entities signing within 2 x tent_mac_skew than the zone has slots.
 */

static ngx_uint_t
ngx_http_tent_nonce_entity(ngx_http_tent_nonce_sh_t *sh, ngx_str_t *entity)
{
    uint64_t                       tag;
    uint32_t                       h;
    ngx_uint_t                     i, b, slot, free;
    ngx_http_tent_nonce_entity_t  *e;

    h = ngx_murmur_hash2(entity->data, entity->len);
    tag = ((uint64_t) ngx_crc32_long(entity->data, entity->len) << 32)
          | ngx_hash_key(entity->data, entity->len);

    free = sh->nentities;

    for (i = 0; i < NGX_HTTP_TENT_NONCE_PROBES; i++) {
        slot = (h + i) & (sh->nentities - 1);
        e = &sh->entities[slot];

        for (b = 0; b < NGX_HTTP_TENT_NONCE_BUDGETS; b++) {
            if (e->used[b]) {
                break;
            }
        }

        if (b == NGX_HTTP_TENT_NONCE_BUDGETS) {
            if (free == sh->nentities) {
                free = slot;
            }

            continue;
        }

        if (e->tag == tag) {
            return slot;
        }
    }

    if (free == sh->nentities) {
        return h & (sh->nentities - 1);
    }

    sh->entities[free].tag = tag;

    return free;
}


/*
 * NGX_OK: a new nonce, now remembered; NGX_DECLINED: seen before;
 * NGX_BUSY: no room for this budget, "retry" says for how long.  A
 * nonce is never forgotten before it expires.
 */

ngx_int_t
ngx_http_tent_nonce_check(ngx_http_request_t *r, ngx_str_t *entity,
    ngx_str_t *key, ngx_uint_t budget, time_t lifetime, time_t *retry)
{
    u_char                      md[EVP_MAX_MD_SIZE];
    time_t                      now;
    uint64_t                    d[2];
    ngx_uint_t                  b, limit, share, total, slot, full, warn;
    unsigned int                md_len;
    ngx_queue_t                *q;
    ngx_rbtree_key_t            hash;
    ngx_rbtree_node_t          *node, *sentinel;
    ngx_http_tent_nonce_t      *nc;
    ngx_http_tent_nonce_sh_t   *sh;
    ngx_http_tent_nonce_ctx_t  *ctx;
    ngx_http_tent_main_conf_t  *mcf;
    ngx_http_tent_nonce_entity_t  *e;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_tent_module);

    if (mcf->nonce_zone == NULL) {
        return NGX_ERROR;
    }

    if (EVP_Digest(key->data, key->len, md, &md_len, EVP_sha256(), NULL)
        != 1
        || md_len < sizeof(d))
    {
        return NGX_ERROR;
    }

    ngx_memcpy(d, md, sizeof(d));
    hash = (ngx_rbtree_key_t) d[0];

    ctx = mcf->nonce_zone->data;
    sh = ctx->sh;
    now = ngx_time();

    ngx_shmtx_lock(&ctx->shpool->mutex);

    ngx_http_tent_nonce_expire(ctx, now, 64);

    node = sh->rbtree.root;
    sentinel = sh->rbtree.sentinel;

    while (node != sentinel) {

        if (hash != node->key) {
            node = (hash < node->key) ? node->left : node->right;
            continue;
        }

        nc = (ngx_http_tent_nonce_t *) &node->color;

        if (d[1] == nc->digest) {
            ngx_shmtx_unlock(&ctx->shpool->mutex);
            return NGX_DECLINED;
        }

        node = (d[1] < nc->digest) ? node->left : node->right;
    }

    limit = ngx_http_tent_nonce_limit(budget, sh->capacity);
    share = ngx_http_tent_nonce_share(sh, ctx->share);

    slot = ngx_http_tent_nonce_entity(sh, entity);
    e = &sh->entities[slot];

    full = ngx_http_tent_nonce_full(e, budget, limit, share, sh);

    if (full) {
        /* the bounded pass may have left expired ones: all of them now */

        ngx_http_tent_nonce_expire(ctx, now, 0);

        /* the entity's share first: it is the one to wait, not others */

        total = 0;

        for (b = 0; b < NGX_HTTP_TENT_NONCE_BUDGETS; b++) {
            total += e->used[b];
        }

        if (total >= share
            || e->used[budget] >= ngx_http_tent_nonce_limit(budget, share))
        {
            /* at least until the oldest nonce of its kind expires */

            *retry = ngx_http_tent_nonce_wait(sh, NGX_HTTP_TENT_NONCE_BUDGETS,
                                              now, lifetime);
            goto share;
        }

        if (sh->used[budget] >= limit) {
            *retry = ngx_http_tent_nonce_wait(sh, budget, now, lifetime);
            goto busy;
        }

        if (ngx_queue_empty(&sh->free)) {
            *retry = ngx_http_tent_nonce_wait(sh,
                                              NGX_HTTP_TENT_NONCE_BUDGETS,
                                              now, lifetime);
            goto busy;
        }
    }

    q = ngx_queue_head(&sh->free);
    ngx_queue_remove(q);

    nc = ngx_queue_data(q, ngx_http_tent_nonce_t, queue);
    node = (ngx_rbtree_node_t *)
               ((u_char *) nc - offsetof(ngx_rbtree_node_t, color));

    node->key = hash;
    nc->expires = (uint32_t) (now + lifetime);
    nc->digest = d[1];

    ngx_rbtree_insert(&sh->rbtree, node);
    nc->entity = (u_short) slot;

    ngx_queue_insert_tail(&sh->queue[budget], &nc->queue);
    sh->used[budget]++;
    e->used[budget]++;

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return NGX_OK;

share:

    /* once in 10 seconds per entity and kind */

    warn = ((uint32_t) now - e->warned[budget] >= 10);
    if (warn) {
        e->warned[budget] = (uint32_t) now;
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    if (warn) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent: the MAC nonce cache is full for %s keys of "
                      "\"%V\" (its share of %ui, tent_mac_nonce_share), "
                      "refused for %T s", ngx_http_tent_nonce_kind(budget),
                      entity, share, *retry);
    }

    return NGX_BUSY;

busy:

    /* once in 10 seconds per budget: a flood must not flood the log too */

    warn = (now - sh->warned[budget] >= 10);
    if (warn) {
        sh->warned[budget] = now;
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    if (warn) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent: the MAC nonce cache is full for %s keys, "
                      "refused for %T s; increase tent_mac_nonce_cache "
                      "if this is not an attack",
                      ngx_http_tent_nonce_kind(budget), *retry);
    }

    return NGX_BUSY;
}


/* the nonce cache's fill, consistent across budgets: read under the lock */

void
ngx_http_tent_nonce_stats(ngx_cycle_t *cycle, ngx_http_tent_stats_t *st)
{
    ngx_uint_t                  i;
    ngx_http_tent_nonce_ctx_t  *ctx;
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_tent_module);

    if (mcf == NULL || mcf->nonce_zone == NULL) {
        return;
    }

    ctx = mcf->nonce_zone->data;

    if (ctx->sh == NULL) {
        return;
    }

    ngx_shmtx_lock(&ctx->shpool->mutex);

    for (i = 0; i < NGX_HTTP_TENT_NONCE_BUDGETS; i++) {
        st->used[i] = ctx->sh->used[i];
        st->limit[i] = ngx_http_tent_nonce_limit(i, ctx->sh->capacity);
    }

    st->capacity = ctx->sh->capacity;

    ngx_shmtx_unlock(&ctx->shpool->mutex);
}
