
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_EXPORT_H_INCLUDED_
#define _NGX_HTTP_TENT_EXPORT_H_INCLUDED_


/*
 * Portability (issue 14): the entity as one document, streamed
 * (docs/export.md).
 */


#include "ngx_http_tent_base.h"


/* ngx_http_tent_export.c: GET /export */
ngx_int_t ngx_http_tent_export_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


#endif /* _NGX_HTTP_TENT_EXPORT_H_INCLUDED_ */
