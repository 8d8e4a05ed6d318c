
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The multipart/form-data parser of posts with attachments.  Input: a
 * first line, the Content-Type (with the boundary), then the body.
 * Every part found must lie inside the body, in order, never overlapping.
 */


#include "../src/base/ngx_http_tent_multipart.c"

#include "fuzz.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char                *nl, *last, *prev;
    ngx_int_t              rc;
    ngx_str_t              type, body;
    ngx_uint_t             i;
    ngx_pool_t            *pool;
    ngx_array_t           *parts;
    ngx_http_tent_part_t  *part;

    pool = ngx_create_pool(1024, &ngx_fuzz_log);
    ngx_fuzz_assert(pool != NULL);

    nl = memchr(data, '\n', size);

    if (nl == NULL) {
        ngx_destroy_pool(pool);
        return 0;
    }

    type.data = ngx_fuzz_dup(data, nl - data);
    type.len = nl - data;
    body.len = size - (nl - data) - 1;
    body.data = ngx_fuzz_dup(nl + 1, body.len);

    parts = ngx_array_create(pool, 2, sizeof(ngx_http_tent_part_t));
    ngx_fuzz_assert(parts != NULL);

    rc = ngx_http_tent_multipart_parse(pool, &type, &body, parts);

    ngx_fuzz_assert(rc == NGX_OK || rc == NGX_DECLINED);
    ngx_fuzz_assert(parts->nelts <= 64);

    last = body.data + body.len;
    prev = body.data;
    part = parts->elts;

    for (i = 0; i < parts->nelts; i++) {
        ngx_fuzz_assert(part[i].data.data >= prev);
        ngx_fuzz_assert(part[i].data.data + part[i].data.len <= last);
        prev = part[i].data.data + part[i].data.len;

        ngx_fuzz_assert(part[i].name.len == 0
                        || (part[i].name.data >= body.data
                            && part[i].name.data + part[i].name.len <= last));
        ngx_fuzz_assert(part[i].filename.len == 0
                        || (part[i].filename.data >= body.data
                            && part[i].filename.data + part[i].filename.len
                               <= last));
        ngx_fuzz_assert(part[i].type.len == 0
                        || (part[i].type.data >= body.data
                            && part[i].type.data + part[i].type.len <= last));
    }

    ngx_destroy_pool(pool);
    free(type.data);
    free(body.data);

    return 0;
}
