
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The small readers and writers the ActivityStreams mapping shares
 * (docs/activitypub.md, "Posts both ways"): UTF-8 characters and HTML
 * character references, RFC 3339 times both ways, the origin of a URL.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_ap_map.h"


/* the named references decoded; any other is left as text */

typedef struct {
    const char                 *name;
    uint32_t                    cp;
} ngx_http_tent_ap_entity_t;

static ngx_http_tent_ap_entity_t  ngx_http_tent_ap_entities[] = {
    { "amp", '&' }, { "lt", '<' }, { "gt", '>' }, { "quot", '"' },
    { "apos", '\'' }, { "nbsp", 0xa0 }, { "hellip", 0x2026 },
    { "mdash", 0x2014 }, { "ndash", 0x2013 }, { "lsquo", 0x2018 },
    { "rsquo", 0x2019 }, { "ldquo", 0x201c }, { "rdquo", 0x201d },
    { "copy", 0xa9 }, { NULL, 0 }
};


/* one UTF-8 character; a byte that starts none is U+FFFD */

u_char *
ngx_http_tent_ap_char(u_char *p, u_char *last, uint32_t *cp)
{
    u_char      c, lo, hi;
    size_t      n, i;
    uint32_t    v;

    c = *p;

    if (c < 0x80) {
        *cp = c;
        return p + 1;
    }

    lo = 0x80;
    hi = 0xbf;

    if (c >= 0xc2 && c <= 0xdf) {
        n = 1;
        v = c & 0x1f;

    } else if (c >= 0xe0 && c <= 0xef) {
        n = 2;
        v = c & 0x0f;
        lo = (c == 0xe0) ? 0xa0 : 0x80;
        hi = (c == 0xed) ? 0x9f : 0xbf;

    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 3;
        v = c & 0x07;
        lo = (c == 0xf0) ? 0x90 : 0x80;
        hi = (c == 0xf4) ? 0x8f : 0xbf;

    } else {
        *cp = 0xfffd;
        return p + 1;
    }

    if ((size_t) (last - p) <= n || p[1] < lo || p[1] > hi) {
        *cp = 0xfffd;
        return p + 1;
    }

    for (i = 1; i <= n; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            *cp = 0xfffd;
            return p + 1;
        }

        v = (v << 6) | (p[i] & 0x3f);
    }

    *cp = v;

    return p + n + 1;
}


/*
 * A character reference at '&': decimal or hex (the ';' optional, as
 * browsers take it), or one of the named ones above with its ';'.
 * Anything else is a plain '&'.
 */

u_char *
ngx_http_tent_ap_ref(u_char *p, u_char *last, uint32_t *cp)
{
    u_char                     *q, *start;
    size_t                      len;
    uint32_t                    v;
    ngx_uint_t                  hex, digit;
    ngx_http_tent_ap_entity_t  *e;

    *cp = '&';
    q = p + 1;

    if (q < last && *q == '#') {
        q++;
        hex = 0;

        if (q < last && (*q | 0x20) == 'x') {
            hex = 1;
            q++;
        }

        start = q;
        v = 0;

        for ( /* void */ ; q < last; q++) {

            if (*q >= '0' && *q <= '9') {
                digit = *q - '0';

            } else if (hex && (*q | 0x20) >= 'a' && (*q | 0x20) <= 'f') {
                digit = (*q | 0x20) - 'a' + 10;

            } else {
                break;
            }

            /* saturates past the last code point */
            v = v > 0x10ffff ? v : v * (hex ? 16 : 10) + digit;
        }

        if (q == start) {
            return p + 1;
        }

        if (q < last && *q == ';') {
            q++;
        }

        if (v == 0 || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) {
            v = 0xfffd;
        }

        *cp = v;

        return q;
    }

    start = q;

    while (q < last && q - start < 8
           && (ngx_http_tent_ap_alpha(*q) || (*q >= '0' && *q <= '9')))
    {
        q++;
    }

    if (q == last || *q != ';') {
        return p + 1;
    }

    len = q - start;

    for (e = ngx_http_tent_ap_entities; e->name; e++) {
        if (ngx_strlen(e->name) == len
            && ngx_strncmp(e->name, start, len) == 0)
        {
            *cp = e->cp;
            return q + 1;
        }
    }

    return p + 1;
}


size_t
ngx_http_tent_ap_utf8(uint32_t cp, u_char *buf)
{
    if (cp < 0x80) {
        buf[0] = (u_char) cp;
        return 1;
    }

    if (cp < 0x800) {
        buf[0] = (u_char) (0xc0 | (cp >> 6));
        buf[1] = (u_char) (0x80 | (cp & 0x3f));
        return 2;
    }

    if (cp < 0x10000) {
        buf[0] = (u_char) (0xe0 | (cp >> 12));
        buf[1] = (u_char) (0x80 | ((cp >> 6) & 0x3f));
        buf[2] = (u_char) (0x80 | (cp & 0x3f));
        return 3;
    }

    buf[0] = (u_char) (0xf0 | (cp >> 18));
    buf[1] = (u_char) (0x80 | ((cp >> 12) & 0x3f));
    buf[2] = (u_char) (0x80 | ((cp >> 6) & 0x3f));
    buf[3] = (u_char) (0x80 | (cp & 0x3f));

    return 4;
}


/* RFC 3339 in UTC, 20 bytes: 2026-12-07T15:16:30Z */

ngx_int_t
ngx_http_tent_ap_time(json_int_t t, u_char *buf)
{
    u_char    *p;
    ngx_tm_t   tm;

    /* years 1970 to 9999 */

    if (t < 0 || t > (json_int_t) 253402300799LL) {
        return NGX_DECLINED;
    }

    ngx_gmtime((time_t) t, &tm);

    p = ngx_http_tent_ap_digits(buf, tm.ngx_tm_year, 4);
    *p++ = '-';
    p = ngx_http_tent_ap_digits(p, tm.ngx_tm_mon, 2);
    *p++ = '-';
    p = ngx_http_tent_ap_digits(p, tm.ngx_tm_mday, 2);
    *p++ = 'T';
    p = ngx_http_tent_ap_digits(p, tm.ngx_tm_hour, 2);
    *p++ = ':';
    p = ngx_http_tent_ap_digits(p, tm.ngx_tm_min, 2);
    *p++ = ':';
    p = ngx_http_tent_ap_digits(p, tm.ngx_tm_sec, 2);
    *p = 'Z';

    return NGX_OK;
}


/* v in decimal, zero-padded to "width" digits */

u_char *
ngx_http_tent_ap_digits(u_char *p, uint64_t v, size_t width)
{
    size_t  n, i;
    u_char  tmp[NGX_INT64_LEN];

    n = 0;

    do {
        tmp[n++] = (u_char) ('0' + v % 10);
        v /= 10;
    } while (v);

    for (i = n; i < width; i++) {
        *p++ = '0';
    }

    while (n) {
        *p++ = tmp[--n];
    }

    return p;
}


/*
 * The origins of two http(s) URLs are the same: scheme and host without
 * case, the port with the scheme's default made explicit.
 */

ngx_int_t
ngx_http_tent_ap_same_origin(ngx_str_t *a, ngx_str_t *b)
{
    u_char      *c, *p[2], *host[2], *end[2], *port[2];
    size_t       len[2];
    ngx_str_t   *s[2];
    ngx_uint_t   i, https[2];

    s[0] = a;
    s[1] = b;

    for (i = 0; i < 2; i++) {
        p[i] = s[i]->data;

        if (s[i]->len > 7 && ngx_strncasecmp(p[i], (u_char *) "http://", 7)
                             == 0)
        {
            https[i] = 0;
            host[i] = p[i] + 7;

        } else if (s[i]->len > 8
                   && ngx_strncasecmp(p[i], (u_char *) "https://", 8) == 0)
        {
            https[i] = 1;
            host[i] = p[i] + 8;

        } else {
            return NGX_DECLINED;
        }

        for (end[i] = host[i]; end[i] < p[i] + s[i]->len; end[i]++) {
            if (*end[i] == '/' || *end[i] == '?' || *end[i] == '#') {
                break;
            }

            if (*end[i] == '@') {
                /* userinfo: no origin of ours to compare */
                return NGX_DECLINED;
            }
        }

        /* the port: after the last ':' outside an IPv6 literal's [] */

        port[i] = NULL;

        for (c = end[i]; c > host[i]; c--) {
            if (*(c - 1) == ']') {
                break;
            }

            if (*(c - 1) == ':') {
                port[i] = c;
                break;
            }
        }

        len[i] = (port[i] ? port[i] - 1 : end[i]) - host[i];
    }

    if (https[0] != https[1] || len[0] != len[1] || len[0] == 0
        || ngx_strncasecmp(host[0], host[1], len[0]) != 0)
    {
        return NGX_DECLINED;
    }

    for (i = 0; i < 2; i++) {
        if (port[i] == NULL || port[i] == end[i]) {
            port[i] = (u_char *) (https[i] ? "443" : "80");
            end[i] = port[i] + (https[i] ? 3 : 2);
        }

        while (end[i] - port[i] > 1 && *port[i] == '0') {
            port[i]++;
        }
    }

    if (end[0] - port[0] != end[1] - port[1]
        || ngx_strncmp(port[0], port[1], end[0] - port[0]) != 0)
    {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * RFC 3339: 2026-12-07T15:16:30Z, with a fraction (dropped) and an
 * offset (applied); years 1970 to 9999.
 */

ngx_int_t
ngx_http_tent_ap_parse_time(u_char *p, size_t len, json_int_t *t)
{
    u_char     *last;
    ngx_int_t   v[6], off, y, m, era, yoe, doy, doe;
    ngx_uint_t  i, n;

    static ngx_uint_t  widths[6] = { 4, 2, 2, 2, 2, 2 };
    static u_char      seps[6] = { '-', '-', 'T', ':', ':', 0 };
    static ngx_int_t   mdays[12] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31,
                                     30, 31 };

    last = p + len;

    for (i = 0; i < 6; i++) {
        v[i] = 0;

        for (n = 0; n < widths[i]; n++) {
            if (p == last || *p < '0' || *p > '9') {
                return NGX_DECLINED;
            }

            v[i] = v[i] * 10 + (*p++ - '0');
        }

        if (seps[i]) {
            if (p == last
                || (*p != seps[i] && !(seps[i] == 'T' && *p == 't')))
            {
                return NGX_DECLINED;
            }

            p++;
        }
    }

    if (v[0] < 1970 || v[1] < 1 || v[1] > 12 || v[2] < 1
        || v[2] > mdays[v[1] - 1] || v[3] > 23 || v[4] > 59 || v[5] > 60)
    {
        return NGX_DECLINED;
    }

    if (v[1] == 2 && v[2] == 29
        && !((v[0] % 4 == 0 && v[0] % 100 != 0) || v[0] % 400 == 0))
    {
        return NGX_DECLINED;
    }

    if (p < last && *p == '.') {
        for (p++, n = 0; p < last && *p >= '0' && *p <= '9'; p++, n++) {
            /* void */
        }

        if (n == 0 || n > 9) {
            return NGX_DECLINED;
        }
    }

    if (p == last) {
        return NGX_DECLINED;
    }

    if (*p == 'Z' || *p == 'z') {
        off = 0;
        p++;

    } else if ((*p == '+' || *p == '-') && last - p == 6
               && p[1] >= '0' && p[1] <= '2' && p[2] >= '0' && p[2] <= '9'
               && p[3] == ':' && p[4] >= '0' && p[4] <= '5'
               && p[5] >= '0' && p[5] <= '9')
    {
        off = ((p[1] - '0') * 10 + p[2] - '0') * 3600
              + ((p[4] - '0') * 10 + p[5] - '0') * 60;
        off = (*p == '-') ? -off : off;
        p += 6;

    } else {
        return NGX_DECLINED;
    }

    if (p != last) {
        return NGX_DECLINED;
    }

    /* days from the civil date (H. Hinnant's algorithm) */

    y = v[0] - (v[1] <= 2);
    m = v[1];
    era = y / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + v[2] - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

    *t = ((json_int_t) (era * 146097 + doe - 719468)) * 86400
         + v[3] * 3600 + v[4] * 60 + v[5] - off;

    if (*t < 0) {
        return NGX_DECLINED;
    }

    return NGX_OK;
}
