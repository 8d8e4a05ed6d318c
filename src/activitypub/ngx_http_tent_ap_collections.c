
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The actor's collections (#29): the outbox, an OrderedCollection of
 * the Create activities of the entity's public status, essay and photo
 * posts, in pages of 20, newest first; followers and following, their
 * totals, and pages of the actors' ids the owner made public (what an
 * anonymous GET {api}/followers lists).  And a post of ours asked for
 * as ActivityStreams at its Tent URL.  All of them are anonymous
 * documents: whoever asks gets the same answer.
 *
 * One scan, in batches, of the published_at index column (the outbox:
 * rows of others' posts and private ones are skipped on the index's own
 * value, no post read) or of the follower or following table, bounded
 * in rows read a request.  Cursors (max_id, min_id) are positions in
 * the scanned keys, not items, so a new post moves no page.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_cache.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_ap.h"
#include "ngx_http_tent_ap_map.h"


#define NGX_HTTP_TENT_AP_OUTBOX          0
#define NGX_HTTP_TENT_AP_FOLLOWERS       1
#define NGX_HTTP_TENT_AP_FOLLOWING       2

#define NGX_HTTP_TENT_AP_OUTBOX_PAGE     20
#define NGX_HTTP_TENT_AP_PEOPLE_PAGE     40
#define NGX_HTTP_TENT_AP_SCAN_BATCH      512

/* rows one request reads at most: a count past it is a lower bound */
#define NGX_HTTP_TENT_AP_SCAN_MAX        10000

#define NGX_HTTP_TENT_AP_CURSOR_MAX      (2 * NGX_INT64_LEN + 2 + 64)

#define NGX_HTTP_TENT_AP_CONTEXT  "https://www.w3.org/ns/activitystreams"


typedef struct {
    ngx_uint_t                      what;
    ngx_uint_t                      page;       /* 0: the collection */
    ngx_uint_t                      up;         /* min_id: turned round */
    ngx_uint_t                      zero;       /* the cursor "0" */
    ngx_uint_t                      limit;
    ngx_uint_t                      count;
    ngx_uint_t                      scanned;
    ngx_uint_t                      more;       /* an item past the page */
    ngx_uint_t                      bounded;    /* stopped at SCAN_MAX */
    ngx_uint_t                      done;
    ngx_str_t                       start;      /* left to scan */
    ngx_str_t                       end;
    size_t                          prefix;     /* the table's keys' */
    ngx_str_t                       stop;       /* the last row's cursor */
    ngx_array_t                     cursors;    /* the page's, scan order */
    ngx_array_t                     keys;       /* the outbox's posts */
    json_t                         *items;
    ngx_str_t                       self;       /* the collection's URL */
    ngx_str_t                       cursor;     /* as given */
    ngx_str_t                       origin_api;
    ngx_uint_t                      cache;      /* a miss: kept after */
    ngx_http_tent_cached_t          cached;
} ngx_http_tent_ap_coll_t;


static ngx_int_t ngx_http_tent_ap_coll(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_uint_t what);
static ngx_int_t ngx_http_tent_ap_coll_cache(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_coll_t *st);
static ngx_int_t ngx_http_tent_ap_coll_scan(ngx_http_request_t *r,
    ngx_http_tent_ap_coll_t *st);
static ngx_int_t ngx_http_tent_ap_coll_batch(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_coll_posts(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_coll_reply(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_coll_t *st);
static ngx_int_t ngx_http_tent_ap_post_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


static const char  *ngx_http_tent_ap_coll_names[] = {
    "outbox", "followers", "following"
};

/* the types with an ActivityPub form, as the index keeps them (bases) */

static ngx_str_t  ngx_http_tent_ap_coll_types[] = {
    ngx_string("https://tent.io/types/post/status"),
    ngx_string("https://tent.io/types/post/essay"),
    ngx_string("https://tent.io/types/post/photo"),
    ngx_null_string
};


ngx_int_t
ngx_http_tent_ap_outbox(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_ap_coll(r, ctx, NGX_HTTP_TENT_AP_OUTBOX);
}


ngx_int_t
ngx_http_tent_ap_followers(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_ap_coll(r, ctx, NGX_HTTP_TENT_AP_FOLLOWERS);
}


ngx_int_t
ngx_http_tent_ap_following(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_ap_coll(r, ctx, NGX_HTTP_TENT_AP_FOLLOWING);
}


/* a post or relationship id: what ids of ours are made of */

static ngx_int_t
ngx_http_tent_ap_id_valid(u_char *p, size_t len)
{
    size_t  i;

    if (len == 0 || len > 64) {
        return NGX_ERROR;
    }

    for (i = 0; i < len; i++) {
        if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z')
              || (p[i] >= '0' && p[i] <= '9') || p[i] == '-' || p[i] == '_'))
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* "<origin><api root>", no "/" at its end: where our posts' URLs begin */

static ngx_int_t
ngx_http_tent_ap_origin_api(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_str_t *out)
{
    u_char                    *p;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    out->data = ngx_pnalloc(r->pool, ctx->origin.len + scf->api_root.len);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(out->data, ctx->origin.data, ctx->origin.len);

    if (scf->api_root.len > 1) {
        p = ngx_cpymem(p, scf->api_root.data, scf->api_root.len);
    }

    out->len = p - out->data;

    return NGX_OK;
}


static uint64_t
ngx_http_tent_ap_u64(u_char *p)
{
    ngx_uint_t  i;
    uint64_t    v;

    v = 0;

    for (i = 0; i < 8; i++) {
        v = (v << 8) | p[i];
    }

    return v;
}


/*
 * A cursor into the key it names: the outbox's "<published_at>.<µs>.<id>"
 * (the index row's own order: seconds, the received time in µs, our
 * entity, the post id), a relationship's id; "0" is before them all.
 * NGX_DECLINED: not a cursor (a 400).
 */

static ngx_int_t
ngx_http_tent_ap_cursor_key(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_coll_t *st, ngx_str_t *cursor, ngx_str_t *key)
{
    u_char     *p, *last, *dot[2];
    uint64_t    v[2];
    ngx_str_t   id;
    ngx_uint_t  n;

    if (cursor->len == 1 && cursor->data[0] == '0') {
        st->zero = 1;
        ngx_str_null(key);
        return NGX_OK;
    }

    if (st->what != NGX_HTTP_TENT_AP_OUTBOX) {
        if (ngx_http_tent_ap_id_valid(cursor->data, cursor->len) != NGX_OK) {
            return NGX_DECLINED;
        }

        return ngx_http_tent_key(r->pool, &ctx->entity,
                                 st->what == NGX_HTTP_TENT_AP_FOLLOWERS
                                 ? NGX_HTTP_TENT_TABLE_FOLLOWER
                                 : NGX_HTTP_TENT_TABLE_FOLLOWING,
                                 cursor, key);
    }

    p = cursor->data;
    last = p + cursor->len;

    for (n = 0; n < 2; n++) {
        dot[n] = ngx_strlchr(p, last, '.');

        if (dot[n] == NULL || dot[n] == p
            || (size_t) (dot[n] - p) > NGX_INT64_LEN)
        {
            return NGX_DECLINED;
        }

        v[n] = 0;

        for ( /* void */ ; p < dot[n]; p++) {
            if (*p < '0' || *p > '9'
                || v[n] > (UINT64_MAX - (*p - '0')) / 10)
            {
                return NGX_DECLINED;
            }

            v[n] = v[n] * 10 + (*p - '0');
        }

        p++;
    }

    id.data = p;
    id.len = last - p;

    if (ngx_http_tent_ap_id_valid(id.data, id.len) != NGX_OK) {
        return NGX_DECLINED;
    }

    return ngx_http_tent_index_key(r->pool, &ctx->entity,
                                   NGX_HTTP_TENT_INDEX_PUBLISHED, v[0], v[1],
                                   &ctx->entity, &id, 3, key);
}


/* a row's key as a cursor: the inverse of the above */

static ngx_int_t
ngx_http_tent_ap_row_cursor(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_coll_t *st, ngx_str_t *key, ngx_str_t *cursor)
{
    uint64_t   seconds, us;
    ngx_str_t  entity, id;

    if (st->what != NGX_HTTP_TENT_AP_OUTBOX) {
        if (key->len <= st->prefix) {
            return NGX_DECLINED;
        }

        id.data = key->data + st->prefix;
        id.len = key->len - st->prefix;

        if (ngx_http_tent_ap_id_valid(id.data, id.len) != NGX_OK) {
            return NGX_DECLINED;
        }

        cursor->data = ngx_pstrdup(r->pool, &id);
        cursor->len = id.len;

        return cursor->data ? NGX_OK : NGX_ERROR;
    }

    if (ngx_http_tent_index_parse(&ctx->entity, key, &seconds, &entity, &id)
        != NGX_OK
        || ngx_http_tent_ap_id_valid(id.data, id.len) != NGX_OK)
    {
        return NGX_DECLINED;
    }

    /* after the column's prefix: seconds, then the µs, both u64 */

    us = ngx_http_tent_ap_u64(key->data + st->prefix + 8);

    cursor->data = ngx_pnalloc(r->pool, NGX_HTTP_TENT_AP_CURSOR_MAX);
    if (cursor->data == NULL) {
        return NGX_ERROR;
    }

    cursor->len = ngx_sprintf(cursor->data, "%uL.%uL.%V", seconds, us, &id)
                  - cursor->data;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_ap_coll(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_uint_t what)
{
    json_t                   *url;
    ngx_int_t                 rc;
    ngx_str_t                 v, max, min, key, *cursor;
    ngx_http_tent_ap_coll_t  *st;

    if (ngx_http_tent_ap_own_route(r, ctx) != NGX_OK) {
        return ngx_http_tent_ap_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_coll_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the collection");
    }

    st->what = what;
    ctx->state = st;

    /* ?page=true (a cursor implies it); max_id, or min_id, not both */

    if (ngx_http_arg(r, (u_char *) "page", 4, &v) == NGX_OK) {
        if (v.len != 4 || ngx_strncmp(v.data, "true", 4) != 0) {
            return ngx_http_tent_ap_error(r, NGX_HTTP_BAD_REQUEST,
                                          "Invalid page");
        }

        st->page = 1;
    }

    ngx_str_null(&max);
    ngx_str_null(&min);

    (void) ngx_http_arg(r, (u_char *) "max_id", 6, &max);
    (void) ngx_http_arg(r, (u_char *) "min_id", 6, &min);

    if (max.data && min.data) {
        return ngx_http_tent_ap_error(r, NGX_HTTP_BAD_REQUEST,
                                      "max_id and min_id: one at most");
    }

    cursor = max.data ? &max : (min.data ? &min : NULL);
    ngx_str_null(&key);

    if (cursor) {
        st->cursor = *cursor;
        st->page = 1;
        st->up = (min.data != NULL);

        rc = cursor->len > NGX_HTTP_TENT_AP_CURSOR_MAX ? NGX_DECLINED
             : ngx_http_tent_ap_cursor_key(r, ctx, st, cursor, &key);

        if (rc == NGX_ERROR) {
            return ngx_http_tent_internal_error(r, "reading the cursor");
        }

        if (rc == NGX_DECLINED) {
            return ngx_http_tent_ap_error(r, NGX_HTTP_BAD_REQUEST,
                                          st->up ? "Invalid min_id"
                                                 : "Invalid max_id");
        }
    }

    url = NULL;

    if (ngx_http_tent_ap_url(r, ctx, ngx_http_tent_ap_coll_names[what], &url)
        != NGX_OK
        || ngx_http_tent_json_own(r->pool, url) == NULL
        || ngx_http_tent_ap_origin_api(r, ctx, &st->origin_api) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "writing the collection's URL");
    }

    st->self.data = (u_char *) json_string_value(url);
    st->self.len = json_string_length(url);

    rc = (what == NGX_HTTP_TENT_AP_OUTBOX)
         ? ngx_http_tent_index_range(r->pool, &ctx->entity,
                                     NGX_HTTP_TENT_INDEX_PUBLISHED,
                                     &st->start, &st->end)
         : ngx_http_tent_key_range(r->pool, &ctx->entity,
                                   what == NGX_HTTP_TENT_AP_FOLLOWERS
                                   ? NGX_HTTP_TENT_TABLE_FOLLOWER
                                   : NGX_HTTP_TENT_TABLE_FOLLOWING,
                                   &st->start, &st->end);

    if (rc != NGX_OK) {
        return ngx_http_tent_internal_error(r, "building the scan's range");
    }

    st->prefix = st->start.len;

    if (key.len) {
        if (st->up) {
            if (ngx_http_tent_key_after(r->pool, &key, &st->start) != NGX_OK)
            {
                return ngx_http_tent_internal_error(r,
                                                    "building the cursor");
            }

        } else {
            st->end = key;
        }

    } else if (st->zero && !st->up) {
        /* nothing is before "0" */
        st->end = st->start;
    }

    st->limit = (what == NGX_HTTP_TENT_AP_OUTBOX)
                ? NGX_HTTP_TENT_AP_OUTBOX_PAGE : NGX_HTTP_TENT_AP_PEOPLE_PAGE;

    st->items = ngx_http_tent_json_own(r->pool, json_array());

    if (st->items == NULL
        || ngx_array_init(&st->cursors, r->pool, st->limit, sizeof(ngx_str_t))
           != NGX_OK
        || ngx_array_init(&st->keys, r->pool, st->limit, sizeof(ngx_str_t))
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "allocating the page");
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: %s of \"%V\", %s%V",
                   ngx_http_tent_ap_coll_names[what], &ctx->entity,
                   !st->page ? "the collection" : st->up ? "a page up from "
                                                         : "a page from ",
                   cursor ? cursor : &st->self);

    /*
     * The outbox's documents depend on posts alone, whose every write
     * (ours or received: the same index) moves the replies' generation:
     * the worker keeps them as it keeps the public feed's pages
     */

    if (what == NGX_HTTP_TENT_AP_OUTBOX) {
        if (ngx_http_tent_ap_coll_cache(r, ctx, st) == NGX_OK) {
            return ngx_http_tent_ap_send(r, NGX_HTTP_OK,
                                         NGX_HTTP_TENT_AP_TYPE,
                                         &st->cached.body);
        }
    }

    if (st->zero && !st->up) {
        return ngx_http_tent_ap_coll_reply(r, ctx, st);
    }

    return ngx_http_tent_ap_coll_scan(r, st);
}


/*
 * The cache's entry of the outbox document asked for, by what makes it
 * (a page or not, the cursor's side and value): NGX_OK a hit in
 * st->cached; otherwise st->cache says whether to keep the answer
 */

static ngx_int_t
ngx_http_tent_ap_coll_cache(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_coll_t *st)
{
    ngx_int_t  rc;
    ngx_str_t  what;

    what.data = ngx_pnalloc(r->pool, sizeof("activitypub outbox 1 1 ") - 1
                                     + st->cursor.len);
    if (what.data == NULL) {
        return NGX_ERROR;
    }

    what.len = ngx_sprintf(what.data, "activitypub outbox %ui %ui %V",
                           st->page, st->up, &st->cursor)
               - what.data;

    rc = ngx_http_tent_cache_get(r, ctx, &what, &st->cached);

    st->cache = (rc == NGX_DECLINED);

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: the outbox's document %s",
                   rc == NGX_OK ? "from the cache" : "made");

    return rc;
}


static ngx_int_t
ngx_http_tent_ap_coll_scan(ngx_http_request_t *r, ngx_http_tent_ap_coll_t *st)
{
    ngx_http_tent_store_op_t  *op;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_scan(op, &st->start, &st->end,
                                    ngx_min(NGX_HTTP_TENT_AP_SCAN_BATCH,
                                            NGX_HTTP_TENT_AP_SCAN_MAX
                                            - st->scanned),
                                    !st->up)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the collection's "
                                            "scan");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_coll_batch);
}


/* does a row belong in the collection?  *listed: on a page too */

static ngx_uint_t
ngx_http_tent_ap_coll_match(ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_coll_t *st, ngx_str_t *key, json_t *value,
    ngx_uint_t *listed)
{
    uint64_t    seconds;
    ngx_str_t   entity, id, base, *t;

    *listed = 0;

    if (st->what != NGX_HTTP_TENT_AP_OUTBOX) {

        /* a following not confirmed yet is no following */

        if (json_is_false(json_object_get(value, "confirmed"))
            || ngx_http_tent_json_str(value, "entity", &entity) != NGX_OK)
        {
            return 0;
        }

        *listed = json_is_true(json_object_get(
                      json_object_get(value, "permissions"), "public"));

        return 1;
    }

    /* ours alone (received posts are in the column too), public */

    if (ngx_http_tent_index_parse(&ctx->entity, key, &seconds, &entity, &id)
        != NGX_OK
        || entity.len != ctx->entity.len
        || ngx_strncmp(entity.data, ctx->entity.data, entity.len) != 0
        || !json_is_true(json_object_get(value, "p"))
        || json_object_get(value, "l") != NULL
        || ngx_http_tent_json_str(value, "t", &base) != NGX_OK)
    {
        return 0;
    }

    for (t = ngx_http_tent_ap_coll_types; t->len; t++) {
        if (t->len == base.len && ngx_strncmp(t->data, base.data, base.len)
                                  == 0)
        {
            *listed = 1;
            return 1;
        }
    }

    return 0;
}


static ngx_int_t
ngx_http_tent_ap_coll_keep(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_coll_t *st, ngx_str_t *key, json_t *value)
{
    uint64_t    seconds;
    ngx_int_t   rc;
    ngx_str_t  *c, *k, entity, id;

    c = ngx_array_push(&st->cursors);
    if (c == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_tent_ap_row_cursor(r, ctx, st, key, c);
    if (rc != NGX_OK) {
        st->cursors.nelts--;
        return rc;
    }

    if (st->what != NGX_HTTP_TENT_AP_OUTBOX) {
        return json_array_append(st->items, json_object_get(value, "entity"))
               == 0 ? NGX_OK : NGX_ERROR;
    }

    /* the post's own row, read with the page's others */

    k = ngx_array_push(&st->keys);

    if (k == NULL
        || ngx_http_tent_index_parse(&ctx->entity, key, &seconds, &entity,
                                     &id)
           != NGX_OK
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &ctx->entity, &id,
                                  -1, k)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_ap_coll_batch(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                   *value;
    ngx_int_t                 rc;
    ngx_str_t                 key, v, last;
    ngx_uint_t                rows, listed;
    ngx_http_tent_ctx_t      *ctx;
    ngx_http_tent_ap_coll_t  *st;
    ngx_http_tent_store_op_t *mget;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;
    rows = 0;
    ngx_str_null(&last);

    while ((rc = ngx_http_tent_store_next(op, &key, &v)) == NGX_OK) {
        rows++;
        last = key;

        value = ngx_http_tent_json_parse(&v, r->connection->log);
        if (value == NULL) {
            continue;
        }

        if (!ngx_http_tent_ap_coll_match(ctx, st, &key, value, &listed)) {
            json_decref(value);
            continue;
        }

        if (!st->page) {
            st->count++;
            json_decref(value);
            continue;
        }

        if (!listed) {
            json_decref(value);
            continue;
        }

        if (st->cursors.nelts >= st->limit) {
            /* one past the page: there is another */
            json_decref(value);
            st->more = 1;
            st->done = 1;
            break;
        }

        rc = ngx_http_tent_ap_coll_keep(r, ctx, st, &key, value);
        json_decref(value);

        if (rc == NGX_ERROR) {
            return ngx_http_tent_internal_error(r, "keeping a row");
        }
    }

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "reading the scanned rows");
    }

    st->scanned += rows;

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: %ui rows scanned, %ui counted, %ui on the "
                   "page%s", rows, st->count, st->cursors.nelts,
                   st->done ? ": full" : "");

    /*
     * More rows: the next batch after the last one seen (the store also
     * ends a batch at a byte budget, so only an empty one is the end);
     * at the bound, the page ends there, its link from that row on
     */

    if (!st->done && rows) {
        if (st->scanned >= NGX_HTTP_TENT_AP_SCAN_MAX) {
            st->bounded = 1;

            if (ngx_http_tent_ap_row_cursor(r, ctx, st, &last, &st->stop)
                == NGX_ERROR)
            {
                return ngx_http_tent_internal_error(r, "keeping the cursor");
            }

        } else {
            if (st->up) {
                rc = ngx_http_tent_key_after(r->pool, &last, &st->start);

            } else {
                st->end.data = ngx_pstrdup(r->pool, &last);
                st->end.len = last.len;
                rc = st->end.data ? NGX_OK : NGX_ERROR;
            }

            if (rc != NGX_OK) {
                return ngx_http_tent_internal_error(r, "keeping the cursor");
            }

            return ngx_http_tent_ap_coll_scan(r, st);
        }
    }

    if (st->keys.nelts == 0) {
        return ngx_http_tent_ap_coll_reply(r, ctx, st);
    }

    /* the outbox page's posts, in one read */

    mget = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (mget == NULL || ngx_http_tent_store_mget(mget) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "building the posts' read");
    }

    for (rows = 0; rows < st->keys.nelts; rows++) {
        if (ngx_http_tent_store_mget_key(mget,
                                         &((ngx_str_t *) st->keys.elts)[rows])
            != NGX_OK)
        {
            return ngx_http_tent_internal_error(r, "adding a post's read");
        }
    }

    return ngx_http_tent_store_submit_request(r, mget,
                                              ngx_http_tent_ap_coll_posts);
}


/* a post anyone may read: only those are ActivityPub's documents */

static ngx_uint_t
ngx_http_tent_ap_post_public(json_t *post)
{
    return json_is_true(json_object_get(json_object_get(post, "permissions"),
                                        "public"));
}


/* a post of ours as a Create of its object; NULL: none (not public...) */

static json_t *
ngx_http_tent_ap_create(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_str_t *origin_api, json_t *post)
{
    json_t       *obj, *create, *v;
    ngx_str_t     entity, id, cid;
    const char  **f;

    static const char  *fields[] = { "published", "to", "cc", NULL };

    if (ngx_http_tent_json_str(post, "entity", &entity) != NGX_OK
        || entity.len != ctx->entity.len
        || ngx_strncmp(entity.data, ctx->entity.data, entity.len) != 0)
    {
        return NULL;
    }

    /* the mapping addresses private posts too: the fediverse reads these */

    if (!ngx_http_tent_ap_post_public(post)) {
        return NULL;
    }

    obj = ngx_http_tent_ap_object(r->pool, origin_api, &ctx->entity, post);

    if (obj == NULL || ngx_http_tent_json_str(obj, "id", &id) != NGX_OK) {
        json_decref(obj);
        return NULL;
    }

    /* "<object id>#create-<version>" (AP.md item 2) */

    cid.data = ngx_pnalloc(r->pool, id.len + sizeof("#create-") - 1
                                    + NGX_INT64_LEN);
    if (cid.data == NULL) {
        json_decref(obj);
        return NULL;
    }

    cid.len = ngx_sprintf(cid.data, "%V#create-%L", &id,
                          (int64_t) json_integer_value(
                              json_object_get(post, "version")))
              - cid.data;

    create = json_pack("{s:s%, s:s, s:s%}",
                       "id", cid.data, cid.len,
                       "type", "Create",
                       "actor", ctx->entity.data, ctx->entity.len);

    if (create == NULL) {
        json_decref(obj);
        return NULL;
    }

    /* the activity's audience and time are its object's */

    for (f = fields; *f; f++) {
        v = json_object_get(obj, *f);

        if (v && json_object_set(create, *f, v) != 0) {
            json_decref(obj);
            json_decref(create);
            return NULL;
        }
    }

    if (json_object_set_new(create, "object", obj) != 0) {
        json_decref(create);
        return NULL;
    }

    return create;
}


static ngx_int_t
ngx_http_tent_ap_coll_posts(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                   *post, *create;
    ngx_int_t                 rc;
    ngx_str_t                 value;
    ngx_uint_t                found;
    ngx_http_tent_ctx_t      *ctx;
    ngx_http_tent_ap_coll_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    while ((rc = ngx_http_tent_store_next_value(op, &found, &value))
           == NGX_OK)
    {
        if (!found) {
            /* deleted since the scan */
            continue;
        }

        post = ngx_http_tent_json_parse(&value, r->connection->log);
        if (post == NULL) {
            continue;
        }

        create = ngx_http_tent_ap_create(r, ctx, &st->origin_api, post);
        json_decref(post);

        if (create) {
            json_array_append_new(st->items, create);
        }
    }

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "reading the page's posts");
    }

    return ngx_http_tent_ap_coll_reply(r, ctx, st);
}


/* "<self>?page=true[&<name>=<cursor>]" */

static json_t *
ngx_http_tent_ap_page_url(ngx_http_tent_ap_coll_t *st, const char *name,
    ngx_str_t *cursor)
{
    if (name == NULL) {
        return json_sprintf("%.*s?page=true", (int) st->self.len,
                            st->self.data);
    }

    return json_sprintf("%.*s?page=true&%s=%.*s", (int) st->self.len,
                        st->self.data, name, (int) cursor->len,
                        cursor->data);
}


static ngx_int_t
ngx_http_tent_ap_coll_reply(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_coll_t *st)
{
    size_t       i, n;
    json_t      *doc, *v;
    ngx_str_t    body, zero, *c, *newest, *oldest, *next, *prev;

    ngx_str_set(&zero, "0");

    if (!st->page) {
        doc = json_pack("{s:s, s:s%, s:s, s:I, s:o}",
                        "@context", NGX_HTTP_TENT_AP_CONTEXT,
                        "id", st->self.data, st->self.len,
                        "type", "OrderedCollection",
                        "totalItems", (json_int_t) st->count,
                        "first", ngx_http_tent_ap_page_url(st, NULL, NULL));

        /* the outbox's oldest page: Mastodon's "last" */

        if (doc && st->what == NGX_HTTP_TENT_AP_OUTBOX) {
            json_object_set_new(doc, "last",
                                ngx_http_tent_ap_page_url(st, "min_id",
                                                          &zero));
        }

        goto send;
    }

    /* scanned up from min_id: the items came oldest first */

    n = json_array_size(st->items);

    if (st->up) {
        for (i = 0; i < n / 2; i++) {
            v = json_incref(json_array_get(st->items, i));
            json_array_set(st->items, i, json_array_get(st->items, n - 1 - i));
            json_array_set_new(st->items, n - 1 - i, v);
        }
    }

    c = st->cursors.elts;
    newest = NULL;
    oldest = NULL;

    if (st->cursors.nelts) {
        newest = st->up ? &c[st->cursors.nelts - 1] : &c[0];
        oldest = st->up ? &c[0] : &c[st->cursors.nelts - 1];
    }

    /*
     * Away from the cursor: another page when one more item was seen,
     * or from where the bound stopped the scan.  Towards it: one from
     * the page's end when the page came from a cursor (not from "0",
     * before which nothing is).
     */

    next = NULL;
    prev = NULL;

    if (st->up) {
        prev = st->bounded ? &st->stop : (st->more ? newest : NULL);
        next = st->zero ? NULL : oldest;

    } else {
        next = st->bounded ? &st->stop : (st->more ? oldest : NULL);
        prev = st->cursor.data ? newest : NULL;
    }

    doc = json_pack("{s:s, s:o, s:s, s:s%, s:O}",
                    "@context", NGX_HTTP_TENT_AP_CONTEXT,
                    "id", ngx_http_tent_ap_page_url(st,
                              st->cursor.data ? (st->up ? "min_id"
                                                        : "max_id")
                                              : NULL,
                              &st->cursor),
                    "type", "OrderedCollectionPage",
                    "partOf", st->self.data, st->self.len,
                    "orderedItems", st->items);

    if (doc && next) {
        json_object_set_new(doc, "next",
                            ngx_http_tent_ap_page_url(st, "max_id", next));
    }

    if (doc && prev) {
        json_object_set_new(doc, "prev",
                            ngx_http_tent_ap_page_url(st, "min_id", prev));
    }

send:

    if (doc == NULL
        || ngx_http_tent_json_own(r->pool, doc) == NULL
        || ngx_http_tent_json_dump(r->pool, doc, &body) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "writing the collection");
    }

    if (st->cache) {
        st->cached.body = body;
        ngx_str_null(&st->cached.extra);
        ngx_http_tent_cache_put(r, &st->cached);
    }

    return ngx_http_tent_ap_send(r, NGX_HTTP_OK, NGX_HTTP_TENT_AP_TYPE,
                                 &body);
}


/*
 * GET {api}/posts/:id asked for as ActivityStreams: the post's object,
 * with its context, when the post is ours and public; anything else is
 * a 404, whoever asks (the router runs this with no credential read)
 */

ngx_int_t
ngx_http_tent_ap_post(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                  key;
    ngx_http_tent_store_op_t  *op;

    if (ctx->nparams != 1
        || ngx_http_tent_ap_id_valid(ctx->params[0].data, ctx->params[0].len)
           != NGX_OK)
    {
        return ngx_http_tent_ap_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &ctx->entity,
                                  &ctx->params[0], -1, &key)
           != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the post's read");
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: post \"%V\" as ActivityStreams",
                   &ctx->params[0]);

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_post_loaded);
}


static ngx_int_t
ngx_http_tent_ap_post_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t               *post, *obj;
    ngx_int_t             rc;
    ngx_str_t             value, entity, origin_api;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK
        || ngx_http_tent_store_value(op, &value) != NGX_OK)
    {
        return ngx_http_tent_ap_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    post = ngx_http_tent_json_own(r->pool,
               ngx_http_tent_json_parse(&value, r->connection->log));

    obj = NULL;

    if (post
        && ngx_http_tent_ap_post_public(post)
        && ngx_http_tent_json_str(post, "entity", &entity) == NGX_OK
        && entity.len == ctx->entity.len
        && ngx_strncmp(entity.data, ctx->entity.data, entity.len) == 0)
    {
        if (ngx_http_tent_ap_origin_api(r, ctx, &origin_api) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "writing the post's URL");
        }

        obj = ngx_http_tent_json_own(r->pool,
                  ngx_http_tent_ap_object(r->pool, &origin_api,
                                          &ctx->entity, post));
    }

    if (obj == NULL) {
        return ngx_http_tent_ap_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    /* its likes counted, then sent (ngx_http_tent_ap_likes.c) */

    return ngx_http_tent_ap_likes_object(r, ctx, &ctx->params[0], obj);
}
