
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * GET /export (issue 14, part 1): the entity's social graph, profile and,
 * when asked, apps and posts, as one JSON document streamed in pages
 * (docs/export.md).  Each page is one store scan of one of the entity's
 * tables: its rows are rendered into buffers of a pool of its own, sent
 * with ngx_http_output_filter() (chunked), and the next scan starts only
 * once the page was written out; its pool goes when the next page is
 * done with.  So a worker holds two pages at most whatever the entity's
 * size.  The rows' rendering is ngx_http_tent_export_rows.c's.  The
 * headers go before
 * the first page: a failure later cannot change the status, so the
 * connection is closed before the last field, "complete": true.
 */


#define NGX_HTTP_TENT_EXPORT_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_export.h"
#include "ngx_http_tent_export_private.h"


#define NGX_HTTP_TENT_EXPORT_TYPE     "application/vnd.tent.export.v0+json"
#define NGX_HTTP_TENT_EXPORT_VERSION  0


static ngx_int_t ngx_http_tent_export_section(ngx_http_tent_export_t *ex);
static ngx_int_t ngx_http_tent_export_scan(ngx_http_tent_export_t *ex);
static void ngx_http_tent_export_scanned(ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_export_send(ngx_http_tent_export_t *ex,
    ngx_uint_t last);
static void ngx_http_tent_export_writer(ngx_http_request_t *r);
static ngx_int_t ngx_http_tent_export_next(ngx_http_tent_export_t *ex);
static ngx_uint_t ngx_http_tent_export_of(ngx_str_t *entity);
static ngx_int_t ngx_http_tent_export_busy(ngx_http_request_t *r,
    ngx_uint_t status, char *error);
static void ngx_http_tent_export_cleanup(void *data);
static void ngx_http_tent_export_free(ngx_event_t *ev);


/*
 * The document's arrays in order.  Posts are their versions ("v" rows:
 * every version, the current one included), grouped by post.
 */

/*
 * exports running in this worker: each holds up to two pages; one an
 * entity at a time, so one tenant never holds every slot
 */
static ngx_uint_t   ngx_http_tent_exports;
static ngx_queue_t  ngx_http_tent_exports_running;


static ngx_http_tent_export_section_t  ngx_http_tent_export_sections[] = {

    { "profile", NGX_HTTP_TENT_TABLE_PROFILE, 200, 0,
      ngx_http_tent_export_profile, ngx_http_tent_export_core },

    { "profile_versions", NGX_HTTP_TENT_TABLE_PROFILE_OLD, 200, 0,
      ngx_http_tent_export_plain, NULL },

    { "followings", NGX_HTTP_TENT_TABLE_FOLLOWING, 200, 0,
      ngx_http_tent_export_following, NULL },

    { "followers", NGX_HTTP_TENT_TABLE_FOLLOWER, 200, 0,
      ngx_http_tent_export_follower, NULL },

    { "groups", NGX_HTTP_TENT_TABLE_GROUP, 200, 0,
      ngx_http_tent_export_plain, NULL },

    { "blocks", NGX_HTTP_TENT_TABLE_BLOCK, 200, NGX_HTTP_TENT_EXPORT_BLOCKS,
      ngx_http_tent_export_plain, NULL },

    { "apps", NGX_HTTP_TENT_TABLE_APP, 200, NGX_HTTP_TENT_EXPORT_APPS,
      ngx_http_tent_export_app, NULL },

    { "authorizations", NGX_HTTP_TENT_TABLE_AUTHORIZATION, 200,
      NGX_HTTP_TENT_EXPORT_APPS,
      ngx_http_tent_export_authorization, NULL },

    { "activitypub_keys", NGX_HTTP_TENT_TABLE_AP_KEY, 200,
      NGX_HTTP_TENT_EXPORT_AP_KEYS,
      ngx_http_tent_export_plain, NULL },

    { "posts", NGX_HTTP_TENT_TABLE_POST_VERSION, 100,
      NGX_HTTP_TENT_EXPORT_POSTS,
      ngx_http_tent_export_post, ngx_http_tent_export_posts_end },

    { NULL, 0, 0, 0, NULL, NULL }
};


static ngx_int_t
ngx_http_tent_export_flag(ngx_http_request_t *r, const char *name)
{
    ngx_str_t  v;

    if (ngx_http_arg(r, (u_char *) name, ngx_strlen(name), &v) != NGX_OK) {
        return 0;
    }

    return (v.len == 1 && v.data[0] == '1')
           || (v.len == 4 && ngx_strncmp(v.data, "true", 4) == 0);
}


/*
 * GET /export[?apps=1][&posts=1]: read_secrets and the read scopes of
 * every part asked for.
 */

ngx_int_t
ngx_http_tent_export_get(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                  *head;
    ngx_int_t                rc;
    ngx_str_t                s, v;
    ngx_uint_t               scopes, inline_bytes;
    ngx_pool_t              *pool;
    ngx_table_elt_t         *h;
    ngx_pool_cleanup_t      *cln;
    ngx_http_tent_export_t  *ex;
    ngx_http_tent_srv_conf_t  *scf;

    scopes = NGX_HTTP_TENT_READ_SECRETS | NGX_HTTP_TENT_READ_PROFILE
             | NGX_HTTP_TENT_READ_FOLLOWERS | NGX_HTTP_TENT_READ_FOLLOWINGS
             | NGX_HTTP_TENT_READ_GROUPS;

    if (ngx_http_tent_export_flag(r, "apps")) {
        scopes |= NGX_HTTP_TENT_READ_APPS;
    }

    if (ngx_http_tent_export_flag(r, "posts")) {
        scopes |= NGX_HTTP_TENT_READ_POSTS;
    }

    if (!ngx_http_tent_has_scopes(ctx, scopes)) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent export: refused, scopes %ui of %ui",
                       ctx->principal.scopes & scopes, scopes);

        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    inline_bytes = 0;

    if (ngx_http_arg(r, (u_char *) "attachments", 11, &v) == NGX_OK) {
        if (v.len == 6 && ngx_strncmp(v.data, "inline", 6) == 0) {
            inline_bytes = 1;

        } else if (!(v.len == 4 && ngx_strncmp(v.data, "urls", 4) == 0)) {
            return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                       "attachments must be \"urls\" or \"inline\"");
        }
    }

    if (ngx_http_tent_exports_running.next == NULL) {
        ngx_queue_init(&ngx_http_tent_exports_running);
    }

    if (ngx_http_tent_export_of(&ctx->entity)) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent export: an export of \"%V\" is running in "
                      "this worker, refused", &ctx->entity);

        return ngx_http_tent_export_busy(r, NGX_HTTP_TOO_MANY_REQUESTS,
                   "An export of this entity is running");
    }

    if (ngx_http_tent_exports >= NGX_HTTP_TENT_EXPORTS_MAX) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent export: %ui exports running in this worker, "
                      "refused", ngx_http_tent_exports);

        return ngx_http_tent_export_busy(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                         "Too many exports at once");
    }

    /*
     * The state lives in a pool of its own, not the request's: a scan
     * the store still held when its request went (it should never
     * happen) finds it there and frees what is left.
     */

    pool = ngx_create_pool(1024, r->connection->log);
    if (pool == NULL) {
        return ngx_http_tent_internal_error(r, "creating the export pool");
    }

    ex = ngx_pcalloc(pool, sizeof(ngx_http_tent_export_t));
    if (ex == NULL) {
        ngx_destroy_pool(pool);
        return ngx_http_tent_internal_error(r, "allocating the export");
    }

    ex->pool = pool;
    ex->log = *r->connection->log;
    pool->log = &ex->log;

    ex->entity.len = ctx->entity.len;
    ex->entity.data = ngx_pstrdup(pool, &ctx->entity);
    if (ex->entity.data == NULL) {
        ngx_destroy_pool(pool);
        return ngx_http_tent_internal_error(r, "copying the entity");
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        ngx_destroy_pool(pool);
        return ngx_http_tent_internal_error(r, "adding the export cleanup");
    }

    cln->handler = ngx_http_tent_export_cleanup;
    cln->data = ex;

    ngx_http_tent_exports++;
    ngx_queue_insert_tail(&ngx_http_tent_exports_running, &ex->running);

    ex->r = r;
    ex->ctx = ctx;
    ctx->state = ex;

    if (scopes & NGX_HTTP_TENT_READ_APPS) {
        ex->flags |= NGX_HTTP_TENT_EXPORT_APPS;
    }

    if (scopes & NGX_HTTP_TENT_READ_POSTS) {
        ex->flags |= NGX_HTTP_TENT_EXPORT_POSTS;
    }

    /* the owner's blocks: for a principal that may read them, no flag */

    if (ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_BLOCKS)) {
        ex->flags |= NGX_HTTP_TENT_EXPORT_BLOCKS;
    }

    if (inline_bytes) {
        ex->flags |= NGX_HTTP_TENT_EXPORT_INLINE;
    }

    /* the actor's key, private part and all: read_secrets, as credentials */

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    if (scf->activitypub) {
        ex->flags |= NGX_HTTP_TENT_EXPORT_AP_KEYS;
    }

    ngx_rbtree_init(&ex->inlined, &ex->inlined_sentinel,
                    ngx_str_rbtree_insert_value);

    ex->start.data = ngx_pnalloc(pool, NGX_HTTP_TENT_EXPORT_KEY_MAX);
    ex->post_id.data = ngx_pnalloc(pool, NGX_HTTP_TENT_EXPORT_ID_MAX);
    if (ex->start.data == NULL || ex->post_id.data == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the cursor");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent export: of \"%V\", apps and posts flags %ui",
                   &ctx->entity, ex->flags);

    /* the headers now: no page can change them later */

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return ngx_http_tent_internal_error(r, "adding Cache-Control");
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Cache-Control");
    ngx_str_set(&h->value, "no-store");

    ctx->own_reply = 1;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = -1;
    ngx_str_set(&r->headers_out.content_type, NGX_HTTP_TENT_EXPORT_TYPE);
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;

    ngx_http_clear_accept_ranges(r);
    ngx_http_clear_last_modified(r);
    ngx_http_clear_etag(r);

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    ex->page = ngx_create_pool(NGX_HTTP_TENT_EXPORT_BUF, &ex->log);
    if (ex->page == NULL) {
        return NGX_ERROR;
    }

    ex->last = &ex->out;

    /* the head: every field but the arrays, its "}" left open */

    head = json_pack("{s:i, s:s, s:o, s:I, s:{s:b, s:b}}",
                     "version", NGX_HTTP_TENT_EXPORT_VERSION,
                     "tent_version", NGX_HTTP_TENT_VERSION,
                     "entity", ngx_http_tent_json_string(&ctx->entity),
                     "exported_at", (json_int_t) ngx_time(),
                     "includes",
                         "apps",
                         (int) !!(ex->flags & NGX_HTTP_TENT_EXPORT_APPS),
                         "posts",
                         (int) !!(ex->flags & NGX_HTTP_TENT_EXPORT_POSTS));

    /* only when asked: documents without it read as before */

    if (head != NULL && (ex->flags & NGX_HTTP_TENT_EXPORT_BLOCKS)) {
        json_object_set_new(json_object_get(head, "includes"), "blocks",
                            json_true());
    }

    if (head != NULL && (ex->flags & NGX_HTTP_TENT_EXPORT_AP_KEYS)) {
        json_object_set_new(json_object_get(head, "includes"),
                            "activitypub_keys", json_true());
    }

    if (head != NULL && (ex->flags & NGX_HTTP_TENT_EXPORT_INLINE)) {
        json_object_set_new(json_object_get(head, "includes"),
                            "attachments_inline", json_true());
    }

    if (head == NULL
        || ngx_http_tent_json_dump(ex->page, head, &s) != NGX_OK
        || s.len < 2)
    {
        json_decref(head);
        return NGX_ERROR;
    }

    json_decref(head);

    if (ngx_http_tent_export_append(ex, (char *) s.data, s.len - 1)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* the request lives until the last page: finalized by the export */

    r->main->count++;

    ex->section = 0;

    if (ngx_http_tent_export_section(ex) == NGX_ERROR) {
        return NGX_ERROR;
    }

    return NGX_DONE;
}


/*
 * The next section asked for: its name and "[" into the page, its range,
 * its first scan.  None left: the last field, the last page, and the
 * request finalized (NGX_DONE).
 */

static ngx_int_t
ngx_http_tent_export_section(ngx_http_tent_export_t *ex)
{
    u_char                          *p;
    ngx_int_t                        rc;
    ngx_str_t                        start, end, rest;
    ngx_http_request_t              *r;
    ngx_http_tent_export_section_t  *sec;

    r = ex->r;

    for ( ;; ) {
        sec = &ngx_http_tent_export_sections[ex->section];

        if (sec->name == NULL || sec->flag == 0 || (ex->flags & sec->flag)) {
            break;
        }

        ex->section++;
    }

    if (sec->name == NULL) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent export: complete, %ui pages, %ui rows",
                       ex->pages, ex->nrows);

        if (ngx_http_tent_export_append(ex, ",\"complete\":true}",
                                        sizeof(",\"complete\":true}") - 1)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        rc = ngx_http_tent_export_send(ex, 1);

        ngx_http_finalize_request(r, rc);

        return NGX_DONE;
    }

    ex->items = 0;

    p = ngx_pnalloc(ex->page, ngx_strlen(sec->name) + 5);
    if (p == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_tent_export_append(ex, (char *) p,
                                    ngx_sprintf(p, ",\"%s\":[", sec->name)
                                    - p)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (sec->table == NGX_HTTP_TENT_TABLE_POST_VERSION) {

        /* our own posts only: "<our entity> 0x00 ..." of the table */

        rest.len = ex->ctx->entity.len + 1;
        rest.data = ngx_pnalloc(ex->page, rest.len);
        if (rest.data == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(rest.data, ex->ctx->entity.data, ex->ctx->entity.len);
        rest.data[rest.len - 1] = '\0';

        if (ngx_http_tent_key(ex->page, &ex->ctx->entity, sec->table, &rest,
                              &start)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        rest.data[rest.len - 1] = '\1';

        if (ngx_http_tent_key(ex->page, &ex->ctx->entity, sec->table, &rest,
                              &end)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

    } else if (ngx_http_tent_key_range(ex->page, &ex->ctx->entity,
                                       sec->table, &start, &end)
               != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (start.len > NGX_HTTP_TENT_EXPORT_KEY_MAX) {
        return NGX_ERROR;
    }

    ngx_memcpy(ex->start.data, start.data, start.len);
    ex->start.len = start.len;

    ex->end.data = ngx_pstrdup(ex->pool, &end);
    ex->end.len = end.len;
    if (ex->end.data == NULL) {
        return NGX_ERROR;
    }

    return ngx_http_tent_export_scan(ex);
}


static ngx_int_t
ngx_http_tent_export_scan(ngx_http_tent_export_t *ex)
{
    ngx_http_tent_store_op_t        *op;
    ngx_http_tent_export_section_t  *sec;

    sec = &ngx_http_tent_export_sections[ex->section];

    op = ngx_http_tent_store_op_create(ex->page, &ex->log);

    /* inline bytes: a version a page, so a page holds one's files only */

    if (op == NULL
        || ngx_http_tent_store_scan(op, &ex->start, &ex->end,
                                    (ex->flags & NGX_HTTP_TENT_EXPORT_INLINE)
                                    && sec->row == ngx_http_tent_export_post
                                    ? 1 : sec->rows, 0)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    op->handler = ngx_http_tent_export_scanned;
    op->data = ex;

    ngx_http_tent_store_for_request(op);

    if (ngx_http_tent_store_submit(op) != NGX_OK) {
        return NGX_ERROR;
    }

    ex->inflight = 1;

    return NGX_OK;
}


/* a page's rows: rendered, sent; the next scan once they are written */

static void
ngx_http_tent_export_scanned(ngx_http_tent_store_op_t *op)
{
    json_t                          *record;
    ngx_int_t                        rc;
    ngx_str_t                        key, value, last, after;
    ngx_uint_t                       rows;
    ngx_event_t                     *wev;
    ngx_connection_t                *c;
    ngx_http_request_t              *r;
    ngx_http_core_loc_conf_t        *clcf;
    ngx_http_tent_export_t          *ex;
    ngx_http_tent_export_section_t  *sec;

    ex = op->data;
    ex->inflight = 0;

    if (ex->orphan) {
        ngx_log_error(NGX_LOG_ALERT, &ex->log, 0,
                      "tent export: a scan answered after its request "
                      "was gone");

        /* not from inside the handler of an operation in a page pool */

        ex->free.handler = ngx_http_tent_export_free;
        ex->free.data = ex;
        ex->free.log = &ex->log;
        ngx_post_event(&ex->free, &ngx_posted_events);
        return;
    }

    r = ex->r;
    c = r->connection;
    sec = &ngx_http_tent_export_sections[ex->section];

    if (op->status != NGX_HTTP_TENT_STORE_OK
        && op->status != NGX_HTTP_TENT_STORE_NOT_FOUND)
    {
        (void) ngx_http_tent_store_http_status(op);

        ngx_log_error(NGX_LOG_ERR, c->log, 0,
                      "tent export: the scan of \"%s\" failed (store "
                      "status %ui): the document ends unfinished",
                      sec->name, op->status);
        goto failed;
    }

    rows = 0;
    ngx_str_null(&last);

    while ((rc = ngx_http_tent_store_next(op, &key, &value)) == NGX_OK) {
        rows++;
        last = key;

        record = ngx_http_tent_json_parse(&value, c->log);
        if (record == NULL) {
            ngx_log_error(NGX_LOG_ALERT, c->log, 0,
                          "tent export: a row of \"%s\" is damaged, "
                          "left out", sec->name);
            continue;
        }

        rc = sec->row(ex, record);
        json_decref(record);

        if (rc != NGX_OK) {
            ngx_log_error(NGX_LOG_ERR, c->log, 0,
                          "tent export: a row of \"%s\" could not be "
                          "rendered: the document ends unfinished",
                          sec->name);
            goto failed;
        }
    }

    if (rc == NGX_ERROR) {
        goto failed;
    }

    ex->nrows += rows;
    ex->pages++;

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "tent export: page %ui: \"%s\", %ui rows, %uz bytes",
                   ex->pages, sec->name, rows, ex->bytes);

    if (rows) {

        /*
         * Rows: the section goes on after its last one.  A page shorter
         * than its limit is no end: the store also ends a scan at a byte
         * budget (rows of large profiles or posts), so only an empty
         * scan ends a section.
         */

        if (ngx_http_tent_key_after(ex->page, &last, &after) != NGX_OK
            || after.len > NGX_HTTP_TENT_EXPORT_KEY_MAX)
        {
            goto failed;
        }

        ngx_memcpy(ex->start.data, after.data, after.len);
        ex->start.len = after.len;
        ex->resume = 1;

    } else {
        if ((sec->close && sec->close(ex) != NGX_OK)
            || ngx_http_tent_export_append(ex, "]", 1) != NGX_OK)
        {
            goto failed;
        }

        ex->section++;
        ex->resume = 0;
    }

    rc = ngx_http_tent_export_send(ex, 0);

    if (rc == NGX_ERROR) {
        ngx_log_error(NGX_LOG_INFO, c->log, 0,
                      "tent export: the client went away after %ui pages",
                      ex->pages);
        ngx_http_finalize_request(r, NGX_ERROR);
        ngx_http_run_posted_requests(c);
        return;
    }

    if (r->buffered || r->postponed || c->buffered) {

        /* not written out yet: the next page waits for the socket */

        wev = c->write;
        clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

        r->write_event_handler = ngx_http_tent_export_writer;

        if (!wev->delayed) {
            ngx_add_timer(wev, clcf->send_timeout);
        }

        if (ngx_handle_write_event(wev, clcf->send_lowat) != NGX_OK) {
            ngx_http_finalize_request(r, NGX_ERROR);
        }

        ngx_http_run_posted_requests(c);
        return;
    }

    if (ngx_http_tent_export_next(ex) == NGX_ERROR) {
        ngx_http_finalize_request(r, NGX_ERROR);
    }

    ngx_http_run_posted_requests(c);
    return;

failed:

    /* the status went long ago: the connection ends, the "}" missing */

    ngx_http_finalize_request(r, NGX_ERROR);
    ngx_http_run_posted_requests(c);
}


/* the page's chain to the filters; the last one ends the body */

static ngx_int_t
ngx_http_tent_export_send(ngx_http_tent_export_t *ex, ngx_uint_t last)
{
    ngx_int_t     rc;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    if (ex->out == NULL) {
        b = ngx_calloc_buf(ex->page);
        cl = ngx_alloc_chain_link(ex->page);
        if (b == NULL || cl == NULL) {
            return NGX_ERROR;
        }

        cl->buf = b;
        cl->next = NULL;
        ex->out = cl;
        ex->buf = b;
    }

    b = ex->buf;

    if (last) {
        b->last_buf = 1;
        b->last_in_chain = 1;

    } else {
        b->flush = 1;
    }

    rc = ngx_http_output_filter(ex->r, ex->out);

    ex->out = NULL;
    ex->last = &ex->out;
    ex->buf = NULL;
    ex->bytes = 0;

    return rc;
}


/* the socket took more: the rest of the page, then the next one */

static void
ngx_http_tent_export_writer(ngx_http_request_t *r)
{
    ngx_int_t                  rc;
    ngx_event_t               *wev;
    ngx_connection_t          *c;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_core_loc_conf_t  *clcf;

    c = r->connection;
    wev = c->write;
    ctx = ngx_http_tent_get_ctx(r);
    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);

    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "tent export: the socket is writable");

    if (wev->timedout) {
        ngx_log_error(NGX_LOG_INFO, c->log, NGX_ETIMEDOUT,
                      "tent export: client timed out");
        c->timedout = 1;
        ngx_http_finalize_request(r, NGX_HTTP_REQUEST_TIME_OUT);
        return;
    }

    if (wev->delayed || r->aio) {
        if (ngx_handle_write_event(wev, clcf->send_lowat) != NGX_OK) {
            ngx_http_finalize_request(r, NGX_ERROR);
        }

        return;
    }

    rc = ngx_http_output_filter(r, NULL);

    if (rc == NGX_ERROR) {
        ngx_log_error(NGX_LOG_INFO, c->log, 0,
                      "tent export: the client went away mid-stream");
        ngx_http_finalize_request(r, NGX_ERROR);
        return;
    }

    if (r->buffered || r->postponed || c->buffered) {
        if (!wev->delayed) {
            ngx_add_timer(wev, clcf->send_timeout);
        }

        if (ngx_handle_write_event(wev, clcf->send_lowat) != NGX_OK) {
            ngx_http_finalize_request(r, NGX_ERROR);
        }

        return;
    }

    if (wev->timer_set) {
        ngx_del_timer(wev);
    }

    r->write_event_handler = ngx_http_request_empty_handler;

    if (ngx_http_tent_export_next(ctx->state) == NGX_ERROR) {
        ngx_http_finalize_request(r, NGX_ERROR);
    }
}


/*
 * The page written out: the next one starts.  Its pool goes at the next
 * page, not now: this may run inside the answer of the scan the pool
 * holds.  So a worker holds two pages of an export at most.
 */

static ngx_int_t
ngx_http_tent_export_next(ngx_http_tent_export_t *ex)
{
    ngx_int_t  rc;

    if (ex->old) {
        ngx_destroy_pool(ex->old);
    }

    ex->old = ex->page;
    ex->inline_page = 0;

    ex->page = ngx_create_pool(NGX_HTTP_TENT_EXPORT_BUF, &ex->log);
    if (ex->page == NULL) {
        return NGX_ERROR;
    }

    /* a section goes on after a full page, or the next one begins */

    rc = ex->resume ? ngx_http_tent_export_scan(ex)
                    : ngx_http_tent_export_section(ex);

    return rc == NGX_DONE ? NGX_OK : rc;
}


/* an export of this entity running in this worker (at most 4 to look at) */

static ngx_uint_t
ngx_http_tent_export_of(ngx_str_t *entity)
{
    ngx_queue_t             *q;
    ngx_http_tent_export_t  *ex;

    for (q = ngx_queue_head(&ngx_http_tent_exports_running);
         q != ngx_queue_sentinel(&ngx_http_tent_exports_running);
         q = ngx_queue_next(q))
    {
        ex = ngx_queue_data(q, ngx_http_tent_export_t, running);

        if (ex->entity.len == entity->len
            && ngx_strncmp(ex->entity.data, entity->data, entity->len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


static ngx_int_t
ngx_http_tent_export_busy(ngx_http_request_t *r, ngx_uint_t status,
    char *error)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return ngx_http_tent_internal_error(r, "adding Retry-After");
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Retry-After");
    ngx_str_set(&h->value, "5");

    return ngx_http_tent_send_error(r, status, error);
}


/*
 * The request's pool goes: the pages with it, unless the store holds a
 * scan (then the scan's answer frees them; it should never happen).
 */

static void
ngx_http_tent_export_cleanup(void *data)
{
    ngx_http_tent_export_t  *ex = data;

    ngx_http_tent_exports--;
    ngx_queue_remove(&ex->running);

    if (ex->inflight) {
        ex->orphan = 1;
        ex->log.handler = NULL;
        ex->log.data = NULL;
        return;
    }

    ex->free.data = ex;
    ngx_http_tent_export_free(&ex->free);
}


static void
ngx_http_tent_export_free(ngx_event_t *ev)
{
    ngx_http_tent_export_t  *ex = ev->data;

    if (ex->old) {
        ngx_destroy_pool(ex->old);
    }

    if (ex->page) {
        ngx_destroy_pool(ex->page);
    }

    ngx_destroy_pool(ex->pool);
}
