
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Same-node delivery: a job for a follower whose notification URL is
 * one of this nginx's fixed entities (a server block with a constant
 * tent_entity; all share the one tent_store) is written straight into
 * the follower's rows by the store owner, with no HTTP request.
 *
 * The trust HTTP gets from the MAC comes here from the store: the
 * recipient's own credential row for the key id the follower row signs
 * with must be the credential of a following (of the sender's entity,
 * for the relationship the notification path names) with the same key
 * and algorithm, as POST /notifications/:id requires of the signature.
 * So a follower row that points its notification path at a local entity
 * the follower does not speak for gets what HTTP would give it: 403, a
 * dead letter; one whose key id the recipient has no row of is sent over
 * HTTP after all (the URL may be another node's: docs/scaling.md), where
 * the MAC check answers 401 if it is ours.  Then the post goes through
 * the recipient's rules (ngx_http_tent_receive.c), and the job settles
 * as the HTTP answer would settle it.
 *
 * Left to HTTP: jobs for followings and apps, mentions of entities with
 * no relationship, profile posts (their recipient reads the sender's
 * profile again, over HTTP), and entities whose tent_entity has
 * variables ($host): which of them a URL names depends on the request.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include <openssl/crypto.h>

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_local.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_posts.h"
#include "ngx_http_tent_receive.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


/*
 * The fixed entities by the origin of each server they can be matched
 * by: a job's URL is tried against those of its own origin only, not
 * against every fixed entity (a thousand server blocks: strncmp was a
 * tenth of the owner's time in same-node delivery).  Built once, at the
 * engine's start: the fixed entities are the configuration's.
 */
typedef struct {
    ngx_str_node_t                  sn;         /* the origin */
    ngx_array_t                     slots;      /* _slot_t *, by place */
} ngx_http_tent_local_origin_t;

typedef struct {
    ngx_rbtree_t                    origins;
    ngx_rbtree_node_t               sentinel;
    ngx_uint_t                      norigins;
} ngx_http_tent_local_index_t;


static ngx_int_t ngx_http_tent_local_claim(ngx_http_tent_job_t *t);
static void ngx_http_tent_local_send(ngx_http_tent_job_t *t);
static ngx_int_t ngx_http_tent_local_index_add(ngx_pool_t *pool,
    ngx_http_tent_local_index_t *idx, ngx_http_tent_slot_t *s,
    ngx_str_t *base);
static ngx_int_t ngx_http_tent_local_push(ngx_array_t *a,
    ngx_http_tent_slot_t *s);
static ngx_int_t ngx_http_tent_local_origin(ngx_str_t *url,
    ngx_str_t *origin);
static ngx_http_tent_entity_conf_t *ngx_http_tent_local_fixed(
    ngx_http_tent_delivery_t *dl, ngx_str_t *url, ngx_str_t *origin,
    ngx_str_t *rest);
static ngx_http_tent_entity_conf_t *ngx_http_tent_local_entity(
    ngx_http_tent_job_t *t, ngx_str_t *url, ngx_str_t *rest);
static ngx_int_t ngx_http_tent_local_match(ngx_http_tent_entity_conf_t *ent,
    ngx_str_t *url, ngx_str_t *rest);
static ngx_int_t ngx_http_tent_local_prefix(ngx_str_t *url, ngx_str_t *base,
    ngx_str_t *rest);
static ngx_int_t ngx_http_tent_str_eq(ngx_str_t *a, ngx_str_t *b);


ngx_http_tent_transport_t  ngx_http_tent_transport_local = {
    "same-node",
    ngx_http_tent_local_claim,
    ngx_http_tent_local_send
};


/*
 * A follower's job whose first server is one of this node's entities:
 * NGX_OK, and what the batch needs in t->carried; NGX_DECLINED: the next
 * transport's.
 */

static ngx_int_t
ngx_http_tent_local_claim(ngx_http_tent_job_t *t)
{
    ngx_str_t                     rest, type, u;
    ngx_str_t                    *url;
    ngx_http_tent_local_t        *l;
    ngx_http_tent_entity_conf_t  *to;

    static ngx_str_t  notifications = ngx_string("notifications/");

    if (t->row.kind != NGX_HTTP_TENT_JOB_FOLLOWER) {
        return NGX_DECLINED;
    }

    url = &u;

    if (ngx_http_tent_delivery_url(t, 0, url) != NGX_OK) {
        return NGX_DECLINED;
    }

    if (ngx_http_tent_json_str(t->task.post, "type", &type) == NGX_OK
        && ngx_http_tent_post_type_is(&type, "profile"))
    {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent local: post \"%V\": a profile post goes over "
                       "HTTP", &t->task.post_id);
        return NGX_DECLINED;
    }

    to = ngx_http_tent_local_entity(t, url, &rest);
    if (to == NULL) {
        return NGX_DECLINED;
    }

    /* a registry entity disabled or being deleted: HTTP answers 410/404 */

    if (ngx_http_tent_delivery_entity_active(t->task.dl, to) != NGX_OK) {
        return NGX_DECLINED;
    }

    /* the recipient's slot stays in the list while the job holds "to" */

    if (ngx_http_tent_delivery_hold(t->task.dl, to, t->task.pool) != NGX_OK) {
        return NGX_DECLINED;
    }

    /* "notifications/<id>" exactly: anything else is HTTP's to route */

    if (rest.len <= notifications.len
        || ngx_strncmp(rest.data, notifications.data, notifications.len) != 0)
    {
        return NGX_DECLINED;
    }

    l = ngx_pcalloc(t->task.pool, sizeof(ngx_http_tent_local_t));
    if (l == NULL) {
        return NGX_DECLINED;
    }

    l->task = t;
    l->to = to;
    l->relation.data = rest.data + notifications.len;
    l->relation.len = rest.len - notifications.len;

    if (ngx_http_tent_relation_id_valid(&l->relation) != NGX_OK
        || ngx_http_tent_json_str(t->follower, "mac_key_id", &l->key_id)
           != NGX_OK
        || ngx_http_tent_json_str(t->follower, "mac_key", &l->key) != NGX_OK
        || ngx_http_tent_json_str(t->follower, "mac_algorithm",
                                  &l->algorithm)
           != NGX_OK)
    {
        return NGX_DECLINED;
    }

    /* the recipient's own row of the key id: as its MAC check reads it */

    if (ngx_http_tent_key(t->task.pool, &to->entity,
                          NGX_HTTP_TENT_TABLE_CREDENTIAL, &l->key_id,
                          &l->cred_key)
        != NGX_OK)
    {
        return NGX_DECLINED;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent local: post \"%V\": to \"%V\", following \"%V\" "
                   "on this node", &t->task.post_id, &to->entity, &l->relation);

    t->carried = l;

    return NGX_OK;
}


/* with the other local jobs due now: one read, one write */

static void
ngx_http_tent_local_send(ngx_http_tent_job_t *t)
{
    if (ngx_http_tent_local_batch_add(t->carried) != NGX_OK) {
        ngx_http_tent_delivery_settle(t, NGX_HTTP_TENT_PASSED);
    }
}


/*
 * At the engine's start, once its fixed slots are there: the index of
 * them by origin.  Each base an entity is matched by (its tent_servers
 * values, or its origin and API root when it has none) goes under the
 * origin of that base, as ngx_http_tent_local_origin() takes a URL's: a
 * URL ngx_http_tent_local_prefix() finds under a base has the base's
 * origin, so the entities of a URL's origin are all it can match.  An
 * entity with a variable in tent_servers is never matched: not indexed.
 * Every base has an origin: tent_servers takes absolute http(s) URLs
 * only, and an entity's own origin is one.
 */

ngx_int_t
ngx_http_tent_local_index(ngx_http_tent_delivery_t *dl, ngx_pool_t *pool)
{
    u_char                       *p;
    ngx_str_t                     base;
    ngx_uint_t                    i, j, nfixed;
    ngx_http_tent_slot_t         *s;
    ngx_http_complex_value_t     *cv;
    ngx_http_tent_srv_conf_t     *scf;
    ngx_http_tent_local_index_t  *idx;

    idx = ngx_pcalloc(pool, sizeof(ngx_http_tent_local_index_t));
    if (idx == NULL) {
        return NGX_ERROR;
    }

    ngx_rbtree_init(&idx->origins, &idx->sentinel,
                    ngx_str_rbtree_insert_value);

    nfixed = 0;

    for (i = 0; (s = ngx_http_tent_delivery_slot(dl, i)) != NULL; i++) {
        if (!s->fixed) {
            break;      /* the fixed ones come first */
        }

        nfixed++;
        scf = s->conf.scf;

        if (scf == NULL) {
            continue;
        }

        if (scf->servers == NULL) {
            if (scf->fixed == NULL || scf->fixed->origin.len == 0) {
                continue;
            }

            base.len = scf->fixed->origin.len + scf->api_root.len;
            base.data = ngx_pnalloc(pool, base.len);
            if (base.data == NULL) {
                return NGX_ERROR;
            }

            p = ngx_cpymem(base.data, scf->fixed->origin.data,
                           scf->fixed->origin.len);
            ngx_memcpy(p, scf->api_root.data, scf->api_root.len);

            if (ngx_http_tent_local_index_add(pool, idx, s, &base)
                != NGX_OK)
            {
                return NGX_ERROR;
            }

            continue;
        }

        cv = scf->servers->elts;

        for (j = 0; j < scf->servers->nelts; j++) {
            if (cv[j].lengths) {
                break;
            }
        }

        if (j < scf->servers->nelts) {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                           "tent local: \"%V\" has a server with variables: "
                           "never matched", &s->conf.entity);
            continue;
        }

        for (j = 0; j < scf->servers->nelts; j++) {
            if (ngx_http_tent_local_index_add(pool, idx, s, &cv[j].value)
                != NGX_OK)
            {
                return NGX_ERROR;
            }
        }
    }

    dl->local_index = idx;

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent local: %ui fixed entities under %ui origins",
                   nfixed, idx->norigins);

    return NGX_OK;
}


/* "s" under the origin of "base", which the index keeps pointing at */

static ngx_int_t
ngx_http_tent_local_index_add(ngx_pool_t *pool,
    ngx_http_tent_local_index_t *idx, ngx_http_tent_slot_t *s,
    ngx_str_t *base)
{
    uint32_t                       hash;
    ngx_str_t                      trimmed, origin;
    ngx_str_node_t                *sn;
    ngx_http_tent_local_origin_t  *o;

    /* as ngx_http_tent_local_prefix() sees it: its trailing slashes aside */

    trimmed = *base;

    while (trimmed.len && trimmed.data[trimmed.len - 1] == '/') {
        trimmed.len--;
    }

    if (trimmed.len == 0) {
        return NGX_OK;      /* matches no URL */
    }

    if (ngx_http_tent_local_origin(&trimmed, &origin) != NGX_OK) {
        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "tent local: \"%V\" of \"%V\" has no origin: never "
                       "matched", base, &s->conf.entity);

        return NGX_OK;
    }

    hash = ngx_crc32_long(origin.data, origin.len);

    sn = ngx_str_rbtree_lookup(&idx->origins, &origin, hash);

    if (sn) {
        o = (ngx_http_tent_local_origin_t *) sn;

    } else {
        o = ngx_palloc(pool, sizeof(ngx_http_tent_local_origin_t));
        if (o == NULL
            || ngx_array_init(&o->slots, pool, 1,
                              sizeof(ngx_http_tent_slot_t *))
               != NGX_OK)
        {
            return NGX_ERROR;
        }

        o->sn.str = origin;
        o->sn.node.key = hash;
        ngx_rbtree_insert(&idx->origins, &o->sn.node);
        idx->norigins++;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                   "tent local: \"%V\" under \"%V\"", &s->conf.entity,
                   &origin);

    return ngx_http_tent_local_push(&o->slots, s);
}


/* "s" at the end of "a", once: the slots come in place order */

static ngx_int_t
ngx_http_tent_local_push(ngx_array_t *a, ngx_http_tent_slot_t *s)
{
    ngx_http_tent_slot_t  **sp;

    sp = a->elts;

    if (a->nelts && sp[a->nelts - 1] == s) {
        return NGX_OK;      /* another server of it, same origin */
    }

    sp = ngx_array_push(a);
    if (sp == NULL) {
        return NGX_ERROR;
    }

    *sp = s;

    return NGX_OK;
}


/* "scheme://host[:port]": up to the first "/" after "://" */

static ngx_int_t
ngx_http_tent_local_origin(ngx_str_t *url, ngx_str_t *origin)
{
    u_char  *p, *last;

    p = ngx_strlcasestrn(url->data, url->data + url->len,
                         (u_char *) "://", 3 - 1);
    if (p == NULL) {
        return NGX_DECLINED;
    }

    last = ngx_strlchr(p + 3, url->data + url->len, '/');

    origin->data = url->data;
    origin->len = (last ? last : url->data + url->len) - url->data;

    return NGX_OK;
}


/*
 * The entity whose server "url" starts with, and the path after it: a
 * fixed one of the URL's origin (looked up in the index, then each of
 * them tried, in place order), or the
 * registry's entity named by the URL's origin (looked up by name: a
 * hosting's thousands are not walked for each job).
 */

static ngx_http_tent_entity_conf_t *
ngx_http_tent_local_entity(ngx_http_tent_job_t *t, ngx_str_t *url,
    ngx_str_t *rest)
{
    ngx_str_t                     origin;
    ngx_http_tent_slot_t         *s;
    ngx_http_tent_entity_conf_t  *ent;

    if (ngx_http_tent_local_origin(url, &origin) != NGX_OK) {
        ngx_str_null(&origin);
    }

    ent = ngx_http_tent_local_fixed(t->task.dl, url, &origin, rest);
    if (ent) {
        return ent;
    }

    if (origin.len == 0) {
        return NULL;
    }

    s = ngx_http_tent_delivery_slot_named(t->task.dl, &origin);

    if (s != NULL && !s->fixed
        && ngx_http_tent_local_match(&s->conf, url, rest) == NGX_OK)
    {
        return &s->conf;
    }

    return NULL;
}


/*
 * The fixed entities of "origin", in place order: the first that "url"
 * matches, as a walk of every fixed slot would find it.
 */

static ngx_http_tent_entity_conf_t *
ngx_http_tent_local_fixed(ngx_http_tent_delivery_t *dl, ngx_str_t *url,
    ngx_str_t *origin, ngx_str_t *rest)
{
    ngx_uint_t                     i, n;
    ngx_str_node_t                *sn;
    ngx_http_tent_slot_t         **list;
    ngx_http_tent_local_index_t   *idx;
    ngx_http_tent_local_origin_t  *o;

    idx = dl->local_index;

    if (idx == NULL) {
        return NULL;
    }

    list = NULL;
    n = 0;

    if (origin->len) {
        sn = ngx_str_rbtree_lookup(&idx->origins, origin,
                                   ngx_crc32_long(origin->data, origin->len));
        if (sn) {
            o = (ngx_http_tent_local_origin_t *) sn;
            list = o->slots.elts;
            n = o->slots.nelts;
        }
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, dl->log, 0,
                   "tent local: origin \"%V\": %ui fixed entities", origin,
                   n);

    for (i = 0; i < n; i++) {
        if (ngx_http_tent_local_match(&list[i]->conf, url, rest) == NGX_OK) {
            return &list[i]->conf;
        }
    }

    return NULL;
}


/*
 * Is "url" a server of "ent": its tent_servers without variables, or its
 * origin and API root as its profile lists them when it has none.
 */

static ngx_int_t
ngx_http_tent_local_match(ngx_http_tent_entity_conf_t *ent, ngx_str_t *url,
    ngx_str_t *rest)
{
    ngx_str_t                  base;
    ngx_uint_t                 j;
    ngx_http_complex_value_t  *cv;
    ngx_http_tent_srv_conf_t  *scf;

    scf = ent->scf;

    if (scf == NULL) {
        return NGX_DECLINED;
    }

    if (scf->servers == NULL) {
        if (scf->fixed == NULL || scf->fixed->origin.len == 0
            || url->len < scf->fixed->origin.len + scf->api_root.len
            || ngx_strncmp(url->data, scf->fixed->origin.data,
                           scf->fixed->origin.len)
               != 0)
        {
            return NGX_DECLINED;
        }

        base.data = url->data;
        base.len = scf->fixed->origin.len + scf->api_root.len;

        if (ngx_strncmp(base.data + scf->fixed->origin.len,
                        scf->api_root.data, scf->api_root.len)
            == 0
            && ngx_http_tent_local_prefix(url, &base, rest) == NGX_OK)
        {
            return NGX_OK;
        }

        return NGX_DECLINED;
    }

    /*
     * A value with variables anywhere in the list: the entity is never
     * matched (the operator's way to keep its location rules on every
     * delivery, docs/federation.md)
     */

    cv = scf->servers->elts;

    for (j = 0; j < scf->servers->nelts; j++) {
        if (cv[j].lengths) {
            return NGX_DECLINED;
        }
    }

    for (j = 0; j < scf->servers->nelts; j++) {
        if (ngx_http_tent_local_prefix(url, &cv[j].value, rest) == NGX_OK) {
            return NGX_OK;
        }
    }

    return NGX_DECLINED;
}


/* "url" is "base" (its trailing slashes aside), a slash and "rest" */

static ngx_int_t
ngx_http_tent_local_prefix(ngx_str_t *url, ngx_str_t *base, ngx_str_t *rest)
{
    size_t  len;

    len = base->len;

    while (len && base->data[len - 1] == '/') {
        len--;
    }

    if (len == 0 || url->len <= len + 1
        || ngx_strncmp(url->data, base->data, len) != 0
        || url->data[len] != '/')
    {
        return NGX_DECLINED;
    }

    rest->data = url->data + len + 1;
    rest->len = url->len - len - 1;

    return NGX_OK;
}


/*
 * What auth and POST /notifications/:id ask of a MAC signature, asked
 * of the credential row: 200, or the status they would answer.  The
 * sender is the entity the recipient follows, as the row says.
 */

ngx_uint_t
ngx_http_tent_local_credential(ngx_http_tent_local_t *l, json_t *cred,
    ngx_str_t *sender)
{
    json_t     *v;
    ngx_str_t   kind, key, algorithm, relation;

    v = json_object_get(cred, "expires_at");

    if (json_is_integer(v) && json_integer_value(v) <= ngx_time()) {
        return NGX_HTTP_UNAUTHORIZED;
    }

    if (ngx_http_tent_json_str(cred, "kind", &kind) != NGX_OK
        || ngx_http_tent_json_str(cred, "key", &key) != NGX_OK
        || ngx_http_tent_json_str(cred, "algorithm", &algorithm) != NGX_OK
        || !ngx_http_tent_str_eq(&algorithm, &l->algorithm)
        || key.len != l->key.len
        || CRYPTO_memcmp(key.data, l->key.data, key.len) != 0)
    {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, l->task->task.dl->log, 0,
                       "tent local: the follower's key is not the "
                       "recipient's: refused");
        return NGX_HTTP_FORBIDDEN;
    }

    if (kind.len != 9 || ngx_strncmp(kind.data, "following", 9) != 0) {
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, l->task->task.dl->log, 0,
                       "tent local: a credential of a %V, not of a "
                       "following: refused", &kind);
        return NGX_HTTP_UNAUTHORIZED;
    }

    if (ngx_http_tent_json_str(cred, "relation", &relation) != NGX_OK
        || !ngx_http_tent_str_eq(&relation, &l->relation))
    {
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, l->task->task.dl->log, 0,
                       "tent local: the credential is another "
                       "following's: refused");
        return NGX_HTTP_FORBIDDEN;
    }

    if (ngx_http_tent_json_str(cred, "entity", sender) != NGX_OK) {
        return NGX_HTTP_FORBIDDEN;
    }

    return NGX_HTTP_OK;
}


/* how the same answer over HTTP would settle the job */

ngx_http_tent_outcome_e
ngx_http_tent_local_outcome(ngx_http_tent_local_t *l, ngx_uint_t status)
{
    ngx_http_tent_job_t   *t;

    t = l->task;
    t->status = status;
    t->error = NULL;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent local: post \"%V\" to \"%V\": %ui",
                   &t->task.post_id, &l->to->entity, status);

    if (status >= 200 && status <= 299) {
        ngx_http_tent_count(NGX_HTTP_TENT_STAT_LOCAL, 1);
        return NGX_HTTP_TENT_DELIVERED;
    }

    if (status == 400 || status == 401 || status == 403 || status == 404
        || status == 410)
    {
        ngx_log_error(NGX_LOG_WARN, t->task.dl->log, 0,
                      "tent delivery: \"%V\" of this node refused the "
                      "post (%ui): not retried", &l->to->entity, status);
        return NGX_HTTP_TENT_REFUSED;
    }

    ngx_log_error(NGX_LOG_INFO, t->task.dl->log, 0,
                  "tent delivery: \"%V\" of this node: status %ui",
                  &l->to->entity, status);

    return NGX_HTTP_TENT_RETRY;
}


static ngx_int_t
ngx_http_tent_str_eq(ngx_str_t *a, ngx_str_t *b)
{
    return a->len == b->len && ngx_strncmp(a->data, b->data, a->len) == 0;
}
