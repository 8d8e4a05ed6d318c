
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_MAC_H_INCLUDED_
#define _NGX_HTTP_TENT_MAC_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>


#define NGX_HTTP_TENT_MAC_FIELD_MAX  256

/* room for base64 of the digest: 44 bytes for SHA-256 */
#define NGX_HTTP_TENT_MAC_LEN        64


/* the fields of an Authorization: MAC header */

typedef struct {
    ngx_str_t                       id;
    ngx_str_t                       ts;
    ngx_str_t                       nonce;
    ngx_str_t                       mac;
    ngx_str_t                       ext;
} ngx_http_tent_mac_header_t;


/* what the MAC covers: ts, nonce, method, request-uri, host, port, ext */

typedef struct {
    ngx_str_t                       ts;
    ngx_str_t                       nonce;
    ngx_str_t                       method;
    ngx_str_t                       uri;
    ngx_str_t                       host;
    ngx_str_t                       port;
    ngx_str_t                       ext;
} ngx_http_tent_mac_request_t;


ngx_int_t ngx_http_tent_mac_parse(ngx_str_t *header,
    ngx_http_tent_mac_header_t *h);
ngx_int_t ngx_http_tent_mac_text(ngx_pool_t *pool,
    ngx_http_tent_mac_request_t *req, ngx_str_t *text);
ngx_int_t ngx_http_tent_mac_compute(ngx_str_t *algorithm, ngx_str_t *key,
    ngx_str_t *text, u_char *out, size_t *out_len);
ngx_int_t ngx_http_tent_mac_verify(ngx_pool_t *pool, ngx_str_t *algorithm,
    ngx_str_t *key, ngx_http_tent_mac_request_t *req, ngx_str_t *mac);
ngx_int_t ngx_http_tent_mac_sign(ngx_pool_t *pool, ngx_str_t *algorithm,
    ngx_str_t *key, ngx_str_t *id, ngx_http_tent_mac_request_t *req,
    ngx_str_t *value);


#endif /* _NGX_HTTP_TENT_MAC_H_INCLUDED_ */
