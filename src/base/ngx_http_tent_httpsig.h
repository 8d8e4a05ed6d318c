
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_HTTPSIG_H_INCLUDED_
#define _NGX_HTTP_TENT_HTTPSIG_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>

#include <openssl/evp.h>


/* a Signature or Signature-Input value, whole */
#define NGX_HTTP_TENT_HTTPSIG_HEADER_MAX     4096
/* covered components (cavage headers="..." or an RFC 9421 inner list) */
#define NGX_HTTP_TENT_HTTPSIG_COVERED     16
/* members of an RFC 9421 dictionary looked through */
#define NGX_HTTP_TENT_HTTPSIG_MEMBERS        8
/* a signature's bytes: 8192-bit RSA is 1024 */
#define NGX_HTTP_TENT_HTTPSIG_SIG_MAX        1024
/* an actor's publicKeyPem */
#define NGX_HTTP_TENT_HTTPSIG_PEM_MAX        8192
/* the signing string or signature base */
#define NGX_HTTP_TENT_HTTPSIG_BASE_MAX       16384


/* why a signature was refused: ngx_http_tent_httpsig_strerror() */

#define NGX_HTTP_TENT_HTTPSIG_OK             0
#define NGX_HTTP_TENT_HTTPSIG_TOO_LONG       1
#define NGX_HTTP_TENT_HTTPSIG_SYNTAX         2
#define NGX_HTTP_TENT_HTTPSIG_DUPLICATE      3
#define NGX_HTTP_TENT_HTTPSIG_TOO_MANY       4
#define NGX_HTTP_TENT_HTTPSIG_MISSING        5
#define NGX_HTTP_TENT_HTTPSIG_ALGORITHM      6
#define NGX_HTTP_TENT_HTTPSIG_BASE64         7
#define NGX_HTTP_TENT_HTTPSIG_COMPONENT      8
#define NGX_HTTP_TENT_HTTPSIG_ABSENT         9
#define NGX_HTTP_TENT_HTTPSIG_BAD            10
#define NGX_HTTP_TENT_HTTPSIG_TIME           11
#define NGX_HTTP_TENT_HTTPSIG_KEY            12
#define NGX_HTTP_TENT_HTTPSIG_DIGEST         13
#define NGX_HTTP_TENT_HTTPSIG_NOMEM          14


/* the algorithms: given, or implied by the key (cavage hs2019) */

#define NGX_HTTP_TENT_HTTPSIG_ALG_NONE       0
#define NGX_HTTP_TENT_HTTPSIG_ALG_RSA_SHA256 1   /* cavage rsa-sha256 */
#define NGX_HTTP_TENT_HTTPSIG_ALG_HS2019     2   /* cavage, by the key */
#define NGX_HTTP_TENT_HTTPSIG_ALG_RSA_V15    3   /* rsa-v1_5-sha256 */
#define NGX_HTTP_TENT_HTTPSIG_ALG_RSA_PSS    4   /* rsa-pss-sha512 */
#define NGX_HTTP_TENT_HTTPSIG_ALG_ED25519    5   /* ed25519 */


/* a parsed signature, cavage or RFC 9421; strings point into the header */

typedef struct {
    ngx_uint_t                      rfc9421;
    ngx_str_t                       label;       /* RFC 9421 */
    ngx_str_t                       key_id;
    ngx_str_t                       algorithm;   /* as given, or empty */
    ngx_uint_t                      alg;
    ngx_str_t                       components[NGX_HTTP_TENT_HTTPSIG_COVERED];
    ngx_uint_t                      ncomponents;
    time_t                          created;     /* -1: absent */
    time_t                          expires;     /* -1: absent */
    ngx_str_t                       nonce;
    ngx_str_t                       tag;
    ngx_str_t                       params;      /* RFC 9421: as sent */
    ngx_str_t                       signature;   /* base64, as sent */
} ngx_http_tent_httpsig_t;


/*
 * The request a signature covers, whichever side: the method, the
 * request target as sent (path and query), the authority (host[:port]),
 * the scheme (for @target-uri) and the header fields, an ngx_list_t of
 * ngx_table_elt_t (r->headers_in.headers, or one an outbound request
 * builds), names compared without case, repeated ones joined by ", ".
 */

typedef struct {
    ngx_str_t                       method;
    ngx_str_t                       target;
    ngx_str_t                       authority;
    ngx_str_t                       scheme;
    ngx_list_t                     *headers;
} ngx_http_tent_httpsig_request_t;


const char *ngx_http_tent_httpsig_strerror(ngx_int_t rc);

ngx_int_t ngx_http_tent_httpsig_parse_cavage(ngx_str_t *header,
    ngx_http_tent_httpsig_t *sig);
ngx_int_t ngx_http_tent_httpsig_parse_rfc9421(ngx_str_t *input,
    ngx_str_t *signature, ngx_http_tent_httpsig_t *sig);

ngx_int_t ngx_http_tent_httpsig_header(ngx_pool_t *pool,
    ngx_http_tent_httpsig_request_t *req, ngx_str_t *name, ngx_str_t *value);
ngx_int_t ngx_http_tent_httpsig_cavage_string(ngx_pool_t *pool,
    ngx_http_tent_httpsig_t *sig, ngx_http_tent_httpsig_request_t *req,
    ngx_str_t *out);
ngx_int_t ngx_http_tent_httpsig_rfc9421_base(ngx_pool_t *pool,
    ngx_http_tent_httpsig_t *sig, ngx_http_tent_httpsig_request_t *req,
    ngx_str_t *out);

ngx_int_t ngx_http_tent_httpsig_verify(ngx_pool_t *pool,
    ngx_http_tent_httpsig_t *sig, ngx_http_tent_httpsig_request_t *req,
    EVP_PKEY *key);
ngx_int_t ngx_http_tent_httpsig_verify_text(ngx_http_tent_httpsig_t *sig,
    ngx_str_t *text, EVP_PKEY *key);
ngx_int_t ngx_http_tent_httpsig_sign_cavage(ngx_pool_t *pool,
    ngx_http_tent_httpsig_request_t *req, ngx_str_t *key_id, EVP_PKEY *key,
    ngx_str_t *value);

ngx_int_t ngx_http_tent_httpsig_digest(ngx_pool_t *pool, ngx_uint_t rfc9530,
    ngx_str_t *body, ngx_str_t *value);
ngx_int_t ngx_http_tent_httpsig_digest_check(ngx_str_t *value,
    ngx_uint_t rfc9530, ngx_str_t *body);
ngx_int_t ngx_http_tent_httpsig_time_check(time_t t, time_t now,
    time_t past, time_t future);
ngx_int_t ngx_http_tent_httpsig_date_check(ngx_str_t *date, time_t now,
    time_t past, time_t future);
EVP_PKEY *ngx_http_tent_httpsig_pem_key(ngx_str_t *pem);


#endif /* _NGX_HTTP_TENT_HTTPSIG_H_INCLUDED_ */
