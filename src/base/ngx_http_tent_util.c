
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Helpers more than one layer needs: lists, UTF-8, entity URLs, the clock,
 * random ids and tokens.
 */


#include "ngx_http_tent_base.h"

#include <openssl/rand.h>


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


/* RFC 3986 unreserved: the bytes an escape need not hide */

static ngx_uint_t
ngx_http_tent_unreserved(u_char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
           || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'
           || c == '~';
}


static ngx_int_t
ngx_http_tent_hex_digit(u_char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }

    c |= 0x20;

    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }

    return -1;
}


/*
 * The escape at p ("%XX", p + 3 <= last): the byte, or -1 when it is not
 * two hex digits.
 */

static ngx_int_t
ngx_http_tent_escaped(u_char *p, u_char *last)
{
    ngx_int_t  hi, lo;

    if (last - p < 3) {
        return -1;
    }

    hi = ngx_http_tent_hex_digit(p[1]);
    lo = ngx_http_tent_hex_digit(p[2]);

    if (hi < 0 || lo < 0) {
        return -1;
    }

    return hi * 16 + lo;
}


/* the path with RFC 3986 5.2.4's dot segments removed, in place */

static u_char *
ngx_http_tent_remove_dots(u_char *start, u_char *last)
{
    u_char  *src, *dst, *seg, *end;
    size_t   len;

    /* start[0] is '/'; each "/segment" is copied over or dropped */

    src = start;
    dst = start;

    while (src < last) {
        seg = src + 1;
        end = ngx_strlchr(seg, last, '/');
        if (end == NULL) {
            end = last;
        }

        len = end - seg;

        if (len == 1 && seg[0] == '.') {
            /* "." names the directory itself */

        } else if (len == 2 && seg[0] == '.' && seg[1] == '.') {
            while (dst > start && *--dst != '/') { /* void */ }

        } else {
            dst = ngx_movemem(dst, src, end - src);
        }

        src = end;
    }

    return dst;
}


/*
 * The one spelling of an entity URL that is kept and compared (RFC 3986
 * 6.2.2, 6.2.3): scheme and host in lower case, an IPv6 address in
 * nginx's (RFC 5952) text, the port without leading zeros and dropped
 * when it is the scheme's default (or empty), escapes of unreserved
 * bytes decoded and the others' hex in upper case, no dot segments, no
 * trailing slash.  "buf" has url->len + NGX_HTTP_TENT_ENTITY_SLACK
 * bytes.  NGX_DECLINED: not an entity URL (another scheme, no host,
 * userinfo, a query or fragment, a bad port or escape, a byte that
 * needs quoting).
 */

ngx_int_t
ngx_http_tent_entity_normalize(ngx_str_t *url, u_char *buf, ngx_str_t *out)
{
    u_char      *p, *last, *host, *end, *port, *dst, *path;
    ngx_int_t    c;
    ngx_uint_t   n, dflt;
#if (NGX_HAVE_INET6)
    u_char       addr[16];
#endif

    if (url->len > NGX_HTTP_TENT_ENTITY_MAX) {
        return NGX_DECLINED;
    }

    p = url->data;
    last = p + url->len;

    for ( /* void */ ; p < last; p++) {
        if (*p <= ' ' || *p >= 0x7f || *p == '"' || *p == '<' || *p == '>'
            || *p == '\\' || *p == '`' || *p == '{' || *p == '}'
            || *p == '|' || *p == '^' || *p == '#' || *p == '?')
        {
            return NGX_DECLINED;
        }
    }

    p = url->data;

    if (url->len > 7 && ngx_strncasecmp(p, (u_char *) "http://", 7) == 0) {
        dst = ngx_cpymem(buf, "http://", 7);
        host = p + 7;
        dflt = 80;

    } else if (url->len > 8
               && ngx_strncasecmp(p, (u_char *) "https://", 8) == 0)
    {
        dst = ngx_cpymem(buf, "https://", 8);
        host = p + 8;
        dflt = 443;

    } else {
        return NGX_DECLINED;
    }

    path = ngx_strlchr(host, last, '/');
    if (path == NULL) {
        path = last;
    }

    if (host == path || ngx_strlchr(host, path, '@')) {
        return NGX_DECLINED;
    }

    /* the host */

    if (*host == '[') {
        end = ngx_strlchr(host, path, ']');
        if (end == NULL) {
            return NGX_DECLINED;
        }

        port = end + 1;

#if (NGX_HAVE_INET6)
        if (ngx_inet6_addr(host + 1, end - host - 1, addr) != NGX_OK) {
            return NGX_DECLINED;
        }

        *dst++ = '[';
        dst += ngx_inet6_ntop(addr, dst, NGX_INET6_ADDRSTRLEN);
        *dst++ = ']';
#else
        return NGX_DECLINED;
#endif

    } else {
        port = ngx_strlchr(host, path, ':');
        if (port == NULL) {
            port = path;
        }

        if (port == host) {
            return NGX_DECLINED;
        }

        for (p = host; p < port; p++) {
            c = *p;

            if (c == '%') {
                c = ngx_http_tent_escaped(p, port);
                p += 2;
            }

            if (c < 0 || !ngx_http_tent_unreserved((u_char) c)) {
                return NGX_DECLINED;
            }

            *dst++ = ngx_tolower((u_char) c);
        }
    }

    /* the port: digits, kept only when it is not the scheme's own */

    if (port < path) {
        if (*port != ':') {
            return NGX_DECLINED;
        }

        for (p = port + 1; p < path && *p == '0'; p++) { /* void */ }

        n = 0;

        for (end = p; end < path; end++) {
            if (*end < '0' || *end > '9' || end - p >= 5) {
                return NGX_DECLINED;
            }

            n = n * 10 + (*end - '0');
        }

        if (n > 65535 || (n == 0 && p > port + 1)) {
            return NGX_DECLINED;
        }

        if (n != 0 && n != dflt) {
            dst = ngx_sprintf(dst, ":%ui", n);
        }
    }

    /* the path: escapes as little as may be, no dot segments */

    end = dst;

    for (p = path; p < last; p++) {
        if (*p != '%') {
            *dst++ = *p;
            continue;
        }

        c = ngx_http_tent_escaped(p, last);
        if (c < 0) {
            return NGX_DECLINED;
        }

        if (ngx_http_tent_unreserved((u_char) c)) {
            *dst++ = (u_char) c;

        } else {
            *dst++ = '%';
            *dst++ = ngx_toupper(p[1]);
            *dst++ = ngx_toupper(p[2]);
        }

        p += 2;
    }

    if (dst > end) {
        dst = ngx_http_tent_remove_dots(end, dst);
    }

    while (dst > end && dst[-1] == '/') {
        dst--;
    }

    /* an IPv6 address may come out longer than it went in */

    if (dst - buf > NGX_HTTP_TENT_ENTITY_MAX) {
        return NGX_DECLINED;
    }

    out->data = buf;
    out->len = dst - buf;

    return NGX_OK;
}


/* the same into the pool; NGX_ERROR only when memory runs out */

ngx_int_t
ngx_http_tent_entity_canonical(ngx_pool_t *pool, ngx_str_t *url,
    ngx_str_t *out)
{
    u_char  *buf;

    buf = ngx_pnalloc(pool, url->len + NGX_HTTP_TENT_ENTITY_SLACK);
    if (buf == NULL) {
        return NGX_ERROR;
    }

    return ngx_http_tent_entity_normalize(url, buf, out);
}


/*
 * Two spellings of one entity (spec 14.7): equal once normalized.  What
 * is not an entity URL equals only itself.
 */

ngx_int_t
ngx_http_tent_entity_eq(ngx_str_t *a, ngx_str_t *b)
{
    u_char     ba[NGX_HTTP_TENT_ENTITY_MAX + NGX_HTTP_TENT_ENTITY_SLACK];
    u_char     bb[NGX_HTTP_TENT_ENTITY_MAX + NGX_HTTP_TENT_ENTITY_SLACK];
    ngx_str_t  na, nb;

    if (a->len == b->len && ngx_strncmp(a->data, b->data, a->len) == 0) {
        return 1;
    }

    if (ngx_http_tent_entity_normalize(a, ba, &na) != NGX_OK
        || ngx_http_tent_entity_normalize(b, bb, &nb) != NGX_OK)
    {
        return 0;
    }

    return na.len == nb.len && ngx_strncmp(na.data, nb.data, na.len) == 0;
}


/*
 * The clock, in microseconds, not nginx's cached time: two posts made one
 * after the other keep their order in the feed even within a millisecond.
 */

uint64_t
ngx_http_tent_now_us(void)
{
    struct timeval  tv;

    ngx_gettimeofday(&tv);

    return (uint64_t) tv.tv_sec * 1000000 + tv.tv_usec;
}


/*
 * Random bytes from a buffer the process fills 4 KB at a time: a
 * RAND_bytes() call for each id and nonce (every delivery signs with a
 * new nonce) costs a getpid() and the DRBG's locks, a twenty-fifth of a
 * delivery's event loop in perf.  Emptied when a process starts
 * (init_process) and refilled whenever the pid is not the filler's, so
 * processes never share bytes; the bytes given out are zeroed in it.
 * The event loop's only, as its callers are.
 */

static u_char     ngx_http_tent_random_buf[4096];
static size_t     ngx_http_tent_random_left;
static ngx_pid_t  ngx_http_tent_random_pid;


/* a new process: none of the bytes it was given by fork (init_process) */

void
ngx_http_tent_random_reset(void)
{
    ngx_explicit_memzero(ngx_http_tent_random_buf,
                         sizeof(ngx_http_tent_random_buf));
    ngx_http_tent_random_left = 0;
}


static ngx_int_t
ngx_http_tent_random_bytes(u_char *out, size_t n)
{
    u_char  *p, *buf;
    size_t   left;

    buf = ngx_http_tent_random_buf;
    left = ngx_http_tent_random_left;

    if (n > sizeof(ngx_http_tent_random_buf)) {
        return RAND_bytes(out, (int) n) == 1 ? NGX_OK : NGX_ERROR;
    }

    if (ngx_http_tent_random_pid != ngx_pid || left < n) {
        if (RAND_bytes(buf, sizeof(ngx_http_tent_random_buf)) != 1) {
            ngx_http_tent_random_left = 0;
            return NGX_ERROR;
        }

        left = sizeof(ngx_http_tent_random_buf);
        ngx_http_tent_random_pid = ngx_pid;
    }

    p = buf + sizeof(ngx_http_tent_random_buf) - left;

    ngx_memcpy(out, p, n);
    ngx_explicit_memzero(p, n);

    ngx_http_tent_random_left = left - n;

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_random_id(ngx_pool_t *pool, const char *prefix, size_t bytes,
    ngx_str_t *id)
{
    u_char     raw[32];
    size_t     plen;
    ngx_str_t  src, dst;

    if (bytes > sizeof(raw)
        || ngx_http_tent_random_bytes(raw, bytes) != NGX_OK)
    {
        return NGX_ERROR;
    }

    plen = prefix ? ngx_strlen(prefix) : 0;

    id->data = ngx_pnalloc(pool, plen + ngx_base64_encoded_length(bytes));
    if (id->data == NULL) {
        return NGX_ERROR;
    }

    if (plen) {
        ngx_memcpy(id->data, prefix, plen);
    }

    src.data = raw;
    src.len = bytes;
    dst.data = id->data + plen;

    ngx_encode_base64url(&dst, &src);

    id->len = plen + dst.len;

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_random_hex(ngx_pool_t *pool, size_t bytes, ngx_str_t *hex)
{
    u_char  raw[32];

    if (bytes > sizeof(raw)
        || ngx_http_tent_random_bytes(raw, bytes) != NGX_OK)
    {
        return NGX_ERROR;
    }

    hex->data = ngx_pnalloc(pool, bytes * 2);
    if (hex->data == NULL) {
        return NGX_ERROR;
    }

    hex->len = ngx_hex_dump(hex->data, raw, bytes) - hex->data;

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_hex_valid(ngx_str_t *s, size_t len)
{
    size_t  i;

    if (s->len != len) {
        return NGX_ERROR;
    }

    for (i = 0; i < len; i++) {
        if (!((s->data[i] >= '0' && s->data[i] <= '9')
              || (s->data[i] >= 'a' && s->data[i] <= 'f')))
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_token_valid(ngx_str_t *s, size_t max)
{
    size_t  i;

    if (s->len == 0 || s->len > max) {
        return NGX_ERROR;
    }

    for (i = 0; i < s->len; i++) {
        if (!((s->data[i] >= 'a' && s->data[i] <= 'z')
              || (s->data[i] >= 'A' && s->data[i] <= 'Z')
              || (s->data[i] >= '0' && s->data[i] <= '9')
              || s->data[i] == '-' || s->data[i] == '_'))
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* a response header already set (a handler's own), by name */

ngx_table_elt_t *
ngx_http_tent_header_out(ngx_http_request_t *r, const char *name)
{
    size_t            len;
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    len = ngx_strlen(name);
    part = &r->headers_out.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return NULL;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].hash && h[i].key.len == len
            && ngx_strncasecmp(h[i].key.data, (u_char *) name, len) == 0)
        {
            return &h[i];
        }
    }
}


/* a response header: NAME a literal, VALUE's bytes live as long as r */

ngx_int_t
ngx_http_tent_add_header(ngx_http_request_t *r, const char *name,
    ngx_str_t *value)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    h->key.data = (u_char *) name;
    h->key.len = ngx_strlen(name);
    h->value = *value;

#if (nginx_version >= 1023000)
    h->next = NULL;
#endif

    return NGX_OK;
}
