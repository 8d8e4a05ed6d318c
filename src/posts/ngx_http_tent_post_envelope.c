
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * A post's common fields as clients send them (spec 0.2, posts):
 * permissions, licenses, mentions, the app of an imported post, views.
 * Each is rebuilt from the accepted keys only.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_post_check.h"


/*
 * Permissions as stored: {"public": bool[, "groups": [{"id": ...}]]
 * [, "entities": {uri: true}]}; other keys are dropped.  Returns
 * NGX_DECLINED with *error set, NGX_ERROR when out of memory.
 */

ngx_int_t
ngx_http_tent_post_permissions(json_t *given, json_t **out,
    const char **error)
{
    size_t       i;
    json_t      *perms, *v, *item, *id, *list, *entities;
    const char  *key;

    /* a null "given" has no keys: json_object_get() gives NULL */

    v = json_object_get(given, "public");

    if (!ngx_http_tent_post_absent(v) && !json_is_boolean(v)) {
        *error = "permissions public must be true or false";
        return NGX_DECLINED;
    }

    perms = json_pack("{s:b}", "public", json_is_true(v));
    if (perms == NULL) {
        return NGX_ERROR;
    }

    v = json_object_get(given, "groups");

    if (!ngx_http_tent_post_absent(v)) {

        if (!json_is_array(v)
            || json_array_size(v) > NGX_HTTP_TENT_POST_MAX_GROUPS)
        {
            *error = "permissions groups must be an array of at most "
                     ngx_value(NGX_HTTP_TENT_POST_MAX_GROUPS) " groups";
            goto declined;
        }

        list = json_array();
        if (json_object_set_new(perms, "groups", list) != 0) {
            goto failed;
        }

        json_array_foreach(v, i, item) {
            id = json_object_get(item, "id");

            if (!ngx_http_tent_post_string_token(id,
                                                 NGX_HTTP_TENT_POST_MAX_REF))
            {
                *error = "permissions groups must be {\"id\": string} objects";
                goto declined;
            }

            if (json_array_append_new(list, json_pack("{s:O}", "id", id))
                != 0)
            {
                goto failed;
            }
        }
    }

    v = json_object_get(given, "entities");

    if (!ngx_http_tent_post_absent(v)) {

        if (!json_is_object(v)
            || json_object_size(v) > NGX_HTTP_TENT_POST_MAX_ENTITIES)
        {
            *error = "permissions entities must be an object of at most "
                     ngx_value(NGX_HTTP_TENT_POST_MAX_ENTITIES) " entities";
            goto declined;
        }

        entities = json_object();
        if (json_object_set_new(perms, "entities", entities) != 0) {
            goto failed;
        }

        json_object_foreach(v, key, item) {
            if (!ngx_http_tent_post_url((u_char *) key, ngx_strlen(key))
                || !json_is_boolean(item))
            {
                *error = "permissions entities must map entity URLs "
                         "to true or false";
                goto declined;
            }

            /* false grants nothing: it is simply not kept */

            if (json_is_true(item)
                && json_object_set_new(entities, key, json_true()) != 0)
            {
                goto failed;
            }
        }
    }

    *out = perms;

    return NGX_OK;

declined:

    json_decref(perms);

    return NGX_DECLINED;

failed:

    json_decref(perms);

    return NGX_ERROR;
}


ngx_int_t
ngx_http_tent_post_licenses(json_t *given, json_t **out, const char **error)
{
    size_t   i;
    json_t  *v;

    if (ngx_http_tent_post_absent(given)) {
        *out = json_array();
        return *out ? NGX_OK : NGX_ERROR;
    }

    if (!json_is_array(given)
        || json_array_size(given) > NGX_HTTP_TENT_POST_MAX_LICENSES)
    {
        *error = "licenses must be an array of at most "
                 ngx_value(NGX_HTTP_TENT_POST_MAX_LICENSES) " URIs";
        return NGX_DECLINED;
    }

    json_array_foreach(given, i, v) {
        if (!json_is_string(v)
            || !ngx_http_tent_post_uri((u_char *) json_string_value(v),
                                       json_string_length(v),
                                       NGX_HTTP_TENT_POST_MAX_URI))
        {
            *error = "licenses must be URIs of at most "
                     ngx_value(NGX_HTTP_TENT_POST_MAX_URI) " bytes";
            return NGX_DECLINED;
        }
    }

    *out = json_deep_copy(given);

    return *out ? NGX_OK : NGX_ERROR;
}


/* mentions as stored: [{"entity": url[, "post": id]}], other keys dropped */

ngx_int_t
ngx_http_tent_post_mentions(json_t *given, json_t **out, const char **error)
{
    size_t   i;
    json_t  *list, *v, *entity, *post, *mention;

    if (!ngx_http_tent_post_absent(given)
        && (!json_is_array(given)
            || json_array_size(given) > NGX_HTTP_TENT_POST_MAX_MENTIONS))
    {
        *error = "mentions must be an array of at most "
                 ngx_value(NGX_HTTP_TENT_POST_MAX_MENTIONS) " mentions";
        return NGX_DECLINED;
    }

    list = json_array();
    if (list == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_tent_post_absent(given)) {
        *out = list;
        return NGX_OK;
    }

    json_array_foreach(given, i, v) {
        if (!json_is_object(v)) {
            *error = "mentions must be objects";
            goto declined;
        }

        entity = json_object_get(v, "entity");
        post = json_object_get(v, "post");

        if (!ngx_http_tent_post_string_url(entity)) {
            *error = "mention entity must be " NGX_HTTP_TENT_POST_A_URL;
            goto declined;
        }

        if (!ngx_http_tent_post_absent(post)
            && !ngx_http_tent_post_string_token(post,
                                                NGX_HTTP_TENT_POST_MAX_REF))
        {
            *error = "mention post must be " NGX_HTTP_TENT_POST_A_REF;
            goto declined;
        }

        mention = ngx_http_tent_post_absent(post)
                  ? json_pack("{s:O}", "entity", entity)
                  : json_pack("{s:O, s:O}", "entity", entity, "post", post);

        if (json_array_append_new(list, mention) != 0) {
            json_decref(list);
            return NGX_ERROR;
        }
    }

    *out = list;

    return NGX_OK;

declined:

    json_decref(list);

    return NGX_DECLINED;
}


/* an imported post's app: {"name": ..., "url": ...}, both optional */

ngx_int_t
ngx_http_tent_post_app(json_t *given, json_t **out, const char **error)
{
    json_t      *app, *v;
    const char  *name;
    ngx_uint_t   i;

    static const char  *names[] = { "name", "url" };

    if (!json_is_object(given)) {
        *error = "app must be an object";
        return NGX_DECLINED;
    }

    app = json_object();
    if (app == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        name = names[i];
        v = json_object_get(given, name);

        if (ngx_http_tent_post_absent(v)) {
            continue;
        }

        if (!json_is_string(v)
            || json_string_length(v) > NGX_HTTP_TENT_POST_MAX_URI)
        {
            json_decref(app);
            *error = "app name and url must be strings of at most "
                     ngx_value(NGX_HTTP_TENT_POST_MAX_URI) " bytes";
            return NGX_DECLINED;
        }

        if (json_object_set(app, name, v) != 0) {
            json_decref(app);
            return NGX_ERROR;
        }
    }

    *out = app;

    return NGX_OK;
}


/*
 * views: {name: {"content": [JSON pointers], "attachments": [{"category",
 * "name", "type"}]}}, both optional (spec 6.1); ?view= reads them.
 */

const char *
ngx_http_tent_post_views(json_t *views)
{
    size_t       i;
    json_t      *view, *list, *v;
    const char  *name;

    json_object_foreach(views, name, view) {
        if (!json_is_object(view)) {
            return "a view must be an object";
        }

        list = json_object_get(view, "content");

        if (!ngx_http_tent_post_absent(list)) {
            if (!json_is_array(list)) {
                return "a view's content must be an array of JSON pointers";
            }

            json_array_foreach(list, i, v) {
                if (!json_is_string(v)
                    || (json_string_length(v)
                        && json_string_value(v)[0] != '/'))
                {
                    return "a view's content must be an array of "
                           "JSON pointers";
                }
            }
        }

        list = json_object_get(view, "attachments");

        if (!ngx_http_tent_post_absent(list)) {
            if (!json_is_array(list)) {
                return "a view's attachments must be an array of objects";
            }

            json_array_foreach(list, i, v) {
                if (!json_is_object(v)) {
                    return "a view's attachments must be an array of "
                           "objects";
                }
            }
        }
    }

    return NULL;
}
