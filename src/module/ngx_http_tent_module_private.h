
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_MODULE_PRIVATE_H_INCLUDED_
#define _NGX_HTTP_TENT_MODULE_PRIVATE_H_INCLUDED_


#if !(NGX_HTTP_TENT_MODULE_PRIVATE)
#error "only the module files include ngx_http_tent_module_private.h"
#endif


/*
 * What the module's own four files share, and no other file needs:
 * the module (ngx_http_tent_module.c) names the setters in its table of
 * directives and the confs' handlers (ngx_http_tent_module_conf.c) in
 * its context, and installs the router's phase handler; the setters and
 * the merge check URLs as the request's ctx does (ngx_http_tent_ctx.c).
 */


#include "ngx_http_tent_base.h"


/* ngx_http_tent_conf.c: the directives' setters and checks */
extern ngx_conf_post_t  ngx_http_tent_apps_unconfirmed_post;
extern ngx_conf_post_t  ngx_http_tent_apps_unconfirmed_time_post;
extern ngx_conf_enum_t  ngx_http_tent_link_forms[];

char *ngx_http_tent_store_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_tent_entity_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_tent_api_root_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_tent_servers_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_tent_skew_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_tent_delivery_retry_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
char *ngx_http_tent_entity_page_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_tent_anonymous_cache_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
ngx_int_t ngx_http_tent_cstring(ngx_pool_t *pool, ngx_str_t *s,
    const char *suffix);

/* ngx_http_tent_router.c: the phase that hands a request to the router */
ngx_int_t ngx_http_tent_precontent_handler(ngx_http_request_t *r);

/* ngx_http_tent_module_conf.c: the confs created, merged, initialized */
void *ngx_http_tent_create_main_conf(ngx_conf_t *cf);
char *ngx_http_tent_init_main_conf(ngx_conf_t *cf, void *conf);
void *ngx_http_tent_create_srv_conf(ngx_conf_t *cf);
char *ngx_http_tent_merge_srv_conf(ngx_conf_t *cf, void *parent,
    void *child);
void *ngx_http_tent_create_loc_conf(ngx_conf_t *cf);
char *ngx_http_tent_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);


#endif /* _NGX_HTTP_TENT_MODULE_PRIVATE_H_INCLUDED_ */
