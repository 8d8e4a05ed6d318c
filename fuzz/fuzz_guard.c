
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The SSRF guard (src/outbound/ngx_http_tent_guard.c): ngx_http_tent_guard_check()
 * over arbitrary IPv4 and IPv6 socket addresses, with and without
 * "tent_outbound_allow" ranges.  Checked against an independent model:
 * an address inside a denied range is refused unless an allowed range
 * holds it; outside every denied range it is let through; an IPv6
 * address that carries an IPv4 one (mapped ::ffff:a.b.c.d, NAT64
 * 64:ff9b::/96, 6to4 2002::/16, IPv4-compatible ::a.b.c.d) is refused
 * whenever its IPv4 address is.
 * Input: byte 0 the family and which allow list, then the address bytes.
 */


#include "../src/outbound/ngx_http_tent_guard.c"

#include "fuzz.h"


static ngx_array_t  *denied;
static ngx_array_t  *allows[4];

static char  *allow_text[4][4] = {
    { NULL },
    { "127.0.0.0/8", "::1", NULL },
    { "10.1.2.0/24", "fd00::/8", "2002:a01:200::/40", NULL },
    { "0.0.0.0/0", NULL },
};


static ngx_array_t *
ngx_fuzz_cidrs(ngx_pool_t *pool, char **text)
{
    ngx_str_t     s;
    ngx_cidr_t   *cidr;
    ngx_array_t  *a;

    a = ngx_array_create(pool, 4, sizeof(ngx_cidr_t));
    if (a == NULL) {
        abort();
    }

    for ( /* void */ ; *text; text++) {
        cidr = ngx_array_push(a);
        if (cidr == NULL) {
            abort();
        }

        s.data = (u_char *) *text;
        s.len = ngx_strlen(*text);

        if (ngx_ptocidr(&s, cidr) == NGX_ERROR) {
            abort();
        }
    }

    return a;
}


static void
ngx_fuzz_guard_init(void)
{
    ngx_uint_t   i;
    ngx_pool_t  *pool;
    ngx_conf_t   cf;

    pool = ngx_create_pool(4096, &ngx_fuzz_log);
    if (pool == NULL) {
        abort();
    }

    ngx_memzero(&cf, sizeof(ngx_conf_t));
    cf.pool = pool;
    cf.log = &ngx_fuzz_log;

    denied = ngx_http_tent_guard_create(&cf);
    if (denied == NULL) {
        abort();
    }

    for (i = 1; i < 4; i++) {
        allows[i] = ngx_fuzz_cidrs(pool, allow_text[i]);
    }
}


/* the model: a plain prefix match, written apart from ngx_cidr_match() */

static ngx_uint_t
ngx_fuzz_in(const u_char *addr, ngx_uint_t family, char **ranges)
{
    u_char       buf[16];
    char        *slash, text[64];
    ngx_uint_t   bits, n, i, len;

    for ( /* void */ ; *ranges; ranges++) {
        slash = strchr(*ranges, '/');
        len = slash ? (ngx_uint_t) (slash - *ranges) : strlen(*ranges);
        ngx_memcpy(text, *ranges, len);
        text[len] = '\0';

        if (inet_pton(AF_INET, text, buf) == 1) {
            if (family != AF_INET) {
                continue;
            }

            n = 32;

        } else if (inet_pton(AF_INET6, text, buf) == 1) {
            if (family != AF_INET6) {
                continue;
            }

            n = 128;

        } else {
            abort();
        }

        bits = slash ? (ngx_uint_t) atoi(slash + 1) : n;

        for (i = 0; i < bits; i++) {
            if (((addr[i / 8] ^ buf[i / 8]) >> (7 - i % 8)) & 1) {
                break;
            }
        }

        if (i == bits) {
            return 1;
        }
    }

    return 0;
}


static ngx_uint_t
ngx_fuzz_allowed_v4(const u_char *a, ngx_uint_t which)
{
    if (which && ngx_fuzz_in(a, AF_INET, allow_text[which])) {
        return 1;
    }

    return !ngx_fuzz_in(a, AF_INET, ngx_http_tent_denied);
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char                *p;
    ngx_int_t              rc, rc4;
    ngx_uint_t             which, model;
    struct sockaddr_in     sin;
    struct sockaddr_in6    sin6;
    static ngx_uint_t      inited;

    if (!inited) {
        ngx_fuzz_guard_init();
        inited = 1;
    }

    if (size < 1) {
        return 0;
    }

    which = (data[0] >> 1) & 3;

    if ((data[0] & 1) == 0) {
        if (size < 5) {
            return 0;
        }

        ngx_memzero(&sin, sizeof(struct sockaddr_in));
        sin.sin_family = AF_INET;
        sin.sin_port = htons(80);
        ngx_memcpy(&sin.sin_addr, data + 1, 4);

        rc = ngx_http_tent_guard_check(denied, allows[which],
                                       (struct sockaddr *) &sin);

        ngx_fuzz_assert(rc == NGX_OK || rc == NGX_DECLINED);
        ngx_fuzz_assert((rc == NGX_OK)
                        == ngx_fuzz_allowed_v4(data + 1, which));

        /* its mapped form agrees */

        ngx_memzero(&sin6, sizeof(struct sockaddr_in6));
        sin6.sin6_family = AF_INET6;
        sin6.sin6_port = htons(80);
        p = sin6.sin6_addr.s6_addr;
        p[10] = 0xff;
        p[11] = 0xff;
        ngx_memcpy(p + 12, data + 1, 4);

        rc4 = ngx_http_tent_guard_check(denied, allows[which],
                                        (struct sockaddr *) &sin6);
        ngx_fuzz_assert(rc4 == rc);

        return 0;
    }

    if (size < 17) {
        return 0;
    }

    ngx_memzero(&sin6, sizeof(struct sockaddr_in6));
    sin6.sin6_family = AF_INET6;
    sin6.sin6_port = htons(443);
    ngx_memcpy(sin6.sin6_addr.s6_addr, data + 1, 16);
    p = sin6.sin6_addr.s6_addr;

    rc = ngx_http_tent_guard_check(denied, allows[which],
                                   (struct sockaddr *) &sin6);

    ngx_fuzz_assert(rc == NGX_OK || rc == NGX_DECLINED);

    /* an IPv6 address in a denied range and in no allowed one */

    if (ngx_fuzz_in(p, AF_INET6, ngx_http_tent_denied)
        && !(which && ngx_fuzz_in(p, AF_INET6, allow_text[which])))
    {
        ngx_fuzz_assert(rc == NGX_DECLINED);
    }

    /* the IPv4 address it carries: refused when that one is */

    model = 1;

    if (ngx_memcmp(p, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0) {
        model = ngx_fuzz_allowed_v4(p + 12, which);
        ngx_fuzz_assert((rc == NGX_OK) == model);

    } else if (ngx_memcmp(p, "\0\x64\xff\x9b\0\0\0\0\0\0\0\0", 12) == 0
               || (ngx_memcmp(p, "\0\0\0\0\0\0\0\0\0\0\0\0", 12) == 0
                   && !(p[12] == 0 && p[13] == 0 && p[14] == 0
                        && p[15] <= 1)))
    {
        model = ngx_fuzz_allowed_v4(p + 12, which);

    } else if (p[0] == 0x20 && p[1] == 0x02) {
        model = ngx_fuzz_allowed_v4(p + 2, which);
    }

    if (!model) {
        ngx_fuzz_assert(rc == NGX_DECLINED);
    }

    return 0;
}
