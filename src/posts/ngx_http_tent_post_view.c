
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Who may see a post, and how it is shown (spec 6.1, 7.6): the
 * visibility rule, read from a post or from its feed index row; a post
 * rendered for the principal (the fields and permissions it may see);
 * and the request's ?view=.
 */


#define NGX_HTTP_TENT_POSTS_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_posts_private.h"


/* a post of ours, or received from another entity */

ngx_int_t
ngx_http_tent_post_original(ngx_http_tent_ctx_t *ctx, ngx_str_t *entity)
{
    return entity->len == ctx->entity.len
           && ngx_strncmp(entity->data, ctx->entity.data, entity->len) == 0;
}


/*
 * The spelling posts of an entity are kept under: ours as configured,
 * another's canonical one (received posts are stored so); what is not an
 * entity URL stays as it is.
 */

ngx_int_t
ngx_http_tent_post_entity(ngx_pool_t *pool, ngx_http_tent_ctx_t *ctx,
    ngx_str_t *entity, ngx_str_t *out)
{
    if (ngx_http_tent_entity_eq(entity, &ctx->entity)) {
        *out = ctx->entity;
        return NGX_OK;
    }

    *out = *entity;

    return ngx_http_tent_entity_canonical(pool, entity, out) == NGX_ERROR
           ? NGX_ERROR : NGX_OK;
}


/* does a permission list name the principal's entity, or one of its groups */

static ngx_int_t
ngx_http_tent_post_names(ngx_http_tent_ctx_t *ctx, json_t *entities,
    json_t *groups)
{
    size_t       i, j;
    json_t      *v, *g, *mine;
    ngx_str_t   *e, name;
    const char  *key;

    e = &ctx->principal.entity;

    /* a post may name the entity in any of its spellings */

    if (e->len) {
        if (json_is_object(entities)) {
            json_object_foreach(entities, key, v) {
                name.data = (u_char *) key;
                name.len = ngx_strlen(key);

                if (ngx_http_tent_entity_eq(&name, e)) {
                    return 1;
                }
            }

        } else {
            json_array_foreach(entities, i, v) {
                if (!json_is_string(v)) {
                    continue;
                }

                name.data = (u_char *) json_string_value(v);
                name.len = json_string_length(v);

                if (ngx_http_tent_entity_eq(&name, e)) {
                    return 1;
                }
            }
        }
    }

    mine = json_object_get(ctx->principal.credential, "groups");

    json_array_foreach(groups, i, g) {
        if (json_is_object(g)) {
            g = json_object_get(g, "id");
        }

        json_array_foreach(mine, j, v) {
            if (json_is_string(g) && json_equal(g, v)) {
                return 1;
            }
        }
    }

    return 0;
}


/*
 * Who sees a post: an authorization with read_posts sees every post of
 * its types and public ones of other types; another server, signing with
 * the credential of its relationship to us, our public posts and those
 * whose permissions name its entity or one of its groups; anyone else
 * the entity's own public posts.
 */

ngx_int_t
ngx_http_tent_post_visible(ngx_http_tent_ctx_t *ctx, ngx_str_t *type,
    ngx_uint_t public, ngx_uint_t original, json_t *entities, json_t *groups)
{
    if (ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_POSTS)) {
        return public
               || ngx_http_tent_type_allowed(
                      json_object_get(ctx->principal.credential,
                                      "post_types"),
                      type);
    }

    if (!original) {
        return 0;
    }

    if (public) {
        return 1;
    }

    if (ctx->principal.kind == NGX_HTTP_TENT_FOLLOWER
        || ctx->principal.kind == NGX_HTTP_TENT_FOLLOWING)
    {
        return ngx_http_tent_post_names(ctx, entities, groups);
    }

    return 0;
}


/* a stored post: the same rule, read from its fields */

ngx_int_t
ngx_http_tent_post_record_visible(ngx_http_tent_ctx_t *ctx, json_t *post)
{
    json_t     *perms;
    ngx_str_t   type, entity;

    if (ngx_http_tent_json_str(post, "type", &type) != NGX_OK
        || ngx_http_tent_json_str(post, "entity", &entity) != NGX_OK)
    {
        return 0;
    }

    perms = json_object_get(post, "permissions");

    return ngx_http_tent_post_visible(ctx, &type,
               json_is_true(json_object_get(perms, "public")),
               ngx_http_tent_post_original(ctx, &entity),
               json_object_get(perms, "entities"),
               json_object_get(perms, "groups"));
}


/*
 * A post as this principal sees it: apps (u: keys) get received_at and
 * updated_at, and the full permissions with read_permissions; everyone
 * else {"public": ...} only.
 */

json_t *
ngx_http_tent_post_render(ngx_http_tent_ctx_t *ctx, json_t *post)
{
    size_t   i;
    json_t  *out, *perms, *a, *list, *copy;

    /*
     * A copy of the top level only: what is taken away or replaced is at
     * the top, or in the attachments, which are copied one level too.
     * The rest is shared with the post, and neither changes it.
     */

    out = json_copy(post);
    if (out == NULL) {
        return NULL;
    }

    json_object_del(out, "rus");

    if (json_array_size(json_object_get(post, "attachments"))) {
        list = json_array();

        json_array_foreach(json_object_get(post, "attachments"), i, a) {
            copy = json_copy(a);
            json_object_del(copy, "digest");

            if (json_array_append_new(list, copy) != 0) {
                json_decref(list);
                json_decref(out);
                return NULL;
            }
        }

        if (json_object_set_new(out, "attachments", list) != 0) {
            json_decref(out);
            return NULL;
        }
    }

    if (ctx->principal.kind != NGX_HTTP_TENT_AUTHORIZATION) {
        json_object_del(out, "received_at");
        json_object_del(out, "updated_at");
    }

    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_PERMISSIONS)) {
        perms = json_object_get(post, "permissions");
        json_object_set_new(out, "permissions",
                            json_pack("{s:b}", "public",
                                      json_is_true(json_object_get(perms,
                                                                   "public"))));
    }

    return out;
}


/*
 * One JSON pointer (RFC 6901) into a post's content: the value, or NULL;
 * "key" is its last token, unescaped.  NGX_DECLINED: not a pointer.
 */

static ngx_int_t
ngx_http_tent_post_pointer(ngx_pool_t *pool, json_t *doc, json_t *pointer,
    json_t **value, ngx_str_t *key)
{
    u_char      *p, *last, *t, *tok;
    size_t       len;
    ngx_int_t    index;
    const char  *s;

    if (!json_is_string(pointer)) {
        return NGX_DECLINED;
    }

    s = json_string_value(pointer);
    len = json_string_length(pointer);

    if (len == 0 || s[0] != '/' || ngx_strlchr((u_char *) s,
                                               (u_char *) s + len, '\0'))
    {
        return NGX_DECLINED;
    }

    tok = ngx_pnalloc(pool, len + 1);
    if (tok == NULL) {
        return NGX_ERROR;
    }

    p = (u_char *) s + 1;
    last = (u_char *) s + len;

    for ( ;; ) {

        /* the next token, "~1" read as "/" and "~0" as "~" */

        for (t = tok; p < last && *p != '/'; p++) {
            if (*p == '~' && p + 1 < last && (p[1] == '0' || p[1] == '1')) {
                *t++ = (p[1] == '0') ? '~' : '/';
                p++;
                continue;
            }

            *t++ = *p;
        }

        *t = '\0';

        if (json_is_object(doc)) {
            doc = json_object_get(doc, (char *) tok);

        } else if (json_is_array(doc) && t > tok
                   && (tok[0] != '0' || t - tok == 1))
        {
            index = ngx_atoi(tok, t - tok);
            doc = (index == NGX_ERROR) ? NULL
                                       : json_array_get(doc, (size_t) index);

        } else {
            doc = NULL;
        }

        if (p == last) {
            break;
        }

        p++;
    }

    key->data = tok;
    key->len = t - tok;
    *value = doc;

    return NGX_OK;
}


/* does an attachment match a view's selector: category, name, type */

static ngx_int_t
ngx_http_tent_post_selects(json_t *attachment, json_t *selector)
{
    json_t      *v;
    ngx_uint_t   i, some;

    static const char  *fields[] = { "category", "name", "type" };

    if (!json_is_object(selector)) {
        return 0;
    }

    some = 0;

    for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        v = json_object_get(selector, fields[i]);

        if (v == NULL) {
            continue;
        }

        if (!json_equal(v, json_object_get(attachment, fields[i]))) {
            return 0;
        }

        some = 1;
    }

    /* a selector of none of the three selects nothing */

    return some;
}


/*
 * ?view=name, as tentd's serializer does it, on what the principal may
 * see already (so a view never shows more than the full post):
 *
 *  - a view of the post's "views": "content" (JSON pointers) makes the
 *    content {last token: value or null}, "attachments" (selectors, ORed)
 *    keeps the attachments one of them matches; without "attachments"
 *    all of them stay, without "content" the content is {};
 *  - otherwise "full" changes nothing, "meta" drops content and
 *    attachments, and any other name leaves an empty content.
 */

static ngx_int_t
ngx_http_tent_post_view(ngx_http_request_t *r, json_t *out)
{
    u_char      *dst, *src;
    size_t       i, j;
    json_t      *view, *pointers, *selectors, *content, *list, *a, *s, *v;
    ngx_str_t    raw, name, key;
    ngx_uint_t   full, meta;

    if (ngx_http_arg(r, (u_char *) "view", 4, &raw) != NGX_OK
        || raw.len == 0)
    {
        return NGX_OK;
    }

    name.data = ngx_pnalloc(r->pool, raw.len + 1);
    if (name.data == NULL) {
        return NGX_ERROR;
    }

    dst = name.data;
    src = raw.data;
    ngx_unescape_uri(&dst, &src, raw.len, 0);
    name.len = dst - name.data;
    *dst = '\0';

    full = (name.len == 4 && ngx_strncmp(name.data, "full", 4) == 0);
    meta = (name.len == 4 && ngx_strncmp(name.data, "meta", 4) == 0);

    view = NULL;

    if (ngx_strlen(name.data) == name.len) {
        view = json_object_get(json_object_get(out, "views"),
                               (char *) name.data);
    }

    pointers = json_object_get(view, "content");
    selectors = json_object_get(view, "attachments");

    if (json_is_array(selectors)) {
        list = json_array();
        if (list == NULL) {
            return NGX_ERROR;
        }

        json_array_foreach(json_object_get(out, "attachments"), i, a) {
            json_array_foreach(selectors, j, s) {
                if (ngx_http_tent_post_selects(a, s)) {
                    json_array_append(list, a);
                    break;
                }
            }
        }

        json_object_set_new(out, "attachments", list);

    } else if (meta) {
        json_object_del(out, "attachments");
    }

    if (json_is_array(pointers)) {
        content = json_object();
        if (content == NULL) {
            return NGX_ERROR;
        }

        json_array_foreach(pointers, i, s) {
            switch (ngx_http_tent_post_pointer(r->pool,
                                               json_object_get(out, "content"),
                                               s, &v, &key))
            {
            case NGX_ERROR:
                json_decref(content);
                return NGX_ERROR;

            case NGX_DECLINED:
                continue;
            }

            json_object_set_new(content, (char *) key.data,
                                v ? json_incref(v) : json_null());
        }

        json_object_set_new(out, "content", content);

    } else if (meta) {
        json_object_del(out, "content");

    } else if (!full) {
        json_object_set_new(out, "content", json_object());
    }

    return NGX_OK;
}


/* the post as this principal sees it, in the request's ?view= */

json_t *
ngx_http_tent_post_render_view(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *post)
{
    json_t  *out;

    out = ngx_http_tent_post_render(ctx, post);

    if (out && ngx_http_tent_post_view(r, out) != NGX_OK) {
        json_decref(out);
        return NULL;
    }

    return out;
}
