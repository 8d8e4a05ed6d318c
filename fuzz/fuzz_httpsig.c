
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The HTTP Signatures parsers, ngx_http_tent_httpsig_parse_cavage() and
 * ..._parse_rfc9421(), then what the inbox would do with what they
 * accept: the signing string or signature base over a fixed request
 * (with a repeated and a padded header), its check with a fixed key
 * (never passes: the input cannot hold a valid signature), and for a
 * cavage keyId the signature we would send with it, which must parse
 * back to it and verify.  ngx_http_tent_httpsig_digest_check() over the
 * input as a Digest and as a Content-Digest.
 * Input: byte 0 bit 0: cavage (the rest is the Signature value) or RFC
 * 9421 (Signature-Input, a newline, Signature).
 */


#include "../src/base/ngx_http_tent_httpsig.c"
#include "../src/base/ngx_http_tent_httpsig_base.c"

#include "fuzz.h"

#include <openssl/pem.h>


/* draft-cavage-12 Appendix C's test key */

static const char  ngx_fuzz_key_pem[] =
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIICXgIBAAKBgQDCFENGw33yGihy92pDjZQhl0C36rPJj+CvfSC8+q28hxA161QF\n"
    "NUd13wuCTUcq0Qd2qsBe/2hFyc2DCJJg0h1L78+6Z4UMR7EOcpfdUE9Hf3m/hs+F\n"
    "UR45uBJeDK1HSFHD8bHKD6kv8FPGfJTotc+2xjJwoYi+1hqp1fIekaxsyQIDAQAB\n"
    "AoGBAJR8ZkCUvx5kzv+utdl7T5MnordT1TvoXXJGXK7ZZ+UuvMNUCdN2QPc4sBiA\n"
    "QWvLw1cSKt5DsKZ8UETpYPy8pPYnnDEz2dDYiaew9+xEpubyeW2oH4Zx71wqBtOK\n"
    "kqwrXa/pzdpiucRRjk6vE6YY7EBBs/g7uanVpGibOVAEsqH1AkEA7DkjVH28WDUg\n"
    "f1nqvfn2Kj6CT7nIcE3jGJsZZ7zlZmBmHFDONMLUrXR/Zm3pR5m0tCmBqa5RK95u\n"
    "412jt1dPIwJBANJT3v8pnkth48bQo/fKel6uEYyboRtA5/uHuHkZ6FQF7OUkGogc\n"
    "mSJluOdc5t6hI1VsLn0QZEjQZMEOWr+wKSMCQQCC4kXJEsHAve77oP6HtG/IiEn7\n"
    "kpyUXRNvFsDE0czpJJBvL/aRFUJxuRK91jhjC68sA7NsKMGg5OXb5I5Jj36xAkEA\n"
    "gIT7aFOYBFwGgQAQkWNKLvySgKbAZRTeLBacpHMuQdl1DfdntvAyqpAZ0lY0RKmW\n"
    "G6aFKaqQfOXKCyWoUiVknQJAXrlgySFci/2ueKlIE1QqIiLSZ8V8OlpFLRnb1pzI\n"
    "7U1yQXnTAEFYM560yJlzUpOb1V4cScGd365tiSMvxLOvTA==\n"
    "-----END RSA PRIVATE KEY-----\n";

static EVP_PKEY         *ngx_fuzz_key;
static ngx_table_elt_t   ngx_fuzz_headers[6];
static ngx_list_t        ngx_fuzz_list;


static void
ngx_fuzz_init(void)
{
    BIO  *bio;

    bio = BIO_new_mem_buf(ngx_fuzz_key_pem, -1);
    ngx_fuzz_key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    ngx_fuzz_assert(ngx_fuzz_key != NULL);

    ngx_str_set(&ngx_fuzz_headers[0].key, "Host");
    ngx_str_set(&ngx_fuzz_headers[0].value, "example.com");
    ngx_str_set(&ngx_fuzz_headers[1].key, "Date");
    ngx_str_set(&ngx_fuzz_headers[1].value, "Sun, 05 Jan 2014 21:31:40 GMT");
    ngx_str_set(&ngx_fuzz_headers[2].key, "Digest");
    ngx_str_set(&ngx_fuzz_headers[2].value,
                "SHA-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=");
    ngx_str_set(&ngx_fuzz_headers[3].key, "Cache-Control");
    ngx_str_set(&ngx_fuzz_headers[3].value, " max-age=60\t");
    ngx_str_set(&ngx_fuzz_headers[4].key, "cache-control");
    ngx_str_set(&ngx_fuzz_headers[4].value, "must-revalidate");
    ngx_str_set(&ngx_fuzz_headers[5].key, "Content-Digest");
    ngx_str_set(&ngx_fuzz_headers[5].value,
                "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:");

    ngx_fuzz_list.part.elts = ngx_fuzz_headers;
    ngx_fuzz_list.part.nelts = 6;
    ngx_fuzz_list.last = &ngx_fuzz_list.part;
    ngx_fuzz_list.size = sizeof(ngx_table_elt_t);
    ngx_fuzz_list.nalloc = 6;
}


/* every string the parser gave lies inside the header it parsed */

static void
ngx_fuzz_inside(ngx_str_t *s, u_char *start, u_char *end)
{
    if (s->data == NULL) {
        ngx_fuzz_assert(s->len == 0);
        return;
    }

    ngx_fuzz_assert(s->data >= start && s->data + s->len <= end);
}


static ngx_uint_t
ngx_fuzz_lines(ngx_str_t *text)
{
    u_char      *p;
    ngx_uint_t   n;

    n = 0;

    for (p = text->data; p < text->data + text->len; p++) {
        n += (*p == '\n');
    }

    return n;
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    u_char                           *copy, *nl, *end;
    ngx_int_t                         rc;
    ngx_str_t                         input, signature, text, value, body;
    ngx_uint_t                        i, rfc;
    ngx_pool_t                       *pool;
    ngx_http_tent_httpsig_t           sig, back;
    ngx_http_tent_httpsig_request_t   req;

    if (ngx_fuzz_key == NULL) {
        ngx_fuzz_init();
    }

    if (size < 1) {
        return 0;
    }

    rfc = data[0] & 1;
    copy = ngx_fuzz_dup(data + 1, size - 1);
    end = copy + size - 1;

    pool = ngx_create_pool(1024, &ngx_fuzz_log);
    ngx_fuzz_assert(pool != NULL);

    input.data = copy;
    input.len = size - 1;

    if (rfc) {
        nl = memchr(copy, '\n', size - 1);

        if (nl == NULL) {
            goto done;
        }

        input.len = nl - copy;
        signature.data = nl + 1;
        signature.len = end - nl - 1;

        rc = ngx_http_tent_httpsig_parse_rfc9421(&input, &signature, &sig);

    } else {
        rc = ngx_http_tent_httpsig_parse_cavage(&input, &sig);
    }

    ngx_fuzz_assert(rc >= 0 && rc <= NGX_HTTP_TENT_HTTPSIG_NOMEM);
    ngx_fuzz_assert(ngx_http_tent_httpsig_strerror(rc) != NULL);

    /* the digest checks never read past their value */

    body.data = (u_char *) "{\"hello\": \"world\"}";
    body.len = sizeof("{\"hello\": \"world\"}") - 1;

    value.data = copy;
    value.len = size - 1;
    rc = ngx_http_tent_httpsig_digest_check(&value, rfc, &body);
    ngx_fuzz_assert(rc == NGX_HTTP_TENT_HTTPSIG_OK
                    || rc == NGX_HTTP_TENT_HTTPSIG_SYNTAX
                    || rc == NGX_HTTP_TENT_HTTPSIG_DIGEST
                    || rc == NGX_HTTP_TENT_HTTPSIG_TOO_LONG);

    if (rfc) {
        rc = ngx_http_tent_httpsig_parse_rfc9421(&input, &signature, &sig);

    } else {
        rc = ngx_http_tent_httpsig_parse_cavage(&input, &sig);
    }

    if (rc != NGX_HTTP_TENT_HTTPSIG_OK) {
        goto done;
    }

    /* what was accepted */

    ngx_fuzz_assert(sig.rfc9421 == rfc);
    ngx_fuzz_assert(sig.ncomponents <= NGX_HTTP_TENT_HTTPSIG_COVERED);
    ngx_fuzz_assert(sig.key_id.len > 0 && sig.signature.len > 0);
    ngx_fuzz_assert(rfc || sig.ncomponents > 0);
    ngx_fuzz_assert(sig.alg <= NGX_HTTP_TENT_HTTPSIG_ALG_ED25519);
    ngx_fuzz_inside(&sig.key_id, copy, end);
    ngx_fuzz_inside(&sig.signature, copy, end);
    ngx_fuzz_inside(&sig.algorithm, copy, end);
    ngx_fuzz_inside(&sig.nonce, copy, end);
    ngx_fuzz_inside(&sig.tag, copy, end);
    ngx_fuzz_inside(&sig.params, copy, end);
    ngx_fuzz_assert(sig.created >= -1 && sig.expires >= -1);

    for (i = 0; i < sig.ncomponents; i++) {
        ngx_fuzz_assert(sig.components[i].len > 0
                        && sig.components[i].len <= 64);
        ngx_fuzz_assert(memchr(sig.components[i].data, '\n',
                               sig.components[i].len) == NULL);

        if (rfc) {
            /* cavage's default "date" is the parser's own string */
            ngx_fuzz_inside(&sig.components[i], copy, end);
        }
    }

    /* what is signed, over the fixed request */

    ngx_str_set(&req.method, "POST");
    ngx_str_set(&req.target, "/inbox?page=1");
    ngx_str_set(&req.authority, "example.com");
    ngx_str_set(&req.scheme, "https");
    req.headers = &ngx_fuzz_list;

    rc = rfc ? ngx_http_tent_httpsig_rfc9421_base(pool, &sig, &req, &text)
             : ngx_http_tent_httpsig_cavage_string(pool, &sig, &req, &text);

    ngx_fuzz_assert(rc == NGX_HTTP_TENT_HTTPSIG_OK
                    || rc == NGX_HTTP_TENT_HTTPSIG_ABSENT
                    || rc == NGX_HTTP_TENT_HTTPSIG_MISSING);

    if (rc == NGX_HTTP_TENT_HTTPSIG_OK) {
        ngx_fuzz_assert(text.len <= NGX_HTTP_TENT_HTTPSIG_BASE_MAX);

        if (rfc) {
            /* a line per component, then @signature-params */
            ngx_fuzz_assert(ngx_fuzz_lines(&text) == sig.ncomponents
                            + ngx_fuzz_lines(&sig.params));
            ngx_fuzz_assert(text.len >= sig.params.len
                            && ngx_memcmp(text.data + text.len
                                          - sig.params.len,
                                          sig.params.data, sig.params.len)
                               == 0);

        } else {
            ngx_fuzz_assert(ngx_fuzz_lines(&text) == sig.ncomponents - 1);
        }

        /* no input holds the key's signature of the fixed request */

        rc = ngx_http_tent_httpsig_verify(pool, &sig, &req, ngx_fuzz_key);
        ngx_fuzz_assert(rc == NGX_HTTP_TENT_HTTPSIG_BAD
                        || rc == NGX_HTTP_TENT_HTTPSIG_BASE64
                        || rc == NGX_HTTP_TENT_HTTPSIG_ALGORITHM);
    }

    if (rfc) {
        goto done;
    }

    /*
     * sign with the parsed keyId, as the fetch would with ours: a key id
     * that would end the header is refused, any other parses back and
     * verifies
     */

    rc = ngx_http_tent_httpsig_sign_cavage(pool, &req, &sig.key_id,
                                           ngx_fuzz_key, &value);

    if (rc != NGX_HTTP_TENT_HTTPSIG_OK) {
        ngx_fuzz_assert(rc == NGX_HTTP_TENT_HTTPSIG_SYNTAX);
        goto done;
    }

    rc = ngx_http_tent_httpsig_parse_cavage(&value, &back);
    ngx_fuzz_assert(rc == NGX_HTTP_TENT_HTTPSIG_OK);
    ngx_fuzz_assert(back.key_id.len == sig.key_id.len
                    && ngx_memcmp(back.key_id.data, sig.key_id.data,
                                  sig.key_id.len) == 0);
    ngx_fuzz_assert(back.ncomponents == 4);

    rc = ngx_http_tent_httpsig_verify(pool, &back, &req, ngx_fuzz_key);
    ngx_fuzz_assert(rc == NGX_HTTP_TENT_HTTPSIG_OK);

done:

    ngx_destroy_pool(pool);
    free(copy);

    return 0;
}
