
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Follows the owner approves (issue #29, docs/activitypub.md "Approving
 * follows").  The owner's choice is the profile section
 * https://tent.io/types/info/activitypub/v0.1.0, "manually_approves_
 * followers": true; with it, a Follow of the entity is held as a request
 * in one of tent_ap_follow_requests places ("h" rows, <slot: u32>, taken
 * "must be absent": a flood of signed Follows from made-up actors fills
 * the places and is refused, it never grows the store), no Accept sent.
 * The owner lists the requests (read_followers), accepts one (the
 * follower as an accepted Follow makes it, and the Accept, in one write)
 * or rejects one (a Reject queued, the request gone), with
 * write_followers; the actor's Undo of its Follow removes its request.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_ap.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_store.h"


/* what a scan of the places is for */
#define NGX_HTTP_TENT_AP_REQ_HOLD    0
#define NGX_HTTP_TENT_AP_REQ_UNDO    1
#define NGX_HTTP_TENT_AP_REQ_LIST    2
#define NGX_HTTP_TENT_AP_REQ_ACCEPT  3
#define NGX_HTTP_TENT_AP_REQ_REJECT  4

/* a request's id: 16 random bytes in hex */
#define NGX_HTTP_TENT_AP_REQ_ID_LEN  32

/* two Follows taking one place at once: the loser scans again */
#define NGX_HTTP_TENT_AP_REQ_TRIES   3

/* a Follow's id longer than this is not kept (an actor id is 2 KB) */
#define NGX_HTTP_TENT_AP_REQ_FOLLOW_MAX  2048


typedef struct {
    ngx_http_tent_ap_verify_t      *verify;      /* the inbox's, or NULL */
    ngx_str_t                       follow_id;   /* Undo: the Follow's */
    ngx_uint_t                      embedded;    /* Undo: of us, embedded */
    ngx_uint_t                      what;
    ngx_uint_t                      tries;
    ngx_str_t                       id;          /* the owner's: asked */

    /* the request found */
    uint32_t                        slot;
    ngx_str_t                       row;         /* as read */
    json_t                         *request;
    ngx_str_t                       actor;
    ngx_str_t                       follower;    /* its follower id */
} ngx_http_tent_ap_req_t;


typedef struct {
    uint64_t                        at;
    uint32_t                        slot;
    json_t                         *request;
} ngx_http_tent_ap_req_item_t;


static ngx_int_t ngx_http_tent_ap_req_scan(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
static ngx_int_t ngx_http_tent_ap_req_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_req_take(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_req_t *st, uint32_t slot);
static ngx_int_t ngx_http_tent_ap_req_taken(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_req_list(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static int ngx_libc_cdecl ngx_http_tent_ap_req_cmp(const void *a,
    const void *b);
static ngx_int_t ngx_http_tent_ap_req_owner(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_uint_t what);
static ngx_int_t ngx_http_tent_ap_req_follows(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_req_remove(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_ap_req_t *st,
    ngx_http_tent_store_op_t **op);
static json_t *ngx_http_tent_ap_req_follow(ngx_http_tent_ctx_t *ctx,
    json_t *request);
static ngx_int_t ngx_http_tent_ap_req_answered(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_ap_req_done(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


/* the owner's choice: the row of the section that holds it */

ngx_int_t
ngx_http_tent_ap_settings_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *key)
{
    ngx_str_t  base;

    ngx_str_set(&base, NGX_HTTP_TENT_AP_SETTINGS);

    return ngx_http_tent_key(pool, entity, NGX_HTTP_TENT_TABLE_PROFILE,
                             &base, key);
}


/* the section as stored (or NULL): does the owner approve follows? */

ngx_uint_t
ngx_http_tent_ap_approves(ngx_str_t *section, ngx_log_t *log)
{
    json_t      *record;
    ngx_uint_t   on;

    if (section == NULL || section->len == 0) {
        return 0;
    }

    record = ngx_http_tent_json_parse(section, log);

    on = json_is_true(json_object_get(json_object_get(record, "content"),
                                      "manually_approves_followers"));

    json_decref(record);

    return on;
}


/*
 * The follower of an accepted Follow, with no credential (AP.md item 3),
 * and its Accept embedding "follow", into op.  "first": op is new, and
 * its first step the "must be absent" of the "e" row (two Follows at
 * once make one follower); else op compared another row first (the
 * owner's accept: the request's, the "e" row read just before).
 */

ngx_int_t
ngx_http_tent_ap_follower_add(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_store_op_t *op, ngx_str_t *actor, ngx_str_t *inbox,
    ngx_str_t *shared_inbox, ngx_str_t *name, ngx_str_t *icon, json_t *follow,
    ngx_uint_t first, ngx_str_t *id)
{
    json_t     *record, *ap, *accept;
    ngx_int_t   rc;
    ngx_str_t   hex, key, ekey, value, accept_id;

    ap = json_pack("{s:o}", "inbox", ngx_http_tent_json_string(inbox));

    if (ap && shared_inbox->len) {
        json_object_set_new(ap, "shared_inbox",
                            ngx_http_tent_json_string(shared_inbox));
    }

    if (ap && json_is_string(json_object_get(follow, "id"))) {
        json_object_set(ap, "follow", json_object_get(follow, "id"));
    }

    /* its name and icon, as its document gave them (kept with its key) */

    if (ap) {
        (void) ngx_http_tent_ap_face_set(ap, name, icon);
    }

    if (ngx_http_tent_relation_id(r->pool, id) != NGX_OK) {
        json_decref(ap);
        return NGX_ERROR;
    }

    record = json_pack("{s:o, s:o, s:I, s:I, s:{s:b}, s:[], s:[s], s:[],"
                       " s:o}",
                       "id", ngx_http_tent_json_string(id),
                       "entity", ngx_http_tent_json_string(actor),
                       "created_at", (json_int_t) ngx_time(),
                       "updated_at", (json_int_t) ngx_time(),
                       "permissions", "public", 1,
                       "licenses",
                       "types", "all",
                       "groups",
                       "activitypub", ap);

    if (record == NULL
        || ngx_http_tent_json_cleanup(r->pool, record) != NGX_OK)
    {
        json_decref(record);
        return NGX_ERROR;
    }

    /* the Accept, the Follow embedded (AP.md items 2, 5) */

    if (ngx_http_tent_random_hex(r->pool, 16, &hex) != NGX_OK) {
        return NGX_ERROR;
    }

    accept_id.len = ctx->entity.len + sizeof("#accept-") - 1 + hex.len;
    accept_id.data = ngx_pnalloc(r->pool, accept_id.len);
    if (accept_id.data == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(accept_id.data, "%V#accept-%V", &ctx->entity, &hex);

    accept = json_pack("{s:s, s:o, s:s, s:o, s:O}",
                       "@context", "https://www.w3.org/ns/activitystreams",
                       "id", ngx_http_tent_json_string(&accept_id),
                       "type", "Accept",
                       "actor", ngx_http_tent_json_string(&ctx->entity),
                       "object", follow);

    if (accept == NULL
        || ngx_http_tent_json_cleanup(r->pool, accept) != NGX_OK)
    {
        json_decref(accept);
        return NGX_ERROR;
    }

    if (ngx_http_tent_key(r->pool, &ctx->entity,
                          NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY, actor, &ekey)
        != NGX_OK
        || ngx_http_tent_key(r->pool, &ctx->entity,
                             NGX_HTTP_TENT_TABLE_FOLLOWER, id, &key)
           != NGX_OK
        || ngx_http_tent_json_dump(r->pool, record, &value) != NGX_OK)
    {
        return NGX_ERROR;
    }

    if ((first ? ngx_http_tent_store_cas(op, &ekey, NULL, id)
               : ngx_http_tent_store_write_put(op, &ekey, id))
        != NGX_OK
        || ngx_http_tent_store_write_put(op, &key, &value) != NGX_OK
        || ngx_http_tent_relation_post(r, ctx, op, "follower", record,
                                       "create")
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    rc = ngx_http_tent_delivery_activity(r->pool, &ctx->entity, op, accept,
                                         inbox);
    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: follower \"%V\" as %V, Accept %s",
                   actor, id, rc == NGX_OK ? "queued" : "not carried yet");

    return NGX_OK;
}


/* a Follow of the entity, the owner approving: held in a free place */

ngx_int_t
ngx_http_tent_ap_request_hold(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_verify_t *v)
{
    json_t                  *id;
    ngx_http_tent_ap_req_t  *st;

    id = json_object_get(v->activity, "id");

    if (json_is_string(id)
        && json_string_length(id) > NGX_HTTP_TENT_AP_REQ_FOLLOW_MAX)
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                        "The Follow's id is too long");
    }

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_req_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the request");
    }

    st->verify = v;
    st->what = NGX_HTTP_TENT_AP_REQ_HOLD;
    ctx->state = st;

    return ngx_http_tent_ap_req_scan(r, ctx);
}


/* an Undo of a Follow of no follower: its request, if one waits */

ngx_int_t
ngx_http_tent_ap_request_undo(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_verify_t *v, ngx_str_t *follow_id, ngx_uint_t embedded)
{
    ngx_http_tent_ap_req_t  *st;

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_req_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the request");
    }

    st->verify = v;
    st->follow_id = *follow_id;
    st->embedded = embedded;
    st->what = NGX_HTTP_TENT_AP_REQ_UNDO;
    ctx->state = st;

    return ngx_http_tent_ap_req_scan(r, ctx);
}


/* every place: at most NGX_HTTP_TENT_AP_REQUESTS_MAX rows */

static ngx_int_t
ngx_http_tent_ap_req_scan(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_str_t                  start, end;
    ngx_http_tent_store_op_t  *op;

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_key_range(r->pool, &ctx->entity,
                                   NGX_HTTP_TENT_TABLE_AP_REQUEST, &start,
                                   &end)
           != NGX_OK
        || ngx_http_tent_store_scan(op, &start, &end,
                                    NGX_HTTP_TENT_AP_REQUESTS_MAX, 0)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "preparing the requests' scan");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_req_scanned);
}


static ngx_int_t
ngx_http_tent_ap_req_scanned(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                     *row, *follow;
    uint32_t                    s, gap;
    ngx_int_t                   rc;
    ngx_str_t                   key, value, actor, id;
    ngx_uint_t                  n, match;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_ap_req_t     *st;
    ngx_http_tent_srv_conf_t   *scf;
    ngx_http_tent_ap_verify_t  *v;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;
    v = st->verify;
    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    if (st->what == NGX_HTTP_TENT_AP_REQ_LIST) {
        return ngx_http_tent_ap_req_list(r, op);
    }

    n = 0;
    gap = 0;

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {

        if (ngx_http_tent_slot_parse(&ctx->entity, &key, &s) != NGX_OK) {
            continue;
        }

        if (s == gap) {
            gap++;
        }

        n++;

        row = ngx_http_tent_json_own(r->pool,
                  ngx_http_tent_json_parse(&value, r->connection->log));

        if (row == NULL
            || ngx_http_tent_json_str(row, "actor", &actor) != NGX_OK
            || ngx_http_tent_json_str(row, "id", &id) != NGX_OK)
        {
            continue;
        }

        switch (st->what) {

        case NGX_HTTP_TENT_AP_REQ_HOLD:
            match = ngx_http_tent_entity_eq(&actor, &v->actor);
            break;

        case NGX_HTTP_TENT_AP_REQ_UNDO:
            follow = json_object_get(row, "follow");
            match = ngx_http_tent_entity_eq(&actor, &v->actor)
                    && (st->embedded
                        || (json_is_string(follow) && st->follow_id.len
                            && st->follow_id.len
                               == json_string_length(follow)
                            && ngx_strncmp(st->follow_id.data,
                                           json_string_value(follow),
                                           st->follow_id.len)
                               == 0));
            break;

        default: /* ACCEPT, REJECT: by the id the owner was shown */
            match = id.len == st->id.len
                    && ngx_strncmp(id.data, st->id.data, id.len) == 0;
            break;
        }

        if (match) {
            st->slot = s;
            st->row = value;
            st->request = row;
            st->actor = actor;
            break;
        }
    }

    switch (st->what) {

    case NGX_HTTP_TENT_AP_REQ_HOLD:

        if (st->request) {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "tent ap: \"%V\" asked to follow already",
                           &v->actor);
            return ngx_http_tent_ap_req_done(r, NULL);
        }

        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent ap: %ui of %ui follow requests of \"%V\"",
                       n, scf->ap_requests, &ctx->entity);

        if (n >= scf->ap_requests) {
            ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                          "tent inbox: %ui follow requests of %V wait for "
                          "the owner, \"%V\"'s is refused", n, &ctx->entity,
                          &v->actor);

            return ngx_http_tent_send_error(r, NGX_HTTP_TOO_MANY_REQUESTS,
                       "Too many follow requests wait for the owner's "
                       "approval");
        }

        return ngx_http_tent_ap_req_take(r, ctx, st, gap);

    case NGX_HTTP_TENT_AP_REQ_UNDO:

        if (st->request == NULL) {
            return ngx_http_tent_ap_req_done(r, NULL);
        }

        op = NULL;

        if (ngx_http_tent_ap_req_remove(r, ctx, st, &op) != NGX_OK) {
            return ngx_http_tent_internal_error(r,
                                       "adding the request's removal");
        }

        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent inbox: the follow request of \"%V\" undone",
                       &v->actor);

        return ngx_http_tent_store_submit_request(r, op,
                                                  ngx_http_tent_ap_req_done);

    default:
        break;
    }

    /* the owner's answer */

    if (st->request == NULL) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                        "No such follow request");
    }

    if (st->what == NGX_HTTP_TENT_AP_REQ_REJECT) {
        return ngx_http_tent_ap_req_follows(r, NULL);
    }

    /* Accept: whether the actor follows already (approval was off) */

    return ngx_http_tent_store_get_request(r,
                                        NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY,
                                        &st->actor,
                                        ngx_http_tent_ap_req_follows);
}


static ngx_int_t
ngx_http_tent_ap_req_take(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_req_t *st, uint32_t slot)
{
    json_t                     *row;
    ngx_str_t                   hex, key, value;
    ngx_http_tent_ap_verify_t  *v;
    ngx_http_tent_store_op_t   *op;

    v = st->verify;

    if (ngx_http_tent_random_hex(r->pool, NGX_HTTP_TENT_AP_REQ_ID_LEN / 2,
                                 &hex)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "making the request's id");
    }

    row = json_pack("{s:o, s:o, s:o, s:I}",
                    "id", ngx_http_tent_json_string(&hex),
                    "actor", ngx_http_tent_json_string(&v->actor),
                    "inbox", ngx_http_tent_json_string(&v->inbox),
                    "created_at", (json_int_t) ngx_time());

    if (row && v->shared_inbox.len) {
        json_object_set_new(row, "shared_inbox",
                            ngx_http_tent_json_string(&v->shared_inbox));
    }

    if (row) {
        (void) ngx_http_tent_ap_face_set(row, &v->name, &v->icon);
    }

    if (row && json_is_string(json_object_get(v->activity, "id"))) {
        json_object_set(row, "follow", json_object_get(v->activity, "id"));
    }

    if (row == NULL || ngx_http_tent_json_cleanup(r->pool, row) != NGX_OK) {
        json_decref(row);
        return ngx_http_tent_internal_error(r, "building the request");
    }

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_slot_key(r->pool, &ctx->entity,
                                  NGX_HTTP_TENT_TABLE_AP_REQUEST, slot, &key)
           != NGX_OK
        || ngx_http_tent_json_dump(r->pool, row, &value) != NGX_OK
        || ngx_http_tent_store_cas(op, &key, NULL, &value) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "building the request's row");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent inbox: the Follow of \"%V\" held in place %uD",
                   &v->actor, slot);

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_req_taken);
}


static ngx_int_t
ngx_http_tent_ap_req_taken(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_int_t                rc;
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_ap_req_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    /* another Follow took the place first: look again, a few times */

    if (op->status == NGX_HTTP_TENT_STORE_CONFLICT) {
        if (++st->tries < NGX_HTTP_TENT_AP_REQ_TRIES) {
            return ngx_http_tent_ap_req_scan(r, ctx);
        }

        return ngx_http_tent_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                        "The follow requests are busy");
    }

    return ngx_http_tent_ap_req_done(r, op);
}


/* the owner's list: oldest first */

static ngx_int_t
ngx_http_tent_ap_req_list(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                       *row, *out;
    uint32_t                      s;
    ngx_str_t                     key, value;
    ngx_uint_t                    i;
    ngx_array_t                   items;
    ngx_http_tent_ctx_t          *ctx;
    ngx_http_tent_ap_req_item_t  *it;

    ctx = ngx_http_tent_get_ctx(r);

    if (ngx_array_init(&items, r->pool, 16,
                       sizeof(ngx_http_tent_ap_req_item_t))
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "listing the requests");
    }

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {

        if (ngx_http_tent_slot_parse(&ctx->entity, &key, &s) != NGX_OK) {
            continue;
        }

        row = ngx_http_tent_json_own(r->pool,
                  ngx_http_tent_json_parse(&value, r->connection->log));
        if (!json_is_object(row)) {
            continue;
        }

        it = ngx_array_push(&items);
        if (it == NULL) {
            return ngx_http_tent_internal_error(r, "listing the requests");
        }

        it->at = (uint64_t) json_integer_value(json_object_get(row,
                                                               "created_at"));
        it->slot = s;
        it->request = row;
    }

    ngx_qsort(items.elts, items.nelts, sizeof(ngx_http_tent_ap_req_item_t),
              ngx_http_tent_ap_req_cmp);

    out = ngx_http_tent_json_own(r->pool, json_array());
    if (out == NULL) {
        return ngx_http_tent_internal_error(r, "listing the requests");
    }

    it = items.elts;

    for (i = 0; i < items.nelts; i++) {
        if (json_array_append(out, it[i].request) != 0) {
            return ngx_http_tent_internal_error(r, "listing the requests");
        }
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: %ui follow requests of \"%V\" listed",
                   items.nelts, &ctx->entity);

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
}


static int ngx_libc_cdecl
ngx_http_tent_ap_req_cmp(const void *a, const void *b)
{
    const ngx_http_tent_ap_req_item_t  *x = a, *y = b;

    if (x->at != y->at) {
        return x->at < y->at ? -1 : 1;
    }

    return x->slot < y->slot ? -1 : (x->slot > y->slot);
}


/*
 * The owner's routes: GET {api}/activitypub/NAME/requests
 * (read_followers), POST .../requests/:id/accept and .../reject
 * (write_followers)
 */

ngx_int_t
ngx_http_tent_ap_requests(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_ap_req_owner(r, ctx, NGX_HTTP_TENT_AP_REQ_LIST);
}


ngx_int_t
ngx_http_tent_ap_request_accept(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_ap_req_owner(r, ctx, NGX_HTTP_TENT_AP_REQ_ACCEPT);
}


ngx_int_t
ngx_http_tent_ap_request_reject(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx)
{
    return ngx_http_tent_ap_req_owner(r, ctx, NGX_HTTP_TENT_AP_REQ_REJECT);
}


static ngx_int_t
ngx_http_tent_ap_req_owner(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_uint_t what)
{
    ngx_int_t                rc;
    ngx_uint_t               i, scope;
    ngx_http_tent_ap_req_t  *st;

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    if (ngx_http_tent_ap_own_route(r, ctx) != NGX_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND, "Not Found");
    }

    scope = (what == NGX_HTTP_TENT_AP_REQ_LIST)
            ? NGX_HTTP_TENT_READ_FOLLOWERS : NGX_HTTP_TENT_WRITE_FOLLOWERS;

    if (!ngx_http_tent_has_scopes(ctx, scope)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                                        "Unauthorized");
    }

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ap_req_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the request");
    }

    st->what = what;

    if (what != NGX_HTTP_TENT_AP_REQ_LIST) {
        if (ctx->nparams < 2
            || ctx->params[1].len != NGX_HTTP_TENT_AP_REQ_ID_LEN)
        {
            return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                            "No such follow request");
        }

        for (i = 0; i < ctx->params[1].len; i++) {
            if (ngx_hextoi(&ctx->params[1].data[i], 1) == NGX_ERROR) {
                return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                                "No such follow request");
            }
        }

        st->id = ctx->params[1];
    }

    ctx->state = st;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: the owner's follow requests of \"%V\" (%ui)",
                   &ctx->entity, what);

    return ngx_http_tent_ap_req_scan(r, ctx);
}


/* accept or reject the request found (op: its follower's "e" row) */

static ngx_int_t
ngx_http_tent_ap_req_follows(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    u_char                  *p;
    json_t                  *follow, *reject;
    ngx_int_t                rc;
    ngx_str_t                inbox, shared, name, icon, hex, id;
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_ap_req_t  *st;

    if (op) {
        ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
        if (ctx == NULL) {
            return rc;
        }

    } else {
        ctx = ngx_http_tent_get_ctx(r);
    }

    st = ctx->state;

    /* a follower already (approval was off meanwhile): its id */

    if (op && op->status == NGX_HTTP_TENT_STORE_OK
        && ngx_http_tent_store_value(op, &st->follower) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "reading the follower's id");
    }

    follow = ngx_http_tent_ap_req_follow(ctx, st->request);

    if (follow == NULL
        || ngx_http_tent_json_cleanup(r->pool, follow) != NGX_OK
        || ngx_http_tent_json_str(st->request, "inbox", &inbox) != NGX_OK)
    {
        json_decref(follow);
        return ngx_http_tent_internal_error(r, "reading the request");
    }

    if (ngx_http_tent_json_str(st->request, "shared_inbox", &shared)
        != NGX_OK)
    {
        ngx_str_null(&shared);
    }

    if (ngx_http_tent_json_str(st->request, "name", &name) != NGX_OK) {
        ngx_str_null(&name);
    }

    if (ngx_http_tent_json_str(st->request, "icon", &icon) != NGX_OK) {
        ngx_str_null(&icon);
    }

    /* accepted, not a follower yet: the follower and the Accept */

    if (st->what == NGX_HTTP_TENT_AP_REQ_ACCEPT
        && op->status == NGX_HTTP_TENT_STORE_NOT_FOUND)
    {
        op = NULL;

        if (ngx_http_tent_ap_req_remove(r, ctx, st, &op) != NGX_OK
            || ngx_http_tent_ap_follower_add(r, ctx, op, &st->actor, &inbox,
                                             &shared, &name, &icon, follow, 0,
                                             &st->follower)
               != NGX_OK)
        {
            return ngx_http_tent_internal_error(r, "adding the follower");
        }

        return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_req_answered);
    }

    /* the request goes (compared with the row read), told to the actor */

    op = NULL;

    if (ngx_http_tent_ap_req_remove(r, ctx, st, &op) != NGX_OK
        || ngx_http_tent_random_hex(r->pool, 16, &hex) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "removing the request");
    }

    id.len = ctx->entity.len + sizeof("#reject-") - 1 + hex.len;
    id.data = ngx_pnalloc(r->pool, id.len);
    if (id.data == NULL) {
        return ngx_http_tent_internal_error(r, "making the activity's id");
    }

    p = ngx_sprintf(id.data, "%V#%s-%V", &ctx->entity,
                    st->what == NGX_HTTP_TENT_AP_REQ_ACCEPT
                    ? "accept" : "reject", &hex);
    id.len = p - id.data;

    reject = json_pack("{s:s, s:o, s:s, s:o, s:O}",
                       "@context", "https://www.w3.org/ns/activitystreams",
                       "id", ngx_http_tent_json_string(&id),
                       "type", st->what == NGX_HTTP_TENT_AP_REQ_ACCEPT
                               ? "Accept" : "Reject",
                       "actor", ngx_http_tent_json_string(&ctx->entity),
                       "object", follow);

    if (reject == NULL
        || ngx_http_tent_json_cleanup(r->pool, reject) != NGX_OK)
    {
        json_decref(reject);
        return ngx_http_tent_internal_error(r, "building the answer");
    }

    rc = ngx_http_tent_delivery_activity(r->pool, &ctx->entity, op, reject,
                                         &inbox);
    if (rc == NGX_ERROR) {
        return ngx_http_tent_internal_error(r, "queueing the answer");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent ap: the follow request of \"%V\" %s",
                   &st->actor,
                   st->what == NGX_HTTP_TENT_AP_REQ_ACCEPT
                   ? "accepted again" : "rejected");

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_ap_req_answered);
}


/*
 * The request's row removed, compared with the row read (of two answers
 * at once, or an answer and an Undo, one wins); *op NULL: a new one
 * whose first step that is, else added to *op
 */

static ngx_int_t
ngx_http_tent_ap_req_remove(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_ap_req_t *st, ngx_http_tent_store_op_t **op)
{
    ngx_str_t  key;

    if (ngx_http_tent_slot_key(r->pool, &ctx->entity,
                               NGX_HTTP_TENT_TABLE_AP_REQUEST, st->slot, &key)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (*op == NULL) {
        *op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

        if (*op == NULL
            || ngx_http_tent_store_cas(*op, &key, &st->row, &st->row)
               != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    return ngx_http_tent_store_write_del(*op, &key);
}


/* the Follow as the request keeps it, for the Accept or the Reject */

static json_t *
ngx_http_tent_ap_req_follow(ngx_http_tent_ctx_t *ctx, json_t *request)
{
    json_t  *follow;

    follow = json_pack("{s:s, s:O, s:o}",
                       "type", "Follow",
                       "actor", json_object_get(request, "actor"),
                       "object", ngx_http_tent_json_string(&ctx->entity));

    if (follow && json_is_string(json_object_get(request, "follow"))) {
        json_object_set(follow, "id", json_object_get(request, "follow"));
    }

    return follow;
}


static ngx_int_t
ngx_http_tent_ap_req_answered(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                  *out;
    ngx_int_t                rc;
    ngx_http_tent_ctx_t     *ctx;
    ngx_http_tent_ap_req_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_CONFLICT) {
        return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                   "The follow request was answered or withdrawn meanwhile");
    }

    if (st->what == NGX_HTTP_TENT_AP_REQ_REJECT) {
        out = json_object();

    } else {
        out = json_pack("{s:o, s:o}",
                        "id", ngx_http_tent_json_string(&st->follower),
                        "entity", ngx_http_tent_json_string(&st->actor));
    }

    if (out == NULL || ngx_http_tent_json_cleanup(r->pool, out) != NGX_OK) {
        json_decref(out);
        return ngx_http_tent_internal_error(r, "writing the answer");
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, out);
}


/* the inbox's answer: 202, handled or not (a store failure said) */

static ngx_int_t
ngx_http_tent_ap_req_done(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    ngx_int_t  rc;
    ngx_str_t  body = ngx_string("{}");

    /* a conflict: an Undo, an answer or another Follow came first */

    if (op && ngx_http_tent_store_request_ctx(r, op, &rc) == NULL) {
        return rc;
    }

    return ngx_http_tent_send_body(r, NGX_HTTP_ACCEPTED, &body);
}
