
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_AUTH_PRIVATE_H_INCLUDED_
#define _NGX_HTTP_TENT_AUTH_PRIVATE_H_INCLUDED_


#if !(NGX_HTTP_TENT_AUTH_PRIVATE)
#error "only the auth files include ngx_http_tent_auth_private.h"
#endif


/*
 * What the files of authentication share and no other file needs:
 * ngx_http_tent_auth.c (verifying a request) asks the nonce zone
 * (ngx_http_tent_nonce.c) and the worker's credential cache
 * (ngx_http_tent_credentials.c).  Only they include it.
 */


#include "ngx_http_tent_base.h"


/*
 * Who may fill the nonce cache.  Anyone gets an app key (POST /apps) and
 * anyone with a web server a follower's key (POST /followers), so each
 * of these two kinds may hold at most a quarter of the cache; the rest
 * is for the keys the owner approved: authorizations, and the servers
 * the owner follows.  Each entity may hold at most tent_mac_nonce_share
 * of the cache, and each of those kinds a quarter of that, so one
 * tenant's keys never fill it for another.  A full share is refused,
 * never forgotten.
 */

#define NGX_HTTP_TENT_NONCE_APP       0
#define NGX_HTTP_TENT_NONCE_FOLLOWER  1
#define NGX_HTTP_TENT_NONCE_OWNER     2
#define NGX_HTTP_TENT_NONCE_FOLLOWING 3
#define NGX_HTTP_TENT_NONCE_BUDGETS   4


/* ngx_http_tent_nonce.c */
ngx_int_t ngx_http_tent_nonce_check(ngx_http_request_t *r,
    ngx_str_t *entity, ngx_str_t *key, ngx_uint_t budget, time_t lifetime,
    time_t *retry);

/* ngx_http_tent_credentials.c: by the credential row's key */
json_t *ngx_http_tent_credential_cached(ngx_str_t *key,
    ngx_atomic_uint_t generation);
void ngx_http_tent_credential_keep(ngx_str_t *key,
    ngx_atomic_uint_t generation, json_t *cred, size_t size);


#endif /* _NGX_HTTP_TENT_AUTH_PRIVATE_H_INCLUDED_ */
