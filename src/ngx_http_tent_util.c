
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
