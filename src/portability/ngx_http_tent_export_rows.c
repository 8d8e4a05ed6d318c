
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The export's rendering (docs/export.md): a page's buffers, and each
 * table's rows as the document holds them.  Rows are the records as
 * stored, less what is this server's business or another entity's; the
 * secrets stay.  Posts are their versions grouped by post, across pages.
 */


#define NGX_HTTP_TENT_EXPORT_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_export.h"
#include "ngx_http_tent_export_private.h"


/* the page's output: bytes copied into its buffers */

ngx_int_t
ngx_http_tent_export_append(ngx_http_tent_export_t *ex, const char *data,
    size_t len)
{
    size_t        n;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    while (len) {
        b = ex->buf;

        if (b == NULL || b->last == b->end) {
            b = ngx_create_temp_buf(ex->page,
                                    ngx_max(len, NGX_HTTP_TENT_EXPORT_BUF));
            cl = ngx_alloc_chain_link(ex->page);
            if (b == NULL || cl == NULL) {
                return NGX_ERROR;
            }

            cl->buf = b;
            cl->next = NULL;
            *ex->last = cl;
            ex->last = &cl->next;
            ex->buf = b;
        }

        n = ngx_min(len, (size_t) (b->end - b->last));
        b->last = ngx_cpymem(b->last, data, n);
        data += n;
        len -= n;
        ex->bytes += n;
    }

    return NGX_OK;
}


static int
ngx_http_tent_export_piece(const char *buf, size_t size, void *data)
{
    return ngx_http_tent_export_append(data, buf, size) == NGX_OK ? 0 : -1;
}


/* one element of the open array, after a comma unless it is the first */

ngx_int_t
ngx_http_tent_export_item(ngx_http_tent_export_t *ex, json_t *json)
{
    if (ex->items++ && ngx_http_tent_export_append(ex, ",", 1) != NGX_OK) {
        return NGX_ERROR;
    }

    if (json_dump_callback(json, ngx_http_tent_export_piece, ex,
                           JSON_COMPACT|JSON_PRESERVE_ORDER)
        != 0)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* profile sections as stored; the core one from the configuration */

ngx_int_t
ngx_http_tent_export_profile(ngx_http_tent_export_t *ex, json_t *record)
{
    ngx_str_t  type, base;

    if (ngx_http_tent_json_str(record, "type", &type) == NGX_OK
        && ngx_http_tent_type_base(&type, &base) == NGX_OK
        && base.len == sizeof(NGX_HTTP_TENT_CORE_BASE) - 1
        && ngx_strncmp(base.data, NGX_HTTP_TENT_CORE_BASE, base.len) == 0)
    {
        ex->core = 1;
    }

    return ngx_http_tent_export_item(ex, record);
}


/*
 * No core section stored (no one wrote it): what readers are shown,
 * the default from the configuration, version 1.
 */

ngx_int_t
ngx_http_tent_export_core(ngx_http_tent_export_t *ex)
{
    json_t     *servers, *core;
    ngx_int_t   rc;

    if (ex->core) {
        return NGX_OK;
    }

    if (ngx_http_tent_servers(ex->r, ex->ctx, &servers) != NGX_OK) {
        return NGX_ERROR;
    }

    core = json_pack("{s:s, s:{s:o, s:o, s:[]}, s:{s:b}, s:i}",
                     "type", NGX_HTTP_TENT_CORE_TYPE,
                     "content",
                         "entity",
                         ngx_http_tent_json_string(&ex->ctx->entity),
                         "servers", servers,
                         "licenses",
                     "permissions", "public", 1,
                     "version", 1);
    if (core == NULL) {
        return NGX_ERROR;
    }

    rc = ngx_http_tent_export_item(ex, core);
    json_decref(core);

    return rc;
}


ngx_int_t
ngx_http_tent_export_plain(ngx_http_tent_export_t *ex, json_t *record)
{
    return ngx_http_tent_export_item(ex, record);
}


/*
 * Relationships with their credentials; the other entity's profile a
 * row keeps is theirs (and read again at an import), not ours.  A
 * following not confirmed yet has no credentials: it is left out.
 */

ngx_int_t
ngx_http_tent_export_following(ngx_http_tent_export_t *ex, json_t *record)
{
    if (json_is_false(json_object_get(record, "confirmed"))) {
        return NGX_OK;
    }

    json_object_del(record, "profile");

    return ngx_http_tent_export_item(ex, record);
}


ngx_int_t
ngx_http_tent_export_follower(ngx_http_tent_export_t *ex, json_t *record)
{
    json_object_del(record, "profile");

    return ngx_http_tent_export_item(ex, record);
}


/* an app's place among the unconfirmed ones is this server's business */

ngx_int_t
ngx_http_tent_export_app(ngx_http_tent_export_t *ex, json_t *record)
{
    json_object_del(record, "unconfirmed_slot");

    return ngx_http_tent_export_item(ex, record);
}


/* an OAuth code in flight is good for one exchange, here */

ngx_int_t
ngx_http_tent_export_authorization(ngx_http_tent_export_t *ex,
    json_t *record)
{
    json_object_del(record, "token_code");

    return ngx_http_tent_export_item(ex, record);
}


/* "https://origin/api/posts/<id>/attachments/<name>", escaped */

static json_t *
ngx_http_tent_export_attachment_url(ngx_http_tent_export_t *ex,
    ngx_str_t *id, ngx_str_t *name)
{
    u_char                    *p;
    size_t                     len;
    ngx_str_t                  url;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(ex->r, ngx_http_tent_module);

    len = ex->ctx->origin.len + scf->api_root.len
          + sizeof("/posts//attachments/") - 1
          + id->len + 2 * ngx_escape_uri(NULL, id->data, id->len,
                                         NGX_ESCAPE_URI_COMPONENT)
          + name->len + 2 * ngx_escape_uri(NULL, name->data, name->len,
                                           NGX_ESCAPE_URI_COMPONENT);

    p = ngx_pnalloc(ex->page, len);
    if (p == NULL) {
        return NULL;
    }

    url.data = p;
    p = ngx_cpymem(p, ex->ctx->origin.data, ex->ctx->origin.len);
    p = ngx_cpymem(p, scf->api_root.data, scf->api_root.len);
    p = ngx_cpymem(p, "/posts/", sizeof("/posts/") - 1);
    p = (u_char *) ngx_escape_uri(p, id->data, id->len,
                                  NGX_ESCAPE_URI_COMPONENT);
    p = ngx_cpymem(p, "/attachments/", sizeof("/attachments/") - 1);
    p = (u_char *) ngx_escape_uri(p, name->data, name->len,
                                  NGX_ESCAPE_URI_COMPONENT);
    url.len = p - url.data;

    return ngx_http_tent_json_string(&url);
}


/*
 * ?attachments=inline: the file of a digest in base64, read whole into
 * the page's pool (a page is one version then, so the export holds one
 * version's files at a time); NULL when it is missing (said in the log,
 * the document keeps the URL and the digest).
 */

static json_t *
ngx_http_tent_export_attachment_data(ngx_http_tent_export_t *ex,
    ngx_str_t *digest)
{
    off_t                       size;
    json_t                     *data;
    ssize_t                     n;
    ngx_fd_t                    fd;
    ngx_str_t                   path, raw, b64;
    u_char                     *key;
    ngx_str_node_t             *node;
    ngx_file_info_t             fi;
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(ex->r, ngx_http_tent_module);

    if (ngx_http_tent_store_digest_valid(digest) != NGX_OK
        || ngx_http_tent_store_file_path(ex->page, &mcf->store_path,
                                         &ex->ctx->entity, digest, &path)
           != NGX_OK)
    {
        return json_null();
    }

    fd = ngx_open_file(path.data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);

    if (fd == NGX_INVALID_FILE) {
        ngx_log_error(NGX_LOG_WARN, &ex->log, ngx_errno,
                      "tent export: attachment \"%V\" not inlined",
                      &path);
        return json_null();
    }

    data = NULL;

    if (ngx_fd_info(fd, &fi) == NGX_FILE_ERROR
        || (size = ngx_file_size(&fi)) > NGX_HTTP_TENT_EXPORT_INLINE_MAX)
    {
        ngx_log_error(NGX_LOG_WARN, &ex->log, 0,
                      "tent export: attachment \"%V\" not inlined: "
                      "unreadable or over 64 MB", &path);
        data = json_null();
        goto done;
    }

    /* the bounds fixed before the first byte: a version's, the answer's */

    if (ex->inline_page + (size_t) size > NGX_HTTP_TENT_EXPORT_INLINE_PAGE
        || ex->inline_total + size > NGX_HTTP_TENT_EXPORT_INLINE_TOTAL)
    {
        ngx_log_error(NGX_LOG_WARN, &ex->log, 0,
                      "tent export: attachment \"%V\" not inlined: over "
                      "64 MB inlined in one version or 4 GB in the "
                      "document", &path);
        data = json_null();
        goto done;
    }

    raw.len = (size_t) size;
    raw.data = ngx_pnalloc(ex->page, raw.len + 1);
    b64.data = ngx_pnalloc(ex->page, ngx_base64_encoded_length(raw.len) + 1);

    if (raw.data == NULL || b64.data == NULL) {
        goto done;
    }

    n = ngx_read_fd(fd, raw.data, raw.len);

    if (n != (ssize_t) raw.len) {
        ngx_log_error(NGX_LOG_WARN, &ex->log, ngx_errno,
                      "tent export: attachment \"%V\" not inlined: "
                      "short read", &path);
        data = json_null();
        goto done;
    }

    ngx_encode_base64(&b64, &raw);

    data = json_stringn((char *) b64.data, b64.len);

    /* given once a document: a later attachment of it says no "data" */

    node = ngx_palloc(ex->pool, sizeof(ngx_str_node_t));
    key = ngx_pnalloc(ex->pool, digest->len);

    if (data == NULL || node == NULL || key == NULL) {
        json_decref(data);
        data = NULL;
        goto done;
    }

    ngx_memcpy(key, digest->data, digest->len);
    node->str.data = key;
    node->str.len = digest->len;
    node->node.key = ngx_crc32_long(digest->data, digest->len);
    ngx_rbtree_insert(&ex->inlined, &node->node);

    ex->inline_page += raw.len;
    ex->inline_total += raw.len;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, &ex->log, 0,
                   "tent export: attachment %V inlined, %uz bytes",
                   digest, raw.len);

done:

    ngx_close_file(fd);

    return data;
}


/*
 * A version of one of our posts.  The "v" rows come by post, versions
 * ascending, so a post is {"id", "versions": [...]} opened at its first
 * row and closed at the next post's (or the section's end), across
 * pages too.  Attachments keep their metadata and digest, with the URL
 * this server serves the current version's file of that name at.
 */

ngx_int_t
ngx_http_tent_export_post(ngx_http_tent_export_t *ex, json_t *record)
{
    size_t      i;
    json_t     *a, *url, *head, *data;
    ngx_str_t   id, name, digest;

    if (ngx_http_tent_json_str(record, "id", &id) != NGX_OK
        || id.len > NGX_HTTP_TENT_EXPORT_ID_MAX)
    {
        ngx_log_error(NGX_LOG_ALERT, &ex->log, 0,
                      "tent export: a post version without a usable id");
        return NGX_OK;
    }

    json_object_del(record, "rus");

    json_array_foreach(json_object_get(record, "attachments"), i, a) {
        if (ngx_http_tent_json_str(a, "name", &name) != NGX_OK) {
            continue;
        }

        url = ngx_http_tent_export_attachment_url(ex, &id, &name);
        if (url == NULL || json_object_set_new(a, "url", url) != 0) {
            return NGX_ERROR;
        }

        if (!(ex->flags & NGX_HTTP_TENT_EXPORT_INLINE)) {
            continue;
        }

        if (ngx_http_tent_json_str(a, "digest", &digest) != NGX_OK) {
            digest.len = 0;
        }

        /*
         * Each digest's bytes once a document, at its first attachment:
         * a version listing one file 60 times is not 60 copies in the
         * worker and the answer (docs/export.md)
         */

        if (digest.len
            && ngx_str_rbtree_lookup(&ex->inlined, &digest,
                                     ngx_crc32_long(digest.data, digest.len))
               != NULL)
        {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, &ex->log, 0,
                           "tent export: attachment %V given above",
                           &digest);
            continue;
        }

        data = ngx_http_tent_export_attachment_data(ex, &digest);
        if (data == NULL || json_object_set_new(a, "data", data) != 0) {
            return NGX_ERROR;
        }
    }

    if (ex->post_id.len == id.len
        && ngx_strncmp(ex->post_id.data, id.data, id.len) == 0)
    {
        if (ngx_http_tent_export_append(ex, ",", 1) != NGX_OK
            || json_dump_callback(record, ngx_http_tent_export_piece, ex,
                                  JSON_COMPACT|JSON_PRESERVE_ORDER)
               != 0)
        {
            return NGX_ERROR;
        }

        return NGX_OK;
    }

    if (ex->post_id.len
        && ngx_http_tent_export_append(ex, "]}", 2) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ex->items++ && ngx_http_tent_export_append(ex, ",", 1) != NGX_OK) {
        return NGX_ERROR;
    }

    head = json_pack("{s:O}", "id", json_object_get(record, "id"));
    if (head == NULL) {
        return NGX_ERROR;
    }

    /* {"id":"...", "versions":[ the first version */

    if (json_dump_callback(head, ngx_http_tent_export_piece, ex,
                           JSON_COMPACT)
        != 0)
    {
        json_decref(head);
        return NGX_ERROR;
    }

    json_decref(head);

    ex->buf->last--;
    ex->bytes--;

    if (ngx_http_tent_export_append(ex, ",\"versions\":[",
                                    sizeof(",\"versions\":[") - 1)
        != NGX_OK
        || json_dump_callback(record, ngx_http_tent_export_piece, ex,
                              JSON_COMPACT|JSON_PRESERVE_ORDER)
           != 0)
    {
        return NGX_ERROR;
    }

    ngx_memcpy(ex->post_id.data, id.data, id.len);
    ex->post_id.len = id.len;

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_export_posts_end(ngx_http_tent_export_t *ex)
{
    if (ex->post_id.len == 0) {
        return NGX_OK;
    }

    ex->post_id.len = 0;

    return ngx_http_tent_export_append(ex, "]}", 2);
}
