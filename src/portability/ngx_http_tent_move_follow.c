
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * A following that moves (docs/move.md, receiving a move): we follow the
 * new entity again, at its servers (the first that answers), before our
 * following is re-keyed to it.  POST {server}/followers, as a follow
 * (spec 7.1), but signed with the relationship's credential: the new
 * entity's server imported the relationship (our follower there,
 * pending: it delivers nothing to a follower until its server follows
 * again, docs/import.md), so it knows the key; it challenges our
 * notification path signed with that key and marked "move=1" (the
 * only challenge a confirmed following answers), then confirms the
 * follower and keeps the key.  Its answer names the follower id we
 * know as "remote_id".
 *
 * It is also the proof that the new servers want to be the followed
 * ones: without it a following could aim our profile posts at any host
 * by naming it as its successor's server.  A server that does not
 * answer so (a tentd) leaves the following as it was.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_move.h"
#include "ngx_http_tent_remote.h"


typedef struct {
    json_t                             *record;
    json_t                             *servers;
    ngx_uint_t                          server;
    ngx_str_t                           body;
    ngx_http_tent_move_challenged_pt    done;
    void                               *data;
} ngx_http_tent_move_follow_t;


static ngx_int_t ngx_http_tent_move_follow_send(ngx_http_request_t *r,
    ngx_http_tent_move_follow_t *mf);
static ngx_int_t ngx_http_tent_move_follow_answered(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f);


ngx_int_t
ngx_http_tent_move_follow(ngx_http_request_t *r, json_t *record,
    json_t *servers, ngx_http_tent_move_challenged_pt done, void *data)
{
    json_t                       *req, *v;
    ngx_str_t                     path, id;
    ngx_http_tent_ctx_t          *ctx;
    ngx_http_tent_move_follow_t  *mf;

    ctx = ngx_http_tent_get_ctx(r);

    if (ngx_http_tent_json_str(record, "id", &id) != NGX_OK
        || !json_is_string(json_object_get(record, "mac_key_id"))
        || json_array_size(servers) == 0)
    {
        return done(r, data, NGX_DECLINED);
    }

    mf = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_move_follow_t));
    if (mf == NULL) {
        return done(r, data, NGX_ERROR);
    }

    mf->record = record;
    mf->servers = servers;
    mf->done = done;
    mf->data = data;

    path.len = sizeof("notifications/") - 1 + id.len;
    path.data = ngx_pnalloc(r->pool, path.len);
    if (path.data == NULL) {
        return done(r, data, NGX_ERROR);
    }

    ngx_sprintf(path.data, "notifications/%V", &id);

    v = json_object_get(json_object_get(record, "permissions"), "public");

    req = json_pack("{s:o, s:O, s:O, s:o, s:{s:b}}",
                    "entity", ngx_http_tent_json_string(&ctx->entity),
                    "types",
                    json_is_array(json_object_get(record, "types"))
                    ? json_object_get(record, "types") : NULL,
                    "licenses",
                    json_is_array(json_object_get(record, "licenses"))
                    ? json_object_get(record, "licenses") : NULL,
                    "notification_path", ngx_http_tent_json_string(&path),
                    "permissions", "public", v == NULL || json_is_true(v));

    if (req == NULL) {
        /* no types or licenses kept: the defaults of a follow */
        req = json_pack("{s:o, s:[s], s:[], s:o, s:{s:b}}",
                        "entity", ngx_http_tent_json_string(&ctx->entity),
                        "types", "all",
                        "licenses",
                        "notification_path",
                        ngx_http_tent_json_string(&path),
                        "permissions", "public", 1);
    }

    if (req == NULL || ngx_http_tent_json_cleanup(r->pool, req) != NGX_OK
        || ngx_http_tent_json_dump(r->pool, req, &mf->body) != NGX_OK)
    {
        json_decref(req);
        return done(r, data, NGX_ERROR);
    }

    return ngx_http_tent_move_follow_send(r, mf);
}


/* POST {server}/followers, server by server, as the challenge goes */

static ngx_int_t
ngx_http_tent_move_follow_send(ngx_http_request_t *r,
    ngx_http_tent_move_follow_t *mf)
{
    ngx_int_t               rc;
    ngx_str_t               url, path;
    ngx_http_tent_fetch_t  *f;

    ngx_str_set(&path, "followers");

    rc = ngx_http_tent_server_url(r->pool,
                                  json_array_get(mf->servers, mf->server),
                                  &path, NULL, &url);

    if (rc != NGX_OK) {
        return mf->done(r, mf->data,
                        rc == NGX_DECLINED ? NGX_DECLINED : NGX_ERROR);
    }

    f = ngx_http_tent_remote_fetch(r, &url, "POST");

    if (f == NULL || ngx_http_tent_remote_sign(f, mf->record) != NGX_OK) {
        return mf->done(r, mf->data, NGX_ERROR);
    }

    f->request_body = mf->body;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent move: following again at server %ui: POST %V",
                   mf->server, &url);

    ngx_str_set(&f->content_type, NGX_HTTP_TENT_MEDIA_TYPE);
    f->max_response = 64 * 1024;
    f->data = mf;

    return ngx_http_tent_fetch_request(r, f,
                                       ngx_http_tent_move_follow_answered);
}


static ngx_int_t
ngx_http_tent_move_follow_answered(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f)
{
    json_t                       *res;
    ngx_str_t                     id, remote;
    ngx_http_tent_move_follow_t  *mf;

    mf = f->data;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent move: the follow again: %s, status %ui",
                   ngx_http_tent_fetch_strerror(f->result), f->status);

    /* a server that cannot be reached: the next one may */

    if (ngx_http_tent_fetch_next_server(f)
        && ++mf->server < json_array_size(mf->servers))
    {
        return ngx_http_tent_move_follow_send(r, mf);
    }

    /* not reachable now, or busy: not a refusal, the sender retries */

    if (ngx_http_tent_fetch_busy(f)
        || (f->result != NGX_HTTP_TENT_FETCH_OK
            && ngx_http_tent_fetch_next_server(f))
        || (f->result == NGX_HTTP_TENT_FETCH_OK && f->status >= 500))
    {
        return mf->done(r, mf->data, NGX_AGAIN);
    }

    if (f->result != NGX_HTTP_TENT_FETCH_OK
        || f->status < 200 || f->status > 299)
    {
        return mf->done(r, mf->data, NGX_DECLINED);
    }

    /* the follower it confirmed is ours: the id we know it by */

    res = ngx_http_tent_json_parse(&f->body, r->connection->log);
    if (res != NULL && ngx_http_tent_json_cleanup(r->pool, res) != NGX_OK) {
        json_decref(res);
        return mf->done(r, mf->data, NGX_ERROR);
    }

    if (ngx_http_tent_json_str(res, "id", &id) != NGX_OK
        || (ngx_http_tent_json_str(mf->record, "remote_id", &remote)
            == NGX_OK
            && (id.len != remote.len
                || ngx_strncmp(id.data, remote.data, id.len) != 0)))
    {
        ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                      "tent move: the follow again at %V was answered "
                      "without our follower's id", &f->url);
        return mf->done(r, mf->data, NGX_DECLINED);
    }

    return mf->done(r, mf->data, NGX_OK);
}
