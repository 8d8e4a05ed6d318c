
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Type URIs: ngx_http_tent_type_base() ("https://tent.io/types/info/
 * core/v0.1.0#view" has the base "https://tent.io/types/info/core"), an
 * authorization's type list, ngx_http_tent_type_allowed(), and the
 * profile key built from a base, ngx_http_tent_key().
 * Input: the type, then after a newline, one allowed type per line.
 */


#include "../src/keys/ngx_http_tent_keys.c"
#include "../src/auth/ngx_http_tent_auth.c"
#include "../src/base/ngx_http_tent_json.c"

#include "fuzz.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char      *buf, *p, *nl, *last;
    json_t      *list, *self;
    ngx_int_t    rc;
    ngx_str_t    type, base, entity, key, item, self_key;
    ngx_pool_t  *pool;

    buf = ngx_fuzz_dup(data, size);
    last = buf + size;

    nl = ngx_strlchr(buf, last, '\n');

    type.data = ngx_fuzz_dup(buf, nl ? (size_t) (nl - buf) : size);
    type.len = nl ? (size_t) (nl - buf) : size;

    rc = ngx_http_tent_type_base(&type, &base);

    ngx_fuzz_assert(rc == NGX_OK || rc == NGX_ERROR);

    pool = ngx_create_pool(1024, &ngx_fuzz_log);
    ngx_fuzz_assert(pool != NULL);

    if (rc == NGX_OK) {
        ngx_fuzz_assert(base.data == type.data);
        ngx_fuzz_assert(base.len > 0 && base.len <= type.len);
        ngx_fuzz_assert(ngx_strlchr(base.data, base.data + base.len, '#')
                        == NULL);

        /* the base of a base is never longer ("/v1/v2": "/v1", then none) */

        item = base;

        if (ngx_http_tent_type_base(&item, &item) == NGX_OK) {
            ngx_fuzz_assert(item.data == base.data && item.len <= base.len);
        }

        /* "p" rows are keyed by the base */

        ngx_str_set(&entity, "https://alice.example");

        ngx_fuzz_assert(ngx_http_tent_key(pool, &entity,
                                          NGX_HTTP_TENT_TABLE_PROFILE, &base,
                                          &key)
                        == NGX_OK);
        ngx_fuzz_assert(key.len == entity.len + 2 + base.len);
        ngx_fuzz_assert(key.data[entity.len] == '\0');
        ngx_fuzz_assert(ngx_memcmp(key.data + entity.len + 2, base.data,
                                   base.len)
                        == 0);

        /* in the profile table, whatever its byte (keys.c's) */

        ngx_fuzz_assert(ngx_http_tent_key_range(pool, &entity,
                                                NGX_HTTP_TENT_TABLE_PROFILE,
                                                &item, &self_key)
                        == NGX_OK);
        ngx_fuzz_assert(ngx_memn2cmp(item.data, key.data, item.len, key.len)
                        < 0
                        && ngx_memn2cmp(key.data, self_key.data, key.len,
                                        self_key.len)
                           < 0);

        /* a type is allowed by a list naming it */

        self = json_array();
        ngx_fuzz_assert(self != NULL);
        json_array_append_new(self, ngx_http_tent_json_string(&type));
        ngx_fuzz_assert(ngx_http_tent_type_allowed(self, &type) == 1);
        json_decref(self);
    }

    /* the list from the input */

    list = json_array();
    ngx_fuzz_assert(list != NULL);

    for (p = nl ? nl + 1 : last; p < last; p = nl + 1) {
        nl = ngx_strlchr(p, last, '\n');
        if (nl == NULL) {
            nl = last;
        }

        item.data = p;
        item.len = nl - p;
        json_array_append_new(list, ngx_http_tent_json_string(&item));
    }

    rc = ngx_http_tent_type_allowed(list, &type);
    ngx_fuzz_assert(rc == 0 || rc == 1);

    json_decref(list);
    ngx_destroy_pool(pool);
    free(type.data);
    free(buf);

    return 0;
}

