
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The key layout, in one place.  Every key starts with the entity, so
 * one database holds many entities and each one's rows sort together:
 *
 *     <entity> 0x00 <table byte> <rest>
 *
 * An entity URL never contains 0x00, so "https://a" and "https://ab"
 * never share a prefix.  docs/store.md lists the tables.
 */


#include "ngx_http_tent_module.h"


ngx_int_t
ngx_http_tent_key(ngx_pool_t *pool, ngx_str_t *entity, u_char table,
    ngx_str_t *rest, ngx_str_t *key)
{
    u_char  *p;

    key->len = entity->len + 2 + (rest ? rest->len : 0);

    p = ngx_pnalloc(pool, key->len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    key->data = p;

    p = ngx_cpymem(p, entity->data, entity->len);
    *p++ = '\0';
    *p++ = table;

    if (rest) {
        ngx_memcpy(p, rest->data, rest->len);
    }

    return NGX_OK;
}


/* [start, end) covering every key of one entity's table */

ngx_int_t
ngx_http_tent_key_range(ngx_pool_t *pool, ngx_str_t *entity, u_char table,
    ngx_str_t *start, ngx_str_t *end)
{
    if (ngx_http_tent_key(pool, entity, table, NULL, start) != NGX_OK
        || ngx_http_tent_key(pool, entity, (u_char) (table + 1), NULL, end)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * "https://tent.io/types/info/core/v0.1.0#view" has the base
 * "https://tent.io/types/info/core": types are matched by base.
 */

ngx_int_t
ngx_http_tent_type_base(ngx_str_t *type, ngx_str_t *base)
{
    u_char  *p, *last;

    last = type->data + type->len;

    p = ngx_strlchr(type->data, last, '#');
    if (p) {
        last = p;
    }

    for (p = last; p > type->data; p--) {
        if (p[-1] == '/') {
            break;
        }
    }

    if (p > type->data && p < last && *p == 'v' && p + 1 < last
        && p[1] >= '0' && p[1] <= '9')
    {
        last = p - 1;
    }

    if (last == type->data) {
        return NGX_ERROR;
    }

    base->data = type->data;
    base->len = last - type->data;

    return NGX_OK;
}
