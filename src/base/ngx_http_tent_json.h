
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_JSON_H_INCLUDED_
#define _NGX_HTTP_TENT_JSON_H_INCLUDED_


/*
 * JSON replies and errors, and reading a request body as JSON or a form.
 */


#include "ngx_http_tent_base.h"


/* ngx_http_tent_json.c */
ngx_int_t ngx_http_tent_send_json(ngx_http_request_t *r, ngx_uint_t status,
    json_t *json);
ngx_int_t ngx_http_tent_send_error(ngx_http_request_t *r, ngx_uint_t status,
    const char *message);
ngx_int_t ngx_http_tent_internal_error(ngx_http_request_t *r,
    const char *step);
ngx_int_t ngx_http_tent_send_body(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *body);
ngx_int_t ngx_http_tent_error_body(ngx_pool_t *pool, ngx_uint_t status,
    const char *message, ngx_str_t *out);
const char *ngx_http_tent_status_text(ngx_uint_t status);
json_t *ngx_http_tent_json_parse(ngx_str_t *s, ngx_log_t *log);
ngx_int_t ngx_http_tent_json_dump(ngx_pool_t *pool, json_t *json,
    ngx_str_t *out);
json_t *ngx_http_tent_json_string(ngx_str_t *s);
ngx_int_t ngx_http_tent_json_str(json_t *obj, const char *name,
    ngx_str_t *out);
ngx_int_t ngx_http_tent_json_cleanup(ngx_pool_t *pool, json_t *json);
json_t *ngx_http_tent_json_own(ngx_pool_t *pool, json_t *json);
json_t *ngx_http_tent_json_load(ngx_http_request_t *r, ngx_str_t *value);
ngx_int_t ngx_http_tent_read_json(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_route_pt next);
ngx_int_t ngx_http_tent_read_form(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_route_pt next);
ngx_int_t ngx_http_tent_body_bytes(ngx_http_request_t *r, ngx_str_t *body);
ngx_int_t ngx_http_tent_body_limit_init(ngx_conf_t *cf);
ngx_int_t ngx_http_tent_body_blank(ngx_str_t *body);

/* ngx_http_tent_multipart.c: what read_form gives a multipart body */
ngx_int_t ngx_http_tent_multipart_parse(ngx_pool_t *pool,
    ngx_str_t *content_type, ngx_str_t *body, ngx_array_t *parts);


#endif /* _NGX_HTTP_TENT_JSON_H_INCLUDED_ */
