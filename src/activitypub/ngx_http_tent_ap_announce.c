
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Our reposts as ActivityStreams (docs/activitypub.md, "Our reposts"): a
 * public or private repost is an Announce of the reposted post's
 * ActivityStreams id, its delete an Undo of that Announce.  Pure, as
 * ngx_http_tent_ap_map.c: the post (and the reposted post as we keep
 * it, read by the caller) in, JSON out.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_ap_map.h"


#define NGX_HTTP_TENT_AP_REPOST_TYPE  "https://tent.io/types/post/repost"
#define NGX_HTTP_TENT_AP_DELETE_TYPE  "https://tent.io/types/post/delete"


static ngx_uint_t ngx_http_tent_ap_type_base(json_t *type,
    const char *base);
static ngx_int_t ngx_http_tent_ap_escaped(ngx_pool_t *pool, ngx_str_t *out,
    ngx_str_t *head, json_t *a, json_t *b, const char *tail);
static json_t *ngx_http_tent_ap_announce_id(ngx_pool_t *pool,
    ngx_str_t *origin_api, json_t *id, const char *fragment);


/*
 * What the post is to the mapping: NGX_HTTP_TENT_AP_REPOST (a repost),
 * NGX_HTTP_TENT_AP_UNREPOST (the delete post of one: its content names
 * the type of the post it deleted), else 0
 */

ngx_uint_t
ngx_http_tent_ap_repost_kind(json_t *post)
{
    json_t  *type;

    type = json_object_get(post, "type");

    if (ngx_http_tent_ap_type_base(type, NGX_HTTP_TENT_AP_REPOST_TYPE)) {
        return NGX_HTTP_TENT_AP_REPOST;
    }

    if (ngx_http_tent_ap_type_base(type, NGX_HTTP_TENT_AP_DELETE_TYPE)
        && ngx_http_tent_ap_type_base(
               json_object_get(json_object_get(post, "content"), "type"),
               NGX_HTTP_TENT_AP_REPOST_TYPE))
    {
        return NGX_HTTP_TENT_AP_UNREPOST;
    }

    return 0;
}


/*
 * The object a repost announces: our own post's object id; the id the
 * inbox kept of a remote object ("activitypub.id" of a Create's post,
 * "activitypub.object" of an Announce's repost), when "reposted" is the
 * post as we keep it; else the Tent route of the post on this server,
 * {origin}{api}/posts/{entity}/{id} (a Tent post of another server has
 * no ActivityStreams id we know).  NGX_DECLINED: no such repost.
 */

ngx_int_t
ngx_http_tent_ap_repost_object(ngx_pool_t *pool, ngx_str_t *origin_api,
    ngx_str_t *entity, json_t *post, json_t *reposted, ngx_str_t *object)
{
    json_t  *content, *e, *id, *ap, *url;

    content = json_object_get(post, "content");
    e = json_object_get(content, "entity");
    id = json_object_get(content, "id");

    if (!json_is_string(e) || !json_is_string(id)
        || json_string_length(e) == 0 || json_string_length(id) == 0)
    {
        return NGX_DECLINED;
    }

    if (json_string_length(e) == entity->len
        && ngx_strncmp(json_string_value(e), entity->data, entity->len) == 0)
    {
        return ngx_http_tent_ap_escaped(pool, object, origin_api, id, NULL,
                                        NULL);
    }

    ap = json_object_get(reposted, "activitypub");
    url = json_object_get(ap, ngx_http_tent_ap_repost_kind(reposted)
                              == NGX_HTTP_TENT_AP_REPOST ? "object" : "id");

    if (json_is_string(url)
        && json_string_length(url) <= NGX_HTTP_TENT_AP_URL_MAX
        && (ngx_strncasecmp((u_char *) json_string_value(url),
                            (u_char *) "https://", 8) == 0
            || ngx_strncasecmp((u_char *) json_string_value(url),
                               (u_char *) "http://", 7) == 0))
    {
        object->len = json_string_length(url);
        object->data = ngx_pnalloc(pool, object->len);
        if (object->data == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(object->data, json_string_value(url), object->len);

        return NGX_OK;
    }

    return ngx_http_tent_ap_escaped(pool, object, origin_api, e, id, NULL);
}


/*
 * {"id": "{origin}{api}/posts/{repost id}#announce", "type": "Announce",
 *  "actor": entity, "object": URL, "published", to/cc as a post's}
 */

json_t *
ngx_http_tent_ap_announce(ngx_pool_t *pool, ngx_str_t *origin_api,
    ngx_str_t *entity, ngx_str_t *name, json_t *post, ngx_str_t *object)
{
    u_char   buf[32];
    json_t  *act, *id, *t;

    id = ngx_http_tent_ap_announce_id(pool, origin_api,
                                      json_object_get(post, "id"),
                                      "#announce");
    if (id == NULL) {
        return NULL;
    }

    act = json_pack("{s:s, s:o, s:s, s:s%, s:s%}",
                    "@context", NGX_HTTP_TENT_AP_CONTEXT, "id", id,
                    "type", "Announce", "actor", entity->data, entity->len,
                    "object", object->data, object->len);
    if (act == NULL) {
        return NULL;
    }

    t = json_object_get(post, "published_at");

    if (json_is_integer(t)
        && ngx_http_tent_ap_time(json_integer_value(t), buf) == NGX_OK
        && json_object_set_new(act, "published",
                               json_stringn((char *) buf, 20))
           != 0)
    {
        goto failed;
    }

    if (ngx_http_tent_ap_audience(pool, act, origin_api, entity, name, post)
        != NGX_OK)
    {
        goto failed;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, pool->log, 0,
                   "tent ap: Announce of \"%V\"", object);

    return act;

failed:

    json_decref(act);

    return NULL;
}


/*
 * The delete post of a repost: an Undo of its Announce (the id alone:
 * the reposted object is gone with the repost, and peers find the boost
 * by the Announce's id), addressed as the repost was
 */

json_t *
ngx_http_tent_ap_undo_announce(ngx_pool_t *pool, ngx_str_t *origin_api,
    ngx_str_t *entity, ngx_str_t *name, json_t *post)
{
    json_t  *act, *id, *undo, *deleted;

    deleted = json_object_get(json_object_get(post, "content"), "id");

    id = ngx_http_tent_ap_announce_id(pool, origin_api, deleted,
                                      "#announce");
    undo = ngx_http_tent_ap_announce_id(pool, origin_api, deleted,
                                        "#undo-announce");
    if (id == NULL || undo == NULL) {
        json_decref(id);
        json_decref(undo);
        return NULL;
    }

    act = json_pack("{s:s, s:o, s:s, s:s%, s:{s:o, s:s, s:s%}}",
                    "@context", NGX_HTTP_TENT_AP_CONTEXT, "id", undo,
                    "type", "Undo", "actor", entity->data, entity->len,
                    "object", "id", id, "type", "Announce",
                    "actor", entity->data, entity->len);
    if (act == NULL) {
        return NULL;
    }

    if (ngx_http_tent_ap_audience(pool, act, origin_api, entity, name, post)
        != NGX_OK)
    {
        json_decref(act);
        return NULL;
    }

    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, pool->log, 0,
                   "tent ap: Undo of an Announce");

    return act;
}


/* the type's base is "base": then "/" and a version, "#" a view, or end */

static ngx_uint_t
ngx_http_tent_ap_type_base(json_t *type, const char *base)
{
    size_t       len;
    const char  *s;

    if (!json_is_string(type)) {
        return 0;
    }

    s = json_string_value(type);
    len = ngx_strlen(base);

    return ngx_strncmp(s, base, len) == 0
           && (s[len] == '/' || s[len] == '#' || s[len] == '\0');
}


/* head + "/posts/" + a escaped [+ "/" + b escaped] [+ tail] */

static ngx_int_t
ngx_http_tent_ap_escaped(ngx_pool_t *pool, ngx_str_t *out, ngx_str_t *head,
    json_t *a, json_t *b, const char *tail)
{
    u_char      *p;
    size_t       len, alen, blen, tlen;
    const char  *as, *bs;

    as = json_string_value(a);
    alen = json_string_length(a);
    bs = b ? json_string_value(b) : "";
    blen = b ? json_string_length(b) : 0;
    tlen = tail ? ngx_strlen(tail) : 0;

    len = head->len + sizeof("/posts/") - 1
          + alen + 2 * ngx_escape_uri(NULL, (u_char *) as, alen,
                                      NGX_ESCAPE_URI_COMPONENT)
          + 1 + blen + 2 * ngx_escape_uri(NULL, (u_char *) bs, blen,
                                          NGX_ESCAPE_URI_COMPONENT)
          + tlen;

    out->data = ngx_pnalloc(pool, len);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(out->data, head->data, head->len);
    p = ngx_cpymem(p, "/posts/", sizeof("/posts/") - 1);
    p = (u_char *) ngx_escape_uri(p, (u_char *) as, alen,
                                  NGX_ESCAPE_URI_COMPONENT);

    if (b) {
        *p++ = '/';
        p = (u_char *) ngx_escape_uri(p, (u_char *) bs, blen,
                                      NGX_ESCAPE_URI_COMPONENT);
    }

    if (tail) {
        p = ngx_cpymem(p, tail, tlen);
    }

    out->len = p - out->data;

    return NGX_OK;
}


static json_t *
ngx_http_tent_ap_announce_id(ngx_pool_t *pool, ngx_str_t *origin_api,
    json_t *id, const char *fragment)
{
    ngx_str_t  s;

    if (!json_is_string(id) || json_string_length(id) == 0
        || ngx_http_tent_ap_escaped(pool, &s, origin_api, id, NULL, fragment)
           != NGX_OK)
    {
        return NULL;
    }

    return json_stringn((char *) s.data, s.len);
}
