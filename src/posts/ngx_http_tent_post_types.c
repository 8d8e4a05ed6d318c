
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Posts as clients send them (spec 0.2, posts): the common fields and
 * the content schema of each type of post this server knows.  A post
 * that passes is rebuilt from the accepted fields only, so what is
 * stored never holds anything a client made up, except inside content:
 * content is kept as sent (unknown keys too, as tentd did), once its
 * known fields have been checked.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_post_check.h"


#define NGX_HTTP_TENT_POST_TYPE_PREFIX   "https://tent.io/types/post/"

#define NGX_HTTP_TENT_POST_MAX_TYPE      512
#define NGX_HTTP_TENT_POST_MAX_STRING    65536
#define NGX_HTTP_TENT_POST_MAX_ITEMS     1024
#define NGX_HTTP_TENT_POST_MAX_ID        64
#define NGX_HTTP_TENT_POST_STATUS_CHARS  256

/* published_at this far ahead of now is taken as milliseconds */
#define NGX_HTTP_TENT_POST_MS_AHEAD      1000000000


/* what a content field must be */
#define NGX_HTTP_TENT_POST_STRING        0
#define NGX_HTTP_TENT_POST_STRINGS       1
#define NGX_HTTP_TENT_POST_OBJECT        2
#define NGX_HTTP_TENT_POST_URL           3
#define NGX_HTTP_TENT_POST_REF           4
#define NGX_HTTP_TENT_POST_TYPES         5
#define NGX_HTTP_TENT_POST_ACTION        6   /* create, delete */
#define NGX_HTTP_TENT_POST_ACTION3       7   /* create, update, delete */
#define NGX_HTTP_TENT_POST_TEXT          8   /* status text */
#define NGX_HTTP_TENT_POST_POINT         9   /* GeoJSON point */


typedef struct {
    const char                     *name;
    ngx_uint_t                      kind;
    ngx_uint_t                      required;
    const char                     *missing;
    const char                     *invalid;
} ngx_http_tent_post_field_t;


typedef struct {
    const char                     *name;
    ngx_http_tent_post_field_t     *fields;
} ngx_http_tent_post_schema_t;


/* messages are string literals, so they outlive the request */

#define ngx_http_tent_post_field(type, name, kind, required, what)           \
    { name, kind, required, type " " name " is required",                    \
      type " " name " must be " what }

#define NGX_HTTP_TENT_POST_A_STRING                                          \
    "a string of at most " ngx_value(NGX_HTTP_TENT_POST_MAX_STRING) " bytes"
#define NGX_HTTP_TENT_POST_A_LIST                                            \
    "an array of at most " ngx_value(NGX_HTTP_TENT_POST_MAX_ITEMS) " strings"


static ngx_http_tent_post_field_t  ngx_http_tent_post_status[] = {
    ngx_http_tent_post_field("status", "text", NGX_HTTP_TENT_POST_TEXT, 0,
                             "a string"),
    ngx_http_tent_post_field("status", "location", NGX_HTTP_TENT_POST_POINT,
                             0, "a GeoJSON Point with two coordinates"),
    { NULL, 0, 0, NULL, NULL }
};


static ngx_http_tent_post_field_t  ngx_http_tent_post_essay[] = {
    ngx_http_tent_post_field("essay", "body", NGX_HTTP_TENT_POST_STRING, 1,
                             NGX_HTTP_TENT_POST_A_STRING),
    ngx_http_tent_post_field("essay", "title", NGX_HTTP_TENT_POST_STRING, 0,
                             NGX_HTTP_TENT_POST_A_STRING),
    ngx_http_tent_post_field("essay", "excerpt", NGX_HTTP_TENT_POST_STRING, 0,
                             NGX_HTTP_TENT_POST_A_STRING),
    ngx_http_tent_post_field("essay", "tags", NGX_HTTP_TENT_POST_STRINGS, 0,
                             NGX_HTTP_TENT_POST_A_LIST),
    { NULL, 0, 0, NULL, NULL }
};


static ngx_http_tent_post_field_t  ngx_http_tent_post_photo[] = {
    ngx_http_tent_post_field("photo", "caption", NGX_HTTP_TENT_POST_STRING, 0,
                             NGX_HTTP_TENT_POST_A_STRING),
    ngx_http_tent_post_field("photo", "albums", NGX_HTTP_TENT_POST_STRINGS, 0,
                             NGX_HTTP_TENT_POST_A_LIST),
    ngx_http_tent_post_field("photo", "tags", NGX_HTTP_TENT_POST_STRINGS, 0,
                             NGX_HTTP_TENT_POST_A_LIST),
    ngx_http_tent_post_field("photo", "exif", NGX_HTTP_TENT_POST_OBJECT, 0,
                             "an object"),
    { NULL, 0, 0, NULL, NULL }
};


static ngx_http_tent_post_field_t  ngx_http_tent_post_album[] = {
    ngx_http_tent_post_field("album", "photos", NGX_HTTP_TENT_POST_STRINGS, 1,
                             NGX_HTTP_TENT_POST_A_LIST),
    ngx_http_tent_post_field("album", "title", NGX_HTTP_TENT_POST_STRING, 0,
                             NGX_HTTP_TENT_POST_A_STRING),
    ngx_http_tent_post_field("album", "description",
                             NGX_HTTP_TENT_POST_STRING, 0,
                             NGX_HTTP_TENT_POST_A_STRING),
    ngx_http_tent_post_field("album", "cover", NGX_HTTP_TENT_POST_STRING, 0,
                             NGX_HTTP_TENT_POST_A_STRING),
    { NULL, 0, 0, NULL, NULL }
};


static ngx_http_tent_post_field_t  ngx_http_tent_post_repost[] = {
    ngx_http_tent_post_field("repost", "entity", NGX_HTTP_TENT_POST_URL, 1,
                             NGX_HTTP_TENT_POST_A_URL),
    ngx_http_tent_post_field("repost", "id", NGX_HTTP_TENT_POST_REF, 1,
                             NGX_HTTP_TENT_POST_A_REF),
    { NULL, 0, 0, NULL, NULL }
};


static ngx_http_tent_post_field_t  ngx_http_tent_post_profile[] = {
    ngx_http_tent_post_field("profile", "types", NGX_HTTP_TENT_POST_TYPES, 1,
                             "an array of type URIs"),
    { "action", NGX_HTTP_TENT_POST_ACTION3, 1, "profile action is required",
      "unknown action" },
    { NULL, 0, 0, NULL, NULL }
};


static ngx_http_tent_post_field_t  ngx_http_tent_post_delete[] = {
    ngx_http_tent_post_field("delete", "id", NGX_HTTP_TENT_POST_REF, 1,
                             NGX_HTTP_TENT_POST_A_REF),
    { NULL, 0, 0, NULL, NULL }
};


static ngx_http_tent_post_field_t  ngx_http_tent_post_follower[] = {
    ngx_http_tent_post_field("follower", "id", NGX_HTTP_TENT_POST_REF, 1,
                             NGX_HTTP_TENT_POST_A_REF),
    ngx_http_tent_post_field("follower", "entity", NGX_HTTP_TENT_POST_URL, 1,
                             NGX_HTTP_TENT_POST_A_URL),
    { "action", NGX_HTTP_TENT_POST_ACTION, 1, "follower action is required",
      "unknown action" },
    { NULL, 0, 0, NULL, NULL }
};


static ngx_http_tent_post_field_t  ngx_http_tent_post_following[] = {
    ngx_http_tent_post_field("following", "id", NGX_HTTP_TENT_POST_REF, 1,
                             NGX_HTTP_TENT_POST_A_REF),
    ngx_http_tent_post_field("following", "entity", NGX_HTTP_TENT_POST_URL,
                             1, NGX_HTTP_TENT_POST_A_URL),
    { "action", NGX_HTTP_TENT_POST_ACTION, 1, "following action is required",
      "unknown action" },
    { NULL, 0, 0, NULL, NULL }
};


/* any other type: content need only be an object */

static ngx_http_tent_post_schema_t  ngx_http_tent_post_schemas[] = {
    { "status", ngx_http_tent_post_status },
    { "essay", ngx_http_tent_post_essay },
    { "photo", ngx_http_tent_post_photo },
    { "album", ngx_http_tent_post_album },
    { "repost", ngx_http_tent_post_repost },
    { "profile", ngx_http_tent_post_profile },
    { "delete", ngx_http_tent_post_delete },
    { "follower", ngx_http_tent_post_follower },
    { "following", ngx_http_tent_post_following },
    { NULL, NULL }
};


ngx_int_t
ngx_http_tent_post_type_is(ngx_str_t *type, const char *name)
{
    size_t     plen, nlen;
    ngx_str_t  base;

    if (type == NULL || ngx_http_tent_type_base(type, &base) != NGX_OK) {
        return 0;
    }

    plen = sizeof(NGX_HTTP_TENT_POST_TYPE_PREFIX) - 1;
    nlen = ngx_strlen(name);

    return base.len == plen + nlen
           && ngx_strncmp(base.data, NGX_HTTP_TENT_POST_TYPE_PREFIX, plen)
              == 0
           && ngx_strncmp(base.data + plen, name, nlen) == 0;
}


/*
 * Senders in milliseconds are recognized as tentd did: a value more than
 * 10^9 seconds (some 31 years) ahead of now cannot be meant as seconds.
 */

json_int_t
ngx_http_tent_post_published_at(json_t *v, time_t now)
{
    json_int_t  t;

    if (!json_is_integer(v)) {
        return (json_int_t) now;
    }

    t = json_integer_value(v);

    if (t > (json_int_t) now + NGX_HTTP_TENT_POST_MS_AHEAD) {
        t /= 1000;
    }

    return t;
}


/* a value that is absent: JSON null counts as not given */

ngx_uint_t
ngx_http_tent_post_absent(json_t *v)
{
    return v == NULL || json_is_null(v);
}


/*
 * 1..max bytes, none of them a control character or a space: URIs and
 * ids end up in store keys and in URLs, where neither belongs.
 */

static ngx_uint_t
ngx_http_tent_post_token(u_char *p, size_t len, size_t max)
{
    u_char  *last;

    if (len == 0 || len > max) {
        return 0;
    }

    for (last = p + len; p < last; p++) {
        if (*p <= ' ' || *p == 0x7f) {
            return 0;
        }
    }

    return 1;
}


ngx_uint_t
ngx_http_tent_post_string_token(json_t *v, size_t max)
{
    return json_is_string(v)
           && ngx_http_tent_post_token((u_char *) json_string_value(v),
                                       json_string_length(v), max);
}


/* an absolute URI: a scheme (RFC 3986, 3.1), a colon, something after */

ngx_uint_t
ngx_http_tent_post_uri(u_char *p, size_t len, size_t max)
{
    size_t  i;

    if (!ngx_http_tent_post_token(p, len, max)) {
        return 0;
    }

    if (!((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z'))) {
        return 0;
    }

    for (i = 1; i < len; i++) {
        if (p[i] == ':') {
            return i + 1 < len;
        }

        if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z')
              || (p[i] >= '0' && p[i] <= '9') || p[i] == '+' || p[i] == '-'
              || p[i] == '.'))
        {
            return 0;
        }
    }

    return 0;
}


/* an entity: http:// or https:// with a host */

ngx_uint_t
ngx_http_tent_post_url(u_char *p, size_t len)
{
    size_t  skip;

    if (!ngx_http_tent_post_token(p, len, NGX_HTTP_TENT_POST_MAX_URI)) {
        return 0;
    }

    if (len > 7 && ngx_strncmp(p, "http://", 7) == 0) {
        skip = 7;

    } else if (len > 8 && ngx_strncmp(p, "https://", 8) == 0) {
        skip = 8;

    } else {
        return 0;
    }

    return p[skip] != '/' && p[skip] != '?' && p[skip] != '#';
}


ngx_uint_t
ngx_http_tent_post_string_url(json_t *v)
{
    return json_is_string(v)
           && ngx_http_tent_post_url((u_char *) json_string_value(v),
                                     json_string_length(v));
}


static ngx_uint_t
ngx_http_tent_post_type_uri(json_t *v)
{
    ngx_str_t  type, base;

    if (!json_is_string(v)) {
        return 0;
    }

    type.data = (u_char *) json_string_value(v);
    type.len = json_string_length(v);

    return ngx_http_tent_post_uri(type.data, type.len,
                                  NGX_HTTP_TENT_POST_MAX_TYPE)
           && ngx_http_tent_type_base(&type, &base) == NGX_OK;
}


/*
 * An imported post's own id becomes a store key and a /posts/:id path,
 * so it is held to the ids this server makes itself (as apps.c does).
 */

static ngx_uint_t
ngx_http_tent_post_own_id(json_t *v)
{
    u_char  *p, *last;

    if (!ngx_http_tent_post_string_token(v, NGX_HTTP_TENT_POST_MAX_ID)) {
        return 0;
    }

    p = (u_char *) json_string_value(v);

    for (last = p + json_string_length(v); p < last; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
              || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'
              || *p == ':'))
        {
            return 0;
        }
    }

    return 1;
}


/* Unicode code points: jansson has checked the UTF-8 already */

static size_t
ngx_http_tent_post_chars(json_t *v)
{
    size_t   n;
    u_char  *p, *last;

    n = 0;
    p = (u_char *) json_string_value(v);

    for (last = p + json_string_length(v); p < last; p++) {
        if ((*p & 0xc0) != 0x80) {
            n++;
        }
    }

    return n;
}


static ngx_uint_t
ngx_http_tent_post_strings(json_t *v)
{
    size_t   i;
    json_t  *item;

    if (!json_is_array(v)
        || json_array_size(v) > NGX_HTTP_TENT_POST_MAX_ITEMS)
    {
        return 0;
    }

    json_array_foreach(v, i, item) {
        if (!json_is_string(item)
            || json_string_length(item) > NGX_HTTP_TENT_POST_MAX_STRING)
        {
            return 0;
        }
    }

    return 1;
}


static ngx_uint_t
ngx_http_tent_post_point(json_t *v)
{
    json_t  *type, *coordinates;

    type = json_object_get(v, "type");
    coordinates = json_object_get(v, "coordinates");

    return json_is_string(type)
           && ngx_strcmp(json_string_value(type), "Point") == 0
           && json_is_array(coordinates)
           && json_array_size(coordinates) == 2
           && json_is_number(json_array_get(coordinates, 0))
           && json_is_number(json_array_get(coordinates, 1));
}


static ngx_uint_t
ngx_http_tent_post_action(json_t *v, ngx_uint_t update)
{
    const char  *s;

    if (!json_is_string(v)) {
        return 0;
    }

    s = json_string_value(v);

    return ngx_strcmp(s, "create") == 0 || ngx_strcmp(s, "delete") == 0
           || (update && ngx_strcmp(s, "update") == 0);
}


/* NULL when the field is acceptable, else the message for the client */

static const char *
ngx_http_tent_post_check_field(ngx_http_tent_post_field_t *f, json_t *v)
{
    size_t      i;
    json_t     *item;
    ngx_uint_t  ok;

    if (ngx_http_tent_post_absent(v)) {
        return f->required ? f->missing : NULL;
    }

    switch (f->kind) {

    case NGX_HTTP_TENT_POST_STRING:
        ok = json_is_string(v)
             && json_string_length(v) <= NGX_HTTP_TENT_POST_MAX_STRING;
        break;

    case NGX_HTTP_TENT_POST_STRINGS:
        ok = ngx_http_tent_post_strings(v);
        break;

    case NGX_HTTP_TENT_POST_OBJECT:
        ok = json_is_object(v);
        break;

    case NGX_HTTP_TENT_POST_URL:
        ok = ngx_http_tent_post_string_url(v);
        break;

    case NGX_HTTP_TENT_POST_REF:
        ok = ngx_http_tent_post_string_token(v, NGX_HTTP_TENT_POST_MAX_REF);
        break;

    case NGX_HTTP_TENT_POST_TYPES:
        ok = json_is_array(v)
             && json_array_size(v) <= NGX_HTTP_TENT_POST_MAX_ITEMS;

        if (ok) {
            json_array_foreach(v, i, item) {
                if (!ngx_http_tent_post_type_uri(item)) {
                    ok = 0;
                    break;
                }
            }
        }

        break;

    case NGX_HTTP_TENT_POST_ACTION:
    case NGX_HTTP_TENT_POST_ACTION3:
        ok = ngx_http_tent_post_action(v,
                                       f->kind == NGX_HTTP_TENT_POST_ACTION3);
        break;

    case NGX_HTTP_TENT_POST_TEXT:
        if (!json_is_string(v)) {
            ok = 0;
            break;
        }

        /* a byte count is a cheap first answer: bytes >= characters */

        if (json_string_length(v) > NGX_HTTP_TENT_POST_STATUS_CHARS
            && ngx_http_tent_post_chars(v) > NGX_HTTP_TENT_POST_STATUS_CHARS)
        {
            return "status text is longer than "
                   ngx_value(NGX_HTTP_TENT_POST_STATUS_CHARS) " characters";
        }

        ok = 1;
        break;

    default: /* NGX_HTTP_TENT_POST_POINT */
        ok = ngx_http_tent_post_point(v);
        break;
    }

    return ok ? NULL : f->invalid;
}


static const char *
ngx_http_tent_post_check_content(ngx_str_t *type, json_t *content)
{
    const char                   *error;
    ngx_http_tent_post_field_t   *f;
    ngx_http_tent_post_schema_t  *s;

    for (s = ngx_http_tent_post_schemas; s->name; s++) {
        if (ngx_http_tent_post_type_is(type, s->name)) {
            break;
        }
    }

    if (s->name == NULL) {
        return NULL;
    }

    for (f = s->fields; f->name; f++) {
        error = ngx_http_tent_post_check_field(f,
                                               json_object_get(content,
                                                               f->name));
        if (error) {
            return error;
        }
    }

    if (s->fields == ngx_http_tent_post_status
        && ngx_http_tent_post_absent(json_object_get(content, "text"))
        && ngx_http_tent_post_absent(json_object_get(content, "location")))
    {
        return "status text or location is required";
    }

    return NULL;
}


/* checks that need no allocation; NULL when all is well */

static const char *
ngx_http_tent_post_check(json_t *post, ngx_uint_t import)
{
    json_t      *type, *content, *v;
    ngx_str_t    t;
    const char  *error;

    if (!json_is_object(post)) {
        return "a post must be a JSON object";
    }

    type = json_object_get(post, "type");

    if (ngx_http_tent_post_absent(type)) {
        return "type is required";
    }

    if (!ngx_http_tent_post_type_uri(type)) {
        return "type must be a URI of at most "
               ngx_value(NGX_HTTP_TENT_POST_MAX_TYPE) " bytes";
    }

    content = json_object_get(post, "content");

    if (ngx_http_tent_post_absent(content)) {
        return "content is required";
    }

    if (!json_is_object(content)) {
        return "content must be an object";
    }

    v = json_object_get(post, "published_at");

    if (!ngx_http_tent_post_absent(v)
        && (!json_is_integer(v) || json_integer_value(v) < 0))
    {
        return "published_at must be a non-negative integer";
    }

    v = json_object_get(post, "views");

    if (!ngx_http_tent_post_absent(v)) {
        if (!json_is_object(v)) {
            return "views must be an object";
        }

        error = ngx_http_tent_post_views(v);
        if (error) {
            return error;
        }
    }

    v = json_object_get(post, "permissions");

    if (!ngx_http_tent_post_absent(v) && !json_is_object(v)) {
        return "permissions must be an object";
    }

    if (import) {
        v = json_object_get(post, "entity");

        if (!ngx_http_tent_post_absent(v)
            && !ngx_http_tent_post_string_url(v))
        {
            return "entity must be " NGX_HTTP_TENT_POST_A_URL;
        }

        v = json_object_get(post, "id");

        if (!ngx_http_tent_post_absent(v) && !ngx_http_tent_post_own_id(v)) {
            return "id must be 1 to " ngx_value(NGX_HTTP_TENT_POST_MAX_ID)
                   " letters, digits, \"-\", \"_\" or \":\"";
        }

        v = json_object_get(post, "received_at");

        if (!ngx_http_tent_post_absent(v)
            && (!json_is_integer(v) || json_integer_value(v) < 0))
        {
            return "received_at must be a non-negative integer";
        }
    }

    t.data = (u_char *) json_string_value(type);
    t.len = json_string_length(type);

    return ngx_http_tent_post_check_content(&t, content);
}


/* "name" of "post", copied into "out" when given */

static ngx_int_t
ngx_http_tent_post_copy(json_t *out, json_t *post, const char *name)
{
    json_t  *v;

    v = json_object_get(post, name);

    if (ngx_http_tent_post_absent(v)) {
        return NGX_OK;
    }

    return json_object_set_new(out, name, json_deep_copy(v)) == 0
           ? NGX_OK : NGX_ERROR;
}


json_t *
ngx_http_tent_post_validate(json_t *post, ngx_uint_t import,
    const char **error)
{
    json_t     *out, *v, *app;
    ngx_int_t   rc;

    *error = ngx_http_tent_post_check(post, import);
    if (*error) {
        return NULL;
    }

    out = json_object();
    if (out == NULL) {
        return NULL;
    }

    if (ngx_http_tent_post_copy(out, post, "type") != NGX_OK
        || ngx_http_tent_post_copy(out, post, "content") != NGX_OK
        || ngx_http_tent_post_copy(out, post, "published_at") != NGX_OK)
    {
        goto failed;
    }

    rc = ngx_http_tent_post_permissions(json_object_get(post, "permissions"),
                                        &v, error);
    if (rc != NGX_OK || json_object_set_new(out, "permissions", v) != 0) {
        goto failed;
    }

    rc = ngx_http_tent_post_licenses(json_object_get(post, "licenses"), &v,
                                     error);
    if (rc != NGX_OK || json_object_set_new(out, "licenses", v) != 0) {
        goto failed;
    }

    rc = ngx_http_tent_post_mentions(json_object_get(post, "mentions"), &v,
                                     error);
    if (rc != NGX_OK || json_object_set_new(out, "mentions", v) != 0) {
        goto failed;
    }

    if (ngx_http_tent_post_copy(out, post, "views") != NGX_OK) {
        goto failed;
    }

    if (!import) {
        return out;
    }

    if (ngx_http_tent_post_copy(out, post, "entity") != NGX_OK
        || ngx_http_tent_post_copy(out, post, "id") != NGX_OK
        || ngx_http_tent_post_copy(out, post, "received_at") != NGX_OK)
    {
        goto failed;
    }

    v = json_object_get(post, "app");

    if (!ngx_http_tent_post_absent(v)) {
        rc = ngx_http_tent_post_app(v, &app, error);
        if (rc != NGX_OK || json_object_set_new(out, "app", app) != 0) {
            goto failed;
        }
    }

    return out;

failed:

    /* *error is still NULL unless a check failed: out of memory */

    json_decref(out);

    return NULL;
}
