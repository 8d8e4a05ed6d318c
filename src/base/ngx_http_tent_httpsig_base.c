
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * HTTP Signatures, what is signed and the signatures themselves: the
 * cavage signing string and the RFC 9421 signature base built from an
 * abstract request (so the inbox and the outbound fetch share them),
 * their check with an EVP_PKEY, the cavage signature we send, Digest
 * (RFC 3230) and Content-Digest (RFC 9530), the time window and the
 * actor's PEM key.  nginx core and OpenSSL only.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_httpsig.h"

#include <openssl/crypto.h>
#include <openssl/decoder.h>
#include <openssl/rsa.h>
#include <openssl/core_names.h>
#include <openssl/bn.h>


#define NGX_HTTP_TENT_HTTPSIG_SIGNED                                         \
    "(request-target) host date digest"


static ngx_int_t ngx_http_tent_httpsig_text(ngx_pool_t *pool,
    ngx_http_tent_httpsig_t *sig, ngx_http_tent_httpsig_request_t *req,
    ngx_str_t *out);
static ngx_int_t ngx_http_tent_httpsig_derived(ngx_pool_t *pool,
    ngx_str_t *name, ngx_http_tent_httpsig_request_t *req, ngx_str_t *value);
static ngx_int_t ngx_http_tent_httpsig_decode(ngx_str_t *src, u_char *dst,
    size_t size, size_t *len);
static ngx_int_t ngx_http_tent_httpsig_check(EVP_PKEY *key,
    const EVP_MD *md, ngx_uint_t pss, ngx_str_t *text, u_char *s, size_t len);
static u_char *ngx_http_tent_httpsig_time(u_char *p, time_t t);


/*
 * A header field's value: every field of the name, trimmed of white
 * space at both ends, joined by ", " in their order (cavage 2.3, RFC
 * 9421 2.1).  NGX_HTTP_TENT_HTTPSIG_ABSENT when there is none.
 */

ngx_int_t
ngx_http_tent_httpsig_header(ngx_pool_t *pool,
    ngx_http_tent_httpsig_request_t *req, ngx_str_t *name, ngx_str_t *value)
{
    u_char           *p, *v, *last;
    size_t            len;
    ngx_uint_t        i, pass;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    value->data = NULL;
    value->len = 0;
    len = 0;
    p = NULL;

    if (req->headers == NULL) {
        return NGX_HTTP_TENT_HTTPSIG_ABSENT;
    }

    /* pass 0 measures, pass 1 copies */

    for (pass = 0; pass < 2; pass++) {

        if (pass == 1) {
            if (value->data == NULL) {
                return NGX_HTTP_TENT_HTTPSIG_ABSENT;
            }

            if (len > NGX_HTTP_TENT_HTTPSIG_BASE_MAX) {
                return NGX_HTTP_TENT_HTTPSIG_TOO_LONG;
            }

            p = ngx_pnalloc(pool, len + 1);
            if (p == NULL) {
                return NGX_HTTP_TENT_HTTPSIG_NOMEM;
            }

            value->data = p;
            len = 0;
        }

        part = &req->headers->part;
        h = part->elts;

        for (i = 0; /* void */ ; i++) {

            if (i >= part->nelts) {
                if (part->next == NULL) {
                    break;
                }

                part = part->next;
                h = part->elts;
                i = 0;

                if (part->nelts == 0) {
                    continue;
                }
            }

            if (h[i].key.len != name->len
                || ngx_strncasecmp(h[i].key.data, name->data, name->len)
                   != 0)
            {
                continue;
            }

            v = h[i].value.data;
            last = v + h[i].value.len;

            while (v < last && (*v == ' ' || *v == '\t')) {
                v++;
            }

            while (last > v && (last[-1] == ' ' || last[-1] == '\t')) {
                last--;
            }

            if (pass == 0) {
                len += (value->data ? 2 : 0) + (last - v);
                value->data = (u_char *) "";
                continue;
            }

            if (len) {
                *p++ = ',';
                *p++ = ' ';
                len += 2;
            }

            p = ngx_cpymem(p, v, last - v);
            len += last - v;
        }
    }

    value->len = len;

    return NGX_HTTP_TENT_HTTPSIG_OK;
}


ngx_int_t
ngx_http_tent_httpsig_cavage_string(ngx_pool_t *pool,
    ngx_http_tent_httpsig_t *sig, ngx_http_tent_httpsig_request_t *req,
    ngx_str_t *out)
{
    if (sig->rfc9421) {
        return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
    }

    return ngx_http_tent_httpsig_text(pool, sig, req, out);
}


ngx_int_t
ngx_http_tent_httpsig_rfc9421_base(ngx_pool_t *pool,
    ngx_http_tent_httpsig_t *sig, ngx_http_tent_httpsig_request_t *req,
    ngx_str_t *out)
{
    if (!sig->rfc9421) {
        return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
    }

    return ngx_http_tent_httpsig_text(pool, sig, req, out);
}


/*
 * cavage: "name: value" lines joined by "\n", names lower-cased,
 * (request-target) the lower-cased method and the target as sent.
 * RFC 9421: "\"name\": value\n" per component, then the
 * "@signature-params" line, the parameters as Signature-Input sent
 * them (a verifier may use them as received: RFC 9421 3.2).
 */

static ngx_int_t
ngx_http_tent_httpsig_text(ngx_pool_t *pool, ngx_http_tent_httpsig_t *sig,
    ngx_http_tent_httpsig_request_t *req, ngx_str_t *out)
{
    u_char      *p, *last, *q;
    size_t       len;
    ngx_int_t    rc;
    ngx_str_t    values[NGX_HTTP_TENT_HTTPSIG_COVERED], *name;
    ngx_uint_t   i;

    len = 0;

    for (i = 0; i < sig->ncomponents; i++) {
        name = &sig->components[i];

        if (name->data[0] == '(' || name->data[0] == '@') {
            rc = ngx_http_tent_httpsig_derived(pool, name, req, &values[i]);

            if (rc == NGX_DECLINED) {
                if (name->len == sizeof("(created)") - 1
                    && ngx_strncasecmp(name->data, (u_char *) "(created)",
                                       name->len)
                       == 0)
                {
                    if (sig->created == -1) {
                        return NGX_HTTP_TENT_HTTPSIG_MISSING;
                    }

                    values[i].data = NULL;
                    values[i].len = NGX_TIME_T_LEN;

                } else {
                    if (sig->expires == -1) {
                        return NGX_HTTP_TENT_HTTPSIG_MISSING;
                    }

                    values[i].data = NULL;
                    values[i].len = NGX_TIME_T_LEN;
                }

            } else if (rc != NGX_HTTP_TENT_HTTPSIG_OK) {
                return rc;
            }

        } else {
            rc = ngx_http_tent_httpsig_header(pool, req, name, &values[i]);

            if (rc == NGX_HTTP_TENT_HTTPSIG_ABSENT && !sig->rfc9421
                && name->len == 4
                && ngx_strncasecmp(name->data, (u_char *) "host", 4) == 0
                && req->authority.len)
            {
                /* HTTP/2 carries the host as :authority */
                values[i] = req->authority;
                rc = NGX_HTTP_TENT_HTTPSIG_OK;
            }

            if (rc != NGX_HTTP_TENT_HTTPSIG_OK) {
                return rc;
            }
        }

        len += name->len + values[i].len + 5;
    }

    if (sig->rfc9421) {
        len += sizeof("\"@signature-params\": ") - 1 + sig->params.len;
    }

    if (len > NGX_HTTP_TENT_HTTPSIG_BASE_MAX) {
        return NGX_HTTP_TENT_HTTPSIG_TOO_LONG;
    }

    p = ngx_pnalloc(pool, len + 1);
    if (p == NULL) {
        return NGX_HTTP_TENT_HTTPSIG_NOMEM;
    }

    out->data = p;

    for (i = 0; i < sig->ncomponents; i++) {
        name = &sig->components[i];

        if (sig->rfc9421) {
            *p++ = '"';
            p = ngx_cpymem(p, name->data, name->len);
            *p++ = '"';

        } else {
            if (i) {
                *p++ = '\n';
            }

            for (q = name->data, last = q + name->len; q < last; q++) {
                *p++ = ngx_tolower(*q);
            }
        }

        *p++ = ':';
        *p++ = ' ';

        if (values[i].data == NULL) {
            p = ngx_http_tent_httpsig_time(p, name->data[1] == 'c'
                                              || name->data[1] == 'C'
                                              ? sig->created : sig->expires);

        } else {
            p = ngx_cpymem(p, values[i].data, values[i].len);
        }

        if (sig->rfc9421) {
            *p++ = '\n';
        }
    }

    if (sig->rfc9421) {
        p = ngx_cpymem(p, "\"@signature-params\": ",
                       sizeof("\"@signature-params\": ") - 1);
        p = ngx_cpymem(p, sig->params.data, sig->params.len);
    }

    out->len = p - out->data;

    return NGX_HTTP_TENT_HTTPSIG_OK;
}


/*
 * (request-target) and RFC 9421's derived components; NGX_DECLINED for
 * (created) and (expires), which the signature's parameters give.
 */

static ngx_int_t
ngx_http_tent_httpsig_derived(ngx_pool_t *pool, ngx_str_t *name,
    ngx_http_tent_httpsig_request_t *req, ngx_str_t *value)
{
    u_char  *p, *q, *query;
    size_t   len;

    query = ngx_strlchr(req->target.data, req->target.data + req->target.len,
                        '?');

#define ngx_http_tent_httpsig_is(s)                                          \
    (name->len == sizeof(s) - 1                                              \
     && ngx_strncasecmp(name->data, (u_char *) s, name->len) == 0)

    if (ngx_http_tent_httpsig_is("(request-target)")) {
        len = req->method.len + 1 + req->target.len;
        p = ngx_pnalloc(pool, len);
        if (p == NULL) {
            return NGX_HTTP_TENT_HTTPSIG_NOMEM;
        }

        value->data = p;
        value->len = len;

        for (q = req->method.data; q < req->method.data + req->method.len;
             q++)
        {
            *p++ = ngx_tolower(*q);
        }

        *p++ = ' ';
        ngx_memcpy(p, req->target.data, req->target.len);

        return NGX_HTTP_TENT_HTTPSIG_OK;
    }

    if (ngx_http_tent_httpsig_is("(created)")
        || ngx_http_tent_httpsig_is("(expires)"))
    {
        return NGX_DECLINED;
    }

    if (ngx_http_tent_httpsig_is("@method")) {
        *value = req->method;

    } else if (ngx_http_tent_httpsig_is("@authority")) {
        *value = req->authority;

    } else if (ngx_http_tent_httpsig_is("@request-target")) {
        *value = req->target;

    } else if (ngx_http_tent_httpsig_is("@path")) {
        value->data = req->target.data;
        value->len = query ? (size_t) (query - req->target.data)
                           : req->target.len;

        if (value->len == 0) {
            ngx_str_set(value, "/");
        }

    } else if (ngx_http_tent_httpsig_is("@query")) {
        if (query) {
            value->data = query;
            value->len = req->target.data + req->target.len - query;

        } else {
            ngx_str_set(value, "?");
        }

    } else if (ngx_http_tent_httpsig_is("@target-uri")) {
        len = req->scheme.len + 3 + req->authority.len + req->target.len;
        p = ngx_pnalloc(pool, len);
        if (p == NULL) {
            return NGX_HTTP_TENT_HTTPSIG_NOMEM;
        }

        value->data = p;
        value->len = len;

        p = ngx_cpymem(p, req->scheme.data, req->scheme.len);
        p = ngx_cpymem(p, "://", 3);
        p = ngx_cpymem(p, req->authority.data, req->authority.len);
        ngx_memcpy(p, req->target.data, req->target.len);

    } else {
        return NGX_HTTP_TENT_HTTPSIG_COMPONENT;
    }

#undef ngx_http_tent_httpsig_is

    if (value->data == NULL) {
        return NGX_HTTP_TENT_HTTPSIG_ABSENT;
    }

    return NGX_HTTP_TENT_HTTPSIG_OK;
}


/* builds what the signature covers and checks it with the key */

ngx_int_t
ngx_http_tent_httpsig_verify(ngx_pool_t *pool, ngx_http_tent_httpsig_t *sig,
    ngx_http_tent_httpsig_request_t *req, EVP_PKEY *key)
{
    ngx_int_t  rc;
    ngx_str_t  text;

    rc = ngx_http_tent_httpsig_text(pool, sig, req, &text);
    if (rc != NGX_HTTP_TENT_HTTPSIG_OK) {
        return rc;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, pool->log, 0,
                   "tent httpsig: keyId \"%V\", signed \"%V\"",
                   &sig->key_id, &text);

    return ngx_http_tent_httpsig_verify_text(sig, &text, key);
}


/*
 * The algorithm given must fit the key's type; none given (cavage
 * hs2019, or RFC 9421 without alg): the key decides, an RSA key
 * PKCS#1 v1.5 with SHA-256 (and, RFC 9421, PSS with SHA-512 as well).
 */

ngx_int_t
ngx_http_tent_httpsig_verify_text(ngx_http_tent_httpsig_t *sig,
    ngx_str_t *text, EVP_PKEY *key)
{
    int        type;
    size_t     len;
    ngx_int_t  rc;
    u_char     buf[NGX_HTTP_TENT_HTTPSIG_SIG_MAX];

    rc = ngx_http_tent_httpsig_decode(&sig->signature, buf, sizeof(buf),
                                      &len);
    if (rc != NGX_HTTP_TENT_HTTPSIG_OK) {
        return rc;
    }

    type = EVP_PKEY_get_base_id(key);

    if (type == EVP_PKEY_RSA || type == EVP_PKEY_RSA_PSS) {
        if (EVP_PKEY_get_bits(key) < 1024) {
            return NGX_HTTP_TENT_HTTPSIG_KEY;
        }

        switch (sig->alg) {

        case NGX_HTTP_TENT_HTTPSIG_ALG_RSA_PSS:
            return ngx_http_tent_httpsig_check(key, EVP_sha512(), 1, text,
                                               buf, len);

        case NGX_HTTP_TENT_HTTPSIG_ALG_ED25519:
            return NGX_HTTP_TENT_HTTPSIG_ALGORITHM;

        default:
            rc = ngx_http_tent_httpsig_check(key, EVP_sha256(), 0, text,
                                             buf, len);

            if (rc == NGX_HTTP_TENT_HTTPSIG_BAD && sig->rfc9421
                && sig->alg == NGX_HTTP_TENT_HTTPSIG_ALG_NONE)
            {
                rc = ngx_http_tent_httpsig_check(key, EVP_sha512(), 1, text,
                                                 buf, len);
            }

            return rc;
        }
    }

    if (type == EVP_PKEY_ED25519) {
        switch (sig->alg) {

        case NGX_HTTP_TENT_HTTPSIG_ALG_NONE:
        case NGX_HTTP_TENT_HTTPSIG_ALG_HS2019:
        case NGX_HTTP_TENT_HTTPSIG_ALG_ED25519:
            return ngx_http_tent_httpsig_check(key, NULL, 0, text, buf, len);

        default:
            return NGX_HTTP_TENT_HTTPSIG_ALGORITHM;
        }
    }

    return NGX_HTTP_TENT_HTTPSIG_KEY;
}


static ngx_int_t
ngx_http_tent_httpsig_check(EVP_PKEY *key, const EVP_MD *md, ngx_uint_t pss,
    ngx_str_t *text, u_char *s, size_t len)
{
    int            ok;
    EVP_MD_CTX    *ctx;
    EVP_PKEY_CTX  *pctx;

    ctx = EVP_MD_CTX_new();
    if (ctx == NULL) {
        return NGX_HTTP_TENT_HTTPSIG_NOMEM;
    }

    ok = 0;

    if (EVP_DigestVerifyInit(ctx, &pctx, md, NULL, key) != 1) {
        goto done;
    }

    if (pss
        && (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1
            || EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, 64) != 1
            || EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, md) != 1))
    {
        goto done;
    }

    if (!pss && md
        && EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) != 1)
    {
        goto done;
    }

    ok = (EVP_DigestVerify(ctx, s, len, text->data, text->len) == 1);

done:

    EVP_MD_CTX_free(ctx);

    /* a failed check leaves its reason on the thread's queue */
    ERR_clear_error();

    return ok ? NGX_HTTP_TENT_HTTPSIG_OK : NGX_HTTP_TENT_HTTPSIG_BAD;
}


/* strict base64: padded, no white space, at most "size" bytes decoded */

static ngx_int_t
ngx_http_tent_httpsig_decode(ngx_str_t *src, u_char *dst, size_t size,
    size_t *len)
{
    int         n;
    u_char      c, *p, *last;
    size_t      pad;
    ngx_uint_t  v;

    if (src->len == 0 || src->len % 4 || src->len / 4 * 3 > size) {
        return NGX_HTTP_TENT_HTTPSIG_BASE64;
    }

    last = src->data + src->len;
    pad = 0;

    for (p = src->data; p < last; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')
            || (*p >= '0' && *p <= '9') || *p == '+' || *p == '/')
        {
            if (pad) {
                return NGX_HTTP_TENT_HTTPSIG_BASE64;
            }

            continue;
        }

        if (*p != '=' || ++pad > 2 || last - p > 2) {
            return NGX_HTTP_TENT_HTTPSIG_BASE64;
        }
    }

    /*
     * One spelling a value: the bits padding drops must be zero (else a
     * signature had 4 or 16 spellings, each new to the replay set)
     */

    if (pad) {
        c = src->data[src->len - pad - 1];
        v = (c >= 'A' && c <= 'Z') ? c - 'A'
            : (c >= 'a' && c <= 'z') ? c - 'a' + 26
            : (c >= '0' && c <= '9') ? c - '0' + 52
            : (c == '+') ? 62 : 63;

        if (v & (pad == 1 ? 0x03 : 0x0f)) {
            return NGX_HTTP_TENT_HTTPSIG_BASE64;
        }
    }

    n = EVP_DecodeBlock(dst, src->data, (int) src->len);
    if (n < 0 || (size_t) n < pad) {
        return NGX_HTTP_TENT_HTTPSIG_BASE64;
    }

    *len = n - pad;

    return NGX_HTTP_TENT_HTTPSIG_OK;
}


/*
 * Signature: keyId="...",algorithm="rsa-sha256",headers="(request-target)
 * host date digest",signature="..." over the request (digest only when
 * the request has one: a GET has no body), with an RSA key: what every
 * ActivityPub server accepts.
 */

ngx_int_t
ngx_http_tent_httpsig_sign_cavage(ngx_pool_t *pool,
    ngx_http_tent_httpsig_request_t *req, ngx_str_t *key_id, EVP_PKEY *key,
    ngx_str_t *value)
{
    u_char                   *p, *s, *q;
    size_t                    slen;
    ngx_int_t                 rc;
    ngx_str_t                 text, digest, headers;
    EVP_MD_CTX               *ctx;
    EVP_PKEY_CTX             *pctx;
    ngx_http_tent_httpsig_t   sig;

    if (key_id->len == 0 || key_id->len > 1024) {
        return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
    }

    for (q = key_id->data; q < key_id->data + key_id->len; q++) {
        if (*q <= 0x20 || *q >= 0x7f || *q == '"' || *q == '\\') {
            return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
        }
    }

    if (EVP_PKEY_get_base_id(key) != EVP_PKEY_RSA) {
        return NGX_HTTP_TENT_HTTPSIG_KEY;
    }

    ngx_str_set(&digest, "digest");
    ngx_str_set(&headers, NGX_HTTP_TENT_HTTPSIG_SIGNED);

    if (ngx_http_tent_httpsig_header(pool, req, &digest, &text)
        == NGX_HTTP_TENT_HTTPSIG_ABSENT)
    {
        headers.len -= sizeof(" digest") - 1;
    }

    ngx_memzero(&sig, sizeof(ngx_http_tent_httpsig_t));
    sig.created = -1;
    sig.expires = -1;

    ngx_str_set(&sig.components[0], "(request-target)");
    ngx_str_set(&sig.components[1], "host");
    ngx_str_set(&sig.components[2], "date");
    ngx_str_set(&sig.components[3], "digest");
    sig.ncomponents = (headers.len == sizeof(NGX_HTTP_TENT_HTTPSIG_SIGNED) - 1)
                      ? 4 : 3;

    rc = ngx_http_tent_httpsig_text(pool, &sig, req, &text);
    if (rc != NGX_HTTP_TENT_HTTPSIG_OK) {
        return rc;
    }

    slen = EVP_PKEY_get_size(key);

    if (slen == 0 || slen > NGX_HTTP_TENT_HTTPSIG_SIG_MAX) {
        return NGX_HTTP_TENT_HTTPSIG_KEY;
    }

    s = ngx_pnalloc(pool, slen);
    if (s == NULL) {
        return NGX_HTTP_TENT_HTTPSIG_NOMEM;
    }

    ctx = EVP_MD_CTX_new();
    if (ctx == NULL) {
        return NGX_HTTP_TENT_HTTPSIG_NOMEM;
    }

    rc = NGX_HTTP_TENT_HTTPSIG_KEY;

    if (EVP_DigestSignInit(ctx, &pctx, EVP_sha256(), NULL, key) == 1
        && EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) == 1
        && EVP_DigestSign(ctx, s, &slen, text.data, text.len) == 1)
    {
        rc = NGX_HTTP_TENT_HTTPSIG_OK;
    }

    EVP_MD_CTX_free(ctx);
    ERR_clear_error();

    if (rc != NGX_HTTP_TENT_HTTPSIG_OK) {
        return rc;
    }

    value->len = sizeof("keyId=\"\",algorithm=\"rsa-sha256\",headers=\"\","
                        "signature=\"\"") - 1
                 + key_id->len + headers.len + (slen + 2) / 3 * 4;

    p = ngx_pnalloc(pool, value->len + 1);
    if (p == NULL) {
        return NGX_HTTP_TENT_HTTPSIG_NOMEM;
    }

    value->data = p;

    p = ngx_cpymem(p, "keyId=\"", sizeof("keyId=\"") - 1);
    p = ngx_cpymem(p, key_id->data, key_id->len);
    p = ngx_cpymem(p, "\",algorithm=\"rsa-sha256\",headers=\"",
                   sizeof("\",algorithm=\"rsa-sha256\",headers=\"") - 1);
    p = ngx_cpymem(p, headers.data, headers.len);
    p = ngx_cpymem(p, "\",signature=\"", sizeof("\",signature=\"") - 1);
    p += EVP_EncodeBlock(p, s, (int) slen);
    *p++ = '"';

    value->len = p - value->data;

    return NGX_HTTP_TENT_HTTPSIG_OK;
}


/*
 * The body's digest as a header value: type 0 "SHA-256=<base64>"
 * (Digest, RFC 3230), 1 "sha-256=:<base64>:" and 2 "sha-512=:...:"
 * (Content-Digest, RFC 9530).
 */

ngx_int_t
ngx_http_tent_httpsig_digest(ngx_pool_t *pool, ngx_uint_t type,
    ngx_str_t *body, ngx_str_t *value)
{
    u_char        *p, md[EVP_MAX_MD_SIZE];
    unsigned int   n;
    const EVP_MD  *alg;

    alg = (type == 2) ? EVP_sha512() : EVP_sha256();

    if (EVP_Digest(body->data, body->len, md, &n, alg, NULL) != 1) {
        ERR_clear_error();
        return NGX_HTTP_TENT_HTTPSIG_NOMEM;
    }

    p = ngx_pnalloc(pool, sizeof("sha-512=::") + (n + 2) / 3 * 4);
    if (p == NULL) {
        return NGX_HTTP_TENT_HTTPSIG_NOMEM;
    }

    value->data = p;

    if (type == 0) {
        p = ngx_cpymem(p, "SHA-256=", 8);

    } else {
        p = ngx_cpymem(p, type == 2 ? "sha-512=:" : "sha-256=:", 9);
    }

    p += EVP_EncodeBlock(p, md, (int) n);

    if (type) {
        *p++ = ':';
    }

    value->len = p - value->data;

    return NGX_HTTP_TENT_HTTPSIG_OK;
}


/*
 * A Digest (rfc9530 0: "SHA-256=b64, SHA-512=b64") or Content-Digest
 * (1: "sha-256=:b64:, sha-512=:b64:") against the body: at least one
 * SHA-256 or SHA-512 entry, each of them right; other algorithms (MD5,
 * SHA, unixsum) are ignored, so never enough on their own.
 */

ngx_int_t
ngx_http_tent_httpsig_digest_check(ngx_str_t *value, ngx_uint_t rfc9530,
    ngx_str_t *body)
{
    u_char        *p, *last, *name, *v, md[EVP_MAX_MD_SIZE];
    u_char         buf[EVP_MAX_MD_SIZE + 3];
    size_t         nlen, len;
    ngx_str_t      b64;
    ngx_uint_t     known;
    unsigned int   n;
    const EVP_MD  *alg;

    if (value->len > NGX_HTTP_TENT_HTTPSIG_HEADER_MAX) {
        return NGX_HTTP_TENT_HTTPSIG_TOO_LONG;
    }

    p = value->data;
    last = p + value->len;
    known = 0;

    for ( ;; ) {
        while (p < last && (*p == ' ' || *p == '\t' || *p == ',')) {
            p++;
        }

        if (p == last) {
            break;
        }

        name = p;

        while (p < last && *p != '=' && *p != ',') {
            p++;
        }

        nlen = p - name;

        if (p == last || *p != '=') {
            return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
        }

        v = ++p;

        if (rfc9530) {
            if (p == last || *p != ':') {
                return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
            }

            v = ++p;

            while (p < last && *p != ':') {
                p++;
            }

            if (p == last) {
                return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
            }

            b64.data = v;
            b64.len = p++ - v;

        } else {
            while (p < last && *p != ',' && *p != ' ' && *p != '\t') {
                p++;
            }

            b64.data = v;
            b64.len = p - v;
        }

        if (nlen == 7 && ngx_strncasecmp(name, (u_char *) "sha-256", 7) == 0)
        {
            alg = EVP_sha256();

        } else if (nlen == 7
                   && ngx_strncasecmp(name, (u_char *) "sha-512", 7) == 0)
        {
            alg = EVP_sha512();

        } else {
            continue;
        }

        if (ngx_http_tent_httpsig_decode(&b64, buf, sizeof(buf), &len)
            != NGX_HTTP_TENT_HTTPSIG_OK)
        {
            return NGX_HTTP_TENT_HTTPSIG_DIGEST;
        }

        if (EVP_Digest(body->data, body->len, md, &n, alg, NULL) != 1) {
            ERR_clear_error();
            return NGX_HTTP_TENT_HTTPSIG_NOMEM;
        }

        if (len != n || CRYPTO_memcmp(md, buf, n) != 0) {
            return NGX_HTTP_TENT_HTTPSIG_DIGEST;
        }

        known++;
    }

    return known ? NGX_HTTP_TENT_HTTPSIG_OK : NGX_HTTP_TENT_HTTPSIG_DIGEST;
}


/* "t" no more than "past" seconds before "now", "future" after it */

ngx_int_t
ngx_http_tent_httpsig_time_check(time_t t, time_t now, time_t past,
    time_t future)
{
    if (t < now - past || t > now + future) {
        return NGX_HTTP_TENT_HTTPSIG_TIME;
    }

    return NGX_HTTP_TENT_HTTPSIG_OK;
}


/* a Date header (any HTTP-date form) inside the window */

ngx_int_t
ngx_http_tent_httpsig_date_check(ngx_str_t *date, time_t now, time_t past,
    time_t future)
{
    time_t  t;

    if (date->len == 0 || date->len > 64) {
        return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
    }

    t = ngx_parse_http_time(date->data, date->len);
    if (t == NGX_ERROR) {
        return NGX_HTTP_TENT_HTTPSIG_SYNTAX;
    }

    return ngx_http_tent_httpsig_time_check(t, now, past, future);
}


/*
 * An actor's publicKeyPem (SubjectPublicKeyInfo, or PKCS#1 "RSA PUBLIC
 * KEY"), at most ..._PEM_MAX bytes: an RSA key of 1024 to 8192 bits or
 * an Ed25519 key; anything else NULL.  The caller frees it.
 */

EVP_PKEY *
ngx_http_tent_httpsig_pem_key(ngx_str_t *pem)
{
    int                 type, bits;
    BIGNUM             *e;
    size_t              len;
    EVP_PKEY           *key;
    const u_char       *data;
    OSSL_DECODER_CTX   *dctx;

    if (pem->len == 0 || pem->len > NGX_HTTP_TENT_HTTPSIG_PEM_MAX) {
        return NULL;
    }

    key = NULL;

    dctx = OSSL_DECODER_CTX_new_for_pkey(&key, "PEM", NULL, NULL,
                                         EVP_PKEY_PUBLIC_KEY, NULL, NULL);
    if (dctx == NULL) {
        ERR_clear_error();
        return NULL;
    }

    data = pem->data;
    len = pem->len;

    if (OSSL_DECODER_from_data(dctx, &data, &len) != 1) {
        key = NULL;
    }

    OSSL_DECODER_CTX_free(dctx);
    ERR_clear_error();

    if (key == NULL) {
        return NULL;
    }

    type = EVP_PKEY_get_base_id(key);
    bits = EVP_PKEY_get_bits(key);

    if (type == EVP_PKEY_ED25519) {
        return key;
    }

    /*
     * RSA of 1024 to 8192 bits, its public exponent at most 32 bits
     * (65537 everywhere): a verification with an exponent as long as
     * the modulus costs as much as a signature, milliseconds of the
     * event loop for each junk signature naming the key
     */

    e = NULL;

    if ((type == EVP_PKEY_RSA || type == EVP_PKEY_RSA_PSS)
        && bits >= 1024 && bits <= 8192
        && EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_E, &e) == 1
        && BN_num_bits(e) <= 32)
    {
        BN_free(e);
        return key;
    }

    BN_free(e);
    ERR_clear_error();

    EVP_PKEY_free(key);

    return NULL;
}


static u_char *
ngx_http_tent_httpsig_time(u_char *p, time_t t)
{
    u_char   buf[NGX_TIME_T_LEN];
    u_char  *q;

    q = buf + sizeof(buf);

    do {
        *--q = (u_char) ('0' + t % 10);
        t /= 10;
    } while (t);

    return ngx_cpymem(p, q, buf + sizeof(buf) - q);
}
