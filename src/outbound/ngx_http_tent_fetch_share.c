
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * A worker's shares of its outbound slots: how many fetches of client
 * requests one entity (the tenant the request is for) and one remote
 * host (scheme://host:port) have in flight, and how many unsigned
 * requests (a follow, a mention) name one host, so that one tenant's
 * hanging reads, or a flood naming one silent host, take a share and
 * not every slot.  Each is a counter by name in a tree of this worker,
 * made at the first use and gone at the last; background work
 * (deliveries) has budgets of its own and takes none.
 */


#define NGX_HTTP_TENT_FETCH_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_fetch_private.h"


typedef struct {
    ngx_str_node_t                  sn;
    ngx_uint_t                      share;       /* its tree */
    ngx_uint_t                      n;
} ngx_http_tent_share_node_t;


typedef struct {
    ngx_rbtree_t                    tree;
    ngx_rbtree_node_t               sentinel;
} ngx_http_tent_share_tree_t;


static ngx_http_tent_share_tree_t  *ngx_http_tent_shares;


static void
ngx_http_tent_share_cleanup(void *data)
{
    ngx_uint_t                   i;
    ngx_rbtree_node_t           *node;
    ngx_http_tent_share_tree_t  *t;

    t = data;

    /* what fetches still hold at exit */

    for (i = 0; i < NGX_HTTP_TENT_SHARES; i++) {

        while (t[i].tree.root != t[i].tree.sentinel) {
            node = t[i].tree.root;
            ngx_rbtree_delete(&t[i].tree, node);
            ngx_free(node);
        }
    }

    ngx_http_tent_shares = NULL;
}


static ngx_http_tent_share_tree_t *
ngx_http_tent_share_trees(void)
{
    ngx_uint_t                   i;
    ngx_pool_cleanup_t          *cln;
    ngx_http_tent_share_tree_t  *t;

    if (ngx_http_tent_shares) {
        return ngx_http_tent_shares;
    }

    cln = ngx_pool_cleanup_add(ngx_cycle->pool,
                               NGX_HTTP_TENT_SHARES
                               * sizeof(ngx_http_tent_share_tree_t));
    if (cln == NULL) {
        return NULL;
    }

    t = cln->data;

    for (i = 0; i < NGX_HTTP_TENT_SHARES; i++) {
        ngx_rbtree_init(&t[i].tree, &t[i].sentinel,
                        ngx_str_rbtree_insert_value);
    }

    cln->handler = ngx_http_tent_share_cleanup;
    ngx_http_tent_shares = t;

    return t;
}


/*
 * One more of "name" in the share, unless it holds "max": NGX_OK and
 * *held, to give back; NGX_BUSY; NGX_ERROR.
 */

ngx_int_t
ngx_http_tent_share_take(ngx_uint_t share, ngx_str_t *name, ngx_uint_t max,
    void **held)
{
    uint32_t                     hash;
    ngx_str_node_t              *sn;
    ngx_http_tent_share_node_t  *s;
    ngx_http_tent_share_tree_t  *t;

    t = ngx_http_tent_share_trees();
    if (t == NULL) {
        return NGX_ERROR;
    }

    hash = ngx_crc32_long(name->data, name->len);

    sn = ngx_str_rbtree_lookup(&t[share].tree, name, hash);
    s = (ngx_http_tent_share_node_t *) sn;

    if (s && s->n >= max) {
        return NGX_BUSY;
    }

    if (s == NULL) {
        if (max == 0) {
            return NGX_BUSY;
        }

        s = ngx_alloc(sizeof(ngx_http_tent_share_node_t) + name->len,
                      ngx_cycle->log);
        if (s == NULL) {
            return NGX_ERROR;
        }

        s->sn.node.key = hash;
        s->sn.str.len = name->len;
        s->sn.str.data = (u_char *) s + sizeof(ngx_http_tent_share_node_t);
        ngx_memcpy(s->sn.str.data, name->data, name->len);
        s->share = share;
        s->n = 0;

        ngx_rbtree_insert(&t[share].tree, &s->sn.node);
    }

    s->n++;
    *held = s;

    return NGX_OK;
}


void
ngx_http_tent_share_give(void *held)
{
    ngx_http_tent_share_node_t  *s;

    s = held;

    if (s == NULL || ngx_http_tent_shares == NULL) {
        return;
    }

    if (--s->n == 0) {
        ngx_rbtree_delete(&ngx_http_tent_shares[s->share].tree, &s->sn.node);
        ngx_free(s);
    }
}


/*
 * The host a URL names, as its share counts it: "scheme://host:port" in
 * lowercase, the port the scheme's when none is written.  NGX_DECLINED:
 * not an http(s) URL (the fetch itself will say so).
 */

ngx_int_t
ngx_http_tent_share_host(ngx_pool_t *pool, ngx_str_t *url, ngx_str_t *host)
{
    u_char     *p, *end, *start, *colon;
    size_t      scheme;
    ngx_str_t   port;

    p = url->data;
    end = url->data + url->len;

    if (url->len > 7 && ngx_strncasecmp(p, (u_char *) "http://", 7) == 0) {
        scheme = 7;
        ngx_str_set(&port, ":80");

    } else if (url->len > 8
               && ngx_strncasecmp(p, (u_char *) "https://", 8) == 0)
    {
        scheme = 8;
        ngx_str_set(&port, ":443");

    } else {
        return NGX_DECLINED;
    }

    start = p + scheme;

    for (p = start; p < end; p++) {
        if (*p == '/' || *p == '?' || *p == '#') {
            break;
        }
    }

    if (p == start) {
        return NGX_DECLINED;
    }

    /* a port written: the last ':' after any "]" of an IPv6 literal */

    colon = NULL;

    for (end = start; end < p; end++) {
        if (*end == ':') {
            colon = end;

        } else if (*end == ']') {
            colon = NULL;
        }
    }

    host->len = scheme + (p - start) + (colon ? 0 : port.len);
    host->data = ngx_pnalloc(pool, host->len);
    if (host->data == NULL) {
        return NGX_ERROR;
    }

    ngx_strlow(host->data, url->data, scheme + (p - start));

    if (colon == NULL) {
        ngx_memcpy(host->data + scheme + (p - start), port.data, port.len);
    }

    return NGX_OK;
}
