
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The inbox's per-worker sets (ngx_http_tent_ap_sets.h): an rbtree by
 * key and an LRU queue each, made on first use, freed with the cycle's
 * pool; an entry past its time is dropped when it is looked up.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_ap_sets.h"


ngx_http_tent_ap_sets_t  *ngx_http_tent_ap_sets;


static void ngx_http_tent_ap_sets_free(void *data);


/* the worker's sets, made on first use, freed with the cycle's pool */

ngx_int_t
ngx_http_tent_ap_sets_init(void)
{
    ngx_uint_t               i;
    ngx_pool_cleanup_t      *cln;
    ngx_http_tent_ap_set_t  *set;
    ngx_http_tent_ap_sets_t *sets;
    static ngx_uint_t        max[] = { NGX_HTTP_TENT_AP_KEYS,
                                       NGX_HTTP_TENT_AP_FAILED,
                                       NGX_HTTP_TENT_AP_HOSTS,
                                       NGX_HTTP_TENT_AP_SEEN };

    if (ngx_http_tent_ap_sets) {
        return NGX_OK;
    }

    sets = ngx_pcalloc(ngx_cycle->pool, sizeof(ngx_http_tent_ap_sets_t));
    cln = ngx_pool_cleanup_add(ngx_cycle->pool, 0);

    if (sets == NULL || cln == NULL) {
        return NGX_ERROR;
    }

    set = &sets->keys;

    for (i = 0; i < 4; i++) {
        ngx_rbtree_init(&set[i].tree, &set[i].sentinel,
                        ngx_str_rbtree_insert_value);
        ngx_queue_init(&set[i].lru);
        set[i].max = max[i];
    }

    cln->handler = ngx_http_tent_ap_sets_free;
    cln->data = sets;

    ngx_http_tent_ap_sets = sets;

    return NGX_OK;
}


static void
ngx_http_tent_ap_sets_free(void *data)
{
    ngx_http_tent_ap_sets_t *sets = data;

    ngx_uint_t               i;
    ngx_queue_t             *q;
    ngx_http_tent_ap_set_t  *set;

    set = &sets->keys;

    for (i = 0; i < 4; i++) {
        while (!ngx_queue_empty(&set[i].lru)) {
            q = ngx_queue_head(&set[i].lru);
            ngx_http_tent_ap_set_drop(&set[i],
                ngx_queue_data(q, ngx_http_tent_ap_entry_t, queue));
        }
    }

    ngx_http_tent_ap_sets = NULL;
}


ngx_http_tent_ap_entry_t *
ngx_http_tent_ap_set_get(ngx_http_tent_ap_set_t *set, ngx_str_t *key)
{
    ngx_http_tent_ap_entry_t  *e;

    e = (ngx_http_tent_ap_entry_t *)
            ngx_str_rbtree_lookup(&set->tree, key,
                                  ngx_crc32_short(key->data, key->len));
    if (e == NULL) {
        return NULL;
    }

    if (e->expires <= ngx_time()) {
        ngx_http_tent_ap_set_drop(set, e);
        return NULL;
    }

    ngx_queue_remove(&e->queue);
    ngx_queue_insert_head(&set->lru, &e->queue);

    return e;
}


ngx_http_tent_ap_entry_t *
ngx_http_tent_ap_set_add(ngx_http_tent_ap_set_t *set, ngx_str_t *key,
    time_t expires, ngx_str_t *owner, ngx_str_t *inbox, ngx_str_t *shared)
{
    u_char                    *p;
    size_t                     size;
    ngx_str_t                  none = ngx_string("");
    ngx_str_node_t            *sn;
    ngx_http_tent_ap_entry_t  *e;

    /* memcpy() from NULL is undefined even for 0 bytes */

    owner = owner && owner->data ? owner : &none;
    inbox = inbox && inbox->data ? inbox : &none;
    shared = shared && shared->data ? shared : &none;

    sn = ngx_str_rbtree_lookup(&set->tree, key,
                               ngx_crc32_short(key->data, key->len));
    if (sn) {
        ngx_http_tent_ap_set_drop(set, (ngx_http_tent_ap_entry_t *) sn);
    }

    /* the least recently used go when the set is full */

    while (set->n >= set->max && !ngx_queue_empty(&set->lru)) {
        ngx_http_tent_ap_set_drop(set,
            ngx_queue_data(ngx_queue_last(&set->lru),
                           ngx_http_tent_ap_entry_t, queue));
    }

    size = sizeof(ngx_http_tent_ap_entry_t) + key->len + owner->len
           + inbox->len + shared->len;

    e = ngx_alloc(size, ngx_cycle->log);
    if (e == NULL) {
        return NULL;
    }

    ngx_memzero(e, sizeof(ngx_http_tent_ap_entry_t));

    p = (u_char *) (e + 1);

    e->sn.str.data = p;
    e->sn.str.len = key->len;
    p = ngx_cpymem(p, key->data, key->len);

    e->owner.data = p;
    e->owner.len = owner->len;
    p = ngx_cpymem(p, owner->data, owner->len);

    e->inbox.data = p;
    e->inbox.len = inbox->len;
    p = ngx_cpymem(p, inbox->data, inbox->len);

    e->shared_inbox.data = p;
    e->shared_inbox.len = shared->len;
    ngx_memcpy(p, shared->data, shared->len);

    e->expires = expires;
    e->since = ngx_time();
    e->sn.node.key = ngx_crc32_short(key->data, key->len);

    ngx_rbtree_insert(&set->tree, &e->sn.node);
    ngx_queue_insert_head(&set->lru, &e->queue);
    set->n++;

    return e;
}


void
ngx_http_tent_ap_set_drop(ngx_http_tent_ap_set_t *set,
    ngx_http_tent_ap_entry_t *e)
{
    ngx_rbtree_delete(&set->tree, &e->sn.node);
    ngx_queue_remove(&e->queue);
    set->n--;

    if (e->pkey) {
        EVP_PKEY_free(e->pkey);
    }

    if (e->face) {
        ngx_free(e->face);
    }

    ngx_free(e);
}
