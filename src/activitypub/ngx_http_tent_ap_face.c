
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * An actor's name and face, as its follower or following record keeps
 * them (docs/activitypub.md "Names and faces"): "activitypub.name", its
 * Person's name (else preferredUsername) as text, at most 80 characters,
 * without control characters nor bidi overrides and isolates; and
 * "activitypub.icon", its icon's URL when it is http(s), at most 2 KB.
 * Taken when we follow it and when its Update(Person) arrives; GET
 * {api}/followers and /followings show them as a basic profile.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_remote.h"
#include "ngx_http_tent_ap.h"


#define NGX_HTTP_TENT_AP_NAME_CHARS  80
#define NGX_HTTP_TENT_AP_ICON_MAX    2048


static ngx_int_t ngx_http_tent_ap_face_name(ngx_pool_t *pool, json_t *v,
    ngx_str_t *name);
static ngx_int_t ngx_http_tent_ap_face_icon(json_t *v, ngx_str_t *icon);
static ngx_uint_t ngx_http_tent_ap_face_put(json_t *ap, const char *key,
    ngx_str_t *value);


/* the Person's name and icon, copied into the pool (empty when none) */

ngx_int_t
ngx_http_tent_ap_face(ngx_pool_t *pool, json_t *person, ngx_str_t *name,
    ngx_str_t *icon)
{
    ngx_str_t  url;

    ngx_str_null(name);
    ngx_str_null(icon);

    if (!json_is_object(person)) {
        return NGX_OK;
    }

    if (ngx_http_tent_ap_face_name(pool, json_object_get(person, "name"),
                                   name)
        != NGX_OK
        || (name->len == 0
            && ngx_http_tent_ap_face_name(pool,
                   json_object_get(person, "preferredUsername"), name)
               != NGX_OK))
    {
        return NGX_ERROR;
    }

    if (ngx_http_tent_ap_face_icon(json_object_get(person, "icon"), &url)
        == NGX_OK)
    {
        icon->data = ngx_pstrdup(pool, &url);
        if (icon->data == NULL) {
            return NGX_ERROR;
        }

        icon->len = url.len;
    }

    return NGX_OK;
}


/* into a record's "activitypub": 1 when it changed it */

ngx_uint_t
ngx_http_tent_ap_face_set(json_t *ap, ngx_str_t *name, ngx_str_t *icon)
{
    ngx_uint_t  changed;

    changed = ngx_http_tent_ap_face_put(ap, "name", name);
    changed |= ngx_http_tent_ap_face_put(ap, "icon", icon);

    return changed;
}


/*
 * The worker keeps them with the actor's key (ngx_http_tent_ap_verify.c,
 * for a Follow's record): one ngx_alloc()ed block, at most 80 characters
 * and 2 KB, freed with the key; NULL when there is neither.
 */

ngx_int_t
ngx_http_tent_ap_face_alloc(ngx_log_t *log, ngx_str_t *name,
    ngx_str_t *icon, u_char **block)
{
    u_char  *p;

    *block = NULL;

    if (name->len + icon->len == 0) {
        return NGX_OK;
    }

    p = ngx_alloc(name->len + icon->len, log);
    if (p == NULL) {
        ngx_str_null(name);
        ngx_str_null(icon);
        return NGX_ERROR;
    }

    *block = p;

    /* memcpy() from NULL is undefined even for 0 bytes */

    if (name->len) {
        ngx_memcpy(p, name->data, name->len);
    }

    name->data = p;
    p += name->len;

    if (icon->len) {
        ngx_memcpy(p, icon->data, icon->len);
    }

    icon->data = p;

    return NGX_OK;
}


/* the kept ones copied for a request: the key may go while it goes on */

ngx_int_t
ngx_http_tent_ap_face_copy(ngx_pool_t *pool, ngx_str_t *from_name,
    ngx_str_t *from_icon, ngx_str_t *name, ngx_str_t *icon)
{
    ngx_str_null(name);
    ngx_str_null(icon);

    if (from_name->len) {
        name->data = ngx_pstrdup(pool, from_name);
        if (name->data == NULL) {
            return NGX_ERROR;
        }

        name->len = from_name->len;
    }

    if (from_icon->len) {
        icon->data = ngx_pstrdup(pool, from_icon);
        if (icon->data == NULL) {
            return NGX_ERROR;
        }

        icon->len = from_icon->len;
    }

    return NGX_OK;
}


static ngx_uint_t
ngx_http_tent_ap_face_put(json_t *ap, const char *key, ngx_str_t *value)
{
    json_t  *old;

    old = json_object_get(ap, key);

    if (value->len == 0) {
        if (old == NULL) {
            return 0;
        }

        json_object_del(ap, key);
        return 1;
    }

    if (json_is_string(old)
        && json_string_length(old) == value->len
        && ngx_memcmp(json_string_value(old), value->data, value->len) == 0)
    {
        return 0;
    }

    json_object_set_new(ap, key, ngx_http_tent_json_string(value));

    return 1;
}


/*
 * Text of at most 80 code points: no C0 or C1 control, no bidi override
 * or isolate (U+202A-202E, U+2066-2069) that would let it run into what
 * follows it where it is shown; spaces trimmed.  Jansson's strings are
 * valid UTF-8 already.
 */

static ngx_int_t
ngx_http_tent_ap_face_name(ngx_pool_t *pool, json_t *v, ngx_str_t *name)
{
    u_char      *p, *last, *start, *q;
    uint32_t     c;
    ngx_uint_t   n;

    ngx_str_null(name);

    if (!json_is_string(v)) {
        return NGX_OK;
    }

    p = (u_char *) json_string_value(v);
    last = p + json_string_length(v);

    q = ngx_pnalloc(pool, ngx_min((size_t) (last - p),
                                  NGX_HTTP_TENT_AP_NAME_CHARS * 4));
    if (q == NULL) {
        return NGX_ERROR;
    }

    name->data = q;
    n = 0;

    while (p < last && n < NGX_HTTP_TENT_AP_NAME_CHARS) {
        start = p;
        c = (*p < 0x80) ? *p++ : ngx_utf8_decode(&p, last - p);

        if (c > 0x10ffff) {
            break;                          /* not UTF-8 after all */
        }

        if (c < 0x20 || (c >= 0x7f && c < 0xa0)
            || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069)
            || ((c == ' ' || c == 0x3000) && n == 0))
        {
            continue;
        }

        q = ngx_cpymem(q, start, p - start);
        n++;
    }

    while (q > name->data && q[-1] == ' ') {
        q--;
    }

    name->len = q - name->data;

    return NGX_OK;
}


/* icon: a URL, an Image with "url" (a URL or a Link's "href"), a list */

static ngx_int_t
ngx_http_tent_ap_face_icon(json_t *v, ngx_str_t *icon)
{
    if (json_is_array(v)) {
        v = json_array_get(v, 0);
    }

    if (json_is_object(v)) {
        v = json_object_get(v, "url");

        if (json_is_array(v)) {
            v = json_array_get(v, 0);
        }

        if (json_is_object(v)) {
            v = json_object_get(v, "href");
        }
    }

    if (!json_is_string(v)) {
        return NGX_DECLINED;
    }

    icon->data = (u_char *) json_string_value(v);
    icon->len = json_string_length(v);

    if (icon->len > NGX_HTTP_TENT_AP_ICON_MAX
        || (ngx_strncasecmp(icon->data, (u_char *) "https://", 8) != 0
            && ngx_strncasecmp(icon->data, (u_char *) "http://", 7) != 0)
        || ngx_http_tent_entity_valid(icon) != NGX_OK)
    {
        return NGX_DECLINED;
    }

    return NGX_OK;
}
