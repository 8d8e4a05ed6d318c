
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_AP_MAP_H_INCLUDED_
#define _NGX_HTTP_TENT_AP_MAP_H_INCLUDED_


/*
 * Tent posts and ActivityStreams objects (issue #29, AP.md item 6).
 * This branch's version is the least the ActivityPub transport needs:
 * a status as a Note, an essay as an Article; helper "apmap" writes the
 * whole mapping (and the other way) with these signatures.
 */


#include "ngx_http_tent_base.h"


/*
 * A post as stored (or as an app sees it) as its object: NULL when it
 * has no ActivityPub form.  "origin_api" is {origin}{tent_api_root},
 * the object's id {origin_api}/posts/{id}.
 */
json_t *ngx_http_tent_ap_object(ngx_pool_t *pool, ngx_str_t *origin_api,
    ngx_str_t *entity, json_t *post);


#endif /* _NGX_HTTP_TENT_AP_MAP_H_INCLUDED_ */
