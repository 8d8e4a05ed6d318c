
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Attachment bytes as files (docs/store.md): one per entity and digest,
 *
 *     <tent_store>/attachments/<entity>/<ab>/<cdef...>
 *
 * <entity> the first 32 hex digits of the SHA-256 of the entity URL,
 * <ab><cdef...> the SHA-256 of the bytes, hex.  The counts are kept per
 * entity, so the files are too: another entity's last reference must not
 * take a file our count still holds.  Only the owner writes and removes
 * them, in the compare-and-set group that creates or deletes their count
 * (ngx_http_tent_store_leveldb.c), so a file is there whenever its count
 * is; any worker reads them (ngx_http_tent_attachment_serve.c).
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_store_private.h"

#include <openssl/evp.h>


#define NGX_HTTP_TENT_ENTITY_HASH_LEN  32


static ngx_int_t ngx_http_tent_files_path(const char *dir, ngx_str_t *name,
    u_char *path, size_t size);
static ngx_int_t ngx_http_tent_files_mkdir(u_char *path, u_char *end,
    ngx_log_t *log);
static ngx_int_t ngx_http_tent_files_sync_dir(u_char *path, ngx_log_t *log);


/* a SHA-256 as this module writes it: 64 lowercase hex digits, nothing else */

ngx_int_t
ngx_http_tent_store_digest_valid(ngx_str_t *digest)
{
    return ngx_http_tent_hex_valid(digest, NGX_HTTP_TENT_DIGEST_LEN)
           == NGX_OK ? NGX_OK : NGX_DECLINED;
}


/*
 * A file's name on the wire: the entity's hash and the digest, 96 hex
 * digits ("name" holds NGX_HTTP_TENT_FILE_NAME_LEN bytes); NGX_DECLINED
 * for a digest that is not one.  Nothing of the request reaches a path
 * but these hex digits.
 */

ngx_int_t
ngx_http_tent_store_file_name(ngx_str_t *entity, ngx_str_t *digest,
    u_char *name)
{
    u_char        hash[EVP_MAX_MD_SIZE];
    unsigned int  len;

    if (ngx_http_tent_store_digest_valid(digest) != NGX_OK) {
        return NGX_DECLINED;
    }

    if (EVP_Digest(entity->data, entity->len, hash, &len, EVP_sha256(), NULL)
        != 1)
    {
        return NGX_ERROR;
    }

    (void) ngx_hex_dump(name, hash, NGX_HTTP_TENT_ENTITY_HASH_LEN / 2);
    ngx_memcpy(name + NGX_HTTP_TENT_ENTITY_HASH_LEN, digest->data,
               NGX_HTTP_TENT_DIGEST_LEN);

    return NGX_OK;
}


/* "dir/<entity>/<ab>/<cdef...>", zero-terminated, from a checked name */

static ngx_int_t
ngx_http_tent_files_path(const char *dir, ngx_str_t *name, u_char *path,
    size_t size)
{
    u_char  *p, *d;

    d = name->data + NGX_HTTP_TENT_ENTITY_HASH_LEN;

    if (name->len != NGX_HTTP_TENT_FILE_NAME_LEN
        || ngx_strlen(dir) + NGX_HTTP_TENT_FILE_NAME_LEN + 8 > size)
    {
        return NGX_ERROR;
    }

    p = ngx_sprintf(path, "%s/%*s/%*s/%*s%Z", dir,
                    (size_t) NGX_HTTP_TENT_ENTITY_HASH_LEN, name->data,
                    (size_t) 2, d,
                    (size_t) (NGX_HTTP_TENT_DIGEST_LEN - 2), d + 2);

    return (p <= path + size) ? NGX_OK : NGX_ERROR;
}


/* the path a worker opens to serve an attachment (in the request's pool) */

ngx_int_t
ngx_http_tent_store_file_path(ngx_pool_t *pool, ngx_str_t *store_path,
    ngx_str_t *entity, ngx_str_t *digest, ngx_str_t *path)
{
    u_char     name[NGX_HTTP_TENT_FILE_NAME_LEN], *dir;
    size_t     size;
    ngx_int_t  rc;
    ngx_str_t  n;

    rc = ngx_http_tent_store_file_name(entity, digest, name);
    if (rc != NGX_OK) {
        return rc;
    }

    size = store_path->len + sizeof("/attachments")
           + NGX_HTTP_TENT_FILE_NAME_LEN + 8;

    path->data = ngx_pnalloc(pool, size);
    dir = ngx_pnalloc(pool, store_path->len + sizeof("/attachments"));

    if (path->data == NULL || dir == NULL) {
        return NGX_ERROR;
    }

    n.data = name;
    n.len = sizeof(name);

    (void) ngx_sprintf(dir, "%V/attachments%Z", store_path);

    /* the same layout the owner writes */

    if (ngx_http_tent_files_path((char *) dir, &n, path->data, size)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    path->len = ngx_strlen(path->data);

    return NGX_OK;
}


/* on the owner's pool thread: mkdir, and its parent synced when it is new */

static ngx_int_t
ngx_http_tent_files_mkdir(u_char *path, u_char *end, ngx_log_t *log)
{
    u_char  c, *slash;

    c = *end;
    *end = '\0';

    if (mkdir((char *) path, 0700) == 0) {
        for (slash = end; slash > path && *slash != '/'; slash--) {
            /* void */
        }

        if (slash > path) {
            *slash = '\0';
            (void) ngx_http_tent_files_sync_dir(path, log);
            *slash = '/';
        }

    } else if (ngx_errno != NGX_EEXIST) {
        ngx_log_error(NGX_LOG_CRIT, log, ngx_errno,
                      "tent store: mkdir(\"%s\") failed", path);
        *end = c;
        return NGX_ERROR;
    }

    *end = c;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_files_sync_dir(u_char *path, ngx_log_t *log)
{
    int  fd;

    fd = open((char *) path, O_RDONLY|O_DIRECTORY);

    if (fd == -1 || fsync(fd) == -1) {
        ngx_log_error(NGX_LOG_CRIT, log, ngx_errno,
                      "tent store: syncing the directory \"%s\" failed",
                      path);
        if (fd != -1) {
            (void) close(fd);
        }

        return NGX_ERROR;
    }

    (void) close(fd);

    return NGX_OK;
}


/*
 * On the owner's pool thread, before the batch that counts the file is
 * written: the bytes into a temporary file, synced, renamed to their
 * name, and the directory synced, so that after a crash a count never
 * names a file that is not there (an orphan file is harmless).  A file
 * already there (an orphan) is replaced with the same bytes.
 */

ngx_int_t
ngx_http_tent_files_write(const char *dir, ngx_str_t *name,
    ngx_str_t *bytes, ngx_log_t *log)
{
    int      fd;
    u_char   path[NGX_MAX_PATH], tmp[NGX_MAX_PATH], *p, *last;
    ssize_t  n;

    if (ngx_http_tent_files_path(dir, name, path, sizeof(path)) != NGX_OK) {
        return NGX_ERROR;
    }

    /* dir, dir/<entity>, dir/<entity>/<ab> */

    last = path + ngx_strlen(path);
    p = path + ngx_strlen(dir);

    if (ngx_http_tent_files_mkdir(path, p, log) != NGX_OK
        || ngx_http_tent_files_mkdir(path, p + 1
                                     + NGX_HTTP_TENT_ENTITY_HASH_LEN, log)
           != NGX_OK
        || ngx_http_tent_files_mkdir(path, p + 1
                                     + NGX_HTTP_TENT_ENTITY_HASH_LEN + 3, log)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* the pid: an owner handing over to the next never shares one */

    if (ngx_snprintf(tmp, sizeof(tmp), "%s.%P.tmp%Z", path, ngx_pid)
        == tmp + sizeof(tmp))
    {
        return NGX_ERROR;
    }

    fd = open((char *) tmp, O_WRONLY|O_CREAT|O_TRUNC, 0600);
    if (fd == -1) {
        ngx_log_error(NGX_LOG_CRIT, log, ngx_errno,
                      "tent store: open(\"%s\") failed", tmp);
        return NGX_ERROR;
    }

    for (p = bytes->data; p < bytes->data + bytes->len; p += n) {
        n = write(fd, p, bytes->data + bytes->len - p);

        if (n == -1 && ngx_errno == NGX_EINTR) {
            n = 0;
            continue;
        }

        if (n <= 0) {
            ngx_log_error(NGX_LOG_CRIT, log, ngx_errno,
                          "tent store: writing \"%s\" failed", tmp);
            goto failed;
        }
    }

    if (fsync(fd) == -1) {
        ngx_log_error(NGX_LOG_CRIT, log, ngx_errno,
                      "tent store: fsync(\"%s\") failed", tmp);
        goto failed;
    }

    if (close(fd) == -1) {
        fd = -1;
        ngx_log_error(NGX_LOG_CRIT, log, ngx_errno,
                      "tent store: close(\"%s\") failed", tmp);
        goto failed;
    }

    fd = -1;

    if (rename((char *) tmp, (char *) path) == -1) {
        ngx_log_error(NGX_LOG_CRIT, log, ngx_errno,
                      "tent store: rename(\"%s\", \"%s\") failed", tmp, path);
        goto failed;
    }

    /* the rename itself, durable before the count is */

    p = last - (NGX_HTTP_TENT_DIGEST_LEN - 2) - 1;
    *p = '\0';

    if (ngx_http_tent_files_sync_dir(path, log) != NGX_OK) {
        return NGX_ERROR;
    }

    return NGX_OK;

failed:

    if (fd != -1) {
        (void) close(fd);
    }

    (void) unlink((char *) tmp);

    return NGX_ERROR;
}


/*
 * On the owner's pool thread, once the batch that deleted the count is
 * written.  A crash before this leaves an orphan, swept later; a reader
 * that opened the file goes on reading it.
 */

void
ngx_http_tent_files_unlink(const char *dir, ngx_str_t *name, ngx_log_t *log)
{
    u_char  path[NGX_MAX_PATH];

    if (ngx_http_tent_files_path(dir, name, path, sizeof(path)) != NGX_OK) {
        return;
    }

    if (unlink((char *) path) == -1 && ngx_errno != NGX_ENOENT) {
        ngx_log_error(NGX_LOG_WARN, log, ngx_errno,
                      "tent store: unlink(\"%s\") failed: an orphan "
                      "file is left", path);
    }
}
