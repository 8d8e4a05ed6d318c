
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_ap.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_import_private.h"


/*
 * The rows of an import: each section's row checked as the route that
 * writes it would check it, and added to the section's batch
 * (docs/import.md).  The followings' and followers' rows are
 * ngx_http_tent_import_relations.c's.
 */


/* count a row taken, or say why it was skipped */

void
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

ngx_int_t
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

    /* each one of the quota of posts, as PUT /profile's kept version */

    if (!im->probe) {
        im->quota_history++;
    }

    return ngx_http_tent_import_keep(r, im, op, &key,
               json_pack("{s:O, s:O, s:O, s:O, s:O}",
                         "type", json_object_get(row, "type"),
                         "content", json_object_get(row, "content"),
                         "permissions", json_object_get(row, "permissions"),
                         "version", json_object_get(row, "version"),
                         "updated_at", json_object_get(row, "updated_at")));
}


/*
 * Once in the document: a credential's key id (one c row each: a second
 * would take the first's place), a relationship's id and entity in its
 * table.  A string of pool memory; "what" tells the kinds apart.
 */

ngx_int_t
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
 * The ActivityPub actor's key, {"public", "private", "created_at"}: one,
 * its private part an RSA key of 2048 to 4096 bits, its public part
 * that key's (made again from it: a document cannot pair one key's
 * public part with another's private part).  It replaces a key the
 * entity made before the import.
 */

ngx_int_t
ngx_http_tent_import_ap_key(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error)
{
    ngx_str_t             priv, pub, given, key, once;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    if (!json_is_object(row)
        || ngx_http_tent_json_str(row, "private", &priv) != NGX_OK
        || ngx_http_tent_json_str(row, "public", &given) != NGX_OK)
    {
        *error = "public and private must be PEM strings";
        return NGX_DECLINED;
    }

    ngx_str_set(&once, "main");

    if (ngx_http_tent_import_once(r, im, "K", &once) != NGX_OK) {
        *error = "a second key: an entity has one";
        return NGX_DECLINED;
    }

    if (ngx_http_tent_ap_key_check(r->pool, &priv, &pub, error) != NGX_OK) {
        return NGX_DECLINED;
    }

    if (given.len != pub.len || ngx_strncmp(given.data, pub.data, pub.len))
    {
        *error = "public is not the private key's public part";
        return NGX_DECLINED;
    }

    if (!ngx_http_tent_import_time(row, "created_at")) {
        *error = "created_at must be a time";
        return NGX_DECLINED;
    }

    if (ngx_http_tent_ap_key_row(r->pool, &ctx->entity, &key) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_tent_import_keep(r, im, op, &key,
               json_pack("{s:s%, s:s%, s:O}",
                         "public", pub.data, pub.len,
                         "private", priv.data, priv.len,
                         "created_at", json_object_get(row, "created_at")));
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

        /* each version one of the quota of posts, as PUT /posts/:id */

        if (!im->probe) {
            im->quota_versions++;
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
