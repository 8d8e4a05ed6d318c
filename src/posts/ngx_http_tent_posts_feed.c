
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The feed: each post version has a row in three index columns
 * (received_at, published_at, updated_at) holding what a scan filters
 * on, so that a feed is read without reading the posts.  A query scans
 * one column in batches, keeps the rows the principal may see and the
 * query asks for, reads the page's posts with one multi-get and answers
 * the page (with its Link cursors) or the count; and
 * GET /posts/:id/versions lists a post's versions.
 */


#define NGX_HTTP_TENT_POSTS_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_blocks.h"
#include "ngx_http_tent_cache.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_posts_private.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_SCAN_BATCH      512
#define NGX_HTTP_TENT_SCAN_MAX        1000000


static ngx_int_t ngx_http_tent_query_batch(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_query_fetched(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);




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
    return ngx_http_tent_post_index_rows(r->pool, &ctx->entity, op, post,
                                         del);
}


/* the same without a request: same-node delivery writes them too */

ngx_int_t
ngx_http_tent_post_index_rows(ngx_pool_t *pool, ngx_str_t *owner,
    ngx_http_tent_store_op_t *op, json_t *post, ngx_uint_t del)
{
    return ngx_http_tent_post_index_ref_rows(pool, owner, op, post, NULL,
                                             del);
}


/* a post's index value as its three rows hold it */

ngx_int_t
ngx_http_tent_post_index_dump(ngx_pool_t *pool, json_t *post, ngx_str_t *v)
{
    json_t  *value;

    value = ngx_http_tent_post_index_value(post);

    if (value == NULL
        || ngx_http_tent_json_cleanup(pool, value) != NGX_OK
        || ngx_http_tent_json_dump(pool, value, v) != NGX_OK)
    {
        json_decref(value);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * With "given", a same-node reference's value: the index value with
 * where the post is ("l", "f") and when the recipient got it ("ra"), so
 * that a feed read finds it (ngx_http_tent_post_ref.c); made once a batch
 * by same-node delivery, not once a recipient
 */

ngx_int_t
ngx_http_tent_post_index_ref_rows(ngx_pool_t *pool, ngx_str_t *owner,
    ngx_http_tent_store_op_t *op, json_t *post, ngx_str_t *given,
    ngx_uint_t del)
{
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

    ngx_str_null(&v);

    if (given) {
        v = *given;

    } else if (!del && ngx_http_tent_post_index_dump(pool, post, &v) != NGX_OK)
    {
        return NGX_ERROR;
    }

    for (i = 0; i < 3; i++) {
        seconds = (uint64_t) json_integer_value(json_object_get(post,
                                                                fields[i]));

        if (ngx_http_tent_index_key(pool, owner,
                                    i, seconds,
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


ngx_int_t
ngx_http_tent_query_scan(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_http_tent_query_t     *q;
    ngx_http_tent_store_op_t  *op;

    q = ctx->state;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent feed: scan %s, %ui rows read before",
                   q->desc_scan ? "down" : "up", q->scanned);

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_scan(op, &q->start, &q->end,
                                    NGX_HTTP_TENT_SCAN_BATCH, q->desc_scan)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the scan of the feed");
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

    /* a blocked entity's posts, kept from before, leave the feed */

    if (ngx_http_tent_blocks_has(ctx->blocks, entity)) {
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
    json_t                    *value;
    uint64_t                   seconds;
    ngx_int_t                  rc;
    ngx_str_t                  key, v, entity, id, last;
    ngx_uint_t                 n, done, ref;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_query_t     *q;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

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

            /* a same-node reference counts once its post is read */

            ref = (json_object_get(value, "l") != NULL);

            if (!ref || !q->count_only) {
                q->count++;
            }

            if (!q->count_only || ref) {
                if (ngx_http_tent_query_keep(r, ctx, q, value, &entity, &id)
                    != NGX_OK)
                {
                    json_decref(value);
                    return ngx_http_tent_internal_error(r,
                               "keeping a row of the page");
                }

                if (!q->count_only && q->found.nelts >= q->limit) {
                    done = 1;
                }
            }
        }

        json_decref(value);
    }

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "reading the scanned rows");
    }

    q->scanned += n;

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent feed: %ui rows scanned, %ui kept in all, "
                   "%ui on the page%s", n, q->count, q->found.nelts,
                   done ? ": the page is full" : "");

    /*
     * More to read: the next batch starts after the last key seen.  Any
     * rows, not only a full batch: the store also ends a scan at a byte
     * budget (index rows of posts naming many mentions), so only an
     * empty scan is the end.
     */

    q->more = 0;

    if (!done && n > 0
        && q->scanned < NGX_HTTP_TENT_SCAN_MAX)
    {
        if (q->desc_scan) {
            q->end = last;

        } else if (ngx_http_tent_key_after(r->pool, &last, &q->start)
                   != NGX_OK)
        {
            return ngx_http_tent_internal_error(r,
                       "building the key after the batch");
        }

        q->more = 1;
    }

    if (q->count_only) {

        /* the batch's references: their posts read, then on */

        if (q->found.nelts) {
            return ngx_http_tent_query_read(r, q,
                                            ngx_http_tent_query_counted);
        }

        return q->more ? ngx_http_tent_query_scan(r, ctx)
                       : ngx_http_tent_query_reply(r, ctx, NULL);
    }

    if (q->more) {
        return ngx_http_tent_query_scan(r, ctx);
    }

    /* the page's posts in one read */

    return ngx_http_tent_query_read(r, q, ngx_http_tent_query_fetched);
}


static ngx_int_t
ngx_http_tent_query_fetched(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                 *list, *post, *out;
    ngx_int_t               rc;
    ngx_uint_t              n, ref;
    ngx_http_tent_ctx_t    *ctx;
    ngx_http_tent_query_t  *q;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    q = ctx->state;

    list = ngx_http_tent_json_own(r->pool, json_array());
    if (list == NULL) {
        return ngx_http_tent_internal_error(r, "making the page");
    }

    ref = 0;
    rc = NGX_OK;

    for (n = 0; n < q->found.nelts; n++) {
        post = ngx_http_tent_query_post(r, ctx, op, n, &ref, &rc);

        if (rc != NGX_OK) {
            rc = NGX_ERROR;
            break;
        }

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
            return ngx_http_tent_internal_error(r,
                       "rendering a post of the page");
        }

        if (q->reverse_result) {
            json_array_insert_new(list, 0, out);

        } else {
            json_array_append_new(list, out);
        }
    }

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "reading the page's posts");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent feed: page read: %uz of %ui posts",
                   json_array_size(list), q->found.nelts);

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

ngx_int_t
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


ngx_int_t
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
                return ngx_http_tent_internal_error(r,
                           "setting the Count header");
            }

            h->hash = 1;
            ngx_str_set(&h->key, "Count");
            h->value.data = p;
            h->value.len = ngx_sprintf(p, "%ui", q->count) - p;
        }

        count = ngx_http_tent_json_own(r->pool, json_integer(q->count));
        if (count == NULL) {
            return ngx_http_tent_internal_error(r, "making the count");
        }

        return ngx_http_tent_send_json(r, NGX_HTTP_OK, count);
    }

    if (ngx_http_tent_query_tails(r, ctx, q, list, &tails) != NGX_OK
        || ngx_http_tent_query_link_header(r, &tails, &link) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "making the page's Link");
    }

    if (ngx_http_tent_json_dump(r->pool, list, &body) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "writing the page as JSON");
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
    ngx_int_t             rc, limit;
    ngx_str_t             key, value, v;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }


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
        return ngx_http_tent_internal_error(r, "making the list of versions");
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
