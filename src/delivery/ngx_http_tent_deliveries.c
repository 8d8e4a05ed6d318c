
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * GET and HEAD /posts/:id/deliveries: how far one of our posts got, for
 * the author's apps (read_posts, the post's type).  The delivery engine
 * keeps one record per job (ngx_http_tent_delivery_status.c); this reads
 * the post (it must be ours and visible to the app), counts the records
 * of its version (at most NGX_HTTP_TENT_DELIVERIES_COUNT of them) and
 * lists a page of them, newest recipient first, with Link headers.
 */


#define NGX_HTTP_TENT_POSTS_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_posts_private.h"
#include "ngx_http_tent_store.h"


/* records counted per request: beyond, "counts_complete" is false */
#define NGX_HTTP_TENT_DELIVERIES_COUNT  10000

/* a cursor: a recipient id, at most "mE" and an entity URL */
#define NGX_HTTP_TENT_DELIVERIES_CURSOR  (NGX_HTTP_TENT_ENTITY_MAX + 2)


typedef struct {
    ngx_str_t                       id;
    ngx_int_t                       version;     /* asked for; -1 */
    ngx_uint_t                      limit;
    ngx_str_t                       since;
    ngx_str_t                       before;
    ngx_str_t                       start;       /* the version's range */
    ngx_str_t                       end;
    json_t                         *counts;
    ngx_uint_t                      complete;
} ngx_http_tent_deliveries_t;


static ngx_int_t ngx_http_tent_deliveries_arg(ngx_http_request_t *r,
    const char *name, ngx_str_t *value);
static ngx_int_t ngx_http_tent_deliveries_post(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_deliveries_counted(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_deliveries_page(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_deliveries_link(ngx_http_request_t *r,
    ngx_http_tent_deliveries_t *st, json_t *list);


/*
 * A query argument, percent-decoded: NGX_DECLINED when absent, NGX_ABORT
 * when it is not a value this route takes (empty, a NUL or a control
 * byte, too long).
 */

static ngx_int_t
ngx_http_tent_deliveries_arg(ngx_http_request_t *r, const char *name,
    ngx_str_t *value)
{
    u_char     *dst, *src, *p;
    ngx_str_t   raw;

    if (ngx_http_arg(r, (u_char *) name, ngx_strlen(name), &raw) != NGX_OK) {
        return NGX_DECLINED;
    }

    if (raw.len == 0 || raw.len > 3 * NGX_HTTP_TENT_DELIVERIES_CURSOR) {
        return NGX_ABORT;
    }

    value->data = ngx_pnalloc(r->pool, raw.len);
    if (value->data == NULL) {
        return NGX_ERROR;
    }

    dst = value->data;
    src = raw.data;
    ngx_unescape_uri(&dst, &src, raw.len, 0);
    value->len = dst - value->data;

    if (value->len == 0 || value->len > NGX_HTTP_TENT_DELIVERIES_CURSOR) {
        return NGX_ABORT;
    }

    for (p = value->data; p < dst; p++) {
        if (*p <= 0x20 || *p >= 0x7f) {
            return NGX_ABORT;
        }
    }

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_post_deliveries(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_int_t                    rc, n;
    ngx_str_t                    v, key;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_deliveries_t  *st;

    /*
     * The author's apps only, before anything is read: the answer to
     * anyone else says nothing of the post or of whom it went to.  The
     * list names private followers and followings, which an app without
     * read_followers or read_followings may not see on their own routes.
     */

    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_POSTS
                                       |NGX_HTTP_TENT_READ_FOLLOWERS
                                       |NGX_HTTP_TENT_READ_FOLLOWINGS))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_deliveries_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r,
                                            "allocating the deliveries' state");
    }

    ctx->state = st;
    st->id = ctx->params[0];

    if (ngx_http_tent_token_valid(&st->id, 64) != NGX_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    st->limit = 50;
    st->version = -1;

    rc = ngx_http_tent_deliveries_arg(r, "limit", &v);

    if (rc == NGX_OK) {
        n = ngx_atoi(v.data, v.len);

        if (n <= 0) {
            return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                            "Invalid limit");
        }

        st->limit = ngx_min(n, 200);

    } else if (rc == NGX_ABORT) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                        "Invalid limit");
    }

    rc = ngx_http_tent_deliveries_arg(r, "version", &v);

    if (rc == NGX_OK) {
        st->version = ngx_atoi(v.data, v.len);
    }

    if (rc == NGX_ABORT
        || (rc == NGX_OK && (st->version <= 0 || st->version > 0x7fffffff)))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                        "Invalid version");
    }

    rc = ngx_http_tent_deliveries_arg(r, "since_id", &st->since);

    if (rc == NGX_DECLINED) {
        st->since.len = 0;
        rc = ngx_http_tent_deliveries_arg(r, "before_id", &st->before);

        if (rc == NGX_DECLINED) {
            st->before.len = 0;
            rc = NGX_OK;
        }
    }

    if (rc == NGX_ABORT) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                        "Invalid cursor");
    }

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "reading the query");
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent posts: deliveries of \"%V\" (version %i): limit "
                   "%ui, cursor \"%V\"", &st->id, st->version, st->limit,
                   st->since.len ? &st->since : &st->before);

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &ctx->entity,
                                  &st->id, st->version, &key)
           != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the read of the post");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_deliveries_post);
}


/* the post: ours, the app's type, visible to it; then the count */

static ngx_int_t
ngx_http_tent_deliveries_post(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                      *post;
    ngx_int_t                    status, version;
    ngx_str_t                    value, type;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_store_op_t    *scan;
    ngx_http_tent_deliveries_t  *st;

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
        return ngx_http_tent_internal_error(r, "reading the stored post");
    }

    /* what the app may not read in full does not exist for it */

    if (ngx_http_tent_json_str(post, "type", &type) != NGX_OK
        || !ngx_http_tent_post_record_visible(ctx, post)
        || !ngx_http_tent_type_allowed(json_object_get(
                                           ctx->principal.credential,
                                           "post_types"),
                                       &type))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    version = json_integer_value(json_object_get(post, "version"));
    if (version <= 0 || version >= 0x7fffffff) {
        return ngx_http_tent_internal_error(r, "reading the post's version");
    }

    st->version = version;

    scan = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (scan == NULL
        || ngx_http_tent_delivery_key(r->pool, &ctx->entity, &st->id,
                                      (uint32_t) version, NULL, &st->start)
           != NGX_OK
        || ngx_http_tent_delivery_key(r->pool, &ctx->entity, &st->id,
                                      (uint32_t) version + 1, NULL, &st->end)
           != NGX_OK
        || ngx_http_tent_store_scan(scan, &st->start, &st->end,
                                    NGX_HTTP_TENT_DELIVERIES_COUNT, 0)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                                            "building the deliveries' count");
    }

    return ngx_http_tent_store_submit_request(r, scan,
                                              ngx_http_tent_deliveries_counted);
}


static ngx_int_t
ngx_http_tent_deliveries_counted(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                      *record, *c;
    ngx_int_t                    status;
    ngx_str_t                    key, value, state, start, end;
    const char                  *name;
    json_t                      *v;
    ngx_uint_t                   rows;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_store_op_t    *scan;
    ngx_http_tent_deliveries_t  *st;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    st->counts = ngx_http_tent_json_own(r->pool,
                     json_pack("{s:i, s:i, s:i, s:i}", "delivered", 0,
                               "pending", 0, "retrying", 0, "failed", 0));
    if (st->counts == NULL) {
        return ngx_http_tent_internal_error(r, "building the counts");
    }

    rows = 0;

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        rows++;

        record = ngx_http_tent_delivery_status_record(&value,
                                                      r->connection->log);

        if (record != NULL
            && ngx_http_tent_json_str(record, "state", &state) == NGX_OK)
        {
            c = NULL;

            json_object_foreach(st->counts, name, v) {
                if (ngx_strlen(name) == state.len
                    && ngx_strncmp(name, state.data, state.len) == 0)
                {
                    c = v;
                }
            }

            if (c) {
                json_integer_set(c, json_integer_value(c) + 1);
            }
        }

        json_decref(record);
    }

    st->complete = rows < NGX_HTTP_TENT_DELIVERIES_COUNT;

    /*
     * The page: newest recipient first, below before_id; or the oldest
     * above since_id, turned round.
     */

    start = st->start;
    end = st->end;

    if (st->since.len
        && (ngx_http_tent_delivery_key(r->pool, &ctx->entity, &st->id,
                                       (uint32_t) st->version, &st->since,
                                       &key)
            != NGX_OK
            || ngx_http_tent_key_after(r->pool, &key, &start) != NGX_OK))
    {
        return ngx_http_tent_internal_error(r, "building the since_id key");
    }

    if (st->before.len
        && ngx_http_tent_delivery_key(r->pool, &ctx->entity, &st->id,
                                      (uint32_t) st->version, &st->before,
                                      &end)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the before_id key");
    }

    scan = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (scan == NULL
        || ngx_http_tent_store_scan(scan, &start, &end, st->limit,
                                    st->since.len == 0)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the deliveries' scan");
    }

    return ngx_http_tent_store_submit_request(r, scan,
                                              ngx_http_tent_deliveries_page);
}


static ngx_int_t
ngx_http_tent_deliveries_page(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                      *list, *record, *out, *id;
    ngx_int_t                    status;
    ngx_str_t                    key, value, rest, rid;
    ngx_uint_t                   i, n;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_deliveries_t  *st;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    list = json_array();
    out = ngx_http_tent_json_own(r->pool,
                                 json_pack("{s:O, s:b, s:o}",
                                           "counts", st->counts,
                                           "counts_complete",
                                           (int) st->complete,
                                           "deliveries", list));
    if (out == NULL) {
        return ngx_http_tent_internal_error(r, "building the deliveries");
    }

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        record = ngx_http_tent_delivery_status_record(&value,
                                                      r->connection->log);

        if (record == NULL) {
            continue;
        }

        if (ngx_http_tent_delivery_key_parse(&ctx->entity, &key, &rest, &rid)
            != NGX_OK
            || (id = ngx_http_tent_json_string(&rid)) == NULL
            || json_object_set_new(record, "id", id) != 0
            || (rid.len == 33 && rid.data[0] == 'S'       /* a shared inbox */
                && json_object_set_new(record, "shared_inbox", json_true())
                   != 0)
            || json_array_append_new(list, record) != 0)
        {
            json_decref(record);
            return ngx_http_tent_internal_error(r, "listing the deliveries");
        }
    }

    if (st->since.len) {
        /* scanned upwards from the cursor: newest first again */

        n = json_array_size(list);

        for (i = 0; i < n / 2; i++) {
            record = json_incref(json_array_get(list, i));
            json_array_set(list, i, json_array_get(list, n - 1 - i));
            json_array_set_new(list, n - 1 - i, record);
        }
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent posts: deliveries of \"%V\": %uz on the page, "
                   "counted %s", &st->id, json_array_size(list),
                   st->complete ? "all" : "the first "
                   ngx_value(NGX_HTTP_TENT_DELIVERIES_COUNT));

    if (ngx_http_tent_deliveries_link(r, st, list) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "adding the Link header");
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
}


/*
 * prev: the recipients above the page's first; next (a full page): those
 * below its last.  Ids may be entity URLs (a mention): escaped.
 */

static ngx_int_t
ngx_http_tent_deliveries_link(ngx_http_request_t *r,
    ngx_http_tent_deliveries_t *st, json_t *list)
{
    u_char           *p;
    size_t            len;
    ngx_str_t         first, last;
    ngx_table_elt_t  *h;

    if (json_array_size(list) == 0
        || ngx_http_tent_json_str(json_array_get(list, 0), "id", &first)
           != NGX_OK
        || ngx_http_tent_json_str(json_array_get(list,
                                                 json_array_size(list) - 1),
                                  "id", &last)
           != NGX_OK)
    {
        return NGX_OK;
    }

    len = 2 * (r->uri.len + sizeof("<?since_id=&limit=&version=>; "
                                   "rel=\"prev\", ")
               + 3 * ngx_max(first.len, last.len) + 2 * NGX_INT_T_LEN);

    h = ngx_list_push(&r->headers_out.headers);
    p = ngx_pnalloc(r->pool, len);
    if (h == NULL || p == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Link");
    h->value.data = p;

    p = ngx_sprintf(p, "<%V?since_id=", &r->uri);
    p = (u_char *) ngx_escape_uri(p, first.data, first.len, NGX_ESCAPE_ARGS);
    p = ngx_sprintf(p, "&limit=%ui&version=%i>; rel=\"prev\"", st->limit,
                    st->version);

    if (json_array_size(list) >= st->limit) {
        p = ngx_sprintf(p, ", <%V?before_id=", &r->uri);
        p = (u_char *) ngx_escape_uri(p, last.data, last.len,
                                      NGX_ESCAPE_ARGS);
        p = ngx_sprintf(p, "&limit=%ui&version=%i>; rel=\"next\"", st->limit,
                        st->version);
    }

    h->value.len = p - h->value.data;

    return NGX_OK;
}
