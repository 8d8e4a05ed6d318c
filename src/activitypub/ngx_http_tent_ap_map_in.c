
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The fediverse's Note, Article and Question as the fields of a Tent post
 * (docs/activitypub.md, "Posts both ways").  Everything is checked
 * before anything is built: a field of the wrong JSON type, an object
 * over the bounds, an id of another origin than its actor's refuse the
 * whole object.  HTML is reduced by the allow-list (ngx_http_tent_ap_
 * html.c); what comes out passes ngx_http_tent_post_validate().
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_post_check.h"
#include "ngx_http_tent_ap_map.h"


#define NGX_HTTP_TENT_AP_STATUS_TYPE                                         \
    "https://tent.io/types/post/status/v0.1.0"
#define NGX_HTTP_TENT_AP_ESSAY_TYPE                                          \
    "https://tent.io/types/post/essay/v0.1.0"

/* an essay's body as kept: what a received post may weigh in all */
#define NGX_HTTP_TENT_AP_BODY_MAX   (48 * 1024)


typedef struct {
    json_t                     *id;
    json_t                     *type;
    json_t                     *content;
    json_t                     *name;
    json_t                     *summary;
    json_t                     *published;
    json_t                     *url;
    json_t                     *reply;
    json_t                     *tags;
    json_t                     *attachments;
    json_t                     *to;
    json_t                     *cc;
} ngx_http_tent_ap_in_t;


static const char *ngx_http_tent_ap_in_check(json_t *object,
    ngx_str_t *actor, ngx_http_tent_ap_in_t *in);
static json_t *ngx_http_tent_ap_in_list(json_t *v, size_t max,
    ngx_uint_t *ok);
static const char *ngx_http_tent_ap_in_href(json_t *v, json_t **href);
static ngx_uint_t ngx_http_tent_ap_in_url(json_t *v);
static ngx_uint_t ngx_http_tent_ap_in_public(json_t *v);
static ngx_int_t ngx_http_tent_ap_in_content(ngx_pool_t *pool,
    ngx_http_tent_ap_in_t *in, json_t *post);
static ngx_int_t ngx_http_tent_ap_in_mentions(ngx_pool_t *pool,
    ngx_http_tent_ap_in_t *in, ngx_str_t *actor, json_t *post);
static ngx_int_t ngx_http_tent_ap_in_audience(ngx_http_tent_ap_in_t *in,
    ngx_str_t *actor, json_t *post);
static ngx_int_t ngx_http_tent_ap_in_extra(ngx_http_tent_ap_in_t *in,
    json_t *post);
static json_t *ngx_http_tent_ap_in_string(ngx_pool_t *pool, json_t *v,
    size_t max, ngx_uint_t html);


json_t *
ngx_http_tent_ap_to_post(ngx_pool_t *pool, json_t *object, ngx_str_t *actor,
    const char **error)
{
    json_t                 *post;
    json_int_t              t;
    ngx_http_tent_ap_in_t   in;

    *error = ngx_http_tent_ap_in_check(object, actor, &in);

    if (*error) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, pool->log, 0,
                       "tent ap: object refused: %s", *error);
        return NULL;
    }

    post = json_pack("{s:s%}", "entity", actor->data, actor->len);
    if (post == NULL) {
        return NULL;
    }

    if (ngx_http_tent_ap_in_content(pool, &in, post) != NGX_OK
        || ngx_http_tent_ap_in_mentions(pool, &in, actor, post) != NGX_OK
        || ngx_http_tent_ap_in_audience(&in, actor, post) != NGX_OK
        || ngx_http_tent_ap_in_extra(&in, post) != NGX_OK)
    {
        json_decref(post);
        return NULL;
    }

    if (in.published
        && ngx_http_tent_ap_parse_time((u_char *)
                                       json_string_value(in.published),
                                       json_string_length(in.published), &t)
           == NGX_OK
        && json_object_set_new(post, "published_at", json_integer(t)) != 0)
    {
        json_decref(post);
        return NULL;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, pool->log, 0,
                   "tent ap: object \"%s\" as a %s",
                   json_string_value(in.id),
                   json_string_value(json_object_get(post, "type")));

    return post;
}


/* every field's type and bound, before anything is built */

static const char *
ngx_http_tent_ap_in_check(json_t *object, ngx_str_t *actor,
    ngx_http_tent_ap_in_t *in)
{
    size_t       i;
    json_t      *v, *a, *href;
    ngx_str_t    id;
    ngx_uint_t   ok;
    const char  *type, *err;

    ngx_memzero(in, sizeof(ngx_http_tent_ap_in_t));

    if (!json_is_object(object)) {
        return "the object is not a JSON object";
    }

    if (!ngx_http_tent_post_url(actor->data, actor->len)) {
        return "the actor is not an http(s) URL";
    }

    in->type = json_object_get(object, "type");

    if (!json_is_string(in->type)) {
        return "the object has no type";
    }

    type = json_string_value(in->type);

    if (ngx_strcmp(type, "Note") != 0 && ngx_strcmp(type, "Article") != 0
        && ngx_strcmp(type, "Question") != 0)
    {
        return "the object is not a Note, an Article or a Question";
    }

    in->id = json_object_get(object, "id");

    if (!ngx_http_tent_ap_in_url(in->id)) {
        return "the object has no id, or not an http(s) URL";
    }

    id.data = (u_char *) json_string_value(in->id);
    id.len = json_string_length(in->id);

    if (ngx_http_tent_ap_same_origin(&id, actor) != NGX_OK) {
        return "the object's id is not on its actor's origin";
    }

    /* attributedTo: the actor, or a list the actor is in */

    v = json_object_get(object, "attributedTo");

    if (v && !json_is_null(v)) {
        a = ngx_http_tent_ap_in_list(v, NGX_HTTP_TENT_AP_ADDRESS_MAX, &ok);

        if (!ok) {
            json_decref(a);
            return "attributedTo must be at most "
                   ngx_value(NGX_HTTP_TENT_AP_ADDRESS_MAX) " actor ids";
        }

        ok = 0;

        json_array_foreach(a, i, v) {
            err = ngx_http_tent_ap_in_href(v, &href);

            if (err) {
                json_decref(a);
                return "attributedTo must be actor ids";
            }

            if (json_string_length(href) == actor->len
                && ngx_strncmp(json_string_value(href), actor->data,
                               actor->len) == 0)
            {
                ok = 1;
            }
        }

        json_decref(a);

        if (!ok) {
            return "the object is not attributed to its actor";
        }
    }

    in->content = json_object_get(object, "content");
    in->name = json_object_get(object, "name");
    in->summary = json_object_get(object, "summary");

    if ((in->content && !json_is_null(in->content)
         && !json_is_string(in->content))
        || (in->name && !json_is_null(in->name) && !json_is_string(in->name))
        || (in->summary && !json_is_null(in->summary)
            && !json_is_string(in->summary)))
    {
        return "content, name and summary must be strings";
    }

    if (json_string_length(in->content) > NGX_HTTP_TENT_AP_CONTENT_MAX
        || json_string_length(in->summary) > NGX_HTTP_TENT_AP_CONTENT_MAX
        || json_string_length(in->name) > NGX_HTTP_TENT_AP_NAME_TEXT_MAX)
    {
        return "the object's content is too large";
    }

    in->published = json_object_get(object, "published");

    if (json_is_null(in->published)) {
        in->published = NULL;
    }

    if (in->published) {
        json_int_t  t;

        if (!json_is_string(in->published)
            || ngx_http_tent_ap_parse_time((u_char *)
                                           json_string_value(in->published),
                                           json_string_length(in->published),
                                           &t)
               != NGX_OK)
        {
            return "published must be an RFC 3339 time";
        }
    }

    /* url: a string, a Link, or a list of them: the first http(s) one */

    v = json_object_get(object, "url");

    if (v && !json_is_null(v)) {
        a = ngx_http_tent_ap_in_list(v, NGX_HTTP_TENT_AP_ATTACH_MAX, &ok);

        if (!ok) {
            json_decref(a);
            return "url must be a URL, a Link or a list of them";
        }

        json_array_foreach(a, i, v) {
            if (ngx_http_tent_ap_in_href(v, &href) != NULL) {
                json_decref(a);
                return "url must be a URL, a Link or a list of them";
            }

            if (in->url == NULL && ngx_http_tent_ap_in_url(href)) {
                in->url = href;
            }
        }

        json_decref(a);
    }

    /* inReplyTo: an id, or an object with one */

    v = json_object_get(object, "inReplyTo");

    if (v && !json_is_null(v)) {
        if (!json_is_string(v) && !json_is_object(v)) {
            return "inReplyTo must be an id or an object";
        }

        in->reply = v;
        v = json_is_object(v) ? json_object_get(v, "id") : v;

        if (!ngx_http_tent_ap_in_url(v)) {
            return "inReplyTo must be an http(s) URL";
        }
    }

    v = json_object_get(object, "tag");

    if (v && !json_is_null(v)) {
        in->tags = v;
        a = ngx_http_tent_ap_in_list(v, NGX_HTTP_TENT_AP_TAGS_MAX, &ok);

        if (!ok) {
            json_decref(a);
            return "tag must be an object or a list of at most "
                   ngx_value(NGX_HTTP_TENT_AP_TAGS_MAX);
        }

        json_array_foreach(a, i, v) {
            if (!json_is_object(v)
                || !json_is_string(json_object_get(v, "type")))
            {
                json_decref(a);
                return "each tag must be an object with a type";
            }

            href = json_object_get(v, "href");

            if (ngx_strcmp(json_string_value(json_object_get(v, "type")),
                           "Mention") == 0
                && !ngx_http_tent_ap_in_url(href))
            {
                json_decref(a);
                return "a Mention's href must be an http(s) URL";
            }
        }

        json_decref(a);
    }

    v = json_object_get(object, "attachment");

    if (v && !json_is_null(v)) {
        in->attachments = v;
        a = ngx_http_tent_ap_in_list(v, NGX_HTTP_TENT_AP_ATTACH_MAX, &ok);

        if (!ok) {
            json_decref(a);
            return "attachment must be an object or a list of at most "
                   ngx_value(NGX_HTTP_TENT_AP_ATTACH_MAX);
        }

        json_array_foreach(a, i, v) {
            json_t  *t, *n;

            if (!json_is_object(v)
                || ngx_http_tent_ap_in_href(json_object_get(v, "url"), &href)
                   != NULL)
            {
                json_decref(a);
                return "each attachment must be an object with a url";
            }

            t = json_object_get(v, "mediaType");
            n = json_object_get(v, "name");

            if ((t && !json_is_null(t)
                 && (!json_is_string(t) || json_string_length(t) > 255))
                || (n && !json_is_null(n)
                    && (!json_is_string(n)
                        || json_string_length(n)
                           > NGX_HTTP_TENT_AP_NAME_TEXT_MAX)))
            {
                json_decref(a);
                return "an attachment's mediaType and name must be short "
                       "strings";
            }
        }

        json_decref(a);
    }

    /* to and cc: ids; over the bound together is refused */

    in->to = json_object_get(object, "to");
    in->cc = json_object_get(object, "cc");

    for (i = 0; i < 2; i++) {
        v = i ? in->cc : in->to;

        if (v == NULL || json_is_null(v)) {
            continue;
        }

        a = ngx_http_tent_ap_in_list(v, NGX_HTTP_TENT_AP_ADDRESS_MAX, &ok);

        if (ok) {
            size_t   j;
            json_t  *s;

            json_array_foreach(a, j, s) {
                if (!json_is_string(s)) {
                    ok = 0;
                }
            }
        }

        json_decref(a);

        if (!ok) {
            return "to and cc must be ids, at most "
                   ngx_value(NGX_HTTP_TENT_AP_ADDRESS_MAX);
        }
    }

    if (json_array_size(in->to) + json_array_size(in->cc)
        > NGX_HTTP_TENT_AP_ADDRESS_MAX)
    {
        return "to and cc must be ids, at most "
               ngx_value(NGX_HTTP_TENT_AP_ADDRESS_MAX);
    }

    return NULL;
}


/*
 * A value or a list of values as a new array (ActivityStreams allows
 * both for most properties); *ok is 0 when a list is over max.
 */

static json_t *
ngx_http_tent_ap_in_list(json_t *v, size_t max, ngx_uint_t *ok)
{
    json_t  *a;

    *ok = 1;

    if (json_is_array(v)) {
        *ok = json_array_size(v) <= max;
        return json_incref(v);
    }

    a = json_array();
    if (a == NULL) {
        *ok = 0;
        return NULL;
    }

    if (json_array_append(a, v) != 0) {
        *ok = 0;
    }

    return a;
}


/* an id as a string, or an object's "id" or "href": an http(s) URL */

static const char *
ngx_http_tent_ap_in_href(json_t *v, json_t **href)
{
    if (json_is_object(v)) {
        *href = json_object_get(v, "href");

        if (*href == NULL) {
            *href = json_object_get(v, "id");
        }

    } else {
        *href = v;
    }

    if (!json_is_string(*href)) {
        return "not an id";
    }

    return NULL;
}


static ngx_uint_t
ngx_http_tent_ap_in_url(json_t *v)
{
    return json_is_string(v)
           && json_string_length(v) <= NGX_HTTP_TENT_AP_URL_MAX
           && ngx_http_tent_post_url((u_char *) json_string_value(v),
                                     json_string_length(v));
}


/* the Public collection, in the forms JSON-LD compaction gives */

static ngx_uint_t
ngx_http_tent_ap_in_public(json_t *v)
{
    const char  *s;

    if (!json_is_string(v)) {
        return 0;
    }

    s = json_string_value(v);

    return ngx_strcmp(s, NGX_HTTP_TENT_AP_PUBLIC) == 0
           || ngx_strcmp(s, "as:Public") == 0
           || ngx_strcmp(s, "Public") == 0;
}


/*
 * A Note (or Question) that is plain text of at most 256 characters,
 * with no summary nor name, is a status; anything else an essay, whose
 * body keeps the allowed HTML, so that nothing is cut: a long Note,
 * one with a content warning (its summary, the essay's excerpt), an
 * Article (name as the title).
 */

static ngx_int_t
ngx_http_tent_ap_in_content(ngx_pool_t *pool, ngx_http_tent_ap_in_t *in,
    json_t *post)
{
    u_char      *p, *last;
    size_t       chars;
    json_t      *content, *v;
    ngx_str_t    html, text;
    ngx_uint_t   essay;

    html.data = (u_char *) (json_is_string(in->content)
                            ? json_string_value(in->content) : "");
    html.len = json_string_length(in->content);

    essay = ngx_strcmp(json_string_value(in->type), "Article") == 0
            || json_string_length(in->summary)
            || json_string_length(in->name);

    if (!essay) {
        if (ngx_http_tent_ap_text(pool, &html, NGX_HTTP_TENT_AP_CONTENT_MAX,
                                  &text)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        chars = 0;
        last = text.data + text.len;

        for (p = text.data; p < last; p++) {
            chars += (*p & 0xc0) != 0x80;
        }

        if (chars <= NGX_HTTP_TENT_AP_STATUS_CHARS) {
            content = json_pack("{s:s%}", "text", text.data, text.len);

            if (json_object_set_new(post, "type",
                                    json_string(NGX_HTTP_TENT_AP_STATUS_TYPE))
                != 0
                || json_object_set_new(post, "content", content) != 0)
            {
                return NGX_ERROR;
            }

            return NGX_OK;
        }
    }

    content = json_object();

    if (json_object_set_new(post, "type",
                            json_string(NGX_HTTP_TENT_AP_ESSAY_TYPE)) != 0
        || json_object_set_new(post, "content", content) != 0)
    {
        return NGX_ERROR;
    }

    v = ngx_http_tent_ap_in_string(pool, in->content,
                                   NGX_HTTP_TENT_AP_BODY_MAX, 1);

    if (json_object_set_new(content, "body", v) != 0) {
        return NGX_ERROR;
    }

    if (json_string_length(in->name)) {
        v = ngx_http_tent_ap_in_string(pool, in->name,
                                       NGX_HTTP_TENT_AP_NAME_TEXT_MAX, 0);

        if (json_object_set_new(content, "title", v) != 0) {
            return NGX_ERROR;
        }
    }

    if (json_string_length(in->summary)) {
        v = ngx_http_tent_ap_in_string(pool, in->summary,
                                       NGX_HTTP_TENT_AP_NAME_TEXT_MAX * 4, 1);

        if (json_object_set_new(content, "excerpt", v) != 0) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/*
 * Mention tags as entity mentions, each once.  inReplyTo as a post
 * mention: {"entity": its attributedTo when inReplyTo is an object
 * giving one, else the inReplyTo URL itself (the author is not known
 * here), "post": ngx_http_tent_ap_post_id() of the URL}; the URL stays
 * in "activitypub": {"in_reply_to": ...}, for the inbox to name the
 * post it keeps (ngx_http_tent_ap_object_post() for one of ours).
 */

static ngx_int_t
ngx_http_tent_ap_in_mentions(ngx_pool_t *pool, ngx_http_tent_ap_in_t *in,
    ngx_str_t *actor, json_t *post)
{
    size_t       i, j;
    json_t      *mentions, *tags, *v, *href, *m, *e, *by;
    ngx_str_t    url;
    ngx_uint_t   ok, seen;
    u_char       id[NGX_HTTP_TENT_AP_POST_ID_LEN + 2];

    mentions = json_array();

    if (json_object_set_new(post, "mentions", mentions) != 0) {
        return NGX_ERROR;
    }

    if (in->reply) {
        v = json_is_object(in->reply) ? json_object_get(in->reply, "id")
                                      : in->reply;

        url.data = (u_char *) json_string_value(v);
        url.len = json_string_length(v);

        if (ngx_http_tent_ap_post_id(&url, id) != NGX_OK) {
            return NGX_ERROR;
        }

        e = v;
        by = json_object_get(in->reply, "attributedTo");

        if (ngx_http_tent_ap_in_url(by)) {
            e = by;
        }

        m = json_pack("{s:O, s:s%}", "entity", e, "post", id,
                      (size_t) NGX_HTTP_TENT_AP_POST_ID_LEN);

        if (json_array_append_new(mentions, m) != 0) {
            return NGX_ERROR;
        }
    }

    if (in->tags == NULL) {
        return NGX_OK;
    }

    tags = ngx_http_tent_ap_in_list(in->tags, NGX_HTTP_TENT_AP_TAGS_MAX, &ok);
    if (tags == NULL) {
        return NGX_ERROR;
    }

    json_array_foreach(tags, i, v) {
        if (ngx_strcmp(json_string_value(json_object_get(v, "type")),
                       "Mention") != 0)
        {
            continue;
        }

        href = json_object_get(v, "href");
        seen = 0;

        json_array_foreach(mentions, j, m) {
            if (json_object_get(m, "post") == NULL
                && json_equal(json_object_get(m, "entity"), href))
            {
                seen = 1;
            }
        }

        if (seen) {
            continue;
        }

        if (json_array_append_new(mentions,
                                  json_pack("{s:O}", "entity", href))
            != 0)
        {
            json_decref(tags);
            return NGX_ERROR;
        }
    }

    json_decref(tags);

    return NGX_OK;
}


/*
 * Public when the Public collection is in to or cc; else the actors
 * addressed, but the sender and its followers collection (Mastodon's
 * {actor}/followers: no entity of its own).
 */

static ngx_int_t
ngx_http_tent_ap_in_audience(ngx_http_tent_ap_in_t *in, ngx_str_t *actor,
    json_t *post)
{
    size_t       i, j;
    json_t      *perms, *entities, *a, *v;
    ngx_uint_t   ok;
    const char  *s;

    for (i = 0; i < 2; i++) {
        a = ngx_http_tent_ap_in_list(i ? in->cc : in->to,
                                     NGX_HTTP_TENT_AP_ADDRESS_MAX, &ok);

        json_array_foreach(a, j, v) {
            if (ngx_http_tent_ap_in_public(v)) {
                json_decref(a);
                return json_object_set_new(post, "permissions",
                                           json_pack("{s:b}", "public", 1))
                       == 0 ? NGX_OK : NGX_ERROR;
            }
        }

        json_decref(a);
    }

    entities = json_object();
    perms = json_pack("{s:b, s:o}", "public", 0, "entities", entities);

    if (json_object_set_new(post, "permissions", perms) != 0) {
        return NGX_ERROR;
    }

    for (i = 0; i < 2; i++) {
        a = ngx_http_tent_ap_in_list(i ? in->cc : in->to,
                                     NGX_HTTP_TENT_AP_ADDRESS_MAX, &ok);

        json_array_foreach(a, j, v) {
            if (!ngx_http_tent_ap_in_url(v)) {
                continue;
            }

            s = json_string_value(v);

            if (json_string_length(v) == actor->len + 10
                && ngx_strncmp(s, actor->data, actor->len) == 0
                && ngx_strcmp(s + actor->len, "/followers") == 0)
            {
                continue;
            }

            if (json_string_length(v) == actor->len
                && ngx_strncmp(s, actor->data, actor->len) == 0)
            {
                continue;
            }

            if (json_object_set_new(entities, s, json_true()) != 0) {
                json_decref(a);
                return NGX_ERROR;
            }
        }

        json_decref(a);
    }

    return NGX_OK;
}


/* "activitypub": the object's id and url, the reply's URL, attachments */

static ngx_int_t
ngx_http_tent_ap_in_extra(ngx_http_tent_ap_in_t *in, json_t *post)
{
    size_t       i;
    json_t      *ap, *list, *a, *v, *href, *item;
    ngx_uint_t   ok;

    ap = json_pack("{s:O}", "id", in->id);

    if (json_object_set_new(post, "activitypub", ap) != 0) {
        return NGX_ERROR;
    }

    if (in->url && json_object_set(ap, "url", in->url) != 0) {
        return NGX_ERROR;
    }

    if (in->reply) {
        v = json_is_object(in->reply) ? json_object_get(in->reply, "id")
                                      : in->reply;

        if (json_object_set(ap, "in_reply_to", v) != 0) {
            return NGX_ERROR;
        }
    }

    if (in->attachments == NULL) {
        return NGX_OK;
    }

    /* links to fetch on demand (through the guard): http(s) only */

    list = json_array();

    if (json_object_set_new(ap, "attachments", list) != 0) {
        return NGX_ERROR;
    }

    a = ngx_http_tent_ap_in_list(in->attachments, NGX_HTTP_TENT_AP_ATTACH_MAX,
                                 &ok);
    if (a == NULL) {
        return NGX_ERROR;
    }

    json_array_foreach(a, i, v) {
        (void) ngx_http_tent_ap_in_href(json_object_get(v, "url"), &href);

        if (!ngx_http_tent_ap_in_url(href)) {
            continue;
        }

        item = json_pack("{s:O}", "url", href);

        if (item == NULL || json_array_append_new(list, item) != 0) {
            json_decref(a);
            return NGX_ERROR;
        }

        if ((json_is_string(json_object_get(v, "mediaType"))
             && json_object_set(item, "mediaType",
                                json_object_get(v, "mediaType")) != 0)
            || (json_is_string(json_object_get(v, "name"))
                && json_object_set(item, "name",
                                   json_object_get(v, "name")) != 0))
        {
            json_decref(a);
            return NGX_ERROR;
        }
    }

    json_decref(a);

    return NGX_OK;
}


/* a string through the allow-list (html) or reduced to text */

static json_t *
ngx_http_tent_ap_in_string(ngx_pool_t *pool, json_t *v, size_t max,
    ngx_uint_t html)
{
    ngx_int_t  rc;
    ngx_str_t  in, out;

    in.data = (u_char *) (json_is_string(v) ? json_string_value(v) : "");
    in.len = json_string_length(v);

    rc = html ? ngx_http_tent_ap_html(pool, &in, max, &out)
              : ngx_http_tent_ap_text(pool, &in, max, &out);

    if (rc != NGX_OK) {
        return NULL;
    }

    return json_stringn((char *) out.data, out.len);
}
