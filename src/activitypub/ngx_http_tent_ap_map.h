
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_AP_MAP_H_INCLUDED_
#define _NGX_HTTP_TENT_AP_MAP_H_INCLUDED_


/*
 * Tent posts and ActivityStreams objects, both ways (issue #29,
 * docs/activitypub.md "Posts both ways"), and the HTML allow-list the
 * fediverse's content goes through.  Pure functions: no request, no
 * store, no I/O; the pool holds scratch strings only.  Every json_t
 * returned is a new reference the caller owns (json_decref(), or
 * ngx_http_tent_json_own() to hand it to a pool).
 */


#include "ngx_http_tent_base.h"


#define NGX_HTTP_TENT_AP_PUBLIC                                              \
    "https://www.w3.org/ns/activitystreams#Public"
#define NGX_HTTP_TENT_AP_CONTEXT    "https://www.w3.org/ns/activitystreams"

/* ngx_http_tent_ap_activity(): what the activity does with the post */
#define NGX_HTTP_TENT_AP_CREATE     0
#define NGX_HTTP_TENT_AP_UPDATE     1
#define NGX_HTTP_TENT_AP_DELETE     2

/* ngx_http_tent_ap_repost_kind(): a repost, the delete post of one */
#define NGX_HTTP_TENT_AP_REPOST     1
#define NGX_HTTP_TENT_AP_UNREPOST   2

/* an inbound object over these is refused whole */
#define NGX_HTTP_TENT_AP_CONTENT_MAX   (64 * 1024)
#define NGX_HTTP_TENT_AP_TAGS_MAX      32
#define NGX_HTTP_TENT_AP_ATTACH_MAX    8
#define NGX_HTTP_TENT_AP_ADDRESS_MAX   64
#define NGX_HTTP_TENT_AP_URL_MAX       2048
#define NGX_HTTP_TENT_AP_NAME_TEXT_MAX 1024

/* Tent's status limit, in characters (docs/posts.md) */
#define NGX_HTTP_TENT_AP_STATUS_CHARS  256

/* the Tent id of a remote object: base64url of 16 bytes of SHA-256 */
#define NGX_HTTP_TENT_AP_POST_ID_LEN   22

#define ngx_http_tent_ap_alpha(c)                                            \
    (((c) | 0x20) >= 'a' && ((c) | 0x20) <= 'z')


/* ngx_http_tent_ap_map.c: our posts as ActivityStreams */
json_t *ngx_http_tent_ap_object(ngx_pool_t *pool, ngx_str_t *origin_api,
    ngx_str_t *entity, json_t *post);
json_t *ngx_http_tent_ap_object_named(ngx_pool_t *pool,
    ngx_str_t *origin_api, ngx_str_t *entity, ngx_str_t *name, json_t *post);
json_t *ngx_http_tent_ap_activity(ngx_pool_t *pool, ngx_str_t *origin_api,
    ngx_str_t *entity, json_t *post, ngx_uint_t kind);
json_t *ngx_http_tent_ap_activity_named(ngx_pool_t *pool,
    ngx_str_t *origin_api, ngx_str_t *entity, ngx_str_t *name, json_t *post,
    ngx_uint_t kind);
json_t *ngx_http_tent_ap_narrow(json_t *activity, ngx_str_t *recipient);
ngx_int_t ngx_http_tent_ap_entity_name(ngx_str_t *entity, ngx_str_t *name);
ngx_int_t ngx_http_tent_ap_object_post(ngx_str_t *origin_api,
    ngx_str_t *url, ngx_str_t *id);
ngx_int_t ngx_http_tent_ap_post_id(ngx_str_t *object_id, u_char *id);
ngx_int_t ngx_http_tent_ap_audience(ngx_pool_t *pool, json_t *obj,
    ngx_str_t *origin_api, ngx_str_t *entity, ngx_str_t *name, json_t *post);

/* ngx_http_tent_ap_announce.c: our reposts as Announce, their deletes */
ngx_uint_t ngx_http_tent_ap_repost_kind(json_t *post);
ngx_int_t ngx_http_tent_ap_repost_object(ngx_pool_t *pool,
    ngx_str_t *origin_api, ngx_str_t *entity, json_t *post, json_t *reposted,
    ngx_str_t *object);
json_t *ngx_http_tent_ap_announce(ngx_pool_t *pool, ngx_str_t *origin_api,
    ngx_str_t *entity, ngx_str_t *name, json_t *post, ngx_str_t *object);
json_t *ngx_http_tent_ap_undo_announce(ngx_pool_t *pool,
    ngx_str_t *origin_api, ngx_str_t *entity, ngx_str_t *name, json_t *post);

/* ngx_http_tent_ap_map_in.c: the fediverse's objects as Tent posts */
json_t *ngx_http_tent_ap_to_post(ngx_pool_t *pool, json_t *object,
    ngx_str_t *actor, const char **error);

/* ngx_http_tent_ap_util.c: characters, times, origins */
u_char *ngx_http_tent_ap_char(u_char *p, u_char *last, uint32_t *cp);
u_char *ngx_http_tent_ap_ref(u_char *p, u_char *last, uint32_t *cp);
size_t ngx_http_tent_ap_utf8(uint32_t cp, u_char *buf);
ngx_int_t ngx_http_tent_ap_time(json_int_t t, u_char *buf);
u_char *ngx_http_tent_ap_digits(u_char *p, uint64_t v, size_t width);
ngx_int_t ngx_http_tent_ap_parse_time(u_char *p, size_t len,
    json_int_t *t);
ngx_int_t ngx_http_tent_ap_same_origin(ngx_str_t *a, ngx_str_t *b);

/* ngx_http_tent_ap_html.c: the allow-list, text and our text as HTML */
ngx_int_t ngx_http_tent_ap_html(ngx_pool_t *pool, ngx_str_t *in,
    size_t max, ngx_str_t *out);
ngx_int_t ngx_http_tent_ap_text(ngx_pool_t *pool, ngx_str_t *in,
    size_t max, ngx_str_t *out);
ngx_int_t ngx_http_tent_ap_text_html(ngx_pool_t *pool, ngx_str_t *in,
    size_t max, ngx_str_t *out);


#endif /* _NGX_HTTP_TENT_AP_MAP_H_INCLUDED_ */
