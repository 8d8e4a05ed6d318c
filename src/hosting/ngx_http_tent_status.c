
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * "tent_status;": a location's content handler, as stub_status, that
 * answers the counters of the whole nginx (shm.h: every worker adds to
 * the same ones in the shared zone), in JSON or, with
 * ?format=prometheus, in Prometheus's text format.  Who may read it is
 * the location's allow/deny (docs/status.md).
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_auth.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_shm.h"


/* every name and value fits: 64 lines of at most 128 bytes */
#define NGX_HTTP_TENT_STATUS_SIZE  8192


static ngx_int_t ngx_http_tent_status_handler(ngx_http_request_t *r);
static u_char *ngx_http_tent_status_json(u_char *p, ngx_http_tent_stats_t *st);
static u_char *ngx_http_tent_status_prometheus(u_char *p,
    ngx_http_tent_stats_t *st);


/* in the order of the store's op bytes */
static const char  *ngx_http_tent_status_kinds[NGX_HTTP_TENT_STORE_KINDS] = {
    "get", "write", "scan", "cas", "mget"
};

/* in the order of auth's budgets */
static const char  *ngx_http_tent_status_budgets[NGX_HTTP_TENT_STAT_BUDGETS]
    = { "app", "follower", "owner", "following" };


/* the plain counters: stat, JSON group and name, Prometheus name, help */
typedef struct {
    ngx_uint_t                      stat;
    const char                     *group;
    const char                     *name;
    const char                     *metric;
    const char                     *help;
    ngx_uint_t                      gauge;
} ngx_http_tent_status_counter_t;


static ngx_http_tent_status_counter_t  ngx_http_tent_status_counters[] = {
    { NGX_HTTP_TENT_STAT_QUEUED, "deliveries", "queued",
      "tent_deliveries_queued_total",
      "Delivery jobs written to the queue by the fan-out.", 0 },
    { NGX_HTTP_TENT_STAT_IN_FLIGHT, "deliveries", "in_flight",
      "tent_deliveries_in_flight",
      "Tasks of the delivery engine running now (sends and fan-outs).", 1 },
    { NGX_HTTP_TENT_STAT_DELIVERED, "deliveries", "delivered",
      "tent_deliveries_delivered_total",
      "Deliveries a recipient's server accepted.", 0 },
    { NGX_HTTP_TENT_STAT_LOCAL, "deliveries", "local",
      "tent_deliveries_local_total",
      "Deliveries to an entity of this nginx, written with no HTTP.", 0 },
    { NGX_HTTP_TENT_STAT_ACTIVITYPUB, "deliveries", "activitypub",
      "tent_deliveries_activitypub_total",
      "Deliveries an ActivityPub inbox accepted (signed activities).", 0 },
    { NGX_HTTP_TENT_STAT_SHARED_INBOX, "deliveries", "shared_inbox",
      "tent_deliveries_shared_inbox_total",
      "Jobs of public posts made for an ActivityPub shared inbox.", 0 },
    { NGX_HTTP_TENT_STAT_SHARED_FOLLOWERS, "deliveries", "shared_followers",
      "tent_deliveries_shared_followers_total",
      "ActivityPub followers a shared inbox's job carried (no job each).",
      0 },
    { NGX_HTTP_TENT_STAT_RETRIED, "deliveries", "retried",
      "tent_deliveries_retried_total",
      "Deliveries that failed and were scheduled again.", 0 },
    { NGX_HTTP_TENT_STAT_DEAD, "deliveries", "dead",
      "tent_deliveries_dead_total",
      "Deliveries given up: dead letters.", 0 },
    { NGX_HTTP_TENT_STAT_BREAKERS, "deliveries", "breakers_open",
      "tent_deliveries_breakers_open",
      "Hosts whose breaker is open: deliveries to them paused.", 1 },
    { NGX_HTTP_TENT_STAT_CONNECTIONS, "connections", "opened",
      "tent_outbound_connections_opened_total",
      "Outbound connections opened (new ones only) to other servers.", 0 },
    { NGX_HTTP_TENT_STAT_REUSED, "connections", "reused",
      "tent_outbound_connections_reused_total",
      "Outbound requests sent on a kept-alive connection.", 0 },
    { NGX_HTTP_TENT_STAT_CACHE_HITS, "reply_cache", "hits",
      "tent_reply_cache_hits_total",
      "Anonymous replies answered from a worker's cache.", 0 },
    { NGX_HTTP_TENT_STAT_CACHE_MISSES, "reply_cache", "misses",
      "tent_reply_cache_misses_total",
      "Anonymous replies not in the cache, or stale.", 0 },
    { NGX_HTTP_TENT_STAT_STORE_REQUEST, "store_threads", "request",
      "tent_store_request_operations_total",
      "Store operations the owner ran for a client waiting.", 0 },
    { NGX_HTTP_TENT_STAT_STORE_BACKGROUND, "store_threads", "background",
      "tent_store_background_operations_total",
      "Store operations the owner ran for background work.", 0 },
    { NGX_HTTP_TENT_STAT_STORE_DEFERRED, "store_threads", "deferred",
      "tent_store_background_deferred_total",
      "Background operations that waited for a thread of theirs.", 0 },
    { NGX_HTTP_TENT_STAT_STORE_WAITING, "store_threads", "waiting",
      "tent_store_background_waiting",
      "Background operations waiting for a thread of theirs now.", 1 },
    { NGX_HTTP_TENT_STAT_STORE_LOCKED, "store_lock", "locked",
      "tent_store_locked",
      "1 while another process holds the store's lock: requests get 503.",
      1 },
    { NGX_HTTP_TENT_STAT_STORE_LOCK_PID, "store_lock", "pid",
      "tent_store_lock_holder_pid",
      "The process that holds the store's lock while locked, else 0.", 1 }
};


char *
ngx_http_tent_status_directive(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf)
{
    ngx_http_core_loc_conf_t  *clcf;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);

    if (clcf->handler == ngx_http_tent_status_handler) {
        return "is duplicate";
    }

    if (clcf->handler) {
        return "conflicts with another handler of the location "
               "(proxy_pass, return...)";
    }

    clcf->handler = ngx_http_tent_status_handler;

    ngx_http_tent_handler_set(cf, (ngx_http_tent_loc_conf_t *) conf,
                              NGX_HTTP_TENT_HANDLER_STATUS);

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_tent_status_handler(ngx_http_request_t *r)
{
    u_char                 *p;
    ngx_int_t               rc;
    ngx_str_t               format;
    ngx_buf_t              *b;
    ngx_uint_t              prometheus;
    ngx_chain_t             out;
    ngx_table_elt_t        *h;
    ngx_http_tent_stats_t   st;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        h = ngx_list_push(&r->headers_out.headers);
        if (h == NULL) {
            return ngx_http_tent_internal_error(r, "adding Allow");
        }

        h->hash = 1;
        ngx_str_set(&h->key, "Allow");
        ngx_str_set(&h->value, "GET, HEAD");

        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_ALLOWED,
                                        "tent_status answers GET and HEAD");
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    prometheus = 0;

    if (ngx_http_arg(r, (u_char *) "format", 6, &format) == NGX_OK) {

        if (format.len == 10
            && ngx_strncmp(format.data, "prometheus", 10) == 0)
        {
            prometheus = 1;

        } else if (format.len != 4
                   || ngx_strncmp(format.data, "json", 4) != 0)
        {
            return ngx_http_tent_send_error(r, NGX_HTTP_BAD_REQUEST,
                                            "format is json or prometheus");
        }
    }

    /* without tent_store there is no zone: every counter is 0 */

    (void) ngx_http_tent_stats((ngx_cycle_t *) ngx_cycle, &st);
    ngx_http_tent_nonce_stats((ngx_cycle_t *) ngx_cycle, &st);

    b = ngx_create_temp_buf(r->pool, NGX_HTTP_TENT_STATUS_SIZE);
    if (b == NULL) {
        return ngx_http_tent_internal_error(r, "allocating the page");
    }

    p = prometheus ? ngx_http_tent_status_prometheus(b->pos, &st)
                   : ngx_http_tent_status_json(b->pos, &st);

    b->last = p;
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = b->last - b->pos;

    if (prometheus) {
        ngx_str_set(&r->headers_out.content_type,
                    "text/plain; version=0.0.4");

    } else {
        ngx_str_set(&r->headers_out.content_type, "application/json");
    }

    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;

    /* counters of now: no cache may keep them */

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return ngx_http_tent_internal_error(r, "adding Cache-Control");
    }

    h->hash = 1;
    ngx_str_set(&h->key, "Cache-Control");
    ngx_str_set(&h->value, "no-store");

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


static u_char *
ngx_http_tent_status_json(u_char *p, ngx_http_tent_stats_t *st)
{
    const char                      *group;
    ngx_uint_t                       i, n;
    ngx_http_tent_status_counter_t  *c;

    group = NULL;
    n = sizeof(ngx_http_tent_status_counters)
        / sizeof(ngx_http_tent_status_counter_t);

    *p++ = '{';

    for (i = 0; i < n; i++) {
        c = &ngx_http_tent_status_counters[i];

        if (group == NULL || ngx_strcmp(group, c->group) != 0) {
            p = ngx_sprintf(p, "%s\"%s\":{", group ? "}," : "", c->group);
            group = c->group;

        } else {
            *p++ = ',';
        }

        p = ngx_sprintf(p, "\"%s\":%uA", c->name, st->value[c->stat]);
    }

    p = ngx_cpymem(p, "},\"store\":{", sizeof("},\"store\":{") - 1);

    for (i = 0; i < NGX_HTTP_TENT_STORE_KINDS; i++) {
        p = ngx_sprintf(p, "%s\"%s\":{\"count\":%uA,\"ms\":%uA}",
                        i ? "," : "", ngx_http_tent_status_kinds[i],
                        st->value[NGX_HTTP_TENT_STAT_STORE_OPS + i],
                        st->value[NGX_HTTP_TENT_STAT_STORE_MS + i]);
    }

    p = ngx_sprintf(p, "},\"nonces\":{\"capacity\":%ui", st->capacity);

    for (i = 0; i < NGX_HTTP_TENT_STAT_BUDGETS; i++) {
        p = ngx_sprintf(p, ",\"%s\":{\"used\":%ui,\"capacity\":%ui}",
                        ngx_http_tent_status_budgets[i], st->used[i],
                        st->limit[i]);
    }

    p = ngx_cpymem(p, "}}\n", 3);

    return p;
}


static u_char *
ngx_http_tent_status_prometheus(u_char *p, ngx_http_tent_stats_t *st)
{
    ngx_uint_t                       i, n;
    ngx_atomic_uint_t                ms;
    ngx_http_tent_status_counter_t  *c;

    n = sizeof(ngx_http_tent_status_counters)
        / sizeof(ngx_http_tent_status_counter_t);

    for (i = 0; i < n; i++) {
        c = &ngx_http_tent_status_counters[i];

        p = ngx_sprintf(p, "# HELP %s %s\n# TYPE %s %s\n%s %uA\n",
                        c->metric, c->help, c->metric,
                        c->gauge ? "gauge" : "counter",
                        c->metric, st->value[c->stat]);
    }

    p = ngx_sprintf(p, "# HELP tent_store_operations_total "
                    "Store operations done, by kind.\n"
                    "# TYPE tent_store_operations_total counter\n");

    for (i = 0; i < NGX_HTTP_TENT_STORE_KINDS; i++) {
        p = ngx_sprintf(p, "tent_store_operations_total{kind=\"%s\"} %uA\n",
                        ngx_http_tent_status_kinds[i],
                        st->value[NGX_HTTP_TENT_STAT_STORE_OPS + i]);
    }

    /* Prometheus' base unit: seconds, from the counted milliseconds */

    p = ngx_sprintf(p, "# HELP tent_store_seconds_total "
                    "Store operations' time from submit to answer, "
                    "by kind.\n"
                    "# TYPE tent_store_seconds_total counter\n");

    for (i = 0; i < NGX_HTTP_TENT_STORE_KINDS; i++) {
        ms = st->value[NGX_HTTP_TENT_STAT_STORE_MS + i];
        p = ngx_sprintf(p, "tent_store_seconds_total{kind=\"%s\"} "
                        "%uA.%03uA\n",
                        ngx_http_tent_status_kinds[i], ms / 1000, ms % 1000);
    }

    p = ngx_sprintf(p, "# HELP tent_nonces_used "
                    "MAC nonces remembered, by budget.\n"
                    "# TYPE tent_nonces_used gauge\n");

    for (i = 0; i < NGX_HTTP_TENT_STAT_BUDGETS; i++) {
        p = ngx_sprintf(p, "tent_nonces_used{budget=\"%s\"} %ui\n",
                        ngx_http_tent_status_budgets[i], st->used[i]);
    }

    p = ngx_sprintf(p, "# HELP tent_nonces_capacity "
                    "MAC nonces a budget may hold.\n"
                    "# TYPE tent_nonces_capacity gauge\n");

    for (i = 0; i < NGX_HTTP_TENT_STAT_BUDGETS; i++) {
        p = ngx_sprintf(p, "tent_nonces_capacity{budget=\"%s\"} %ui\n",
                        ngx_http_tent_status_budgets[i], st->limit[i]);
    }

    return p;
}
