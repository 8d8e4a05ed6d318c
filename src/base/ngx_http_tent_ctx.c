
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The request's context: its entity evaluated once (tent_entity, a
 * complex value, or a fixed one worked out at start), whether it is
 * under the API root, and the core profile's servers.  Every layer asks
 * for it, so it lives at the bottom; the router only dispatches on it.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"


/*
 * An entity or server URL: http(s)://host[:port][/path], nothing that
 * could break out of a header or of "<...>" in Link.  "origin" gets the
 * scheme, host and port; "path" the rest, "/" at least.
 */

ngx_int_t
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
