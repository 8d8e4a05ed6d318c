
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * What anonymous readers get (the profile, the public feed) is the same
 * for everyone and read far more often than written: each worker keeps
 * the replies, good while the generation in shared memory has not moved.
 * Every write of a post or a profile section moves it, so no worker
 * serves a reply older than a write.
 *
 * An entry is keyed by what the reply depends on, never by the request
 * as spelled: the server block, the entity (so the Host for a $host
 * entity) and what the route made of the request (the caller's "what":
 * the feed's parsed query in a canonical form, with defaults made
 * explicit and unknown parameters left out).  Junk in a query, or Accept
 * and other headers no cached route looks at, make no new entries.
 * Entries are bounded in number and in bytes (tent_anonymous_cache);
 * the least recently used go first.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_cache.h"


#define NGX_HTTP_TENT_CACHE_ENTRIES   1024
#define NGX_HTTP_TENT_CACHE_MAX_BODY  (256 * 1024)


typedef struct {
    ngx_str_node_t                  sn;
    ngx_queue_t                     queue;
    ngx_atomic_uint_t               generation;
    size_t                          size;        /* all it allocated */
    ngx_str_t                       body;
    ngx_str_t                       extra;
} ngx_http_tent_cache_entry_t;


/* a worker's entries: in its cycle pool, made on first use */
typedef struct {
    ngx_rbtree_t                    tree;
    ngx_rbtree_node_t               sentinel;
    ngx_queue_t                     lru;
    ngx_uint_t                      n;
    size_t                          bytes;
} ngx_http_tent_cache_t;


static ngx_http_tent_cache_t *
ngx_http_tent_cache_entries(ngx_http_request_t *r, size_t *max)
{
    ngx_http_tent_cache_t      *cache;
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_tent_module);

    *max = mcf->anonymous_cache;

    if (*max == 0) {
        return NULL;
    }

    if (mcf->reply_cache == NULL) {
        cache = ngx_pcalloc(ngx_cycle->pool, sizeof(ngx_http_tent_cache_t));
        if (cache == NULL) {
            return NULL;
        }

        ngx_rbtree_init(&cache->tree, &cache->sentinel,
                        ngx_str_rbtree_insert_value);
        ngx_queue_init(&cache->lru);

        mcf->reply_cache = cache;
    }

    return mcf->reply_cache;
}


/*
 * "<server block> <entity> 0x00 <what>": the server block because two
 * blocks may serve one entity with different servers or API roots.
 */

static ngx_int_t
ngx_http_tent_cache_key(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_str_t *what, ngx_str_t *key)
{
    u_char                    *p;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    key->data = ngx_pnalloc(r->pool, NGX_PTR_SIZE * 2 + 2 + ctx->entity.len
                                     + 1 + what->len);
    if (key->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(key->data, "%p %V", scf, &ctx->entity);
    *p++ = '\0';
    p = ngx_cpymem(p, what->data, what->len);

    key->len = p - key->data;

    return NGX_OK;
}


static void
ngx_http_tent_cache_drop(ngx_http_tent_cache_t *cache,
    ngx_http_tent_cache_entry_t *e)
{
    ngx_rbtree_delete(&cache->tree, &e->sn.node);
    ngx_queue_remove(&e->queue);
    cache->n--;
    cache->bytes -= e->size;
    ngx_free(e);
}


/*
 * A reply for an anonymous GET or HEAD, as new as the generation:
 * NGX_OK with c->body and c->extra (copies in the request's pool: the
 * entry may go before the reply is written out); NGX_DECLINED on a miss,
 * with c->key and c->generation (read before the cache is, so a write
 * meanwhile makes the entry stale) for ngx_http_tent_cache_put();
 * NGX_ERROR when the request is not for the cache.
 */

ngx_int_t
ngx_http_tent_cache_get(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_str_t *what, ngx_http_tent_cached_t *c)
{
    u_char                       *p;
    size_t                        max;
    ngx_str_node_t               *sn;
    ngx_http_tent_cache_t        *cache;
    ngx_http_tent_cache_entry_t  *e;

    cache = ngx_http_tent_cache_entries(r, &max);

    if (cache == NULL || ctx->principal.kind != NGX_HTTP_TENT_ANONYMOUS
        || !(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD)))
    {
        return NGX_ERROR;
    }

    c->generation = ngx_http_tent_generation((ngx_cycle_t *) ngx_cycle);

    if (ngx_http_tent_cache_key(r, ctx, what, &c->key) != NGX_OK) {
        return NGX_ERROR;
    }

    sn = ngx_str_rbtree_lookup(&cache->tree, &c->key,
                               ngx_crc32_short(c->key.data, c->key.len));
    e = (ngx_http_tent_cache_entry_t *) sn;

    if (e == NULL || e->generation != c->generation) {
        ngx_http_tent_count(NGX_HTTP_TENT_STAT_CACHE_MISSES, 1);

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent cache: miss %08XD, %uz bytes of key",
                       ngx_crc32_short(c->key.data, c->key.len), c->key.len);
        return NGX_DECLINED;
    }

    ngx_http_tent_count(NGX_HTTP_TENT_STAT_CACHE_HITS, 1);

    ngx_queue_remove(&e->queue);
    ngx_queue_insert_head(&cache->lru, &e->queue);

    p = ngx_pnalloc(r->pool, e->body.len + e->extra.len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    c->body.data = p;
    c->body.len = e->body.len;
    p = ngx_cpymem(p, e->body.data, e->body.len);

    c->extra.data = p;
    c->extra.len = e->extra.len;
    ngx_memcpy(p, e->extra.data, e->extra.len);

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent cache: hit %08XD", (uint32_t) e->sn.node.key);

    return NGX_OK;
}


/* keep c->body and c->extra under c->key, as of c->generation */

void
ngx_http_tent_cache_put(ngx_http_request_t *r, ngx_http_tent_cached_t *c)
{
    u_char                       *p;
    size_t                        size, max;
    ngx_queue_t                  *q;
    ngx_str_node_t               *sn;
    ngx_http_tent_cache_t        *cache;
    ngx_http_tent_cache_entry_t  *e;

    cache = ngx_http_tent_cache_entries(r, &max);

    if (cache == NULL || c->key.len == 0) {
        return;
    }

    sn = ngx_str_rbtree_lookup(&cache->tree, &c->key,
                               ngx_crc32_short(c->key.data, c->key.len));
    if (sn) {
        ngx_http_tent_cache_drop(cache, (ngx_http_tent_cache_entry_t *) sn);
    }

    size = sizeof(ngx_http_tent_cache_entry_t) + c->key.len + c->body.len
           + c->extra.len;

    if (c->body.len > NGX_HTTP_TENT_CACHE_MAX_BODY || size > max) {
        return;
    }

    /* the least recently used go until the new one fits */

    while (!ngx_queue_empty(&cache->lru)
           && (cache->n >= NGX_HTTP_TENT_CACHE_ENTRIES
               || cache->bytes + size > max))
    {
        q = ngx_queue_last(&cache->lru);
        ngx_http_tent_cache_drop(cache,
            ngx_queue_data(q, ngx_http_tent_cache_entry_t, queue));
    }

    e = ngx_alloc(size, r->connection->log);
    if (e == NULL) {
        return;
    }

    p = (u_char *) (e + 1);

    e->sn.str.data = p;
    e->sn.str.len = c->key.len;
    p = ngx_cpymem(p, c->key.data, c->key.len);

    e->body.data = p;
    e->body.len = c->body.len;
    p = ngx_cpymem(p, c->body.data, c->body.len);

    e->extra.data = p;
    e->extra.len = c->extra.len;

    if (c->extra.len) {
        ngx_memcpy(p, c->extra.data, c->extra.len);
    }

    e->size = size;
    e->sn.node.key = ngx_crc32_short(c->key.data, c->key.len);
    e->generation = c->generation;

    ngx_rbtree_insert(&cache->tree, &e->sn.node);
    ngx_queue_insert_head(&cache->lru, &e->queue);
    cache->n++;
    cache->bytes += size;

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent cache: stored %08XD, %uz bytes; %ui entries, "
                   "%uz bytes", (uint32_t) e->sn.node.key, size, cache->n,
                   cache->bytes);
}


/* at worker exit: the entries are the heap's, not a pool's */

void
ngx_http_tent_cache_exit(ngx_http_tent_main_conf_t *mcf)
{
    ngx_queue_t                  *q;
    ngx_http_tent_cache_t        *cache;
    ngx_http_tent_cache_entry_t  *e;

    cache = mcf->reply_cache;

    if (cache == NULL) {
        return;
    }

    while (!ngx_queue_empty(&cache->lru)) {
        q = ngx_queue_head(&cache->lru);
        e = ngx_queue_data(q, ngx_http_tent_cache_entry_t, queue);
        ngx_http_tent_cache_drop(cache, e);
    }
}
