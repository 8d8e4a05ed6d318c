
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_DELIVERY_H_INCLUDED_
#define _NGX_HTTP_TENT_DELIVERY_H_INCLUDED_


/*
 * Delivery of our posts to followers: the outbox row a post write adds,
 * and the engine in the store owner that fans out and sends.  The
 * engine's inside is ngx_http_tent_delivery_private.h.
 */


#include "ngx_http_tent_store.h"


/*
 * ngx_http_tent_outbox.c: the one call of the handlers (a post created,
 * versioned or deleted, a relationship's post, a post received), the
 * outbox row of "post" of "owner" into its write "op"
 */
ngx_int_t ngx_http_tent_delivery_mark(ngx_pool_t *pool, ngx_str_t *owner,
    ngx_http_tent_store_op_t *op, json_t *post);

/*
 * ngx_http_tent_activity.c: an ActivityPub activity that is no post of
 * ours (an Accept, a Follow, an Undo, an Update of the actor) for one
 * "inbox", queued by "owner" into its write "op": sent signed by the
 * engine's ActivityPub transport, retried as any job (issue #29):
 * NGX_DECLINED for an activity that is not an object, over 64 KB, or an
 * inbox that is no http(s) URL (nothing added to "op")
 */
ngx_int_t ngx_http_tent_delivery_activity(ngx_pool_t *pool,
    ngx_str_t *owner, ngx_http_tent_store_op_t *op, json_t *activity,
    ngx_str_t *inbox);

/* ngx_http_tent_hosts.c: the directives of per-host caps and breakers */
char *ngx_http_tent_delivery_breaker_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
ngx_int_t ngx_http_tent_hosts_conf(ngx_conf_t *cf,
    ngx_http_tent_main_conf_t *mcf);

/* ngx_http_tent_job_row.c: a status row for GET /posts/:id/deliveries */
json_t *ngx_http_tent_delivery_status_record(ngx_str_t *value,
    ngx_log_t *log);

/* ngx_http_tent_delivery.c */
ngx_int_t ngx_http_tent_delivery_start(ngx_cycle_t *cycle,
    ngx_http_tent_main_conf_t *mcf);


#endif /* _NGX_HTTP_TENT_DELIVERY_H_INCLUDED_ */
