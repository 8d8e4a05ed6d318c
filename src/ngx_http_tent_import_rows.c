
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#include "ngx_http_tent_module.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_import_private.h"


/*
 * The rows of an import: each section's row checked as the route that
 * writes it would check it, and added to the section's batch
 * (docs/import.md).
 */


static ngx_int_t ngx_http_tent_import_once(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, const char *what, ngx_str_t *s);


/* count a row taken, or say why it was skipped */

static void
ngx_http_tent_import_taken(ngx_http_tent_import_t *im)
{
    json_t  *t;

    t = json_object_get(im->entry, "taken");
    json_integer_set(t, json_integer_value(t) + 1);
}


/* a row's new record (the request's to free), put and counted taken */

ngx_int_t
ngx_http_tent_import_keep(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, ngx_str_t *key,
    json_t *record)
{
    if (record == NULL
        || ngx_http_tent_json_cleanup(r->pool, record) != NGX_OK)
    {
        json_decref(record);
        return NGX_ERROR;
    }

    if (ngx_http_tent_import_put_json(r, im, op, key, record) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_http_tent_import_taken(im);

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_import_skip(ngx_http_tent_import_t *im, const char *what,
    json_t *name, const char *reason)
{
    json_t  *s;

    s = json_pack("{s:O?, s:s}", what, name, "reason", reason);

    if (s == NULL
        || json_array_append_new(json_object_get(im->entry, "skipped"), s)
           != 0)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_import_int(json_t *row, const char *name, json_int_t min)
{
    json_t  *v;

    v = json_object_get(row, name);

    return json_is_integer(v) && json_integer_value(v) >= min;
}


/*
 * A time (seconds): not negative, and not more than a day ahead of our
 * clock (the feed's µs order is made from it: no overflow).
 */

static ngx_int_t
ngx_http_tent_import_time(json_t *row, const char *name)
{
    json_t  *v;

    v = json_object_get(row, name);

    return json_is_integer(v) && json_integer_value(v) >= 0
           && json_integer_value(v)
              <= (json_int_t) ngx_time() + NGX_HTTP_TENT_IMPORT_FUTURE;
}


/* a section record's shape, as PUT /profile/:type would store it */

static const char *
ngx_http_tent_import_section(json_t *row, ngx_str_t *type, ngx_str_t *base)
{
    json_t  *perms;

    if (!json_is_object(row)) {
        return "a section must be an object";
    }

    if (ngx_http_tent_json_str(row, "type", type) != NGX_OK
        || type->len == 0 || type->len > 1024
        || ngx_http_tent_type_base(type, base) != NGX_OK)
    {
        return "type must be an info type URI";
    }

    if (!json_is_object(json_object_get(row, "content"))) {
        return "content must be an object";
    }

    perms = json_object_get(row, "permissions");

    if (!json_is_object(perms)
        || !json_is_boolean(json_object_get(perms, "public")))
    {
        return "permissions must be an object with \"public\"";
    }

    if (!ngx_http_tent_import_int(row, "version", 1)
        || json_integer_value(json_object_get(row, "version"))
           > NGX_HTTP_TENT_IMPORT_VERSION_MAX)
    {
        return "version must be a positive integer (at most 2^31 - 1)";
    }

    if (!ngx_http_tent_import_time(row, "updated_at")) {
        return "updated_at must be a time: not negative, at most a day "
               "ahead";
    }

    return NULL;
}


static ngx_int_t
ngx_http_tent_import_is_core(ngx_str_t *base)
{
    return base->len == ngx_http_tent_import_core_base.len
           && ngx_strncmp(base->data, ngx_http_tent_import_core_base.data,
                          base->len) == 0;
}


/*
 * A profile section.  row NULL: our core, first in the batch: ours
 * (entity, servers), with the document's entity added to
 * previous_entities (spec 9.5).
 */

static ngx_int_t
ngx_http_tent_import_listed(json_t *list, ngx_str_t *entity)
{
    size_t      i;
    json_t     *v;
    ngx_str_t   s;

    json_array_foreach(list, i, v) {
        s.data = (u_char *) json_string_value(v);
        s.len = json_string_length(v);

        if (s.data && ngx_http_tent_entity_eq(&s, entity)) {
            return 1;
        }
    }

    return 0;
}


ngx_int_t
ngx_http_tent_import_profile(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error)
{
    json_t               *core, *content, *prev, *servers;
    ngx_str_t             type, base, key, value, *expected;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    if (row == NULL) {
        if (im->core) {
            core = json_deep_copy(im->core);
            expected = &im->core_raw;

        } else {
            if (ngx_http_tent_servers(r, ctx, &servers) != NGX_OK) {
                return NGX_ERROR;
            }

            core = json_pack("{s:s, s:{s:o, s:o, s:[]}, s:{s:b}, s:i, s:I}",
                             "type", NGX_HTTP_TENT_CORE_TYPE,
                             "content",
                                 "entity",
                                 ngx_http_tent_json_string(&ctx->entity),
                                 "servers", servers,
                                 "licenses",
                             "permissions", "public", 1,
                             "version", 1,
                             "updated_at", (json_int_t) ngx_time());
            expected = NULL;
        }

        if (core == NULL
            || ngx_http_tent_json_cleanup(r->pool, core) != NGX_OK)
        {
            json_decref(core);
            return NGX_ERROR;
        }

        content = json_object_get(core, "content");
        prev = json_object_get(content, "previous_entities");

        if (!json_is_array(prev)) {
            prev = json_array();
            if (prev == NULL
                || json_object_set_new(content, "previous_entities", prev)
                   != 0)
            {
                return NGX_ERROR;
            }
        }

        /* once (a second import, a merge); the cap checked before */

        if (!ngx_http_tent_import_listed(prev, &im->from)
            && json_array_append_new(prev,
                                     ngx_http_tent_json_string(&im->from))
               != 0)
        {
            return NGX_ERROR;
        }

        if (ngx_http_tent_key(r->pool, &ctx->entity,
                                 NGX_HTTP_TENT_TABLE_PROFILE,
                                 &ngx_http_tent_import_core_base, &key)
               != NGX_OK
            || ngx_http_tent_json_dump(r->pool, core, &value) != NGX_OK)
        {
            return NGX_ERROR;
        }

        return ngx_http_tent_import_put(im, op, &key, expected, &value);
    }

    /* core first: the export gives ours as readers see it, unchecked */

    if (json_is_object(row)
        && ngx_http_tent_json_str(row, "type", &type) == NGX_OK
        && ngx_http_tent_type_base(&type, &base) == NGX_OK
        && ngx_http_tent_import_is_core(&base))
    {
        return ngx_http_tent_import_skip(im, "type",
                   json_object_get(row, "type"),
                   "the core section is this server's: the document's "
                   "entity is added to its previous_entities");
    }

    *error = ngx_http_tent_import_section(row, &type, &base);
    if (*error) {
        return NGX_DECLINED;
    }

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_PROFILE,
                          &base, &key)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_tent_import_keep(r, im, op, &key,
               json_pack("{s:O, s:O, s:O, s:O, s:O}",
                         "type", json_object_get(row, "type"),
                         "content", json_object_get(row, "content"),
                         "permissions", json_object_get(row, "permissions"),
                         "version", json_object_get(row, "version"),
                         "updated_at", json_object_get(row, "updated_at")));
}


/* an older version of a section: table q */

ngx_int_t
ngx_http_tent_import_version(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error)
{
    u_char               *p;
    ngx_str_t             type, base, key, once;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    *error = ngx_http_tent_import_section(row, &type, &base);
    if (*error) {
        return NGX_DECLINED;
    }

    if (ngx_http_tent_import_is_core(&base)) {
        return ngx_http_tent_import_skip(im, "type",
                   json_object_get(row, "type"),
                   "the core section's history is this server's");
    }

    p = ngx_pnalloc(r->pool, base.len + 1 + NGX_INT_T_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }

    once.data = p;
    once.len = ngx_sprintf(p, "%V %L", &base,
                           (int64_t) json_integer_value(
                               json_object_get(row, "version")))
               - p;

    switch (ngx_http_tent_import_once(r, im, "q", &once)) {
    case NGX_OK:
        break;
    case NGX_DECLINED:
        *error = "the same version of a section twice";
        return NGX_DECLINED;
    default:
        return NGX_ERROR;
    }

    if (ngx_http_tent_history_key(r->pool, &ctx->entity, &base,
                                  (ngx_int_t) json_integer_value(
                                      json_object_get(row, "version")),
                                  &key)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_tent_import_keep(r, im, op, &key,
               json_pack("{s:O, s:O, s:O, s:O, s:O}",
                         "type", json_object_get(row, "type"),
                         "content", json_object_get(row, "content"),
                         "permissions", json_object_get(row, "permissions"),
                         "version", json_object_get(row, "version"),
                         "updated_at", json_object_get(row, "updated_at")));
}




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


/*
 * Once in the document: a credential's key id (one c row each: a second
 * would take the first's place), a relationship's id and entity in its
 * table.  A string of pool memory; "what" tells the kinds apart.
 */

static ngx_int_t
ngx_http_tent_import_once(ngx_http_request_t *r, ngx_http_tent_import_t *im,
    const char *what, ngx_str_t *s)
{
    u_char  *p;

    p = ngx_pnalloc(r->pool, 2 + s->len + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(p, "%s:%V%Z", what, s);

    if (ngx_strlen(p) != 2 + s->len) {
        /* a NUL inside: not a key anyone could use */
        return NGX_DECLINED;
    }

    if (json_object_get(im->seen, (char *) p)) {
        return NGX_DECLINED;
    }

    return json_object_set_new(im->seen, (char *) p, json_true()) == 0
           ? NGX_OK : NGX_ERROR;
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


ngx_int_t
ngx_http_tent_import_group(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error)
{
    u_char               *p;
    json_t               *name;
    ngx_str_t             id, key;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    if (!json_is_object(row)
        || ngx_http_tent_json_str(row, "id", &id) != NGX_OK
        || id.len == 0 || id.len > 64)
    {
        *error = "id must be a group id";
        return NGX_DECLINED;
    }

    for (p = id.data; p < id.data + id.len; p++) {
        if (!(isalnum(*p) || *p == '-' || *p == '_')) {
            *error = "id must be a group id";
            return NGX_DECLINED;
        }
    }

    if (ngx_http_tent_import_once(r, im, "g", &id) != NGX_OK) {
        *error = "the same group twice in the section";
        return NGX_DECLINED;
    }

    name = json_object_get(row, "name");

    if (!json_is_string(name) || json_string_length(name) == 0
        || json_string_length(name) > 1024)
    {
        *error = "name must be a string";
        return NGX_DECLINED;
    }

    if (!ngx_http_tent_import_time(row, "created_at")
        || !ngx_http_tent_import_time(row, "updated_at"))
    {
        *error = "created_at and updated_at must be times";
        return NGX_DECLINED;
    }

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_GROUP,
                          &id, &key)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_tent_import_keep(r, im, op, &key,
               json_pack("{s:O, s:O, s:O, s:O}",
                         "id", json_object_get(row, "id"),
                         "name", name,
                         "created_at", json_object_get(row, "created_at"),
                         "updated_at", json_object_get(row, "updated_at")));
}


/*
 * A post, {"id", "versions": [...]}: each version validated as a POST
 * by an app with import_posts would be; the document's entity becomes
 * ours; the last version is the current one (t row, feed indexes).
 * Attachments' bytes are not fetched: the versions are kept without
 * them, and the report says so.
 */

ngx_int_t
ngx_http_tent_import_post(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error)
{
    size_t                i, n;
    json_t               *versions, *given, *post, *current, *v;
    ngx_str_t             id, vid, entity, key;
    json_int_t            version, last;
    ngx_uint_t            dropped;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    if (!json_is_object(row)
        || ngx_http_tent_json_str(row, "id", &id) != NGX_OK
        || id.len == 0 || id.len > 128)
    {
        *error = "a post must be {\"id\", \"versions\"}";
        return NGX_DECLINED;
    }

    /* twice: the second would leave the first's feed index rows stale */

    switch (ngx_http_tent_import_once(r, im, "t", &id)) {
    case NGX_OK:
        break;
    case NGX_DECLINED:
        *error = "the same post twice in the section";
        return NGX_DECLINED;
    default:
        return NGX_ERROR;
    }

    versions = json_object_get(row, "versions");
    n = json_array_size(versions);

    if (!json_is_array(versions) || n == 0) {
        *error = "versions must be a non-empty list";
        return NGX_DECLINED;
    }

    current = NULL;
    last = 0;
    dropped = 0;
    im->drop_reason = NULL;

    json_array_foreach(versions, i, given) {

        post = ngx_http_tent_post_validate(given, 1, error);
        if (post == NULL) {
            return *error ? NGX_DECLINED : NGX_ERROR;
        }

        if (ngx_http_tent_json_cleanup(r->pool, post) != NGX_OK) {
            json_decref(post);
            return NGX_ERROR;
        }

        if (ngx_http_tent_json_str(post, "id", &vid) != NGX_OK
            || vid.len != id.len
            || ngx_strncmp(vid.data, id.data, id.len) != 0)
        {
            *error = "a version's id is not its post's";
            return NGX_DECLINED;
        }

        /* the document's entity names itself: it is us now */

        if (ngx_http_tent_json_str(post, "entity", &entity) != NGX_OK
            || ngx_http_tent_entity_canonical(r->pool, &entity, &entity)
               != NGX_OK
            || !ngx_http_tent_entity_eq(&entity, &im->from))
        {
            *error = "a post's entity must be the document's";
            return NGX_DECLINED;
        }

        json_object_set_new(post, "entity",
                            ngx_http_tent_json_string(&ctx->entity));

        /* the version as it was: no list the validation made up */

        if (json_object_get(given, "mentions") == NULL) {
            json_object_del(post, "mentions");
        }

        if (json_object_get(given, "licenses") == NULL) {
            json_object_del(post, "licenses");
        }

        v = json_object_get(given, "version");
        version = json_is_integer(v) ? json_integer_value(v) : 0;

        if (version <= last || version > 0x7fffffff) {
            *error = "versions must be positive integers, oldest first";
            return NGX_DECLINED;
        }

        last = version;

        if (!ngx_http_tent_import_time(given, "received_at")
            || !ngx_http_tent_import_time(given, "published_at")
            || !ngx_http_tent_import_time(given, "updated_at"))
        {
            *error = "received_at, published_at and updated_at must be "
                     "times: not negative, at most a day ahead";
            return NGX_DECLINED;
        }

        json_object_set(post, "published_at",
                        json_object_get(given, "published_at"));
        json_object_set(post, "updated_at",
                        json_object_get(given, "updated_at"));
        json_object_set_new(post, "version", json_integer(version));

        /* the feed's µs order: the received time, then the document's */

        json_object_set_new(post, "rus", json_integer(
            json_integer_value(json_object_get(post, "received_at"))
            * 1000000 + (json_int_t) (i % 1000000)));

        /* inline bytes kept and counted; by URL dropped, reported */

        switch (ngx_http_tent_import_attachments(r, im, given, post,
                                                 &dropped, error))
        {
        case NGX_OK:
            break;
        case NGX_DECLINED:
            return NGX_DECLINED;
        default:
            return NGX_ERROR;
        }

        if (ngx_http_tent_post_key(r->pool, &ctx->entity, &ctx->entity, &id,
                                   (ngx_int_t) version, &key)
            != NGX_OK
            || ngx_http_tent_import_put_json(r, im, op, &key, post) != NGX_OK)
        {
            return NGX_ERROR;
        }

        current = post;
    }

    if (ngx_http_tent_post_key(r->pool, &ctx->entity, &ctx->entity, &id, -1,
                               &key)
        != NGX_OK
        || ngx_http_tent_import_put_json(r, im, op, &key, current) != NGX_OK
        || (!im->probe
            && ngx_http_tent_post_index_rows(r->pool, &ctx->entity, op,
                                             current, 0)
               != NGX_OK))
    {
        return NGX_ERROR;
    }

    if (dropped
        && ngx_http_tent_import_skip(im, "attachments_of",
                                     json_object_get(row, "id"),
                                     im->drop_reason ? im->drop_reason
                                     : "an attachment without its bytes "
                                       "(data null): the post is kept "
                                       "without it")
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_http_tent_import_taken(im);

    return NGX_OK;
}
