
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * A Tent post as an ActivityStreams object, the least the transport
 * needs (helper "apmap" writes the whole mapping, the lead keeps its
 * file): a status is a Note, an essay an Article, their text escaped as
 * HTML in a paragraph; every other type has no ActivityPub form (NULL).
 * The addressing (to, cc) is the transport's: it depends on the
 * recipient.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_ap_map.h"


#define NGX_HTTP_TENT_AP_STATUS  "https://tent.io/types/post/status/"
#define NGX_HTTP_TENT_AP_ESSAY   "https://tent.io/types/post/essay/"


static json_t *ngx_http_tent_ap_map_html(ngx_pool_t *pool, json_t *text);
static json_t *ngx_http_tent_ap_map_time(json_t *t);


json_t *
ngx_http_tent_ap_object(ngx_pool_t *pool, ngx_str_t *origin_api,
    ngx_str_t *entity, json_t *post)
{
    u_char      *p;
    json_t      *obj, *content, *html;
    ngx_str_t    type, id, url;
    const char  *as;

    if (ngx_http_tent_json_str(post, "type", &type) != NGX_OK
        || ngx_http_tent_json_str(post, "id", &id) != NGX_OK)
    {
        return NULL;
    }

    content = json_object_get(post, "content");

    if (type.len > sizeof(NGX_HTTP_TENT_AP_STATUS) - 1
        && ngx_strncmp(type.data, NGX_HTTP_TENT_AP_STATUS,
                       sizeof(NGX_HTTP_TENT_AP_STATUS) - 1) == 0)
    {
        as = "Note";
        html = ngx_http_tent_ap_map_html(pool,
                                         json_object_get(content, "text"));

    } else if (type.len > sizeof(NGX_HTTP_TENT_AP_ESSAY) - 1
               && ngx_strncmp(type.data, NGX_HTTP_TENT_AP_ESSAY,
                              sizeof(NGX_HTTP_TENT_AP_ESSAY) - 1) == 0)
    {
        as = "Article";
        html = ngx_http_tent_ap_map_html(pool,
                                         json_object_get(content, "body"));

    } else {
        return NULL;
    }

    if (html == NULL) {
        return NULL;
    }

    url.len = origin_api->len + sizeof("/posts/") - 1 + id.len;
    url.data = ngx_pnalloc(pool, url.len);
    if (url.data == NULL) {
        json_decref(html);
        return NULL;
    }

    p = ngx_cpymem(url.data, origin_api->data, origin_api->len);
    p = ngx_cpymem(p, "/posts/", sizeof("/posts/") - 1);
    ngx_memcpy(p, id.data, id.len);

    obj = json_pack("{s:o, s:s, s:o, s:o, s:o, s:o}",
                    "id", ngx_http_tent_json_string(&url),
                    "type", as,
                    "attributedTo", ngx_http_tent_json_string(entity),
                    "url", ngx_http_tent_json_string(&url),
                    "content", html,
                    "published", ngx_http_tent_ap_map_time(
                                     json_object_get(post, "published_at")));

    if (obj && as[0] == 'A'
        && json_is_string(json_object_get(content, "title")))
    {
        json_object_set(obj, "name", json_object_get(content, "title"));
    }

    return obj;
}


/* plain text as HTML: escaped, in one paragraph */

static json_t *
ngx_http_tent_ap_map_html(ngx_pool_t *pool, json_t *text)
{
    u_char      *p;
    size_t       len;
    uintptr_t    n;
    const char  *s;
    ngx_str_t    out;

    if (!json_is_string(text)) {
        return json_string("");
    }

    s = json_string_value(text);
    len = json_string_length(text);
    n = ngx_escape_html(NULL, (u_char *) s, len);

    out.len = sizeof("<p></p>") - 1 + len + n;
    out.data = ngx_pnalloc(pool, out.len);
    if (out.data == NULL) {
        return NULL;
    }

    p = ngx_cpymem(out.data, "<p>", 3);
    p = (u_char *) ngx_escape_html(p, (u_char *) s, len);
    p = ngx_cpymem(p, "</p>", 4);

    out.len = p - out.data;

    return ngx_http_tent_json_string(&out);
}


/* seconds as ISO 8601, UTC */

static json_t *
ngx_http_tent_ap_map_time(json_t *t)
{
    u_char     buf[sizeof("2026-01-01T00:00:00Z")];
    ngx_tm_t   tm;
    ngx_str_t  s;

    ngx_gmtime(json_is_integer(t) ? (time_t) json_integer_value(t)
                                  : ngx_time(), &tm);

    s.data = buf;
    s.len = ngx_sprintf(buf, "%4d-%02d-%02dT%02d:%02d:%02dZ",
                        tm.ngx_tm_year, tm.ngx_tm_mon, tm.ngx_tm_mday,
                        tm.ngx_tm_hour, tm.ngx_tm_min, tm.ngx_tm_sec)
            - buf;

    return ngx_http_tent_json_string(&s);
}
