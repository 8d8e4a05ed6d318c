
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_AP_MAP_H_INCLUDED_
#define _NGX_HTTP_TENT_AP_MAP_H_INCLUDED_


/*
 * Tent posts and ActivityStreams objects (docs/activitypub.md): the
 * minimal forms the collections and the inbox need, until the whole
 * mapping and its sanitizer land.
 */


#include "ngx_http_tent_base.h"


#define NGX_HTTP_TENT_AP_PUBLIC  "https://www.w3.org/ns/activitystreams#Public"


/*
 * A post of ours (as stored) as a Note or an Article, a new reference;
 * NULL when it has no ActivityPub form (not public, another type).
 * origin_api: "<origin><api root>" (no "/" at its end).
 */
json_t *ngx_http_tent_ap_object(ngx_pool_t *pool, ngx_str_t *origin_api,
    ngx_str_t *entity, json_t *post);
json_t *ngx_http_tent_ap_to_post(ngx_pool_t *pool, json_t *object,
    ngx_str_t *actor, const char **error);


#endif /* _NGX_HTTP_TENT_AP_MAP_H_INCLUDED_ */
