
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The inbox's four per-worker sets (ngx_http_tent_ap_sets.c): keys kept,
 * keyIds that failed, hosts' failures, signatures seen; each bounded in
 * entries, the least recently used going first.  Private to the inbox's
 * verification (ngx_http_tent_ap_verify.c, _sign.c).
 */


#ifndef _NGX_HTTP_TENT_AP_SETS_H_INCLUDED_
#define _NGX_HTTP_TENT_AP_SETS_H_INCLUDED_


#include "ngx_http_tent_base.h"

#include <openssl/evp.h>


/* keys kept: how many, how long, when a failure may fetch again */
#define NGX_HTTP_TENT_AP_KEYS          1024
#define NGX_HTTP_TENT_AP_KEY_TTL       3600
#define NGX_HTTP_TENT_AP_KEY_REFETCH   60

/* keyIds whose fetch failed, not fetched again for 10 minutes */
#define NGX_HTTP_TENT_AP_FAILED        1024
#define NGX_HTTP_TENT_AP_FAILED_TTL    600

/* a host: at most 8 failed key fetches a minute, then none that minute */
#define NGX_HTTP_TENT_AP_HOSTS         256
#define NGX_HTTP_TENT_AP_HOST_FAILS    8
#define NGX_HTTP_TENT_AP_HOST_WINDOW   60

/* signatures seen, for the whole window */
#define NGX_HTTP_TENT_AP_SEEN          8192

#define NGX_HTTP_TENT_AP_URL_MAX       2048


typedef struct {
    ngx_str_node_t                  sn;
    ngx_queue_t                     queue;
    time_t                          expires;
    time_t                          since;    /* fetched, or tried again */
    ngx_uint_t                      count;
    EVP_PKEY                       *pkey;
    ngx_str_t                       owner;
    ngx_str_t                       inbox;
    ngx_str_t                       shared_inbox;
    ngx_str_t                       face_name;    /* in face, allocated */
    ngx_str_t                       face_icon;
    u_char                         *face;
} ngx_http_tent_ap_entry_t;


typedef struct {
    ngx_rbtree_t                    tree;
    ngx_rbtree_node_t               sentinel;
    ngx_queue_t                     lru;
    ngx_uint_t                      n;
    ngx_uint_t                      max;
} ngx_http_tent_ap_set_t;


typedef struct {
    ngx_http_tent_ap_set_t          keys;
    ngx_http_tent_ap_set_t          failed;
    ngx_http_tent_ap_set_t          hosts;
    ngx_http_tent_ap_set_t          seen;
} ngx_http_tent_ap_sets_t;


extern ngx_http_tent_ap_sets_t  *ngx_http_tent_ap_sets;

ngx_int_t ngx_http_tent_ap_sets_init(void);
ngx_http_tent_ap_entry_t *ngx_http_tent_ap_set_get(
    ngx_http_tent_ap_set_t *set, ngx_str_t *key);
ngx_http_tent_ap_entry_t *ngx_http_tent_ap_set_add(
    ngx_http_tent_ap_set_t *set, ngx_str_t *key, time_t expires,
    ngx_str_t *owner, ngx_str_t *inbox, ngx_str_t *shared);
void ngx_http_tent_ap_set_drop(ngx_http_tent_ap_set_t *set,
    ngx_http_tent_ap_entry_t *e);


#endif /* _NGX_HTTP_TENT_AP_SETS_H_INCLUDED_ */
