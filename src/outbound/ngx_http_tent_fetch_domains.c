
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The operator's blocked domains as each worker holds them
 * (docs/blocks.md): a sorted list the blocks' subsystem reads from the
 * store when the blocks' generation moves, and the match every outbound
 * hop and every inbound route makes.  A domain blocks itself and every
 * name under it, by labels: "example.com" blocks "a.example.com", not
 * "badexample.com".  Names are compared as written in the URL, ASCII
 * letters in lower case, one trailing dot ignored, on both sides; no
 * name is resolved (no CNAME followed).  A domain is ASCII: an IDN in
 * its "xn--" form (we have no IDNA library to map UTF-8 to it, and a
 * URL's host is sent in that form).  An IP literal is no domain: an
 * IPv4 host's last label is all digits, a domain's never is, and an
 * IPv6 one is in brackets, so neither is ever matched.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_fetch.h"


static ngx_pool_t         *ngx_http_tent_domains_pool;
static ngx_str_t          *ngx_http_tent_domains;
static ngx_uint_t          ngx_http_tent_domains_n;
static ngx_atomic_uint_t   ngx_http_tent_domains_gen;
static ngx_uint_t          ngx_http_tent_domains_held;


static int
ngx_http_tent_domains_cmp(const void *one, const void *two)
{
    int               rc;
    const ngx_str_t  *a = one, *b = two;

    rc = ngx_memcmp(a->data, b->data, ngx_min(a->len, b->len));

    if (rc != 0) {
        return rc;
    }

    return (a->len < b->len) ? -1 : (a->len > b->len);
}


/*
 * A domain (or a host name) in the one spelling it is matched in:
 * 1-253 bytes of ASCII, labels of 1-63 bytes, none of the bytes that
 * end a host in a URL; lower case, one trailing dot dropped.
 * NGX_DECLINED: not a name.
 */

ngx_int_t
ngx_http_tent_domain_normalize(ngx_pool_t *pool, ngx_str_t *in,
    ngx_str_t *out)
{
    u_char     *p, c;
    size_t      len, i, label;

    len = in->len;

    if (len && in->data[len - 1] == '.') {
        len--;
    }

    if (len == 0 || len > 253) {
        return NGX_DECLINED;
    }

    p = ngx_pnalloc(pool, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    label = 0;

    for (i = 0; i < len; i++) {
        c = in->data[i];

        if (c <= 0x20 || c >= 0x7f || c == '/' || c == ':' || c == '@'
            || c == '[' || c == ']' || c == '?' || c == '#' || c == '%'
            || c == '\\' || c == '"' || c == '<' || c == '>' || c == ','
            || c == ';' || c == '*')
        {
            return NGX_DECLINED;
        }

        if (c == '.') {
            if (label == 0) {
                return NGX_DECLINED;
            }

            label = 0;

        } else if (++label > 63) {
            return NGX_DECLINED;
        }

        p[i] = ngx_tolower(c);
    }

    if (label == 0) {
        return NGX_DECLINED;
    }

    out->data = p;
    out->len = len;

    return NGX_OK;
}


/*
 * The worker's list freed as the process exits: its pool would be lost
 * to valgrind once the module is unloaded
 */

void
ngx_http_tent_domains_exit(void)
{
    if (ngx_http_tent_domains_pool) {
        ngx_destroy_pool(ngx_http_tent_domains_pool);
        ngx_http_tent_domains_pool = NULL;
    }

    ngx_http_tent_domains = NULL;
    ngx_http_tent_domains_n = 0;
    ngx_http_tent_domains_held = 0;
}


/* the worker's list, replaced: its pool is the list's from now on */

void
ngx_http_tent_domains_set(ngx_pool_t *pool, ngx_array_t *domains,
    ngx_atomic_uint_t generation)
{
    if (ngx_http_tent_domains_pool) {
        ngx_destroy_pool(ngx_http_tent_domains_pool);
    }

    ngx_qsort(domains->elts, domains->nelts, sizeof(ngx_str_t),
              ngx_http_tent_domains_cmp);

    ngx_http_tent_domains_pool = pool;
    ngx_http_tent_domains = domains->elts;
    ngx_http_tent_domains_n = domains->nelts;
    ngx_http_tent_domains_gen = generation;
    ngx_http_tent_domains_held = 1;
}


/* the list this worker holds: of that generation; NGX_DECLINED: none */

ngx_int_t
ngx_http_tent_domains_held_at(ngx_atomic_uint_t *generation)
{
    *generation = ngx_http_tent_domains_gen;

    return ngx_http_tent_domains_held ? NGX_OK : NGX_DECLINED;
}


/* the list itself, for the operator's GET */

ngx_str_t *
ngx_http_tent_domains_list(ngx_uint_t *n)
{
    *n = ngx_http_tent_domains_n;

    return ngx_http_tent_domains;
}


/* a host name (no port, no brackets): it or a name above it blocked? */

ngx_uint_t
ngx_http_tent_domain_blocked(ngx_str_t *host)
{
    u_char      buf[253], *p, *last;
    size_t      len, i;
    ngx_str_t   name;

    if (ngx_http_tent_domains_n == 0 || host->len == 0) {
        return 0;
    }

    len = host->len;

    if (host->data[len - 1] == '.') {
        len--;
    }

    if (len == 0 || len > sizeof(buf)) {
        return 0;
    }

    for (i = 0; i < len; i++) {
        buf[i] = ngx_tolower(host->data[i]);
    }

    p = buf;
    last = buf + len;

    /* the name, then each name above it at a label's boundary */

    for ( ;; ) {
        name.data = p;
        name.len = last - p;

        if (bsearch(&name, ngx_http_tent_domains, ngx_http_tent_domains_n,
                    sizeof(ngx_str_t), ngx_http_tent_domains_cmp)
            != NULL)
        {
            return 1;
        }

        p = ngx_strlchr(p, last, '.');
        if (p == NULL) {
            return 0;
        }

        p++;
    }
}


/* the host of an http(s) URL, blocked? */

ngx_uint_t
ngx_http_tent_domain_blocked_url(ngx_str_t *url)
{
    u_char     *p, *last, *host;
    ngx_str_t   name;

    if (ngx_http_tent_domains_n == 0) {
        return 0;
    }

    p = url->data;
    last = url->data + url->len;

    host = ngx_strlcasestrn(p, last, (u_char *) "://", 3 - 1);
    if (host == NULL) {
        return 0;
    }

    host += 3;

    for (p = host; p < last && *p != '/' && *p != '?' && *p != '#'; p++) {
        /* void */
    }

    last = p;

    /* userinfo is refused elsewhere; the host is after the last '@' */

    for (p = last; p > host; p--) {
        if (p[-1] == '@') {
            host = p;
            break;
        }
    }

    if (host < last && *host == '[') {
        return 0;       /* an IPv6 literal names no domain */
    }

    for (p = host; p < last && *p != ':'; p++) {
        /* void */
    }

    name.data = host;
    name.len = p - host;

    return ngx_http_tent_domain_blocked(&name);
}
