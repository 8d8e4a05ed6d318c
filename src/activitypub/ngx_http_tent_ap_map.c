
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * A minimal mapping of an ActivityStreams object to a Tent post's fields
 * (AP.md item 6), what the inbox needs to keep a Create(Note): the text
 * without its HTML, as a status (256 characters at most) or an essay,
 * the mentions of its Mention tags, public when addressed to Public.
 * Helper "apmap" writes the whole mapping and its sanitizer.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_ap_map.h"
#include "ngx_http_tent_json.h"


#define NGX_HTTP_TENT_AP_STATUS  "https://tent.io/types/post/status/v0.1.0"
#define NGX_HTTP_TENT_AP_ESSAY   "https://tent.io/types/post/essay/v0.1.0"
#define NGX_HTTP_TENT_AP_PUBLIC  "https://www.w3.org/ns/activitystreams#Public"

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
