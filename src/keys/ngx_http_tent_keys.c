
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


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_keys.h"


/*
 * The byte of each table in a key, by NGX_HTTP_TENT_TABLE_* (keys.h);
 * docs/store.md lists them.  Nothing outside this file knows them.
 */

static u_char  ngx_http_tent_tables[] = {
    'a',    /* APP */
    'b',    /* BLOB */
    'B',    /* BLOB_COUNT */
    'A',    /* AUTHORIZATION */
    'c',    /* CREDENTIAL */
    'g',    /* GROUP */
    'k',    /* CODE */
    'm',    /* META */
    'p',    /* PROFILE */
    'q',    /* PROFILE_OLD */
    'd',    /* IDEMPOTENCY */
    'i',    /* POST_INDEX */
    't',    /* POST */
    'v',    /* POST_VERSION */
    'f',    /* FOLLOWER */
    'o',    /* OUTBOX */
    'j',    /* JOB */
    'x',    /* DEAD */
    'e',    /* FOLLOWER_ENTITY */
    'F',    /* FOLLOWING */
    'E',    /* FOLLOWING_ENTITY */
    'n',    /* SUBSCRIPTION */
    'u',    /* UNCONFIRMED */
    'D',    /* DELIVERY */
    'X',    /* DELIVERY_ENDED */
    'Q',    /* QUOTA: the counts a quota limits */
    'z',    /* BLOCK: the entities the owner blocked */
    'l',    /* LOCAL_REF: a same-node post, kept in its author's rows */
    'K',    /* AP_KEY: the ActivityPub actor's key pair (activitypub.md) */
    'w',    /* AP_ACTIVITY: an activity queued for an inbox */
    'h',    /* AP_REQUEST: a Follow held for the owner's approval */
    'L'     /* AP_LIKE: a Like of our post by an actor, the post's count */
};


/* the feed index columns: received_at, published_at, updated_at */
static u_char  ngx_http_tent_columns[] = { 'r', 'p', 'u' };


static ngx_int_t ngx_http_tent_key_bytes(ngx_pool_t *pool, ngx_str_t *entity,
    u_char table, ngx_str_t *rest, ngx_str_t *key);
static u_char *ngx_http_tent_put_u64(u_char *p, uint64_t v);
static uint64_t ngx_http_tent_get_u64(u_char *p);


ngx_int_t
ngx_http_tent_key(ngx_pool_t *pool, ngx_str_t *entity, ngx_uint_t table,
    ngx_str_t *rest, ngx_str_t *key)
{
    if (table >= sizeof(ngx_http_tent_tables)) {
        return NGX_ERROR;
    }

    return ngx_http_tent_key_bytes(pool, entity, ngx_http_tent_tables[table],
                                   rest, key);
}


static ngx_int_t
ngx_http_tent_key_bytes(ngx_pool_t *pool, ngx_str_t *entity, u_char table,
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
ngx_http_tent_key_range(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_uint_t table, ngx_str_t *start, ngx_str_t *end)
{
    if (table >= sizeof(ngx_http_tent_tables)
        || ngx_http_tent_key(pool, entity, table, NULL, start) != NGX_OK
        || ngx_http_tent_key_bytes(pool, entity,
                                   (u_char) (ngx_http_tent_tables[table] + 1),
                                   NULL, end)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* the smallest key above this one: a scan that resumes after a key */

ngx_int_t
ngx_http_tent_key_after(ngx_pool_t *pool, ngx_str_t *key, ngx_str_t *after)
{
    u_char  *p;

    p = ngx_pnalloc(pool, key->len + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(p, key->data, key->len);
    p[key->len] = '\0';

    after->data = p;
    after->len = key->len + 1;

    return NGX_OK;
}


/*
 * "<a> 0x00 <b>": an authorization under its app, a subscription under
 * its app, an Idempotency-Key under its app.  With b NULL, "<a> 0x00":
 * the prefix of all of a's rows.  The rest of a key, for the callers
 * that give a table and a rest (ngx_http_tent_store_get_request()).
 */

ngx_int_t
ngx_http_tent_pair_rest(ngx_pool_t *pool, ngx_str_t *a, ngx_str_t *b,
    ngx_str_t *rest)
{
    u_char  *p;

    rest->len = a->len + 1 + (b ? b->len : 0);
    rest->data = ngx_pnalloc(pool, rest->len);
    if (rest->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(rest->data, a->data, a->len);
    *p++ = '\0';

    if (b) {
        ngx_memcpy(p, b->data, b->len);
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_pair_key(ngx_pool_t *pool, ngx_str_t *entity, ngx_uint_t table,
    ngx_str_t *a, ngx_str_t *b, ngx_str_t *key)
{
    ngx_str_t  rest;

    if (ngx_http_tent_pair_rest(pool, a, b, &rest) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_tent_key(pool, entity, table, &rest, key);
}


/* "<a> 0x01": just above every "<a> 0x00 ..." row, a scan's next start */

ngx_int_t
ngx_http_tent_pair_next(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_uint_t table, ngx_str_t *a, ngx_str_t *key)
{
    if (ngx_http_tent_pair_key(pool, entity, table, a, NULL, key) != NGX_OK) {
        return NGX_ERROR;
    }

    key->data[key->len - 1] = '\1';

    return NGX_OK;
}


/* the two parts of a pair key; NGX_ERROR unless both are there */

ngx_int_t
ngx_http_tent_pair_parse(ngx_str_t *entity, ngx_str_t *key, ngx_str_t *a,
    ngx_str_t *b)
{
    u_char  *p, *z, *last;

    if (key->len <= entity->len + 2) {
        return NGX_ERROR;
    }

    p = key->data + entity->len + 2;
    last = key->data + key->len;

    z = ngx_strlchr(p, last, '\0');
    if (z == NULL || z == p) {
        return NGX_ERROR;
    }

    a->data = p;
    a->len = z - p;
    b->data = z + 1;
    b->len = last - b->data;

    return NGX_OK;
}


/*
 * "<time: u64, big-endian> <id>": rows kept in time order, as the outbox
 * (written at, us), jobs (due, ms) and dead letters (kept until, s).
 * With id NULL, the bound of a scan up to that time.
 */

ngx_int_t
ngx_http_tent_timed_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_uint_t table, uint64_t time, ngx_str_t *id, ngx_str_t *key)
{
    u_char     *p;
    ngx_str_t   rest;

    rest.len = 8 + (id ? id->len : 0);
    rest.data = ngx_pnalloc(pool, rest.len);
    if (rest.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_http_tent_put_u64(rest.data, time);

    if (id) {
        ngx_memcpy(p, id->data, id->len);
    }

    return ngx_http_tent_key(pool, entity, table, &rest, key);
}


ngx_int_t
ngx_http_tent_timed_key_parse(ngx_str_t *entity, ngx_str_t *key,
    uint64_t *time, ngx_str_t *id)
{
    size_t  prefix;

    prefix = entity->len + 2;

    if (key->len < prefix + 8) {
        return NGX_ERROR;
    }

    *time = ngx_http_tent_get_u64(key->data + prefix);

    id->data = key->data + prefix + 8;
    id->len = key->len - prefix - 8;

    return NGX_OK;
}


/* "<slot: u32>": one of a bounded number of places */

ngx_int_t
ngx_http_tent_slot_key(ngx_pool_t *pool, ngx_str_t *entity, ngx_uint_t table,
    uint32_t slot, ngx_str_t *key)
{
    u_char     buf[4];
    ngx_str_t  rest;

    buf[0] = (u_char) (slot >> 24);
    buf[1] = (u_char) (slot >> 16);
    buf[2] = (u_char) (slot >> 8);
    buf[3] = (u_char) slot;

    rest.data = buf;
    rest.len = 4;

    return ngx_http_tent_key(pool, entity, table, &rest, key);
}


ngx_int_t
ngx_http_tent_slot_parse(ngx_str_t *entity, ngx_str_t *key, uint32_t *slot)
{
    u_char  *k;

    if (key->len != entity->len + 2 + 4) {
        return NGX_ERROR;
    }

    k = key->data + key->len - 4;

    *slot = ((uint32_t) k[0] << 24) | ((uint32_t) k[1] << 16)
            | ((uint32_t) k[2] << 8) | k[3];

    return NGX_OK;
}


/*
 * A delivery's status: "<post id> 0x00 <version: u32> <recipient>", so
 * that the records of one version of a post are one range, in the order
 * of the recipients' ids (followers': their age).  With recipient NULL,
 * the start of the version's range (and, with version + 1, its end).
 */

ngx_int_t
ngx_http_tent_delivery_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *id, uint32_t version, ngx_str_t *recipient, ngx_str_t *key)
{
    u_char     *p;
    ngx_str_t   rest;

    rest.len = id->len + 1 + 4 + (recipient ? recipient->len : 0);
    rest.data = ngx_pnalloc(pool, rest.len);
    if (rest.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(rest.data, id->data, id->len);
    *p++ = '\0';
    *p++ = (u_char) (version >> 24);
    *p++ = (u_char) (version >> 16);
    *p++ = (u_char) (version >> 8);
    *p++ = (u_char) version;

    if (recipient) {
        ngx_memcpy(p, recipient->data, recipient->len);
    }

    return ngx_http_tent_key(pool, entity, NGX_HTTP_TENT_TABLE_DELIVERY,
                             &rest, key);
}


/* a status key's rest (what the index of ended records keeps), recipient */

ngx_int_t
ngx_http_tent_delivery_key_parse(ngx_str_t *entity, ngx_str_t *key,
    ngx_str_t *rest, ngx_str_t *recipient)
{
    u_char  *p, *z, *last;

    if (key->len <= entity->len + 2) {
        return NGX_ERROR;
    }

    p = key->data + entity->len + 2;
    last = key->data + key->len;

    z = ngx_strlchr(p, last, '\0');
    if (z == NULL || z == p || last - z < 1 + 4) {
        return NGX_ERROR;
    }

    rest->data = p;
    rest->len = last - p;
    recipient->data = z + 1 + 4;
    recipient->len = last - recipient->data;

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_credential_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *id, ngx_str_t *key)
{
    return ngx_http_tent_key(pool, entity, NGX_HTTP_TENT_TABLE_CREDENTIAL, id,
                             key);
}


/*
 * A profile section's old version: "<base> 0x00 <version: u32>"; with
 * version < 0, "<base> 0x01": the end of the section's history, so
 * [key of version 0, that) is all of it.
 */

ngx_int_t
ngx_http_tent_history_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *base, ngx_int_t version, ngx_str_t *key)
{
    u_char     *p;
    uint32_t    n;
    ngx_str_t   rest;

    n = (version < 0) ? 0 : (uint32_t) version;

    rest.len = base->len + 5;
    rest.data = ngx_pnalloc(pool, rest.len);
    if (rest.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(rest.data, base->data, base->len);
    *p++ = (version < 0) ? '\1' : '\0';
    *p++ = (u_char) (n >> 24);
    *p++ = (u_char) (n >> 16);
    *p++ = (u_char) (n >> 8);
    *p = (u_char) n;

    if (version < 0) {
        rest.len = base->len + 1;
    }

    return ngx_http_tent_key(pool, entity, NGX_HTTP_TENT_TABLE_PROFILE_OLD,
                             &rest, key);
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

static u_char *
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
 * "<entity> l <post entity> 0x00 <id>": the reference to a post of an
 * entity of the same store, which keeps it (docs/federation.md, "Index
 * rows, not copies")
 */

ngx_int_t
ngx_http_tent_ref_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *post_entity, ngx_str_t *id, ngx_str_t *key)
{
    u_char     *p;
    ngx_str_t   rest;

    rest.len = post_entity->len + 1 + id->len;
    rest.data = ngx_pnalloc(pool, rest.len);
    if (rest.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(rest.data, post_entity->data, post_entity->len);
    *p++ = '\0';
    ngx_memcpy(p, id->data, id->len);

    return ngx_http_tent_key(pool, entity, NGX_HTTP_TENT_TABLE_LOCAL_REF,
                             &rest, key);
}


/*
 * An index key; with post_entity NULL only its first "parts" fields
 * (1: the column, 2: and the seconds), as range bounds.
 */

ngx_int_t
ngx_http_tent_index_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_uint_t column, uint64_t seconds, uint64_t ms, ngx_str_t *post_entity,
    ngx_str_t *id, ngx_uint_t parts, ngx_str_t *key)
{
    u_char     *p;
    ngx_str_t   rest;

    if (column >= sizeof(ngx_http_tent_columns)) {
        return NGX_ERROR;
    }

    rest.len = 17 + (post_entity ? post_entity->len + 1 + id->len : 0);
    rest.data = ngx_pnalloc(pool, rest.len);
    if (rest.data == NULL) {
        return NGX_ERROR;
    }

    p = rest.data;
    *p++ = ngx_http_tent_columns[column];

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


/* [start, end) covering a whole feed index column */

ngx_int_t
ngx_http_tent_index_range(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_uint_t column, ngx_str_t *start, ngx_str_t *end)
{
    u_char     c;
    ngx_str_t  rest;

    if (column >= sizeof(ngx_http_tent_columns)) {
        return NGX_ERROR;
    }

    c = ngx_http_tent_columns[column];
    rest.data = &c;
    rest.len = 1;

    if (ngx_http_tent_key(pool, entity, NGX_HTTP_TENT_TABLE_POST_INDEX, &rest,
                          start)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    c++;

    return ngx_http_tent_key(pool, entity, NGX_HTTP_TENT_TABLE_POST_INDEX,
                             &rest, end);
}


/* the version a post version's key ends with; NGX_ERROR if too short */

ngx_int_t
ngx_http_tent_key_version(ngx_str_t *key, uint32_t *version)
{
    u_char  *k;

    if (key->len < 5 || key->data[key->len - 5] != '\0') {
        return NGX_ERROR;
    }

    k = key->data + key->len - 4;

    *version = ((uint32_t) k[0] << 24) | ((uint32_t) k[1] << 16)
               | ((uint32_t) k[2] << 8) | k[3];

    return NGX_OK;
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

    /* the operator's blocked domains (the empty entity's rows) */

    if (key->len > 2 && key->data[0] == '\0' && key->data[1] == 'Y') {
        return NGX_HTTP_TENT_CACHE_DOMAINS;
    }

    z = ngx_strlchr(key->data, key->data + key->len, '\0');

    if (z == NULL || z + 1 >= key->data + key->len) {
        return 0;
    }

    if (z[1] == ngx_http_tent_tables[NGX_HTTP_TENT_TABLE_CREDENTIAL]) {
        return NGX_HTTP_TENT_CACHE_CREDENTIALS;
    }

    if (z[1] == ngx_http_tent_tables[NGX_HTTP_TENT_TABLE_POST]
        || z[1] == ngx_http_tent_tables[NGX_HTTP_TENT_TABLE_POST_INDEX]
        || z[1] == ngx_http_tent_tables[NGX_HTTP_TENT_TABLE_POST_VERSION]
        || z[1] == ngx_http_tent_tables[NGX_HTTP_TENT_TABLE_PROFILE]
        || z[1] == ngx_http_tent_tables[NGX_HTTP_TENT_TABLE_PROFILE_OLD])
    {
        return NGX_HTTP_TENT_CACHE_REPLIES;
    }

    if (z[1] == ngx_http_tent_tables[NGX_HTTP_TENT_TABLE_OUTBOX]) {
        return NGX_HTTP_TENT_CACHE_OUTBOX;
    }

    if (z[1] == ngx_http_tent_tables[NGX_HTTP_TENT_TABLE_SUBSCRIPTION]) {
        return NGX_HTTP_TENT_CACHE_APPS;
    }

    /* a block hides the entity's posts from the feeds too */

    if (z[1] == ngx_http_tent_tables[NGX_HTTP_TENT_TABLE_BLOCK]) {
        return NGX_HTTP_TENT_CACHE_BLOCKS|NGX_HTTP_TENT_CACHE_REPLIES;
    }

    return 0;
}


/*
 * [start, end) of the posts (versions: 1, their versions) of one post
 * entity kept by "entity": "<post entity> 0x00" up to "... 0x01".  A
 * move re-keys them (ngx_http_tent_move.c).
 */

ngx_int_t
ngx_http_tent_post_entity_range(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *post_entity, ngx_uint_t versions, ngx_str_t *start,
    ngx_str_t *end)
{
    ngx_str_t  rest;

    rest.len = post_entity->len + 1;
    rest.data = ngx_pnalloc(pool, rest.len);
    if (rest.data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(rest.data, post_entity->data, post_entity->len);
    rest.data[post_entity->len] = '\0';

    if (ngx_http_tent_key(pool, entity,
                          versions ? NGX_HTTP_TENT_TABLE_POST_VERSION
                                   : NGX_HTTP_TENT_TABLE_POST,
                          &rest, start)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    rest.data[post_entity->len] = '\001';

    return ngx_http_tent_key(pool, entity,
                             versions ? NGX_HTTP_TENT_TABLE_POST_VERSION
                                      : NGX_HTTP_TENT_TABLE_POST,
                             &rest, end);
}


/*
 * The hash of the entity part of a key (all of it without one), as the
 * delivery engine computes it from an entity's name for its outbox mark.
 */

ngx_uint_t
ngx_http_tent_key_entity_hash(ngx_str_t *key)
{
    u_char  *z;

    z = ngx_strlchr(key->data, key->data + key->len, '\0');

    return ngx_crc32_short(key->data,
                           (z ? z : key->data + key->len) - key->data);
}


/*
 * The entity registry: "0x00 'R' <entity>", the rows of the empty
 * entity.  Every other key begins with a non-empty entity URL, so none
 * can be one of these, whatever a client names its entity.
 */

#define NGX_HTTP_TENT_REGISTRY  'R'

ngx_int_t
ngx_http_tent_registry_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *key)
{
    ngx_str_t  none = { 0, (u_char *) "" };

    if (entity->len == 0) {
        return NGX_ERROR;
    }

    return ngx_http_tent_key_bytes(pool, &none, NGX_HTTP_TENT_REGISTRY,
                                   entity, key);
}


ngx_int_t
ngx_http_tent_registry_range(ngx_pool_t *pool, ngx_str_t *start,
    ngx_str_t *end)
{
    ngx_str_t  none = { 0, (u_char *) "" };

    if (ngx_http_tent_key_bytes(pool, &none, NGX_HTTP_TENT_REGISTRY, NULL,
                                start)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_tent_key_bytes(pool, &none,
                                   (u_char) (NGX_HTTP_TENT_REGISTRY + 1),
                                   NULL, end);
}


/* the registry rows of the entities whose URL begins with "prefix" */

ngx_int_t
ngx_http_tent_registry_prefix_range(ngx_pool_t *pool, ngx_str_t *prefix,
    ngx_str_t *start, ngx_str_t *end)
{
    u_char     *p;
    ngx_str_t   last;

    if (ngx_http_tent_registry_key(pool, prefix, start) != NGX_OK) {
        return NGX_ERROR;
    }

    /* an entity URL is ASCII: 0xff after the prefix is past them all */

    last.len = prefix->len + 1;
    last.data = ngx_pnalloc(pool, last.len);
    if (last.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(last.data, prefix->data, prefix->len);
    *p = 0xff;

    return ngx_http_tent_registry_key(pool, &last, end);
}


ngx_int_t
ngx_http_tent_registry_parse(ngx_str_t *key, ngx_str_t *entity)
{
    if (key->len < 3 || key->data[0] != '\0'
        || key->data[1] != NGX_HTTP_TENT_REGISTRY)
    {
        return NGX_ERROR;
    }

    entity->data = key->data + 2;
    entity->len = key->len - 2;

    return NGX_OK;
}


/*
 * The operator's blocked domains: rows of the empty entity too,
 * "0x00 'Y' <domain>" (docs/blocks.md), beside the registry's.
 */

#define NGX_HTTP_TENT_DOMAIN_BLOCK  'Y'


ngx_int_t
ngx_http_tent_domain_key(ngx_pool_t *pool, ngx_str_t *domain, ngx_str_t *key)
{
    ngx_str_t  none = { 0, (u_char *) "" };

    if (domain->len == 0) {
        return NGX_ERROR;
    }

    return ngx_http_tent_key_bytes(pool, &none, NGX_HTTP_TENT_DOMAIN_BLOCK,
                                   domain, key);
}


ngx_int_t
ngx_http_tent_domain_range(ngx_pool_t *pool, ngx_str_t *start,
    ngx_str_t *end)
{
    ngx_str_t  none = { 0, (u_char *) "" };

    if (ngx_http_tent_key_bytes(pool, &none, NGX_HTTP_TENT_DOMAIN_BLOCK,
                                NULL, start)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_tent_key_bytes(pool, &none,
                                   (u_char) (NGX_HTTP_TENT_DOMAIN_BLOCK + 1),
                                   NULL, end);
}


ngx_int_t
ngx_http_tent_domain_parse(ngx_str_t *key, ngx_str_t *domain)
{
    if (key->len < 3 || key->data[0] != '\0'
        || key->data[1] != NGX_HTTP_TENT_DOMAIN_BLOCK)
    {
        return NGX_ERROR;
    }

    domain->data = key->data + 2;
    domain->len = key->len - 2;

    return NGX_OK;
}


/* every row of one entity: "<entity> 0x00" up to "<entity> 0x01" */

ngx_int_t
ngx_http_tent_entity_range(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *start, ngx_str_t *end)
{
    if (entity->len == 0
        || ngx_http_tent_key_bytes(pool, entity, 0, NULL, start) != NGX_OK
        || ngx_http_tent_key_bytes(pool, entity, 0, NULL, end) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* "<entity> 0x00 0x00" and "<entity> 0x01 0x00" */

    start->len--;
    end->data[entity->len] = '\001';
    end->len--;

    return NGX_OK;
}
