
/*
 * Copyright (C) ngx_http_tent_module authors
 */


/*
 * The authorize page of a provisioned entity (docs/auth.md, "Sign-in per
 * tenant"): its owner signs in with the entity's own password, the one
 * the operator set in its registry row, before the page shows the app.
 *
 *     GET, no session         the sign-in form (the page's parameters,
 *                             a token bound to the sign-in, a password)
 *     POST with "password"    the token, the throttle (429), the check on
 *                             the thread pool; a match sets the session
 *                             cookie and shows the page; else 403 and
 *                             the form again
 *     GET, a session          the page, its token bound to the session
 *     POST with "decision"    the session, then the token, as on a fixed
 *                             entity's page
 *
 * A POST from another origin (Origin, Sec-Fetch-Site) is refused before
 * anything else is looked at.
 */


#include "ngx_http_tent_base.h"
#include "ngx_http_tent_oauth_private.h"
#include "ngx_http_tent_json.h"
#include "ngx_http_tent_keys.h"
#include "ngx_http_tent_signin.h"
#include "ngx_http_tent_store.h"


static ngx_int_t ngx_http_tent_oauth_row_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op);
static ngx_int_t ngx_http_tent_oauth_verified(ngx_http_request_t *r,
    ngx_uint_t match);
static ngx_int_t ngx_http_tent_oauth_signin_form(ngx_http_request_t *r,
    ngx_http_tent_oauth_t *oa, ngx_uint_t status, const char *message);


ngx_int_t
ngx_http_tent_oauth_signin(ngx_http_request_t *r, ngx_http_tent_ctx_t *ctx,
    ngx_http_tent_oauth_t *oa)
{
    ngx_str_t                  key;
    ngx_http_tent_store_op_t  *op;

    /* the password's hash: the registry row, as it is now */

    op = ngx_http_tent_store_op_create(r->pool, r->connection->log);

    if (op == NULL
        || ngx_http_tent_registry_key(r->pool, &ctx->entity, &key) != NGX_OK
        || ngx_http_tent_store_get(op, &key) != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "reading the registry row");
    }

    return ngx_http_tent_store_submit_request(r, op,
                                             ngx_http_tent_oauth_row_loaded);
}


/* a header of the request, or NULL */

static ngx_str_t *
ngx_http_tent_oauth_header(ngx_http_request_t *r, const char *name)
{
    size_t            len;
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *h;

    len = ngx_strlen(name);
    part = &r->headers_in.headers.part;
    h = part->elts;

    for (i = 0; /* void */; i++) {

        if (i >= part->nelts) {
            if (part->next == NULL) {
                return NULL;
            }

            part = part->next;
            h = part->elts;
            i = 0;
        }

        if (h[i].key.len == len
            && ngx_strncasecmp(h[i].key.data, (u_char *) name, len) == 0)
        {
            return &h[i].value;
        }
    }
}


/*
 * A POST made by this page: a browser says where a form came from in
 * Origin (the entity's scheme, host and port) and Sec-Fetch-Site.
 */

static ngx_uint_t
ngx_http_tent_oauth_same_origin(ngx_http_request_t *r, ngx_str_t *entity)
{
    ngx_str_t   *v;
    ngx_uint_t   same;

    v = ngx_http_tent_oauth_header(r, "Sec-Fetch-Site");

    same = v && v->len == 11 && ngx_strncmp(v->data, "same-origin", 11) == 0;

    if (v && !same
        && !(v->len == 4 && ngx_strncmp(v->data, "none", 4) == 0))
    {
        return 0;
    }

    v = ngx_http_tent_oauth_header(r, "Origin");

    if (v == NULL) {
        return 1;
    }

    /* "null": a page with "Referrer-Policy: no-referrer" posting */

    if (same && v->len == 4 && ngx_strncmp(v->data, "null", 4) == 0) {
        return 1;
    }

    return v->len <= entity->len
           && ngx_strncmp(v->data, entity->data, v->len) == 0
           && (v->len == entity->len || entity->data[v->len] == '/');
}


static ngx_int_t
ngx_http_tent_oauth_row_loaded(ngx_http_request_t *r,
    ngx_http_tent_store_op_t *op)
{
    json_t                 *row, *pw;
    ngx_int_t               rc;
    ngx_str_t               value;
    ngx_uint_t              session;
    ngx_http_tent_ctx_t    *ctx;
    ngx_http_tent_oauth_t  *oa;

    ctx = ngx_http_tent_store_request_ctx(r, op, &rc);
    if (ctx == NULL) {
        return rc;
    }

    oa = ctx->state;

    if (op->status == NGX_HTTP_TENT_STORE_NOT_FOUND) {
        return ngx_http_tent_send_error(r, NGX_HTTP_NOT_FOUND,
                                        "No such entity on this server");
    }

    ngx_http_tent_store_value(op, &value);

    row = ngx_http_tent_json_own(r->pool,
                                 json_loadb((char *) value.data, value.len,
                                            0, NULL));
    pw = json_object_get(row, "password");

    if (!json_is_string(pw) || json_string_length(pw) == 0) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent sign-in: \"%V\" has no password: its owner "
                      "cannot sign in", &ctx->entity);
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                   "No password is set for this entity: the operator sets "
                   "one (tent-admin password ENTITY)");
    }

    oa->stored.len = json_string_length(pw);
    oa->stored.data = ngx_pnalloc(r->pool, oa->stored.len);
    if (oa->stored.data == NULL) {
        return ngx_http_tent_internal_error(r, "keeping the hash");
    }

    ngx_memcpy(oa->stored.data, json_string_value(pw), oa->stored.len);

    session = ngx_http_tent_session_valid(r, NGX_HTTP_TENT_COOKIE_SESSION,
                                          &oa->secret, &ctx->entity,
                                          &oa->stored, &oa->session)
              == NGX_OK;

    if (r->method != NGX_HTTP_POST) {
        if (session) {
            return ngx_http_tent_oauth_page(r, oa);
        }

        return ngx_http_tent_oauth_signin_form(r, oa, NGX_HTTP_OK, NULL);
    }

    if (!ngx_http_tent_oauth_same_origin(r, &ctx->entity)) {
        ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                      "tent sign-in: a form for \"%V\" posted from another "
                      "site", &ctx->entity);
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                   "A form posted from another site");
    }

    rc = ngx_http_tent_form_arg(r->pool, &ctx->form, "password",
                                &oa->password);

    if (rc != NGX_DECLINED) {
        /* the body read is wiped: the password's one copy is checked */
        ngx_http_tent_signin_wipe(r, &ctx->form);
    }

    if (rc == NGX_ERROR
        || (rc == NGX_OK
            && ngx_http_tent_signin_wipe_later(r->pool, &oa->password)
               != NGX_OK))
    {
        return ngx_http_tent_internal_error(r, "reading the password");
    }

    if (rc == NGX_OK) {

        /* a sign-in: its form's token, the throttle, then the check */

        ngx_str_set(&oa->session, "sign-in");

        if (ngx_http_tent_oauth_csrf_ok(r, oa) != NGX_OK) {
            return ngx_http_tent_oauth_signin_form(r, oa,
                       NGX_HTTP_FORBIDDEN,
                       "The form expired or was not ours: sign in again.");
        }

        if (oa->password.len == 0
            || oa->password.len > NGX_HTTP_TENT_PASSWORD_MAX)
        {
            return ngx_http_tent_oauth_signin_form(r, oa,
                       NGX_HTTP_BAD_REQUEST, "Type the password.");
        }

        /* a sign-in refused for the server's load is not counted */

        if (ngx_http_tent_password_busy()) {
            ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
                          "tent sign-in: checks in flight already: "
                          "this one is refused");
            oa->retry = 1;
            return ngx_http_tent_oauth_signin_form(r, oa,
                       NGX_HTTP_SERVICE_UNAVAILABLE,
                       "The server is busy with other sign-ins: try again "
                       "in a moment.");
        }

        oa->device = ngx_http_tent_session_valid(r,
                                            NGX_HTTP_TENT_COOKIE_DEVICE,
                                            &oa->secret, &ctx->entity,
                                            &oa->stored, NULL)
                     == NGX_OK;

        oa->retry = ngx_http_tent_signin_throttled(r, &ctx->entity,
                                                   oa->device);

        if (oa->retry) {
            return ngx_http_tent_oauth_signin_form(r, oa,
                       NGX_HTTP_TOO_MANY_REQUESTS,
                       "Too many failed sign-ins: wait before trying "
                       "again.");
        }

        rc = ngx_http_tent_password_verify(r, &oa->stored, &oa->password,
                                           ngx_http_tent_oauth_verified);
        if (rc != NGX_DONE) {
            return ngx_http_tent_internal_error(r, "checking the password");
        }

        return rc;
    }

    /* a decision: by the owner signed in, on the form made for them */

    if (!session) {
        ngx_str_set(&oa->session, "sign-in");
        return ngx_http_tent_oauth_signin_form(r, oa, NGX_HTTP_FORBIDDEN,
                                               "Sign in first.");
    }

    if (ngx_http_tent_oauth_csrf_ok(r, oa) != NGX_OK) {
        return ngx_http_tent_send_error(r, NGX_HTTP_FORBIDDEN,
                   "The confirmation form expired or was not ours: "
                   "start the authorization again");
    }

    return ngx_http_tent_oauth_decide(r, ctx, oa);
}


static ngx_int_t
ngx_http_tent_oauth_verified(ngx_http_request_t *r, ngx_uint_t match)
{
    ngx_str_t               device;
    ngx_http_tent_ctx_t    *ctx;
    ngx_http_tent_oauth_t  *oa;

    ctx = ngx_http_tent_get_ctx(r);
    oa = ctx->state;

    ngx_explicit_memzero(oa->password.data, oa->password.len);

    ngx_http_tent_signin_result(r, &ctx->entity, match, oa->device);

    if (!match) {
        return ngx_http_tent_oauth_signin_form(r, oa, NGX_HTTP_FORBIDDEN,
                                               "Wrong password.");
    }

    /* the session, and this device known to the entity's owner */

    if (ngx_http_tent_session_set(r, NGX_HTTP_TENT_COOKIE_SESSION,
                                  &oa->secret, &ctx->entity, &oa->stored,
                                  &oa->session)
        != NGX_OK
        || ngx_http_tent_session_set(r, NGX_HTTP_TENT_COOKIE_DEVICE,
                                     &oa->secret, &ctx->entity, &oa->stored,
                                     &device)
           != NGX_OK)
    {
        return ngx_http_tent_internal_error(r, "making the session");
    }

    return ngx_http_tent_oauth_page(r, oa);
}


static ngx_int_t
ngx_http_tent_oauth_signin_form(ngx_http_request_t *r,
    ngx_http_tent_oauth_t *oa, ngx_uint_t status, const char *message)
{
    u_char               *p;
    ngx_str_t             name, text;
    ngx_chain_t          *out, **last;
    ngx_table_elt_t      *h;
    ngx_http_tent_ctx_t  *ctx;

    ctx = ngx_http_tent_get_ctx(r);

    /* its token is the sign-in's: never one for a decision */

    ngx_str_set(&oa->session, "sign-in");

    (void) ngx_http_tent_json_str(oa->app, "name", &name);

    out = NULL;
    last = &out;

    if (ngx_http_tent_oauth_head(r, &last, "Sign in") != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_http_tent_lit(r, &last, "<h1>Sign in to authorize <q>");
    ngx_http_tent_esc(r, &last, &name);
    ngx_http_tent_lit(r, &last, "</q></h1>\n<p class=\"muted\">As the owner "
                      "of <code>");
    ngx_http_tent_esc(r, &last, &ctx->entity);
    ngx_http_tent_lit(r, &last, "</code></p>\n");

    if (message) {
        text.data = (u_char *) message;
        text.len = ngx_strlen(message);

        ngx_http_tent_lit(r, &last, "<p class=\"alert\" role=\"alert\">");
        ngx_http_tent_esc(r, &last, &text);
        ngx_http_tent_lit(r, &last, "</p>\n");
    }

    if (ngx_http_tent_oauth_fields(r, &last, oa) != NGX_OK) {
        return ngx_http_tent_internal_error(r, "writing the form's fields");
    }

    ngx_http_tent_lit(r, &last,
        "<label>Password <input type=\"password\" name=\"password\" "
        "autocomplete=\"current-password\" required autofocus></label>\n"
        "<div class=\"row\"><button>Sign in</button></div>\n</form>\n"
        "</main>\n</body></html>\n");

    if (oa->retry) {
        p = ngx_pnalloc(r->pool, NGX_TIME_T_LEN);
        h = ngx_list_push(&r->headers_out.headers);

        if (p == NULL || h == NULL) {
            return ngx_http_tent_internal_error(r, "adding Retry-After");
        }

        h->hash = 1;
        ngx_str_set(&h->key, "Retry-After");
        h->value.data = p;
        h->value.len = ngx_sprintf(p, "%T", oa->retry) - p;
    }

    return ngx_http_tent_oauth_send(r, out, status);
}
