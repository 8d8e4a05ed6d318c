
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_KEYS_H_INCLUDED_
#define _NGX_HTTP_TENT_KEYS_H_INCLUDED_


/*
 * The byte layout of every key in the store: builders and parsers.
 */


#include "ngx_http_tent_module.h"


/* ngx_http_tent_keys.c */
#define NGX_HTTP_TENT_TABLE_APP            'a'
#define NGX_HTTP_TENT_TABLE_BLOB           'b'
#define NGX_HTTP_TENT_TABLE_AUTHORIZATION  'A'
#define NGX_HTTP_TENT_TABLE_CREDENTIAL     'c'
#define NGX_HTTP_TENT_TABLE_GROUP          'g'
#define NGX_HTTP_TENT_TABLE_CODE           'k'
#define NGX_HTTP_TENT_TABLE_META           'm'
#define NGX_HTTP_TENT_TABLE_PROFILE        'p'
#define NGX_HTTP_TENT_TABLE_PROFILE_OLD    'q'
#define NGX_HTTP_TENT_TABLE_IDEMPOTENCY    'd'
#define NGX_HTTP_TENT_TABLE_POST_INDEX     'i'
#define NGX_HTTP_TENT_TABLE_POST           't'
#define NGX_HTTP_TENT_TABLE_POST_VERSION   'v'
#define NGX_HTTP_TENT_TABLE_FOLLOWER       'f'
#define NGX_HTTP_TENT_TABLE_OUTBOX         'o'
#define NGX_HTTP_TENT_TABLE_JOB            'j'
#define NGX_HTTP_TENT_TABLE_DEAD           'x'
#define NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY 'e'
#define NGX_HTTP_TENT_TABLE_FOLLOWING      'F'
#define NGX_HTTP_TENT_TABLE_FOLLOWING_ENTITY 'E'
#define NGX_HTTP_TENT_TABLE_SUBSCRIPTION   'n'
#define NGX_HTTP_TENT_TABLE_UNCONFIRMED    'u'

ngx_int_t ngx_http_tent_key(ngx_pool_t *pool, ngx_str_t *entity,
    u_char table, ngx_str_t *rest, ngx_str_t *key);
u_char *ngx_http_tent_put_u64(u_char *p, uint64_t v);
ngx_int_t ngx_http_tent_key_range(ngx_pool_t *pool, ngx_str_t *entity,
    u_char table, ngx_str_t *start, ngx_str_t *end);
ngx_int_t ngx_http_tent_type_base(ngx_str_t *type, ngx_str_t *base);
ngx_int_t ngx_http_tent_post_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *post_entity, ngx_str_t *id, ngx_int_t version, ngx_str_t *key);
ngx_int_t ngx_http_tent_index_key(ngx_pool_t *pool, ngx_str_t *entity,
    u_char column, uint64_t seconds, uint64_t ms, ngx_str_t *post_entity,
    ngx_str_t *id, ngx_uint_t parts, ngx_str_t *key);
ngx_int_t ngx_http_tent_index_parse(ngx_str_t *entity, ngx_str_t *key,
    uint64_t *seconds, ngx_str_t *post_entity, ngx_str_t *id);

/* in ngx_http_tent_keys.c: an attachment's reference count */
ngx_int_t ngx_http_tent_blob_count_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *digest, ngx_str_t *key);


/* what a key's write makes stale: ngx_http_tent_key_caches() */
#define NGX_HTTP_TENT_CACHE_CREDENTIALS  0x01
#define NGX_HTTP_TENT_CACHE_REPLIES      0x02

ngx_uint_t ngx_http_tent_key_caches(ngx_str_t *key);


#endif /* _NGX_HTTP_TENT_KEYS_H_INCLUDED_ */
