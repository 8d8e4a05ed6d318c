
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


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_remote.h"
#include "ngx_http_tent_import_private.h"

#include <openssl/evp.h>


static ngx_int_t ngx_http_tent_import_attach_note(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, char *pkey, const char *verdict);
static ngx_int_t ngx_http_tent_import_attach_url(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, json_t *url, ngx_str_t *digest,
    json_int_t size, const char **error);
static ngx_int_t ngx_http_tent_import_attach_check(ngx_http_request_t *r,
    json_t *a, ngx_str_t *digest, json_int_t size, const char **error);
static ngx_int_t ngx_http_tent_import_attach_load(ngx_http_request_t *r,
    void *data, ngx_str_t *digest, ngx_str_t *bytes);
static ngx_int_t ngx_http_tent_import_attach_step(ngx_http_request_t *r,
    ngx_http_tent_import_t *im);
static ngx_int_t ngx_http_tent_import_attach_skip(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, const char *why);
static ngx_int_t ngx_http_tent_import_fetched(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f);
static ngx_int_t ngx_http_tent_import_attach_held(ngx_http_request_t *r,
    void *data, ngx_int_t status, ngx_uint_t taken);
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
    json_t      *list, *kept, *a, *data, *v, *url;
    ngx_str_t    category, type, name, digest;
    char         key[NGX_HTTP_TENT_DIGEST_LEN + 1];
    char         ikey[NGX_HTTP_TENT_DIGEST_LEN + 3];
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

            /*
             * The export gives a digest's bytes once, at its first
             * attachment (docs/export.md): a later one, of the same
             * size, takes the bytes checked above, with no fetch
             */

            ngx_sprintf((u_char *) ikey, "i:%V%Z", &digest);
            v = im->verified ? json_object_get(im->verified, ikey) : NULL;

            ngx_memcpy(key, digest.data, digest.len);
            key[digest.len] = '\0';

            /* pass 2: given above in this document, as pass 1 found */

            if (json_is_integer(v) && json_integer_value(v) == size
                && (im->probe || json_object_get(im->sources, key) != NULL))
            {
                if (!im->probe
                    && ngx_http_tent_blob_ref_add(r->pool, im->refs,
                                                  &digest, NULL)
                       != NGX_OK)
                {
                    return NGX_ERROR;
                }

                ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                               "tent import: attachment %V: its bytes "
                               "given above", &digest);
                goto keep;
            }

            url = json_object_get(a, "url");

            if (!json_is_string(url)) {
                /* its bytes missing at the exporter: not taken */
                (*dropped)++;
                continue;
            }

            /* by URL: fetched when its count is taken */

            switch (ngx_http_tent_import_attach_url(r, im, url, &digest,
                                                    size, error))
            {
            case NGX_OK:
                break;
            case NGX_DONE:
                im->drop_reason = *error;
                *error = NULL;
                (*dropped)++;
                continue;
            case NGX_DECLINED:
                return NGX_DECLINED;
            default:
                return NGX_ERROR;
            }

            goto keep;
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

            /* a later attachment of this digest may omit the bytes */

            ngx_sprintf((u_char *) ikey, "i:%V%Z", &digest);

            if (json_object_set_new(im->verified, ikey, json_integer(size))
                != 0)
            {
                return NGX_ERROR;
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

    keep:

        /* each distinct digest's bytes once, against the quota of bytes */

        ngx_memcpy(key, digest.data, digest.len);
        key[digest.len] = '\0';

        if (!im->probe && json_object_get(im->quota_digests, key) == NULL) {
            if (json_object_set_new(im->quota_digests, key, json_true())
                != 0)
            {
                return NGX_ERROR;
            }

            im->quota_bytes += size;
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


/*
 * An attachment by URL: an http(s) URL of visible ASCII, its size under
 * the cap; pass 1 counts the distinct digests and their sizes against
 * the import's caps; pass 2 notes the URL as the digest's source (inline
 * bytes of the same digest are preferred).
 */

static ngx_int_t
ngx_http_tent_import_attach_url(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, json_t *url, ngx_str_t *digest,
    json_int_t size, const char **error)
{
    u_char                    *p;
    char                       key[NGX_HTTP_TENT_DIGEST_LEN + 3];
    json_t                    *v;
    ngx_str_t                  u;
    ngx_http_tent_import_fetch_t  *fe;
    ngx_http_tent_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_tent_module);

    u.data = (u_char *) json_string_value(url);
    u.len = json_string_length(url);

    if (u.len > 2048
        || !((u.len > 7 && ngx_strncmp(u.data, "http://", 7) == 0)
             || (u.len > 8 && ngx_strncmp(u.data, "https://", 8) == 0)))
    {
        *error = "an attachment's url must be an http or https URL";
        return NGX_DECLINED;
    }

    for (p = u.data; p < u.data + u.len; p++) {
        if (*p <= 0x20 || *p >= 0x7f) {
            *error = "an attachment's url must be visible ASCII";
            return NGX_DECLINED;
        }
    }

    if ((size_t) size > lcf->attachment_max) {
        *error = "an attachment is over tent_max_attachment_size";
        return NGX_DECLINED;
    }

    ngx_sprintf((u_char *) key, "u:%*s%Z", digest->len, digest->data);

    if (im->probe) {
        v = im->verified ? json_object_get(im->verified, key) : NULL;

        if (v == NULL) {
            if (++im->fetches > NGX_HTTP_TENT_IMPORT_FETCH_MAX) {
                *error = "more than 1000 attachments by URL in one import";

            } else {
                im->fetch_bytes += size;

                if (im->fetch_bytes > NGX_HTTP_TENT_IMPORT_FETCH_BYTES) {
                    *error = "more than 256 MB of attachments by URL in "
                             "one import";
                }
            }

            if (ngx_http_tent_import_attach_note(r, im, key,
                                                 *error ? *error : "")
                != NGX_OK)
            {
                return NGX_ERROR;
            }

            if (*error) {
                return NGX_DECLINED;
            }

            /* fetched once the rows are checked, before pass 2 */

            if (im->fetch_list == NULL) {
                im->fetch_list = ngx_array_create(r->pool, 8,
                                     sizeof(ngx_http_tent_import_fetch_t));
                if (im->fetch_list == NULL) {
                    return NGX_ERROR;
                }
            }

            fe = ngx_array_push(im->fetch_list);
            if (fe == NULL) {
                return NGX_ERROR;
            }

            fe->digest = *digest;
            fe->url = u;
            fe->size = (size_t) size;

            return NGX_OK;
        }

    } else {
        v = im->verified ? json_object_get(im->verified, key) : NULL;
    }

    /* pass 1's verdict on this digest, in both passes */

    if (!json_is_string(v)) {
        *error = "an attachment not checked";
        return NGX_DECLINED;
    }

    if (json_string_length(v)) {
        *error = json_string_value(v);

        if (**error == '!') {
            /* its fetch failed: the attachment left out, the post kept */
            (*error)++;
            return NGX_DONE;
        }

        return NGX_DECLINED;
    }

    if (im->probe) {
        return NGX_OK;
    }

    /* its bytes are here already: the fetch took a count of its own */

    if (ngx_http_tent_blob_ref_add(r->pool, im->refs, digest, NULL)
        != NGX_OK)
    {
        return NGX_ERROR;
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


/*
 * The bytes of a digest whose count is created: the fetched answer, or
 * the inline data decoded now.
 */

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

    if (im->fetched.data) {
        *bytes = im->fetched;
        ngx_str_null(&im->fetched);
        return NGX_OK;
    }

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


/*
 * After pass 1 and the look-up, before pass 2: each digest given by URL
 * fetched, one at a time, checked against its digest and stored with a
 * count of its own (held until the import ends), so that one fetched
 * attachment is held at a time and pass 2 knows which were had.  A
 * failure notes "!why": pass 2 leaves that attachment out.
 */

ngx_int_t
ngx_http_tent_import_attach_fetch(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_import_t  *im;

    im = ngx_http_tent_get_ctx(r)->state;
    im->take = 0;

    return ngx_http_tent_import_attach_step(r, im);
}


static ngx_int_t
ngx_http_tent_import_attach_step(ngx_http_request_t *r,
    ngx_http_tent_import_t *im)
{
    ngx_http_tent_fetch_t         *f;
    ngx_http_tent_loc_conf_t      *lcf;
    ngx_http_tent_import_fetch_t  *fe;

    if (im->fetch_list == NULL || im->take >= im->fetch_list->nelts) {
        return ngx_http_tent_import_build(r, NULL);
    }

    fe = im->fetch_list->elts;
    fe = &fe[im->take];

    ngx_str_null(&im->fetched);

    /* unsigned: the document's credentials are not the source's owner's */

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_tent_module);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent import: attachment %V: fetching %V",
                   &fe->digest, &fe->url);

    f = ngx_http_tent_remote_fetch(r, &fe->url, "GET");
    if (f == NULL) {
        return ngx_http_tent_import_attach_skip(r, im,
                   "!the fetch of an attachment could not be made");
    }

    /* the attachment's route answers an Accept of its type, or any */
    ngx_str_set(&f->accept, "*/*");
    /*
     * no more than its size (itself under the cap): the answers stay in
     * the request's pool until the import answers, so the sizes' cap
     * bounds them
     */
    f->max_response = ngx_min(fe->size, lcf->attachment_max);
    f->max_response = ngx_max(f->max_response, 1);
    f->redirects = 0;

    return ngx_http_tent_fetch_request(r, f, ngx_http_tent_import_fetched);
}


/* a digest by URL not had: pass 2 leaves it out, saying why */

static ngx_int_t
ngx_http_tent_import_attach_skip(ngx_http_request_t *r,
    ngx_http_tent_import_t *im, const char *why)
{
    char                           key[NGX_HTTP_TENT_DIGEST_LEN + 3];
    ngx_http_tent_import_fetch_t  *fe;

    fe = im->fetch_list->elts;
    fe = &fe[im->take];

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "tent import: attachment %V at \"%V\" left out: %s",
                  &fe->digest, &fe->url, why + 1);

    ngx_sprintf((u_char *) key, "u:%V%Z", &fe->digest);

    if (ngx_http_tent_import_attach_note(r, im, key, why) != NGX_OK) {
        return ngx_http_tent_import_fail(r, im,
                   "noting an attachment left out");
    }

    im->take++;

    return ngx_http_tent_import_attach_step(r, im);
}


static ngx_int_t
ngx_http_tent_import_fetched(ngx_http_request_t *r, ngx_http_tent_fetch_t *f)
{
    u_char                         md[EVP_MAX_MD_SIZE];
    u_char                         hex[2 * EVP_MAX_MD_SIZE];
    unsigned int                   mdlen;
    ngx_array_t                   *one;
    ngx_http_tent_import_t        *im;
    ngx_http_tent_blob_ref_t      *ref;
    ngx_http_tent_import_fetch_t  *fe;

    im = ngx_http_tent_get_ctx(r)->state;
    fe = im->fetch_list->elts;
    fe = &fe[im->take];

    if (f->result != NGX_HTTP_TENT_FETCH_OK) {
        if (f->result == NGX_HTTP_TENT_FETCH_TOO_BIG) {
            return ngx_http_tent_import_attach_skip(r, im,
                       "!fetched by URL: more bytes than its size");
        }

        if (f->result == NGX_HTTP_TENT_FETCH_REFUSED) {
            return ngx_http_tent_import_attach_skip(r, im,
                       "!fetched by URL: the address is not allowed "
                       "(tent_outbound_allow)");
        }

        if (f->result == NGX_HTTP_TENT_FETCH_TIMEOUT
            || f->result == NGX_HTTP_TENT_FETCH_DEADLINE)
        {
            return ngx_http_tent_import_attach_skip(r, im,
                       "!fetched by URL: timed out");
        }

        return ngx_http_tent_import_attach_skip(r, im,
                   "!fetched by URL: the fetch failed");
    }

    if (f->status != NGX_HTTP_OK) {
        return ngx_http_tent_import_attach_skip(r, im,
                   "!fetched by URL: its server did not answer 200");
    }

    if (EVP_Digest(f->body.data, f->body.len, md, &mdlen, EVP_sha256(),
                   NULL)
        != 1
        || ngx_hex_dump(hex, md, mdlen) - hex != (ssize_t) fe->digest.len
        || ngx_strncmp(hex, fe->digest.data, fe->digest.len) != 0)
    {
        return ngx_http_tent_import_attach_skip(r, im,
                   "!fetched by URL: not its digest's bytes (SHA-256)");
    }

    /* the caps counted on what came, whatever the document said */

    im->fetch_got += f->body.len;

    if (im->fetch_got > NGX_HTTP_TENT_IMPORT_FETCH_BYTES) {
        return ngx_http_tent_import_attach_skip(r, im,
                   "!fetched by URL: more than 256 MB in one import");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent import: attachment %V: %uz bytes fetched",
                   &fe->digest, f->body.len);

    im->fetched = f->body;

    if (im->fetched.data == NULL) {
        /* no bytes: a valid empty file */
        im->fetched.data = (u_char *) "";
    }

    /* a count of its own, its bytes with it when it is the first */

    one = ngx_array_create(r->pool, 1, sizeof(ngx_http_tent_blob_ref_t));
    if (one == NULL) {
        return ngx_http_tent_import_fail(r, im,
                   "allocating a fetched attachment's count");
    }

    ref = ngx_array_push(one);
    ref->digest = fe->digest;
    ref->count = 1;
    ngx_str_null(&ref->bytes);

    return ngx_http_tent_blobs_run(r, ngx_http_tent_get_ctx(r), one, 1,
                                   ngx_http_tent_import_attach_load,
                                   ngx_http_tent_import_attach_held, im);
}


static ngx_int_t
ngx_http_tent_import_attach_held(ngx_http_request_t *r, void *data,
    ngx_int_t status, ngx_uint_t taken)
{
    ngx_http_tent_import_t        *im;
    ngx_http_tent_blob_ref_t      *ref;
    ngx_http_tent_import_fetch_t  *fe;

    im = data;

    ngx_str_null(&im->fetched);

    if (status != NGX_OK) {
        return ngx_http_tent_import_attach_skip(r, im,
                   "!fetched by URL: its bytes could not be stored");
    }

    if (im->held == NULL) {
        im->held = ngx_array_create(r->pool, 8,
                                    sizeof(ngx_http_tent_blob_ref_t));
        if (im->held == NULL) {
            return ngx_http_tent_import_fail(r, im,
                       "allocating the fetched attachments' counts");
        }
    }

    fe = im->fetch_list->elts;

    ref = ngx_array_push(im->held);
    if (ref == NULL) {
        return ngx_http_tent_import_fail(r, im,
                   "keeping a fetched attachment's count");
    }

    ref->digest = fe[im->take].digest;
    ref->count = 1;
    ngx_str_null(&ref->bytes);

    im->take++;

    return ngx_http_tent_import_attach_step(r, im);
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


/* the import's end: the fetched digests' own counts given back */

ngx_int_t
ngx_http_tent_import_attach_release(ngx_http_request_t *r,
    ngx_http_tent_import_t *im)
{
    ngx_array_t  *held;

    held = im->held;
    im->held = NULL;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent import: giving back %ui fetched digests' counts",
                   held->nelts);

    return ngx_http_tent_blobs_run(r, ngx_http_tent_get_ctx(r), held, -1,
                                   NULL, ngx_http_tent_import_attach_given,
                                   im);
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
