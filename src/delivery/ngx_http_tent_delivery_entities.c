
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The delivery engine's entities: the fixed ones (tent_entity without
 * variables, found at start) and, with tent_provisioning, the active
 * entities of the registry (docs/admin.md).  The registry is read again
 * when its generation in the shared zone moved (the operator created,
 * disabled, enabled or deleted one) and at the once-a-minute pass, in
 * pages of NGX_HTTP_TENT_REGISTRY_PAGE rows; each new active entity gets
 * a slot with a server conf of its own: its provisioning server's (the
 * one whose server_name matches its host, ngx_http_tent_provision_server;
 * the first such server when none does) with the entity's parts worked
 * out as a fixed entity's, so the engine and same-node delivery treat it
 * as one.
 *
 * The slots (ngx_http_tent_slot_t: the entity, its due jobs' cursor, its
 * outbox mark...) come in chunks of NGX_HTTP_TENT_ENTITIES_CHUNK,
 * allocated as entities are created, none reserved ahead; a chunk never
 * moves (tasks point into it), only the small table of chunks grows.
 * Every place goes through ngx_http_tent_delivery_slot(), NULL past the
 * entities there are.
 *
 * The list follows the registry: a registry entity is served only while
 * the engine's last read found it active.  One disabled, being deleted
 * or deleted leaves the engine's work at once: its outbox is not
 * scanned, its due jobs not attempted (they wait in the store); enabled
 * again, its outbox and due jobs are read again from their start.  A job
 * already on its way goes on.  Its slot is dropped by the first read
 * of the registry that finds no job of it on its way and neither pass
 * at its place (slot->refs counts the tasks and same-node jobs that
 * point at it): its name leaves the tree, its conf (ngx_alloc'd, with
 * its name) is freed, and the place is the next new entity's, so the
 * list is as long as the most entities active at once, not as all the
 * names ever created, without a reload.
 *
 * Same-node delivery writes into a registry entity only when the
 * engine's last read of the registry is of its current generation and
 * found it active; otherwise the job goes over HTTP, where the registry
 * check answers 404 or 410 as for any sender (a disabled or deleting
 * entity gets no copies written behind the operator's back).
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_provision.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


#ifndef NGX_HTTP_TENT_ENTITIES_CHUNK
#define NGX_HTTP_TENT_ENTITIES_CHUNK  32
#endif

#define NGX_HTTP_TENT_REGISTRY_PAGE   128


static ngx_atomic_uint_t  ngx_http_tent_entities_gen;
static ngx_atomic_uint_t  ngx_http_tent_entities_settled_gen;
static ngx_uint_t         ngx_http_tent_entities_busy;
static ngx_uint_t         ngx_http_tent_entities_read;
static ngx_uint_t         ngx_http_tent_entities_epoch;


static ngx_int_t ngx_http_tent_entities_page(ngx_http_tent_delivery_t *dl,
    ngx_str_t *from);
static void ngx_http_tent_entities_scanned(ngx_http_tent_store_op_t *op);
static void ngx_http_tent_entities_settled(ngx_http_tent_delivery_t *dl);
static ngx_http_tent_slot_t *ngx_http_tent_entities_slot(
    ngx_http_tent_delivery_t *dl, ngx_str_t *entity, ngx_uint_t *made);
static void ngx_http_tent_entities_drop(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_slot_t *s);
static void ngx_http_tent_entities_cleanup(void *data);
static void ngx_http_tent_entities_release(void *data);
static ngx_http_tent_slot_t *ngx_http_tent_entities_add(
    ngx_http_tent_delivery_t *dl, ngx_str_t *entity);


/* at the engine's start: a slot for each fixed entity */

ngx_int_t
ngx_http_tent_delivery_entities_init(ngx_http_tent_delivery_t *dl,
    ngx_cycle_t *cycle)
{
    ngx_uint_t                    i, made;
    ngx_pool_cleanup_t           *cln;
    ngx_http_tent_slot_t         *s;
    ngx_http_tent_entity_conf_t  *ents;

    ngx_rbtree_init(&dl->names, &dl->names_sentinel,
                    ngx_str_rbtree_insert_value);

    /* the slots' names and confs are ngx_alloc'd: freed with the cycle */

    cln = ngx_pool_cleanup_add(cycle->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_tent_entities_cleanup;
    cln->data = dl;

    if (ngx_array_init(&dl->free, cycle->pool, 4,
                       sizeof(ngx_http_tent_slot_t *))
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    ents = dl->mcf->entity_confs.elts;

    for (i = 0; i < dl->mcf->entity_confs.nelts; i++) {
        s = ngx_http_tent_entities_slot(dl, &ents[i].entity, &made);
        if (s == NULL) {
            return NGX_ERROR;
        }

        s->conf.scf = ents[i].scf;
        s->fixed = 1;
        s->active = 1;
    }

    /* the same-node lookup of them by origin: they stay as they are */

    if (ngx_http_tent_local_index(dl, cycle->pool) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, cycle->log, 0,
                   "tent delivery: %ui fixed entities, %ui chunks",
                   dl->nentities, dl->nchunks);

    return NGX_OK;
}


/* the slot at "i", or NULL: nothing is reached past what was allocated */

ngx_http_tent_slot_t *
ngx_http_tent_delivery_slot(ngx_http_tent_delivery_t *dl, ngx_uint_t i)
{
    if (i >= dl->nentities
        || i / NGX_HTTP_TENT_ENTITIES_CHUNK >= dl->nchunks)
    {
        return NULL;
    }

    return &dl->chunks[i / NGX_HTTP_TENT_ENTITIES_CHUNK]
                      [i % NGX_HTTP_TENT_ENTITIES_CHUNK];
}


/* the entity at "i", or NULL */

ngx_http_tent_entity_conf_t *
ngx_http_tent_delivery_conf(ngx_http_tent_delivery_t *dl, ngx_uint_t i)
{
    ngx_http_tent_slot_t  *s;

    s = ngx_http_tent_delivery_slot(dl, i);

    return s ? &s->conf : NULL;
}


/* the slot of an entity a task points at (its "conf"), checked */

ngx_http_tent_slot_t *
ngx_http_tent_delivery_slot_of(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent)
{
    ngx_http_tent_slot_t  *s;

    s = (ngx_http_tent_slot_t *) ((u_char *) ent
                                  - offsetof(ngx_http_tent_slot_t, conf));

    if (ngx_http_tent_delivery_slot(dl, s->place) != s) {
        ngx_log_error(NGX_LOG_ALERT, dl->log, 0,
                      "tent delivery: \"%V\" is not in the list",
                      &ent->entity);
        return NULL;
    }

    return s;
}


/*
 * Does the engine work for it: fixed, or the registry's, active as of
 * the registry's current generation.  After an operator's write, none of
 * the registry's until the engine read it again (a tick): a job of an
 * entity disabled is not tried once the disable was answered.
 */

ngx_uint_t
ngx_http_tent_delivery_slot_on(ngx_http_tent_slot_t *s)
{
    if (s == NULL) {
        return 0;
    }

    if (s->fixed) {
        return 1;
    }

    return s->active && ngx_http_tent_entities_read
           && ngx_http_tent_entities_settled_gen
              == ngx_http_tent_registry_generation((ngx_cycle_t *)
                                                   ngx_cycle);
}


/*
 * A task or a same-node job points at "ent" for as long as "pool" lives:
 * its slot is not dropped meanwhile.
 */

ngx_int_t
ngx_http_tent_delivery_hold(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent, ngx_pool_t *pool)
{
    ngx_pool_cleanup_t    *cln;
    ngx_http_tent_slot_t  *s;

    s = ngx_http_tent_delivery_slot_of(dl, ent);
    if (s == NULL) {
        return NGX_ERROR;
    }

    cln = ngx_pool_cleanup_add(pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
    }

    cln->handler = ngx_http_tent_entities_release;
    cln->data = s;
    s->refs++;

    return NGX_OK;
}


static void
ngx_http_tent_entities_release(void *data)
{
    ngx_http_tent_slot_t *s = data;

    s->refs--;
}


/* the slot of the entity named so, or NULL */

ngx_http_tent_slot_t *
ngx_http_tent_delivery_slot_named(ngx_http_tent_delivery_t *dl,
    ngx_str_t *entity)
{
    ngx_str_node_t  *sn;

    sn = ngx_str_rbtree_lookup(&dl->names, entity,
                               ngx_crc32_long(entity->data, entity->len));
    if (sn == NULL) {
        return NULL;
    }

    return (ngx_http_tent_slot_t *) ((u_char *) sn
                                     - offsetof(ngx_http_tent_slot_t, sn));
}


/*
 * A new slot for "entity" (copied; "made" set), or the one it has: a
 * place dropped first, else the next one
 */

static ngx_http_tent_slot_t *
ngx_http_tent_entities_slot(ngx_http_tent_delivery_t *dl, ngx_str_t *entity,
    ngx_uint_t *made)
{
    u_char                 *name;
    uint32_t                hash;
    ngx_uint_t              room;
    ngx_http_tent_slot_t   *s, **chunks;
    ngx_http_tent_cursor_t  cursor;

    *made = 0;

    s = ngx_http_tent_delivery_slot_named(dl, entity);
    if (s) {
        return s;
    }

    hash = ngx_crc32_long(entity->data, entity->len);

    name = ngx_alloc(entity->len, dl->log);
    if (name == NULL) {
        return NULL;
    }

    if (dl->free.nelts) {
        s = ((ngx_http_tent_slot_t **) dl->free.elts)[--dl->free.nelts];

        /*
         * As a new one, its place kept; its cursor's buffer kept, and
         * its counts moved on: nothing of the one before applies
         */

        cursor = s->cursor;
        room = s->place;

        ngx_memzero(s, sizeof(ngx_http_tent_slot_t));

        s->place = room;
        s->cursor.resume = cursor.resume;
        s->cursor.resume_size = cursor.resume_size;
        s->cursor.moved = cursor.moved + 1;
        s->cursor.unsafe = cursor.unsafe + 1;

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                       "tent delivery: \"%V\" takes the dropped place %ui",
                       entity, s->place);

        goto named;
    }

    /* a chunk more when the last is full; the table of chunks doubles */

    if (dl->nentities == dl->nchunks * NGX_HTTP_TENT_ENTITIES_CHUNK) {
        if (dl->nchunks == dl->room) {
            room = dl->room ? 2 * dl->room : 4;

            chunks = ngx_palloc(ngx_cycle->pool,
                                room * sizeof(ngx_http_tent_slot_t *));
            if (chunks == NULL) {
                ngx_free(name);
                return NULL;
            }

            if (dl->nchunks) {
                ngx_memcpy(chunks, dl->chunks,
                           dl->nchunks * sizeof(ngx_http_tent_slot_t *));
            }

            dl->chunks = chunks;
            dl->room = room;
        }

        s = ngx_pcalloc(ngx_cycle->pool, NGX_HTTP_TENT_ENTITIES_CHUNK
                                         * sizeof(ngx_http_tent_slot_t));
        if (s == NULL) {
            ngx_free(name);
            return NULL;
        }

        dl->chunks[dl->nchunks++] = s;

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                       "tent delivery: the entities' chunk %ui, room for "
                       "%ui", dl->nchunks,
                       dl->nchunks * NGX_HTTP_TENT_ENTITIES_CHUNK);
    }

    s = &dl->chunks[dl->nentities / NGX_HTTP_TENT_ENTITIES_CHUNK]
                   [dl->nentities % NGX_HTTP_TENT_ENTITIES_CHUNK];

    s->place = dl->nentities++;

named:

    s->conf.entity.data = name;
    ngx_memcpy(s->conf.entity.data, entity->data, entity->len);
    s->conf.entity.len = entity->len;

    /* a new entity's outbox is looked at once, its due jobs from the start */

    s->outbox = 1;
    s->hash = ngx_crc32_short(entity->data, entity->len)
              % NGX_HTTP_TENT_OUTBOX_MARKS;
    s->cursor.floor = (uint64_t) -1;

    s->sn.str = s->conf.entity;
    s->sn.node.key = hash;
    ngx_rbtree_insert(&dl->names, &s->sn.node);

    *made = 1;

    return s;
}


/* a registry entity's slot no job points at: its place free again */

static void
ngx_http_tent_entities_drop(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_slot_t *s)
{
    ngx_http_tent_slot_t  **fp;

    fp = ngx_array_push(&dl->free);
    if (fp == NULL) {
        return;                 /* kept: dropped by a later read */
    }

    *fp = s;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: \"%V\" dropped from the list: place %ui "
                   "free", &s->conf.entity, s->place);

    ngx_rbtree_delete(&dl->names, &s->sn.node);

    ngx_free(s->conf.entity.data);
    ngx_str_null(&s->conf.entity);

    if (s->mem) {
        ngx_free(s->mem);
        s->mem = NULL;
    }

    s->conf.scf = NULL;
    s->outbox = 0;
    s->dropped = 1;
}


/* the cycle goes: the slots' names and confs with it */

static void
ngx_http_tent_entities_cleanup(void *data)
{
    ngx_http_tent_delivery_t *dl = data;

    ngx_uint_t             i;
    ngx_http_tent_slot_t  *s;

    for (i = 0; (s = ngx_http_tent_delivery_slot(dl, i)) != NULL; i++) {
        if (!s->dropped) {
            ngx_free(s->conf.entity.data);
            ngx_free(s->mem);
        }
    }
}


/* from the engine's tick: the registry again when it moved, or "always" */

void
ngx_http_tent_delivery_entities_refresh(ngx_http_tent_delivery_t *dl,
    ngx_uint_t always)
{
    ngx_atomic_uint_t  gen;

    if (!dl->mcf->provisioning || ngx_http_tent_entities_busy) {
        return;
    }

    gen = ngx_http_tent_registry_generation((ngx_cycle_t *) ngx_cycle);

    if (ngx_http_tent_entities_read && gen == ngx_http_tent_entities_gen
        && !always)
    {
        return;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: reading the registry (generation %uA)",
                   gen);

    ngx_http_tent_entities_epoch++;

    if (ngx_http_tent_entities_page(dl, NULL) != NGX_OK) {
        return;
    }

    ngx_http_tent_entities_busy = 1;
    ngx_http_tent_entities_gen = gen;
}


/* one page of the registry's rows, from "from" (NULL: its start) on */

static ngx_int_t
ngx_http_tent_entities_page(ngx_http_tent_delivery_t *dl, ngx_str_t *from)
{
    ngx_str_t                  start, end;
    ngx_pool_t                *pool;
    ngx_http_tent_store_op_t  *op;

    pool = ngx_create_pool(4096, dl->log);
    if (pool == NULL) {
        return NGX_ERROR;
    }

    op = ngx_http_tent_store_op_create(pool, dl->log);

    if (op == NULL
        || ngx_http_tent_registry_range(pool, &start, &end) != NGX_OK)
    {
        goto failed;
    }

    /* past the last row read: its key and a 0 byte */

    if (from) {
        start.data = ngx_pnalloc(pool, from->len + 1);
        if (start.data == NULL) {
            goto failed;
        }

        ngx_memcpy(start.data, from->data, from->len);
        start.data[from->len] = '\0';
        start.len = from->len + 1;
    }

    if (ngx_http_tent_store_scan(op, &start, &end,
                                 NGX_HTTP_TENT_REGISTRY_PAGE, 0)
        != NGX_OK)
    {
        goto failed;
    }

    op->handler = ngx_http_tent_entities_scanned;
    op->data = dl;

    if (ngx_http_tent_store_submit(op) != NGX_OK) {
        goto failed;
    }

    return NGX_OK;

failed:

    ngx_destroy_pool(pool);

    return NGX_ERROR;
}


static void
ngx_http_tent_entities_scanned(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_delivery_t *dl = op->data;

    ngx_str_t               key, value, entity, last;
    ngx_uint_t              state, rows;
    ngx_http_tent_slot_t   *s;
    ngx_http_tent_quotas_t  q;

    if (op->status != NGX_HTTP_TENT_STORE_OK) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                       "tent delivery: the registry not read (store status "
                       "%ui): later", op->status);
        goto again;
    }

    rows = 0;
    ngx_str_null(&last);

    while (ngx_http_tent_store_next(op, &key, &value) == NGX_OK) {
        rows++;
        last = key;

        if (ngx_http_tent_registry_parse(&key, &entity) != NGX_OK
            || ngx_http_tent_registry_row(&value, &state, &q) != NGX_OK
            || state != NGX_HTTP_TENT_REG_ACTIVE)
        {
            continue;
        }

        s = ngx_http_tent_entities_add(dl, &entity);
        if (s) {
            s->seen = ngx_http_tent_entities_epoch;

            /* made anew: its tasks of before write nothing into it */
            s->incarnation = q.incarnation;
        }
    }

    /* a full page: the next one, from past its last row */

    if (rows == NGX_HTTP_TENT_REGISTRY_PAGE) {
        if (ngx_http_tent_entities_page(dl, &last) != NGX_OK) {
            goto again;
        }

        ngx_destroy_pool(op->pool);
        return;
    }

    ngx_http_tent_entities_busy = 0;
    ngx_http_tent_entities_read = 1;
    ngx_http_tent_entities_settled_gen = ngx_http_tent_entities_gen;

    ngx_http_tent_entities_settled(dl);

    ngx_destroy_pool(op->pool);
    return;

again:

    /* the last read's answer stays; the next tick reads it all again */

    ngx_http_tent_entities_busy = 0;
    ngx_http_tent_entities_gen--;
    ngx_destroy_pool(op->pool);
}


/* the whole registry read: active the entities it found so, none else */

static void
ngx_http_tent_entities_settled(ngx_http_tent_delivery_t *dl)
{
    ngx_uint_t             i, active, n;
    ngx_http_tent_slot_t  *s;

    n = 0;

    for (i = 0; (s = ngx_http_tent_delivery_slot(dl, i)) != NULL; i++) {
        if (s->fixed || s->dropped) {
            continue;
        }

        active = (s->seen == ngx_http_tent_entities_epoch);

        if (active && !s->active) {

            /* back (or new): its outbox and due jobs from the start */

            s->outbox = 1;
            s->cursor.ms = 0;
            s->cursor.next = 0;
            s->cursor.moved++;

            ngx_log_error(NGX_LOG_INFO, dl->log, 0,
                          "tent delivery: entity \"%V\" from the registry",
                          &s->conf.entity);

        } else if (!active && s->active) {
            ngx_log_error(NGX_LOG_INFO, dl->log, 0,
                          "tent delivery: entity \"%V\" not active in the "
                          "registry: no delivery of its jobs",
                          &s->conf.entity);
        }

        s->active = active;
        n += active;

        /* out of the registry's work, no job on its way, no pass at it */

        if (!active && s->refs == 0
            && !(dl->busy && dl->next_entity == i)
            && !(dl->due_busy && dl->due_entity == i))
        {
            ngx_http_tent_entities_drop(dl, s);
        }
    }

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: the registry read: %ui active, %ui "
                   "entities in %ui chunks, %ui places free", n,
                   dl->nentities - dl->free.nelts, dl->nchunks,
                   dl->free.nelts);
}


/* the slot of a registry entity, with its server conf when new */

static ngx_http_tent_slot_t *
ngx_http_tent_entities_add(ngx_http_tent_delivery_t *dl, ngx_str_t *entity)
{
    u_char                    *p, *host, *last;
    size_t                     size;
    ngx_str_t                  h;
    ngx_uint_t                 made;
    ngx_http_tent_ctx_t       *fixed;
    ngx_http_tent_slot_t      *s;
    ngx_http_tent_srv_conf_t  *scf, *own, **scfp;

    s = ngx_http_tent_entities_slot(dl, entity, &made);

    if (s == NULL) {
        return NULL;
    }

    if (!made) {
        return s->conf.scf ? s : NULL;      /* there already */
    }

    /* the entity's parts: "scheme://host[:port]", the root "/" */

    entity = &s->conf.entity;

    p = ngx_strlcasestrn(entity->data, entity->data + entity->len,
                         (u_char *) "://", 3 - 1);
    if (p == NULL) {
        goto failed;
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

    scf = ngx_http_tent_provision_server(dl->mcf, &h);

    if (scf == NULL) {
        if (dl->mcf->provision_confs.nelts == 0) {
            goto failed;
        }

        scfp = dl->mcf->provision_confs.elts;
        scf = scfp[0];
    }

    /*
     * One block, freed when the slot is dropped: its server conf, its
     * parts, "/", then the profile URL (its origin and the path)
     */

    size = ngx_align(sizeof(ngx_http_tent_srv_conf_t), NGX_ALIGNMENT)
           + ngx_align(sizeof(ngx_http_tent_ctx_t), NGX_ALIGNMENT)
           + 1 + (last - entity->data) + scf->api_root.len
           + sizeof("/profile") - 1;

    s->mem = ngx_alloc(size, dl->log);
    if (s->mem == NULL) {
        goto failed;
    }

    own = s->mem;
    fixed = (ngx_http_tent_ctx_t *) ((u_char *) s->mem
                  + ngx_align(sizeof(ngx_http_tent_srv_conf_t),
                              NGX_ALIGNMENT));
    p = (u_char *) fixed + ngx_align(sizeof(ngx_http_tent_ctx_t),
                                     NGX_ALIGNMENT);

    ngx_memzero(fixed, sizeof(ngx_http_tent_ctx_t));

    *own = *scf;

    fixed->entity = *entity;

    fixed->origin.data = entity->data;
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
    s->conf.scf = own;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent delivery: \"%V\" gets place %ui", entity, s->place);

    return s;

failed:

    /*
     * Its slot stays, with no server: never active, so never worked for
     * (ngx_http_tent_delivery_slot_on() wants "scf" too).
     */

    ngx_log_error(NGX_LOG_WARN, dl->log, 0,
                  "tent delivery: no delivery for \"%V\": no server of it",
                  &s->conf.entity);

    return NULL;
}


/*
 * May same-node delivery write into "ent"?  A fixed entity: yes; a
 * registry one: only if active as of the registry's current generation
 * (not read yet, or an operator's write since: not known, so no; HTTP
 * asks the registry).
 */

ngx_int_t
ngx_http_tent_delivery_entity_active(ngx_http_tent_delivery_t *dl,
    ngx_http_tent_entity_conf_t *ent)
{
    if (!ngx_http_tent_delivery_slot_on(
             ngx_http_tent_delivery_slot_of(dl, ent)))
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                       "tent delivery: \"%V\" not known active now",
                       &ent->entity);
        return NGX_DECLINED;
    }

    return NGX_OK;
}
