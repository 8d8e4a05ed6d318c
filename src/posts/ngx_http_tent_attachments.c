
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Attachments (spec 7.7): the files of a multipart post made into its
 * attachment list, their bytes kept once per SHA-256 with a count of the
 * post versions that list them (GET /posts/:id/attachments/:name is
 * ngx_http_tent_attachment_serve.c).
 */


#define NGX_HTTP_TENT_POSTS_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_posts_private.h"
#include "ngx_http_tent_store.h"

#include <openssl/evp.h>


#define NGX_HTTP_TENT_BLOB_TRIES  32

static ngx_int_t ngx_http_tent_blob_step(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_blob_counted(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_blob_probed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_blob_cas(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *count, ngx_uint_t legacy);
static ngx_int_t ngx_http_tent_blob_set(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_blob_cas_loaded(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_blob_ref_t *ref,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_blobs_run_end(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_int_t status);
static ngx_int_t ngx_http_tent_blobs_run_after(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


/* a run for another subsystem: the posts' state in front of its own */
typedef struct {
    ngx_http_tent_post_state_t   st;
    void                        *saved;     /* the caller's ctx->state */
    ngx_http_tent_blob_load_pt   load;
    ngx_http_tent_blob_done_pt   done;
    void                        *data;
} ngx_http_tent_blob_run_t;


/*
 * Attachment bytes are kept once per SHA-256 ("b" rows), whichever posts
 * list them, so each digest has a count of the post versions that list
 * it ("B" rows; docs/store.md has the design and its race analysis).  A
 * change takes its references before the version that holds them is
 * written and gives them back once that version is gone, or was never
 * written; the last one takes the bytes with it.  Each step is a
 * compare-and-set on the count, the bytes written or deleted in its
 * batch, so the count and the bytes never disagree.  A failure leaves a
 * count too high: bytes kept for nothing, never bytes lost.
 */


/* one more reference to a digest; its bytes when they were uploaded */

static ngx_int_t
ngx_http_tent_blob_ref(ngx_pool_t *pool, ngx_array_t *refs,
    ngx_str_t *digest, ngx_str_t *bytes)
{
    ngx_uint_t                 i;
    ngx_http_tent_blob_ref_t  *ref;

    ref = refs->elts;

    for (i = 0; i < refs->nelts; i++) {
        if (ref[i].digest.len == digest->len
            && ngx_strncmp(ref[i].digest.data, digest->data, digest->len)
               == 0)
        {
            ref[i].count++;

            if (bytes) {
                ref[i].bytes = *bytes;
            }

            return NGX_OK;
        }
    }

    ref = ngx_array_push(refs);
    if (ref == NULL) {
        return NGX_ERROR;
    }

    ref->digest.data = ngx_pstrdup(pool, digest);
    if (ref->digest.data == NULL) {
        return NGX_ERROR;
    }

    ref->digest.len = digest->len;
    ref->count = 1;

    if (bytes) {
        ref->bytes = *bytes;

    } else {
        ngx_str_null(&ref->bytes);
    }

    return NGX_OK;
}


/* the references a post version holds: its attachments' digests */

ngx_int_t
ngx_http_tent_blob_refs(ngx_pool_t *pool, ngx_array_t *refs, json_t *post)
{
    size_t      i;
    json_t     *a;
    ngx_str_t   digest;

    json_array_foreach(json_object_get(post, "attachments"), i, a) {
        /* a digest not of ours (none is stored now) counts nothing */

        if (ngx_http_tent_json_str(a, "digest", &digest) == NGX_OK
            && ngx_http_tent_store_digest_valid(&digest) == NGX_OK
            && ngx_http_tent_blob_ref(pool, refs, &digest, NULL) != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* the references of a stored version (a scan's value) */

ngx_int_t
ngx_http_tent_blob_refs_raw(ngx_http_request_t *r, ngx_array_t *refs,
    ngx_str_t *raw)
{
    json_t     *post;
    ngx_int_t   rc;

    post = ngx_http_tent_json_parse(raw, r->connection->log);
    if (post == NULL) {
        /* a damaged record: its bytes are kept */
        return NGX_OK;
    }

    rc = ngx_http_tent_blob_refs(r->pool, refs, post);

    json_decref(post);

    return rc;
}


/* take (sign 1) or give back (-1) st->refs, then run "after" */

ngx_int_t
ngx_http_tent_blobs_adjust(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_int_t sign, ngx_http_tent_route_pt after)
{
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    st->sign = sign;
    st->ref = 0;
    st->tries = 0;
    st->after = after;

    return ngx_http_tent_blob_step(r, ctx);
}


static ngx_int_t
ngx_http_tent_blob_step(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                    key;
    ngx_http_tent_blob_ref_t    *ref;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    if (st->refs == NULL || st->ref >= st->refs->nelts) {
        return st->after(r, ctx);
    }

    ref = st->refs->elts;
    ref = &ref[st->ref];

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_blob_count_key(r->pool, &ctx->entity, &ref->digest,
                                        &key)
           != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "building the read of a reference count");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_blob_counted);
}


/*
 * A step that failed: taking references stops the request (the ones
 * taken stay, too high: kept bytes); giving back goes on with the next.
 */

static ngx_int_t
ngx_http_tent_blob_failed(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_int_t status)
{
    ngx_http_tent_blob_ref_t    *ref;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    if (st->sign > 0) {
        if (st->run) {
            return ngx_http_tent_blobs_run_end(r, ctx, status);
        }

        return ngx_http_tent_send_error(r, status, NULL);
    }

    ref = st->refs->elts;

    ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                  "tent: the bytes of attachment %V are kept: "
                  "their reference count could not be lowered",
                  &ref[st->ref].digest);

    st->ref++;
    st->tries = 0;

    return ngx_http_tent_blob_step(r, ctx);
}


static ngx_int_t
ngx_http_tent_blob_counted(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                    status;
    ngx_str_t                    value;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_blob_ref_t    *ref;
    ngx_http_tent_post_state_t  *st;

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_blob_failed(r, ctx, status);
    }

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_store_value(op, &value);
        return ngx_http_tent_blob_cas(r, ctx, &value, 0);
    }

    if (st->sign < 0) {
        /* no count: bytes stored before counts were kept stay for good */
        st->ref++;
        st->tries = 0;
        return ngx_http_tent_blob_step(r, ctx);
    }

    /* no count yet: are there bytes of a post stored before counts? */

    ref = st->refs->elts;

    return ngx_http_tent_store_get_request(r, NGX_HTTP_TENT_TABLE_BLOB,
                                           &ref[st->ref].digest,
                                           ngx_http_tent_blob_probed);
}


static ngx_int_t
ngx_http_tent_blob_probed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t             status;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_blob_failed(r, ctx, status);
    }

    return ngx_http_tent_blob_cas(r, ctx, NULL,
                                  op->status == NGX_HTTP_TENT_STORE_OK);
}


/*
 * The count is {"n": N}, with "legacy": true when the bytes were there
 * before any count (posts stored before counts were kept hold them
 * uncounted): those bytes are never reclaimed.  "count" is the record
 * read, NULL when there was none.
 */

static ngx_int_t
ngx_http_tent_blob_cas(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_str_t *count, ngx_uint_t legacy)
{
    json_t                      *rec;
    json_int_t                   n;
    ngx_str_t                    key, bkey, value;
    ngx_http_tent_blob_ref_t    *ref;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;
    ref = st->refs->elts;
    ref = &ref[st->ref];

    n = 0;

    if (count) {
        rec = ngx_http_tent_json_parse(count, r->connection->log);
        if (rec == NULL) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "tent: reading the reference count of attachment "
                          "%V failed", &ref->digest);
            return ngx_http_tent_blob_failed(r, ctx,
                                             NGX_HTTP_INTERNAL_SERVER_ERROR);
        }

        n = json_integer_value(json_object_get(rec, "n"));
        legacy = json_is_true(json_object_get(rec, "legacy"));
        json_decref(rec);
    }

    n += st->sign * ref->count;

    ngx_log_debug5(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent posts: attachment %V: %L references after %s %i%s",
                   &ref->digest, (int64_t) n,
                   st->sign > 0 ? "taking" : "giving back", ref->count,
                   legacy ? " (its bytes kept for good)" : "");

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_blob_count_key(r->pool, &ctx->entity, &ref->digest,
                                        &key)
           != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity, NGX_HTTP_TENT_TABLE_BLOB,
                             &ref->digest, &bkey)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "building the keys of an attachment's bytes");
    }

    if (n <= 0 && !legacy) {

        if (count == NULL) {
            /* nothing to give back */
            st->ref++;
            st->tries = 0;
            return ngx_http_tent_blob_step(r, ctx);
        }

        /*
         * the last reference: the count and the bytes go together (the
         * file once the count's removal is written; a "b" row of bytes
         * stored before files in the same batch)
         */

        if (ngx_http_tent_store_cas(op, &key, count, count) != NGX_OK
            || ngx_http_tent_store_write_del(op, &key) != NGX_OK
            || ngx_http_tent_store_write_del(op, &bkey) != NGX_OK
            || ngx_http_tent_store_write_unlink(op, &ctx->entity,
                                                &ref->digest)
               != NGX_OK)
        {
            return ngx_http_tent_internal_error(r,
                       "adding the bytes' removal to the batch");
        }

    } else {
        value.data = ngx_pnalloc(r->pool, sizeof("{\"n\":,\"legacy\":true}")
                                          + NGX_INT64_LEN);
        if (value.data == NULL) {
            return ngx_http_tent_internal_error(r, "writing a reference count");
        }

        value.len = ngx_sprintf(value.data, "{\"n\":%L%s}",
                                (int64_t) ngx_max(n, 0),
                                legacy ? ",\"legacy\":true" : "")
                    - value.data;

        if (ngx_http_tent_store_cas(op, &key, count, &value) != NGX_OK) {
            return ngx_http_tent_internal_error(r,
                       "adding the reference count to the batch");
        }

        /* the first reference brings the bytes: a file, written first */

        if (count == NULL && !legacy && ref->bytes.data == NULL
            && st->run && st->sign > 0)
        {
            return ngx_http_tent_blob_cas_loaded(r, ctx, ref, op);
        }

        if (count == NULL && !legacy && ref->bytes.data
            && ngx_http_tent_store_write_file(op, &ctx->entity, &ref->digest,
                                              &ref->bytes)
               != NGX_OK)
        {
            return ngx_http_tent_internal_error(r,
                       "adding the attachment's bytes to the batch");
        }
    }

    return ngx_http_tent_store_submit_request(r, op, ngx_http_tent_blob_set);
}


static ngx_int_t
ngx_http_tent_blob_set(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    ngx_int_t                    status;
    ngx_str_t                    value;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_post_state_t  *st;

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_blob_failed(r, ctx, status);
    }

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        st->ref++;
        st->tries = 0;
        return ngx_http_tent_blob_step(r, ctx);
    }

    /* another change moved the count meanwhile: again from what it is */

    if (++st->tries > NGX_HTTP_TENT_BLOB_TRIES) {
        return ngx_http_tent_blob_failed(r, ctx,
                                         NGX_HTTP_SERVICE_UNAVAILABLE);
    }

    if (op->status == NGX_HTTP_TENT_STORE_CONFLICT) {
        ngx_http_tent_store_value(op, &value);
        return ngx_http_tent_blob_cas(r, ctx, &value, 0);
    }

    /* the count went away meanwhile: read it again */

    return ngx_http_tent_blob_step(r, ctx);
}


/*
 * A count created by another subsystem's run: the bytes are asked for
 * now (the import decodes or holds them), copied into the CAS and freed,
 * so that one digest's bytes are held at a time beside the batch.
 */

static ngx_int_t
ngx_http_tent_blob_cas_loaded(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_blob_ref_t *ref, ngx_http_tent_store_op_t *op)
{
    ngx_int_t                  rc;
    ngx_str_t                  bytes;
    ngx_http_tent_blob_run_t  *w;

    w = ctx->state;

    ngx_str_null(&bytes);

    if (w->load == NULL
        || w->load(r, w->data, &ref->digest, &bytes) != NGX_OK
        || bytes.data == NULL)
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "tent: the bytes of attachment %V could not be had",
                      &ref->digest);
        return ngx_http_tent_blob_failed(r, ctx,
                                         NGX_HTTP_INTERNAL_SERVER_ERROR);
    }

    rc = ngx_http_tent_store_write_file(op, &ctx->entity, &ref->digest,
                                        &bytes);

    ngx_pfree(r->pool, bytes.data);

    if (rc != NGX_OK) {
        return ngx_http_tent_blob_failed(r, ctx,
                                         NGX_HTTP_INTERNAL_SERVER_ERROR);
    }

    return ngx_http_tent_store_submit_request(r, op, ngx_http_tent_blob_set);
}


/* a reference added to a list of them (the import's) */

ngx_int_t
ngx_http_tent_blob_ref_add(ngx_pool_t *pool, ngx_array_t *refs,
    ngx_str_t *digest, ngx_str_t *bytes)
{
    return ngx_http_tent_blob_ref(pool, refs, digest, bytes);
}


/*
 * Another subsystem's references taken or given back by the same path
 * as a post's: ctx->state is the run's while it goes, the caller's again
 * when "done" is called.
 */

ngx_int_t
ngx_http_tent_blobs_run(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_array_t *refs, ngx_int_t sign, ngx_http_tent_blob_load_pt load,
    ngx_http_tent_blob_done_pt done, void *data)
{
    ngx_http_tent_blob_run_t  *w;

    w = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_blob_run_t));
    if (w == NULL) {
        return done(r, data, NGX_HTTP_INTERNAL_SERVER_ERROR, 0);
    }

    w->saved = ctx->state;
    w->load = load;
    w->done = done;
    w->data = data;
    w->st.refs = refs;
    w->st.run = w;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent posts: a run of %ui attachment digests, sign %i",
                   refs ? refs->nelts : 0, sign);

    ctx->state = &w->st;

    return ngx_http_tent_blobs_adjust(r, ctx, sign,
                                      ngx_http_tent_blobs_run_after);
}


static ngx_int_t
ngx_http_tent_blobs_run_after(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_blobs_run_end(r, ctx, NGX_OK);
}


static ngx_int_t
ngx_http_tent_blobs_run_end(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_int_t status)
{
    ngx_http_tent_blob_run_t  *w;

    w = ctx->state;
    ctx->state = w->saved;

    return w->done(r, w->data, status, w->st.ref);
}


/*
 * The files of a multipart post: each becomes {"category", "type",
 * "name", "size"} in the post (the form name without "[n]", the file
 * name, its Content-Type, its length), and a reference, with its bytes,
 * to its SHA-256: the bytes are stored when that is taken.
 */

ngx_int_t
ngx_http_tent_post_attachments(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *post, ngx_array_t *refs)
{
    u_char                    *p, digest[32];
    json_t                    *list, *a;
    ngx_str_t                  category, name, type, hex;
    ngx_uint_t                 i;
    unsigned int               dlen;
    ngx_http_tent_part_t      *part;
    ngx_http_tent_loc_conf_t  *lcf;

    if (ctx->parts == NULL || ctx->parts->nelts == 0) {
        return NGX_OK;
    }

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_tent_module);

    list = json_array();
    if (list == NULL || json_object_set_new(post, "attachments", list) != 0) {
        return NGX_ERROR;
    }

    part = ctx->parts->elts;

    for (i = 0; i < ctx->parts->nelts; i++) {

        if (part[i].data.len > lcf->attachment_max) {
            return NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
        }

        category = part[i].name;

        p = ngx_strlchr(category.data, category.data + category.len, '[');
        if (p) {
            category.len = p - category.data;
        }

        name = part[i].filename.len ? part[i].filename : category;
        type = part[i].type;

        if (type.len == 0) {
            ngx_str_set(&type, "application/octet-stream");
        }

        if (name.len == 0 || name.len > 256 || type.len > 256
            || category.len > 256
            || ngx_strlchr(name.data, name.data + name.len, '/')
            || ngx_strlchr(name.data, name.data + name.len, '\0'))
        {
            return NGX_DECLINED;
        }

        /* the type is sent back as Content-Type: no bare CR or LF in it */

        for (p = type.data; p < type.data + type.len; p++) {
            if (*p < 0x20 || *p == 0x7f) {
                return NGX_DECLINED;
            }
        }

        if (EVP_Digest(part[i].data.data, part[i].data.len, digest, &dlen,
                       EVP_sha256(), NULL)
            != 1)
        {
            return NGX_ERROR;
        }

        hex.data = ngx_pnalloc(r->pool, 2 * dlen);
        if (hex.data == NULL) {
            return NGX_ERROR;
        }

        hex.len = ngx_hex_dump(hex.data, digest, dlen) - hex.data;

        a = json_pack("{s:s%, s:s%, s:s%, s:I, s:s%}",
                      "category", category.data, category.len,
                      "type", type.data, type.len,
                      "name", name.data, name.len,
                      "size", (json_int_t) part[i].data.len,
                      "digest", hex.data, hex.len);

        if (a == NULL || json_array_append_new(list, a) != 0) {
            /* not valid UTF-8, most likely */
            return NGX_DECLINED;
        }

        if (ngx_http_tent_blob_ref(r->pool, refs, &hex, &part[i].data)
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}
