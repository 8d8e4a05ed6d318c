
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The Authorization header parser, ngx_http_tent_mac_parse(), and what
 * the server then does with a parsed header: the timestamp as a number,
 * the HMAC over the normalized request, compared as the module does;
 * and the header we would sign with the parsed fields, which must parse
 * back to them and verify.
 * Input: the header value, e.g. MAC id="a:1", ts="1", nonce="n", mac="m".
 */


#include "../src/base/ngx_http_tent_mac.c"

#include "fuzz.h"


static void
ngx_fuzz_check_field(ngx_str_t *header, ngx_str_t *f, ngx_uint_t required)
{
    u_char  *p;

    if (f->data == NULL) {
        ngx_fuzz_assert(!required);
        return;
    }

    if (f->len == 0 && !required) {
        /* ext="" or the default "" */
        return;
    }

    ngx_fuzz_assert(f->len > 0 && f->len <= NGX_HTTP_TENT_MAC_FIELD_MAX);
    ngx_fuzz_assert(f->data > header->data + 4);
    ngx_fuzz_assert(f->data + f->len < header->data + header->len);

    /* the closing quote follows the value */
    ngx_fuzz_assert(f->data[f->len] == '"' && f->data[-1] == '"');

    for (p = f->data; p < f->data + f->len; p++) {
        ngx_fuzz_assert(*p != '"' && *p != '\\' && *p >= 0x20 && *p != 0x7f);
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char                       out[NGX_HTTP_TENT_MAC_LEN], *p;
    size_t                       len;
    time_t                       t;
    ngx_int_t                    rc;
    ngx_str_t                    header, id, ts, nonce, mac, ext, text, alg;
    ngx_str_t                    signed_value;
    ngx_pool_t                  *pool;
    ngx_http_tent_mac_header_t   h, back;
    ngx_http_tent_mac_request_t  req;

    header.data = ngx_fuzz_dup(data, size);
    header.len = size;

    rc = ngx_http_tent_mac_parse(&header, &h);

    ngx_fuzz_assert(rc == NGX_OK || rc == NGX_ERROR || rc == NGX_DECLINED);
    ngx_fuzz_assert(rc == NGX_DECLINED
                    || ngx_strncasecmp(header.data, (u_char *) "MAC ", 4)
                       == 0);

    if (rc != NGX_OK) {
        free(header.data);
        return 0;
    }

    id = h.id;
    ts = h.ts;
    nonce = h.nonce;
    mac = h.mac;
    ext = h.ext;

    ngx_fuzz_check_field(&header, &id, 1);
    ngx_fuzz_check_field(&header, &ts, 1);
    ngx_fuzz_check_field(&header, &nonce, 1);
    ngx_fuzz_check_field(&header, &mac, 1);
    ngx_fuzz_check_field(&header, &ext, 0);
    ngx_fuzz_assert(ext.data != NULL);

    /* ngx_http_tent_auth_loaded(): at most 12 digits, never an error */

    ngx_fuzz_assert(ts.len <= 12);
    t = ngx_atotm(ts.data, ts.len);
    ngx_fuzz_assert(t != NGX_ERROR && t >= 0);

    /* the normalized request text and its MAC, as ngx_http_tent_mac_text */

    pool = ngx_create_pool(1024, &ngx_fuzz_log);
    ngx_fuzz_assert(pool != NULL);

    req.ts = ts;
    req.nonce = nonce;
    ngx_str_set(&req.method, "GET");
    ngx_str_set(&req.uri, "/tent/profile");
    ngx_str_set(&req.host, "alice.example");
    ngx_str_set(&req.port, "443");
    req.ext = ext;

    rc = ngx_http_tent_mac_text(pool, &req, &text);
    ngx_fuzz_assert(rc == NGX_OK);
    ngx_fuzz_assert(text.len == ts.len + nonce.len + sizeof("GET") - 1
                    + sizeof("/tent/profile") - 1
                    + sizeof("alice.example") - 1 + sizeof("443") - 1
                    + ext.len + 7);
    ngx_fuzz_assert(text.data[text.len - 1] == '\n');

    ngx_str_set(&alg, "hmac-sha-256");
    rc = ngx_http_tent_mac_compute(&alg, &id, &text, out, &len);
    ngx_fuzz_assert(rc == NGX_OK && len == 44);

    if (len == mac.len) {
        (void) CRYPTO_memcmp(out, mac.data, len);
    }

    ngx_str_set(&alg, "hmac-sha-1");
    rc = ngx_http_tent_mac_compute(&alg, &id, &text, out, &len);
    ngx_fuzz_assert(rc == NGX_OK && len == 28);

    /* verify as auth.c does: only the right MAC passes */

    rc = ngx_http_tent_mac_verify(pool, &alg, &id, &req, &mac);
    ngx_fuzz_assert(rc == NGX_OK || rc == NGX_DECLINED);

    mac.data = out;
    mac.len = len;
    rc = ngx_http_tent_mac_verify(pool, &alg, &id, &req, &mac);
    ngx_fuzz_assert(rc == NGX_OK);

    /*
     * sign as fetch.c does: a key id that would end the header is
     * refused; any other, the header parses back to what was signed
     */

    ngx_str_set(&alg, "hmac-sha-256");
    rc = ngx_http_tent_mac_sign(pool, &alg, &id, &id, &req, &signed_value);

    if (ngx_http_tent_visible_valid(&id, 1024) != NGX_OK) {
        ngx_fuzz_assert(rc == NGX_ERROR);
        goto done;
    }

    ngx_fuzz_assert(rc == NGX_OK);

    rc = ngx_http_tent_mac_parse(&signed_value, &back);
    ngx_fuzz_assert(rc == NGX_OK);
    ngx_fuzz_assert(back.id.len == id.len
                    && ngx_memcmp(back.id.data, id.data, id.len) == 0);
    ngx_fuzz_assert(back.ts.len == ts.len
                    && ngx_memcmp(back.ts.data, ts.data, ts.len) == 0);
    ngx_fuzz_assert(back.nonce.len == nonce.len
                    && ngx_memcmp(back.nonce.data, nonce.data, nonce.len)
                       == 0);
    ngx_fuzz_assert(back.ext.len == ext.len
                    && ngx_memcmp(back.ext.data, ext.data, ext.len) == 0);

    rc = ngx_http_tent_mac_verify(pool, &alg, &id, &req, &back.mac);
    ngx_fuzz_assert(rc == NGX_OK);

    /* the replay cache key, as ngx_http_tent_auth_loaded() builds it */

    text.len = id.len + ts.len + nonce.len + 2;
    text.data = ngx_pnalloc(pool, text.len);
    ngx_fuzz_assert(text.data != NULL);

    p = ngx_sprintf(text.data, "%V\n%V\n%V", &id, &ts, &nonce);
    ngx_fuzz_assert((size_t) (p - text.data) == text.len);

done:

    ngx_destroy_pool(pool);
    free(header.data);

    return 0;
}
