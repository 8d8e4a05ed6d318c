/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The mappings of a mentions pass (ngx_http_tent_move_mentions.c,
 * docs/move.md): resolved once when loaded, so that a mention costs one
 * normalization and one lookup, whatever the number of mappings.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_move.h"


/* a mapping resolved, keyed by its "from" normalized once */

typedef struct {
    ngx_str_node_t                      sn;
    ngx_str_t                           to;         /* as announced */
    ngx_str_t                           nto;        /* normalized */
    ngx_str_t                          *final;      /* NULL: a cycle */
    ngx_str_t                          *nfinal;
    ngx_uint_t                          resolved;
} ngx_http_tent_move_node_t;


/*
 * The mappings, each "from" and "to" normalized once, in a tree keyed by
 * the normalized "from"; every chain (O -> N, N -> M) followed to its
 * end once.  A chain that comes back on itself (F -> G, G -> F) names
 * no one: dropped (logged), or every post mentioning F or G would be
 * rewritten each pass.  A later mapping of the same "from" (keys in the
 * order they came) replaces an earlier one.
 */

ngx_int_t
ngx_http_tent_move_maps_resolve(ngx_pool_t *pool, ngx_log_t *log,
    ngx_array_t *maps, ngx_rbtree_t *tree, ngx_rbtree_node_t *sentinel)
{
    uint32_t                    hash;
    ngx_str_t                   from;
    ngx_uint_t                  i, hops;
    ngx_http_tent_move_map_t   *m;
    ngx_http_tent_move_node_t  *n, *cur, *next;

    ngx_rbtree_init(tree, sentinel, ngx_str_rbtree_insert_value);

    m = maps->elts;

    for (i = 0; i < maps->nelts; i++) {
        if (ngx_http_tent_entity_canonical(pool, &m[i].from, &from)
            != NGX_OK)
        {
            from = m[i].from;
        }

        hash = ngx_crc32_short(from.data, from.len);

        n = (ngx_http_tent_move_node_t *)
                ngx_str_rbtree_lookup(tree, &from, hash);

        if (n == NULL) {
            n = ngx_pcalloc(pool, sizeof(ngx_http_tent_move_node_t));
            if (n == NULL) {
                return NGX_ERROR;
            }

            n->sn.str = from;
            n->sn.node.key = hash;
            ngx_rbtree_insert(tree, &n->sn.node);
        }

        n->to = m[i].to;

        if (ngx_http_tent_entity_canonical(pool, &m[i].to, &n->nto)
            != NGX_OK)
        {
            n->nto = m[i].to;
        }
    }

    /* each chain to its end: at most as many hops as mappings */

    for (i = 0; i < maps->nelts; i++) {
        if (ngx_http_tent_entity_canonical(pool, &m[i].from, &from)
            != NGX_OK)
        {
            from = m[i].from;
        }

        n = (ngx_http_tent_move_node_t *)
                ngx_str_rbtree_lookup(tree, &from,
                                      ngx_crc32_short(from.data, from.len));
        if (n == NULL || n->resolved) {
            continue;
        }

        n->resolved = 1;

        cur = n;

        for (hops = 0; hops <= maps->nelts; hops++) {
            next = (ngx_http_tent_move_node_t *)
                       ngx_str_rbtree_lookup(tree, &cur->nto,
                           ngx_crc32_short(cur->nto.data, cur->nto.len));
            if (next == NULL) {
                break;
            }

            cur = next;
        }

        if (hops > maps->nelts) {
            ngx_log_error(NGX_LOG_WARN, log, 0,
                          "tent move: the moves from \"%V\" come back on "
                          "themselves: its mentions left as they are",
                          &m[i].from);
            continue;
        }

        n->final = &cur->to;
        n->nfinal = &cur->nto;
    }

    return NGX_OK;
}


/*
 * Where a mention of "e" points once the mappings are followed: one
 * normalization and one lookup; NULL when it names no moved entity or
 * already the entity it would name.
 */

ngx_str_t *
ngx_http_tent_move_maps_target(ngx_rbtree_t *tree, ngx_str_t *e)
{
    u_char                      buf[NGX_HTTP_TENT_ENTITY_MAX
                                    + NGX_HTTP_TENT_ENTITY_SLACK];
    ngx_str_t                   ne;
    ngx_http_tent_move_node_t  *n;

    if (e->len > NGX_HTTP_TENT_ENTITY_MAX) {
        return NULL;
    }

    if (ngx_http_tent_entity_normalize(e, buf, &ne) != NGX_OK) {
        ne = *e;
    }

    n = (ngx_http_tent_move_node_t *)
            ngx_str_rbtree_lookup(tree, &ne,
                                  ngx_crc32_short(ne.data, ne.len));

    if (n == NULL || n->final == NULL
        || (n->nfinal->len == ne.len
            && ngx_strncmp(n->nfinal->data, ne.data, ne.len) == 0))
    {
        return NULL;
    }

    return n->final;
}
