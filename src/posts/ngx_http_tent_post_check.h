
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The checks of a post as a client sends it, shared by the content
 * schemas (post_types.c) and the common fields (post_envelope.c).
 */


#ifndef _NGX_HTTP_TENT_POST_CHECK_H_INCLUDED_
#define _NGX_HTTP_TENT_POST_CHECK_H_INCLUDED_


#include "ngx_http_tent_base.h"


#define NGX_HTTP_TENT_POST_MAX_LICENSES  32
#define NGX_HTTP_TENT_POST_MAX_URI       2048
#define NGX_HTTP_TENT_POST_MAX_MENTIONS  256
#define NGX_HTTP_TENT_POST_MAX_GROUPS    256
#define NGX_HTTP_TENT_POST_MAX_ENTITIES  1024
#define NGX_HTTP_TENT_POST_MAX_REF       512

#define NGX_HTTP_TENT_POST_A_URL   "an http:// or https:// URL"
#define NGX_HTTP_TENT_POST_A_REF                                             \
    "a string of at most " ngx_value(NGX_HTTP_TENT_POST_MAX_REF)             \
    " bytes without spaces"


/* ngx_http_tent_post_types.c: one value */
ngx_uint_t ngx_http_tent_post_absent(json_t *v);
ngx_uint_t ngx_http_tent_post_string_token(json_t *v, size_t max);
ngx_uint_t ngx_http_tent_post_uri(u_char *p, size_t len, size_t max);
ngx_uint_t ngx_http_tent_post_url(u_char *p, size_t len);
ngx_uint_t ngx_http_tent_post_string_url(json_t *v);

/* ngx_http_tent_post_envelope.c: the common fields */
ngx_int_t ngx_http_tent_post_permissions(json_t *given, json_t **out,
    const char **error);
ngx_int_t ngx_http_tent_post_licenses(json_t *given, json_t **out,
    const char **error);
ngx_int_t ngx_http_tent_post_mentions(json_t *given, json_t **out,
    const char **error);
ngx_int_t ngx_http_tent_post_app(json_t *given, json_t **out,
    const char **error);
const char *ngx_http_tent_post_views(json_t *views);


#endif /* _NGX_HTTP_TENT_POST_CHECK_H_INCLUDED_ */
