
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
 * store operation.  Entities not created are cached too, apart and in
 * fewer entries (a flood of made-up host names costs one read each and
 * pushes out only names not found, never the entities): both caches are
 * bounded, the entries least asked for going first.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_REGISTRY_CACHED  8192    /* found, in a half */
#define NGX_HTTP_TENT_REGISTRY_ABSENT  1024    /* not found, in a half */
#define NGX_HTTP_TENT_REGISTRY_NAME_MAX  300   /* cached when not found */


typedef struct {
    ngx_str_node_t                  sn;
    ngx_uint_t                      state;
    ngx_http_tent_quotas_t          quotas;
} ngx_http_tent_registry_entry_t;


/* a lookup in flight: the generation it began in */
typedef struct {
    ngx_atomic_uint_t               generation;
} ngx_http_tent_registry_wait_t;


/* half of a cache: its entries in a pool of their own */
typedef struct {
    ngx_pool_t                     *pool;
    ngx_rbtree_t                    tree;
    ngx_rbtree_node_t               sentinel;
    ngx_uint_t                      n;
} ngx_http_tent_registry_half_t;

typedef struct {
    ngx_http_tent_registry_half_t   half[2];
    ngx_uint_t                      cur;         /* the newer half */
    ngx_uint_t                      max;         /* entries in a half */
    const char                     *name;
} ngx_http_tent_registry_cache_t;


/* this worker's caches */
static ngx_http_tent_registry_cache_t  ngx_http_tent_registry_found = {
    { { NULL } }, 0, NGX_HTTP_TENT_REGISTRY_CACHED, "found"
};
static ngx_http_tent_registry_cache_t  ngx_http_tent_registry_absent = {
    { { NULL } }, 0, NGX_HTTP_TENT_REGISTRY_ABSENT, "not found"
};
static ngx_atomic_uint_t    ngx_http_tent_registry_gen;


static ngx_int_t ngx_http_tent_registry_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_http_tent_registry_entry_t *ngx_http_tent_registry_find(
    ngx_str_t *entity, ngx_log_t *log);
static void ngx_http_tent_registry_add(ngx_str_t *entity, ngx_uint_t state,
    ngx_http_tent_quotas_t *q, ngx_log_t *log);
static ngx_http_tent_registry_entry_t *ngx_http_tent_registry_put(
    ngx_http_tent_registry_cache_t *c,
    ngx_str_t *entity, uint32_t hash, ngx_uint_t state,
    ngx_http_tent_quotas_t *q, ngx_log_t *log);
static void ngx_http_tent_registry_set(ngx_http_tent_ctx_t *ctx,
    ngx_atomic_uint_t gen, ngx_pool_t *pool, ngx_uint_t state,
    ngx_http_tent_quotas_t *q);
static ngx_int_t ngx_http_tent_provision_makes(
    ngx_http_tent_srv_conf_t *scf, ngx_str_t *entity, ngx_str_t *port,
    const char **why);


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


/*
 * The cache, emptied when the generation moved.  Two of them, so that a
 * flood of made-up names never pushes the entities out: the names found
 * (active or disabled) and those not, each bounded.  Each is two halves
 * in pools of their own: entries go into the newer; when it is full the
 * older is dropped and the newer becomes the older.  A lookup that finds
 * an entry in the older copies it to the newer, so the names asked for
 * stay; at most twice "max" entries either way.
 */

static void
ngx_http_tent_registry_flush(ngx_http_tent_registry_cache_t *c)
{
    ngx_uint_t  i;

    for (i = 0; i < 2; i++) {
        if (c->half[i].pool) {
            ngx_destroy_pool(c->half[i].pool);
            c->half[i].pool = NULL;
        }

        c->half[i].n = 0;
    }
}


static ngx_http_tent_registry_entry_t *
ngx_http_tent_registry_lookup(ngx_http_tent_registry_cache_t *c,
    ngx_str_t *entity, uint32_t hash, ngx_log_t *log)
{
    ngx_uint_t                       i, state;
    ngx_http_tent_quotas_t           q;
    ngx_http_tent_registry_half_t   *h;
    ngx_http_tent_registry_entry_t  *e;

    for (i = 0; i < 2; i++) {
        h = &c->half[i == 0 ? c->cur : 1 - c->cur];

        if (h->pool == NULL) {
            continue;
        }

        e = (ngx_http_tent_registry_entry_t *)
            ngx_str_rbtree_lookup(&h->tree, entity, hash);

        if (e == NULL) {
            continue;
        }

        /* found in the older half: kept, in the newer (which may drop it) */

        if (i == 1) {
            state = e->state;
            q = e->quotas;
            e = ngx_http_tent_registry_put(c, entity, hash, state, &q, log);
        }

        return e;
    }

    return NULL;
}


static ngx_http_tent_registry_entry_t *
ngx_http_tent_registry_put(ngx_http_tent_registry_cache_t *c,
    ngx_str_t *entity, uint32_t hash, ngx_uint_t state,
    ngx_http_tent_quotas_t *q, ngx_log_t *log)
{
    ngx_http_tent_registry_half_t   *h;
    ngx_http_tent_registry_entry_t  *e;

    h = &c->half[c->cur];

    if (h->n >= c->max) {
        c->cur = 1 - c->cur;
        h = &c->half[c->cur];

        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, log, 0,
                       "tent registry: the cache of names %s is full "
                       "(%ui): its older %ui dropped", c->name, c->max,
                       h->n);

        if (h->pool) {
            ngx_destroy_pool(h->pool);
            h->pool = NULL;
        }

        h->n = 0;
    }

    if (h->pool == NULL) {
        h->pool = ngx_create_pool(4096, ngx_cycle->log);
        if (h->pool == NULL) {
            return NULL;
        }

        ngx_rbtree_init(&h->tree, &h->sentinel,
                        ngx_str_rbtree_insert_value);

    } else {
        e = (ngx_http_tent_registry_entry_t *)
            ngx_str_rbtree_lookup(&h->tree, entity, hash);
        if (e) {
            return e;
        }
    }

    e = ngx_palloc(h->pool,
                   sizeof(ngx_http_tent_registry_entry_t) + entity->len);
    if (e == NULL) {
        return NULL;
    }

    e->sn.str.len = entity->len;
    e->sn.str.data = (u_char *) (e + 1);
    ngx_memcpy(e->sn.str.data, entity->data, entity->len);
    e->sn.node.key = hash;
    e->state = state;
    e->quotas = *q;

    ngx_rbtree_insert(&h->tree, &e->sn.node);
    h->n++;

    ngx_log_debug5(NGX_LOG_DEBUG_HTTP, log, 0,
                   "tent registry: cached \"%V\" as %ui (names %s: %ui "
                   "and %ui older)", entity, state, c->name, h->n,
                   c->half[1 - c->cur].n);

    return e;
}


static ngx_http_tent_registry_entry_t *
ngx_http_tent_registry_find(ngx_str_t *entity, ngx_log_t *log)
{
    uint32_t                         hash;
    ngx_atomic_uint_t                gen;
    ngx_http_tent_registry_entry_t  *e;

    gen = ngx_http_tent_registry_generation((ngx_cycle_t *) ngx_cycle);

    if (gen != ngx_http_tent_registry_gen) {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, log, 0,
                       "tent registry: the cache emptied");
        ngx_http_tent_registry_flush(&ngx_http_tent_registry_found);
        ngx_http_tent_registry_flush(&ngx_http_tent_registry_absent);
        ngx_http_tent_registry_gen = gen;
        return NULL;
    }

    hash = ngx_crc32_long(entity->data, entity->len);

    e = ngx_http_tent_registry_lookup(&ngx_http_tent_registry_found, entity,
                                      hash, log);
    if (e) {
        return e;
    }

    return ngx_http_tent_registry_lookup(&ngx_http_tent_registry_absent,
                                         entity, hash, log);
}


static void
ngx_http_tent_registry_add(ngx_str_t *entity, ngx_uint_t state,
    ngx_http_tent_quotas_t *q, ngx_log_t *log)
{
    ngx_http_tent_registry_cache_t  *c;

    /*
     * A name not found longer than any DNS name (253) with its scheme and
     * port is a made-up one: not cached, so 2048 of them cannot hold 16 MB
     * of anonymous Host headers; each costs its read, as the first does.
     */

    if (state == NGX_HTTP_TENT_REG_ABSENT
        && entity->len > NGX_HTTP_TENT_REGISTRY_NAME_MAX)
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, log, 0,
                       "tent registry: a name not found of %uz bytes: "
                       "not cached", entity->len);
        return;
    }

    c = (state == NGX_HTTP_TENT_REG_ABSENT) ? &ngx_http_tent_registry_absent
                                            : &ngx_http_tent_registry_found;

    (void) ngx_http_tent_registry_put(c, entity,
                                      ngx_crc32_long(entity->data,
                                                     entity->len),
                                      state, q, log);
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


/*
 * The provisioning server that serves "host" (no port), as nginx picks
 * among their server_names: an exact name first, then the longest
 * "*.example" or ".example", then the longest "www.*", then the first
 * regular expression that matches; NULL when none does.  The delivery
 * engine gives a registry entity its server's conf; the operator's
 * create refuses a name no provisioning server serves.
 */

ngx_http_tent_srv_conf_t *
ngx_http_tent_provision_server(ngx_http_tent_main_conf_t *mcf,
    ngx_str_t *host)
{
    size_t                      len, lead, trail;
    ngx_str_t                  *name;
    ngx_uint_t                  i, j;
    ngx_http_tent_srv_conf_t  **scfp, *leading, *trailing;
#if (NGX_PCRE)
    ngx_int_t                   rc;
    ngx_regex_t               **re;
#endif

    scfp = mcf->provision_confs.elts;
    leading = NULL;
    trailing = NULL;
    lead = 0;
    trail = 0;

    for (i = 0; i < mcf->provision_confs.nelts; i++) {
        if (scfp[i]->names == NULL) {
            continue;
        }

        for (j = 0; j < scfp[i]->names->nelts; j++) {
            name = (ngx_str_t *) scfp[i]->names->elts + j;
            len = name->len;

            if (len == 0 || name->data[0] == '~') {
                continue;
            }

            if (len == host->len
                && ngx_strncasecmp(name->data, host->data, len) == 0)
            {
                return scfp[i];
            }

            /* "*.example": a name below; ".example": it or below */

            if (len > 1 && (name->data[0] == '*' || name->data[0] == '.')) {
                if (name->data[0] == '*') {
                    if (host->len < len
                        || ngx_strncasecmp(host->data + host->len
                                           - (len - 1),
                                           name->data + 1, len - 1)
                           != 0)
                    {
                        continue;
                    }

                } else if (!((host->len == len - 1
                              && ngx_strncasecmp(host->data, name->data + 1,
                                                 len - 1) == 0)
                             || (host->len > len
                                 && ngx_strncasecmp(host->data + host->len
                                                    - len,
                                                    name->data, len)
                                    == 0)))
                {
                    continue;
                }

                if (len > lead) {
                    lead = len;
                    leading = scfp[i];
                }

                continue;
            }

            /* "www.*" */

            if (len > 2 && name->data[len - 1] == '*'
                && name->data[len - 2] == '.'
                && host->len >= len
                && ngx_strncasecmp(host->data, name->data, len - 1) == 0
                && len > trail)
            {
                trail = len;
                trailing = scfp[i];
            }
        }
    }

    if (leading || trailing) {
        return leading ? leading : trailing;
    }

#if (NGX_PCRE)

    /* then the regular expressions, in the order of the configuration */

    for (i = 0; i < mcf->provision_confs.nelts; i++) {
        if (scfp[i]->regexes == NULL) {
            continue;
        }

        re = scfp[i]->regexes->elts;

        for (j = 0; j < scfp[i]->regexes->nelts; j++) {
            rc = ngx_regex_exec(re[j], host, NULL, 0);

            if (rc >= 0) {
                return scfp[i];
            }

            if (rc != NGX_REGEX_NO_MATCHED) {
                ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, 0,
                              ngx_regex_exec_n " failed: %i on \"%V\"",
                              rc, host);
            }
        }
    }

#endif

    return NULL;
}


/*
 * Is an entity URL's host name one a provisioning server serves?  For the
 * operator's create: a name no server answers for would be an entity no
 * request reaches (and the delivery engine would give it the first
 * server's conf).  A regular expression among the names serves the
 * names it matches, as nginx tries it.
 */

ngx_int_t
ngx_http_tent_provision_served(ngx_http_tent_main_conf_t *mcf,
    ngx_str_t *entity, const char **why)
{
    u_char                    *p, *last;
    ngx_str_t                  host, port;
    ngx_http_tent_srv_conf_t  *scf;

    *why = "No provisioning server of this nginx serves the entity's "
           "host name";

    p = ngx_strlcasestrn(entity->data, entity->data + entity->len,
                         (u_char *) "://", 3 - 1);
    if (p == NULL) {
        return NGX_DECLINED;
    }

    host.data = p + 3;
    last = ngx_strlchr(host.data, entity->data + entity->len, '/');
    host.len = (last ? last : entity->data + entity->len) - host.data;

    ngx_str_null(&port);

    p = ngx_strlchr(host.data, host.data + host.len, ':');
    if (p && host.len && host.data[0] != '[') {
        port.data = p + 1;
        port.len = host.data + host.len - port.data;
        host.len = p - host.data;

    } else if (host.len && host.data[0] == '[') {

        /* "[::1]:8080": the port after the bracket */

        p = ngx_strlchr(host.data, host.data + host.len, ']');
        if (p && p + 1 < host.data + host.len && p[1] == ':') {
            port.data = p + 2;
            port.len = host.data + host.len - port.data;
        }
    }

    scf = ngx_http_tent_provision_server(mcf, &host);
    if (scf == NULL) {
        return NGX_DECLINED;
    }

    return ngx_http_tent_provision_makes(scf, entity, &port, why);
}


/*
 * Can the server's tent_entity make this URL?  Its scheme and its port,
 * where the template says them literally ("http://$host:7610"), must be
 * the URL's: an entity no request to the server evaluates to would be
 * served under another name.  A port of a variable ($http_host, a
 * $server_port) is not checked.  The canonical URL has no default port.
 */

static ngx_int_t
ngx_http_tent_provision_makes(ngx_http_tent_srv_conf_t *scf,
    ngx_str_t *entity, ngx_str_t *port, const char **why)
{
    u_char     *p, *s, *last, *colon;
    ngx_str_t   tpl, auth, want;

    if (scf->entity == NULL) {
        return NGX_OK;
    }

    tpl = scf->entity->value;
    last = tpl.data + tpl.len;

    p = ngx_strlcasestrn(tpl.data, last, (u_char *) "://", 3 - 1);
    if (p == NULL || ngx_strlchr(tpl.data, p, '$')) {
        return NGX_OK;
    }

    if ((size_t) (p - tpl.data) + 3 > entity->len
        || ngx_strncasecmp(entity->data, tpl.data, p - tpl.data + 3) != 0)
    {
        *why = "The provisioning server's tent_entity makes URLs of "
               "another scheme";
        return NGX_DECLINED;
    }

    auth.data = p + 3;
    s = ngx_strlchr(auth.data, last, '/');
    auth.len = (s ? s : last) - auth.data;

    /* the port as the template says it: after its last ':' */

    colon = NULL;

    for (s = auth.data; s < auth.data + auth.len; s++) {
        if (*s == ':') {
            colon = s;
        }
    }

    if (colon) {
        want.data = colon + 1;
        want.len = auth.data + auth.len - want.data;

        if (want.len == 0 || ngx_strlchr(want.data, want.data + want.len, '$')
            || ngx_atoi(want.data, want.len) == NGX_ERROR)
        {
            return NGX_OK;
        }

        /* a default port is not in the canonical URL */

        if ((want.len == 2 && ngx_strncmp(want.data, "80", 2) == 0
             && tpl.data[4] == ':')
            || (want.len == 3 && ngx_strncmp(want.data, "443", 3) == 0
                && tpl.data[4] == 's'))
        {
            ngx_str_null(&want);
        }

    } else {

        /* no port: only names without one ($host, $server_name, text) */

        if (ngx_strlchr(auth.data, auth.data + auth.len, '$')
            && !(auth.len == 5 && ngx_strncmp(auth.data, "$host", 5) == 0)
            && !(auth.len == 12
                 && ngx_strncmp(auth.data, "$server_name", 12) == 0))
        {
            return NGX_OK;
        }

        ngx_str_null(&want);
    }

    if (want.len != port->len
        || ngx_strncmp(want.data, port->data, want.len) != 0)
    {
        *why = "The provisioning server's tent_entity makes URLs of "
               "another port";
        return NGX_DECLINED;
    }

    return NGX_OK;
}
