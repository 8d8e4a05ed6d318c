
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Discovery's link parsers (src/outbound/ngx_http_tent_remote_discover.c):
 * ngx_http_tent_links_header() over a Link header value,
 * ngx_http_tent_links_html() over an HTML page, then
 * ngx_http_tent_links_resolve() against the entity: every link found
 * lies inside the input, there are at most NGX_HTTP_TENT_MAX_LINKS, a
 * header link holds no '>', an HTML link no quote of its own, and what
 * resolves is an absolute http(s) URL on the entity's origin when it was
 * a path.
 * Input: byte 0 bit 0 chooses header or HTML, then the value.
 */


#include "../src/outbound/ngx_http_tent_remote.c"
#include "../src/outbound/ngx_http_tent_remote_discover.c"

#include "fuzz.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char                    *in;
    ngx_str_t                  value, *link;
    ngx_uint_t                 i, html;
    ngx_pool_t                *pool;
    ngx_http_tent_discover_t   d;

    if (size < 1) {
        return 0;
    }

    html = data[0] & 1;
    data++;
    size--;

    pool = ngx_create_pool(1024, &ngx_fuzz_log);
    if (pool == NULL) {
        abort();
    }

    in = ngx_fuzz_dup(data, size);
    value.data = in;
    value.len = size;

    ngx_memzero(&d, sizeof(ngx_http_tent_discover_t));
    ngx_str_set(&d.entity, "https://alice.example:8443/tent-entity");

    if (ngx_array_init(&d.links, pool, 2, sizeof(ngx_str_t)) != NGX_OK) {
        abort();
    }

    if (html) {
        ngx_http_tent_links_html(&d, &value);

    } else {
        ngx_http_tent_links_header(&d, &value);
    }

    ngx_fuzz_assert(d.links.nelts <= NGX_HTTP_TENT_MAX_LINKS);

    link = d.links.elts;

    for (i = 0; i < d.links.nelts; i++) {
        ngx_fuzz_assert(link[i].len > 0);
        ngx_fuzz_assert(link[i].data >= in
                        && link[i].data + link[i].len <= in + size);

        if (html) {
            ngx_fuzz_assert(ngx_strlchr(link[i].data,
                                        link[i].data + link[i].len, '>')
                            == NULL
                            || link[i].data[-1] == '"'
                            || link[i].data[-1] == '\'');

        } else {
            ngx_fuzz_assert(link[i].data[-1] == '<');
            ngx_fuzz_assert(link[i].data[link[i].len] == '>');
            ngx_fuzz_assert(ngx_strlchr(link[i].data,
                                        link[i].data + link[i].len, '>')
                            == NULL);
        }
    }

    if (ngx_http_tent_links_resolve(pool, &d) != NGX_OK) {
        abort();
    }

    ngx_fuzz_assert(d.links.nelts <= NGX_HTTP_TENT_MAX_LINKS);

    link = d.links.elts;

    for (i = 0; i < d.links.nelts; i++) {
        ngx_fuzz_assert((link[i].len > 7
                         && ngx_strncasecmp(link[i].data,
                                            (u_char *) "http://", 7) == 0)
                        || (link[i].len > 8
                            && ngx_strncasecmp(link[i].data,
                                               (u_char *) "https://", 8)
                               == 0));

        /* a path was put on the entity's origin, not under its path */

        if (link[i].data < in || link[i].data >= in + size) {
            ngx_fuzz_assert(link[i].len
                            > sizeof("https://alice.example:8443") - 1);
            ngx_fuzz_assert(ngx_strncmp(link[i].data,
                                        "https://alice.example:8443/",
                                        sizeof("https://alice.example:8443/")
                                        - 1)
                            == 0);
        }
    }

    ngx_destroy_pool(pool);
    free(in);

    return 0;
}
