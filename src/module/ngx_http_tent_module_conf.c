
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The module's confs: created, merged and initialized (their defaults,
 * the checks that need a whole conf, the outbound settings' guard table
 * and TLS).  The table of directives is the module's
 * (ngx_http_tent_module.c), their setters ngx_http_tent_conf.c's.
 */


#define NGX_HTTP_TENT_MODULE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_module_private.h"
#include "ngx_http_tent_ap.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_guard.h"
#include "ngx_http_tent_store.h"


static ngx_int_t ngx_http_tent_outbound_init(ngx_conf_t *cf,
    ngx_http_tent_main_conf_t *mcf);
static ngx_int_t ngx_http_tent_check_location(ngx_conf_t *cf,
    ngx_http_tent_loc_conf_t *lcf);


void *
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
    mcf->store_background = NGX_CONF_UNSET_UINT;
    mcf->store_thread_nice = NGX_CONF_UNSET_UINT;
    mcf->store_write_buffer = NGX_CONF_UNSET_SIZE;
    mcf->nonce_zone_size = NGX_CONF_UNSET_SIZE;
    mcf->nonce_share = NGX_CONF_UNSET_UINT;
    mcf->anonymous_cache = NGX_CONF_UNSET_SIZE;
    mcf->ssl_verify = NGX_CONF_UNSET;
    mcf->max_fetches = NGX_CONF_UNSET_UINT;
    mcf->max_anonymous = NGX_CONF_UNSET_UINT;
    mcf->max_entity_fetches = NGX_CONF_UNSET_UINT;
    mcf->max_host_fetches = NGX_CONF_UNSET_UINT;
    mcf->max_anonymous_host = NGX_CONF_UNSET_UINT;
    mcf->keepalive = NGX_CONF_UNSET_UINT;
    mcf->keepalive_total = NGX_CONF_UNSET_UINT;
    mcf->keepalive_timeout = NGX_CONF_UNSET_MSEC;
    mcf->keepalive_requests = NGX_CONF_UNSET_UINT;
    mcf->delivery_on = NGX_CONF_UNSET;
    mcf->delivery_interval = NGX_CONF_UNSET_MSEC;
    mcf->delivery_concurrency = NGX_CONF_UNSET_UINT;
    mcf->delivery_attempts = NGX_CONF_UNSET_UINT;
    mcf->same_node_rows = NGX_CONF_UNSET_UINT;
    mcf->delivery_retry = NGX_CONF_UNSET_MSEC;
    mcf->delivery_retry_max = NGX_CONF_UNSET_MSEC;
    mcf->delivery_host_concurrency = NGX_CONF_UNSET_UINT;
    mcf->breaker_failures = NGX_CONF_UNSET_UINT;
    mcf->breaker_pause = NGX_CONF_UNSET_MSEC;
    mcf->dead_letter_time = NGX_CONF_UNSET;

    if (ngx_array_init(&mcf->provision_confs, cf->pool, 2,
                       sizeof(ngx_http_tent_srv_conf_t *))
        != NGX_OK)
    {
        return NULL;
    }

    if (ngx_array_init(&mcf->entity_confs, cf->pool, 4,
                       sizeof(ngx_http_tent_entity_conf_t))
        != NGX_OK)
    {
        return NULL;
    }

    return mcf;
}


/* the SSRF guard's table, and TLS for outbound requests */

static ngx_int_t
ngx_http_tent_outbound_init(ngx_conf_t *cf, ngx_http_tent_main_conf_t *mcf)
{
    ngx_pool_cleanup_t  *cln;

    ngx_conf_init_value(mcf->ssl_verify, 1);
    ngx_conf_init_uint_value(mcf->max_fetches, 64);
    /* keepalive, keepalive_total: ngx_http_tent_hosts_conf() */
    ngx_conf_init_msec_value(mcf->keepalive_timeout, 60000);
    ngx_conf_init_uint_value(mcf->keepalive_requests, 1000);

    if (mcf->keepalive_timeout == 0 || mcf->keepalive_requests == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tent_outbound_keepalive_timeout\" and "
                           "\"tent_outbound_keepalive_requests\" must be "
                           "more than 0 (\"tent_outbound_keepalive 0\" "
                           "turns keep-alive off)");
        return NGX_ERROR;
    }
    ngx_conf_init_value(mcf->delivery_on, 1);
    ngx_conf_init_msec_value(mcf->delivery_interval, 1000);
    ngx_conf_init_uint_value(mcf->delivery_concurrency, 16);
    ngx_conf_init_uint_value(mcf->delivery_attempts, 12);
    ngx_conf_init_uint_value(mcf->same_node_rows,
                             NGX_HTTP_TENT_SAME_NODE_COPY);
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

    /*
     * Shares of the worker's slots: a quarter for one tenant's signed
     * requests, half for one remote host, a quarter of the unsigned
     * requests' share for those naming one host
     */

    ngx_conf_init_uint_value(mcf->max_entity_fetches,
                             ngx_max(mcf->max_fetches / 4, 1));
    ngx_conf_init_uint_value(mcf->max_host_fetches,
                             ngx_max(mcf->max_fetches / 2, 1));
    ngx_conf_init_uint_value(mcf->max_anonymous_host,
                             mcf->max_anonymous
                             ? ngx_max(mcf->max_anonymous / 4, 1) : 0);

    if (mcf->max_entity_fetches == 0
        || mcf->max_entity_fetches > mcf->max_fetches)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tent_outbound_entity_requests\" must be "
                           "between 1 and \"tent_outbound_max_requests\" "
                           "(%ui)", mcf->max_fetches);
        return NGX_ERROR;
    }

    if (mcf->max_host_fetches == 0
        || mcf->max_host_fetches > mcf->max_fetches)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tent_outbound_host_requests\" must be "
                           "between 1 and \"tent_outbound_max_requests\" "
                           "(%ui)", mcf->max_fetches);
        return NGX_ERROR;
    }

    if (mcf->max_anonymous_host > mcf->max_anonymous) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tent_outbound_anonymous_host_requests\" must "
                           "not be more than "
                           "\"tent_outbound_anonymous_requests\" (%ui)",
                           mcf->max_anonymous);
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

    if (ngx_http_tent_hosts_conf(cf, mcf) != NGX_OK) {
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


char *
ngx_http_tent_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_tent_main_conf_t *mcf = conf;

    ngx_str_t  db, name;

    ngx_conf_init_msec_value(mcf->store_timeout, 5000);
    ngx_conf_init_uint_value(mcf->store_max_waiting, 4096);
    ngx_conf_init_uint_value(mcf->store_background, 2);
    ngx_conf_init_uint_value(mcf->store_thread_nice, 0);
    ngx_conf_init_size_value(mcf->store_write_buffer, 16 * 1024 * 1024);
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

    if (mcf->nonce_share != NGX_CONF_UNSET_UINT
        && (mcf->nonce_share < 1 || mcf->nonce_share > 100))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tent_mac_nonce_share\" must be between 1 and "
                           "100 (percent)");
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
    mcf->nonce_zone->data = ngx_http_tent_nonce_zone_ctx(cf->pool,
                                                         mcf->nonce_share);
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

    /* the workers' user can use the store; made at start (store_check.c) */

    if (ngx_http_tent_store_check(cf->cycle, cf->log, cf->temp_pool, mcf)
        != NGX_OK)
    {
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


void *
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
    scf->moved_redirect_time = NGX_CONF_UNSET;
    scf->provisioning = NGX_CONF_UNSET;
    scf->activitypub = NGX_CONF_UNSET;
    scf->ap_requests = NGX_CONF_UNSET_UINT;
    scf->quota_posts = NGX_CONF_UNSET_UINT;
    scf->quota_apps = NGX_CONF_UNSET_UINT;
    scf->quota_bytes = NGX_CONF_UNSET;

    return scf;
}


char *
ngx_http_tent_merge_srv_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_tent_srv_conf_t *prev = parent;
    ngx_http_tent_srv_conf_t *conf = child;

    u_char                       *p;
    ngx_http_tent_ctx_t          *fixed;
    ngx_http_tent_main_conf_t    *mcf;
    ngx_str_t                    *name;
    ngx_uint_t                    i;
    ngx_flag_t                    explicit;
#if (NGX_PCRE)
    ngx_regex_t                 **re;
#endif
    ngx_http_server_name_t       *sn;
    ngx_http_core_srv_conf_t     *cscf;
    ngx_http_tent_srv_conf_t    **scfp;
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
    ngx_conf_merge_value(conf->moved_redirect_time,
                         prev->moved_redirect_time, 30 * 86400);
    ngx_conf_merge_msec_value(conf->outbound.deadline,
                              prev->outbound.deadline, 30000);
    ngx_conf_merge_uint_value(conf->outbound.servers,
                              prev->outbound.servers, 3);
    explicit = conf->provisioning;
    ngx_conf_merge_value(conf->provisioning, prev->provisioning, 0);
    ngx_conf_merge_uint_value(conf->quota_posts, prev->quota_posts, 0);
    ngx_conf_merge_uint_value(conf->quota_apps, prev->quota_apps, 0);
    ngx_conf_merge_off_value(conf->quota_bytes, prev->quota_bytes, 0);
    ngx_conf_merge_value(conf->activitypub, prev->activitypub, 0);
    ngx_conf_merge_uint_value(conf->ap_requests, prev->ap_requests, 100);

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
        if (conf->activitypub || conf->ap_name.data) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"tent_activitypub\" and \"tent_ap_name\" "
                               "need a \"tent_entity\" in the server");
            return NGX_CONF_ERROR;
        }

        return NGX_CONF_OK;
    }

    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_tent_module);

    if (conf->entity->lengths != NULL) {
        mcf->variable_entity = 1;
    }

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

    /*
     * provisioning: entities of this server exist once created.  On by
     * default where tent_entity has variables: without it, any Host
     * name becomes an entity on its first unsigned write (an app, a
     * follower), so the open mode must be asked for in so many words.
     */

    if (explicit == NGX_CONF_UNSET && conf->entity->lengths != NULL) {
        conf->provisioning = 1;
    }

    if (explicit == 0 && conf->entity->lengths != NULL) {
        ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                      "\"tent_provisioning off\" with a variable "
                      "\"tent_entity\": any Host name becomes an entity "
                      "on its first unsigned write in %V:%ui",
                      &conf->file, conf->line);
    }

    if (conf->provisioning) {
        if (conf->entity->lengths == NULL) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "\"tent_provisioning\" needs a \"tent_entity\" "
                          "with variables (https://$host) in %V:%ui",
                          &conf->file, conf->line);
            return NGX_CONF_ERROR;
        }

        scfp = ngx_array_push(&mcf->provision_confs);
        if (scfp == NULL) {
            return NGX_CONF_ERROR;
        }

        *scfp = conf;
        mcf->provisioning = 1;

        /* its names, for the delivery engine (nginx's are temporary) */

        cscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_core_module);
        sn = cscf->server_names.elts;

        conf->names = ngx_array_create(cf->pool,
                                       cscf->server_names.nelts + 1,
                                       sizeof(ngx_str_t));
        if (conf->names == NULL) {
            return NGX_CONF_ERROR;
        }

        for (i = 0; i < cscf->server_names.nelts; i++) {

#if (NGX_PCRE)
            /* "~...": nginx keeps the name without its "~", and the regex */

            if (sn[i].regex) {
                if (conf->regexes == NULL) {
                    conf->regexes = ngx_array_create(cf->pool, 1,
                                                     sizeof(ngx_regex_t *));
                    if (conf->regexes == NULL) {
                        return NGX_CONF_ERROR;
                    }
                }

                re = ngx_array_push(conf->regexes);
                if (re == NULL) {
                    return NGX_CONF_ERROR;
                }

                *re = sn[i].regex->regex;
                continue;
            }
#endif

            name = ngx_array_push(conf->names);
            if (name == NULL) {
                return NGX_CONF_ERROR;
            }

            name->len = sn[i].name.len;
            name->data = ngx_pstrdup(cf->pool, &sn[i].name);
            if (name->data == NULL && name->len) {
                return NGX_CONF_ERROR;
            }
        }
    }

    if (ngx_http_tent_ap_conf(cf, conf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

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


void *
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


char *
ngx_http_tent_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_tent_loc_conf_t *prev = parent;
    ngx_http_tent_loc_conf_t *conf = child;

    ngx_http_tent_srv_conf_t  *scf;

    ngx_conf_merge_uint_value(conf->link, prev->link,
                              NGX_HTTP_TENT_LINK_ABSOLUTE);
    ngx_conf_merge_ptr_value(conf->owner, prev->owner, NULL);

    /*
     * One tent_owner for every tenant of a provisioning server would let
     * any tenant's owner approve apps of all of them: there each owner
     * signs in with the entity's own password (docs/auth.md)
     */

    scf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_tent_module);

    if (conf->owner && scf->entity && scf->provisioning == 1) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "\"tent_owner\" in a server with \"tent_provisioning "
                      "on\" in %V:%ui: its tenants' owners sign in with "
                      "their own password (tent-admin password ENTITY), "
                      "not with one owner for all", &scf->file, scf->line);
        return NGX_CONF_ERROR;
    }
    ngx_conf_merge_value(conf->mac_skew, prev->mac_skew, 300);
    ngx_conf_merge_size_value(conf->attachment_max, prev->attachment_max,
                              10 * 1024 * 1024);
    ngx_conf_merge_str_value(conf->admin_token, prev->admin_token, "");

    if (conf->handler && ngx_http_tent_check_location(cf, conf) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/*
 * What would only fail at run time, refused by nginx -t: a handler of
 * ours where the API root takes every request first (the router runs
 * before the location's handler), the operator's location without its
 * token or without a store.
 * Merging a location, cf->ctx holds its server's confs.
 */

static ngx_int_t
ngx_http_tent_check_location(ngx_conf_t *cf, ngx_http_tent_loc_conf_t *lcf)
{
    ngx_str_t                 *root, *name, shown;
    const char                *directive;
    ngx_http_tent_srv_conf_t  *scf;
    ngx_http_tent_main_conf_t *mcf;
    ngx_http_core_loc_conf_t  *clcf;

    static const char  *directives[] = {
        "", "tent_status", "tent_admin", "tent_entity_page"
    };

    directive = directives[lcf->handler];

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    scf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_tent_module);
    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_tent_module);
    name = &clcf->name;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, cf->log, 0,
                   "tent: checking \"%s\" in location \"%V\"",
                   directive, name);

    if (lcf->handler == NGX_HTTP_TENT_HANDLER_ADMIN) {

        if (mcf->store_path.len == 0) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "\"tent_admin\" in %V:%ui needs \"tent_store\" "
                          "in the http block", &lcf->handler_file,
                          lcf->handler_line);
            return NGX_ERROR;
        }

        if (lcf->admin_token.len == 0) {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "\"tent_admin\" in %V:%ui has no "
                          "\"tent_admin_token_file\": every request would "
                          "be refused", &lcf->handler_file,
                          lcf->handler_line);
            return NGX_ERROR;
        }
    }

    /* the page in a server without an entity is nginx's (directives.md) */

    if (scf->entity == NULL) {
        return NGX_OK;
    }

    /* a regex, named or if location: its URIs are not known here */

    if (clcf->regex || clcf->named || clcf->noname) {
        return NGX_OK;
    }

    /* ngx_http_tent_is_api_request() of the location's own name */

    root = &scf->api_root;

    if (name->len < root->len
        || ngx_strncmp(name->data, root->data, root->len) != 0
        || (name->len > root->len && name->data[root->len] != '/'))
    {
        return NGX_OK;
    }

    if (root->len) {
        shown = *root;

    } else {
        ngx_str_set(&shown, "/");
    }

    ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                  "\"%s\" in %V:%ui: its location \"%V\" is inside the "
                  "API root \"%V\" of its server's \"tent_entity\", "
                  "where the API answers: move it out of \"%V\"",
                  directive, &lcf->handler_file, lcf->handler_line, name,
                  &shown, &shown);

    return NGX_ERROR;
}
