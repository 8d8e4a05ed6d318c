
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * Per-host fairness and a breaker for the delivery engine, in the store
 * owner only.  A host is "scheme://host:port" of the server a job is
 * sent to.  At most tent_delivery_host_concurrency jobs go to one host
 * at once: a due job whose host is full is left where it is (not
 * started, not rescheduled, no attempt), its key remembered so that the
 * next scans look past it to other hosts' jobs until that host has room.
 * After tent_delivery_breaker's number of consecutive failures
 * (connection failures, timeouts, 5xx) the host is open: the first
 * request of a job to it is not made (the follower's next server is
 * tried, or the job is put back, its attempts unchanged, to when the
 * pause ends).  Then one job is the probe: an answer below 500 closes the
 * breaker, a failure opens it again for twice as long, up to
 * tent_delivery_retry's longest delay.  The table is this worker's: it
 * is bounded, and it need not survive a restart.
 */


#define NGX_HTTP_TENT_DELIVERY_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_delivery.h"
#include "ngx_http_tent_delivery_private.h"
#include "ngx_http_tent_job.h"
#include "ngx_http_tent_fetch.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_shm.h"
#include "ngx_http_tent_store.h"


#define NGX_HTTP_TENT_HOSTS_MAX        1024
#define NGX_HTTP_TENT_HOSTS_DEFERRED   1024
#define NGX_HTTP_TENT_HOST_LEN         300


struct ngx_http_tent_host_s {
    ngx_str_node_t                  sn;          /* scheme://host:port */
    ngx_queue_t                     idle;        /* closed and unused */
    ngx_queue_t                     deferred;    /* its jobs waiting */
    ngx_uint_t                      inflight;
    ngx_uint_t                      failures;    /* in a row */
    ngx_msec_t                      pause;       /* the last one */
    uint64_t                        resume;      /* ms, when open */
    unsigned                        open:1;
    unsigned                        probing:1;
    unsigned                        in_idle:1;
};


/* a job left for a later pass: its key, and the host it waits for */
typedef struct {
    ngx_str_node_t                  sn;
    ngx_queue_t                     queue;
    ngx_http_tent_host_t           *host;
} ngx_http_tent_deferred_t;


typedef struct {
    ngx_rbtree_t                    hosts;
    ngx_rbtree_node_t               hosts_sentinel;
    ngx_rbtree_t                    keys;
    ngx_rbtree_node_t               keys_sentinel;
    ngx_queue_t                     idle;        /* oldest first */
    ngx_uint_t                      nhosts;
    ngx_uint_t                      nkeys;
    ngx_uint_t                      nopen;
    unsigned                        ready:1;
} ngx_http_tent_hosts_t;


static ngx_int_t ngx_http_tent_host_name(ngx_str_t *url, u_char *buf,
    ngx_str_t *name);
static ngx_http_tent_host_t *ngx_http_tent_host_get(ngx_log_t *log,
    ngx_str_t *name);
static void ngx_http_tent_host_idle(ngx_http_tent_host_t *h);
static ngx_int_t ngx_http_tent_host_defer(ngx_http_tent_job_t *t,
    ngx_http_tent_host_t *h);
static void ngx_http_tent_host_undefer(ngx_http_tent_host_t *h);
static void ngx_http_tent_host_put_back(ngx_http_tent_job_t *t,
    uint64_t due, const char *why);
static void ngx_http_tent_host_opened(ngx_http_tent_main_conf_t *mcf,
    ngx_log_t *log, ngx_http_tent_host_t *h);


/* the store owner's table: one engine per worker, so one table */
static ngx_http_tent_hosts_t  ngx_http_tent_hosts;


/* "tent_delivery_breaker failures pause;" or "off" */

char *
ngx_http_tent_delivery_breaker_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_tent_main_conf_t *mcf = conf;

    ngx_int_t   n;
    ngx_str_t  *value;

    if (mcf->breaker_failures != NGX_CONF_UNSET_UINT) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (cf->args->nelts == 2) {
        if (ngx_strcmp(value[1].data, "off") != 0) {
            return "takes \"off\" or a number of failures and a pause";
        }

        mcf->breaker_failures = 0;
        mcf->breaker_pause = 0;

        return NGX_CONF_OK;
    }

    n = ngx_atoi(value[1].data, value[1].len);
    if (n == NGX_ERROR || n == 0 || n > 1000) {
        return "has an invalid number of failures (1 to 1000)";
    }

    mcf->breaker_failures = n;
    mcf->breaker_pause = ngx_parse_time(&value[2], 0);

    if (mcf->breaker_pause == (ngx_msec_t) NGX_ERROR
        || mcf->breaker_pause == 0)
    {
        return "has an invalid pause";
    }

    return NGX_CONF_OK;
}


/* the defaults, checked against the total once that is known */

ngx_int_t
ngx_http_tent_hosts_conf(ngx_conf_t *cf, ngx_http_tent_main_conf_t *mcf)
{
    ngx_conf_init_uint_value(mcf->delivery_host_concurrency,
                             ngx_max(mcf->delivery_concurrency / 4, 1));

    /*
     * Idle connections: at least as many as may be in flight to one host
     * and in all, or a burst of deliveries closes the ones it opened
     * beyond the cap and opens them again for the next burst.
     */

    ngx_conf_init_uint_value(mcf->keepalive,
                             ngx_max(8, mcf->delivery_host_concurrency));
    ngx_conf_init_uint_value(mcf->keepalive_total,
                             ngx_max(64, mcf->delivery_concurrency));
    ngx_conf_init_uint_value(mcf->breaker_failures, 5);
    ngx_conf_init_msec_value(mcf->breaker_pause, 10000);

    if (mcf->delivery_host_concurrency == 0
        || mcf->delivery_host_concurrency > mcf->delivery_concurrency)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"tent_delivery_host_concurrency\" must be "
                           "between 1 and \"tent_delivery_concurrency\" "
                           "(%ui)", mcf->delivery_concurrency);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/*
 * "scheme://host:port" of a URL, lowercased, the default port added;
 * DECLINED for what is not one (the fetch will say why)
 */

static ngx_int_t
ngx_http_tent_host_name(ngx_str_t *url, u_char *buf, ngx_str_t *name)
{
    u_char  *p, *end, *scheme, *host, *colon;

    end = url->data + url->len;

    scheme = ngx_strlcasestrn(url->data, end, (u_char *) "://", 3 - 1);
    if (scheme == NULL) {
        return NGX_DECLINED;
    }

    host = scheme + 3;
    colon = NULL;

    for (p = host; p < end; p++) {
        if (*p == '/' || *p == '?' || *p == '#') {
            break;
        }

        if (*p == '@') {            /* user info: not the host's name */
            host = p + 1;
            colon = NULL;

        } else if (*p == ':') {
            colon = p;

        } else if (*p == ']') {     /* an IPv6 address's colons */
            colon = NULL;
        }
    }

    if (p == host
        || (size_t) (scheme - url->data) + 3 + (p - host) + sizeof(":443")
           > NGX_HTTP_TENT_HOST_LEN)
    {
        return NGX_DECLINED;
    }

    name->data = buf;
    p = ngx_cpymem(ngx_cpymem(ngx_cpymem(buf, url->data, scheme - url->data),
                              "://", 3),
                   host, p - host);

    if (colon == NULL) {
        if (scheme - url->data == 5
            && ngx_strncasecmp(url->data, (u_char *) "https", 5) == 0)
        {
            p = ngx_cpymem(p, ":443", 4);

        } else {
            p = ngx_cpymem(p, ":80", 3);
        }
    }

    name->len = p - buf;

    ngx_strlow(buf, buf, name->len);

    return NGX_OK;
}


static ngx_http_tent_host_t *
ngx_http_tent_host_get(ngx_log_t *log, ngx_str_t *name)
{
    uint32_t                hash;
    ngx_queue_t            *q;
    ngx_http_tent_host_t   *h, *old;
    ngx_http_tent_hosts_t  *hs;

    hs = &ngx_http_tent_hosts;

    if (!hs->ready) {
        ngx_rbtree_init(&hs->hosts, &hs->hosts_sentinel,
                        ngx_str_rbtree_insert_value);
        ngx_rbtree_init(&hs->keys, &hs->keys_sentinel,
                        ngx_str_rbtree_insert_value);
        ngx_queue_init(&hs->idle);
        hs->ready = 1;
    }

    hash = ngx_crc32_long(name->data, name->len);

    h = (ngx_http_tent_host_t *) ngx_str_rbtree_lookup(&hs->hosts, name,
                                                       hash);
    if (h) {
        if (h->in_idle) {
            ngx_queue_remove(&h->idle);
            h->in_idle = 0;
        }

        return h;
    }

    /* full: the host closed and unused the longest goes, or none is kept */

    if (hs->nhosts >= NGX_HTTP_TENT_HOSTS_MAX) {
        if (ngx_queue_empty(&hs->idle)) {
            ngx_log_debug1(NGX_LOG_DEBUG_HTTP, log, 0,
                           "tent delivery: hosts table full: %V not "
                           "counted", name);
            return NULL;
        }

        q = ngx_queue_head(&hs->idle);
        old = ngx_queue_data(q, ngx_http_tent_host_t, idle);

        /*
         * A paused host goes too: hosts made up by followers must not
         * fill the table for good and leave every new host uncounted
         */

        if (old->open) {
            hs->nopen--;
            ngx_http_tent_gauge(NGX_HTTP_TENT_STAT_BREAKERS, hs->nopen);
        }

        ngx_queue_remove(q);
        ngx_rbtree_delete(&hs->hosts, &old->sn.node);
        ngx_free(old);
        hs->nhosts--;
    }

    h = ngx_calloc(sizeof(ngx_http_tent_host_t) + name->len, log);
    if (h == NULL) {
        return NULL;
    }

    h->sn.str.data = (u_char *) h + sizeof(ngx_http_tent_host_t);
    h->sn.str.len = name->len;
    ngx_memcpy(h->sn.str.data, name->data, name->len);
    h->sn.node.key = hash;
    ngx_queue_init(&h->deferred);

    ngx_rbtree_insert(&hs->hosts, &h->sn.node);
    hs->nhosts++;

    return h;
}


/*
 * A host nothing goes to: forgotten at once when it has no failures to
 * remember, else (a paused one too) kept until the table needs its place
 */

static void
ngx_http_tent_host_idle(ngx_http_tent_host_t *h)
{
    ngx_http_tent_hosts_t  *hs;

    hs = &ngx_http_tent_hosts;

    if (h->inflight || h->probing || h->in_idle
        || !ngx_queue_empty(&h->deferred))
    {
        return;
    }

    if (h->failures == 0 && !h->open) {
        ngx_rbtree_delete(&hs->hosts, &h->sn.node);
        ngx_free(h);
        hs->nhosts--;
        return;
    }

    ngx_queue_insert_tail(&hs->idle, &h->idle);
    h->in_idle = 1;
}


/*
 * Before a job's request to a server: NGX_OK, go (a slot of the host is
 * taken); NGX_DECLINED, the host is paused (try the next server, or put
 * the job back with ngx_http_tent_host_wait()); NGX_DONE, the host is
 * full and the task is over, its job left for a later pass.  Only the
 * first request of an attempt waits so: once one failed, the follower's
 * next servers are tried at once, as before, and only counted.
 */

ngx_int_t
ngx_http_tent_host_gate(ngx_http_tent_job_t *t, ngx_str_t *url)
{
    uint64_t                    now;
    ngx_str_t                   name;
    ngx_http_tent_host_t       *h;
    ngx_http_tent_main_conf_t  *mcf;
    u_char                      buf[NGX_HTTP_TENT_HOST_LEN];

    mcf = t->task.dl->mcf;

    if (ngx_http_tent_host_name(url, buf, &name) != NGX_OK) {
        return NGX_OK;
    }

    h = ngx_http_tent_host_get(t->task.dl->log, &name);
    if (h == NULL) {
        return NGX_OK;      /* not counted: fairness is best effort */
    }

    if (t->tried) {
        goto go;
    }

    if (h->open) {
        now = ngx_http_tent_now_ms();

        if (now < h->resume) {
            if (t->resume == 0 || h->resume < t->resume) {
                t->resume = h->resume;
            }

            ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                           "tent delivery: post \"%V\": host %V paused",
                           &t->task.post_id, &h->sn.str);

            ngx_http_tent_host_idle(h);

            return NGX_DECLINED;
        }

        if (h->probing) {
            return ngx_http_tent_host_defer(t, h);
        }

        /* the pause is over: this job is the probe (half-open) */

        h->probing = 1;
        t->probe = 1;

        ngx_log_debug2(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                       "tent delivery: post \"%V\": the probe of host %V",
                       &t->task.post_id, &h->sn.str);

        goto go;
    }

    if (h->inflight >= mcf->delivery_host_concurrency) {
        return ngx_http_tent_host_defer(t, h);
    }

go:

    t->tried = 1;
    t->host = h;
    h->inflight++;

    return NGX_OK;
}


/*
 * The job waits for its host: the task ends without a store write, its
 * key kept so that scans skip it until the host has room.  When too many
 * wait already, the job is put back a pass later instead, so that the
 * scans stay bounded.
 */

static ngx_int_t
ngx_http_tent_host_defer(ngx_http_tent_job_t *t, ngx_http_tent_host_t *h)
{
    ngx_http_tent_hosts_t     *hs;
    ngx_http_tent_deferred_t  *d;

    hs = &ngx_http_tent_hosts;

    d = NULL;

    if (hs->nkeys < NGX_HTTP_TENT_HOSTS_DEFERRED
        && !ngx_http_tent_host_deferred(&t->task.key))
    {
        d = ngx_alloc(sizeof(ngx_http_tent_deferred_t) + t->task.key.len,
                      t->task.dl->log);
    }

    if (d == NULL) {
        ngx_http_tent_host_put_back(t, ngx_http_tent_now_ms()
                                       + t->task.dl->mcf->delivery_interval,
                                    "full, too many jobs wait");
        return NGX_DONE;
    }

    d->sn.str.data = (u_char *) d + sizeof(ngx_http_tent_deferred_t);
    d->sn.str.len = t->task.key.len;
    ngx_memcpy(d->sn.str.data, t->task.key.data, t->task.key.len);
    d->sn.node.key = ngx_crc32_long(t->task.key.data, t->task.key.len);
    d->host = h;

    ngx_rbtree_insert(&hs->keys, &d->sn.node);
    ngx_queue_insert_tail(&h->deferred, &d->queue);
    hs->nkeys++;

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": host %V full (%ui in "
                   "flight): left for a later pass", &t->task.post_id,
                   &h->sn.str, h->inflight);

    ngx_http_tent_task_done(&t->task);

    return NGX_DONE;
}


/* the host has room again: its jobs are looked at by the next scan */

static void
ngx_http_tent_host_undefer(ngx_http_tent_host_t *h)
{
    ngx_queue_t               *q;
    ngx_http_tent_hosts_t     *hs;
    ngx_http_tent_deferred_t  *d;

    hs = &ngx_http_tent_hosts;

    while (!ngx_queue_empty(&h->deferred)) {
        q = ngx_queue_head(&h->deferred);
        d = ngx_queue_data(q, ngx_http_tent_deferred_t, queue);

        ngx_queue_remove(q);
        ngx_rbtree_delete(&hs->keys, &d->sn.node);
        ngx_free(d);
        hs->nkeys--;
    }
}


/* a row of the due jobs' scan that waits for its host: not started */

ngx_int_t
ngx_http_tent_host_deferred(ngx_str_t *key)
{
    ngx_http_tent_hosts_t  *hs;

    hs = &ngx_http_tent_hosts;

    if (hs->nkeys == 0) {
        return 0;
    }

    return ngx_str_rbtree_lookup(&hs->keys, key,
                                 ngx_crc32_long(key->data, key->len))
           != NULL;
}


/* how many rows a scan may have to look past */

ngx_uint_t
ngx_http_tent_hosts_deferred(void)
{
    return ngx_http_tent_hosts.nkeys;
}


/* every server of the job paused: back to when the first pause ends */

void
ngx_http_tent_host_wait(ngx_http_tent_job_t *t)
{
    ngx_http_tent_host_put_back(t, t->resume ? t->resume
                                             : ngx_http_tent_now_ms()
                                               + t->task.dl->mcf->breaker_pause,
                                "paused");
}


/* the job again, due later, its attempts unchanged */

static void
ngx_http_tent_host_put_back(ngx_http_tent_job_t *t, uint64_t due,
    const char *why)
{
    uint64_t                   was;
    ngx_str_t                  id;
    ngx_http_tent_store_op_t  *wop;

    wop = ngx_http_tent_store_op_create(t->task.pool, t->task.dl->log);

    if (wop == NULL
        || ngx_http_tent_store_write(wop, 0) != NGX_OK
        || ngx_http_tent_store_write_del(wop, &t->task.key) != NGX_OK
        || ngx_http_tent_timed_key_parse(&t->task.ent->entity, &t->task.key,
                                         &was, &id)
           != NGX_OK
        || ngx_http_tent_job_put(&t->task, wop, NGX_HTTP_TENT_TABLE_JOB, due,
                                 &id,
                                 &t->row)
           != NGX_OK)
    {
        ngx_http_tent_task_failed(&t->task, "putting back a job for its host");
        return;
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, t->task.dl->log, 0,
                   "tent delivery: post \"%V\": host %s: the job waits "
                   "until %uL, no attempt", &t->task.post_id, why, due);

    ngx_http_tent_settle_add(t, wop);
}


/*
 * The answer to a job's request: the host's breaker counts it, and its
 * slot is free.  A connection that failed, a timeout, an answer that is
 * not HTTP, or a 5xx is a failure; any other answer is a success (the
 * host is up, whatever it thinks of the post); our own refusals (the
 * guard, a full budget, a bad URL) say nothing of the host.
 */

void
ngx_http_tent_host_outcome(ngx_http_tent_job_t *t, ngx_http_tent_fetch_t *f)
{
    ngx_uint_t                  failed, known;
    ngx_http_tent_host_t       *h;
    ngx_http_tent_main_conf_t  *mcf;

    h = t->host;

    if (h == NULL) {
        return;
    }

    mcf = t->task.dl->mcf;
    known = 1;
    failed = 0;

    switch (f->result) {

    case NGX_HTTP_TENT_FETCH_OK:
        failed = f->status >= 500;
        break;

    case NGX_HTTP_TENT_FETCH_TOO_BIG:
        break;

    case NGX_HTTP_TENT_FETCH_DNS:
    case NGX_HTTP_TENT_FETCH_CONNECT:
    case NGX_HTTP_TENT_FETCH_TIMEOUT:
    case NGX_HTTP_TENT_FETCH_INVALID:
    case NGX_HTTP_TENT_FETCH_TLS:
    case NGX_HTTP_TENT_FETCH_DEADLINE:
        failed = 1;
        break;

    default:
        known = 0;
    }

    if (!known || mcf->breaker_failures == 0) {
        if (t->probe) {
            h->resume = 0;          /* another job probes at once */
        }

    } else if (!failed) {
        h->failures = 0;

        if (h->open) {
            h->open = 0;
            ngx_http_tent_hosts.nopen--;
            ngx_http_tent_gauge(NGX_HTTP_TENT_STAT_BREAKERS,
                                ngx_http_tent_hosts.nopen);

            ngx_log_error(NGX_LOG_WARN, t->task.dl->log, 0,
                          "tent delivery: host %V: probe succeeded, resumed",
                          &h->sn.str);
        }

    } else if (t->failed != h || t->probe) {

        /*
         * One failure a job: a follower that lists several servers on
         * one host (paths that answer 500 or hang) cannot open the
         * breaker of a host other followers share with one post
         */

        t->failed = h;
        h->failures++;

        if (h->open ? t->probe : h->failures >= mcf->breaker_failures) {
            ngx_http_tent_host_opened(mcf, t->task.dl->log, h);
        }
    }

    ngx_http_tent_host_release(t);
}


/* closed or half-open to open, the pause doubled after a failed probe */

static void
ngx_http_tent_host_opened(ngx_http_tent_main_conf_t *mcf, ngx_log_t *log,
    ngx_http_tent_host_t *h)
{
    ngx_msec_t  longest;

    longest = ngx_max(mcf->delivery_retry_max, mcf->breaker_pause);

    if (h->open) {
        h->pause = h->pause > longest / 2 ? longest : h->pause * 2;

        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "tent delivery: host %V: probe failed, paused for "
                      "%M%s", &h->sn.str,
                      h->pause % 1000 ? h->pause : h->pause / 1000,
                      h->pause % 1000 ? "ms" : "s");

    } else {
        h->open = 1;
        h->pause = mcf->breaker_pause;
        ngx_http_tent_hosts.nopen++;
        ngx_http_tent_gauge(NGX_HTTP_TENT_STAT_BREAKERS,
                            ngx_http_tent_hosts.nopen);

        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "tent delivery: host %V paused for %M%s after "
                      "%ui failures", &h->sn.str,
                      h->pause % 1000 ? h->pause : h->pause / 1000,
                      h->pause % 1000 ? "ms" : "s", h->failures);
    }

    h->resume = ngx_http_tent_now_ms() + h->pause;
}


/* the task's slot of its host is free (from task_done too: any ending) */

void
ngx_http_tent_host_release(ngx_http_tent_job_t *t)
{
    ngx_http_tent_host_t       *h;
    ngx_http_tent_main_conf_t  *mcf;

    h = t->host;

    if (h == NULL) {
        return;
    }

    mcf = t->task.dl->mcf;
    t->host = NULL;
    h->inflight--;

    if (t->probe) {
        t->probe = 0;
        h->probing = 0;
    }

    if (h->inflight < mcf->delivery_host_concurrency && !h->probing) {
        ngx_http_tent_host_undefer(h);
    }

    ngx_http_tent_host_idle(h);
}
