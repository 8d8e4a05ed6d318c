
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * A follower that moves (docs/move.md, receiving a move): our posts are
 * to go to the new entity's servers, at the relationship's notification
 * path.  A follow proves that those servers want them (the challenge
 * answered there, spec 7.1); a move must prove it too, or a follower
 * could aim our posts at any host by naming it as its successor's
 * server.  The challenge GET is signed with the relationship's
 * credential and marked "move=1": the new entity's server imported the
 * relationship, so it knows the key, and answers for a confirmed
 * following only then (a server that knows just the id cannot have it
 * answered, nor can a spec 7.1 challenger that signs its challenges).
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_move.h"
#include "ngx_http_tent_remote.h"


typedef struct {
    json_t                             *record;
    json_t                             *servers;
    ngx_str_t                           path;
    ngx_str_t                           challenge;
    ngx_uint_t                          server;
    ngx_http_tent_move_challenged_pt    done;
    void                               *data;
} ngx_http_tent_move_challenge_t;


static ngx_int_t ngx_http_tent_move_challenge_send(ngx_http_request_t *r,
    ngx_http_tent_move_challenge_t *mc);
static ngx_int_t ngx_http_tent_move_challenge_answered(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f);


ngx_int_t
ngx_http_tent_move_challenge(ngx_http_request_t *r, json_t *record,
    json_t *servers, ngx_http_tent_move_challenged_pt done, void *data)
{
    ngx_http_tent_move_challenge_t  *mc;

    mc = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_move_challenge_t));
    if (mc == NULL) {
        return done(r, data, NGX_ERROR);
    }

    mc->record = record;
    mc->servers = servers;
    mc->done = done;
    mc->data = data;

    if (ngx_http_tent_random_hex(r->pool, 32, &mc->challenge) != NGX_OK) {
        return done(r, data, NGX_ERROR);
    }

    /* no path, or no key to sign with: nothing can prove it */

    if (ngx_http_tent_json_str(record, "notification_path", &mc->path)
        != NGX_OK
        || !json_is_string(json_object_get(record, "mac_key_id"))
        || json_array_size(servers) == 0)
    {
        return done(r, data, NGX_DECLINED);
    }

    return ngx_http_tent_move_challenge_send(r, mc);
}


/* GET {server}/{notification_path}?challenge=<64 hex>, server by server */

static ngx_int_t
ngx_http_tent_move_challenge_send(ngx_http_request_t *r,
    ngx_http_tent_move_challenge_t *mc)
{
    ngx_int_t               rc;
    ngx_str_t               url, query;
    ngx_http_tent_fetch_t  *f;

    /* "move=1": no follow handshake sends it (see notifications.c) */

    query.len = sizeof("move=1&challenge=") - 1 + mc->challenge.len;
    query.data = ngx_pnalloc(r->pool, query.len);
    if (query.data == NULL) {
        return mc->done(r, mc->data, NGX_ERROR);
    }

    ngx_sprintf(query.data, "move=1&challenge=%V", &mc->challenge);

    rc = ngx_http_tent_server_url(r->pool,
                                  json_array_get(mc->servers, mc->server),
                                  &mc->path, &query, &url);

    if (rc != NGX_OK) {
        return mc->done(r, mc->data,
                        rc == NGX_DECLINED ? NGX_DECLINED : NGX_ERROR);
    }

    f = ngx_http_tent_remote_fetch(r, &url, "GET");

    if (f == NULL || ngx_http_tent_remote_sign(f, mc->record) != NGX_OK) {
        return mc->done(r, mc->data, NGX_ERROR);
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent move: the follower challenged at server %ui",
                   mc->server);

    ngx_str_set(&f->accept, "text/plain");
    f->max_response = 4096;
    f->data = mc;

    return ngx_http_tent_fetch_request(r, f,
                                       ngx_http_tent_move_challenge_answered);
}


static ngx_int_t
ngx_http_tent_move_challenge_answered(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f)
{
    ngx_http_tent_move_challenge_t  *mc;

    mc = f->data;

    if (f->result == NGX_HTTP_TENT_FETCH_OK && f->status == 200
        && f->body.len >= mc->challenge.len
        && ngx_strncmp(f->body.data, mc->challenge.data, mc->challenge.len)
           == 0)
    {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent move: the challenge answered");
        return mc->done(r, mc->data, NGX_OK);
    }

    /* a server that cannot be reached: the next one may */

    if (ngx_http_tent_fetch_next_server(f)
        && ++mc->server < json_array_size(mc->servers))
    {
        return ngx_http_tent_move_challenge_send(r, mc);
    }

    /* no slot, or none reachable now: not a refusal, the sender retries */

    if (ngx_http_tent_fetch_busy(f)
        || ngx_http_tent_fetch_next_server(f))
    {
        return mc->done(r, mc->data, NGX_AGAIN);
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent move: the challenge not answered (status %ui)",
                   f->status);

    return mc->done(r, mc->data, NGX_DECLINED);
}
