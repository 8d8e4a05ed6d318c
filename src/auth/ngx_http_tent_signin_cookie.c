
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The owner's sign-in on a provisioning server (docs/auth.md, "Sign-in
 * per tenant"): its cookies, the session and the known device.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_signin.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>


/*
 * The cookies: the session (12 hours) and the known device (90 days),
 * each "<expiry>.<base64url HMAC-SHA256>" over its kind, the entity, the
 * expiry and the stored hash.  An https:// entity with no path has them
 * as "__Host-" cookies (Path=/, Secure, no Domain): a page of another
 * host of the domain (another tenant's) cannot set nor shadow them.
 */

typedef struct {
    const char                     *label;
    const char                     *name;      /* "__Host-" + name */
    time_t                          ttl;
    const char                     *same_site;
} ngx_http_tent_cookie_kind_t;


static ngx_http_tent_cookie_kind_t  ngx_http_tent_cookie_kinds[] = {
    { "tent session", "__Host-tent_session", NGX_HTTP_TENT_SESSION_TIME,
      "Lax" },
    { "tent device", "__Host-tent_device", NGX_HTTP_TENT_DEVICE_TIME,
      "Lax" },
};


static ngx_uint_t
ngx_http_tent_cookie_secure(ngx_http_request_t *r, ngx_str_t *entity)
{
    return (entity->len > 8 && ngx_strncmp(entity->data, "https://", 8) == 0)
#if (NGX_HTTP_SSL)
           || r->connection->ssl
#endif
           ;
}


/* "__Host-": an https:// entity that is a whole host, "https://h[:p][/]" */

static ngx_uint_t
ngx_http_tent_cookie_host(ngx_str_t *entity)
{
    u_char  *slash;

    if (entity->len <= 8 || ngx_strncmp(entity->data, "https://", 8) != 0) {
        return 0;
    }

    slash = ngx_strlchr(entity->data + 8, entity->data + entity->len, '/');

    return slash == NULL || slash == entity->data + entity->len - 1;
}


static void
ngx_http_tent_cookie_name(ngx_str_t *entity, ngx_uint_t kind,
    ngx_str_t *name)
{
    name->data = (u_char *) ngx_http_tent_cookie_kinds[kind].name;
    name->len = ngx_strlen(name->data);

    if (!ngx_http_tent_cookie_host(entity)) {
        name->data += sizeof("__Host-") - 1;
        name->len -= sizeof("__Host-") - 1;
    }
}


static ngx_int_t
ngx_http_tent_session_mac(ngx_pool_t *pool, ngx_uint_t kind,
    ngx_str_t *secret, ngx_str_t *entity, ngx_str_t *stored, time_t expiry,
    ngx_str_t *out)
{
    u_char        *p, digest[EVP_MAX_MD_SIZE];
    unsigned int   dlen;
    ngx_str_t      text, src, dst;

    text.len = sizeof("tent session\n\n\n") - 1 + entity->len + NGX_TIME_T_LEN
               + stored->len;
    text.data = ngx_pnalloc(pool, text.len);
    if (text.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(text.data, "%s\n%V\n%T\n%V",
                    ngx_http_tent_cookie_kinds[kind].label, entity, expiry,
                    stored);
    text.len = p - text.data;

    if (HMAC(EVP_sha256(), secret->data, (int) secret->len, text.data,
             text.len, digest, &dlen)
        == NULL)
    {
        return NGX_ERROR;
    }

    out->data = ngx_pnalloc(pool, NGX_TIME_T_LEN + 1
                                  + ngx_base64_encoded_length(dlen));
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(out->data, "%T.", expiry);

    src.data = digest;
    src.len = dlen;
    dst.data = p;
    ngx_encode_base64url(&dst, &src);

    out->len = p - out->data + dst.len;

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_session_valid(ngx_http_request_t *r, ngx_uint_t kind,
    ngx_str_t *secret, ngx_str_t *entity, ngx_str_t *stored,
    ngx_str_t *value)
{
    u_char     *dot;
    time_t      expiry;
    ngx_str_t   name, given, mac;

    ngx_http_tent_cookie_name(entity, kind, &name);

    if (ngx_http_parse_multi_header_lines(&r->headers_in.cookies, &name,
                                          &given)
        == NGX_DECLINED
        || given.len > 128)
    {
        return NGX_DECLINED;
    }

    dot = ngx_strlchr(given.data, given.data + given.len, '.');
    expiry = dot ? ngx_atotm(given.data, dot - given.data) : NGX_ERROR;

    if (expiry == NGX_ERROR || expiry < ngx_time()
        || expiry > ngx_time() + ngx_http_tent_cookie_kinds[kind].ttl
        || ngx_http_tent_session_mac(r->pool, kind, secret, entity, stored,
                                     expiry, &mac)
           != NGX_OK
        || mac.len != given.len
        || CRYPTO_memcmp(mac.data, given.data, mac.len) != 0)
    {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent sign-in: no valid %V for \"%V\"", &name,
                       entity);
        return NGX_DECLINED;
    }

    if (value) {
        *value = given;
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_session_set(ngx_http_request_t *r, ngx_uint_t kind,
    ngx_str_t *secret, ngx_str_t *entity, ngx_str_t *stored,
    ngx_str_t *value)
{
    u_char           *p;
    size_t            len;
    ngx_str_t         name, path;
    ngx_uint_t        secure;
    ngx_table_elt_t  *h;

    if (ngx_http_tent_session_mac(r->pool, kind, secret, entity, stored,
                                  ngx_time()
                                  + ngx_http_tent_cookie_kinds[kind].ttl,
                                  value)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    secure = ngx_http_tent_cookie_secure(r, entity);
    ngx_http_tent_cookie_name(entity, kind, &name);

    /* the page's own, or the host's when "__Host-" asks for Path=/ */

    if (ngx_http_tent_cookie_host(entity)) {
        ngx_str_set(&path, "/");

    } else {
        path = r->uri;
    }

    len = sizeof("=; Path=; Max-Age=; HttpOnly; SameSite=Strict; Secure")
          - 1 + name.len + value->len + path.len + NGX_TIME_T_LEN;

    p = ngx_pnalloc(r->pool, len);
    h = ngx_list_push(&r->headers_out.headers);

    if (p == NULL || h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Set-Cookie");
    h->value.data = p;

    p = ngx_sprintf(p, "%V=%V; Path=%V; Max-Age=%T; HttpOnly; SameSite=%s",
                    &name, value, &path, ngx_http_tent_cookie_kinds[kind].ttl,
                    ngx_http_tent_cookie_kinds[kind].same_site);

    if (secure) {
        p = ngx_cpymem(p, "; Secure", sizeof("; Secure") - 1);
    }

    h->value.len = p - h->value.data;

    return NGX_OK;
}
