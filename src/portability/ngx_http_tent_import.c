
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_provision.h"
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
static ngx_int_t ngx_http_tent_import_start(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_import_scan(ngx_http_request_t *r,
    ngx_http_tent_import_t *im);
static ngx_int_t ngx_http_tent_import_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_import_core_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_import_prepare(ngx_http_request_t *r,
    ngx_http_tent_import_t *im);
static ngx_int_t ngx_http_tent_import_section(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_uint_t s);
static ngx_int_t ngx_http_tent_import_skip_row(ngx_http_tent_import_t *im,
    size_t i, const char *reason);
static ngx_int_t ngx_http_tent_import_bytes(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_import_counted(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_import_history(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
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

    { "blocks", NGX_HTTP_TENT_WRITE_BLOCKS,
      ngx_http_tent_import_block },

    { "activitypub_keys", NGX_HTTP_TENT_WRITE_SECRETS,
      ngx_http_tent_import_ap_key },

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


const char *
ngx_http_tent_import_section_name(ngx_uint_t section)
{
    return ngx_http_tent_import_sections[section].name;
}


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
        && !(v.len == 1 && (v.data[0] == '0' || v.data[0] == '1')))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                        "merge must be 0 or 1");
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
    size_t                           max;
    ngx_str_t                        from, m;
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

        /* a profile has few sections; their history is bounded too */

        max = NGX_HTTP_TENT_IMPORT_ROWS_MAX;

        if (sec == &ngx_http_tent_import_sections[0]) {
            max = NGX_HTTP_TENT_IMPORT_PROFILE_MAX;

        } else if (sec == &ngx_http_tent_import_sections[1]) {
            max = NGX_HTTP_TENT_IMPORT_VERSIONS_MAX;
        }

        if (json_array_size(v) > max) {
            return ngx_http_tent_send_error(r,
                       NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                       "A section has more rows than an import takes "
                       "(profile 256, profile_versions 10000, others "
                       "100000)");
        }
    }

    /* the owner's blocks: with write_blocks only */

    if (json_array_size(json_object_get(doc, "blocks"))
        && !ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_BLOCKS))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
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
    im->merge = (ngx_http_arg(r, (u_char *) "merge", 5, &m) == NGX_OK
                 && m.data[0] == '1');
    im->report = json_object();

    if (im->report == NULL
        || ngx_http_tent_json_cleanup(r->pool, im->report) != NGX_OK)
    {
        json_decref(im->report);
        return ngx_http_tent_internal_error(r, "allocating the report");
    }

    ctx->state = im;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent import: document of \"%V\", merge: %ui",
                   &from, im->merge);

    return ngx_http_tent_import_lock(r, im, ngx_http_tent_import_start);
}


/* the marker is ours: empty (or, merging, our core as it is) */

static ngx_int_t
ngx_http_tent_import_start(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_str_t                key;
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_import_t  *im;

    ctx = ngx_http_tent_get_ctx(r);
    im = ctx->state;

    if (!im->merge) {
        return ngx_http_tent_import_scan(r, im);
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_PROFILE,
                             &ngx_http_tent_import_core_base, &key)
           != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        return ngx_http_tent_import_fail(r, im,
                   "building the core section's read");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                          ngx_http_tent_import_core_read);
}


static ngx_int_t
ngx_http_tent_import_core_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_str_t                value;
    ngx_http_tent_import_t  *im;

    im = ngx_http_tent_get_ctx(r)->state;

    if (op->status == NGX_HTTP_TENT_STORE_OK
        && ngx_http_tent_store_value(op, &value) == NGX_OK)
    {
        im->core = ngx_http_tent_json_load(r, &value);
        if (im->core == NULL) {
            return ngx_http_tent_import_fail(r, im, "reading the core section");
        }

        im->core_raw = value;

    } else if (op->status != NGX_HTTP_TENT_STORE_NOT_FOUND) {
        im->step = "reading the core section";
        return ngx_http_tent_import_finish(r, im,
                   ngx_http_tent_store_http_status(op), NULL);
    }

    return ngx_http_tent_import_prepare(r, im);
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
        return ngx_http_tent_import_prepare(r, im);
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_key_range(r->pool, &ctx->entity,
                                   ngx_http_tent_import_empty[im->check],
                                   &start, &end)
           != NGX_OK
        || ngx_http_tent_store_scan(op, &start, &end, 2, 0) != NGX_OK)
    {
        return ngx_http_tent_import_fail(r, im,
                   "building the scan for rows already there");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_import_scanned);
}


static ngx_int_t
ngx_http_tent_import_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                  *err;
    ngx_str_t                key, value, core;
    ngx_uint_t               table;
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_import_t  *im;

    ctx = ngx_http_tent_get_ctx(r);
    im = ctx->state;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        im->step = "scanning for rows already there";
        return ngx_http_tent_import_finish(r, im,
                   ngx_http_tent_store_http_status(op), NULL);
    }

    table = ngx_http_tent_import_empty[im->check];

    if (ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_PROFILE,
                          &ngx_http_tent_import_core_base, &core)
        != NGX_OK)
    {
        return ngx_http_tent_import_fail(r, im,
                   "building the core section's key");
    }

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {

        /* the core section is this server's: the one row allowed */

        if (table == NGX_HTTP_TENT_TABLE_PROFILE
            && key.len == core.len
            && ngx_memcmp(key.data, core.data, key.len) == 0)
        {
            im->core = ngx_http_tent_json_load(r, &value);
            if (im->core == NULL) {
                return ngx_http_tent_import_fail(r, im,
                           "reading the core section");
            }

            im->core_raw = value;
            continue;
        }

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent import: table %ui has rows: not empty", table);

        err = json_pack("{s:s}", "error",
                        "The entity is not empty: an import needs an entity "
                        "with no followers, followings, groups, posts or "
                        "profile sections but core (or ?merge=1)");

        if (err == NULL
            || ngx_http_tent_json_cleanup(r->pool, err) != NGX_OK)
        {
            json_decref(err);
            err = NULL;
        }

        if (err == NULL) {
            return ngx_http_tent_import_fail(r, im,
                                             "writing the not-empty refusal");
        }

        return ngx_http_tent_import_finish(r, im, NGX_HTTP_CONFLICT, err);
    }

    im->check++;

    return ngx_http_tent_import_scan(r, im);
}


/* an error reply of the import, once the marker is removed */

static ngx_int_t
ngx_http_tent_import_refuse(ngx_http_request_t *r, ngx_http_tent_import_t *im,
    ngx_uint_t status, const char *error)
{
    json_t  *err;

    err = json_pack("{s:s}", "error", error);

    if (err == NULL || ngx_http_tent_json_cleanup(r->pool, err) != NGX_OK) {
        json_decref(err);
        return ngx_http_tent_import_fail(r, im, "writing the refusal");
    }

    return ngx_http_tent_import_finish(r, im, status, err);
}


/*
 * Before anything is written: our core's previous_entities has room,
 * then pass 1 over every section (rows checked, their bytes counted,
 * the keys to look up noted, nothing put), then the look-up.
 */

static ngx_int_t
ngx_http_tent_import_prepare(ngx_http_request_t *r,
    ngx_http_tent_import_t *im)
{
    size_t       i;
    json_t      *prev, *v;
    ngx_str_t    s;
    ngx_uint_t   sec, known;

    prev = json_object_get(json_object_get(im->core, "content"),
                           "previous_entities");
    known = 0;

    json_array_foreach(prev, i, v) {
        s.data = (u_char *) json_string_value(v);
        s.len = json_string_length(v);

        if (s.data && ngx_http_tent_entity_eq(&s, &im->from)) {
            known = 1;
        }
    }

    if (!known && json_array_size(prev) >= NGX_HTTP_TENT_IMPORT_PREVIOUS_MAX)
    {
        return ngx_http_tent_import_refuse(r, im, NGX_HTTP_CONFLICT,
                   "The core's previous_entities is full (16): nothing "
                   "imported");
    }

    im->probe = 1;

    for (sec = 0; sec < NGX_HTTP_TENT_IMPORT_SECTIONS; sec++) {
        if (ngx_http_tent_import_section(r, im, sec) != NGX_OK) {
            return ngx_http_tent_import_fail(r, im, "sizing a section's batch");
        }

        if (im->too_big) {
            return ngx_http_tent_import_refuse(r, im,
                       NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                       "A section is more than 32 MB: too big for one store "
                       "batch; nothing imported");
        }
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent import: rows checked, %ui keys to look up",
                   im->checks ? im->checks->nelts : 0);

    /* the attachments given by URL fetched, then pass 2 */

    return ngx_http_tent_import_lookup(r, im,
                                       ngx_http_tent_import_attach_fetch);
}


/* pass 2: every section's batch built, none written until all fit */

ngx_int_t
ngx_http_tent_import_build(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_uint_t               sec;
    ngx_http_tent_import_t  *im;

    im = ngx_http_tent_get_ctx(r)->state;

    im->probe = 0;

    im->refs = ngx_array_create(r->pool, 8, sizeof(ngx_http_tent_blob_ref_t));
    im->sources = json_object();
    im->quota_digests = json_object();

    if (im->refs == NULL || im->sources == NULL
        || ngx_http_tent_json_cleanup(r->pool, im->sources) != NGX_OK)
    {
        json_decref(im->sources);
        json_decref(im->quota_digests);
        return ngx_http_tent_import_fail(r, im,
                   "allocating the attachments' counts");
    }

    if (im->quota_digests == NULL
        || ngx_http_tent_json_cleanup(r->pool, im->quota_digests) != NGX_OK)
    {
        json_decref(im->quota_digests);
        return ngx_http_tent_import_fail(r, im,
                   "allocating the quota's digests");
    }

    for (sec = 0; sec < NGX_HTTP_TENT_IMPORT_SECTIONS; sec++) {
        if (ngx_http_tent_import_section(r, im, sec) != NGX_OK) {
            return ngx_http_tent_import_fail(r, im,
                       "building a section's batch");
        }

        if (im->too_big) {
            /* nothing written: the fetched attachments' counts go back */
            im->refuse_status = NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
            im->section = NGX_HTTP_TENT_IMPORT_SECTIONS;
            return ngx_http_tent_import_next(r, im);
        }
    }

    im->section = 0;

    return ngx_http_tent_import_next(r, im);
}


/* a row of a section's batch; its first is the batch's guard */

ngx_int_t
ngx_http_tent_import_put(ngx_http_tent_import_t *im,
    ngx_http_tent_store_op_t *op, ngx_str_t *key, ngx_str_t *expected,
    ngx_str_t *value)
{
    ngx_int_t  rc;

    im->bytes += key->len + value->len;

    if (im->probe) {
        im->rows++;

        if (expected || im->cur_request == NULL) {
            return NGX_OK;
        }

        return ngx_http_tent_import_note(im->cur_request, im, key);
    }

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


static ngx_int_t
ngx_http_tent_import_skip_row(ngx_http_tent_import_t *im, size_t i,
    const char *reason)
{
    json_t     *index;
    ngx_int_t   rc;

    index = json_integer((json_int_t) i);
    if (index == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_tent_import_skip(im, "index", index, reason);
    json_decref(index);

    return rc;
}


/*
 * A section's rows, in either pass: checked and (pass 2) put into its
 * batch, with what the look-up found of them; its report entry.
 */

static ngx_int_t
ngx_http_tent_import_section(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_uint_t s)
{
    size_t                           i, nchecks;
    json_t                          *rows, *row, *invalid, *bad, *entry;
    u_char                           mark;
    ngx_int_t                        rc;
    const char                      *error;
    ngx_http_tent_store_op_t        *op;
    ngx_http_tent_import_section_t  *sec;

    sec = &ngx_http_tent_import_sections[s];
    rows = json_object_get(im->doc, sec->name);

    /* profile goes even when absent: our core names the old entity */

    if (!json_is_array(rows) && s != 0) {
        return NGX_OK;
    }

    entry = json_pack("{s:i, s:[]}", "taken", 0, "skipped");
    invalid = json_array();

    if (entry == NULL || invalid == NULL
        || ngx_http_tent_json_cleanup(r->pool, entry) != NGX_OK)
    {
        json_decref(entry);
        json_decref(invalid);
        return NGX_ERROR;
    }

    if (ngx_http_tent_json_cleanup(r->pool, invalid) != NGX_OK) {
        json_decref(invalid);
        return NGX_ERROR;
    }

    /* the "once" rules start again with each pass */

    if (s == 0) {
        im->seen = json_object();
        if (im->seen == NULL
            || ngx_http_tent_json_cleanup(r->pool, im->seen) != NGX_OK)
        {
            json_decref(im->seen);
            return NGX_ERROR;
        }
    }

    op = NULL;

    if (!im->probe) {
        op = ngx_http_tent_store_op_create(r->pool, r->connection->log);
        if (op == NULL) {
            return NGX_ERROR;
        }

        if (json_object_set(im->report, sec->name, entry) != 0) {
            return NGX_ERROR;
        }
    }

    im->entry = entry;
    im->entries[s] = entry;
    im->ops[s] = op;
    im->cur = s;
    im->cur_request = r;
    im->rows = 0;
    im->bytes = 0;
    im->invalid = 0;

    if (s == 0) {
        /* our core: its row (past the document's rows) is never marked */
        im->row = json_array_size(rows);

        if (ngx_http_tent_import_profile(r, im, op, NULL, &error) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    json_array_foreach(rows, i, row) {
        error = NULL;
        im->row = i;
        mark = (im->probe || im->marks[s] == NULL) ? 0 : im->marks[s][i];

        if (mark & NGX_HTTP_TENT_IMPORT_EXISTS) {
            /* merging: what is here stays */
            if (ngx_http_tent_import_skip_row(im, i, "exists here: kept")
                != NGX_OK)
            {
                return NGX_ERROR;
            }

            continue;
        }

        if (mark & NGX_HTTP_TENT_IMPORT_CREDENTIAL) {
            error = "mac_key_id is a credential of this entity already";

            if (im->merge) {
                if (ngx_http_tent_import_skip_row(im, i, error) != NGX_OK)
                {
                    return NGX_ERROR;
                }

                continue;
            }

            rc = NGX_DECLINED;

        } else {
            nchecks = im->checks ? im->checks->nelts : 0;

            rc = sec->row(r, im, op, row, &error);

            /* an invalid row's keys are not looked up */

            if (rc != NGX_OK && im->checks) {
                im->checks->nelts = nchecks;
            }
        }

        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }

        if (rc == NGX_DECLINED) {
            if (im->invalid++ < NGX_HTTP_TENT_IMPORT_REASONS) {
                bad = json_pack("{s:I, s:s}", "index", (json_int_t) i,
                                "reason", error ? error : "invalid");
                if (bad == NULL || json_array_append_new(invalid, bad) != 0) {
                    return NGX_ERROR;
                }
            }
        }

        /* the batch as encoded, feed index rows and all */

        if (op) {
            im->bytes = ngx_http_tent_store_op_size(op);
        }

        if (im->bytes > NGX_HTTP_TENT_IMPORT_BATCH_MAX) {
            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          "tent import: section \"%s\" over %uz bytes at "
                          "row %uz: nothing imported", sec->name,
                          im->bytes, i);

            im->too_big = im->bytes;
            im->too_big_name = sec->name;
            return NGX_OK;
        }
    }

    if (im->invalid) {
        /* all or nothing: one invalid row and the section is not written */

        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent import: section \"%s\": %ui invalid rows, "
                      "not written", sec->name, im->invalid);

        im->ops[s] = NULL;

        json_object_set_new(entry, "taken", json_integer(0));
        json_object_set_new(entry, "written", json_false());
        json_object_set_new(entry, "error",
                            json_string("invalid rows: none written"));
        json_object_set_new(entry, "invalid_count",
                            json_integer((json_int_t) im->invalid));
        json_object_set(entry, "invalid", invalid);

        return NGX_OK;
    }

    if (im->rows == 0) {
        im->ops[s] = NULL;
        json_object_set_new(entry, "written", json_true());
        return NGX_OK;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent import: section \"%s\": %ui rows, %uz bytes",
                   sec->name, im->rows, im->bytes);

    return NGX_OK;
}


/* the posts' versions counted: their attachments' bytes */

static ngx_int_t
ngx_http_tent_import_bytes(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_http_tent_quotas_t  *q;
    ngx_http_tent_import_t  *im;

    im = ctx->state;
    q = ctx->quotas;

    if (q != NULL && q->over) {
        return ngx_http_tent_import_counted(r, ctx);
    }

    return ngx_http_tent_quota_take_n(r, ctx, NGX_HTTP_TENT_QUOTA_BYTES,
                                      im->quota_bytes,
                                      ngx_http_tent_import_counted);
}


/*
 * Over a quota: the posts' section is not written (all or nothing, as
 * for an invalid row), the report names the quota, what was taken goes
 * back.  Below: what was taken is the posts' batch's from now on.
 */

static ngx_int_t
ngx_http_tent_import_counted(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                  *entry;
    ngx_http_tent_quotas_t  *q;
    ngx_http_tent_import_t  *im;

    im = ctx->state;
    q = ctx->quotas;
    entry = im->entries[NGX_HTTP_TENT_IMPORT_SECTION_POSTS];

    if (q != NULL && q->over) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent import: \"%V\": %L post versions, %L "
                      "attachment bytes over its quota: posts not written",
                      &ctx->entity, im->quota_versions, im->quota_bytes);

        ngx_http_tent_quota_return(ctx);

        im->ops[NGX_HTTP_TENT_IMPORT_SECTION_POSTS] = NULL;

        json_object_set_new(entry, "taken", json_integer(0));
        json_object_set_new(entry, "written", json_false());
        json_object_set_new(entry, "error",
                            json_string(q->over
                                        & (1 << NGX_HTTP_TENT_QUOTA_POSTS)
                                        ? "quota exceeded: posts"
                                        : "quota exceeded: "
                                          "attachment_bytes"));

        /* no posts: neither their attachments' counts (skipped) */

        return ngx_http_tent_import_next(r, im);
    }

    if (ngx_http_tent_quota_count(r, ctx,
                                  im->ops[NGX_HTTP_TENT_IMPORT_SECTION_POSTS])
        != NGX_OK)
    {
        return ngx_http_tent_import_fail(r, im,
                   "counting the posts against the quotas");
    }

    return ngx_http_tent_import_next(r, im);
}


/*
 * The profile's history counted against posts: over the quota the
 * section is not written (nothing taken); taken, the count is the
 * batch's, given back only if the store refuses it, and out of
 * q->took[] so that the posts' section, counted next, gives back its
 * own alone.
 */

static ngx_int_t
ngx_http_tent_import_history(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                  *entry;
    ngx_http_tent_quotas_t  *q;
    ngx_http_tent_import_t  *im;

    im = ctx->state;
    q = ctx->quotas;
    entry = im->entries[NGX_HTTP_TENT_IMPORT_SECTION_HISTORY];

    if (q != NULL && (q->over & (1 << NGX_HTTP_TENT_QUOTA_POSTS))) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent import: \"%V\": %L profile versions over its "
                      "quota of posts: profile_versions not written",
                      &ctx->entity, im->quota_history);

        /* the posts' section is counted on its own */
        q->over = 0;

        im->ops[NGX_HTTP_TENT_IMPORT_SECTION_HISTORY] = NULL;

        json_object_set_new(entry, "taken", json_integer(0));
        json_object_set_new(entry, "written", json_false());
        json_object_set_new(entry, "error",
                            json_string("quota exceeded: posts"));

        return ngx_http_tent_import_next(r, im);
    }

    if (q != NULL) {
        im->quota_history_took = q->took[NGX_HTTP_TENT_QUOTA_POSTS];
        q->took[NGX_HTTP_TENT_QUOTA_POSTS] = 0;
        q->taken &= ~(1 << NGX_HTTP_TENT_QUOTA_POSTS);
        q->tries = 0;
    }

    return ngx_http_tent_import_next(r, im);
}


/* the next section's batch to the store, in order */

ngx_int_t
ngx_http_tent_import_next(ngx_http_request_t *r, ngx_http_tent_import_t *im)
{
    ngx_uint_t  s;

    while (im->section < NGX_HTTP_TENT_IMPORT_SECTIONS) {
        s = im->section++;

        if (im->ops[s] == NULL) {
            continue;
        }

        im->entry = im->entries[s];

        /* provisioning: the profile's versions under the quota of posts */

        if (s == NGX_HTTP_TENT_IMPORT_SECTION_HISTORY
            && !im->quota_history_done)
        {
            im->quota_history_done = 1;
            im->section--;
            return ngx_http_tent_quota_take_n(r, ngx_http_tent_get_ctx(r),
                                              NGX_HTTP_TENT_QUOTA_POSTS,
                                              im->quota_history,
                                              ngx_http_tent_import_history);
        }

        /* provisioning: the posts' versions and bytes under the quotas */

        if (s == NGX_HTTP_TENT_IMPORT_SECTION_POSTS && !im->quota_done) {
            im->quota_done = 1;
            im->section--;
            return ngx_http_tent_quota_take_n(r, ngx_http_tent_get_ctx(r),
                                              NGX_HTTP_TENT_QUOTA_POSTS,
                                              im->quota_versions,
                                              ngx_http_tent_import_bytes);
        }

        /* the attachments' counts (and bytes) before the posts' batch */

        if (s == NGX_HTTP_TENT_IMPORT_SECTION_POSTS && !im->refs_taken
            && im->refs && im->refs->nelts)
        {
            im->section--;
            return ngx_http_tent_import_attach_take(r, im);
        }

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent import: writing section \"%s\"",
                       ngx_http_tent_import_sections[s].name);

        return ngx_http_tent_store_submit_request(r, im->ops[s],
                                              ngx_http_tent_import_written);
    }

    /* the fetched digests' own counts: the posts hold theirs now */

    if (im->held && im->held->nelts) {
        return ngx_http_tent_import_attach_release(r, im);
    }

    if (im->refuse_status) {
        return ngx_http_tent_import_refuse(r, im, im->refuse_status,
                   "A section is more than 32 MB: too big for one store "
                   "batch; nothing imported");
    }

    return ngx_http_tent_import_finish(r, im, NGX_HTTP_OK, im->report);
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

        /* the profile's versions not written: their count goes back */

        if (im->entry == im->entries[NGX_HTTP_TENT_IMPORT_SECTION_HISTORY]
            && im->quota_history_took)
        {
            ngx_http_tent_quota_give(&ngx_http_tent_get_ctx(r)->entity,
                                     NGX_HTTP_TENT_QUOTA_POSTS,
                                     im->quota_history_took);
            im->quota_history_took = 0;
        }

        /* the posts not written: their quotas' counts go back, and */

        if (im->entry == im->entries[NGX_HTTP_TENT_IMPORT_SECTION_POSTS]) {
            ngx_http_tent_quota_return(ngx_http_tent_get_ctx(r));
        }

        /* their attachments' counts */

        if (im->entry == im->entries[NGX_HTTP_TENT_IMPORT_SECTION_POSTS]
            && im->refs_taken)
        {
            return ngx_http_tent_import_attach_give(r, im);
        }
    }

    return ngx_http_tent_import_next(r, im);
}
