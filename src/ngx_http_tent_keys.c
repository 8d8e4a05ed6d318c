
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The key layout, in one place.  Every key starts with the entity, so
 * one database holds many entities and each one's rows sort together:
 *
 *     <entity> 0x00 <table byte> <rest>
 *
 * An entity URL never contains 0x00, so "https://a" and "https://ab"
 * never share a prefix.  docs/store.md lists the tables.
 */


#include "ngx_http_tent_module.h"
#include "ngx_http_tent_keys.h"


ngx_int_t
ngx_http_tent_key(ngx_pool_t *pool, ngx_str_t *entity, u_char table,
    ngx_str_t *rest, ngx_str_t *key)
{
    u_char  *p;

    key->len = entity->len + 2 + (rest ? rest->len : 0);

    p = ngx_pnalloc(pool, key->len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    key->data = p;

    p = ngx_cpymem(p, entity->data, entity->len);
    *p++ = '\0';
    *p++ = table;

    if (rest) {
        ngx_memcpy(p, rest->data, rest->len);
    }

    return NGX_OK;
}


/* [start, end) covering every key of one entity's table */

ngx_int_t
ngx_http_tent_key_range(ngx_pool_t *pool, ngx_str_t *entity, u_char table,
    ngx_str_t *start, ngx_str_t *end)
{
    if (ngx_http_tent_key(pool, entity, table, NULL, start) != NGX_OK
        || ngx_http_tent_key(pool, entity, (u_char) (table + 1), NULL, end)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * "https://tent.io/types/info/core/v0.1.0#view" has the base
 * "https://tent.io/types/info/core": types are matched by base.
 */

ngx_int_t
ngx_http_tent_type_base(ngx_str_t *type, ngx_str_t *base)
{
    u_char  *p, *last;

    last = type->data + type->len;

    p = ngx_strlchr(type->data, last, '#');
    if (p) {
        last = p;
    }

    for (p = last; p > type->data; p--) {
        if (p[-1] == '/') {
            break;
        }
    }

    if (p > type->data && p < last && *p == 'v' && p + 1 < last
        && p[1] >= '0' && p[1] <= '9')
    {
        last = p - 1;
    }

    if (last == type->data) {
        return NGX_ERROR;
    }

    base->data = type->data;
    base->len = last - type->data;

    return NGX_OK;
}


/*
 * Posts.  A post is "t <entity of the post> 0x00 <id>"; its versions
 * "v <entity> 0x00 <id> 0x00 <version: u32>"; the feed indexes, one per
 * sort column (r: received_at, p: published_at, u: updated_at),
 *
 *     "i <column> <seconds: u64> <received, us: u64> <entity> 0x00 <id>"
 *
 * so that a reverse scan of one column is the feed, newest first, and a
 * post's place in it is fully determined by its own record.
 */

u_char *
ngx_http_tent_put_u64(u_char *p, uint64_t v)
{
    ngx_uint_t  i;

    for (i = 0; i < 8; i++) {
        *p++ = (u_char) (v >> (56 - 8 * i));
    }

    return p;
}


static uint64_t
ngx_http_tent_get_u64(u_char *p)
{
    uint64_t    v;
    ngx_uint_t  i;

    v = 0;

    for (i = 0; i < 8; i++) {
        v = (v << 8) | p[i];
    }

    return v;
}


ngx_int_t
ngx_http_tent_post_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *post_entity, ngx_str_t *id, ngx_int_t version, ngx_str_t *key)
{
    u_char     *p;
    ngx_str_t   rest;

    rest.len = post_entity->len + 1 + id->len + (version >= 0 ? 5 : 0);
    rest.data = ngx_pnalloc(pool, rest.len);
    if (rest.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(rest.data, post_entity->data, post_entity->len);
    *p++ = '\0';
    p = ngx_cpymem(p, id->data, id->len);

    if (version >= 0) {
        *p++ = '\0';
        *p++ = (u_char) ((uint32_t) version >> 24);
        *p++ = (u_char) ((uint32_t) version >> 16);
        *p++ = (u_char) ((uint32_t) version >> 8);
        *p = (u_char) version;
    }

    return ngx_http_tent_key(pool, entity,
                             version >= 0 ? NGX_HTTP_TENT_TABLE_POST_VERSION
                                          : NGX_HTTP_TENT_TABLE_POST,
                             &rest, key);
}


/*
 * An index key; with post_entity NULL only its first "parts" fields
 * (1: the column, 2: and the seconds), as range bounds.
 */

ngx_int_t
ngx_http_tent_index_key(ngx_pool_t *pool, ngx_str_t *entity, u_char column,
    uint64_t seconds, uint64_t ms, ngx_str_t *post_entity, ngx_str_t *id,
    ngx_uint_t parts, ngx_str_t *key)
{
    u_char     *p;
    ngx_str_t   rest;

    rest.len = 17 + (post_entity ? post_entity->len + 1 + id->len : 0);
    rest.data = ngx_pnalloc(pool, rest.len);
    if (rest.data == NULL) {
        return NGX_ERROR;
    }

    p = rest.data;
    *p++ = column;

    if (post_entity || parts >= 2) {
        p = ngx_http_tent_put_u64(p, seconds);
    }

    if (post_entity) {
        p = ngx_http_tent_put_u64(p, ms);
        p = ngx_cpymem(p, post_entity->data, post_entity->len);
        *p++ = '\0';
        p = ngx_cpymem(p, id->data, id->len);
    }

    rest.len = p - rest.data;

    return ngx_http_tent_key(pool, entity, NGX_HTTP_TENT_TABLE_POST_INDEX,
                             &rest, key);
}


/* the post an index key points to, and its seconds; NGX_ERROR if damaged */

ngx_int_t
ngx_http_tent_index_parse(ngx_str_t *entity, ngx_str_t *key,
    uint64_t *seconds, ngx_str_t *post_entity, ngx_str_t *id)
{
    u_char  *p, *last, *zero;
    size_t   prefix;

    prefix = entity->len + 2 + 1;

    if (key->len < prefix + 16 + 2) {
        return NGX_ERROR;
    }

    p = key->data + prefix;
    last = key->data + key->len;

    *seconds = ngx_http_tent_get_u64(p);
    p += 16;

    zero = ngx_strlchr(p, last, '\0');
    if (zero == NULL || zero == p || zero + 1 == last) {
        return NGX_ERROR;
    }

    post_entity->data = p;
    post_entity->len = zero - p;
    id->data = zero + 1;
    id->len = last - id->data;

    return NGX_OK;
}


/*
 * An attachment's reference count: "B <SHA-256, hex>", beside its bytes
 * "b <SHA-256, hex>" (docs/store.md).
 */

#define NGX_HTTP_TENT_TABLE_BLOB_COUNT  'B'

ngx_int_t
ngx_http_tent_blob_count_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *digest, ngx_str_t *key)
{
    return ngx_http_tent_key(pool, entity, NGX_HTTP_TENT_TABLE_BLOB_COUNT,
                             digest, key);
}


/*
 * What a write of this key makes stale, decided here because only this
 * file knows the tables: the workers' cached credentials (a credential
 * row), their cached anonymous replies (a post, its index or versions, a
 * profile section).  The store calls it for each key an operation writes.
 */

ngx_uint_t
ngx_http_tent_key_caches(ngx_str_t *key)
{
    u_char  *z;

    z = ngx_strlchr(key->data, key->data + key->len, '\0');

    if (z == NULL || z + 1 >= key->data + key->len) {
        return 0;
    }

    switch (z[1]) {

    case NGX_HTTP_TENT_TABLE_CREDENTIAL:
        return NGX_HTTP_TENT_CACHE_CREDENTIALS;

    case NGX_HTTP_TENT_TABLE_POST:
    case NGX_HTTP_TENT_TABLE_POST_INDEX:
    case NGX_HTTP_TENT_TABLE_POST_VERSION:
    case NGX_HTTP_TENT_TABLE_PROFILE:
    case NGX_HTTP_TENT_TABLE_PROFILE_OLD:
        return NGX_HTTP_TENT_CACHE_REPLIES;

    default:
        return 0;
    }
}
