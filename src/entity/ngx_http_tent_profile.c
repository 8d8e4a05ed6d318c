
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The profile (spec 3).  Each info section is one record,
 *
 *     {"type": URI, "content": {...}, "permissions": {...}, "version": n}
 *
 * under "p <type base>"; the versions it replaced stay under
 * "q <type base> 0x00 <version, 4 bytes big-endian>".  The core section
 * comes from the configuration (entity, servers): it is stored only by
 * a PUT of it, never by a read, so a $host entity no one wrote to has no
 * row.  A section is visible to everyone when public, and to an app
 * whose authorization has read_profile or write_profile and the
 * section's type.
 */


#define NGX_HTTP_TENT_PROFILE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_cache.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_profile.h"
#include "ngx_http_tent_profile_private.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_store.h"


static ngx_int_t ngx_http_tent_profile_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_profile_section(ngx_http_tent_ctx_t *ctx,
    json_t *profile, json_t *record);


static ngx_str_t  ngx_http_tent_core_base =
    ngx_string("https://tent.io/types/info/core");


ngx_int_t
ngx_http_tent_is_core(ngx_str_t *base)
{
    return base->len == ngx_http_tent_core_base.len
           && ngx_strncmp(base->data, ngx_http_tent_core_base.data,
                          base->len) == 0;
}


/* may the request's principal see this record? */

static ngx_int_t
ngx_http_tent_profile_visible(ngx_http_tent_ctx_t *ctx, json_t *record)
{
    json_t     *perms, *cred;
    ngx_str_t   type;

    perms = json_object_get(record, "permissions");

    if (json_is_true(json_object_get(perms, "public"))) {
        return 1;
    }

    if (ctx->principal.kind != NGX_HTTP_TENT_AUTHORIZATION
        || !(ctx->principal.scopes & (NGX_HTTP_TENT_READ_PROFILE
                                      |NGX_HTTP_TENT_WRITE_PROFILE))
        || ngx_http_tent_json_str(record, "type", &type) != NGX_OK)
    {
        return 0;
    }

    cred = ctx->principal.credential;

    return ngx_http_tent_type_allowed(json_object_get(cred,
                                                      "profile_info_types"),
                                      &type);
}


ngx_http_tent_profile_t *
ngx_http_tent_profile_state(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_http_tent_profile_t  *pr;

    pr = ctx->state;

    if (pr == NULL) {
        pr = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_profile_t));
        if (pr == NULL) {
            return NULL;
        }

        pr->version = -1;
        ctx->state = pr;
    }

    return pr;
}


/*
 * The anonymous profile is what discovery reads, over and over: it comes
 * from the workers' cache (ngx_http_tent_cache.c) unless the servers
 * depend on the request (variables in tent_servers).
 */

static ngx_int_t
ngx_http_tent_profile_cacheable(ngx_http_request_t *r)
{
    ngx_uint_t                 i;
    ngx_http_complex_value_t  *cv;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    if (scf->servers) {
        cv = scf->servers->elts;

        for (i = 0; i < scf->servers->nelts; i++) {
            if (cv[i].lengths) {
                return 0;
            }
        }
    }

    return 1;
}


/* GET /profile */

ngx_int_t
ngx_http_tent_profile_get(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                 what;
    ngx_http_tent_profile_t  *pr;

    ctx->state = NULL;

    pr = ngx_http_tent_profile_state(r, ctx);
    if (pr == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the profile state");
    }

    /* no query parameter changes the profile: none is in the key */

    if (ngx_http_tent_profile_cacheable(r)) {
        ngx_str_set(&what, "profile");

        switch (ngx_http_tent_cache_get(r, ctx, &what, &pr->cached)) {

        case NGX_OK:
            return ngx_http_tent_send_body(r, NGX_HTTP_OK, &pr->cached.body);

        case NGX_DECLINED:
            pr->cache = 1;
            break;

        default:
            break;
        }
    }

    return ngx_http_tent_profile_scan(r, ctx);
}


/* the :type of /profile/:type, decoded, and ?version= */

ngx_int_t
ngx_http_tent_profile_type(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_profile_t *pr)
{
    u_char     *dst, *src;
    ngx_str_t   v;

    if (ctx->nparams < 1 || ctx->params[0].len > 2048) {
        return NGX_ERROR;
    }

    pr->type.data = ngx_pnalloc(r->pool, ctx->params[0].len);
    if (pr->type.data == NULL) {
        return NGX_ERROR;
    }

    dst = pr->type.data;
    src = ctx->params[0].data;
    ngx_unescape_uri(&dst, &src, ctx->params[0].len, 0);
    pr->type.len = dst - pr->type.data;

    for (src = pr->type.data; src < dst; src++) {
        if (*src <= 0x20 || *src == 0x7f) {
            return NGX_ERROR;
        }
    }

    if (ngx_http_tent_type_base(&pr->type, &pr->base) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_arg(r, (u_char *) "version", 7, &v) == NGX_OK) {
        pr->version = ngx_atoi(v.data, v.len);
        if (pr->version <= 0 || pr->version > 0x7fffffff) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* GET /profile/:type[?version=n] */

ngx_int_t
ngx_http_tent_profile_type_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    ngx_http_tent_profile_t  *pr;

    ctx->state = NULL;

    pr = ngx_http_tent_profile_state(r, ctx);
    if (pr == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the profile state");
    }

    if (ngx_http_tent_profile_type(r, ctx, pr) != NGX_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    pr->one = 1;

    return ngx_http_tent_profile_scan(r, ctx);
}


ngx_int_t
ngx_http_tent_profile_scan(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                  start, end;
    ngx_http_tent_store_op_t  *op;

    if (ngx_http_tent_key_range(r->pool, &ctx->entity,
                                NGX_HTTP_TENT_TABLE_PROFILE, &start, &end)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the profile's range");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_scan(op, &start, &end,
                                    NGX_HTTP_TENT_PROFILE_SECTIONS, 0)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the profile's scan");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_profile_scanned);
}


static ngx_int_t
ngx_http_tent_profile_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                    *profile, *record, *core, *wanted;
    ngx_str_t                  key, value, base, s;
    ngx_int_t                  rc;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_profile_t   *pr;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    pr = ctx->state;

    profile = ngx_http_tent_json_own(r->pool, json_object());
    if (profile == NULL) {
        return ngx_http_tent_internal_error(r, "building the profile");
    }

    core = NULL;
    wanted = NULL;

    while ((rc = ngx_http_tent_store_next(op, &key, &value)) == NGX_OK) {
        record = ngx_http_tent_json_parse(&value, r->connection->log);

        if (record == NULL
            || ngx_http_tent_json_cleanup(r->pool, record) != NGX_OK
            || ngx_http_tent_json_str(record, "type", &s) != NGX_OK
            || ngx_http_tent_type_base(&s, &base) != NGX_OK)
        {
            ngx_log_error(NGX_LOG_ALERT, r->connection->log, 0,
                          "tent: a profile record in the store is damaged");
            continue;
        }

        if (ngx_http_tent_is_core(&base)) {
            core = record;
            continue;
        }

        if (pr->one) {
            if (base.len == pr->base.len
                && ngx_strncmp(base.data, pr->base.data, base.len) == 0)
            {
                wanted = record;
            }

            continue;
        }

        if (ngx_http_tent_profile_section(ctx, profile, record) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "adding a section");
        }
    }

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "reading the profile's rows");
    }

    /*
     * The core section as the configuration wants it.  A read never
     * writes it (a host no one wrote to must leave nothing in the
     * store): missing, it is the default; stored but out of line with
     * the configuration, it is shown brought in line, as the next
     * version, until a PUT of the section stores one.
     */

    record = ngx_http_tent_profile_core(r, ctx, core, NULL);
    if (record == NULL) {
        return ngx_http_tent_internal_error(r, "building the core section");
    }

    if (pr->one && ngx_http_tent_is_core(&pr->base)) {
        wanted = record;
    }

    if (!pr->one) {
        if (ngx_http_tent_profile_section(ctx, profile, record) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "adding the core section");
        }

        if (ngx_http_tent_json_dump(r->pool, profile, &value) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "encoding the profile");
        }

        if (pr->cache) {
            pr->cached.body = value;
            ngx_http_tent_cache_put(r, &pr->cached);
        }

        return ngx_http_tent_send_body(r, NGX_HTTP_OK, &value);
    }

    /* one section: the current version, or an older one */

    if (wanted == NULL || !ngx_http_tent_profile_visible(ctx, wanted)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    if (pr->version > 0
        && pr->version != json_integer_value(json_object_get(wanted,
                                                             "version")))
    {
        return ngx_http_tent_profile_history(r, ctx, NULL);
    }

    if (ngx_http_tent_profile_section(ctx, profile, wanted) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "adding the section");
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK,
                                   json_object_iter_value(
                                       json_object_iter(profile)));
}


/*
 * The core record as the configuration wants it, from the stored one
 * ("old", or NULL) or from new content (a PUT).  Readers are shown a
 * missing record as the default, version 1, and a stored one out of
 * line with the configuration as the next version: a PUT comes after
 * what they were shown, so no version number ever meant two contents.
 */

json_t *
ngx_http_tent_profile_core(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    json_t *old, json_t *content)
{
    json_t      *record, *servers, *entity, *old_content, *version, *perms;
    json_int_t   v;
    ngx_uint_t   in_line, put;

    put = (content != NULL);

    if (ngx_http_tent_servers(r, ctx, &servers) != NGX_OK) {
        return NULL;
    }

    entity = ngx_http_tent_json_string(&ctx->entity);
    if (entity == NULL) {
        json_decref(servers);
        return NULL;
    }

    old_content = old ? json_object_get(old, "content") : NULL;

    /* moved (POST /move, docs/move.md): the new entity's, not ours */

    if (json_is_object(json_object_get(old, "moved"))
        && json_is_object(old_content))
    {
        json_decref(entity);
        json_decref(servers);
        entity = json_incref(json_object_get(old_content, "entity"));
        servers = json_incref(json_object_get(old_content, "servers"));
    }

    in_line = json_is_object(old_content)
              && json_equal(json_object_get(old_content, "entity"), entity)
              && json_equal(json_object_get(old_content, "servers"), servers);

    if (!put && in_line) {
        json_decref(entity);
        json_decref(servers);
        return old;
    }

    if (content) {
        content = json_deep_copy(content);

    } else if (json_is_object(old_content)) {
        content = json_deep_copy(old_content);

    } else {
        content = json_object();
    }

    if (content == NULL) {
        json_decref(entity);
        json_decref(servers);
        return NULL;
    }

    /* entity and servers are the configuration's, whatever was sent */

    json_object_set_new(content, "entity", entity);
    json_object_set_new(content, "servers", servers);

    if (!json_is_array(json_object_get(content, "licenses"))) {
        json_object_set_new(content, "licenses", json_array());
    }

    version = old ? json_object_get(old, "version") : NULL;
    v = json_is_integer(version) ? json_integer_value(version) + 1 : 1;

    if (put && !in_line) {
        /* shown to readers as v already: the PUT is the one after it */
        v++;
    }

    perms = json_pack("{s:b}", "public", 1);

    record = json_pack("{s:s, s:o, s:o, s:I, s:I}",
                       "type", NGX_HTTP_TENT_CORE_TYPE,
                       "content", content,
                       "permissions", perms,
                       "version", v,
                       "updated_at", (json_int_t) ngx_time());

    if (record && ngx_http_tent_json_cleanup(r->pool, record) != NGX_OK) {
        json_decref(record);
        return NULL;
    }

    /* a PUT after a move keeps it, and whom we were */

    if (record && json_is_object(json_object_get(old, "moved"))) {
        json_object_set(record, "moved", json_object_get(old, "moved"));
        json_object_set(content, "previous_entities",
                        json_object_get(old_content, "previous_entities"));
    }

    return record;
}


/*
 * A record as clients see it, added to "profile" when the principal may
 * see it; core gets tent_version; permissions in full only with
 * read_permissions.
 */

static ngx_int_t
ngx_http_tent_profile_section(ngx_http_tent_ctx_t *ctx, json_t *profile,
    json_t *record)
{
    json_t  *content, *section, *perms, *shown;

    if (!ngx_http_tent_profile_visible(ctx, record)) {
        return NGX_OK;
    }

    content = json_object_get(record, "content");
    perms = json_object_get(record, "permissions");

    section = json_is_object(content) ? json_deep_copy(content)
                                      : json_object();
    if (section == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_PERMISSIONS)) {
        shown = json_deep_copy(perms);

    } else {
        shown = json_pack("{s:b}", "public",
                          json_is_true(json_object_get(perms, "public")));
    }

    json_object_set_new(section, "permissions", shown);
    json_object_set(section, "version", json_object_get(record, "version"));

    if (strcmp(json_string_value(json_object_get(record, "type")),
               NGX_HTTP_TENT_CORE_TYPE) == 0)
    {
        json_object_set_new(section, "tent_version",
                            json_string(NGX_HTTP_TENT_VERSION));
    }

    if (json_object_set_new(profile,
                            json_string_value(json_object_get(record,
                                                              "type")),
                            section)
        != 0)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * The history of the section pr->base, newest first: for GET of an old
 * version (next == NULL) or for DELETE.
 */

static ngx_int_t ngx_http_tent_profile_history_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


ngx_int_t
ngx_http_tent_profile_history(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_request_done_pt next)
{
    ngx_str_t                  start, end;
    ngx_http_tent_profile_t   *pr;
    ngx_http_tent_store_op_t  *op;

    pr = ctx->state;

    if (ngx_http_tent_history_key(r->pool, &ctx->entity, &pr->base, 0,
                                  &start)
        != NGX_OK
        || ngx_http_tent_history_key(r->pool, &ctx->entity, &pr->base, -1,
                                     &end)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the history's range");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_scan(op, &start, &end, 10000, 1) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the history's scan");
    }

    return ngx_http_tent_store_submit_request(r, op,
               next ? next : ngx_http_tent_profile_history_read);
}


static ngx_int_t
ngx_http_tent_profile_history_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                   *record, *profile;
    ngx_int_t                 rc;
    ngx_str_t                 key, value;
    ngx_http_tent_ctx_t      *ctx;
    ngx_http_tent_profile_t  *pr;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    pr = ctx->state;

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        record = ngx_http_tent_json_parse(&value, r->connection->log);
        if (record == NULL) {
            continue;
        }

        if (ngx_http_tent_json_cleanup(r->pool, record) != NGX_OK) {
            json_decref(record);
            return ngx_http_tent_internal_error(r, "keeping an old version");
        }

        if (json_integer_value(json_object_get(record, "version"))
            != pr->version)
        {
            continue;
        }

        profile = ngx_http_tent_json_own(r->pool, json_object());
        if (profile == NULL) {
            return ngx_http_tent_internal_error(r, "building the section");
        }

        if (!ngx_http_tent_profile_visible(ctx, record)
            || ngx_http_tent_profile_section(ctx, profile, record) != NGX_OK
            || json_object_size(profile) != 1)
        {
            break;
        }

        return ngx_http_tent_send_json(r, NGX_HTTP_OK,
                                       json_object_iter_value(
                                           json_object_iter(profile)));
    }

    return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
}
