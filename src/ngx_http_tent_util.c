
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/* small string helpers more than one file needs */


#include "ngx_http_tent_module.h"


/*
 * The next item of a comma-separated list ("a, b,,c"): leading spaces
 * dropped, empty items skipped.  *p moves on; 0 at the end.
 */

ngx_uint_t
ngx_http_tent_next_item(u_char **p, u_char *last, ngx_str_t *item)
{
    u_char  *start, *end;

    while (*p < last) {
        start = *p;
        end = ngx_strlchr(start, last, ',');
        if (end == NULL) {
            end = last;
        }

        *p = (end < last) ? end + 1 : last;

        while (start < end && *start == ' ') {
            start++;
        }

        if (start < end) {
            item->data = start;
            item->len = end - start;
            return 1;
        }
    }

    return 0;
}


/*
 * Strict UTF-8 (RFC 3629), as jansson holds JSON strings to: no overlong
 * forms, no UTF-16 surrogates, nothing above U+10FFFF.
 */

ngx_uint_t
ngx_http_tent_utf8_valid(u_char *p, size_t len)
{
    u_char      *last;
    uint32_t     u, min;
    ngx_uint_t   n;

    for (last = p + len; p < last; /* void */) {

        u = *p++;

        if (u < 0x80) {
            continue;
        }

        if (u >= 0xc2 && u <= 0xdf) {
            n = 1;
            u &= 0x1f;
            min = 0x80;

        } else if (u >= 0xe0 && u <= 0xef) {
            n = 2;
            u &= 0x0f;
            min = 0x800;

        } else if (u >= 0xf0 && u <= 0xf4) {
            n = 3;
            u &= 0x07;
            min = 0x10000;

        } else {
            return 0;
        }

        if ((size_t) (last - p) < n) {
            return 0;
        }

        while (n--) {
            if ((*p & 0xc0) != 0x80) {
                return 0;
            }

            u = (u << 6) | (*p++ & 0x3f);
        }

        if (u < min || u > 0x10ffff || (u >= 0xd800 && u <= 0xdfff)) {
            return 0;
        }
    }

    return 1;
}
