
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The fan-out: an outbox row becomes one job per follower who may see
 * the post (followers read a batch at a time), then, for a profile post,
 * per confirmed following that was not told as a follower, per app
 * subscribed through a notification URL, and, for a new post, per
 * mentioned entity that got nothing yet (ngx_http_tent_fanout_mentions.c;
 * a profile post's followers told: ngx_http_tent_fanout_told.c).
 * The jobs of a batch and, with the last, the row's removal are one
 * write; each batch of followers has a pool of its own.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_domains.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_blocks.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_fanout.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_remote.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


/*
 * followers read and made into jobs a step: each step is one turn of the
 * event loop (every record parsed), which requests share
 */
#define NGX_HTTP_TENT_FOLLOWER_SCAN 100


static void ngx_http_tent_delivery_expand_blocks(
    ngx_http_tent_store_op_t *op);
static void ngx_http_tent_delivery_read_post(ngx_http_tent_fanout_t *t);
static void ngx_http_tent_delivery_expand_post(ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_fanout_job(ngx_http_tent_fanout_t *t,
    ngx_http_tent_store_op_t *wop, uint64_t now, ngx_str_t *jid,
    ngx_str_t *fid, ngx_str_t *pid, json_t *sub);
static void ngx_http_tent_delivery_expand_followers(
    ngx_http_tent_store_op_t *op);
static void ngx_http_tent_delivery_followers(ngx_http_tent_fanout_t *t);
static void ngx_http_tent_delivery_next_followers(
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_delivery_wants_stage(ngx_http_tent_fanout_t *t,
    json_t *record);
static ngx_http_tent_store_done_pt ngx_http_tent_delivery_next_stage(
    ngx_http_tent_fanout_t *t, ngx_http_tent_store_op_t *wop);


static ngx_str_t  ngx_http_tent_empty = ngx_null_string;

#if (NGX_DEBUG)

/* by ngx_http_tent_fanout_stage_e, for the debug log */
static const char  *ngx_http_tent_fanout_stages[] = {
    "followers", "followings", "apps", "mentions"
};

#endif


/* an outbox row: read the post and every follower, then write the jobs */

void
ngx_http_tent_delivery_expand(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent, ngx_str_t *key, ngx_str_t *value)
{
    ngx_str_t                  id;
    ngx_http_tent_fanout_t    *t;
    ngx_http_tent_store_op_t  *op;

    if (ngx_http_tent_task_running(dl, key)) {
        return;
    }

    t = (ngx_http_tent_fanout_t *)
            ngx_http_tent_task_create(dl, ent, key, value, NULL,
                                      sizeof(ngx_http_tent_fanout_t));
    if (t == NULL) {
        return;
    }

    t->row = ngx_http_tent_json_parse(&t->task.raw, dl->log);

    if (t->row == NULL
        || ngx_http_tent_json_cleanup(t->task.pool, t->row) != NGX_OK
        || ngx_http_tent_json_str(t->row, "id", &id) != NGX_OK)
    {
        json_decref(t->row);
        ngx_http_tent_task_failed(&t->task, "reading an outbox row");
        return;
    }

    if (ngx_http_tent_json_str(t->row, "entity", &t->task.entity) != NGX_OK) {
        t->task.entity = ent->entity;
    }

    t->task.post_id = id;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: outbox row: post \"%V\" of \"%V\"",
                   &id, &t->task.entity);

    /* the owner's blocks first: no job is made for a blocked entity */

    t->blocks = ngx_http_tent_blocks_cached(t->task.pool, &ent->entity);

    if (t->blocks) {
        ngx_http_tent_delivery_read_post(t);
        return;
    }

    op = ngx_http_tent_store_op_create(t->task.pool, dl->log);

    if (op == NULL
        || ngx_http_tent_blocks_scan(op, &ent->entity, &t->blocks_gen)
           != NGX_OK)
    {
        ngx_http_tent_task_failed(&t->task, "building the blocks' scan");
        return;
    }

    ngx_http_tent_task_submit(&t->task, op,
                              ngx_http_tent_delivery_expand_blocks);
}


static void
ngx_http_tent_delivery_expand_blocks(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_fanout_t *t = op->data;

    if (op->status != NGX_HTTP_TENT_STORE_OK
        && op->status != NGX_HTTP_TENT_STORE_NOT_FOUND)
    {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": blocks not read (store "
                       "status %ui): later", &t->task.post_id, op->status);
        ngx_http_tent_task_done(&t->task);   /* the store: later */
        return;
    }

    t->blocks = ngx_http_tent_blocks_loaded(t->task.pool, &t->task.ent->entity,
                                            t->blocks_gen, op);
    if (t->blocks == NULL) {
        ngx_http_tent_task_failed(&t->task, "reading the blocks");
        return;
    }

    ngx_http_tent_delivery_read_post(t);
}


static void
ngx_http_tent_delivery_read_post(ngx_http_tent_fanout_t *t)
{
    ngx_str_t                  pkey, owner;
    ngx_http_tent_store_op_t  *op;

    /* a same-node reference's post is in its author's rows */

    if (ngx_http_tent_json_str(t->row, "l", &owner) != NGX_OK) {
        owner = t->task.ent->entity;
    }

    op = ngx_http_tent_store_op_create(t->task.pool, t->task.dl->log);

    if (op == NULL
        || ngx_http_tent_post_key(t->task.pool, &owner, &t->task.entity,
                                  &t->task.post_id, -1, &pkey)
           != NGX_OK
        || ngx_http_tent_store_get(op, &pkey) != NGX_OK)
    {
        ngx_http_tent_task_failed(&t->task, "building the post's read");
        return;
    }

    ngx_http_tent_task_submit(&t->task, op, ngx_http_tent_delivery_expand_post);
}


static void
ngx_http_tent_delivery_expand_post(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_fanout_t *t = op->data;

    ngx_str_t                  value;

    if (op->status == NGX_HTTP_TENT_STORE_OK) {
        ngx_http_tent_store_value(op, &value);

        t->task.post = ngx_http_tent_json_parse(&value, t->task.dl->log);
        if (t->task.post == NULL
            || ngx_http_tent_json_cleanup(t->task.pool, t->task.post) != NGX_OK)
        {
            json_decref(t->task.post);
            ngx_http_tent_task_failed(&t->task, "reading the post");
            return;
        }

    } else if (op->status != NGX_HTTP_TENT_STORE_NOT_FOUND) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\" not read (store "
                       "status %ui): later", &t->task.post_id, op->status);
        ngx_http_tent_task_done(&t->task);   /* the store: later */
        return;

    } else {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\" is gone: no jobs",
                       &t->task.post_id);
    }

    /*
     * A received post: to the apps, not to our followers (spec 9.2).  Nor
     * is a post of ours that no follower may see (private, naming no one:
     * a follower post), which saves reading every follower for nothing.
     */

    if (t->task.entity.data != t->task.ent->entity.data
        || (t->task.post && ngx_http_tent_delivery_unnamed(t->task.post)))
    {
        t->stage = NGX_HTTP_TENT_FANOUT_APPS;

    } else {
        t->stage = NGX_HTTP_TENT_FANOUT_FOLLOWERS;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": fan-out to %s first",
                   &t->task.post_id, ngx_http_tent_fanout_stages[t->stage]);

    if (ngx_http_tent_delivery_mentions(t) != NGX_OK) {
        ngx_http_tent_task_failed(&t->task, "listing the post's mentions");
        return;
    }

    if (t->stage == NGX_HTTP_TENT_FANOUT_FOLLOWERS
        && ngx_http_tent_delivery_told_init(t) != NGX_OK)
    {
        ngx_http_tent_task_failed(&t->task, "keeping the followers told");
        return;
    }

    if (ngx_http_tent_key_range(t->task.pool, &t->task.ent->entity,
                                t->stage == NGX_HTTP_TENT_FANOUT_APPS
                                ? NGX_HTTP_TENT_TABLE_SUBSCRIPTION
                                : NGX_HTTP_TENT_TABLE_FOLLOWER,
                                &t->start, &t->end)
        != NGX_OK)
    {
        ngx_http_tent_task_failed(&t->task, "building the followers' scan");
        return;
    }

    ngx_http_tent_delivery_followers(t);
}


/* a post no relationship may see: not public, naming no entity or group */

ngx_int_t
ngx_http_tent_delivery_unnamed(json_t *post)
{
    json_t  *perms;

    perms = json_object_get(post, "permissions");

    return !json_is_true(json_object_get(perms, "public"))
           && json_object_size(json_object_get(perms, "entities")) == 0
           && json_array_size(json_object_get(perms, "groups")) == 0;
}


/* the followers, a batch at a time: a row may hold a 64 KB profile */

static void
ngx_http_tent_delivery_followers(ngx_http_tent_fanout_t *t)
{
    ngx_pool_t                *pool;
    ngx_http_tent_store_op_t  *scan;

    /*
     * Each batch of followers, its jobs and their write live in a pool
     * of their own, gone once the next batch's scan is answered (the
     * write just answered, whose handler runs this, is in it): a
     * fan-out to 100,000 followers holds one batch, two only while a
     * scan is read, not every row it read (docs/federation.md, memory)
     */

    pool = ngx_create_pool(16384, t->task.dl->log);
    if (pool == NULL) {
        ngx_http_tent_task_failed(&t->task, "creating a batch's pool");
        return;
    }

    if (t->step_old) {
        ngx_destroy_pool(t->step_old);
    }

    t->step_old = t->step;
    t->step = pool;

    scan = ngx_http_tent_store_op_create(pool, t->task.dl->log);

    if (scan == NULL
        || ngx_http_tent_store_scan(scan, &t->start, &t->end,
                                    NGX_HTTP_TENT_FOLLOWER_SCAN, 0)
           != NGX_OK)
    {
        ngx_http_tent_task_failed(&t->task, "building the followers' scan");
        return;
    }

    ngx_http_tent_task_submit(&t->task, scan,
                              ngx_http_tent_delivery_expand_followers);
}


/*
 * Whether a post is for a relationship: public, or naming its entity or
 * one of its groups (tentd forgot group members, spec 14.22).
 */

ngx_int_t
ngx_http_tent_delivery_permitted(json_t *post, json_t *record)
{
    size_t       i, j;
    json_t      *perms, *g, *mine, *v;
    ngx_str_t    entity, name;
    const char  *key;

    if (ngx_http_tent_json_str(record, "entity", &entity) != NGX_OK) {
        return 0;
    }

    perms = json_object_get(post, "permissions");

    if (json_is_true(json_object_get(perms, "public"))) {
        return 1;
    }

    /* the post may name the entity in any of its spellings */

    json_object_foreach(json_object_get(perms, "entities"), key, v) {
        name.data = (u_char *) key;
        name.len = ngx_strlen(key);

        if (ngx_http_tent_entity_eq(&name, &entity)) {
            return 1;
        }
    }

    mine = json_object_get(record, "groups");

    json_array_foreach(json_object_get(perms, "groups"), i, g) {
        json_array_foreach(mine, j, v) {
            if (json_equal(json_object_get(g, "id"), json_object_get(v, "id")))
            {
                return 1;
            }
        }
    }

    return 0;
}


/*
 * who gets a post: followers subscribed to its type, and permitted; not
 * an imported one until its server has followed again (docs/import.md)
 */

static ngx_int_t
ngx_http_tent_delivery_wants(json_t *post, json_t *follower)
{
    ngx_str_t  type;

    return !json_is_true(json_object_get(follower, "import_pending"))
           && ngx_http_tent_json_str(post, "type", &type) == NGX_OK
           && ngx_http_tent_type_allowed(json_object_get(follower, "types"),
                                         &type)
           && ngx_http_tent_delivery_permitted(post, follower);
}


/*
 * A following hears of our public profile changes only (spec 9.4: tentd
 * sent profile posts to every following, at its "posts"); not an
 * imported one until its server has delivered to us (docs/import.md).
 */

static ngx_int_t
ngx_http_tent_delivery_wants_following(json_t *post, json_t *following)
{
    ngx_str_t  type;

    return ngx_http_tent_json_str(post, "type", &type) == NGX_OK
           && ngx_http_tent_post_type_is(&type, "profile")
           && json_is_true(json_object_get(json_object_get(post,
                                                           "permissions"),
                                           "public"))
           && json_is_true(json_object_get(following, "confirmed"))
           && !json_is_true(json_object_get(following, "import_pending"));
}


/*
 * An app subscribed through an authorization's notification URL: posts
 * of its types, our public ones, or any with read_posts (spec 9.2).
 */

ngx_int_t
ngx_http_tent_delivery_wants_app(json_t *post, json_t *sub,
    ngx_uint_t original)
{
    ngx_str_t  type;

    if (ngx_http_tent_json_str(post, "type", &type) != NGX_OK
        || !ngx_http_tent_type_allowed(json_object_get(sub, "post_types"),
                                       &type))
    {
        return 0;
    }

    if (original
        && json_is_true(json_object_get(json_object_get(post, "permissions"),
                                        "public")))
    {
        return 1;
    }

    return ngx_http_tent_delivery_scope(sub, "read_posts");
}


ngx_int_t
ngx_http_tent_delivery_scope(json_t *sub, const char *scope)
{
    size_t   i;
    json_t  *v;

    json_array_foreach(json_object_get(sub, "scopes"), i, v) {
        if (json_is_string(v) && ngx_strcmp(json_string_value(v), scope) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/* a relationship's job (its id is the record's), or an app's */

static ngx_int_t
ngx_http_tent_fanout_job(ngx_http_tent_fanout_t *t,
    ngx_http_tent_store_op_t *wop, uint64_t now, ngx_str_t *jid,
    ngx_str_t *fid, ngx_str_t *pid, json_t *sub)
{
    ngx_str_t                id;
    ngx_http_tent_job_row_t  jr;

    ngx_memzero(&jr, sizeof(ngx_http_tent_job_row_t));

    jr.kind = (t->stage == NGX_HTTP_TENT_FANOUT_FOLLOWINGS)
              ? NGX_HTTP_TENT_JOB_FOLLOWING : NGX_HTTP_TENT_JOB_FOLLOWER;
    jr.to = *fid;

    if (sub) {
        jr.kind = NGX_HTTP_TENT_JOB_APP;

        if (ngx_http_tent_json_str(sub, "app", &jr.app) != NGX_OK) {
            return NGX_ERROR;
        }

        (void) ngx_http_tent_json_str(t->row, "entity", &jr.post_entity);

        /* a same-node reference's: the post is in its author's rows */

        (void) ngx_http_tent_json_str(t->row, "l", &jr.ref_owner);
    }

    /* the post's id as the outbox row names it */

    jr.id = (ngx_http_tent_json_str(t->row, "id", &id) == NGX_OK) ? id
                                                                   : *pid;
    jr.version = json_integer_value(json_object_get(t->row, "version"));
    jr.first = now / 1000;

    return ngx_http_tent_job_new(&t->task, wop, now, jid, &jr);
}


static void
ngx_http_tent_delivery_expand_followers(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_fanout_t *t = op->data;

    json_t                       *follower;
    uint64_t                      now;
    ngx_int_t                     rc;
    ngx_str_t                     key, value, fid, pid, jid, last;
    ngx_uint_t                    n, rows;
    const char                   *kind, *field;
    ngx_http_tent_store_op_t     *wop;
    ngx_http_tent_store_done_pt   handler;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": %s not read (store "
                       "status %ui): later", &t->task.post_id,
                       ngx_http_tent_fanout_stages[t->stage], op->status);
        ngx_http_tent_task_done(&t->task);
        return;
    }

    /*
     * The batch before is over (its write answered, the handler that
     * asked for this scan returned): its rows, jobs and followers go
     * now, not after this batch's write
     */

    if (t->step_old) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": the batch before "
                       "goes", &t->task.post_id);
        ngx_destroy_pool(t->step_old);
        t->step_old = NULL;
    }

    wop = ngx_http_tent_store_op_create(op->pool, t->task.dl->log);

    if (wop == NULL || ngx_http_tent_store_write(wop, 0) != NGX_OK) {
        ngx_http_tent_task_failed(&t->task, "building the jobs' write");
        return;
    }

    /* a job id's kind, and the record's field that names it */

    switch (t->stage) {

    case NGX_HTTP_TENT_FANOUT_FOLLOWERS:
        kind = "";
        field = "id";
        break;

    case NGX_HTTP_TENT_FANOUT_FOLLOWINGS:
        kind = "F";
        field = "id";
        break;

    default: /* NGX_HTTP_TENT_FANOUT_APPS */
        kind = "A";
        field = "authorization";
        break;
    }

    now = ngx_http_tent_now_ms();
    n = 0;
    rows = 0;
    last.len = 0;

    /* a post deleted meanwhile goes to no one */

    while (t->task.post
           && ngx_http_tent_store_next(op, &key, &value) == NGX_OK)
    {

        rows++;
        last = key;

        follower = ngx_http_tent_record_parse(t->task.dl->log, &key, &value);
        if (follower == NULL) {
            continue;
        }

        if (!ngx_http_tent_delivery_wants_stage(t, follower)
            || ngx_http_tent_json_str(follower, field, &fid) != NGX_OK
            || ngx_http_tent_json_str(t->task.post, "id", &pid) != NGX_OK)
        {
            json_decref(follower);
            continue;
        }

        ngx_http_tent_delivery_got(t, follower);

        if (t->stage == NGX_HTTP_TENT_FANOUT_FOLLOWERS
            && t->told != NULL
            && ngx_http_tent_delivery_tell(t, follower) != NGX_OK)
        {
            json_decref(follower);
            ngx_http_tent_task_failed(&t->task, "keeping a follower told");
            return;
        }

        /* a public post: once per ActivityPub shared inbox */

        rc = ngx_http_tent_fanout_shared_add(t, follower);

        if (rc == NGX_ERROR) {
            json_decref(follower);
            ngx_http_tent_task_failed(&t->task, "keeping a shared inbox");
            return;
        }

        if (rc == NGX_OK) {
            json_decref(follower);
            continue;
        }

        jid.len = 1 + fid.len + 1 + t->task.entity.len + 1 + pid.len + 1
                  + NGX_INT_T_LEN;
        jid.data = ngx_pnalloc(wop->pool, jid.len);
        if (jid.data == NULL) {
            ngx_log_error(NGX_LOG_ERR, t->task.dl->log, 0,
                          "tent delivery: building a job id failed");
            json_decref(follower);
            break;
        }

        /* "<kind><record id> [<post entity> ]<post id> <version>" */

        jid.len = ngx_sprintf(jid.data, "%s%V %V%s%V %L", kind, &fid,
                              t->task.entity.data == t->task.ent->entity.data
                              ? &ngx_http_tent_empty : &t->task.entity,
                              t->task.entity.data == t->task.ent->entity.data
                              ? "" : " ",
                              &pid,
                              (int64_t) json_integer_value(
                                  json_object_get(t->row, "version")))
                  - jid.data;

        /* a follower of this node: its rows in this write, no job */

        rc = ngx_http_tent_local_direct_add(t, &jid, &fid, follower);

        if (rc == NGX_ERROR) {
            json_decref(follower);
            ngx_http_tent_task_failed(&t->task, "taking a same-node follower");
            return;
        }

        if (rc == NGX_OK) {
            json_decref(follower);
            continue;
        }

        if (ngx_http_tent_delivery_status_made(t, wop, &jid, follower, NULL)
            != NGX_OK)
        {
            json_decref(follower);
            ngx_http_tent_task_failed(&t->task, "writing a delivery's status");
            return;
        }

        /* an app's "authorization" (fid) and "app", while it is read */

        if (ngx_http_tent_fanout_job(t, wop, now, &jid, &fid, &pid,
                                     t->stage == NGX_HTTP_TENT_FANOUT_APPS
                                     ? follower : NULL)
            != NGX_OK)
        {
            json_decref(follower);
            ngx_http_tent_task_done(&t->task);     /* logged there */
            return;
        }

        json_decref(follower);

        n++;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": %ui jobs made for %s",
                   &t->task.post_id, n, ngx_http_tent_fanout_stages[t->stage]);

    /*
     * More followers: these jobs now, the rest after them; the outbox row
     * goes with the last batch (a crash between makes some jobs twice).
     * A batch short of its 100 rows is no end: the store also ends a scan
     * at a byte budget, which followers with big profiles reach, so only
     * an empty scan ends the stage.
     */

    if (rows) {
        if (ngx_http_tent_key_after(t->task.pool, &last, &t->start) != NGX_OK) {
            ngx_http_tent_task_failed(&t->task, "keeping the followers' place");
            return;
        }

        handler = ngx_http_tent_delivery_next_followers;

    } else {
        handler = ngx_http_tent_delivery_next_stage(t, wop);
        if (handler == NULL) {
            ngx_http_tent_task_done(&t->task);     /* logged there */
            return;
        }
    }

    /* with shared inboxes and this node's followers: after their reads */

    ngx_http_tent_fanout_shared_submit(t, wop, now, handler);
}


/* a follower's job and its record "pending": made in the step's write */

ngx_int_t
ngx_http_tent_fanout_follower_job(ngx_http_tent_fanout_t *t,
    ngx_http_tent_store_op_t *wop, uint64_t now, ngx_str_t *jid,
    ngx_str_t *fid, json_t *follower)
{
    ngx_str_t  pid;

    if (ngx_http_tent_json_str(t->task.post, "id", &pid) != NGX_OK
        || ngx_http_tent_delivery_status_made(t, wop, jid, follower, NULL)
           != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, t->task.dl->log, 0,
                      "tent delivery: writing a delivery's status failed");
        return NGX_ERROR;
    }

    return ngx_http_tent_fanout_job(t, wop, now, jid, fid, &pid, NULL);
}


/* whether a record of the stage's table gets the post */

static ngx_int_t
ngx_http_tent_delivery_wants_stage(ngx_http_tent_fanout_t *t, json_t *record)
{
    ngx_str_t  entity;

    /* a relationship with an entity blocked since gets nothing */

    if (t->stage != NGX_HTTP_TENT_FANOUT_APPS
        && ngx_http_tent_json_str(record, "entity", &entity) == NGX_OK
        && (ngx_http_tent_blocks_has(t->blocks, &entity)
            || ngx_http_tent_domains_entity(&entity)))
    {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": \"%V\" is blocked: "
                       "no job", &t->task.post_id, &entity);
        return 0;
    }

    switch (t->stage) {

    case NGX_HTTP_TENT_FANOUT_FOLLOWERS:
        return ngx_http_tent_delivery_wants(t->task.post, record);

    case NGX_HTTP_TENT_FANOUT_FOLLOWINGS:
        return ngx_http_tent_delivery_wants_following(t->task.post, record)
               && !ngx_http_tent_delivery_was_told(t, record);

    default: /* NGX_HTTP_TENT_FANOUT_APPS */
        return ngx_http_tent_delivery_wants_app(t->task.post, record,
                                        t->task.entity.data
                                        == t->task.ent->entity.data);
    }
}


/*
 * After a stage's last batch, the next: a profile post's followings, then
 * the apps subscribed through a notification URL, then the mentioned
 * entities that got nothing yet; after the last, the outbox row goes with
 * these jobs.  NULL: a failure.
 */

static ngx_http_tent_store_done_pt
ngx_http_tent_delivery_next_stage(ngx_http_tent_fanout_t *t,
    ngx_http_tent_store_op_t *wop)
{
    ngx_str_t   type;
    ngx_uint_t  table;

    switch (t->stage) {

    case NGX_HTTP_TENT_FANOUT_FOLLOWERS:

        if (t->task.post
            && ngx_http_tent_json_str(t->task.post, "type", &type) == NGX_OK
            && ngx_http_tent_post_type_is(&type, "profile"))
        {
            t->stage = NGX_HTTP_TENT_FANOUT_FOLLOWINGS;
            table = NGX_HTTP_TENT_TABLE_FOLLOWING;
            break;
        }

        /* fall through */

    case NGX_HTTP_TENT_FANOUT_FOLLOWINGS:
        t->stage = NGX_HTTP_TENT_FANOUT_APPS;
        table = NGX_HTTP_TENT_TABLE_SUBSCRIPTION;
        break;

    default: /* NGX_HTTP_TENT_FANOUT_APPS */

        if (t->mentioned && t->mentioned->nelts) {
            t->stage = NGX_HTTP_TENT_FANOUT_MENTIONS;

            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                           "tent delivery: post \"%V\": mentions next",
                           &t->task.post_id);

            return ngx_http_tent_delivery_lookup;
        }

        if (ngx_http_tent_store_write_del(wop, &t->task.key) != NGX_OK) {
            ngx_log_error(NGX_LOG_ERR, t->task.dl->log, 0,
                          "tent delivery: building the outbox row's "
                          "removal failed");
            return NULL;
        }

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": fan-out done, the "
                       "outbox row goes", &t->task.post_id);

        return ngx_http_tent_delivery_written;
    }

    if (ngx_http_tent_key_range(t->task.pool, &t->task.ent->entity, table,
                                &t->start,
                                &t->end)
        != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, t->task.dl->log, 0,
                      "tent delivery: building the followers' scan failed");
        return NULL;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": %s next", &t->task.post_id,
                   ngx_http_tent_fanout_stages[t->stage]);

    return ngx_http_tent_delivery_next_followers;
}


static void
ngx_http_tent_delivery_next_followers(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_fanout_t *t = op->data;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": jobs not written "
                       "(store status %ui): later", &t->task.post_id,
                       op->status);
        ngx_http_tent_task_done(&t->task);     /* the row stays: again later */
        return;
    }

    ngx_http_tent_delivery_followers(t);
}
