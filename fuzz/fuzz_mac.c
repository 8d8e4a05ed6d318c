
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The Authorization header parser, ngx_http_tent_mac_parse(), and what
 * the server then does with a parsed header: the timestamp as a number,
 * the HMAC over the normalized request, compared as the module does.
 * Input: the header value, e.g. MAC id="a:1", ts="1", nonce="n", mac="m".
 */


#include "../src/ngx_http_tent_auth.c"

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
    u_char      out[64], *p;
    size_t      len;
    time_t      t;
    ngx_int_t   rc;
    ngx_str_t   header, id, ts, nonce, mac, ext, text, alg;
    ngx_pool_t *pool;

    header.data = ngx_fuzz_dup(data, size);
    header.len = size;

    rc = ngx_http_tent_mac_parse(&header, &id, &ts, &nonce, &mac, &ext);

    ngx_fuzz_assert(rc == NGX_OK || rc == NGX_ERROR || rc == NGX_DECLINED);
    ngx_fuzz_assert(rc == NGX_DECLINED
                    || ngx_strncasecmp(header.data, (u_char *) "MAC ", 4)
                       == 0);

    if (rc != NGX_OK) {
        free(header.data);
        return 0;
    }

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

    text.len = ts.len + nonce.len + sizeof("GET") - 1
               + sizeof("/tent/profile") - 1 + sizeof("alice.example") - 1
               + sizeof("443") - 1 + ext.len + 7;
    text.data = ngx_pnalloc(pool, text.len);
    ngx_fuzz_assert(text.data != NULL);

    p = ngx_sprintf(text.data, "%V\n%V\nGET\n/tent/profile\nalice.example\n"
                    "443\n%V\n", &ts, &nonce, &ext);
    ngx_fuzz_assert((size_t) (p - text.data) == text.len);

    ngx_str_set(&alg, "hmac-sha-256");
    rc = ngx_http_tent_mac_compute(&alg, &id, &text, out, &len);
    ngx_fuzz_assert(rc == NGX_OK && len == 44);

    if (len == mac.len) {
        (void) CRYPTO_memcmp(out, mac.data, len);
    }

    ngx_str_set(&alg, "hmac-sha-1");
    rc = ngx_http_tent_mac_compute(&alg, &id, &text, out, &len);
    ngx_fuzz_assert(rc == NGX_OK && len == 28);

    /* the replay cache key, as ngx_http_tent_auth_loaded() builds it */

    text.len = id.len + ts.len + nonce.len + 2;
    text.data = ngx_pnalloc(pool, text.len);
    ngx_fuzz_assert(text.data != NULL);

    p = ngx_sprintf(text.data, "%V\n%V\n%V", &id, &ts, &nonce);
    ngx_fuzz_assert((size_t) (p - text.data) == text.len);

    ngx_destroy_pool(pool);
    free(header.data);

    return 0;
}
