
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The principal a request runs as: its HTTP MAC header checked (by
 * ngx_http_tent_mac.c) with the credential of its key id (the worker's
 * cache of them is ngx_http_tent_credentials.c); scopes; and replay
 * protection: requests whose timestamp is outside tent_mac_skew, or
 * whose nonce was seen within it, are refused.  Seen nonces live in a
 * shared memory zone (ngx_http_tent_nonce.c), so a replay through
 * another worker is caught too.
 *
 * A key id means something only within its entity: several entities
 * share one store and one nginx, and a followed server picks the id of
 * the key it gives us.  So every lookup, the store's, the worker cache's
 * and the nonce cache's, is by the credential row's key: entity and id.
 */


#define NGX_HTTP_TENT_AUTH_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_auth_private.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_mac.h"
#include "ngx_http_tent_store.h"


/* tent-client-ruby sends 6 characters, we 12; 64 holds a UUID or hex */
#define NGX_HTTP_TENT_NONCE_MAX      64


typedef struct {
    ngx_http_tent_mac_header_t      hdr;
    ngx_str_t                       key;        /* the credential row's */
    ngx_http_tent_route_pt          next;
    ngx_atomic_uint_t               generation;
} ngx_http_tent_auth_state_t;


typedef struct {
    ngx_str_t                       name;
    ngx_uint_t                      bit;
} ngx_http_tent_scope_t;


static ngx_int_t ngx_http_tent_auth_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_auth_verify(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *cred);
static ngx_int_t ngx_http_tent_auth_fail(ngx_http_request_t *r,
    ngx_uint_t status, const char *message);
static void ngx_http_tent_auth_request(ngx_http_request_t *r,
    ngx_http_tent_auth_state_t *st, ngx_http_tent_mac_request_t *req);
static ngx_int_t ngx_http_tent_nonce_busy(ngx_http_request_t *r,
    time_t retry);


static ngx_http_tent_scope_t  ngx_http_tent_scopes[] = {
    { ngx_string("read_posts"), NGX_HTTP_TENT_READ_POSTS },
    { ngx_string("write_posts"), NGX_HTTP_TENT_WRITE_POSTS },
    { ngx_string("import_posts"), NGX_HTTP_TENT_IMPORT_POSTS },
    { ngx_string("read_profile"), NGX_HTTP_TENT_READ_PROFILE },
    { ngx_string("write_profile"), NGX_HTTP_TENT_WRITE_PROFILE },
    { ngx_string("read_followers"), NGX_HTTP_TENT_READ_FOLLOWERS },
    { ngx_string("write_followers"), NGX_HTTP_TENT_WRITE_FOLLOWERS },
    { ngx_string("read_followings"), NGX_HTTP_TENT_READ_FOLLOWINGS },
    { ngx_string("write_followings"), NGX_HTTP_TENT_WRITE_FOLLOWINGS },
    { ngx_string("read_groups"), NGX_HTTP_TENT_READ_GROUPS },
    { ngx_string("write_groups"), NGX_HTTP_TENT_WRITE_GROUPS },
    { ngx_string("read_permissions"), NGX_HTTP_TENT_READ_PERMISSIONS },
    { ngx_string("write_permissions"), NGX_HTTP_TENT_WRITE_PERMISSIONS },
    { ngx_string("read_apps"), NGX_HTTP_TENT_READ_APPS },
    { ngx_string("write_apps"), NGX_HTTP_TENT_WRITE_APPS },
    { ngx_string("follow_ui"), NGX_HTTP_TENT_FOLLOW_UI },
    { ngx_string("read_secrets"), NGX_HTTP_TENT_READ_SECRETS },
    { ngx_string("write_secrets"), NGX_HTTP_TENT_WRITE_SECRETS },
    { ngx_string("read_blocks"), NGX_HTTP_TENT_READ_BLOCKS },
    { ngx_string("write_blocks"), NGX_HTTP_TENT_WRITE_BLOCKS },
    { ngx_null_string, 0 }
};


ngx_int_t
ngx_http_tent_scope_bit(ngx_str_t *name)
{
    ngx_http_tent_scope_t  *s;

    for (s = ngx_http_tent_scopes; s->bit; s++) {
        if (s->name.len == name->len
            && ngx_strncmp(s->name.data, name->data, name->len) == 0)
        {
            return s->bit;
        }
    }

    return 0;
}


ngx_int_t
ngx_http_tent_has_scopes(ngx_http_tent_ctx_t *ctx, ngx_uint_t scopes)
{
    return ctx->principal.kind == NGX_HTTP_TENT_AUTHORIZATION
           && (ctx->principal.scopes & scopes) == scopes;
}


/*
 * A type list of an authorization: "all", or URIs matched by base (the
 * version and view do not matter, as in tentd).
 */

ngx_int_t
ngx_http_tent_type_allowed(json_t *list, ngx_str_t *type)
{
    size_t      i;
    json_t     *v;
    ngx_str_t   s, base, want;

    if (!json_is_array(list) || ngx_http_tent_type_base(type, &want) != NGX_OK)
    {
        return 0;
    }

    json_array_foreach(list, i, v) {
        if (!json_is_string(v)) {
            continue;
        }

        s.data = (u_char *) json_string_value(v);
        s.len = json_string_length(v);

        if (s.len == 3 && ngx_strncmp(s.data, "all", 3) == 0) {
            return 1;
        }

        if (ngx_http_tent_type_base(&s, &base) == NGX_OK
            && base.len == want.len
            && ngx_strncmp(base.data, want.data, base.len) == 0)
        {
            return 1;
        }
    }

    return 0;
}


/*
 * Every API request: a MAC header makes the request run as the holder of
 * the key; no header (or another scheme, e.g. Basic for the owner's
 * authorize page) leaves it anonymous.  Then "next" runs.
 */

ngx_int_t
ngx_http_tent_authenticate(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_route_pt next)
{
    json_t                      *cred;
    ngx_int_t                    rc;
    ngx_table_elt_t             *h;
    ngx_http_tent_store_op_t    *op;
    ngx_http_tent_auth_state_t  *st;

    ngx_memzero(&ctx->principal, sizeof(ngx_http_tent_principal_t));

    h = r->headers_in.authorization;

    if (h == NULL) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent auth: anonymous, entity \"%V\"", &ctx->entity);
        return next(r, ctx);
    }

    st = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_auth_state_t));
    if (st == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the auth state");
    }

    rc = ngx_http_tent_mac_parse(&h->value, &st->hdr);

    if (rc == NGX_DECLINED) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent auth: not a MAC header: anonymous, entity \"%V\"",
                       &ctx->entity);
        return next(r, ctx);
    }

    if (rc != NGX_OK) {
        return ngx_http_tent_auth_fail(r, NGX_HTTP_UNAUTHORIZED,
                                       "Invalid MAC header");
    }

    if (st->hdr.nonce.len > NGX_HTTP_TENT_NONCE_MAX) {
        return ngx_http_tent_auth_fail(r, NGX_HTTP_UNAUTHORIZED,
                                       "MAC nonce too long");
    }

    st->next = next;
    ctx->state = st;

    /* this entity's row of the key id: no other entity's */

    if (ngx_http_tent_key(r->pool, &ctx->entity,
                          NGX_HTTP_TENT_TABLE_CREDENTIAL, &st->hdr.id,
                          &st->key)
        != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "making the credential's key");
    }

    /* read before the store is, so a change racing us leaves it stale */

    st->generation = ngx_http_tent_credential_generation(
                         (ngx_cycle_t *) ngx_cycle);

    cred = ngx_http_tent_credential_cached(&st->key, st->generation);
    if (cred) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent auth: key id \"%V\" of \"%V\": cache hit",
                       &st->hdr.id, &ctx->entity);
        return ngx_http_tent_auth_verify(r, ctx, cred);
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent auth: key id \"%V\" of \"%V\": store read",
                   &st->hdr.id, &ctx->entity);

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL || ngx_http_tent_store_get(op, &st->key) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "preparing the credential read");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_auth_loaded);
}


static ngx_int_t
ngx_http_tent_auth_loaded(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                      *cred;
    ngx_int_t                    rc;
    ngx_str_t                    value;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_auth_state_t  *st;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    st = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent auth: key id \"%V\" not found", &st->hdr.id);
        return ngx_http_tent_auth_fail(r, NGX_HTTP_UNAUTHORIZED,
                                       "Invalid MAC Key ID");
    }

    ngx_http_tent_store_value(op, &value);

    cred = ngx_http_tent_json_parse(&value, r->connection->log);
    if (cred == NULL) {
        return ngx_http_tent_internal_error(r, "reading the credential record");
    }

    ngx_http_tent_credential_keep(&st->key, st->generation, cred, value.len);

    return ngx_http_tent_auth_verify(r, ctx, cred);
}


static ngx_int_t
ngx_http_tent_auth_verify(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    json_t *cred)
{
    json_t                      *v;
    time_t                       ts, now, skew, retry;
    ngx_str_t                    algorithm, key, nonce_key, kind;
    ngx_uint_t                   principal, budget;
    ngx_http_tent_loc_conf_t    *lcf;
    ngx_http_tent_auth_state_t  *st;
    ngx_http_tent_mac_request_t  req;

    st = ctx->state;

    /*
     * The principal holds a reference to the record until the request
     * ends; the record may be the worker's cached one, so nothing may
     * change it.
     */

    ctx->principal.credential = cred;

    if (ngx_http_tent_json_cleanup(r->pool, cred) != NGX_OK) {
        json_decref(cred);
        return ngx_http_tent_internal_error(r, "keeping the credential record");
    }

    now = ngx_time();

    v = json_object_get(cred, "expires_at");
    if (json_is_integer(v) && json_integer_value(v) <= now) {
        return ngx_http_tent_auth_fail(r, NGX_HTTP_UNAUTHORIZED,
                                       "Invalid MAC Key ID");
    }

    if (ngx_http_tent_json_str(cred, "algorithm", &algorithm) != NGX_OK
        || ngx_http_tent_json_str(cred, "key", &key) != NGX_OK
        || ngx_http_tent_json_str(cred, "kind", &kind) != NGX_OK)
    {
        return ngx_http_tent_auth_fail(r, NGX_HTTP_FORBIDDEN,
                                       "Invalid MAC Signature");
    }

    /* what the key is comes from its record, never from its id's prefix */

    if (kind.len == 3 && ngx_strncmp(kind.data, "app", 3) == 0) {
        principal = NGX_HTTP_TENT_APP;
        budget = NGX_HTTP_TENT_NONCE_APP;

    } else if (kind.len == 13
               && ngx_strncmp(kind.data, "authorization", 13) == 0)
    {
        principal = NGX_HTTP_TENT_AUTHORIZATION;
        budget = NGX_HTTP_TENT_NONCE_OWNER;

    } else if (kind.len == 8 && ngx_strncmp(kind.data, "follower", 8) == 0) {
        principal = NGX_HTTP_TENT_FOLLOWER;
        budget = NGX_HTTP_TENT_NONCE_FOLLOWER;

    } else if (kind.len == 9 && ngx_strncmp(kind.data, "following", 9) == 0)
    {
        /* a server we follow is still another party: a share of its own */
        principal = NGX_HTTP_TENT_FOLLOWING;
        budget = NGX_HTTP_TENT_NONCE_FOLLOWING;

    } else {
        return ngx_http_tent_auth_fail(r, NGX_HTTP_FORBIDDEN,
                                       "Invalid MAC Signature");
    }

    ngx_http_tent_auth_request(r, st, &req);

    switch (ngx_http_tent_mac_verify(r->pool, &algorithm, &key, &req,
                                     &st->hdr.mac))
    {
    case NGX_OK:
        break;

    case NGX_DECLINED:
        return ngx_http_tent_auth_fail(r, NGX_HTTP_FORBIDDEN,
                                       "Invalid MAC Signature");

    default:
        return ngx_http_tent_internal_error(r, "computing the MAC");
    }

    /* replay protection, beyond what tentd did: a fresh ts, a new nonce */

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_tent_module);
    skew = lcf->mac_skew;

    ts = ngx_atotm(st->hdr.ts.data, st->hdr.ts.len);

    if (skew && (ts == NGX_ERROR || ts < now - skew || ts > now + skew)) {
        return ngx_http_tent_auth_fail(r, NGX_HTTP_UNAUTHORIZED,
                                       "MAC timestamp out of range");
    }

    /* the row key holds the entity: the same id elsewhere is another key */

    nonce_key.len = st->key.len + st->hdr.ts.len + st->hdr.nonce.len + 2;
    nonce_key.data = ngx_pnalloc(r->pool, nonce_key.len);
    if (nonce_key.data == NULL) {
        return ngx_http_tent_internal_error(r, "making the nonce's key");
    }

    ngx_sprintf(nonce_key.data, "%V\n%V\n%V", &st->key, &st->hdr.ts,
                &st->hdr.nonce);

    /*
     * Once now > ts + skew the timestamp check refuses the request, and
     * ts >= now - skew here: so 2 * skew from now is long enough.
     */

    switch (ngx_http_tent_nonce_check(r, &ctx->entity, &nonce_key, budget,
                                      skew ? 2 * skew : 600, &retry))
    {
    case NGX_OK:
        break;

    case NGX_DECLINED:
        return ngx_http_tent_auth_fail(r, NGX_HTTP_UNAUTHORIZED,
                                       "MAC nonce already used");

    case NGX_BUSY:
        return ngx_http_tent_nonce_busy(r, retry);

    default:
        return ngx_http_tent_internal_error(r, "checking the nonce");
    }

    ctx->principal.key_id = st->hdr.id;
    ctx->principal.kind = principal;

    switch (principal) {

    case NGX_HTTP_TENT_APP:
        (void) ngx_http_tent_json_str(cred, "app", &ctx->principal.app_id);
        break;

    case NGX_HTTP_TENT_AUTHORIZATION:
        (void) ngx_http_tent_json_str(cred, "app", &ctx->principal.app_id);
        (void) ngx_http_tent_json_str(cred, "authorization",
                                      &ctx->principal.auth_id);
        ctx->principal.scopes = ngx_http_tent_scope_bits(
                                    json_object_get(cred, "scopes"));
        break;

    default:
        /* another server, by the credential of our relationship */
        (void) ngx_http_tent_json_str(cred, "entity",
                                      &ctx->principal.entity);
        (void) ngx_http_tent_json_str(cred, "relation",
                                      &ctx->principal.auth_id);
        break;
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent auth: principal %V, key id \"%V\", entity \"%V\""
                   ", scopes 0x%xi",
                   &kind, &st->hdr.id, &ctx->entity, ctx->principal.scopes);

    return st->next(r, ctx);
}


/*
 * The nonce cache has no room for this key's kind: refused until the
 * oldest of them expires.  Forgetting a nonce instead would let its
 * request be replayed.
 */

static ngx_int_t
ngx_http_tent_nonce_busy(ngx_http_request_t *r, time_t retry)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return ngx_http_tent_internal_error(r, "adding Retry-After");
    }

    h->value.data = ngx_pnalloc(r->pool, NGX_TIME_T_LEN);
    if (h->value.data == NULL) {
        return ngx_http_tent_internal_error(r, "adding Retry-After");
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Retry-After");
    h->value.len = ngx_sprintf(h->value.data, "%T", retry) - h->value.data;

    return ngx_http_tent_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                    "MAC nonce cache is full: "
                                    "try again later");
}


/* the scopes of a JSON list as bits; unknown names are ignored */

ngx_uint_t
ngx_http_tent_scope_bits(json_t *list)
{
    size_t      i;
    json_t     *v;
    ngx_str_t   s;
    ngx_uint_t  bits;

    bits = 0;

    json_array_foreach(list, i, v) {
        if (json_is_string(v)) {
            s.data = (u_char *) json_string_value(v);
            s.len = json_string_length(v);
            bits |= ngx_http_tent_scope_bit(&s);
        }
    }

    return bits;
}


/*
 * What the client signed: the request-uri exactly as sent, and the host
 * and port it used: the Host header (case kept), else the scheme's
 * default port.
 */

static void
ngx_http_tent_auth_request(ngx_http_request_t *r,
    ngx_http_tent_auth_state_t *st, ngx_http_tent_mac_request_t *req)
{
    u_char     *p, *last, *colon;
    ngx_str_t   host, port;

    if (r->headers_in.host) {
        host = r->headers_in.host->value;

    } else {
        host = r->headers_in.server;
    }

    last = host.data + host.len;
    colon = NULL;

    if (host.len && host.data[0] == '[') {
        p = ngx_strlchr(host.data, last, ']');
        if (p && p + 1 < last && p[1] == ':') {
            colon = p + 1;
        }

    } else {
        colon = ngx_strlchr(host.data, last, ':');
    }

    if (colon) {
        port.data = colon + 1;
        port.len = last - port.data;
        host.len = colon - host.data;

    } else {
#if (NGX_HTTP_SSL)
        if (r->connection->ssl) {
            ngx_str_set(&port, "443");
        } else
#endif
        {
            ngx_str_set(&port, "80");
        }
    }

    req->ts = st->hdr.ts;
    req->nonce = st->hdr.nonce;
    req->method = r->method_name;
    req->uri = r->unparsed_uri;
    req->host = host;
    req->port = port;
    req->ext = st->hdr.ext;
}


static ngx_int_t
ngx_http_tent_auth_fail(ngx_http_request_t *r, ngx_uint_t status,
    const char *message)
{
    ngx_table_elt_t  *h;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent auth: refused %ui: %s", status, message);

    if (status == NGX_HTTP_UNAUTHORIZED) {
        h = ngx_list_push(&r->headers_out.headers);
        if (h == NULL) {
            return ngx_http_tent_internal_error(r, "adding WWW-Authenticate");
        }

        h->hash = 1;
        ngx_str_set(&h->key, "WWW-Authenticate");
        ngx_str_set(&h->value, "MAC");
    }

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "tent: request refused: %s", message);

    return ngx_http_tent_send_error(r, status, message);
}
