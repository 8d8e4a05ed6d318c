
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_RELATIONS_PRIVATE_H_INCLUDED_
#define _NGX_HTTP_TENT_RELATIONS_PRIVATE_H_INCLUDED_


#if !(NGX_HTTP_TENT_RELATIONS_PRIVATE)
#error "only the relations files include ngx_http_tent_relations_private.h"
#endif


/*
 * What a relationship's reads (ngx_http_tent_relations.c) and the lists
 * (ngx_http_tent_relations_list.c) share and no other file needs.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_relations.h"
#include "ngx_http_tent_store.h"


/* a page is read with some more rows than asked, for those hidden */
#define NGX_HTTP_TENT_RELATIONS_SCAN  250


typedef struct {
    ngx_http_tent_relation_t       *rel;
    ngx_http_tent_relation_pt       next;
    void                           *saved;      /* the caller's state */
    ngx_str_t                       entity;
    ngx_uint_t                      limit;
    ngx_uint_t                      count;
    ngx_uint_t                      reverse;    /* newest first */
    ngx_uint_t                      backward;   /* scanned down the keys */
    ngx_uint_t                      flip;       /* scanned against order */
    ngx_uint_t                      more;       /* an item past the page */
    ngx_uint_t                      by_entity;
    json_t                         *list;
    ngx_uint_t                      n;
    ngx_str_t                       start;      /* what is left to scan */
    ngx_str_t                       end;
    void                           *data;       /* for rel->item */
    ngx_str_t                       args;       /* kept in Link URLs */
} ngx_http_tent_relations_state_t;


#endif /* _NGX_HTTP_TENT_RELATIONS_PRIVATE_H_INCLUDED_ */
