
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#include "ngx_http_tent_module.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_import.h"
#include "ngx_http_tent_import_private.h"


/*
 * POST {api_root}/import: an export document (docs/export.md) taken into
 * an empty entity, one store batch a section (docs/import.md).
 */


typedef struct {
    const char                 *name;
    ngx_uint_t                  scopes;
    ngx_http_tent_import_row_pt row;
} ngx_http_tent_import_section_t;


static ngx_int_t ngx_http_tent_import_parsed(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_import_scan(ngx_http_request_t *r,
    ngx_http_tent_import_t *im);
static ngx_int_t ngx_http_tent_import_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_import_next(ngx_http_request_t *r,
    ngx_http_tent_import_t *im);
static ngx_int_t ngx_http_tent_import_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);

static ngx_http_tent_import_section_t  ngx_http_tent_import_sections[] = {

    { "profile", NGX_HTTP_TENT_WRITE_PROFILE,
      ngx_http_tent_import_profile },

    { "profile_versions", NGX_HTTP_TENT_WRITE_PROFILE,
      ngx_http_tent_import_version },

    { "followings", NGX_HTTP_TENT_WRITE_FOLLOWINGS,
      ngx_http_tent_import_following },

    { "followers", NGX_HTTP_TENT_WRITE_FOLLOWERS,
      ngx_http_tent_import_follower },

    { "groups", NGX_HTTP_TENT_WRITE_GROUPS,
      ngx_http_tent_import_group },

    { "posts", NGX_HTTP_TENT_WRITE_POSTS|NGX_HTTP_TENT_IMPORT_POSTS,
      ngx_http_tent_import_post },

    { NULL, 0, NULL }
};


/* the tables an empty entity has no row in (profile: but core) */

static ngx_uint_t  ngx_http_tent_import_empty[] = {
    NGX_HTTP_TENT_TABLE_PROFILE,
    NGX_HTTP_TENT_TABLE_FOLLOWER,
    NGX_HTTP_TENT_TABLE_FOLLOWING,
    NGX_HTTP_TENT_TABLE_GROUP,
    NGX_HTTP_TENT_TABLE_POST,
    NGX_HTTP_TENT_TABLE_PROFILE_OLD
};

#define NGX_HTTP_TENT_IMPORT_EMPTY                                           \
    (sizeof(ngx_http_tent_import_empty) / sizeof(ngx_uint_t))


ngx_str_t  ngx_http_tent_import_core_base =
    ngx_string("https://tent.io/types/info/core");


/*
 * POST /import: write_secrets (the document holds every relationship's
 * credentials) and the write scopes of the sections; posts' scopes are
 * checked once the document says it has posts.
 */

#define NGX_HTTP_TENT_IMPORT_BASE                                            \
    (NGX_HTTP_TENT_WRITE_SECRETS|NGX_HTTP_TENT_WRITE_PROFILE                 \
     |NGX_HTTP_TENT_WRITE_FOLLOWERS|NGX_HTTP_TENT_WRITE_FOLLOWINGS           \
     |NGX_HTTP_TENT_WRITE_GROUPS)

ngx_int_t
ngx_http_tent_import_post_route(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t  v;

    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_IMPORT_BASE)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    if (ngx_http_arg(r, (u_char *) "merge", 5, &v) == NGX_OK
        && !(v.len == 1 && v.data[0] == '0'))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                   "merge is not done yet: import into an empty entity");
    }

    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent import: reading the document");

    return ngx_http_tent_read_json(r, ctx, ngx_http_tent_import_parsed);
}


/* the document's shape: what every other write would answer 400 for */

static ngx_int_t
ngx_http_tent_import_parsed(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                          *doc, *v, *posts;
    ngx_str_t                        from;
    ngx_http_tent_import_t          *im;
    ngx_http_tent_import_section_t  *sec;

    doc = ctx->body;

    if (!json_is_object(doc)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                        "The document must be an object");
    }

    v = json_object_get(doc, "version");

    if (!json_is_integer(v) || json_integer_value(v) != 0) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                        "version must be 0");
    }

    if (!json_is_true(json_object_get(doc, "complete"))) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                   "The document is not complete (no \"complete\": true)");
    }

    if (ngx_http_tent_json_str(doc, "entity", &from) != NGX_OK
        || ngx_http_tent_entity_canonical(r->pool, &from, &from) != NGX_OK)
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                        "entity must be an entity URL");
    }

    for (sec = ngx_http_tent_import_sections; sec->name; sec++) {
        v = json_object_get(doc, sec->name);

        if (v == NULL || json_is_null(v)) {
            continue;
        }

        if (!json_is_array(v)) {
            return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                       "Every section must be an array");
        }

        if (json_array_size(v) > NGX_HTTP_TENT_IMPORT_ROWS_MAX) {
            return ngx_http_tent_send_error(r,
                       NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                       "A section has more than 100000 rows");
        }
    }

    posts = json_object_get(doc, "posts");

    if (json_array_size(posts)
        && !ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_POSTS
                                          |NGX_HTTP_TENT_IMPORT_POSTS))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    im = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_import_t));
    if (im == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the import");
    }

    im->doc = doc;
    im->from = from;
    im->report = json_object();
    im->seen = json_object();

    if (im->seen == NULL
        || ngx_http_tent_json_cleanup(r->pool, im->seen) != NGX_OK)
    {
        json_decref(im->seen);
        return ngx_http_tent_internal_error(r, "allocating the import");
    }

    if (im->report == NULL
        || ngx_http_tent_json_cleanup(r->pool, im->report) != NGX_OK)
    {
        json_decref(im->report);
        return ngx_http_tent_internal_error(r, "allocating the report");
    }

    ctx->state = im;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent import: document of \"%V\": checking the entity "
                   "is empty", &from);

    return ngx_http_tent_import_scan(r, im);
}


/* one table of the emptiness check: two rows at most tell */

static ngx_int_t
ngx_http_tent_import_scan(ngx_http_request_t *r, ngx_http_tent_import_t *im)
{
    ngx_str_t                  start, end;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_store_op_t  *op;

    ctx = ngx_http_tent_get_ctx(r);

    if (im->check == NGX_HTTP_TENT_IMPORT_EMPTY) {
        return ngx_http_tent_import_next(r, im);
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_key_range(r->pool, &ctx->entity,
                                   ngx_http_tent_import_empty[im->check],
                                   &start, &end)
           != NGX_OK
        || ngx_http_tent_store_scan(op, &start, &end, 2, 0) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the emptiness scan");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_import_scanned);
}


static ngx_int_t
ngx_http_tent_import_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                status;
    ngx_str_t                key, value, core;
    ngx_uint_t               table;
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_import_t  *im;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ctx = ngx_http_tent_get_ctx(r);
    im = ctx->state;
    table = ngx_http_tent_import_empty[im->check];

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_PROFILE,
                          &ngx_http_tent_import_core_base, &core)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the core's key");
    }

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {

        /* the core section is this server's: the one row allowed */

        if (table == NGX_HTTP_TENT_TABLE_PROFILE
            && key.len == core.len
            && ngx_memcmp(key.data, core.data, key.len) == 0)
        {
            im->core = ngx_http_tent_json_load(r, &value);
            if (im->core == NULL) {
                return ngx_http_tent_internal_error(r, "reading the core");
            }

            im->core_raw = value;
            continue;
        }

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent import: table %ui has rows: not empty", table);

        return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                   "The entity is not empty: an import needs an entity "
                   "with no followers, followings, groups, posts or "
                   "profile sections but core");
    }

    im->check++;

    return ngx_http_tent_import_scan(r, im);
}


/* a row of a section's batch; its first is the batch's guard */

ngx_int_t
ngx_http_tent_import_put(ngx_http_tent_import_t *im,
    ngx_http_tent_store_op_t *op, ngx_str_t *key, ngx_str_t *expected,
    ngx_str_t *value)
{
    ngx_int_t  rc;

    im->bytes += key->len + value->len;

    if (im->rows++ == 0) {
        /* must be absent (or as read): a write since the check loses */
        rc = ngx_http_tent_store_cas(op, key, expected, value);

    } else {
        rc = ngx_http_tent_store_write_put(op, key, value);
    }

    return rc;
}


ngx_int_t
ngx_http_tent_import_put_json(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, ngx_str_t *key,
    json_t *record)
{
    ngx_str_t  value;

    if (ngx_http_tent_json_dump(r->pool, record, &value) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_tent_import_put(im, op, key, NULL, &value);
}


/* the next section: its rows checked, one batch for them all */

static ngx_int_t
ngx_http_tent_import_next(ngx_http_request_t *r, ngx_http_tent_import_t *im)
{
    size_t                           i;
    json_t                          *rows, *row, *invalid, *bad;
    ngx_int_t                        rc;
    const char                      *error;
    ngx_http_tent_store_op_t        *op;
    ngx_http_tent_import_section_t  *sec;

    for ( ;; ) {
        sec = &ngx_http_tent_import_sections[im->section];

        if (sec->name == NULL) {
            ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "tent import: done");

            return ngx_http_tent_send_json(r, NGX_HTTP_OK, im->report);
        }

        im->section++;

        rows = json_object_get(im->doc, sec->name);

        /* profile goes even when absent: our core names the old entity */

        if (!json_is_array(rows) && ngx_strcmp(sec->name, "profile") != 0) {
            continue;
        }

        break;
    }

    im->entry = json_pack("{s:i, s:[]}", "taken", 0, "skipped");
    invalid = json_array();

    if (im->entry == NULL || invalid == NULL
        || json_object_set_new(im->report, sec->name, im->entry) != 0)
    {
        json_decref(invalid);
        return ngx_http_tent_internal_error(r, "building the report");
    }

    if (ngx_http_tent_json_cleanup(r->pool, invalid) != NGX_OK) {
        json_decref(invalid);
        return ngx_http_tent_internal_error(r, "building the report");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);
    if (op == NULL) {
        return ngx_http_tent_internal_error(r, "creating the batch");
    }

    im->rows = 0;
    im->bytes = 0;
    im->invalid = 0;

    if (ngx_strcmp(sec->name, "profile") == 0) {
        rc = ngx_http_tent_import_profile(r, im, op, NULL, &error);
        if (rc != NGX_OK) {
            return ngx_http_tent_internal_error(r, "building our core");
        }
    }

    json_array_foreach(rows, i, row) {
        error = NULL;

        rc = sec->row(r, im, op, row, &error);

        if (rc == NGX_ERROR) {
            return ngx_http_tent_internal_error(r, "adding a row to the batch");
        }

        if (rc == NGX_DECLINED) {
            if (im->invalid++ < NGX_HTTP_TENT_IMPORT_REASONS) {
                bad = json_pack("{s:I, s:s}", "index", (json_int_t) i,
                                "reason", error ? error : "invalid");
                if (bad == NULL || json_array_append_new(invalid, bad) != 0) {
                    return ngx_http_tent_internal_error(r,
                                                        "building the report");
                }
            }
        }
    }

    if (im->invalid == 0 && im->bytes > NGX_HTTP_TENT_IMPORT_BATCH_MAX) {
        im->invalid = 1;
        bad = json_pack("{s:s}", "reason",
                        "the section is more than 32 MB: too big for one "
                        "store batch");
        if (bad == NULL || json_array_append_new(invalid, bad) != 0) {
            return ngx_http_tent_internal_error(r, "building the report");
        }
    }

    if (im->invalid) {
        /* all or nothing: one invalid row and the section is not written */

        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent import: section \"%s\": %ui invalid rows, "
                      "not written", sec->name, im->invalid);

        json_object_set_new(im->entry, "taken", json_integer(0));
        json_object_set_new(im->entry, "written", json_false());
        json_object_set_new(im->entry, "error",
                            json_string("invalid rows: none written"));
        json_object_set_new(im->entry, "invalid_count",
                            json_integer((json_int_t) im->invalid));
        json_object_set(im->entry, "invalid", invalid);

        return ngx_http_tent_import_next(r, im);
    }

    if (im->rows == 0) {
        json_object_set_new(im->entry, "written", json_true());
        return ngx_http_tent_import_next(r, im);
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent import: section \"%s\": %ui rows, %uz bytes",
                   sec->name, im->rows, im->bytes);

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_import_written);
}


static ngx_int_t
ngx_http_tent_import_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_import_t  *im;

    im = ngx_http_tent_get_ctx(r)->state;

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        json_object_set_new(im->entry, "written", json_true());

    } else {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent import: a section's batch not written: "
                      "store status %ui", op->status);

        json_object_set_new(im->entry, "taken", json_integer(0));
        json_object_set_new(im->entry, "written", json_false());
        json_object_set_new(im->entry, "error",
                            json_string(op->status
                                        == NGX_HTTP_TENT_STORE_CONFLICT
                                        ? "a row was written meanwhile:"
                                          " none written"
                                        : "the store failed: none written"));
    }

    return ngx_http_tent_import_next(r, im);
}
