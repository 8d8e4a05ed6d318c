
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Our posts as ActivityStreams objects and activities (docs/activitypub.md,
 * "Posts both ways"): status and photo as a Note, essay as an Article,
 * with the ids of AP.md (the Tent route of the post), its audience as
 * to/cc, its mentions as Mention tags and inReplyTo, its attachments at
 * their Tent URLs.  Pure: the post as stored in, JSON out.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_ap_map.h"

#include <openssl/sha.h>


#define NGX_HTTP_TENT_AP_POST_TYPE   "https://tent.io/types/post/"

/* what our HTML may grow to: a 64 KB essay body, escaped */
#define NGX_HTTP_TENT_AP_HTML_OUT    (256 * 1024)

#define NGX_HTTP_TENT_AP_KIND_NONE   0
#define NGX_HTTP_TENT_AP_KIND_STATUS 1
#define NGX_HTTP_TENT_AP_KIND_ESSAY  2
#define NGX_HTTP_TENT_AP_KIND_PHOTO  3
#define NGX_HTTP_TENT_AP_KIND_DELETE 4

#define ngx_http_tent_ap_alnum(c)                                            \
    (((c) >= '0' && (c) <= '9') || ((c) >= 'a' && (c) <= 'z')                \
     || ((c) >= 'A' && (c) <= 'Z'))


static ngx_uint_t ngx_http_tent_ap_kind(json_t *post);
static json_t *ngx_http_tent_ap_url_of(ngx_pool_t *pool, ngx_str_t *base,
    const char *middle, const char *id, size_t len);
static json_t *ngx_http_tent_ap_html_string(ngx_pool_t *pool,
    const char *text, size_t len, ngx_uint_t plain);
static ngx_int_t ngx_http_tent_ap_mentions(ngx_pool_t *pool, json_t *obj,
    ngx_str_t *origin_api, ngx_str_t *entity, json_t *post);
static json_t *ngx_http_tent_ap_mention_tag(ngx_pool_t *pool,
    const char *href);
static ngx_int_t ngx_http_tent_ap_attachments(ngx_pool_t *pool, json_t *obj,
    json_t *id, json_t *post);
static ngx_int_t ngx_http_tent_ap_set_time(json_t *obj, const char *key,
    json_t *t);
static ngx_uint_t ngx_http_tent_ap_has(json_t *list, const char *s);


json_t *
ngx_http_tent_ap_object(ngx_pool_t *pool, ngx_str_t *origin_api,
    ngx_str_t *entity, json_t *post)
{
    return ngx_http_tent_ap_object_named(pool, origin_api, entity, NULL,
                                         post);
}


/*
 * "name" is the actor's name of ngx_http_tent_ap_name() (tent_ap_name),
 * for the followers collection's URL; NULL: the name the entity URL
 * gives by default (ngx_http_tent_ap_entity_name()).
 */

json_t *
ngx_http_tent_ap_object_named(ngx_pool_t *pool, ngx_str_t *origin_api,
    ngx_str_t *entity, ngx_str_t *name, json_t *post)
{
    json_t      *obj, *id, *content, *v, *text;
    ngx_uint_t   kind;
    const char  *pid;

    kind = ngx_http_tent_ap_kind(post);

    if (kind == NGX_HTTP_TENT_AP_KIND_NONE
        || kind == NGX_HTTP_TENT_AP_KIND_DELETE)
    {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, pool->log, 0,
                       "tent ap: the post has no ActivityStreams form");
        return NULL;
    }

    v = json_object_get(post, "id");
    content = json_object_get(post, "content");

    if (!json_is_string(v) || json_string_length(v) == 0
        || !json_is_object(content))
    {
        return NULL;
    }

    pid = json_string_value(v);

    id = ngx_http_tent_ap_url_of(pool, origin_api, "/posts/", pid,
                                 json_string_length(v));
    if (id == NULL) {
        return NULL;
    }

    obj = json_pack("{s:o, s:s, s:s%, s:O}", "id", id,
                    "type", kind == NGX_HTTP_TENT_AP_KIND_ESSAY ? "Article"
                                                                : "Note",
                    "attributedTo", entity->data, entity->len,
                    "url", id);
    if (obj == NULL) {
        return NULL;
    }

    /* the text: a status's or a photo's caption, an essay's body */

    switch (kind) {

    case NGX_HTTP_TENT_AP_KIND_ESSAY:
        text = json_object_get(content, "body");

        v = json_object_get(content, "title");

        if (json_is_string(v) && json_string_length(v)
            && json_object_set(obj, "name", v) != 0)
        {
            goto failed;
        }

        v = json_object_get(content, "excerpt");

        if (json_is_string(v) && json_string_length(v)
            && json_object_set_new(obj, "summary",
                   ngx_http_tent_ap_html_string(pool, json_string_value(v),
                                                json_string_length(v), 0))
               != 0)
        {
            goto failed;
        }

        break;

    case NGX_HTTP_TENT_AP_KIND_PHOTO:
        text = json_object_get(content, "caption");
        break;

    default:
        text = json_object_get(content, "text");
    }

    v = ngx_http_tent_ap_html_string(pool,
                                     json_is_string(text)
                                         ? json_string_value(text) : "",
                                     json_is_string(text)
                                         ? json_string_length(text) : 0,
                                     kind != NGX_HTTP_TENT_AP_KIND_ESSAY);

    if (json_object_set_new(obj, "content", v) != 0) {
        goto failed;
    }

    if (ngx_http_tent_ap_set_time(obj, "published",
                                  json_object_get(post, "published_at"))
        != NGX_OK)
    {
        goto failed;
    }

    v = json_object_get(post, "version");

    if (json_is_integer(v) && json_integer_value(v) > 1
        && ngx_http_tent_ap_set_time(obj, "updated",
                                     json_object_get(post, "updated_at"))
           != NGX_OK)
    {
        goto failed;
    }

    if (ngx_http_tent_ap_audience(pool, obj, origin_api, entity, name, post)
        != NGX_OK
        || ngx_http_tent_ap_mentions(pool, obj, origin_api, entity, post)
           != NGX_OK
        || ngx_http_tent_ap_attachments(pool, obj, id, post) != NGX_OK)
    {
        goto failed;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, pool->log, 0,
                   "tent ap: post \"%s\" as a %s", pid,
                   kind == NGX_HTTP_TENT_AP_KIND_ESSAY ? "Article" : "Note");

    return obj;

failed:

    json_decref(obj);

    return NULL;
}


json_t *
ngx_http_tent_ap_activity(ngx_pool_t *pool, ngx_str_t *origin_api,
    ngx_str_t *entity, json_t *post, ngx_uint_t kind)
{
    return ngx_http_tent_ap_activity_named(pool, origin_api, entity, NULL,
                                           post, kind);
}


/*
 * Create and Update wrap the object; Delete carries a Tombstone of its
 * id, for the deleted post itself or for the delete post that took its
 * place ({"content": {"id": ...}}), addressed as the post was.
 */

json_t *
ngx_http_tent_ap_activity_named(ngx_pool_t *pool, ngx_str_t *origin_api,
    ngx_str_t *entity, ngx_str_t *name, json_t *post, ngx_uint_t kind)
{
    u_char      *p;
    size_t       len;
    json_t      *obj, *act, *id, *v, *version;
    const char  *what, *fragment;

    u_char       buf[NGX_INT64_LEN + 16];

    if (kind == NGX_HTTP_TENT_AP_DELETE) {
        v = json_object_get(post, "id");

        if (ngx_http_tent_ap_kind(post) == NGX_HTTP_TENT_AP_KIND_DELETE) {
            v = json_object_get(json_object_get(post, "content"), "id");
        }

        if (!json_is_string(v) || json_string_length(v) == 0) {
            return NULL;
        }

        id = ngx_http_tent_ap_url_of(pool, origin_api, "/posts/",
                                     json_string_value(v),
                                     json_string_length(v));
        if (id == NULL) {
            return NULL;
        }

        obj = json_pack("{s:o, s:s}", "id", id, "type", "Tombstone");
        if (obj == NULL) {
            return NULL;
        }

        if (ngx_http_tent_ap_audience(pool, obj, origin_api, entity, name,
                                      post)
            != NGX_OK)
        {
            json_decref(obj);
            return NULL;
        }

        what = "Delete";
        len = sizeof("#delete") - 1;
        ngx_memcpy(buf, "#delete", len);

    } else {
        obj = ngx_http_tent_ap_object_named(pool, origin_api, entity, name,
                                            post);
        if (obj == NULL) {
            return NULL;
        }

        what = (kind == NGX_HTTP_TENT_AP_UPDATE) ? "Update" : "Create";
        fragment = (kind == NGX_HTTP_TENT_AP_UPDATE) ? "#update-"
                                                     : "#create-";

        version = json_object_get(post, "version");

        p = ngx_cpymem(buf, fragment, ngx_strlen(fragment));
        p = ngx_http_tent_ap_digits(p, json_is_integer(version)
                                       && json_integer_value(version) > 0
                                       ? (uint64_t) json_integer_value(version)
                                       : 1, 1);
        len = p - buf;
    }

    id = json_object_get(obj, "id");

    p = ngx_pnalloc(pool, json_string_length(id) + len);
    if (p == NULL) {
        json_decref(obj);
        return NULL;
    }

    ngx_memcpy(p, json_string_value(id), json_string_length(id));
    ngx_memcpy(p + json_string_length(id), buf, len);

    act = json_pack("{s:s, s:s%, s:s, s:s%, s:O, s:O, s:o}",
                    "@context", NGX_HTTP_TENT_AP_CONTEXT,
                    "id", p, json_string_length(id) + len,
                    "type", what,
                    "actor", entity->data, entity->len,
                    "to", json_object_get(obj, "to"),
                    "cc", json_object_get(obj, "cc"),
                    "object", obj);
    if (act == NULL) {
        return NULL;
    }

    v = json_object_get(obj, kind == NGX_HTTP_TENT_AP_UPDATE ? "updated"
                                                             : "published");

    if (v && json_object_set(act, "published", v) != 0) {
        json_decref(act);
        return NULL;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, pool->log, 0,
                   "tent ap: activity %s of \"%s\"", what,
                   json_string_value(id));

    return act;
}


/*
 * The actor's name an entity URL gives when tent_ap_name is not set:
 * the last segment of its path, else the first label of its host (the
 * rule of ngx_http_tent_ap_name(), without a request).
 */

ngx_int_t
ngx_http_tent_ap_entity_name(ngx_str_t *entity, ngx_str_t *name)
{
    u_char  *p, *host, *last;

    last = entity->data + entity->len;

    p = ngx_strlcasestrn(entity->data, last, (u_char *) "://", 3 - 1);
    if (p == NULL) {
        return NGX_DECLINED;
    }

    host = p + 3;

    while (last > host && last[-1] == '/') {
        last--;
    }

    p = ngx_strlchr(host, last, '/');

    if (p) {
        for (p = last; p[-1] != '/'; p--) { /* void */ }

    } else {
        for (p = host; p < last && *p != '.' && *p != ':'; p++) {
            /* void */
        }

        last = p;
        p = host;
    }

    name->data = p;
    name->len = last - p;

    if (name->len == 0 || name->len > 64) {
        return NGX_DECLINED;
    }

    for ( /* void */ ; p < last; p++) {
        if (!(ngx_http_tent_ap_alnum(*p) || *p == '-' || *p == '_'
              || *p == '.' || *p == '~'))
        {
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


/*
 * A private post's activity as one recipient gets it: "to" that
 * recipient alone, no "cc", only its own Mention tag, on the activity
 * and its object, so that no recipient learns whom else it was shared
 * with (Tent shows a reader permissions.public only).  A public one is
 * left as it is (its audience is no secret).  A new activity.
 */

json_t *
ngx_http_tent_ap_narrow(json_t *activity, ngx_str_t *recipient)
{
    size_t       i, n;
    json_t      *act, *obj, *o, *tags, *kept, *t, *href;
    ngx_uint_t   pass;

    if (ngx_http_tent_ap_has(json_object_get(activity, "to"),
                             NGX_HTTP_TENT_AP_PUBLIC))
    {
        return json_incref(activity);
    }

    act = json_deep_copy(activity);
    if (act == NULL) {
        return NULL;
    }

    obj = json_object_get(act, "object");

    for (pass = 0; pass < 2; pass++) {
        o = pass ? obj : act;

        if (!json_is_object(o)) {
            continue;
        }

        if (json_object_set_new(o, "to",
                                json_pack("[s%]", recipient->data,
                                          recipient->len))
            != 0
            || json_object_set_new(o, "cc", json_array()) != 0)
        {
            goto failed;
        }

        tags = json_object_get(o, "tag");

        if (!json_is_array(tags)) {
            continue;
        }

        kept = json_array();
        if (kept == NULL) {
            goto failed;
        }

        json_array_foreach(tags, i, t) {
            href = json_object_get(t, "href");
            n = json_string_length(href);

            if (json_is_string(json_object_get(t, "type"))
                && ngx_strcmp(json_string_value(json_object_get(t, "type")),
                              "Mention") == 0
                && !(json_is_string(href) && n == recipient->len
                     && ngx_strncmp(json_string_value(href), recipient->data,
                                    n) == 0))
            {
                continue;
            }

            if (json_array_append(kept, t) != 0) {
                json_decref(kept);
                goto failed;
            }
        }

        if (json_object_set_new(o, "tag", kept) != 0) {
            goto failed;
        }
    }

    return act;

failed:

    json_decref(act);

    return NULL;
}


/* the post id in one of our object ids, {origin}{api}/posts/{id} */

ngx_int_t
ngx_http_tent_ap_object_post(ngx_str_t *origin_api, ngx_str_t *url,
    ngx_str_t *id)
{
    u_char  *p, *last;
    size_t   n;

    n = origin_api->len + sizeof("/posts/") - 1;

    if (url->len <= n
        || ngx_strncmp(url->data, origin_api->data, origin_api->len) != 0
        || ngx_strncmp(url->data + origin_api->len, "/posts/", 7) != 0)
    {
        return NGX_DECLINED;
    }

    p = url->data + n;
    last = url->data + url->len;

    if (last - p > 64) {
        return NGX_DECLINED;
    }

    id->data = p;
    id->len = last - p;

    for ( /* void */ ; p < last; p++) {
        if (!(ngx_http_tent_ap_alnum(*p) || *p == '-' || *p == '_')) {
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


/*
 * The Tent id a remote object is kept under, and that a reply to it
 * mentions: 22 characters of base64url of its id's SHA-256, the shape
 * of our own ids.  The same object id always gives the same post, so
 * an Update or a Delete finds what a Create made.  "id" must hold
 * NGX_HTTP_TENT_AP_POST_ID_LEN + 2 bytes.
 */

ngx_int_t
ngx_http_tent_ap_post_id(ngx_str_t *object_id, u_char *id)
{
    ngx_str_t  src, dst;
    u_char     md[SHA256_DIGEST_LENGTH];

    if (SHA256(object_id->data, object_id->len, md) == NULL) {
        return NGX_ERROR;
    }

    src.data = md;
    src.len = 16;
    dst.data = id;

    ngx_encode_base64url(&dst, &src);

    return dst.len == NGX_HTTP_TENT_AP_POST_ID_LEN ? NGX_OK : NGX_ERROR;
}


static ngx_uint_t
ngx_http_tent_ap_kind(json_t *post)
{
    size_t       plen, len;
    json_t      *type;
    const char  *s;
    ngx_uint_t   i;

    static struct {
        const char  *name;
        ngx_uint_t   kind;
    } kinds[] = {
        { "status", NGX_HTTP_TENT_AP_KIND_STATUS },
        { "essay", NGX_HTTP_TENT_AP_KIND_ESSAY },
        { "photo", NGX_HTTP_TENT_AP_KIND_PHOTO },
        { "delete", NGX_HTTP_TENT_AP_KIND_DELETE },
        { NULL, 0 }
    };

    type = json_object_get(post, "type");

    if (!json_is_string(type)) {
        return NGX_HTTP_TENT_AP_KIND_NONE;
    }

    s = json_string_value(type);
    plen = sizeof(NGX_HTTP_TENT_AP_POST_TYPE) - 1;

    if (ngx_strncmp(s, NGX_HTTP_TENT_AP_POST_TYPE, plen) != 0) {
        return NGX_HTTP_TENT_AP_KIND_NONE;
    }

    s += plen;

    /* the base: the name, then "/" and the version, or "#" a view */

    for (i = 0; kinds[i].name; i++) {
        len = ngx_strlen(kinds[i].name);

        if (ngx_strncmp(s, kinds[i].name, len) == 0
            && (s[len] == '/' || s[len] == '#' || s[len] == '\0'))
        {
            return kinds[i].kind;
        }
    }

    return NGX_HTTP_TENT_AP_KIND_NONE;
}


/* base + middle + id (attachments: id is the name, percent-escaped) */

static json_t *
ngx_http_tent_ap_url_of(ngx_pool_t *pool, ngx_str_t *base,
    const char *middle, const char *id, size_t len)
{
    u_char  *p, *q;
    size_t   mlen, n;

    mlen = ngx_strlen(middle);
    n = len + ngx_escape_uri(NULL, (u_char *) id, len,
                             NGX_ESCAPE_URI_COMPONENT) * 2;

    p = ngx_pnalloc(pool, base->len + mlen + n);
    if (p == NULL) {
        return NULL;
    }

    q = ngx_cpymem(p, base->data, base->len);
    q = ngx_cpymem(q, middle, mlen);
    q = (u_char *) ngx_escape_uri(q, (u_char *) id, len,
                                  NGX_ESCAPE_URI_COMPONENT);

    return json_stringn((char *) p, q - p);
}


/* a JSON string of HTML: plain text made HTML, or HTML through the list */

static json_t *
ngx_http_tent_ap_html_string(ngx_pool_t *pool, const char *text, size_t len,
    ngx_uint_t plain)
{
    ngx_int_t  rc;
    ngx_str_t  in, out;

    in.data = (u_char *) text;
    in.len = len;

    rc = plain ? ngx_http_tent_ap_text_html(pool, &in,
                                            NGX_HTTP_TENT_AP_HTML_OUT, &out)
               : ngx_http_tent_ap_html(pool, &in, NGX_HTTP_TENT_AP_HTML_OUT,
                                       &out);

    if (rc != NGX_OK) {
        return NULL;
    }

    return json_stringn((char *) out.data, out.len);
}


/*
 * to/cc.  Public: to the Public collection, cc our followers and the
 * entities mentioned.  Otherwise: to the entities the permissions name,
 * nothing else (a mentioned entity the post was not shared with must
 * not get it); groups have no ActivityStreams form and address no one.
 * bcc is never used: ActivityPub has it removed before delivery, snac
 * drops a bcc-only note, and each recipient inbox gets its own request
 * anyway (the transport may narrow "to" to that recipient).
 */

ngx_int_t
ngx_http_tent_ap_audience(ngx_pool_t *pool, json_t *obj,
    ngx_str_t *origin_api, ngx_str_t *entity, ngx_str_t *name, json_t *post)
{
    u_char      *p, *q;
    size_t       len;
    json_t      *to, *cc, *perms, *v, *m;
    size_t       i;
    ngx_str_t    n;
    const char  *key;

    to = json_array();
    cc = json_array();

    if (json_object_set_new(obj, "to", to) != 0
        || json_object_set_new(obj, "cc", cc) != 0)
    {
        return NGX_ERROR;
    }

    perms = json_object_get(post, "permissions");

    if (json_is_true(json_object_get(perms, "public"))) {

        if (json_array_append_new(to, json_string(NGX_HTTP_TENT_AP_PUBLIC))
            != 0)
        {
            return NGX_ERROR;
        }

        if (name == NULL && ngx_http_tent_ap_entity_name(entity, &n) == NGX_OK)
        {
            name = &n;
        }

        if (name) {
            len = origin_api->len + sizeof("/activitypub/") - 1 + name->len
                  + sizeof("/followers") - 1;

            p = ngx_pnalloc(pool, len);
            if (p == NULL) {
                return NGX_ERROR;
            }

            q = ngx_cpymem(p, origin_api->data, origin_api->len);
            q = ngx_cpymem(q, "/activitypub/", sizeof("/activitypub/") - 1);
            q = ngx_cpymem(q, name->data, name->len);
            q = ngx_cpymem(q, "/followers", sizeof("/followers") - 1);

            if (json_array_append_new(cc, json_stringn((char *) p, q - p))
                != 0)
            {
                return NGX_ERROR;
            }
        }

        json_array_foreach(json_object_get(post, "mentions"), i, m) {
            v = json_object_get(m, "entity");

            if (!json_is_string(v)
                || (json_string_length(v) == entity->len
                    && ngx_strncmp(json_string_value(v), entity->data,
                                   entity->len) == 0)
                || ngx_http_tent_ap_has(cc, json_string_value(v)))
            {
                continue;
            }

            if (json_array_append(cc, v) != 0) {
                return NGX_ERROR;
            }
        }

        return NGX_OK;
    }

    json_object_foreach(json_object_get(perms, "entities"), key, v) {
        if (!json_is_true(v)
            || (ngx_strlen(key) == entity->len
                && ngx_strncmp(key, entity->data, entity->len) == 0))
        {
            continue;
        }

        if (json_array_append_new(to, json_string(key)) != 0) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * Mentions: a Mention tag per entity addressed (the first post mention
 * is the reply: inReplyTo), so a private post names only its audience.
 * inReplyTo is our object id for a post of ours, the "activitypub" id
 * the caller copied into the mention from the mentioned post it keeps
 * (a remote object: {"entity", "post", "activitypub": {"id": ...}}),
 * else none (a Tent post elsewhere has no ActivityStreams id we know).
 */

static ngx_int_t
ngx_http_tent_ap_mentions(ngx_pool_t *pool, json_t *obj,
    ngx_str_t *origin_api, ngx_str_t *entity, json_t *post)
{
    size_t       i;
    json_t      *tags, *m, *e, *pid, *ap, *reply, *to, *cc;
    ngx_uint_t   ours;

    tags = json_array();

    if (json_object_set_new(obj, "tag", tags) != 0) {
        return NGX_ERROR;
    }

    to = json_object_get(obj, "to");
    cc = json_object_get(obj, "cc");
    reply = NULL;

    json_array_foreach(json_object_get(post, "mentions"), i, m) {
        e = json_object_get(m, "entity");
        pid = json_object_get(m, "post");

        if (!json_is_string(e)) {
            continue;
        }

        ours = (json_string_length(e) == entity->len
                && ngx_strncmp(json_string_value(e), entity->data,
                               entity->len) == 0);

        if (reply == NULL && json_is_string(pid)
            && json_string_length(pid))
        {
            ap = json_object_get(json_object_get(m, "activitypub"), "id");

            if (json_is_string(ap)) {
                reply = json_copy(ap);

            } else if (ours) {
                reply = ngx_http_tent_ap_url_of(pool, origin_api, "/posts/",
                                                json_string_value(pid),
                                                json_string_length(pid));
                if (reply == NULL) {
                    return NGX_ERROR;
                }
            }

            if (reply && json_object_set_new(obj, "inReplyTo", reply) != 0) {
                return NGX_ERROR;
            }
        }

        if (ours || (!ngx_http_tent_ap_has(to, json_string_value(e))
                     && !ngx_http_tent_ap_has(cc, json_string_value(e))))
        {
            continue;
        }

        if (ngx_http_tent_ap_has(tags, json_string_value(e))) {
            continue;
        }

        if (json_array_append_new(tags,
                ngx_http_tent_ap_mention_tag(pool, json_string_value(e)))
            != 0)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * {"type": "Mention", "href": entity, "name": "@name@host"}: the name
 * is the entity URL's default one, a guess (Mastodon's /users/bob gives
 * @bob@host; peers go by href).
 */

static json_t *
ngx_http_tent_ap_mention_tag(ngx_pool_t *pool, const char *href)
{
    u_char     *p, *q, *host, *last;
    ngx_str_t   e, name;

    e.data = (u_char *) href;
    e.len = ngx_strlen(href);

    if (ngx_http_tent_ap_entity_name(&e, &name) != NGX_OK) {
        return json_pack("{s:s, s:s}", "type", "Mention", "href", href);
    }

    host = ngx_strlcasestrn(e.data, e.data + e.len, (u_char *) "://", 3 - 1)
           + 3;

    for (last = host; last < e.data + e.len && *last != '/'; last++) {
        /* void */
    }

    p = ngx_pnalloc(pool, name.len + (last - host) + 2);
    if (p == NULL) {
        return NULL;
    }

    q = ngx_cpymem(p, "@", 1);
    q = ngx_cpymem(q, name.data, name.len);
    q = ngx_cpymem(q, "@", 1);
    q = ngx_cpymem(q, host, last - host);

    return json_pack("{s:s, s:s, s:s%}", "type", "Mention", "href", href,
                     "name", p, (size_t) (q - p));
}


/* each attachment at its Tent URL, an image as an Image */

static ngx_int_t
ngx_http_tent_ap_attachments(ngx_pool_t *pool, json_t *obj, json_t *id,
    json_t *post)
{
    size_t       i;
    json_t      *list, *a, *name, *type, *url, *item;
    ngx_str_t    base;
    const char  *as;

    list = json_array();

    if (json_object_set_new(obj, "attachment", list) != 0) {
        return NGX_ERROR;
    }

    base.data = (u_char *) json_string_value(id);
    base.len = json_string_length(id);

    json_array_foreach(json_object_get(post, "attachments"), i, a) {
        name = json_object_get(a, "name");
        type = json_object_get(a, "type");

        if (!json_is_string(name) || !json_is_string(type)) {
            continue;
        }

        url = ngx_http_tent_ap_url_of(pool, &base, "/attachments/",
                                      json_string_value(name),
                                      json_string_length(name));
        if (url == NULL) {
            return NGX_ERROR;
        }

        as = "Document";

        if (ngx_strncasecmp((u_char *) json_string_value(type),
                            (u_char *) "image/", 6) == 0)
        {
            as = "Image";

        } else if (ngx_strncasecmp((u_char *) json_string_value(type),
                                   (u_char *) "video/", 6) == 0)
        {
            as = "Video";

        } else if (ngx_strncasecmp((u_char *) json_string_value(type),
                                   (u_char *) "audio/", 6) == 0)
        {
            as = "Audio";
        }

        item = json_pack("{s:s, s:O, s:o, s:O}", "type", as,
                         "mediaType", type, "url", url, "name", name);

        if (json_array_append_new(list, item) != 0) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_ap_set_time(json_t *obj, const char *key, json_t *t)
{
    u_char  buf[32];

    if (!json_is_integer(t)
        || ngx_http_tent_ap_time(json_integer_value(t), buf) != NGX_OK)
    {
        return NGX_OK;
    }

    return json_object_set_new(obj, key, json_stringn((char *) buf, 20)) == 0
           ? NGX_OK : NGX_ERROR;
}


/* a list of strings, or of objects with "href", holds s */

static ngx_uint_t
ngx_http_tent_ap_has(json_t *list, const char *s)
{
    size_t   i;
    json_t  *v;

    json_array_foreach(list, i, v) {
        if (json_is_object(v)) {
            v = json_object_get(v, "href");
        }

        if (json_is_string(v) && ngx_strcmp(json_string_value(v), s) == 0) {
            return 1;
        }
    }

    return 0;
}
