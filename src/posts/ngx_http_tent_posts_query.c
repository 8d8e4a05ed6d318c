
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * GET/HEAD /posts, /posts/count, /posts/:id/mentions (spec 7.6, 8.2):
 * the query parsed and checked (every argument UTF-8, the sort column,
 * the limit, the filters, since_time and before_time as the column's
 * range), the cursor post placed in the column (an unknown or invisible
 * one is an empty page), and the public feed's cache key.  The scan
 * itself is in ngx_http_tent_posts_feed.c.
 */


#define NGX_HTTP_TENT_POSTS_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_cache.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_posts_private.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_CURSOR_NONE     0
#define NGX_HTTP_TENT_CURSOR_SINCE    1
#define NGX_HTTP_TENT_CURSOR_BEFORE   2
#define NGX_HTTP_TENT_CURSOR_UNTIL    3


#if (NGX_DEBUG)
static const char  *ngx_http_tent_query_cursors[] = {
    "no cursor", "since_id", "before_id", "until_id"
};
#endif


static ngx_int_t ngx_http_tent_query_cursor(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_query_canonical(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_query_t *q, ngx_str_t *out);


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

    q->column = NGX_HTTP_TENT_INDEX_RECEIVED;
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
            q->column = NGX_HTTP_TENT_INDEX_PUBLISHED;

        } else if (v.len == 10 && ngx_strncmp(v.data, "updated_at", 10) == 0)
        {
            q->column = NGX_HTTP_TENT_INDEX_UPDATED;

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

    if (ngx_http_tent_index_range(r->pool, &ctx->entity, q->column,
                                  &q->start, &q->end)
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
        return ngx_http_tent_internal_error(r, "allocating the query");
    }

    ctx->state = q;
    q->count_only = count_only;

    if (mentions_of) {
        q->mentions_of = *mentions_of;
    }

    rc = ngx_http_tent_query_parse(r, ctx, q);

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "parsing the query");
    }

    if (rc == NGX_DECLINED) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                        "Invalid query parameter");
    }

    ngx_log_debug7(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent feed: parsed: column %ui, limit %ui, %s, %s, "
                   "%ui types, %ui entities%s", q->column, q->limit,
                   q->asc ? "oldest first" : "newest first",
                   ngx_http_tent_query_cursors[q->cursor],
                   q->bases.nelts, q->entities.nelts,
                   count_only ? ", a count" : "");

    /*
     * The public feed, as anonymous readers get it, from the cache: by
     * the query as parsed, not as spelled.  The entry has the body and
     * the Link's page cursors; the Link itself repeats the request's own
     * parameters, so it is made for each request.
     */

    if (!count_only) {
        if (ngx_http_tent_query_canonical(r, ctx, q, &what) != NGX_OK) {
            return ngx_http_tent_internal_error(r,
                       "making the feed's cache key");
        }

        switch (ngx_http_tent_cache_get(r, ctx, &what, &q->cached)) {

        case NGX_OK:
            if (ngx_http_tent_query_link_header(r, &q->cached.extra, &link)
                != NGX_OK)
            {
                return ngx_http_tent_internal_error(r,
                           "making the cached page's Link");
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
        return ngx_http_tent_internal_error(r,
                   "building the read of the cursor post");
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
    json_t                 *post, *json;
    uint64_t                seconds, ms;
    ngx_int_t               rc;
    ngx_str_t               value, key;
    ngx_http_tent_ctx_t    *ctx;
    ngx_http_tent_query_t  *q;

    static const char  *fields[] = { "received_at", "published_at",
                                     "updated_at" };

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    q = ctx->state;

    post = NULL;

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_store_value(op, &value);

        post = ngx_http_tent_json_load(r, &value);
        if (post == NULL) {
            return ngx_http_tent_internal_error(r, "reading the cursor post");
        }
    }

    /*
     * An unknown cursor is an empty page, not an error (as tentd).  So is
     * one the principal may not see: placing the page there would tell
     * that the post exists, and when it was written.
     */

    if (post == NULL || !ngx_http_tent_post_record_visible(ctx, post)) {

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent feed: cursor post \"%V\" unknown or not "
                       "visible: an empty page", &q->cursor_id);

        if (q->count_only) {
            return ngx_http_tent_query_reply(r, ctx, NULL);
        }

        json = ngx_http_tent_json_own(r->pool, json_array());
        if (json == NULL) {
            return ngx_http_tent_internal_error(r, "making an empty page");
        }

        return ngx_http_tent_query_reply(r, ctx, json);
    }

    seconds = (uint64_t) json_integer_value(json_object_get(post,
                  fields[q->column]));
    ms = (uint64_t) json_integer_value(json_object_get(post, "rus"));

    if (ngx_http_tent_index_key(r->pool, &ctx->entity, q->column, seconds,
                                ms, &q->cursor_entity, &q->cursor_id, 3,
                                &key)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "building the cursor's index key");
    }

    if (q->cursor == NGX_HTTP_TENT_CURSOR_BEFORE) {
        /* strictly before: the cursor key is the exclusive end */
        if (ngx_memn2cmp(key.data, q->end.data, key.len, q->end.len) < 0) {
            q->end = key;
        }

        return ngx_http_tent_query_scan(r, ctx);
    }

    /* strictly after: from the smallest key above it */

    if (ngx_http_tent_key_after(r->pool, &key, &key) != NGX_OK) {
        return ngx_http_tent_internal_error(r,
                   "building the key after the cursor");
    }

    if (ngx_memn2cmp(key.data, q->start.data, key.len, q->start.len) > 0) {
        q->start = key;
    }

    return ngx_http_tent_query_scan(r, ctx);
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
    p = ngx_sprintf(p, "L%uic%uio%ui", q->limit, q->column, q->asc);
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
