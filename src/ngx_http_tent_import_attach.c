
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * An import's attachments (docs/import.md, "Attachments"): each version's
 * list checked, the bytes given inline (base64, as ?attachments=inline
 * exports them) checked against their digest and size in pass 1, and
 * the digests' counts taken by the posts' own compare-and-set path
 * (ngx_http_tent_blobs_run) before the posts' batch, given back if that
 * batch is not written.
 */


#include "ngx_http_tent_module.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_import_private.h"

#include <openssl/evp.h>


static ngx_int_t ngx_http_tent_import_attach_note(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, char *pkey, const char *verdict);
static ngx_int_t ngx_http_tent_import_attach_check(ngx_http_request_t *r,
    json_t *a, ngx_str_t *digest, json_int_t size, const char **error);
static ngx_int_t ngx_http_tent_import_attach_load(ngx_http_request_t *r,
    void *data, ngx_str_t *digest, ngx_str_t *bytes);
static ngx_int_t ngx_http_tent_import_attach_taken(ngx_http_request_t *r,
    void *data, ngx_int_t status, ngx_uint_t taken);
static ngx_int_t ngx_http_tent_import_attach_given(ngx_http_request_t *r,
    void *data, ngx_int_t status, ngx_uint_t taken);


/* a string field of at most 256 bytes, no control characters */

static ngx_int_t
ngx_http_tent_import_attach_str(json_t *a, const char *name, ngx_str_t *s)
{
    u_char  *p;

    if (ngx_http_tent_json_str(a, name, s) != NGX_OK
        || s->len == 0 || s->len > 256)
    {
        return NGX_DECLINED;
    }

    for (p = s->data; p < s->data + s->len; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            return NGX_DECLINED;
        }
    }

    return NGX_OK;
}


/*
 * A version's attachments: the ones with their bytes inline are kept
 * (as a create would list them), and counted (pass 2); the others are
 * dropped from the version, *dropped counts them.  A malformed one, or
 * bytes that are not their digest's, make the post invalid.
 */

ngx_int_t
ngx_http_tent_import_attachments(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, json_t *given, json_t *post,
    ngx_uint_t *dropped, const char **error)
{
    size_t       i;
    json_t      *list, *kept, *a, *data, *v;
    ngx_str_t    category, type, name, digest;
    char         key[NGX_HTTP_TENT_DIGEST_LEN + 1];
    char         pkey[NGX_PTR_SIZE * 2 + 8];
    ngx_int_t    rc;
    json_int_t   size;

    list = json_object_get(given, "attachments");

    kept = json_array();
    if (kept == NULL || json_object_set_new(post, "attachments", kept) != 0) {
        return NGX_ERROR;
    }

    if (list == NULL || json_is_null(list)) {
        return NGX_OK;
    }

    if (!json_is_array(list)) {
        *error = "attachments must be a list";
        return NGX_DECLINED;
    }

    json_array_foreach(list, i, a) {

        v = json_object_get(a, "size");

        if (!json_is_object(a)
            || ngx_http_tent_import_attach_str(a, "category", &category)
               != NGX_OK
            || ngx_http_tent_import_attach_str(a, "type", &type) != NGX_OK
            || ngx_http_tent_import_attach_str(a, "name", &name) != NGX_OK
            || ngx_strlchr(name.data, name.data + name.len, '/')
            || !json_is_integer(v) || json_integer_value(v) < 0
            || ngx_http_tent_json_str(a, "digest", &digest) != NGX_OK
            || ngx_http_tent_store_digest_valid(&digest) != NGX_OK)
        {
            *error = "an attachment must be {\"category\", \"type\", "
                     "\"name\", \"size\", \"digest\"}: strings, a size, "
                     "64 lowercase hex digits";
            return NGX_DECLINED;
        }

        size = json_integer_value(v);
        data = json_object_get(a, "data");

        if (!json_is_string(data)) {
            /* by URL, or its bytes missing at the exporter: not taken */
            (*dropped)++;
            continue;
        }

        /*
         * the bytes checked once, in pass 1, one at a time; pass 2 takes
         * the verdict noted for this very string
         */

        ngx_sprintf((u_char *) pkey, "%p%Z", data);

        if (im->probe) {
            rc = ngx_http_tent_import_attach_check(r, data, &digest, size,
                                                   error);
            if (rc == NGX_ERROR) {
                return NGX_ERROR;
            }

            if (ngx_http_tent_import_attach_note(r, im, pkey,
                                                 rc == NGX_OK ? "" : *error)
                != NGX_OK)
            {
                return NGX_ERROR;
            }

            if (rc != NGX_OK) {
                return NGX_DECLINED;
            }

        } else {
            v = json_object_get(im->verified, pkey);

            if (!json_is_string(v)) {
                *error = "an attachment not checked";
                return NGX_DECLINED;
            }

            if (json_string_length(v)) {
                *error = json_string_value(v);
                return NGX_DECLINED;
            }

            ngx_memcpy(key, digest.data, digest.len);
            key[digest.len] = '\0';

            if (ngx_http_tent_blob_ref_add(r->pool, im->refs, &digest, NULL)
                != NGX_OK
                || json_object_set(im->sources, key, data) != 0)
            {
                return NGX_ERROR;
            }
        }

        a = json_pack("{s:s%, s:s%, s:s%, s:I, s:s%}",
                      "category", category.data, category.len,
                      "type", type.data, type.len,
                      "name", name.data, name.len,
                      "size", size,
                      "digest", digest.data, digest.len);

        if (a == NULL || json_array_append_new(kept, a) != 0) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* pass 1's verdict on an attachment's data: "" or why it is refused */

static ngx_int_t
ngx_http_tent_import_attach_note(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, char *pkey, const char *verdict)
{
    if (im->verified == NULL) {
        im->verified = json_object();

        if (im->verified == NULL
            || ngx_http_tent_json_cleanup(r->pool, im->verified) != NGX_OK)
        {
            json_decref(im->verified);
            im->verified = NULL;
            return NGX_ERROR;
        }
    }

    return json_object_set_new(im->verified, pkey, json_string(verdict))
           == 0 ? NGX_OK : NGX_ERROR;
}


/* base64 bytes: their size, their SHA-256 */

static ngx_int_t
ngx_http_tent_import_attach_check(ngx_http_request_t *r, json_t *a,
    ngx_str_t *digest, json_int_t size, const char **error)
{
    u_char                    *p, md[EVP_MAX_MD_SIZE];
    u_char                     hex[2 * EVP_MAX_MD_SIZE];
    ngx_int_t                  rc;
    ngx_str_t                  src, bytes;
    unsigned int               mdlen;
    ngx_http_tent_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_tent_module);

    src.data = (u_char *) json_string_value(a);
    src.len = json_string_length(a);

    /* the size first: nothing over the cap is decoded */

    if (ngx_base64_decoded_length(src.len) > lcf->attachment_max + 2
        || (size_t) size > lcf->attachment_max)
    {
        *error = "an attachment is over tent_max_attachment_size";
        return NGX_DECLINED;
    }

    p = ngx_pnalloc(r->pool, ngx_base64_decoded_length(src.len) + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    bytes.data = p;
    rc = NGX_OK;

    if (src.len % 4 != 0 || ngx_decode_base64(&bytes, &src) != NGX_OK) {
        *error = "an attachment's data is not base64";
        rc = NGX_DECLINED;

    } else if (bytes.len > lcf->attachment_max) {
        *error = "an attachment is over tent_max_attachment_size";
        rc = NGX_DECLINED;

    } else if ((json_int_t) bytes.len != size) {
        *error = "an attachment's data is not its size";
        rc = NGX_DECLINED;

    } else if (EVP_Digest(bytes.data, bytes.len, md, &mdlen, EVP_sha256(),
                          NULL)
               != 1)
    {
        rc = NGX_ERROR;

    } else if (ngx_hex_dump(hex, md, mdlen) - hex != (ssize_t) digest->len
               || ngx_strncmp(hex, digest->data, digest->len) != 0)
    {
        *error = "an attachment's data is not its digest's (SHA-256)";
        rc = NGX_DECLINED;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent import: attachment %V, %uz bytes: %s", digest,
                   bytes.len, rc == NGX_OK ? "its digest" : "refused");

    ngx_pfree(r->pool, p);

    return rc;
}


/* the bytes of a digest whose count is created: decoded now */

static ngx_int_t
ngx_http_tent_import_attach_load(ngx_http_request_t *r, void *data,
    ngx_str_t *digest, ngx_str_t *bytes)
{
    u_char                  *p;
    json_t                  *a;
    char                     key[NGX_HTTP_TENT_DIGEST_LEN + 1];
    ngx_str_t                src;
    ngx_http_tent_import_t  *im;

    im = data;

    if (digest->len != NGX_HTTP_TENT_DIGEST_LEN) {
        return NGX_ERROR;
    }

    ngx_memcpy(key, digest->data, digest->len);
    key[digest->len] = '\0';

    a = json_object_get(im->sources, key);
    if (!json_is_string(a)) {
        return NGX_ERROR;
    }

    src.data = (u_char *) json_string_value(a);
    src.len = json_string_length(a);

    p = ngx_pnalloc(r->pool, ngx_base64_decoded_length(src.len) + 1);
    if (p == NULL) {
        return NGX_ERROR;
    }

    bytes->data = p;

    if (ngx_decode_base64(bytes, &src) != NGX_OK) {
        ngx_pfree(r->pool, p);
        ngx_str_null(bytes);
        return NGX_ERROR;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent import: attachment %V: %uz bytes to its file",
                   digest, bytes->len);

    return NGX_OK;
}


/* before the posts' batch: every digest's count taken */

ngx_int_t
ngx_http_tent_import_attach_take(ngx_http_request_t *r,
    ngx_http_tent_import_t *im)
{
    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent import: taking %ui attachment digests",
                   im->refs->nelts);

    im->refs_taken = 1;

    return ngx_http_tent_blobs_run(r, ngx_http_tent_get_ctx(r), im->refs, 1,
                                   ngx_http_tent_import_attach_load,
                                   ngx_http_tent_import_attach_taken, im);
}


static ngx_int_t
ngx_http_tent_import_attach_taken(ngx_http_request_t *r, void *data,
    ngx_int_t status, ngx_uint_t taken)
{
    json_t                  *entry;
    ngx_http_tent_import_t  *im;

    im = data;

    if (status == NGX_OK) {
        return ngx_http_tent_import_next(r, im);
    }

    /* the posts are not written; what was taken goes back */

    ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                  "tent import: attachment counts not taken (%i): "
                  "posts not written", status);

    entry = im->entries[NGX_HTTP_TENT_IMPORT_SECTION_POSTS];

    json_object_set_new(entry, "taken", json_integer(0));
    json_object_set_new(entry, "written", json_false());
    json_object_set_new(entry, "error",
                        json_string("the attachments could not be stored:"
                                    " none written"));

    im->ops[NGX_HTTP_TENT_IMPORT_SECTION_POSTS] = NULL;
    im->refs->nelts = taken;

    return ngx_http_tent_import_attach_give(r, im);
}


/* the posts' batch not written: the counts taken given back */

ngx_int_t
ngx_http_tent_import_attach_give(ngx_http_request_t *r,
    ngx_http_tent_import_t *im)
{
    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent import: giving back %ui attachment digests",
                   im->refs->nelts);

    im->refs_taken = 0;

    if (im->refs->nelts == 0) {
        return ngx_http_tent_import_next(r, im);
    }

    return ngx_http_tent_blobs_run(r, ngx_http_tent_get_ctx(r), im->refs, -1,
                                   NULL, ngx_http_tent_import_attach_given,
                                   im);
}


static ngx_int_t
ngx_http_tent_import_attach_given(ngx_http_request_t *r, void *data,
    ngx_int_t status, ngx_uint_t taken)
{
    ngx_http_tent_import_t  *im;

    im = data;
    im->refs->nelts = 0;

    return ngx_http_tent_import_next(r, im);
}
