
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Posts (spec 6, 7.5, 7.7): create, read, update, delete, versions.
 * A post, its version record and its three feed index entries are
 * written in one synced batch, behind a compare-and-set: on the post's
 * own key, or on the app's Idempotency-Key, so a retried create returns
 * the post it made the first time.
 */


#include "ngx_http_tent_module.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_notifications.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_store.h"

#include <openssl/evp.h>


#define NGX_HTTP_TENT_IDEMPOTENCY_MAX  128

/* images and media may show themselves; nothing else loads or runs */
#define NGX_HTTP_TENT_ATTACHMENT_CSP                                          \
    "default-src 'none'; img-src 'self'; media-src 'self'; "                  \
    "style-src 'unsafe-inline'; sandbox"


/* references a change adds to (or drops from) one digest's bytes */
typedef struct {
    ngx_str_t                       digest;
    ngx_str_t                       bytes;       /* uploaded, or null */
    ngx_int_t                       count;
} ngx_http_tent_blob_ref_t;


typedef struct {
    json_t                         *post;
    ngx_str_t                       raw;
    ngx_str_t                       post_entity;
    ngx_str_t                       id;
    json_t                         *made;
    ngx_uint_t                      versions;
    ngx_str_t                       attachment;
    ngx_str_t                       attachment_type;

    /* the post's write, sent once its references are taken */
    ngx_http_tent_store_op_t       *write;
    ngx_http_tent_request_done_pt   write_done;

    /* references being taken (sign 1) or given back (-1), one by one */
    ngx_array_t                    *refs;
    ngx_uint_t                      ref;
    ngx_int_t                       sign;
    ngx_uint_t                      tries;
    ngx_http_tent_route_pt          after;
    unsigned                        conflict:1;
} ngx_http_tent_post_state_t;


static ngx_int_t ngx_http_tent_post_create(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_post_created(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_post_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_post_update(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_post_changed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_post_remove(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_post_blob(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *post);
static ngx_int_t ngx_http_tent_post_submit(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_post_found(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_post_reply(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


static ngx_str_t  ngx_http_tent_columns = ngx_string("rpu");


/*
 * The clock, in microseconds, not nginx's cached time: two posts made one
 * after the other keep their order in the feed even within a millisecond.
 */


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


/* what a feed scan needs to filter without reading the post */

static json_t *
ngx_http_tent_post_index_value(json_t *post)
{
    size_t      i;
    json_t      *value, *mentions, *m, *ents, *posts, *e, *p, *perms,
                *list;
    ngx_str_t    type, base;
    const char  *key;

    if (ngx_http_tent_json_str(post, "type", &type) != NGX_OK
        || ngx_http_tent_type_base(&type, &base) != NGX_OK)
    {
        return NULL;
    }

    ents = json_array();
    posts = json_array();

    mentions = json_object_get(post, "mentions");

    json_array_foreach(mentions, i, m) {
        e = json_object_get(m, "entity");
        p = json_object_get(m, "post");

        if (!json_is_string(e)) {
            continue;
        }

        json_array_append(ents, e);

        if (json_is_string(p)) {
            json_array_append_new(posts, json_sprintf("%s %s",
                                                      json_string_value(e),
                                                      json_string_value(p)));
        }
    }

    perms = json_object_get(post, "permissions");

    value = json_pack("{s:s%, s:b, s:o, s:o}",
                      "t", base.data, base.len,
                      "p", json_is_true(json_object_get(perms, "public")),
                      "m", ents,
                      "mp", posts);

    /* who else may see a post that is not public, to filter feeds */

    if (value && !json_is_true(json_object_get(perms, "public"))) {
        list = json_array();
        json_object_foreach(json_object_get(perms, "entities"), key, e) {
            json_array_append_new(list, json_string(key));
        }

        json_object_set_new(value, "e", list);

        list = json_array();
        json_array_foreach(json_object_get(perms, "groups"), i, e) {
            if (json_is_string(json_object_get(e, "id"))) {
                json_array_append(list, json_object_get(e, "id"));
            }
        }

        json_object_set_new(value, "g", list);
    }

    return value;
}


/* put (or delete) a post's three index entries into a batch */

ngx_int_t
ngx_http_tent_post_index(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_store_op_t *op, json_t *post, ngx_uint_t del)
{
    json_t      *value;
    uint64_t     seconds, ms;
    ngx_str_t    entity, id, key, v;
    ngx_uint_t   i;

    static const char  *fields[] = { "received_at", "published_at",
                                     "updated_at" };

    if (ngx_http_tent_json_str(post, "entity", &entity) != NGX_OK
        || ngx_http_tent_json_str(post, "id", &id) != NGX_OK)
    {
        return NGX_ERROR;
    }

    ms = (uint64_t) json_integer_value(json_object_get(post, "rus"));

    value = NULL;

    if (!del) {
        value = ngx_http_tent_post_index_value(post);
        if (value == NULL
            || ngx_http_tent_json_cleanup(r->pool, value) != NGX_OK
            || ngx_http_tent_json_dump(r->pool, value, &v) != NGX_OK)
        {
            json_decref(value);
            return NGX_ERROR;
        }
    }

    for (i = 0; i < ngx_http_tent_columns.len; i++) {
        seconds = (uint64_t) json_integer_value(json_object_get(post,
                                                                fields[i]));

        if (ngx_http_tent_index_key(r->pool, &ctx->entity,
                                    ngx_http_tent_columns.data[i], seconds,
                                    ms, &entity, &id, 3, &key)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        if ((del ? ngx_http_tent_store_write_del(op, &key)
                 : ngx_http_tent_store_write_put(op, &key, &v))
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* POST /posts */

ngx_int_t
ngx_http_tent_posts_post(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    /* another server's post, signed with our relationship's credential */

    if (ctx->principal.kind == NGX_HTTP_TENT_FOLLOWER
        || ctx->principal.kind == NGX_HTTP_TENT_FOLLOWING)
    {
        return ngx_http_tent_notification_relayed(r, ctx);
    }

    /* unsigned: maybe a mention from an entity we do not know (spec 9.3) */

    if (ctx->principal.kind == NGX_HTTP_TENT_ANONYMOUS) {
        return ngx_http_tent_mention_post(r, ctx);
    }

    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_POSTS)
        && !ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_IMPORT_POSTS))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    /* with attachments the post comes as multipart/form-data */
    ctx->multipart = 1;

    return ngx_http_tent_read_json(r, ctx, ngx_http_tent_post_create);
}


/*
 * Attachment bytes are kept once per SHA-256 ("b" rows), whichever posts
 * list them, so each digest has a count of the post versions that list
 * it ("B" rows; docs/store.md has the design and its race analysis).  A
 * change takes its references before the version that holds them is
 * written and gives them back once that version is gone, or was never
 * written; the last one takes the bytes with it.  Each step is a
 * compare-and-set on the count, the bytes written or deleted in its
 * batch, so the count and the bytes never disagree.  A failure leaves a
 * count too high: bytes kept for nothing, never bytes lost.
 */

static ngx_int_t ngx_http_tent_blob_step(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_blob_counted(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_blob_probed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_blob_cas(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *count, ngx_uint_t legacy);
static ngx_int_t ngx_http_tent_blob_set(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


#define NGX_HTTP_TENT_BLOB_TRIES  32


/* one more reference to a digest; its bytes when they were uploaded */

static ngx_int_t
ngx_http_tent_blob_ref(ngx_pool_t *pool, ngx_array_t *refs,
    ngx_str_t *digest, ngx_str_t *bytes)
{
    ngx_uint_t                 i;
    ngx_http_tent_blob_ref_t  *ref;

    ref = refs->elts;

    for (i = 0; i < refs->nelts; i++) {
        if (ref[i].digest.len == digest->len
            && ngx_strncmp(ref[i].digest.data, digest->data, digest->len)
               == 0)
        {
            ref[i].count++;

            if (bytes) {
                ref[i].bytes = *bytes;
            }

            return NGX_OK;
        }
    }

    ref = ngx_array_push(refs);
    if (ref == NULL) {
        return NGX_ERROR;
    }

    ref->digest.data = ngx_pstrdup(pool, digest);
    if (ref->digest.data == NULL) {
        return NGX_ERROR;
    }

    ref->digest.len = digest->len;
    ref->count = 1;

    if (bytes) {
        ref->bytes = *bytes;

    } else {
        ngx_str_null(&ref->bytes);
    }

    return NGX_OK;
}


/* the references a post version holds: its attachments' digests */

static ngx_int_t
ngx_http_tent_blob_refs(ngx_pool_t *pool, ngx_array_t *refs, json_t *post)
{
    size_t      i;
    json_t     *a;
    ngx_str_t   digest;

    json_array_foreach(json_object_get(post, "attachments"), i, a) {
        if (ngx_http_tent_json_str(a, "digest", &digest) == NGX_OK
            && ngx_http_tent_blob_ref(pool, refs, &digest, NULL) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* the references of a stored version (a scan's value) */

static ngx_int_t
ngx_http_tent_blob_refs_raw(ngx_http_request_t *r, ngx_array_t *refs,
    ngx_str_t *raw)
{
    json_t     *post;
    ngx_int_t   rc;

    post = ngx_http_tent_json_parse(raw, r->connection->log);
    if (post == NULL) {
        /* a damaged record: its bytes are kept */
        return NGX_OK;
    }

    rc = ngx_http_tent_blob_refs(r->pool, refs, post);

    json_decref(post);

    return rc;
}


/* take (sign 1) or give back (-1) st->refs, then run "after" */

static ngx_int_t
ngx_http_tent_blobs_adjust(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_int_t sign, ngx_http_tent_route_pt after)
{
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    st->sign = sign;
    st->ref = 0;
    st->tries = 0;
    st->after = after;

    return ngx_http_tent_blob_step(r, ctx);
}


static ngx_int_t
ngx_http_tent_blob_step(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                    key;
    ngx_http_tent_blob_ref_t    *ref;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    if (st->refs == NULL || st->ref >= st->refs->nelts) {
        return st->after(r, ctx);
    }

    ref = st->refs->elts;
    ref = &ref[st->ref];

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_blob_count_key(r->pool, &ctx->entity, &ref->digest,
                                        &key)
           != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_blob_counted);
}


/*
 * A step that failed: taking references stops the request (the ones
 * taken stay, too high: kept bytes); giving back goes on with the next.
 */

static ngx_int_t
ngx_http_tent_blob_failed(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_int_t status)
{
    ngx_http_tent_blob_ref_t    *ref;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    if (st->sign > 0) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ref = st->refs->elts;

    ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                  "tent: the bytes of attachment %V are kept: "
                  "their reference count could not be lowered",
                  &ref[st->ref].digest);

    st->ref++;
    st->tries = 0;

    return ngx_http_tent_blob_step(r, ctx);
}


static ngx_int_t
ngx_http_tent_blob_counted(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                    status;
    ngx_str_t                    value;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_blob_ref_t    *ref;
    ngx_http_tent_post_state_t  *st;

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_blob_failed(r, ctx, status);
    }

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_store_value(op, &value);
        return ngx_http_tent_blob_cas(r, ctx, &value, 0);
    }

    if (st->sign < 0) {
        /* no count: bytes stored before counts were kept stay for good */
        st->ref++;
        st->tries = 0;
        return ngx_http_tent_blob_step(r, ctx);
    }

    /* no count yet: are there bytes of a post stored before counts? */

    ref = st->refs->elts;

    return ngx_http_tent_store_get_request(r, NGX_HTTP_TENT_TABLE_BLOB,
                                           &ref[st->ref].digest,
                                           ngx_http_tent_blob_probed);
}


static ngx_int_t
ngx_http_tent_blob_probed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t             status;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_blob_failed(r, ctx, status);
    }

    return ngx_http_tent_blob_cas(r, ctx, NULL,
                                  op->status == NGX_HTTP_TENT_STORE_OK);
}


/*
 * The count is {"n": N}, with "legacy": true when the bytes were there
 * before any count (posts stored before counts were kept hold them
 * uncounted): those bytes are never reclaimed.  "count" is the record
 * read, NULL when there was none.
 */

static ngx_int_t
ngx_http_tent_blob_cas(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_str_t *count, ngx_uint_t legacy)
{
    json_t                      *rec;
    json_int_t                   n;
    ngx_str_t                    key, bkey, value;
    ngx_http_tent_blob_ref_t    *ref;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;
    ref = st->refs->elts;
    ref = &ref[st->ref];

    n = 0;

    if (count) {
        rec = ngx_http_tent_json_parse(count, r->connection->log);
        if (rec == NULL) {
            return ngx_http_tent_blob_failed(r, ctx,
                                             NGX_HTTP_INTERNAL_SERVER_ERROR);
        }

        n = json_integer_value(json_object_get(rec, "n"));
        legacy = json_is_true(json_object_get(rec, "legacy"));
        json_decref(rec);
    }

    n += st->sign * ref->count;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_blob_count_key(r->pool, &ctx->entity, &ref->digest,
                                        &key)
           != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_BLOB,
                             &ref->digest, &bkey)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (n <= 0 && !legacy) {

        if (count == NULL) {
            /* nothing to give back */
            st->ref++;
            st->tries = 0;
            return ngx_http_tent_blob_step(r, ctx);
        }

        /* the last reference: the count and the bytes go together */

        if (ngx_http_tent_store_cas(op, &key, count, count) != NGX_OK
            || ngx_http_tent_store_write_del(op, &key) != NGX_OK
            || ngx_http_tent_store_write_del(op, &bkey) != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

    } else {
        value.data = ngx_pnalloc(r->pool, sizeof("{\"n\":,\"legacy\":true}")
                                          + NGX_INT64_LEN);
        if (value.data == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        value.len = ngx_sprintf(value.data, "{\"n\":%L%s}",
                                (int64_t) ngx_max(n, 0),
                                legacy ? ",\"legacy\":true" : "")
                    - value.data;

        if (ngx_http_tent_store_cas(op, &key, count, &value) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        /* the first reference brings the bytes */

        if (count == NULL && !legacy && ref->bytes.data
            && ngx_http_tent_store_write_put(op, &bkey, &ref->bytes)
               != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    return ngx_http_tent_store_submit_request(r, op, ngx_http_tent_blob_set);
}


static ngx_int_t
ngx_http_tent_blob_set(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    ngx_int_t                    status;
    ngx_str_t                    value;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_post_state_t  *st;

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_blob_failed(r, ctx, status);
    }

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        st->ref++;
        st->tries = 0;
        return ngx_http_tent_blob_step(r, ctx);
    }

    /* another change moved the count meanwhile: again from what it is */

    if (++st->tries > NGX_HTTP_TENT_BLOB_TRIES) {
        return ngx_http_tent_blob_failed(r, ctx,
                                         NGX_HTTP_SERVICE_UNAVAILABLE);
    }

    if (op->status == NGX_HTTP_TENT_STORE_CONFLICT) {
        ngx_http_tent_store_value(op, &value);
        return ngx_http_tent_blob_cas(r, ctx, &value, 0);
    }

    /* the count went away meanwhile: read it again */

    return ngx_http_tent_blob_step(r, ctx);
}


/*
 * The files of a multipart post: each becomes {"category", "type",
 * "name", "size"} in the post (the form name without "[n]", the file
 * name, its Content-Type, its length), and a reference, with its bytes,
 * to its SHA-256: the bytes are stored when that is taken.
 */

static ngx_int_t
ngx_http_tent_post_attachments(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *post, ngx_array_t *refs)
{
    u_char                    *p, digest[32];
    json_t                    *list, *a;
    ngx_str_t                  category, name, type, hex;
    ngx_uint_t                 i;
    unsigned int               dlen;
    ngx_http_tent_part_t      *part;
    ngx_http_tent_loc_conf_t  *lcf;

    if (ctx->parts == NULL || ctx->parts->nelts == 0) {
        return NGX_OK;
    }

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_tent_module);

    list = json_array();
    if (list == NULL || json_object_set_new(post, "attachments", list) != 0) {
        return NGX_ERROR;
    }

    part = ctx->parts->elts;

    for (i = 0; i < ctx->parts->nelts; i++) {

        if (part[i].data.len > lcf->attachment_max) {
            return NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
        }

        category = part[i].name;

        p = ngx_strlchr(category.data, category.data + category.len, '[');
        if (p) {
            category.len = p - category.data;
        }

        name = part[i].filename.len ? part[i].filename : category;
        type = part[i].type;

        if (type.len == 0) {
            ngx_str_set(&type, "application/octet-stream");
        }

        if (name.len == 0 || name.len > 256 || type.len > 256
            || category.len > 256
            || ngx_strlchr(name.data, name.data + name.len, '/')
            || ngx_strlchr(name.data, name.data + name.len, '\0'))
        {
            return NGX_DECLINED;
        }

        /* the type is sent back as Content-Type: no bare CR or LF in it */

        for (p = type.data; p < type.data + type.len; p++) {
            if (*p < 0x20 || *p == 0x7f) {
                return NGX_DECLINED;
            }
        }

        if (EVP_Digest(part[i].data.data, part[i].data.len, digest, &dlen,
                       EVP_sha256(), NULL)
            != 1)
        {
            return NGX_ERROR;
        }

        hex.data = ngx_pnalloc(r->pool, 2 * dlen);
        if (hex.data == NULL) {
            return NGX_ERROR;
        }

        hex.len = ngx_hex_dump(hex.data, digest, dlen) - hex.data;

        a = json_pack("{s:s%, s:s%, s:s%, s:I, s:s%}",
                      "category", category.data, category.len,
                      "type", type.data, type.len,
                      "name", name.data, name.len,
                      "size", (json_int_t) part[i].data.len,
                      "digest", hex.data, hex.len);

        if (a == NULL || json_array_append_new(list, a) != 0) {
            /* not valid UTF-8, most likely */
            return NGX_DECLINED;
        }

        if (ngx_http_tent_blob_ref(r->pool, refs, &hex, &part[i].data)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_post_create(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                      *post, *v, *app, *cred;
    uint64_t                     ms;
    ngx_int_t                    rc;
    ngx_str_t                    id, type, entity, key, value, ikey, irest,
                                 idem;
    ngx_uint_t                   import, given;
    const char                  *error;
    ngx_table_elt_t             *h;
    ngx_array_t                 *refs;
    ngx_list_part_t             *part;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_post_state_t  *st;

    import = ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_IMPORT_POSTS);
    cred = ctx->principal.credential;

    error = NULL;
    post = ngx_http_tent_post_validate(ctx->body, import, &error);

    if (post == NULL) {
        if (error == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return ngx_http_tent_send_error(r, 422, error);
    }

    if (ngx_http_tent_json_cleanup(r->pool, post) != NGX_OK) {
        json_decref(post);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    (void) ngx_http_tent_json_str(post, "type", &type);

    if (!import
        && !ngx_http_tent_type_allowed(json_object_get(cred, "post_types"),
                                       &type))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    /* what the server decides, unless an import says otherwise */

    given = import && ngx_http_tent_json_str(post, "id", &id) == NGX_OK;

    if (!given) {
        if (ngx_http_tent_random_id(r->pool, NULL, 16, &id) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        json_object_set_new(post, "id", ngx_http_tent_json_string(&id));
    }

    if (!import || ngx_http_tent_json_str(post, "entity", &entity) != NGX_OK)
    {
        entity = ctx->entity;
    }

    /* an import is kept under the entity's one spelling too */

    if (ngx_http_tent_post_entity(r->pool, ctx, &entity, &entity) != NGX_OK
        || json_object_set_new(post, "entity",
                               ngx_http_tent_json_string(&entity))
           != 0)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ms = ngx_http_tent_now_us();

    if (!import || !json_is_integer(json_object_get(post, "received_at"))) {
        json_object_set_new(post, "received_at", json_integer(ngx_time()));
    }

    json_object_set_new(post, "published_at",
                        json_integer(ngx_http_tent_post_published_at(
                            json_object_get(post, "published_at"),
                            ngx_time())));
    json_object_set_new(post, "updated_at", json_integer(ngx_time()));
    json_object_set_new(post, "version", json_integer(1));
    json_object_set_new(post, "rus", json_integer((json_int_t) ms));

    if (json_object_get(post, "attachments") == NULL) {
        json_object_set_new(post, "attachments", json_array());
    }

    refs = ngx_array_create(r->pool, 2, sizeof(ngx_http_tent_blob_ref_t));
    if (refs == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_tent_post_attachments(r, ctx, post, refs);

    if (rc == NGX_HTTP_REQUEST_ENTITY_TOO_LARGE) {
        return ngx_http_tent_send_error(r, rc, "An attachment is too large");
    }

    if (rc == NGX_DECLINED) {
        return ngx_http_tent_send_error(r, 422, "Invalid attachment");
    }

    if (rc != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (!import || json_object_get(post, "app") == NULL) {
        app = json_object();
        v = json_object_get(cred, "app_name");
        if (json_is_string(v)) {
            json_object_set(app, "name", v);
        }

        v = json_object_get(cred, "app_url");
        if (json_is_string(v)) {
            json_object_set(app, "url", v);
        }

        if (json_object_size(app)) {
            json_object_set_new(post, "app", app);

        } else {
            json_decref(app);
            json_object_del(post, "app");
        }
    }

    /* a retried create (same Idempotency-Key) finds its first post */

    ngx_str_null(&idem);

    part = &r->headers_in.headers.part;
    h = part->elts;

    for ( ;; ) {
        size_t  i;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].key.len == sizeof("Idempotency-Key") - 1
                && ngx_strncasecmp(h[i].key.data,
                                   (u_char *) "Idempotency-Key",
                                   h[i].key.len) == 0)
            {
                idem = h[i].value;
            }
        }

        if (part->next == NULL) {
            break;
        }

        part = part->next;
        h = part->elts;
    }

    if (idem.len > NGX_HTTP_TENT_IDEMPOTENCY_MAX) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                        "Idempotency-Key is too long");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &entity, &id, -1,
                                  &key)
           != NGX_OK
        || ngx_http_tent_json_dump(r->pool, post, &value) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_post_state_t));
    if (st == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    st->post = post;
    st->post_entity = entity;
    st->id = id;
    st->refs = refs;
    st->write = op;
    st->write_done = ngx_http_tent_post_created;
    ctx->state = st;

    ngx_str_null(&ikey);

    if (idem.len) {
        irest.len = ctx->principal.app_id.len + 1 + idem.len;
        irest.data = ngx_pnalloc(r->pool, irest.len);
        if (irest.data == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        ngx_memcpy(irest.data, ctx->principal.app_id.data,
                   ctx->principal.app_id.len);
        irest.data[ctx->principal.app_id.len] = '\0';
        ngx_memcpy(irest.data + ctx->principal.app_id.len + 1, idem.data,
                   idem.len);

        v = json_pack("{s:o, s:o}", "entity",
                      ngx_http_tent_json_string(&entity),
                      "id", ngx_http_tent_json_string(&id));

        if (v == NULL || ngx_http_tent_json_cleanup(r->pool, v) != NGX_OK) {
            json_decref(v);
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        if (ngx_http_tent_key(r->pool, &ctx->entity,
                              NGX_HTTP_TENT_TABLE_IDEMPOTENCY, &irest, &ikey)
            != NGX_OK
            || ngx_http_tent_json_dump(r->pool, v, &idem) != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    /*
     * The key that must be absent: the Idempotency-Key's, or the post's
     * own when there is none or when an import names its id (a fresh
     * Idempotency-Key must not let an import overwrite a post we have).
     */

    if (ikey.len && !given) {
        rc = ngx_http_tent_store_cas(op, &ikey, NULL, &idem);

        if (rc == NGX_OK) {
            rc = ngx_http_tent_store_write_put(op, &key, &value);
        }

    } else {
        rc = ngx_http_tent_store_cas(op, &key, NULL, &value);

        if (rc == NGX_OK && ikey.len) {
            rc = ngx_http_tent_store_write_put(op, &ikey, &idem);
        }
    }

    if (rc != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* and, for a post of ours, its row in the followers' outbox */

    if (ngx_http_tent_post_key(r->pool, &ctx->entity, &entity, &id, 1, &key)
        != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK
        || ngx_http_tent_post_index(r, ctx, op, post, 0) != NGX_OK
        || (ngx_http_tent_post_original(ctx, &entity)
            && ngx_http_tent_delivery_mark(r, ctx, op, post) != NGX_OK))
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the attachments' references (and bytes) first, then the post */

    return ngx_http_tent_blobs_adjust(r, ctx, 1, ngx_http_tent_post_submit);
}


static ngx_int_t
ngx_http_tent_post_submit(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    return ngx_http_tent_store_submit_request(r, st->write, st->write_done);
}


static ngx_int_t
ngx_http_tent_post_created(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                      *out;
    ngx_int_t                    status;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_post_state_t  *st;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        out = ngx_http_tent_post_render(ctx, st->post);
        if (out == NULL
            || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK)
        {
            json_decref(out);
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
    }

    /* the key existed: an import of a post we have, or a retry */

    ngx_http_tent_store_value(op, &st->raw);

    return ngx_http_tent_blobs_adjust(r, ctx, -1, ngx_http_tent_post_found);
}


/* the post a retry or an import found: this one's references given back */

static ngx_int_t
ngx_http_tent_post_found(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                      *out, *prev;
    ngx_str_t                    entity, id, key;
    ngx_http_tent_store_op_t    *get;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    prev = ngx_http_tent_json_load(r, &st->raw);
    if (prev == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (json_object_get(prev, "version")) {

        /*
         * The post itself: an import of an id we have.  It is answered as
         * a read of it would be; one the importer may not read is not
         * shown, only that the id is taken (an import of a free id would
         * have created it, so that much is no secret to an importer).
         */

        if (!ngx_http_tent_post_record_visible(ctx, prev)) {
            return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                                            "A post with this id exists");
        }

        out = ngx_http_tent_post_render(ctx, prev);
        if (out == NULL
            || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK)
        {
            json_decref(out);
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
    }

    if (ngx_http_tent_json_str(prev, "entity", &entity) != NGX_OK
        || ngx_http_tent_json_str(prev, "id", &id) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    get = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (get == NULL
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &entity, &id, -1,
                                  &key)
           != NGX_OK
        || ngx_http_tent_store_get(get, &key) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->state = NULL;

    return ngx_http_tent_store_submit_request(r, get,
                                              ngx_http_tent_post_loaded);
}


/*
 * GET /posts/:id and /posts/:entity/:id, and the first step of PUT and
 * DELETE: load the post (or one version of it).
 */

static ngx_int_t
ngx_http_tent_post_locate(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_post_state_t *st)
{
    u_char     *dst, *src;
    ngx_str_t  *id;

    if (ctx->nparams == 2) {
        /* /posts/:entity/:id, the entity percent-encoded */

        st->post_entity.data = ngx_pnalloc(r->pool, ctx->params[0].len);
        if (st->post_entity.data == NULL) {
            return NGX_ERROR;
        }

        dst = st->post_entity.data;
        src = ctx->params[0].data;
        ngx_unescape_uri(&dst, &src, ctx->params[0].len, 0);
        st->post_entity.len = dst - st->post_entity.data;

        if (ngx_strlchr(st->post_entity.data, dst, '\0')) {
            return NGX_DECLINED;
        }

        /* any spelling of the entity finds its posts */

        if (ngx_http_tent_post_entity(r->pool, ctx, &st->post_entity,
                                      &st->post_entity)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        id = &ctx->params[1];

    } else {
        st->post_entity = ctx->entity;
        id = &ctx->params[0];
    }

    for (src = id->data; src < id->data + id->len; src++) {
        if (!((*src >= 'a' && *src <= 'z') || (*src >= 'A' && *src <= 'Z')
              || (*src >= '0' && *src <= '9') || *src == '-' || *src == '_'))
        {
            return NGX_DECLINED;
        }
    }

    if (id->len == 0 || id->len > 64) {
        return NGX_DECLINED;
    }

    st->id = *id;

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_post_get(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_int_t                    rc, version;
    ngx_str_t                    key, v;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_post_state_t  *st;

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_post_state_t));
    if (st == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->state = st;

    rc = ngx_http_tent_post_locate(r, ctx, st);

    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (rc == NGX_DECLINED) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    version = -1;

    if (ngx_http_arg(r, (u_char *) "version", 7, &v) == NGX_OK) {
        version = ngx_atoi(v.data, v.len);
        if (version <= 0 || version > 0x7fffffff) {
            return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                            "Not Found");
        }
    }

    /* PUT and DELETE read the current post; GET maybe a version */

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        version = -1;
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &st->post_entity,
                                  &st->id, version, &key)
           != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_post_loaded);
}


static ngx_int_t
ngx_http_tent_post_loaded(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                      *post, *out;
    ngx_int_t                    status;
    ngx_str_t                    value, type, entity;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_post_state_t  *st;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    ngx_http_tent_store_value(op, &value);

    post = ngx_http_tent_json_load(r, &value);
    if (post == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* what may not be seen does not exist */

    if (!ngx_http_tent_post_record_visible(ctx, post)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    if (st && st->versions) {
        st->post = post;
        return ngx_http_tent_post_versions_scan(r, ctx,
                                                ngx_http_tent_versions_list);
    }

    if (st && st->attachment.len) {
        return ngx_http_tent_post_blob(r, ctx, post);
    }

    if (st == NULL || (r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        out = ngx_http_tent_post_render_view(r, ctx, post);
        if (out == NULL
            || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK)
        {
            json_decref(out);
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
    }

    /* PUT and DELETE: write_posts, the post's type, our own post */

    (void) ngx_http_tent_json_str(post, "type", &type);
    (void) ngx_http_tent_json_str(post, "entity", &entity);

    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_POSTS)
        || !ngx_http_tent_type_allowed(json_object_get(
                                           ctx->principal.credential,
                                           "post_types"),
                                       &type))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    if (!ngx_http_tent_post_original(ctx, &entity)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                   "Only the entity's own posts can be changed");
    }

    st->post = post;
    st->raw = value;

    if (r->method == NGX_HTTP_PUT) {
        /* with attachments, the new version comes as multipart */
        ctx->multipart = 1;
        return ngx_http_tent_read_json(r, ctx, ngx_http_tent_post_update);
    }

    return ngx_http_tent_post_versions_scan(r, ctx,
                                            ngx_http_tent_post_remove);
}


/*
 * GET /posts/:id/attachments/:name: the post first (it must be visible),
 * then the bytes, with the attachment's type; an Accept other than "any"
 * must name that type exactly, as tentd did.
 */

ngx_int_t
ngx_http_tent_post_attachment(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    u_char                      *dst, *src;
    ngx_int_t                    rc;
    ngx_str_t                    name;
    ngx_http_tent_post_state_t  *st;

    name = ctx->params[ctx->nparams - 1];
    ctx->nparams--;

    rc = ngx_http_tent_post_get(r, ctx);

    if (rc != NGX_DONE) {
        return rc;
    }

    st = ctx->state;

    st->attachment.data = ngx_pnalloc(r->pool, name.len);
    if (st->attachment.data == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    dst = st->attachment.data;
    src = name.data;
    ngx_unescape_uri(&dst, &src, name.len, 0);
    st->attachment.len = dst - st->attachment.data;

    return rc;
}


static ngx_int_t ngx_http_tent_post_blob_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


/*
 * Any app with write_posts uploads attachments, and they are served from
 * the entity's origin, next to the authorize page: none may run there.
 * All are sandboxed (no script, an opaque origin, nothing loaded), and
 * only types a browser shows as inert images, sound, video or text are
 * shown inline; the others (HTML, SVG, XML, scripts, PDF, unknown) are
 * downloads.
 */

static ngx_str_t  ngx_http_tent_inline_types[] = {
    ngx_string("image/png"),
    ngx_string("image/jpeg"),
    ngx_string("image/gif"),
    ngx_string("image/webp"),
    ngx_string("image/avif"),
    ngx_string("image/bmp"),
    ngx_string("audio/mpeg"),
    ngx_string("audio/mp4"),
    ngx_string("audio/aac"),
    ngx_string("audio/ogg"),
    ngx_string("audio/wav"),
    ngx_string("audio/webm"),
    ngx_string("audio/flac"),
    ngx_string("video/mp4"),
    ngx_string("video/webm"),
    ngx_string("video/ogg"),
    ngx_string("text/plain"),
    ngx_null_string
};


static ngx_uint_t
ngx_http_tent_attachment_inline(ngx_str_t *type)
{
    u_char     *p, *last;
    ngx_str_t  *t;

    p = type->data;
    last = p + type->len;

    /* of "image/png, text/html" a browser takes the last type */

    if (ngx_strlchr(p, last, ',')) {
        return 0;
    }

    while (p < last && (*p == ' ' || *p == '\t')) {
        p++;
    }

    last = ngx_strlchr(p, last, ';');
    if (last == NULL) {
        last = type->data + type->len;
    }

    while (last > p && (last[-1] == ' ' || last[-1] == '\t')) {
        last--;
    }

    for (t = ngx_http_tent_inline_types; t->len; t++) {
        if ((size_t) (last - p) == t->len
            && ngx_strncasecmp(p, t->data, t->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


static ngx_int_t
ngx_http_tent_attachment_headers(ngx_http_request_t *r, ngx_str_t *type,
    ngx_str_t *name)
{
    u_char           *p, *s;
    ngx_table_elt_t  *h;

    static u_char  hex[] = "0123456789ABCDEF";

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Content-Security-Policy");
    ngx_str_set(&h->value, NGX_HTTP_TENT_ATTACHMENT_CSP);

    if (ngx_http_tent_attachment_inline(type)) {
        return NGX_OK;
    }

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    /* the name as RFC 6266's filename*: anything but a few bytes escaped */

    p = ngx_pnalloc(r->pool, sizeof("attachment; filename*=UTF-8''") - 1
                             + 3 * name->len);
    if (p == NULL) {
        h->hash = 0;
        return NGX_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Content-Disposition");
    h->value.data = p;

    p = ngx_cpymem(p, "attachment; filename*=UTF-8''",
                   sizeof("attachment; filename*=UTF-8''") - 1);

    for (s = name->data; s < name->data + name->len; s++) {
        if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')
            || (*s >= '0' && *s <= '9') || *s == '.' || *s == '-'
            || *s == '_' || *s == '~')
        {
            *p++ = *s;
            continue;
        }

        *p++ = '%';
        *p++ = hex[*s >> 4];
        *p++ = hex[*s & 0x0f];
    }

    h->value.len = p - h->value.data;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_post_blob(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    json_t *post)
{
    u_char                      *comma;
    size_t                       i;
    json_t                      *a;
    ngx_str_t                    name, type, accept, digest;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    ngx_str_null(&accept);

#if (NGX_HTTP_HEADERS)
    if (r->headers_in.accept) {
        accept = r->headers_in.accept->value;
    }
#endif

    comma = ngx_strlchr(accept.data, accept.data + accept.len, ',');
    if (comma) {
        accept.len = comma - accept.data;
    }

    if (accept.len == 3 && ngx_strncmp(accept.data, "*/*", 3) == 0) {
        accept.len = 0;
    }

    json_array_foreach(json_object_get(post, "attachments"), i, a) {
        if (ngx_http_tent_json_str(a, "name", &name) != NGX_OK
            || ngx_http_tent_json_str(a, "type", &type) != NGX_OK
            || ngx_http_tent_json_str(a, "digest", &digest) != NGX_OK
            || name.len != st->attachment.len
            || ngx_strncmp(name.data, st->attachment.data, name.len) != 0
            || (accept.len
                && (accept.len != type.len
                    || ngx_strncasecmp(accept.data, type.data, type.len)
                       != 0)))
        {
            continue;
        }

        st->attachment_type = type;

        return ngx_http_tent_store_get_request(r, NGX_HTTP_TENT_TABLE_BLOB,
                                               &digest,
                                               ngx_http_tent_post_blob_loaded);
    }

    return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
}


static ngx_int_t
ngx_http_tent_post_blob_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                    rc, status;
    ngx_buf_t                   *b;
    ngx_str_t                    bytes;
    ngx_chain_t                  out;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_post_state_t  *st;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    if (ngx_http_tent_attachment_headers(r, &st->attachment_type,
                                         &st->attachment)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->own_reply = 1;

    ngx_http_tent_store_value(op, &bytes);

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = bytes.len;
    r->headers_out.content_type = st->attachment_type;
    r->headers_out.content_type_len = st->attachment_type.len;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }

    b->pos = bytes.data;
    b->last = bytes.data + bytes.len;
    b->memory = bytes.len ? 1 : 0;
    b->last_buf = 1;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


/* GET /posts/:id/versions: the post first, to know it may be seen */

ngx_int_t
ngx_http_tent_post_versions(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_int_t                    rc;
    ngx_http_tent_post_state_t  *st;

    rc = ngx_http_tent_post_get(r, ctx);

    /* the store answers later, never from within submit */

    if (rc == NGX_DONE) {
        st = ctx->state;
        st->versions = 1;
    }

    return rc;
}


/* the versions of st's post, newest first, then "next" */

ngx_int_t
ngx_http_tent_post_versions_scan(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_request_done_pt next)
{
    ngx_str_t                    start, end;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &st->post_entity,
                                  &st->id, 0, &start)
           != NGX_OK
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &st->post_entity,
                                  &st->id, 0x7fffffff, &end)
           != NGX_OK
        || ngx_http_tent_store_scan(op, &start, &end, 100000, 1) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_store_submit_request(r, op, next);
}


/*
 * PUT /posts/:id: content, licenses, mentions and views replace the old
 * ones as a new version; {"version": n} alone makes a new version from n.
 */

static ngx_int_t ngx_http_tent_post_revert(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_post_write_version(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *post);


static ngx_int_t
ngx_http_tent_post_update(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                      *v, *valid, *post, *probe;
    ngx_int_t                    rc;
    json_int_t                   n;
    ngx_str_t                    key;
    const char                  *error;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    v = json_object_get(ctx->body, "version");

    if (json_object_size(ctx->body) == 1 && json_is_integer(v)
        && (ctx->parts == NULL || ctx->parts->nelts == 0))
    {
        n = json_integer_value(v);

        if (n <= 0 || n > 0x7fffffff) {
            return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                            "Not Found");
        }

        op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

        if (op == NULL
            || ngx_http_tent_post_key(r->pool, &ctx->entity,
                                      &st->post_entity, &st->id,
                                      (ngx_int_t) n, &key)
               != NGX_OK
            || ngx_http_tent_store_get(op, &key) != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return ngx_http_tent_store_submit_request(r, op,
                                                  ngx_http_tent_post_revert);
    }

    /* the type stays: check the new fields as a post of that type */

    probe = ngx_http_tent_json_own(r->pool, json_deep_copy(ctx->body));
    if (probe == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    json_object_set(probe, "type", json_object_get(st->post, "type"));

    if (json_object_get(probe, "content") == NULL) {
        json_object_set(probe, "content", json_object_get(st->post,
                                                          "content"));
    }

    json_object_set(probe, "permissions",
                    json_object_get(st->post, "permissions"));

    error = NULL;
    valid = ngx_http_tent_post_validate(probe, 0, &error);

    if (valid == NULL) {
        return error ? ngx_http_tent_send_error(r, 422, error)
                     : NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (ngx_http_tent_json_cleanup(r->pool, valid) != NGX_OK) {
        json_decref(valid);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    post = ngx_http_tent_json_own(r->pool, json_deep_copy(st->post));
    if (post == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    json_object_set(post, "content", json_object_get(valid, "content"));

    if (json_object_get(ctx->body, "licenses")) {
        json_object_set(post, "licenses", json_object_get(valid, "licenses"));
    }

    if (json_object_get(ctx->body, "mentions")) {
        json_object_set(post, "mentions", json_object_get(valid, "mentions"));
    }

    if (json_object_get(valid, "views")) {
        json_object_set(post, "views", json_object_get(valid, "views"));
    }

    /* uploaded files replace the attachments; otherwise they stay */

    if (ctx->parts && ctx->parts->nelts) {
        st->refs = ngx_array_create(r->pool, 2,
                                    sizeof(ngx_http_tent_blob_ref_t));
        if (st->refs == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        rc = ngx_http_tent_post_attachments(r, ctx, post, st->refs);

        if (rc == NGX_HTTP_REQUEST_ENTITY_TOO_LARGE) {
            return ngx_http_tent_send_error(r, rc,
                                            "An attachment is too large");
        }

        if (rc == NGX_DECLINED) {
            return ngx_http_tent_send_error(r, 422, "Invalid attachment");
        }

        if (rc != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    return ngx_http_tent_post_write_version(r, ctx, post);
}


static ngx_int_t
ngx_http_tent_post_revert(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                      *old, *post;
    ngx_int_t                    status;
    ngx_str_t                    value;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_post_state_t  *st;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    ngx_http_tent_store_value(op, &value);

    old = ngx_http_tent_json_load(r, &value);
    if (old == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    post = ngx_http_tent_json_own(r->pool, json_deep_copy(st->post));
    if (post == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    json_object_set(post, "content", json_object_get(old, "content"));
    json_object_set(post, "licenses", json_object_get(old, "licenses"));
    json_object_set(post, "mentions", json_object_get(old, "mentions"));

    if (json_object_get(old, "views")) {
        json_object_set(post, "views", json_object_get(old, "views"));
    }

    /* and its attachments: version n's bytes are still referenced */

    if (json_is_array(json_object_get(old, "attachments"))) {
        json_object_set(post, "attachments",
                        json_object_get(old, "attachments"));
    }

    return ngx_http_tent_post_write_version(r, ctx, post);
}


/* the new version: it replaces exactly what we read, indexes move along */

static ngx_int_t
ngx_http_tent_post_write_version(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *post)
{
    json_int_t                   version;
    ngx_str_t                    key, value, vkey;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    version = json_integer_value(json_object_get(st->post, "version")) + 1;

    json_object_set_new(post, "version", json_integer(version));
    json_object_set_new(post, "updated_at", json_integer(ngx_time()));

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &st->post_entity,
                                  &st->id, -1, &key)
           != NGX_OK
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &st->post_entity,
                                  &st->id, (ngx_int_t) version, &vkey)
           != NGX_OK
        || ngx_http_tent_json_dump(r->pool, post, &value) != NGX_OK
        || ngx_http_tent_store_cas(op, &key, &st->raw, &value) != NGX_OK
        || ngx_http_tent_store_write_put(op, &vkey, &value) != NGX_OK
        || ngx_http_tent_post_index(r, ctx, op, st->post, 1) != NGX_OK
        || ngx_http_tent_post_index(r, ctx, op, post, 0) != NGX_OK
        || (ngx_http_tent_post_original(ctx, &st->post_entity)
            && ngx_http_tent_delivery_mark(r, ctx, op, post) != NGX_OK))
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    st->made = post;
    st->write = op;
    st->write_done = ngx_http_tent_post_changed;

    /* the new version's references: its uploads, or the ones it keeps */

    if (st->refs == NULL) {
        st->refs = ngx_array_create(r->pool, 2,
                                    sizeof(ngx_http_tent_blob_ref_t));
        if (st->refs == NULL
            || ngx_http_tent_blob_refs(r->pool, st->refs, post) != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    return ngx_http_tent_blobs_adjust(r, ctx, 1, ngx_http_tent_post_submit);
}


/*
 * A change written: a new version's references stay taken, a deleted
 * version's are given back.  Refused: the new version's are given back.
 */

static ngx_int_t
ngx_http_tent_post_changed(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    ngx_int_t                    status;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_post_state_t  *st;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        st->conflict = 1;

        return st->made ? ngx_http_tent_blobs_adjust(r, ctx, -1,
                                                     ngx_http_tent_post_reply)
                        : ngx_http_tent_post_reply(r, ctx);
    }

    if (st->made == NULL) {
        return ngx_http_tent_blobs_adjust(r, ctx, -1,
                                          ngx_http_tent_post_reply);
    }

    return ngx_http_tent_post_reply(r, ctx);
}


static ngx_int_t
ngx_http_tent_post_reply(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                      *out;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    if (st->conflict) {
        return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                   "The post changed meanwhile: send the request again");
    }

    if (st->made == NULL) {
        /* a DELETE */
        r->headers_out.status = NGX_HTTP_OK;
        r->headers_out.content_length_n = 0;
        r->header_only = 1;
        ctx->own_reply = 1;
        return ngx_http_send_header(r);
    }

    out = ngx_http_tent_post_render(ctx, st->made);
    if (out == NULL || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK) {
        json_decref(out);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
}


/*
 * DELETE /posts/:id: the post, its versions and index entries go, and a
 * delete post {"id": ...} with the same permissions takes their place.
 * ?version=n deletes that version; the current one gives way to the
 * newest other; the only one takes the post with it.
 */

static ngx_int_t
ngx_http_tent_post_remove(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                      *del, *prev, *newest;
    uint64_t                     ms;
    ngx_int_t                    status, version, current, n, count;
    ngx_str_t                    key, value, k, v, id, cur, newest_key,
                                 newest_raw, gone;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_store_op_t    *wop;
    ngx_http_tent_post_state_t  *st;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    version = -1;

    if (ngx_http_arg(r, (u_char *) "version", 7, &v) == NGX_OK) {
        version = ngx_atoi(v.data, v.len);
        if (version <= 0) {
            return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                            "Not Found");
        }
    }

    current = (ngx_int_t) json_integer_value(json_object_get(st->post,
                                                             "version"));

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (wop == NULL
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &st->post_entity,
                                  &st->id, -1, &cur)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* which versions there are */

    count = 0;
    ngx_str_null(&newest_key);
    ngx_str_null(&newest_raw);
    ngx_str_null(&key);
    ngx_str_null(&gone);

    /* the references the deleted versions give back once they are gone */

    st->refs = ngx_array_create(r->pool, 2, sizeof(ngx_http_tent_blob_ref_t));
    if (st->refs == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    while (ngx_http_tent_store_next(op, &k, &v) == NGX_OK) {
        n = (k.data[k.len - 4] << 24) | (k.data[k.len - 3] << 16)
            | (k.data[k.len - 2] << 8) | k.data[k.len - 1];
        count++;

        if (n == version) {
            key = k;
            gone = v;

        } else if (newest_key.data == NULL) {
            newest_key = k;
            newest_raw = v;
        }
    }

    if (version > 0 && key.data == NULL) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    if (version > 0 && count > 1) {

        /* one version of several: the post stays */

        if (ngx_http_tent_blob_refs_raw(r, st->refs, &gone) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        if (ngx_http_tent_store_cas(wop, &cur, &st->raw,
                                    version == current ? &newest_raw
                                                       : &st->raw)
            != NGX_OK
            || ngx_http_tent_store_write_del(wop, &key) != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        if (version == current) {
            newest = ngx_http_tent_json_parse(&newest_raw,
                                              r->connection->log);
            if (newest == NULL
                || ngx_http_tent_json_cleanup(r->pool, newest) != NGX_OK
                || ngx_http_tent_post_index(r, ctx, wop, st->post, 1)
                   != NGX_OK
                || ngx_http_tent_post_index(r, ctx, wop, newest, 0) != NGX_OK)
            {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }
        }

        return ngx_http_tent_store_submit_request(r, wop,
                                                  ngx_http_tent_post_changed);
    }

    /* the whole post: a delete post takes its place in the feed */

    if (ngx_http_tent_random_id(r->pool, NULL, 16, &id) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ms = ngx_http_tent_now_us();

    del = json_pack("{s:o, s:O, s:s, s:{s:O}, s:I, s:I, s:I, s:O, s:[], "
                    "s:[], s:[], s:i, s:I}",
                    "id", ngx_http_tent_json_string(&id),
                    "entity", json_object_get(st->post, "entity"),
                    "type", "https://tent.io/types/post/delete/v0.1.0",
                    "content", "id", json_object_get(st->post, "id"),
                    "published_at", (json_int_t) ngx_time(),
                    "received_at", (json_int_t) ngx_time(),
                    "updated_at", (json_int_t) ngx_time(),
                    "permissions", json_object_get(st->post, "permissions"),
                    "licenses", "mentions", "attachments",
                    "version", 1,
                    "rus", (json_int_t) ms);

    if (del == NULL || ngx_http_tent_json_cleanup(r->pool, del) != NGX_OK) {
        json_decref(del);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    prev = json_object_get(st->post, "app");
    if (prev) {
        json_object_set(del, "app", prev);
    }

    /*
     * Compare on the post itself (put back as it was, then deleted by the
     * batch: later operations in a batch win), so a concurrent change
     * makes this fail rather than be lost.
     */

    if (ngx_http_tent_json_dump(r->pool, del, &value) != NGX_OK
        || ngx_http_tent_store_cas(wop, &cur, &st->raw, &st->raw) != NGX_OK
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &st->post_entity,
                                  &id, -1, &key)
           != NGX_OK
        || ngx_http_tent_store_write_put(wop, &key, &value) != NGX_OK
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &st->post_entity,
                                  &id, 1, &key)
           != NGX_OK
        || ngx_http_tent_store_write_put(wop, &key, &value) != NGX_OK
        || ngx_http_tent_post_index(r, ctx, wop, del, 0) != NGX_OK
        || ngx_http_tent_delivery_mark(r, ctx, wop, del) != NGX_OK
        || ngx_http_tent_store_write_del(wop, &cur) != NGX_OK
        || ngx_http_tent_post_index(r, ctx, wop, st->post, 1) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* every version of the deleted post */

    ngx_http_tent_store_rewind(op);

    while (ngx_http_tent_store_next(op, &k, &v) == NGX_OK) {
        if (ngx_http_tent_store_write_del(wop, &k) != NGX_OK
            || ngx_http_tent_blob_refs_raw(r, st->refs, &v) != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_post_changed);
}
