
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_OAUTH_PRIVATE_H_INCLUDED_
#define _NGX_HTTP_TENT_OAUTH_PRIVATE_H_INCLUDED_


/*
 * What the authorize page (ngx_http_tent_oauth.c, its HTML in
 * ngx_http_tent_oauth_page.c) and its sign-in on a provisioning server
 * (ngx_http_tent_oauth_signin.c) share; only they include it.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_json.h"


#define NGX_HTTP_TENT_CSRF_TTL  900


typedef struct {
    ngx_str_t                       client_id;
    ngx_str_t                       redirect_uri;
    ngx_str_t                       scope;
    ngx_str_t                       state;
    ngx_str_t                       post_types;
    ngx_str_t                       info_types;
    ngx_str_t                       notification_url;
    ngx_str_t                       csrf;
    ngx_str_t                       decision;
    ngx_str_t                       owner;
    ngx_str_t                       secret;
    ngx_str_t                       app_raw;
    json_t                         *app;

    /* a provisioned entity's sign-in */
    ngx_str_t                       session;     /* the cookie's value */
    ngx_str_t                       stored;      /* the password's hash */
    ngx_str_t                       password;    /* as posted */
    ngx_str_t                       message;     /* on the sign-in form */
    time_t                          retry;       /* a 429's Retry-After */
    unsigned                        signin:1;    /* a sign-in's post */
    unsigned                        device:1;    /* from a known device */
} ngx_http_tent_oauth_t;


/* ngx_http_tent_oauth.c */
ngx_int_t ngx_http_tent_form_arg(ngx_pool_t *pool, ngx_str_t *src,
    const char *name, ngx_str_t *out);
ngx_int_t ngx_http_tent_oauth_token(ngx_http_request_t *r,
    ngx_http_tent_oauth_t *oa, time_t issued, ngx_str_t *token);
ngx_int_t ngx_http_tent_oauth_csrf_ok(ngx_http_request_t *r,
    ngx_http_tent_oauth_t *oa);
ngx_int_t ngx_http_tent_page_add(ngx_http_request_t *r, ngx_chain_t ***last,
    ngx_str_t *s, ngx_uint_t escape);
ngx_int_t ngx_http_tent_oauth_fields(ngx_http_request_t *r,
    ngx_chain_t ***last, ngx_http_tent_oauth_t *oa);
ngx_int_t ngx_http_tent_oauth_send(ngx_http_request_t *r, ngx_chain_t *out,
    ngx_uint_t status);
ngx_int_t ngx_http_tent_oauth_decide(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_oauth_t *oa);

/* ngx_http_tent_oauth_page.c */
ngx_int_t ngx_http_tent_oauth_csp(ngx_str_t *csp);
ngx_int_t ngx_http_tent_oauth_head(ngx_http_request_t *r, ngx_chain_t ***last,
    const char *title);
ngx_int_t ngx_http_tent_oauth_page(ngx_http_request_t *r,
    ngx_http_tent_oauth_t *oa);

/* ngx_http_tent_oauth_signin.c */
ngx_int_t ngx_http_tent_oauth_signin(ngx_http_request_t *r,
    ngx_http_tent_ctx_t *ctx, ngx_http_tent_oauth_t *oa);


#define ngx_http_tent_lit(r, last, text)                                     \
    do {                                                                     \
        static ngx_str_t  lit_ = ngx_string(text);                           \
        if (ngx_http_tent_page_add(r, last, &lit_, 0) != NGX_OK) {           \
            return ngx_http_tent_internal_error(r, "building the page");     \
        }                                                                    \
    } while (0)

#define ngx_http_tent_esc(r, last, s)                                        \
    if (ngx_http_tent_page_add(r, last, s, 1) != NGX_OK) {                   \
        return ngx_http_tent_internal_error(r, "building the page");         \
    }


#endif /* _NGX_HTTP_TENT_OAUTH_PRIVATE_H_INCLUDED_ */
