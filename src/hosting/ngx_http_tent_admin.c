
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The operator's location, "tent_admin;" (docs/admin.md): the entity
 * registry over HTTP, for bin/tent-admin.  Every request carries
 * "Authorization: Bearer <token>", the token of tent_admin_token_file,
 * compared in constant time (SHA-256 of both, CRYPTO_memcmp); anything
 * else is 401.  GET lists the registry; POST takes one JSON object:
 *
 *     {"action": "create", "entity": URL, "quotas": {...}}
 *     {"action": "disable" | "enable" | "delete", "entity": URL}
 *     {"action": "quotas", "entity": URL, "quotas": {...}}
 *     {"action": "authorize", "entity": URL, "app": APP ID}
 *     {"action": "credential", "entity": URL}
 *     {"action": "password", "entity": URL, "password": "..." | null}
 *
 * "authorize" gives an app the entity's owner authorization, every scope
 * and type (bin/tent-admin registers the app on the entity, POST /apps,
 * then asks this); "credential" makes an owner app and authorizes it
 * here, through this location only: a new owner credential of an entity
 * of the registry or a fixed one (ngx_http_tent_admin_write.c).
 *
 * Every write bumps the registry's generation, so the workers' caches
 * (ngx_http_tent_provision.c) and the delivery engine see it at once.
 * A delete first marks the row "deleting" (the entity answers 404 from
 * then on), then removes the entity's rows NGX_HTTP_TENT_ADMIN_BATCH at
 * a time, one batch a request: it answers {"done": false} until none is
 * left, then removes the registry row ({"done": true}).
 *
 * Here: the token, the request's body, the list and a create; the
 * actions on a registry row read are ngx_http_tent_admin_write.c's.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_domains.h"
#include "ngx_http_tent_admin_private.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_signin.h"
#include "ngx_http_tent_store.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>


#define NGX_HTTP_TENT_ADMIN_BODY_MAX  16384
#define NGX_HTTP_TENT_ADMIN_LIST      10000


static ngx_int_t ngx_http_tent_admin_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_tent_admin_authorized(ngx_http_request_t *r);
static void ngx_http_tent_admin_body(ngx_http_request_t *r);
static ngx_int_t ngx_http_tent_admin_post(ngx_http_request_t *r,
    ngx_http_tent_admin_t *a);
static ngx_int_t ngx_http_tent_admin_listed(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_admin_used(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_admin_ctx(ngx_http_request_t *r,
    ngx_http_tent_admin_t *a);
static ngx_int_t ngx_http_tent_admin_created(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_admin_wipe_later(ngx_pool_t *pool,
    json_t *body);
static ngx_int_t ngx_http_tent_admin_password(ngx_http_request_t *r,
    ngx_http_tent_admin_t *a);


char *
ngx_http_tent_admin_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    if (clcf->handler == ngx_http_tent_admin_handler) {
        return "is duplicate";
    }

    if (clcf->handler) {
        return "conflicts with another handler of the location "
               "(proxy_pass, return...)";
    }

    clcf->handler = ngx_http_tent_admin_handler;

    ngx_http_tent_handler_set(cf, (ngx_http_tent_loc_conf_t *) conf,
                              NGX_HTTP_TENT_HANDLER_ADMIN);

    return NGX_CONF_OK;
}


/* the token, read once at start: at least 16 visible characters */

char *
ngx_http_tent_admin_token_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_tent_loc_conf_t *lcf = conf;

    u_char           *p, *last;
    ssize_t           n;
    ngx_str_t        *value, token;
    ngx_file_t        file;
    ngx_uint_t        mode;
    ngx_file_info_t   fi;

    if (lcf->admin_token.data) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (ngx_conf_full_name(cf->cycle, &value[1], 1) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    ngx_memzero(&file, sizeof(ngx_file_t));
    file.name = value[1];
    file.log = cf->log;

    file.fd = ngx_open_file(value[1].data, NGX_FILE_RDONLY, NGX_FILE_OPEN, 0);
    if (file.fd == NGX_INVALID_FILE) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_open_file_n " \"%V\" failed", &value[1]);
        return NGX_CONF_ERROR;
    }

    /* a token others may read or write: said at start, not refused */

    if (ngx_fd_info(file.fd, &fi) == NGX_FILE_ERROR) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           ngx_fd_info_n " \"%V\" failed", &value[1]);
        ngx_close_file(file.fd);
        return NGX_CONF_ERROR;
    }

    mode = ngx_file_access(&fi);

    if (mode & 077) {

        /* in octal, as ls and chmod say it (nginx prints no %o) */

        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "the token file \"%V\" is open to others than "
                           "its owner (mode 0%ui%ui%ui): chmod 600 it",
                           &value[1], (ngx_uint_t) (mode >> 6) & 7,
                           (ngx_uint_t) (mode >> 3) & 7,
                           (ngx_uint_t) mode & 7);
    }

    p = ngx_pnalloc(cf->pool, 257);
    if (p == NULL) {
        ngx_close_file(file.fd);
        return NGX_CONF_ERROR;
    }

    n = ngx_read_file(&file, p, 257, 0);
    ngx_close_file(file.fd);

    if (n == NGX_ERROR) {
        return NGX_CONF_ERROR;
    }

    /* one line: a trailing newline is not part of the token */

    last = p + n;

    while (last > p && (last[-1] == '\n' || last[-1] == '\r')) {
        last--;
    }

    token.data = p;
    token.len = last - p;

    if (token.len < 16 || token.len > 256
        || ngx_http_tent_visible_valid(&token, 256) != NGX_OK)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "the token in \"%V\" must be one line of 16 to "
                           "256 visible characters", &value[1]);
        return NGX_CONF_ERROR;
    }

    lcf->admin_token = token;

    return NGX_CONF_OK;
}


/* "Authorization: Bearer <token>", compared in constant time */

static ngx_int_t
ngx_http_tent_admin_authorized(ngx_http_request_t *r)
{
    u_char                     a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
    ngx_str_t                  given;
    ngx_http_tent_loc_conf_t  *lcf;

    lcf = ngx_http_get_module_loc_conf(r, ngx_http_tent_module);

    if (lcf->admin_token.len == 0) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "tent admin: no \"tent_admin_token_file\" for this "
                      "location: every request is refused");
        return NGX_DECLINED;
    }

    if (r->headers_in.authorization == NULL) {
        return NGX_DECLINED;
    }

    given = r->headers_in.authorization->value;

    if (given.len < sizeof("Bearer ") - 1
        || ngx_strncasecmp(given.data, (u_char *) "Bearer ",
                           sizeof("Bearer ") - 1)
           != 0)
    {
        return NGX_DECLINED;
    }

    given.data += sizeof("Bearer ") - 1;
    given.len -= sizeof("Bearer ") - 1;

    SHA256(given.data, given.len, a);
    SHA256(lcf->admin_token.data, lcf->admin_token.len, b);

    if (CRYPTO_memcmp(a, b, SHA256_DIGEST_LENGTH) != 0) {
        return NGX_DECLINED;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_admin_handler(ngx_http_request_t *r)
{
    ngx_int_t                  rc;
    ngx_str_t                  start, end;
    ngx_table_elt_t           *h;
    ngx_http_tent_admin_t     *a;
    ngx_http_tent_store_op_t  *op;

    if (ngx_http_tent_admin_authorized(r) != NGX_OK) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent admin: a request without the operator's token");

        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }

        h = ngx_list_push(&r->headers_out.headers);
        if (h == NULL) {
            return ngx_http_tent_internal_error(r,
                                                "adding WWW-Authenticate");
        }

        h->hash = 1;
        ngx_str_set(&h->key, "WWW-Authenticate");
        ngx_str_set(&h->value, "Bearer");

        return ngx_http_tent_send_error(r, NGX_HTTP_UNAUTHORIZED,
                                        "Unauthorized");
    }

    if (r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD)) {
        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }

        if (r->args.len == 7
            && ngx_strncmp(r->args.data, "domains", 7) == 0)
        {
            return ngx_http_tent_domains_admin_list(r);
        }

        op = ngx_http_tent_store_op_create(r->pool, r->connection->log);
        a = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_admin_t));

        if (op == NULL || a == NULL
            || ngx_http_tent_admin_ctx(r, a) != NGX_OK
            || ngx_http_tent_registry_range(r->pool, &start, &end) != NGX_OK
            || ngx_http_tent_store_scan(op, &start, &end,
                                        NGX_HTTP_TENT_ADMIN_LIST, 0)
               != NGX_OK)
        {
            return ngx_http_tent_internal_error(r, "listing the registry");
        }

        return ngx_http_tent_store_submit_request(r, op,
                                                  ngx_http_tent_admin_listed);
    }

    if (r->method != NGX_HTTP_POST) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_ALLOWED,
                                        "Method Not Allowed");
    }

    if (r->headers_in.content_length_n > NGX_HTTP_TENT_ADMIN_BODY_MAX) {
        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }

        return ngx_http_tent_send_error(r, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                        "The body is too large");
    }

    r->request_body_in_single_buf = 1;

    rc = ngx_http_read_client_request_body(r, ngx_http_tent_admin_body);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


static void
ngx_http_tent_admin_body(ngx_http_request_t *r)
{
    json_t                 *body;
    ngx_int_t               rc;
    ngx_str_t               bytes;
    ngx_http_tent_admin_t  *a;

    a = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_admin_t));

    if (a == NULL || ngx_http_tent_body_bytes(r, &bytes) != NGX_OK) {
        ngx_http_finalize_request(r,
            ngx_http_tent_internal_error(r, "reading the operator's body"));
        return;
    }

    if (bytes.len > NGX_HTTP_TENT_ADMIN_BODY_MAX) {
        rc = ngx_http_tent_send_error(r, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                      "The body is too large");
        ngx_http_finalize_request(r, rc);
        return;
    }

    body = json_loadb((char *) bytes.data, bytes.len, JSON_REJECT_DUPLICATES,
                      NULL);

    /*
     * a password as sent stays nowhere: the body read is wiped whatever
     * it holds (parsed or not), the parsed string when the pool goes
     */

    ngx_http_tent_signin_wipe(r, &bytes);

    if (body == NULL || ngx_http_tent_json_cleanup(r->pool, body) != NGX_OK) {
        json_decref(body);
        rc = ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                      "The body must be a JSON object");
        ngx_http_finalize_request(r, rc);
        return;
    }

    /* after the decref's cleanup: run before it */

    if (ngx_http_tent_admin_wipe_later(r->pool, body) != NGX_OK) {
        ngx_http_finalize_request(r,
            ngx_http_tent_internal_error(r, "keeping the body's wipe"));
        return;
    }

    a->body = body;

    ngx_http_finalize_request(r, ngx_http_tent_admin_post(r, a));
}


static ngx_int_t
ngx_http_tent_admin_post(ngx_http_request_t *r, ngx_http_tent_admin_t *a)
{
    json_t                     *row, *quotas;
    ngx_str_t                   given, value;
    ngx_time_t                 *tp;
    ngx_http_tent_ctx_t        *ctx;
    ngx_http_tent_store_op_t   *op;
    const char                 *why;
    ngx_http_tent_main_conf_t  *mcf;

    /* the host-wide blocks of domains name no entity */

    if (json_is_object(a->body)
        && ngx_http_tent_json_str(a->body, "action", &a->action) == NGX_OK
        && ((a->action.len == 5
             && ngx_strncmp(a->action.data, "block", 5) == 0)
            || (a->action.len == 7
                && ngx_strncmp(a->action.data, "unblock", 7) == 0)))
    {
        return ngx_http_tent_domains_admin(r, a->body, &a->action);
    }

    if (!json_is_object(a->body)
        || ngx_http_tent_json_str(a->body, "action", &a->action) != NGX_OK
        || ngx_http_tent_json_str(a->body, "entity", &given) != NGX_OK)
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                   "The body must be an object with \"action\" and "
                   "\"entity\" strings");
    }

    quotas = json_object_get(a->body, "quotas");

    /* a password: hashed here, never kept nor logged as sent */

    if (ngx_http_tent_admin_password(r, a) != NGX_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                   "\"password\" must be a string of 8 to 1024 bytes, or "
                   "null (no sign-in)");
    }

    if (quotas && !json_is_object(quotas)) {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                        "\"quotas\" must be an object");
    }

    if (given.len > NGX_HTTP_TENT_ENTITY_MAX
        || ngx_http_tent_entity_canonical(r->pool, &given, &a->entity)
           != NGX_OK)
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                   "\"entity\" must be an http:// or https:// entity URL");
    }

    if (ngx_http_tent_registry_key(r->pool, &a->entity, &a->key) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "building the registry key");
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent admin: %V \"%V\"", &a->action, &a->entity);

    if (ngx_http_tent_admin_ctx(r, a) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "creating the ctx");
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_tent_module);

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);
    if (op == NULL) {
        return ngx_http_tent_internal_error(r, "creating the store op");
    }

    if (a->action.len == 6 && ngx_strncmp(a->action.data, "create", 6) == 0)
    {
        /*
         * a name no provisioning server of this nginx answers for, or a
         * URL its tent_entity cannot make (scheme, port): none
         */

        mcf = ngx_http_get_module_main_conf(r, ngx_http_tent_module);

        if (ngx_http_tent_provision_served(mcf, &a->entity, &why) != NGX_OK)
        {
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "tent admin: \"%V\" not created: %s",
                          &a->entity, why);
            return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                            (char *) why);
        }

        /*
         * Its incarnation tells this entity from one deleted before it
         * under the same name: the store fences a request's writes to
         * the one it looked up (docs/store.md)
         */

        tp = ngx_timeofday();

        row = json_pack("{s:s, s:I, s:I, s:{}}", "state", "active",
                        "created_at", (json_int_t) tp->sec,
                        "incarnation",
                        (json_int_t) tp->sec * 1000000
                        + (json_int_t) tp->msec * 1000
                        + (json_int_t) (ngx_random() % 1000),
                        "quotas");

        if (row == NULL
            || ngx_http_tent_json_cleanup(r->pool, row) != NGX_OK)
        {
            json_decref(row);
            return ngx_http_tent_internal_error(r, "making the row");
        }

        if (a->hash.len
            && json_object_set_new(row, "password",
                                   ngx_http_tent_json_string(&a->hash))
               != 0)
        {
            return ngx_http_tent_internal_error(r, "adding the password");
        }

        if (quotas && ngx_http_tent_admin_quotas(row, quotas) != NGX_OK) {
            return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                       "quotas are \"posts\", \"apps\", \"attachment_bytes\": "
                       "integers from 0, or null for unlimited");
        }

        a->row = row;

        if (ngx_http_tent_json_dump(r->pool, row, &value) != NGX_OK
            || ngx_http_tent_store_cas(op, &a->key, NULL, &value) != NGX_OK)
        {
            return ngx_http_tent_internal_error(r, "encoding the row");
        }

        return ngx_http_tent_store_submit_request(r, op,
                                                  ngx_http_tent_admin_created);
    }

    if (a->action.len == 10
        && ngx_strncmp(a->action.data, "credential", 10) == 0)
    {
        if (ngx_http_tent_store_get(op, &a->key) != NGX_OK) {
            return ngx_http_tent_internal_error(r, "encoding the read");
        }

        return ngx_http_tent_store_submit_request(r, op,
                                            ngx_http_tent_admin_cred_loaded);
    }

    if (a->action.len == 9
        && ngx_strncmp(a->action.data, "authorize", 9) == 0)
    {
        ctx->entity = a->entity;

        if (ngx_http_tent_json_str(a->body, "app", &a->app) != NGX_OK
            || ngx_http_tent_token_valid(&a->app, 64) != NGX_OK)
        {
            return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                            "\"app\" must be an app's id");
        }

        if (ngx_http_tent_key(r->pool, &a->entity, NGX_HTTP_TENT_TABLE_APP,
                              &a->app, &a->app_key)
            != NGX_OK
            || ngx_http_tent_store_get(op, &a->app_key) != NGX_OK)
        {
            return ngx_http_tent_internal_error(r, "encoding the read");
        }

        return ngx_http_tent_store_submit_request(r, op,
                                            ngx_http_tent_admin_app_loaded);
    }

    if (!((a->action.len == 7
           && (ngx_strncmp(a->action.data, "disable", 7) == 0))
          || (a->action.len == 8
              && ngx_strncmp(a->action.data, "password", 8) == 0
              && a->password_given)
          || (a->action.len == 6
              && (ngx_strncmp(a->action.data, "enable", 6) == 0
                  || ngx_strncmp(a->action.data, "delete", 6) == 0
                  || ngx_strncmp(a->action.data, "quotas", 6) == 0))))
    {
        return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                   "\"action\" must be create, disable, enable, delete, "
                   "quotas, password (with \"password\"), authorize or "
                   "credential");
    }

    if (ngx_http_tent_store_get(op, &a->key) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "encoding the read");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                              ngx_http_tent_admin_loaded);
}


/*
 * The module's ctx slot holds a Tent ctx in any server: ours is one
 * marked invalid (the filters leave the reply alone), "a" its state.
 */

static ngx_int_t
ngx_http_tent_admin_ctx(ngx_http_request_t *r, ngx_http_tent_admin_t *a)
{
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_tent_ctx_t));
    if (ctx == NULL) {
        return NGX_ERROR;
    }

    ctx->evaluated = 1;
    ctx->invalid = 1;
    ctx->state = a;
    ngx_http_set_ctx(r, ctx, ngx_http_tent_module);

    return NGX_OK;
}


/* {"posts": n, "apps": n, "attachment_bytes": n}, null: unlimited */

ngx_int_t
ngx_http_tent_admin_quotas(json_t *row, json_t *quotas)
{
    json_t      *q, *v;
    const char  *name;

    q = json_object_get(row, "quotas");
    if (!json_is_object(q)) {
        q = json_object();
        if (q == NULL || json_object_set_new(row, "quotas", q) != 0) {
            return NGX_ERROR;
        }
    }

    json_object_foreach(quotas, name, v) {
        if (ngx_strcmp(name, "posts") != 0 && ngx_strcmp(name, "apps") != 0
            && ngx_strcmp(name, "attachment_bytes") != 0)
        {
            return NGX_ERROR;
        }

        if (json_is_null(v)) {
            json_object_del(q, name);
            continue;
        }

        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            return NGX_ERROR;
        }

        if (json_object_set(q, name, v) != 0) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_admin_listed(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                    *list, *row;
    ngx_int_t                  rc;
    ngx_str_t                  key, value, entity;
    ngx_uint_t                 n;
    ngx_http_tent_admin_t     *a;
    ngx_http_tent_store_op_t  *uop;

    if (ngx_http_tent_store_request_ctx(r, op, &rc) == NULL) {
        return rc;
    }

    list = ngx_http_tent_json_own(r->pool, json_array());
    uop = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (list == NULL || uop == NULL
        || ngx_http_tent_store_mget(uop) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "listing");
    }

    n = 0;

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        if (ngx_http_tent_registry_parse(&key, &entity) != NGX_OK) {
            continue;
        }

        row = json_loadb((char *) value.data, value.len, 0, NULL);
        if (row == NULL) {
            continue;
        }

        json_object_set_new(row, "entity", ngx_http_tent_json_string(&entity));
        ngx_http_tent_admin_hide(row);

        if (json_array_append_new(list, row) != 0
            || ngx_http_tent_quota_use_keys(r->pool, &entity, uop) != NGX_OK)
        {
            return ngx_http_tent_internal_error(r, "listing");
        }

        n++;
    }

    if (n == 0) {
        return ngx_http_tent_send_json(r, NGX_HTTP_OK, list);
    }

    /* then their use, their counts in one read */

    a = ngx_http_tent_admin_get(r);
    a->row = list;

    return ngx_http_tent_store_submit_request(r, uop,
                                              ngx_http_tent_admin_used);
}


/* each entity's use beside its quotas: {"posts", "apps", ...} */

static ngx_int_t
ngx_http_tent_admin_used(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    json_t                 *use;
    size_t                  i;
    ngx_int_t               rc;
    ngx_http_tent_admin_t  *a;

    a = ngx_http_tent_admin_get(r);

    if (ngx_http_tent_store_request_ctx(r, op, &rc) == NULL) {
        return rc;
    }

    for (i = 0; i < json_array_size(a->row); i++) {
        use = ngx_http_tent_quota_use(op);
        if (use == NULL) {
            return ngx_http_tent_internal_error(r, "reading the counts");
        }

        json_object_set_new(json_array_get(a->row, i), "use", use);
    }

    return ngx_http_tent_send_json(r, NGX_HTTP_OK, a->row);
}


static ngx_int_t
ngx_http_tent_admin_created(ngx_http_request_t *r, ngx_http_tent_store_op_t *op)
{
    ngx_int_t               rc;
    ngx_http_tent_admin_t  *a;

    a = ngx_http_tent_admin_get(r);

    if (ngx_http_tent_store_request_ctx(r, op, &rc) == NULL) {
        return rc;
    }

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_CONFLICT,
                                        "The entity exists already");
    }

    ngx_http_tent_registry_bump((ngx_cycle_t *) ngx_cycle);

    ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                  "tent admin: entity \"%V\" created", &a->entity);

    json_object_set_new(a->row, "entity",
                        ngx_http_tent_json_string(&a->entity));
    ngx_http_tent_admin_hide(a->row);

    return ngx_http_tent_send_json(r, 201, a->row);
}


ngx_http_tent_admin_t *
ngx_http_tent_admin_get(ngx_http_request_t *r)
{
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_tent_module);

    return ctx->state;
}



/*
 * "password" of the body: a string hashed into a->hash (the plain text
 * wiped from the body), null: none.  NGX_ERROR: not one of these.
 */

static ngx_int_t
ngx_http_tent_admin_password(ngx_http_request_t *r, ngx_http_tent_admin_t *a)
{
    json_t     *pw;
    ngx_str_t   plain;

    pw = json_object_get(a->body, "password");

    if (pw == NULL) {
        return NGX_OK;
    }

    a->password_given = 1;

    if (json_is_null(pw)) {
        return NGX_OK;
    }

    if (!json_is_string(pw)) {
        return NGX_ERROR;
    }

    plain.data = (u_char *) json_string_value(pw);
    plain.len = json_string_length(pw);

    if (plain.len < NGX_HTTP_TENT_PASSWORD_MIN
        || plain.len > NGX_HTTP_TENT_PASSWORD_MAX
        || ngx_strlchr(plain.data, plain.data + plain.len, '\0'))
    {
        return NGX_ERROR;
    }

    if (ngx_http_tent_password_hash(r->pool, r->connection->log, &plain,
                                    &a->hash)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    ngx_explicit_memzero(plain.data, plain.len);
    json_object_del(a->body, "password");

    return NGX_OK;
}


static void
ngx_http_tent_admin_wipe(void *data)
{
    json_t  *pw;

    pw = json_object_get(data, "password");

    if (json_is_string(pw)) {
        ngx_explicit_memzero((void *) json_string_value(pw),
                             json_string_length(pw));
    }
}


/* the password of the parsed body wiped when the pool goes, on any path */

static ngx_int_t
ngx_http_tent_admin_wipe_later(ngx_pool_t *pool, json_t *body)
{
    ngx_pool_cleanup_t  *cln;

    cln = ngx_pool_cleanup_add(pool, 0);
    if (cln == NULL) {
        ngx_http_tent_admin_wipe(body);
        return NGX_ERROR;
    }

    cln->handler = ngx_http_tent_admin_wipe;
    cln->data = body;

    return NGX_OK;
}


/* a row as the operator sees it: whether a password is set, not its hash */

void
ngx_http_tent_admin_hide(json_t *row)
{
    json_t  *pw;

    pw = json_object_get(row, "password");

    json_object_set_new(row, "password_set",
                        json_boolean(json_is_string(pw)));
    json_object_del(row, "password");
}
