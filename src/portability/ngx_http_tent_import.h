
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_IMPORT_H_INCLUDED_
#define _NGX_HTTP_TENT_IMPORT_H_INCLUDED_


/*
 * POST {api_root}/import: an export document taken into an empty entity
 * (docs/import.md).
 */


#include "ngx_http_tent_base.h"


/* ngx_http_tent_import.c: POST /import */
ngx_int_t ngx_http_tent_import_post_route(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


#endif /* _NGX_HTTP_TENT_IMPORT_H_INCLUDED_ */
