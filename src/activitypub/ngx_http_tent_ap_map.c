
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * A Tent post as an ActivityStreams object: status and photo a Note,
 * essay an Article; public posts only.  The collections' minimal form
 * of helper "apmap"'s mapping (AP.md item 6), same signature: text is
 * escaped into a paragraph, a photo's files are Image attachments at
 * our attachment URLs.  And the inbox's minimal mapping of an object to
 * a Tent post's fields: the text without its HTML, as a status (256
 * characters at most) or an essay, the mentions of its Mention tags,
 * public when addressed to Public.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_ap_map.h"


#define NGX_HTTP_TENT_AP_POST_TYPE  "https://tent.io/types/post/"


/* the type's name after the prefix ("status"), without its version */

static ngx_int_t
ngx_http_tent_ap_map_kind(json_t *post, ngx_str_t *kind)
{
    u_char     *p, *last;
    ngx_str_t   type;
    size_t      plen;

    plen = sizeof(NGX_HTTP_TENT_AP_POST_TYPE) - 1;

    if (ngx_http_tent_json_str(post, "type", &type) != NGX_OK
        || type.len <= plen
        || ngx_strncmp(type.data, NGX_HTTP_TENT_AP_POST_TYPE, plen) != 0)
    {
        return NGX_DECLINED;
    }

    p = type.data + plen;
    last = type.data + type.len;

    kind->data = p;

    while (p < last && *p != '/' && *p != '#') {
        p++;
    }

    kind->len = p - kind->data;

    return NGX_OK;
}


/* "<p>text</p>", the text escaped; NULL for no text */

static json_t *
ngx_http_tent_ap_map_html(ngx_pool_t *pool, json_t *text)
{
    u_char     *p, *d;
    size_t      len;
    ngx_str_t   s;
    uintptr_t   n;

    if (!json_is_string(text)) {
        return NULL;
    }

    s.data = (u_char *) json_string_value(text);
    s.len = json_string_length(text);

    n = ngx_escape_html(NULL, s.data, s.len);
    len = sizeof("<p></p>") - 1 + s.len + n;

    p = ngx_pnalloc(pool, len);
    if (p == NULL) {
        return NULL;
    }

    d = ngx_cpymem(p, "<p>", 3);

    if (n) {
        d = (u_char *) ngx_escape_html(d, s.data, s.len);

    } else {
        d = ngx_cpymem(d, s.data, s.len);
    }

    d = ngx_cpymem(d, "</p>", 4);

    return json_stringn((char *) p, d - p);
}


/* ISO 8601 of Tent's seconds (a value in ms is taken as ms) */

static json_t *
ngx_http_tent_ap_map_time(json_t *v)
{
    u_char      buf[sizeof("1970-01-01T00:00:00Z")], *p;
    time_t      t;
    ngx_tm_t    tm;
    json_int_t  n;

    n = json_integer_value(v);

    if (n > 100000000000LL) {
        n /= 1000;
    }

    t = (time_t) (n > 0 ? n : 0);
    ngx_gmtime(t, &tm);

    p = ngx_sprintf(buf, "%4d-%02d-%02dT%02d:%02d:%02dZ",
                    tm.ngx_tm_year, tm.ngx_tm_mon, tm.ngx_tm_mday,
                    tm.ngx_tm_hour, tm.ngx_tm_min, tm.ngx_tm_sec);

    return json_stringn((char *) buf, p - buf);
}


/* a photo's files: Image attachments at {id}/attachments/{name} */

static json_t *
ngx_http_tent_ap_map_images(ngx_pool_t *pool, ngx_str_t *id, json_t *post)
{
    u_char     *p, *d;
    size_t      i;
    json_t     *list, *a, *image;
    ngx_str_t   name, type;
    uintptr_t   n;

    list = json_array();
    if (list == NULL) {
        return NULL;
    }

    json_array_foreach(json_object_get(post, "attachments"), i, a) {
        if (ngx_http_tent_json_str(a, "name", &name) != NGX_OK) {
            continue;
        }

        if (ngx_http_tent_json_str(a, "type", &type) != NGX_OK) {
            ngx_str_set(&type, "application/octet-stream");
        }

        n = ngx_escape_uri(NULL, name.data, name.len,
                           NGX_ESCAPE_URI_COMPONENT);

        p = ngx_pnalloc(pool, id->len + sizeof("/attachments/") - 1
                              + name.len + 2 * n);
        if (p == NULL) {
            json_decref(list);
            return NULL;
        }

        d = ngx_cpymem(p, id->data, id->len);
        d = ngx_cpymem(d, "/attachments/", sizeof("/attachments/") - 1);
        d = (u_char *) ngx_escape_uri(d, name.data, name.len,
                                      NGX_ESCAPE_URI_COMPONENT);

        image = json_pack("{s:s, s:s%, s:s%}", "type", "Image",
                          "mediaType", type.data, type.len,
                          "url", p, (size_t) (d - p));

        if (image == NULL || json_array_append_new(list, image) != 0) {
            json_decref(list);
            return NULL;
        }
    }

    return list;
}


json_t *
ngx_http_tent_ap_object(ngx_pool_t *pool, ngx_str_t *origin_api,
    ngx_str_t *entity, json_t *post)
{
    u_char      *p;
    json_t      *obj, *content, *c, *v;
    ngx_str_t    kind, pid, id;
    const char  *type;

    if (!json_is_true(json_object_get(json_object_get(post, "permissions"),
                                      "public"))
        || ngx_http_tent_ap_map_kind(post, &kind) != NGX_OK
        || ngx_http_tent_json_str(post, "id", &pid) != NGX_OK)
    {
        return NULL;
    }

    content = json_object_get(post, "content");

    if (kind.len == 6 && ngx_strncmp(kind.data, "status", 6) == 0) {
        type = "Note";
        c = ngx_http_tent_ap_map_html(pool, json_object_get(content, "text"));

    } else if (kind.len == 5 && ngx_strncmp(kind.data, "photo", 5) == 0) {
        type = "Note";
        c = ngx_http_tent_ap_map_html(pool,
                                      json_object_get(content, "caption"));

    } else if (kind.len == 5 && ngx_strncmp(kind.data, "essay", 5) == 0) {
        type = "Article";
        c = ngx_http_tent_ap_map_html(pool, json_object_get(content, "body"));

    } else {
        return NULL;
    }

    id.len = origin_api->len + sizeof("/posts/") - 1 + pid.len;
    id.data = ngx_pnalloc(pool, id.len);
    if (id.data == NULL) {
        json_decref(c);
        return NULL;
    }

    p = ngx_cpymem(id.data, origin_api->data, origin_api->len);
    p = ngx_cpymem(p, "/posts/", sizeof("/posts/") - 1);
    ngx_memcpy(p, pid.data, pid.len);

    obj = json_pack("{s:s%, s:s, s:s%, s:s%, s:o, s:[s], s:[], s:o}",
                    "id", id.data, id.len,
                    "type", type,
                    "attributedTo", entity->data, entity->len,
                    "url", id.data, id.len,
                    "published", ngx_http_tent_ap_map_time(
                                     json_object_get(post, "published_at")),
                    "to", NGX_HTTP_TENT_AP_PUBLIC,
                    "cc",
                    "content", c ? c : json_string(""));

    if (obj == NULL) {
        return NULL;
    }

    if (type[0] == 'A') {
        v = json_object_get(content, "title");
        if (json_is_string(v)) {
            json_object_set(obj, "name", v);
        }
    }

    if (kind.data[0] == 'p') {
        v = ngx_http_tent_ap_map_images(pool, &id, post);
        if (v == NULL) {
            json_decref(obj);
            return NULL;
        }

        json_object_set_new(obj, "attachment", v);
    }

    return obj;
}


#define NGX_HTTP_TENT_AP_STATUS  "https://tent.io/types/post/status/v0.1.0"
#define NGX_HTTP_TENT_AP_ESSAY   "https://tent.io/types/post/essay/v0.1.0"

#define NGX_HTTP_TENT_AP_STATUS_CHARS  256
#define NGX_HTTP_TENT_AP_MENTIONS      32


static ngx_int_t ngx_http_tent_ap_text(ngx_pool_t *pool, ngx_str_t *html,
    ngx_str_t *text);
static ngx_uint_t ngx_http_tent_ap_addressed(json_t *list, const char *to);


/* HTML to text: tags dropped, <br> and </p> a new line, five entities */

static ngx_int_t
ngx_http_tent_ap_text(ngx_pool_t *pool, ngx_str_t *html, ngx_str_t *text)
{
    u_char      *p, *end, *q, *tag;
    size_t       i;
    ngx_uint_t   k;
    static struct {
        ngx_str_t  entity;
        u_char     c;
    } entities[] = {
        { ngx_string("&lt;"), '<' }, { ngx_string("&gt;"), '>' },
        { ngx_string("&amp;"), '&' }, { ngx_string("&quot;"), '"' },
        { ngx_string("&#39;"), '\'' }, { ngx_string("&apos;"), '\'' },
        { ngx_string("&nbsp;"), ' ' }
    };

    text->data = ngx_pnalloc(pool, html->len + 1);
    if (text->data == NULL) {
        return NGX_ERROR;
    }

    q = text->data;
    p = html->data;
    end = html->data + html->len;

    while (p < end) {
        if (*p == '<') {
            tag = p;
            p = ngx_strlchr(p, end, '>');
            p = p ? p + 1 : end;

            if ((p - tag >= 3 && ngx_strncasecmp(tag, (u_char *) "<br", 3)
                                 == 0)
                || (p - tag >= 3
                    && ngx_strncasecmp(tag, (u_char *) "</p", 3) == 0))
            {
                *q++ = '\n';
            }

            continue;
        }

        if (*p == '&') {
            for (k = 0; k < sizeof(entities) / sizeof(entities[0]); k++) {
                i = entities[k].entity.len;

                if ((size_t) (end - p) >= i
                    && ngx_strncmp(p, entities[k].entity.data, i) == 0)
                {
                    *q++ = entities[k].c;
                    p += i;
                    break;
                }
            }

            if (k < sizeof(entities) / sizeof(entities[0])) {
                continue;
            }
        }

        *q++ = *p++;
    }

    /* no new lines at the end */

    while (q > text->data && (q[-1] == '\n' || q[-1] == ' ')) {
        q--;
    }

    text->len = q - text->data;

    return NGX_OK;
}


static ngx_uint_t
ngx_http_tent_ap_addressed(json_t *list, const char *to)
{
    size_t   i;
    json_t  *v;

    if (json_is_string(list)) {
        return ngx_strcmp(json_string_value(list), to) == 0;
    }

    json_array_foreach(list, i, v) {
        if (json_is_string(v) && ngx_strcmp(json_string_value(v), to) == 0) {
            return 1;
        }
    }

    return 0;
}


json_t *
ngx_http_tent_ap_to_post(ngx_pool_t *pool, json_t *object, ngx_str_t *actor,
    const char **error)
{
    size_t      i, chars;
    json_t     *post, *content, *mentions, *tag;
    ngx_str_t   type, html, text, name;
    ngx_uint_t  public;

    *error = NULL;

    if (ngx_http_tent_json_str(object, "type", &type) != NGX_OK
        || !((type.len == 4 && ngx_strncmp(type.data, "Note", 4) == 0)
             || (type.len == 7 && ngx_strncmp(type.data, "Article", 7) == 0)
             || (type.len == 8
                 && ngx_strncmp(type.data, "Question", 8) == 0)))
    {
        *error = "not a Note, an Article or a Question";
        return NULL;
    }

    if (ngx_http_tent_json_str(object, "content", &html) != NGX_OK) {
        ngx_str_set(&html, "");
    }

    if (ngx_http_tent_ap_text(pool, &html, &text) != NGX_OK) {
        *error = "reading the content";
        return NULL;
    }

    if (ngx_http_tent_json_str(object, "name", &name) != NGX_OK) {
        name.len = 0;
    }

    if (text.len == 0 && name.len == 0) {
        *error = "no content";
        return NULL;
    }

    chars = ngx_utf8_length(text.data, text.len);

    if (type.data[0] == 'A' || chars == (size_t) NGX_ERROR
        || chars > NGX_HTTP_TENT_AP_STATUS_CHARS || text.len == 0)
    {
        content = json_pack("{s:s%}", "body", (char *) text.data, text.len);
        if (content && name.len) {
            json_object_set_new(content, "title",
                                ngx_http_tent_json_string(&name));
        }

    } else {
        content = json_pack("{s:s%}", "text", (char *) text.data, text.len);
    }

    public = ngx_http_tent_ap_addressed(json_object_get(object, "to"),
                                        NGX_HTTP_TENT_AP_PUBLIC)
             || ngx_http_tent_ap_addressed(json_object_get(object, "cc"),
                                           NGX_HTTP_TENT_AP_PUBLIC);

    mentions = json_array();

    json_array_foreach(json_object_get(object, "tag"), i, tag) {
        if (json_array_size(mentions) == NGX_HTTP_TENT_AP_MENTIONS) {
            break;
        }

        if (json_is_string(json_object_get(tag, "href"))
            && ngx_strncmp(json_string_value(json_object_get(tag, "href")),
                           "http", 4) == 0
            && json_is_string(json_object_get(tag, "type"))
            && ngx_strcmp(json_string_value(json_object_get(tag, "type")),
                          "Mention") == 0)
        {
            json_array_append_new(mentions,
                json_pack("{s:O}", "entity", json_object_get(tag, "href")));
        }
    }

    post = json_pack("{s:s, s:o, s:{s:b}, s:o}",
                     "type", content && json_object_get(content, "text")
                             ? NGX_HTTP_TENT_AP_STATUS
                             : NGX_HTTP_TENT_AP_ESSAY,
                     "content", content,
                     "permissions", "public", (int) public,
                     "mentions", mentions);
    if (post == NULL) {
        *error = "building the post";
        return NULL;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, pool->log, 0,
                   "tent activitypub: a %V of \"%V\" as a post, %uz "
                   "characters", &type, actor, chars);

    return post;
}
