
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * multipart/form-data, as Tent clients send posts with attachments
 * (spec 6.4): one part holds the post JSON, every other part is a file.
 * nginx has no parser for it; this one is small and bounded: the whole
 * body is in memory already (client_max_body_size), parts point into it.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"


#define NGX_HTTP_TENT_MAX_PARTS     64
#define NGX_HTTP_TENT_MAX_BOUNDARY  200


/* the boundary parameter of a Content-Type, unquoted */

static ngx_int_t
ngx_http_tent_multipart_boundary(ngx_str_t *type, ngx_str_t *boundary)
{
    u_char  *p, *last;

    last = type->data + type->len;

    p = ngx_strlcasestrn(type->data, last, (u_char *) "boundary=", 9 - 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    p += 9;

    if (p < last && *p == '"') {
        p++;
        boundary->data = p;

        while (p < last && *p != '"') {
            p++;
        }

        if (p == last) {
            return NGX_ERROR;
        }

    } else {
        boundary->data = p;

        while (p < last && *p != ';' && *p != ' ' && *p != '\t') {
            p++;
        }
    }

    boundary->len = p - boundary->data;

    if (boundary->len == 0 || boundary->len > NGX_HTTP_TENT_MAX_BOUNDARY) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * The parameters of a Content-Disposition value, e.g.
 * form-data; name="photos[0]"; filename="a.png"
 */

static void
ngx_http_tent_multipart_disposition(u_char *p, u_char *last,
    ngx_http_tent_part_t *part)
{
    u_char     *end, *q;
    ngx_str_t   param, *dst;

    while (p < last) {
        end = ngx_strlchr(p, last, ';');
        if (end == NULL) {
            end = last;
        }

        param.data = p;
        param.len = end - p;
        p = end + 1;

        while (param.len && (param.data[0] == ' ' || param.data[0] == '\t')) {
            param.data++;
            param.len--;
        }

        if (param.len > 5 && ngx_strncasecmp(param.data, (u_char *) "name=", 5)
                             == 0)
        {
            dst = &part->name;
            param.data += 5;
            param.len -= 5;

        } else if (param.len > 9
                   && ngx_strncasecmp(param.data, (u_char *) "filename=", 9)
                      == 0)
        {
            dst = &part->filename;
            param.data += 9;
            param.len -= 9;

        } else {
            continue;
        }

        /* a quoted value may hold ";": take it to its closing quote */

        if (param.data[0] == '"') {
            q = ngx_strlchr(param.data + 1, last, '"');
            if (q == NULL) {
                return;
            }

            dst->data = param.data + 1;
            dst->len = q - dst->data;
            p = q + 1;

            end = ngx_strlchr(p, last, ';');
            p = end ? end + 1 : last;

        } else {
            *dst = param;
        }
    }
}


/* the headers of one part, up to the empty line; NULL if malformed */

static u_char *
ngx_http_tent_multipart_headers(u_char *p, u_char *last,
    ngx_http_tent_part_t *part)
{
    u_char  *eol, *colon, *v;

    for ( ;; ) {
        eol = memmem(p, last - p, "\r\n", 2);
        if (eol == NULL) {
            return NULL;
        }

        if (eol == p) {
            return p + 2;
        }

        colon = ngx_strlchr(p, eol, ':');
        if (colon == NULL) {
            return NULL;
        }

        for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++) {
            /* void */
        }

        if (colon - p == 19
            && ngx_strncasecmp(p, (u_char *) "Content-Disposition", 19) == 0)
        {
            ngx_http_tent_multipart_disposition(v, eol, part);

        } else if (colon - p == 12
                   && ngx_strncasecmp(p, (u_char *) "Content-Type", 12) == 0)
        {
            part->type.data = v;
            part->type.len = eol - v;
        }

        p = eol + 2;
    }
}


/*
 * Split "body" into parts.  NGX_DECLINED: not well-formed multipart;
 * NGX_ERROR: out of memory.
 */

ngx_int_t
ngx_http_tent_multipart_parse(ngx_pool_t *pool, ngx_str_t *content_type,
    ngx_str_t *body, ngx_array_t *parts)
{
    u_char                *p, *last, *next, *delim;
    size_t                 dlen;
    ngx_str_t              boundary;
    ngx_http_tent_part_t  *part;

    if (ngx_http_tent_multipart_boundary(content_type, &boundary) != NGX_OK) {
        return NGX_DECLINED;
    }

    /* "\r\n--" boundary: the delimiter between parts */

    dlen = boundary.len + 4;

    delim = ngx_pnalloc(pool, dlen);
    if (delim == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(delim, "\r\n--", 4);
    ngx_memcpy(delim + 4, boundary.data, boundary.len);

    p = body->data;
    last = p + body->len;

    /* the first boundary may open the body without a CRLF before it */

    if ((size_t) (last - p) >= dlen - 2
        && ngx_memcmp(p, delim + 2, dlen - 2) == 0)
    {
        p += dlen - 2;

    } else {
        p = memmem(p, last - p, delim, dlen);
        if (p == NULL) {
            return NGX_DECLINED;
        }

        p += dlen;
    }

    for ( ;; ) {

        /* after a boundary: "--" ends the body, CRLF starts a part */

        if (last - p >= 2 && p[0] == '-' && p[1] == '-') {
            return NGX_OK;
        }

        if (last - p < 2 || p[0] != '\r' || p[1] != '\n') {
            return NGX_DECLINED;
        }

        p += 2;

        if (parts->nelts >= NGX_HTTP_TENT_MAX_PARTS) {
            return NGX_DECLINED;
        }

        part = ngx_array_push(parts);
        if (part == NULL) {
            return NGX_ERROR;
        }

        ngx_memzero(part, sizeof(ngx_http_tent_part_t));

        p = ngx_http_tent_multipart_headers(p, last, part);
        next = p ? memmem(p, last - p, delim, dlen) : NULL;

        if (next == NULL) {
            /* no half parts left behind */
            parts->nelts--;
            return NGX_DECLINED;
        }

        part->data.data = p;
        part->data.len = next - p;

        p = next + dlen;
    }
}
