
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_GUARD_H_INCLUDED_
#define _NGX_HTTP_TENT_GUARD_H_INCLUDED_


/*
 * The SSRF guard: which addresses outbound requests may reach.
 */


#include "ngx_http_tent_base.h"


/* ngx_http_tent_guard.c */
ngx_array_t *ngx_http_tent_guard_create(ngx_conf_t *cf);
char *ngx_http_tent_outbound_allow(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_tent_guard_check(ngx_array_t *denied, ngx_array_t *allow,
    struct sockaddr *sa);


#endif /* _NGX_HTTP_TENT_GUARD_H_INCLUDED_ */
