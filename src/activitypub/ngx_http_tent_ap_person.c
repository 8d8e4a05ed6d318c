
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Our Update(Person) (issue #29): when what the actor shows changes (the
 * basic profile section's name, bio, avatar_url, public or not; a new
 * key), every ActivityPub follower's server is sent the new actor, once
 * per inbox: followers sharing a shared inbox get one request there,
 * the others one at their own inbox.  The activities are queued with
 * ngx_http_tent_delivery_activity() into the caller's own write (the
 * section's, the key's), so a kill between the change and the queue
 * loses nothing.
 *
 * Bounded: the followers are scanned in batches, at most
 * NGX_HTTP_TENT_AP_PERSON_SCAN rows, and at most
 * NGX_HTTP_TENT_AP_PERSON_INBOXES distinct inboxes are sent to (one
 * write of that many activities of a few KB each), and no more than
 * NGX_HTTP_TENT_AP_PERSON_BYTES of them (a local delivery batch's
 * bound: a long bio makes fewer); followers past a bound get no
 * Update, logged at "info" (they read the new actor when they fetch it
 * again, on a key's failure or their cache's end).
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_store.h"
#include "ngx_http_tent_ap.h"


#define NGX_HTTP_TENT_AP_PERSON_BATCH    512
#define NGX_HTTP_TENT_AP_PERSON_SCAN     10000
#define NGX_HTTP_TENT_AP_PERSON_INBOXES  256
#define NGX_HTTP_TENT_AP_PERSON_BYTES    (4 * 1024 * 1024)

#define NGX_HTTP_TENT_AP_PUBLIC  "https://www.w3.org/ns/activitystreams#Public"


static ngx_int_t ngx_http_tent_ap_person_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_person_scan(ngx_http_request_t *r,
    ngx_http_tent_ap_person_t *ps);
static ngx_int_t ngx_http_tent_ap_person_rows(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_person_add(ngx_http_tent_ap_person_t *ps,
    ngx_pool_t *pool, json_t *record);
static ngx_int_t ngx_http_tent_ap_person_build(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_person_t *ps);
static ngx_int_t ngx_http_tent_ap_person_done(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_person_t *ps);


/*
 * Does a new version of the basic section change the actor?  What the
 * actor shows of "old" and of "record" (stored records, "old" NULL when
 * there was none) compared
 */

ngx_uint_t
ngx_http_tent_ap_person_changed(ngx_http_request_t *r, json_t *old,
    json_t *record)
{
    json_t      *a, *b;
    ngx_uint_t   changed;

    a = json_object();
    b = json_object();

    if (a == NULL || b == NULL
        || ngx_http_tent_ap_actor_profile(r, a,
               ngx_http_tent_ap_basic_shown(old)) != NGX_OK
        || ngx_http_tent_ap_actor_profile(r, b,
               ngx_http_tent_ap_basic_shown(record)) != NGX_OK)
    {
        /* when in doubt, tell them */
        changed = 1;

    } else {
        changed = !json_equal(a, b);
    }

    json_decref(a);
    json_decref(b);

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: the actor %s", changed ? "changes"
                                                    : "does not change");

    return changed;
}


/*
 * The key (unless given) and the basic section (unless given) in one
 * multi-get, then the followers.  A failure of these reads queues
 * nothing: the caller's change goes on without an Update (logged), it
 * is not refused for it.
 */

ngx_int_t
ngx_http_tent_ap_person_prepare(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_person_t *ps,
    ngx_http_tent_route_pt done)
{
    ngx_str_t                  k, base;
    ngx_http_tent_store_op_t  *op;

    ps->caller = ctx->state;
    ps->done = done;
    ps->ready = 1;
    ctx->state = ps;

    ps->inboxes = ngx_array_create(r->pool, 16, sizeof(ngx_str_t));
    if (ps->inboxes == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the inboxes");
    }

    ngx_str_set(&base, NGX_HTTP_TENT_AP_BASIC);

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_mget(op) != NGX_OK
        || ngx_http_tent_ap_key_row(r->pool, &ctx->entity, &k) != NGX_OK
        || ngx_http_tent_store_mget_key(op, &k) != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_PROFILE, &base, &k)
           != NGX_OK
        || ngx_http_tent_store_mget_key(op, &k) != NGX_OK
        || ngx_http_tent_ap_settings_key(r->pool, &ctx->entity, &k)
           != NGX_OK
        || ngx_http_tent_store_mget_key(op, &k) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the actor's read");
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: Update(Person) of \"%V\": reading", &ctx->entity);

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_person_read);
}


static ngx_int_t
ngx_http_tent_ap_person_read(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                     *row;
    ngx_int_t                   rc;
    ngx_str_t                   value, pem;
    ngx_uint_t                  found;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_ap_person_t  *ps;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    ps = ctx->state;

    if (op->status != NGX_HTTP_TENT_STORE_OK
        || ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "tent ap: Update(Person) of \"%V\" not sent: the key "
                      "not read", &ctx->entity);
        return ngx_http_tent_ap_person_done(r, ctx, ps);
    }

    /* the key: a rotation gives the new one, else the row's */

    if (ps->pem.len == 0) {
        row = found ? ngx_http_tent_json_own(r->pool,
                          ngx_http_tent_json_parse(&value,
                                                   r->connection->log))
                    : NULL;

        if (row == NULL
            || ngx_http_tent_json_str(row, "public", &pem) != NGX_OK)
        {
            /*
             * no key: the actor was never served, so no server could
             * have verified a Follow, and there is no follower to tell
             */
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "tent ap: \"%V\" has no key: no Update(Person)",
                           &ctx->entity);
            return ngx_http_tent_ap_person_done(r, ctx, ps);
        }

        ps->pem = pem;
    }

    if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "tent ap: Update(Person) of \"%V\" not sent: the "
                      "profile not read", &ctx->entity);
        return ngx_http_tent_ap_person_done(r, ctx, ps);
    }

    if (!ps->has_basic) {
        row = found ? ngx_http_tent_json_own(r->pool,
                          ngx_http_tent_json_parse(&value,
                                                   r->connection->log))
                    : NULL;

        ps->basic = ngx_http_tent_ap_basic_shown(row);
        ps->has_basic = 1;
    }

    /* the owner's choice of approving follows, as the actor served says */

    if (ngx_http_tent_store_next_value(op, &found, &value) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "tent ap: Update(Person) of \"%V\" not sent: the "
                      "owner's choices not read", &ctx->entity);
        return ngx_http_tent_ap_person_done(r, ctx, ps);
    }

    if (!ps->has_approves) {
        ps->approves = found && ngx_http_tent_ap_approves(&value,
                                                          r->connection->log);
    }

    if (ngx_http_tent_key_range(r->pool, &ctx->entity,
                                NGX_HTTP_TENT_TABLE_FOLLOWER,
                                &ps->start, &ps->end)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the followers' "
                                            "range");
    }

    return ngx_http_tent_ap_person_scan(r, ps);
}


static ngx_int_t
ngx_http_tent_ap_person_scan(ngx_http_request_t *r,
    ngx_http_tent_ap_person_t *ps)
{
    ngx_http_tent_store_op_t  *op;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_store_scan(op, &ps->start, &ps->end,
                                    ngx_min(NGX_HTTP_TENT_AP_PERSON_BATCH,
                                            NGX_HTTP_TENT_AP_PERSON_SCAN
                                            - ps->scanned),
                                    0)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the followers' "
                                            "scan");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_person_rows);
}


static ngx_int_t
ngx_http_tent_ap_person_rows(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                     *record;
    ngx_int_t                   rc;
    ngx_str_t                   key, value, last;
    ngx_uint_t                  rows, full;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_ap_person_t  *ps;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    ps = ctx->state;

    if (op->status != NGX_HTTP_TENT_STORE_OK
        && op->status != NGX_HTTP_TENT_STORE_NOT_FOUND)
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "tent ap: Update(Person) of \"%V\" not sent: the "
                      "followers not read", &ctx->entity);
        return ngx_http_tent_ap_person_done(r, ctx, ps);
    }

    rows = 0;
    full = 0;
    ngx_str_null(&last);

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        rows++;
        last = key;

        if (full) {
            /* a follower past the inboxes' bound, with an inbox or not */
            ps->bounded = 1;
            break;
        }

        /* a Tent follower has no "activitypub": not parsed */

        if (ngx_strnstr(value.data, "\"activitypub\"", value.len) == NULL) {
            continue;
        }

        record = ngx_http_tent_json_parse(&value, NULL);
        if (record == NULL) {
            continue;
        }

        rc = ngx_http_tent_ap_person_add(ps, r->pool, record);

        json_decref(record);

        if (rc == NGX_ERROR) {
            return ngx_http_tent_internal_error(r, "keeping an inbox");
        }

        full = (ps->inboxes->nelts >= NGX_HTTP_TENT_AP_PERSON_INBOXES);
    }

    ps->scanned += rows;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: Update(Person): %ui followers read, %ui "
                   "inboxes, %ui in all", rows, ps->inboxes->nelts,
                   ps->scanned);

    /* the store also ends a batch at a byte budget: only none is the end */

    if (!ps->bounded && rows && last.len) {
        if (ps->scanned >= NGX_HTTP_TENT_AP_PERSON_SCAN) {
            ps->bounded = 1;

        } else {
            if (ngx_http_tent_key_after(r->pool, &last, &ps->start)
                != NGX_OK)
            {
                return ngx_http_tent_internal_error(r, "building the "
                                                    "followers' next scan");
            }

            return ngx_http_tent_ap_person_scan(r, ps);
        }
    }

    if (ps->bounded) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent ap: Update(Person) of \"%V\": %ui inboxes "
                      "after %ui followers, the ones past them not told "
                      "(bounds %d inboxes, %d followers)",
                      &ctx->entity, ps->inboxes->nelts, ps->scanned,
                      NGX_HTTP_TENT_AP_PERSON_INBOXES,
                      NGX_HTTP_TENT_AP_PERSON_SCAN);
    }

    ps->found = 1;

    return ngx_http_tent_ap_person_done(r, ctx, ps);
}


/*
 * An ActivityPub follower's inbox: its shared inbox when it has one
 * (one request for all its server's followers), else its own; each
 * once
 */

static ngx_int_t
ngx_http_tent_ap_person_add(ngx_http_tent_ap_person_t *ps, ngx_pool_t *pool,
    json_t *record)
{
    json_t      *ap;
    ngx_str_t    inbox, *s;
    ngx_uint_t   i;

    ap = json_object_get(record, "activitypub");

    if (!json_is_object(ap)
        || (ngx_http_tent_json_str(ap, "shared_inbox", &inbox) != NGX_OK
            && ngx_http_tent_json_str(ap, "inbox", &inbox) != NGX_OK)
        || inbox.len == 0)
    {
        return NGX_DECLINED;
    }

    s = ps->inboxes->elts;

    for (i = 0; i < ps->inboxes->nelts; i++) {
        if (s[i].len == inbox.len
            && ngx_strncmp(s[i].data, inbox.data, inbox.len) == 0)
        {
            return NGX_DECLINED;
        }
    }

    s = ngx_array_push(ps->inboxes);
    if (s == NULL) {
        return NGX_ERROR;
    }

    /* the record is freed after this */

    s->data = ngx_pstrdup(pool, &inbox);
    if (s->data == NULL) {
        return NGX_ERROR;
    }

    s->len = inbox.len;

    return NGX_OK;
}


/*
 * {"id": "<entity>#update-person-<hex>", "type": "Update",
 *  "actor": <entity>, "to": [Public], "cc": [<followers>],
 *  "object": <the actor as GET of the entity URL answers it>}
 */

static ngx_int_t
ngx_http_tent_ap_person_build(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_person_t *ps)
{
    u_char     *p;
    json_t     *actor, *followers;
    ngx_str_t   hex, id;

    actor = ngx_http_tent_ap_actor_doc(r, ctx, &ps->pem, ps->basic,
                                       ps->approves);
    if (actor == NULL) {
        return NGX_ERROR;
    }

    if (ngx_http_tent_random_hex(r->pool, 16, &hex) != NGX_OK) {
        return NGX_ERROR;
    }

    id.len = ctx->entity.len + sizeof("#update-person-") - 1 + hex.len;
    id.data = ngx_pnalloc(r->pool, id.len);
    if (id.data == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(id.data, ctx->entity.data, ctx->entity.len);
    p = ngx_cpymem(p, "#update-person-", sizeof("#update-person-") - 1);
    ngx_memcpy(p, hex.data, hex.len);

    followers = NULL;

    if (ngx_http_tent_ap_url(r, ctx, "followers", &followers) != NGX_OK) {
        return NGX_ERROR;
    }

    ps->activity = ngx_http_tent_json_own(r->pool, json_pack(
        "{s:s, s:s%, s:s, s:s%, s:[s], s:[o], s:O}",
        "@context", "https://www.w3.org/ns/activitystreams",
        "id", id.data, id.len,
        "type", "Update",
        "actor", ctx->entity.data, ctx->entity.len,
        "to", NGX_HTTP_TENT_AP_PUBLIC,
        "cc", followers,
        "object", actor));

    return ps->activity ? NGX_OK : NGX_ERROR;
}


/* back to the caller, its state as it was */

static ngx_int_t
ngx_http_tent_ap_person_done(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_person_t *ps)
{
    ctx->state = ps->caller;

    return ps->done(r, ctx);
}


/* the activity for each inbox, into the caller's write "op" */

ngx_int_t
ngx_http_tent_ap_person_queue(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_person_t *ps,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t    rc;
    ngx_str_t   *s, body;
    ngx_uint_t   i, n, max;

    if (ps == NULL || !ps->found || ps->inboxes->nelts == 0) {
        return NGX_OK;
    }

    /* built now: a DELETE knows the section it leaves only at its write */

    if (ps->activity == NULL
        && ngx_http_tent_ap_person_build(r, ctx, ps) != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* the write's bytes bounded too: a long bio makes each one larger */

    if (ngx_http_tent_json_dump(r->pool, ps->activity, &body) != NGX_OK) {
        return NGX_ERROR;
    }

    max = NGX_HTTP_TENT_AP_PERSON_BYTES / (body.len + 1);

    if (ps->inboxes->nelts > max) {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent ap: Update(Person) of \"%V\": %uz bytes, "
                      "sent to %ui of %ui inboxes (bound %d bytes)",
                      &ctx->entity, body.len, max, ps->inboxes->nelts,
                      NGX_HTTP_TENT_AP_PERSON_BYTES);

        ps->inboxes->nelts = max;
    }

    s = ps->inboxes->elts;
    n = 0;

    for (i = 0; i < ps->inboxes->nelts; i++) {
        rc = ngx_http_tent_delivery_activity(r->pool, &ctx->entity, op,
                                             ps->activity, &s[i]);

        if (rc == NGX_ERROR) {
            return NGX_ERROR;
        }

        if (rc == NGX_DECLINED) {
            /* over 64 KB stored, or an inbox that is no http(s) URL */
            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          "tent ap: Update(Person) of \"%V\" not queued "
                          "for \"%V\"", &ctx->entity, &s[i]);
            continue;
        }

        n++;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: Update(Person) of \"%V\" queued for %ui "
                   "inboxes", &ctx->entity, n);

    return NGX_OK;
}
