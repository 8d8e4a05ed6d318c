
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Lists of followers and followings, paginated: one iterator scan from
 * a cursor id, hidden rows skipped batch after batch, prev/next Link
 * headers.  Apps are listed by the same code (ngx_http_tent_list_table()),
 * in the order of their ids, with hooks of their own.
 */


#define NGX_HTTP_TENT_RELATIONS_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_relations_private.h"
#include "ngx_http_tent_store.h"


static ngx_int_t ngx_http_tent_relations_listed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_relations_scan(ngx_http_request_t *r,
    ngx_http_tent_relations_state_t *st);


/*
 * GET and HEAD /followers, /followings and their /count: newest first,
 * since_id / before_id / until_id cursors, limit (50, at most 200),
 * order=asc, entity=; prev/next Link headers, Count on HEAD.  The page
 * next to a cursor in either order: newest first, since_id is scanned
 * up from it; oldest first (order=asc), before_id is scanned down from
 * it; then turned round.  "next" only when an item follows the page
 * ("prev" only when one comes before it, on a page turned round).
 */

static ngx_int_t
ngx_http_tent_relations_cursor(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_relation_t *rel, const char *name, ngx_uint_t after,
    ngx_str_t *key)
{
    ngx_str_t   v;

    if (ngx_http_arg(r, (u_char *) name, ngx_strlen(name), &v) != NGX_OK
        || (rel->id_valid ? rel->id_valid(&v)
                          : ngx_http_tent_relation_id_valid(&v))
           != NGX_OK)
    {
        return NGX_DECLINED;
    }

    if (ngx_http_tent_key(r->pool, &ctx->entity, rel->table, &v, key)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (after) {
        return ngx_http_tent_key_after(r->pool, key, key);
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_relations_list(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_relation_t *rel)
{
    return ngx_http_tent_list_table(r, ctx, rel, NULL, NULL);
}


/*
 * The list of any table of records with an "id" (rel->table), "data"
 * for rel->item, which renders or skips each record; "args" (escaped,
 * "&name=value...") go on in the prev and next links.
 */

ngx_int_t
ngx_http_tent_list_table(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_relation_t *rel, void *data, ngx_str_t *args)
{
    u_char                           *dst, *src;
    ngx_int_t                         rc, limit;
    ngx_str_t                         start, end, key, v;
    ngx_uint_t                        count, since, before;
    ngx_http_tent_relations_state_t  *st;

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_relations_state_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the list state");
    }

    st->rel = rel;
    st->data = data;
    ctx->state = st;

    if (args) {
        st->args = *args;
    }

    count = ctx->api_path.len >= 6
            && ngx_strncmp(ctx->api_path.data + ctx->api_path.len - 6,
                           "/count", 6) == 0;

    st->count = count || r->method == NGX_HTTP_HEAD;

    limit = 50;

    if (ngx_http_arg(r, (u_char *) "limit", 5, &v) == NGX_OK) {
        limit = ngx_atoi(v.data, v.len);

        if (limit <= 0) {
            return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                            "Invalid limit");
        }

        limit = ngx_min(limit, 200);
    }

    st->limit = limit;
    st->reverse = 1;

    if (ngx_http_arg(r, (u_char *) "order", 5, &v) == NGX_OK
        && v.len == 3 && ngx_strncasecmp(v.data, (u_char *) "asc", 3) == 0)
    {
        st->reverse = 0;
    }

    if (ngx_http_arg(r, (u_char *) "entity", 6, &v) == NGX_OK && v.len) {
        st->entity.data = ngx_pnalloc(r->pool, v.len);
        if (st->entity.data == NULL) {
            return ngx_http_tent_internal_error(r,
                                                "unescaping the entity filter");
        }

        dst = st->entity.data;
        src = v.data;
        ngx_unescape_uri(&dst, &src, v.len, 0);
        st->entity.len = dst - st->entity.data;

        /* any spelling finds it: records keep the canonical one */

        rc = ngx_http_tent_entity_canonical(r->pool, &st->entity, &v);

        if (rc == NGX_ERROR) {
            return ngx_http_tent_internal_error(r,
                                                "spelling the entity filter");
        }

        if (rc == NGX_OK) {
            st->entity = v;
        }
    }

    if (ngx_http_tent_key_range(r->pool, &ctx->entity, rel->table, &start,
                                &end)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the list's range");
    }

    since = 0;
    before = 0;

    if (!st->count) {
        /* since_id and until_id: newer than; before_id: older than */

        rc = ngx_http_tent_relations_cursor(r, ctx, rel, "since_id", 1,
                                            &key);
        if (rc == NGX_ERROR) {
            return ngx_http_tent_internal_error(r,
                                                "building the since_id key");
        }

        if (rc == NGX_OK) {
            start = key;
            since = 1;
        }

        rc = ngx_http_tent_relations_cursor(r, ctx, rel, "until_id", 1,
                                            &key);
        if (rc == NGX_ERROR) {
            return ngx_http_tent_internal_error(r,
                                                "building the until_id key");
        }

        if (rc == NGX_OK) {
            start = key;
        }

        rc = ngx_http_tent_relations_cursor(r, ctx, rel, "before_id", 0,
                                            &key);
        if (rc == NGX_ERROR) {
            return ngx_http_tent_internal_error(r,
                                                "building the before_id key");
        }

        if (rc == NGX_OK) {
            end = key;
            before = 1;
        }
    }

    /*
     * The page next to the cursor: newest first from since_id, or
     * oldest first from before_id, is scanned towards the cursor's
     * other side, then turned round
     */

    st->backward = st->reverse ? !since : (before && !since);
    st->flip = (st->backward != st->reverse);

    st->start = start;
    st->end = end;

    st->list = ngx_http_tent_json_own(r->pool, json_array());
    if (st->list == NULL) {
        return ngx_http_tent_internal_error(r, "building the list");
    }

    return ngx_http_tent_relations_scan(r, st);
}


/* a batch of rows; hidden ones are skipped after it, so batches go on */

static ngx_int_t
ngx_http_tent_relations_scan(ngx_http_request_t *r,
    ngx_http_tent_relations_state_t *st)
{
    ngx_http_tent_store_op_t  *op;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_scan(op, &st->start, &st->end,
                                    NGX_HTTP_TENT_RELATIONS_SCAN,
                                    st->backward)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the list's scan");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_relations_listed);
}


static ngx_int_t
ngx_http_tent_relations_link(ngx_http_request_t *r,
    ngx_http_tent_relations_state_t *st)
{
    u_char           *p;
    size_t            len;
    ngx_str_t         first, last, order;
    ngx_table_elt_t  *h;

    if (json_array_size(st->list) == 0
        || ngx_http_tent_json_str(json_array_get(st->list, 0), "id", &first)
           != NGX_OK
        || ngx_http_tent_json_str(json_array_get(st->list,
                                            json_array_size(st->list) - 1),
                                  "id", &last)
           != NGX_OK)
    {
        return NGX_OK;
    }

    /* newest first: prev is newer (since_id); oldest first: older */

    if (st->reverse) {
        ngx_str_null(&order);

    } else {
        ngx_str_set(&order, "order=asc&");
    }

    len = 2 * (r->uri.len + sizeof("<?order=asc&before_id=&limit=>; "
                                   "rel=\"prev\", ")
               + ngx_max(first.len, last.len) + NGX_INT_T_LEN
               + st->args.len);

    h = ngx_list_push(&r->headers_out.headers);
    p = ngx_pnalloc(r->pool, len);
    if (h == NULL || p == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Link");
    h->value.data = p;

    /*
     * "more" is about the side scanned away from the cursor: past "next"
     * on a page read in order, past "prev" on one read turned round
     * (reached through prev), whose next page is the one it came from
     */

    if (!st->flip || st->more) {
        p = ngx_sprintf(p, "<%V?%V%s=%V&limit=%ui%V>; rel=\"prev\"",
                        &r->uri, &order,
                        st->reverse ? "since_id" : "before_id",
                        &first, st->limit, &st->args);
    }

    if (st->flip || st->more) {
        p = ngx_sprintf(p, "%s<%V?%V%s=%V&limit=%ui%V>; rel=\"next\"",
                        p == h->value.data ? "" : ", ",
                        &r->uri, &order,
                        st->reverse ? "before_id" : "since_id",
                        &last, st->limit, &st->args);
    }

    h->value.len = p - h->value.data;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_relations_listed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    u_char                           *p;
    json_t                           *list, *record, *out, *count;
    ngx_int_t                         rc, shown;
    ngx_str_t                         key, value, entity, last;
    ngx_uint_t                        n, i, rows;
    ngx_table_elt_t                  *h;
    ngx_http_tent_ctx_t              *ctx;
    ngx_http_tent_relations_state_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    list = st->list;
    n = st->n;
    rows = 0;
    last.len = 0;

    while ((rc = ngx_http_tent_store_next(op, &key, &value)) == NGX_OK) {

        rows++;
        last = key;

        record = ngx_http_tent_json_parse(&value, r->connection->log);
        if (record == NULL) {
            continue;
        }

        if (st->rel->item) {
            out = NULL;
            shown = st->rel->item(r, ctx, record, st->data,
                                  st->count ? NULL : &out);
            json_decref(record);

            if (shown == NGX_ERROR) {
                return ngx_http_tent_internal_error(r,
                                                    "rendering a list item");
            }

            if (shown == NGX_DECLINED) {
                continue;
            }

            if (out && n >= st->limit) {
                /* one past the page: there is a next one */
                json_decref(out);
                st->more = 1;
                break;
            }

            n++;

            if (out) {
                json_array_append_new(list, out);
            }

            continue;
        }

        if (!ngx_http_tent_relation_visible(ctx, st->rel, record)
            || (st->entity.len
                && (ngx_http_tent_json_str(record, "entity", &entity)
                    != NGX_OK
                    || !ngx_http_tent_entity_eq(&entity, &st->entity))))
        {
            json_decref(record);
            continue;
        }

        if (st->count) {
            n++;
            json_decref(record);
            continue;
        }

        if (n >= st->limit) {
            /* one past the page: there is a next one */
            json_decref(record);
            st->more = 1;
            break;
        }

        n++;

        out = ngx_http_tent_relation_render(r, ctx, st->rel, record);
        json_decref(record);

        if (out == NULL) {
            return ngx_http_tent_internal_error(r,
                                                "rendering a relationship");
        }

        json_array_append_new(list, out);
    }

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "reading the list's rows");
    }

    /*
     * Rows and room left: the next batch, after the last row.  Not only
     * after a full batch: the store also ends a scan at a byte budget
     * (rows with big profiles), so only an empty scan is the end.
     */

    if (rows && !st->more) {
        st->n = n;

        if (st->backward) {
            st->end.data = ngx_pstrdup(r->pool, &last);
            st->end.len = last.len;

            if (st->end.data == NULL) {
                return ngx_http_tent_internal_error(r,
                                                "keeping the list's cursor");
            }

        } else if (ngx_http_tent_key_after(r->pool, &last, &st->start)
                   != NGX_OK)
        {
            return ngx_http_tent_internal_error(r,
                                                "keeping the list's cursor");
        }

        return ngx_http_tent_relations_scan(r, st);
    }

    if (st->count) {
        if (r->method == NGX_HTTP_HEAD) {
            h = ngx_list_push(&r->headers_out.headers);
            p = ngx_pnalloc(r->pool, NGX_INT_T_LEN);
            if (h == NULL || p == NULL) {
                return ngx_http_tent_internal_error(r,
                                                    "adding the Count header");
            }

            h->hash = 1;
            ngx_str_set(&h->key, "Count");
            h->value.data = p;
            h->value.len = ngx_sprintf(p, "%ui", n) - p;
        }

        count = ngx_http_tent_json_own(r->pool, json_integer(n));
        if (count == NULL) {
            return ngx_http_tent_internal_error(r, "building the count");
        }

        return ngx_http_tent_send_json(r, NGX_HTTP_OK, count);
    }

    if (st->flip) {
        /* scanned from the cursor against the order: turned round */

        n = json_array_size(list);

        for (i = 0; i < n / 2; i++) {
            record = json_incref(json_array_get(list, i));
            json_array_set(list, i, json_array_get(list, n - 1 - i));
            json_array_set_new(list, n - 1 - i, record);
        }
    }

    if (ngx_http_tent_relations_link(r, st) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "adding the Link header");
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, list);
}
