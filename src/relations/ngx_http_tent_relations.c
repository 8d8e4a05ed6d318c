
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * What followers and followings share: their ids, finding one by id or
 * by url-encoded entity, and paginated lists.  A relationship's id is
 * 16 bytes as hex, the first 8 the creation time in microseconds, so the
 * table sorts by age and a list is one iterator scan from a cursor id
 * (the lists: relations_list.c).
 */


#define NGX_HTTP_TENT_RELATIONS_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_relations_private.h"
#include "ngx_http_tent_store.h"


static ngx_int_t ngx_http_tent_relation_by_entity(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_relation_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


ngx_int_t
ngx_http_tent_relation_id(ngx_pool_t *pool, ngx_str_t *id)
{
    u_char           raw[16];
    uint64_t         us;
    ngx_uint_t       i;
    struct timeval   tv;

    ngx_gettimeofday(&tv);
    us = (uint64_t) tv.tv_sec * 1000000 + tv.tv_usec;

    for (i = 0; i < 8; i++) {
        raw[i] = (u_char) (us >> (56 - 8 * i));
    }

    if (RAND_bytes(raw + 8, 8) != 1) {
        return NGX_ERROR;
    }

    id->data = ngx_pnalloc(pool, 32);
    if (id->data == NULL) {
        return NGX_ERROR;
    }

    id->len = ngx_hex_dump(id->data, raw, 16) - id->data;

    return NGX_OK;
}


ngx_int_t
ngx_http_tent_relation_id_valid(ngx_str_t *id)
{
    size_t  i;

    if (id->len != 32) {
        return NGX_ERROR;
    }

    for (i = 0; i < id->len; i++) {
        if (!((id->data[i] >= '0' && id->data[i] <= '9')
              || (id->data[i] >= 'a' && id->data[i] <= 'f')))
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* the principal is this relationship's own peer, signing with its key */

ngx_int_t
ngx_http_tent_relation_is_peer(ngx_http_tent_ctx_t *ctx, json_t *record,
    ngx_uint_t kind)
{
    ngx_str_t  key_id;

    return ctx->principal.kind == kind
           && ngx_http_tent_json_str(record, "mac_key_id", &key_id) == NGX_OK
           && key_id.len == ctx->principal.key_id.len
           && ngx_strncmp(key_id.data, ctx->principal.key_id.data,
                          key_id.len) == 0;
}


/*
 * An ActivityPub actor has no Tent profile: the name and icon its record
 * keeps ("activitypub", docs/activitypub.md "Names and faces") are shown
 * as the basic profile a Tent entity's record carries, so that apps read
 * both alike.
 */

static ngx_int_t
ngx_http_tent_relation_ap_profile(json_t *out, json_t *record)
{
    json_t  *ap, *name, *icon, *basic;

    ap = json_object_get(record, "activitypub");
    name = json_object_get(ap, "name");
    icon = json_object_get(ap, "icon");

    if (!json_is_object(ap) || (!json_is_string(name) && !json_is_string(icon))
        || json_object_size(json_object_get(record, "profile")) != 0)
    {
        return NGX_OK;
    }

    basic = json_object();
    if (basic == NULL
        || (json_is_string(name)
            && json_object_set(basic, "name", name) != 0)
        || (json_is_string(icon)
            && json_object_set(basic, "avatar_url", icon) != 0)
        || json_object_set_new(out, "profile",
                               json_pack("{s:o}",
                                         "https://tent.io/types/info/basic/"
                                         "v0.1.0",
                                         basic))
           != 0)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * A relationship's JSON for this principal (spec 7.2): anyone sees the
 * entity, id, created_at and public flag; the peer itself its licenses,
 * types and notification path; an app with the read scope the rest but
 * secrets, which need read_secrets and ?secrets=true.
 */

json_t *
ngx_http_tent_relation_render(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_relation_t *rel, json_t *record)
{
    json_t      *out, *perms;
    ngx_str_t    v;
    const char  *key;
    json_t      *value;

    out = json_object();
    if (out == NULL) {
        return NULL;
    }

    perms = json_object_get(record, "permissions");

    if (ngx_http_tent_has_scopes(ctx, rel->read_scope)) {
        json_object_foreach(record, key, value) {
            if (ngx_strncmp(key, "mac_", 4) != 0
                && ngx_strcmp(key, "confirmed") != 0
                && ngx_strcmp(key, "servers") != 0)
            {
                json_object_set(out, key, value);
            }
        }

        if (ngx_http_tent_relation_ap_profile(out, record) != NGX_OK) {
            json_decref(out);
            return NULL;
        }

        if (ngx_http_tent_has_scopes(ctx, NGX_HTTP_TENT_READ_SECRETS)
            && ngx_http_arg(r, (u_char *) "secrets", 7, &v) == NGX_OK
            && v.len == 4 && ngx_strncmp(v.data, "true", 4) == 0)
        {
            json_object_set(out, "mac_key_id",
                            json_object_get(record, "mac_key_id"));
            json_object_set(out, "mac_key",
                            json_object_get(record, "mac_key"));
            json_object_set(out, "mac_algorithm",
                            json_object_get(record, "mac_algorithm"));
        }

        return out;
    }

    json_object_set(out, "id", json_object_get(record, "id"));
    json_object_set(out, "entity", json_object_get(record, "entity"));
    json_object_set(out, "created_at", json_object_get(record, "created_at"));
    json_object_set_new(out, "permissions",
                        json_pack("{s:b}", "public",
                                  json_is_true(json_object_get(perms,
                                                               "public"))));

    if (ngx_http_tent_relation_is_peer(ctx, record, rel->peer_kind)) {
        json_object_set(out, "licenses", json_object_get(record, "licenses"));
        json_object_set(out, "types", json_object_get(record, "types"));

        if (json_object_get(record, "notification_path")) {
            json_object_set(out, "notification_path",
                            json_object_get(record, "notification_path"));
        }
    }

    return out;
}


ngx_int_t
ngx_http_tent_relation_visible(ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_relation_t *rel, json_t *record)
{
    if (json_is_false(json_object_get(record, "confirmed"))) {
        return 0;
    }

    return ngx_http_tent_has_scopes(ctx, rel->read_scope)
           || json_is_true(json_object_get(json_object_get(record,
                                                           "permissions"),
                                           "public"))
           || ngx_http_tent_relation_is_peer(ctx, record, rel->peer_kind);
}


/*
 * Load the relationship named by the route's parameter: an id, or an
 * url-encoded entity URL in any of its spellings (then Content-Location
 * names it by id).  "next" gets the record, or NULL when there is none.
 */

ngx_int_t
ngx_http_tent_relation_load(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_relation_t *rel, ngx_str_t *param,
    ngx_http_tent_relation_pt next)
{
    u_char                           *dst, *src;
    ngx_int_t                         rc;
    ngx_str_t                         raw, entity;
    ngx_http_tent_relations_state_t  *st;

    if (param->len > 4
        && ngx_strncasecmp(param->data, (u_char *) "http", 4) == 0)
    {
        raw.data = ngx_pnalloc(r->pool, param->len);
        if (raw.data == NULL) {
            return ngx_http_tent_internal_error(r, "unescaping the entity");
        }

        dst = raw.data;
        src = param->data;
        ngx_unescape_uri(&dst, &src, param->len, 0);
        raw.len = dst - raw.data;

        rc = ngx_http_tent_entity_canonical(r->pool, &raw, &entity);

        if (rc == NGX_ERROR) {
            return ngx_http_tent_internal_error(r, "spelling the entity");
        }

        if (rc != NGX_OK) {
            return next(r, ctx, NULL);
        }

        return ngx_http_tent_relation_load_entity(r, ctx, rel, &entity,
                                                  next);
    }

    if (ngx_http_tent_relation_id_valid(param) != NGX_OK) {
        return next(r, ctx, NULL);
    }

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_relations_state_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the load state");
    }

    st->rel = rel;
    st->next = next;
    st->saved = ctx->state;
    ctx->state = st;

    return ngx_http_tent_store_get_request(r, rel->table, param,
                                           ngx_http_tent_relation_loaded);
}


/* the same by an entity already in its canonical spelling */

ngx_int_t
ngx_http_tent_relation_load_entity(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_relation_t *rel,
    ngx_str_t *entity, ngx_http_tent_relation_pt next)
{
    ngx_http_tent_relations_state_t  *st;

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_relations_state_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the load state");
    }

    st->rel = rel;
    st->next = next;
    st->saved = ctx->state;
    ctx->state = st;
    st->entity = *entity;
    st->by_entity = 1;

    return ngx_http_tent_store_get_request(r, rel->entity_table, entity,
                                           ngx_http_tent_relation_by_entity);
}


static ngx_int_t
ngx_http_tent_relation_by_entity(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                         rc;
    ngx_str_t                         id;
    ngx_http_tent_ctx_t              *ctx;
    ngx_http_tent_relations_state_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        ctx->state = st->saved;
        return st->next(r, ctx, NULL);
    }

    ngx_http_tent_store_value(op, &id);

    return ngx_http_tent_store_get_request(r, st->rel->table, &id,
                                           ngx_http_tent_relation_loaded);
}


static ngx_int_t
ngx_http_tent_relation_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    u_char                           *p;
    json_t                           *record;
    ngx_int_t                         rc;
    ngx_str_t                         value, id;
    ngx_table_elt_t                  *h;
    ngx_http_tent_ctx_t              *ctx;
    ngx_http_tent_srv_conf_t         *scf;
    ngx_http_tent_relations_state_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        ctx->state = st->saved;
        return st->next(r, ctx, NULL);
    }

    ngx_http_tent_store_value(op, &value);

    record = ngx_http_tent_json_load(r, &value);
    if (record == NULL) {
        return ngx_http_tent_internal_error(r, "reading the relationship");
    }

    if (st->by_entity
        && ngx_http_tent_json_str(record, "id", &id) == NGX_OK
        && ngx_http_tent_relation_visible(ctx, st->rel, record))
    {
        scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

        h = ngx_list_push(&r->headers_out.headers);
        p = ngx_pnalloc(r->pool, ctx->origin.len + scf->api_root.len
                                 + st->rel->name.len + id.len + 4);
        if (h == NULL || p == NULL) {
            return ngx_http_tent_internal_error(r,
                                       "adding the Content-Location header");
        }

        h->hash = 1;
        ngx_str_set(&h->key, "Content-Location");
        h->value.data = p;
        h->value.len = ngx_sprintf(p, "%V%V/%V/%V", &ctx->origin,
                                   &scf->api_root, &st->rel->name, &id)
                       - p;
    }

    ctx->state = st->saved;

    return st->next(r, ctx, record);
}


/* GET /followers/:id and /followings/:id */

static ngx_int_t
ngx_http_tent_relation_reply(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    json_t *record)
{
    json_t                    *out;
    ngx_http_tent_relation_t  *rel;

    rel = ctx->state;

    if (record == NULL || !ngx_http_tent_relation_visible(ctx, rel, record)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    out = ngx_http_tent_json_own(r->pool,
                                 ngx_http_tent_relation_render(r, ctx, rel,
                                                               record));
    if (out == NULL) {
        return ngx_http_tent_internal_error(r, "rendering the relationship");
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
}


ngx_int_t
ngx_http_tent_relation_get(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_relation_t *rel)
{
    ctx->state = rel;

    return ngx_http_tent_relation_load(r, ctx, rel, &ctx->params[0],
                                       ngx_http_tent_relation_reply);
}


/*
 * A post the server itself makes (a follow, a profile change): of our
 * entity, written into the caller's batch with its versions, feed index
 * and outbox rows, so followers hear of it as of any post.
 */

ngx_int_t
ngx_http_tent_internal_post(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_store_op_t *op, const char *kind, json_t *content,
    ngx_uint_t public)
{
    json_t     *post;
    ngx_str_t   id, key, value;

    if (ngx_http_tent_random_id(r->pool, NULL, 16, &id) != NGX_OK) {
        return NGX_ERROR;
    }

    post = json_pack("{s:o, s:o, s:s++, s:O, s:{s:b}, s:I, s:I, s:I, s:i,"
                     " s:I, s:[]}",
                     "id", ngx_http_tent_json_string(&id),
                     "entity", ngx_http_tent_json_string(&ctx->entity),
                     "type", "https://tent.io/types/post/", kind, "/v0.1.0",
                     "content", content,
                     "permissions", "public", (int) public,
                     "published_at", (json_int_t) ngx_time(),
                     "received_at", (json_int_t) ngx_time(),
                     "updated_at", (json_int_t) ngx_time(),
                     "version", 1,
                     "rus", (json_int_t) ngx_http_tent_now_us(),
                     "attachments");

    if (post == NULL
        || ngx_http_tent_json_cleanup(r->pool, post) != NGX_OK)
    {
        json_decref(post);
        return NGX_ERROR;
    }

    if (ngx_http_tent_json_dump(r->pool, post, &value) != NGX_OK
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &ctx->entity, &id,
                                  -1, &key)
           != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK
        || ngx_http_tent_post_key(r->pool, &ctx->entity, &ctx->entity, &id,
                                  1, &key)
           != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK
        || ngx_http_tent_post_index(r, ctx, op, post, 0) != NGX_OK
        || ngx_http_tent_delivery_mark(r->pool, &ctx->entity, op, post)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * "follower" or "following" {id, entity, action} (spec 7.1, 7.2, 7.3).
 * A following is the owner's own act: public as the relationship is, as
 * in tentd.  A follower post tells of another server's act, and anyone
 * may follow and unfollow: it is private, seen by our apps with
 * read_posts only, so a stranger's follow is sent to none of our
 * followers and does not fill the public feed.
 */

ngx_int_t
ngx_http_tent_relation_post(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_store_op_t *op, const char *kind, json_t *record,
    const char *action)
{
    json_t      *content;
    ngx_uint_t   public;

    content = json_pack("{s:O, s:O, s:s}",
                        "id", json_object_get(record, "id"),
                        "entity", json_object_get(record, "entity"),
                        "action", action);

    if (content == NULL
        || ngx_http_tent_json_cleanup(r->pool, content) != NGX_OK)
    {
        json_decref(content);
        return NGX_ERROR;
    }

    public = ngx_strcmp(kind, "follower") != 0
             && json_is_true(json_object_get(json_object_get(record,
                                                             "permissions"),
                                             "public"));

    return ngx_http_tent_internal_post(r, ctx, op, kind, content, public);
}


static ngx_int_t ngx_http_tent_relation_tell(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_relation_t *rel,
    ngx_http_tent_store_op_t *op, json_t *record);


/*
 * Forget a relationship: its row, its entity row and its credential go,
 * and a post says so, in one synced batch; the answer is 200, empty.  An
 * ActivityPub follower has no credential; it is told with a Reject of
 * its Follow, queued in the same batch (its server then forgets the
 * follow too, as Mastodon does).
 */

ngx_int_t
ngx_http_tent_relation_remove(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_relation_t *rel, json_t *record)
{
    ngx_str_t                  id, entity, key_id, key, ekey, ckey;
    ngx_http_tent_store_op_t  *op;

    ngx_str_null(&key_id);
    ngx_str_null(&ckey);

    if (ngx_http_tent_json_str(record, "id", &id) != NGX_OK
        || ngx_http_tent_json_str(record, "entity", &entity) != NGX_OK
        || (ngx_http_tent_json_str(record, "mac_key_id", &key_id) != NGX_OK
            && !json_is_object(json_object_get(record, "activitypub"))))
    {
        return ngx_http_tent_internal_error(r,
                                       "reading the relationship's ids");
    }

    /* an ActivityPub follower has no credential (docs/activitypub.md) */

    if (ngx_http_tent_json_str(record, "mac_key_id", &key_id) != NGX_OK) {
        ngx_str_null(&key_id);
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent relations: removing %s \"%V\" of \"%V\"",
                   rel->kind, &id, &entity);

    if (ngx_http_tent_key(r->pool, &ctx->entity, rel->table, &id, &key)
        != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity, rel->entity_table,
                             &entity, &ekey)
           != NGX_OK
        || (key_id.len
            && ngx_http_tent_key(r->pool, &ctx->entity,
                                 NGX_HTTP_TENT_TABLE_CREDENTIAL, &key_id,
                                 &ckey)
               != NGX_OK))
    {
        return ngx_http_tent_internal_error(r,
                                       "building the relationship's keys");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_write(op, 1) != NGX_OK
        || ngx_http_tent_store_write_del(op, &key) != NGX_OK
        || ngx_http_tent_store_write_del(op, &ekey) != NGX_OK
        || (key_id.len
            && ngx_http_tent_store_write_del(op, &ckey) != NGX_OK))
    {
        return ngx_http_tent_internal_error(r,
                                       "adding the removal to the batch");
    }

    if (key_id.len == 0
        && ngx_http_tent_relation_tell(r, ctx, rel, op, record) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "queueing the Reject or Undo");
    }

    if (ngx_http_tent_relation_post(r, ctx, op, rel->kind, record, "delete")
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "adding the removal's post");
    }

    ctx->state = NULL;

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_reply_state_json);
}


/*
 * An ActivityPub relationship removed, its Follow embedded (the other
 * server finds it by its id): an ActivityPub follower (an unfollow by an
 * app, a block) gets a Reject of its Follow; an ActivityPub actor we
 * follow, an Undo of ours.  Queued to its inbox.
 */

static ngx_int_t
ngx_http_tent_relation_tell(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_relation_t *rel, ngx_http_tent_store_op_t *op,
    json_t *record)
{
    u_char      *p;
    json_t      *ap, *activity, *follower, *followed;
    ngx_int_t    rc;
    ngx_str_t    inbox, hex, id;
    const char  *type, *tag;

    ap = json_object_get(record, "activitypub");

    if (ngx_http_tent_json_str(ap, "inbox", &inbox) != NGX_OK
        || !json_is_string(json_object_get(ap, "follow")))
    {
        return NGX_OK;      /* nowhere to tell, nothing to name */
    }

    if (ngx_http_tent_random_hex(r->pool, 8, &hex) != NGX_OK) {
        return NGX_ERROR;
    }

    /* whose Follow it was: theirs (a follower), or ours (a following) */

    follower = json_object_get(record, "entity");
    followed = ngx_http_tent_json_string(&ctx->entity);
    type = "Reject";
    tag = "#reject-";

    if (rel->table == NGX_HTTP_TENT_TABLE_FOLLOWING) {
        followed = follower;
        follower = ngx_http_tent_json_string(&ctx->entity);
        type = "Undo";
        tag = "#undo-";
    }

    id.len = ctx->entity.len + ngx_strlen(tag) + hex.len;
    id.data = ngx_pnalloc(r->pool, id.len);
    if (id.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(id.data, ctx->entity.data, ctx->entity.len);
    p = ngx_cpymem(p, tag, ngx_strlen(tag));
    ngx_memcpy(p, hex.data, hex.len);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent relations: %s of the Follow to \"%V\"", type,
                   &inbox);

    activity = json_pack("{s:s, s:o, s:s, s:o, s:{s:O, s:s, s:O, s:O}}",
                         "@context", "https://www.w3.org/ns/activitystreams",
                         "id", ngx_http_tent_json_string(&id),
                         "type", type,
                         "actor", ngx_http_tent_json_string(&ctx->entity),
                         "object",
                             "id", json_object_get(ap, "follow"),
                             "type", "Follow",
                             "actor", follower,
                             "object", followed);

    /* the references made here: the pack holds its own */

    if (rel->table == NGX_HTTP_TENT_TABLE_FOLLOWING) {
        json_decref(follower);

    } else {
        json_decref(followed);
    }

    if (activity == NULL
        || ngx_http_tent_json_cleanup(r->pool, activity) != NGX_OK)
    {
        json_decref(activity);
        return NGX_ERROR;
    }

    rc = ngx_http_tent_delivery_activity(r->pool, &ctx->entity, op, activity,
                                         &inbox);

    /* an inbox that is no http(s) URL: the follower goes all the same */

    return (rc == NGX_DECLINED) ? NGX_OK : rc;
}


/* the full view an app is given when it made or changed a following */

json_t *
ngx_http_tent_following_view(json_t *record)
{
    json_t      *out, *v;
    const char  *key;

    out = json_object();
    if (out == NULL) {
        return NULL;
    }

    json_object_foreach(record, key, v) {
        if (ngx_strncmp(key, "mac_", 4) != 0
            && ngx_strcmp(key, "confirmed") != 0
            && ngx_strcmp(key, "servers") != 0)
        {
            json_object_set(out, key, v);
        }
    }

    return out;
}


/* PUT by an app: the public flag and the groups, when given and sound */

void
ngx_http_tent_relation_update(json_t *record, json_t *body)
{
    json_t  *v;

    v = json_object_get(json_object_get(body, "permissions"), "public");
    if (json_is_boolean(v)) {
        json_object_set_new(record, "permissions",
                            json_pack("{s:O}", "public", v));
    }

    v = json_object_get(body, "groups");
    if (json_is_array(v) && json_array_size(v) <= 100) {
        json_object_set(record, "groups", v);
    }
}
