
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_STATUS_H_INCLUDED_
#define _NGX_HTTP_TENT_STATUS_H_INCLUDED_


#include "ngx_http_tent_base.h"


/* ngx_http_tent_status.c: "tent_status;", the operator's counters */
char *ngx_http_tent_status_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);


#endif /* _NGX_HTTP_TENT_STATUS_H_INCLUDED_ */
