
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The ActivityPub transport's reposts (docs/activitypub.md, "Our
 * reposts"): a repost is an Announce of the reposted post's
 * ActivityStreams id, which the repost ({entity, id}) does not carry:
 * the post as we keep it is read (one get, in the entity's own rows)
 * for the id the inbox kept of an actor's post.  The delete post of a
 * repost is an Undo of that Announce.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_job.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_ap_map.h"


/* a repost job's state, in t->carried */
typedef struct {
    json_t                           *reposted;   /* as kept, or NULL */
    EVP_PKEY                         *key;
    ngx_http_tent_apt_resume_pt       resume;
} ngx_http_tent_apt_repost_t;


static void ngx_http_tent_apt_repost_loaded(ngx_http_tent_store_op_t *op);


/*
 * A follower's job of a repost (its first version) of another entity's
 * post: that post read first, then resume(t, key) again.  NGX_OK:
 * nothing to read (or read already); NGX_AGAIN: the read is in flight;
 * NGX_ERROR.
 */

ngx_int_t
ngx_http_tent_apt_repost_read(ngx_http_tent_job_t *t, EVP_PKEY *key,
    ngx_http_tent_apt_resume_pt resume)
{
    json_t                      *post, *content;
    ngx_str_t                    e, id, rkey, *entity;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_apt_repost_t  *st;

    post = t->task.post;
    entity = &t->task.ent->entity;

    if (t->carried
        || t->row.kind != NGX_HTTP_TENT_JOB_FOLLOWER
        || ngx_http_tent_ap_repost_kind(post) != NGX_HTTP_TENT_AP_REPOST
        || json_integer_value(json_object_get(post, "version")) > 1)
    {
        return NGX_OK;
    }

    content = json_object_get(post, "content");

    if (ngx_http_tent_json_str(content, "entity", &e) != NGX_OK
        || ngx_http_tent_json_str(content, "id", &id) != NGX_OK
        || e.len == 0 || id.len == 0
        || (e.len == entity->len
            && ngx_strncmp(e.data, entity->data, e.len) == 0))
    {
        return NGX_OK;
    }

    st = ngx_pcalloc(t->task.pool, sizeof(ngx_http_tent_apt_repost_t));
    op = ngx_http_tent_store_op_create(t->task.pool, t->task.dl->log);

    if (st == NULL || op == NULL
        || ngx_http_tent_post_key(t->task.pool, entity, &e, &id, -1, &rkey)
           != NGX_OK
        || ngx_http_tent_store_get(op, &rkey) != NGX_OK)
    {
        return NGX_ERROR;
    }

    st->key = key;
    st->resume = resume;
    t->carried = st;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": activitypub: reading the "
                   "reposted post \"%V\" of \"%V\"", &t->task.post_id, &id,
                   &e);

    ngx_http_tent_task_submit(&t->task, op, ngx_http_tent_apt_repost_loaded);

    return NGX_AGAIN;
}


static void
ngx_http_tent_apt_repost_loaded(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_job_t *t = op->data;

    ngx_str_t                    value;
    ngx_http_tent_apt_repost_t  *st;

    st = t->carried;

    if (op->status == NGX_HTTP_TENT_STORE_OK
        && ngx_http_tent_store_value(op, &value) == NGX_OK)
    {
        st->reposted = ngx_http_tent_json_own(t->task.pool,
                           ngx_http_tent_json_parse(&value, t->task.dl->log));

    } else if (op->status != NGX_HTTP_TENT_STORE_NOT_FOUND) {
        t->error = "the reposted post could not be read";
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_RETRY);
        return;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": activitypub: the reposted "
                   "post %s", &t->task.post_id,
                   st->reposted ? "is kept" : "is not kept here");

    st->resume(t, st->key);
}


/*
 * The activity of a repost (an Announce; a later version: none) or of
 * the delete post of one (an Undo of it): NGX_OK with *activity (NULL:
 * no ActivityPub form); NGX_DECLINED: another post, the caller's.
 */

ngx_int_t
ngx_http_tent_apt_repost_activity(ngx_http_tent_job_t *t,
    ngx_str_t *origin_api, ngx_str_t *name, json_t **activity)
{
    json_t                      *post;
    ngx_int_t                    rc;
    ngx_str_t                    object, *entity;
    ngx_http_tent_apt_repost_t  *st;

    post = t->task.post;
    entity = &t->task.ent->entity;
    *activity = NULL;

    switch (ngx_http_tent_ap_repost_kind(post)) {

    case NGX_HTTP_TENT_AP_UNREPOST:
        *activity = ngx_http_tent_ap_undo_announce(t->task.pool, origin_api,
                                                   entity, name, post);
        return *activity ? NGX_OK : NGX_ERROR;

    case NGX_HTTP_TENT_AP_REPOST:
        break;

    default:
        return NGX_DECLINED;
    }

    /* a new version of a repost: the Announce was made by the first */

    if (json_integer_value(json_object_get(post, "version")) > 1) {
        return NGX_OK;
    }

    st = t->carried;

    rc = ngx_http_tent_ap_repost_object(t->task.pool, origin_api, entity,
                                        post, st ? st->reposted : NULL,
                                        &object);
    if (rc == NGX_DECLINED) {
        return NGX_OK;
    }

    if (rc != NGX_OK) {
        return NGX_ERROR;
    }

    *activity = ngx_http_tent_ap_announce(t->task.pool, origin_api, entity,
                                          name, post, &object);

    return *activity ? NGX_OK : NGX_ERROR;
}
