
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The SSRF guard: which addresses outbound requests may connect to.
 * Entity URLs come from strangers, so a follow request naming
 * http://169.254.169.254/ or a name resolving to 127.0.0.1 must not make
 * nginx reach inside the operator's network.  The check runs on the
 * address about to be connected, after DNS, so rebinding cannot get
 * around it; the operator opens ranges with "tent_outbound_allow".
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_guard.h"


/* special-purpose ranges (RFC 6890 and successors) */

static char  *ngx_http_tent_denied[] = {
    "0.0.0.0/8",            /* "this" network */
    "10.0.0.0/8",           /* private */
    "100.64.0.0/10",        /* carrier-grade NAT */
    "127.0.0.0/8",          /* loopback */
    "169.254.0.0/16",       /* link-local, cloud metadata */
    "172.16.0.0/12",        /* private */
    "192.0.0.0/24",         /* IETF protocol assignments */
    "192.0.2.0/24",         /* documentation */
    "192.88.99.0/24",       /* 6to4 relay anycast */
    "192.168.0.0/16",       /* private */
    "198.18.0.0/15",        /* benchmarking */
    "198.51.100.0/24",      /* documentation */
    "203.0.113.0/24",       /* documentation */
    "224.0.0.0/4",          /* multicast */
    "240.0.0.0/4",          /* reserved, broadcast */
#if (NGX_HAVE_INET6)
    "::/128",               /* unspecified */
    "::1/128",              /* loopback */
    "100::/64",             /* discard */
    "2001::/23",            /* IETF protocol assignments, Teredo */
    "2001:db8::/32",        /* documentation */
    "fc00::/7",             /* unique local */
    "fe80::/10",            /* link-local */
    "fec0::/10",            /* site-local */
    "ff00::/8",             /* multicast */
#endif
    NULL
};


ngx_array_t *
ngx_http_tent_guard_create(ngx_conf_t *cf)
{
    char         **s;
    ngx_str_t      text;
    ngx_cidr_t    *cidr;
    ngx_array_t   *denied;

    denied = ngx_array_create(cf->pool, 32, sizeof(ngx_cidr_t));
    if (denied == NULL) {
        return NULL;
    }

    for (s = ngx_http_tent_denied; *s; s++) {
        cidr = ngx_array_push(denied);
        if (cidr == NULL) {
            return NULL;
        }

        text.data = (u_char *) *s;
        text.len = ngx_strlen(*s);

        if (ngx_ptocidr(&text, cidr) != NGX_OK) {
            return NULL;
        }
    }

    return denied;
}


/* tent_outbound_allow CIDR ...; */

char *
ngx_http_tent_outbound_allow(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_tent_srv_conf_t *scf = conf;

    ngx_int_t    rc;
    ngx_str_t   *value;
    ngx_uint_t   i;
    ngx_cidr_t  *cidr;

    if (scf->outbound.allow == NGX_CONF_UNSET_PTR) {
        scf->outbound.allow = ngx_array_create(cf->pool, 4,
                                               sizeof(ngx_cidr_t));
        if (scf->outbound.allow == NULL) {
            return NGX_CONF_ERROR;
        }
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {
        cidr = ngx_array_push(scf->outbound.allow);
        if (cidr == NULL) {
            return NGX_CONF_ERROR;
        }

        rc = ngx_ptocidr(&value[i], cidr);

        if (rc == NGX_ERROR) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid address range \"%V\" in "
                               "\"tent_outbound_allow\", expected an "
                               "address or CIDR such as 127.0.0.0/8",
                               &value[i]);
            return NGX_CONF_ERROR;
        }

        if (rc == NGX_DONE) {
            ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                               "low address bits of %V are meaningless",
                               &value[i]);
        }
    }

    return NGX_CONF_OK;
}


/*
 * An IPv6 address that carries an IPv4 one the packets will really go
 * to: IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96) and 6to4
 * (2002::/16).  Mapped addresses (::ffff:a.b.c.d) ngx_cidr_match()
 * already compares as IPv4.
 */

#if (NGX_HAVE_INET6)

static ngx_int_t
ngx_http_tent_guard_embedded(struct sockaddr_in6 *sin6,
    struct sockaddr_in *sin)
{
    u_char  *p;

    p = sin6->sin6_addr.s6_addr;

    ngx_memzero(sin, sizeof(struct sockaddr_in));
    sin->sin_family = AF_INET;
    sin->sin_port = sin6->sin6_port;

    if (p[0] == 0x20 && p[1] == 0x02) {
        ngx_memcpy(&sin->sin_addr, p + 2, 4);
        return NGX_OK;
    }

    if (p[0] == 0x00 && p[1] == 0x64 && p[2] == 0xff && p[3] == 0x9b
        && ngx_memn2cmp(p + 4, (u_char *) "\0\0\0\0\0\0\0\0", 8, 8) == 0)
    {
        ngx_memcpy(&sin->sin_addr, p + 12, 4);
        return NGX_OK;
    }

    /* ::a.b.c.d, all but :: and ::1, which the IPv6 ranges cover */

    if (ngx_memn2cmp(p, (u_char *) "\0\0\0\0\0\0\0\0\0\0\0\0", 12, 12) == 0
        && ((p[12] | p[13] | p[14]) != 0 || p[15] > 1))
    {
        ngx_memcpy(&sin->sin_addr, p + 12, 4);
        return NGX_OK;
    }

    return NGX_DECLINED;
}

#endif


static ngx_int_t
ngx_http_tent_guard_one(ngx_array_t *denied, ngx_array_t *allow,
    struct sockaddr *sa)
{
    if (allow && ngx_cidr_match(sa, allow) == NGX_OK) {
        return NGX_OK;
    }

    if (ngx_cidr_match(sa, denied) == NGX_OK) {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/* NGX_OK: the address may be connected; NGX_DECLINED: refused */

ngx_int_t
ngx_http_tent_guard_check(ngx_array_t *denied, ngx_array_t *allow,
    struct sockaddr *sa)
{
#if (NGX_HAVE_INET6)
    struct sockaddr_in  sin;
#endif

    switch (sa->sa_family) {

    case AF_INET:
        return ngx_http_tent_guard_one(denied, allow, sa);

#if (NGX_HAVE_INET6)
    case AF_INET6:
        if (ngx_http_tent_guard_one(denied, allow, sa) != NGX_OK) {
            return NGX_DECLINED;
        }

        if (ngx_http_tent_guard_embedded((struct sockaddr_in6 *) sa, &sin)
            == NGX_OK)
        {
            return ngx_http_tent_guard_one(denied, allow,
                                           (struct sockaddr *) &sin);
        }

        return NGX_OK;
#endif

    default:
        return NGX_DECLINED;
    }
}
