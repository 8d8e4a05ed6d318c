
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * GET/HEAD /posts, /posts/count, /posts/:id/versions (spec 7.6, 8.2).
 * The feed is a scan of one index column (received_at, published_at or
 * updated_at), newest first, in batches: each batch is filtered here by
 * what the principal may see and by the query, until the page is full or
 * the range ends; then the page's posts are read with one multi-get.
 */


#include "ngx_http_tent_module.h"
#include "ngx_http_tent_cache.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_LIMIT_DEFAULT   50
#define NGX_HTTP_TENT_LIMIT_MAX       200
#define NGX_HTTP_TENT_SCAN_BATCH      512
#define NGX_HTTP_TENT_SCAN_MAX        1000000

#define NGX_HTTP_TENT_CURSOR_NONE     0
#define NGX_HTTP_TENT_CURSOR_SINCE    1
#define NGX_HTTP_TENT_CURSOR_BEFORE   2
#define NGX_HTTP_TENT_CURSOR_UNTIL    3


typedef struct {
    u_char                          column;
    ngx_uint_t                      limit;
    ngx_uint_t                      count_only;
    ngx_uint_t                      asc;
    ngx_uint_t                      desc_scan;
    ngx_uint_t                      reverse_result;
    ngx_str_t                       start;
    ngx_str_t                       end;
    ngx_array_t                     bases;
    ngx_array_t                     entities;
    ngx_str_t                       mentioned_entity;
    ngx_str_t                       mentioned_post;
    ngx_str_t                       mentions_of;     /* our post's id */
    ngx_uint_t                      cursor;
    ngx_str_t                       cursor_entity;
    ngx_str_t                       cursor_id;
    ngx_int_t                       since_time;      /* or -1 */
    ngx_int_t                       before_time;     /* or -1 */
    ngx_str_t                       view;
    ngx_uint_t                      count;
    ngx_uint_t                      scanned;
    ngx_array_t                     found;
    ngx_http_tent_cached_t          cached;
    ngx_uint_t                      cache;
} ngx_http_tent_query_t;


static ngx_int_t ngx_http_tent_query_cursor(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_query_scan(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_query_batch(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_query_fetched(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_query_reply(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *list);
static ngx_int_t ngx_http_tent_query_canonical(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_query_t *q, ngx_str_t *out);
static ngx_int_t ngx_http_tent_query_link_header(ngx_http_request_t *r,
    ngx_str_t *tails, ngx_str_t **link);


/* a query argument, percent-decoded; NGX_DECLINED when absent */

static ngx_int_t
ngx_http_tent_query_arg(ngx_http_request_t *r, const char *name,
    ngx_str_t *value)
{
    u_char     *dst, *src;
    ngx_str_t   raw;

    if (ngx_http_arg(r, (u_char *) name, ngx_strlen(name), &raw) != NGX_OK
        || raw.len == 0)
    {
        return NGX_DECLINED;
    }

    value->data = ngx_pnalloc(r->pool, raw.len);
    if (value->data == NULL) {
        return NGX_ERROR;
    }

    dst = value->data;
    src = raw.data;
    ngx_unescape_uri(&dst, &src, raw.len, 0);
    value->len = dst - value->data;

    /* no key bytes may come from a query */

    if (ngx_strlchr(value->data, dst, '\0')) {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * Every argument, decoded, is text: UTF-8 without NUL.  Anything else is
 * a 400 rather than an argument quietly ignored or matching nothing.
 */

static ngx_int_t
ngx_http_tent_query_args_valid(ngx_http_request_t *r)
{
    u_char  *p, *last, *end, *buf, *dst, *src;

    if (r->args.len == 0) {
        return NGX_OK;
    }

    buf = ngx_pnalloc(r->pool, r->args.len);
    if (buf == NULL) {
        return NGX_ERROR;
    }

    p = r->args.data;
    last = p + r->args.len;

    while (p < last) {
        end = ngx_strlchr(p, last, '&');
        if (end == NULL) {
            end = last;
        }

        dst = buf;
        src = p;
        ngx_unescape_uri(&dst, &src, end - p, 0);

        if (ngx_strlchr(buf, dst, '\0')
            || !ngx_http_tent_utf8_valid(buf, dst - buf))
        {
            return NGX_DECLINED;
        }

        p = end + 1;
    }

    return NGX_OK;
}


/* "a,b,c" into an array of strings, or of type bases */

static ngx_int_t
ngx_http_tent_query_list(ngx_pool_t *pool, ngx_str_t *s, ngx_array_t *out,
    ngx_uint_t bases)
{
    u_char     *p;
    ngx_str_t   item, *dst;

    p = s->data;

    while (ngx_http_tent_next_item(&p, s->data + s->len, &item)) {

        if (out->nelts >= 64) {
            return NGX_ERROR;
        }

        dst = ngx_array_push(out);
        if (dst == NULL) {
            return NGX_ERROR;
        }

        if (bases) {
            if (ngx_http_tent_type_base(&item, dst) != NGX_OK) {
                return NGX_ERROR;
            }

        } else {
            *dst = item;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_query_parse(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_query_t *q)
{
    ngx_int_t    n;
    ngx_str_t    v, *e;
    ngx_uint_t   i;

    static struct {
        const char  *id;
        const char  *entity;
        ngx_uint_t   kind;
    } *c, cursors[] = {
        { "since_id", "since_id_entity", NGX_HTTP_TENT_CURSOR_SINCE },
        { "before_id", "before_id_entity", NGX_HTTP_TENT_CURSOR_BEFORE },
        { "until_id", "until_id_entity", NGX_HTTP_TENT_CURSOR_UNTIL },
        { NULL, NULL, 0 }
    };

    q->column = 'r';
    q->limit = NGX_HTTP_TENT_LIMIT_DEFAULT;
    q->since_time = -1;
    q->before_time = -1;

    n = ngx_http_tent_query_args_valid(r);
    if (n != NGX_OK) {
        return n;
    }

    if (ngx_array_init(&q->bases, r->pool, 4, sizeof(ngx_str_t)) != NGX_OK
        || ngx_array_init(&q->entities, r->pool, 2, sizeof(ngx_str_t))
           != NGX_OK
        || ngx_array_init(&q->found, r->pool, 64, sizeof(ngx_str_t))
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_http_tent_query_arg(r, "limit", &v) == NGX_OK) {
        n = ngx_atoi(v.data, v.len);
        if (n <= 0) {
            return NGX_DECLINED;
        }

        q->limit = ngx_min((ngx_uint_t) n, NGX_HTTP_TENT_LIMIT_MAX);
    }

    if (ngx_http_tent_query_arg(r, "sort_by", &v) == NGX_OK) {
        if (v.len == 12 && ngx_strncmp(v.data, "published_at", 12) == 0) {
            q->column = 'p';

        } else if (v.len == 10 && ngx_strncmp(v.data, "updated_at", 10) == 0)
        {
            q->column = 'u';

        } else if (v.len != 11 || ngx_strncmp(v.data, "received_at", 11) != 0)
        {
            return NGX_DECLINED;
        }
    }

    if (ngx_http_tent_query_arg(r, "order", &v) == NGX_OK
        && v.len == 3 && ngx_strncmp(v.data, "asc", 3) == 0)
    {
        q->asc = 1;
    }

    if (ngx_http_tent_query_arg(r, "post_types", &v) == NGX_OK
        && ngx_http_tent_query_list(r->pool, &v, &q->bases, 1) != NGX_OK)
    {
        return NGX_DECLINED;
    }

    if (ngx_http_tent_query_arg(r, "entity", &v) == NGX_OK
        && ngx_http_tent_query_list(r->pool, &v, &q->entities, 0) != NGX_OK)
    {
        return NGX_DECLINED;
    }

    /* as ngx_http_tent_post_view() reads it, for the cache key */

    if (!q->count_only && q->mentions_of.len == 0
        && ngx_http_tent_query_arg(r, "view", &q->view) == NGX_ERROR)
    {
        return NGX_ERROR;
    }

    /* entities in the spelling posts are kept under: any spelling finds */

    e = q->entities.elts;

    for (i = 0; i < q->entities.nelts; i++) {
        if (ngx_http_tent_post_entity(r->pool, ctx, &e[i], &e[i]) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    if (ngx_http_tent_query_arg(r, "mentioned_entity", &q->mentioned_entity)
        == NGX_OK
        && ngx_http_tent_post_entity(r->pool, ctx, &q->mentioned_entity,
                                     &q->mentioned_entity)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    (void) ngx_http_tent_query_arg(r, "mentioned_post", &q->mentioned_post);

    for (c = cursors; c->id; c++) {
        if (ngx_http_tent_query_arg(r, c->id, &q->cursor_id) != NGX_OK) {
            continue;
        }

        q->cursor = c->kind;

        if (ngx_http_tent_query_arg(r, c->entity, &q->cursor_entity)
            != NGX_OK)
        {
            q->cursor_entity = ctx->entity;

        } else if (ngx_http_tent_post_entity(r->pool, ctx, &q->cursor_entity,
                                             &q->cursor_entity)
                   != NGX_OK)
        {
            return NGX_ERROR;
        }

        break;
    }

    /* the range of the column, narrowed by since_time and before_time */

    if (ngx_http_tent_index_key(r->pool, &ctx->entity, q->column, 0, 0,
                                NULL, NULL, 1, &q->start)
        != NGX_OK
        || ngx_http_tent_index_key(r->pool, &ctx->entity,
                                   (u_char) (q->column + 1), 0, 0, NULL,
                                   NULL, 1, &q->end)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ngx_http_tent_query_arg(r, "since_time", &v) == NGX_OK) {
        n = ngx_atoi(v.data, v.len);
        q->since_time = n;

        if (n < 0
            || ngx_http_tent_index_key(r->pool, &ctx->entity, q->column,
                                       (uint64_t) n + 1, 0, NULL, NULL, 2,
                                       &q->start)
               != NGX_OK)
        {
            return NGX_DECLINED;
        }
    }

    if (ngx_http_tent_query_arg(r, "before_time", &v) == NGX_OK) {
        n = ngx_atoi(v.data, v.len);
        q->before_time = n;

        if (n < 0
            || ngx_http_tent_index_key(r->pool, &ctx->entity, q->column,
                                       (uint64_t) n, 0, NULL, NULL, 2,
                                       &q->end)
               != NGX_OK)
        {
            return NGX_DECLINED;
        }
    }

    /*
     * Newest first: scan down.  since_id wants the posts just after the
     * cursor: scan up from it, then turn the page around; order=asc the
     * other way about.
     */

    q->desc_scan = !q->asc;

    if (q->cursor == NGX_HTTP_TENT_CURSOR_SINCE) {
        q->desc_scan = 0;
        q->reverse_result = !q->asc;

    } else if (q->cursor == NGX_HTTP_TENT_CURSOR_BEFORE && q->asc) {
        q->desc_scan = 1;
        q->reverse_result = 1;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_posts_query(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_uint_t count_only, ngx_str_t *mentions_of)
{
    ngx_int_t                  rc;
    ngx_str_t                  key, what, *link;
    ngx_http_tent_query_t     *q;
    ngx_http_tent_store_op_t  *op;

    q = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_query_t));
    if (q == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ctx->state = q;
    q->count_only = count_only;

    if (mentions_of) {
        q->mentions_of = *mentions_of;
    }

    rc = ngx_http_tent_query_parse(r, ctx, q);

    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (rc == NGX_DECLINED) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                        "Invalid query parameter");
    }

    /*
     * The public feed, as anonymous readers get it, from the cache: by
     * the query as parsed, not as spelled.  The entry has the body and
     * the Link's page cursors; the Link itself repeats the request's own
     * parameters, so it is made for each request.
     */

    if (!count_only) {
        if (ngx_http_tent_query_canonical(r, ctx, q, &what) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        switch (ngx_http_tent_cache_get(r, ctx, &what, &q->cached)) {

        case NGX_OK:
            if (ngx_http_tent_query_link_header(r, &q->cached.extra, &link)
                != NGX_OK)
            {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }

            return ngx_http_tent_send_body(r, NGX_HTTP_OK, &q->cached.body);

        case NGX_DECLINED:
            q->cache = 1;
            break;

        default:
            break;
        }
    }

    if (q->cursor == NGX_HTTP_TENT_CURSOR_NONE) {
        return ngx_http_tent_query_scan(r, ctx);
    }

    /* the cursor post's place in the column */

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &q->cursor_entity,
                                  &q->cursor_id, -1, &key)
           != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_query_cursor);
}


ngx_int_t
ngx_http_tent_posts_list(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_posts_query(r, ctx, r->method == NGX_HTTP_HEAD,
                                     NULL);
}


/* GET and HEAD /posts/:id/mentions (spec 7.7) */

ngx_int_t
ngx_http_tent_post_mentions_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    u_char     *p;
    ngx_str_t  *id;

    id = &ctx->params[0];

    if (id->len == 0) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    for (p = id->data; p < id->data + id->len; p++) {
        if (*p == ' ' || *p < 0x20) {
            return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                            "Not Found");
        }
    }

    return ngx_http_tent_posts_query(r, ctx, r->method == NGX_HTTP_HEAD,
                                     id);
}


ngx_int_t
ngx_http_tent_posts_count(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_posts_query(r, ctx, 1, NULL);
}


static ngx_int_t
ngx_http_tent_query_cursor(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    u_char                 *p;
    json_t                 *post, *json;
    uint64_t                seconds, ms;
    ngx_int_t               status;
    ngx_str_t               value, key;
    ngx_http_tent_ctx_t    *ctx;
    ngx_http_tent_query_t  *q;

    static const char  *fields[] = { "received_at", "published_at",
                                     "updated_at" };

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    q = ctx->state;

    post = NULL;

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_store_value(op, &value);

        post = ngx_http_tent_json_load(r, &value);
        if (post == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    /*
     * An unknown cursor is an empty page, not an error (as tentd).  So is
     * one the principal may not see: placing the page there would tell
     * that the post exists, and when it was written.
     */

    if (post == NULL || !ngx_http_tent_post_record_visible(ctx, post)) {

        if (q->count_only) {
            return ngx_http_tent_query_reply(r, ctx, NULL);
        }

        json = ngx_http_tent_json_own(r->pool, json_array());
        if (json == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return ngx_http_tent_query_reply(r, ctx, json);
    }

    seconds = (uint64_t) json_integer_value(json_object_get(post,
                  fields[q->column == 'r' ? 0 : q->column == 'p' ? 1 : 2]));
    ms = (uint64_t) json_integer_value(json_object_get(post, "rus"));

    if (ngx_http_tent_index_key(r->pool, &ctx->entity, q->column, seconds,
                                ms, &q->cursor_entity, &q->cursor_id, 3,
                                &key)
        != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (q->cursor == NGX_HTTP_TENT_CURSOR_BEFORE) {
        /* strictly before: the cursor key is the exclusive end */
        if (ngx_memn2cmp(key.data, q->end.data, key.len, q->end.len) < 0) {
            q->end = key;
        }

        return ngx_http_tent_query_scan(r, ctx);
    }

    /* strictly after: the smallest key above it is key + 0x00 */

    p = ngx_pnalloc(r->pool, key.len + 1);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_memcpy(p, key.data, key.len);
    p[key.len] = '\0';

    key.data = p;
    key.len++;

    if (ngx_memn2cmp(key.data, q->start.data, key.len, q->start.len) > 0) {
        q->start = key;
    }

    return ngx_http_tent_query_scan(r, ctx);
}


static ngx_int_t
ngx_http_tent_query_scan(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_http_tent_query_t     *q;
    ngx_http_tent_store_op_t  *op;

    q = ctx->state;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_scan(op, &q->start, &q->end,
                                    NGX_HTTP_TENT_SCAN_BATCH, q->desc_scan)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_query_batch);
}


/*
 * Does an index entry's mention list hold one: "m" has entities, "mp"
 * "entity id" pairs (with an id, the pair's id must be it; with an
 * entity too, its entity).  An entity matches in any of its spellings.
 */

static ngx_int_t
ngx_http_tent_json_has(json_t *list, ngx_str_t *entity, ngx_str_t *id)
{
    size_t      i, len;
    json_t     *v;
    ngx_str_t   e;

    json_array_foreach(list, i, v) {
        e.data = (u_char *) json_string_value(v);
        len = json_string_length(v);

        if (e.data == NULL) {
            continue;
        }

        e.len = len;

        if (id) {
            /* "entity id": the id after the space */

            if (len <= id->len
                || e.data[len - id->len - 1] != ' '
                || ngx_strncmp(e.data + len - id->len, id->data, id->len)
                   != 0)
            {
                continue;
            }

            if (entity == NULL) {
                return 1;
            }

            e.len = len - id->len - 1;
        }

        if (ngx_http_tent_entity_eq(&e, entity)) {
            return 1;
        }
    }

    return 0;
}


/* does an index entry pass the principal and the query? */

static ngx_int_t
ngx_http_tent_query_match(ngx_http_tent_ctx_t *ctx, ngx_http_tent_query_t *q,
    ngx_str_t *entity, json_t *value)
{
    ngx_str_t   base, *s;
    ngx_uint_t  i, ok;

    if (ngx_http_tent_json_str(value, "t", &base) != NGX_OK) {
        return 0;
    }

    if (!ngx_http_tent_post_visible(ctx, &base,
                                    json_is_true(json_object_get(value, "p")),
                                    ngx_http_tent_post_original(ctx, entity),
                                    json_object_get(value, "e"),
                                    json_object_get(value, "g")))
    {
        return 0;
    }

    if (q->bases.nelts) {
        s = q->bases.elts;
        ok = 0;

        for (i = 0; i < q->bases.nelts && !ok; i++) {
            ok = (s[i].len == base.len
                  && ngx_strncmp(s[i].data, base.data, base.len) == 0);
        }

        if (!ok) {
            return 0;
        }
    }

    if (q->entities.nelts) {
        s = q->entities.elts;
        ok = 0;

        for (i = 0; i < q->entities.nelts && !ok; i++) {
            ok = (s[i].len == entity->len
                  && ngx_strncmp(s[i].data, entity->data, entity->len) == 0);
        }

        if (!ok) {
            return 0;
        }
    }

    if (q->mentioned_entity.len
        && !ngx_http_tent_json_has(json_object_get(value, "m"),
                                   &q->mentioned_entity, NULL))
    {
        return 0;
    }

    if (q->mentioned_post.len
        && !ngx_http_tent_json_has(json_object_get(value, "mp"), NULL,
                                   &q->mentioned_post))
    {
        return 0;
    }

    /* /posts/:id/mentions: public posts that mention exactly that post */

    if (q->mentions_of.len
        && (!json_is_true(json_object_get(value, "p"))
            || !ngx_http_tent_json_has(json_object_get(value, "mp"),
                                       &ctx->entity, &q->mentions_of)))
    {
        return 0;
    }

    return 1;
}


static ngx_int_t
ngx_http_tent_query_batch(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    u_char                    *p;
    json_t                    *value;
    uint64_t                   seconds;
    ngx_int_t                  rc, status;
    ngx_str_t                  key, v, entity, id, last, *pk;
    ngx_uint_t                 n, done;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_query_t     *q;
    ngx_http_tent_store_op_t  *mget;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    q = ctx->state;

    n = 0;
    done = 0;
    ngx_str_null(&last);

    while ((rc = ngx_http_tent_store_next(op, &key, &v)) == NGX_OK) {
        n++;
        last = key;

        if (done) {
            continue;
        }

        if (ngx_http_tent_index_parse(&ctx->entity, &key, &seconds, &entity,
                                      &id)
            != NGX_OK)
        {
            continue;
        }

        value = ngx_http_tent_json_parse(&v, r->connection->log);
        if (value == NULL) {
            continue;
        }

        if (ngx_http_tent_query_match(ctx, q, &entity, value)) {
            q->count++;

            if (!q->count_only) {
                pk = ngx_array_push(&q->found);
                if (pk == NULL) {
                    json_decref(value);
                    return NGX_HTTP_INTERNAL_SERVER_ERROR;
                }

                if (ngx_http_tent_post_key(r->pool, &ctx->entity, &entity,
                                           &id, -1, pk)
                    != NGX_OK)
                {
                    json_decref(value);
                    return NGX_HTTP_INTERNAL_SERVER_ERROR;
                }

                if (q->found.nelts >= q->limit) {
                    done = 1;
                }
            }
        }

        json_decref(value);
    }

    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    q->scanned += n;

    /* more to read: the next batch starts after the last key seen */

    if (!done && n == NGX_HTTP_TENT_SCAN_BATCH
        && q->scanned < NGX_HTTP_TENT_SCAN_MAX)
    {
        if (q->desc_scan) {
            q->end = last;

        } else {
            p = ngx_pnalloc(r->pool, last.len + 1);
            if (p == NULL) {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }

            ngx_memcpy(p, last.data, last.len);
            p[last.len] = '\0';

            q->start.data = p;
            q->start.len = last.len + 1;
        }

        return ngx_http_tent_query_scan(r, ctx);
    }

    if (q->count_only) {
        return ngx_http_tent_query_reply(r, ctx, NULL);
    }

    /* the page's posts in one read */

    mget = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (mget == NULL || ngx_http_tent_store_mget(mget) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    pk = q->found.elts;

    for (n = 0; n < q->found.nelts; n++) {
        if (ngx_http_tent_store_mget_key(mget, &pk[n]) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    return ngx_http_tent_store_submit_request(r, mget,
                                              ngx_http_tent_query_fetched);
}


static ngx_int_t
ngx_http_tent_query_fetched(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                 *list, *post, *out;
    ngx_int_t               rc, status;
    ngx_str_t               value;
    ngx_uint_t              found;
    ngx_http_tent_ctx_t    *ctx;
    ngx_http_tent_query_t  *q;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    q = ctx->state;

    list = ngx_http_tent_json_own(r->pool, json_array());
    if (list == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    while ((rc = ngx_http_tent_store_next_value(op, &found, &value))
           == NGX_OK)
    {
        if (!found) {
            /* deleted between the scan and now */
            continue;
        }

        post = ngx_http_tent_json_parse(&value, r->connection->log);
        if (post == NULL) {
            continue;
        }

        if (q->mentions_of.len) {
            out = json_pack("{s:O, s:O, s:O}",
                            "entity", json_object_get(post, "entity"),
                            "post", json_object_get(post, "id"),
                            "type", json_object_get(post, "type"));

        } else {
            out = ngx_http_tent_post_render_view(r, ctx, post);
        }

        json_decref(post);

        if (out == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        if (q->reverse_result) {
            json_array_insert_new(list, 0, out);

        } else {
            json_array_append_new(list, out);
        }
    }

    if (rc == NGX_ERROR) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_query_reply(r, ctx, list);
}


/* the query string without the cursor parameters, for the Link header */

static ngx_int_t
ngx_http_tent_query_rest(ngx_http_request_t *r, ngx_str_t *rest)
{
    u_char  *p, *last, *start, *end, *dst;

    static const char  *drop[] = { "since_id=", "since_id_entity=",
                                   "before_id=", "before_id_entity=",
                                   "until_id=", "until_id_entity=", NULL };
    const char        **d;

    rest->data = ngx_pnalloc(r->pool, r->args.len + 1);
    if (rest->data == NULL) {
        return NGX_ERROR;
    }

    dst = rest->data;
    p = r->args.data;
    last = p + r->args.len;

    while (p < last) {
        start = p;
        end = ngx_strlchr(p, last, '&');
        if (end == NULL) {
            end = last;
        }

        p = end + 1;

        for (d = drop; *d; d++) {
            if ((size_t) (end - start) >= ngx_strlen(*d)
                && ngx_strncmp(start, *d, ngx_strlen(*d)) == 0)
            {
                break;
            }
        }

        if (*d || end == start) {
            continue;
        }

        /* nothing that could break out of "<...>" */

        if (ngx_strlchr(start, end, '>') || ngx_strlchr(start, end, ',')
            || ngx_strlchr(start, end, ' '))
        {
            continue;
        }

        dst = ngx_cpymem(dst, start, end - start);
        *dst++ = '&';
    }

    rest->len = dst - rest->data;

    return NGX_OK;
}


/*
 * One page cursor of the Link header, what follows "<uri?rest":
 * since_id=ID[&since_id_entity=E]>; rel="prev"
 */

static ngx_int_t
ngx_http_tent_query_tail(ngx_http_tent_ctx_t *ctx, const char *param,
    json_t *post, const char *rel, u_char **p)
{
    ngx_str_t  id, entity;

    if ((ngx_http_tent_json_str(post, "id", &id) != NGX_OK
         && ngx_http_tent_json_str(post, "post", &id) != NGX_OK)
        || ngx_http_tent_json_str(post, "entity", &entity) != NGX_OK)
    {
        return NGX_ERROR;
    }

    *p = ngx_sprintf(*p, "%s=%V", param, &id);

    if (!ngx_http_tent_post_original(ctx, &entity)) {
        *p = ngx_sprintf(*p, "&%s_entity=", param);
        *p = (u_char *) ngx_escape_uri(*p, entity.data, entity.len,
                                       NGX_ESCAPE_URI_COMPONENT);
    }

    *p = ngx_sprintf(*p, ">; rel=\"%s\"", rel);

    return NGX_OK;
}


/*
 * The page cursors, as the cache keeps them with the body:
 * "<length of the prev tail>:<prev tail><next tail>", or "" for none.
 */

static ngx_int_t
ngx_http_tent_query_tails(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_query_t *q, json_t *list, ngx_str_t *tails)
{
    u_char  *p, *prev, *next;
    size_t   len;
    json_t  *newest, *oldest;

    ngx_str_null(tails);

    if (json_array_size(list) == 0 || q->asc) {
        return NGX_OK;
    }

    newest = json_array_get(list, 0);
    oldest = json_array_get(list, json_array_size(list) - 1);

    /* escaping makes an entity at most three times as long */

    len = NGX_SIZE_T_LEN + 1
          + 2 * sizeof("before_id=&before_id_entity=>; rel=\"next\"")
          + json_string_length(json_object_get(newest, "id"))
          + json_string_length(json_object_get(newest, "post"))
          + json_string_length(json_object_get(oldest, "id"))
          + json_string_length(json_object_get(oldest, "post"))
          + 3 * json_string_length(json_object_get(newest, "entity"))
          + 3 * json_string_length(json_object_get(oldest, "entity"));

    p = ngx_pnalloc(r->pool, 2 * len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    /* the tails first, after the room for the prefix */

    prev = p + len;
    next = prev;

    if (ngx_http_tent_query_tail(ctx, "since_id", newest, "prev", &next)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    tails->data = p;
    p = ngx_sprintf(p, "%uz:", (size_t) (next - prev));

    if (json_array_size(list) >= q->limit
        && ngx_http_tent_query_tail(ctx, "before_id", oldest, "next", &next)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    p = ngx_cpymem(p, prev, next - prev);
    tails->len = p - tails->data;

    return NGX_OK;
}


/* Link: prev = newer posts, next = older ones (spec 8.2) */

static ngx_int_t
ngx_http_tent_query_link_header(ngx_http_request_t *r, ngx_str_t *tails,
    ngx_str_t **link)
{
    u_char           *p, *colon;
    size_t            len;
    ngx_int_t         n;
    ngx_str_t         rest, prev, next;
    ngx_table_elt_t  *h;

    *link = NULL;

    if (tails->len == 0) {
        return NGX_OK;
    }

    colon = ngx_strlchr(tails->data, tails->data + tails->len, ':');
    n = colon ? ngx_atoi(tails->data, colon - tails->data) : NGX_ERROR;

    if (n == NGX_ERROR
        || (size_t) n > (size_t) (tails->data + tails->len - colon - 1))
    {
        return NGX_ERROR;
    }

    prev.data = colon + 1;
    prev.len = n;
    next.data = prev.data + prev.len;
    next.len = tails->data + tails->len - next.data;

    if (ngx_http_tent_query_rest(r, &rest) != NGX_OK) {
        return NGX_ERROR;
    }

    len = 2 * (sizeof("<?") - 1 + r->uri.len + rest.len) + sizeof(", ") - 1
          + prev.len + next.len;

    h = ngx_list_push(&r->headers_out.headers);
    p = ngx_pnalloc(r->pool, len);
    if (h == NULL || p == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Link");
    h->value.data = p;

    p = ngx_sprintf(p, "<%V?%V%V", &r->uri, &rest, &prev);

    if (next.len) {
        p = ngx_sprintf(p, ", <%V?%V%V", &r->uri, &rest, &next);
    }

    h->value.len = p - h->value.data;
    *link = &h->value;

    return NGX_OK;
}


/*
 * What the cache keys a feed by: the route's path (a post's mentions
 * have its id in it) and every parameter as parsed, defaults explicit,
 * lists sorted and without repeats (the parser's first value wins, as
 * ngx_http_arg() finds it), each string length-prefixed so that no two
 * queries make one key.  Parameters the parser does not know are not
 * in it, nor is anything the parser gives no meaning (order=foo is the
 * default order).
 */

static int ngx_libc_cdecl
ngx_http_tent_query_str_cmp(const void *one, const void *two)
{
    const ngx_str_t  *a = one, *b = two;

    return ngx_memn2cmp(a->data, b->data, a->len, b->len);
}


static void
ngx_http_tent_query_set(ngx_array_t *a)
{
    ngx_str_t   *s;
    ngx_uint_t   i, n;

    if (a->nelts < 2) {
        return;
    }

    s = a->elts;

    ngx_qsort(s, a->nelts, sizeof(ngx_str_t), ngx_http_tent_query_str_cmp);

    for (i = 1, n = 1; i < a->nelts; i++) {
        if (ngx_http_tent_query_str_cmp(&s[n - 1], &s[i]) != 0) {
            s[n++] = s[i];
        }
    }

    a->nelts = n;
}


static u_char *
ngx_http_tent_query_put(u_char *p, char tag, ngx_str_t *v)
{
    p = ngx_sprintf(p, "%c%uz:", tag, v->len);

    /* an absent value has no data: nothing to copy from */

    return v->len ? ngx_cpymem(p, v->data, v->len) : p;
}


static ngx_int_t
ngx_http_tent_query_canonical(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_query_t *q, ngx_str_t *out)
{
    u_char      *p;
    size_t       len;
    ngx_str_t   *s;
    ngx_uint_t   i;

    ngx_http_tent_query_set(&q->bases);
    ngx_http_tent_query_set(&q->entities);

    /* six strings, each with a tag and its length; eight tagged numbers */

    len = ctx->api_path.len + q->mentioned_entity.len + q->mentioned_post.len
          + q->cursor_entity.len + q->cursor_id.len + q->view.len
          + 6 * (2 + NGX_SIZE_T_LEN) + 8 * (1 + NGX_INT_T_LEN);

    s = q->bases.elts;
    for (i = 0; i < q->bases.nelts; i++) {
        len += 1 + NGX_SIZE_T_LEN + 1 + s[i].len;
    }

    s = q->entities.elts;
    for (i = 0; i < q->entities.nelts; i++) {
        len += 1 + NGX_SIZE_T_LEN + 1 + s[i].len;
    }

    p = ngx_pnalloc(r->pool, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    out->data = p;

    p = ngx_http_tent_query_put(p, 'R', &ctx->api_path);
    p = ngx_sprintf(p, "L%uic%co%ui", q->limit, q->column, q->asc);
    p = ngx_sprintf(p, "S%iB%i", q->since_time, q->before_time);

    p = ngx_sprintf(p, "T%ui", q->bases.nelts);
    s = q->bases.elts;
    for (i = 0; i < q->bases.nelts; i++) {
        p = ngx_http_tent_query_put(p, ',', &s[i]);
    }

    p = ngx_sprintf(p, "E%ui", q->entities.nelts);
    s = q->entities.elts;
    for (i = 0; i < q->entities.nelts; i++) {
        p = ngx_http_tent_query_put(p, ',', &s[i]);
    }

    p = ngx_http_tent_query_put(p, 'M', &q->mentioned_entity);
    p = ngx_http_tent_query_put(p, 'P', &q->mentioned_post);
    p = ngx_sprintf(p, "C%ui", q->cursor);

    if (q->cursor != NGX_HTTP_TENT_CURSOR_NONE) {
        p = ngx_http_tent_query_put(p, 'e', &q->cursor_entity);
        p = ngx_http_tent_query_put(p, 'i', &q->cursor_id);
    }

    p = ngx_http_tent_query_put(p, 'V', &q->view);

    out->len = p - out->data;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_query_reply(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    json_t *list)
{
    u_char                    *p;
    json_t                    *count;
    ngx_str_t                  body, tails, *link;
    ngx_table_elt_t           *h;
    ngx_http_tent_query_t     *q;

    q = ctx->state;

    if (list == NULL) {
        /* a count: HEAD /posts (Count header) or /posts/count (integer) */

        if (r->method == NGX_HTTP_HEAD) {
            h = ngx_list_push(&r->headers_out.headers);
            p = ngx_pnalloc(r->pool, NGX_INT_T_LEN);
            if (h == NULL || p == NULL) {
                return NGX_HTTP_INTERNAL_SERVER_ERROR;
            }

            h->hash = 1;
            ngx_str_set(&h->key, "Count");
            h->value.data = p;
            h->value.len = ngx_sprintf(p, "%ui", q->count) - p;
        }

        count = ngx_http_tent_json_own(r->pool, json_integer(q->count));
        if (count == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        return ngx_http_tent_send_json(r, NGX_HTTP_OK, count);
    }

    if (ngx_http_tent_query_tails(r, ctx, q, list, &tails) != NGX_OK
        || ngx_http_tent_query_link_header(r, &tails, &link) != NGX_OK
        || ngx_http_tent_json_dump(r->pool, list, &body) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (q->cache) {
        q->cached.body = body;
        q->cached.extra = tails;
        ngx_http_tent_cache_put(r, &q->cached);
    }

    return ngx_http_tent_send_body(r, NGX_HTTP_OK, &body);
}


/* GET /posts/:id/versions, once the post is known visible: newest first */

ngx_int_t
ngx_http_tent_versions_list(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t               *list, *post, *out;
    ngx_int_t             status, limit;
    ngx_str_t             key, value, v;
    ngx_http_tent_ctx_t  *ctx;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);

    limit = NGX_HTTP_TENT_LIMIT_DEFAULT;

    if (ngx_http_arg(r, (u_char *) "limit", 5, &v) == NGX_OK) {
        limit = ngx_atoi(v.data, v.len);
        if (limit <= 0) {
            return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                            "Invalid query parameter");
        }

        limit = ngx_min(limit, NGX_HTTP_TENT_LIMIT_MAX);
    }

    list = ngx_http_tent_json_own(r->pool, json_array());
    if (list == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK
           && (ngx_int_t) json_array_size(list) < limit)
    {
        post = ngx_http_tent_json_parse(&value, r->connection->log);
        if (post == NULL) {
            continue;
        }

        out = ngx_http_tent_post_render_view(r, ctx, post);
        json_decref(post);

        if (out) {
            json_array_append_new(list, out);
        }
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, list);
}
