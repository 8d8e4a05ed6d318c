
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The owner's sign-in on a provisioning server (docs/auth.md, "Sign-in
 * per tenant"): the parts with no page of their own.
 *
 * The password: scrypt (OpenSSL's EVP_PBE_scrypt) with a random 16-byte
 * salt, stored as "scrypt$N$r$p$<salt>$<key>" (base64url) in the entity's
 * registry row: the cost travels with the hash, so a change of
 * tent_password_scrypt keeps the old hashes verifiable.  A check runs on
 * its own thread pool, tent_password_thread_pool (it costs tens of
 * milliseconds and 16 MB by default), the derived keys compared with
 * CRYPTO_memcmp.
 *
 * The throttle: failures counted by entity and by client address in a
 * shared zone of its own ("tent_signin"), two tables of fixed size (sets
 * by an HMAC with a secret of the zone), so a flood of client addresses
 * only pushes other addresses out, never an entity's count.  An attempt
 * is counted before its check (the checks of many attempts at once are
 * bounded as well) and a success clears the entity's and the address's
 * counts.
 *
 * The cookies (the session, the known device) are in
 * ngx_http_tent_signin_cookie.c.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_signin.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>


#define NGX_HTTP_TENT_SALT_LEN          16
#define NGX_HTTP_TENT_KEY_LEN           32

/* what a stored hash may ask for at most (a row written by hand) */
#define NGX_HTTP_TENT_SCRYPT_N_MAX      (1 << 20)
#define NGX_HTTP_TENT_SCRYPT_R_MAX      32
#define NGX_HTTP_TENT_SCRYPT_P_MAX      16
#define NGX_HTTP_TENT_SCRYPT_MEM_MAX    (256 * 1024 * 1024)

/*
 * what tent_password_scrypt may ask for: the operator's password action
 * hashes in the worker's event loop (about 150 ms at this bound)
 */
#define NGX_HTTP_TENT_SCRYPT_CONF_MEM   (32 * 1024 * 1024)
#define NGX_HTTP_TENT_SCRYPT_CONF_WORK  (64 * 1024 * 1024)

/* the throttle: slots, ways, failures before a wait, the waits */
#define NGX_HTTP_TENT_THROTTLE_ENTITIES   4096
#define NGX_HTTP_TENT_THROTTLE_ADDRESSES  8192
#define NGX_HTTP_TENT_THROTTLE_WAYS       4
#define NGX_HTTP_TENT_THROTTLE_WINDOW     900
#define NGX_HTTP_TENT_THROTTLE_ADDR_FAILS 5
#define NGX_HTTP_TENT_THROTTLE_ENT_FAILS  20
#define NGX_HTTP_TENT_THROTTLE_WAIT       60
#define NGX_HTTP_TENT_THROTTLE_ADDR_MAX   3600
#define NGX_HTTP_TENT_THROTTLE_ENT_MAX    900

#define NGX_HTTP_TENT_SIGNIN_ZONE       (512 * 1024)

/* checks in flight in a worker: each holds 128 N r bytes */
#define NGX_HTTP_TENT_SIGNIN_CHECKS     4


typedef struct {
    uint64_t                        id;
    time_t                          last;       /* the last attempt */
    time_t                          until;      /* refused until */
    ngx_uint_t                      failures;
} ngx_http_tent_throttle_slot_t;


typedef struct {
    /* the key of the slots' hash, random: their sets are not computable */
    u_char                          key[32];
    ngx_http_tent_throttle_slot_t   entities[NGX_HTTP_TENT_THROTTLE_ENTITIES];
    ngx_http_tent_throttle_slot_t   addresses[
                                        NGX_HTTP_TENT_THROTTLE_ADDRESSES];
} ngx_http_tent_throttle_t;


/* a stored hash, parsed */
typedef struct {
    uint64_t                        n;
    uint64_t                        r;
    uint64_t                        p;
    u_char                          salt[64];
    size_t                          salt_len;
    u_char                          key[64];
    size_t                          key_len;
} ngx_http_tent_scrypt_t;


/* a check on the thread pool */
typedef struct {
    ngx_http_request_t             *request;
    ngx_http_tent_scrypt_t          hash;
    u_char                         *password;
    size_t                          password_len;
    ngx_uint_t                      match;
    ngx_http_tent_verified_pt       done;
} ngx_http_tent_verify_t;


static ngx_uint_t  ngx_http_tent_signin_checks;


static ngx_int_t ngx_http_tent_signin_zone_init(ngx_shm_zone_t *zone,
    void *data);
static void ngx_http_tent_verify_thread(void *data, ngx_log_t *log);
static void ngx_http_tent_verify_done(ngx_event_t *ev);


/* tent_password_scrypt N r p; */

char *
ngx_http_tent_password_scrypt_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_tent_main_conf_t *mcf = conf;

    ngx_int_t   n, r, p;
    ngx_str_t  *value;

    if (mcf->scrypt_n) {
        return "is duplicate";
    }

    value = cf->args->elts;

    n = ngx_atoi(value[1].data, value[1].len);
    r = ngx_atoi(value[2].data, value[2].len);
    p = ngx_atoi(value[3].data, value[3].len);

    if (n < 1024 || n > NGX_HTTP_TENT_SCRYPT_N_MAX || (n & (n - 1))
        || r < 1 || r > NGX_HTTP_TENT_SCRYPT_R_MAX
        || p < 1 || p > NGX_HTTP_TENT_SCRYPT_P_MAX
        || (uint64_t) 128 * n * r > NGX_HTTP_TENT_SCRYPT_CONF_MEM
        || (uint64_t) 128 * n * r * p > NGX_HTTP_TENT_SCRYPT_CONF_WORK)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tent_password_scrypt\" takes N (a power of 2 "
                           "from 1024 to 1048576), r (1 to 32) and p (1 to "
                           "16), with 128 * N * r at most 32 MB and "
                           "128 * N * r * p at most 64 MB");
        return NGX_CONF_ERROR;
    }

    mcf->scrypt_n = n;
    mcf->scrypt_r = r;
    mcf->scrypt_p = p;

    return NGX_CONF_OK;
}


/* in postconfiguration: the cost's default, the throttle's zone */

ngx_int_t
ngx_http_tent_signin_init(ngx_conf_t *cf)
{
    ngx_str_t                   name;
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_tent_module);

    if (mcf->scrypt_n == 0) {
        mcf->scrypt_n = NGX_HTTP_TENT_SCRYPT_N;
        mcf->scrypt_r = NGX_HTTP_TENT_SCRYPT_R;
        mcf->scrypt_p = NGX_HTTP_TENT_SCRYPT_P;
    }

    if (!mcf->provisioning) {
        return NGX_OK;
    }

    /*
     * the checks' own threads: 4 checks of tens of milliseconds in worker
     * 0 would hold every thread of a small store pool, and every tenant's
     * store operations would wait behind them.  nginx's "default" (32
     * threads) may serve both; a pool declared for the store may not.
     */

    if (mcf->password_pool_name.len == 0) {
        ngx_str_set(&mcf->password_pool_name, "default");
    }

    mcf->password_pool = ngx_thread_pool_add(cf, &mcf->password_pool_name);
    if (mcf->password_pool == NULL) {
        return NGX_ERROR;
    }

    if (mcf->password_pool == mcf->thread_pool
        && !(mcf->password_pool_name.len == 7
             && ngx_strncmp(mcf->password_pool_name.data, "default", 7)
                == 0))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tent_password_thread_pool %V\" shares the "
                           "store's thread pool: the password checks would "
                           "hold its threads; declare a pool of their own "
                           "(or use \"default\")",
                           &mcf->password_pool_name);
        return NGX_ERROR;
    }

    ngx_str_set(&name, "tent_signin");

    mcf->signin_zone = ngx_shared_memory_add(cf, &name,
                                             NGX_HTTP_TENT_SIGNIN_ZONE,
                                             &ngx_http_tent_module);
    if (mcf->signin_zone == NULL) {
        return NGX_ERROR;
    }

    mcf->signin_zone->init = ngx_http_tent_signin_zone_init;

    return NGX_OK;
}


static ngx_int_t
ngx_http_tent_signin_zone_init(ngx_shm_zone_t *zone, void *data)
{
    ngx_slab_pool_t           *shpool;
    ngx_http_tent_throttle_t  *t;

    if (data) {
        /* a reload: the counts go on */
        zone->data = data;
        return NGX_OK;
    }

    shpool = (ngx_slab_pool_t *) zone->shm.addr;

    if (zone->shm.exists) {
        zone->data = shpool->data;
        return NGX_OK;
    }

    t = ngx_slab_calloc(shpool, sizeof(ngx_http_tent_throttle_t));
    if (t == NULL) {
        return NGX_ERROR;
    }

    if (RAND_bytes(t->key, sizeof(t->key)) != 1) {
        ngx_log_error(NGX_LOG_EMERG, zone->shm.log, 0,
                      "tent sign-in: RAND_bytes() failed");
        return NGX_ERROR;
    }

    shpool->data = t;
    zone->data = t;

    return NGX_OK;
}


/* "scrypt$N$r$p$<salt>$<key>" */

static ngx_int_t
ngx_http_tent_scrypt_parse(ngx_str_t *stored, ngx_http_tent_scrypt_t *h)
{
    u_char      *p, *last, *f[6];
    ngx_int_t    v[3];
    ngx_str_t    src, dst;
    ngx_uint_t   i;

    p = stored->data;
    last = p + stored->len;

    for (i = 0; i < 6; i++) {
        f[i] = p;
        p = ngx_strlchr(p, last, '$');

        if ((p == NULL) != (i == 5)) {
            return NGX_ERROR;
        }

        if (p == NULL) {
            p = last;
        }

        p++;
    }

    if (f[1] - f[0] != 7 || ngx_strncmp(f[0], "scrypt$", 7) != 0) {
        return NGX_ERROR;
    }

    for (i = 0; i < 3; i++) {
        v[i] = ngx_atoi(f[i + 1], f[i + 2] - f[i + 1] - 1);
    }

    if (v[0] < 2 || v[0] > NGX_HTTP_TENT_SCRYPT_N_MAX || (v[0] & (v[0] - 1))
        || v[1] < 1 || v[1] > NGX_HTTP_TENT_SCRYPT_R_MAX
        || v[2] < 1 || v[2] > NGX_HTTP_TENT_SCRYPT_P_MAX
        || (uint64_t) 128 * v[0] * v[1] > NGX_HTTP_TENT_SCRYPT_MEM_MAX)
    {
        return NGX_ERROR;
    }

    h->n = v[0];
    h->r = v[1];
    h->p = v[2];

    src.data = f[4];
    src.len = f[5] - f[4] - 1;

    if (ngx_base64_decoded_length(src.len) > sizeof(h->salt)) {
        return NGX_ERROR;
    }

    dst.data = h->salt;

    if (ngx_decode_base64url(&dst, &src) != NGX_OK || dst.len == 0) {
        return NGX_ERROR;
    }

    h->salt_len = dst.len;

    src.data = f[5];
    src.len = last - f[5];

    if (ngx_base64_decoded_length(src.len) > sizeof(h->key)) {
        return NGX_ERROR;
    }

    dst.data = h->key;

    if (ngx_decode_base64url(&dst, &src) != NGX_OK || dst.len < 16) {
        return NGX_ERROR;
    }

    h->key_len = dst.len;

    return NGX_OK;
}


static int
ngx_http_tent_scrypt(ngx_http_tent_scrypt_t *h, u_char *password,
    size_t len, u_char *key, size_t key_len)
{
    uint64_t  maxmem;

    /* what OpenSSL needs: 128 r (N + 2) and 128 r p, and some */
    maxmem = 128 * h->r * (h->n + 2) + 128 * h->r * h->p + 4096;

    return EVP_PBE_scrypt((const char *) password, len, h->salt,
                          h->salt_len, h->n, h->r, h->p, maxmem, key,
                          key_len);
}


ngx_int_t
ngx_http_tent_password_hash(ngx_pool_t *pool, ngx_log_t *log,
    ngx_str_t *password, ngx_str_t *stored)
{
    u_char                     *p, key[NGX_HTTP_TENT_KEY_LEN];
    ngx_str_t                   src, dst;
    ngx_http_tent_scrypt_t      h;
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(ngx_cycle, ngx_http_tent_module);

    ngx_memzero(&h, sizeof(ngx_http_tent_scrypt_t));

    h.n = mcf->scrypt_n;
    h.r = mcf->scrypt_r;
    h.p = mcf->scrypt_p;
    h.salt_len = NGX_HTTP_TENT_SALT_LEN;

    if (RAND_bytes(h.salt, NGX_HTTP_TENT_SALT_LEN) != 1
        || ngx_http_tent_scrypt(&h, password->data, password->len, key,
                                sizeof(key))
           != 1)
    {
        ngx_log_error(NGX_LOG_ALERT, log, 0,
                      "tent sign-in: EVP_PBE_scrypt() failed");
        return NGX_ERROR;
    }

    stored->data = ngx_pnalloc(pool, sizeof("scrypt$$$$$") - 1
                                     + 3 * NGX_INT64_LEN
                                     + ngx_base64_encoded_length(
                                           NGX_HTTP_TENT_SALT_LEN)
                                     + ngx_base64_encoded_length(
                                           sizeof(key)));
    if (stored->data == NULL) {
        OPENSSL_cleanse(key, sizeof(key));
        return NGX_ERROR;
    }

    p = ngx_sprintf(stored->data, "scrypt$%uL$%uL$%uL$", h.n, h.r, h.p);

    src.data = h.salt;
    src.len = h.salt_len;
    dst.data = p;
    ngx_encode_base64url(&dst, &src);
    p += dst.len;
    *p++ = '$';

    src.data = key;
    src.len = sizeof(key);
    dst.data = p;
    ngx_encode_base64url(&dst, &src);
    p += dst.len;

    stored->len = p - stored->data;

    OPENSSL_cleanse(key, sizeof(key));

    return NGX_OK;
}


/* a check now would be refused: asked before the throttle counts it */

ngx_uint_t
ngx_http_tent_password_busy(void)
{
    return ngx_http_tent_signin_checks >= NGX_HTTP_TENT_SIGNIN_CHECKS;
}


ngx_int_t
ngx_http_tent_password_verify(ngx_http_request_t *r, ngx_str_t *stored,
    ngx_str_t *password, ngx_http_tent_verified_pt done)
{
    ngx_thread_task_t          *task;
    ngx_http_tent_verify_t     *v;
    ngx_http_tent_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_tent_module);

    /* the memory and threads a flood of sign-ins can take: bounded */

    if (ngx_http_tent_signin_checks >= NGX_HTTP_TENT_SIGNIN_CHECKS) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent sign-in: %ui checks in flight already: "
                      "this one is refused", ngx_http_tent_signin_checks);
        return NGX_BUSY;
    }

    task = ngx_thread_task_alloc(r->pool, sizeof(ngx_http_tent_verify_t));
    if (task == NULL) {
        return NGX_ERROR;
    }

    v = task->ctx;
    v->request = r;
    v->done = done;
    v->password = password->data;
    v->password_len = password->len;

    if (ngx_http_tent_scrypt_parse(stored, &v->hash) != NGX_OK) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "tent sign-in: the stored password of this entity "
                      "is not \"scrypt$N$r$p$salt$key\": set it again");
        return NGX_ERROR;
    }

    task->handler = ngx_http_tent_verify_thread;
    task->event.handler = ngx_http_tent_verify_done;
    task->event.data = v;

    if (ngx_thread_task_post(mcf->password_pool, task) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_log_debug0(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent sign-in: checking the password");

    /* the request waits: its pool is not freed under the thread */

    r->main->blocked++;
    r->main->count++;
    ngx_http_tent_signin_checks++;

    return NGX_DONE;
}


static void
ngx_http_tent_verify_thread(void *data, ngx_log_t *log)
{
    ngx_http_tent_verify_t *v = data;

    u_char  key[64];

    v->match = ngx_http_tent_scrypt(&v->hash, v->password, v->password_len,
                                    key, v->hash.key_len) == 1
               && CRYPTO_memcmp(key, v->hash.key, v->hash.key_len) == 0;

    OPENSSL_cleanse(key, sizeof(key));
}


static void
ngx_http_tent_verify_done(ngx_event_t *ev)
{
    ngx_int_t                rc;
    ngx_connection_t        *c;
    ngx_http_request_t      *r;
    ngx_http_tent_verify_t  *v;

    v = ev->data;
    r = v->request;
    c = r->connection;

    r->main->blocked--;
    ngx_http_tent_signin_checks--;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "tent sign-in: the password %s",
                   v->match ? "matches" : "does not match");

    if (c->error) {
        rc = NGX_HTTP_CLIENT_CLOSED_REQUEST;

    } else {
        rc = v->done(r, v->match);
    }

    ngx_http_finalize_request(r, rc);
    ngx_http_run_posted_requests(c);
}


static void
ngx_http_tent_signin_wipe_handler(void *data)
{
    ngx_str_t *s = data;

    if (s->data) {
        ngx_explicit_memzero(s->data, s->len);
    }
}


/*
 * "s" wiped when the pool goes, whatever the path (an error, a 429, a
 * client gone during the check): the last of a password's copies
 */

ngx_int_t
ngx_http_tent_signin_wipe_later(ngx_pool_t *pool, ngx_str_t *s)
{
    ngx_pool_cleanup_t  *cln;

    cln = ngx_pool_cleanup_add(pool, 0);
    if (cln == NULL) {
        ngx_explicit_memzero(s->data, s->len);
        return NGX_ERROR;
    }

    cln->handler = ngx_http_tent_signin_wipe_handler;
    cln->data = s;

    return NGX_OK;
}


void
ngx_http_tent_signin_wipe(ngx_http_request_t *r, ngx_str_t *copy)
{
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    ngx_explicit_memzero(copy->data, copy->len);

    if (r->request_body == NULL) {
        return;
    }

    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;

        if (!b->in_file && b->pos && b->last > b->pos) {
            ngx_explicit_memzero(b->pos, b->last - b->pos);
        }
    }
}


/*
 * The throttle's slot of an id in its set, or NULL; "take": one made.
 * A slot that refuses (locked) is never taken from its id, and an
 * entity's slot with failures in the window neither: else trying other
 * ids of the same set would clear an entity's count.  When none can go,
 * NULL: the new id is refused (429) until one can.  An address's slot
 * with failures but not locked may go: the entity's count stays.
 */

static ngx_http_tent_throttle_slot_t *
ngx_http_tent_throttle_slot(ngx_http_tent_throttle_slot_t *table,
    ngx_uint_t size, uint64_t id, ngx_uint_t take, ngx_uint_t strict)
{
    time_t                          now;
    ngx_uint_t                      i, set;
    ngx_http_tent_throttle_slot_t  *s, *oldest;

    now = ngx_time();
    set = (ngx_uint_t) (id % (size / NGX_HTTP_TENT_THROTTLE_WAYS))
          * NGX_HTTP_TENT_THROTTLE_WAYS;
    oldest = NULL;

    for (i = 0; i < NGX_HTTP_TENT_THROTTLE_WAYS; i++) {
        s = &table[set + i];

        if (s->id == id) {
            return s;
        }

        if (s->id
            && (s->until > now
                || (strict && s->failures
                    && s->last + NGX_HTTP_TENT_THROTTLE_WINDOW >= now)))
        {
            continue;
        }

        if (oldest == NULL || s->last < oldest->last) {
            oldest = s;
        }
    }

    if (!take || oldest == NULL) {
        return NULL;
    }

    /* the one least recently tried goes */

    ngx_memzero(oldest, sizeof(ngx_http_tent_throttle_slot_t));
    oldest->id = id;

    return oldest;
}


/* an id: HMAC-SHA256 with the zone's key, its first 8 bytes */

static uint64_t
ngx_http_tent_throttle_id(ngx_http_tent_throttle_t *t, u_char kind,
    u_char *data, size_t len)
{
    u_char        digest[EVP_MAX_MD_SIZE];
    uint64_t      id;
    unsigned int  dlen;
    HMAC_CTX     *h;

    id = 0;
    h = HMAC_CTX_new();

    if (h != NULL
        && HMAC_Init_ex(h, t->key, sizeof(t->key), EVP_sha256(), NULL) == 1
        && HMAC_Update(h, &kind, 1) == 1
        && HMAC_Update(h, data, len) == 1
        && HMAC_Final(h, digest, &dlen) == 1)
    {
        ngx_memcpy(&id, digest, sizeof(uint64_t));
    }

    HMAC_CTX_free(h);

    return id | 1;      /* never 0, a slot unused */
}


/* a client address: IPv4 by /32, IPv6 by /64 (one host's usual share) */

static uint64_t
ngx_http_tent_throttle_address(ngx_http_tent_throttle_t *t,
    ngx_connection_t *c)
{
    u_char               *p;
    struct sockaddr_in   *sin;
#if (NGX_HAVE_INET6)
    struct sockaddr_in6  *sin6;
#endif

    switch (c->sockaddr->sa_family) {

#if (NGX_HAVE_INET6)
    case AF_INET6:
        sin6 = (struct sockaddr_in6 *) c->sockaddr;
        p = sin6->sin6_addr.s6_addr;

        if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
            return ngx_http_tent_throttle_id(t, '4', p + 12, 4);
        }

        return ngx_http_tent_throttle_id(t, '6', p, 8);
#endif

    case AF_INET:
        sin = (struct sockaddr_in *) c->sockaddr;
        p = (u_char *) &sin->sin_addr.s_addr;

        return ngx_http_tent_throttle_id(t, '4', p, 4);

    default:
        return ngx_http_tent_throttle_id(t, 'a', c->addr_text.data,
                                         c->addr_text.len);
    }
}


/* counted; the wait it now has, 0 when none */

static time_t
ngx_http_tent_throttle_count(ngx_http_tent_throttle_slot_t *s,
    ngx_uint_t limit, time_t max)
{
    time_t  now, wait;

    now = ngx_time();

    if (s->failures && s->until <= now
        && s->last + NGX_HTTP_TENT_THROTTLE_WINDOW < now)
    {
        s->failures = 0;
    }

    s->failures++;
    s->last = now;

    if (s->failures < limit) {
        return 0;
    }

    wait = NGX_HTTP_TENT_THROTTLE_WAIT
           << ngx_min(s->failures - limit, 10);

    s->until = now + ngx_min(wait, max);

    return s->until - now;
}


time_t
ngx_http_tent_signin_throttled(ngx_http_request_t *r, ngx_str_t *entity,
    ngx_uint_t device)
{
    time_t                          now, wait;
    uint64_t                        eid, aid;
    ngx_slab_pool_t                *shpool;
    ngx_http_tent_throttle_slot_t   dev;
    ngx_http_tent_throttle_t       *t;
    ngx_http_tent_main_conf_t      *mcf;
    ngx_http_tent_throttle_slot_t  *e, *a;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_tent_module);

    if (mcf->signin_zone == NULL) {
        return 0;
    }

    shpool = (ngx_slab_pool_t *) mcf->signin_zone->shm.addr;
    t = mcf->signin_zone->data;
    now = ngx_time();
    ngx_memzero(&dev, sizeof(ngx_http_tent_throttle_slot_t));
    eid = ngx_http_tent_throttle_id(t, 'e', entity->data, entity->len);
    aid = ngx_http_tent_throttle_address(t, r->connection);

    ngx_shmtx_lock(&shpool->mutex);

    /*
     * a known device (its cookie) skips the entity's count: an owner
     * signs in while the entity is guessed at; the address's count stays
     */

    e = device ? &dev : ngx_http_tent_throttle_slot(t->entities,
                                    NGX_HTTP_TENT_THROTTLE_ENTITIES,
                                    eid, 1, 1);
    a = ngx_http_tent_throttle_slot(t->addresses,
                                    NGX_HTTP_TENT_THROTTLE_ADDRESSES,
                                    aid, 1, 0);

    if (e == NULL || a == NULL) {
        /* no slot to count it in: refused, never uncounted */
        wait = NGX_HTTP_TENT_THROTTLE_WAIT;

        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent sign-in: the throttle's %s slots for \"%V\" "
                      "are all counting failures: refused",
                      e == NULL ? "entity" : "address", entity);

    } else {
        wait = ngx_max(e->until - now, a->until - now);
    }

    if (wait <= 0) {
        /* counted before the check: a success takes it back */
        (void) ngx_http_tent_throttle_count(e,
                                    NGX_HTTP_TENT_THROTTLE_ENT_FAILS,
                                    NGX_HTTP_TENT_THROTTLE_ENT_MAX);
        (void) ngx_http_tent_throttle_count(a,
                                    NGX_HTTP_TENT_THROTTLE_ADDR_FAILS,
                                    NGX_HTTP_TENT_THROTTLE_ADDR_MAX);
        wait = 0;
    }

    ngx_shmtx_unlock(&shpool->mutex);

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "tent sign-in: \"%V\" from %V: wait %T",
                   entity, &r->connection->addr_text, wait);

    return wait;
}


void
ngx_http_tent_signin_result(ngx_http_request_t *r, ngx_str_t *entity,
    ngx_uint_t ok, ngx_uint_t device)
{
    ngx_slab_pool_t                *shpool;
    ngx_http_tent_throttle_t       *t;
    ngx_http_tent_main_conf_t      *mcf;
    uint64_t                        eid, aid;
    ngx_http_tent_throttle_slot_t  *e, *a;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_tent_module);

    if (!ok) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent sign-in: a wrong password for \"%V\"", entity);
        return;
    }

    ngx_log_error(NGX_LOG_NOTICE, r->connection->log, 0,
                  "tent sign-in: the owner of \"%V\" signed in", entity);

    if (mcf->signin_zone == NULL) {
        return;
    }

    shpool = (ngx_slab_pool_t *) mcf->signin_zone->shm.addr;
    t = mcf->signin_zone->data;
    eid = ngx_http_tent_throttle_id(t, 'e', entity->data, entity->len);
    aid = ngx_http_tent_throttle_address(t, r->connection);

    ngx_shmtx_lock(&shpool->mutex);

    /* a known device skipped the entity's count: it leaves it as is */

    e = device ? NULL : ngx_http_tent_throttle_slot(t->entities,
                                    NGX_HTTP_TENT_THROTTLE_ENTITIES,
                                    eid, 0, 1);
    a = ngx_http_tent_throttle_slot(t->addresses,
                                    NGX_HTTP_TENT_THROTTLE_ADDRESSES,
                                    aid, 0, 0);
    if (e) {
        e->failures = 0;
        e->until = 0;
    }

    if (a) {
        a->failures = 0;
        a->until = 0;
    }

    ngx_shmtx_unlock(&shpool->mutex);
}
