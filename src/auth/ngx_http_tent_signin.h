
/*
 * Copyright (C) ngx_http_tent_module authors
 */


#ifndef _NGX_HTTP_TENT_SIGNIN_H_INCLUDED_
#define _NGX_HTTP_TENT_SIGNIN_H_INCLUDED_


/*
 * The owner's sign-in on a provisioning server (docs/auth.md, "Sign-in
 * per tenant"): the password the operator sets, kept in the registry
 * row as "scrypt$N$r$p$<salt>$<key>"; the throttle of failures by
 * entity and by client address in a shared zone of its own; the session
 * cookie, an HMAC over the entity, its expiry and the stored hash.
 */


#include "ngx_http_tent_base.h"


/* the hash's parameters: tent_password_scrypt */
#define NGX_HTTP_TENT_SCRYPT_N        16384
#define NGX_HTTP_TENT_SCRYPT_R        8
#define NGX_HTTP_TENT_SCRYPT_P        1

#define NGX_HTTP_TENT_PASSWORD_MIN    8
#define NGX_HTTP_TENT_PASSWORD_MAX    1024

#define NGX_HTTP_TENT_SESSION_TIME    43200
#define NGX_HTTP_TENT_DEVICE_TIME     (90 * 86400)

/* the cookies: a session, a known device */
#define NGX_HTTP_TENT_COOKIE_SESSION  0
#define NGX_HTTP_TENT_COOKIE_DEVICE   1


typedef ngx_int_t (*ngx_http_tent_verified_pt)(ngx_http_request_t *r,
    ngx_uint_t match);


char *ngx_http_tent_password_scrypt_directive(ngx_conf_t *cf,
    ngx_command_t *cmd, void *conf);
ngx_int_t ngx_http_tent_signin_init(ngx_conf_t *cf);

/* the stored form of a password, with the configured cost */
ngx_int_t ngx_http_tent_password_hash(ngx_pool_t *pool, ngx_log_t *log,
    ngx_str_t *password, ngx_str_t *stored);

/* the password checked on the thread pool; "done" runs in the worker */
ngx_uint_t ngx_http_tent_password_busy(void);
ngx_int_t ngx_http_tent_password_verify(ngx_http_request_t *r,
    ngx_str_t *stored, ngx_str_t *password, ngx_http_tent_verified_pt done);

/* a request body with a password wiped: "copy" and nginx's buffers */
void ngx_http_tent_signin_wipe(ngx_http_request_t *r, ngx_str_t *copy);
/* "s" wiped when the pool goes */
ngx_int_t ngx_http_tent_signin_wipe_later(ngx_pool_t *pool, ngx_str_t *s);

/* the throttle: 0, or the seconds to wait (a 429's Retry-After) */
time_t ngx_http_tent_signin_throttled(ngx_http_request_t *r,
    ngx_str_t *entity, ngx_uint_t device);
void ngx_http_tent_signin_result(ngx_http_request_t *r, ngx_str_t *entity,
    ngx_uint_t ok, ngx_uint_t device);

/* a cookie (NGX_HTTP_TENT_COOKIE_*): its value, checked or made and set */
ngx_int_t ngx_http_tent_session_valid(ngx_http_request_t *r,
    ngx_uint_t kind, ngx_str_t *secret, ngx_str_t *entity,
    ngx_str_t *stored, ngx_str_t *value);
ngx_int_t ngx_http_tent_session_set(ngx_http_request_t *r,
    ngx_uint_t kind, ngx_str_t *secret, ngx_str_t *entity,
    ngx_str_t *stored, ngx_str_t *value);


#endif /* _NGX_HTTP_TENT_SIGNIN_H_INCLUDED_ */
