
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The principal a request runs as: its HTTP MAC header checked (by
 * ngx_http_tent_mac.c) with the credential of its key id; scopes; and
 * replay protection: requests whose timestamp is outside tent_mac_skew,
 * or whose nonce was seen within it, are refused.  Seen nonces live in
 * a shared memory zone, so a replay through another worker is caught
 * too.
 *
 * A key id means something only within its entity: several entities
 * share one store and one nginx, and a followed server picks the id of
 * the key it gives us.  So every lookup, the store's, the worker cache's
 * and the nonce cache's, is by the credential row's key: entity and id.
 */


#include "ngx_http_tent_module.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_mac.h"
#include "ngx_http_tent_store.h"

#include <openssl/evp.h>


/* tent-client-ruby sends 6 characters, we 12; 64 holds a UUID or hex */
#define NGX_HTTP_TENT_NONCE_MAX      64


typedef struct {
    ngx_http_tent_mac_header_t      hdr;
    ngx_str_t                       key;        /* the credential row's */
    ngx_http_tent_route_pt          next;
    ngx_atomic_uint_t               generation;
} ngx_http_tent_auth_state_t;


/*
 * Who may fill the nonce cache.  Anyone gets an app key (POST /apps) and
 * anyone with a web server a follower's key (POST /followers), so each
 * of these two kinds may hold at most a quarter of the cache; the rest
 * is for the keys the owner approved: authorizations, and the servers
 * the owner follows.  A full share is refused, never forgotten.
 */

#define NGX_HTTP_TENT_NONCE_APP       0
#define NGX_HTTP_TENT_NONCE_FOLLOWER  1
#define NGX_HTTP_TENT_NONCE_OWNER     2
#define NGX_HTTP_TENT_NONCE_FOLLOWING 3
#define NGX_HTTP_TENT_NONCE_BUDGETS   4


typedef struct {
    ngx_rbtree_t                    rbtree;
    ngx_rbtree_node_t               sentinel;
    ngx_queue_t                     queue[NGX_HTTP_TENT_NONCE_BUDGETS];
    ngx_uint_t                      used[NGX_HTTP_TENT_NONCE_BUDGETS];
    ngx_queue_t                     free;
    ngx_uint_t                      capacity;
    time_t                          warned[NGX_HTTP_TENT_NONCE_BUDGETS];
    ngx_atomic_t                    generation;
    ngx_atomic_t                    credentials; /* their generation */
} ngx_http_tent_nonce_sh_t;


/*
 * Each worker keeps the credential records it read, by the row's key
 * (entity and key id), while the credentials' generation in shared
 * memory has not moved: every write of a credential row, in any worker,
 * moves it (the store does that).  So a signed request costs no store
 * read, and a revoked key fails at once.
 */

#define NGX_HTTP_TENT_CRED_SLOTS   1024
#define NGX_HTTP_TENT_CRED_MAX_AGE 30

typedef struct {
    u_char                         *key;
    size_t                          key_len;
    json_t                         *record;     /* parsed: read-only */
    ngx_atomic_uint_t               generation;
    time_t                          stored;
} ngx_http_tent_cred_slot_t;


typedef struct {
    ngx_http_tent_nonce_sh_t       *sh;
    ngx_slab_pool_t                *shpool;
} ngx_http_tent_nonce_ctx_t;


/*
 * A seen nonce: a SHA-256 digest of (row key, ts, nonce), its first
 * bits in the node's key, the next 64 here; 64 bytes in all on 64-bit
 * systems, whatever the lengths of the entity, id and nonce.
 */

typedef struct {
    u_char                          color;
    u_char                          dummy;
    u_short                         dummy2;
    uint32_t                        expires;
    ngx_queue_t                     queue;
    uint64_t                        digest;
} ngx_http_tent_nonce_t;


typedef struct {
    ngx_str_t                       name;
    ngx_uint_t                      bit;
} ngx_http_tent_scope_t;


static ngx_int_t ngx_http_tent_auth_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_auth_verify(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *cred);
static ngx_atomic_uint_t ngx_http_tent_credential_generation(
    ngx_cycle_t *cycle);
static json_t *ngx_http_tent_credential_cached(
    ngx_http_tent_auth_state_t *st);
static void ngx_http_tent_credential_keep(ngx_http_tent_auth_state_t *st,
    json_t *cred, size_t size);
static ngx_int_t ngx_http_tent_auth_fail(ngx_http_request_t *r,
    ngx_uint_t status, const char *message);
static void ngx_http_tent_auth_request(ngx_http_request_t *r,
    ngx_http_tent_auth_state_t *st, ngx_http_tent_mac_request_t *req);
static ngx_int_t ngx_http_tent_nonce_check(ngx_http_request_t *r,
    ngx_str_t *key, ngx_uint_t budget, time_t lifetime, time_t *retry);
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
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
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
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* read before the store is, so a change racing us leaves it stale */

    st->generation = ngx_http_tent_credential_generation(
                         (ngx_cycle_t *) ngx_cycle);

    cred = ngx_http_tent_credential_cached(st);
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
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_auth_loaded);
}


static ngx_int_t
ngx_http_tent_auth_loaded(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                      *cred;
    ngx_int_t                    status;
    ngx_str_t                    value;
    ngx_http_tent_ctx_t         *ctx;
    ngx_http_tent_auth_state_t  *st;

    ctx = ngx_http_tent_get_ctx(r);
    st = ctx->state;

    status = ngx_http_tent_store_http_status(op);
    if (status != NGX_OK) {
        return ngx_http_tent_send_error(r, status, NULL);
    }

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent auth: key id \"%V\" not found", &st->hdr.id);
        return ngx_http_tent_auth_fail(r, NGX_HTTP_UNAUTHORIZED,
                                       "Invalid MAC Key ID");
    }

    ngx_http_tent_store_value(op, &value);

    cred = ngx_http_tent_json_parse(&value, r->connection->log);
    if (cred == NULL) {
        return ngx_http_tent_send_error(r, NGX_HTTP_INTERNAL_SERVER_ERROR,
                                        NULL);
    }

    ngx_http_tent_credential_keep(st, cred, value.len);

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
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
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
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
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
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_sprintf(nonce_key.data, "%V\n%V\n%V", &st->key, &st->hdr.ts,
                &st->hdr.nonce);

    /*
     * Once now > ts + skew the timestamp check refuses the request, and
     * ts >= now - skew here: so 2 * skew from now is long enough.
     */

    switch (ngx_http_tent_nonce_check(r, &nonce_key, budget,
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
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
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
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    h->value.data = ngx_pnalloc(r->pool, NGX_TIME_T_LEN);
    if (h->value.data == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
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
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        h->hash = 1;
        ngx_str_set(&h->key, "WWW-Authenticate");
        ngx_str_set(&h->value, "MAC");
    }

    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "tent: request refused: %s", message);

    return ngx_http_tent_send_error(r, status, message);
}


/*
 * The nonce cache: an rbtree by digest and, per budget, a queue oldest
 * first, in shared memory.  A node is an ngx_rbtree_node_t whose bytes
 * from "color" on are an ngx_http_tent_nonce_t, as in
 * ngx_http_limit_req_module.  Every node is allocated when the zone is
 * made, so "full" is a count, the same in every worker.
 */

static void
ngx_http_tent_nonce_insert(ngx_rbtree_node_t *temp, ngx_rbtree_node_t *node,
    ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t      **p;
    ngx_http_tent_nonce_t   *n, *t;

    for ( ;; ) {

        if (node->key < temp->key) {
            p = &temp->left;

        } else if (node->key > temp->key) {
            p = &temp->right;

        } else {
            n = (ngx_http_tent_nonce_t *) &node->color;
            t = (ngx_http_tent_nonce_t *) &temp->color;

            p = (n->digest < t->digest) ? &temp->left : &temp->right;
        }

        if (*p == sentinel) {
            break;
        }

        temp = *p;
    }

    *p = node;
    node->parent = temp;
    node->left = sentinel;
    node->right = sentinel;
    ngx_rbt_red(node);
}


ngx_int_t
ngx_http_tent_nonce_zone_init(ngx_shm_zone_t *zone, void *data)
{
    ngx_http_tent_nonce_ctx_t *octx = data;

    size_t                      size;
    ngx_uint_t                  i;
    ngx_rbtree_node_t          *node;
    ngx_http_tent_nonce_t      *nc;
    ngx_http_tent_nonce_sh_t   *sh;
    ngx_http_tent_nonce_ctx_t  *ctx;

    ctx = zone->data;

    if (octx) {
        ctx->sh = octx->sh;
        ctx->shpool = octx->shpool;
        return NGX_OK;
    }

    ctx->shpool = (ngx_slab_pool_t *) zone->shm.addr;

    if (zone->shm.exists) {
        ctx->sh = ctx->shpool->data;
        return NGX_OK;
    }

    sh = ngx_slab_calloc(ctx->shpool, sizeof(ngx_http_tent_nonce_sh_t));
    if (sh == NULL) {
        return NGX_ERROR;
    }

    ctx->sh = sh;
    ctx->shpool->data = sh;

    ngx_rbtree_init(&sh->rbtree, &sh->sentinel, ngx_http_tent_nonce_insert);

    for (i = 0; i < NGX_HTTP_TENT_NONCE_BUDGETS; i++) {
        ngx_queue_init(&sh->queue[i]);
    }

    ngx_queue_init(&sh->free);

    ctx->shpool->log_nomem = 0;

    /* every node now: the zone holds nothing else */

    size = offsetof(ngx_rbtree_node_t, color)
           + sizeof(ngx_http_tent_nonce_t);

    for ( ;; ) {
        node = ngx_slab_alloc(ctx->shpool, size);
        if (node == NULL) {
            break;
        }

        nc = (ngx_http_tent_nonce_t *) &node->color;
        ngx_queue_insert_tail(&sh->free, &nc->queue);
        sh->capacity++;
    }

    if (sh->capacity < 16) {
        return NGX_ERROR;
    }

    ngx_log_error(NGX_LOG_NOTICE, zone->shm.log, 0,
                  "tent: tent_mac_nonce_cache of %uzk holds %ui nonces, "
                  "%ui each for app and for follower keys",
                  zone->shm.size >> 10, sh->capacity, sh->capacity / 4);

    return NGX_OK;
}


/*
 * Drop the expired nonces at the heads of the queues: at most "max" of
 * each (bounded work under the lock), or all of them with 0.
 */

static void
ngx_http_tent_nonce_expire(ngx_http_tent_nonce_ctx_t *ctx, time_t now,
    ngx_uint_t max)
{
    ngx_uint_t              b, n;
    ngx_queue_t            *q;
    ngx_rbtree_node_t      *node;
    ngx_http_tent_nonce_t  *nc;

    for (b = 0; b < NGX_HTTP_TENT_NONCE_BUDGETS; b++) {

        for (n = 0; max == 0 || n < max; n++) {

            if (ngx_queue_empty(&ctx->sh->queue[b])) {
                break;
            }

            q = ngx_queue_head(&ctx->sh->queue[b]);
            nc = ngx_queue_data(q, ngx_http_tent_nonce_t, queue);

            if ((time_t) nc->expires > now) {
                break;
            }

            node = (ngx_rbtree_node_t *)
                       ((u_char *) nc - offsetof(ngx_rbtree_node_t, color));

            ngx_queue_remove(q);
            ngx_rbtree_delete(&ctx->sh->rbtree, node);
            ngx_queue_insert_head(&ctx->sh->free, q);
            ctx->sh->used[b]--;
        }
    }
}


/* the seconds until the first of these queues has a nonce expire */

static time_t
ngx_http_tent_nonce_wait(ngx_http_tent_nonce_sh_t *sh, ngx_uint_t budget,
    time_t now, time_t lifetime)
{
    time_t                  wait;
    ngx_uint_t              b;
    ngx_queue_t            *q;
    ngx_http_tent_nonce_t  *nc;

    wait = lifetime;

    for (b = 0; b < NGX_HTTP_TENT_NONCE_BUDGETS; b++) {

        if ((budget != NGX_HTTP_TENT_NONCE_BUDGETS && b != budget)
            || ngx_queue_empty(&sh->queue[b]))
        {
            continue;
        }

        q = ngx_queue_head(&sh->queue[b]);
        nc = ngx_queue_data(q, ngx_http_tent_nonce_t, queue);

        wait = ngx_min(wait, (time_t) nc->expires - now);
    }

    return ngx_max(wait, 1);
}


/*
 * NGX_OK: a new nonce, now remembered; NGX_DECLINED: seen before;
 * NGX_BUSY: no room for this budget, "retry" says for how long.  A
 * nonce is never forgotten before it expires.
 */

static ngx_int_t
ngx_http_tent_nonce_check(ngx_http_request_t *r, ngx_str_t *key,
    ngx_uint_t budget, time_t lifetime, time_t *retry)
{
    u_char                      md[EVP_MAX_MD_SIZE];
    time_t                      now;
    uint64_t                    d[2];
    ngx_uint_t                  limit, full, warn;
    unsigned int                md_len;
    ngx_queue_t                *q;
    ngx_rbtree_key_t            hash;
    ngx_rbtree_node_t          *node, *sentinel;
    ngx_http_tent_nonce_t      *nc;
    ngx_http_tent_nonce_sh_t   *sh;
    ngx_http_tent_nonce_ctx_t  *ctx;
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_tent_module);

    if (mcf->nonce_zone == NULL) {
        return NGX_ERROR;
    }

    if (EVP_Digest(key->data, key->len, md, &md_len, EVP_sha256(), NULL)
        != 1
        || md_len < sizeof(d))
    {
        return NGX_ERROR;
    }

    ngx_memcpy(d, md, sizeof(d));
    hash = (ngx_rbtree_key_t) d[0];

    ctx = mcf->nonce_zone->data;
    sh = ctx->sh;
    now = ngx_time();

    ngx_shmtx_lock(&ctx->shpool->mutex);

    ngx_http_tent_nonce_expire(ctx, now, 64);

    node = sh->rbtree.root;
    sentinel = sh->rbtree.sentinel;

    while (node != sentinel) {

        if (hash != node->key) {
            node = (hash < node->key) ? node->left : node->right;
            continue;
        }

        nc = (ngx_http_tent_nonce_t *) &node->color;

        if (d[1] == nc->digest) {
            ngx_shmtx_unlock(&ctx->shpool->mutex);
            return NGX_DECLINED;
        }

        node = (d[1] < nc->digest) ? node->left : node->right;
    }

    limit = (budget == NGX_HTTP_TENT_NONCE_OWNER) ? sh->capacity
                                                  : sh->capacity / 4;

    full = sh->used[budget] >= limit || ngx_queue_empty(&sh->free);

    if (full) {
        /* the bounded pass may have left expired ones: all of them now */

        ngx_http_tent_nonce_expire(ctx, now, 0);

        if (sh->used[budget] >= limit) {
            *retry = ngx_http_tent_nonce_wait(sh, budget, now, lifetime);
            goto busy;
        }

        if (ngx_queue_empty(&sh->free)) {
            *retry = ngx_http_tent_nonce_wait(sh,
                                              NGX_HTTP_TENT_NONCE_BUDGETS,
                                              now, lifetime);
            goto busy;
        }
    }

    q = ngx_queue_head(&sh->free);
    ngx_queue_remove(q);

    nc = ngx_queue_data(q, ngx_http_tent_nonce_t, queue);
    node = (ngx_rbtree_node_t *)
               ((u_char *) nc - offsetof(ngx_rbtree_node_t, color));

    node->key = hash;
    nc->expires = (uint32_t) (now + lifetime);
    nc->digest = d[1];

    ngx_rbtree_insert(&sh->rbtree, node);
    ngx_queue_insert_tail(&sh->queue[budget], &nc->queue);
    sh->used[budget]++;

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    return NGX_OK;

busy:

    /* once in 10 seconds per budget: a flood must not flood the log too */

    warn = (now - sh->warned[budget] >= 10);
    if (warn) {
        sh->warned[budget] = now;
    }

    ngx_shmtx_unlock(&ctx->shpool->mutex);

    if (warn) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent: the MAC nonce cache is full for %s keys, "
                      "refused for %T s; increase tent_mac_nonce_cache "
                      "if this is not an attack",
                      budget == NGX_HTTP_TENT_NONCE_APP ? "app"
                      : budget == NGX_HTTP_TENT_NONCE_FOLLOWER ? "follower"
                      : budget == NGX_HTTP_TENT_NONCE_FOLLOWING ? "following"
                      : "owner", *retry);
    }

    return NGX_BUSY;
}


/*
 * A counter every worker sees, bumped by each profile write: a worker's
 * cached profile is good while the counter has not moved.  It lives in
 * the nonce zone, which every worker maps anyway.
 */

static ngx_http_tent_nonce_sh_t *
ngx_http_tent_shared(ngx_cycle_t *cycle)
{
    ngx_http_tent_nonce_ctx_t  *ctx;
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_tent_module);

    if (mcf == NULL || mcf->nonce_zone == NULL) {
        return NULL;
    }

    ctx = mcf->nonce_zone->data;

    return ctx->sh;
}


ngx_atomic_uint_t
ngx_http_tent_generation(ngx_cycle_t *cycle)
{
    ngx_http_tent_nonce_sh_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    return sh ? sh->generation : 0;
}


void
ngx_http_tent_generation_bump(ngx_cycle_t *cycle)
{
    ngx_http_tent_nonce_sh_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    if (sh) {
        (void) ngx_atomic_fetch_add(&sh->generation, 1);
    }
}


static ngx_atomic_uint_t
ngx_http_tent_credential_generation(ngx_cycle_t *cycle)
{
    ngx_http_tent_nonce_sh_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    return sh ? sh->credentials : 0;
}


void
ngx_http_tent_credential_bump(ngx_cycle_t *cycle)
{
    ngx_http_tent_nonce_sh_t  *sh;

    sh = ngx_http_tent_shared(cycle);

    if (sh) {
        (void) ngx_atomic_fetch_add(&sh->credentials, 1);
    }
}


/* the slot of a credential row's key: entity and key id */

static ngx_http_tent_cred_slot_t *
ngx_http_tent_credential_slot(ngx_str_t *key, ngx_uint_t create)
{
    ngx_http_tent_cred_slot_t  *slots;
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                              ngx_http_tent_module);

    if (mcf->credentials == NULL) {
        if (!create) {
            return NULL;
        }

        mcf->credentials = ngx_calloc(NGX_HTTP_TENT_CRED_SLOTS
                                      * sizeof(ngx_http_tent_cred_slot_t),
                                      ngx_cycle->log);
        if (mcf->credentials == NULL) {
            return NULL;
        }
    }

    slots = mcf->credentials;

    return &slots[ngx_crc32_short(key->data, key->len)
                  % NGX_HTTP_TENT_CRED_SLOTS];
}


static json_t *
ngx_http_tent_credential_cached(ngx_http_tent_auth_state_t *st)
{
    ngx_http_tent_cred_slot_t  *slot;

    slot = ngx_http_tent_credential_slot(&st->key, 0);

    if (slot == NULL || slot->key == NULL
        || slot->generation != st->generation
        || ngx_time() - slot->stored > NGX_HTTP_TENT_CRED_MAX_AGE
        || slot->key_len != st->key.len
        || ngx_memcmp(slot->key, st->key.data, st->key.len) != 0)
    {
        return NULL;
    }

    return json_incref(slot->record);
}


/* the record, parsed: a cache hit costs no parse either */

static void
ngx_http_tent_credential_keep(ngx_http_tent_auth_state_t *st, json_t *cred,
    size_t size)
{
    u_char                     *p;
    ngx_http_tent_cred_slot_t  *slot;

    slot = ngx_http_tent_credential_slot(&st->key, 1);
    if (slot == NULL || size > 64 * 1024) {
        return;
    }

    p = ngx_alloc(st->key.len, ngx_cycle->log);
    if (p == NULL) {
        return;
    }

    ngx_memcpy(p, st->key.data, st->key.len);

    if (slot->key) {
        ngx_free(slot->key);
        json_decref(slot->record);
    }

    slot->key = p;
    slot->key_len = st->key.len;
    slot->record = json_incref(cred);
    slot->generation = st->generation;
    slot->stored = ngx_time();
}


/* at worker exit: the cache's memory */

void
ngx_http_tent_credential_cache_exit(ngx_http_tent_main_conf_t *mcf)
{
    ngx_uint_t                  i;
    ngx_http_tent_cred_slot_t  *slots;

    slots = mcf->credentials;

    if (slots == NULL) {
        return;
    }

    for (i = 0; i < NGX_HTTP_TENT_CRED_SLOTS; i++) {
        if (slots[i].key) {
            ngx_free(slots[i].key);
            json_decref(slots[i].record);
        }
    }

    ngx_free(slots);
    mcf->credentials = NULL;
}
