
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * A Tent post as an ActivityStreams object: status and photo a Note,
 * essay an Article; public posts only.  The collections' minimal form
 * of helper "apmap"'s mapping (AP.md item 6), same signature: text is
 * escaped into a paragraph, a photo's files are Image attachments at
 * our attachment URLs.
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
