
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Posts (spec 6, 7.5, 7.7): POST /posts, GET /posts/:id (and
 * /posts/:entity/:id), the first step of PUT and DELETE (the post read
 * and checked), and the versions of a post.  A post, its version record
 * and its three feed index entries are written in one synced batch,
 * behind a compare-and-set: on the post's own key, or on the app's
 * Idempotency-Key, so a retried create returns the post it made the
 * first time.
 */


#define NGX_HTTP_TENT_POSTS_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_ap.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_notifications.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_posts_private.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_IDEMPOTENCY_MAX  128


static ngx_int_t ngx_http_tent_post_read(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_post_update_read(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_post_create(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_post_created(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_post_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_post_found(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


/* POST /posts */

ngx_int_t
ngx_http_tent_posts_post(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    /* another server's post, signed with our relationship's credential */

    if (ctx->principal.kind == NGX_HTTP_TENT_FOLLOWER
        || ctx->principal.kind == NGX_HTTP_TENT_FOLLOWING)
    {
        return ngx_http_tent_notification_relayed(r, ctx);
    }

    /* unsigned: maybe a mention from an entity we do not know (spec 9.3) */

    if (ctx->principal.kind == NGX_HTTP_TENT_ANONYMOUS) {
        return ngx_http_tent_mention_post(r, ctx);
    }

    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_POSTS)
        && !ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_IMPORT_POSTS))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    /* with attachments the post comes as multipart/form-data */
    ctx->multipart = 1;

    /* provisioning: under the entity's quota of posts, first */

    return ngx_http_tent_quota_check(r, ctx, NGX_HTTP_TENT_QUOTA_POSTS,
                                     ngx_http_tent_post_read);
}


static ngx_int_t
ngx_http_tent_post_read(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_read_json(r, ctx, ngx_http_tent_post_create);
}


static ngx_int_t
ngx_http_tent_post_update_read(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    ctx->multipart = 1;
    return ngx_http_tent_read_json(r, ctx, ngx_http_tent_post_update);
}


static ngx_int_t
ngx_http_tent_post_create(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                      *post, *v, *app, *cred;
    uint64_t                     ms;
    ngx_int_t                    rc;
    ngx_str_t                    id, type, entity, key, value, ikey,
                                 idem;
    ngx_uint_t                   import, given;
    const char                  *error;
    ngx_table_elt_t             *h;
    ngx_array_t                 *refs;
    ngx_list_part_t             *part;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_post_state_t  *st;

    import = ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_IMPORT_POSTS);
    cred = ctx->principal.credential;

    error = NULL;
    post = ngx_http_tent_post_validate(ctx->body, import, &error);

    if (post == NULL) {
        if (error == NULL) {
            return ngx_http_tent_internal_error(r, "validating the post");
        }

        return ngx_http_tent_send_error(r, 422, error);
    }

    if (ngx_http_tent_json_cleanup(r->pool, post) != NGX_OK) {
        json_decref(post);
        return ngx_http_tent_internal_error(r, "keeping the validated post");
    }

    /* provisioning: its files under the entity's quota of bytes */

    if (ngx_http_tent_quota_bytes(r, ctx, ngx_http_tent_post_create, &rc)
        != NGX_OK)
    {
        return rc;
    }

    (void) ngx_http_tent_json_str(post, "type", &type);

    if (!import
        && !ngx_http_tent_type_allowed(json_object_get(cred, "post_types"),
                                       &type))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent posts: validated: type \"%V\"%s", &type,
                   import ? ", an import" : "");

    /* what the server decides, unless an import says otherwise */

    given = import && ngx_http_tent_json_str(post, "id", &id) == NGX_OK;

    if (!given) {
        if (ngx_http_tent_random_id(r->pool, NULL, 16, &id) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "making the post's id");
        }

        json_object_set_new(post, "id", ngx_http_tent_json_string(&id));
    }

    if (!import || ngx_http_tent_json_str(post, "entity", &entity) != NGX_OK)
    {
        entity = ctx->entity;
    }

    /* an import is kept under the entity's one spelling too */

    if (ngx_http_tent_post_entity(r->pool, ctx, &entity, &entity) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "spelling the post's entity");
    }

    if (json_object_set_new(post, "entity",
                            ngx_http_tent_json_string(&entity))
        != 0)
    {
        return ngx_http_tent_internal_error(r, "setting the post's entity");
    }

    ms = ngx_http_tent_now_us();

    if (!import || !json_is_integer(json_object_get(post, "received_at"))) {
        json_object_set_new(post, "received_at", json_integer(ngx_time()));
    }

    json_object_set_new(post, "published_at",
                        json_integer(ngx_http_tent_post_published_at(
                            json_object_get(post, "published_at"),
                            ngx_time())));
    json_object_set_new(post, "updated_at", json_integer(ngx_time()));
    json_object_set_new(post, "version", json_integer(1));
    json_object_set_new(post, "rus", json_integer((json_int_t) ms));

    if (json_object_get(post, "attachments") == NULL) {
        json_object_set_new(post, "attachments", json_array());
    }

    refs = ngx_array_create(r->pool, 2, sizeof(ngx_http_tent_blob_ref_t));
    if (refs == NULL) {
        return ngx_http_tent_internal_error(r,
                   "allocating the attachment references");
    }

    rc = ngx_http_tent_post_attachments(r, ctx, post, refs);

    if (rc == NGX_HTTP_REQUEST_ENTITY_TOO_LARGE) {
        return ngx_http_tent_send_error(r, rc, "An attachment is too large");
    }

    if (rc == NGX_DECLINED) {
        return ngx_http_tent_send_error(r, 422, "Invalid attachment");
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_internal_error(r, "making the attachment list");
    }

    if (!import || json_object_get(post, "app") == NULL) {
        app = json_object();
        v = json_object_get(cred, "app_name");
        if (json_is_string(v)) {
            json_object_set(app, "name", v);
        }

        v = json_object_get(cred, "app_url");
        if (json_is_string(v)) {
            json_object_set(app, "url", v);
        }

        if (json_object_size(app)) {
            json_object_set_new(post, "app", app);

        } else {
            json_decref(app);
            json_object_del(post, "app");
        }
    }

    /* a retried create (same Idempotency-Key) finds its first post */

    ngx_str_null(&idem);

    part = &r->headers_in.headers.part;
    h = part->elts;

    for ( ;; ) {
        size_t  i;

        for (i = 0; i < part->nelts; i++) {
            if (h[i].key.len == sizeof("Idempotency-Key") - 1
                && ngx_strncasecmp(h[i].key.data,
                                   (u_char *) "Idempotency-Key",
                                   h[i].key.len) == 0)
            {
                idem = h[i].value;
            }
        }

        if (part->next == NULL) {
            break;
        }

        part = part->next;
        h = part->elts;
    }

    if (idem.len > NGX_HTTP_TENT_IDEMPOTENCY_MAX) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                        "Idempotency-Key is too long");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &entity, &id, -1,
                                  &key)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the post's key");
    }

    if (ngx_http_tent_json_dump(r->pool, post, &value) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "writing the post as JSON");
    }

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_post_state_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the post's state");
    }

    st->post = post;
    st->post_entity = entity;
    st->id = id;
    st->refs = refs;
    st->write = op;
    st->write_done = ngx_http_tent_post_created;
    ctx->state = st;

    ngx_str_null(&ikey);

    if (idem.len) {
        v = json_pack("{s:o, s:o}", "entity",
                      ngx_http_tent_json_string(&entity),
                      "id", ngx_http_tent_json_string(&id));

        if (v == NULL || ngx_http_tent_json_cleanup(r->pool, v) != NGX_OK) {
            json_decref(v);
            return ngx_http_tent_internal_error(r,
                       "making the Idempotency-Key's record");
        }

        if (ngx_http_tent_pair_key(r->pool, &ctx->entity,
                                   NGX_HTTP_TENT_TABLE_IDEMPOTENCY,
                                   &ctx->principal.app_id, &idem, &ikey)
            != NGX_OK)
        {
            return ngx_http_tent_internal_error(r,
                       "building the Idempotency-Key's key");
        }

        if (ngx_http_tent_json_dump(r->pool, v, &idem) != NGX_OK) {
            return ngx_http_tent_internal_error(r,
                       "writing the Idempotency-Key's record");
        }
    }

    /*
     * The key that must be absent: the Idempotency-Key's, or the post's
     * own when there is none or when an import names its id (a fresh
     * Idempotency-Key must not let an import overwrite a post we have).
     */

    if (ikey.len && !given) {
        rc = ngx_http_tent_store_cas(op, &ikey, NULL, &idem);

        if (rc == NGX_OK) {
            rc = ngx_http_tent_store_write_put(op, &key, &value);
        }

    } else {
        rc = ngx_http_tent_store_cas(op, &key, NULL, &value);

        if (rc == NGX_OK && ikey.len) {
            rc = ngx_http_tent_store_write_put(op, &ikey, &idem);
        }
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_internal_error(r, "adding the post to the batch");
    }

    if (ngx_http_tent_post_key(r->pool, &ctx->entity, &entity, &id, 1, &key)
        != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "adding the post's version 1 to the batch");
    }

    if (ngx_http_tent_post_index(r, ctx, op, post, 0) != NGX_OK
        || ngx_http_tent_quota_count(r, ctx, op) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "adding the post's index rows to the batch");
    }

    /* and, for a post of ours, its row in the followers' outbox */

    if (ngx_http_tent_post_original(ctx, &entity)
        && ngx_http_tent_delivery_mark(r->pool, &ctx->entity, op, post)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "adding the post's outbox row to the batch");
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent posts: post \"%V\" of \"%V\": batch built, "
                   "compare-and-set on %s, %ui attachment digests",
                   &id, &entity,
                   (ikey.len && !given) ? "the Idempotency-Key"
                                        : "the post's key",
                   refs->nelts);

    /* the attachments' references (and bytes) first, then the post */

    return ngx_http_tent_blobs_adjust(r, ctx, 1, ngx_http_tent_post_submit);
}


ngx_int_t
ngx_http_tent_post_submit(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent posts: post \"%V\": references taken, "
                   "batch submitted", &st->id);

    return ngx_http_tent_store_submit_request(r, st->write, st->write_done);
}


static ngx_int_t
ngx_http_tent_post_created(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                      *out;
    ngx_int_t                    rc;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_post_state_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent posts: post \"%V\": stored", &st->id);

        out = ngx_http_tent_post_render(ctx, st->post);
        if (out == NULL
            || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK)
        {
            json_decref(out);
            return ngx_http_tent_internal_error(r,
                       "rendering the post created");
        }

        return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
    }

    /* the key existed: an import of a post we have, or a retry */

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent posts: post \"%V\": not stored, its key exists "
                   "(a retry, or an import of a post we have)", &st->id);

    ngx_http_tent_store_value(op, &st->raw);

    return ngx_http_tent_blobs_adjust(r, ctx, -1, ngx_http_tent_post_found);
}


/* the post a retry or an import found: this one's references given back */

static ngx_int_t
ngx_http_tent_post_found(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    json_t                      *out, *prev;
    ngx_str_t                    entity, id, key;
    ngx_http_tent_store_op_t    *get;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    prev = ngx_http_tent_json_load(r, &st->raw);
    if (prev == NULL) {
        return ngx_http_tent_internal_error(r,
                   "reading the record already stored");
    }

    if (json_object_get(prev, "version")) {

        /*
         * The post itself: an import of an id we have.  It is answered as
         * a read of it would be; one the importer may not read is not
         * shown, only that the id is taken (an import of a free id would
         * have created it, so that much is no secret to an importer).
         */

        if (!ngx_http_tent_post_record_visible(ctx, prev)) {
            return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                                            "A post with this id exists");
        }

        out = ngx_http_tent_post_render(ctx, prev);
        if (out == NULL
            || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK)
        {
            json_decref(out);
            return ngx_http_tent_internal_error(r, "rendering the post found");
        }

        return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
    }

    if (ngx_http_tent_json_str(prev, "entity", &entity) != NGX_OK
        || ngx_http_tent_json_str(prev, "id", &id) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "reading the Idempotency-Key's record");
    }

    get = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (get == NULL
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &entity, &id, -1,
                                  &key)
           != NGX_OK
        || ngx_http_tent_store_get(get, &key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "building the read of the first post");
    }

    ctx->state = NULL;

    return ngx_http_tent_store_submit_request(r, get,
                                              ngx_http_tent_post_loaded);
}


/*
 * GET /posts/:id and /posts/:entity/:id, and the first step of PUT and
 * DELETE: load the post (or one version of it).
 */

static ngx_int_t
ngx_http_tent_post_locate(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_post_state_t *st)
{
    u_char     *dst, *src;
    ngx_str_t  *id;

    if (ctx->nparams == 2) {
        /* /posts/:entity/:id, the entity percent-encoded */

        st->post_entity.data = ngx_pnalloc(r->pool, ctx->params[0].len);
        if (st->post_entity.data == NULL) {
            return NGX_ERROR;
        }

        dst = st->post_entity.data;
        src = ctx->params[0].data;
        ngx_unescape_uri(&dst, &src, ctx->params[0].len, 0);
        st->post_entity.len = dst - st->post_entity.data;

        if (ngx_strlchr(st->post_entity.data, dst, '\0')) {
            return NGX_DECLINED;
        }

        /* any spelling of the entity finds its posts */

        if (ngx_http_tent_post_entity(r->pool, ctx, &st->post_entity,
                                      &st->post_entity)
            != NGX_OK)
        {
            return NGX_ERROR;
        }

        id = &ctx->params[1];

    } else {
        st->post_entity = ctx->entity;
        id = &ctx->params[0];
    }

    for (src = id->data; src < id->data + id->len; src++) {
        if (!((*src >= 'a' && *src <= 'z') || (*src >= 'A' && *src <= 'Z')
              || (*src >= '0' && *src <= '9') || *src == '-' || *src == '_'))
        {
            return NGX_DECLINED;
        }
    }

    if (id->len == 0 || id->len > 64) {
        return NGX_DECLINED;
    }

    st->id = *id;

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_post_get(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_int_t                    rc, version;
    ngx_str_t                    key, v;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_post_state_t  *st;

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_post_state_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the post's state");
    }

    ctx->state = st;

    rc = ngx_http_tent_post_locate(r, ctx, st);

    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r,
                   "reading the post's entity and id");
    }

    if (rc == NGX_DECLINED) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    version = -1;

    if (ngx_http_arg(r, (u_char *) "version", 7, &v) == NGX_OK) {
        version = ngx_atoi(v.data, v.len);
        if (version <= 0 || version > 0x7fffffff) {
            return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                            "Not Found");
        }
    }

    /* PUT and DELETE read the current post; GET maybe a version */

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        version = -1;
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &st->post_entity,
                                  &st->id, version, &key)
           != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the read of the post");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_post_loaded);
}


static ngx_int_t
ngx_http_tent_post_loaded(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                      *post, *out;
    ngx_int_t                    rc;
    ngx_str_t                    value, type, entity;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_post_state_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {

        /* another's post with no copy: maybe a same-node reference */

        if (st && !st->versions && st->attachment.len == 0
            && (r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))
            && ngx_http_arg(r, (u_char *) "version", 7, &value) != NGX_OK
            && !ngx_http_tent_post_original(ctx, &st->post_entity))
        {
            return ngx_http_tent_post_ref_read(r, ctx);
        }

        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    ngx_http_tent_store_value(op, &value);

    post = ngx_http_tent_json_load(r, &value);
    if (post == NULL) {
        return ngx_http_tent_internal_error(r, "reading the stored post");
    }

    /* what may not be seen does not exist */

    if (!ngx_http_tent_post_record_visible(ctx, post)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    if (st && st->versions) {
        st->post = post;
        return ngx_http_tent_post_versions_scan(r, ctx,
                                                ngx_http_tent_versions_list);
    }

    if (st && st->attachment.len) {
        return ngx_http_tent_post_blob(r, ctx, post);
    }

    if (st == NULL || (r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        out = ngx_http_tent_post_render_view(r, ctx, post);
        if (out == NULL
            || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK)
        {
            json_decref(out);
            return ngx_http_tent_internal_error(r,
                       "rendering the post in its view");
        }

        /* the owner's app: our post's ActivityPub likes, counted */

        if (st && ngx_http_tent_ap_enabled(r)
            && ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_POSTS)
            && ngx_http_tent_post_original(ctx, &st->post_entity))
        {
            return ngx_http_tent_ap_likes_post(r, ctx, &st->id, out);
        }

        return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
    }

    /* PUT and DELETE: write_posts, the post's type, our own post */

    (void) ngx_http_tent_json_str(post, "type", &type);
    (void) ngx_http_tent_json_str(post, "entity", &entity);

    if (!ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_WRITE_POSTS)
        || !ngx_http_tent_type_allowed(json_object_get(
                                           ctx->principal.credential,
                                           "post_types"),
                                       &type))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    if (!ngx_http_tent_post_original(ctx, &entity)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                   "Only the entity's own posts can be changed");
    }

    st->post = post;
    st->raw = value;

    if (r->method == NGX_HTTP_PUT) {
        /* with attachments, the new version comes as multipart */
        ctx->multipart = 1;
        /*
         * provisioning: a new version is one of the entity's quota of
         * posts (its files counted against the bytes once read), first
         */
        return ngx_http_tent_quota_check(r, ctx, NGX_HTTP_TENT_QUOTA_POSTS,
                                         ngx_http_tent_post_update_read);
    }

    return ngx_http_tent_post_versions_scan(r, ctx,
                                            ngx_http_tent_post_remove);
}


/* GET /posts/:id/versions: the post first, to know it may be seen */

ngx_int_t
ngx_http_tent_post_versions(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_int_t                    rc;
    ngx_http_tent_post_state_t  *st;

    rc = ngx_http_tent_post_get(r, ctx);

    /* the store answers later, never from within submit */

    if (rc == NGX_DONE) {
        st = ctx->state;
        st->versions = 1;
    }

    return rc;
}


/* the versions of st's post, newest first, then "next" */

ngx_int_t
ngx_http_tent_post_versions_scan(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_request_done_pt next)
{
    ngx_str_t                    start, end;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_post_state_t  *st;

    st = ctx->state;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &st->post_entity,
                                  &st->id, 0, &start)
           != NGX_OK
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &st->post_entity,
                                  &st->id, 0x7fffffff, &end)
           != NGX_OK
        || ngx_http_tent_store_scan(op, &start, &end, 100000, 1) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r,
                   "building the scan of the post's versions");
    }

    return ngx_http_tent_store_submit_request(r, op, next);
}
