
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_EXPORT_PRIVATE_H_INCLUDED_
#define _NGX_HTTP_TENT_EXPORT_PRIVATE_H_INCLUDED_


/*
 * The export's inside, shared by its files: the stream of pages
 * (ngx_http_tent_export.c) and the rendering of each table's rows
 * (ngx_http_tent_export_rows.c).  Only they define
 * NGX_HTTP_TENT_EXPORT_PRIVATE and include this.
 */


#include "ngx_http_tent_export.h"


#if !(NGX_HTTP_TENT_EXPORT_PRIVATE)
#error "only the export files include ngx_http_tent_export_private.h"
#endif


/* a page's buffers; a row larger than this gets a buffer of its size */
#define NGX_HTTP_TENT_EXPORT_BUF      (16 * 1024)

/* the longest key a scan resumes after; a post id in a group */
#define NGX_HTTP_TENT_EXPORT_KEY_MAX  8192
#define NGX_HTTP_TENT_EXPORT_ID_MAX   1024

/* exports at once in a worker; more get 503 with Retry-After */
#define NGX_HTTP_TENT_EXPORTS_MAX     4

/* what a request asks for besides the graph and the profile */
#define NGX_HTTP_TENT_EXPORT_APPS     0x01
#define NGX_HTTP_TENT_EXPORT_POSTS    0x02
#define NGX_HTTP_TENT_EXPORT_INLINE   0x04
#define NGX_HTTP_TENT_EXPORT_BLOCKS   0x08   /* the principal reads them */
#define NGX_HTTP_TENT_EXPORT_AP_KEYS  0x10   /* tent_activitypub on */

/* ?attachments=inline: a file over this stays a URL ("data": null) */
#define NGX_HTTP_TENT_EXPORT_INLINE_MAX  (64 * 1024 * 1024)

/*
 * ... and so does one past either bound, fixed before the first byte:
 * the bytes inlined in one page (one version: what a worker holds at
 * once, about 5 times it) and in the whole document (the answer)
 */
#define NGX_HTTP_TENT_EXPORT_INLINE_PAGE   (64 * 1024 * 1024)
#define NGX_HTTP_TENT_EXPORT_INLINE_TOTAL  ((off_t) 4 * 1024 * 1024 * 1024)


typedef struct ngx_http_tent_export_s  ngx_http_tent_export_t;

typedef ngx_int_t (*ngx_http_tent_export_row_pt)(ngx_http_tent_export_t *ex,
    json_t *record);
typedef ngx_int_t (*ngx_http_tent_export_close_pt)(
    ngx_http_tent_export_t *ex);


/* one array of the document: the rows of one table of the entity */

typedef struct {
    const char                     *name;
    ngx_uint_t                      table;
    ngx_uint_t                      rows;        /* a page's scan limit */
    ngx_uint_t                      flag;        /* 0: always there */
    ngx_http_tent_export_row_pt     row;
    ngx_http_tent_export_close_pt   close;       /* before its "]" */
} ngx_http_tent_export_section_t;


struct ngx_http_tent_export_s {
    ngx_http_request_t             *r;
    ngx_http_tent_ctx_t            *ctx;
    ngx_pool_t                     *pool;        /* the export's own */
    ngx_pool_t                     *page;        /* this page's */
    ngx_pool_t                     *old;         /* the page before */
    ngx_event_t                     free;        /* an orphan's end */
    ngx_log_t                       log;         /* of its store scans */
    ngx_uint_t                      flags;
    ngx_queue_t                     running;     /* this worker's exports */
    ngx_str_t                       entity;      /* whose: one at a time */

    ngx_uint_t                      section;     /* index, or the end */
    ngx_str_t                       start;       /* left of the section */
    ngx_str_t                       end;

    /* this page's output */
    ngx_chain_t                    *out;
    ngx_chain_t                   **last;
    ngx_buf_t                      *buf;
    size_t                          bytes;
    ngx_uint_t                      nrows;

    ngx_uint_t                      pages;
    ngx_uint_t                      items;       /* of the section */
    ngx_str_t                       post_id;     /* the open post */

    /* ?attachments=inline: the digests whose bytes were given */
    ngx_rbtree_t                    inlined;
    ngx_rbtree_node_t               inlined_sentinel;
    off_t                           inline_total;
    size_t                          inline_page;

    unsigned                        inflight:1;  /* a scan in the store */
    unsigned                        orphan:1;    /* its request is gone */
    unsigned                        core:1;      /* a stored core */
    unsigned                        resume:1;    /* after a full page */
};


/* ngx_http_tent_export_rows.c: the page's output, a table's rows */
ngx_int_t ngx_http_tent_export_append(ngx_http_tent_export_t *ex,
    const char *data, size_t len);
ngx_int_t ngx_http_tent_export_item(ngx_http_tent_export_t *ex,
    json_t *json);
ngx_int_t ngx_http_tent_export_profile(ngx_http_tent_export_t *ex,
    json_t *record);
ngx_int_t ngx_http_tent_export_core(ngx_http_tent_export_t *ex);
ngx_int_t ngx_http_tent_export_plain(ngx_http_tent_export_t *ex,
    json_t *record);
ngx_int_t ngx_http_tent_export_following(ngx_http_tent_export_t *ex,
    json_t *record);
ngx_int_t ngx_http_tent_export_follower(ngx_http_tent_export_t *ex,
    json_t *record);
ngx_int_t ngx_http_tent_export_app(ngx_http_tent_export_t *ex,
    json_t *record);
ngx_int_t ngx_http_tent_export_authorization(ngx_http_tent_export_t *ex,
    json_t *record);
ngx_int_t ngx_http_tent_export_post(ngx_http_tent_export_t *ex,
    json_t *record);
ngx_int_t ngx_http_tent_export_posts_end(ngx_http_tent_export_t *ex);


#endif /* _NGX_HTTP_TENT_EXPORT_PRIVATE_H_INCLUDED_ */
