
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The counters of the shared zone every worker maps: the generations
 * the caches compare (replies, credentials, registry, subscriptions,
 * blocks, domains), the census of apps and the outbox marks of the
 * delivery engine, and the counters of tent_status.  The layers below
 * auth move them, so they live here; the zone itself is the nonce
 * cache's (ngx_http_tent_nonce.c), which gives them their part of it
 * with ngx_http_tent_shm_init().
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_shm.h"


/* a census slot: a seqlock (odd while written), the entity's tag, ... */
struct ngx_http_tent_census_s {
    ngx_atomic_t                    seq;
    ngx_atomic_t                    tag;
    ngx_atomic_t                    generation;  /* of "none", + 1; or 0 */
    ngx_atomic_t                    time;        /* of the census */
};


/*
 * The counters' part of a new zone (zeroed, in the zone owner's first
 * allocation), before the nonces take the rest: the census a slot a KB
 * of the zone, from 256 to 16,384 slots.
 */

ngx_int_t
ngx_http_tent_shm_init(ngx_shm_zone_t *zone, ngx_slab_pool_t *shpool,
    ngx_http_tent_shm_t *shm)
{
    shm->ncensus = NGX_HTTP_TENT_CENSUS_MIN;

    while (shm->ncensus < NGX_HTTP_TENT_CENSUS_MAX
           && shm->ncensus * 2 * 1024 <= zone->shm.size)
    {
        shm->ncensus *= 2;
    }

    shm->census = ngx_slab_calloc(shpool, shm->ncensus
                                          * sizeof(ngx_http_tent_census_t));
    if (shm->census == NULL) {
        ngx_log_error(NGX_LOG_EMERG, zone->shm.log, 0,
                      "tent: tent_mac_nonce_cache of %uzk has no room for "
                      "the census of apps", zone->shm.size >> 10);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * The counters, from the cycle: the zone's data begins with where they
 * are (ngx_http_tent_shm_ctx_t); NULL without a zone or before its init.
 */

static ngx_http_tent_shm_t *
ngx_http_tent_shared(ngx_cycle_t *cycle)
{
    ngx_http_tent_shm_ctx_t    *ctx;
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_tent_module);

    if (mcf == NULL || mcf->nonce_zone == NULL) {
        return NULL;
    }

    ctx = mcf->nonce_zone->data;

    return ctx->shm;
}


/*
 * A counter every worker sees, bumped by each profile write: a worker's
 * cached profile is good while the counter has not moved.
 */

ngx_atomic_uint_t
ngx_http_tent_generation(ngx_cycle_t *cycle)
{
    ngx_http_tent_shm_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    return sh ? sh->generation : 0;
}


void
ngx_http_tent_generation_bump(ngx_cycle_t *cycle)
{
    ngx_http_tent_shm_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    if (sh) {
        (void) ngx_atomic_fetch_add(&sh->generation, 1);
    }
}


ngx_atomic_uint_t
ngx_http_tent_registry_generation(ngx_cycle_t *cycle)
{
    ngx_http_tent_shm_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    return sh ? sh->registry : 0;
}


void
ngx_http_tent_registry_bump(ngx_cycle_t *cycle)
{
    ngx_http_tent_shm_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    if (sh) {
        (void) ngx_atomic_fetch_add(&sh->registry, 1);
    }
}


ngx_atomic_uint_t
ngx_http_tent_credential_generation(ngx_cycle_t *cycle)
{
    ngx_http_tent_shm_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    return sh ? sh->credentials : 0;
}


void
ngx_http_tent_credential_bump(ngx_cycle_t *cycle)
{
    ngx_http_tent_shm_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    if (sh) {
        (void) ngx_atomic_fetch_add(&sh->credentials, 1);
    }
}


/*
 * App subscriptions: moved by a write of one, so that the delivery
 * engine may trust "no app of this entity is subscribed" until then
 * (ngx_http_tent_local_write.c).
 */

ngx_atomic_uint_t
ngx_http_tent_subscription_generation(ngx_cycle_t *cycle)
{
    ngx_http_tent_shm_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    return sh ? sh->subscriptions : 0;
}


void
ngx_http_tent_subscription_bump(ngx_cycle_t *cycle)
{
    ngx_http_tent_shm_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    if (sh) {
        (void) ngx_atomic_fetch_add(&sh->subscriptions, 1);
    }
}


/* blocks: moved by a write of an owner's block row (ngx_http_tent_blocks.c) */

ngx_atomic_uint_t
ngx_http_tent_blocks_generation(ngx_cycle_t *cycle)
{
    ngx_http_tent_shm_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    return sh ? sh->blocks : 0;
}


void
ngx_http_tent_blocks_bump(ngx_cycle_t *cycle)
{
    ngx_http_tent_shm_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    if (sh) {
        (void) ngx_atomic_fetch_add(&sh->blocks, 1);
    }
}


/*
 * the operator's domain blocks: moved only by a write of a 0x00 'Y' row,
 * never by an owner's block (a tenant must not make every worker's list
 * stale, and so hold delivery for the whole host)
 */

ngx_atomic_uint_t
ngx_http_tent_domains_generation(ngx_cycle_t *cycle)
{
    ngx_http_tent_shm_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    return sh ? sh->domains : 0;
}


void
ngx_http_tent_domains_bump(ngx_cycle_t *cycle)
{
    ngx_http_tent_shm_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    if (sh) {
        (void) ngx_atomic_fetch_add(&sh->domains, 1);
    }
}


/*
 * The census of an entity's apps: its slot by one hash of the name, its
 * tag two others, so two entities that share a slot are told apart.
 */

static ngx_http_tent_census_t *
ngx_http_tent_census_slot(ngx_cycle_t *cycle, ngx_str_t *entity,
    ngx_atomic_uint_t *tag)
{
    uint32_t              h;
    ngx_http_tent_shm_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    if (sh == NULL || entity->len == 0) {
        return NULL;
    }

    h = ngx_murmur_hash2(entity->data, entity->len);

    *tag = (ngx_atomic_uint_t)
           (((uint64_t) ngx_crc32_long(entity->data, entity->len) << 32)
            | ngx_hash_key(entity->data, entity->len));

    return &sh->census[h & (sh->ncensus - 1)];
}


/*
 * The engine's census found no app subscribed ("none"), having read the
 * subscriptions' generation first, or found one: then the slot, if it is
 * the entity's, says nothing any more.  One writer at a time takes the
 * seqlock; another gives up (the census only saves work).
 */

void
ngx_http_tent_apps_census(ngx_cycle_t *cycle, ngx_str_t *entity,
    ngx_atomic_uint_t generation, ngx_uint_t none)
{
    ngx_atomic_uint_t        seq, tag;
    ngx_http_tent_census_t  *slot;

    slot = ngx_http_tent_census_slot(cycle, entity, &tag);
    if (slot == NULL) {
        return;
    }

    seq = slot->seq;

    if ((seq & 1) || !ngx_atomic_cmp_set(&slot->seq, seq, seq + 1)) {
        return;
    }

    ngx_memory_barrier();

    if (none) {
        slot->tag = tag;
        slot->generation = generation + 1;
        slot->time = ngx_time();

    } else if (slot->tag == tag) {
        slot->generation = 0;
    }

    ngx_memory_barrier();

    slot->seq = seq + 2;
}


/*
 * Is no app of the entity subscribed: a census of it found none at the
 * subscriptions' generation of now, less than a minute ago.  Anything
 * uncertain (the slot being written, another entity's, old) is "maybe".
 */

ngx_uint_t
ngx_http_tent_apps_none(ngx_cycle_t *cycle, ngx_str_t *entity)
{
    time_t                   now;
    ngx_atomic_uint_t        seq, tag, mine, generation, time;
    ngx_http_tent_shm_t     *sh;
    ngx_http_tent_census_t  *slot;

    slot = ngx_http_tent_census_slot(cycle, entity, &mine);
    if (slot == NULL) {
        return 0;
    }

    sh = ngx_http_tent_shared(cycle);

    seq = slot->seq;

    if (seq & 1) {
        return 0;
    }

    ngx_memory_barrier();

    tag = slot->tag;
    generation = slot->generation;
    time = slot->time;

    ngx_memory_barrier();

    if (slot->seq != seq) {
        return 0;
    }

    now = ngx_time();

    return tag == mine
           && generation == sh->subscriptions + 1
           && (time_t) time <= now
           && now - (time_t) time < NGX_HTTP_TENT_CENSUS_TIME;
}


/*
 * The outbox marks: a bit by a hash of the entity, set by the worker
 * whose write added an outbox row, once that write is done (so a scan
 * sent after the bit is taken sees the row); the delivery engine takes
 * and clears them all at the start of a pass.
 */

void
ngx_http_tent_outbox_mark(ngx_cycle_t *cycle, ngx_uint_t hash)
{
    ngx_uint_t            w;
    ngx_atomic_uint_t     v, m;
    ngx_http_tent_shm_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    if (sh == NULL) {
        return;
    }

    hash %= NGX_HTTP_TENT_OUTBOX_MARKS;
    w = hash / (8 * sizeof(ngx_atomic_uint_t));
    m = (ngx_atomic_uint_t) 1 << (hash % (8 * sizeof(ngx_atomic_uint_t)));

    do {
        v = sh->outbox[w];

        if (v & m) {
            return;
        }

    } while (!ngx_atomic_cmp_set(&sh->outbox[w], v, v | m));
}


/* every mark into "marks", cleared in the zone; no zone: DECLINED */

ngx_int_t
ngx_http_tent_outbox_take(ngx_cycle_t *cycle, ngx_atomic_uint_t *marks)
{
    ngx_uint_t            i;
    ngx_atomic_uint_t     v;
    ngx_http_tent_shm_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    if (sh == NULL) {
        return NGX_DECLINED;
    }

    for (i = 0; i < NGX_HTTP_TENT_OUTBOX_WORDS; i++) {
        do {
            v = sh->outbox[i];
        } while (v && !ngx_atomic_cmp_set(&sh->outbox[i], v, 0));

        marks[i] = v;
    }

    return NGX_OK;
}


void
ngx_http_tent_count(ngx_uint_t stat, ngx_atomic_int_t n)
{
    ngx_http_tent_shm_t  *sh;

    sh = ngx_http_tent_shared((ngx_cycle_t *) ngx_cycle);

    if (sh && stat < NGX_HTTP_TENT_STATS) {
        (void) ngx_atomic_fetch_add(&sh->stats[stat], n);
    }
}


void
ngx_http_tent_gauge(ngx_uint_t stat, ngx_atomic_uint_t v)
{
    ngx_http_tent_shm_t  *sh;

    sh = ngx_http_tent_shared((ngx_cycle_t *) ngx_cycle);

    if (sh && stat < NGX_HTTP_TENT_STATS) {
        sh->stats[stat] = v;
    }
}

ngx_int_t
ngx_http_tent_stats(ngx_cycle_t *cycle, ngx_http_tent_stats_t *st)
{
    ngx_uint_t            i;
    ngx_http_tent_shm_t  *shm;

    ngx_memzero(st, sizeof(ngx_http_tent_stats_t));

    shm = ngx_http_tent_shared(cycle);

    if (shm == NULL) {
        return NGX_DECLINED;
    }

    for (i = 0; i < NGX_HTTP_TENT_STATS; i++) {
        st->value[i] = shm->stats[i];
    }

    return NGX_OK;
}
