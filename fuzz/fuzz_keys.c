
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The key layout, src/keys/ngx_http_tent_keys.c: every builder's key starts
 * with its entity and a zero byte, and each parser gives back what its
 * builder was given (pairs, timed rows, slots, post versions, feed index
 * rows); a column's range holds its keys; the key after a key is the
 * next one; only credential rows make cached credentials stale.
 * Input: entity, a, b, each up to a newline; the 8 bytes after the
 * second newline make the numbers.
 */


#include "../src/keys/ngx_http_tent_keys.c"

#include "fuzz.h"


static ngx_str_t
ngx_fuzz_field(u_char **p, u_char *last)
{
    u_char     *nl;
    ngx_str_t   s;

    nl = ngx_strlchr(*p, last, '\n');

    s.data = *p;
    s.len = (nl ? nl : last) - *p;

    *p = nl ? nl + 1 : last;

    return s;
}


static void
ngx_fuzz_prefix(ngx_str_t *entity, ngx_str_t *key)
{
    ngx_fuzz_assert(key->len >= entity->len + 2);
    ngx_fuzz_assert(ngx_memcmp(key->data, entity->data, entity->len) == 0);
    ngx_fuzz_assert(key->data[entity->len] == '\0');
}


static ngx_int_t
ngx_fuzz_cmp(ngx_str_t *a, ngx_str_t *b)
{
    return ngx_memn2cmp(a->data, b->data, a->len, b->len);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char      *buf, *p, *last;
    uint32_t     slot, slot2, version;
    uint64_t     n, t, seconds;
    ngx_str_t    entity, a, b, key, x, y, start, end, after;
    ngx_uint_t   i, table, column;
    ngx_pool_t  *pool;

    buf = ngx_fuzz_dup(data, size);
    last = buf + size;
    p = buf;

    entity = ngx_fuzz_field(&p, last);
    a = ngx_fuzz_field(&p, last);
    b = ngx_fuzz_field(&p, last);

    n = 0;
    for (i = 0; i < 8 && p + i < last; i++) {
        n = (n << 8) | p[i];
    }

    /* an entity URL never holds a zero byte: the layout relies on it */

    if (entity.len == 0
        || ngx_strlchr(entity.data, entity.data + entity.len, '\0'))
    {
        free(buf);
        return 0;
    }

    pool = ngx_create_pool(1024, &ngx_fuzz_log);
    ngx_fuzz_assert(pool != NULL);

    table = (ngx_uint_t) (n % (sizeof(ngx_http_tent_tables) + 2));
    column = (ngx_uint_t) ((n >> 8) % 4);

    /* any table: in its range; an unknown one refused */

    if (table >= sizeof(ngx_http_tent_tables)) {
        ngx_fuzz_assert(ngx_http_tent_key(pool, &entity, table, &a, &key)
                        == NGX_ERROR);
        ngx_fuzz_assert(ngx_http_tent_key_range(pool, &entity, table,
                                                &start, &end)
                        == NGX_ERROR);
        table = NGX_HTTP_TENT_TABLE_POST;
    }

    ngx_fuzz_assert(ngx_http_tent_key(pool, &entity, table, &a, &key)
                    == NGX_OK);
    ngx_fuzz_prefix(&entity, &key);
    ngx_fuzz_assert(ngx_http_tent_key_range(pool, &entity, table, &start,
                                            &end)
                    == NGX_OK);
    ngx_fuzz_assert(ngx_fuzz_cmp(&start, &key) <= 0
                    && ngx_fuzz_cmp(&key, &end) < 0);

    ngx_fuzz_assert(ngx_http_tent_key_caches(&key)
                    == (table == NGX_HTTP_TENT_TABLE_CREDENTIAL
                        ? NGX_HTTP_TENT_CACHE_CREDENTIALS
                        : (table == NGX_HTTP_TENT_TABLE_POST
                           || table == NGX_HTTP_TENT_TABLE_POST_INDEX
                           || table == NGX_HTTP_TENT_TABLE_POST_VERSION
                           || table == NGX_HTTP_TENT_TABLE_PROFILE
                           || table == NGX_HTTP_TENT_TABLE_PROFILE_OLD)
                          ? NGX_HTTP_TENT_CACHE_REPLIES
                          : table == NGX_HTTP_TENT_TABLE_OUTBOX
                          ? NGX_HTTP_TENT_CACHE_OUTBOX
                          : table == NGX_HTTP_TENT_TABLE_SUBSCRIPTION
                          ? NGX_HTTP_TENT_CACHE_APPS
                          : table == NGX_HTTP_TENT_TABLE_BLOCK
                          ? (NGX_HTTP_TENT_CACHE_BLOCKS
                             | NGX_HTTP_TENT_CACHE_REPLIES)
                          : 0));

    /* the outbox mark's hash: the entity's, as the engine makes it */

    ngx_fuzz_assert(ngx_http_tent_key_entity_hash(&key)
                    == ngx_crc32_short(entity.data, entity.len));

    /* the key after: just above, below anything longer that follows */

    ngx_fuzz_assert(ngx_http_tent_key_after(pool, &key, &after) == NGX_OK);
    ngx_fuzz_assert(after.len == key.len + 1 && ngx_fuzz_cmp(&key, &after) < 0);

    ngx_fuzz_assert(ngx_http_tent_credential_key(pool, &entity, &a, &x)
                    == NGX_OK);
    ngx_fuzz_assert(ngx_http_tent_key_caches(&x)
                    == NGX_HTTP_TENT_CACHE_CREDENTIALS);

    /* pairs */

    ngx_fuzz_assert(ngx_http_tent_pair_key(pool, &entity,
                                           NGX_HTTP_TENT_TABLE_AUTHORIZATION,
                                           &a, &b, &key)
                    == NGX_OK);
    ngx_fuzz_prefix(&entity, &key);

    if (a.len && ngx_strlchr(a.data, a.data + a.len, '\0') == NULL) {
        ngx_fuzz_assert(ngx_http_tent_pair_parse(&entity, &key, &x, &y)
                        == NGX_OK);
        ngx_fuzz_assert(x.len == a.len
                        && ngx_memcmp(x.data, a.data, a.len) == 0);
        ngx_fuzz_assert(y.len == b.len
                        && ngx_memcmp(y.data, b.data, b.len) == 0);

        /* the pair lies under a's prefix */

        ngx_fuzz_assert(ngx_http_tent_pair_key(pool, &entity,
                                            NGX_HTTP_TENT_TABLE_AUTHORIZATION,
                                            &a, NULL, &x)
                        == NGX_OK);
        ngx_fuzz_assert(x.len <= key.len
                        && ngx_memcmp(x.data, key.data, x.len) == 0);
    }

    /* timed rows */

    ngx_fuzz_assert(ngx_http_tent_timed_key(pool, &entity,
                                            NGX_HTTP_TENT_TABLE_JOB, n, &a,
                                            &key)
                    == NGX_OK);
    ngx_fuzz_prefix(&entity, &key);
    ngx_fuzz_assert(ngx_http_tent_timed_key_parse(&entity, &key, &t, &x)
                    == NGX_OK);
    ngx_fuzz_assert(t == n && x.len == a.len
                    && ngx_memcmp(x.data, a.data, a.len) == 0);

    /* a row due later sorts later, whatever its id */

    if (n < (uint64_t) -1) {
        ngx_fuzz_assert(ngx_http_tent_timed_key(pool, &entity,
                                                NGX_HTTP_TENT_TABLE_JOB,
                                                n + 1, NULL, &y)
                        == NGX_OK);
        ngx_fuzz_assert(ngx_fuzz_cmp(&key, &y) < 0);
    }

    /* slots */

    slot = (uint32_t) n;

    ngx_fuzz_assert(ngx_http_tent_slot_key(pool, &entity,
                                           NGX_HTTP_TENT_TABLE_UNCONFIRMED,
                                           slot, &key)
                    == NGX_OK);
    ngx_fuzz_assert(ngx_http_tent_slot_parse(&entity, &key, &slot2)
                    == NGX_OK && slot2 == slot);
    ngx_fuzz_assert(ngx_http_tent_slot_parse(&entity, &after, &slot2)
                    == NGX_ERROR || after.len == entity.len + 6);

    /* post versions */

    version = (uint32_t) (n >> 1) & 0x7fffffff;

    ngx_fuzz_assert(ngx_http_tent_post_key(pool, &entity, &a, &b,
                                           (ngx_int_t) version, &key)
                    == NGX_OK);
    ngx_fuzz_prefix(&entity, &key);
    ngx_fuzz_assert(ngx_http_tent_key_version(&key, &slot2) == NGX_OK
                    && slot2 == version);

    /* feed index rows: in their column's range, parsed back */

    seconds = n >> 20;

    if (column >= sizeof(ngx_http_tent_columns)) {
        ngx_fuzz_assert(ngx_http_tent_index_range(pool, &entity, column,
                                                  &start, &end)
                        == NGX_ERROR);
        column = 0;
    }

    ngx_fuzz_assert(ngx_http_tent_index_key(pool, &entity, column, seconds,
                                            n & 0xffff, &a, &b, 3, &key)
                    == NGX_OK);
    ngx_fuzz_assert(ngx_http_tent_index_range(pool, &entity, column, &start,
                                              &end)
                    == NGX_OK);
    ngx_fuzz_assert(ngx_fuzz_cmp(&start, &key) < 0
                    && ngx_fuzz_cmp(&key, &end) < 0);

    if (a.len && b.len && ngx_strlchr(a.data, a.data + a.len, '\0') == NULL)
    {
        ngx_fuzz_assert(ngx_http_tent_index_parse(&entity, &key, &t, &x, &y)
                        == NGX_OK);
        ngx_fuzz_assert(t == seconds);
        ngx_fuzz_assert(x.len == a.len
                        && ngx_memcmp(x.data, a.data, a.len) == 0);
        ngx_fuzz_assert(y.len == b.len
                        && ngx_memcmp(y.data, b.data, b.len) == 0);
    }

    /* profile history: every version of a base inside its range */

    ngx_fuzz_assert(ngx_http_tent_history_key(pool, &entity, &a,
                                              (ngx_int_t) version, &key)
                    == NGX_OK);
    ngx_fuzz_assert(ngx_http_tent_history_key(pool, &entity, &a, 0, &start)
                    == NGX_OK);
    ngx_fuzz_assert(ngx_http_tent_history_key(pool, &entity, &a, -1, &end)
                    == NGX_OK);
    ngx_fuzz_assert(ngx_fuzz_cmp(&start, &key) <= 0
                    && ngx_fuzz_cmp(&key, &end) < 0);

    ngx_destroy_pool(pool);
    free(buf);

    return 0;
}
