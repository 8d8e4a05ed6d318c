
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * GET {api_root}/profile.  Each info section is one record in the store:
 *
 *     {"type": URI, "content": {...}, "permissions": {...}, "version": n}
 *
 * keyed by the type's base.  The core section is created on first use
 * and kept in line with the configuration (entity, servers) with a
 * compare-and-set, so concurrent first requests create it once.
 */


#include "ngx_http_tent_module.h"


#define NGX_HTTP_TENT_PROFILE_ATTEMPTS  4
#define NGX_HTTP_TENT_PROFILE_SECTIONS  1024


static ngx_int_t ngx_http_tent_profile_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_profile_core_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static json_t *ngx_http_tent_profile_core(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *old, ngx_uint_t *changed);
static ngx_int_t ngx_http_tent_profile_section(json_t *profile,
    json_t *record, ngx_uint_t core);


ngx_int_t
ngx_http_tent_profile_get(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                  start, end;
    ngx_http_tent_store_op_t  *op;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);
    if (op == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ngx_http_tent_key_range(r->pool, &ctx->entity,
                                NGX_HTTP_TENT_TABLE_PROFILE, &start, &end)
        != NGX_OK
        || ngx_http_tent_store_scan(op, &start, &end,
                                    NGX_HTTP_TENT_PROFILE_SECTIONS, 0)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_profile_scanned);
}


static ngx_int_t
ngx_http_tent_profile_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                    *profile, *record, *core, *type;
    ngx_str_t                  key, value, core_raw, core_key, base, s;
    ngx_int_t                  rc, status;
    ngx_uint_t                 changed;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_store_op_t  *cas;

    static ngx_str_t  core_type = ngx_string(NGX_HTTP_TENT_CORE_TYPE);

    ctx = ngx_http_tent_get_ctx(r);

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    profile = json_object();
    if (profile == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    core = NULL;
    core_raw.len = 0;
    core_raw.data = NULL;

    if (ngx_http_tent_type_base(&core_type, &base) != NGX_OK) {
        goto failed;
    }

    while ((rc = ngx_http_tent_store_next(op, &key, &value)) == NGX_OK) {
        record = ngx_http_tent_json_parse(&value, r->connection->log);

        type = record ? json_object_get(record, "type") : NULL;

        if (!json_is_string(type)) {
            ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                          "tent: a profile record in the store is damaged");
            json_decref(record);
            continue;
        }

        s.data = (u_char *) json_string_value(type);
        s.len = json_string_length(type);

        if (ngx_http_tent_type_base(&s, &key) == NGX_OK
            && key.len == base.len
            && ngx_strncmp(key.data, base.data, base.len) == 0)
        {
            json_decref(core);
            core = record;
            core_raw = value;
            continue;
        }

        if (ngx_http_tent_profile_section(profile, record, 0) != NGX_OK) {
            json_decref(record);
            goto failed;
        }

        json_decref(record);
    }

    if (rc == NGX_ERROR) {
        goto failed;
    }

    record = ngx_http_tent_profile_core(r, ctx, core, &changed);
    if (record == NULL) {
        goto failed;
    }

    if (!changed) {
        if (ngx_http_tent_profile_section(profile, record, 1) != NGX_OK) {
            json_decref(record);
            goto failed;
        }

        json_decref(record);
        json_decref(core);

        rc = ngx_http_tent_send_json(r, NGX_HTTP_OK, profile);
        json_decref(profile);

        return rc;
    }

    /* write the new core section, then read the profile back */

    if (++ctx->attempts > NGX_HTTP_TENT_PROFILE_ATTEMPTS) {
        json_decref(record);
        json_decref(core);
        json_decref(profile);

        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "tent: the core profile keeps changing under us");

        return ngx_http_tent_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                        NULL);
    }

    cas = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (cas == NULL
        || ngx_http_tent_json_dump(r->pool, record, &value) != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_PROFILE, &base, &core_key)
           != NGX_OK
        || ngx_http_tent_store_cas(cas, &core_key, core ? &core_raw : NULL,
                                   &value)
           != NGX_OK)
    {
        json_decref(record);
        goto failed;
    }

    json_decref(record);
    json_decref(core);
    json_decref(profile);

    return ngx_http_tent_store_submit_request(r, cas,
                                          ngx_http_tent_profile_core_written);

failed:

    json_decref(core);
    json_decref(profile);

    return ngx_http_tent_send_error(r, NGX_HTTP_INTERNAL_SERVER_ERROR, NULL);
}


static ngx_int_t
ngx_http_tent_profile_core_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t             status;
    ngx_http_tent_ctx_t  *ctx;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    /* written, or someone else won the race: either way, read it again */

    ctx = ngx_http_tent_get_ctx(r);

    return ngx_http_tent_profile_get(r, ctx);
}


/*
 * The core record as the configuration wants it.  "changed" says whether
 * it differs from what is stored: new, or other servers.  (Keys start
 * with the entity, so another entity is another profile altogether.)
 */

static json_t *
ngx_http_tent_profile_core(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    json_t *old, ngx_uint_t *changed)
{
    json_t      *record, *content, *servers, *entity, *old_content, *licenses,
                *version;
    json_int_t   v;

    *changed = 0;

    if (ngx_http_tent_servers(r, ctx, &servers) != NGX_OK) {
        return NULL;
    }

    entity = ngx_http_tent_json_string(&ctx->entity);
    if (entity == NULL) {
        json_decref(servers);
        return NULL;
    }

    old_content = old ? json_object_get(old, "content") : NULL;

    if (json_is_object(old_content)
        && json_equal(json_object_get(old_content, "entity"), entity)
        && json_equal(json_object_get(old_content, "servers"), servers))
    {
        json_decref(entity);
        json_decref(servers);
        return json_incref(old);
    }

    *changed = 1;

    content = json_is_object(old_content) ? json_deep_copy(old_content)
                                          : json_object();
    if (content == NULL) {
        json_decref(entity);
        json_decref(servers);
        return NULL;
    }

    json_object_set_new(content, "entity", entity);
    json_object_set_new(content, "servers", servers);

    licenses = json_object_get(content, "licenses");
    if (!json_is_array(licenses)) {
        json_object_set_new(content, "licenses", json_array());
    }

    version = old ? json_object_get(old, "version") : NULL;
    v = json_is_integer(version) ? json_integer_value(version) + 1 : 1;

    record = json_pack("{s:s, s:o, s:{s:b}, s:I, s:I}",
                       "type", NGX_HTTP_TENT_CORE_TYPE,
                       "content", content,
                       "permissions", "public", 1,
                       "version", v,
                       "updated_at", (json_int_t) ngx_time());

    return record;
}


/* add a record to the profile as clients see it; core gets tent_version */

static ngx_int_t
ngx_http_tent_profile_section(json_t *profile, json_t *record,
    ngx_uint_t core)
{
    json_t  *content, *section, *perms, *public;

    perms = json_object_get(record, "permissions");
    public = json_is_object(perms) ? json_object_get(perms, "public") : NULL;

    /* only public sections until authentication exists */

    if (!json_is_true(public)) {
        return NGX_OK;
    }

    content = json_object_get(record, "content");

    section = json_is_object(content) ? json_deep_copy(content)
                                      : json_object();
    if (section == NULL) {
        return NGX_ERROR;
    }

    if (json_object_set_new(section, "permissions",
                            json_pack("{s:b}", "public", 1))
        != 0
        || json_object_set(section, "version",
                           json_object_get(record, "version"))
           != 0
        || (core && json_object_set_new(section, "tent_version",
                                        json_string(NGX_HTTP_TENT_VERSION))
                    != 0)
        || json_object_set_new(profile,
                               json_string_value(json_object_get(record,
                                                                 "type")),
                               section)
           != 0)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}
