
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The delivery engine's entities: the fixed ones (tent_entity without
 * variables, found at start) and, with tent_provisioning, the active
 * entities of the registry (docs/admin.md).  The registry is read again
 * when its generation in the shared zone moved (the operator created or
 * enabled one) and at the once-a-minute pass; each new active entity is
 * appended to mcf->entity_confs, this worker's copy, with a server conf
 * of its own: its provisioning server's (the one whose server_name
 * matches its host; the first such server when none does) with the
 * entity's parts worked out as a fixed entity's, so the engine and
 * same-node delivery treat it as one.
 *
 * The list only grows, and within room made at start
 * (NGX_HTTP_TENT_PROVISIONED_MAX): the engine's tasks keep pointers into
 * it and index its per-entity arrays by place.  An entity disabled or
 * deleted stays in it until the next reload: its scans find no new
 * outbox rows (a disabled entity cannot post; a deleted one has no
 * rows), while the jobs of a disabled one already queued still go.
 *
 * Which of them are active now is kept too, by place: same-node
 * delivery writes into a registry entity only when the engine's last
 * read of the registry is of its current generation and found it
 * active; otherwise the job goes over HTTP, where the registry check
 * answers 404 or 410 as for any sender (a disabled or deleting entity
 * gets no copies written behind the operator's back).
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_module.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_PROVISIONED_MAX  10000


static ngx_atomic_uint_t  ngx_http_tent_entities_gen;
static ngx_uint_t         ngx_http_tent_entities_busy;
static ngx_uint_t         ngx_http_tent_entities_read;
static ngx_uint_t         ngx_http_tent_entities_warned;
static ngx_uint_t         ngx_http_tent_entities_fixed;
static u_char            *ngx_http_tent_entities_active;


static void ngx_http_tent_entities_scanned(ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_entities_add(ngx_http_tent_delivery_t *dl,
    ngx_str_t *entity);
static ngx_http_tent_srv_conf_t *ngx_http_tent_entities_server(
    ngx_http_tent_main_conf_t *mcf, ngx_str_t *host);


/* at the engine's start, before anything points into the list: room */

ngx_int_t
ngx_http_tent_delivery_entities_init(ngx_cycle_t *cycle,
    ngx_http_tent_main_conf_t *mcf)
{
    ngx_array_t  *a;

    if (!mcf->provisioning) {
        return NGX_OK;
    }

    a = ngx_array_create(cycle->pool,
                         mcf->entity_confs.nelts
                         + NGX_HTTP_TENT_PROVISIONED_MAX,
                         sizeof(ngx_http_tent_entity_conf_t));
    if (a == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(a->elts, mcf->entity_confs.elts,
               mcf->entity_confs.nelts * sizeof(ngx_http_tent_entity_conf_t));
    a->nelts = mcf->entity_confs.nelts;

    mcf->entity_confs = *a;

    /* by place: 1 if the last read of the registry found it active */

    ngx_http_tent_entities_fixed = a->nelts;
    ngx_http_tent_entities_active = ngx_pcalloc(cycle->pool, a->nalloc);
    if (ngx_http_tent_entities_active == NULL) {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* from the engine's tick: the registry again when it moved, or "always" */

void
ngx_http_tent_delivery_entities_refresh(ngx_http_tent_delivery_t *dl,
    ngx_uint_t always)
{
    ngx_str_t                  start, end;
    ngx_pool_t                *pool;
    ngx_atomic_uint_t          gen;
    ngx_http_tent_store_op_t  *op;

    if (!dl->mcf->provisioning || ngx_http_tent_entities_busy) {
        return;
    }

    gen = ngx_http_tent_registry_generation((ngx_cycle_t *) ngx_cycle);

    if (ngx_http_tent_entities_read && gen == ngx_http_tent_entities_gen
        && !always)
    {
        return;
    }

    pool = ngx_create_pool(4096, dl->log);
    if (pool == NULL) {
        return;
    }

    op = ngx_http_tent_store_op_create(pool, dl->log);

    if (op == NULL
        || ngx_http_tent_registry_range(pool, &start, &end) != NGX_OK
        || ngx_http_tent_store_scan(op, &start, &end,
                                    NGX_HTTP_TENT_PROVISIONED_MAX, 0)
           != NGX_OK)
    {
        ngx_destroy_pool(pool);
        return;
    }

    op->handler = ngx_http_tent_entities_scanned;
    op->data = dl;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: reading the registry (generation %uA)",
                   gen);

    if (ngx_http_tent_store_submit(op) != NGX_OK) {
        ngx_destroy_pool(pool);
        return;
    }

    ngx_http_tent_entities_busy = 1;
    ngx_http_tent_entities_gen = gen;
}


static void
ngx_http_tent_entities_scanned(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_delivery_t *dl = op->data;

    ngx_str_t               key, value, entity;
    ngx_uint_t              state, added;
    ngx_http_tent_quotas_t  q;

    ngx_http_tent_entities_busy = 0;
    added = 0;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                       "tent delivery: the registry not read (store status "
                       "%ui): later", op->status);
        ngx_http_tent_entities_gen--;
        ngx_destroy_pool(op->pool);
        return;
    }

    ngx_http_tent_entities_read = 1;

    /* none active but those this read finds so */

    if (dl->mcf->entity_confs.nelts > ngx_http_tent_entities_fixed) {
        ngx_memzero(ngx_http_tent_entities_active
                    + ngx_http_tent_entities_fixed,
                    dl->mcf->entity_confs.nelts
                    - ngx_http_tent_entities_fixed);
    }

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        if (ngx_http_tent_registry_parse(&key, &entity) != NGX_OK
            || ngx_http_tent_registry_row(&value, &state, &q) != NGX_OK
            || state != NGX_HTTP_TENT_REG_ACTIVE)
        {
            continue;
        }

        if (ngx_http_tent_entities_add(dl, &entity) == NGX_OK) {
            added++;
        }
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: %ui entities added from the registry, "
                   "%ui in all", added, dl->mcf->entity_confs.nelts);

    ngx_destroy_pool(op->pool);
}


/* NGX_OK: added; NGX_DECLINED: there already, or no room */

static ngx_int_t
ngx_http_tent_entities_add(ngx_http_tent_delivery_t *dl, ngx_str_t *entity)
{
    u_char                       *p, *host, *last;
    ngx_str_t                     h;
    ngx_uint_t                    i, n;
    ngx_pool_t                   *pool;
    ngx_http_tent_ctx_t          *fixed;
    ngx_http_tent_srv_conf_t     *scf, *own;
    ngx_http_tent_entity_conf_t  *ents, *ent;

    ents = dl->mcf->entity_confs.elts;
    n = dl->mcf->entity_confs.nelts;

    for (i = 0; i < n; i++) {
        if (ents[i].entity.len == entity->len
            && ngx_strncmp(ents[i].entity.data, entity->data, entity->len)
               == 0)
        {
            ngx_http_tent_entities_active[i] = 1;
            return NGX_DECLINED;
        }
    }

    if (n >= dl->mcf->entity_confs.nalloc) {
        if (!ngx_http_tent_entities_warned) {
            ngx_http_tent_entities_warned = 1;
            ngx_log_error(NGX_LOG_WARN, dl->log, 0,
                          "tent delivery: more than %d provisioned "
                          "entities: the others get no delivery until a "
                          "reload", NGX_HTTP_TENT_PROVISIONED_MAX);
        }

        return NGX_DECLINED;
    }

    /* the entity's parts: "scheme://host[:port]", the root "/" */

    p = ngx_strlcasestrn(entity->data, entity->data + entity->len,
                         (u_char *) "://", 3 - 1);
    if (p == NULL) {
        return NGX_DECLINED;
    }

    host = p + 3;
    last = ngx_strlchr(host, entity->data + entity->len, '/');
    if (last == NULL) {
        last = entity->data + entity->len;
    }

    h.data = host;
    h.len = last - host;

    p = ngx_strlchr(h.data, h.data + h.len, ':');
    if (p && h.data[0] != '[') {
        h.len = p - h.data;
    }

    scf = ngx_http_tent_entities_server(dl->mcf, &h);
    if (scf == NULL) {
        return NGX_DECLINED;
    }

    pool = ngx_cycle->pool;

    own = ngx_palloc(pool, sizeof(ngx_http_tent_srv_conf_t));
    fixed = ngx_pcalloc(pool, sizeof(ngx_http_tent_ctx_t));

    /* the entity, "/", then the profile URL: its origin and the path */

    p = ngx_pnalloc(pool, entity->len + 1 + (last - entity->data)
                          + scf->api_root.len + sizeof("/profile") - 1);

    if (own == NULL || fixed == NULL || p == NULL) {
        return NGX_DECLINED;
    }

    *own = *scf;

    fixed->entity.data = p;
    fixed->entity.len = entity->len;
    p = ngx_cpymem(p, entity->data, entity->len);

    fixed->origin.data = fixed->entity.data;
    fixed->origin.len = last - entity->data;

    *p++ = '/';
    fixed->root_path.data = p - 1;
    fixed->root_path.len = 1;

    fixed->profile_url.data = p;
    fixed->profile_url.len = fixed->origin.len + scf->api_root.len
                             + sizeof("/profile") - 1;
    p = ngx_cpymem(p, fixed->origin.data, fixed->origin.len);
    p = ngx_cpymem(p, scf->api_root.data, scf->api_root.len);
    ngx_memcpy(p, "/profile", sizeof("/profile") - 1);

    own->fixed = fixed;

    ent = ngx_array_push(&dl->mcf->entity_confs);
    if (ent == NULL) {
        return NGX_DECLINED;
    }

    ent->entity = fixed->entity;
    ent->scf = own;
    ngx_http_tent_entities_active[n] = 1;

    /* a new entity's outbox is looked at once, its due jobs from the start */

    dl->outbox[n] = 1;
    dl->hashes[n] = ngx_crc32_short(ent->entity.data, ent->entity.len)
                    % NGX_HTTP_TENT_OUTBOX_MARKS;
    ngx_memzero(&dl->cursors[n], sizeof(ngx_http_tent_cursor_t));
    dl->cursors[n].floor = (uint64_t) -1;

    ngx_log_error(NGX_LOG_INFO, dl->log, 0,
                  "tent delivery: entity \"%V\" from the registry",
                  &ent->entity);

    return NGX_OK;
}


/*
 * May same-node delivery write into "ent"?  A fixed entity: yes; a
 * registry one: only if active as of the registry's current generation
 * (a read under way or failed, or an operator's write since: not known,
 * so no; HTTP asks the registry).
 */

ngx_int_t
ngx_http_tent_delivery_entity_active(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent)
{
    ngx_uint_t  i;

    if (!dl->mcf->provisioning || ngx_http_tent_entities_active == NULL) {
        return NGX_OK;
    }

    i = ent - (ngx_http_tent_entity_conf_t *) dl->mcf->entity_confs.elts;

    if (i < ngx_http_tent_entities_fixed) {
        return NGX_OK;
    }

    if (i >= dl->mcf->entity_confs.nelts
        || ngx_http_tent_entities_busy || !ngx_http_tent_entities_read
        || ngx_http_tent_entities_gen
           != ngx_http_tent_registry_generation((ngx_cycle_t *) ngx_cycle)
        || !ngx_http_tent_entities_active[i])
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                       "tent delivery: \"%V\" not known active now",
                       &ent->entity);
        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * The provisioning server of a host: the one whose server_name matches
 * it (exact, "*.example", ".example", "www.*"), the first one otherwise.
 */

static ngx_http_tent_srv_conf_t *
ngx_http_tent_entities_server(ngx_http_tent_main_conf_t *mcf, ngx_str_t *host)
{
    ngx_uint_t                   i, j;
    ngx_str_t                   *name;
    ngx_http_tent_srv_conf_t   **scfp;

    scfp = mcf->provision_confs.elts;

    if (mcf->provision_confs.nelts == 0) {
        return NULL;
    }

    for (i = 0; i < mcf->provision_confs.nelts; i++) {
        if (scfp[i]->names == NULL) {
            continue;
        }

        for (j = 0; j < scfp[i]->names->nelts; j++) {
            name = (ngx_str_t *) scfp[i]->names->elts + j;

            if (name->len == 0) {
                continue;
            }

            if (name->len == host->len
                && ngx_strncasecmp(name->data, host->data, host->len) == 0)
            {
                return scfp[i];
            }

            if (name->data[0] == '*' && name->len > 1
                && host->len >= name->len
                && ngx_strncasecmp(host->data + host->len - (name->len - 1),
                                   name->data + 1, name->len - 1)
                   == 0)
            {
                return scfp[i];
            }

            if (name->data[0] == '.'
                && ((host->len == name->len - 1
                     && ngx_strncasecmp(host->data, name->data + 1,
                                        host->len) == 0)
                    || (host->len > name->len
                        && ngx_strncasecmp(host->data + host->len
                                           - name->len,
                                           name->data, name->len) == 0)))
            {
                return scfp[i];
            }

            if (name->len > 2 && name->data[name->len - 1] == '*'
                && host->len >= name->len - 1
                && ngx_strncasecmp(host->data, name->data, name->len - 1)
                   == 0)
            {
                return scfp[i];
            }
        }
    }

    return scfp[0];
}
