
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_NOTIFICATIONS_H_INCLUDED_
#define _NGX_HTTP_TENT_NOTIFICATIONS_H_INCLUDED_


/*
 * Posts other servers push to us: notifications and mentions.
 */


#include "ngx_http_tent_base.h"


/* ngx_http_tent_notifications.c */
ngx_int_t ngx_http_tent_notification_challenge(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_notification_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_notification_relayed(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_notification_store(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *body, ngx_str_t *entity,
    ngx_uint_t mention);
ngx_int_t ngx_http_tent_notification_too_large(ngx_http_request_t *r);

/* ngx_http_tent_mentions.c */
ngx_int_t ngx_http_tent_mention_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


#endif /* _NGX_HTTP_TENT_NOTIFICATIONS_H_INCLUDED_ */
