
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_IMPORT_PRIVATE_H_INCLUDED_
#define _NGX_HTTP_TENT_IMPORT_PRIVATE_H_INCLUDED_


/*
 * What ngx_http_tent_import.c (the route, the emptiness check, a batch a
 * section), ngx_http_tent_import_rows.c and
 * ngx_http_tent_import_relations.c (each section's rows) share; only
 * they include it.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_store.h"


/* one section's batch: at most this many bytes of rows (a store frame) */
#define NGX_HTTP_TENT_IMPORT_BATCH_MAX   (32 * 1024 * 1024)

/* rows a section; invalid rows named in the report */
#define NGX_HTTP_TENT_IMPORT_ROWS_MAX    100000
#define NGX_HTTP_TENT_IMPORT_REASONS     20

/* the caps of docs/import.md "Bounds" */
#define NGX_HTTP_TENT_IMPORT_PROFILE_MAX   256
#define NGX_HTTP_TENT_IMPORT_VERSIONS_MAX  10000
#define NGX_HTTP_TENT_IMPORT_PREVIOUS_MAX  16
#define NGX_HTTP_TENT_IMPORT_VERSION_MAX   0x7fffffff
#define NGX_HTTP_TENT_IMPORT_FUTURE        86400

/* the sections, in the order they are written */
#define NGX_HTTP_TENT_IMPORT_SECTIONS    8

/* the posts' section, whose batch waits for its attachments' counts */
#define NGX_HTTP_TENT_IMPORT_SECTION_POSTS  7

/* the profile's history: its versions count against the posts' quota */
#define NGX_HTTP_TENT_IMPORT_SECTION_HISTORY  1

/* attachments by URL: distinct digests, their sizes, in one import */
#define NGX_HTTP_TENT_IMPORT_FETCH_MAX     1000
#define NGX_HTTP_TENT_IMPORT_FETCH_BYTES   ((off_t) 256 * 1024 * 1024)

/* an import's marker row: another import waits, or takes it when stale */
#define NGX_HTTP_TENT_IMPORT_LOCK_TIME   600

/* keys looked up at once before the batches are built */
#define NGX_HTTP_TENT_IMPORT_MGET_MAX    8192
#define NGX_HTTP_TENT_IMPORT_MGET_MERGE  128

/* what the look-up found of a row's keys (the marks) */
#define NGX_HTTP_TENT_IMPORT_EXISTS      1
#define NGX_HTTP_TENT_IMPORT_CREDENTIAL  2


/* an attachment given by URL, fetched before pass 2 */

typedef struct {
    ngx_str_t                   digest;
    ngx_str_t                   url;
    size_t                      size;       /* as the document says */
} ngx_http_tent_import_fetch_t;


/* a key a row would write, looked up first (docs/import.md) */

typedef struct {
    ngx_str_t                   key;
    ngx_uint_t                  section;
    size_t                      row;
    ngx_uint_t                  credential;
} ngx_http_tent_import_check_t;


typedef struct {
    json_t                     *doc;
    json_t                     *report;
    json_t                     *entry;      /* the section being written */
    json_t                     *core;       /* our stored core, if any */
    json_t                     *seen;       /* key ids, ids, entities */
    ngx_str_t                   core_raw;
    ngx_str_t                   from;       /* the document's entity */
    ngx_uint_t                  check;      /* the emptiness scan's table */
    ngx_uint_t                  section;
    ngx_uint_t                  rows;       /* rows in the batch */
    size_t                      bytes;
    ngx_uint_t                  invalid;

    ngx_uint_t                  merge;      /* ?merge=1 */
    ngx_uint_t                  probe;      /* pass 1: keys noted, no put */
    ngx_uint_t                  credential; /* the put is a c row */
    ngx_uint_t                  cur;        /* the section built */
    size_t                      row;        /* its row */
    ngx_array_t                *checks;     /* ngx_http_tent_import_check_t */
    ngx_uint_t                  checked;
    u_char                     *marks[NGX_HTTP_TENT_IMPORT_SECTIONS];
    ngx_http_tent_store_op_t   *ops[NGX_HTTP_TENT_IMPORT_SECTIONS];
    json_t                     *entries[NGX_HTTP_TENT_IMPORT_SECTIONS];
    size_t                      too_big;    /* a section's bytes, or 0 */
    const char                 *too_big_name;

    ngx_str_t                   lock_key;
    ngx_str_t                   lock_value;
    ngx_uint_t                  locked;
    ngx_uint_t                  lock_tries;
    ngx_uint_t                  status;     /* the reply, once unlocked */
    json_t                     *reply;
    const char                 *step;       /* what a 500 failed at */
    ngx_http_tent_request_done_pt  next;
    ngx_http_request_t         *cur_request; /* for the put's note */

    /* the posts' attachments: counts a digest, their inline bytes */
    ngx_array_t                *refs;       /* ngx_http_tent_blob_ref_t */
    json_t                     *sources;    /* digest: base64 string */
    json_t                     *verified;   /* pass 1's verdicts */
    ngx_uint_t                  refs_taken;
    ngx_uint_t                  take;       /* the digest fetched */
    ngx_array_t                *fetch_list; /* ngx_http_tent_import_fetch_t */
    ngx_array_t                *held;       /* the fetched digests' counts */
    const char                 *drop_reason;
    ngx_uint_t                  refuse_status; /* pass 2 too big */
    ngx_str_t                   fetched;    /* its bytes, by URL */
    ngx_uint_t                  fetches;    /* distinct digests by URL */
    off_t                       fetch_bytes;
    off_t                       fetch_got;

    /* what the posts' batch counts against the quotas (admin.md) */
    int64_t                     quota_versions;
    int64_t                     quota_bytes;
    json_t                     *quota_digests; /* digest: counted once */
    ngx_uint_t                  quota_done;

    /* the profile_versions' batch: its rows, and what it took of posts */
    int64_t                     quota_history;
    int64_t                     quota_history_took;
    ngx_uint_t                  quota_history_done;
} ngx_http_tent_import_t;


typedef ngx_int_t (*ngx_http_tent_import_row_pt)(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error);



extern ngx_str_t  ngx_http_tent_import_core_base;

const char *ngx_http_tent_import_section_name(ngx_uint_t section);

/* ngx_http_tent_import.c: the next section's batch written */
ngx_int_t ngx_http_tent_import_next(ngx_http_request_t *r,
    ngx_http_tent_import_t *im);
ngx_int_t ngx_http_tent_import_build(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);

/*
 * ngx_http_tent_import_attach.c: a version's attachments (kept in
 * "post"), their counts taken before the posts' batch, given back if it
 * was not written
 */
ngx_int_t ngx_http_tent_import_attachments(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, json_t *given, json_t *post,
    ngx_uint_t *dropped, const char **error);
ngx_int_t ngx_http_tent_import_attach_fetch(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
ngx_int_t ngx_http_tent_import_attach_take(ngx_http_request_t *r,
    ngx_http_tent_import_t *im);
ngx_int_t ngx_http_tent_import_attach_release(ngx_http_request_t *r,
    ngx_http_tent_import_t *im);
ngx_int_t ngx_http_tent_import_attach_give(ngx_http_request_t *r,
    ngx_http_tent_import_t *im);

/* ngx_http_tent_import.c: a row into the section's batch */
ngx_int_t ngx_http_tent_import_put(ngx_http_tent_import_t *im,
    ngx_http_tent_store_op_t *op, ngx_str_t *key, ngx_str_t *expected,
    ngx_str_t *value);
ngx_int_t ngx_http_tent_import_put_json(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, ngx_str_t *key,
    json_t *record);
ngx_int_t ngx_http_tent_import_skip(ngx_http_tent_import_t *im,
    const char *what, json_t *name, const char *reason);
ngx_int_t ngx_http_tent_import_keep(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, ngx_str_t *key,
    json_t *record);

/* ngx_http_tent_import_rows.c: what the rows of every section use */
void ngx_http_tent_import_taken(ngx_http_tent_import_t *im);
ngx_int_t ngx_http_tent_import_time(json_t *row, const char *name);
ngx_int_t ngx_http_tent_import_once(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, const char *what, ngx_str_t *s);

/*
 * ngx_http_tent_import_rows.c (ngx_http_tent_import_relations.c: the
 * followings and followers): a row of each section: NGX_OK (added),
 * NGX_DECLINED (invalid: *error says why), NGX_ERROR.  profile with row
 * NULL: our core, the batch's first row.
 */
ngx_int_t ngx_http_tent_import_profile(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error);
ngx_int_t ngx_http_tent_import_version(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error);
ngx_int_t ngx_http_tent_import_following(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error);
ngx_int_t ngx_http_tent_import_follower(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error);
ngx_int_t ngx_http_tent_import_group(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error);
ngx_int_t ngx_http_tent_import_block(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error);
ngx_int_t ngx_http_tent_import_ap_key(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error);
ngx_int_t ngx_http_tent_import_post(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_store_op_t *op, json_t *row,
    const char **error);


/*
 * ngx_http_tent_import_check.c: the keys noted in pass 1 looked up,
 * then each row's mark; the marker row of an import in progress.
 */
ngx_int_t ngx_http_tent_import_note(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_str_t *key);
ngx_int_t ngx_http_tent_import_lookup(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_request_done_pt done);
ngx_int_t ngx_http_tent_import_lock(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_http_tent_request_done_pt done);
ngx_int_t ngx_http_tent_import_finish(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, ngx_uint_t status, json_t *reply);
ngx_int_t ngx_http_tent_import_fail(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, const char *step);


#endif /* _NGX_HTTP_TENT_IMPORT_PRIVATE_H_INCLUDED_ */
