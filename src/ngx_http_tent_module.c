
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Directives, configuration, process hooks and the router.  Tent routes
 * are answered in the content phase, after nginx's own access phase, so
 * auth_basic, allow/deny or limit_req work on any Tent location.
 */


#include "ngx_http_tent_module.h"
#include "ngx_http_tent_apps.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_cache.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_guard.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_notifications.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_profile.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_resolver.h"
#include "ngx_http_tent_store.h"

#include <dirent.h>


typedef struct {
    ngx_str_t                       path;
    ngx_uint_t                      methods;
    ngx_http_tent_route_pt          handler;
} ngx_http_tent_route_t;


static ngx_int_t ngx_http_tent_preconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_tent_postconfiguration(ngx_conf_t *cf);
static void *ngx_http_tent_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_tent_init_main_conf(ngx_conf_t *cf, void *conf);
static void *ngx_http_tent_create_srv_conf(ngx_conf_t *cf);
static char *ngx_http_tent_merge_srv_conf(ngx_conf_t *cf, void *parent,
    void *child);
static void *ngx_http_tent_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_tent_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static char *ngx_http_tent_store_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_tent_entity_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static char *ngx_http_tent_api_root_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static char *ngx_http_tent_servers_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static ngx_int_t ngx_http_tent_init_module(ngx_cycle_t *cycle);
static ngx_int_t ngx_http_tent_init_process(ngx_cycle_t *cycle);
static void ngx_http_tent_exit_process(ngx_cycle_t *cycle);
static ngx_int_t ngx_http_tent_precontent_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_tent_api_handler(ngx_http_request_t *r);
static void ngx_http_tent_raw_api_path(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_dispatch(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_check_url(ngx_str_t *url, ngx_str_t *origin,
    ngx_str_t *path);
static char *ngx_http_tent_skew_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_tent_delivery_retry_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static char *ngx_http_tent_entity_page_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static char *ngx_http_tent_anonymous_cache_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
static char *ngx_http_tent_apps_unconfirmed_check(ngx_conf_t *cf, void *post,
    void *data);
static char *ngx_http_tent_apps_unconfirmed_time_check(ngx_conf_t *cf,
    void *post, void *data);


static ngx_conf_post_t  ngx_http_tent_apps_unconfirmed_post =
    { ngx_http_tent_apps_unconfirmed_check };

static ngx_conf_post_t  ngx_http_tent_apps_unconfirmed_time_post =
    { ngx_http_tent_apps_unconfirmed_time_check };


static ngx_conf_enum_t  ngx_http_tent_link_forms[] = {
    { ngx_string("off"), NGX_HTTP_TENT_LINK_OFF },
    { ngx_string("absolute"), NGX_HTTP_TENT_LINK_ABSOLUTE },
    { ngx_string("relative"), NGX_HTTP_TENT_LINK_RELATIVE },
    { ngx_null_string, 0 }
};


static ngx_command_t  ngx_http_tent_commands[] = {

    { ngx_string("tent_store"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_tent_store_directive,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("tent_store_socket"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, socket_path),
      NULL },

    { ngx_string("tent_store_thread_pool"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, thread_pool_name),
      NULL },

    { ngx_string("tent_store_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, store_timeout),
      NULL },

    { ngx_string("tent_store_queue"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, store_max_waiting),
      NULL },

    { ngx_string("tent_entity"),
      NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_tent_entity_directive,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("tent_api_root"),
      NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_http_tent_api_root_directive,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("tent_servers"),
      NGX_HTTP_SRV_CONF|NGX_CONF_1MORE,
      ngx_http_tent_servers_directive,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("tent_owner"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_set_complex_value_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_tent_loc_conf_t, owner),
      NULL },

    { ngx_string("tent_mac_skew"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_tent_skew_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_tent_loc_conf_t, mac_skew),
      NULL },

    { ngx_string("tent_mac_nonce_cache"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, nonce_zone_size),
      NULL },

    { ngx_string("tent_anonymous_cache"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_tent_anonymous_cache_directive,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("tent_max_attachment_size"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_tent_loc_conf_t, attachment_max),
      NULL },

    { ngx_string("tent_outbound_allow"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_1MORE,
      ngx_http_tent_outbound_allow,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("tent_outbound_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_tent_srv_conf_t, outbound.timeout),
      NULL },

    { ngx_string("tent_outbound_deadline"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_tent_srv_conf_t, outbound.deadline),
      NULL },

    { ngx_string("tent_outbound_servers"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_tent_srv_conf_t, outbound.servers),
      NULL },

    { ngx_string("tent_outbound_max_response"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_tent_srv_conf_t, outbound.max_response),
      NULL },

    { ngx_string("tent_outbound_trusted_certificate"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, trusted_certificate),
      NULL },

    { ngx_string("tent_outbound_verify"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, ssl_verify),
      NULL },

    { ngx_string("tent_outbound_max_requests"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, max_fetches),
      NULL },

    { ngx_string("tent_outbound_anonymous_requests"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, max_anonymous),
      NULL },

    { ngx_string("tent_delivery"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, delivery_on),
      NULL },

    { ngx_string("tent_delivery_interval"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, delivery_interval),
      NULL },

    { ngx_string("tent_delivery_concurrency"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, delivery_concurrency),
      NULL },

    { ngx_string("tent_delivery_attempts"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, delivery_attempts),
      NULL },

    { ngx_string("tent_delivery_dead_letter_time"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, dead_letter_time),
      NULL },

    { ngx_string("tent_delivery_retry"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE12,
      ngx_http_tent_delivery_retry_directive,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("tent_apps_unconfirmed"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_tent_srv_conf_t, apps_unconfirmed),
      &ngx_http_tent_apps_unconfirmed_post },

    { ngx_string("tent_apps_unconfirmed_time"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_tent_srv_conf_t, apps_unconfirmed_time),
      &ngx_http_tent_apps_unconfirmed_time_post },

    { ngx_string("tent_profile_link"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_tent_loc_conf_t, link),
      &ngx_http_tent_link_forms },

    { ngx_string("tent_entity_page"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_tent_entity_page_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_tent_module_ctx = {
    ngx_http_tent_preconfiguration,        /* preconfiguration */
    ngx_http_tent_postconfiguration,       /* postconfiguration */

    ngx_http_tent_create_main_conf,        /* create main configuration */
    ngx_http_tent_init_main_conf,          /* init main configuration */

    ngx_http_tent_create_srv_conf,         /* create server configuration */
    ngx_http_tent_merge_srv_conf,          /* merge server configuration */

    ngx_http_tent_create_loc_conf,         /* create location configuration */
    ngx_http_tent_merge_loc_conf           /* merge location configuration */
};


ngx_module_t  ngx_http_tent_module = {
    NGX_MODULE_V1,
    &ngx_http_tent_module_ctx,             /* module context */
    ngx_http_tent_commands,                /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    ngx_http_tent_init_module,             /* init module */
    ngx_http_tent_init_process,            /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_tent_exit_process,            /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


/* paths are relative to the API root; ":x" matches one segment */

static ngx_http_tent_route_t  ngx_http_tent_routes[] = {

    { ngx_string("/profile"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_profile_get },

    { ngx_string("/profile/:type"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_profile_type_get },

    { ngx_string("/profile/:type"),
      NGX_HTTP_PUT|NGX_HTTP_DELETE,
      ngx_http_tent_profile_change },

    { ngx_string("/apps"),
      NGX_HTTP_POST,
      ngx_http_tent_apps_create },

    { ngx_string("/apps"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_apps_list },

    { ngx_string("/apps/:id"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_app_get },

    { ngx_string("/apps/:id"),
      NGX_HTTP_PUT,
      ngx_http_tent_app_update },

    { ngx_string("/apps/:id"),
      NGX_HTTP_DELETE,
      ngx_http_tent_app_delete },

    { ngx_string("/apps/:id/authorizations"),
      NGX_HTTP_POST,
      ngx_http_tent_authorizations_post },

    { ngx_string("/apps/:id/authorizations"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_authorizations_list },

    { ngx_string("/apps/:id/authorizations/:auth"),
      NGX_HTTP_PUT,
      ngx_http_tent_authorization_update },

    { ngx_string("/apps/:id/authorizations/:auth"),
      NGX_HTTP_DELETE,
      ngx_http_tent_authorization_delete },

    { ngx_string("/posts"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_posts_list },

    { ngx_string("/posts"),
      NGX_HTTP_POST,
      ngx_http_tent_posts_post },

    { ngx_string("/posts/count"),
      NGX_HTTP_GET,
      ngx_http_tent_posts_count },

    { ngx_string("/posts/:id"),
      NGX_HTTP_GET|NGX_HTTP_HEAD|NGX_HTTP_PUT|NGX_HTTP_DELETE,
      ngx_http_tent_post_get },

    { ngx_string("/posts/:id/mentions"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_post_mentions_list },

    { ngx_string("/posts/:id/versions"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_post_versions },

    { ngx_string("/posts/:entity/:id"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_post_get },

    { ngx_string("/posts/:id/attachments/:name"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_post_attachment },

    { ngx_string("/posts/:entity/:id/attachments/:name"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_post_attachment },

    { ngx_string("/groups"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_groups_list },

    { ngx_string("/groups"),
      NGX_HTTP_POST,
      ngx_http_tent_groups_post },

    { ngx_string("/groups/count"),
      NGX_HTTP_GET,
      ngx_http_tent_groups_list },

    { ngx_string("/groups/:id"),
      NGX_HTTP_GET|NGX_HTTP_HEAD|NGX_HTTP_PUT|NGX_HTTP_DELETE,
      ngx_http_tent_group },

    { ngx_string("/followers"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_followers_list },

    { ngx_string("/followers"),
      NGX_HTTP_POST,
      ngx_http_tent_followers_post },

    { ngx_string("/followers/count"),
      NGX_HTTP_GET,
      ngx_http_tent_followers_list },

    { ngx_string("/followers/:id"),
      NGX_HTTP_GET|NGX_HTTP_HEAD|NGX_HTTP_PUT|NGX_HTTP_DELETE,
      ngx_http_tent_follower },

    { ngx_string("/followings"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_followings_list },

    { ngx_string("/followings"),
      NGX_HTTP_POST,
      ngx_http_tent_followings_post },

    { ngx_string("/followings/count"),
      NGX_HTTP_GET,
      ngx_http_tent_followings_list },

    { ngx_string("/followings/:id"),
      NGX_HTTP_GET|NGX_HTTP_HEAD|NGX_HTTP_PUT|NGX_HTTP_DELETE,
      ngx_http_tent_following },

    { ngx_string("/followings/:id/*"),
      NGX_HTTP_GET,
      ngx_http_tent_following_proxy },

    { ngx_string("/notifications/:id"),
      NGX_HTTP_GET|NGX_HTTP_HEAD,
      ngx_http_tent_notification_challenge },

    { ngx_string("/notifications/:id"),
      NGX_HTTP_POST,
      ngx_http_tent_notification_post },

    { ngx_string("/oauth/authorize"),
      NGX_HTTP_GET|NGX_HTTP_HEAD|NGX_HTTP_POST,
      ngx_http_tent_oauth_authorize },

    { ngx_null_string, 0, NULL }
};


static ngx_int_t
ngx_http_tent_preconfiguration(ngx_conf_t *cf)
{
    return ngx_http_tent_add_variables(cf);
}


static ngx_int_t
ngx_http_tent_postconfiguration(ngx_conf_t *cf)
{
    ngx_http_handler_pt        *h;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PRECONTENT_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_tent_precontent_handler;

    /*
     * The entity root answers only when nothing else would: handlers run
     * from the end of the array, so ours goes first in it, to run last.
     */

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_CONTENT_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h = cmcf->phases[NGX_HTTP_CONTENT_PHASE].handlers.elts;

    ngx_memmove(&h[1], &h[0], (cmcf->phases[NGX_HTTP_CONTENT_PHASE]
                               .handlers.nelts - 1) * sizeof(*h));

    h[0] = ngx_http_tent_root_handler;

    return ngx_http_tent_discovery_init(cf);
}


static void *
ngx_http_tent_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_tent_main_conf_t));
    if (mcf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     mcf->store_path = { 0, NULL };
     *     mcf->socket_path = { 0, NULL };
     *     mcf->thread_pool_name = { 0, NULL };
     */

    mcf->store_timeout = NGX_CONF_UNSET_MSEC;
    mcf->store_max_waiting = NGX_CONF_UNSET_UINT;
    mcf->nonce_zone_size = NGX_CONF_UNSET_SIZE;
    mcf->anonymous_cache = NGX_CONF_UNSET_SIZE;
    mcf->ssl_verify = NGX_CONF_UNSET;
    mcf->max_fetches = NGX_CONF_UNSET_UINT;
    mcf->max_anonymous = NGX_CONF_UNSET_UINT;
    mcf->delivery_on = NGX_CONF_UNSET;
    mcf->delivery_interval = NGX_CONF_UNSET_MSEC;
    mcf->delivery_concurrency = NGX_CONF_UNSET_UINT;
    mcf->delivery_attempts = NGX_CONF_UNSET_UINT;
    mcf->delivery_retry = NGX_CONF_UNSET_MSEC;
    mcf->delivery_retry_max = NGX_CONF_UNSET_MSEC;
    mcf->dead_letter_time = NGX_CONF_UNSET;

    if (ngx_array_init(&mcf->entity_confs, cf->pool, 4,
                       sizeof(ngx_http_tent_entity_conf_t))
        != NGX_OK)
    {
        return NULL;
    }

    return mcf;
}


static ngx_int_t
ngx_http_tent_cstring(ngx_pool_t *pool, ngx_str_t *s, const char *suffix)
{
    size_t   n;
    u_char  *p;

    n = suffix ? ngx_strlen(suffix) : 0;

    p = ngx_pnalloc(pool, s->len + n + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(p, s->data, s->len);

    if (n) {
        ngx_memcpy(p + s->len, suffix, n);
    }
    p[s->len + n] = '\0';

    s->data = p;
    s->len += n;

    return NGX_OK;
}


/* "tent_anonymous_cache 16m;" or "off": each worker's bytes of replies */

static char *
ngx_http_tent_anonymous_cache_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_tent_main_conf_t *mcf = conf;

    ssize_t     size;
    ngx_str_t  *value;

    if (mcf->anonymous_cache != NGX_CONF_UNSET_SIZE) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 3 && ngx_strcmp(value[1].data, "off") == 0) {
        mcf->anonymous_cache = 0;
        return NGX_CONF_OK;
    }

    size = ngx_parse_size(&value[1]);

    if (size == NGX_ERROR) {
        return "takes a size (e.g. 16m) or \"off\"";
    }

    mcf->anonymous_cache = (size_t) size;

    return NGX_CONF_OK;
}


/*
 * Apps no one authorized yet, per entity: their number is a scan of
 * that many rows on each registration, so it is bounded.
 */

static char *
ngx_http_tent_apps_unconfirmed_check(ngx_conf_t *cf, void *post, void *data)
{
    ngx_uint_t  *np = data;

    if (*np < 1 || *np > NGX_HTTP_TENT_APPS_UNCONFIRMED_MAX) {
        return "must be between 1 and 10000";
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_tent_apps_unconfirmed_time_check(ngx_conf_t *cf, void *post,
    void *data)
{
    time_t  *tp = data;

    if (*tp < 1) {
        return "must be at least 1s";
    }

    return NGX_CONF_OK;
}


/* tent_delivery_retry base [max]; */

/*
 * "location = / { tent_entity_page; }": the entity's page is this
 * location's content handler, so no index file is looked for (two
 * stat() calls a request otherwise).  Other URIs of the location go on
 * to the usual content handlers: the handler declines them.
 */

static char *
ngx_http_tent_entity_page_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    if (clcf->handler == ngx_http_tent_root_handler) {
        return "is duplicate";
    }

    if (clcf->handler) {
        return "conflicts with another handler of the location "
               "(proxy_pass, return...)";
    }

    clcf->handler = ngx_http_tent_root_handler;

    return NGX_CONF_OK;
}


static char *
ngx_http_tent_delivery_retry_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_tent_main_conf_t *mcf = conf;

    ngx_str_t  *value;

    if (mcf->delivery_retry != NGX_CONF_UNSET_MSEC) {
        return "is duplicate";
    }

    value = cf->args->elts;

    mcf->delivery_retry = ngx_parse_time(&value[1], 0);

    if (mcf->delivery_retry == (ngx_msec_t) NGX_ERROR
        || mcf->delivery_retry == 0)
    {
        return "has an invalid first delay";
    }

    if (cf->args->nelts == 3) {
        mcf->delivery_retry_max = ngx_parse_time(&value[2], 0);

        if (mcf->delivery_retry_max == (ngx_msec_t) NGX_ERROR
            || mcf->delivery_retry_max < mcf->delivery_retry)
        {
            return "has an invalid longest delay (at least the first one)";
        }
    }

    return NGX_CONF_OK;
}


/* the SSRF guard's table, and TLS for outbound requests */

static ngx_int_t
ngx_http_tent_outbound_init(ngx_conf_t *cf, ngx_http_tent_main_conf_t *mcf)
{
    ngx_pool_cleanup_t  *cln;

    ngx_conf_init_value(mcf->ssl_verify, 1);
    ngx_conf_init_uint_value(mcf->max_fetches, 64);
    ngx_conf_init_value(mcf->delivery_on, 1);
    ngx_conf_init_msec_value(mcf->delivery_interval, 1000);
    ngx_conf_init_uint_value(mcf->delivery_concurrency, 16);
    ngx_conf_init_uint_value(mcf->delivery_attempts, 12);
    ngx_conf_init_msec_value(mcf->delivery_retry, 30000);
    ngx_conf_init_msec_value(mcf->delivery_retry_max, 6 * 3600 * 1000);
    ngx_conf_init_value(mcf->dead_letter_time, 7 * 86400);

    if (mcf->dead_letter_time <= 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tent_delivery_dead_letter_time\" must be "
                           "at least 1s");
        return NGX_ERROR;
    }

    /* a quarter for unsigned requests; the rest is never theirs */

    ngx_conf_init_uint_value(mcf->max_anonymous,
                             mcf->max_fetches > 1
                             ? ngx_max(mcf->max_fetches / 4, 1) : 0);

    if (mcf->max_anonymous >= mcf->max_fetches && mcf->max_fetches) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tent_outbound_anonymous_requests\" must be "
                           "less than \"tent_outbound_max_requests\" (%ui), "
                           "so that deliveries and signed requests keep "
                           "slots of their own", mcf->max_fetches);
        return NGX_ERROR;
    }

    if (mcf->delivery_concurrency == 0
        || mcf->delivery_concurrency > mcf->max_fetches)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tent_delivery_concurrency\" must be between 1 "
                           "and \"tent_outbound_max_requests\" (%ui)",
                           mcf->max_fetches);
        return NGX_ERROR;
    }

    if (mcf->trusted_certificate.data == NULL) {
        ngx_str_set(&mcf->trusted_certificate,
                    "/etc/ssl/certs/ca-certificates.crt");
    }

    mcf->denied = ngx_http_tent_guard_create(cf);
    if (mcf->denied == NULL) {
        return NGX_ERROR;
    }

#if (NGX_HTTP_SSL)

    mcf->ssl = ngx_pcalloc(cf->pool, sizeof(ngx_ssl_t));
    if (mcf->ssl == NULL) {
        return NGX_ERROR;
    }

    mcf->ssl->log = cf->log;

    if (ngx_ssl_create(mcf->ssl, NGX_SSL_TLSv1_2|NGX_SSL_TLSv1_3, NULL)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        ngx_ssl_cleanup_ctx(mcf->ssl);
        return NGX_ERROR;
    }

    cln->handler = ngx_ssl_cleanup_ctx;
    cln->data = mcf->ssl;

    if (mcf->ssl_verify
        && ngx_ssl_trusted_certificate(cf, mcf->ssl,
                                       &mcf->trusted_certificate, 8)
           != NGX_OK)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "cannot load the CA certificates for outbound "
                           "requests from \"%V\"; install ca-certificates, "
                           "or set \"tent_outbound_trusted_certificate\"",
                           &mcf->trusted_certificate);
        return NGX_ERROR;
    }

#else
    (void) cln;
#endif

    return NGX_OK;
}


static char *
ngx_http_tent_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_tent_main_conf_t *mcf = conf;

    ngx_str_t  db, name;

    ngx_conf_init_msec_value(mcf->store_timeout, 5000);
    ngx_conf_init_uint_value(mcf->store_max_waiting, 4096);
    ngx_conf_init_size_value(mcf->nonce_zone_size, 4 * 1024 * 1024);
    ngx_conf_init_size_value(mcf->anonymous_cache, 16 * 1024 * 1024);

    if (mcf->store_path.len == 0) {
        return NGX_CONF_OK;
    }

    if (ngx_http_tent_outbound_init(cf, mcf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    if (mcf->nonce_zone_size < 8 * ngx_pagesize) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tent_mac_nonce_cache\" must be at least %uzk",
                           (8 * ngx_pagesize) >> 10);
        return NGX_CONF_ERROR;
    }

    /* the seen MAC nonces, shared by all workers */

    ngx_str_set(&name, "tent_mac_nonces");

    mcf->nonce_zone = ngx_shared_memory_add(cf, &name,
                                            mcf->nonce_zone_size,
                                            &ngx_http_tent_module);
    if (mcf->nonce_zone == NULL) {
        return NGX_CONF_ERROR;
    }

    mcf->nonce_zone->init = ngx_http_tent_nonce_zone_init;
    mcf->nonce_zone->data = ngx_pcalloc(cf->pool, 2 * sizeof(void *));
    if (mcf->nonce_zone->data == NULL) {
        return NGX_CONF_ERROR;
    }

    db = mcf->store_path;

    if (ngx_http_tent_cstring(cf->pool, &db, "/db") != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    mcf->db_path = db;

    if (mcf->socket_path.len == 0) {
        mcf->socket_path = mcf->store_path;

        if (ngx_http_tent_cstring(cf->pool, &mcf->socket_path, "/store.sock")
            != NGX_OK)
        {
            return NGX_CONF_ERROR;
        }

    } else {
        if (ngx_conf_full_name(cf->cycle, &mcf->socket_path, 0) != NGX_OK
            || ngx_http_tent_cstring(cf->pool, &mcf->socket_path, NULL)
               != NGX_OK)
        {
            return NGX_CONF_ERROR;
        }
    }

    if (mcf->socket_path.len >= 100) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "tent store socket path \"%V\" is longer than "
                           "a UNIX socket allows, set a shorter one with "
                           "\"tent_store_socket\"", &mcf->socket_path);
        return NGX_CONF_ERROR;
    }

    if (mcf->thread_pool_name.len == 0) {
        ngx_str_set(&mcf->thread_pool_name, "default");
    }

    /* an undeclared pool other than "default" fails "nginx -t" here */

    mcf->thread_pool = ngx_thread_pool_add(cf, &mcf->thread_pool_name);
    if (mcf->thread_pool == NULL) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static void *
ngx_http_tent_create_srv_conf(ngx_conf_t *cf)
{
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_pcalloc(cf->pool, sizeof(ngx_http_tent_srv_conf_t));
    if (scf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     scf->entity = NULL;
     *     scf->api_root = { 0, NULL };
     *     scf->servers = NULL;
     */

    scf->outbound.allow = NGX_CONF_UNSET_PTR;
    scf->outbound.timeout = NGX_CONF_UNSET_MSEC;
    scf->outbound.deadline = NGX_CONF_UNSET_MSEC;
    scf->outbound.servers = NGX_CONF_UNSET_UINT;
    scf->outbound.max_response = NGX_CONF_UNSET_SIZE;
    scf->apps_unconfirmed = NGX_CONF_UNSET_UINT;
    scf->apps_unconfirmed_time = NGX_CONF_UNSET;

    return scf;
}


static char *
ngx_http_tent_merge_srv_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_tent_srv_conf_t *prev = parent;
    ngx_http_tent_srv_conf_t *conf = child;

    u_char                       *p;
    ngx_http_tent_ctx_t          *fixed;
    ngx_http_tent_main_conf_t    *mcf;
    ngx_http_tent_entity_conf_t  *ent;

    ngx_conf_merge_ptr_value(conf->outbound.allow, prev->outbound.allow,
                             NULL);
    ngx_conf_merge_msec_value(conf->outbound.timeout, prev->outbound.timeout,
                              10000);
    ngx_conf_merge_size_value(conf->outbound.max_response,
                              prev->outbound.max_response, 1024 * 1024);
    ngx_conf_merge_uint_value(conf->apps_unconfirmed, prev->apps_unconfirmed,
                              100);
    ngx_conf_merge_value(conf->apps_unconfirmed_time,
                         prev->apps_unconfirmed_time, 3600);
    ngx_conf_merge_msec_value(conf->outbound.deadline,
                              prev->outbound.deadline, 30000);
    ngx_conf_merge_uint_value(conf->outbound.servers,
                              prev->outbound.servers, 3);

    if (conf->outbound.deadline == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tent_outbound_deadline\" must be more than 0");
        return NGX_CONF_ERROR;
    }

    if (conf->outbound.servers == 0
        || conf->outbound.servers > NGX_HTTP_TENT_SERVERS_MAX)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tent_outbound_servers\" must be between 1 "
                           "and %d", NGX_HTTP_TENT_SERVERS_MAX);
        return NGX_CONF_ERROR;
    }

    if (conf->entity == NULL) {
        return NGX_CONF_OK;
    }

    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_tent_module);

    if (mcf->store_path.len == 0) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"tent_entity\" needs \"tent_store\" in the http "
                      "block in %V:%ui", &conf->file, conf->line);
        return NGX_CONF_ERROR;
    }

    if (conf->api_root.data == NULL) {
        ngx_str_set(&conf->api_root, "/tent");
    }

    mcf->entities++;

    /* a fixed entity: its URL's parts once, not on every request */

    if (conf->entity->lengths == NULL) {
        fixed = ngx_pcalloc(cf->pool, sizeof(ngx_http_tent_ctx_t));
        if (fixed == NULL) {
            return NGX_CONF_ERROR;
        }

        fixed->entity = conf->entity->value;

        if (ngx_http_tent_check_url(&fixed->entity, &fixed->origin,
                                    &fixed->root_path)
            == NGX_OK)
        {
            if (fixed->root_path.len == 1
                && fixed->entity.data[fixed->entity.len - 1] == '/')
            {
                fixed->entity.len--;
            }

            fixed->profile_url.len = fixed->origin.len + conf->api_root.len
                                     + sizeof("/profile") - 1;
            fixed->profile_url.data = ngx_pnalloc(cf->pool,
                                                  fixed->profile_url.len);
            if (fixed->profile_url.data == NULL) {
                return NGX_CONF_ERROR;
            }

            p = ngx_cpymem(fixed->profile_url.data, fixed->origin.data,
                           fixed->origin.len);
            p = ngx_cpymem(p, conf->api_root.data, conf->api_root.len);
            ngx_memcpy(p, "/profile", sizeof("/profile") - 1);

            conf->fixed = fixed;
        }
    }

    /* a fixed entity gets background work: delivery to its followers */

    if (conf->entity->lengths == NULL) {
        ent = ngx_array_push(&mcf->entity_confs);
        if (ent == NULL) {
            return NGX_CONF_ERROR;
        }

        ent->entity = conf->entity->value;
        ent->scf = conf;

        p = (u_char *) ngx_strstr(ent->entity.data, "://");

        if (p && ent->entity.len > 1
            && ent->entity.data[ent->entity.len - 1] == '/'
            && ngx_strlchr(p + 3, ent->entity.data + ent->entity.len, '/')
               == ent->entity.data + ent->entity.len - 1)
        {
            ent->entity.len--;
        }
    }

    return NGX_CONF_OK;
}


static void *
ngx_http_tent_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_tent_loc_conf_t  *lcf;

    lcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_tent_loc_conf_t));
    if (lcf == NULL) {
        return NULL;
    }

    lcf->link = NGX_CONF_UNSET_UINT;
    lcf->owner = NGX_CONF_UNSET_PTR;
    lcf->mac_skew = NGX_CONF_UNSET;
    lcf->attachment_max = NGX_CONF_UNSET_SIZE;

    return lcf;
}


static char *
ngx_http_tent_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_tent_loc_conf_t *prev = parent;
    ngx_http_tent_loc_conf_t *conf = child;

    ngx_conf_merge_uint_value(conf->link, prev->link,
                              NGX_HTTP_TENT_LINK_ABSOLUTE);
    ngx_conf_merge_ptr_value(conf->owner, prev->owner, NULL);
    ngx_conf_merge_value(conf->mac_skew, prev->mac_skew, 300);
    ngx_conf_merge_size_value(conf->attachment_max, prev->attachment_max,
                              10 * 1024 * 1024);

    return NGX_CONF_OK;
}


static char *
ngx_http_tent_store_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_tent_main_conf_t *mcf = conf;

    ngx_str_t  *value;

    if (mcf->store_path.data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 0) {
        return "needs a directory";
    }

    mcf->store_path = value[1];

    while (mcf->store_path.len > 1
           && mcf->store_path.data[mcf->store_path.len - 1] == '/')
    {
        mcf->store_path.len--;
    }

    if (ngx_conf_full_name(cf->cycle, &mcf->store_path, 0) != NGX_OK
        || ngx_http_tent_cstring(cf->pool, &mcf->store_path, NULL) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_tent_entity_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_tent_srv_conf_t *scf = conf;

    ngx_str_t                         *value, origin, path;
    ngx_http_compile_complex_value_t   ccv;

    if (scf->entity) {
        return "is duplicate";
    }

    value = cf->args->elts;

    scf->entity = ngx_palloc(cf->pool, sizeof(ngx_http_complex_value_t));
    if (scf->entity == NULL) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = &value[1];
    ccv.complex_value = scf->entity;

    if (ngx_http_compile_complex_value(&ccv) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    /* with variables the value is checked on every request instead */

    if (scf->entity->lengths == NULL
        && ngx_http_tent_check_url(&value[1], &origin, &path) != NGX_OK)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tent_entity\" must be an absolute http:// or "
                           "https:// URL without query or fragment, "
                           "not \"%V\"", &value[1]);
        return NGX_CONF_ERROR;
    }

    if (scf->entity->lengths) {
        if (ngx_strncmp(value[1].data, "http://", 7) != 0
            && ngx_strncmp(value[1].data, "https://", 8) != 0
            && value[1].data[0] != '$')
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"tent_entity\" must start with http:// or "
                               "https://, not \"%V\"", &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    scf->file = cf->conf_file->file.name;
    scf->line = cf->conf_file->line;

    return NGX_CONF_OK;
}


static char *
ngx_http_tent_api_root_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_tent_srv_conf_t *scf = conf;

    u_char     *p;
    ngx_str_t  *value, root;

    if (scf->api_root.data) {
        return "is duplicate";
    }

    value = cf->args->elts;
    root = value[1];

    if (root.len == 0 || root.data[0] != '/') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tent_api_root\" must be a path starting "
                           "with \"/\", not \"%V\"", &root);
        return NGX_CONF_ERROR;
    }

    for (p = root.data; p < root.data + root.len; p++) {
        if (*p <= 0x20 || *p >= 0x7f || *p == '?' || *p == '#' || *p == '%'
            || *p == '<' || *p == '>' || *p == '"' || *p == '\\'
            || (*p == '/' && p + 1 < root.data + root.len && p[1] == '/'))
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"tent_api_root\" must be a plain path, "
                               "not \"%V\"", &root);
            return NGX_CONF_ERROR;
        }
    }

    /* "/" means the API is the whole server: routes are then "/profile" */

    while (root.len && root.data[root.len - 1] == '/') {
        root.len--;
    }

    scf->api_root = root;

    if (root.len == 0) {
        scf->api_root.data = (u_char *) "";
    }

    return NGX_CONF_OK;
}


static char *
ngx_http_tent_servers_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_tent_srv_conf_t *scf = conf;

    ngx_str_t                         *value, origin, path;
    ngx_uint_t                         i;
    ngx_http_complex_value_t          *cv;
    ngx_http_compile_complex_value_t   ccv;

    if (scf->servers) {
        return "is duplicate";
    }

    scf->servers = ngx_array_create(cf->pool, cf->args->nelts - 1,
                                    sizeof(ngx_http_complex_value_t));
    if (scf->servers == NULL) {
        return NGX_CONF_ERROR;
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {
        cv = ngx_array_push(scf->servers);
        if (cv == NULL) {
            return NGX_CONF_ERROR;
        }

        ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));

        ccv.cf = cf;
        ccv.value = &value[i];
        ccv.complex_value = cv;

        if (ngx_http_compile_complex_value(&ccv) != NGX_OK) {
            return NGX_CONF_ERROR;
        }

        if (cv->lengths == NULL
            && ngx_http_tent_check_url(&value[i], &origin, &path) != NGX_OK)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"tent_servers\" takes absolute http:// or "
                               "https:// URLs, not \"%V\"", &value[i]);
            return NGX_CONF_ERROR;
        }
    }

    return NGX_CONF_OK;
}


/* "tent_mac_skew 5m;" or "off": how far a MAC timestamp may be from now */

static char *
ngx_http_tent_skew_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_tent_loc_conf_t *lcf = conf;

    ngx_str_t  *value;

    if (lcf->mac_skew != NGX_CONF_UNSET) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (value[1].len == 3 && ngx_strncmp(value[1].data, "off", 3) == 0) {
        lcf->mac_skew = 0;
        return NGX_CONF_OK;
    }

    lcf->mac_skew = ngx_parse_time(&value[1], 1);

    if (lcf->mac_skew == (time_t) NGX_ERROR || lcf->mac_skew <= 0) {
        return "takes a time, e.g. \"5m\", or \"off\"";
    }

    return NGX_CONF_OK;
}


/*
 * An entity or server URL: http(s)://host[:port][/path], nothing that
 * could break out of a header or of "<...>" in Link.  "origin" gets the
 * scheme, host and port; "path" the rest, "/" at least.
 */

static ngx_int_t
ngx_http_tent_check_url(ngx_str_t *url, ngx_str_t *origin, ngx_str_t *path)
{
    u_char  *p, *host, *last;

    last = url->data + url->len;

    if (url->len > 7 && ngx_strncasecmp(url->data, (u_char *) "http://", 7)
                        == 0)
    {
        host = url->data + 7;

    } else if (url->len > 8
               && ngx_strncasecmp(url->data, (u_char *) "https://", 8) == 0)
    {
        host = url->data + 8;

    } else {
        return NGX_ERROR;
    }

    if (url->len > 2048) {
        return NGX_ERROR;
    }

    for (p = url->data; p < last; p++) {
        if (*p <= 0x20 || *p >= 0x7f || *p == '<' || *p == '>' || *p == '"'
            || *p == '\\' || *p == '^' || *p == '`' || *p == '{' || *p == '}'
            || *p == '|' || *p == '?' || *p == '#' || *p == ',' || *p == ';')
        {
            return NGX_ERROR;
        }
    }

    for (p = host; p < last && *p != '/'; p++) {
        if (*p == '@') {
            /* no userinfo */
            return NGX_ERROR;
        }
    }

    if (p == host || *host == ':') {
        return NGX_ERROR;
    }

    origin->data = url->data;
    origin->len = p - url->data;

    if (p == last) {
        ngx_str_set(path, "/");

    } else {
        path->data = p;
        path->len = last - p;
    }

    return NGX_OK;
}


/* evaluate the request's entity once; NULL when the server has none */

ngx_http_tent_ctx_t *
ngx_http_tent_get_ctx(ngx_http_request_t *r)
{
    u_char                    *p;
    ngx_str_t                  entity;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    if (scf == NULL || scf->entity == NULL) {
        return NULL;
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_tent_module);

    if (ctx) {
        return ctx;
    }

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ctx_t));
    if (ctx == NULL) {
        return NULL;
    }

    ngx_http_set_ctx(r, ctx, ngx_http_tent_module);

    ctx->evaluated = 1;

    /* a fixed entity: what it gives was worked out once, at start */

    if (scf->fixed) {
        ctx->entity = scf->fixed->entity;
        ctx->origin = scf->fixed->origin;
        ctx->root_path = scf->fixed->root_path;
        ctx->profile_url = scf->fixed->profile_url;
        return ctx;
    }

    if (ngx_http_complex_value(r, scf->entity, &entity) != NGX_OK
        || ngx_http_tent_check_url(&entity, &ctx->origin, &ctx->root_path)
           != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "tent_entity evaluated to an invalid URL");
        ctx->invalid = 1;
        return ctx;
    }

    /* "https://example.org/" and "https://example.org" are one entity */

    if (ctx->root_path.len == 1 && entity.data[entity.len - 1] == '/') {
        entity.len--;
    }

    ctx->entity = entity;

    ctx->profile_url.len = ctx->origin.len + scf->api_root.len
                           + sizeof("/profile") - 1;

    p = ngx_pnalloc(r->pool, ctx->profile_url.len);
    if (p == NULL) {
        ctx->invalid = 1;
        return ctx;
    }

    ctx->profile_url.data = p;

    p = ngx_cpymem(p, ctx->origin.data, ctx->origin.len);
    p = ngx_cpymem(p, scf->api_root.data, scf->api_root.len);
    ngx_memcpy(p, "/profile", sizeof("/profile") - 1);

    return ctx;
}


/* a request under the API root: sets ctx->api_path to what follows it */

ngx_int_t
ngx_http_tent_is_api_request(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                 *root;
    ngx_http_tent_srv_conf_t  *scf;

    if (ctx->api) {
        return 1;
    }

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);
    root = &scf->api_root;

    if (r->uri.len < root->len
        || ngx_strncmp(r->uri.data, root->data, root->len) != 0
        || (r->uri.len > root->len && r->uri.data[root->len] != '/'))
    {
        return 0;
    }

    ctx->api = 1;
    ctx->api_path.data = r->uri.data + root->len;
    ctx->api_path.len = r->uri.len - root->len;

    return 1;
}


/* the core profile's "servers": configured, or the entity's API root */

ngx_int_t
ngx_http_tent_servers(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    json_t **servers)
{
    json_t                    *list, *s;
    ngx_str_t                  value, origin, path;
    ngx_uint_t                 i;
    ngx_http_complex_value_t  *cv;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    list = json_array();
    if (list == NULL) {
        return NGX_ERROR;
    }

    if (scf->servers == NULL) {
        value.len = ctx->origin.len + scf->api_root.len;
        value.data = ngx_pnalloc(r->pool, value.len);
        if (value.data == NULL) {
            goto failed;
        }

        ngx_memcpy(ngx_cpymem(value.data, ctx->origin.data, ctx->origin.len),
                   scf->api_root.data, scf->api_root.len);

        s = ngx_http_tent_json_string(&value);
        if (s == NULL || json_array_append_new(list, s) != 0) {
            goto failed;
        }

        *servers = list;
        return NGX_OK;
    }

    cv = scf->servers->elts;

    for (i = 0; i < scf->servers->nelts; i++) {
        if (ngx_http_complex_value(r, &cv[i], &value) != NGX_OK) {
            goto failed;
        }

        if (ngx_http_tent_check_url(&value, &origin, &path) != NGX_OK) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "tent_servers evaluated to an invalid URL \"%V\"",
                          &value);
            goto failed;
        }

        s = ngx_http_tent_json_string(&value);
        if (s == NULL || json_array_append_new(list, s) != 0) {
            goto failed;
        }
    }

    *servers = list;
    return NGX_OK;

failed:

    json_decref(list);
    return NGX_ERROR;
}


/*
 * The root of an entity with a path ("https://example.org/~alice") would
 * be a 404 from the static module: answer it unless a file or directory
 * is there.  A root ending in "/" is left to the index module, and to
 * ngx_http_tent_root_handler() after it.
 */

static ngx_int_t
ngx_http_tent_claim_root(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    size_t           root;
    ngx_str_t        path;
    ngx_file_info_t  fi;

    if (r->content_handler
        || !(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))
        || ctx->root_path.data[ctx->root_path.len - 1] == '/'
        || r->uri.len != ctx->root_path.len
        || ngx_strncmp(r->uri.data, ctx->root_path.data, r->uri.len) != 0)
    {
        return NGX_DECLINED;
    }

    if (ngx_http_map_uri_to_path(r, &path, &root, 0) == NULL) {
        return NGX_ERROR;
    }

    if (ngx_file_info(path.data, &fi) == NGX_FILE_ERROR) {
        r->content_handler = ngx_http_tent_root_handler;
    }

    return NGX_DECLINED;
}


static ngx_int_t
ngx_http_tent_precontent_handler(ngx_http_request_t *r)
{
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    if (ctx == NULL || ctx->invalid) {
        return NGX_DECLINED;
    }

    if (!ngx_http_tent_is_api_request(r, ctx)) {
        return ngx_http_tent_claim_root(r, ctx);
    }

    /* the API root is ours even inside a location with its own handler */

    r->content_handler = ngx_http_tent_api_handler;

    return NGX_DECLINED;
}


static ngx_int_t
ngx_http_tent_match(ngx_str_t *pattern, ngx_str_t *path,
    ngx_http_tent_ctx_t *ctx)
{
    u_char  *p, *q, *pe, *qe, *seg;

    p = pattern->data;
    pe = p + pattern->len;
    q = path->data;
    qe = q + path->len;

    ctx->nparams = 0;

    while (p < pe && q < qe) {

        /* "*" last: the rest of the path, one parameter */

        if (*p == '*' && p > pattern->data && p[-1] == '/') {
            if (ctx->nparams == NGX_HTTP_TENT_MAX_PARAMS) {
                return 0;
            }

            ctx->params[ctx->nparams].data = q;
            ctx->params[ctx->nparams].len = qe - q;
            ctx->nparams++;

            return p + 1 == pe;
        }

        if (*p == ':' && p > pattern->data && p[-1] == '/') {
            seg = q;

            while (q < qe && *q != '/') {
                q++;
            }

            if (q == seg || ctx->nparams == NGX_HTTP_TENT_MAX_PARAMS) {
                return 0;
            }

            ctx->params[ctx->nparams].data = seg;
            ctx->params[ctx->nparams].len = q - seg;
            ctx->nparams++;

            while (p < pe && *p != '/') {
                p++;
            }

            continue;
        }

        if (*p != *q) {
            return 0;
        }

        p++;
        q++;
    }

    return p == pe && q == qe;
}


static ngx_int_t
ngx_http_tent_allow(ngx_http_request_t *r, ngx_uint_t methods,
    ngx_str_t *value)
{
    u_char  *p;

    static struct {
        ngx_uint_t   method;
        const char  *name;
    } *m, names[] = {
        { NGX_HTTP_GET, "GET" },
        { NGX_HTTP_HEAD, "HEAD" },
        { NGX_HTTP_POST, "POST" },
        { NGX_HTTP_PUT, "PUT" },
        { NGX_HTTP_DELETE, "DELETE" },
        { 0, NULL }
    };

    p = ngx_pnalloc(r->pool, sizeof("GET, HEAD, POST, PUT, DELETE"));
    if (p == NULL) {
        return NGX_ERROR;
    }

    value->data = p;

    for (m = names; m->name; m++) {
        if (methods & m->method) {
            if (p != value->data) {
                *p++ = ',';
                *p++ = ' ';
            }

            p = ngx_cpymem(p, m->name, ngx_strlen(m->name));
        }
    }

    value->len = p - value->data;

    return NGX_OK;
}


/*
 * Route on the path as sent: parameters such as a type URI or an entity
 * arrive percent-encoded ("https%3A%2F%2F...") and must stay one segment;
 * nginx's r->uri has them decoded, and its slashes merged.
 */

static void
ngx_http_tent_raw_api_path(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    u_char                    *q;
    ngx_str_t                  raw;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    raw = r->unparsed_uri;

    q = ngx_strlchr(raw.data, raw.data + raw.len, '?');
    if (q) {
        raw.len = q - raw.data;
    }

    if (raw.len >= scf->api_root.len
        && ngx_strncmp(raw.data, scf->api_root.data, scf->api_root.len) == 0
        && (raw.len == scf->api_root.len
            || raw.data[scf->api_root.len] == '/'))
    {
        ctx->api_path.data = raw.data + scf->api_root.len;
        ctx->api_path.len = raw.len - scf->api_root.len;
    }
}


static ngx_int_t
ngx_http_tent_api_handler(ngx_http_request_t *r)
{
    ngx_int_t               rc;
    ngx_http_tent_ctx_t    *ctx;
    ngx_http_tent_route_t  *route;

    ctx = ngx_http_tent_get_ctx(r);

    if (ctx == NULL || ctx->invalid) {
        return ngx_http_tent_send_error(r, NGX_HTTP_INTERNAL_SERVER_ERROR,
                                        "Invalid entity configuration");
    }

    ctx->handler = NULL;
    ctx->allowed = 0;

    ngx_http_tent_raw_api_path(r, ctx);

    for (route = ngx_http_tent_routes; route->handler; route++) {
        if (!ngx_http_tent_match(&route->path, &ctx->api_path, ctx)) {
            continue;
        }

        ctx->allowed |= route->methods;

        if (route->methods & r->method) {
            ctx->handler = (void *) route->handler;

            /* the parameters of this route: matching others reset them */
            (void) ngx_http_tent_match(&route->path, &ctx->api_path, ctx);
            break;
        }
    }

#if (NGX_DEBUG)
    if (ctx->handler) {
        ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent route: %V \"%V\" is route \"%V\", "
                       "entity \"%V\"", &r->method_name, &ctx->api_path,
                       &route->path, &ctx->entity);

    } else {
        ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent route: %V \"%V\" has no route%s, "
                       "entity \"%V\"", &r->method_name, &ctx->api_path,
                       ctx->allowed ? " for the method" : "", &ctx->entity);
    }
#endif

    if (ctx->handler == NULL
        || (r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD|NGX_HTTP_DELETE)))
    {
        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    /* a signed request is verified whatever it asks for, as tentd did */

    return ngx_http_tent_authenticate(r, ctx, ngx_http_tent_dispatch);
}


static ngx_int_t
ngx_http_tent_dispatch(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_table_elt_t  *h;

    if (ctx->handler) {
        return ((ngx_http_tent_route_pt) ctx->handler)(r, ctx);
    }

    if (ctx->allowed == 0) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Allow");

    if (ngx_http_tent_allow(r, ctx->allowed, &h->value) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_send_error(r, NGX_HTTP_NOT_ALLOWED,
                                    "Method Not Allowed");
}


/* the master, as root: create the store directory for the worker user */

static ngx_int_t
ngx_http_tent_chown_dir(ngx_cycle_t *cycle, u_char *path, ngx_uid_t user,
    ngx_gid_t group)
{
    u_char          file[NGX_MAX_PATH];
    DIR            *dir;
    struct dirent  *de;

    if (chown((char *) path, user, group) == -1) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, ngx_errno,
                      "chown(\"%s\") failed", path);
        return NGX_ERROR;
    }

    dir = opendir((char *) path);
    if (dir == NULL) {
        return NGX_OK;
    }

    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.'
            && (de->d_name[1] == '\0'
                || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
        {
            continue;
        }

        ngx_snprintf(file, sizeof(file), "%s/%s%Z", path, de->d_name);

        if (lchown((char *) file, user, group) == -1) {
            ngx_log_error(NGX_LOG_WARN, cycle->log, ngx_errno,
                          "chown(\"%s\") failed", file);
        }
    }

    (void) closedir(dir);

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_init_module(ngx_cycle_t *cycle)
{
    ngx_err_t                   err;
    ngx_core_conf_t            *ccf;
    ngx_file_info_t             fi;
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_tent_module);

    if (mcf == NULL || mcf->store_path.len == 0 || ngx_test_config) {
        return NGX_OK;
    }

    if (mcf->entities == 0) {
        ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                      "\"tent_store\" is set but no server has "
                      "\"tent_entity\"");
    }

    if (ngx_create_full_path(mcf->db_path.data, 0700) != 0) {
        err = ngx_errno;
        if (err != NGX_EEXIST) {
            ngx_log_error(NGX_LOG_EMERG, cycle->log, err,
                          "cannot create the tent store \"%V\"",
                          &mcf->store_path);
            return NGX_ERROR;
        }
    }

    if (ngx_create_dir(mcf->db_path.data, 0700) == NGX_FILE_ERROR
        && ngx_errno != NGX_EEXIST)
    {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, ngx_errno,
                      "cannot create the tent store \"%V\"", &mcf->db_path);
        return NGX_ERROR;
    }

    if (ngx_file_info(mcf->db_path.data, &fi) == NGX_FILE_ERROR
        || !ngx_is_dir(&fi))
    {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, ngx_errno,
                      "the tent store \"%V\" is not a directory",
                      &mcf->db_path);
        return NGX_ERROR;
    }

    ccf = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx, ngx_core_module);

    if (geteuid() != 0 || ccf->user == (ngx_uid_t) NGX_CONF_UNSET_UINT) {
        return NGX_OK;
    }

    /* workers run as "user": the directory and the database are theirs */

    if (ngx_http_tent_chown_dir(cycle, mcf->store_path.data, ccf->user,
                                ccf->group)
        != NGX_OK
        || ngx_http_tent_chown_dir(cycle, mcf->db_path.data, ccf->user,
                                   ccf->group)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_init_process(ngx_cycle_t *cycle)
{
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_tent_module);

    if (mcf == NULL || mcf->store_path.len == 0) {
        return NGX_OK;
    }

    /* not in the cache manager and loader: they have no thread pools */

    if (ngx_process != NGX_PROCESS_WORKER && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    if (ngx_http_tent_store_init_process(cycle, mcf) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_worker != 0) {
        return NGX_OK;
    }

    if (ngx_http_tent_delivery_start(cycle, mcf) != NGX_OK) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static void
ngx_http_tent_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_tent_module);

    if (mcf == NULL || mcf->store == NULL) {
        return;
    }

    ngx_http_tent_cache_exit(mcf);
    ngx_http_tent_resolver_destroy(mcf->resolver);
    mcf->resolver = NULL;
    ngx_http_tent_credential_cache_exit(mcf);
    ngx_http_tent_store_exit_process(mcf);
}
