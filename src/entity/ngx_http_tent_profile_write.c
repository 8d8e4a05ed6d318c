
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * PUT and DELETE of a profile section (spec 3): write_profile and the
 * section's type; the replaced version kept under "q"; the core
 * section's entity and servers are the configuration's.
 */


#define NGX_HTTP_TENT_PROFILE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_cache.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_profile.h"
#include "ngx_http_tent_profile_private.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_ap.h"


/* PUT and DELETE /profile/:type: write_profile and the type */

static ngx_int_t ngx_http_tent_profile_read(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_profile_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_profile_write(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_profile_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_profile_remove(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_uint_t ngx_http_tent_profile_shown(ngx_http_request_t *r,
    ngx_http_tent_profile_t *pr);
static ngx_int_t ngx_http_tent_profile_versions(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


ngx_int_t
ngx_http_tent_profile_change(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_http_tent_profile_t   *pr;

    ctx->state = NULL;

    pr = ngx_http_tent_profile_state(r, ctx);
    if (pr == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the profile state");
    }

    if (ngx_http_tent_profile_type(r, ctx, pr) != NGX_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_PROFILE)
        || !ngx_http_tent_type_allowed(json_object_get(
                                           ctx->principal.credential,
                                           "profile_info_types"),
                                       &pr->type))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    if (r->method == NGX_HTTP_DELETE && ngx_http_tent_is_core(&pr->base)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "The core profile cannot be deleted");
    }

    /*
     * Provisioning: a PUT writes a profile post of ours (and keeps the
     * section's version): one of the entity's quota of posts, first
     */

    if (r->method == NGX_HTTP_PUT) {
        return ngx_http_tent_quota_check(r, ctx, NGX_HTTP_TENT_QUOTA_POSTS,
                                         ngx_http_tent_profile_read);
    }

    return ngx_http_tent_profile_read(r, ctx);
}


static ngx_int_t
ngx_http_tent_profile_read(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_http_tent_profile_t  *pr;

    pr = ctx->state;

    return ngx_http_tent_store_get_request(r, NGX_HTTP_TENT_TABLE_PROFILE,
                                           &pr->base,
                                           ngx_http_tent_profile_loaded);
}


static ngx_int_t
ngx_http_tent_profile_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                   *record;
    ngx_int_t                 rc;
    ngx_str_t                 value;
    ngx_http_tent_ctx_t      *ctx;
    ngx_http_tent_profile_t  *pr;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    pr = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_store_value(op, &value);

        record = ngx_http_tent_json_load(r, &value);
        if (record == NULL) {
            return ngx_http_tent_internal_error(r, "reading the section");
        }

        pr->record = record;
        pr->raw = value;
    }

    if (r->method == NGX_HTTP_PUT) {
        return ngx_http_tent_read_json(r, ctx, ngx_http_tent_profile_write);
    }

    if (pr->record == NULL) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    /*
     * A DELETE of the basic section may change the actor: the key and
     * the followers first, what it leaves is known at the write
     */

    if (ngx_http_tent_profile_shown(r, pr)) {
        pr->person = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_person_t));
        if (pr->person == NULL) {
            return ngx_http_tent_internal_error(r, "allocating the "
                                                "Update(Person)");
        }

        ((ngx_http_tent_ap_person_t *) pr->person)->has_basic = 1;

        return ngx_http_tent_ap_person_prepare(r, ctx, pr->person,
                                            ngx_http_tent_profile_versions);
    }

    return ngx_http_tent_profile_versions(r, ctx);
}


static ngx_int_t
ngx_http_tent_profile_versions(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_profile_history(r, ctx,
                                         ngx_http_tent_profile_remove);
}


/* the owner's choice of approving follows in a stored section, or NULL */

static ngx_uint_t
ngx_http_tent_profile_approves(json_t *record)
{
    return record != NULL
           && json_is_true(json_object_get(json_object_get(record,
                                                           "content"),
                                           "manually_approves_followers"));
}


/* the section of the owner's ActivityPub choices, with the module on */

static ngx_uint_t
ngx_http_tent_profile_choices(ngx_http_request_t *r,
    ngx_http_tent_profile_t *pr)
{
    return pr->person == NULL && ngx_http_tent_ap_enabled(r)
           && pr->base.len == sizeof(NGX_HTTP_TENT_AP_SETTINGS) - 1
           && ngx_strncmp(pr->base.data, NGX_HTTP_TENT_AP_SETTINGS,
                          pr->base.len) == 0;
}


/* the section the ActivityPub actor shows, with the module on */

static ngx_uint_t
ngx_http_tent_profile_shown(ngx_http_request_t *r,
    ngx_http_tent_profile_t *pr)
{
    return pr->person == NULL && ngx_http_tent_ap_enabled(r)
           && pr->base.len == sizeof(NGX_HTTP_TENT_AP_BASIC) - 1
           && ngx_strncmp(pr->base.data, NGX_HTTP_TENT_AP_BASIC,
                          pr->base.len) == 0;
}


/* permissions as stored: {"public": bool, "groups": [...], "entities": {}} */

static json_t *
ngx_http_tent_profile_permissions(json_t *given, json_t *old)
{
    json_t  *perms, *v;

    if (given == NULL) {
        if (old) {
            return json_deep_copy(old);
        }

        /* private unless said otherwise, as tentd */
        return json_pack("{s:b}", "public", 0);
    }

    if (!json_is_object(given)) {
        return NULL;
    }

    perms = json_pack("{s:b}", "public",
                      json_is_true(json_object_get(given, "public")));
    if (perms == NULL) {
        return NULL;
    }

    v = json_object_get(given, "groups");
    if (v) {
        if (!json_is_array(v) || json_array_size(v) > 256) {
            json_decref(perms);
            return NULL;
        }

        json_object_set(perms, "groups", v);
    }

    v = json_object_get(given, "entities");
    if (v) {
        if (!json_is_object(v) || json_object_size(v) > 1024) {
            json_decref(perms);
            return NULL;
        }

        json_object_set(perms, "entities", v);
    }

    return perms;
}


static ngx_int_t
ngx_http_tent_profile_write(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                     *content, *record, *perms, *old_perms, *post;
    json_int_t                  v;
    ngx_str_t                   key, value, old_key;
    ngx_http_tent_profile_t    *pr;
    ngx_http_tent_store_op_t   *cas;
    ngx_http_tent_ap_person_t  *ps;

    pr = ctx->state;

    content = ngx_http_tent_json_own(r->pool, json_deep_copy(ctx->body));
    if (content == NULL) {
        return ngx_http_tent_internal_error(r, "copying the section's body");
    }

    old_perms = pr->record ? json_object_get(pr->record, "permissions")
                           : NULL;

    perms = ngx_http_tent_profile_permissions(json_object_get(content,
                                                              "permissions"),
                                              old_perms);
    if (perms == NULL) {
        return ngx_http_tent_send_error(r, 422, "Invalid Attributes");
    }

    json_object_del(content, "permissions");
    json_object_del(content, "version");

    if (ngx_http_tent_is_core(&pr->base)) {
        json_decref(perms);

        record = ngx_http_tent_profile_core(r, ctx, pr->record, content);
        if (record == NULL) {
            return ngx_http_tent_internal_error(r,
                                                "building the core section");
        }

    } else {
        v = pr->record
            ? json_integer_value(json_object_get(pr->record, "version")) + 1
            : 1;

        record = json_pack("{s:o, s:O, s:o, s:I, s:I}",
                           "type", ngx_http_tent_json_string(&pr->type),
                           "content", content,
                           "permissions", perms,
                           "version", v,
                           "updated_at", (json_int_t) ngx_time());

        if (record == NULL
            || ngx_http_tent_json_cleanup(r->pool, record) != NGX_OK)
        {
            json_decref(record);
            return ngx_http_tent_internal_error(r, "building the section");
        }
    }

    /*
     * The basic section is what the ActivityPub actor shows: a change of
     * it is sent to the followers' servers, queued in this write (the
     * key and the followers read first; then this function again)
     */

    if (ngx_http_tent_profile_shown(r, pr)
        && ngx_http_tent_ap_person_changed(r, pr->record, record))
    {
        ps = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_person_t));
        if (ps == NULL) {
            return ngx_http_tent_internal_error(r, "allocating the "
                                                "Update(Person)");
        }

        ps->basic = ngx_http_tent_ap_basic_shown(record);
        ps->has_basic = 1;
        pr->person = ps;

        return ngx_http_tent_ap_person_prepare(r, ctx, ps,
                                               ngx_http_tent_profile_write);
    }

    /* the actor's manuallyApprovesFollowers turned: told as well */

    if (ngx_http_tent_profile_choices(r, pr)
        && ngx_http_tent_profile_approves(pr->record)
           != ngx_http_tent_profile_approves(record))
    {
        ps = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_person_t));
        if (ps == NULL) {
            return ngx_http_tent_internal_error(r, "allocating the "
                                                "Update(Person)");
        }

        ps->approves = ngx_http_tent_profile_approves(record);
        ps->has_approves = 1;
        pr->person = ps;

        return ngx_http_tent_ap_person_prepare(r, ctx, ps,
                                               ngx_http_tent_profile_write);
    }

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_PROFILE,
                          &pr->base, &key)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the section's key");
    }

    if (ngx_http_tent_json_dump(r->pool, record, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "encoding the section");
    }

    /* the new version replaces exactly what we read; the old one is kept */

    cas = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (cas == NULL
        || ngx_http_tent_store_cas(cas, &key, pr->record ? &pr->raw : NULL,
                                   &value)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                            "adding the section to the batch");
    }

    if (pr->record) {
        v = json_integer_value(json_object_get(pr->record, "version"));

        if (ngx_http_tent_history_key(r->pool, &ctx->entity, &pr->base,
                                      (ngx_int_t) v, &old_key)
            != NGX_OK)
        {
            return ngx_http_tent_internal_error(r,
                                                "building the history's key");
        }

        if (ngx_http_tent_store_write_put(cas, &old_key, &pr->raw) != NGX_OK) {
            return ngx_http_tent_internal_error(r,
                                       "adding the old version to the batch");
        }
    }

    /* a profile post tells followers to read the profile again (9.4) */

    post = json_pack("{s:[o], s:s}",
                     "types", ngx_http_tent_json_string(&pr->type),
                     "action", "update");

    if (post == NULL || ngx_http_tent_json_cleanup(r->pool, post) != NGX_OK) {
        json_decref(post);
        return ngx_http_tent_internal_error(r, "building the profile post");
    }

    if (ngx_http_tent_internal_post(r, ctx, cas, "profile", post,
            ngx_http_tent_is_core(&pr->base)
            || json_is_true(json_object_get(
                   json_object_get(record, "permissions"), "public")))
        != NGX_OK
        || ngx_http_tent_quota_count(r, ctx, cas) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "adding the profile post");
    }

    if (ngx_http_tent_ap_person_queue(r, ctx, pr->person, cas) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "queueing the "
                                            "Update(Person)");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent profile: section \"%V\" version %L: storing",
                   &pr->type,
                   (int64_t) json_integer_value(json_object_get(record,
                                                                "version")));

    return ngx_http_tent_store_submit_request(r, cas,
                                              ngx_http_tent_profile_written);
}


static ngx_int_t
ngx_http_tent_profile_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                 rc;
    ngx_http_tent_ctx_t      *ctx;
    ngx_http_tent_profile_t  *pr;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                   "The section changed meanwhile: send the PUT again");
    }

    /* the whole profile, as this app sees it */

    pr = ctx->state;
    pr->one = 0;

    return ngx_http_tent_profile_scan(r, ctx);
}


/*
 * DELETE: without ?version= the section and its history; with it, that
 * version; deleting the current version brings back the one before it.
 */

static ngx_int_t
ngx_http_tent_profile_remove(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                     *record, *left;
    ngx_int_t                   rc, current, found;
    ngx_str_t                   key, value, cur_key, newest_key, newest;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_profile_t    *pr;
    ngx_http_tent_store_op_t   *wop;
    ngx_http_tent_ap_person_t  *ps;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    pr = ctx->state;

    current = (ngx_int_t) json_integer_value(json_object_get(pr->record,
                                                             "version"));

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_PROFILE,
                          &pr->base, &cur_key)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the section's key");
    }

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (wop == NULL || ngx_http_tent_store_write(wop, 1) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "creating the store operation");
    }

    found = (pr->version < 0 || pr->version == current);
    ngx_str_null(&newest_key);
    ngx_str_null(&newest);

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {

        if (newest_key.data == NULL) {
            /* the scan runs newest first */
            newest_key = key;
            newest = value;
        }

        if (pr->version < 0) {
            if (ngx_http_tent_store_write_del(wop, &key) != NGX_OK) {
                return ngx_http_tent_internal_error(r,
                                       "adding a version's removal");
            }

            continue;
        }

        record = ngx_http_tent_json_parse(&value, NULL);
        if (record == NULL) {
            continue;
        }

        if (json_integer_value(json_object_get(record, "version"))
            == pr->version)
        {
            found = 1;

            if (ngx_http_tent_store_write_del(wop, &key) != NGX_OK) {
                json_decref(record);
                return ngx_http_tent_internal_error(r,
                                       "adding the version's removal");
            }
        }

        json_decref(record);
    }

    if (!found) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    left = pr->record;

    if (pr->version < 0 || newest_key.data == NULL) {
        if (pr->version == current || pr->version < 0) {
            if (ngx_http_tent_store_write_del(wop, &cur_key) != NGX_OK) {
                return ngx_http_tent_internal_error(r,
                                       "adding the section's removal");
            }

            left = NULL;
        }

    } else if (pr->version == current) {
        /* the version before the current one becomes current */

        if (ngx_http_tent_store_write_put(wop, &cur_key, &newest) != NGX_OK
            || ngx_http_tent_store_write_del(wop, &newest_key) != NGX_OK)
        {
            return ngx_http_tent_internal_error(r,
                                       "adding the version brought back");
        }

        left = ngx_http_tent_json_own(r->pool,
                                      ngx_http_tent_json_parse(&newest,
                                                               NULL));
    }

    /* the actor without the section, or with the version brought back */

    ps = pr->person;

    if (ps && left != pr->record
        && ngx_http_tent_ap_person_changed(r, pr->record, left))
    {
        ps->basic = ngx_http_tent_ap_basic_shown(left);

        if (ngx_http_tent_ap_person_queue(r, ctx, ps, wop) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "queueing the "
                                                "Update(Person)");
        }
    }

    ctx->state = NULL;

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_reply_state_json);
}
