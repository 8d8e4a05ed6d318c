
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The module: its directives, its phase handlers installed, and the
 * process hooks (the store directory made by the master, the store and
 * the delivery started in a worker).  The confs are created, merged and
 * initialized in ngx_http_tent_module_conf.c, the directives' setters
 * are in ngx_http_tent_conf.c, the router in ngx_http_tent_router.c.
 */


#define NGX_HTTP_TENT_MODULE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_module_private.h"
#include "ngx_http_tent_ap.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_blocks.h"
#include "ngx_http_tent_cache.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_guard.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_profile.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_resolver.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_signin.h"
#include "ngx_http_tent_status.h"
#include "ngx_http_tent_store.h"



static ngx_int_t ngx_http_tent_preconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_tent_postconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_tent_init_module(ngx_cycle_t *cycle);
static ngx_int_t ngx_http_tent_init_process(ngx_cycle_t *cycle);
static void ngx_http_tent_exit_process(ngx_cycle_t *cycle);


/* fewer than the pool's threads: a request's operation finds one free */
static ngx_conf_num_bounds_t  ngx_http_tent_store_background_bounds = {
    ngx_conf_check_num_bounds, 1, 64
};

static ngx_conf_num_bounds_t  ngx_http_tent_store_nice_bounds = {
    ngx_conf_check_num_bounds, 0, 19
};

/* LevelDB's own range for write_buffer_size: it clips anything else */
static ngx_conf_num_bounds_t  ngx_http_tent_store_write_buffer_bounds = {
    ngx_conf_check_num_bounds, 64 * 1024, 1024 * 1024 * 1024
};

/* follow requests waiting for the owner: each a scan of them all */
static ngx_conf_num_bounds_t  ngx_http_tent_ap_requests_bounds = {
    ngx_conf_check_num_bounds, 1, NGX_HTTP_TENT_AP_REQUESTS_MAX
};

static ngx_conf_enum_t  ngx_http_tent_same_node_rows[] = {
    { ngx_string("copy"), NGX_HTTP_TENT_SAME_NODE_COPY },
    { ngx_string("index"), NGX_HTTP_TENT_SAME_NODE_INDEX },
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

    { ngx_string("tent_password_thread_pool"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, password_pool_name),
      NULL },

    { ngx_string("tent_password_scrypt"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE3,
      ngx_http_tent_password_scrypt_directive,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
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

    { ngx_string("tent_mac_nonce_share"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, nonce_share),
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

    { ngx_string("tent_outbound_entity_requests"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, max_entity_fetches),
      NULL },

    { ngx_string("tent_outbound_host_requests"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, max_host_fetches),
      NULL },

    { ngx_string("tent_outbound_anonymous_host_requests"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, max_anonymous_host),
      NULL },

    { ngx_string("tent_outbound_keepalive"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, keepalive),
      NULL },

    { ngx_string("tent_outbound_keepalive_total"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, keepalive_total),
      NULL },

    { ngx_string("tent_outbound_keepalive_timeout"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_msec_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, keepalive_timeout),
      NULL },

    { ngx_string("tent_outbound_keepalive_requests"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, keepalive_requests),
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

    { ngx_string("tent_delivery_host_concurrency"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, delivery_host_concurrency),
      NULL },

    { ngx_string("tent_delivery_breaker"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE12,
      ngx_http_tent_delivery_breaker_directive,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("tent_same_node_rows"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_enum_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, same_node_rows),
      &ngx_http_tent_same_node_rows },

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

    { ngx_string("tent_status"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_tent_status_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("tent_moved_redirect_time"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_sec_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_tent_srv_conf_t, moved_redirect_time),
      NULL },
    { ngx_string("tent_store_background_threads"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, store_background),
      &ngx_http_tent_store_background_bounds },

    { ngx_string("tent_store_thread_nice"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, store_thread_nice),
      &ngx_http_tent_store_nice_bounds },

    { ngx_string("tent_store_write_buffer"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_size_slot,
      NGX_HTTP_MAIN_CONF_OFFSET,
      offsetof(ngx_http_tent_main_conf_t, store_write_buffer),
      &ngx_http_tent_store_write_buffer_bounds },

    { ngx_string("tent_provisioning"),
      NGX_HTTP_SRV_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_tent_srv_conf_t, provisioning),
      NULL },

    { ngx_string("tent_activitypub"),
      NGX_HTTP_SRV_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_tent_srv_conf_t, activitypub),
      NULL },

    { ngx_string("tent_ap_name"),
      NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_str_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_tent_srv_conf_t, ap_name),
      NULL },

    { ngx_string("tent_ap_follow_requests"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_tent_srv_conf_t, ap_requests),
      &ngx_http_tent_ap_requests_bounds },

    { ngx_string("tent_admin"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_tent_admin_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("tent_admin_token_file"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_tent_admin_token_directive,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("tent_quota_posts"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_tent_srv_conf_t, quota_posts),
      NULL },

    { ngx_string("tent_quota_apps"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_tent_srv_conf_t, quota_apps),
      NULL },

    { ngx_string("tent_quota_attachment_bytes"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_off_slot,
      NGX_HTTP_SRV_CONF_OFFSET,
      offsetof(ngx_http_tent_srv_conf_t, quota_bytes),
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
    ngx_http_tent_main_conf_t  *mcf;

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

    /*
     * A share of the nonce cache an entity matters only where entities
     * share it: one fixed entity may have all of it (docs/auth.md)
     */

    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_tent_module);

    if (mcf->nonce_zone && mcf->nonce_share == NGX_CONF_UNSET_UINT) {
        mcf->nonce_share = (mcf->variable_entity
                            || mcf->entity_confs.nelts > 1) ? 25 : 100;

        ngx_http_tent_nonce_zone_share(mcf->nonce_zone, mcf->nonce_share);
    }

    if (ngx_http_tent_signin_init(cf) != NGX_OK
        || ngx_http_tent_body_limit_init(cf) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_tent_discovery_init(cf);
}


/*
 * The master, after the configuration: the store was checked and made
 * at the end of the http block (ngx_http_tent_store_check(), a clean
 * refusal of -t and of a reload); again here only when "user" came after
 * the http block.  Then a lock another process holds is said.
 */

static ngx_int_t
ngx_http_tent_init_module(ngx_cycle_t *cycle)
{
    ngx_core_conf_t            *ccf;
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_tent_module);

    if (mcf == NULL || mcf->store_path.len == 0) {
        return NGX_OK;
    }

    if (mcf->entities == 0 && !ngx_test_config) {
        ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                      "\"tent_store\" is set but no server has "
                      "\"tent_entity\"");
    }

    ccf = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx, ngx_core_module);

    if (geteuid() == 0 && ccf->master && ccf->user != mcf->store_uid
        && ngx_http_tent_store_check(cycle, cycle->log, cycle->pool, mcf)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_tent_store_lock_check(cycle, mcf);

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_init_process(ngx_cycle_t *cycle)
{
    ngx_http_tent_main_conf_t  *mcf;

    /* no random bytes a parent left in the buffer (util.c) */

    ngx_http_tent_random_reset();

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
    ngx_http_tent_blocks_exit();
    ngx_http_tent_domains_exit();
    ngx_http_tent_store_exit_process(mcf);
}
