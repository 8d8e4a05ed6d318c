
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_SHM_H_INCLUDED_
#define _NGX_HTTP_TENT_SHM_H_INCLUDED_


/*
 * The module's shared memory zone, as the layers below auth see it: two
 * generation counters every worker reads.  The store moves them from the
 * keys a write touched; the caches compare them.  The zone and its
 * nonces are ngx_http_tent_nonce.c's.
 */


#include "ngx_http_tent_module.h"


ngx_int_t ngx_http_tent_nonce_zone_init(ngx_shm_zone_t *zone, void *data);

/* anonymous replies: moved by a write of a post or a profile section */
ngx_atomic_uint_t ngx_http_tent_generation(ngx_cycle_t *cycle);
void ngx_http_tent_generation_bump(ngx_cycle_t *cycle);

/* credentials: moved by a write of a credential row */
ngx_atomic_uint_t ngx_http_tent_credential_generation(ngx_cycle_t *cycle);
void ngx_http_tent_credential_bump(ngx_cycle_t *cycle);


#endif /* _NGX_HTTP_TENT_SHM_H_INCLUDED_ */
