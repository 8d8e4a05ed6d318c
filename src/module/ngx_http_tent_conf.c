
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The directives' setters and checks: what each directive's arguments
 * may be, read into the confs.  The table of directives is the module's
 * (ngx_http_tent_module.c), the confs' defaults and merging are
 * ngx_http_tent_module_conf.c's.
 */


#define NGX_HTTP_TENT_MODULE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_module_private.h"
#include "ngx_http_tent_apps.h"
#include "ngx_http_tent_profile.h"


static char *ngx_http_tent_apps_unconfirmed_check(ngx_conf_t *cf, void *post,
    void *data);
static char *ngx_http_tent_apps_unconfirmed_time_check(ngx_conf_t *cf,
    void *post, void *data);


ngx_conf_post_t  ngx_http_tent_apps_unconfirmed_post =
    { ngx_http_tent_apps_unconfirmed_check };

ngx_conf_post_t  ngx_http_tent_apps_unconfirmed_time_post =
    { ngx_http_tent_apps_unconfirmed_time_check };


ngx_conf_enum_t  ngx_http_tent_link_forms[] = {
    { ngx_string("off"), NGX_HTTP_TENT_LINK_OFF },
    { ngx_string("absolute"), NGX_HTTP_TENT_LINK_ABSOLUTE },
    { ngx_string("relative"), NGX_HTTP_TENT_LINK_RELATIVE },
    { ngx_null_string, 0 }
};


ngx_int_t
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


char *
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


char *
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


char *
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


char *
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


/* "tent_anonymous_cache 16m;" or "off": each worker's bytes of replies */

char *
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
 * "location = / { tent_entity_page; }": the entity's page is this
 * location's content handler, so no index file is looked for (two
 * stat() calls a request otherwise).  Other URIs of the location go on
 * to the usual content handlers: the handler declines them.
 */

char *
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

    ngx_http_tent_handler_set(cf, (ngx_http_tent_loc_conf_t *) conf,
                              NGX_HTTP_TENT_HANDLER_PAGE);

    return NGX_CONF_OK;
}


/* tent_delivery_retry base [max]; */

char *
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


/* "tent_mac_skew 5m;" or "off": how far a MAC timestamp may be from now */

char *
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
