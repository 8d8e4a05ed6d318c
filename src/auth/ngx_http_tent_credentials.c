
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Each worker keeps the credential records it read, by the row's key
 * (entity and key id), while the credentials' generation in shared
 * memory (ngx_http_tent_nonce.c) has not moved: every write of a
 * credential row, in any worker, moves it (the store does that).  So a
 * signed request costs no store read, and a revoked key fails at once.
 */


#define NGX_HTTP_TENT_AUTH_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_auth_private.h"


#define NGX_HTTP_TENT_CRED_SLOTS   1024
#define NGX_HTTP_TENT_CRED_MAX_AGE 30


typedef struct {
    u_char                         *key;
    size_t                          key_len;
    json_t                         *record;     /* parsed: read-only */
    ngx_atomic_uint_t               generation;
    time_t                          stored;
} ngx_http_tent_cred_slot_t;


/* the slot of a credential row's key: entity and key id */

static ngx_http_tent_cred_slot_t *
ngx_http_tent_credential_slot(ngx_str_t *key, ngx_uint_t create)
{
    ngx_http_tent_cred_slot_t  *slots;
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                              ngx_http_tent_module);

    if (mcf->credentials == NULL) {
        if (!create) {
            return NULL;
        }

        mcf->credentials = ngx_calloc(NGX_HTTP_TENT_CRED_SLOTS
                                      * sizeof(ngx_http_tent_cred_slot_t),
                                      ngx_cycle->log);
        if (mcf->credentials == NULL) {
            return NULL;
        }
    }

    slots = mcf->credentials;

    return &slots[ngx_crc32_short(key->data, key->len)
                  % NGX_HTTP_TENT_CRED_SLOTS];
}


/* the record, if kept at this generation */

json_t *
ngx_http_tent_credential_cached(ngx_str_t *key, ngx_atomic_uint_t generation)
{
    ngx_http_tent_cred_slot_t  *slot;

    slot = ngx_http_tent_credential_slot(key, 0);

    if (slot == NULL || slot->key == NULL
        || slot->generation != generation
        || ngx_time() - slot->stored > NGX_HTTP_TENT_CRED_MAX_AGE
        || slot->key_len != key->len
        || ngx_memcmp(slot->key, key->data, key->len) != 0)
    {
        return NULL;
    }

    return json_incref(slot->record);
}


/* the record, parsed: a cache hit costs no parse either */

void
ngx_http_tent_credential_keep(ngx_str_t *key, ngx_atomic_uint_t generation,
    json_t *cred, size_t size)
{
    u_char                     *p;
    ngx_http_tent_cred_slot_t  *slot;

    slot = ngx_http_tent_credential_slot(key, 1);
    if (slot == NULL || size > 64 * 1024) {
        return;
    }

    p = ngx_alloc(key->len, ngx_cycle->log);
    if (p == NULL) {
        return;
    }

    ngx_memcpy(p, key->data, key->len);

    if (slot->key) {
        ngx_free(slot->key);
        json_decref(slot->record);
    }

    slot->key = p;
    slot->key_len = key->len;
    slot->record = json_incref(cred);
    slot->generation = generation;
    slot->stored = ngx_time();
}


/* at worker exit: the cache's memory */

void
ngx_http_tent_credential_cache_exit(ngx_http_tent_main_conf_t *mcf)
{
    ngx_uint_t                  i;
    ngx_http_tent_cred_slot_t  *slots;

    slots = mcf->credentials;

    if (slots == NULL) {
        return;
    }

    for (i = 0; i < NGX_HTTP_TENT_CRED_SLOTS; i++) {
        if (slots[i].key) {
            ngx_free(slots[i].key);
            json_decref(slots[i].record);
        }
    }

    ngx_free(slots);
    mcf->credentials = NULL;
}
