
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_AP_MAP_H_INCLUDED_
#define _NGX_HTTP_TENT_AP_MAP_H_INCLUDED_


/*
 * Tent posts and ActivityStreams objects (AP.md item 6).  A minimal
 * version, the inbox's: an object to a post's fields; helper "apmap"
 * holds the whole mapping.
 */


#include "ngx_http_tent_base.h"


json_t *ngx_http_tent_ap_to_post(ngx_pool_t *pool, json_t *object,
    ngx_str_t *actor, const char **error);


#endif /* _NGX_HTTP_TENT_AP_MAP_H_INCLUDED_ */
