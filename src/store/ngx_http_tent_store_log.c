
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * A store operation in the logs: its name, and its line of the debug log
 * at each step (sent, received by the owner, executed, answered).
 */


#define NGX_HTTP_TENT_STORE_PRIVATE  1

#include "ngx_http_tent_base.h"
#include "ngx_http_tent_store_private.h"


#if (NGX_DEBUG)
static u_char *ngx_http_tent_store_debug_key(u_char *p, u_char *last,
    u_char *req, size_t len, size_t pos);
#endif


/* an operation's name, for the logs */

const char *
ngx_http_tent_store_op_name(ngx_http_tent_store_op_t *op)
{
    ngx_http_tent_store_op_full_t  *sop;

    static const char  *names[] = {
        "?", "get", "write", "scan", "cas", "mget"
    };

    sop = ngx_http_tent_sop(op);

    if (sop->req_len == 0 || sop->req[0] >= sizeof(names) / sizeof(names[0]))
    {
        return "?";
    }

    return names[sop->req[0]];
}


#if (NGX_DEBUG)

/*
 * One line of the debug log for an operation: its name and flags, its
 * first key made printable and cut short, its size; once answered, its
 * status and how long it took.  Values are never shown.
 */

void
ngx_http_tent_store_debug(ngx_http_tent_store_op_t *op, const char *what,
    ngx_uint_t answered)
{
    u_char      *p, *last, *req;
    size_t       len, pos;
    uint32_t     n;
    const char  *name, *status;
    u_char       buf[NGX_MAX_ERROR_STR / 4];
    ngx_http_tent_store_op_full_t  *sop;

    sop = ngx_http_tent_sop(op);

    static const char  *statuses[] = {
        "ok", "not found", "conflict", "error", "unavailable", "retry",
        "fenced"
    };

    if (!(op->log->log_level & NGX_LOG_DEBUG_HTTP) || sop->req_len < 2) {
        return;
    }

    req = sop->req;
    len = sop->req_len;
    p = buf;
    last = buf + sizeof(buf);

    name = ngx_http_tent_store_op_name(op);

    p = ngx_slprintf(p, last, "%s%s%s", name,
                     (req[1] & NGX_HTTP_TENT_OP_SYNC) ? " sync" : "",
                     (req[1] & NGX_HTTP_TENT_OP_BACKGROUND)
                     ? " background" : "");

    /* where the first key is: after a count for batches and mget */

    pos = 2;
    n = 0;

    if (req[0] == NGX_HTTP_TENT_OP_WRITE || req[0] == NGX_HTTP_TENT_OP_MGET) {
        if (len >= 6) {
            n = ((uint32_t) req[2] << 24) | ((uint32_t) req[3] << 16)
                | ((uint32_t) req[4] << 8) | req[5];
        }

        pos = (req[0] == NGX_HTTP_TENT_OP_WRITE) ? 7 : 6;
        p = ngx_slprintf(p, last, " of %uD", n);
    }

    if (n || (req[0] != NGX_HTTP_TENT_OP_WRITE
              && req[0] != NGX_HTTP_TENT_OP_MGET))
    {
        p = ngx_http_tent_store_debug_key(p, last, req, len, pos);
    }

    p = ngx_slprintf(p, last, ", %uz bytes", len);

    if (answered) {
        status = op->status < sizeof(statuses) / sizeof(statuses[0])
                 ? statuses[op->status] : "?";

        p = ngx_slprintf(p, last, ": %s, %M ms", status,
                         ngx_current_msec - sop->started);
    }

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, op->log, 0, "tent %s %*s",
                   what, (size_t) (p - buf), buf);
}


static u_char *
ngx_http_tent_store_debug_key(u_char *p, u_char *last, u_char *req,
    size_t len, size_t pos)
{
    u_char    *k, *end;
    uint32_t   klen;

    if (pos + 4 > len) {
        return p;
    }

    klen = ((uint32_t) req[pos] << 24) | ((uint32_t) req[pos + 1] << 16)
           | ((uint32_t) req[pos + 2] << 8) | req[pos + 3];

    if (klen > len - pos - 4) {
        return p;
    }

    k = req + pos + 4;
    end = k + ngx_min(klen, 64);

    p = ngx_slprintf(p, last, " \"");

    for ( /* void */ ; k < end; k++) {
        if (*k > 0x20 && *k < 0x7f && *k != '"' && *k != '\\') {
            p = ngx_slprintf(p, last, "%c", *k);

        } else {
            p = ngx_slprintf(p, last, "\\x%02xd", *k);
        }
    }

    return ngx_slprintf(p, last, klen > 64 ? "\"..." : "\"");
}

#endif
