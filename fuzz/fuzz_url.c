
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Entity and server URLs: ngx_http_tent_check_url() splits
 * "http(s)://host[:port][/path]" into origin and path and refuses what
 * could break out of a header or of "<...>" in a Link header.
 * Input: the URL.
 */


#include "../src/ngx_http_tent_module.c"

#include "fuzz.h"


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char     *p, *host;
    ngx_int_t   rc;
    ngx_str_t   url, origin, path;

    url.data = ngx_fuzz_dup(data, size);
    url.len = size;

    rc = ngx_http_tent_check_url(&url, &origin, &path);

    ngx_fuzz_assert(rc == NGX_OK || rc == NGX_ERROR);

    if (rc == NGX_OK) {
        ngx_fuzz_assert(url.len <= 2048);

        ngx_fuzz_assert(ngx_strncasecmp(url.data, (u_char *) "http://", 7)
                        == 0
                        || ngx_strncasecmp(url.data, (u_char *) "https://",
                                           8)
                           == 0);

        for (p = url.data; p < url.data + url.len; p++) {
            ngx_fuzz_assert(*p > 0x20 && *p < 0x7f
                            && ngx_strlchr((u_char *) "<>\"\\^`{}|?#,;",
                                           (u_char *) "<>\"\\^`{}|?#,;" + 13,
                                           *p)
                               == NULL);
        }

        /* the origin: the scheme and a non-empty host, no userinfo */

        ngx_fuzz_assert(origin.data == url.data);
        ngx_fuzz_assert(origin.len > sizeof("http://") - 1);
        ngx_fuzz_assert(origin.len <= url.len);
        host = url.data + ((url.data[4] == ':') ? 7 : 8);

        ngx_fuzz_assert(origin.data + origin.len > host && *host != ':');
        ngx_fuzz_assert(ngx_strlchr(host, origin.data + origin.len, '/')
                        == NULL);
        ngx_fuzz_assert(ngx_strlchr(host, origin.data + origin.len, '@')
                        == NULL);

        /* the path: "/" at least, the rest of the URL */

        ngx_fuzz_assert(path.len >= 1 && path.data[0] == '/');

        if (origin.len == url.len) {
            ngx_fuzz_assert(path.len == 1);

        } else {
            ngx_fuzz_assert(path.data == url.data + origin.len);
            ngx_fuzz_assert(origin.len + path.len == url.len);
        }
    }

    free(url.data);

    return 0;
}
