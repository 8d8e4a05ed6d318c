
/*
 * Standalone check of src/base/ngx_http_tent_httpsig.c and
 * httpsig_base.c against the specifications' own vectors:
 * draft-cavage-http-signatures-12 Appendix C (its RSA test key; rsa-sha256
 * is deterministic, so C.1 and C.2 must match byte for byte, and our own
 * signing of C.2's request too) and RFC 9421 Appendix B.2 (B.2.1 and B.2.3
 * rsa-pss-sha512 verified as given, PSS being randomized, and round-tripped;
 * B.2.6 ed25519 matched byte for byte), then tampering: each must be
 * refused with its own code.  Stubs for the nginx functions the files use
 * (the pool is malloc, freed at the end).  t/unit/run.sh builds and runs it.
 */


#include "../../src/base/ngx_http_tent_httpsig.c"
#include "../../src/base/ngx_http_tent_httpsig_base.c"

#include <openssl/pem.h>
#include <stdio.h>
#include <strings.h>
#include <time.h>


static int  failures;
static int  checks;

static void  *allocs[4096];
static int    nallocs;

static ngx_log_t   test_log;
static ngx_pool_t  test_pool = { .log = &test_log };
static ngx_pool_t *pool = &test_pool;


void *
ngx_pnalloc(ngx_pool_t *p, size_t size)
{
    void  *m;

    if (nallocs == (int) (sizeof(allocs) / sizeof(allocs[0]))) {
        return NULL;
    }

    m = malloc(size);
    allocs[nallocs++] = m;

    return m;
}


ngx_int_t
ngx_strncasecmp(u_char *s1, u_char *s2, size_t n)
{
    return strncasecmp((char *) s1, (char *) s2, n);
}


/* IMF-fixdate only, which is all the tests send */

time_t
ngx_parse_http_time(u_char *value, size_t len)
{
    char       buf[64], *end;
    struct tm  tm;

    if (len >= sizeof(buf)) {
        return NGX_ERROR;
    }

    memcpy(buf, value, len);
    buf[len] = '\0';
    memset(&tm, 0, sizeof(tm));

    end = strptime(buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (end == NULL || *end != '\0') {
        return NGX_ERROR;
    }

    return timegm(&tm);
}


void
ngx_log_error_core(ngx_uint_t level, ngx_log_t *log, ngx_err_t err,
    const char *fmt, ...)
{
}


#define CHECK(cond)                                                          \
    do {                                                                     \
        checks++;                                                            \
        if (!(cond)) {                                                       \
            failures++;                                                      \
            fprintf(stderr, "httpsig_test.c:%d: failed: %s\n", __LINE__,    \
                    #cond);                                                  \
        }                                                                    \
    } while (0)

#define CHECK_RC(expr, want)                                                 \
    do {                                                                     \
        ngx_int_t  rc_ = (expr);                                             \
        checks++;                                                            \
        if (rc_ != (want)) {                                                 \
            failures++;                                                      \
            fprintf(stderr, "httpsig_test.c:%d: %s: \"%s\", wanted "        \
                    "\"%s\"\n", __LINE__, #expr,                             \
                    ngx_http_tent_httpsig_strerror(rc_),                     \
                    ngx_http_tent_httpsig_strerror(want));                   \
        }                                                                    \
    } while (0)


static ngx_str_t
s(const char *text)
{
    ngx_str_t  str;

    str.data = (u_char *) text;
    str.len = strlen(text);

    return str;
}


static int
eq(ngx_str_t *a, const char *b)
{
    if (a->len == strlen(b) && memcmp(a->data, b, a->len) == 0) {
        return 1;
    }

    fprintf(stderr, "got:  \"%.*s\"\nwant: \"%s\"\n", (int) a->len,
            a->data, b);

    return 0;
}


/* ---- the keys of the specifications ---- */

/* draft-cavage-12 Appendix C (a 1024-bit key, though it says 2048) */

static const char  cavage_private[] =
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

static const char  cavage_public[] =
    "-----BEGIN PUBLIC KEY-----\n"
    "MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQDCFENGw33yGihy92pDjZQhl0C3\n"
    "6rPJj+CvfSC8+q28hxA161QFNUd13wuCTUcq0Qd2qsBe/2hFyc2DCJJg0h1L78+6\n"
    "Z4UMR7EOcpfdUE9Hf3m/hs+FUR45uBJeDK1HSFHD8bHKD6kv8FPGfJTotc+2xjJw\n"
    "oYi+1hqp1fIekaxsyQIDAQAB\n"
    "-----END PUBLIC KEY-----\n";

/* RFC 9421 B.1.2 test-key-rsa-pss, its public half */

static const char  pss_public[] =
    "-----BEGIN PUBLIC KEY-----\n"
    "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAr4tmm3r20Wd/PbqvP1s2\n"
    "+QEtvpuRaV8Yq40gjUR8y2Rjxa6dpG2GXHbPfvMs8ct+Lh1GH45x28Rw3Ry53mm+\n"
    "oAXjyQ86OnDkZ5N8lYbggD4O3w6M6pAvLkhk95AndTrifbIFPNU8PPMO7OyrFAHq\n"
    "gDsznjPFmTOtCEcN2Z1FpWgchwuYLPL+Wokqltd11nqqzi+bJ9cvSKADYdUAAN5W\n"
    "Utzdpiy6LbTgSxP7ociU4Tn0g5I6aDZJ7A8Lzo0KSyZYoA485mqcO0GVAdVw9lq4\n"
    "aOT9v6d+nb4bnNkQVklLQ3fVAvJm+xdDOp9LCNCN48V2pnDOkFV6+U9nV5oyc6XI\n"
    "2wIDAQAB\n"
    "-----END PUBLIC KEY-----\n";

/* RFC 9421 B.1.4 test-key-ed25519 */

static const char  ed_private[] =
    "-----BEGIN PRIVATE KEY-----\n"
    "MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n"
    "-----END PRIVATE KEY-----\n";

static const char  ed_public[] =
    "-----BEGIN PUBLIC KEY-----\n"
    "MCowBQYDK2VwAyEAJrQLj5P/89iXES9+vFgrIy29clF9CC/oPPsw3c5D0bs=\n"
    "-----END PUBLIC KEY-----\n";


/* ---- the requests ---- */

static ngx_table_elt_t  hdrs[16];
static ngx_list_t       hlist;


static void
request(ngx_http_tent_httpsig_request_t *req, const char *target,
    const char **fields)
{
    ngx_uint_t  n;

    memset(hdrs, 0, sizeof(hdrs));

    for (n = 0; fields[n]; n += 2) {
        hdrs[n / 2].key = s(fields[n]);
        hdrs[n / 2].value = s(fields[n + 1]);
    }

    memset(&hlist, 0, sizeof(hlist));
    hlist.part.elts = hdrs;
    hlist.part.nelts = n / 2;
    hlist.last = &hlist.part;
    hlist.size = sizeof(ngx_table_elt_t);
    hlist.nalloc = 16;

    req->method = s("POST");
    req->target = s(target);
    req->authority = s("example.com");
    req->scheme = s("https");
    req->headers = &hlist;
}


static EVP_PKEY *
private_key(const char *pem)
{
    BIO       *bio;
    EVP_PKEY  *key;

    bio = BIO_new_mem_buf(pem, -1);
    key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);

    if (key == NULL) {
        fprintf(stderr, "bad test key\n");
        exit(2);
    }

    return key;
}


static EVP_PKEY *
public_key(const char *pem)
{
    ngx_str_t   text;
    EVP_PKEY   *key;

    text = s(pem);
    key = ngx_http_tent_httpsig_pem_key(&text);

    if (key == NULL) {
        fprintf(stderr, "bad test public key\n");
        exit(2);
    }

    return key;
}


/* base64 of a signature made with "key" (PSS: SHA-512, salt 64) */

static ngx_str_t
sign(EVP_PKEY *key, ngx_uint_t alg, ngx_str_t *text)
{
    u_char        *out, sig[1024];
    size_t         len;
    ngx_str_t      b64;
    EVP_MD_CTX    *ctx;
    EVP_PKEY_CTX  *pctx;
    const EVP_MD  *md;

    md = alg == NGX_HTTP_TENT_HTTPSIG_ALG_ED25519 ? NULL
         : alg == NGX_HTTP_TENT_HTTPSIG_ALG_RSA_PSS ? EVP_sha512()
         : EVP_sha256();

    ctx = EVP_MD_CTX_new();
    len = sizeof(sig);

    if (EVP_DigestSignInit(ctx, &pctx, md, NULL, key) != 1
        || (alg == NGX_HTTP_TENT_HTTPSIG_ALG_RSA_PSS
            && (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING)
                != 1
                || EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, 64) != 1))
        || EVP_DigestSign(ctx, sig, &len, text->data, text->len) != 1)
    {
        fprintf(stderr, "signing failed\n");
        exit(2);
    }

    EVP_MD_CTX_free(ctx);

    out = ngx_pnalloc(pool, len * 2);
    b64.data = out;
    b64.len = EVP_EncodeBlock(out, sig, (int) len);

    return b64;
}


/* ---- draft-cavage-12 Appendix C ---- */

#define C_SIG1                                                               \
    "SjWJWbWN7i0wzBvtPl8rbASWz5xQW6mcJmn+ibttBqtifLN7Sazz"                   \
    "6m79cNfwwb8DMJ5cou1s7uEGKKCs+FLEEaDV5lp7q25WqS+lavg7T8hc0GppauB"        \
    "6hbgEKTwblDHYGEtbGmtdHgVCk9SuS13F0hZ8FD0k/5OxEPXe5WozsbM="

#define C_SIG2                                                               \
    "qdx+H7PHHDZgy4y/Ahn9Tny9V3GP6YgBPyUXMmoxWtLbHpUnXS2mg2+SbrQDMCJypxBL"   \
    "SPQR2aAjn7ndmw2iicw3HMbe8VfEdKFYRqzic+efkb3nndiv/x1xSHDJWeSWkx3Butl"    \
    "YSuBskLu6kd9Fswtemr3lgdDEmn04swr2Os0="

#define C_SIG3                                                               \
    "vSdrb+dS3EceC9bcwHSo4MlyKS59iFIrhgYkz8+oVLEEzmYZZvRs"                   \
    "8rgOp+63LEM3v+MFHB32NfpB2bEKBIvB1q52LaEUHFv120V01IL+TAD48XaERZF"        \
    "ukWgHoBTLMhYS2Gb51gWxpeIq8knRmPnYePbF5MOkR0Zkly4zKH7s1dE="

static const char  *c_fields[] = {
    "Host", "example.com",
    "Date", "Sun, 05 Jan 2014 21:31:40 GMT",
    "Content-Type", "application/json",
    "Digest", "SHA-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=",
    "Content-Length", "18",
    NULL
};


static void
test_cavage(void)
{
    ngx_str_t                        h, text, value, body, digest;
    EVP_PKEY                        *priv, *pub;
    ngx_http_tent_httpsig_t          sig;
    ngx_http_tent_httpsig_request_t  req;

    priv = private_key(cavage_private);
    pub = public_key(cavage_public);
    request(&req, "/foo?param=value&pet=dog", c_fields);
    body = s("{\"hello\": \"world\"}");

    /* C.1: no headers: the date alone */

    h = s("keyId=\"Test\",algorithm=\"rsa-sha256\",signature=\"" C_SIG1 "\"");
    CHECK_RC(ngx_http_tent_httpsig_parse_cavage(&h, &sig), 0);
    CHECK(eq(&sig.key_id, "Test"));
    CHECK(sig.alg == NGX_HTTP_TENT_HTTPSIG_ALG_RSA_SHA256);
    CHECK_RC(ngx_http_tent_httpsig_cavage_string(pool, &sig, &req, &text),
             0);
    CHECK(eq(&text, "date: Sun, 05 Jan 2014 21:31:40 GMT"));
    CHECK(eq(&sig.signature, C_SIG1));
    value = sign(priv, NGX_HTTP_TENT_HTTPSIG_ALG_RSA_SHA256, &text);
    CHECK(eq(&value, C_SIG1));
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pub), 0);

    /* the Authorization form */

    h = s("Signature keyId=\"Test\",algorithm=\"rsa-sha256\", signature=\""
          C_SIG1 "\"");
    CHECK_RC(ngx_http_tent_httpsig_parse_cavage(&h, &sig), 0);
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pub), 0);

    /* C.2 */

    h = s("keyId=\"Test\",algorithm=\"rsa-sha256\","
          "headers=\"(request-target) host date\", signature=\""
          C_SIG2 "\"");
    CHECK_RC(ngx_http_tent_httpsig_parse_cavage(&h, &sig), 0);
    CHECK(sig.ncomponents == 3);
    CHECK_RC(ngx_http_tent_httpsig_cavage_string(pool, &sig, &req, &text),
             0);
    CHECK(eq(&text, "(request-target): post /foo?param=value&pet=dog\n"
                    "host: example.com\n"
                    "date: Sun, 05 Jan 2014 21:31:40 GMT"));
    value = sign(priv, NGX_HTTP_TENT_HTTPSIG_ALG_RSA_SHA256, &text);
    CHECK(eq(&value, C_SIG2));
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pub), 0);

    /* hs2019 with the same RSA key: PKCS#1 v1.5, SHA-256 */

    h = s("keyId=\"Test\",algorithm=\"hs2019\","
          "headers=\"(request-target) host date\",signature=\""
          C_SIG2 "\"");
    CHECK_RC(ngx_http_tent_httpsig_parse_cavage(&h, &sig), 0);
    CHECK(sig.alg == NGX_HTTP_TENT_HTTPSIG_ALG_HS2019);
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pub), 0);

    /* C.3: every header and the digest */

    h = s("keyId=\"Test\",algorithm=\"rsa-sha256\",headers=\"(request-target)"
          " host date content-type digest content-length\",signature=\""
          C_SIG3 "\"");
    CHECK_RC(ngx_http_tent_httpsig_parse_cavage(&h, &sig), 0);
    CHECK_RC(ngx_http_tent_httpsig_cavage_string(pool, &sig, &req, &text),
             0);
    CHECK(eq(&text, "(request-target): post /foo?param=value&pet=dog\n"
                    "host: example.com\n"
                    "date: Sun, 05 Jan 2014 21:31:40 GMT\n"
                    "content-type: application/json\n"
                    "digest: SHA-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kb"
                    "u9DBPE=\n"
                    "content-length: 18"));
    value = sign(priv, NGX_HTTP_TENT_HTTPSIG_ALG_RSA_SHA256, &text);
    CHECK(eq(&value, C_SIG3));
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pub), 0);

    /* the Digest of the appendix's body */

    CHECK_RC(ngx_http_tent_httpsig_digest(pool, 0, &body, &digest), 0);
    CHECK(eq(&digest, "SHA-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE="));
    CHECK_RC(ngx_http_tent_httpsig_digest_check(&hdrs[3].value, 0, &body), 0);

    /* our own signature of C.2's request (no Digest): C.2's, exactly */

    hdrs[3].key = s("X-Digest");
    h = s("Test");
    CHECK_RC(ngx_http_tent_httpsig_sign_cavage(pool, &req, &h, priv, &value),
             0);
    CHECK(eq(&value, "keyId=\"Test\",algorithm=\"rsa-sha256\","
                     "headers=\"(request-target) host date\","
                     "signature=\"" C_SIG2 "\""));

    /* with a Digest: what we send, parsed back and verified */

    hdrs[3].key = s("Digest");
    h = s("https://example.com/actor#main-key");
    CHECK_RC(ngx_http_tent_httpsig_sign_cavage(pool, &req, &h, priv, &value),
             0);
    CHECK_RC(ngx_http_tent_httpsig_parse_cavage(&value, &sig), 0);
    CHECK(eq(&sig.key_id, "https://example.com/actor#main-key"));
    CHECK(sig.ncomponents == 4);
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pub), 0);

    /* a key id that would break the header, a key not RSA */

    h = s("a\"b");
    CHECK_RC(ngx_http_tent_httpsig_sign_cavage(pool, &req, &h, priv, &value),
             NGX_HTTP_TENT_HTTPSIG_SYNTAX);

    /* tampering, each refused */

    h = s("keyId=\"Test\",algorithm=\"rsa-sha256\",headers=\"(request-target)"
          " host date content-type digest content-length\",signature=\""
          C_SIG3 "\"");
    CHECK_RC(ngx_http_tent_httpsig_parse_cavage(&h, &sig), 0);

    hdrs[1].value = s("Sun, 05 Jan 2014 21:31:41 GMT");
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pub),
             NGX_HTTP_TENT_HTTPSIG_BAD);
    hdrs[1].value = s("Sun, 05 Jan 2014 21:31:40 GMT");

    hdrs[3].value = s("SHA-256=Y48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=");
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pub),
             NGX_HTTP_TENT_HTTPSIG_BAD);
    CHECK_RC(ngx_http_tent_httpsig_digest_check(&hdrs[3].value, 0, &body),
             NGX_HTTP_TENT_HTTPSIG_DIGEST);
    hdrs[3].value = s("SHA-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=");

    req.target = s("/foo?param=value&pet=cat");
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pub),
             NGX_HTTP_TENT_HTTPSIG_BAD);
    req.target = s("/foo?param=value&pet=dog");

    hdrs[4].key = s("X-Content-Length");
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pub),
             NGX_HTTP_TENT_HTTPSIG_ABSENT);
    hdrs[4].key = s("Content-Length");
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pub), 0);

    /*
     * the same bytes spelt otherwise (a padding bit set): refused, so a
     * signature has one spelling for the replay set
     */

    {
        static const char  b64[] =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        ngx_str_t  keep;
        u_char    *alt;
        size_t     i;

        keep = sig.signature;
        alt = (u_char *) strndup((char *) keep.data, keep.len);
        i = keep.len - 1;

        while (alt[i] == '=') {
            i--;
        }

        alt[i] = b64[(strchr(b64, alt[i]) - b64) | 1];
        sig.signature.data = alt;
        CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pub),
                 NGX_HTTP_TENT_HTTPSIG_BASE64);
        sig.signature = keep;
        CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pub), 0);
        free(alt);
    }

    /* a truncated signature, then one cut to a multiple of four */

    sig.signature.len--;
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pub),
             NGX_HTTP_TENT_HTTPSIG_BASE64);
    sig.signature.len -= 3;
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pub),
             NGX_HTTP_TENT_HTTPSIG_BAD);

    /* the RSA key against ed25519's algorithm: refused */

    h = s("keyId=\"Test\",algorithm=\"rsa-sha512\",signature=\"" C_SIG1 "\"");
    CHECK_RC(ngx_http_tent_httpsig_parse_cavage(&h, &sig),
             NGX_HTTP_TENT_HTTPSIG_ALGORITHM);
    h = s("keyId=\"Test\",algorithm=\"ed25519\",signature=\"" C_SIG1 "\"");
    CHECK_RC(ngx_http_tent_httpsig_parse_cavage(&h, &sig),
             NGX_HTTP_TENT_HTTPSIG_ALGORITHM);

    /* the body's digest against other bodies and forms */

    digest = s("SHA-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=");
    h = s("{\"hello\": \"world!\"}");
    CHECK_RC(ngx_http_tent_httpsig_digest_check(&digest, 0, &h),
             NGX_HTTP_TENT_HTTPSIG_DIGEST);
    digest = s("MD5=Sd/dVLAcvNLSq16eXua5uQ==");
    CHECK_RC(ngx_http_tent_httpsig_digest_check(&digest, 0, &body),
             NGX_HTTP_TENT_HTTPSIG_DIGEST);
    digest = s("MD5=Sd/dVLAcvNLSq16eXua5uQ==, "
               "sha-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=");
    CHECK_RC(ngx_http_tent_httpsig_digest_check(&digest, 0, &body), 0);
    digest = s("SHA-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBP");
    CHECK_RC(ngx_http_tent_httpsig_digest_check(&digest, 0, &body),
             NGX_HTTP_TENT_HTTPSIG_DIGEST);

    EVP_PKEY_free(priv);
    EVP_PKEY_free(pub);
}


/* ---- the parsers' refusals ---- */

static void
test_refusals(void)
{
    char                     buf[NGX_HTTP_TENT_HTTPSIG_HEADER_MAX + 64];
    ngx_str_t                h, in;
    ngx_uint_t               i;
    ngx_http_tent_httpsig_t  sig;

#define CAVAGE(text, want)                                                   \
    h = s(text);                                                             \
    CHECK_RC(ngx_http_tent_httpsig_parse_cavage(&h, &sig), want)

#define RFC(input, signature, want)                                          \
    in = s(input);                                                           \
    h = s(signature);                                                        \
    CHECK_RC(ngx_http_tent_httpsig_parse_rfc9421(&in, &h, &sig), want)

    CAVAGE("keyId=\"a\",signature=\"AAAA\"", 0);
    CHECK(sig.alg == NGX_HTTP_TENT_HTTPSIG_ALG_NONE);
    CHECK(sig.ncomponents == 1 && eq(&sig.components[0], "date"));
    CAVAGE("keyId=\"a\",keyId=\"b\",signature=\"AAAA\"",
           NGX_HTTP_TENT_HTTPSIG_DUPLICATE);
    CAVAGE("keyId=\"a\",signature=\"AAAA\",created=1,created=2",
           NGX_HTTP_TENT_HTTPSIG_DUPLICATE);
    CAVAGE("keyId=\"a\",headers=\"date date\",signature=\"AAAA\"",
           NGX_HTTP_TENT_HTTPSIG_DUPLICATE);
    CAVAGE("signature=\"AAAA\"", NGX_HTTP_TENT_HTTPSIG_MISSING);
    CAVAGE("keyId=\"a\"", NGX_HTTP_TENT_HTTPSIG_MISSING);
    CAVAGE("keyId=\"a\",headers=\"(created)\",signature=\"AAAA\"",
           NGX_HTTP_TENT_HTTPSIG_MISSING);
    CAVAGE("keyId=\"a\",headers=\"(created) (expires)\",signature=\"AAAA\","
           "created=1402170695,expires=1402170699.25", 0);
    CHECK(sig.created == 1402170695 && sig.expires == 1402170699);
    CAVAGE("keyId=\"a\",headers=\"(foo)\",signature=\"AAAA\"",
           NGX_HTTP_TENT_HTTPSIG_COMPONENT);
    CAVAGE("keyId=\"a\",headers=\"@method\",signature=\"AAAA\"",
           NGX_HTTP_TENT_HTTPSIG_COMPONENT);
    CAVAGE("keyId=\"a\",headers=\"\",signature=\"AAAA\"",
           NGX_HTTP_TENT_HTTPSIG_SYNTAX);
    CAVAGE("keyId=\"a\",algorithm=\"hmac-sha256\",signature=\"AAAA\"",
           NGX_HTTP_TENT_HTTPSIG_ALGORITHM);
    CAVAGE("keyId=\"a,signature=\"AAAA\"", NGX_HTTP_TENT_HTTPSIG_SYNTAX);
    CAVAGE("keyId=\"a\\\"\",signature=\"AAAA\"",
           NGX_HTTP_TENT_HTTPSIG_SYNTAX);
    CAVAGE("keyId=a,signature=\"AAAA\"", NGX_HTTP_TENT_HTTPSIG_SYNTAX);
    CAVAGE("keyId=\"a\",signature=\"AAAA\",created=1234567890123",
           NGX_HTTP_TENT_HTTPSIG_SYNTAX);
    CAVAGE("keyId=\"a\",signature=\"AAAA\",created=-1",
           NGX_HTTP_TENT_HTTPSIG_SYNTAX);
    CAVAGE("keyId=\"a\",signature=\"AAAA\",x=\"y\"", 0);

    strcpy(buf, "keyId=\"a\",signature=\"AAAA\",headers=\"");
    for (i = 0; i <= NGX_HTTP_TENT_HTTPSIG_COVERED; i++) {
        sprintf(buf + strlen(buf), "%sx-h%u", i ? " " : "", (unsigned) i);
    }
    strcat(buf, "\"");
    CAVAGE(buf, NGX_HTTP_TENT_HTTPSIG_TOO_MANY);

    memset(buf, ' ', sizeof(buf) - 1);
    buf[sizeof(buf) - 1] = '\0';
    memcpy(buf, "keyId=\"a\",signature=\"AAAA\"", 26);
    CAVAGE(buf, NGX_HTTP_TENT_HTTPSIG_TOO_LONG);

    /* RFC 9421 */

    RFC("sig1=(\"@method\" \"content-digest\");created=1;keyid=\"k\"",
        "sig1=:AAAA:", 0);
    CHECK(sig.rfc9421 && sig.ncomponents == 2 && eq(&sig.label, "sig1"));
    CHECK(eq(&sig.params,
             "(\"@method\" \"content-digest\");created=1;keyid=\"k\""));
    RFC("sig1=(\"@method\");keyid=\"k\", sig2=(\"date\");keyid=\"j\"",
        "sig2=:BBBB:, sig1=:AAAA:;x=1", 0);
    CHECK(eq(&sig.signature, "AAAA") && eq(&sig.key_id, "k"));
    RFC("sig1=(\"@method\");keyid=\"k\";keyid=\"j\"", "sig1=:AAAA:",
        NGX_HTTP_TENT_HTTPSIG_DUPLICATE);
    RFC("sig1=(\"@method\");created=1;created=2;keyid=\"k\"", "sig1=:AAAA:",
        NGX_HTTP_TENT_HTTPSIG_DUPLICATE);
    RFC("sig1=(\"@method\" \"@method\");keyid=\"k\"", "sig1=:AAAA:",
        NGX_HTTP_TENT_HTTPSIG_DUPLICATE);
    RFC("sig1=(\"@method\");keyid=\"k\", sig1=(\"date\");keyid=\"k\"",
        "sig1=:AAAA:", NGX_HTTP_TENT_HTTPSIG_DUPLICATE);
    RFC("sig1=(\"@method\");keyid=\"k\"", "sig2=:AAAA:",
        NGX_HTTP_TENT_HTTPSIG_MISSING);
    RFC("sig1=(\"@method\")", "sig1=:AAAA:", NGX_HTTP_TENT_HTTPSIG_MISSING);
    RFC("sig1=();keyid=\"k\"", "sig1=:AAAA:",
        NGX_HTTP_TENT_HTTPSIG_MISSING);
    RFC("sig1=(\"@query-param\";name=\"Pet\");keyid=\"k\"", "sig1=:AAAA:",
        NGX_HTTP_TENT_HTTPSIG_COMPONENT);
    RFC("sig1=(\"@status\");keyid=\"k\"", "sig1=:AAAA:",
        NGX_HTTP_TENT_HTTPSIG_COMPONENT);
    RFC("sig1=(\"Date\");keyid=\"k\"", "sig1=:AAAA:",
        NGX_HTTP_TENT_HTTPSIG_COMPONENT);
    RFC("sig1=(\"@method\");keyid=\"k\";alg=\"hmac-sha256\"", "sig1=:AAAA:",
        NGX_HTTP_TENT_HTTPSIG_ALGORITHM);
    RFC("sig1=(\"@method\");keyid=\"k\";alg=\"rsa-sha256\"", "sig1=:AAAA:",
        NGX_HTTP_TENT_HTTPSIG_ALGORITHM);
    RFC("sig1=(\"@method\";keyid=\"k\"", "sig1=:AAAA:",
        NGX_HTTP_TENT_HTTPSIG_SYNTAX);
    RFC("sig1=(\"@method\");keyid=\"k\",", "sig1=:AAAA:",
        NGX_HTTP_TENT_HTTPSIG_SYNTAX);
    RFC("sig1=(\"@method\");keyid=\"k\"", "sig1=:AAAA",
        NGX_HTTP_TENT_HTTPSIG_SYNTAX);
    RFC("sig1=(\"@method\");keyid=\"k\"", "sig1=::",
        NGX_HTTP_TENT_HTTPSIG_MISSING);
    RFC("Sig1=(\"@method\");keyid=\"k\"", "Sig1=:AAAA:",
        NGX_HTTP_TENT_HTTPSIG_SYNTAX);
    RFC("sig1=(\"@method\");keyid=\"k\"",
        "a=1, b=2, c=3, d=4, e=5, f=6, g=7, h=8, sig1=:AAAA:",
        NGX_HTTP_TENT_HTTPSIG_TOO_MANY);

    strcpy(buf, "sig1=(");
    for (i = 0; i <= NGX_HTTP_TENT_HTTPSIG_COVERED; i++) {
        sprintf(buf + strlen(buf), "%s\"x-h%u\"", i ? " " : "",
                (unsigned) i);
    }
    strcat(buf, ");keyid=\"k\"");
    RFC(buf, "sig1=:AAAA:", NGX_HTTP_TENT_HTTPSIG_TOO_MANY);

    memset(buf, ' ', sizeof(buf) - 1);
    buf[sizeof(buf) - 1] = '\0';
    memcpy(buf, "sig1=(\"@method\");keyid=\"k\"", 26);
    RFC(buf, "sig1=:AAAA:", NGX_HTTP_TENT_HTTPSIG_TOO_LONG);

#undef CAVAGE
#undef RFC
}


/* ---- RFC 9421 Appendix B.2 ---- */

#define B21_SIG                                                              \
    "d2pmTvmbncD3xQm8E9ZV2828BjQWGgiwAaw5bAkgibUopemLJcWDy/lkbbHAve4cRAtx31"  \
    "Iq786U7it++wgGxbtRxf8Udx7zFZsckzXaJMkA7ChG52eSkFxykJeNqsrWH5S+oxNFlD4"   \
    "dzVuwe8DhTSja8xxbR/Z2cOGdCbzR72rgFWhzx2VjBqJzsPLMIQKhO4DGezXehhWwE56Y"   \
    "CE+O6c0mKZsfxVrogUvA4HELjVKWmAvtl6UnCh8jYzuVG5WSb/QEVPnP5TmcAnLH1g+s+"   \
    "+v6d4s8m0gCw1fV5/SITLq9mhho8K3+7EPYTU8IU1bLhdxO5Nyt8C8ssinQ98Xw9Q=="

#define B23_SIG                                                              \
    "bbN8oArOxYoyylQQUU6QYwrTuaxLwjAC9fbY2F6SVWvh0yBiMIRGOnMYwZ/5MR6fb0Kh1r"  \
    "IRASVxFkeGt683+qRpRRU5p2voTp768ZrCUb38K0fUxN0O0iC59DzYx8DFll5GmydPxSm"   \
    "me9v6ULbMFkl+V5B1TP/yPViV7KsLNmvKiLJH1pFkh/aYA2HXXZzNBXmIkoQoLd7YfW91"   \
    "kE9o/CCoC1xMy7JA1ipwvKvfrs65ldmlu9bpG6A9BmzhuzF8Eim5f8ui9eH8LZH896+QI"   \
    "F61ka39VBrohr9iyMUJpvRX2Zbhl5ZJzSRxpJyoEZAFL2FUo5fTIztsDZKEgM4cUA=="

#define B26_SIG                                                              \
    "wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6v"  \
    "uQv5lIp5WPpBKRCw=="

#define B_DIGEST                                                             \
    "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu" \
    "7BNNyealdVLvRwEmTHWXvJwew==:"

static const char  *b_fields[] = {
    "Host", "example.com",
    "Date", "Tue, 20 Apr 2021 02:07:55 GMT",
    "Content-Type", "application/json",
    "Content-Digest", B_DIGEST,
    "Content-Length", "18",
    NULL
};


static void
test_rfc9421(void)
{
    ngx_str_t                        in, h, text, value, body;
    EVP_PKEY                        *pss, *ed, *ed_pub, *rsa;
    ngx_http_tent_httpsig_t          sig;
    ngx_http_tent_httpsig_request_t  req;

    pss = public_key(pss_public);
    ed = private_key(ed_private);
    ed_pub = public_key(ed_public);
    request(&req, "/foo?param=Value&Pet=dog", b_fields);
    body = s("{\"hello\": \"world\"}");

    /* B.1.2/B.2 Content-Digest, both of RFC 9530's algorithms */

    CHECK_RC(ngx_http_tent_httpsig_digest(pool, 2, &body, &value), 0);
    CHECK(eq(&value, B_DIGEST));
    CHECK_RC(ngx_http_tent_httpsig_digest_check(&value, 1, &body), 0);
    CHECK_RC(ngx_http_tent_httpsig_digest(pool, 1, &body, &value), 0);
    CHECK(eq(&value, "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:"));
    CHECK_RC(ngx_http_tent_httpsig_digest_check(&value, 1, &body), 0);
    h = s("sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:, "
          "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrI"
          "iYllu7BNNyealdVLvRwEmTHWXvJwew==:");
    CHECK_RC(ngx_http_tent_httpsig_digest_check(&h, 1, &body), 0);
    h = s("sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:, "
          "sha-512=:AZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrI"
          "iYllu7BNNyealdVLvRwEmTHWXvJwew==:");
    CHECK_RC(ngx_http_tent_httpsig_digest_check(&h, 1, &body),
             NGX_HTTP_TENT_HTTPSIG_DIGEST);
    h = s("sha-256=X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=");
    CHECK_RC(ngx_http_tent_httpsig_digest_check(&h, 1, &body),
             NGX_HTTP_TENT_HTTPSIG_SYNTAX);

    /* B.2.1: nothing but the parameters, rsa-pss-sha512 by the key */

    in = s("sig-b21=();created=1618884473;keyid=\"test-key-rsa-pss\";"
           "nonce=\"b3k2pp5k7z-50gnwp.yemd\"");
    h = s("sig-b21=:" B21_SIG ":");
    CHECK_RC(ngx_http_tent_httpsig_parse_rfc9421(&in, &h, &sig), 0);
    CHECK(eq(&sig.nonce, "b3k2pp5k7z-50gnwp.yemd"));
    CHECK(sig.created == 1618884473 && sig.expires == -1);
    CHECK_RC(ngx_http_tent_httpsig_rfc9421_base(pool, &sig, &req, &text), 0);
    CHECK(eq(&text, "\"@signature-params\": ();created=1618884473;"
                    "keyid=\"test-key-rsa-pss\";"
                    "nonce=\"b3k2pp5k7z-50gnwp.yemd\""));
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pss), 0);

    /* the same signature as PSS given, and as PKCS#1 v1.5: refused */

    in = s("sig-b21=();created=1618884473;keyid=\"test-key-rsa-pss\";"
           "nonce=\"b3k2pp5k7z-50gnwp.yemd\";alg=\"rsa-v1_5-sha256\"");
    CHECK_RC(ngx_http_tent_httpsig_parse_rfc9421(&in, &h, &sig), 0);
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pss),
             NGX_HTTP_TENT_HTTPSIG_BAD);

    /* B.2.2 covers @query-param, which we do not: refused clearly */

    in = s("sig-b22=(\"@authority\" \"content-digest\" \"@query-param\";"
           "name=\"Pet\");created=1618884473;keyid=\"test-key-rsa-pss\";"
           "tag=\"header-example\"");
    h = s("sig-b22=:AAAA:");
    CHECK_RC(ngx_http_tent_httpsig_parse_rfc9421(&in, &h, &sig),
             NGX_HTTP_TENT_HTTPSIG_COMPONENT);

    /* B.2.3: full coverage */

    in = s("sig-b23=(\"date\" \"@method\" \"@path\" \"@query\" "
           "\"@authority\" \"content-type\" \"content-digest\" "
           "\"content-length\");created=1618884473;"
           "keyid=\"test-key-rsa-pss\"");
    h = s("sig-b23=:" B23_SIG ":");
    CHECK_RC(ngx_http_tent_httpsig_parse_rfc9421(&in, &h, &sig), 0);
    CHECK_RC(ngx_http_tent_httpsig_rfc9421_base(pool, &sig, &req, &text), 0);
    CHECK(eq(&text,
             "\"date\": Tue, 20 Apr 2021 02:07:55 GMT\n"
             "\"@method\": POST\n"
             "\"@path\": /foo\n"
             "\"@query\": ?param=Value&Pet=dog\n"
             "\"@authority\": example.com\n"
             "\"content-type\": application/json\n"
             "\"content-digest\": " B_DIGEST "\n"
             "\"content-length\": 18\n"
             "\"@signature-params\": (\"date\" \"@method\" \"@path\" "
             "\"@query\" \"@authority\" \"content-type\" \"content-digest\" "
             "\"content-length\");created=1618884473;"
             "keyid=\"test-key-rsa-pss\""));
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pss), 0);

    /* tampered: a header, the digest, the query, a header gone */

    hdrs[2].value = s("text/plain");
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pss),
             NGX_HTTP_TENT_HTTPSIG_BAD);
    hdrs[2].value = s("application/json");
    hdrs[3].value = s("sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:");
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pss),
             NGX_HTTP_TENT_HTTPSIG_BAD);
    hdrs[3].value = s(B_DIGEST);
    req.target = s("/foo?param=Value&Pet=cat");
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pss),
             NGX_HTTP_TENT_HTTPSIG_BAD);
    req.target = s("/foo?param=Value&Pet=dog");
    hdrs[0].key = s("X-Host");
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pss), 0);
    hdrs[0].key = s("Host");
    hdrs[1].key = s("X-Date");
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pss),
             NGX_HTTP_TENT_HTTPSIG_ABSENT);
    hdrs[1].key = s("Date");
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pss), 0);

    /* the spec's signature cut short, or with a byte changed */

    sig.signature.len -= 2;
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pss),
             NGX_HTTP_TENT_HTTPSIG_BASE64);
    sig.signature.len += 2;
    sig.signature.data = (u_char *) strdup(B23_SIG);
    sig.signature.data[10] ^= 1;
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pss),
             NGX_HTTP_TENT_HTTPSIG_BAD);
    free(sig.signature.data);

    /* the ed25519 key against an RSA algorithm */

    h = s("sig-b23=:" B23_SIG ":");
    CHECK_RC(ngx_http_tent_httpsig_parse_rfc9421(&in, &h, &sig), 0);
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, ed_pub),
             NGX_HTTP_TENT_HTTPSIG_BAD);
    sig.alg = NGX_HTTP_TENT_HTTPSIG_ALG_RSA_PSS;
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, ed_pub),
             NGX_HTTP_TENT_HTTPSIG_ALGORITHM);

    /* B.2.6: ed25519, deterministic: the spec's bytes exactly */

    in = s("sig-b26=(\"date\" \"@method\" \"@path\" \"@authority\" "
           "\"content-type\" \"content-length\");created=1618884473;"
           "keyid=\"test-key-ed25519\"");
    h = s("sig-b26=:" B26_SIG ":");
    CHECK_RC(ngx_http_tent_httpsig_parse_rfc9421(&in, &h, &sig), 0);
    CHECK_RC(ngx_http_tent_httpsig_rfc9421_base(pool, &sig, &req, &text), 0);
    CHECK(eq(&text,
             "\"date\": Tue, 20 Apr 2021 02:07:55 GMT\n"
             "\"@method\": POST\n"
             "\"@path\": /foo\n"
             "\"@authority\": example.com\n"
             "\"content-type\": application/json\n"
             "\"content-length\": 18\n"
             "\"@signature-params\": (\"date\" \"@method\" \"@path\" "
             "\"@authority\" \"content-type\" \"content-length\");"
             "created=1618884473;keyid=\"test-key-ed25519\""));
    value = sign(ed, NGX_HTTP_TENT_HTTPSIG_ALG_ED25519, &text);
    CHECK(eq(&value, B26_SIG));
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, ed_pub), 0);
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pss),
             NGX_HTTP_TENT_HTTPSIG_BAD);

    in = s("sig-b26=(\"date\" \"@method\" \"@path\" \"@authority\" "
           "\"content-type\" \"content-length\");created=1618884473;"
           "keyid=\"test-key-ed25519\";alg=\"ed25519\"");
    CHECK_RC(ngx_http_tent_httpsig_parse_rfc9421(&in, &h, &sig), 0);
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, ed_pub),
             NGX_HTTP_TENT_HTTPSIG_BAD);
    hdrs[4].value = s("19");
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, ed_pub),
             NGX_HTTP_TENT_HTTPSIG_BAD);
    hdrs[4].value = s("18");

    /* round trips: rsa-pss-sha512, rsa-v1_5-sha256, with our own keys */

    rsa = EVP_RSA_gen(2048);
    CHECK(rsa != NULL);

    in = s("sig1=(\"@method\" \"@target-uri\" \"@request-target\" "
           "\"content-digest\");created=1618884473;expires=1618884573;"
           "keyid=\"k\";alg=\"rsa-pss-sha512\"");
    h = s("sig1=:AAAA:");
    CHECK_RC(ngx_http_tent_httpsig_parse_rfc9421(&in, &h, &sig), 0);
    CHECK(sig.expires == 1618884573);
    CHECK_RC(ngx_http_tent_httpsig_rfc9421_base(pool, &sig, &req, &text), 0);
    CHECK(eq(&text,
             "\"@method\": POST\n"
             "\"@target-uri\": https://example.com/foo?param=Value&Pet=dog\n"
             "\"@request-target\": /foo?param=Value&Pet=dog\n"
             "\"content-digest\": " B_DIGEST "\n"
             "\"@signature-params\": (\"@method\" \"@target-uri\" "
             "\"@request-target\" \"content-digest\");created=1618884473;"
             "expires=1618884573;keyid=\"k\";alg=\"rsa-pss-sha512\""));
    sig.signature = sign(rsa, NGX_HTTP_TENT_HTTPSIG_ALG_RSA_PSS, &text);
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, rsa), 0);
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, pss),
             NGX_HTTP_TENT_HTTPSIG_BAD);
    sig.alg = NGX_HTTP_TENT_HTTPSIG_ALG_RSA_V15;
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, rsa),
             NGX_HTTP_TENT_HTTPSIG_BAD);

    in = s("sig1=(\"@method\" \"@path\" \"@query\");created=1;keyid=\"k\";"
           "alg=\"rsa-v1_5-sha256\"");
    CHECK_RC(ngx_http_tent_httpsig_parse_rfc9421(&in, &h, &sig), 0);
    CHECK(sig.alg == NGX_HTTP_TENT_HTTPSIG_ALG_RSA_V15);
    req.target = s("");
    CHECK_RC(ngx_http_tent_httpsig_rfc9421_base(pool, &sig, &req, &text), 0);
    CHECK(eq(&text, "\"@method\": POST\n\"@path\": /\n\"@query\": ?\n"
                    "\"@signature-params\": (\"@method\" \"@path\" "
                    "\"@query\");created=1;keyid=\"k\";"
                    "alg=\"rsa-v1_5-sha256\""));
    sig.signature = sign(rsa, NGX_HTTP_TENT_HTTPSIG_ALG_RSA_V15, &text);
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, rsa), 0);
    sig.alg = NGX_HTTP_TENT_HTTPSIG_ALG_RSA_PSS;
    CHECK_RC(ngx_http_tent_httpsig_verify(pool, &sig, &req, rsa),
             NGX_HTTP_TENT_HTTPSIG_BAD);

    EVP_PKEY_free(rsa);
    EVP_PKEY_free(pss);
    EVP_PKEY_free(ed);
    EVP_PKEY_free(ed_pub);
}


/* ---- repeated fields, the clock, keys ---- */

static void
test_misc(void)
{
    ngx_str_t                        name, value, pem;
    EVP_PKEY                        *key;
    ngx_http_tent_httpsig_request_t  req;

    static const char  *fields[] = {
        "Cache-Control", "max-age=60",
        "X-Other", "x",
        "cache-control", "   must-revalidate \t",
        NULL
    };

    request(&req, "/", fields);

    name = s("cache-control");
    CHECK_RC(ngx_http_tent_httpsig_header(pool, &req, &name, &value), 0);
    CHECK(eq(&value, "max-age=60, must-revalidate"));
    name = s("x-none");
    CHECK_RC(ngx_http_tent_httpsig_header(pool, &req, &name, &value),
             NGX_HTTP_TENT_HTTPSIG_ABSENT);

    /* the window: 12 hours back, 5 minutes ahead */

    CHECK_RC(ngx_http_tent_httpsig_time_check(1000000, 1000000, 43200, 300),
             0);
    CHECK_RC(ngx_http_tent_httpsig_time_check(1000000 - 43201, 1000000,
                                              43200, 300),
             NGX_HTTP_TENT_HTTPSIG_TIME);
    CHECK_RC(ngx_http_tent_httpsig_time_check(1000301, 1000000, 43200, 300),
             NGX_HTTP_TENT_HTTPSIG_TIME);

    value = s("Sun, 05 Jan 2014 21:31:40 GMT");
    CHECK_RC(ngx_http_tent_httpsig_date_check(&value, 1388957500, 43200, 300),
             0);
    CHECK_RC(ngx_http_tent_httpsig_date_check(&value, 1389957500, 43200, 300),
             NGX_HTTP_TENT_HTTPSIG_TIME);
    CHECK_RC(ngx_http_tent_httpsig_date_check(&value, 1388950000, 43200, 300),
             NGX_HTTP_TENT_HTTPSIG_TIME);
    value = s("yesterday");
    CHECK_RC(ngx_http_tent_httpsig_date_check(&value, 1388957500, 43200, 300),
             NGX_HTTP_TENT_HTTPSIG_SYNTAX);

    /* PEM keys: bounded, RSA or Ed25519 public keys only */

    pem = s(cavage_public);
    key = ngx_http_tent_httpsig_pem_key(&pem);
    CHECK(key != NULL && EVP_PKEY_get_bits(key) == 1024);
    EVP_PKEY_free(key);

    pem = s(ed_private);
    key = ngx_http_tent_httpsig_pem_key(&pem);
    CHECK(key == NULL);
    EVP_PKEY_free(key);

    pem = s("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n");
    CHECK(ngx_http_tent_httpsig_pem_key(&pem) == NULL);

    pem.data = (u_char *) cavage_public;
    pem.len = NGX_HTTP_TENT_HTTPSIG_PEM_MAX + 1;
    CHECK(ngx_http_tent_httpsig_pem_key(&pem) == NULL);

    CHECK(strcmp(ngx_http_tent_httpsig_strerror(99), "unknown error") == 0);
}


int
main(void)
{
    int  i;

    test_cavage();
    test_refusals();
    test_rfc9421();
    test_misc();

    for (i = 0; i < nallocs; i++) {
        free(allocs[i]);
    }

    if (failures) {
        fprintf(stderr, "httpsig_test: %d of %d checks failed\n", failures,
                checks);
        return 1;
    }

    printf("httpsig_test: %d checks passed\n", checks);

    return 0;
}
