
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_blocks.h"
#include "ngx_http_tent_import_private.h"


/*
 * The rows of an import's followings and followers sections: each
 * relation checked as the routes that write one check it (its entity,
 * types, servers), and added with its relation rows to the section's
 * batch (docs/import.md).  The other sections' rows are
 * ngx_http_tent_import_rows.c's.
 */


/* a list of strings (types, licenses), or absent: [] */

static ngx_int_t
ngx_http_tent_import_strings(json_t *row, const char *name)
{
    size_t   i;
    json_t  *list, *v;

    list = json_object_get(row, name);

    if (list == NULL) {
        json_object_set_new(row, name, json_array());
        return NGX_OK;
    }

    if (!json_is_array(list)) {
        return NGX_ERROR;
    }

    json_array_foreach(list, i, v) {
        if (!json_is_string(v) || json_string_length(v) > 2048) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * A relationship's servers, which go into the request line and Host of
 * every request to it: at most 16 http or https URLs of visible ASCII.
 */

static ngx_int_t
ngx_http_tent_import_servers(json_t *servers)
{
    size_t      i;
    json_t     *v;
    ngx_str_t   s;

    if (!json_is_array(servers) || json_array_size(servers) > 16) {
        return NGX_ERROR;
    }

    json_array_foreach(servers, i, v) {
        if (!json_is_string(v)) {
            return NGX_ERROR;
        }

        s.data = (u_char *) json_string_value(v);
        s.len = json_string_length(v);

        if (ngx_http_tent_visible_valid(&s, 2048) != NGX_OK
            || !((s.len > 7 && ngx_strncasecmp(s.data,
                                               (u_char *) "http://", 7) == 0)
                 || (s.len > 8
                     && ngx_strncasecmp(s.data, (u_char *) "https://", 8)
                        == 0)))
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * A relationship row, followers' and followings' common checks: the
 * record to store (a copy, its entity in its one spelling), or an error.
 */

static json_t *
ngx_http_tent_import_relation(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, json_t *row, const char *prefix,
    ngx_str_t *id, ngx_str_t *entity, const char **error)
{
    json_t               *record, *v, *perms;
    ngx_str_t             s;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    if (!json_is_object(row)) {
        *error = "a relationship must be an object";
        return NULL;
    }

    if (ngx_http_tent_json_str(row, "id", id) != NGX_OK
        || ngx_http_tent_relation_id_valid(id) != NGX_OK)
    {
        *error = "id must be 32 hex digits";
        return NULL;
    }

    if (ngx_http_tent_json_str(row, "entity", entity) != NGX_OK
        || ngx_http_tent_entity_canonical(r->pool, entity, entity) != NGX_OK)
    {
        *error = "entity must be an entity URL";
        return NULL;
    }

    if (ngx_http_tent_entity_eq(entity, &im->from)
        || ngx_http_tent_entity_eq(entity, &ctx->entity))
    {
        *error = "a relationship with the entity itself";
        return NULL;
    }

    if (ngx_http_tent_json_str(row, "mac_key_id", &s) != NGX_OK
        || s.len < 3
        || ngx_http_tent_visible_valid(&s, 256) != NGX_OK
        || (prefix && ngx_strncmp(s.data, prefix, 2) != 0))
    {
        *error = "mac_key_id must be a key id";
        return NULL;
    }

    /*
     * An empty entity's only credentials are its apps' (a:) and its
     * authorizations' (u:): a relationship's key id of that form would
     * take the place of one of them, and the server never gives one.
     */

    if (ngx_strncmp(s.data, "a:", 2) == 0
        || ngx_strncmp(s.data, "u:", 2) == 0)
    {
        *error = "mac_key_id must not be an app's or authorization's key id";
        return NULL;
    }

    switch (ngx_http_tent_import_once(r, im, "c", &s)) {
    case NGX_OK:
        break;
    case NGX_DECLINED:
        *error = "mac_key_id twice in the document";
        return NULL;
    default:
        *error = NULL;
        return NULL;
    }

    if (ngx_http_tent_json_str(row, "mac_key", &s) != NGX_OK
        || s.len == 0 || s.len > 256)
    {
        *error = "mac_key must be a string";
        return NULL;
    }

    /* the two of the spec's schema (a follow over HTTP takes both) */

    if (ngx_http_tent_json_str(row, "mac_algorithm", &s) != NGX_OK
        || !((s.len == sizeof("hmac-sha-256") - 1
              && ngx_strncmp(s.data, "hmac-sha-256", s.len) == 0)
             || (s.len == sizeof("hmac-sha-1") - 1
                 && ngx_strncmp(s.data, "hmac-sha-1", s.len) == 0)))
    {
        *error = "mac_algorithm must be \"hmac-sha-256\" or \"hmac-sha-1\"";
        return NULL;
    }

    record = json_deep_copy(row);
    if (record == NULL
        || ngx_http_tent_json_cleanup(r->pool, record) != NGX_OK)
    {
        json_decref(record);
        *error = NULL;
        return NULL;
    }

    if (ngx_http_tent_import_strings(record, "types") != NGX_OK
        || ngx_http_tent_import_strings(record, "licenses") != NGX_OK)
    {
        *error = "types and licenses must be lists of strings";
        return NULL;
    }

    v = json_object_get(record, "groups");

    if (v == NULL) {
        json_object_set_new(record, "groups", json_array());

    } else if (!json_is_array(v) || json_array_size(v) > 100) {
        /* as PUT /followers/:id takes them */
        *error = "groups must be a list of at most 100";
        return NULL;
    }

    perms = json_object_get(record, "permissions");

    if (perms == NULL) {
        json_object_set_new(record, "permissions",
                            json_pack("{s:b}", "public", 0));

    } else if (!json_is_object(perms)
               || !json_is_boolean(json_object_get(perms, "public")))
    {
        *error = "permissions must be {\"public\": bool}";
        return NULL;
    }

    if (!ngx_http_tent_import_time(record, "created_at")
        || !ngx_http_tent_import_time(record, "updated_at"))
    {
        *error = "created_at and updated_at must be times";
        return NULL;
    }

    v = json_object_get(record, "servers");

    if (v == NULL) {
        json_object_set_new(record, "servers", json_array());

    } else if (ngx_http_tent_import_servers(v) != NGX_OK) {
        *error = "servers must be a list of at most 16 http or https URLs";
        return NULL;
    }

    /* their profile is theirs: read again when it is needed */

    if (!json_is_object(json_object_get(record, "profile"))) {
        json_object_set_new(record, "profile", json_object());
    }

    json_object_set_new(record, "entity", ngx_http_tent_json_string(entity));

    return record;
}


/* a relationship's rows: the record, its entity's index, its credential */

static ngx_int_t
ngx_http_tent_import_relation_rows(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op,
    const char *kind, ngx_uint_t table, ngx_uint_t etable, json_t *record,
    ngx_str_t *id, ngx_str_t *entity, const char **error)
{
    ngx_int_t             rc;
    ngx_str_t             key, ekey, ckey, cvalue;
    ngx_uint_t            follower;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    follower = (ngx_strcmp(kind, "follower") == 0);

    if (ngx_http_tent_import_once(r, im, follower ? "f" : "F", id)
        != NGX_OK
        || ngx_http_tent_import_once(r, im, follower ? "e" : "E", entity)
           != NGX_OK)
    {
        *error = "the same id or entity twice in the section";
        return NGX_DECLINED;
    }

    if (ngx_http_tent_key(r->pool, &ctx->entity, table, id, &key) != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity, etable, entity, &ekey)
           != NGX_OK
        || ngx_http_tent_credential_row(r, ctx, kind, record, &ckey, &cvalue)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_http_tent_import_put_json(r, im, op, &key, record) != NGX_OK
        || ngx_http_tent_import_put(im, op, &ekey, NULL, id) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* the credential row: looked up first, never overwritten */

    im->credential = 1;
    rc = ngx_http_tent_import_put(im, op, &ckey, NULL, &cvalue);
    im->credential = 0;

    if (rc != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_http_tent_import_taken(im);

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_import_following(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error)
{
    json_t     *record;
    ngx_str_t   id, entity, s;

    record = ngx_http_tent_import_relation(r, im, row, NULL, &id, &entity,
                                           error);
    if (record == NULL) {
        return *error ? NGX_DECLINED : NGX_ERROR;
    }

    if (ngx_http_tent_json_str(record, "remote_id", &s) != NGX_OK
        || ngx_http_tent_visible_valid(&s, 256) != NGX_OK)
    {
        *error = "remote_id must be a string";
        return NGX_DECLINED;
    }

    if (!json_is_true(json_object_get(record, "confirmed"))) {
        *error = "only confirmed followings are imported";
        return NGX_DECLINED;
    }

    /*
     * Told nothing (no profile post) until its server delivers to us
     * with the relationship's key: a document may name any host as a
     * followed entity's (docs/import.md, "Followings are pending")
     */

    json_object_set_new(record, "import_pending", json_true());

    return ngx_http_tent_import_relation_rows(r, im, op, "following",
               NGX_HTTP_TENT_TABLE_FOLLOWING,
               NGX_HTTP_TENT_TABLE_FOLLOWING_ENTITY, record, &id, &entity,
               error);
}


ngx_int_t
ngx_http_tent_import_follower(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error)
{
    json_t     *record;
    ngx_str_t   id, entity, s;

    record = ngx_http_tent_import_relation(r, im, row, "s:", &id, &entity,
                                           error);
    if (record == NULL) {
        return *error ? NGX_DECLINED : NGX_ERROR;
    }

    if (ngx_http_tent_json_str(record, "notification_path", &s) != NGX_OK
        || ngx_http_tent_notification_path_valid(&s) != NGX_OK
        || s.data[0] == '/')
    {
        *error = "notification_path must be a path as POST /followers "
                 "takes it";
        return NGX_DECLINED;
    }

    /*
     * Not delivered to until its server follows again (the handshake of
     * POST /followers: discovery and the challenge): a document may name
     * any host as a follower's (docs/import.md, "Followers").
     */

    json_object_set_new(record, "import_pending", json_true());

    return ngx_http_tent_import_relation_rows(r, im, op, "follower",
               NGX_HTTP_TENT_TABLE_FOLLOWER,
               NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY, record, &id, &entity,
               error);
}


/*
 * An owner's block, {"entity", "created_at"}: the entity in its one
 * spelling, never ours (the document's or the importing entity).
 */

ngx_int_t
ngx_http_tent_import_block(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error)
{
    ngx_str_t             given, entity, key;
    ngx_uint_t            kept;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    if (!json_is_object(row)
        || ngx_http_tent_json_str(row, "entity", &given) != NGX_OK
        || ngx_http_tent_entity_canonical(r->pool, &given, &entity)
           != NGX_OK)
    {
        *error = "entity must be an entity URL";
        return NGX_DECLINED;
    }

    if (entity.len > NGX_HTTP_TENT_BLOCK_ENTITY_MAX) {
        *error = "entity is longer than 512 bytes";
        return NGX_DECLINED;
    }

    if (ngx_http_tent_entity_eq(&entity, &ctx->entity)
        || ngx_http_tent_entity_eq(&entity, &im->from))
    {
        *error = "the entity itself can not be blocked";
        return NGX_DECLINED;
    }

    /* the cap of POST /blocks: the rows kept plus the section's */

    kept = ctx->blocks ? ((ngx_http_tent_blocks_t *) ctx->blocks)->n : 0;

    if (kept + im->row + 1 > NGX_HTTP_TENT_BLOCKS_MAX) {
        *error = "more blocks than an owner keeps (4096, with those "
                 "already kept)";
        return NGX_DECLINED;
    }

    if (!ngx_http_tent_import_time(row, "created_at")) {
        *error = "created_at must be a time";
        return NGX_DECLINED;
    }

    if (ngx_http_tent_import_once(r, im, "z", &entity) != NGX_OK) {
        *error = "the same entity twice in the section";
        return NGX_DECLINED;
    }

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_BLOCK,
                          &entity, &key)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_tent_import_keep(r, im, op, &key,
               json_pack("{s:o, s:O}",
                         "entity", ngx_http_tent_json_string(&entity),
                         "created_at", json_object_get(row, "created_at")));
}
