
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_MODULE_H_INCLUDED_
#define _NGX_HTTP_TENT_MODULE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>
#include <ngx_thread_pool.h>
#include <jansson.h>
#include <ares.h>

#include "ngx_http_tent_mac.h"


#define NGX_HTTP_TENT_MEDIA_TYPE    "application/vnd.tent.v0+json"
#define NGX_HTTP_TENT_PROFILE_REL   "https://tent.io/rels/profile"
#define NGX_HTTP_TENT_CORE_TYPE     "https://tent.io/types/info/core/v0.1.0"
#define NGX_HTTP_TENT_CORE_BASE     "https://tent.io/types/info/core"
#define NGX_HTTP_TENT_VERSION       "0.2"

#define NGX_HTTP_TENT_MAX_PARAMS    4

/* another entity's profile, as discovered and kept */
#define NGX_HTTP_TENT_PROFILE_MAX   (64 * 1024)

#define NGX_HTTP_TENT_LINK_OFF      0
#define NGX_HTTP_TENT_LINK_ABSOLUTE 1
#define NGX_HTTP_TENT_LINK_RELATIVE 2


/* principals: who signed the request */
#define NGX_HTTP_TENT_ANONYMOUS          0
#define NGX_HTTP_TENT_APP                1
#define NGX_HTTP_TENT_AUTHORIZATION      2
#define NGX_HTTP_TENT_FOLLOWER           3
#define NGX_HTTP_TENT_FOLLOWING          4

/* the 18 scopes of Tent 0.2, as bits */
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


typedef struct {
    ngx_uint_t                      kind;
    ngx_uint_t                      scopes;
    ngx_str_t                       key_id;
    ngx_str_t                       app_id;
    ngx_str_t                       auth_id;
    ngx_str_t                       entity;
    json_t                         *credential;  /* the stored record */
} ngx_http_tent_principal_t;


/* store result codes, carried on the wire as one byte */
#define NGX_HTTP_TENT_STORE_OK           0
#define NGX_HTTP_TENT_STORE_NOT_FOUND    1
#define NGX_HTTP_TENT_STORE_CONFLICT     2
#define NGX_HTTP_TENT_STORE_ERROR        3
#define NGX_HTTP_TENT_STORE_UNAVAILABLE  4
#define NGX_HTTP_TENT_STORE_RETRY        5

/* store operations */
#define NGX_HTTP_TENT_OP_GET             1
#define NGX_HTTP_TENT_OP_WRITE           2
#define NGX_HTTP_TENT_OP_SCAN            3
#define NGX_HTTP_TENT_OP_CAS             4
#define NGX_HTTP_TENT_OP_MGET            5

#define NGX_HTTP_TENT_OP_SYNC            0x01

#define NGX_HTTP_TENT_WRITE_PUT          1
#define NGX_HTTP_TENT_WRITE_DEL          2

/* one IPC frame, and so one request or reply, is at most this big */
#define NGX_HTTP_TENT_MAX_FRAME          (64 * 1024 * 1024)


typedef struct ngx_http_tent_store_s     ngx_http_tent_store_t;
typedef struct ngx_http_tent_store_op_s  ngx_http_tent_store_op_t;
typedef struct ngx_http_tent_ipc_conn_s  ngx_http_tent_ipc_conn_t;

typedef void (*ngx_http_tent_store_done_pt)(ngx_http_tent_store_op_t *op);
typedef ngx_int_t (*ngx_http_tent_request_done_pt)(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);


/* a growable byte buffer on the heap: long-lived IPC connections use it */
typedef struct {
    u_char                         *start;
    u_char                         *pos;
    u_char                         *last;
    u_char                         *end;
} ngx_http_tent_bytes_t;


struct ngx_http_tent_store_op_s {
    ngx_pool_t                     *pool;
    ngx_log_t                      *log;

    /* the encoded request: op byte, flags byte, arguments */
    u_char                         *req;
    size_t                          req_len;
    size_t                          req_size;
    size_t                          count_pos;

    /* the reply: status, and the payload behind the status byte */
    ngx_uint_t                      status;
    ngx_str_t                       res;
    u_char                         *cursor;

    ngx_http_tent_store_done_pt     handler;
    void                           *data;
    ngx_http_tent_request_done_pt   request_done;

    /* private to the store */
    ngx_event_t                     timer;
    ngx_rbtree_node_t               node;
    ngx_queue_t                     queue;
    ngx_uint_t                      where;
    ngx_msec_t                      started;     /* for the debug log */
    ngx_http_tent_ipc_conn_t       *conn;
    u_char                         *result;
    size_t                          result_len;
    unsigned                        failed_encoding:1;
    unsigned                        credential:1;
};


struct ngx_http_tent_ipc_conn_s {
    ngx_connection_t               *connection;
    ngx_http_tent_store_t          *store;
    ngx_http_tent_bytes_t           in;
    ngx_http_tent_bytes_t           out;
    ngx_queue_t                     queue;
    ngx_uint_t                      refs;
    unsigned                        closed:1;
    unsigned                        close_when_flushed:1;
};


/* per-process store state; lives in the cycle pool */
struct ngx_http_tent_store_s {
    ngx_str_t                       path;
    ngx_str_t                       db_path;
    ngx_str_t                       socket_path;
    ngx_str_t                       thread_pool_name;
    ngx_thread_pool_t              *thread_pool;
    ngx_msec_t                      timeout;
    ngx_uint_t                      max_waiting;
    ngx_log_t                      *log;

    /* owner side */
    ngx_uint_t                      owner;
    ngx_uint_t                      state;
    void                           *ldb;
    ngx_thread_task_t              *open_task;
    ngx_thread_task_t              *close_task;
    ngx_uint_t                      inflight;
    ngx_queue_t                     cas_queue;   /* the next group */
    ngx_uint_t                      cas_running;
    ngx_queue_t                     waiting;
    ngx_uint_t                      nwaiting;
    ngx_event_t                     open_timer;
    ngx_msec_t                      open_backoff;
    ngx_msec_t                      open_started;
    ngx_uint_t                      open_attempts;
    ngx_connection_t               *listening;
    ngx_queue_t                     conns;

    /* anonymous replies by entity and URI, while the generation holds */
    ngx_rbtree_t                    cache;
    ngx_rbtree_node_t               cache_sentinel;
    ngx_queue_t                     cache_lru;
    ngx_uint_t                      ncache;
    size_t                          cache_bytes;

    /* client side: every worker, the owner too once it has resigned */
    ngx_http_tent_ipc_conn_t       *client;
    ngx_uint_t                      client_state;
    ngx_event_t                     connect_timer;
    ngx_msec_t                      connect_backoff;
    ngx_queue_t                     unsent;
    ngx_rbtree_t                    sent;
    ngx_rbtree_node_t               sent_sentinel;
    uint32_t                        next_id;
};


/* outbound requests: results of a fetch */
#define NGX_HTTP_TENT_FETCH_OK           0
#define NGX_HTTP_TENT_FETCH_REFUSED      1
#define NGX_HTTP_TENT_FETCH_DNS          2
#define NGX_HTTP_TENT_FETCH_CONNECT      3
#define NGX_HTTP_TENT_FETCH_TIMEOUT      4
#define NGX_HTTP_TENT_FETCH_TOO_BIG      5
#define NGX_HTTP_TENT_FETCH_INVALID      6
#define NGX_HTTP_TENT_FETCH_TLS          7
#define NGX_HTTP_TENT_FETCH_BUSY         8
#define NGX_HTTP_TENT_FETCH_ERROR        9
#define NGX_HTTP_TENT_FETCH_BAD_URL      10
#define NGX_HTTP_TENT_FETCH_DEADLINE     11


typedef struct ngx_http_tent_resolver_s  ngx_http_tent_resolver_t;
typedef struct ngx_http_tent_resolve_s   ngx_http_tent_resolve_t;
typedef struct ngx_http_tent_fetch_s     ngx_http_tent_fetch_t;
typedef struct ngx_http_tent_main_conf_s ngx_http_tent_main_conf_t;

typedef void (*ngx_http_tent_resolved_pt)(void *data, int status,
    struct ares_addrinfo *ai);
typedef void (*ngx_http_tent_fetch_pt)(ngx_http_tent_fetch_t *f);
typedef ngx_int_t (*ngx_http_tent_fetch_done_pt)(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f);


/* the most of a profile's servers "tent_outbound_servers" may keep */
#define NGX_HTTP_TENT_SERVERS_MAX        32


/* the answer when unsigned requests have used their outbound share */
#define NGX_HTTP_TENT_ANONYMOUS_BUSY                                          \
    "Too many follow requests and mentions are being checked at other "       \
    "servers; try again later"


/* per server: where and how outbound requests may go */
typedef struct {
    ngx_array_t                    *allow;       /* ngx_cidr_t */
    ngx_msec_t                      timeout;     /* of one hop */
    ngx_msec_t                      deadline;    /* of one operation */
    ngx_uint_t                      servers;     /* kept and tried */
    size_t                          max_response;
} ngx_http_tent_outbound_conf_t;


typedef struct ngx_http_tent_discover_s  ngx_http_tent_discover_t;
typedef ngx_int_t (*ngx_http_tent_discover_done_pt)(ngx_http_request_t *r,
    ngx_http_tent_discover_t *d);
typedef void (*ngx_http_tent_discovered_pt)(ngx_http_tent_discover_t *d);

struct ngx_http_tent_discover_s {
    ngx_str_t                       entity;
    ngx_uint_t                      status;      /* 0, or why it failed */
    const char                     *error;
    json_t                         *profile;
    ngx_str_t                       canonical;   /* the core "entity" */
    json_t                         *servers;
    ngx_str_t                       api_root;
    void                           *data;

    /* private */
    ngx_http_request_t             *request;     /* or NULL: no request */
    ngx_pool_t                     *pool;
    ngx_log_t                      *log;
    ngx_http_tent_outbound_conf_t  *outbound;
    ngx_http_tent_discover_done_pt  done;
    ngx_http_tent_discovered_pt     discovered;
    void                           *saved_state;
    ngx_array_t                     links;
    ngx_uint_t                      next_link;
    ngx_uint_t                      stage;
    ngx_msec_t                      deadline;
};


struct ngx_http_tent_fetch_s {
    ngx_pool_t                     *pool;
    ngx_log_t                      *log;
    ngx_http_tent_outbound_conf_t  *conf;

    /* the request */
    ngx_str_t                       method;
    ngx_str_t                       url;
    ngx_str_t                       accept;
    ngx_str_t                       content_type;
    ngx_str_t                       request_body;
    ngx_str_t                       mac_id;      /* signs when set */
    ngx_str_t                       mac_key;
    ngx_str_t                       mac_algorithm;
    ngx_uint_t                      redirects;   /* how many to follow */
    size_t                          max_response;
    ngx_msec_t                      deadline;    /* of the operation */
    ngx_http_tent_fetch_pt          handler;
    void                           *data;

    /* the outcome */
    ngx_uint_t                      result;
    ngx_uint_t                      status;
    ngx_array_t                     headers;     /* ngx_table_elt_t */
    ngx_str_t                       body;

    /* private */
    ngx_http_tent_main_conf_t      *mcf;
    ngx_http_request_t             *request;
    ngx_http_tent_fetch_done_pt     request_done;
    ngx_str_t                       host;        /* as in the URL */
    ngx_str_t                       name;        /* without brackets */
    u_char                         *cname;
    ngx_uint_t                      port;
    ngx_str_t                       uri;
    ngx_http_tent_resolve_t        *resolving;
    ngx_addr_t                     *addrs;
    ngx_uint_t                      naddrs;
    ngx_uint_t                      next_addr;
    ngx_peer_connection_t           peer;
    ngx_buf_t                       out;
    ngx_buf_t                       in;
    ngx_http_request_t             *hr;          /* for nginx's parsers */
    off_t                           content_length;
    size_t                          interim;     /* 1xx blocks skipped */
    size_t                          scanned;     /* no header end before */
    size_t                          body_offset;
    size_t                          chunk_offset;
    ngx_http_chunked_t              chunked_state;
    ngx_event_t                     timer;
    ngx_event_t                     done;
    unsigned                        ssl:1;
    unsigned                        tls_verified:1;
    unsigned                        explicit_port:1;
    unsigned                        started:1;
    unsigned                        counted:1;
    unsigned                        finished:1;
    unsigned                        sent:1;
    unsigned                        header_done:1;
    unsigned                        chunked:1;
    unsigned                        no_body:1;
    unsigned                        has_deadline:1;
    unsigned                        anonymous:1; /* its own budget */
    unsigned                        cut:1;       /* hop cut by deadline */
};


/* an entity whose URL is fixed by the configuration: background work */
typedef struct {
    ngx_str_t                       entity;
    struct ngx_http_tent_srv_conf_s *scf;
} ngx_http_tent_entity_conf_t;


typedef struct {
    ngx_http_tent_main_conf_t      *mcf;
    ngx_log_t                      *log;
    ngx_event_t                     timer;
    ngx_event_t                     step;
    ngx_pool_t                     *pool;
    ngx_queue_t                     tasks;
    ngx_uint_t                      inflight;
    ngx_uint_t                      next_entity;
    ngx_array_t                     rows;        /* key, value: outbox */
    ngx_uint_t                      census;      /* the table looked at */
    ngx_msec_t                      pruned;      /* dead letters, last */
    unsigned                        profile_rows:1;
    unsigned                        busy:1;
    unsigned                        prune:1;     /* in this pass */
} ngx_http_tent_delivery_t;


struct ngx_http_tent_main_conf_s {
    ngx_str_t                       store_path;
    ngx_str_t                       db_path;
    ngx_str_t                       socket_path;
    ngx_str_t                       thread_pool_name;
    ngx_thread_pool_t              *thread_pool;
    ngx_msec_t                      store_timeout;
    ngx_uint_t                      store_max_waiting;
    ngx_http_tent_store_t          *store;
    ngx_uint_t                      entities;
    size_t                          nonce_zone_size;
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
    ngx_http_tent_resolver_t       *resolver;    /* this worker's */
    void                           *credentials; /* this worker's cache */

    /* delivery to followers */
    ngx_array_t                     entity_confs;
    ngx_flag_t                      delivery_on;
    ngx_msec_t                      delivery_interval;
    ngx_uint_t                      delivery_concurrency;
    ngx_uint_t                      delivery_attempts;
    ngx_msec_t                      delivery_retry;
    ngx_msec_t                      delivery_retry_max;
    time_t                          dead_letter_time;
    ngx_http_tent_delivery_t       *delivery;    /* the owner's */
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
} ngx_http_tent_srv_conf_t;


typedef struct {
    ngx_uint_t                      link;
    ngx_http_complex_value_t       *owner;
    time_t                          mac_skew;
    size_t                          attachment_max;
} ngx_http_tent_loc_conf_t;


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
} ngx_http_tent_ctx_t;


typedef ngx_int_t (*ngx_http_tent_route_pt)(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);


/* a part of a multipart/form-data body; the strings point into it */
typedef struct {
    ngx_str_t                       name;
    ngx_str_t                       filename;
    ngx_str_t                       type;
    ngx_str_t                       data;
} ngx_http_tent_part_t;


/* ngx_http_tent_module.c */
ngx_http_tent_ctx_t *ngx_http_tent_get_ctx(ngx_http_request_t *r);
ngx_uint_t ngx_http_tent_next_item(u_char **p, u_char *last,
    ngx_str_t *item);
ngx_uint_t ngx_http_tent_utf8_valid(u_char *p, size_t len);

/* ngx_http_tent_util.c: entity URLs, one spelling each */
#define NGX_HTTP_TENT_ENTITY_MAX      2048
#define NGX_HTTP_TENT_ENTITY_SLACK    (NGX_INET6_ADDRSTRLEN + 2)

ngx_int_t ngx_http_tent_entity_normalize(ngx_str_t *url, u_char *buf,
    ngx_str_t *out);
ngx_int_t ngx_http_tent_entity_canonical(ngx_pool_t *pool, ngx_str_t *url,
    ngx_str_t *out);
ngx_int_t ngx_http_tent_entity_eq(ngx_str_t *a, ngx_str_t *b);
ngx_int_t ngx_http_tent_is_api_request(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_servers(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t **servers);

/* ngx_http_tent_auth.c */
ngx_int_t ngx_http_tent_authenticate(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_route_pt next);
ngx_int_t ngx_http_tent_has_scopes(ngx_http_tent_ctx_t *ctx,
    ngx_uint_t scopes);
ngx_uint_t ngx_http_tent_scope_bits(json_t *list);
ngx_int_t ngx_http_tent_scope_bit(ngx_str_t *name);
ngx_int_t ngx_http_tent_type_allowed(json_t *list, ngx_str_t *type);
ngx_int_t ngx_http_tent_nonce_zone_init(ngx_shm_zone_t *zone, void *data);
ngx_int_t ngx_http_tent_random_id(ngx_pool_t *pool, const char *prefix,
    size_t bytes, ngx_str_t *id);
ngx_int_t ngx_http_tent_random_hex(ngx_pool_t *pool, size_t bytes,
    ngx_str_t *hex);
ngx_atomic_uint_t ngx_http_tent_generation(ngx_cycle_t *cycle);
void ngx_http_tent_generation_bump(ngx_cycle_t *cycle);
void ngx_http_tent_credential_bump(ngx_cycle_t *cycle);
void ngx_http_tent_credential_cache_exit(ngx_http_tent_main_conf_t *mcf);

/* ngx_http_tent_apps.c */
#define NGX_HTTP_TENT_APPS_UNCONFIRMED_MAX  10000

ngx_int_t ngx_http_tent_apps_create(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_apps_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_app_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_app_update(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_app_delete(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_authorizations_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_authorizations_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_authorization_update(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_authorization_delete(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_authorization_new(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *app_id, json_t *app,
    ngx_str_t *app_raw, json_t *fields, ngx_http_tent_store_op_t *op,
    json_t **result);
ngx_int_t ngx_http_tent_redirect_uri_valid(u_char *p, size_t len);
ngx_int_t ngx_http_tent_reply_state_json(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
ngx_int_t ngx_http_tent_key_created(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);

/* ngx_http_tent_groups.c */
ngx_int_t ngx_http_tent_groups_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_groups_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_group(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* ngx_http_tent_cache.c: anonymous replies, by what they depend on */
typedef struct {
    ngx_str_t                       key;
    ngx_atomic_uint_t               generation;
    ngx_str_t                       body;
    ngx_str_t                       extra;       /* the route's own */
} ngx_http_tent_cached_t;

ngx_int_t ngx_http_tent_cache_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *what, ngx_http_tent_cached_t *c);
void ngx_http_tent_cache_put(ngx_http_request_t *r, ngx_http_tent_cached_t *c);
void ngx_http_tent_cache_exit(ngx_http_tent_store_t *store);

/* ngx_http_tent_multipart.c */
ngx_int_t ngx_http_tent_multipart_parse(ngx_pool_t *pool,
    ngx_str_t *content_type, ngx_str_t *body, ngx_array_t *parts);

/* ngx_http_tent_post_types.c */
json_t *ngx_http_tent_post_validate(json_t *post, ngx_uint_t import,
    const char **error);
ngx_int_t ngx_http_tent_post_type_is(ngx_str_t *type, const char *name);
json_int_t ngx_http_tent_post_published_at(json_t *v, time_t now);

/* ngx_http_tent_posts.c */
uint64_t ngx_http_tent_now_us(void);
ngx_int_t ngx_http_tent_posts_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_post_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_post_versions(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_post_attachment(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_post_versions_scan(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_request_done_pt next);
ngx_int_t ngx_http_tent_post_original(ngx_http_tent_ctx_t *ctx,
    ngx_str_t *entity);
ngx_int_t ngx_http_tent_post_entity(ngx_pool_t *pool,
    ngx_http_tent_ctx_t *ctx, ngx_str_t *entity, ngx_str_t *out);
ngx_int_t ngx_http_tent_post_visible(ngx_http_tent_ctx_t *ctx,
    ngx_str_t *type, ngx_uint_t public, ngx_uint_t original,
    json_t *entities, json_t *groups);
ngx_int_t ngx_http_tent_post_record_visible(ngx_http_tent_ctx_t *ctx,
    json_t *post);
json_t *ngx_http_tent_post_render(ngx_http_tent_ctx_t *ctx, json_t *post);
json_t *ngx_http_tent_post_render_view(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *post);
/* in ngx_http_tent_keys.c: an attachment's reference count */
ngx_int_t ngx_http_tent_blob_count_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *digest, ngx_str_t *key);
ngx_int_t ngx_http_tent_post_index(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_store_op_t *op, json_t *post,
    ngx_uint_t del);

/* ngx_http_tent_posts_query.c */
ngx_int_t ngx_http_tent_posts_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_posts_count(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_post_mentions_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_versions_list(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);

/* ngx_http_tent_oauth.c */
ngx_int_t ngx_http_tent_oauth_authorize(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* ngx_http_tent_guard.c */
ngx_array_t *ngx_http_tent_guard_create(ngx_conf_t *cf);
char *ngx_http_tent_outbound_allow(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_tent_guard_check(ngx_array_t *denied, ngx_array_t *allow,
    struct sockaddr *sa);

/* ngx_http_tent_resolver.c */
ngx_http_tent_resolver_t *ngx_http_tent_resolver_create(ngx_cycle_t *cycle);
void ngx_http_tent_resolver_destroy(ngx_http_tent_resolver_t *res);
ngx_http_tent_resolve_t *ngx_http_tent_resolve(ngx_http_tent_resolver_t *res,
    u_char *host, ngx_http_tent_resolved_pt handler, void *data);
void ngx_http_tent_resolve_cancel(ngx_http_tent_resolve_t *q);
const char *ngx_http_tent_resolve_strerror(int status);

/* ngx_http_tent_fetch.c */
ngx_http_tent_fetch_t *ngx_http_tent_fetch_create(ngx_pool_t *pool,
    ngx_log_t *log, ngx_http_tent_outbound_conf_t *conf);
ngx_int_t ngx_http_tent_fetch_start(ngx_http_tent_fetch_t *f);
void ngx_http_tent_fetch_abort(ngx_http_tent_fetch_t *f);
ngx_int_t ngx_http_tent_fetch_request(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f, ngx_http_tent_fetch_done_pt done);
ngx_str_t *ngx_http_tent_fetch_header(ngx_http_tent_fetch_t *f,
    const char *name);
const char *ngx_http_tent_fetch_strerror(ngx_uint_t result);
ngx_uint_t ngx_http_tent_fetch_next_server(ngx_http_tent_fetch_t *f);

/* ngx_http_tent_remote.c */
ngx_http_tent_fetch_t *ngx_http_tent_remote_fetch(ngx_http_request_t *r,
    ngx_str_t *url, const char *method);
ngx_int_t ngx_http_tent_server_url(ngx_pool_t *pool, json_t *server,
    ngx_str_t *path, ngx_str_t *query, ngx_str_t *url);
ngx_int_t ngx_http_tent_remote_sign(ngx_http_tent_fetch_t *f, json_t *cred);
ngx_uint_t ngx_http_tent_remote_status(ngx_http_tent_fetch_t *f);
ngx_int_t ngx_http_tent_remote_error(ngx_http_request_t *r,
    ngx_http_tent_fetch_t *f, const char *step);
ngx_int_t ngx_http_tent_entity_valid(ngx_str_t *url);
ngx_int_t ngx_http_tent_discover(ngx_http_request_t *r, ngx_str_t *entity,
    ngx_http_tent_discover_done_pt done, void *data);
ngx_int_t ngx_http_tent_discover_start(ngx_pool_t *pool, ngx_log_t *log,
    ngx_http_tent_outbound_conf_t *outbound, ngx_str_t *entity,
    ngx_msec_t deadline, ngx_http_tent_discovered_pt discovered, void *data);
ngx_int_t ngx_http_tent_remote_anonymous(ngx_http_request_t *r);
ngx_uint_t ngx_http_tent_servers_max(json_t *servers,
    ngx_http_tent_outbound_conf_t *outbound);
json_t *ngx_http_tent_servers_cap(ngx_pool_t *pool, json_t *servers,
    ngx_http_tent_outbound_conf_t *outbound);

/* ngx_http_tent_relations.c: what followers and followings share */
typedef ngx_int_t (*ngx_http_tent_list_item_pt)(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *record, void *data, json_t **out);

typedef struct {
    ngx_str_t                       name;        /* "followers" */
    const char                     *kind;        /* its posts' type */
    u_char                          table;
    u_char                          entity_table;
    ngx_uint_t                      read_scope;
    ngx_uint_t                      peer_kind;

    /* another table listed the same way (apps); NULL for relations */
    ngx_int_t                     (*id_valid)(ngx_str_t *id);
    ngx_http_tent_list_item_pt      item;
} ngx_http_tent_relation_t;

typedef ngx_int_t (*ngx_http_tent_relation_pt)(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *record);

ngx_int_t ngx_http_tent_relation_id(ngx_pool_t *pool, ngx_str_t *id);
ngx_int_t ngx_http_tent_relation_id_valid(ngx_str_t *id);
ngx_int_t ngx_http_tent_relation_is_peer(ngx_http_tent_ctx_t *ctx,
    json_t *record, ngx_uint_t kind);
json_t *ngx_http_tent_relation_render(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_relation_t *rel, json_t *record);
ngx_int_t ngx_http_tent_relation_visible(ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_relation_t *rel, json_t *record);
ngx_int_t ngx_http_tent_relation_load(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_relation_t *rel,
    ngx_str_t *param, ngx_http_tent_relation_pt next);
ngx_int_t ngx_http_tent_relation_load_entity(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_relation_t *rel,
    ngx_str_t *entity, ngx_http_tent_relation_pt next);
ngx_int_t ngx_http_tent_relation_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_relation_t *rel);
ngx_int_t ngx_http_tent_relations_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_relation_t *rel);
ngx_int_t ngx_http_tent_list_table(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_relation_t *rel, void *data,
    ngx_str_t *args);
ngx_int_t ngx_http_tent_internal_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_store_op_t *op, const char *kind,
    json_t *content, ngx_uint_t public);
ngx_int_t ngx_http_tent_relation_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_store_op_t *op, const char *kind,
    json_t *record, const char *action);
ngx_int_t ngx_http_tent_relation_written(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
void ngx_http_tent_relation_update(json_t *record, json_t *body);
ngx_int_t ngx_http_tent_relation_remove(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_relation_t *rel, json_t *record);

/* ngx_http_tent_followers.c */
ngx_int_t ngx_http_tent_string_list(json_t *body, const char *name,
    const char *dflt, json_t **out);
ngx_int_t ngx_http_tent_credential_row(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, const char *kind, json_t *record,
    ngx_str_t *key, ngx_str_t *value);
ngx_int_t ngx_http_tent_followers_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_followers_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_follower(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* ngx_http_tent_followings.c */
ngx_int_t ngx_http_tent_followings_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_followings_list(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_following(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_following_proxy(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* ngx_http_tent_delivery.c */
ngx_int_t ngx_http_tent_delivery_mark(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_store_op_t *op, json_t *post);
ngx_int_t ngx_http_tent_delivery_start(ngx_cycle_t *cycle,
    ngx_http_tent_main_conf_t *mcf);

/* ngx_http_tent_notifications.c */
ngx_int_t ngx_http_tent_notification_challenge(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_notification_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_notification_relayed(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_notification_store(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, json_t *body, ngx_str_t *entity,
    ngx_uint_t mention);
ngx_int_t ngx_http_tent_token_valid(ngx_str_t *s, size_t max);

/* ngx_http_tent_mentions.c */
ngx_int_t ngx_http_tent_mention_post(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* ngx_http_tent_discovery.c */
ngx_int_t ngx_http_tent_discovery_init(ngx_conf_t *cf);
ngx_int_t ngx_http_tent_add_variables(ngx_conf_t *cf);
ngx_int_t ngx_http_tent_root_handler(ngx_http_request_t *r);

/* ngx_http_tent_profile.c */
ngx_int_t ngx_http_tent_profile_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_profile_type_get(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);
ngx_int_t ngx_http_tent_profile_change(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx);

/* ngx_http_tent_json.c */
ngx_int_t ngx_http_tent_send_json(ngx_http_request_t *r, ngx_uint_t status,
    json_t *json);
ngx_int_t ngx_http_tent_send_error(ngx_http_request_t *r, ngx_uint_t status,
    const char *message);
ngx_int_t ngx_http_tent_send_body(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *body);
ngx_int_t ngx_http_tent_error_body(ngx_pool_t *pool, ngx_uint_t status,
    const char *message, ngx_str_t *out);
const char *ngx_http_tent_status_text(ngx_uint_t status);
json_t *ngx_http_tent_json_parse(ngx_str_t *s, ngx_log_t *log);
ngx_int_t ngx_http_tent_json_dump(ngx_pool_t *pool, json_t *json,
    ngx_str_t *out);
json_t *ngx_http_tent_json_string(ngx_str_t *s);
ngx_int_t ngx_http_tent_json_str(json_t *obj, const char *name,
    ngx_str_t *out);
ngx_int_t ngx_http_tent_json_cleanup(ngx_pool_t *pool, json_t *json);
json_t *ngx_http_tent_json_own(ngx_pool_t *pool, json_t *json);
json_t *ngx_http_tent_json_load(ngx_http_request_t *r, ngx_str_t *value);
ngx_int_t ngx_http_tent_read_json(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_route_pt next);
ngx_int_t ngx_http_tent_read_form(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_route_pt next);
ngx_int_t ngx_http_tent_body_bytes(ngx_http_request_t *r, ngx_str_t *body);
ngx_int_t ngx_http_tent_body_blank(ngx_str_t *body);

/* ngx_http_tent_keys.c */
#define NGX_HTTP_TENT_TABLE_APP            'a'
#define NGX_HTTP_TENT_TABLE_BLOB           'b'
#define NGX_HTTP_TENT_TABLE_AUTHORIZATION  'A'
#define NGX_HTTP_TENT_TABLE_CREDENTIAL     'c'
#define NGX_HTTP_TENT_TABLE_GROUP          'g'
#define NGX_HTTP_TENT_TABLE_CODE           'k'
#define NGX_HTTP_TENT_TABLE_META           'm'
#define NGX_HTTP_TENT_TABLE_PROFILE        'p'
#define NGX_HTTP_TENT_TABLE_PROFILE_OLD    'q'
#define NGX_HTTP_TENT_TABLE_IDEMPOTENCY    'd'
#define NGX_HTTP_TENT_TABLE_POST_INDEX     'i'
#define NGX_HTTP_TENT_TABLE_POST           't'
#define NGX_HTTP_TENT_TABLE_POST_VERSION   'v'
#define NGX_HTTP_TENT_TABLE_FOLLOWER       'f'
#define NGX_HTTP_TENT_TABLE_OUTBOX         'o'
#define NGX_HTTP_TENT_TABLE_JOB            'j'
#define NGX_HTTP_TENT_TABLE_DEAD           'x'
#define NGX_HTTP_TENT_TABLE_FOLLOWER_ENTITY 'e'
#define NGX_HTTP_TENT_TABLE_FOLLOWING      'F'
#define NGX_HTTP_TENT_TABLE_FOLLOWING_ENTITY 'E'
#define NGX_HTTP_TENT_TABLE_SUBSCRIPTION   'n'
#define NGX_HTTP_TENT_TABLE_UNCONFIRMED    'u'

ngx_int_t ngx_http_tent_key(ngx_pool_t *pool, ngx_str_t *entity,
    u_char table, ngx_str_t *rest, ngx_str_t *key);
u_char *ngx_http_tent_put_u64(u_char *p, uint64_t v);
ngx_int_t ngx_http_tent_key_range(ngx_pool_t *pool, ngx_str_t *entity,
    u_char table, ngx_str_t *start, ngx_str_t *end);
ngx_int_t ngx_http_tent_type_base(ngx_str_t *type, ngx_str_t *base);
ngx_int_t ngx_http_tent_post_key(ngx_pool_t *pool, ngx_str_t *entity,
    ngx_str_t *post_entity, ngx_str_t *id, ngx_int_t version, ngx_str_t *key);
ngx_int_t ngx_http_tent_index_key(ngx_pool_t *pool, ngx_str_t *entity,
    u_char column, uint64_t seconds, uint64_t ms, ngx_str_t *post_entity,
    ngx_str_t *id, ngx_uint_t parts, ngx_str_t *key);
ngx_int_t ngx_http_tent_index_parse(ngx_str_t *entity, ngx_str_t *key,
    uint64_t *seconds, ngx_str_t *post_entity, ngx_str_t *id);

/* ngx_http_tent_store.c: the one store API handlers use */
ngx_http_tent_store_op_t *ngx_http_tent_store_op_create(ngx_pool_t *pool,
    ngx_log_t *log);
ngx_int_t ngx_http_tent_store_get(ngx_http_tent_store_op_t *op,
    ngx_str_t *key);
ngx_int_t ngx_http_tent_store_cas(ngx_http_tent_store_op_t *op,
    ngx_str_t *key, ngx_str_t *expected, ngx_str_t *value);
ngx_int_t ngx_http_tent_store_write(ngx_http_tent_store_op_t *op,
    ngx_uint_t sync);
ngx_int_t ngx_http_tent_store_write_put(ngx_http_tent_store_op_t *op,
    ngx_str_t *key, ngx_str_t *value);
ngx_int_t ngx_http_tent_store_write_del(ngx_http_tent_store_op_t *op,
    ngx_str_t *key);
ngx_int_t ngx_http_tent_store_scan(ngx_http_tent_store_op_t *op,
    ngx_str_t *start, ngx_str_t *end, ngx_uint_t limit, ngx_uint_t reverse);
ngx_int_t ngx_http_tent_store_batch_append(ngx_http_tent_store_op_t *op,
    ngx_http_tent_store_op_t *other);
ngx_int_t ngx_http_tent_store_mget(ngx_http_tent_store_op_t *op);
ngx_int_t ngx_http_tent_store_mget_key(ngx_http_tent_store_op_t *op,
    ngx_str_t *key);
ngx_int_t ngx_http_tent_store_next_value(ngx_http_tent_store_op_t *op,
    ngx_uint_t *found, ngx_str_t *value);
ngx_int_t ngx_http_tent_store_submit(ngx_http_tent_store_op_t *op);
ngx_int_t ngx_http_tent_store_submit_request(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op, ngx_http_tent_request_done_pt handler);
ngx_int_t ngx_http_tent_store_get_request(ngx_http_request_t *r,
    u_char table, ngx_str_t *rest, ngx_http_tent_request_done_pt handler);
ngx_int_t ngx_http_tent_store_value(ngx_http_tent_store_op_t *op,
    ngx_str_t *value);
ngx_int_t ngx_http_tent_store_next(ngx_http_tent_store_op_t *op,
    ngx_str_t *key, ngx_str_t *value);
ngx_int_t ngx_http_tent_store_http_status(ngx_http_tent_store_op_t *op);

/* internal to the store files */
ngx_http_tent_store_t *ngx_http_tent_store_create(ngx_cycle_t *cycle,
    ngx_http_tent_main_conf_t *mcf);
void ngx_http_tent_store_finish(ngx_http_tent_store_op_t *op,
    ngx_uint_t status, u_char *data, size_t len);
void ngx_http_tent_store_dispatch(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op);
void ngx_http_tent_store_wait(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op, ngx_uint_t where);
void ngx_http_tent_store_unwait(ngx_http_tent_store_op_t *op);
void ngx_http_tent_store_fail_later(ngx_http_tent_store_op_t *op,
    ngx_uint_t status, const char *message);
#if (NGX_DEBUG)
void ngx_http_tent_store_debug(ngx_http_tent_store_op_t *op,
    const char *what, ngx_uint_t answered);
#endif

#define NGX_HTTP_TENT_WHERE_NONE       0
#define NGX_HTTP_TENT_WHERE_OPENING    1
#define NGX_HTTP_TENT_WHERE_UNSENT     2
#define NGX_HTTP_TENT_WHERE_SENT       3
#define NGX_HTTP_TENT_WHERE_RUNNING    4
#define NGX_HTTP_TENT_WHERE_FAILED     5

/* ngx_http_tent_store_owner.c: LevelDB, only ever on the thread pool */
#define NGX_HTTP_TENT_OWNER_NONE       0
#define NGX_HTTP_TENT_OWNER_OPENING    1
#define NGX_HTTP_TENT_OWNER_OPEN       2
#define NGX_HTTP_TENT_OWNER_CLOSING    3
#define NGX_HTTP_TENT_OWNER_CLOSED     4

ngx_int_t ngx_http_tent_owner_start(ngx_http_tent_store_t *store);
void ngx_http_tent_owner_submit(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op);
void ngx_http_tent_owner_resign(ngx_http_tent_store_t *store);
void ngx_http_tent_owner_exit(ngx_http_tent_store_t *store);
ngx_int_t ngx_http_tent_owner_accepts(ngx_http_tent_store_t *store);
ngx_int_t ngx_http_tent_store_exec(void *ldb, u_char *req, size_t len,
    u_char **res, size_t *res_len);

/* ngx_http_tent_store_ipc.c: the socket between workers and the owner */
ngx_int_t ngx_http_tent_ipc_listen(ngx_http_tent_store_t *store);
void ngx_http_tent_ipc_stop_listening(ngx_http_tent_store_t *store);
void ngx_http_tent_ipc_submit(ngx_http_tent_store_t *store,
    ngx_http_tent_store_op_t *op);
void ngx_http_tent_ipc_cancel(ngx_http_tent_store_op_t *op);
void ngx_http_tent_ipc_drained(ngx_http_tent_store_t *store);
void ngx_http_tent_ipc_init_client(ngx_http_tent_store_t *store);
void ngx_http_tent_ipc_exit(ngx_http_tent_store_t *store);

/* ngx_http_tent_bytes.c helpers live in the IPC file */
ngx_int_t ngx_http_tent_bytes_reserve(ngx_http_tent_bytes_t *b, size_t n);
void ngx_http_tent_bytes_free(ngx_http_tent_bytes_t *b);


extern ngx_module_t  ngx_http_tent_module;


#endif /* _NGX_HTTP_TENT_MODULE_H_INCLUDED_ */
