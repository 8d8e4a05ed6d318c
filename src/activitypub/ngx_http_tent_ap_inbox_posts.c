
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The inbox's activities on a post it keeps (docs/activitypub.md "The
 * inbox", "Activities"): Update of a Note, an Article or a Question by
 * its author makes a new version of the received post a Create made;
 * Delete of it removes our copy, its versions and feed rows, as a Tent
 * delete post removes a received copy.  The post is found under its
 * author (the verified actor) and ngx_http_tent_ap_post_id() of the
 * object's id: an actor can only ever name its own posts, never another
 * actor's nor ours.  Anything not held: 202, ignored.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_ap.h"
#include "ngx_http_tent_ap_map.h"
#include "ngx_http_tent_blocks.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_receive.h"
#include "ngx_http_tent_store.h"


typedef struct {
    ngx_http_tent_ap_verify_t      *verify;
    ngx_http_tent_received_t        received;
    ngx_uint_t                      update;
    ngx_uint_t                      ours;       /* Announce of our post */
    ngx_str_t                       url;        /* Announce: its object */
    ngx_str_t                       inbox;      /* Update(Person) */
    ngx_str_t                       shared_inbox;
    ngx_str_t                       record_id;
} ngx_http_tent_ap_held_t;


#define NGX_HTTP_TENT_AP_REPOST_TYPE                                         \
    "https://tent.io/types/post/repost/v0.1.0"


static ngx_int_t ngx_http_tent_ap_held_202(ngx_http_request_t *r);
static ngx_int_t ngx_http_tent_ap_origin_api_of(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *out);
static ngx_int_t ngx_http_tent_ap_held_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_held_t *st);
static ngx_int_t ngx_http_tent_ap_held_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_held_done(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_person_url(json_t *v,
    ngx_http_tent_ap_verify_t *verify, ngx_str_t *url);
static ngx_int_t ngx_http_tent_ap_person_index(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_person_record(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_announce_following(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_announce_store(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_held_t *st);


static ngx_int_t
ngx_http_tent_ap_held_202(ngx_http_request_t *r)
{
    ngx_str_t  body = ngx_string("{}");

    return ngx_http_tent_send_body(r, NGX_HTTP_ACCEPTED, &body);
}


/* "<origin><api>", no "/" at its end: our posts' object ids begin so */

static ngx_int_t
ngx_http_tent_ap_origin_api_of(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *out)
{
    u_char                    *p;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    out->data = ngx_pnalloc(r->pool, ctx->origin.len + scf->api_root.len);
    if (out->data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(out->data, ctx->origin.data, ctx->origin.len);

    if (scf->api_root.len > 1) {
        p = ngx_cpymem(p, scf->api_root.data, scf->api_root.len);
    }

    out->len = p - out->data;

    return NGX_OK;
}


/*
 * A reply to one of our posts (activitypub.in_reply_to one of our
 * object ids): its first mention, which the mapping made of the URL,
 * names our post as Tent does, {"entity": ours, "post": its id}, so the
 * conversation and the post's mentions find it.
 */

ngx_int_t
ngx_http_tent_ap_inbox_reply(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    json_t *post)
{
    json_t     *to, *m;
    ngx_str_t   url, origin_api, id;

    to = json_object_get(json_object_get(post, "activitypub"),
                         "in_reply_to");

    if (!json_is_string(to)
        || !json_is_array(json_object_get(post, "mentions"))
        || json_array_size(json_object_get(post, "mentions")) == 0)
    {
        return NGX_OK;
    }

    url.data = (u_char *) json_string_value(to);
    url.len = json_string_length(to);

    if (ngx_http_tent_ap_origin_api_of(r, ctx, &origin_api) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_tent_ap_object_post(&origin_api, &url, &id) != NGX_OK) {
        return NGX_OK;
    }

    m = json_pack("{s:o, s:s%}", "entity",
                  ngx_http_tent_json_string(&ctx->entity),
                  "post", (char *) id.data, id.len);

    if (m == NULL
        || json_array_set_new(json_object_get(post, "mentions"), 0, m) != 0)
    {
        return NGX_ERROR;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent inbox: a reply to our post \"%V\"", &id);

    return NGX_OK;
}


/*
 * Update of an object: mapped again as a Create's is (the allow-list
 * again, the same refusals: an object not attributed to the actor or
 * whose id is on another origin is refused by the mapping), then a new
 * version of the post we hold, if we hold it.
 */

ngx_int_t
ngx_http_tent_ap_inbox_update(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_verify_t *v)
{
    u_char                    pid[NGX_HTTP_TENT_AP_POST_ID_LEN + 2];
    json_t                   *object, *post;
    ngx_str_t                 oid;
    ngx_int_t                 status;
    const char               *error;
    ngx_http_tent_ap_held_t  *st;

    object = json_object_get(v->activity, "object");

    if (!json_is_object(object)
        || ngx_http_tent_json_str(object, "id", &oid) != NGX_OK)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: an Update by \"%V\" of no embedded "
                       "object, ignored", &v->actor);
        return ngx_http_tent_ap_held_202(r);
    }

    post = ngx_http_tent_json_own(r->pool,
                                  ngx_http_tent_ap_to_post(r->pool, object,
                                                           &v->actor,
                                                           &error));
    if (post == NULL) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: an Update by \"%V\" not kept: %s",
                       &v->actor, error ? error : "no memory");
        return ngx_http_tent_ap_held_202(r);
    }

    if (ngx_http_tent_ap_post_id(&oid, pid) != NGX_OK
        || ngx_http_tent_ap_inbox_reply(r, ctx, post) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "making the post's id");
    }

    if (json_object_set_new(post, "id",
                            json_stringn((char *) pid,
                                         NGX_HTTP_TENT_AP_POST_ID_LEN))
        != 0
        || json_object_set_new(post, "entity",
                               ngx_http_tent_json_string(&v->actor))
           != 0)
    {
        return ngx_http_tent_internal_error(r, "building the post");
    }

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_held_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the post state");
    }

    st->verify = v;
    st->update = 1;

    /* the version is set once the copy is read: 1 until then */

    status = ngx_http_tent_received_parse(r->pool, post, &v->actor, 0,
                                          &st->received, &error);

    if (status == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, error);
    }

    /* the validation keeps Tent's fields: the object's id etc. put back */

    if (status == NGX_OK
        && json_object_get(post, "activitypub")
        && json_object_set(st->received.post, "activitypub",
                           json_object_get(post, "activitypub"))
           != 0)
    {
        return ngx_http_tent_internal_error(r, "keeping the object's id");
    }

    if (status == NGX_OK
        && json_dumpb(st->received.post, NULL, 0, JSON_COMPACT)
           > NGX_HTTP_TENT_RECEIVED_MAX)
    {
        status = NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
        error = "over 65536 bytes";
    }

    if (status != NGX_OK) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent inbox: an Update by \"%V\" not kept: %s",
                      &v->actor, error);
        return ngx_http_tent_ap_held_202(r);
    }

    /* no delete post nor profile here: a mapped post is neither */

    st->received.deletes.len = 0;
    st->received.profile = 0;

    return ngx_http_tent_ap_held_get(r, ctx, st);
}


/* Delete of an object: its id as a string, or an object with an "id" */

ngx_int_t
ngx_http_tent_ap_inbox_delete(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_verify_t *v)
{
    u_char                   *pid;
    json_t                   *object;
    ngx_int_t                 rc;
    ngx_str_t                 oid;
    ngx_http_tent_ap_held_t  *st;

    object = json_object_get(v->activity, "object");

    if (json_is_object(object)) {
        object = json_object_get(object, "id");
    }

    if (!json_is_string(object) || json_string_length(object) == 0) {
        return ngx_http_tent_ap_held_202(r);
    }

    oid.data = (u_char *) json_string_value(object);
    oid.len = json_string_length(object);

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_held_t));
    pid = ngx_pnalloc(r->pool, NGX_HTTP_TENT_AP_POST_ID_LEN + 2);

    if (st == NULL || pid == NULL
        || ngx_http_tent_ap_post_id(&oid, pid) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "making the post's id");
    }

    st->verify = v;
    st->received.deletes.data = pid;
    st->received.deletes.len = NGX_HTTP_TENT_AP_POST_ID_LEN;

    /* the actor under the one spelling its posts are kept by */

    rc = ngx_http_tent_entity_canonical(r->pool, &v->actor,
                                        &st->received.entity);
    if (rc == NGX_DECLINED) {
        return ngx_http_tent_ap_held_202(r);
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_internal_error(r, "spelling the actor");
    }

    return ngx_http_tent_ap_held_get(r, ctx, st);
}


/* the copy we hold: the post row of (the actor, the object's post id) */

static ngx_int_t
ngx_http_tent_ap_held_get(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_held_t *st)
{
    ngx_str_t                  key, *id;
    ngx_http_tent_store_op_t  *op;

    id = st->update ? &st->received.id : &st->received.deletes;

    if (ngx_http_tent_post_key(r->pool, &ctx->entity, &st->received.entity,
                               id, -1, &key)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the post's key");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL || ngx_http_tent_store_get(op, &key) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "building the post's read");
    }

    ctx->state = st;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent inbox: %s of post \"%V\" of \"%V\"",
                   st->update ? "Update" : "Delete", id,
                   &st->received.entity);

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_held_read);
}


static ngx_int_t
ngx_http_tent_ap_held_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                    *copy;
    ngx_int_t                  rc;
    json_int_t                 version;
    const char               **f;
    static const char         *fields[] = { "type", "content", "mentions",
                                            "permissions", "activitypub",
                                            NULL };
    ngx_str_t                  value;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_ap_held_t   *st;
    ngx_http_tent_store_op_t  *wop;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: a post we do not hold, ignored");
        return ngx_http_tent_ap_held_202(r);
    }

    ngx_http_tent_store_value(op, &value);

    copy = ngx_http_tent_json_load(r, &value);
    if (copy == NULL) {
        return ngx_http_tent_internal_error(r, "reading our copy");
    }

    if (!st->update) {
        wop = ngx_http_tent_received_delete(r->pool, r->connection->log,
                                            &ctx->entity, &st->received,
                                            copy, &value);
        if (wop == NULL) {
            return ngx_http_tent_internal_error(r,
                                           "building the delete's batch");
        }

        return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_ap_held_done);
    }

    /*
     * the same post again (a replay to another worker, an Update sent
     * twice): no new version, so that an Update is idempotent as the
     * inbox's other activities are
     */

    for (f = fields; *f; f++) {
        if (!json_equal(json_object_get(copy, *f),
                        json_object_get(st->received.post, *f))
            && (json_object_get(copy, *f)
                || json_object_get(st->received.post, *f)))
        {
            break;
        }
    }

    if (*f == NULL) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: an Update changing nothing, ignored");
        return ngx_http_tent_ap_held_202(r);
    }

    /* the next version; the copy's times kept (its feed rows' keys) */

    version = json_integer_value(json_object_get(copy, "version"));

    if (version < 1 || version >= 1000) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent inbox: an Update of a post at version %L, "
                      "not kept", (int64_t) version);
        return ngx_http_tent_ap_held_202(r);
    }

    st->received.version = version + 1;

    if (json_object_set_new(st->received.post, "version",
                            json_integer(st->received.version))
        != 0)
    {
        return ngx_http_tent_internal_error(r, "setting the version");
    }

    /* compared with the copy read: a concurrent Update wins, this is 202 */

    wop = ngx_http_tent_received_batch(r->pool, r->connection->log,
                                       &ctx->entity, &st->received, copy,
                                       &value);
    if (wop == NULL) {
        return ngx_http_tent_internal_error(r, "building the post's batch");
    }

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_ap_held_done);
}


static ngx_int_t
ngx_http_tent_ap_held_done(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t  status;

    if (op->status != NGX_HTTP_TENT_STORE_OK
        && op->status != NGX_HTTP_TENT_STORE_CONFLICT)
    {
        status = ngx_http_tent_store_http_status(op);
        return ngx_http_tent_send_error(r, status, NULL);
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent inbox: post %s",
                   op->status == NGX_HTTP_TENT_STORE_OK
                   ? "written" : "changed meanwhile, left");

    return ngx_http_tent_ap_held_202(r);
}


/*
 * Announce: a repost of the actor, {"entity", "id"} the original's (ours
 * when the object id is one of our posts' URLs; else its attributedTo
 * when the object is embedded with one, or the URL itself, and
 * ngx_http_tent_ap_post_id() of the URL: the id a Create of it is kept
 * under), the URL in activitypub.object.  Kept when the post is ours or
 * the actor is one of the entity's followings, as a Create is; the
 * object is never fetched.
 */

ngx_int_t
ngx_http_tent_ap_inbox_announce(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_verify_t *v)
{
    u_char                   *pid;
    size_t                    i;
    json_t                   *object, *by, *post, *list, *item;
    ngx_str_t                 url, aid, origin_api, ours, entity;
    ngx_uint_t                k, pub;
    ngx_http_tent_ap_held_t  *st;
    static const char        *lists[] = { "to", "cc" };

    object = json_object_get(v->activity, "object");
    by = json_is_object(object) ? json_object_get(object, "attributedTo")
                                : NULL;

    if (json_is_object(object)) {
        object = json_object_get(object, "id");
    }

    if (!json_is_string(object)
        || ngx_http_tent_json_str(v->activity, "id", &aid) != NGX_OK
        || aid.len == 0 || aid.len > NGX_HTTP_TENT_AP_URL_MAX)
    {
        return ngx_http_tent_ap_held_202(r);
    }

    url.data = (u_char *) json_string_value(object);
    url.len = json_string_length(object);

    if (url.len > NGX_HTTP_TENT_AP_URL_MAX
        || (ngx_strncasecmp(url.data, (u_char *) "https://", 8) != 0
            && ngx_strncasecmp(url.data, (u_char *) "http://", 7) != 0))
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: an Announce by \"%V\" of no http(s) "
                       "object, ignored", &v->actor);
        return ngx_http_tent_ap_held_202(r);
    }

    if (ngx_http_tent_blocks_has(ctx->blocks, &v->actor)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "The actor is blocked");
    }

    if (ngx_http_tent_ap_origin_api_of(r, ctx, &origin_api) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "building our URLs");
    }

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_held_t));
    pid = ngx_pnalloc(r->pool, 2 * (NGX_HTTP_TENT_AP_POST_ID_LEN + 2));

    if (st == NULL || pid == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the repost");
    }

    st->verify = v;

    if (ngx_http_tent_ap_object_post(&origin_api, &url, &ours) == NGX_OK) {
        entity = ctx->entity;
        st->ours = 1;       /* kept whoever announced it */

    } else {
        if (json_is_array(by)) {
            by = json_array_get(by, 0);
        }

        if (json_is_object(by)) {
            by = json_object_get(by, "id");
        }

        if (json_is_string(by)
            && json_string_length(by) <= NGX_HTTP_TENT_AP_URL_MAX
            && (ngx_strncasecmp((u_char *) json_string_value(by),
                                (u_char *) "https://", 8) == 0
                || ngx_strncasecmp((u_char *) json_string_value(by),
                                   (u_char *) "http://", 7) == 0))
        {
            entity.data = (u_char *) json_string_value(by);
            entity.len = json_string_length(by);

        } else {
            entity = url;
        }

        if (ngx_http_tent_ap_post_id(&url, pid) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "making the post's id");
        }

        ours.data = pid;
        ours.len = NGX_HTTP_TENT_AP_POST_ID_LEN;
    }

    if (ngx_http_tent_ap_post_id(&aid, pid + NGX_HTTP_TENT_AP_POST_ID_LEN + 2)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "making the repost's id");
    }

    /* public when addressed so, as Mastodon's boosts are */

    pub = 0;

    for (k = 0; k < 2 && !pub; k++) {
        list = json_object_get(v->activity, lists[k]);

        if (json_is_string(list)) {
            pub = ngx_strcmp(json_string_value(list),
                             NGX_HTTP_TENT_AP_PUBLIC) == 0;
            continue;
        }

        json_array_foreach(list, i, item) {
            if (i >= NGX_HTTP_TENT_AP_ADDRESS_MAX || pub) {
                break;
            }

            pub = json_is_string(item)
                  && ngx_strcmp(json_string_value(item),
                                NGX_HTTP_TENT_AP_PUBLIC) == 0;
        }
    }

    post = json_pack("{s:s%, s:o, s:s, s:{s:o, s:s%}, s:[{s:o, s:s%}],"
                     " s:{s:b}}",
                     "id", (char *) pid + NGX_HTTP_TENT_AP_POST_ID_LEN + 2,
                     (size_t) NGX_HTTP_TENT_AP_POST_ID_LEN,
                     "entity", ngx_http_tent_json_string(&v->actor),
                     "type", NGX_HTTP_TENT_AP_REPOST_TYPE,
                     "content",
                     "entity", ngx_http_tent_json_string(&entity),
                     "id", (char *) ours.data, ours.len,
                     "mentions",
                     "entity", ngx_http_tent_json_string(&entity),
                     "post", (char *) ours.data, ours.len,
                     "permissions", "public", (int) pub);

    if (post == NULL || ngx_http_tent_json_cleanup(r->pool, post) != NGX_OK) {
        json_decref(post);
        return ngx_http_tent_internal_error(r, "building the repost");
    }

    st->received.post = post;
    st->url = url;

    if (st->ours) {
        return ngx_http_tent_ap_announce_store(r, ctx, st);
    }

    ctx->state = st;

    return ngx_http_tent_store_get_request(r,
                                        NGX_HTTP_TENT_TABLE_FOLLOWING_ENTITY,
                                        &v->actor,
                                        ngx_http_tent_ap_announce_following);
}


static ngx_int_t
ngx_http_tent_ap_announce_following(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t             rc;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: an Announce by no following of "
                       "another's post, ignored");
        return ngx_http_tent_ap_held_202(r);
    }

    return ngx_http_tent_ap_announce_store(r, ctx, ctx->state);
}


/* as a Create's post: the feed's rules, a first copy only */

static ngx_int_t
ngx_http_tent_ap_announce_store(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_held_t *st)
{
    json_t                     *post, *ap;
    ngx_str_t                   url;
    ngx_int_t                   status;
    const char                 *error;
    ngx_http_tent_ap_verify_t  *v;
    ngx_http_tent_store_op_t   *op;

    v = st->verify;
    post = st->received.post;
    url = st->url;

    ngx_memzero(&st->received, sizeof(ngx_http_tent_received_t));

    status = ngx_http_tent_received_parse(r->pool, post, &v->actor, 0,
                                          &st->received, &error);

    if (status == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, error);
    }

    if (status != NGX_OK) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent inbox: an Announce by \"%V\" not kept: %s",
                      &v->actor, error);
        return ngx_http_tent_ap_held_202(r);
    }

    ap = json_pack("{s:O, s:o}",
                   "id", json_object_get(v->activity, "id"),
                   "object", ngx_http_tent_json_string(&url));

    if (ap == NULL
        || json_object_set_new(st->received.post, "activitypub", ap) != 0)
    {
        return ngx_http_tent_internal_error(r, "keeping the object's URL");
    }

    st->received.deletes.len = 0;
    st->received.profile = 0;

    op = ngx_http_tent_received_batch(r->pool, r->connection->log,
                                      &ctx->entity, &st->received, NULL,
                                      NULL);
    if (op == NULL) {
        return ngx_http_tent_internal_error(r, "building the repost's batch");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent inbox: repost \"%V\" of \"%V\"",
                   &st->received.id, &v->actor);

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_held_done);
}


/*
 * Update(Person) by the actor itself (the caller dropped its kept key):
 * when it follows the entity, its follower record's inbox and shared
 * inbox become the Person's, if they changed.  Only URLs on the actor's
 * own origin are taken: a signed Update can move the actor's inbox on
 * its server, not point our deliveries at a third party's.
 */

ngx_int_t
ngx_http_tent_ap_inbox_person(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_verify_t *v)
{
    json_t                   *person;
    ngx_http_tent_ap_held_t  *st;

    person = json_object_get(v->activity, "object");

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_held_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the state");
    }

    st->verify = v;

    if (!json_is_object(person)
        || ngx_http_tent_ap_person_url(json_object_get(person, "inbox"), v,
                                       &st->inbox)
           != NGX_OK)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: Update(Person) of \"%V\" with no inbox "
                       "of its origin, its record left", &v->actor);
        return ngx_http_tent_ap_held_202(r);
    }

    if (ngx_http_tent_ap_person_url(
            json_object_get(json_object_get(person, "endpoints"),
                            "sharedInbox"),
            v, &st->shared_inbox)
        != NGX_OK)
    {
        ngx_str_null(&st->shared_inbox);
    }

    ctx->state = st;

    return ngx_http_tent_store_get_request(r,
                                        NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY,
                                        &v->actor,
                                        ngx_http_tent_ap_person_index);
}


static ngx_int_t
ngx_http_tent_ap_person_url(json_t *v, ngx_http_tent_ap_verify_t *verify,
    ngx_str_t *url)
{
    if (!json_is_string(v)) {
        return NGX_DECLINED;
    }

    url->data = (u_char *) json_string_value(v);
    url->len = json_string_length(v);

    if (url->len > NGX_HTTP_TENT_AP_URL_MAX
        || (ngx_strncasecmp(url->data, (u_char *) "https://", 8) != 0
            && ngx_strncasecmp(url->data, (u_char *) "http://", 7) != 0)
        || ngx_http_tent_ap_same_origin(url, &verify->actor) != NGX_OK)
    {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_ap_person_index(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                 rc;
    ngx_http_tent_ctx_t      *ctx;
    ngx_http_tent_ap_held_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        return ngx_http_tent_ap_held_202(r);
    }

    st = ctx->state;

    ngx_http_tent_store_value(op, &st->record_id);

    return ngx_http_tent_store_get_request(r, NGX_HTTP_TENT_TABLE_FOLLOWER,
                                           &st->record_id,
                                           ngx_http_tent_ap_person_record);
}


static ngx_int_t
ngx_http_tent_ap_person_record(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                    *record, *ap, *old;
    ngx_int_t                  rc;
    ngx_str_t                  value, nvalue, key, name, icon;
    ngx_uint_t                 changed;
    ngx_http_tent_ctx_t       *ctx;
    ngx_http_tent_ap_held_t   *st;
    ngx_http_tent_store_op_t  *wop;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        return ngx_http_tent_ap_held_202(r);
    }

    st = ctx->state;

    ngx_http_tent_store_value(op, &value);

    record = ngx_http_tent_json_load(r, &value);
    if (record == NULL) {
        return ngx_http_tent_internal_error(r, "reading the follower");
    }

    /* a Tent follower of the same URL is no ActivityPub actor's */

    ap = json_object_get(record, "activitypub");
    if (!json_is_object(ap)) {
        return ngx_http_tent_ap_held_202(r);
    }

    changed = 0;
    old = json_object_get(ap, "inbox");

    if (!json_is_string(old)
        || json_string_length(old) != st->inbox.len
        || ngx_strncmp(json_string_value(old), st->inbox.data, st->inbox.len)
           != 0)
    {
        json_object_set_new(ap, "inbox",
                            ngx_http_tent_json_string(&st->inbox));
        changed = 1;
    }

    old = json_object_get(ap, "shared_inbox");

    if (st->shared_inbox.len == 0) {
        if (old) {
            json_object_del(ap, "shared_inbox");
            changed = 1;
        }

    } else if (!json_is_string(old)
               || json_string_length(old) != st->shared_inbox.len
               || ngx_strncmp(json_string_value(old), st->shared_inbox.data,
                              st->shared_inbox.len)
                  != 0)
    {
        json_object_set_new(ap, "shared_inbox",
                            ngx_http_tent_json_string(&st->shared_inbox));
        changed = 1;
    }

    /* its name and icon, shown for it (docs/activitypub.md) */

    if (ngx_http_tent_ap_face(r->pool,
                              json_object_get(st->verify->activity, "object"),
                              &name, &icon)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "reading the Person's name");
    }

    changed |= ngx_http_tent_ap_face_set(ap, &name, &icon);

    if (!changed) {
        return ngx_http_tent_ap_held_202(r);
    }

    json_object_set_new(record, "updated_at", json_integer(ngx_time()));

    wop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (wop == NULL
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_FOLLOWER, &st->record_id,
                             &key)
           != NGX_OK
        || ngx_http_tent_json_dump(r->pool, record, &nvalue) != NGX_OK
        || ngx_http_tent_store_cas(wop, &key, &value, &nvalue) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the follower's row");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent inbox: follower \"%V\": inbox now \"%V\"",
                   &st->verify->actor, &st->inbox);

    return ngx_http_tent_store_submit_request(r, wop,
                                              ngx_http_tent_ap_held_done);
}
