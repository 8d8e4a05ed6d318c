
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * What anonymous readers get (the profile, the public feed) is the same
 * for everyone and read far more often than written: each worker keeps
 * the replies, by entity and request URI, good while the generation in
 * shared memory has not moved.  Every write of a post or a profile
 * section moves it, so no worker serves a reply older than a write.
 */


#include "ngx_http_tent_module.h"


#define NGX_HTTP_TENT_CACHE_ENTRIES   1024
#define NGX_HTTP_TENT_CACHE_MAX_BODY  (256 * 1024)


typedef struct {
    ngx_str_node_t                  sn;
    ngx_queue_t                     queue;
    ngx_atomic_uint_t               generation;
    ngx_str_t                       body;
    ngx_str_t                       link;
} ngx_http_tent_cache_entry_t;


static ngx_http_tent_store_t *
ngx_http_tent_cache_store(ngx_http_request_t *r)
{
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_tent_module);

    return mcf->store;
}


/* the entity and the URI as sent, query included */

static ngx_int_t
ngx_http_tent_cache_key(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_str_t *key)
{
    key->len = ctx->entity.len + 1 + r->unparsed_uri.len;
    key->data = ngx_pnalloc(r->pool, key->len);
    if (key->data == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(key->data, "%V %V", &ctx->entity, &r->unparsed_uri);

    return NGX_OK;
}


static void
ngx_http_tent_cache_drop(ngx_http_tent_store_t *store,
    ngx_http_tent_cache_entry_t *e)
{
    ngx_rbtree_delete(&store->cache, &e->sn.node);
    ngx_queue_remove(&e->queue);
    store->ncache--;
    ngx_free(e);
}


/*
 * Answer from the cache if it holds a reply as new as the generation:
 * NGX_DECLINED otherwise, with *generation to hand to cache_put later
 * (read before the store is, so a write meanwhile makes the entry stale).
 */

ngx_int_t
ngx_http_tent_cache_send(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_atomic_uint_t *generation, ngx_int_t *rc)
{
    ngx_str_t                     key, body;
    ngx_str_node_t               *sn;
    ngx_table_elt_t              *h;
    ngx_http_tent_store_t        *store;
    ngx_http_tent_cache_entry_t  *e;

    store = ngx_http_tent_cache_store(r);

    if (store == NULL || ctx->principal.kind != NGX_HTTP_TENT_ANONYMOUS
        || r->method != NGX_HTTP_GET)
    {
        return NGX_ERROR;
    }

    *generation = ngx_http_tent_generation((ngx_cycle_t *) ngx_cycle);

    if (ngx_http_tent_cache_key(r, ctx, &key) != NGX_OK) {
        return NGX_ERROR;
    }

    sn = ngx_str_rbtree_lookup(&store->cache, &key,
                               ngx_crc32_short(key.data, key.len));
    e = (ngx_http_tent_cache_entry_t *) sn;

    if (e == NULL || e->generation != *generation) {
        return NGX_DECLINED;
    }

    ngx_queue_remove(&e->queue);
    ngx_queue_insert_head(&store->cache_lru, &e->queue);

    /* copies: the entry may go before the reply is written out */

    body.len = e->body.len;
    body.data = ngx_pnalloc(r->pool, body.len + e->link.len);
    if (body.data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(body.data, e->body.data, body.len);

    if (e->link.len) {
        h = ngx_list_push(&r->headers_out.headers);
        if (h == NULL) {
            return NGX_ERROR;
        }

        h->hash = 1;
        ngx_str_set(&h->key, "Link");
        h->value.data = body.data + body.len;
        h->value.len = e->link.len;
        ngx_memcpy(h->value.data, e->link.data, e->link.len);
    }

    *rc = ngx_http_tent_send_body(r, NGX_HTTP_OK, &body);

    return NGX_OK;
}


void
ngx_http_tent_cache_put(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_atomic_uint_t generation, ngx_str_t *body, ngx_str_t *link)
{
    u_char                       *p;
    ngx_str_t                     key;
    ngx_queue_t                  *q;
    ngx_str_node_t               *sn;
    ngx_http_tent_store_t        *store;
    ngx_http_tent_cache_entry_t  *e;

    store = ngx_http_tent_cache_store(r);

    if (store == NULL || body->len > NGX_HTTP_TENT_CACHE_MAX_BODY
        || ngx_http_tent_cache_key(r, ctx, &key) != NGX_OK)
    {
        return;
    }

    sn = ngx_str_rbtree_lookup(&store->cache, &key,
                               ngx_crc32_short(key.data, key.len));
    if (sn) {
        ngx_http_tent_cache_drop(store, (ngx_http_tent_cache_entry_t *) sn);
    }

    if (store->ncache >= NGX_HTTP_TENT_CACHE_ENTRIES) {
        q = ngx_queue_last(&store->cache_lru);
        ngx_http_tent_cache_drop(store,
            ngx_queue_data(q, ngx_http_tent_cache_entry_t, queue));
    }

    e = ngx_alloc(sizeof(ngx_http_tent_cache_entry_t) + key.len + body->len
                  + (link ? link->len : 0), ngx_cycle->log);
    if (e == NULL) {
        return;
    }

    p = (u_char *) (e + 1);

    e->sn.str.data = p;
    e->sn.str.len = key.len;
    p = ngx_cpymem(p, key.data, key.len);

    e->body.data = p;
    e->body.len = body->len;
    p = ngx_cpymem(p, body->data, body->len);

    e->link.data = p;
    e->link.len = link ? link->len : 0;

    if (link) {
        ngx_memcpy(p, link->data, link->len);
    }

    e->sn.node.key = ngx_crc32_short(key.data, key.len);
    e->generation = generation;

    ngx_rbtree_insert(&store->cache, &e->sn.node);
    ngx_queue_insert_head(&store->cache_lru, &e->queue);
    store->ncache++;
}


/* at worker exit: the entries are the heap's, not a pool's */

void
ngx_http_tent_cache_exit(ngx_http_tent_store_t *store)
{
    ngx_queue_t                  *q;
    ngx_http_tent_cache_entry_t  *e;

    while (!ngx_queue_empty(&store->cache_lru)) {
        q = ngx_queue_head(&store->cache_lru);
        e = ngx_queue_data(q, ngx_http_tent_cache_entry_t, queue);
        ngx_http_tent_cache_drop(store, e);
    }
}
