
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_IMPORT_PRIVATE_H_INCLUDED_
#define _NGX_HTTP_TENT_IMPORT_PRIVATE_H_INCLUDED_


/*
 * What ngx_http_tent_import.c (the route, the emptiness check, a batch a
 * section) and ngx_http_tent_import_rows.c (each section's rows) share;
 * only they include it.
 */


#include "ngx_http_tent_module.h"
#include "ngx_http_tent_store.h"


/* one section's batch: at most this many bytes of rows (a store frame) */
#define NGX_HTTP_TENT_IMPORT_BATCH_MAX   (32 * 1024 * 1024)

/* rows a section; invalid rows named in the report */
#define NGX_HTTP_TENT_IMPORT_ROWS_MAX    100000
#define NGX_HTTP_TENT_IMPORT_REASONS     20


typedef struct {
    json_t                     *doc;
    json_t                     *report;
    json_t                     *entry;      /* the section being written */
    json_t                     *core;       /* our stored core, if any */
    json_t                     *seen;       /* key ids, ids, entities */
    ngx_str_t                   core_raw;
    ngx_str_t                   from;       /* the document's entity */
    ngx_uint_t                  check;      /* the emptiness scan's table */
    ngx_uint_t                  section;
    ngx_uint_t                  rows;       /* rows in the batch */
    size_t                      bytes;
    ngx_uint_t                  invalid;
} ngx_http_tent_import_t;


typedef ngx_int_t (*ngx_http_tent_import_row_pt)(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error);



extern ngx_str_t  ngx_http_tent_import_core_base;

/* ngx_http_tent_import.c: a row into the section's batch */
ngx_int_t ngx_http_tent_import_put(ngx_http_tent_import_t *im,
    ngx_http_tent_store_op_t *op, ngx_str_t *key, ngx_str_t *expected,
    ngx_str_t *value);
ngx_int_t ngx_http_tent_import_put_json(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, ngx_str_t *key,
    json_t *record);
ngx_int_t ngx_http_tent_import_keep(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, ngx_str_t *key,
    json_t *record);

/*
 * ngx_http_tent_import_rows.c: a row of each section: NGX_OK (added),
 * NGX_DECLINED (invalid: *error says why), NGX_ERROR.  profile with row
 * NULL: our core, the batch's first row.
 */
ngx_int_t ngx_http_tent_import_profile(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error);
ngx_int_t ngx_http_tent_import_version(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error);
ngx_int_t ngx_http_tent_import_following(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error);
ngx_int_t ngx_http_tent_import_follower(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error);
ngx_int_t ngx_http_tent_import_group(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error);
ngx_int_t ngx_http_tent_import_post(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error);


#endif /* _NGX_HTTP_TENT_IMPORT_PRIVATE_H_INCLUDED_ */
