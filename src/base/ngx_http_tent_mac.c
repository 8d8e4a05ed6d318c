
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * HTTP MAC (draft-ietf-oauth-v2-http-mac-01, as Tent 0.2 uses it): the
 * Authorization header's fields, the normalized request string, the
 * HMAC over it, its check and the header a signed request sends.  One
 * implementation for both directions: auth.c verifies what clients and
 * other servers send, fetch.c signs what we send, so the two cannot
 * drift apart.  Plain strings in: no request, context or store here.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_mac.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>


static EVP_MAC_CTX *ngx_http_tent_mac_ctx(ngx_uint_t sha1);
static void ngx_http_tent_mac_free(void *data);


static EVP_MAC      *ngx_http_tent_hmac;
static EVP_MAC_CTX  *ngx_http_tent_hmac_ctx[2];


/*
 * Authorization: MAC id="...", ts="...", nonce="...", mac="..."[, ext=""]
 * Values are quoted and may not contain quotes or backslashes.
 */

ngx_int_t
ngx_http_tent_mac_parse(ngx_str_t *header, ngx_http_tent_mac_header_t *h)
{
    u_char     *p, *last, *name, *value;
    size_t      nlen;
    ngx_str_t  *dst;

    p = header->data;
    last = p + header->len;

    if (header->len < 4 || ngx_strncasecmp(p, (u_char *) "MAC ", 4) != 0) {
        return NGX_DECLINED;
    }

    p += 4;

    ngx_str_null(&h->id);
    ngx_str_null(&h->ts);
    ngx_str_null(&h->nonce);
    ngx_str_null(&h->mac);
    ngx_str_null(&h->ext);

    for ( ;; ) {
        while (p < last && (*p == ' ' || *p == ',' || *p == '\t')) {
            p++;
        }

        if (p == last) {
            break;
        }

        name = p;

        while (p < last && *p >= 'a' && *p <= 'z') {
            p++;
        }

        nlen = p - name;

        if (nlen == 0 || last - p < 2 || p[0] != '=' || p[1] != '"') {
            return NGX_ERROR;
        }

        p += 2;
        value = p;

        while (p < last && *p != '"') {
            if (*p == '\\' || *p < 0x20 || *p == 0x7f) {
                return NGX_ERROR;
            }

            p++;
        }

        if (p == last || p - value > NGX_HTTP_TENT_MAC_FIELD_MAX) {
            return NGX_ERROR;
        }

        if (nlen == 2 && ngx_strncmp(name, "id", 2) == 0) {
            dst = &h->id;

        } else if (nlen == 2 && ngx_strncmp(name, "ts", 2) == 0) {
            dst = &h->ts;

        } else if (nlen == 5 && ngx_strncmp(name, "nonce", 5) == 0) {
            dst = &h->nonce;

        } else if (nlen == 3 && ngx_strncmp(name, "mac", 3) == 0) {
            dst = &h->mac;

        } else if (nlen == 3 && ngx_strncmp(name, "ext", 3) == 0) {
            dst = &h->ext;

        } else {
            dst = NULL;
        }

        if (dst) {
            if (dst->data) {
                /* a field given twice */
                return NGX_ERROR;
            }

            dst->data = value;
            dst->len = p - value;
        }

        p++;
    }

    if (h->id.len == 0 || h->ts.len == 0 || h->nonce.len == 0
        || h->mac.len == 0)
    {
        return NGX_ERROR;
    }

    for (p = h->ts.data; p < h->ts.data + h->ts.len; p++) {
        if (*p < '0' || *p > '9') {
            return NGX_ERROR;
        }
    }

    if (h->ts.len > 12) {
        return NGX_ERROR;
    }

    if (h->ext.data == NULL) {
        ngx_str_set(&h->ext, "");
    }

    return NGX_OK;
}


/*
 * ts \n nonce \n METHOD \n request-uri \n host \n port \n ext \n: the
 * caller gives the request-uri exactly as sent, and the host and port
 * the client used.
 */

ngx_int_t
ngx_http_tent_mac_text(ngx_pool_t *pool, ngx_http_tent_mac_request_t *req,
    ngx_str_t *text)
{
    text->len = req->ts.len + req->nonce.len + req->method.len
                + req->uri.len + req->host.len + req->port.len
                + req->ext.len + 7;

    text->data = ngx_pnalloc(pool, text->len);
    if (text->data == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(text->data, "%V\n%V\n%V\n%V\n%V\n%V\n%V\n",
                &req->ts, &req->nonce, &req->method, &req->uri,
                &req->host, &req->port, &req->ext);

    return NGX_OK;
}


/* base64(HMAC(algorithm, key, text)); out has NGX_HTTP_TENT_MAC_LEN bytes */

ngx_int_t
ngx_http_tent_mac_compute(ngx_str_t *algorithm, ngx_str_t *key,
    ngx_str_t *text, u_char *out, size_t *out_len)
{
    u_char         digest[EVP_MAX_MD_SIZE];
    size_t         dlen;
    unsigned int   len;
    ngx_str_t      src, dst;
    EVP_MAC_CTX   *ctx;
    const EVP_MD  *md;

    if (algorithm->len == sizeof("hmac-sha-256") - 1
        && ngx_strncmp(algorithm->data, "hmac-sha-256", algorithm->len) == 0)
    {
        md = EVP_sha256();

    } else if (algorithm->len == sizeof("hmac-sha-1") - 1
               && ngx_strncmp(algorithm->data, "hmac-sha-1",
                              algorithm->len) == 0)
    {
        md = EVP_sha1();

    } else {
        return NGX_ERROR;
    }

    /*
     * A key of no bytes (or no pointer) is never keyed again on the kept
     * context (a NULL or empty key there means "the previous key"):
     * HMAC() it is.
     */

    ctx = (key->len && key->data) ? ngx_http_tent_mac_ctx(md == EVP_sha1())
                                  : NULL;

    if (ctx != NULL
        && EVP_MAC_init(ctx, key->data, key->len, NULL) == 1
        && EVP_MAC_update(ctx, text->data, text->len) == 1
        && EVP_MAC_final(ctx, digest, &dlen, sizeof(digest)) == 1)
    {
        len = (unsigned int) dlen;

    } else if (HMAC(md, key->data, (int) key->len, text->data, text->len,
                    digest, &len)
               == NULL)
    {
        return NGX_ERROR;
    }

    src.data = digest;
    src.len = len;
    dst.data = out;

    ngx_encode_base64(&dst, &src);

    *out_len = dst.len;

    return NGX_OK;
}


/*
 * The process's HMAC context of SHA-256 (or SHA-1), made once and keyed
 * again for each MAC: HMAC() fetches the algorithm and the digest by
 * name at every call (OpenSSL 3), a twentieth of a delivery's event loop
 * in perf.  Only the event loop signs and checks (no pool thread), so
 * one context each is enough.  NULL: HMAC() does it.
 */

static EVP_MAC_CTX *
ngx_http_tent_mac_ctx(ngx_uint_t sha1)
{
    EVP_MAC_CTX         *c;
    OSSL_PARAM           params[2];
    ngx_pool_cleanup_t  *cln;

    if (ngx_http_tent_hmac_ctx[sha1]) {
        return ngx_http_tent_hmac_ctx[sha1];
    }

    if (ngx_http_tent_hmac == NULL) {

        /*
         * Freed with the cycle's pool, before the module is unloaded (its
         * cleanup came first): nothing left behind at exit or on a
         * reload of a single process.  No pool: HMAC() each time.
         */

        if (ngx_cycle->pool == NULL) {
            return NULL;
        }

        cln = ngx_pool_cleanup_add(ngx_cycle->pool, 0);
        if (cln == NULL) {
            return NULL;
        }

        ngx_http_tent_hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
        if (ngx_http_tent_hmac == NULL) {
            return NULL;
        }

        cln->handler = ngx_http_tent_mac_free;
    }

    c = EVP_MAC_CTX_new(ngx_http_tent_hmac);
    if (c == NULL) {
        return NULL;
    }

    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
                                                 sha1 ? "SHA1" : "SHA256",
                                                 0);
    params[1] = OSSL_PARAM_construct_end();

    if (EVP_MAC_CTX_set_params(c, params) != 1) {
        EVP_MAC_CTX_free(c);
        return NULL;
    }

    ngx_http_tent_hmac_ctx[sha1] = c;

    return c;
}


static void
ngx_http_tent_mac_free(void *data)
{
    ngx_uint_t  i;

    for (i = 0; i < 2; i++) {
        EVP_MAC_CTX_free(ngx_http_tent_hmac_ctx[i]);
        ngx_http_tent_hmac_ctx[i] = NULL;
    }

    EVP_MAC_free(ngx_http_tent_hmac);
    ngx_http_tent_hmac = NULL;
}


/*
 * NGX_OK when mac is the request's MAC under the key; NGX_DECLINED when
 * it is not or the algorithm is unknown; NGX_ERROR when out of memory.
 * Compared in constant time, so a wrong MAC tells nothing of the right.
 */

ngx_int_t
ngx_http_tent_mac_verify(ngx_pool_t *pool, ngx_str_t *algorithm,
    ngx_str_t *key, ngx_http_tent_mac_request_t *req, ngx_str_t *mac)
{
    size_t     len;
    u_char     out[NGX_HTTP_TENT_MAC_LEN];
    ngx_str_t  text;

    if (ngx_http_tent_mac_text(pool, req, &text) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_tent_mac_compute(algorithm, key, &text, out, &len)
        != NGX_OK
        || len != mac->len
        || CRYPTO_memcmp(out, mac->data, len) != 0)
    {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * The Authorization header value of a signed request: the caller picks
 * the ts and nonce; ext is sent only when there is one (it is signed
 * either way, as an empty line when absent).
 */

ngx_int_t
ngx_http_tent_mac_sign(ngx_pool_t *pool, ngx_str_t *algorithm,
    ngx_str_t *key, ngx_str_t *id, ngx_http_tent_mac_request_t *req,
    ngx_str_t *value)
{
    u_char     *p, out[NGX_HTTP_TENT_MAC_LEN];
    size_t      len;
    ngx_str_t   text;

    /* a key id another server chose must not end the header */

    if (ngx_http_tent_visible_valid(id, 1024) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_tent_mac_text(pool, req, &text) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_tent_mac_compute(algorithm, key, &text, out, &len)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    value->len = sizeof("MAC id=\"\", ts=\"\", nonce=\"\", mac=\"\"") - 1
                 + id->len + req->ts.len + req->nonce.len + len;

    if (req->ext.len) {
        value->len += sizeof(", ext=\"\"") - 1 + req->ext.len;
    }

    value->data = ngx_pnalloc(pool, value->len);
    if (value->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(value->data, "MAC id=\"%V\", ts=\"%V\", nonce=\"%V\", "
                    "mac=\"%*s\"", id, &req->ts, &req->nonce, len, out);

    if (req->ext.len) {
        p = ngx_sprintf(p, ", ext=\"%V\"", &req->ext);
    }

    value->len = p - value->data;

    return NGX_OK;
}
