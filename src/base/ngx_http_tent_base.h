
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_BASE_H_INCLUDED_
#define _NGX_HTTP_TENT_BASE_H_INCLUDED_


/*
 * The base every file includes: the Tent media type and scopes, the
 * principal, the module's configurations and the request context, and
 * the small helpers of util.c.  Each subsystem has a header of its own;
 * docs/architecture.md lists which layer may include which.
 */


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#include <ngx_thread_pool.h>
#include <jansson.h>


#define NGX_HTTP_TENT_MEDIA_TYPE    "application/vnd.tent.v0+json"
#define NGX_HTTP_TENT_PROFILE_REL   "https://tent.io/rels/profile"
#define NGX_HTTP_TENT_CORE_TYPE     "https://tent.io/types/info/core/v0.1.0"
#define NGX_HTTP_TENT_CORE_BASE     "https://tent.io/types/info/core"
#define NGX_HTTP_TENT_VERSION       "0.2"

/* tent_same_node_rows: what a same-node delivery writes */
#define NGX_HTTP_TENT_SAME_NODE_COPY   0
#define NGX_HTTP_TENT_SAME_NODE_INDEX  1

#define NGX_HTTP_TENT_MAX_PARAMS    4

/* another entity's profile, as discovered and kept */
#define NGX_HTTP_TENT_PROFILE_MAX   (64 * 1024)

/*
 * A post kept from a request anyone can make (an unsigned mention's
 * re-read, a follower's push: anyone can follow), as stored: a post's
 * JSON is a few KB; client_max_body_size would let each store ~1 MB
 */
#define NGX_HTTP_TENT_RECEIVED_MAX  (64 * 1024)

#define NGX_HTTP_TENT_LINK_OFF      0
#define NGX_HTTP_TENT_LINK_ABSOLUTE 1
#define NGX_HTTP_TENT_LINK_RELATIVE 2


/* principals: who signed the request */
#define NGX_HTTP_TENT_ANONYMOUS          0
#define NGX_HTTP_TENT_APP                1
#define NGX_HTTP_TENT_AUTHORIZATION      2
#define NGX_HTTP_TENT_FOLLOWER           3
#define NGX_HTTP_TENT_FOLLOWING          4

/* the 18 scopes of Tent 0.2 and our 2, as bits */
#define NGX_HTTP_TENT_READ_POSTS         0x00001
#define NGX_HTTP_TENT_WRITE_POSTS        0x00002
#define NGX_HTTP_TENT_IMPORT_POSTS       0x00004
#define NGX_HTTP_TENT_READ_PROFILE       0x00008
#define NGX_HTTP_TENT_WRITE_PROFILE      0x00010
#define NGX_HTTP_TENT_READ_FOLLOWERS     0x00020
#define NGX_HTTP_TENT_WRITE_FOLLOWERS    0x00040
#define NGX_HTTP_TENT_READ_FOLLOWINGS    0x00080
#define NGX_HTTP_TENT_WRITE_FOLLOWINGS   0x00100
#define NGX_HTTP_TENT_READ_GROUPS        0x00200
#define NGX_HTTP_TENT_WRITE_GROUPS       0x00400
#define NGX_HTTP_TENT_READ_PERMISSIONS   0x00800
#define NGX_HTTP_TENT_WRITE_PERMISSIONS  0x01000
#define NGX_HTTP_TENT_READ_APPS          0x02000
#define NGX_HTTP_TENT_WRITE_APPS         0x04000
#define NGX_HTTP_TENT_FOLLOW_UI          0x08000
#define NGX_HTTP_TENT_READ_SECRETS       0x10000
#define NGX_HTTP_TENT_WRITE_SECRETS      0x20000
/* ours: the owner's blocks (docs/blocks.md) */
#define NGX_HTTP_TENT_READ_BLOCKS        0x40000
#define NGX_HTTP_TENT_WRITE_BLOCKS       0x80000


typedef struct {
    ngx_uint_t                      kind;
    ngx_uint_t                      scopes;
    ngx_str_t                       key_id;
    ngx_str_t                       app_id;
    ngx_str_t                       auth_id;
    ngx_str_t                       entity;
    json_t                         *credential;  /* the stored record */
} ngx_http_tent_principal_t;


typedef struct ngx_http_tent_store_s     ngx_http_tent_store_t;
typedef struct ngx_http_tent_resolver_s  ngx_http_tent_resolver_t;
typedef struct ngx_http_tent_main_conf_s ngx_http_tent_main_conf_t;
typedef struct ngx_http_tent_delivery_s  ngx_http_tent_delivery_t;


/* the most of a profile's servers "tent_outbound_servers" may keep */
#define NGX_HTTP_TENT_SERVERS_MAX        32


/* per server: where and how outbound requests may go */
typedef struct {
    ngx_array_t                    *allow;       /* ngx_cidr_t */
    ngx_msec_t                      timeout;     /* of one hop */
    ngx_msec_t                      deadline;    /* of one operation */
    ngx_uint_t                      servers;     /* kept and tried */
    size_t                          max_response;
} ngx_http_tent_outbound_conf_t;

/* an entity whose URL is fixed by the configuration: background work */
typedef struct {
    ngx_str_t                       entity;
    struct ngx_http_tent_srv_conf_s *scf;
} ngx_http_tent_entity_conf_t;

struct ngx_http_tent_main_conf_s {
    ngx_str_t                       store_path;
    ngx_str_t                       db_path;
    ngx_str_t                       socket_path;
    ngx_str_t                       thread_pool_name;
    ngx_thread_pool_t              *thread_pool;
    ngx_msec_t                      store_timeout;
    ngx_uint_t                      store_max_waiting;
    ngx_uid_t                       store_uid;   /* checked for */
    ngx_http_tent_store_t          *store;
    ngx_uint_t                      entities;
    size_t                          nonce_zone_size;
    ngx_uint_t                      nonce_share; /* percent an entity */
    ngx_flag_t                      variable_entity; /* a tenants' host */
    size_t                          anonymous_cache; /* bytes a worker */
    ngx_shm_zone_t                 *nonce_zone;

    /* outbound requests */
    ngx_array_t                    *denied;      /* ngx_cidr_t */
    ngx_str_t                       trusted_certificate;
    ngx_flag_t                      ssl_verify;
    ngx_ssl_t                      *ssl;
    void                           *ssl_sessions; /* this worker's */
    ngx_uint_t                      max_fetches;
    ngx_uint_t                      fetches;     /* this worker's */
    ngx_uint_t                      max_anonymous;
    ngx_uint_t                      anonymous;   /* this worker's */
    ngx_uint_t                      max_entity_fetches; /* a tenant's */
    ngx_uint_t                      max_host_fetches;   /* a host's */
    ngx_uint_t                      max_anonymous_host; /* naming one */
    ngx_uint_t                      keepalive;   /* idle a host, 0: off */
    ngx_uint_t                      keepalive_total;
    ngx_msec_t                      keepalive_timeout;
    ngx_uint_t                      keepalive_requests;
    void                           *idle;        /* this worker's */
    ngx_http_tent_resolver_t       *resolver;    /* this worker's */
    void                           *credentials; /* this worker's cache */
    void                           *reply_cache; /* this worker's */

    /* delivery to followers */
    ngx_array_t                     entity_confs;
    ngx_flag_t                      delivery_on;
    ngx_msec_t                      delivery_interval;
    ngx_uint_t                      delivery_concurrency;
    ngx_uint_t                      delivery_attempts;
    ngx_msec_t                      delivery_retry;
    ngx_msec_t                      delivery_retry_max;
    ngx_uint_t                      delivery_host_concurrency;
    ngx_uint_t                      breaker_failures;   /* 0: off */
    ngx_msec_t                      breaker_pause;
    time_t                          dead_letter_time;
    ngx_http_tent_delivery_t       *delivery;    /* the owner's */
    ngx_uint_t                      same_node_rows;  /* _SAME_NODE_* */

    /* the store owner's threads for background operations, at most */
    ngx_uint_t                      store_background;
    ngx_uint_t                      store_thread_nice;

    /* LevelDB's write_buffer_size: a memtable's bytes (docs/store.md) */
    size_t                          store_write_buffer;

    /* provisioning: the servers with it on (srv confs), any of them */
    ngx_array_t                     provision_confs;
    ngx_flag_t                      provisioning;

    /* the owners' sign-in: tent_password_scrypt, the throttle's zone */
    ngx_uint_t                      scrypt_n;
    ngx_uint_t                      scrypt_r;
    ngx_uint_t                      scrypt_p;
    ngx_shm_zone_t                 *signin_zone;
    ngx_str_t                       password_pool_name;
    ngx_thread_pool_t              *password_pool;

    /* ActivityPub (docs/activitypub.md): the actors' keys' threads */
    ngx_thread_pool_t              *ap_pool;
};


typedef struct ngx_http_tent_srv_conf_s {
    ngx_http_complex_value_t       *entity;
    ngx_str_t                       api_root;
    ngx_array_t                    *servers;     /* ngx_http_complex_value_t */
    ngx_http_tent_outbound_conf_t   outbound;
    ngx_uint_t                      apps_unconfirmed;
    time_t                          apps_unconfirmed_time;
    struct ngx_http_tent_ctx_s     *fixed;       /* a fixed entity's parts */
    ngx_str_t                       file;
    ngx_uint_t                      line;
    time_t                          moved_redirect_time;
    ngx_flag_t                      provisioning;
    ngx_uint_t                      quota_posts;     /* 0: unlimited */
    ngx_uint_t                      quota_apps;
    off_t                           quota_bytes;
    ngx_array_t                    *names;       /* server_name, ngx_str_t */
    ngx_array_t                    *regexes;     /* "~...", ngx_regex_t * */
    ngx_flag_t                      activitypub; /* tent_activitypub */
    ngx_str_t                       ap_name;     /* tent_ap_name */
    ngx_uint_t                      ap_requests; /* tent_ap_follow_requests */
} ngx_http_tent_srv_conf_t;


typedef struct {
    ngx_uint_t                      link;
    ngx_http_complex_value_t       *owner;
    time_t                          mac_skew;
    size_t                          attachment_max;
    ngx_str_t                       admin_token; /* tent_admin_token_file */

    /* the location's handler of ours, for the checks of merge_loc_conf */
    ngx_uint_t                      handler;     /* NGX_HTTP_TENT_HANDLER_ */
    ngx_str_t                       handler_file;
    ngx_uint_t                      handler_line;
} ngx_http_tent_loc_conf_t;

#define NGX_HTTP_TENT_HANDLER_STATUS  1
#define NGX_HTTP_TENT_HANDLER_ADMIN   2
#define NGX_HTTP_TENT_HANDLER_PAGE    3

/* a location's handler of ours: where, for the checks of the whole conf */
#define ngx_http_tent_handler_set(cf, lcf, kind)                              \
    (lcf)->handler = (kind);                                                  \
    (lcf)->handler_file = (cf)->conf_file->file.name;                         \
    (lcf)->handler_line = (cf)->conf_file->line


/* per request state: what the request's entity evaluated to, the route */
typedef struct ngx_http_tent_ctx_s {
    ngx_str_t                       entity;
    ngx_str_t                       origin;
    ngx_str_t                       root_path;
    ngx_str_t                       profile_url;
    ngx_str_t                       api_path;
    ngx_str_t                       params[NGX_HTTP_TENT_MAX_PARAMS];
    ngx_uint_t                      nparams;
    ngx_uint_t                      attempts;
    ngx_http_tent_principal_t       principal;
    json_t                         *body;
    ngx_str_t                       form;
    ngx_array_t                    *parts;       /* attachments */
    void                           *route;
    void                           *handler;
    ngx_uint_t                      allowed;
    void                           *state;
    unsigned                        multipart:1;
    unsigned                        evaluated:1;
    unsigned                        invalid:1;
    unsigned                        api:1;
    unsigned                        own_reply:1;
    unsigned                        replace_body:1;
    unsigned                        replaced:1;
    unsigned                        anonymous:1; /* unsigned outbound */
    unsigned                        has_deadline:1;
    ngx_msec_t                      deadline;    /* of its outbound */
    ngx_str_t                       error_body;
    ngx_uint_t                      registry;    /* NGX_HTTP_TENT_REG_* */
    ngx_atomic_uint_t               registry_gen; /* when it was read */
    uint64_t                        registry_inc; /* its incarnation */
    void                           *quotas;      /* json_t: its quotas */
    off_t                           body_max;    /* 0: none of ours */
    off_t                           body_seen;   /* as it arrives */
    void                           *blocks;      /* the owner's blocks */
    void                           *blocks_next; /* the route after them */
    void                           *domains_next; /* after the domains */
    ngx_atomic_uint_t               domains_gen; /* before they were read */
    ngx_atomic_uint_t               blocks_gen;  /* before they were read */
    unsigned                        route_blocks:1; /* the route needs them */
} ngx_http_tent_ctx_t;


/* ctx->registry: what the entity registry said of the request's entity */
#define NGX_HTTP_TENT_REG_UNKNOWN     0
#define NGX_HTTP_TENT_REG_ACTIVE      1
#define NGX_HTTP_TENT_REG_ABSENT      2
#define NGX_HTTP_TENT_REG_DISABLED    3
#define NGX_HTTP_TENT_REG_FAILED      4


typedef ngx_int_t (*ngx_http_tent_route_pt)(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


/* a part of a multipart/form-data body; the strings point into it */
typedef struct {
    ngx_str_t                       name;
    ngx_str_t                       filename;
    ngx_str_t                       type;
    ngx_str_t                       data;
} ngx_http_tent_part_t;


/* ngx_http_tent_ctx.c: the request's ctx, the API path, the servers */
ngx_http_tent_ctx_t *ngx_http_tent_get_ctx(ngx_http_request_t *r);
ngx_int_t ngx_http_tent_is_api_request(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_servers(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t **servers);
ngx_int_t ngx_http_tent_check_url(ngx_str_t *url, ngx_str_t *origin,
    ngx_str_t *path);

/* ngx_http_tent_util.c: lists, UTF-8, entity URLs, clock, ids, tokens */
ngx_uint_t ngx_http_tent_next_item(u_char **p, u_char *last,
    ngx_str_t *item);
ngx_uint_t ngx_http_tent_utf8_valid(u_char *p, size_t len);
ngx_table_elt_t *ngx_http_tent_header_out(ngx_http_request_t *r,
    const char *name);
ngx_int_t ngx_http_tent_add_header(ngx_http_request_t *r, const char *name,
    ngx_str_t *value);

#define NGX_HTTP_TENT_ENTITY_MAX      2048
#define NGX_HTTP_TENT_ENTITY_SLACK    (NGX_INET6_ADDRSTRLEN + 2)

ngx_int_t ngx_http_tent_entity_normalize(ngx_str_t *url, u_char *buf,
    ngx_str_t *out);
ngx_int_t ngx_http_tent_entity_canonical(ngx_pool_t *pool, ngx_str_t *url,
    ngx_str_t *out);
ngx_int_t ngx_http_tent_entity_eq(ngx_str_t *a, ngx_str_t *b);
uint64_t ngx_http_tent_now_us(void);
void ngx_http_tent_random_reset(void);
ngx_int_t ngx_http_tent_random_id(ngx_pool_t *pool, const char *prefix,
    size_t bytes, ngx_str_t *id);
ngx_int_t ngx_http_tent_random_hex(ngx_pool_t *pool, size_t bytes,
    ngx_str_t *hex);
ngx_int_t ngx_http_tent_token_valid(ngx_str_t *s, size_t max);
/* exactly len lowercase hex digits: a digest, a file name */
ngx_int_t ngx_http_tent_hex_valid(ngx_str_t *s, size_t len);


extern ngx_module_t  ngx_http_tent_module;


/*
 * A string that goes into our requests' request line or headers (a URL,
 * a key id, a relationship's id): 1 to max visible ASCII characters,
 * none of them '"' or '\\' (no CR, LF or space: nothing in it can end
 * the request line or a header).  Inline: the fetch and MAC files use it
 * without the rest of util.c.
 */

static ngx_inline ngx_int_t
ngx_http_tent_visible_valid(ngx_str_t *s, size_t max)
{
    size_t  i;

    if (s->len == 0 || s->len > max) {
        return NGX_ERROR;
    }

    for (i = 0; i < s->len; i++) {
        if (s->data[i] <= ' ' || s->data[i] >= 0x7f || s->data[i] == '"'
            || s->data[i] == '\\')
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


#endif /* _NGX_HTTP_TENT_BASE_H_INCLUDED_ */
