
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Entity and server URLs: ngx_http_tent_check_url() splits
 * "http(s)://host[:port][/path]" into origin and path and refuses what
 * could break out of a header or of "<...>" in a Link header;
 * ngx_http_tent_entity_normalize() gives an entity's one spelling: it
 * stays in its buffer, is normalized already, and other spellings of it
 * (a trailing slash, the scheme in capitals) give it again.
 * Input: the URL.
 */


#include "../src/base/ngx_http_tent_ctx.c"
#include "../src/base/ngx_http_tent_util.c"

#include "fuzz.h"


static void
ngx_fuzz_normalize(ngx_str_t *url)
{
    u_char     *buf, *again, *p;
    ngx_int_t   rc;
    ngx_str_t   out, twice, other;

    buf = malloc(url->len + NGX_HTTP_TENT_ENTITY_SLACK);
    ngx_fuzz_assert(buf != NULL);

    rc = ngx_http_tent_entity_normalize(url, buf, &out);

    ngx_fuzz_assert(rc == NGX_OK || rc == NGX_DECLINED);

    if (rc != NGX_OK) {
        free(buf);
        return;
    }

    ngx_fuzz_assert(out.data == buf);
    ngx_fuzz_assert(out.len <= url->len + NGX_HTTP_TENT_ENTITY_SLACK);
    ngx_fuzz_assert(out.len <= NGX_HTTP_TENT_ENTITY_MAX);
    ngx_fuzz_assert(ngx_strncmp(out.data, "http://", 7) == 0
                    || ngx_strncmp(out.data, "https://", 8) == 0);
    ngx_fuzz_assert(out.data[out.len - 1] != '/');
    ngx_fuzz_assert(ngx_http_tent_entity_eq(url, &out));

    /* printable, nothing a header or JSON would have to quote */

    for (p = out.data; p < out.data + out.len; p++) {
        ngx_fuzz_assert(*p > 0x20 && *p < 0x7f
                        && ngx_strlchr((u_char *) "<>\"\\^`{}|?#",
                                       (u_char *) "<>\"\\^`{}|?#" + 11, *p)
                           == NULL);
    }

    /* scheme and host in lower case, no userinfo */

    for (p = out.data + (out.data[4] == ':' ? 7 : 8);
         p < out.data + out.len && *p != '/';
         p++)
    {
        ngx_fuzz_assert((*p < 'A' || *p > 'Z') && *p != '@');
    }

    /* the canonical spelling is its own */

    again = malloc(out.len + 1 + NGX_HTTP_TENT_ENTITY_SLACK);
    ngx_fuzz_assert(again != NULL);

    ngx_fuzz_assert(ngx_http_tent_entity_normalize(&out, again, &twice)
                    == NGX_OK);
    ngx_fuzz_assert(twice.len == out.len
                    && ngx_memcmp(twice.data, out.data, out.len) == 0);

    /* with a slash, and the scheme in capitals: the same entity */

    if (out.len < NGX_HTTP_TENT_ENTITY_MAX) {
        other.data = malloc(out.len + 1);
        ngx_fuzz_assert(other.data != NULL);
        ngx_memcpy(other.data, out.data, out.len);
        other.data[out.len] = '/';
        other.len = out.len + 1;

        for (p = other.data; p < other.data + 4; p++) {
            *p = ngx_toupper(*p);
        }

        ngx_fuzz_assert(ngx_http_tent_entity_normalize(&other, again, &twice)
                        == NGX_OK);
        ngx_fuzz_assert(twice.len == out.len
                        && ngx_memcmp(twice.data, out.data, out.len) == 0);
        free(other.data);
    }

    free(again);
    free(buf);
}


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

    ngx_fuzz_normalize(&url);

    free(url.data);

    return 0;
}
