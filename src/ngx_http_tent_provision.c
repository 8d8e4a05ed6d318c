
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The entity registry as requests see it.  On a server with
 * "tent_provisioning on" (its tent_entity has variables: https://$host),
 * an entity exists once the operator created it: its registry row
 * "0x00 'R' <entity>" (docs/store.md) says active or disabled.  Every
 * request of such a server looks its entity up once, in the precontent
 * phase, before any route: an entity never created answers 404, a
 * disabled one 410, in JSON, and nothing of theirs is read or written.
 *
 * The lookups are cached by each worker, whole, until the registry's
 * generation in the shared zone moves (the operator's every write bumps
 * it, ngx_http_tent_admin.c): a request of a known entity costs no
 * store operation.  Entities not created are cached too (a flood of
 * made-up host names costs one read each, then the cache is emptied at
 * NGX_HTTP_TENT_REGISTRY_CACHED entries).
 */


#include "ngx_http_tent_module.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_REGISTRY_CACHED  10000


typedef struct {
    ngx_str_node_t                  sn;
    ngx_uint_t                      state;
    ngx_http_tent_quotas_t          quotas;
} ngx_http_tent_registry_entry_t;


/* a lookup in flight: the generation it began in */
typedef struct {
    ngx_atomic_uint_t               generation;
} ngx_http_tent_registry_wait_t;


/* this worker's cache */
static ngx_pool_t          *ngx_http_tent_registry_pool;
static ngx_rbtree_t         ngx_http_tent_registry_tree;
static ngx_rbtree_node_t    ngx_http_tent_registry_sentinel;
static ngx_atomic_uint_t    ngx_http_tent_registry_gen;
static ngx_uint_t           ngx_http_tent_registry_n;


static ngx_int_t ngx_http_tent_registry_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_http_tent_registry_entry_t *ngx_http_tent_registry_find(
    ngx_str_t *entity, ngx_log_t *log);
static void ngx_http_tent_registry_add(ngx_str_t *entity, ngx_uint_t state,
    ngx_http_tent_quotas_t *q, ngx_log_t *log);
static void ngx_http_tent_registry_set(ngx_http_tent_ctx_t *ctx,
    ngx_atomic_uint_t gen, ngx_pool_t *pool, ngx_uint_t state,
    ngx_http_tent_quotas_t *q);


/*
 * A registry row's value: {"state": "active"|"disabled"|"deleting",
 * "created_at": seconds, "incarnation": microseconds at its create,
 * "quotas": {"posts", "apps", "attachment_bytes"}}.
 * A row being deleted is no entity any more.
 */

ngx_int_t
ngx_http_tent_registry_row(ngx_str_t *value, ngx_uint_t *state,
    ngx_http_tent_quotas_t *q)
{
    json_t       *row, *quotas, *n;
    const char   *s;
    ngx_uint_t    i;
    static const char  *names[] = { "posts", "apps", "attachment_bytes" };

    ngx_memzero(q, sizeof(ngx_http_tent_quotas_t));

    for (i = 0; i < NGX_HTTP_TENT_QUOTAS; i++) {
        q->limit[i] = -1;
    }

    row = json_loadb((char *) value->data, value->len, 0, NULL);
    if (row == NULL) {
        return NGX_ERROR;
    }

    s = json_string_value(json_object_get(row, "state"));

    if (s && ngx_strcmp(s, "active") == 0) {
        *state = NGX_HTTP_TENT_REG_ACTIVE;

    } else if (s && ngx_strcmp(s, "disabled") == 0) {
        *state = NGX_HTTP_TENT_REG_DISABLED;

    } else {
        *state = NGX_HTTP_TENT_REG_ABSENT;
    }

    /* made anew under the same name: another incarnation (store.md) */

    n = json_object_get(row, "incarnation");
    if (!json_is_integer(n)) {
        n = json_object_get(row, "created_at");
    }

    if (json_is_integer(n) && json_integer_value(n) > 0) {
        q->incarnation = (uint64_t) json_integer_value(n);
    }

    quotas = json_object_get(row, "quotas");

    for (i = 0; i < NGX_HTTP_TENT_QUOTAS; i++) {
        n = json_object_get(quotas, names[i]);

        if (json_is_integer(n) && json_integer_value(n) >= 0) {
            q->limit[i] = json_integer_value(n);
        }
    }

    json_decref(row);

    return NGX_OK;
}


/*
 * In the precontent phase: the entity's state in ctx->registry, from
 * the cache or one store read.  NGX_DECLINED: go on (ctx says what was
 * found); NGX_DONE: the read is in flight, the phases run again after.
 */

ngx_int_t
ngx_http_tent_provision_check(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx)
{
    ngx_int_t                        rc;
    ngx_str_t                        key;
    ngx_http_tent_store_op_t        *op;
    ngx_http_tent_srv_conf_t        *scf;
    ngx_http_tent_registry_wait_t   *w;
    ngx_http_tent_registry_entry_t  *e;

    scf = ngx_http_get_module_srv_conf(r, ngx_http_tent_module);

    if (!scf->provisioning || ctx->registry != NGX_HTTP_TENT_REG_UNKNOWN) {
        return NGX_DECLINED;
    }

    e = ngx_http_tent_registry_find(&ctx->entity, r->connection->log);

    if (e) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "tent registry: \"%V\" is %ui (cached)",
                       &ctx->entity, e->state);
        ngx_http_tent_registry_set(ctx,
                                   ngx_http_tent_registry_generation(
                                       (ngx_cycle_t *) ngx_cycle),
                                   r->pool, e->state, &e->quotas);
        return NGX_DECLINED;
    }

    w = ngx_palloc(r->pool, sizeof(ngx_http_tent_registry_wait_t));
    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (w == NULL || op == NULL
        || ngx_http_tent_registry_key(r->pool, &ctx->entity, &key) != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        ctx->registry = NGX_HTTP_TENT_REG_FAILED;
        return NGX_DECLINED;
    }

    w->generation = ngx_http_tent_registry_generation((ngx_cycle_t *)
                                                      ngx_cycle);
    ctx->state = w;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent registry: reading \"%V\"", &ctx->entity);

    rc = ngx_http_tent_store_submit_request(r, op,
                                            ngx_http_tent_registry_loaded);

    if (rc != NGX_DONE) {
        ctx->state = NULL;
        ctx->registry = NGX_HTTP_TENT_REG_FAILED;
        return rc;
    }

    return NGX_DONE;
}


static ngx_int_t
ngx_http_tent_registry_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    ngx_str_t                       value;
    ngx_uint_t                      state;
    ngx_http_tent_ctx_t            *ctx;
    ngx_http_tent_quotas_t          q;
    ngx_http_tent_registry_wait_t  *w;

    ctx = ngx_http_get_module_ctx(r, ngx_http_tent_module);
    w = ctx->state;
    ctx->state = NULL;

    ngx_memzero(&q, sizeof(ngx_http_tent_quotas_t));
    q.limit[0] = -1;
    q.limit[1] = -1;
    q.limit[2] = -1;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        state = NGX_HTTP_TENT_REG_ABSENT;

    } else if (op->status != NGX_HTTP_TENT_STORE_OK
               || ngx_http_tent_store_value(op, &value) != NGX_OK
               || ngx_http_tent_registry_row(&value, &state, &q) != NGX_OK)
    {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "tent registry: reading \"%V\" failed (store status "
                      "%ui)", &ctx->entity, op->status);
        state = NGX_HTTP_TENT_REG_FAILED;

    } else {
        /* state set */
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent registry: \"%V\" is %ui", &ctx->entity, state);

    ngx_http_tent_registry_set(ctx, w->generation, r->pool, state, &q);

    /* cached only if no operator's write came meanwhile */

    if (state != NGX_HTTP_TENT_REG_FAILED
        && w->generation
           == ngx_http_tent_registry_generation((ngx_cycle_t *) ngx_cycle))
    {
        ngx_http_tent_registry_add(&ctx->entity, state, &q,
                                   r->connection->log);
    }

    /* the phases again, from the precontent one: now it knows */

    if (r->connection->error) {
        return NGX_HTTP_CLIENT_CLOSED_REQUEST;
    }

    r->write_event_handler = ngx_http_core_run_phases;
    ngx_http_core_run_phases(r);

    return NGX_DONE;
}


static void
ngx_http_tent_registry_set(ngx_http_tent_ctx_t *ctx, ngx_atomic_uint_t gen,
    ngx_pool_t *pool, ngx_uint_t state, ngx_http_tent_quotas_t *q)
{
    ngx_http_tent_quotas_t  *copy;

    ctx->registry = state;
    ctx->registry_gen = gen;
    ctx->registry_inc = q->incarnation;

    copy = ngx_palloc(pool, sizeof(ngx_http_tent_quotas_t));
    if (copy) {
        *copy = *q;
    }

    ctx->quotas = copy;
}


/* the cache, emptied when the generation moved */

static ngx_http_tent_registry_entry_t *
ngx_http_tent_registry_find(ngx_str_t *entity, ngx_log_t *log)
{
    ngx_atomic_uint_t  gen;

    gen = ngx_http_tent_registry_generation((ngx_cycle_t *) ngx_cycle);

    if (ngx_http_tent_registry_pool
        && (gen != ngx_http_tent_registry_gen
            || ngx_http_tent_registry_n >= NGX_HTTP_TENT_REGISTRY_CACHED))
    {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, log, 0,
                       "tent registry: the cache emptied");
        ngx_destroy_pool(ngx_http_tent_registry_pool);
        ngx_http_tent_registry_pool = NULL;
    }

    if (ngx_http_tent_registry_pool == NULL) {
        ngx_http_tent_registry_pool = ngx_create_pool(4096, ngx_cycle->log);
        if (ngx_http_tent_registry_pool == NULL) {
            return NULL;
        }

        ngx_rbtree_init(&ngx_http_tent_registry_tree,
                        &ngx_http_tent_registry_sentinel,
                        ngx_str_rbtree_insert_value);
        ngx_http_tent_registry_gen = gen;
        ngx_http_tent_registry_n = 0;
        return NULL;
    }

    return (ngx_http_tent_registry_entry_t *)
           ngx_str_rbtree_lookup(&ngx_http_tent_registry_tree, entity,
                                 ngx_crc32_long(entity->data, entity->len));
}


static void
ngx_http_tent_registry_add(ngx_str_t *entity, ngx_uint_t state,
    ngx_http_tent_quotas_t *q, ngx_log_t *log)
{
    ngx_http_tent_registry_entry_t  *e;

    if (ngx_http_tent_registry_pool == NULL
        || ngx_str_rbtree_lookup(&ngx_http_tent_registry_tree, entity,
                                 ngx_crc32_long(entity->data, entity->len)))
    {
        return;
    }

    e = ngx_palloc(ngx_http_tent_registry_pool,
                   sizeof(ngx_http_tent_registry_entry_t) + entity->len);
    if (e == NULL) {
        return;
    }

    e->sn.str.len = entity->len;
    e->sn.str.data = (u_char *) (e + 1);
    ngx_memcpy(e->sn.str.data, entity->data, entity->len);
    e->sn.node.key = ngx_crc32_long(entity->data, entity->len);
    e->state = state;
    e->quotas = *q;

    ngx_rbtree_insert(&ngx_http_tent_registry_tree, &e->sn.node);
    ngx_http_tent_registry_n++;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, log, 0,
                   "tent registry: cached \"%V\" as %ui", entity, state);
}


/* the content handler of a request to an entity that is not there */

ngx_int_t
ngx_http_tent_provision_refuse(ngx_http_request_t *r)
{
    ngx_int_t             rc;
    ngx_http_tent_ctx_t  *ctx;

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    ctx = ngx_http_get_module_ctx(r, ngx_http_tent_module);

    switch (ctx ? ctx->registry : NGX_HTTP_TENT_REG_FAILED) {

    case NGX_HTTP_TENT_REG_ABSENT:
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                        "No such entity on this server");

    case NGX_HTTP_TENT_REG_DISABLED:
        return ngx_http_tent_send_error(r, 410, "This entity is disabled");

    default:
        return ngx_http_tent_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                        NULL);
    }
}
