
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_KEYS_H_INCLUDED_
#define _NGX_HTTP_TENT_KEYS_H_INCLUDED_


/*
 * The byte layout of every key in the store: builders and parsers.
 */


#include "ngx_http_tent_base.h"


/*
 * The tables.  A key's table is one of these; its byte in the key (and
 * every other byte of the layout) is ngx_http_tent_keys.c's to know.
 */
#define NGX_HTTP_TENT_TABLE_APP               0
#define NGX_HTTP_TENT_TABLE_BLOB              1
#define NGX_HTTP_TENT_TABLE_BLOB_COUNT        2
#define NGX_HTTP_TENT_TABLE_AUTHORIZATION     3
#define NGX_HTTP_TENT_TABLE_CREDENTIAL        4
#define NGX_HTTP_TENT_TABLE_GROUP             5
#define NGX_HTTP_TENT_TABLE_CODE              6
#define NGX_HTTP_TENT_TABLE_META              7
#define NGX_HTTP_TENT_TABLE_PROFILE           8
#define NGX_HTTP_TENT_TABLE_PROFILE_OLD       9
#define NGX_HTTP_TENT_TABLE_IDEMPOTENCY       10
#define NGX_HTTP_TENT_TABLE_POST_INDEX        11
#define NGX_HTTP_TENT_TABLE_POST              12
#define NGX_HTTP_TENT_TABLE_POST_VERSION      13
#define NGX_HTTP_TENT_TABLE_FOLLOWER          14
#define NGX_HTTP_TENT_TABLE_OUTBOX            15
#define NGX_HTTP_TENT_TABLE_JOB               16
#define NGX_HTTP_TENT_TABLE_DEAD              17
#define NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY   18
#define NGX_HTTP_TENT_TABLE_FOLLOWING         19
#define NGX_HTTP_TENT_TABLE_FOLLOWING_ENTITY  20
#define NGX_HTTP_TENT_TABLE_SUBSCRIPTION      21
#define NGX_HTTP_TENT_TABLE_UNCONFIRMED       22
#define NGX_HTTP_TENT_TABLE_DELIVERY          23
#define NGX_HTTP_TENT_TABLE_DELIVERY_ENDED    24
#define NGX_HTTP_TENT_TABLE_QUOTA             25
#define NGX_HTTP_TENT_TABLE_BLOCK             26
#define NGX_HTTP_TENT_TABLE_LOCAL_REF         27
#define NGX_HTTP_TENT_TABLE_AP_KEY            28
#define NGX_HTTP_TENT_TABLE_AP_ACTIVITY       29
#define NGX_HTTP_TENT_TABLE_AP_REQUEST        30
#define NGX_HTTP_TENT_TABLE_AP_LIKE           31

/* the feed indexes, by sort column */
#define NGX_HTTP_TENT_INDEX_RECEIVED          0
#define NGX_HTTP_TENT_INDEX_PUBLISHED         1
#define NGX_HTTP_TENT_INDEX_UPDATED           2


/* any table: "<rest>", the range of all its keys, the key just after */
ngx_int_t ngx_http_tent_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_uint_t table, ngx_str_t *rest, ngx_str_t *key);
ngx_int_t ngx_http_tent_key_range(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_uint_t table, ngx_str_t *start, ngx_str_t *end);
ngx_int_t ngx_http_tent_key_after(ngx_pool_t *pool, ngx_str_t *key,
    ngx_str_t *after);

/* "<a> 0x00 <b>": an app's authorizations, subscriptions; b NULL: all */
ngx_int_t ngx_http_tent_pair_rest(ngx_pool_t *pool, ngx_str_t *a,
    ngx_str_t *b, ngx_str_t *rest);
ngx_int_t ngx_http_tent_pair_next(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_uint_t table, ngx_str_t *a, ngx_str_t *key);
ngx_int_t ngx_http_tent_pair_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_uint_t table, ngx_str_t *a, ngx_str_t *b, ngx_str_t *key);
ngx_int_t ngx_http_tent_pair_parse(ngx_str_t *entity, ngx_str_t *key,
    ngx_str_t *a, ngx_str_t *b);

/* "<time: u64> <id>": outbox rows, jobs by due time, dead letters */
ngx_int_t ngx_http_tent_timed_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_uint_t table, uint64_t time, ngx_str_t *id, ngx_str_t *key);
ngx_int_t ngx_http_tent_timed_key_parse(ngx_str_t *entity, ngx_str_t *key,
    uint64_t *time, ngx_str_t *id);

/* "<slot: u32>": the places of unconfirmed apps */
ngx_int_t ngx_http_tent_slot_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_uint_t table, uint32_t slot, ngx_str_t *key);
ngx_int_t ngx_http_tent_slot_parse(ngx_str_t *entity, ngx_str_t *key,
    uint32_t *slot);

/* a credential row: by entity and key id */
ngx_int_t ngx_http_tent_credential_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *id, ngx_str_t *key);

/* profile sections' old versions: "<base> 0x00 <version: u32>" */
ngx_int_t ngx_http_tent_history_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *base, ngx_int_t version, ngx_str_t *key);

/* posts, their versions and the feed indexes */
ngx_int_t ngx_http_tent_post_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *post_entity, ngx_str_t *id, ngx_int_t version, ngx_str_t *key);
ngx_int_t ngx_http_tent_ref_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *post_entity, ngx_str_t *id, ngx_str_t *key);
ngx_int_t ngx_http_tent_key_version(ngx_str_t *key, uint32_t *version);
ngx_int_t ngx_http_tent_index_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_uint_t column, uint64_t seconds, uint64_t ms, ngx_str_t *post_entity,
    ngx_str_t *id, ngx_uint_t parts, ngx_str_t *key);
ngx_int_t ngx_http_tent_index_range(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_uint_t column, ngx_str_t *start, ngx_str_t *end);
ngx_int_t ngx_http_tent_index_parse(ngx_str_t *entity, ngx_str_t *key,
    uint64_t *seconds, ngx_str_t *post_entity, ngx_str_t *id);
ngx_int_t ngx_http_tent_blob_count_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *digest, ngx_str_t *key);

/*
 * a delivery's status: "<post id> 0x00 <version: u32> <recipient>";
 * recipient NULL: where the version's records begin
 */
ngx_int_t ngx_http_tent_delivery_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *id, uint32_t version, ngx_str_t *recipient, ngx_str_t *key);
ngx_int_t ngx_http_tent_delivery_key_parse(ngx_str_t *entity, ngx_str_t *key,
    ngx_str_t *rest, ngx_str_t *recipient);

ngx_int_t ngx_http_tent_type_base(ngx_str_t *type, ngx_str_t *base);

/* what a key's write makes stale: ngx_http_tent_key_caches() */
#define NGX_HTTP_TENT_CACHE_CREDENTIALS  0x01
#define NGX_HTTP_TENT_CACHE_REPLIES      0x02
#define NGX_HTTP_TENT_CACHE_OUTBOX       0x04   /* the engine's marks */
#define NGX_HTTP_TENT_CACHE_APPS         0x08   /* an app's subscription */
#define NGX_HTTP_TENT_CACHE_BLOCKS       0x10   /* an owner's blocks */
#define NGX_HTTP_TENT_CACHE_DOMAINS      0x20   /* the operator's blocks */

/* the entity a key is of: the hash of its outbox mark */
ngx_uint_t ngx_http_tent_key_entity_hash(ngx_str_t *key);
ngx_uint_t ngx_http_tent_key_caches(ngx_str_t *key);

/*
 * The entity registry (provisioning): rows of the empty entity,
 * "0x00 'R' <entity URL>", which no entity's key can be (an entity URL is
 * never empty); the range of them all; every row of one entity.
 */
ngx_int_t ngx_http_tent_registry_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *key);
ngx_int_t ngx_http_tent_registry_range(ngx_pool_t *pool, ngx_str_t *start,
    ngx_str_t *end);
ngx_int_t ngx_http_tent_registry_parse(ngx_str_t *key, ngx_str_t *entity);
ngx_int_t ngx_http_tent_registry_prefix_range(ngx_pool_t *pool,
    ngx_str_t *prefix, ngx_str_t *start, ngx_str_t *end);
/* the operator's blocked domains: "0x00 'Y' <domain>", the range of all */
ngx_int_t ngx_http_tent_domain_key(ngx_pool_t *pool, ngx_str_t *domain,
    ngx_str_t *key);
ngx_int_t ngx_http_tent_domain_range(ngx_pool_t *pool, ngx_str_t *start,
    ngx_str_t *end);
ngx_int_t ngx_http_tent_domain_parse(ngx_str_t *key, ngx_str_t *domain);
ngx_int_t ngx_http_tent_entity_range(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *start, ngx_str_t *end);

/* a post entity's posts or versions kept by an entity: a move's scan */
ngx_int_t ngx_http_tent_post_entity_range(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *post_entity, ngx_uint_t versions, ngx_str_t *start,
    ngx_str_t *end);


#endif /* _NGX_HTTP_TENT_KEYS_H_INCLUDED_ */
