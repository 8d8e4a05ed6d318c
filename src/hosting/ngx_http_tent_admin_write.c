
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The operator's actions on a registry row read (docs/admin.md), for
 * ngx_http_tent_admin.c: "disable", "enable", "quotas" and "delete"
 * written with a compare-and-set of the row read ("password" too: the
 * hash ngx_http_tent_admin.c made), and "authorize", the
 * owner authorization of an app.  A delete first marks the row
 * "deleting", then removes the entity's rows NGX_HTTP_TENT_ADMIN_BATCH
 * at a time, one batch a request, and the registry row last.  Every
 * write bumps the registry's generation.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_admin_private.h"
#include "ngx_http_tent_apps.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_ADMIN_BATCH     1000


static ngx_int_t ngx_http_tent_admin_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_admin_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_admin_authorized_app(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_uint_t ngx_http_tent_admin_fixed(ngx_str_t *entity);
static ngx_int_t ngx_http_tent_admin_authorize(ngx_http_request_t *r,
    json_t *app, ngx_str_t *raw);
static ngx_int_t ngx_http_tent_admin_cred_app_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


ngx_int_t
ngx_http_tent_admin_loaded(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                    *row;
    ngx_int_t                  rc;
    ngx_str_t                  value, start, end;
    const char                *state;
    ngx_http_tent_admin_t     *a;
    ngx_http_tent_store_op_t  *wop;

    a = ngx_http_tent_admin_get(r);

    if (ngx_http_tent_store_request_ctx(r, op, &rc) == NULL) {
        return rc;
    }

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        if (a->action.len == 6
            && ngx_strncmp(a->action.data, "delete", 6) == 0)
        {
            /*
             * A fixed entity of the configuration (a constant
             * tent_entity) has no row and is served: never swept.
             */

            if (ngx_http_tent_admin_fixed(&a->entity)) {
                return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                           "A fixed entity of the configuration, not of "
                           "the registry");
            }

            /*
             * No row: rows of it left behind are swept all the same, but
             * no registry row is removed at the end (one there then was
             * created meanwhile: an entity that answered 201).
             */
            a->no_row = 1;
            goto sweep;
        }

        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                        "No such entity in the registry");
    }

    if (ngx_http_tent_store_value(op, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "reading the row");
    }

    row = ngx_http_tent_json_own(r->pool,
                                 json_loadb((char *) value.data, value.len,
                                            0, NULL));
    if (!json_is_object(row)) {
        return ngx_http_tent_internal_error(r, "parsing the row");
    }

    a->row = row;

    /* the row as read, for the compare-and-set: a copy of its own */

    a->raw.len = value.len;
    a->raw.data = ngx_pstrdup(r->pool, &value);
    if (a->raw.data == NULL) {
        return ngx_http_tent_internal_error(r, "keeping the row");
    }
    state = json_string_value(json_object_get(row, "state"));

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);
    if (wop == NULL) {
        return ngx_http_tent_internal_error(r, "creating the write");
    }

    if (a->action.data[0] == 'p') {

        /* a new password: every session of the old one ends with it */

        if (a->hash.len) {
            json_object_set_new(row, "password",
                                ngx_http_tent_json_string(&a->hash));

        } else {
            json_object_del(row, "password");
        }

    } else if (a->action.data[0] == 'q') {
        if (ngx_http_tent_admin_quotas(row,
                                       json_object_get(a->body, "quotas"))
            != NGX_OK)
        {
            return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                       "quotas are \"posts\", \"apps\", \"attachment_bytes\": "
                       "integers from 0, or null for unlimited");
        }

    } else if (a->action.data[0] == 'e' || a->action.data[1] == 'i') {
        if (state && ngx_strcmp(state, "deleting") == 0) {
            return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                       "The entity is being deleted: finish the delete");
        }

        json_object_set_new(row, "state",
                            json_string(a->action.data[0] == 'e'
                                        ? "active" : "disabled"));

    } else {
        /* delete: marked first, so it answers 404 from now on */

        if (state == NULL || ngx_strcmp(state, "deleting") != 0) {
            json_object_set_new(row, "state", json_string("deleting"));

        } else {

        sweep:

            op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

            if (op == NULL
                || ngx_http_tent_entity_range(r->pool, &a->entity, &start,
                                              &end)
                   != NGX_OK
                || ngx_http_tent_store_scan(op, &start, &end,
                                            NGX_HTTP_TENT_ADMIN_BATCH, 0)
                   != NGX_OK)
            {
                return ngx_http_tent_internal_error(r, "scanning the rows");
            }

            return ngx_http_tent_store_submit_request(r, op,
                                                ngx_http_tent_admin_scanned);
        }
    }

    /*
     * A compare-and-set on the row as read: two operator writes at once
     * (a disable and a quotas change) must not undo each other; the
     * later one answers 409 and is sent again.
     */

    if (ngx_http_tent_json_dump(r->pool, a->row, &value) != NGX_OK
        || ngx_http_tent_store_cas(wop, &a->key, &a->raw, &value) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "encoding the row");
    }

    a->cas = 1;

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_admin_written);
}


/* a constant tent_entity of a server without provisioning */

static ngx_uint_t
ngx_http_tent_admin_fixed(ngx_str_t *entity)
{
    ngx_uint_t                    i;
    ngx_http_tent_main_conf_t    *mcf;
    ngx_http_tent_entity_conf_t  *ents;

    mcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                              ngx_http_tent_module);
    if (mcf == NULL) {
        return 0;
    }

    ents = mcf->entity_confs.elts;

    for (i = 0; i < mcf->entity_confs.nelts; i++) {
        if (ents[i].scf != NULL && !ents[i].scf->provisioning
            && ents[i].entity.len
            && ngx_http_tent_entity_eq(&ents[i].entity, entity))
        {
            return 1;
        }
    }

    return 0;
}


/* one batch of the entity's rows removed; the registry row at the end */

static ngx_int_t
ngx_http_tent_admin_scanned(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    ngx_int_t                  rc;
    ngx_str_t                  key, value;
    ngx_http_tent_admin_t     *a;
    ngx_http_tent_store_op_t  *wop;

    a = ngx_http_tent_admin_get(r);

    if (ngx_http_tent_store_request_ctx(r, op, &rc) == NULL) {
        return rc;
    }

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);
    if (wop == NULL || ngx_http_tent_store_write(wop, 1) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "creating the write");
    }

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        if (ngx_http_tent_store_write_del(wop, &key) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "encoding the removal");
        }

        a->deleted++;
    }

    if (a->deleted == 0) {
        if (!a->no_row
            && ngx_http_tent_store_write_del(wop, &a->key) != NGX_OK)
        {
            return ngx_http_tent_internal_error(r, "encoding the removal");
        }

        a->finished = 1;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent admin: deleting \"%V\": %ui rows", &a->entity,
                   a->deleted);

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_admin_written);
}


static ngx_int_t
ngx_http_tent_admin_written(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                 *out;
    ngx_int_t               rc;
    ngx_http_tent_admin_t  *a;

    a = ngx_http_tent_admin_get(r);

    if (ngx_http_tent_store_request_ctx(r, op, &rc) == NULL) {
        return rc;
    }

    if (a->cas && op->status != NGX_HTTP_TENT_STORE_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                   "The entity's row changed meanwhile: send the request "
                   "again");
    }

    ngx_http_tent_registry_bump((ngx_cycle_t *) ngx_cycle);

    if (a->action.len == 6 && ngx_strncmp(a->action.data, "delete", 6) == 0)
    {
        out = json_pack("{s:o, s:I, s:b}",
                        "entity", ngx_http_tent_json_string(&a->entity),
                        "deleted", (json_int_t) a->deleted,
                        "done", (int) a->finished);

    } else {
        out = json_incref(a->row);
        json_object_set_new(out, "entity",
                            ngx_http_tent_json_string(&a->entity));
        ngx_http_tent_admin_hide(out);
    }

    if (out == NULL || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK) {
        json_decref(out);
        return ngx_http_tent_internal_error(r, "the reply");
    }

    ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                  "tent admin: entity \"%V\": %V", &a->entity, &a->action);

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
}


/* the owner authorization of an app: every scope, all types */

ngx_int_t
ngx_http_tent_admin_app_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t     *app;
    ngx_int_t   rc;
    ngx_str_t   raw;

    if (ngx_http_tent_store_request_ctx(r, op, &rc) == NULL) {
        return rc;
    }

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND
        || ngx_http_tent_store_value(op, &raw) != NGX_OK)
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                        "No such app of the entity");
    }

    app = ngx_http_tent_json_own(r->pool,
                                 json_loadb((char *) raw.data, raw.len, 0,
                                            NULL));
    if (!json_is_object(app)) {
        return ngx_http_tent_internal_error(r, "reading the app");
    }

    return ngx_http_tent_admin_authorize(r, app, &raw);
}


/* an authorization of the app with every scope and type: the owner's */

static ngx_int_t
ngx_http_tent_admin_authorize(ngx_http_request_t *r, json_t *app,
    ngx_str_t *raw)
{
    json_t                    *fields;
    ngx_int_t                  rc;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_admin_t     *a;
    ngx_http_tent_store_op_t  *wop;

    a = ngx_http_tent_admin_get(r);
    ctx = ngx_http_get_module_ctx(r, ngx_http_tent_module);

    fields = ngx_http_tent_json_own(r->pool, json_pack(
        "{s:[ssssssssssssssssssss], s:[s], s:[s]}",
        "scopes", "read_posts", "write_posts", "import_posts", "read_profile",
        "write_profile", "read_followers", "write_followers",
        "read_followings", "write_followings", "read_groups", "write_groups",
        "read_permissions", "write_permissions", "read_apps", "write_apps",
        "follow_ui", "read_secrets", "write_secrets", "read_blocks",
        "write_blocks",
        "post_types", "all", "profile_info_types", "all"));

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (fields == NULL || wop == NULL) {
        return ngx_http_tent_internal_error(r, "reading the app");
    }

    rc = ngx_http_tent_authorization_new(r, ctx, &a->app, app, raw, fields,
                                         wop, &a->auth);

    /* into an active entity only, as the app (the registry fence) */

    if (rc != NGX_OK || ngx_http_tent_store_fence(wop, &a->entity, 0) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "making the authorization");
    }

    return ngx_http_tent_store_submit_request(r, wop,
                                        ngx_http_tent_admin_authorized_app);
}


/*
 * "credential": a new owner credential of an entity of the registry or
 * a fixed one of the configuration, made here rather than by a request
 * to the entity's server (which the operator's location need not share):
 * an app written as the owner's registrations write theirs, then
 * authorized with every scope.  The operator's app is not counted
 * against the entity's quota of apps: the operator sets that quota, and
 * an owner locked out by a full quota must still get a credential.
 * Its writes carry the registry fence: into an active entity only (a
 * disabled one: 410; one deleted meanwhile gets no rows after the
 * delete's sweep).
 */

ngx_int_t
ngx_http_tent_admin_cred_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                    *row;
    ngx_int_t                  rc;
    ngx_str_t                  value;
    const char                *state;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_admin_t     *a;
    ngx_http_tent_store_op_t  *wop;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    a = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        if (!ngx_http_tent_admin_fixed(&a->entity)) {
            return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                       "No such entity in the registry nor fixed by the "
                       "configuration");
        }

    } else {
        if (ngx_http_tent_store_value(op, &value) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "reading the row");
        }

        row = ngx_http_tent_json_own(r->pool,
                                     json_loadb((char *) value.data,
                                                value.len, 0, NULL));
        state = json_string_value(json_object_get(row, "state"));

        if (state && ngx_strcmp(state, "deleting") == 0) {
            return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                       "The entity is being deleted: finish the delete");
        }
    }

    ctx->entity = a->entity;

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (wop == NULL
        || ngx_http_tent_apps_owner_app(r, ctx, wop, &a->app_rec, &a->app,
                                        &a->app_raw)
           != NGX_OK
        || ngx_http_tent_store_fence(wop, &a->entity, 0) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "making the owner's app");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent admin: owner app \"%V\" of \"%V\"", &a->app,
                   &a->entity);

    return ngx_http_tent_store_submit_request(r, wop,
                                        ngx_http_tent_admin_cred_app_written);
}


static ngx_int_t
ngx_http_tent_admin_cred_app_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t               rc;
    ngx_http_tent_admin_t  *a;

    a = ngx_http_tent_admin_get(r);

    if (ngx_http_tent_store_request_ctx(r, op, &rc) == NULL) {
        return rc;
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                   "The app's key id was taken meanwhile: send the request "
                   "again");
    }

    return ngx_http_tent_admin_authorize(r, a->app_rec, &a->app_raw);
}


static ngx_int_t
ngx_http_tent_admin_authorized_app(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                 *out;
    ngx_int_t               rc;
    ngx_http_tent_admin_t  *a;

    a = ngx_http_tent_admin_get(r);

    if (ngx_http_tent_store_request_ctx(r, op, &rc) == NULL) {
        return rc;
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                   "The app changed meanwhile: send the request again");
    }

    out = ngx_http_tent_json_own(r->pool, json_pack(
        "{s:o, s:O, s:O, s:O, s:O, s:O}",
        "entity", ngx_http_tent_json_string(&a->entity),
        "app_id", json_object_get(a->auth, "app_id"),
        "id", json_object_get(a->auth, "id"),
        "mac_key_id", json_object_get(a->auth, "mac_key_id"),
        "mac_key", json_object_get(a->auth, "mac_key"),
        "mac_algorithm", json_object_get(a->auth, "mac_algorithm")));

    if (out == NULL) {
        return ngx_http_tent_internal_error(r, "the reply");
    }

    ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                  "tent admin: entity \"%V\": app \"%V\" authorized as "
                  "its owner", &a->entity, &a->app);

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
}
