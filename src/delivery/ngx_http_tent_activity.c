
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * ActivityPub activities that are no post of ours (issue #29): the
 * interface the inbox and the followings call to queue an Accept, a
 * Follow, an Undo.  Not carried yet: the ActivityPub transport of the
 * engine is the next step, so a call says so and queues nothing.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"


ngx_int_t
ngx_http_tent_delivery_activity(ngx_pool_t *pool, ngx_str_t *owner,
    ngx_http_tent_store_op_t *op, json_t *activity, ngx_str_t *inbox)
{
    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, pool->log, 0,
                   "tent activity for \"%V\" of \"%V\": no transport yet",
                   inbox, owner);

    return NGX_DECLINED;
}
